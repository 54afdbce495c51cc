// SPDX-License-Identifier: Apache-2.0
// docs/pipeline.md, Publish queue: the per-session Publish queue and the Publish, Republish and
// Acknowledge services, through SubscriptionManager on a fake clock.
#include <malloc.h>
#include <atomic>
#include <catch2/catch.hpp>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include <uaplex/subscription/subscription_manager.hpp>
#include "engine_support.hpp"
#include "support/counting_new.hpp"  // this executable's operator new counts allocations

using namespace uaplex;
using namespace uaplex::subscription;
using namespace uaplex::subscription::test;

namespace {

// Every node exists; values are pushed by the test through valueChanged.
struct FakeSource : NodeValueSource {
    std::map<uint64_t, double> values;
    std::set<uint64_t> polled;
    uaplex_status resolve(const ua::ReadValueId& id, uint64_t* h) override {
        if (id.nodeId.identifier.numeric == 0) return UAPLEX_BadNodeIdUnknown;
        *h = id.nodeId.identifier.numeric;
        return UAPLEX_Good;
    }
    uaplex_status read(uint64_t h, enc::Arena&, ua::DataValue& out) override {
        out = Engine::value(values[h]);
        return UAPLEX_Good;
    }
    uaplex_status euRange(uint64_t, double* lo, double* hi) override {
        *lo = 0;
        *hi = 100;
        return UAPLEX_Good;
    }
    bool reportsChanges(uint64_t h) override { return !polled.count(h); }
};

struct Completion {
    uint64_t requestId;
    uaplex_status status;
    PublishOutcome outcome;
    std::vector<uaplex_status> acks;
};

struct Sink : PublishSink {
    std::vector<uint64_t> parkedIds;
    std::vector<Completion> done;
    std::set<uint32_t> badChannels;
    void parked(uint64_t id) override { parkedIds.push_back(id); }
    void complete(uint64_t id, uaplex_status st, PublishOutcome&& o, AckResults&& acks) override {
        uaplex::test::tUncounted = true;  // the test's bookkeeping is not the engine's
        done.push_back({id, st, std::move(o), {acks.begin(), acks.end()}});
        uaplex::test::tUncounted = false;
    }
    bool channelValid(uint64_t, uint64_t, uint32_t channel) override {
        return !badChannels.count(channel);
    }
    const Completion* find(uint64_t id) const {
        for (auto& c : done)
            if (c.requestId == id) return &c;
        return nullptr;
    }
};

// A queue factory over the plugins' data-change ring and the test FIFO for events.
struct TestFactory {
    static EngineContext* ctx;
    static inline const uaplex_mi_queue_params* params = nullptr;
    static const uaplex_mi_queue_factory_ops ops;
};
EngineContext* TestFactory::ctx = nullptr;
const uaplex_mi_queue_factory_ops TestFactory::ops{
    .hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_factory_ops, UAPLEX_STYPE_MI_QUEUE_FACTORY_OPS),
    .start = nullptr,
    .stop = nullptr,
    .destroy = nullptr,
    .supports_durable = nullptr,
    .create_data_change_queue =
        [](void*, int32_t, uint32_t, void** q,
           const uaplex_data_change_queue_ops** o) noexcept -> uaplex_status {
        *q = new miqueues::DataChangeRing(*params);
        *o = &miqueues::DataChangeOps<miqueues::DataChangeRing>::ops;
        return UAPLEX_Good;
    },
    .create_event_queue = [](void*, int32_t, uint32_t, void** q,
                             const uaplex_event_queue_ops** o) noexcept -> uaplex_status {
        auto* f = new EventFifo;
        f->ctx = ctx;
        *q = f;
        *o = &EventFifo::ops;
        return UAPLEX_Good;
    },
};

struct Server {
    FakeClock clock;
    FakeSource source;
    Sink sink;
    SubscriptionLimits limits;
    std::unique_ptr<SubscriptionManager> mgr;
    enc::Arena arena;
    uint64_t nextRequest = 1;

    explicit Server(SubscriptionLimits l = {}) : limits(l) {
        mgr = std::make_unique<SubscriptionManager>(clock, limits, source, sink);
        TestFactory::ctx = &mgr->context();
        TestFactory::params = &mgr->queueParams();
        mgr->setQueueFactory(&TestFactory::ops, nullptr);
    }
    // The completions' message leases go back to the manager's pool while it still exists.
    ~Server() { sink.done.clear(); }
    uint32_t subscribe(uint64_t session, uint8_t priority = 0, double pi = 100, uint32_t k = 3,
                       uint32_t l = 30) {
        ua::CreateSubscriptionRequest req{};
        req.requestedPublishingInterval = pi;
        req.requestedMaxKeepAliveCount = k;
        req.requestedLifetimeCount = l;
        req.publishingEnabled = true;
        req.priority = priority;
        ua::CreateSubscriptionResponse resp{};
        REQUIRE(mgr->createSubscription(session, nullptr, req, resp) == UAPLEX_Good);
        return resp.subscriptionId;
    }
    // A Value item on node `node` (client handle `handle`, or the node's number when 0).
    uint32_t monitor(uint64_t session, uint32_t sub, uint32_t node, uint32_t queueSize = 1,
                     double si = 0, uint32_t handle = 0,
                     const ua::DataChangeFilter* filter = nullptr,
                     ua::TimestampsToReturn ts = ua::TimestampsToReturn::Both) {
        ua::MonitoredItemCreateRequest item{};
        item.itemToMonitor.nodeId = ua::numericNodeId(1, node);
        item.itemToMonitor.attributeId = 13;
        item.monitoringMode = ua::MonitoringMode::Reporting;
        item.requestedParameters.clientHandle = handle ? handle : node;
        item.requestedParameters.samplingInterval = si;
        item.requestedParameters.queueSize = queueSize;
        item.requestedParameters.discardOldest = true;
        if (filter) {
            auto& eo = item.requestedParameters.filter;
            eo.type_id =
                ua::numericNodeId(0, enc::dataTypeOf<ua::DataChangeFilter>()->binaryEncodingId);
            eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
            eo.data_type = enc::dataTypeOf<ua::DataChangeFilter>();
            eo.object = const_cast<ua::DataChangeFilter*>(filter);
        }
        ua::CreateMonitoredItemsRequest req{};
        req.subscriptionId = sub;
        req.timestampsToReturn = ts;
        req.itemsToCreate = {1, &item};
        ua::CreateMonitoredItemsResponse resp{};
        REQUIRE(mgr->createMonitoredItems(session, req, resp, arena) == UAPLEX_Good);
        REQUIRE(resp.results[0].statusCode == UAPLEX_Good);
        return resp.results[0].monitoredItemId;
    }
    uint64_t publish(uint64_t session, uint32_t channel = 1, int64_t deadline = 0,
                     std::vector<ua::SubscriptionAcknowledgement> acks = {}) {
        ua::PublishRequest req{};
        req.subscriptionAcknowledgements = {int32_t(acks.size()), acks.data()};
        uint64_t id = nextRequest++;
        mgr->publish(session, {id, channel, deadline}, req);
        return id;
    }
    void tickTo(int64_t t) {
        clock.mono = t;
        mgr->timerTick();
    }
};

}  // namespace

TEST_CASE("publish queue 1: no subscriptions gives BadNoSubscription, nothing parked") {
    Server s;
    uint64_t r = s.publish(1);
    REQUIRE(s.sink.find(r));
    CHECK(s.sink.find(r)->status == UAPLEX_BadNoSubscription);
    CHECK(s.sink.parkedIds.empty());
    s.subscribe(2);  // another session's subscription: this session has no queue
    uint64_t r2 = s.publish(1);
    CHECK(s.sink.find(r2)->status == UAPLEX_BadSessionClosed);
}

TEST_CASE("publish queue 2: too many Publish requests drops the oldest (Part 4 5.13.5)") {
    SubscriptionLimits l;
    l.maxPublishRequestCount = 2;
    Server s(l);
    s.subscribe(1);
    uint64_t a = s.publish(1), b = s.publish(1), c = s.publish(1);
    CHECK(s.sink.parkedIds == std::vector<uint64_t>{a, b, c});
    REQUIRE(s.sink.find(a));
    CHECK(s.sink.find(a)->status == UAPLEX_BadTooManyPublishRequests);
    CHECK_FALSE(s.sink.find(b));
    CHECK_FALSE(s.sink.find(c));
}

TEST_CASE("publish queue 2b: the queue holds more requests than the session has subscriptions") {
    SubscriptionLimits l;
    l.maxPublishRequestCount = 1;
    Server s(l);
    s.subscribe(1);
    s.subscribe(1);
    uint64_t a = s.publish(1), b = s.publish(1), c = s.publish(1);
    CHECK(s.sink.parkedIds == std::vector<uint64_t>{a, b, c});
    CHECK_FALSE(s.sink.find(a));
    CHECK_FALSE(s.sink.find(b));
    CHECK_FALSE(s.sink.find(c));
    uint64_t d = s.publish(1);
    REQUIRE(s.sink.find(a));
    CHECK(s.sink.find(a)->status == UAPLEX_BadTooManyPublishRequests);
    CHECK_FALSE(s.sink.find(d));
}

