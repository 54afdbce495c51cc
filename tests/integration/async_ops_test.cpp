// SPDX-License-Identifier: Apache-2.0
// Asynchronous node-manager operations end to end (docs/pipeline.md "Asynchronous
// operations"): the real executable with the test-asyncread node manager, whose reads and
// writes complete later from its own thread. The worker is not held while they are pending;
// TimeoutHint and Cancel still answer such a request, and a late completion changes nothing.
#include <catch2/catch.hpp>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

// ns=2 is the plugin's owned namespace, ns=3 the one of its store nodes (the first after the
// server's own ns=1).
constexpr std::uint16_t kOwned = 2;
constexpr std::uint16_t kStore = 3;

constexpr const char* kFifo = "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n";

struct AsyncServer : test::ServerProcess {
    AsyncServer(int requestThreads, const std::string& limits, const std::string& plugin,
                const std::string& slots = kFifo)
        : test::ServerProcess("async", [=](std::uint16_t port, const std::filesystem::path&) {
              std::ostringstream s;
              s << test::configHead(port) << "request_threads = " << requestThreads << "\n"
                << "[server.limits]\n"
                << limits << slots
                << "[plugins.transport-tcp]\n[plugins.test-asyncread]\nlibrary = \""
                << UAPLEX_ASYNCREAD_PLUGIN << "\"\n"
                << plugin << "[access]\nanonymous_permissions = [\"All\"]\n";
              return s.str();
          }) {}
};

// One worker; Delayed completes after 400 ms, Late after 1500 ms.
AsyncServer& oneWorker() {
    static AsyncServer s(1, "", "delay_ms = 400\nlate_ms = 1500\n");
    return s;
}

struct Item {
    std::uint16_t ns;
    const char* id;
};

ua::ReadRequest readOf(std::vector<ua::ReadValueId>& ids, std::initializer_list<Item> items) {
    ids.clear();
    for (const Item& i : items) {
        ua::ReadValueId v{};
        v.nodeId = ua::stringNodeId(i.ns, i.id);
        v.attributeId = 13;
        ids.push_back(v);
    }
    ua::ReadRequest r{};
    r.timestampsToReturn = ua::TimestampsToReturn::Neither;
    r.nodesToRead = {std::int32_t(ids.size()), ids.data()};
    return r;
}

std::uint32_t handleOf(const enc::DecodedMessage& m) {
    return static_cast<const ua::ResponseHeader*>(m.object)->requestHandle;
}

// What a Read result holds, copied out of the client's arena.
struct Value {
    uaplex_status status = UAPLEX_Good;
    std::int32_t number = 0;
    std::string text;
};

std::vector<Value> valuesOf(const enc::DecodedMessage& m) {
    std::vector<Value> out;
    if (m.type != enc::dataTypeOf<ua::ReadResponse>()) return out;
    const auto& r = *static_cast<const ua::ReadResponse*>(m.object);
    for (std::size_t i = 0; i < r.results.size(); ++i) {
        const ua::DataValue& dv = r.results[i];
        Value v;
        v.status = (dv.mask & UAPLEX_DATAVALUE_STATUS) ? dv.status : UAPLEX_Good;
        std::uint8_t t = dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK;
        if (t == UAPLEX_TYPE_INT32) v.number = dv.value.value.int32;
        if (t == UAPLEX_TYPE_STRING && dv.value.value.string.length > 0)
            v.text.assign(dv.value.value.string.data, std::size_t(dv.value.value.string.length));
        out.push_back(v);
    }
    return out;
}

}  // namespace

TEST_CASE("async: a pending read holds no worker and fast reads pass it") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, fastIds;
    auto slow = readOf(slowIds, {{kOwned, "Delayed"}});
    auto fast = readOf(fastIds, {{kStore, "Stored"}});
    REQUIRE(c.send(slow, 1));
    // Behind a synchronous 400 ms read these would wait on the only worker.
    for (std::uint32_t h = 2; h <= 4; ++h) REQUIRE(c.send(fast, h));
    for (std::uint32_t h = 2; h <= 4; ++h) {
        auto m = c.receiveResponse();
        REQUIRE(m.object != nullptr);

        CHECK(handleOf(m) == h);
        auto v = valuesOf(m);
        REQUIRE(v.size() == 1);
        CHECK(v[0].number == 5);
    }
    auto m = c.receiveResponse();
    REQUIRE(m.object != nullptr);
    CHECK(handleOf(m) == 1);
    auto v = valuesOf(m);
    REQUIRE(v.size() == 1);
    CHECK(v[0].status == UAPLEX_Good);
    CHECK(v[0].text == "delayed");
}

