// SPDX-License-Identifier: Apache-2.0
// Sampling a node manager's nodes off the subscription engine's lock, and the changes a node
// manager pushes (monitor, params.value_changed), with the server in this process and the
// test-sampling plugin steered through its exported functions (make tsan sees both sides).
#include <catch2/catch.hpp>

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <future>
#include <vector>

#include "in_process_server.hpp"
#include "sampling_plugin.hpp"
#include "support/client_services.hpp"
#include "support/opcua_client.hpp"

using namespace uaplex;
using test::Client;

namespace {

using Plugin = test::SamplingPlugin;
Plugin plugin() {
    return test::samplingPlugin();
}

std::string tables() {
    return "request_threads = 4\n[slots]\nrequest_queue = \"fifo\"\n"
           "monitored_item_queue = \"mi-default\"\n[plugins.fifo]\n[plugins.mi-default]\n"
           "[plugins.transport-tcp]\n[plugins.test-sampling]\nlibrary = \"" UAPLEX_SAMPLING_PLUGIN
           "\"\n[access]\nanonymous_permissions = [\"All\"]\n";
}

struct ItemSpec {
    std::uint32_t node;
    double samplingInterval = 50;
    std::uint32_t queueSize = 1;
    double deadband = 0;  // absolute; 0: none
};

// Creates the items (client handle = node id); their statuses.
std::vector<uaplex_status> createItems(Client& c, std::uint16_t ns, std::uint32_t sub,
                                       const std::vector<ItemSpec>& specs) {
    enc::Arena arena;
    std::vector<ua::MonitoredItemCreateRequest> items(specs.size());
    ua::DataChangeFilter filter{};
    filter.trigger = ua::DataChangeTrigger::StatusValue;
    filter.deadbandType = ua::UInt32(ua::DeadbandType::Absolute);
    std::vector<ua::DataChangeFilter> filters(specs.size(), filter);
    for (std::size_t i = 0; i < specs.size(); ++i) {
        auto& it = items[i];
        it.itemToMonitor.nodeId = ua::numericNodeId(ns, specs[i].node);
        it.itemToMonitor.attributeId = 13;
        it.monitoringMode = ua::MonitoringMode::Reporting;
        it.requestedParameters.clientHandle = specs[i].node;
        it.requestedParameters.samplingInterval = specs[i].samplingInterval;
        it.requestedParameters.queueSize = specs[i].queueSize;
        it.requestedParameters.discardOldest = true;
        if (specs[i].deadband > 0) {
            filters[i].deadbandValue = specs[i].deadband;
            auto& eo = it.requestedParameters.filter;
            eo.type_id =
                ua::numericNodeId(0, enc::dataTypeOf<ua::DataChangeFilter>()->binaryEncodingId);
            eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
            eo.data_type = enc::dataTypeOf<ua::DataChangeFilter>();
            eo.object = &filters[i];
        }
    }
    ua::CreateMonitoredItemsRequest cmi{};
    cmi.subscriptionId = sub;
    cmi.timestampsToReturn = ua::TimestampsToReturn::Both;
    cmi.itemsToCreate = {std::int32_t(items.size()), items.data()};
    auto m = c.call(cmi);
    std::vector<uaplex_status> out;
    if (Client::result(m) != UAPLEX_Good) return out;
    for (const auto& r : static_cast<ua::CreateMonitoredItemsResponse*>(m.object)->results)
        out.push_back(r.statusCode);
    return out;
}

struct Seen {
    std::uint32_t handle;
    std::int32_t value;
    uaplex_status status;
};

// One Publish (acknowledging the previous message); the data changes it carried, or nothing
// on a keep-alive; `ok` false on an error.
std::vector<Seen> publishOnce(Client& c, ua::SubscriptionAcknowledgement& ack, bool& ok) {
    ua::PublishRequest p{};
    if (ack.sequenceNumber != 0) p.subscriptionAcknowledgements = {1, &ack};
    auto m = c.call(p);
    std::vector<Seen> out;
    ok = Client::result(m) == UAPLEX_Good && m.type == enc::dataTypeOf<ua::PublishResponse>();
    if (!ok) return out;
    auto& r = *static_cast<ua::PublishResponse*>(m.object);
    if (r.notificationMessage.notificationData.size() == 0) return out;
    ack = {r.subscriptionId, r.notificationMessage.sequenceNumber};
    for (const auto& eo : r.notificationMessage.notificationData) {
        if (eo.data_type != enc::dataTypeOf<ua::DataChangeNotification>()) continue;
        for (const auto& n :
             static_cast<const ua::DataChangeNotification*>(eo.object)->monitoredItems)
            out.push_back({n.clientHandle, n.value.value.value.int32,
                           (n.value.mask & UAPLEX_DATAVALUE_STATUS) ? n.value.status : 0u});
    }
    return out;
}

// Publishes until `want` returns true for a change (at most `responses` responses).
template <class F>
bool publishUntil(Client& c, std::uint32_t sub, int responses, F want) {
    ua::SubscriptionAcknowledgement ack{sub, 0};
    for (int i = 0; i < responses; ++i) {
        bool ok = false;
        for (const Seen& s : publishOnce(c, ack, ok))
            if (want(s)) return true;
        if (!ok) return false;
    }
    return false;
}

}  // namespace

