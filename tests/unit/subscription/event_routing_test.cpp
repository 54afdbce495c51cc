// SPDX-License-Identifier: Apache-2.0
// Event items through SubscriptionManager: the EventFilter on create and modify (with its
// EventFilterResult), routing by notifier, the where clause per item, the queue-overflow
// event's fields, and ConditionRefresh with retained conditions.
#include <catch2/catch.hpp>

#include <atomic>
#include <map>
#include <set>

#include <uaplex/session/access_control.hpp>
#include <uaplex/subscription/subscription_manager.hpp>
#include "engine_support.hpp"
#include "fake_model.hpp"
#include "filter_builder.hpp"

using namespace uaplex;
using namespace uaplex::subscription;
using namespace uaplex::subscription::test;

namespace {

constexpr uint32_t kNotifier = 500, kOtherNotifier = 501;

// Every node is a notifier; its handle is its numeric id.
struct Source : NodeValueSource {
    FakeModel model;
    uaplex_status resolve(const ua::ReadValueId& id, uint64_t* h) override {
        *h = id.nodeId.identifier.numeric;
        return UAPLEX_Good;
    }
    uaplex_status read(uint64_t, enc::Arena&, ua::DataValue& out) override {
        out = Engine::value(0);
        return UAPLEX_Good;
    }
    const EventTypeModel* eventTypes() override { return &model; }
};

struct Sink : PublishSink {
    std::vector<PublishOutcome> done;
    void parked(uint64_t) override {}
    void complete(uint64_t, uaplex_status, PublishOutcome&& o, AckResults&&) override {
        done.push_back(std::move(o));
    }
};

// EventFifo, except that a queue sized kFaultySize dequeues Good without an event.
constexpr uint32_t kFaultySize = 13;
const uaplex_event_queue_ops kFaultyFifoOps = [] {
    uaplex_event_queue_ops o = EventFifo::ops;
    o.dequeue = [](void* s, uaplex_event_entry** e) noexcept -> uaplex_status {
        if (static_cast<EventFifo*>(s)->size != kFaultySize) return EventFifo::ops.dequeue(s, e);
        *e = nullptr;
        return UAPLEX_Good;
    };
    return o;
}();

struct Factory {
    static inline EngineContext* ctx = nullptr;
    static inline bool faulty = false;  // queues from kFaultyFifoOps
    static const uaplex_mi_queue_factory_ops ops;
};
const uaplex_mi_queue_factory_ops Factory::ops{
    .hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_factory_ops, UAPLEX_STYPE_MI_QUEUE_FACTORY_OPS),
    .start = nullptr,
    .stop = nullptr,
    .destroy = nullptr,
    .supports_durable = nullptr,
    .create_data_change_queue = nullptr,
    .create_event_queue = [](void*, int32_t, uint32_t, void** q,
                             const uaplex_event_queue_ops** o) noexcept -> uaplex_status {
        auto* f = new EventFifo;
        f->ctx = ctx;
        *q = f;
        *o = Factory::faulty ? &kFaultyFifoOps : &EventFifo::ops;
        return UAPLEX_Good;
    },
};

// One event notification: its fields as variants.
using Fields = std::vector<ua::Variant>;

struct Harness {
    FakeClock clock;
    Source source;
    Sink sink;
    std::unique_ptr<SubscriptionManager> mgr;
    enc::Arena arena;
    Builder b;
    uint64_t nextRequest = 1;
    std::vector<ua::SimpleAttributeOperand> select;