TEST_CASE("async: a pending read gives back its execution lease in the fair queue") {
    // The fair queue with admission charges one execution lease per running request; with
    // one worker and the shipped configuration's bootstrap place there is one for the
    // session, and a parked request that kept it would hold its next requests behind it.
    static AsyncServer fair(1, "", "delay_ms = 400\nlate_ms = 1500\n",
                            "[slots]\nrequest_queue = \"fair\"\nadmission = \"leases\"\n"
                            "[plugins.fair]\n[plugins.leases]\n"
                            "[plugins.leases.stages.request_execution]\nbootstrap = 1\n");
    Client c;
    REQUIRE(c.open(fair.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, fastIds;
    auto slow = readOf(slowIds, {{kOwned, "Delayed"}});
    auto fast = readOf(fastIds, {{kStore, "Stored"}});
    REQUIRE(c.send(slow, 1));
    for (std::uint32_t h = 2; h <= 4; ++h) REQUIRE(c.send(fast, h));
    std::vector<std::uint32_t> order;
    for (int i = 0; i < 4; ++i) {
        auto m = c.receiveResponse();
        REQUIRE(m.object != nullptr);
        order.push_back(handleOf(m));
    }
    CHECK(order == std::vector<std::uint32_t>{2, 3, 4, 1});
}

TEST_CASE("async: one Read mixes store asynchronous inline and synchronous items") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids;
    auto read = readOf(ids, {{kStore, "Stored"},
                             {kOwned, "Delayed"},
                             {kOwned, "Inline"},
                             {kStore, "StoreAsync"},
                             {kOwned, "Sync"},
                             {kOwned, "Nothing"},
                             {0, "NoSuchNode"}});
    auto m = c.call(read, 3);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    CHECK(handleOf(m) == 3);
    auto v = valuesOf(m);
    REQUIRE(v.size() == 7);
    CHECK(v[0].number == 5);
    CHECK(v[1].text == "delayed");
    CHECK(v[2].number == 8);
    CHECK(v[3].number == 11);
    CHECK(v[4].number == 9);
    CHECK(v[5].status == UAPLEX_BadNodeIdUnknown);
    CHECK(v[6].status == UAPLEX_BadNodeIdUnknown);
}

TEST_CASE(
    "async: TimeoutHint answers a pending read BadTimeout and its late completion is harmless") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    c.setTimeoutHint(200);
    std::vector<ua::ReadValueId> ids, fastIds;
    auto late = readOf(ids, {{kOwned, "Late"}, {kStore, "StoreAsync"}});
    auto m = c.call(late, 4);
    REQUIRE(m.object != nullptr);
    CHECK(handleOf(m) == 4);
    CHECK(m.type == enc::dataTypeOf<ua::ServiceFault>());
    CHECK(Client::result(m) == UAPLEX_BadTimeout);
    // The plugin completes after 1.5 s, into the request's memory the kernel kept: nothing
    // more is sent, and the server goes on.
    c.setTimeoutHint(10000);
    std::this_thread::sleep_for(std::chrono::milliseconds(1700));
    auto fast = readOf(fastIds, {{kStore, "Stored"}, {kOwned, "Inline"}});
    auto f = c.call(fast, 5);
    REQUIRE(Client::result(f) == UAPLEX_Good);
    CHECK(handleOf(f) == 5);
    auto v = valuesOf(f);
    REQUIRE(v.size() == 2);
    CHECK(v[0].number == 5);
    CHECK(v[1].number == 8);
    CHECK(oneWorker().alive());
}

