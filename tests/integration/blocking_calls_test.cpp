// SPDX-License-Identifier: Apache-2.0
// A node manager whose synchronous reads and writes block ([plugins.<name>] blocking_threads,
// docs/pipeline.md "Blocking node managers"): its calls run on its own threads, so they hold
// none of the request workers; so do their Browse and Call, and CreateMonitoredItems makes no
// read of their nodes on a worker. The server runs in this process with the test-sampling plugin,
// whose gated nodes (owned i=1..99, store i=902) block until the test opens the gate.
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

// Two request workers; the plugin's calls get `threads` threads of their own.
std::string tables(int threads, const std::string& limits = "") {
    return "request_threads = 2\n[server.limits]\n" + limits +
           "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n"
           "[plugins.test-sampling]\nlibrary = \"" UAPLEX_SAMPLING_PLUGIN
           "\"\nblocking_threads = " +
           std::to_string(threads) + "\n[access]\nanonymous_permissions = [\"All\"]\n";
}

struct Outcome {
    uaplex_status service = UAPLEX_BadInternalError;  // the response's ServiceResult
    uaplex_status status = UAPLEX_BadInternalError;   // the operation's
    std::int32_t value = 0;
};

// A client of its own per call, so that calls can wait at the gate side by side (no Catch2
// assertions off the test's thread).
Outcome readOn(std::uint16_t port, const ua::NodeId& node, std::uint32_t timeoutHint = 10000) {
    Outcome o;
    Client c;
    if (!c.open(port) || c.createSession() != UAPLEX_Good) return o;
    c.setTimeoutHint(timeoutHint);
    ua::ReadValueId id{};
    id.nodeId = node;
    id.attributeId = 13;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    auto m = c.call(r);
    o.service = Client::result(m);
    if (o.service != UAPLEX_Good || m.type != enc::dataTypeOf<ua::ReadResponse>()) return o;
    const ua::DataValue& dv = static_cast<ua::ReadResponse*>(m.object)->results[0];
    o.status = (dv.mask & UAPLEX_DATAVALUE_STATUS) ? dv.status : UAPLEX_Good;
    o.value = dv.value.value.int32;
    return o;
}

Outcome writeOn(std::uint16_t port, const ua::NodeId& node, std::int32_t value) {
    Outcome o;
    Client c;
    if (!c.open(port) || c.createSession() != UAPLEX_Good) return o;
    ua::WriteValue wv{};
    wv.nodeId = node;
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    wv.value.value = ua::variantInt32(value);
    ua::WriteRequest w{};
    w.nodesToWrite = {1, &wv};
    auto m = c.call(w);
    o.service = Client::result(m);
    if (o.service == UAPLEX_Good && m.type == enc::dataTypeOf<ua::WriteResponse>())
        o.status = static_cast<ua::WriteResponse*>(m.object)->results[0];
    return o;
}

// A Browse of `node` (forward, all references): the first target's numeric id as `value`.
Outcome browseOn(std::uint16_t port, const ua::NodeId& node) {
    Outcome o;
    Client c;
    if (!c.open(port) || c.createSession() != UAPLEX_Good) return o;
    ua::BrowseDescription d{};
    d.nodeId = node;
    d.browseDirection = ua::BrowseDirection::Forward;
    d.includeSubtypes = true;
    d.resultMask = 63;
    ua::BrowseRequest b{};
    b.nodesToBrowse = {1, &d};
    auto m = c.call(b);
    o.service = Client::result(m);
    if (o.service != UAPLEX_Good || m.type != enc::dataTypeOf<ua::BrowseResponse>()) return o;
    const ua::BrowseResult& r = static_cast<ua::BrowseResponse*>(m.object)->results[0];
    o.status = r.statusCode;
    if (r.references.size() == 1 &&
        r.references[0].nodeId.node_id.identifier_type == UAPLEX_ID_NUMERIC)
        o.value = std::int32_t(r.references[0].nodeId.node_id.identifier.numeric);
    return o;
}

// A Call on the Object `object` (the plugin answers its number as the one output).
Outcome callOn(std::uint16_t port, const ua::NodeId& object, const ua::NodeId& method) {
    Outcome o;
    Client c;
    if (!c.open(port) || c.createSession() != UAPLEX_Good) return o;
    ua::CallMethodRequest cm{};
    cm.objectId = object;
    cm.methodId = method;
    cm.inputArguments = {0, nullptr};
    ua::CallRequest r{};
    r.methodsToCall = {1, &cm};
    auto m = c.call(r);
    o.service = Client::result(m);
    if (o.service != UAPLEX_Good || m.type != enc::dataTypeOf<ua::CallResponse>()) return o;
    const ua::CallMethodResult& cr = static_cast<ua::CallResponse*>(m.object)->results[0];
    o.status = cr.statusCode;
    if (cr.outputArguments.size() == 1) o.value = cr.outputArguments[0].value.int32;
    return o;
}