TEST_CASE("publish queue 3: priority first, then age") {
    SECTION("priority") {
        Server s;
        uint32_t low = s.subscribe(1, 1);
        s.tickTo(101);  // low is ready at t0
        s.clock.mono = 150;
        uint32_t high = s.subscribe(1, 5);
        s.tickTo(301);  // high becomes ready at t1
        uint64_t r = s.publish(1);
        REQUIRE(s.sink.find(r));
        CHECK(s.sink.find(r)->outcome.subscriptionId == high);
        uint64_t r2 = s.publish(1);
        CHECK(s.sink.find(r2)->outcome.subscriptionId == low);
    }
    SECTION("age") {
        Server s;
        uint32_t older = s.subscribe(1, 3);
        s.tickTo(101);
        s.clock.mono = 150;
        s.subscribe(1, 3);
        s.tickTo(301);
        uint64_t r = s.publish(1);
        CHECK(s.sink.find(r)->outcome.subscriptionId == older);
    }
}

TEST_CASE("publish queue 4: waiting requests are served in order; a false alarm requeues") {
    Server s;
    uint32_t sub = s.subscribe(1);
    uint32_t item = s.monitor(1, sub, 7, 5);
    uint64_t r1 = s.publish(1), r2 = s.publish(1);
    s.tickTo(101);  // the first tick: the initial value
    REQUIRE(s.sink.done.size() == 1);
    CHECK(s.sink.done[0].requestId == r1);
    // Readiness revoked before the request arrives: the request is parked, not answered.
    s.source.values[7] = 1;
    s.mgr->valueChanged(7, Engine::value(5));
    s.tickTo(201);  // assigned to r2 right away
    REQUIRE(s.sink.done.size() == 2);
    CHECK(s.sink.done[1].requestId == r2);
    s.mgr->valueChanged(7, Engine::value(6));
    s.tickTo(301);  // ready, no request
    ua::SetMonitoringModeRequest mm{};
    mm.subscriptionId = sub;
    mm.monitoringMode = ua::MonitoringMode::Disabled;
    mm.monitoredItemIds = {1, &item};
    ua::SetMonitoringModeResponse mr{};
    REQUIRE(s.mgr->setMonitoringMode(1, mm, mr, s.arena) == UAPLEX_Good);
    uint64_t r3 = s.publish(1);  // false alarm: parked at the head
    CHECK_FALSE(s.sink.find(r3));
    uint64_t r4 = s.publish(1);
    mm.monitoringMode = ua::MonitoringMode::Reporting;
    s.mgr->setMonitoringMode(1, mm, mr, s.arena);
    s.tickTo(401);
    REQUIRE(s.sink.done.size() == 3);
    CHECK(s.sink.done[2].requestId == r3);
    CHECK_FALSE(s.sink.find(r4));
}

TEST_CASE("publish queue 5: a parked request times out at deadline + 500 ms") {
    Server s;
    s.subscribe(1, 0, 100, 1000, 3000);
    s.tickTo(101);
    s.publish(1);  // takes the first keep-alive
    uint64_t r = s.publish(1, 1, 200 + 1000);
    s.tickTo(1600);
    CHECK_FALSE(s.sink.find(r));
    s.tickTo(1701);
    REQUIRE(s.sink.find(r));
    CHECK(s.sink.find(r)->status == UAPLEX_BadTimeout);
    // The request registry's deadline sweep ends one earlier through cancelPublish.
    uint64_t r2 = s.publish(1, 1, 2800);
    CHECK(s.mgr->cancelPublish(r2, UAPLEX_BadTimeout));
    CHECK(s.sink.find(r2)->status == UAPLEX_BadTimeout);
}

TEST_CASE("publish queue 6: a request from a replaced channel fails at assignment") {
    Server s;
    s.subscribe(1);
    uint64_t r1 = s.publish(1, 9), r2 = s.publish(1, 2);
    s.sink.badChannels.insert(9);
    s.tickTo(101);
    REQUIRE(s.sink.find(r1));
    CHECK(s.sink.find(r1)->status == UAPLEX_BadSecureChannelIdInvalid);
    REQUIRE(s.sink.find(r2));
    CHECK(s.sink.find(r2)->status == UAPLEX_Good);
}

TEST_CASE("publish queue 7: deleting the last subscription, closing the session") {
    Server s;
    uint32_t sub = s.subscribe(1);
    s.tickTo(101);
    s.publish(1);
    uint64_t a = s.publish(1), b = s.publish(1);
    ua::DeleteSubscriptionsRequest del{};
    del.subscriptionIds = {1, &sub};
    ua::DeleteSubscriptionsResponse dr{};
    REQUIRE(s.mgr->deleteSubscriptions(1, del, dr, s.arena) == UAPLEX_Good);
    CHECK(dr.results[0] == UAPLEX_Good);
    CHECK(s.sink.find(a)->status == UAPLEX_BadNoSubscription);
    CHECK(s.sink.find(b)->status == UAPLEX_BadNoSubscription);
    s.subscribe(1);
    uint64_t c = s.publish(1), d = s.publish(1);
    s.mgr->closeSession(1, true);
    CHECK(s.sink.find(c)->status == UAPLEX_BadSessionClosed);
    CHECK(s.sink.find(d)->status == UAPLEX_BadSessionClosed);
    CHECK(s.mgr->subscriptionCount() == 0);
}

TEST_CASE("publish queue 8: an expired subscription's status reaches the next Publish") {
    Server s;
    uint32_t sub = s.subscribe(1, 0, 2000, 2, 6);
    for (int t = 1; t <= 7; ++t) s.tickTo(int64_t(t) * 2000 + 1);
    CHECK(s.mgr->subscriptionCount() == 0);
    uint64_t r = s.publish(1);
    const Completion* c = s.sink.find(r);
    REQUIRE(c);
    CHECK(c->status == UAPLEX_Good);
    CHECK(c->outcome.subscriptionId == sub);
    CHECK_FALSE(c->outcome.more);
    CHECK(c->outcome.available.empty());
    auto& eo = c->outcome.message.message().notificationData[0];
    CHECK(static_cast<ua::StatusChangeNotification*>(eo.object)->status == UAPLEX_BadTimeout);
    uint64_t r2 = s.publish(1);
    CHECK(s.sink.find(r2)->status == UAPLEX_BadNoSubscription);
}

TEST_CASE("publish queue 9: Republish statuses") {
    Server s;
    uint32_t sub = s.subscribe(1);
    uint32_t other = s.subscribe(2);
    ua::RepublishRequest rr{};
    rr.subscriptionId = sub;
    rr.retransmitSequenceNumber = 42;
    PublishOutcome o;
    CHECK(s.mgr->republish(1, rr, o) == UAPLEX_BadMessageNotAvailable);
    rr.subscriptionId = other;
    CHECK(s.mgr->republish(1, rr, o) == UAPLEX_BadSubscriptionIdInvalid);
}

TEST_CASE("publish queue 10: acknowledgement results") {
    Server s;
    uint32_t sub = s.subscribe(1);
    uint32_t foreign = s.subscribe(2);
    s.monitor(1, sub, 3);
    s.publish(1);
    s.tickTo(101);  // message 1 with the initial value
    REQUIRE(s.sink.done.size() == 1);
    REQUIRE(s.sink.done[0].outcome.message.sequenceNumber() == 1);
    std::vector<ua::SubscriptionAcknowledgement> acks{{sub, 1}, {sub, 99}, {sub, 0}, {foreign, 1}};
    uint64_t r = s.publish(1, 1, 0, acks);
    s.mgr->closeSession(1, true);
    REQUIRE(s.sink.find(r));
    CHECK(s.sink.find(r)->acks == std::vector<uaplex_status>{UAPLEX_Good,
                                                             UAPLEX_BadSequenceNumberUnknown,
                                                             UAPLEX_BadSequenceNumberInvalid,
                                                             UAPLEX_BadSubscriptionIdInvalid});
}

TEST_CASE("services: a pushed change reaches a Publish; polled items sample per group") {
    Server s;
    uint32_t sub = s.subscribe(1);
    s.monitor(1, sub, 5);
    s.source.polled.insert(6);
    s.source.values[6] = 60;
    s.monitor(1, sub, 6, 1, 200);
    s.tickTo(101);
    uint64_t r1 = s.publish(1);
    CHECK(valuesOf(notes(s.sink.find(r1)->outcome.message.message())).size() == 2);
    s.mgr->valueChanged(5, Engine::value(55));
    s.source.values[6] = 61;
    s.tickTo(201);
    uint64_t r2 = s.publish(1);
    REQUIRE(s.sink.find(r2));
    auto n = notes(s.sink.find(r2)->outcome.message.message());
    std::set<double> got;
    for (auto& x : n) got.insert(x.value);
    CHECK(got.count(55));
    CHECK(got.count(61));
}