    Harness() {
        mgr = std::make_unique<SubscriptionManager>(clock, SubscriptionLimits{}, source, sink);
        Factory::ctx = &mgr->context();
        mgr->setQueueFactory(&Factory::ops, nullptr);
        select = {b.operand("EventType"), b.operand("Severity"), b.operand("SourceName"),
                  b.operand("", 2782, 1)};
    }
    ~Harness() { sink.done.clear(); }       // the leases go back to the manager's pool
    std::map<uint64_t, const void*> views;  // the sessions' access views (none: null)
    uint32_t subscribe(uint64_t session = 1) {
        ua::CreateSubscriptionRequest req{};
        req.requestedPublishingInterval = 100;
        req.requestedMaxKeepAliveCount = 10;
        req.requestedLifetimeCount = 100;
        req.publishingEnabled = true;
        ua::CreateSubscriptionResponse resp{};
        auto view = views.find(session);
        REQUIRE(mgr->createSubscription(session, view == views.end() ? nullptr : view->second, req,
                                        resp) == UAPLEX_Good);
        return resp.subscriptionId;
    }
    ua::ExtensionObject eventFilter(const ua::ContentFilter& where = {}) {
        ua::EventFilter f{};
        f.selectClauses = {int32_t(select.size()), select.data()};
        f.whereClause = where;
        return b.wrap(f);
    }
    ua::MonitoredItemCreateResult create(uint32_t sub, uint32_t node, ua::ExtensionObject filter,
                                         uint32_t queueSize = 10, uint32_t attributeId = 12,
                                         bool discardOldest = true, uint64_t session = 1) {
        ua::MonitoredItemCreateRequest item{};
        item.itemToMonitor.nodeId = ua::numericNodeId(0, node);
        item.itemToMonitor.attributeId = attributeId;
        item.monitoringMode = ua::MonitoringMode::Reporting;
        item.requestedParameters.clientHandle = node;
        item.requestedParameters.queueSize = queueSize;
        item.requestedParameters.discardOldest = discardOldest;
        item.requestedParameters.filter = filter;
        ua::CreateMonitoredItemsRequest req{};
        req.subscriptionId = sub;
        req.timestampsToReturn = ua::TimestampsToReturn::Both;
        req.itemsToCreate = {1, &item};
        ua::CreateMonitoredItemsResponse resp{};
        REQUIRE(mgr->createMonitoredItems(session, req, resp, arena) == UAPLEX_Good);
        return resp.results[0];
    }
    void raise(std::vector<uint64_t> notifiers, uint16_t severity, uint32_t type = 2041,
               const ua::NodeId* condition = nullptr, bool retain = true,
               const ua::NodeId* source = nullptr) {
        TestEvent e(type);
        e.set("EventType", b.nodeId(type))
            .set("Severity", Builder::scalar(ua::BuiltinType::UInt16, severity))
            .set("SourceName", b.text("src"))
            .set("Retain", ua::variantBoolean(retain));
        if (condition) {
            e.condition = *condition;
            e.isCondition = true;
        }
        if (source) {
            e.source = *source;
            e.hasSource = true;
        }
        mgr->raiseEvent(notifiers, e.view());
    }
    // Publishes once after a tick; the events by client handle, in order.
    std::vector<std::pair<uint32_t, Fields>> publish(uint64_t session = 1) {
        clock.mono += 1000;
        mgr->timerTick();
        ua::PublishRequest req{};
        size_t before = sink.done.size();
        mgr->publish(session, {nextRequest++, 1, 0}, req);
        std::vector<std::pair<uint32_t, Fields>> out;
        if (sink.done.size() == before || !sink.done.back().message) return out;
        for (auto& eo : sink.done.back().message.message().notificationData) {
            if (eo.data_type != enc::dataTypeOf<ua::EventNotificationList>()) continue;
            for (auto& f : static_cast<ua::EventNotificationList*>(eo.object)->events)
                out.push_back({f.clientHandle, Fields(f.eventFields.begin(), f.eventFields.end())});
        }
        return out;
    }
    static uint32_t typeOf(const Fields& f) {
        return static_cast<const ua::NodeId*>(f[0].value.pointer)->identifier.numeric;
    }
};

ua::ContentFilter severityAtLeast(Builder& b, uint16_t min) {
    b.elements.clear();
    b.add(Op::GreaterThanOrEqual,
          {b.attr("Severity"), b.lit(Builder::scalar(ua::BuiltinType::UInt16, min))});
    return b.filter();
}

}  // namespace