template <class F>
std::future<Outcome> later(F f) {
    return std::async(std::launch::async, std::move(f));
}

bool ready(std::future<Outcome>& f, int seconds) {
    return f.wait_for(std::chrono::seconds(seconds)) == std::future_status::ready;
}

}  // namespace

TEST_CASE("blocking node manager: stuck reads and writes hold no request worker") {
    test::InProcessServer process(tables(4), "blocking.toml");
    Plugin p = plugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    const std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    const std::uint16_t port = process.port;

    p.gate(0);
    // More stuck calls than the server has workers: an owned read and write, a store read.
    auto ownedRead = later([&] { return readOn(port, ua::numericNodeId(ns, 1)); });
    auto ownedWrite = later([&] { return writeOn(port, ua::numericNodeId(ns, 2), 5); });
    auto storeRead = later([&] { return readOn(port, ua::numericNodeId(ns, 902)); });
    REQUIRE(p.waitBlocked(3, 5000) == 3);  // with the calls on the workers only two get there
    auto storeWrite = later([&] { return writeOn(port, ua::numericNodeId(ns, 902), 7); });
    REQUIRE(p.waitBlocked(4, 5000) == 4);

    // Everyone else is served meanwhile.
    auto fast = later([&] { return readOn(port, ua::numericNodeId(0, 2258)); });  // CurrentTime
    REQUIRE(ready(fast, 5));
    CHECK(fast.get().status == UAPLEX_Good);
    auto stored = later([&] { return writeOn(port, ua::numericNodeId(ns, 900), 11); });
    REQUIRE(ready(stored, 5));
    CHECK(stored.get().status == UAPLEX_Good);
    CHECK(p.waitBlocked(4, 0) == 4);

    p.gate(1);
    REQUIRE(ready(ownedRead, 10));
    REQUIRE(ready(ownedWrite, 10));
    REQUIRE(ready(storeRead, 10));
    REQUIRE(ready(storeWrite, 10));
    Outcome r1 = ownedRead.get();
    CHECK(r1.status == UAPLEX_Good);
    CHECK(r1.value == 1);
    CHECK(ownedWrite.get().status == UAPLEX_Good);
    Outcome r2 = storeRead.get();
    CHECK(r2.status == UAPLEX_Good);
    CHECK(r2.value == 902);
    CHECK(storeWrite.get().status == UAPLEX_Good);
    CHECK(test::readOne(a, ua::numericNodeId(ns, 902)).value.value.int32 == 7);
}

TEST_CASE("blocking node manager: stuck browses and method calls hold no request worker") {
    test::InProcessServer process(tables(4), "blocking.toml");
    Plugin p = plugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    const std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    const std::uint16_t port = process.port;

    p.gate(0);
    auto browse = later([&] { return browseOn(port, ua::numericNodeId(ns, 1)); });
    auto method =
        later([&] { return callOn(port, ua::numericNodeId(ns, 2), ua::numericNodeId(ns, 3)); });
    auto read = later([&] { return readOn(port, ua::numericNodeId(ns, 4)); });
    // With Browse and Call on the two workers the read would not get to the plugin.
    REQUIRE(p.waitBlocked(3, 5000) == 3);
    auto fast = later([&] { return readOn(port, ua::numericNodeId(0, 2258)); });
    REQUIRE(ready(fast, 5));
    CHECK(fast.get().status == UAPLEX_Good);

    p.gate(1);
    REQUIRE(ready(browse, 10));
    REQUIRE(ready(method, 10));
    REQUIRE(ready(read, 10));
    Outcome b = browse.get();
    CHECK(b.service == UAPLEX_Good);
    CHECK(b.status == UAPLEX_Good);
    CHECK(b.value == 500);  // the plugin's one reference, collected on its lane
    Outcome c = method.get();
    CHECK(c.service == UAPLEX_Good);
    CHECK(c.status == UAPLEX_Good);
    CHECK(c.value == 2);
    CHECK(read.get().value == 4);
}