TEST_CASE("services: heap bytes per monitored item (issue 11)") {
    Server s;
    uint32_t sub = s.subscribe(1);
    const int n = 100000;
    s.source.values[1] = 1;  // warm the pools and arenas before measuring
    s.monitor(1, sub, 1);
    // Items live in the engine's slab (mapped chunks), the rest on the heap.
    const BlockSlab& slab = s.mgr->context().itemSlab;
    auto used = [&] { return mallinfo2().uordblks + slab.chunkCount() * BlockSlab::kChunkBytes; };
    size_t before = used();
    for (int i = 0; i < n; ++i) s.monitor(1, sub, uint32_t(1 + i % 100));
    s.arena.reset();
    size_t after = used();
    double perItem = double(after - before) / n;
    size_t resident = 0;
    s.mgr->find(sub)->forEachItem([&](const MonitoredItem& it) { resident += it.residentBytes(); });
    WARN("heap per item: " << perItem << " B (item " << sizeof(MonitoredItem) << " B, value cell "
                           << sizeof(ValueCell) << " B, resident " << double(resident) / (n + 1)
                           << " B)");
    CHECK(perItem <= 200);
    CHECK(sizeof(MonitoredItem) <= 152);  // the flags share the last value's tail padding
    CHECK(s.mgr->monitoredItemCount() == size_t(n + 1));
    // Deleting them gives the memory back (within the pools' bounded free lists).
    ua::DeleteSubscriptionsRequest del{};
    del.subscriptionIds = {1, &sub};
    ua::DeleteSubscriptionsResponse dr{};
    s.mgr->deleteSubscriptions(1, del, dr, s.arena);
    s.arena.reset();
    CHECK(used() < before + 600 * 1024);
    CHECK(slab.liveBlocks() == 0);
}

TEST_CASE("services: heap bytes per session with a subscription of 10 items and 2 Publish queued") {
    SubscriptionLimits l;
    l.maxSubscriptionCount = 10000;
    Server s(l);
    for (uint32_t n = 1; n <= 10; ++n) s.source.values[n] = n;
    // Large blocks (hash tables, the per-node item lists) may be mapped: hblkhd counts them.
    const BlockSlab& slab = s.mgr->context().itemSlab;
    auto used = [&] {
        struct mallinfo2 m = mallinfo2();
        return m.uordblks + m.hblkhd + slab.chunkCount() * BlockSlab::kChunkBytes;
    };
    auto open = [&](uint64_t session) {
        s.mgr->setIdentity(session, "anonymous");
        uint32_t sub = s.subscribe(session, 0, 1000, 10, 30);
        for (uint32_t n = 1; n <= 10; ++n) s.monitor(session, sub, n);
        s.arena.reset();  // the responses' arena is the request's, not the engine's
        s.publish(session);
        s.publish(session);
    };
    open(1);  // warms the pools and the tables
    const int sessions = 2000;
    size_t before = used();
    for (int i = 0; i < sessions; ++i) open(uint64_t(100 + i));
    double perSession = double(used() - before) / sessions;
    WARN("engine heap per session: " << perSession << " B (subscription " << sizeof(Subscription)
                                     << " B, item " << sizeof(MonitoredItem) << " B)");
    // Nothing is answered yet: both requests of every session wait in its queue.
    CHECK(s.sink.done.empty());
    CHECK(s.mgr->subscriptionCount() == size_t(sessions + 1));
    // 10 items in the slab (1.5 kB) and their values, the subscription, the session's queue
    // with two requests; no empty-queue blocks (a std::deque reserves 576 bytes for nothing).
    CHECK(perSession <= 3000);
}

TEST_CASE("services: the publishing cycle grows no long-lived block of a new subscription") {
    // The ready and publish lists and the retained message's place are taken when the first
    // CreateMonitoredItems comes (the service's thread), not grown by the publishing thread
    // between the first messages it builds (holes of a message around each when they go).
    Server s;
    uint32_t sub = s.subscribe(1, 0, 100, 10, 30);
    for (uint32_t n = 1; n <= 10; ++n) {
        s.source.values[n] = n;
        s.monitor(1, sub, n);
    }
    Subscription* st = s.mgr->find(sub);
    REQUIRE(st);
    CHECK(st->publishListCapacity() >= 10);
    CHECK(st->retainedCapacity() >= 1);
    size_t publishCapacity = st->publishListCapacity(), retained = st->retainedCapacity();
    s.publish(1);
    s.tickTo(101);  // the first message: the 10 initial values, retained
    REQUIRE(s.sink.done.size() == 1);
    CHECK(st->publishListCapacity() == publishCapacity);
    CHECK(st->retainedCapacity() == retained);
}

TEST_CASE("retransmission: message pools count the heap bytes they delete, for the trim") {
    MessagePool pool(1);  // keeps one message, deletes the rest
    std::vector<RetainedMessage*> v;
    for (int i = 0; i < 3; ++i) {
        v.push_back(pool.acquire());
        REQUIRE(v.back()->arena.allocate(100, 8));
    }
    uint64_t before = MessagePool::freedBytes();
    for (auto* m : v) pool.release(m);
    // Two deleted, each its struct and its arena's 1 KiB block.
    uint64_t oneMessage = sizeof(RetainedMessage) + 1024;
    CHECK(MessagePool::freedBytes() - before == 2 * oneMessage);
    pool.trim();  // the kept one
    CHECK(MessagePool::freedBytes() - before == 3 * oneMessage);
}

TEST_CASE(
    "services: DeleteMonitoredItems with queued notifications; later Publishes carry "
    "only the live items") {
    Server s;
    uint32_t sub = s.subscribe(1);
    std::vector<uint32_t> ids;
    for (uint32_t node = 1; node <= 40; ++node) {
        s.source.values[node] = node;
        ids.push_back(s.monitor(1, sub, node));  // the initial values are queued
    }
    auto remove = [&](std::vector<uint32_t> del) {
        ua::DeleteMonitoredItemsRequest req{};
        req.subscriptionId = sub;
        req.monitoredItemIds = {int32_t(del.size()), del.data()};
        ua::DeleteMonitoredItemsResponse resp{};
        REQUIRE(s.mgr->deleteMonitoredItems(1, req, resp, s.arena) == UAPLEX_Good);
        for (auto st : resp.results) CHECK(st == UAPLEX_Good);
    };
    std::set<uint32_t> live;  // client handles (= node ids)
    std::vector<uint32_t> del;
    for (uint32_t node = 1; node <= 40; ++node)
        (node % 4 == 0 ? live.insert(node), (void)0 : del.push_back(ids[node - 1]));
    // Half of them while in the ready list, the others after the tick put them in the
    // publish list.
    remove({del.begin(), del.begin() + long(del.size() / 2)});
    s.tickTo(101);
    remove({del.begin() + long(del.size() / 2), del.end()});
    // Changes of deleted items' nodes reach nobody.
    for (uint32_t node = 1; node <= 40; ++node) s.mgr->valueChanged(node, Engine::value(1000));
    uint64_t r = s.publish(1);
    s.tickTo(201);
    const Completion* c = s.sink.find(r);
    REQUIRE(c);
    std::set<uint32_t> got;
    std::multiset<double> values;
    for (auto& n : notes(c->outcome.message.message())) {
        got.insert(n.clientHandle);
        values.insert(n.value);
    }
    CHECK(got == live);
    CHECK(values.count(1000) == live.size());  // size 1: the change replaced the initial value
    CHECK(s.mgr->monitoredItemCount() == live.size());
    CHECK(s.mgr->find(sub)->itemCount() == live.size());
}

TEST_CASE("services: a bulk deletion asks once for the heap to be trimmed") {
    Server s;
    uint32_t sub = s.subscribe(1);
    s.source.values[1] = 1;
    std::vector<uint32_t> ids;
    const size_t n = SubscriptionManager::kTrimAfterItems + 10;
    for (size_t i = 0; i < n; ++i) ids.push_back(s.monitor(1, sub, uint32_t(1 + i % 100)));
    CHECK_FALSE(s.mgr->takeTrimDue());
    ua::DeleteMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.monitoredItemIds = {int32_t(100), ids.data()};
    ua::DeleteMonitoredItemsResponse resp{};
    REQUIRE(s.mgr->deleteMonitoredItems(1, req, resp, s.arena) == UAPLEX_Good);
    CHECK_FALSE(s.mgr->takeTrimDue());  // a few items: no trim
    s.mgr->closeSession(1, true);       // the rest go with the subscription
    CHECK(s.mgr->takeTrimDue());
    CHECK_FALSE(s.mgr->takeTrimDue());  // once
    CHECK(s.mgr->context().itemSlab.liveBlocks() == 0);
}

TEST_CASE("services: TransferSubscriptions tells the old session's newest Publish") {
    Server s;
    uint32_t sub = s.subscribe(1);
    s.tickTo(101);
    s.publish(1);  // the first keep-alive
    uint64_t older = s.publish(1), newer = s.publish(1);
    ua::TransferSubscriptionsRequest req{};
    req.subscriptionIds = {1, &sub};
    ua::TransferSubscriptionsResponse resp{};
    REQUIRE(s.mgr->transferSubscriptions(2, nullptr, req, resp, s.arena) == UAPLEX_Good);
    CHECK(resp.results[0].statusCode == UAPLEX_Good);
    REQUIRE(s.sink.find(newer));
    auto& eo = s.sink.find(newer)->outcome.message.message().notificationData[0];
    CHECK(static_cast<ua::StatusChangeNotification*>(eo.object)->status ==
          UAPLEX_GoodSubscriptionTransferred);
    CHECK_FALSE(s.sink.find(older));
    CHECK(s.mgr->find(sub)->sessionId() == 2);
    // The new session publishes it; the old one has none left.
    uint64_t r = s.publish(2);
    for (int64_t t = 201; t <= 501; t += 100) s.tickTo(t);  // K=3: the next keep-alive
    REQUIRE(s.sink.find(r));
    CHECK(s.sink.find(r)->outcome.subscriptionId == sub);
}

