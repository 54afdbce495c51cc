// SPDX-License-Identifier: Apache-2.0
// A monitored-item queue factory whose queues of one size answer garbage (plugins/
// faulty_mi_queue.c), loaded by the host as any factory: the subscription engine neither
// crashes nor leaks on the faulty queues, and the healthy queues of the same factory, in the
// same subscription and in another session's, keep delivering every sampled value.
#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/subscription/subscription_manager.hpp>

using namespace uaplex;
using namespace uaplex::subscription;

namespace {

constexpr std::uint32_t kFaultySize = 13;
constexpr std::uint32_t kHealthySize = 5;

config::ServerConfig configWith(const std::string& fault) {
    return config::parseString(
        "[log]\nlevel = \"warn\"\n[host]\nplugin_dirs = [\"" UAPLEX_PLUGIN_DIR
        "\"]\n[slots]\nmonitored_item_queue = \"test-faulty-miq\"\n"
        "[plugins.test-faulty-miq]\nlibrary = \"" UAPLEX_FAULTY_MIQ_PLUGIN "\"\nfault = \"" +
            fault + "\"\nfault_queue_size = " + std::to_string(kFaultySize) + "\n",
        "faulty-miq.toml", {});
}

// Polled, and every read is a new value: each sample is a data change.
struct Source : NodeValueSource {
    double next = 0;
    bool reportsChanges(uint64_t) override { return false; }
    uaplex_status resolve(const ua::ReadValueId& id, uint64_t* h) override {
        *h = id.nodeId.identifier.numeric;
        return UAPLEX_Good;
    }
    uaplex_status read(uint64_t, enc::Arena&, ua::DataValue& out) override {
        out = {};
        out.mask = UAPLEX_DATAVALUE_VALUE;
        out.value = ua::variantDouble(next += 1);
        return UAPLEX_Good;
    }
};

struct Sink : PublishSink {
    std::vector<PublishOutcome> done;
    void parked(uint64_t) override {}
    void complete(uint64_t, uaplex_status, PublishOutcome&& o, AckResults&&) override {
        done.push_back(std::move(o));
    }
};

std::uint32_t subscribe(SubscriptionManager& m, std::uint64_t session) {
    ua::CreateSubscriptionRequest cs{};
    cs.requestedPublishingInterval = 100;
    cs.requestedMaxKeepAliveCount = 3;
    cs.requestedLifetimeCount = 300;
    cs.publishingEnabled = true;
    ua::CreateSubscriptionResponse csr{};
    REQUIRE(m.createSubscription(session, nullptr, cs, csr) == UAPLEX_Good);
    return csr.subscriptionId;
}

// One item per queue size, its client handle the size.
void monitor(SubscriptionManager& m, std::uint64_t session, std::uint32_t sub,
             const std::vector<std::uint32_t>& sizes, enc::Arena& arena) {
    std::vector<ua::MonitoredItemCreateRequest> items(sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        items[i].itemToMonitor.nodeId = ua::numericNodeId(1, 100 + std::uint32_t(i));
        items[i].itemToMonitor.attributeId = 13;
        items[i].monitoringMode = ua::MonitoringMode::Reporting;
        items[i].requestedParameters.clientHandle = sizes[i];
        items[i].requestedParameters.samplingInterval = 100;
        items[i].requestedParameters.queueSize = sizes[i];
        items[i].requestedParameters.discardOldest = true;
    }
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToCreate = {std::int32_t(items.size()), items.data()};
    ua::CreateMonitoredItemsResponse resp{};
    REQUIRE(m.createMonitoredItems(session, req, resp, arena) == UAPLEX_Good);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
        REQUIRE(resp.results[i].statusCode == UAPLEX_Good);
        CHECK(resp.results[i].revisedQueueSize == sizes[i]);
    }
}

// Values per client handle in one subscription's messages.
std::map<std::uint32_t, int> notifications(const std::vector<PublishOutcome>& done,
                                           std::uint32_t sub) {
    std::map<std::uint32_t, int> n;
    for (const auto& o : done) {
        if (o.subscriptionId != sub || !o.message) continue;
        for (const auto& d : o.message.message().notificationData) {
            auto* dcn = static_cast<ua::DataChangeNotification*>(d.object);
            if (!dcn) continue;
            for (const auto& item : dcn->monitoredItems) ++n[item.clientHandle];
        }
    }
    return n;
}

void run(const std::string& fault) {
    host::Host host;
    host.load(configWith(fault));
    host.start();
    {
        FakeClock clock;
        Source source;
        Sink sink;
        enc::Arena arena;
        SubscriptionManager m(clock, SubscriptionLimits{}, source, sink);
        std::shared_ptr<host::PluginInstance> factory = host.createMiQueueFactory(m.queueParams());
        REQUIRE(factory);
        factory->start();
        m.setQueueFactory(factory->ops<uaplex_mi_queue_factory_ops>(), factory->self(), factory);

        // Session 1: a faulty item beside a healthy one; session 2: a healthy item only.
        const std::uint32_t mixed = subscribe(m, 1);
        monitor(m, 1, mixed, {kFaultySize, kHealthySize}, arena);
        const std::uint32_t other = subscribe(m, 2);
        monitor(m, 2, other, {kHealthySize}, arena);

        constexpr int kRounds = 6;
        std::uint64_t requestId = 1;
        for (int round = 0; round < kRounds; ++round) {
            m.publish(1, {requestId++, 1, 0}, ua::PublishRequest{});
            m.publish(2, {requestId++, 2, 0}, ua::PublishRequest{});
            clock.mono += 100;
            m.timerTick();
        }
        auto inMixed = notifications(sink.done, mixed);
        auto inOther = notifications(sink.done, other);
        // A value per sample for each healthy queue; the faulty queue delivers nothing.
        CHECK(inMixed[kHealthySize] >= kRounds - 1);
        CHECK(inOther[kHealthySize] >= kRounds - 1);
        CHECK(inMixed.count(kFaultySize) == 0);

        // Every value the engine took is back in its pool once the sessions are gone.
        m.closeSession(1, true);
        m.closeSession(2, true);
        sink.done.clear();
        CHECK(m.context().values.live() == 0);
        m.setQueueFactory(nullptr, nullptr);
    }
    host.shutdown();
}

}  // namespace

TEST_CASE("faulty monitored-item queue: Good without a value neither crashes nor stops others") {
    run("null-outputs");
}

TEST_CASE("faulty monitored-item queue: reserved statuses and counts are failures, not values") {
    run("reserved");
}