TEST_CASE("a node manager stuck in a sampling read holds up no other subscription or service") {
    test::InProcessServer process(tables(), "sampling.toml");
    Plugin p = plugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    // Ten items on the gated nodes, sampled every 50 ms.
    std::uint32_t subA = test::createSubscription(a, {50, 600, 10});
    std::vector<ItemSpec> gated;
    for (std::uint32_t n = 1; n <= 10; ++n) gated.push_back({n});
    REQUIRE(createItems(a, ns, subA, gated) == std::vector<uaplex_status>(10, UAPLEX_Good));

    p.gate(0);  // the next sampling read blocks until the test opens the gate
    REQUIRE(p.waitBlocked(1, 5000) == 1);

    // Another session meanwhile: CreateMonitoredItems, Write and value_set return, and its
    // subscription publishes every change.
    Client b;
    REQUIRE(b.open(process.port));
    REQUIRE(b.createSession() == UAPLEX_Good);
    std::uint32_t subB = test::createSubscription(b, {50, 600, 10});
    REQUIRE(createItems(b, ns, subB, {{900, 0, 10}}) == std::vector<uaplex_status>{UAPLEX_Good});
    for (std::int32_t v = 1; v <= 5; ++v)
        REQUIRE(test::writeInt32(b, ua::numericNodeId(ns, 900), v) == UAPLEX_Good);
    auto set = std::async(std::launch::async, [&] { return p.valueSet(6); });
    REQUIRE(set.wait_for(std::chrono::seconds(2)) == std::future_status::ready);
    REQUIRE(set.get() == UAPLEX_Good);
    CHECK(publishUntil(b, subB, 20, [](const Seen& s) { return s.handle == 900 && s.value == 6; }));
    CHECK(p.waitBlocked(1, 0) == 1);  // still stuck all along

    p.gate(1);
    std::vector<char> seen(11, 0);
    int count = 0;
    CHECK(publishUntil(a, subA, 40, [&](const Seen& s) {
        if (s.handle >= 1 && s.handle <= 10 && s.value == std::int32_t(s.handle) && !seen[s.handle])
            seen[s.handle] = 1, ++count;
        return count == 10;
    }));
}

TEST_CASE("one read call per node manager and tick carries all its due items") {
    test::InProcessServer process(tables(), "sampling.toml");
    Plugin p = plugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    // Two subscriptions with 100 ms items on 15 nodes, one node watched twice.
    std::uint32_t sub1 = test::createSubscription(a, {100, 600, 10});
    std::uint32_t sub2 = test::createSubscription(a, {100, 600, 10});
    std::vector<ItemSpec> first, second;
    for (std::uint32_t n = 1; n <= 10; ++n) first.push_back({n, 100});
    for (std::uint32_t n = 11; n <= 15; ++n) second.push_back({n, 100});
    second.push_back({1, 100});
    REQUIRE(createItems(a, ns, sub1, first) == std::vector<uaplex_status>(10, UAPLEX_Good));
    REQUIRE(createItems(a, ns, sub2, second) == std::vector<uaplex_status>(6, UAPLEX_Good));
    std::size_t counts[256];
    p.readCounts(counts, 256);  // the creation's reads
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    std::size_t n = p.readCounts(counts, 256);
    CHECK(n >= 5);                                               // about one per 100 ms
    CHECK(n <= 12);                                              // and not one per item
    for (std::size_t i = 0; i < n; ++i) CHECK(counts[i] == 15);  // each node once
}