TEST_CASE("services: TransferSubscriptions only to a session of the same user identity") {
    Server s;
    s.mgr->setIdentity(1, "username:alice");
    uint32_t sub = s.subscribe(1);
    s.mgr->setIdentity(2, "anonymous");
    s.mgr->setIdentity(3, "username:alice");
    ua::TransferSubscriptionsRequest req{};
    uint32_t ids[] = {sub, sub ^ 0x40000000u};
    req.subscriptionIds = {2, ids};
    ua::TransferSubscriptionsResponse resp{};
    REQUIRE(s.mgr->transferSubscriptions(2, nullptr, req, resp, s.arena) == UAPLEX_Good);
    CHECK(resp.results[0].statusCode == UAPLEX_BadUserAccessDenied);
    CHECK(resp.results[1].statusCode == UAPLEX_BadSubscriptionIdInvalid);
    CHECK(s.mgr->find(sub)->sessionId() == 1);
    // The session closed without deleting them: the subscription waits, abandoned.
    s.mgr->closeSession(1, false);
    REQUIRE(s.mgr->find(sub));
    CHECK(s.mgr->find(sub)->sessionId() == 0);
    req.subscriptionIds = {1, ids};
    REQUIRE(s.mgr->transferSubscriptions(3, nullptr, req, resp, s.arena) == UAPLEX_Good);
    CHECK(resp.results[0].statusCode == UAPLEX_Good);
    CHECK(s.mgr->find(sub)->sessionId() == 3);
}

TEST_CASE("services: TransferSubscriptions to a session at MaxSubscriptionsPerSession") {
    SubscriptionLimits l;
    l.maxSubscriptionsPerSession = 1;
    Server s(l);
    uint32_t sub = s.subscribe(1);
    uint32_t full = s.subscribe(2);
    ua::TransferSubscriptionsRequest req{};
    req.subscriptionIds = {1, &sub};
    ua::TransferSubscriptionsResponse resp{};
    REQUIRE(s.mgr->transferSubscriptions(2, nullptr, req, resp, s.arena) == UAPLEX_Good);
    CHECK(resp.results[0].statusCode == UAPLEX_BadTooManySubscriptions);
    CHECK(s.mgr->find(sub)->sessionId() == 1);
    ua::DeleteSubscriptionsRequest del{};
    del.subscriptionIds = {1, &full};
    ua::DeleteSubscriptionsResponse delResp{};
    REQUIRE(s.mgr->deleteSubscriptions(2, del, delResp, s.arena) == UAPLEX_Good);
    REQUIRE(s.mgr->transferSubscriptions(2, nullptr, req, resp, s.arena) == UAPLEX_Good);
    CHECK(resp.results[0].statusCode == UAPLEX_Good);
    CHECK(s.mgr->find(sub)->sessionId() == 2);
}

TEST_CASE("services: an abandoned subscription expires on its own lifetime") {
    SubscriptionLimits l;
    l.minSubscriptionLifetime = 0;
    Server s(l);
    uint32_t sub = s.subscribe(1, 0, 100, 3, 9);
    s.mgr->closeSession(1, false);
    s.tickTo(101);
    CHECK(s.mgr->find(sub));
    for (int64_t t = 201; t <= 1101; t += 100) s.tickTo(t);
    CHECK_FALSE(s.mgr->find(sub));
}

TEST_CASE("services: limits per session, per subscription and per call") {
    SubscriptionLimits l;
    l.maxSubscriptionsPerSession = 2;
    l.maxMonitoredItemsPerSubscription = 2;
    l.maxMonitoredItemsPerCall = 3;
    Server s(l);
    uint32_t a = s.subscribe(1);
    s.subscribe(1);
    ua::CreateSubscriptionRequest cs{};
    ua::CreateSubscriptionResponse csr{};
    CHECK(s.mgr->createSubscription(1, nullptr, cs, csr) == UAPLEX_BadTooManySubscriptions);
    CHECK(s.mgr->createSubscription(2, nullptr, cs, csr) == UAPLEX_Good);  // another session's own
    std::vector<ua::MonitoredItemCreateRequest> items(4);
    for (size_t i = 0; i < items.size(); ++i) {
        items[i].itemToMonitor.nodeId = ua::numericNodeId(1, uint32_t(10 + i));
        items[i].itemToMonitor.attributeId = 13;
        items[i].monitoringMode = ua::MonitoringMode::Reporting;
    }
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = a;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToCreate = {4, items.data()};
    ua::CreateMonitoredItemsResponse resp{};
    CHECK(s.mgr->createMonitoredItems(1, req, resp, s.arena) == UAPLEX_BadTooManyOperations);
    req.itemsToCreate = {3, items.data()};
    REQUIRE(s.mgr->createMonitoredItems(1, req, resp, s.arena) == UAPLEX_Good);
    CHECK(resp.results[0].statusCode == UAPLEX_Good);
    CHECK(resp.results[1].statusCode == UAPLEX_Good);
    CHECK(resp.results[2].statusCode == UAPLEX_BadTooManyMonitoredItems);
    std::vector<uint32_t> ids(4, resp.results[0].monitoredItemId);
    ua::DeleteMonitoredItemsRequest del{};
    del.subscriptionId = a;
    del.monitoredItemIds = {4, ids.data()};
    ua::DeleteMonitoredItemsResponse dr{};
    CHECK(s.mgr->deleteMonitoredItems(1, del, dr, s.arena) == UAPLEX_BadTooManyOperations);
    ua::SetMonitoringModeRequest sm{};
    sm.subscriptionId = a;
    sm.monitoredItemIds = {4, ids.data()};
    ua::SetMonitoringModeResponse smr{};
    CHECK(s.mgr->setMonitoringMode(1, sm, smr, s.arena) == UAPLEX_BadTooManyOperations);
}

// The (limit+1)th item is refused with BadTooManyMonitoredItems, whichever limit it hits:
// per subscription, per session over its subscriptions, server-wide over every session.
TEST_CASE("services: monitored items are limited per subscription, per session and server-wide") {
    SubscriptionLimits l;
    l.maxMonitoredItemsPerSubscription = 3;
    l.maxMonitoredItemsPerSession = 5;
    l.maxMonitoredItemCount = 8;
    Server s(l);
    auto create = [&](uint64_t session, uint32_t sub, uint32_t n) {
        std::vector<ua::MonitoredItemCreateRequest> items(n);
        for (uint32_t i = 0; i < n; ++i) {
            items[i].itemToMonitor.nodeId = ua::numericNodeId(1, 10 + i);
            items[i].itemToMonitor.attributeId = 13;
            items[i].monitoringMode = ua::MonitoringMode::Reporting;
        }
        ua::CreateMonitoredItemsRequest req{};
        req.subscriptionId = sub;
        req.timestampsToReturn = ua::TimestampsToReturn::Both;
        req.itemsToCreate = {int32_t(n), items.data()};
        ua::CreateMonitoredItemsResponse resp{};
        REQUIRE(s.mgr->createMonitoredItems(session, req, resp, s.arena) == UAPLEX_Good);
        std::vector<uaplex_status> out;
        for (uint32_t i = 0; i < n; ++i) out.push_back(resp.results[i].statusCode);
        return out;
    };
    const uaplex_status G = UAPLEX_Good, T = UAPLEX_BadTooManyMonitoredItems;
    uint32_t a1 = s.subscribe(1), a2 = s.subscribe(1), a3 = s.subscribe(1);
    CHECK(create(1, a1, 4) == std::vector<uaplex_status>{G, G, G, T});  // per subscription
    CHECK(create(1, a2, 3) == std::vector<uaplex_status>{G, G, T});     // per session: 5
    CHECK(create(1, a3, 1) == std::vector<uaplex_status>{T});
    uint32_t b1 = s.subscribe(2), b2 = s.subscribe(2);
    CHECK(create(2, b1, 3) == std::vector<uaplex_status>{G, G, G});
    CHECK(create(2, b2, 2) == std::vector<uaplex_status>{T, T});  // server-wide: 8
    CHECK(s.mgr->monitoredItemCount() == 8);
    // Deleting frees the session's and the server's share.
    ua::DeleteSubscriptionsRequest del{};
    del.subscriptionIds = {1, &a1};
    ua::DeleteSubscriptionsResponse dr{};
    REQUIRE(s.mgr->deleteSubscriptions(1, del, dr, s.arena) == UAPLEX_Good);
    CHECK(create(2, b2, 3) == std::vector<uaplex_status>{G, G, T});  // session 2 at 5
    CHECK(create(1, a3, 3) == std::vector<uaplex_status>{G, T, T});  // server-wide: 8 again
}

TEST_CASE("services: GetMonitoredItems gives the calling session's handles") {
    Server s;
    uint32_t sub = s.subscribe(1);
    uint32_t i1 = s.monitor(1, sub, 21), i2 = s.monitor(1, sub, 22);
    ua::Array<ua::UInt32> server{}, client{};
    REQUIRE(s.mgr->getMonitoredItems(1, sub, s.arena, server, client) == UAPLEX_Good);
    REQUIRE(server.size() == 2);
    REQUIRE(client.size() == 2);
    std::map<uint32_t, uint32_t> got{{server[0], client[0]}, {server[1], client[1]}};
    CHECK(got == std::map<uint32_t, uint32_t>{{i1, 21}, {i2, 22}});
    CHECK(s.mgr->getMonitoredItems(2, sub, s.arena, server, client) == UAPLEX_BadUserAccessDenied);
    CHECK(s.mgr->getMonitoredItems(1, sub ^ 0x40000000u, s.arena, server, client) ==
          UAPLEX_BadSubscriptionIdInvalid);
}