TEST_CASE("an event item gets its EventFilterResult, bad filters are refused") {
    Harness h;
    uint32_t sub = h.subscribe();
    auto ok = h.create(sub, kNotifier, h.eventFilter());
    CHECK(ok.statusCode == UAPLEX_Good);
    CHECK(ok.revisedQueueSize == 10);
    REQUIRE(ok.filterResult.data_type == enc::dataTypeOf<ua::EventFilterResult>());
    auto* fr = static_cast<ua::EventFilterResult*>(ok.filterResult.object);
    CHECK(fr->selectClauseResults.size() == 4);
    size_t items = h.mgr->monitoredItemCount();

    h.select.push_back(h.b.operand("Severity", 85));
    h.b.elements.clear();
    h.b.add(Op::Equals, {h.b.attr("Severity")});
    auto bad = h.create(sub, kNotifier, h.eventFilter(h.b.filter()));
    CHECK(bad.statusCode == UAPLEX_BadEventFilterInvalid);
    fr = static_cast<ua::EventFilterResult*>(bad.filterResult.object);
    REQUIRE(fr);
    CHECK(fr->selectClauseResults[4] == UAPLEX_BadTypeDefinitionInvalid);
    CHECK(fr->whereClauseResult.elementResults[0].statusCode ==
          UAPLEX_BadFilterOperandCountMismatch);
    CHECK(h.mgr->monitoredItemCount() == items);  // nothing created

    CHECK(h.create(sub, kNotifier, {}).statusCode == UAPLEX_BadEventFilterInvalid);
    CHECK(h.create(sub, kNotifier, h.b.wrap(ua::DataChangeFilter{})).statusCode ==
          UAPLEX_BadFilterNotAllowed);
    CHECK(h.create(sub, 7, h.eventFilter(), 1, 13).statusCode == UAPLEX_BadFilterNotAllowed);
}

TEST_CASE("events reach the items on their notifiers, once, as the where clause allows") {
    Harness h;
    uint32_t sub = h.subscribe();
    h.create(sub, kNotifier, h.eventFilter());
    h.create(sub, 2253, h.eventFilter());
    h.create(sub, kOtherNotifier, h.eventFilter());
    Builder wb;
    auto high = h.create(sub, kNotifier, h.eventFilter(severityAtLeast(wb, 600)));
    REQUIRE(high.statusCode == UAPLEX_Good);
    uint32_t highHandle = kNotifier;  // same client handle; count by order below

    h.raise({kNotifier, 2253, kNotifier}, 500);  // listed twice: delivered once per item
    auto got = h.publish();
    REQUIRE(got.size() == 2);
    std::set<uint32_t> handles{got[0].first, got[1].first};
    CHECK(handles == std::set<uint32_t>{kNotifier, 2253});
    auto& f = got[0].second;
    REQUIRE(f.size() == 4);
    CHECK(Harness::typeOf(f) == 2041);
    CHECK(f[1].value.uint16 == 500);
    CHECK(ua::view(f[2].value.string) == "src");
    CHECK((f[3].encoding & UAPLEX_VARIANT_TYPE_MASK) == 0);  // no ConditionId: Null

    h.raise({kNotifier}, 700);
    got = h.publish();
    REQUIRE(got.size() == 2);  // the plain item and the Severity >= 600 one
    CHECK(got[0].first == highHandle);
    CHECK(got[1].first == highHandle);
}

