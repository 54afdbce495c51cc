// SPDX-License-Identifier: Apache-2.0
// A SIGHUP-style reload that changes [slots] monitored_item_queue: items created afterwards
// get their queues from the new factory, existing items keep theirs, and the old factory's
// library stays loaded until its last queue is gone (then it is unloaded for real).
#include <dlfcn.h>

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

bool loaded(const std::string& name) {
    std::string path = std::string(UAPLEX_PLUGIN_DIR) + "/uaplex-" + name + ".so";
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != nullptr;
}

config::ServerConfig configWith(const std::string& factory) {
    return config::parseString(
        "[log]\nlevel = \"warn\"\n[host]\nplugin_dirs = [\"" UAPLEX_PLUGIN_DIR
        "\"]\n[slots]\nmonitored_item_queue = \"" +
            factory + "\"\n[plugins." + factory + "]\n",
        "swap.toml", {});
}

struct Source : NodeValueSource {
    uaplex_status resolve(const ua::ReadValueId& id, uint64_t* h) override {
        *h = id.nodeId.identifier.numeric;
        return UAPLEX_Good;
    }
    uaplex_status read(uint64_t h, enc::Arena&, ua::DataValue& out) override {
        out = {};
        out.mask = UAPLEX_DATAVALUE_VALUE;
        out.value = ua::variantDouble(double(h));
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

std::vector<uint32_t> monitor(SubscriptionManager& m, uint32_t sub, uint32_t firstNode, int n,
                              enc::Arena& arena) {
    std::vector<ua::MonitoredItemCreateRequest> items(n);
    for (int i = 0; i < n; ++i) {
        items[i].itemToMonitor.nodeId = ua::numericNodeId(1, firstNode + uint32_t(i));
        items[i].itemToMonitor.attributeId = 13;
        items[i].monitoringMode = ua::MonitoringMode::Reporting;
        items[i].requestedParameters.queueSize = 5;  // a queue from the factory
        items[i].requestedParameters.discardOldest = true;
    }
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToCreate = {n, items.data()};
    ua::CreateMonitoredItemsResponse resp{};
    REQUIRE(m.createMonitoredItems(1, req, resp, arena) == UAPLEX_Good);
    std::vector<uint32_t> ids;
    for (int i = 0; i < n; ++i) {
        REQUIRE(resp.results[i].statusCode == UAPLEX_Good);
        REQUIRE(resp.results[i].revisedQueueSize == 5);
        ids.push_back(resp.results[i].monitoredItemId);
    }
    return ids;
}

}  // namespace

TEST_CASE("a reloaded monitored_item_queue factory serves new items; the old one lives on") {
    REQUIRE_FALSE(loaded("mi-default"));
    REQUIRE_FALSE(loaded("mi-ring"));
    host::Host host;
    host.load(configWith("mi-default"));
    host.start();
    {
        FakeClock clock;
        Source source;
        Sink sink;
        enc::Arena arena;
        SubscriptionManager m(clock, SubscriptionLimits{}, source, sink);
        std::shared_ptr<host::PluginInstance> first = host.createMiQueueFactory(m.queueParams());
        REQUIRE(first);
        first->start();
        m.setQueueFactory(first->ops<uaplex_mi_queue_factory_ops>(), first->self(), first);
        ua::CreateSubscriptionRequest cs{};
        cs.requestedPublishingInterval = 100;
        cs.requestedMaxKeepAliveCount = 3;
        cs.requestedLifetimeCount = 300;
        cs.publishingEnabled = true;
        ua::CreateSubscriptionResponse csr{};
        REQUIRE(m.createSubscription(1, nullptr, cs, csr) == UAPLEX_Good);
        const uint32_t sub = csr.subscriptionId;
        std::vector<uint32_t> old = monitor(m, sub, 10, 3, arena);

        host.reload(configWith("mi-ring"));
        REQUIRE(host.takeMiQueueChange());
        CHECK_FALSE(host.takeMiQueueChange());
        std::shared_ptr<host::PluginInstance> second = host.createMiQueueFactory(m.queueParams());
        REQUIRE(second);
        CHECK(second->name() == "mi-ring");
        second->start();
        m.setQueueFactory(second->ops<uaplex_mi_queue_factory_ops>(), second->self(), second);
        std::weak_ptr<host::PluginInstance> firstAlive = first;
        first.reset();  // the owner's reference: now only the old queues hold it
        CHECK(loaded("mi-default"));
        CHECK(loaded("mi-ring"));
        CHECK(firstAlive.use_count() == 3);  // one per old item

        std::vector<uint32_t> fresh = monitor(m, sub, 20, 2, arena);
        CHECK(firstAlive.use_count() == 3);      // the new items took nothing from it
        CHECK(second.use_count() == 1 + 1 + 2);  // ours, the manager's, two new items

        // The old queues still work: every item's initial value is published.
        m.publish(1, {1, 1, 0}, ua::PublishRequest{});
        clock.mono = 101;
        m.timerTick();
        REQUIRE(sink.done.size() == 1);
        REQUIRE(sink.done[0].message);
        CHECK(sink.done[0].message.message().notificationData.size() == 1);
        auto* dcn = static_cast<ua::DataChangeNotification*>(
            sink.done[0].message.message().notificationData[0].object);
        CHECK(dcn->monitoredItems.size() == 5);
        sink.done.clear();

        // Deleting the last old item releases the old factory and unloads its library.
        ua::DeleteMonitoredItemsRequest del{};
        del.subscriptionId = sub;
        del.monitoredItemIds = {int32_t(old.size()), old.data()};
        ua::DeleteMonitoredItemsResponse dr{};
        REQUIRE(m.deleteMonitoredItems(1, del, dr, arena) == UAPLEX_Good);
        CHECK(firstAlive.expired());
        CHECK_FALSE(loaded("mi-default"));
        CHECK(loaded("mi-ring"));
        m.closeSession(1, true);
        m.setQueueFactory(nullptr, nullptr);
    }
    host.shutdown();
    CHECK_FALSE(loaded("mi-ring"));
}