TEST_CASE("services: TransferSubscriptions with sendInitialValues resends a queued item's value") {
    Server s;
    s.source.values[8] = 8;
    uint32_t sub = s.subscribe(1);
    s.monitor(1, sub, 8, 5);  // a queue from the factory, not the single last value
    s.publish(1);
    s.tickTo(101);
    REQUIRE(s.sink.done.size() == 1);
    REQUIRE(valuesOf(notes(s.sink.done[0].outcome.message.message())).size() == 1);
    ua::TransferSubscriptionsRequest req{};
    req.subscriptionIds = {1, &sub};
    req.sendInitialValues = true;
    ua::TransferSubscriptionsResponse resp{};
    REQUIRE(s.mgr->transferSubscriptions(2, nullptr, req, resp, s.arena) == UAPLEX_Good);
    REQUIRE(resp.results[0].statusCode == UAPLEX_Good);
    uint64_t r = s.publish(2);
    s.tickTo(201);
    REQUIRE(s.sink.find(r));
    auto v = valuesOf(notes(s.sink.find(r)->outcome.message.message()));
    REQUIRE(v.size() == 1);
    CHECK(v[0] == 8);
}

TEST_CASE("publish queue 11: acknowledgements allocate nothing") {
    Server s;
    constexpr int kSubs = 4;
    std::vector<uint32_t> subs;
    for (int i = 0; i < kSubs; ++i) {
        subs.push_back(s.subscribe(1));
        s.monitor(1, subs.back(), uint32_t(100 + i));
    }
    s.sink.done.reserve(1000);
    int64_t t = 1;
    std::vector<ua::SubscriptionAcknowledgement> acks;
    // One round: every value changes, a tick, then Publish requests until each subscription
    // has answered once; returns the allocations of the Publish calls.
    auto round = [&](bool acknowledge) {
        for (int i = 0; i < kSubs; ++i)
            s.mgr->valueChanged(uint32_t(100 + i), Engine::value(double(t)));
        s.tickTo(t += 100);
        size_t before = s.sink.done.size();
        size_t allocations = 0;
        for (int i = 0; i < kSubs; ++i) {
            ua::PublishRequest req{};
            if (acknowledge) req.subscriptionAcknowledgements = {int32_t(acks.size()), acks.data()};
            uint64_t id = s.nextRequest++;
            uaplex::test::HeapScope heap;
            s.mgr->publish(1, {id, 1, 0}, req);
            allocations += heap.allocations();
            acks.clear();  // acknowledged once
        }
        for (size_t i = before; i < s.sink.done.size(); ++i) {
            const auto& c = s.sink.done[i];
            if (c.status == UAPLEX_Good && c.outcome.message)
                acks.push_back({c.outcome.subscriptionId, c.outcome.message.sequenceNumber()});
        }
        return allocations;
    };
    for (int i = 0; i < 3; ++i) round(true);  // warm the pools and the retransmission queues
    size_t without = round(false);
    REQUIRE(acks.size() == kSubs);
    size_t with = round(true);
    // The round's first Publish carried the acknowledgements of the previous one.
    CHECK(s.sink.done[s.sink.done.size() - kSubs].acks ==
          std::vector<uaplex_status>(kSubs, UAPLEX_Good));
    CHECK(with == without);
}

// --- Report on change: items sampling at least as slowly as they publish take their node's
// latest value at their subscription's publishing tick -----------------------------------

namespace {

uint32_t monitorWith(Server& s, uint32_t sub, uint32_t node, uint32_t handle, uint32_t queueSize,
                     double si, const ua::DataChangeFilter* filter = nullptr,
                     ua::TimestampsToReturn ts = ua::TimestampsToReturn::Both) {
    return s.monitor(1, sub, node, queueSize, si, handle, filter, ts);
}

// The notifications of the last completed Publish (empty when it was a keep-alive).
std::vector<Note> lastNotes(const Server& s) {
    REQUIRE_FALSE(s.sink.done.empty());
    const auto& c = s.sink.done.back();
    REQUIRE(c.status == UAPLEX_Good);
    return notes(c.outcome.message.message());
}

std::vector<double> valuesFor(const std::vector<Note>& n, uint32_t handle) {
    std::vector<double> v;
    for (auto& x : n)
        if (x.clientHandle == handle) v.push_back(x.value);
    return v;
}

// Ticks to `at`, which must complete the `nth` Publish; its notifications.
std::vector<Note> tickToMessage(Server& s, int64_t at, size_t nth) {
    s.tickTo(at);
    REQUIRE(s.sink.done.size() == nth);
    return lastNotes(s);
}

}  // namespace

TEST_CASE("report on change: several writes in one sampling interval give one sample") {
    Server s;
    uint32_t sub = s.subscribe(1);
    s.source.values[7] = 1;
    monitorWith(s, sub, 7, 70, 5, 100);  // a queue would keep every pushed value
    s.publish(1);
    s.tickTo(101);
    REQUIRE(valuesFor(lastNotes(s), 70) == std::vector<double>{1});
    for (double v : {2.0, 3.0, 4.0}) s.mgr->valueChanged(7, Engine::value(v));
    CHECK(s.mgr->find(sub)->readyListSize() == 0);  // the Writes touched no item
    s.publish(1);
    s.tickTo(151);  // not the subscription's tick: nothing sampled, nothing sent
    CHECK(s.sink.done.size() == 1);
    CHECK(valuesFor(tickToMessage(s, 201, 2), 70) == std::vector<double>{4});
}

namespace {
// A subscription ticking at 100, 200, ... with item 70 on node 7 whose initial value went out
// at 101, a Publish queued, and node 7 written 5 at 150; returns the subscription.
uint32_t writtenBetweenTicks(Server& s) {
    uint32_t sub = s.subscribe(1);
    monitorWith(s, sub, 7, 70, 1, 100);
    s.publish(1);
    s.tickTo(101);
    REQUIRE(valuesFor(lastNotes(s), 70).size() == 1);
    s.publish(1);
    s.clock.mono = 150;
    s.mgr->valueChanged(7, Engine::value(5));
    return sub;
}
}  // namespace

TEST_CASE("report on change: a tick that outlasts a millisecond samples what it publishes") {
    Server s;
    writtenBetweenTicks(s);
    // The tick starts at 200 (the timer has not expired) and its clock passes 200 meanwhile:
    // the subscription must not fire on a later reading than its items were sampled at.
    s.clock.stepPerRead = 1;
    s.tickTo(200);
    s.clock.stepPerRead = 0;
    CHECK(valuesFor(tickToMessage(s, 201, 2), 70) == std::vector<double>{5});
    s.publish(1);
    s.clock.mono = 250;
    s.mgr->valueChanged(7, Engine::value(6));
    CHECK(valuesFor(tickToMessage(s, 301, 3), 70) == std::vector<double>{6});
}

TEST_CASE("report on change: a write after a due tick that has not run leaves it the older value") {
    Server s;
    const uint32_t sub = writtenBetweenTicks(s);
    // The loop is late: at 205 the tick for 200 has not run when the next Write comes. The
    // sample for 200 is the value of 200, and the newer one is the next interval's.
    s.clock.mono = 205;
    s.mgr->valueChanged(7, Engine::value(6));
    // Sampled for a tick that fires: straight to the publish list, not examined again.
    CHECK(s.mgr->find(sub)->readyListSize() == 0);
    CHECK(valuesFor(tickToMessage(s, 205, 2), 70) == std::vector<double>{5});
    s.publish(1);
    CHECK(valuesFor(tickToMessage(s, 301, 3), 70) == std::vector<double>{6});
}

TEST_CASE("monitored items: a request's items of one node take neighbouring blocks") {
    Server s;
    uint32_t sub = s.subscribe(1);
    // 40 items over 4 nodes round-robin, as a client subscribing tag lists does, and one
    // refused item (an invalid monitoring mode) in between.
    std::vector<ua::MonitoredItemCreateRequest> items(41);
    for (size_t i = 0; i < items.size(); ++i) {
        items[i].itemToMonitor.nodeId = ua::numericNodeId(1, uint32_t(20 + i % 4));
        items[i].itemToMonitor.attributeId = 13;
        items[i].monitoringMode = i == 17 ? ua::MonitoringMode(7) : ua::MonitoringMode::Reporting;
        items[i].requestedParameters.clientHandle = uint32_t(i);
    }
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToCreate = {int32_t(items.size()), items.data()};
    ua::CreateMonitoredItemsResponse resp{};
    REQUIRE(s.mgr->createMonitoredItems(1, req, resp, s.arena) == UAPLEX_Good);
    const size_t block = s.mgr->context().itemSlab.blockSize();
    std::map<uint32_t, std::vector<uintptr_t>> byNode;
    for (size_t i = 0; i < items.size(); ++i) {
        if (i == 17) {
            CHECK(resp.results[i].statusCode == UAPLEX_BadMonitoringModeInvalid);
            continue;
        }
        REQUIRE(resp.results[i].statusCode == UAPLEX_Good);
        const MonitoredItem* it = s.mgr->find(sub)->item(resp.results[i].monitoredItemId);
        REQUIRE(it);
        CHECK(it->clientHandle() == i);
        byNode[uint32_t(i % 4)].push_back(reinterpret_cast<uintptr_t>(it));
    }
    for (auto& [node, addrs] : byNode) {
        std::sort(addrs.begin(), addrs.end());
        // One run per node (the refused item's block went back): at most one gap of a block.
        CHECK(addrs.back() - addrs.front() <= addrs.size() * block);
    }
    CHECK(s.mgr->context().itemSlab.liveBlocks() == 40);  // the refused item's block is free
}