TEST_CASE("changes pushed through value_changed reach items as stored values do") {
    test::InProcessServer process(tables(), "sampling.toml");
    Plugin p = plugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    CHECK(p.push(0) == UAPLEX_GoodNoData);  // nobody watches it yet

    // The same item on the pushed node and on the stored one: every change sampled, an
    // absolute deadband of 5, two values queued (discarding the oldest).
    auto run = [&](std::uint32_t node, uaplex_status (*change)(std::int32_t)) {
        std::uint32_t sub = test::createSubscription(a, {1000, 600, 10});
        REQUIRE(createItems(a, ns, sub, {{node, 0, 2, 5}}) ==
                std::vector<uaplex_status>{UAPLEX_Good});
        if (node == 500) {
            REQUIRE(p.waitMonitor(1, 0, 5000));
            // Good once the kernel takes the node's changes as pushed.
            auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
            while (p.push(0) != UAPLEX_Good && std::chrono::steady_clock::now() < until)
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
            REQUIRE(p.push(0) == UAPLEX_Good);
        }
        // The first value, then the changes within one publishing interval.
        ua::SubscriptionAcknowledgement ack{sub, 0};
        bool ok = false;
        std::vector<Seen> initial;
        for (int i = 0; i < 5 && initial.empty(); ++i) initial = publishOnce(a, ack, ok);
        REQUIRE(initial.size() == 1);
        CHECK(initial[0].value == 0);
        for (std::int32_t v : {2, 10, 12, 20, 30, 40}) REQUIRE(change(v) == UAPLEX_Good);
        std::vector<Seen> got;
        for (int i = 0; i < 5 && got.empty(); ++i) got = publishOnce(a, ack, ok);
        return got;
    };
    std::vector<Seen> stored = run(900, p.valueSet);
    std::vector<Seen> pushed = run(500, p.push);
    // 2 and 12 are within the deadband; of 10, 20, 30, 40 the queue keeps the last two, the
    // older marked as an overflow (InfoType DataValue, Overflow bit).
    for (const Seen& s : stored) UNSCOPED_INFO("stored " << s.value << " " << s.status);
    for (const Seen& s : pushed) UNSCOPED_INFO("pushed " << s.value << " " << s.status);
    REQUIRE(stored.size() == 2);
    CHECK(stored[0].value == 30);
    CHECK((stored[0].status & 0x480u) == 0x480u);
    CHECK(stored[1].value == 40);
    REQUIRE(pushed.size() == stored.size());
    for (std::size_t i = 0; i < pushed.size(); ++i) {
        CHECK(pushed[i].value == stored[i].value);
        CHECK(pushed[i].status == stored[i].status);
    }
}

TEST_CASE("monitor is called for the first item on a node and after the last is gone") {
    test::InProcessServer process(tables(), "sampling.toml");
    Plugin p = plugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    std::uint32_t sub = test::createSubscription(a, {50, 600, 10});
    REQUIRE(createItems(a, ns, sub, {{500, 0}, {500, 100}}) ==
            std::vector<uaplex_status>(2, UAPLEX_Good));
    REQUIRE(p.waitMonitor(1, 0, 5000));
    ua::DeleteSubscriptionsRequest del{};
    del.subscriptionIds = {1, &sub};
    REQUIRE(Client::result(a.call(del)) == UAPLEX_Good);
    CHECK(p.waitMonitor(1, 1, 5000));
    CHECK(!p.waitMonitor(2, 1, 200));  // once each, not per item
}

namespace {

// The test-sampling-async plugin (the same exported functions, its own library).
Plugin asyncPlugin() {
    void* lib = dlopen(UAPLEX_SAMPLING_ASYNC_PLUGIN, RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib != nullptr);
    Plugin p{};
    p.gate = reinterpret_cast<void (*)(int)>(dlsym(lib, "test_sampling_gate"));
    p.waitBlocked = reinterpret_cast<int (*)(int, int)>(dlsym(lib, "test_sampling_wait_blocked"));
    p.readCounts = reinterpret_cast<std::size_t (*)(std::size_t*, std::size_t)>(
        dlsym(lib, "test_sampling_read_counts"));
    REQUIRE((p.gate && p.waitBlocked && p.readCounts));
    return p;
}

std::string asyncTables() {
    return "request_threads = 4\n[slots]\nrequest_queue = \"fifo\"\n"
           "monitored_item_queue = \"mi-default\"\n[plugins.fifo]\n[plugins.mi-default]\n"
           "[plugins.transport-tcp]\n[plugins.test-sampling-async]\nlibrary = "
           "\"" UAPLEX_SAMPLING_ASYNC_PLUGIN "\"\n[access]\nanonymous_permissions = [\"All\"]\n";
}

}  // namespace