TEST_CASE("async: Cancel answers a pending read BadRequestCancelledByRequest and counts it") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids;
    auto late = readOf(ids, {{kOwned, "Late"}});
    REQUIRE(c.send(late, 21));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // pending by now
    ua::CancelRequest cancel{};
    cancel.requestHandle = 21;
    REQUIRE(c.send(cancel, 22));
    bool sawRead = false, sawCancel = false;
    for (int i = 0; i < 2; ++i) {
        auto m = c.receiveResponse();
        REQUIRE(m.object != nullptr);
        if (handleOf(m) == 21) {
            sawRead = true;
            CHECK(m.type == enc::dataTypeOf<ua::ServiceFault>());
            CHECK(Client::result(m) == UAPLEX_BadRequestCancelledByRequest);
        } else {
            sawCancel = true;
            CHECK(handleOf(m) == 22);
            REQUIRE(m.type == enc::dataTypeOf<ua::CancelResponse>());
            CHECK(static_cast<ua::CancelResponse*>(m.object)->cancelCount == 1);
        }
    }
    CHECK(sawRead);
    CHECK(sawCancel);
    // The late completion finds its request answered: nothing more comes on this channel.
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    std::vector<ua::ReadValueId> fastIds;
    auto fast = readOf(fastIds, {{kStore, "Stored"}});
    auto f = c.call(fast, 23);
    REQUIRE(Client::result(f) == UAPLEX_Good);
    CHECK(handleOf(f) == 23);
}

TEST_CASE("async: a Write completes later and items of other nodes answer their own status") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::WriteValue> wv(2);
    wv[0].nodeId = ua::stringNodeId(kOwned, "Delayed");
    wv[1].nodeId = ua::stringNodeId(kOwned, "Sync");
    for (auto& w : wv) {
        w.attributeId = 13;
        w.value.mask = UAPLEX_DATAVALUE_VALUE;
        w.value.value = ua::makeVariant(ua::BuiltinType::Int32);
        w.value.value.value.int32 = 1;
    }
    ua::WriteRequest req{};
    req.nodesToWrite = {2, wv.data()};
    auto m = c.call(req, 31);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    REQUIRE(m.type == enc::dataTypeOf<ua::WriteResponse>());
    const auto& r = *static_cast<const ua::WriteResponse*>(m.object);
    REQUIRE(r.results.size() == 2);
    CHECK(r.results[0] == UAPLEX_Good);
    CHECK(r.results[1] == UAPLEX_BadNotWritable);
}

TEST_CASE("async: max_async_operations bounds the pending operations") {
    // Three operations in one Read (two store nodes, one owner call), room for two.
    AsyncServer s(1, "max_async_operations = 2\n", "delay_ms = 100\n");
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids;
    auto read = readOf(ids, {{kStore, "StoreAsync"}, {kStore, "StoreAsync"}, {kOwned, "Delayed"}});
    auto m = c.call(read, 41);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto v = valuesOf(m);
    REQUIRE(v.size() == 3);
    int refused = 0, good = 0;
    for (const Value& x : v) {
        refused += x.status == UAPLEX_BadResourceUnavailable;
        good += x.status == UAPLEX_Good;
    }
    CHECK(refused == 1);
    CHECK(good == 2);
    // The slots come back: the same Read again gets as far.
    auto again = c.call(read, 42);
    auto w = valuesOf(again);
    REQUIRE(w.size() == 3);
    CHECK(w[0].number == 11);
    CHECK(w[1].number == 11);
}

TEST_CASE("async: concurrent completions from many sessions answer every request") {
    AsyncServer s(2, "", "delay_ms = 1\n");
    constexpr int kClients = 4, kReads = 50;
    std::vector<std::thread> threads;
    std::atomic<int> good{0}, bad{0};
    for (int t = 0; t < kClients; ++t)
        threads.emplace_back([&] {
            Client c;
            if (!c.open(s.port) || c.createSession() != UAPLEX_Good) {
                bad += kReads;
                return;
            }
            std::vector<ua::ReadValueId> ids;
            auto read = readOf(ids, {{kOwned, "Delayed"},
                                     {kOwned, "Inline"},
                                     {kStore, "StoreAsync"},
                                     {kStore, "Stored"}});
            for (int i = 0; i < kReads; ++i)
                if (!c.send(read, std::uint32_t(100 + i))) ++bad;
            for (int i = 0; i < kReads; ++i) {
                auto m = c.receiveResponse();
                auto v = valuesOf(m);
                bool ok = v.size() == 4 && v[0].text == "delayed" && v[1].number == 8 &&
                          v[2].number == 11 && v[3].number == 5;
                ++(ok ? good : bad);
            }
        });
    for (auto& t : threads) t.join();
    CHECK(bad == 0);
    CHECK(good == kClients * kReads);
    CHECK(s.alive());
}