TEST_CASE("report on change: a write after the interval elapsed is published in that cycle") {
    Server s;
    uint32_t sub = s.subscribe(1);  // publishing ticks at 100, 200, ...
    s.clock.mono = 2;               // the item's own phase lags the subscription's by 2 ms
    monitorWith(s, sub, 7, 70, 1, 100);
    monitorWith(s, sub, 8, 80, 1, 200);  // samples every other cycle
    s.publish(1);
    s.tickTo(101);  // the initial values
    REQUIRE(lastNotes(s).size() == 2);
    s.clock.mono = 150;
    s.mgr->valueChanged(7, Engine::value(5));
    s.mgr->valueChanged(8, Engine::value(6));
    s.publish(1);
    // the grid point 200 samples both (their intervals have elapsed)
    auto n = tickToMessage(s, 201, 2);
    CHECK(valuesFor(n, 70) == std::vector<double>{5});
    CHECK(valuesFor(n, 80) == std::vector<double>{6});
    s.clock.mono = 250;
    s.mgr->valueChanged(7, Engine::value(7));
    s.mgr->valueChanged(8, Engine::value(8));
    s.publish(1);
    // 200 ms have not elapsed for the second item on the grid
    n = tickToMessage(s, 301, 3);
    CHECK(valuesFor(n, 70) == std::vector<double>{7});
    CHECK(valuesFor(n, 80).empty());
    s.publish(1);
    CHECK(valuesFor(tickToMessage(s, 401, 4), 80) == std::vector<double>{8});
}

TEST_CASE("report on change: idle nodes are not visited by the publishing tick") {
    Server s;
    uint32_t sub = s.subscribe(1, 0, 100, 1000, 3000);
    for (uint32_t node = 1; node <= 100; ++node)
        for (uint32_t i = 0; i < 10; ++i) monitorWith(s, sub, node, node * 100 + i, 1, 100);
    s.tickTo(101);
    CHECK(s.mgr->itemsVisitedLastTick() == 0);
    s.mgr->valueChanged(42, Engine::value(1));
    s.mgr->valueChanged(42, Engine::value(2));
    s.mgr->valueChanged(43, Engine::value(3));
    s.tickTo(151);  // not the subscription's tick: the two nodes wait, their items unvisited
    CHECK(s.mgr->itemsVisitedLastTick() == 0);
    s.tickTo(201);
    CHECK(s.mgr->itemsVisitedLastTick() == 20);
    s.tickTo(301);
    CHECK(s.mgr->itemsVisitedLastTick() == 0);
}

TEST_CASE("report on change: a tick visits only the items of subscriptions that fire") {
    Server s;
    uint32_t early = s.subscribe(1, 0, 100, 1000, 3000);  // fires at 100, 200, ...
    s.clock.mono = 50;
    uint32_t late = s.subscribe(1, 0, 100, 1000, 3000);  // fires at 150, 250, ...
    for (uint32_t i = 0; i < 30; ++i) monitorWith(s, early, 7, 100 + i, 1, 100);
    for (uint32_t i = 0; i < 10; ++i) monitorWith(s, late, 7, 200 + i, 1, 100);
    for (int i = 0; i < 4; ++i) s.publish(1);
    s.tickTo(101);
    s.tickTo(151);  // the initial values are out
    size_t before = s.sink.done.size();
    s.mgr->valueChanged(7, Engine::value(3));
    s.tickTo(161);  // nobody fires
    CHECK(s.mgr->itemsVisitedLastTick() == 0);
    s.tickTo(201);
    CHECK(s.mgr->itemsVisitedLastTick() == 30);
    s.tickTo(251);
    CHECK(s.mgr->itemsVisitedLastTick() == 10);
    s.tickTo(301);  // every item took the value: the node is no longer visited
    CHECK(s.mgr->itemsVisitedLastTick() == 0);
    size_t got = 0;
    for (size_t i = before; i < s.sink.done.size(); ++i)
        got += valuesFor(notes(s.sink.done[i].outcome.message.message()), 100).size() +
               valuesFor(notes(s.sink.done[i].outcome.message.message()), 200).size();
    CHECK(got == 2);
}

TEST_CASE("publishing timetable: the engine is due at each subscription's own expiry") {
    SubscriptionLimits l;
    l.publishingResolution = 10;  // polled groups sample at 20 ms below
    Server s(l);
    CHECK(s.mgr->nextTickAt() == std::numeric_limits<int64_t>::max());  // nothing to do
    uint32_t first = s.subscribe(1);  // expires at 100: fires at the first reading after it
    s.clock.mono = 30;
    s.subscribe(2);  // its own phase: 130, 230, ...
    CHECK(s.mgr->nextTickAt() == 101);
    s.tickTo(s.mgr->nextTickAt());
    CHECK(s.mgr->nextTickAt() == 131);  // the second subscription, not a loop tick later
    s.tickTo(s.mgr->nextTickAt());
    CHECK(s.mgr->nextTickAt() == 201);
    s.source.polled.insert(9);  // a polled item's group is due on its own interval
    s.monitor(1, first, 9, 1, 20);
    CHECK(s.mgr->nextTickAt() == 151);
}

TEST_CASE("publishing timetable: subscriptions created together spread over phases") {
    SubscriptionLimits l;
    l.phaseSlotMs = 10;
    Server s(l);
    std::vector<uint32_t> ids;
    for (int i = 0; i < 3; ++i) ids.push_back(s.subscribe(1));  // all at 0
    CHECK(s.mgr->find(ids[0])->timerExpiry() == 100);           // the first keeps its phase
    CHECK(s.mgr->find(ids[1])->timerExpiry() == 110);
    CHECK(s.mgr->find(ids[2])->timerExpiry() == 120);
    s.clock.mono = 5;
    uint32_t late = s.subscribe(1);  // created at 5: the next slot in turn, 30 past the first
    CHECK(s.mgr->find(late)->timerExpiry() == 130);
    uint32_t slow = s.subscribe(1, 0, 1000);  // another interval: its own phases
    CHECK(s.mgr->find(slow)->timerExpiry() == 1005);
    // Each fires at its own expiry, one tick each.
    std::vector<int64_t> ticks;
    while (s.clock.mono < 200) {
        ticks.push_back(s.mgr->nextTickAt());
        s.tickTo(ticks.back());
    }
    CHECK(ticks == std::vector<int64_t>{101, 111, 121, 131, 201});
    // Without spreading they share the creation phase.
    Server plain;
    uint32_t a = plain.subscribe(1), b = plain.subscribe(1);
    CHECK(plain.mgr->find(a)->timerExpiry() == plain.mgr->find(b)->timerExpiry());
}

TEST_CASE("publishing timetable: a wake at one subscription's expiry visits only the due ones") {
    SubscriptionLimits l;
    l.phaseSlotMs = 10;
    Server s(l);
    std::vector<uint32_t> ids;
    for (int i = 0; i < 100; ++i) ids.push_back(s.subscribe(1, 0, 100, 1000, 3000));
    for (int i = 0; i < 5; ++i) s.publish(1);
    s.clock.mono = 0;
    // Ten phases 10 ms apart, ten subscriptions each: a due wake ticks those ten only.
    for (int64_t t = 101; t < 200; t += 10) {
        CHECK(s.mgr->nextTickAt() == t);
        s.clock.mono = t;
        s.mgr->timerTick(false);
        CHECK(s.mgr->subscriptionsVisitedLastTick() == 10);
    }
    s.tickTo(200);  // the full pass still sees every one
    CHECK(s.mgr->subscriptionsVisitedLastTick() == 100);
    // Every subscription went through its first cycle once, on the due wakes alone.
    for (uint32_t id : ids) {
        CHECK(s.mgr->find(id)->timerExpiry() >= 200);
        CHECK(s.mgr->find(id)->timerExpiry() < 300);
    }
    CHECK(s.sink.done.size() == 5);  // the first keep-alives, one per queued Publish
}

TEST_CASE("publishing timetable: re-timing a subscription over and over grows no timer entries") {
    Server s;
    std::vector<uint32_t> ids;
    for (int i = 0; i < 10; ++i) ids.push_back(s.subscribe(1));
    ua::ModifySubscriptionRequest req{};
    ua::ModifySubscriptionResponse resp{};
    req.subscriptionId = ids[3];
    req.requestedLifetimeCount = 30;
    req.requestedMaxKeepAliveCount = 3;
    for (int i = 0; i < 10000; ++i) {
        req.requestedPublishingInterval = 100 + i % 500;  // a new timer each time
        REQUIRE(s.mgr->modifySubscription(1, req, resp) == UAPLEX_Good);
    }
    CHECK(s.mgr->dueEntries() <= 2 * ids.size() + 64 + 1);
    // Each one, the re-timed one included, still fires at its own expiry on the due ticks.
    std::map<uint32_t, int64_t> first;
    for (uint32_t id : ids) first[id] = s.mgr->find(id)->timerExpiry();
    while (s.clock.mono < 1000) {
        s.clock.mono = s.mgr->nextTickAt();
        s.mgr->timerTick(false);
    }
    for (uint32_t id : ids) CHECK(s.mgr->find(id)->timerExpiry() > first[id]);
}