TEST_CASE("ModifyMonitoredItems replaces the filter") {
    Harness h;
    uint32_t sub = h.subscribe();
    auto r = h.create(sub, kNotifier, h.eventFilter());
    Builder wb;
    ua::MonitoredItemModifyRequest m{};
    m.monitoredItemId = r.monitoredItemId;
    m.requestedParameters.clientHandle = 9;
    m.requestedParameters.queueSize = 10;
    m.requestedParameters.discardOldest = true;
    m.requestedParameters.filter = h.eventFilter(severityAtLeast(wb, 900));
    ua::ModifyMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToModify = {1, &m};
    ua::ModifyMonitoredItemsResponse resp{};
    REQUIRE(h.mgr->modifyMonitoredItems(1, req, resp, h.arena) == UAPLEX_Good);
    CHECK(resp.results[0].statusCode == UAPLEX_Good);
    CHECK(resp.results[0].filterResult.data_type == enc::dataTypeOf<ua::EventFilterResult>());
    h.raise({kNotifier}, 500);
    CHECK(h.publish().empty());
    h.raise({kNotifier}, 950);
    auto got = h.publish();
    REQUIRE(got.size() == 1);
    CHECK(got[0].first == 9);
}

TEST_CASE("the queue-overflow event carries the item's select clauses") {
    Harness h;
    uint32_t sub = h.subscribe();
    h.create(sub, kNotifier, h.eventFilter(), 2, 12, true);
    for (uint16_t s : {1, 2, 3}) h.raise({kNotifier}, s);
    auto got = h.publish();
    REQUIRE(got.size() == 3);
    auto& o = got[0].second;  // discardOldest: the overflow event goes first
    REQUIRE(o.size() == 4);
    CHECK(Harness::typeOf(o) == kEventQueueOverflowEventType);
    CHECK(o[1].value.uint16 == 1);  // Low
    CHECK(ua::view(o[2].value.string) == "Internal");
    CHECK(got[1].second[1].value.uint16 == 2);
    CHECK(got[2].second[1].value.uint16 == 3);
}