// --- Call (call_async) --------------------------------------------------------------------------

namespace {

// What a Call result holds, copied out of the client's arena.
struct CallAnswer {
    uaplex_status status = UAPLEX_Good;
    std::vector<uaplex_status> inputResults;
    std::vector<std::uint32_t> outputs;  // Int32 and UInt32 outputs
    std::int32_t outputCount = -1;
};

ua::CallMethodRequest methodOf(std::uint16_t ns, const char* method, ua::Variant* inputs,
                               std::int32_t inputCount) {
    ua::CallMethodRequest m{};
    m.objectId = ua::stringNodeId(ns, "Object");
    m.methodId = ua::stringNodeId(ns, method);
    m.inputArguments = {inputCount, inputs};
    return m;
}

ua::CallRequest callOf(std::vector<ua::CallMethodRequest>& methods) {
    ua::CallRequest r{};
    r.methodsToCall = {std::int32_t(methods.size()), methods.data()};
    return r;
}

std::vector<CallAnswer> answersOf(const enc::DecodedMessage& m) {
    std::vector<CallAnswer> out;
    if (m.type != enc::dataTypeOf<ua::CallResponse>()) return out;
    const auto& r = *static_cast<const ua::CallResponse*>(m.object);
    for (std::size_t i = 0; i < r.results.size(); ++i) {
        const ua::CallMethodResult& cr = r.results[i];
        CallAnswer a;
        a.status = cr.statusCode;
        for (std::size_t k = 0; k < cr.inputArgumentResults.size(); ++k)
            a.inputResults.push_back(cr.inputArgumentResults[k]);
        a.outputCount = cr.outputArguments.length;
        for (std::size_t k = 0; k < cr.outputArguments.size(); ++k) {
            const ua::Variant& v = cr.outputArguments[k];
            std::uint8_t t = v.encoding & UAPLEX_VARIANT_TYPE_MASK;
            if (t == UAPLEX_TYPE_INT32) a.outputs.push_back(std::uint32_t(v.value.int32));
            if (t == UAPLEX_TYPE_UINT32) a.outputs.push_back(v.value.uint32);
        }
        out.push_back(a);
    }
    return out;
}

ua::Variant int32Of(std::int32_t x) {
    ua::Variant v = ua::makeVariant(ua::BuiltinType::Int32);
    v.value.int32 = x;
    return v;
}

}  // namespace

TEST_CASE("async: a Call completed later from another thread holds no worker") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    ua::Variant in = int32Of(21);
    std::vector<ua::CallMethodRequest> methods{methodOf(kOwned, "DelayedMethod", &in, 1),
                                               methodOf(kOwned, "SyncMethod", nullptr, 0),
                                               methodOf(0, "NoSuchObject", nullptr, 0)};
    auto call = callOf(methods);
    REQUIRE(c.send(call, 51));
    // Behind a synchronous 400 ms call these would wait on the only worker.
    std::vector<ua::ReadValueId> fastIds;
    auto fast = readOf(fastIds, {{kStore, "Stored"}});
    for (std::uint32_t h = 52; h <= 54; ++h) REQUIRE(c.send(fast, h));
    for (std::uint32_t h = 52; h <= 54; ++h) {
        auto m = c.receiveResponse();
        REQUIRE(m.object != nullptr);
        CHECK(handleOf(m) == h);
    }
    auto m = c.receiveResponse();
    REQUIRE(m.object != nullptr);
    CHECK(handleOf(m) == 51);
    auto a = answersOf(m);
    REQUIRE(a.size() == 3);
    CHECK(a[0].status == UAPLEX_Good);
    REQUIRE(a[0].outputs.size() == 1);
    CHECK(a[0].outputs[0] == 42);
    REQUIRE(a[0].inputResults.size() == 1);
    CHECK(a[0].inputResults[0] == UAPLEX_Good);
    CHECK(a[1].status == UAPLEX_Good);  // call_async answered synchronously
    CHECK(a[2].status == UAPLEX_BadNodeIdUnknown);
}