TEST_CASE("a node manager's read_async serves its sampling, one call per tick") {
    test::InProcessServer process(asyncTables(), "sampling-async.toml");
    Plugin p = asyncPlugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    std::uint32_t sub = test::createSubscription(a, {50, 600, 10});
    std::vector<ItemSpec> gated;
    for (std::uint32_t n = 1; n <= 5; ++n) gated.push_back({n, 100});
    REQUIRE(createItems(a, ns, sub, gated) == std::vector<uaplex_status>(5, UAPLEX_Good));
    // Every item's value arrives, read through read_async on the plugin's thread.
    std::vector<char> seen(6, 0);
    int count = 0;
    CHECK(publishUntil(a, sub, 40, [&](const Seen& s) {
        if (s.handle >= 1 && s.handle <= 5 && s.status == UAPLEX_Good &&
            s.value == std::int32_t(s.handle) && !seen[s.handle])
            seen[s.handle] = 1, ++count;
        return count == 5;
    }));
    // A read held at the gate keeps the batch out: no second call meanwhile.
    std::size_t counts[256];
    p.gate(0);
    REQUIRE(p.waitBlocked(1, 5000) == 1);
    std::size_t n = p.readCounts(counts, 256);
    REQUIRE(n >= 1);
    CHECK(counts[n - 1] == 5);                                    // all due items in one call
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // four ticks
    CHECK(p.readCounts(counts, 256) == 0);
    p.gate(1);
}

TEST_CASE("a stored Variable with only read_async is sampled through it, beside owned nodes") {
    test::InProcessServer process(asyncTables(), "sampling-store-async.toml");
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    std::uint32_t sub = test::createSubscription(a, {50, 600, 10});
    // i=901 alone first, then with an owned node in the same tick's batch.
    REQUIRE(createItems(a, ns, sub, {{901, 50}}) == std::vector<uaplex_status>{UAPLEX_Good});
    REQUIRE(createItems(a, ns, sub, {{7, 50}}) == std::vector<uaplex_status>{UAPLEX_Good});
    std::vector<std::int32_t> stored;
    bool owned = false;
    CHECK(publishUntil(a, sub, 60, [&](const Seen& s) {
        if (s.handle == 901) {
            CHECK(s.status == UAPLEX_Good);
            if (s.status == UAPLEX_Good) stored.push_back(s.value);
        }
        if (s.handle == 7 && s.status == UAPLEX_Good && s.value == 7) owned = true;
        return owned && stored.size() >= 3;
    }));
    REQUIRE(stored.size() >= 2);
    CHECK(stored.front() >= 901000);
    for (std::size_t i = 1; i < stored.size(); ++i) CHECK(stored[i] > stored[i - 1]);
}

TEST_CASE("stop is bounded by sampling_stop_timeout_ms when a sampling read never returns") {
    Plugin p{};
    std::future<void> stopped;
    {
        auto process = std::make_unique<test::InProcessServer>(
            tables() + "[server.limits]\nsampling_stop_timeout_ms = 200\n", "sampling.toml");
        p = plugin();
        Client a;
        REQUIRE(a.open(process->port));
        REQUIRE(a.createSession() == UAPLEX_Good);
        std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
        std::uint32_t sub = test::createSubscription(a, {50, 600, 10});
        REQUIRE(createItems(a, ns, sub, {{1, 50}}) == std::vector<uaplex_status>{UAPLEX_Good});
        p.gate(0);
        REQUIRE(p.waitBlocked(1, 5000) == 1);
        a.disconnect();
        stopped = std::async(std::launch::async, [s = std::move(process)]() mutable { s.reset(); });
    }
    // The read is still blocked; the server stops anyway (without the bound it waits on).
    CHECK(stopped.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    CHECK(p.waitBlocked(1, 0) == 1);
    p.gate(1);  // the thread left behind returns from the read and ends
    stopped.wait();
}
