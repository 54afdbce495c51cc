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

struct AsyncServer : test::ServerProcess {
    AsyncServer(int requestThreads, const std::string& limits, const std::string& plugin)
        : test::ServerProcess("async", [=](std::uint16_t port, const std::filesystem::path&) {
              std::ostringstream s;
              s << test::configHead(port) << "request_threads = " << requestThreads << "\n"
                << "[server.limits]\n"
                << limits << "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n"
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