TEST_CASE("async: a completed Call's input results and outputs are checked as a synchronous one") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    ua::Variant wrong = ua::makeVariant(ua::BuiltinType::Boolean);
    std::vector<ua::CallMethodRequest> methods{methodOf(kOwned, "DelayedMethod", &wrong, 1),
                                               methodOf(kOwned, "BadOutputMethod", nullptr, 0)};
    auto call = callOf(methods);
    auto m = c.call(call, 55);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto a = answersOf(m);
    REQUIRE(a.size() == 2);
    CHECK(a[0].status == UAPLEX_BadInvalidArgument);
    REQUIRE(a[0].inputResults.size() == 1);
    CHECK(a[0].inputResults[0] == UAPLEX_BadTypeMismatch);
    CHECK(a[0].outputs.empty());
    // Good with one output but no array: not sent as it is.
    CHECK(a[1].status == UAPLEX_BadInternalError);
    CHECK(a[1].outputCount <= 0);
}

TEST_CASE(
    "async: TimeoutHint answers a pending Call BadTimeout and its late completion is "
    "harmless") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    c.setTimeoutHint(200);
    std::vector<ua::CallMethodRequest> methods{methodOf(kOwned, "LateMethod", nullptr, 0)};
    auto call = callOf(methods);
    auto m = c.call(call, 56);
    REQUIRE(m.object != nullptr);
    CHECK(handleOf(m) == 56);
    CHECK(m.type == enc::dataTypeOf<ua::ServiceFault>());
    CHECK(Client::result(m) == UAPLEX_BadTimeout);
    c.setTimeoutHint(10000);
    std::this_thread::sleep_for(std::chrono::milliseconds(1700));  // the late completion
    ua::Variant in = int32Of(4);
    std::vector<ua::CallMethodRequest> again{methodOf(kOwned, "DelayedMethod", &in, 1)};
    auto next = callOf(again);
    auto f = c.call(next, 57);
    REQUIRE(Client::result(f) == UAPLEX_Good);
    CHECK(handleOf(f) == 57);
    auto a = answersOf(f);
    REQUIRE(a.size() == 1);
    REQUIRE(a[0].outputs.size() == 1);
    CHECK(a[0].outputs[0] == 8);
    CHECK(oneWorker().alive());
}

TEST_CASE("async: a second completion of a Call returns BadInvalidState and changes nothing") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::CallMethodRequest> methods{methodOf(kOwned, "TwiceMethod", nullptr, 0)};
    auto call = callOf(methods);
    auto m = c.call(call, 58);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto a = answersOf(m);
    REQUIRE(a.size() == 1);
    CHECK(a[0].status == UAPLEX_Good);
    std::vector<ua::CallMethodRequest> probe{methodOf(kOwned, "SecondStatus", nullptr, 0)};
    auto p = callOf(probe);
    auto s = c.call(p, 59);
    auto b = answersOf(s);
    REQUIRE(b.size() == 1);
    REQUIRE(b[0].outputs.size() == 1);
    CHECK(b[0].outputs[0] == UAPLEX_BadInvalidState);
    // Nothing else was sent for the first Call: the next response is the next request's.
    std::vector<ua::ReadValueId> fastIds;
    auto fast = readOf(fastIds, {{kStore, "Stored"}});
    auto f = c.call(fast, 60);
    CHECK(handleOf(f) == 60);
}

TEST_CASE("async: Cancel answers a pending Call BadRequestCancelledByRequest") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::CallMethodRequest> methods{methodOf(kOwned, "LateMethod", nullptr, 0)};
    auto call = callOf(methods);
    REQUIRE(c.send(call, 61));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // pending by now
    ua::CancelRequest cancel{};
    cancel.requestHandle = 61;
    REQUIRE(c.send(cancel, 62));
    bool sawCall = false, sawCancel = false;
    for (int i = 0; i < 2; ++i) {
        auto m = c.receiveResponse();
        REQUIRE(m.object != nullptr);
        if (handleOf(m) == 61) {
            sawCall = true;
            CHECK(m.type == enc::dataTypeOf<ua::ServiceFault>());
            CHECK(Client::result(m) == UAPLEX_BadRequestCancelledByRequest);
        } else {
            sawCancel = true;
            REQUIRE(m.type == enc::dataTypeOf<ua::CancelResponse>());
            CHECK(static_cast<ua::CancelResponse*>(m.object)->cancelCount == 1);
        }
    }
    CHECK(sawCall);
    CHECK(sawCancel);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the late completion
    std::vector<ua::ReadValueId> fastIds;
    auto fast = readOf(fastIds, {{kStore, "Stored"}});
    auto f = c.call(fast, 63);
    REQUIRE(Client::result(f) == UAPLEX_Good);
    CHECK(handleOf(f) == 63);
}