TEST_CASE("blocking node manager: a monitored item is created without a read on the worker") {
    test::InProcessServer process(tables(2), "blocking.toml");
    Plugin p = plugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    const std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    test::SubscriptionParams sp;
    sp.publishingInterval = 50;
    const std::uint32_t sub = test::createSubscription(a, sp);

    p.gate(0);
    ua::MonitoredItemCreateRequest it{};
    it.itemToMonitor.nodeId = ua::numericNodeId(ns, 5);
    it.itemToMonitor.attributeId = 13;
    it.itemToMonitor.indexRange = ua::nullString();
    it.monitoringMode = ua::MonitoringMode::Reporting;
    it.requestedParameters.clientHandle = 7;
    it.requestedParameters.samplingInterval = 50;
    it.requestedParameters.queueSize = 1;
    it.requestedParameters.discardOldest = true;
    ua::CreateMonitoredItemsRequest cmi{};
    cmi.subscriptionId = sub;
    cmi.timestampsToReturn = ua::TimestampsToReturn::Both;
    cmi.itemsToCreate = {1, &it};
    REQUIRE(a.send(cmi, 41));
    // Answered while the gate is closed: the first sample is left to the sampling thread,
    // which waits at the gate instead of a worker.
    auto m = a.receiveResponse();
    REQUIRE(m.type == enc::dataTypeOf<ua::CreateMonitoredItemsResponse>());
    const auto& cr = *static_cast<ua::CreateMonitoredItemsResponse*>(m.object);
    REQUIRE(cr.results.size() == 1);
    CHECK(cr.results[0].statusCode == UAPLEX_Good);
    CHECK(p.waitBlocked(1, 5000) >= 1);  // the sampling read
    p.gate(1);

    // The first sample arrives once the gate opens.
    bool seen = false;
    for (int round = 0; round < 40 && !seen; ++round) {
        ua::PublishRequest pr{};
        auto pm = a.call(pr);
        REQUIRE(Client::result(pm) == UAPLEX_Good);
        const auto& r = *static_cast<ua::PublishResponse*>(pm.object);
        for (const auto& eo : r.notificationMessage.notificationData) {
            if (eo.data_type != enc::dataTypeOf<ua::DataChangeNotification>()) continue;
            for (const auto& n :
                 static_cast<const ua::DataChangeNotification*>(eo.object)->monitoredItems)
                if (n.clientHandle == 7 && n.value.value.value.int32 == 5) seen = true;
        }
    }
    CHECK(seen);
}

TEST_CASE("blocking node manager: a call whose request was answered is not made") {
    test::InProcessServer process(tables(1), "blocking.toml");
    Plugin p = plugin();
    Client a;
    REQUIRE(a.open(process.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    const std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
    const std::uint16_t port = process.port;
    std::size_t counts[8];
    p.readCounts(counts, 8);

    p.gate(0);
    auto first = later([&] { return readOn(port, ua::numericNodeId(ns, 1)); });
    REQUIRE(p.waitBlocked(1, 5000) == 1);
    // Queued behind it on the manager's one thread; its TimeoutHint passes there.
    auto expired = later([&] { return readOn(port, ua::numericNodeId(ns, 3), 300); });
    REQUIRE(ready(expired, 10));
    Outcome e = expired.get();
    CHECK((e.service == UAPLEX_BadTimeout || e.status == UAPLEX_BadTimeout));
    p.gate(1);
    REQUIRE(ready(first, 10));
    CHECK(first.get().value == 1);
    // FIFO on one thread: once this read answers, the expired one's turn has passed.
    Outcome after = readOn(port, ua::numericNodeId(ns, 4));
    CHECK(after.value == 4);
    CHECK(p.readCounts(counts, 8) == 2);  // the first read and this one, not the expired one
}

TEST_CASE("blocking node manager: stop is bounded while a call never returns") {
    Plugin p{};
    std::future<void> stopped;
    std::future<Outcome> stuck;
    {
        auto process = std::make_unique<test::InProcessServer>(
            tables(1, "sampling_stop_timeout_ms = 200\n"), "blocking.toml");
        p = plugin();
        Client a;
        REQUIRE(a.open(process->port));
        REQUIRE(a.createSession() == UAPLEX_Good);
        const std::uint16_t ns = test::namespaceIndex(a, "urn:uaplex:test-sampling");
        const std::uint16_t port = process->port;
        p.gate(0);
        // Its TimeoutHint ends the shutdown's wait for executing requests early.
        stuck = later([=] { return readOn(port, ua::numericNodeId(ns, 1), 1000); });
        REQUIRE(p.waitBlocked(1, 5000) == 1);
        a.disconnect();
        stopped = std::async(std::launch::async, [s = std::move(process)]() mutable { s.reset(); });
    }
    CHECK(stopped.wait_for(std::chrono::seconds(20)) == std::future_status::ready);
    CHECK(p.waitBlocked(1, 0) == 1);
    p.gate(1);  // the thread left behind returns from the read and completes nothing
    stopped.wait();
    stuck.wait();
}