TEST_CASE("publishing timetable: a change is published at its subscription's grid point") {
    Server s;
    s.clock.mono = 30;
    uint32_t sub = s.subscribe(1);  // grid points 130, 230, ...
    s.source.values[7] = 1;
    monitorWith(s, sub, 7, 70, 1, 100);
    s.publish(1);
    s.tickTo(s.mgr->nextTickAt());
    REQUIRE(s.sink.done.size() == 1);  // the initial value
    s.clock.mono = 220;
    s.mgr->valueChanged(7, Engine::value(5));
    s.publish(1);
    int64_t at = s.mgr->nextTickAt();
    CHECK(at == 231);  // the grid point, not the next multiple of a loop period (250)
    CHECK(valuesFor(tickToMessage(s, at, 2), 70) == std::vector<double>{5});
}

namespace {
// Subscription a ticking at 100, 200, ... with items 100..129 on node 7, and b at 140, 240,
// ... with items 200..209 on node 7; returns {a, b}.
std::pair<uint32_t, uint32_t> twoPhases(Server& s) {
    uint32_t a = s.subscribe(1, 0, 100, 1000, 3000);
    s.clock.mono = 40;
    uint32_t b = s.subscribe(1, 0, 100, 1000, 3000);
    for (uint32_t i = 0; i < 30; ++i) monitorWith(s, a, 7, 100 + i, 1, 100);
    for (uint32_t i = 0; i < 10; ++i) monitorWith(s, b, 7, 200 + i, 1, 100);
    return {a, b};
}
}  // namespace

TEST_CASE(
    "publishing timetable: subscriptions on other phases tick apart, a write between "
    "their ticks reaches both") {
    Server s;
    auto [a, b] = twoPhases(s);
    s.publish(1);
    s.tickTo(s.mgr->nextTickAt());  // 101: a's initial values only
    REQUIRE(s.sink.done.size() == 1);
    CHECK(s.sink.done.back().outcome.subscriptionId == a);
    s.publish(1);
    s.tickTo(s.mgr->nextTickAt());  // 141: b's
    REQUIRE(s.sink.done.size() == 2);
    CHECK(s.sink.done.back().outcome.subscriptionId == b);
    s.publish(1);
    s.clock.mono = 190;
    s.mgr->valueChanged(7, Engine::value(1));
    s.tickTo(s.mgr->nextTickAt());  // 201: a takes the value, b's items are not visited
    CHECK(s.clock.mono == 201);
    CHECK(s.mgr->itemsVisitedLastTick() == 30);
    REQUIRE(s.sink.done.size() == 3);
    CHECK(s.sink.done.back().outcome.subscriptionId == a);
    s.publish(1);
    s.mgr->valueChanged(7, Engine::value(2));  // after a's tick, before b's
    s.tickTo(s.mgr->nextTickAt());             // 241: b takes the newer value
    CHECK(s.clock.mono == 241);
    CHECK(s.mgr->itemsVisitedLastTick() == 10);
    REQUIRE(s.sink.done.size() == 4);
    CHECK(s.sink.done.back().outcome.subscriptionId == b);
    CHECK(valuesFor(lastNotes(s), 200) == std::vector<double>{2});
    s.publish(1);
    // 301: the write between the ticks is not lost for a
    CHECK(valuesFor(tickToMessage(s, s.mgr->nextTickAt(), 5), 100) == std::vector<double>{2});
}