// --- Browse (browse_async) ----------------------------------------------------------------------

namespace {

// The targets of a Browse(Next) result and its continuation point, copied out.
struct Page {
    uaplex_status status = UAPLEX_Good;
    std::vector<std::string> targets;
    std::vector<std::uint8_t> continuation;
};

Page pageOf(const enc::DecodedMessage& m) {
    Page p;
    const ua::BrowseResult* r = nullptr;
    if (m.type == enc::dataTypeOf<ua::BrowseResponse>()) {
        const auto& b = *static_cast<const ua::BrowseResponse*>(m.object);
        if (b.results.size() == 1) r = &b.results[0];
    } else if (m.type == enc::dataTypeOf<ua::BrowseNextResponse>()) {
        const auto& b = *static_cast<const ua::BrowseNextResponse*>(m.object);
        if (b.results.size() == 1) r = &b.results[0];
    }
    if (r == nullptr) {
        p.status = UAPLEX_BadUnexpectedError;
        return p;
    }
    p.status = r->statusCode;
    for (std::size_t k = 0; k < r->references.size(); ++k) {
        const ua::NodeId& id = r->references[k].nodeId.node_id;
        if (id.identifier_type == UAPLEX_ID_STRING && id.identifier.string.length > 0)
            p.targets.emplace_back(id.identifier.string.data,
                                   std::size_t(id.identifier.string.length));
    }
    if (r->continuationPoint.length > 0)
        p.continuation.assign(r->continuationPoint.data,
                              r->continuationPoint.data + r->continuationPoint.length);
    return p;
}

}  // namespace

TEST_CASE("async: a Browse completed from another thread pages through BrowseNext") {
    Client c;
    REQUIRE(c.open(oneWorker().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    ua::BrowseDescription d{};
    d.nodeId = ua::stringNodeId(kOwned, "Folder");
    d.browseDirection = ua::BrowseDirection::Forward;
    d.includeSubtypes = true;
    d.resultMask = 63;
    ua::BrowseRequest b{};
    b.requestedMaxReferencesPerNode = 2;
    b.nodesToBrowse = {1, &d};
    REQUIRE(c.send(b, 71));
    // Behind a synchronous 400 ms browse this would wait on the only worker.
    std::vector<ua::ReadValueId> fastIds;
    auto fast = readOf(fastIds, {{kStore, "Stored"}});
    REQUIRE(c.send(fast, 72));
    auto f = c.receiveResponse();
    REQUIRE(f.object != nullptr);
    CHECK(handleOf(f) == 72);
    auto m = c.receiveResponse();
    REQUIRE(m.object != nullptr);
    CHECK(handleOf(m) == 71);
    Page first = pageOf(m);
    CHECK(first.status == UAPLEX_Good);
    CHECK(first.targets == std::vector<std::string>{"Child0", "Child1"});
    REQUIRE(first.continuation.size() > 0);

    std::vector<std::string> seen = first.targets;
    std::vector<std::uint8_t> cp = first.continuation;
    for (int round = 0; round < 4 && !cp.empty(); ++round) {
        ua::ByteString bytes{std::int32_t(cp.size()), cp.data()};
        ua::BrowseNextRequest next{};
        next.continuationPoints = {1, &bytes};
        auto n = c.call(next, std::uint32_t(73 + round));
        REQUIRE(n.object != nullptr);
        Page p = pageOf(n);
        CHECK(p.status == UAPLEX_Good);
        seen.insert(seen.end(), p.targets.begin(), p.targets.end());
        cp = p.continuation;
    }
    CHECK(cp.empty());
    CHECK(seen == std::vector<std::string>{"Child0", "Child1", "Child2", "Child3", "Child4"});
}