TEST_CASE(
    "ConditionRefresh: RefreshStart, the retained conditions of the item's notifier, RefreshEnd") {
    Harness h;
    ua::NodeId alarm = ua::stringNodeId(2, "Alarm");
    ua::NodeId other = ua::stringNodeId(2, "OtherAlarm");
    h.raise({kNotifier}, 700, 2915, &alarm, true);       // before any item exists
    h.raise({kOtherNotifier}, 700, 2915, &other, true);  // another notifier
    uint32_t sub = h.subscribe();
    h.create(sub, kNotifier, h.eventFilter());
    CHECK(h.publish().empty());

    REQUIRE(h.mgr->conditionRefresh(1, sub, 0) == UAPLEX_Good);
    auto got = h.publish();
    REQUIRE(got.size() == 3);
    CHECK(Harness::typeOf(got[0].second) == kRefreshStartEventType);
    CHECK(Harness::typeOf(got[1].second) == 2915);
    REQUIRE((got[1].second[3].encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_NODEID);
    CHECK(ua::equal(*static_cast<ua::NodeId*>(got[1].second[3].value.pointer), alarm));
    CHECK(Harness::typeOf(got[2].second) == kRefreshEndEventType);

    CHECK(h.mgr->conditionRefresh(2, sub, 0) == UAPLEX_BadSubscriptionIdInvalid);
    CHECK(h.mgr->conditionRefresh(1, sub, 4242) == UAPLEX_BadMonitoredItemIdInvalid);

    // Retain false ends the retention (and is itself reported).
    h.raise({kNotifier}, 100, 2915, &alarm, false);
    CHECK(h.publish().size() == 1);
    REQUIRE(h.mgr->conditionRefresh(1, sub, 0) == UAPLEX_Good);
    got = h.publish();
    REQUIRE(got.size() == 2);
    CHECK(Harness::typeOf(got[0].second) == kRefreshStartEventType);
    CHECK(Harness::typeOf(got[1].second) == kRefreshEndEventType);
}

TEST_CASE("with discardOldest false the overflow event goes last and new events are dropped") {
    Harness h;
    uint32_t sub = h.subscribe();
    h.create(sub, kNotifier, h.eventFilter(), 2, 12, false);
    for (uint16_t s : {1, 2, 3}) h.raise({kNotifier}, s);
    auto got = h.publish();
    REQUIRE(got.size() == 3);
    CHECK(got[0].second[1].value.uint16 == 1);
    CHECK(got[1].second[1].value.uint16 == 2);
    CHECK(Harness::typeOf(got[2].second) == kEventQueueOverflowEventType);
}

namespace {
// The [access] of the events tests: on namespace 1 Anonymous may only Browse, an Operator do
// everything; namespace 2 and ns0 keep the defaults (everything). Session 1 is anonymous,
// session 2 an Operator.
struct AccessFixture {
    session::AccessPolicy policy;
    std::shared_ptr<const session::AccessView> anonymous, operatorView;
    static config::AccessSection rules() {
        config::AccessSection a;
        config::AccessRule r;
        r.namespace_uri = "urn:test:restricted";
        r.roles = {"Anonymous"};
        r.permissions = session::kPermBrowse;
        a.rules.push_back(r);
        r.roles = {"Operator"};
        r.permissions = config::kAllPermissions;
        a.rules.push_back(r);
        return a;
    }
    AccessFixture()
        : policy(rules(), {"http://opcfoundation.org/UA/", "urn:test:restricted", "urn:test:open"}),
          anonymous(policy.view(session::kAnonymousRole)),
          operatorView(policy.view(session::roleMask({"Operator"}))) {}
    void attach(Harness& h) {
        h.mgr->context().mayReceiveEvent = session::receivesEventsFrom;
        h.views[1] = anonymous.get();
        h.views[2] = operatorView.get();
    }
};
}  // namespace

TEST_CASE(
    "an event reaches an item only if its session has ReceiveEvents on the source, "
    "whatever the notifier") {
    Harness h;
    AccessFixture access;
    access.attach(h);
    REQUIRE((access.anonymous->permissions(ua::numericNodeId(1, 7)) &
             session::kPermReceiveEvents) == 0);
    uint32_t anonSub = h.subscribe(1), opSub = h.subscribe(2);
    // Both on the Server object (ns0: ReceiveEvents for everyone) and on a notifier.
    REQUIRE(h.create(anonSub, 2253, h.eventFilter(), 10, 12, true, 1).statusCode == UAPLEX_Good);
    REQUIRE(h.create(anonSub, kNotifier, h.eventFilter(), 10, 12, true, 1).statusCode ==
            UAPLEX_Good);
    REQUIRE(h.create(opSub, 2253, h.eventFilter(), 10, 12, true, 2).statusCode == UAPLEX_Good);

    const ua::NodeId restricted = ua::numericNodeId(1, 7), open = ua::numericNodeId(2, 7);
    h.raise({kNotifier, 2253}, 100, 2041, nullptr, true, &restricted);
    h.raise({kNotifier, 2253}, 200, 2041, nullptr, true, &open);
    h.raise({kNotifier, 2253}, 300);  // no source: the server's own, offered to all

    auto anon = h.publish(1);
    std::multiset<uint16_t> severities;
    for (auto& [handle, f] : anon) severities.insert(f[1].value.uint16);
    CHECK(severities == std::multiset<uint16_t>{200, 200, 300, 300});  // never 100
    auto op = h.publish(2);
    severities.clear();
    for (auto& [handle, f] : op) severities.insert(f[1].value.uint16);
    CHECK(severities == std::multiset<uint16_t>{100, 200, 300});

    // A re-activation as another user moves the session's items to its view.
    h.mgr->setAccess(1, access.operatorView.get());
    h.raise({2253}, 400, 2041, nullptr, true, &restricted);
    REQUIRE(h.publish(1).size() == 1);
}

TEST_CASE("ConditionRefresh replays only the conditions the session has ReceiveEvents on") {
    Harness h;
    AccessFixture access;
    access.attach(h);
    const ua::NodeId restricted = ua::numericNodeId(1, 70), open = ua::numericNodeId(2, 70);
    ua::NodeId hiddenAlarm = ua::numericNodeId(1, 71), openAlarm = ua::numericNodeId(2, 71);
    h.raise({2253}, 500, 2915, &hiddenAlarm, true, &restricted);
    h.raise({2253}, 600, 2915, &openAlarm, true, &open);
    uint32_t anonSub = h.subscribe(1), opSub = h.subscribe(2);
    h.create(anonSub, 2253, h.eventFilter(), 10, 12, true, 1);
    h.create(opSub, 2253, h.eventFilter(), 10, 12, true, 2);

    REQUIRE(h.mgr->conditionRefresh(1, anonSub, 0) == UAPLEX_Good);
    auto got = h.publish(1);
    REQUIRE(got.size() == 3);  // start, the open namespace's condition, end
    CHECK(Harness::typeOf(got[0].second) == kRefreshStartEventType);
    CHECK(got[1].second[1].value.uint16 == 600);
    CHECK(Harness::typeOf(got[2].second) == kRefreshEndEventType);

    REQUIRE(h.mgr->conditionRefresh(2, opSub, 0) == UAPLEX_Good);
    got = h.publish(2);
    REQUIRE(got.size() == 4);  // the Operator sees both
}

namespace {
std::atomic<int> receiveLookups{0};
bool countingReceives(const void* view, const ua::NodeId& source) noexcept {
    receiveLookups.fetch_add(1, std::memory_order_relaxed);
    return session::receivesEventsFrom(view, source);
}
}  // namespace

TEST_CASE("an event's ReceiveEvents is looked up once per run of items with the same view") {
    Harness h;
    AccessFixture access;
    access.attach(h);
    h.mgr->context().mayReceiveEvent = countingReceives;
    uint32_t anonSub = h.subscribe(1), opSub = h.subscribe(2);
    for (int i = 0; i < 5; ++i)
        REQUIRE(h.create(anonSub, kNotifier, h.eventFilter(), 10, 12, true, 1).statusCode ==
                UAPLEX_Good);
    for (int i = 0; i < 5; ++i)
        REQUIRE(h.create(opSub, kNotifier, h.eventFilter(), 10, 12, true, 2).statusCode ==
                UAPLEX_Good);
    const ua::NodeId restricted = ua::numericNodeId(1, 7);
    receiveLookups = 0;
    h.raise({kNotifier}, 100, 2041, nullptr, true, &restricted);
    // Ten items, two views, in two runs: two lookups, not ten.
    CHECK(receiveLookups == 2);
    CHECK(h.publish(1).empty());
    CHECK(h.publish(2).size() == 5);

    // A ConditionRefresh checks each retained condition once for the subscription.
    ua::NodeId alarm = ua::numericNodeId(1, 71);
    h.raise({kNotifier}, 500, 2915, &alarm, true, &restricted);
    h.publish(2);
    receiveLookups = 0;
    REQUIRE(h.mgr->conditionRefresh(2, opSub, 0) == UAPLEX_Good);
    CHECK(receiveLookups == 1);
    CHECK(h.publish(2).size() == 15);  // start, the condition, end for each of the five items
}

TEST_CASE("an event queue that dequeues Good without an event delivers nothing, others go on") {
    struct Reset {
        ~Reset() { Factory::faulty = false; }
    } reset;
    Factory::faulty = true;
    Harness h;
    uint32_t sub = h.subscribe();
    REQUIRE(h.create(sub, kNotifier, h.eventFilter(), kFaultySize).statusCode == UAPLEX_Good);
    REQUIRE(h.create(sub, kOtherNotifier, h.eventFilter()).statusCode == UAPLEX_Good);
    for (int round = 0; round < 3; ++round) {
        h.raise({kNotifier, kOtherNotifier}, 500);
        auto got = h.publish();
        REQUIRE(got.size() == 1);  // the healthy queue's event only
        CHECK(got[0].first == kOtherNotifier);
    }
}