TEST_CASE("report on change: subscriptions on other phases share one comparison per group") {
    Server s;
    twoPhases(s);
    for (int i = 0; i < 20; ++i) s.publish(1);
    s.tickTo(101);
    s.tickTo(141);
    // The node changes between every two ticks, so it is never taken by both groups at once.
    double v = 1;
    std::vector<uint64_t> compared;
    std::vector<size_t> delivered;
    for (int64_t t = 190; t < 700; t += 50) {
        s.clock.mono = t;
        s.mgr->valueChanged(7, Engine::value(v++));
        uint64_t before = s.mgr->context().itemComparisons;
        size_t done = s.sink.done.size();
        s.tickTo(s.mgr->nextTickAt());
        compared.push_back(s.mgr->context().itemComparisons - before);
        size_t n = 0;
        for (size_t i = done; i < s.sink.done.size(); ++i)
            n += notes(s.sink.done[i].outcome.message.message()).size();
        delivered.push_back(n);
    }
    // After each group's first full sample, its items use the group's one comparison.
    CHECK(compared == std::vector<uint64_t>{30, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    CHECK(delivered == std::vector<size_t>{30, 10, 30, 10, 30, 10, 30, 10, 30, 10, 30});
    s.tickTo(741);  // b takes the last value too
    // Writing the same value again: the group's comparison refuses it for all of a's items.
    s.clock.mono = 750;
    s.mgr->valueChanged(7, Engine::value(v - 1));
    size_t done = s.sink.done.size();
    uint64_t before = s.mgr->context().itemComparisons;
    s.tickTo(s.mgr->nextTickAt());
    CHECK(s.clock.mono == 801);
    CHECK(s.mgr->itemsVisitedLastTick() == 30);
    CHECK(s.mgr->context().itemComparisons == before);
    CHECK(s.sink.done.size() == done);  // nothing changed: no message
}

TEST_CASE("report on change: filters, queues and timestamps hold for a shared node sample") {
    Server s;
    uint32_t sub = s.subscribe(1, 0, 100, 1000, 3000);
    s.source.values[7] = 10;
    ua::DataChangeFilter deadband{};
    deadband.trigger = ua::DataChangeTrigger::StatusValue;
    deadband.deadbandType = uint32_t(ua::DeadbandType::Absolute);
    deadband.deadbandValue = 5;
    monitorWith(s, sub, 7, 1, 1, 100);             // default filter
    monitorWith(s, sub, 7, 2, 1, 100, &deadband);  // absolute deadband 5
    monitorWith(s, sub, 7, 3, 3, 100);             // a queue of 3, discardOldest
    monitorWith(s, sub, 7, 4, 1, 100, nullptr, ua::TimestampsToReturn::Source);
    s.publish(1);
    s.tickTo(101);  // the initial values
    REQUIRE(lastNotes(s).size() == 4);

    // 12: a change for all but the deadband item.
    s.mgr->valueChanged(7, Engine::value(12));
    s.publish(1);
    s.tickTo(201);
    auto n = lastNotes(s);
    CHECK(valuesFor(n, 1) == std::vector<double>{12});
    CHECK(valuesFor(n, 2).empty());
    CHECK(valuesFor(n, 3) == std::vector<double>{12});
    {
        const auto& m = s.sink.done.back().outcome.message.message();
        auto* d = static_cast<ua::DataChangeNotification*>(m.notificationData[0].object);
        for (auto& x : d->monitoredItems) {
            bool source = x.clientHandle == 4;
            CHECK(((x.value.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) != 0) == !source);
            CHECK((x.value.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) != 0);
        }
    }
    // The same value again: no item reports it (the node's one comparison).
    s.mgr->valueChanged(7, Engine::value(12, 5000));
    s.publish(1);
    s.tickTo(301);
    CHECK(s.sink.done.size() == 2);  // nothing to send yet: the request waits
    // 17: beyond the deadband from 10.
    s.mgr->valueChanged(7, Engine::value(17));
    n = tickToMessage(s, 401, 3);
    CHECK(valuesFor(n, 1) == std::vector<double>{17});
    CHECK(valuesFor(n, 2) == std::vector<double>{17});
    // Four samples without a Publish: the queue keeps the newest three, the oldest flagged.
    for (int i = 0; i < 4; ++i) {
        s.mgr->valueChanged(7, Engine::value(20 + i));
        s.tickTo(501 + 100 * i);
    }
    s.publish(1);
    n = lastNotes(s);
    CHECK(valuesFor(n, 3) == std::vector<double>{21, 22, 23});
    for (auto& x : n)
        if (x.clientHandle == 3) CHECK(x.overflow == (x.value == 21));
    CHECK(valuesFor(n, 1) == std::vector<double>{23});
}

TEST_CASE("report on change: an item deleted while a list still holds it takes no more samples") {
    Server s;
    uint32_t sub = s.subscribe(1);
    s.source.values[7] = 1;
    uint32_t gone = monitorWith(s, sub, 7, 70, 1, 100);
    for (uint32_t h = 71; h < 80; ++h) monitorWith(s, sub, 7, h, 1, 100);
    s.mgr->valueChanged(7, Engine::value(1));  // the node's state now knows its ten items
    s.tickTo(101);  // the initial values wait in the subscription's lists: no Publish queued
    // One of ten listed items deleted: it is parked until its lists are compacted.
    ua::DeleteMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.monitoredItemIds = {1, &gone};
    ua::DeleteMonitoredItemsResponse resp{};
    REQUIRE(s.mgr->deleteMonitoredItems(1, req, resp, s.arena) == UAPLEX_Good);
    REQUIRE(resp.results[0] == UAPLEX_Good);
    s.mgr->valueChanged(7, Engine::value(2));  // the node's sample must skip the deleted item
    s.tickTo(201);
    CHECK(s.mgr->itemsVisitedLastTick() == 9);  // the deleted item stays parked, not visited
    std::vector<double> live, deleted;
    for (int i = 0; i < 3; ++i) {
        size_t before = s.sink.done.size();
        s.publish(1);
        s.tickTo(301 + 100 * i);
        if (s.sink.done.size() == before || s.sink.done.back().status != UAPLEX_Good) continue;
        for (auto& x : notes(s.sink.done.back().outcome.message.message())) {
            if (x.clientHandle == 70) deleted.push_back(x.value);
            if (x.clientHandle == 71) live.push_back(x.value);
            CHECK(x.clientHandle != 70);
        }
    }
    CHECK(deleted.empty());
    CHECK(live == std::vector<double>{2});  // the initial value was superseded (queue size 1)
}

TEST_CASE("report on change: MaxNotificationsPerPublish caps a message, 0 takes the server's") {
    SubscriptionLimits l;
    l.maxNotificationsPerPublish = 1000;
    Server s(l);
    uint32_t sub = s.subscribe(1, 0, 100, 1000, 3000);
    for (uint32_t i = 0; i < 2500; ++i) monitorWith(s, sub, 1 + i % 5, i + 1, 1, 100);
    s.publish(1);
    s.publish(1);
    s.publish(1);
    s.tickTo(101);
    REQUIRE(s.sink.done.size() == 3);
    CHECK(lastNotes(s).size() == 500);
    CHECK(notes(s.sink.done[0].outcome.message.message()).size() == 1000);
    CHECK(s.sink.done[0].outcome.more);
    CHECK_FALSE(s.sink.done[2].outcome.more);
}

TEST_CASE("services: the diagnostics summary counts live and created subscriptions") {
    SubscriptionLimits l;
    l.minSubscriptionLifetime = 0;
    Server s(l);
    std::atomic<uint32_t> current{0}, cumulated{0};
    s.mgr->setSubscriptionCounters(&current, &cumulated);
    uint32_t a = s.subscribe(1);
    s.subscribe(1);
    s.subscribe(2, 0, 100, 3, 9);
    CHECK(current == 3);
    CHECK(cumulated == 3);
    ua::DeleteSubscriptionsRequest del{};
    del.subscriptionIds = {1, &a};
    ua::DeleteSubscriptionsResponse dr{};
    REQUIRE(s.mgr->deleteSubscriptions(1, del, dr, s.arena) == UAPLEX_Good);
    CHECK(current == 2);
    s.mgr->closeSession(1, true);  // its other subscription goes with it
    CHECK(current == 1);
    s.mgr->closeSession(2, false);  // abandoned: counted until its lifetime ends
    CHECK(current == 1);
    for (int64_t t = 101; t <= 1101; t += 100) s.tickTo(t);
    CHECK(current == 0);
    CHECK(cumulated == 3);
    s.subscribe(3);
    CHECK(current == 1);
    CHECK(cumulated == 4);
    s.sink.done.clear();
    s.mgr.reset();  // live subscriptions stop counting with the engine
    CHECK(current == 0);
}

namespace {
// CreateMonitoredItems of one Value item on node 7 with an AggregateFilter.
ua::MonitoredItemCreateResult createAggregateItem(Server& s, uint32_t sub, ua::AggregateFilter& f,
                                                  double si = 100, uint32_t attribute = 13) {
    ua::MonitoredItemCreateRequest item{};
    item.itemToMonitor.nodeId = ua::numericNodeId(1, 7);
    item.itemToMonitor.attributeId = attribute;
    item.monitoringMode = ua::MonitoringMode::Reporting;
    item.requestedParameters.clientHandle = 7;
    item.requestedParameters.samplingInterval = si;
    item.requestedParameters.queueSize = 4;
    item.requestedParameters.discardOldest = true;
    auto& eo = item.requestedParameters.filter;
    eo.type_id = ua::numericNodeId(0, enc::dataTypeOf<ua::AggregateFilter>()->binaryEncodingId);
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.data_type = enc::dataTypeOf<ua::AggregateFilter>();
    eo.object = &f;
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToCreate = {1, &item};
    ua::CreateMonitoredItemsResponse resp{};
    REQUIRE(s.mgr->createMonitoredItems(1, req, resp, s.arena) == UAPLEX_Good);
    return resp.results[0];
}
ua::AggregateFilter averageFilter(double pi) {
    ua::AggregateFilter f{};
    f.aggregateType = ua::numericNodeId(0, 2342);  // AggregateFunction_Average
    f.processingInterval = pi;
    f.aggregateConfiguration.useServerCapabilitiesDefaults = true;
    return f;
}
}  // namespace

TEST_CASE("services: AggregateFilter refusals (Part 4 7.22.4)") {
    Server s;
    uint32_t sub = s.subscribe(1);
    auto f = averageFilter(200);
    f.aggregateType = ua::numericNodeId(0, 2351);  // AnnotationCount: not computed
    CHECK(createAggregateItem(s, sub, f).statusCode == UAPLEX_BadAggregateNotSupported);
    f.aggregateType = ua::numericNodeId(2, 2342);  // another namespace
    CHECK(createAggregateItem(s, sub, f).statusCode == UAPLEX_BadAggregateNotSupported);
    f = averageFilter(200);
    f.aggregateConfiguration.useServerCapabilitiesDefaults = false;
    f.aggregateConfiguration.percentDataBad = 50;
    f.aggregateConfiguration.percentDataGood = 20;  // below 100 - 50: a gap
    CHECK(createAggregateItem(s, sub, f).statusCode == UAPLEX_BadAggregateConfigurationRejected);
    f.aggregateConfiguration.percentDataGood = 101;
    CHECK(createAggregateItem(s, sub, f).statusCode == UAPLEX_BadAggregateConfigurationRejected);
    f = averageFilter(200);
    CHECK(createAggregateItem(s, sub, f, 100, 4).statusCode == UAPLEX_BadFilterNotAllowed);
    for (double pi : {-1.0, std::numeric_limits<double>::quiet_NaN(),
                      std::numeric_limits<double>::infinity()}) {
        f = averageFilter(pi);
        CHECK(createAggregateItem(s, sub, f).statusCode == UAPLEX_BadMonitoredItemFilterInvalid);
    }
}

TEST_CASE("services: AggregateFilter is accepted with its AggregateFilterResult") {
    Server s;
    s.clock.mono = 12345;
    uint32_t sub = s.subscribe(1);
    auto f = averageFilter(150);  // below the sampling interval: revised to 200
    auto r = createAggregateItem(s, sub, f, 200);
    REQUIRE(r.statusCode == UAPLEX_Good);
    REQUIRE(r.filterResult.data_type == enc::dataTypeOf<ua::AggregateFilterResult>());
    auto* res = static_cast<const ua::AggregateFilterResult*>(r.filterResult.object);
    CHECK(res->revisedProcessingInterval == 200);
    // No start time: the interval boundary at or before now, on the 200 ms grid from 1601.
    ua::DateTime now = s.clock.utcNow();
    CHECK(res->revisedStartTime <= now);
    CHECK(now - res->revisedStartTime < 200 * 10000);
    CHECK(res->revisedStartTime % (200 * 10000) == 0);
    // The server's defaults (Part 13 4.2.1.2).
    CHECK(res->revisedAggregateConfiguration.useServerCapabilitiesDefaults);
    CHECK(res->revisedAggregateConfiguration.treatUncertainAsBad);
    CHECK(res->revisedAggregateConfiguration.percentDataBad == 100);
    CHECK(res->revisedAggregateConfiguration.percentDataGood == 100);
    CHECK_FALSE(res->revisedAggregateConfiguration.useSlopedExtrapolation);
    // A future start time stays.
    f = averageFilter(500);
    f.startTime = now + 10000000;
    r = createAggregateItem(s, sub, f, 200);
    REQUIRE(r.statusCode == UAPLEX_Good);
    res = static_cast<const ua::AggregateFilterResult*>(r.filterResult.object);
    CHECK(res->revisedStartTime == now + 10000000);
    CHECK(res->revisedProcessingInterval == 500);
}

TEST_CASE("services: an AggregateFilter item publishes one Average per interval") {
    Server s;
    uint32_t sub = s.subscribe(1, 0, 100);
    s.source.polled.insert(7);
    auto f = averageFilter(200);
    f.startTime = s.clock.utcNow();  // mono 0 is an interval boundary
    s.source.values[7] = 2;
    auto r = createAggregateItem(s, sub, f, 100);
    REQUIRE(r.statusCode == UAPLEX_Good);
    // Samples every 100 ms: 2 (at creation, 0), 4 (100), then 9 at 200 ends [0, 200).
    s.source.values[7] = 4;
    s.tickTo(100);
    s.source.values[7] = 9;
    s.tickTo(200);
    s.tickTo(301);
    uint64_t id = s.publish(1);
    REQUIRE(s.sink.find(id));
    const auto& m = s.sink.find(id)->outcome.message.message();
    REQUIRE(m.notificationData.size() == 1);
    auto* d = static_cast<ua::DataChangeNotification*>(m.notificationData[0].object);
    REQUIRE(d->monitoredItems.size() >= 1);
    CHECK(d->monitoredItems[0].value.value.value.double_ == 3);  // (2 + 4) / 2
    CHECK(d->monitoredItems[0].value.status ==
          (aggregates::kInfoTypeDataValue | aggregates::kHistorianCalculated));
    CHECK(d->monitoredItems[0].value.source_timestamp == f.startTime);
}
