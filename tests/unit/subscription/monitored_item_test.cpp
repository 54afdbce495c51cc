// SPDX-License-Identifier: Apache-2.0
// docs/pipeline.md, Queue handlers and monitored items, item level: size 1, event overflow events,
// duplicates, the DataChangeFilter, timestamps and triggering.
#include <catch2/catch.hpp>

#include "engine_support.hpp"

using namespace uaplex;
using namespace uaplex::subscription;
using namespace uaplex::subscription::test;

TEST_CASE("items 7: size 1 keeps only the last value and never overflows") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* it = e.dataItem(*sub, 1);
    for (int i = 1; i <= 5; ++i) e.put(it, i);
    Staged s(e.ctx);
    CHECK_FALSE(it->publish(s.data, s.events, 0, e.clock.monoMs()));
    REQUIRE(s.data.size() == 1);
    CHECK(s.data[0].value->dv.value.value.double_ == 5);
    CHECK((s.data[0].value->dv.status & kOverflowInfoBits) == 0);
    CHECK(sub->monitoringQueueOverflowCount() == 0);
}

TEST_CASE("items 8: event overflow with discardOldest=true goes first") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* it = e.eventItem(*sub, 2, true);
    for (int i = 1; i <= 3; ++i) CHECK(e.queueEvent(it, i, uint64_t(i)));
    Staged s(e.ctx);
    CHECK_FALSE(it->publish(s.data, s.events, 10, 0));
    CHECK(s.eventValues() == std::vector<double>{-1, 2, 3});
    CHECK_FALSE(it->holdsNotification());        // overflow cleared
    CHECK(sub->eventQueueOverflowCount() == 1);  // event 1 was lost
    CHECK(sub->monitoringQueueOverflowCount() == 1);
}

TEST_CASE("items 9: event overflow with discardOldest=false goes last, or waits") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    SECTION("max 10") {
        MonitoredItem* it = e.eventItem(*sub, 2, false);
        for (int i = 1; i <= 3; ++i) e.queueEvent(it, i, uint64_t(i));
        CHECK_FALSE(e.queueEvent(it, 4, 4));
        Staged s(e.ctx);
        CHECK_FALSE(it->publish(s.data, s.events, 10, 0));
        CHECK(s.eventValues() == std::vector<double>{1, 2, -1});
        CHECK(sub->eventQueueOverflowCount() == 2);  // events 3 and 4 were lost
    }
    SECTION("max 2") {
        MonitoredItem* it = e.eventItem(*sub, 2, false);
        for (int i = 1; i <= 3; ++i) e.queueEvent(it, i, uint64_t(i));
        Staged s(e.ctx);
        CHECK(it->publish(s.data, s.events, 2, 0));  // stays ready
        CHECK(s.eventValues() == std::vector<double>{1, 2});
        s.clear();
        CHECK_FALSE(it->publish(s.data, s.events, 2, 0));
        CHECK(s.eventValues() == std::vector<double>{-1});
    }
}

TEST_CASE("items 10: a duplicate source handle is queued once, without overflow") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* it = e.eventItem(*sub, 5, true);
    CHECK(e.queueEvent(it, 1, 77));
    CHECK_FALSE(e.queueEvent(it, 1, 77));
    Staged s(e.ctx);
    it->publish(s.data, s.events, 0, 0);
    CHECK(s.eventValues() == std::vector<double>{1});
    CHECK(sub->monitoringQueueOverflowCount() == 0);
    CHECK(sub->eventQueueOverflowCount() == 0);
}

TEST_CASE("items 11: absolute and percent deadbands") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* it = e.dataItem(*sub, 1);
    DataChangeFilterSpec f;
    f.deadbandType = ua::DeadbandType::Absolute;
    f.deadbandValue = 1.0;
    it->setFilter(f);
    Staged s(e.ctx);
    CHECK(it->queueValue(Engine::value(10.0), UAPLEX_Good, 0));
    it->publish(s.data, s.events, 0, 0);
    CHECK_FALSE(it->queueValue(Engine::value(11.0), UAPLEX_Good, 0));  // exactly D: no
    CHECK(it->queueValue(Engine::value(11.01), UAPLEX_Good, 0));
    f.deadbandType = ua::DeadbandType::Percent;
    f.deadbandValue = 10;
    f.euLow = 0;
    f.euHigh = 100;
    it->setFilter(f);  // the threshold is 10 (10 % of 0-100)
    CHECK(it->queueValue(Engine::value(50), UAPLEX_Good, 0));
    CHECK_FALSE(it->queueValue(Engine::value(60), UAPLEX_Good, 0));
    CHECK_FALSE(it->queueValue(Engine::value(41), UAPLEX_Good, 0));
    CHECK(it->queueValue(Engine::value(60.5), UAPLEX_Good, 0));
    // Arrays: a length change, or one element past the deadband.
    ValueCell a{}, b{};
    a.dv.mask = b.dv.mask = UAPLEX_DATAVALUE_VALUE;
    CHECK(dataChanged(f, nullptr, a));
}

TEST_CASE("items 12: StatusValueTimestamp, and TimestampsToReturn Neither") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* plain = e.dataItem(*sub, 1);
    MonitoredItem* banded = e.dataItem(*sub, 1);
    DataChangeFilterSpec f;
    f.trigger = ua::DataChangeTrigger::StatusValueTimestamp;
    plain->setFilter(f);
    f.deadbandType = ua::DeadbandType::Absolute;
    f.deadbandValue = 0.5;
    banded->setFilter(f);
    CHECK(plain->queueValue(Engine::value(1, 5000), UAPLEX_Good, 0));
    CHECK(banded->queueValue(Engine::value(1, 5000), UAPLEX_Good, 0));
    CHECK(plain->queueValue(Engine::value(1, 6000), UAPLEX_Good, 0));
    CHECK_FALSE(banded->queueValue(Engine::value(1, 6000), UAPLEX_Good, 0));
    plain->setTimestamps(ua::TimestampsToReturn::Neither);
    Staged s(e.ctx);
    plain->publish(s.data, s.events, 0, 0);
    REQUIRE(s.data.size() == 1);
    CHECK(s.data[0].value->dv.source_timestamp == 0);
    CHECK(s.data[0].value->dv.server_timestamp == 0);
}

TEST_CASE("items 13: a linked item in Sampling mode publishes only when triggered") {
    Engine e;
    auto sub = e.subscription(100, 100, 300, 0);
    MonitoredItem* trigger = e.dataItem(*sub, 1);
    MonitoredItem* linked = e.dataItem(*sub, 1);
    linked->setMode(ua::MonitoringMode::Sampling, 0);
    trigger->mutableLinks().push_back(linked->id());
    e.put(linked, 1);
    e.put(trigger, 1);  // the first value does not trigger
    int64_t t = 0;
    auto tick = [&] {
        t += 101;
        e.clock.mono = t;
        return sub->tick(e.clock.mono);
    };
    tick();
    auto first = sub->publish();
    std::vector<Note> n = notes(first.message.message());
    REQUIRE(n.size() == 1);  // the trigger's own value only
    bool linkedSeen = false;
    for (auto& x : n) linkedSeen |= x.clientHandle == linked->clientHandle();
    CHECK_FALSE(linkedSeen);
    e.put(linked, 2);
    tick();
    CHECK(sub->publish().noMessage);  // Sampling: nothing without a trigger
    e.put(trigger, 2);                // a value after the first: ready to trigger
    CHECK(tick() == TickResult::NotificationsAvailable);
    n = notes(sub->publish().message.message());
    linkedSeen = false;
    for (auto& x : n) linkedSeen |= x.clientHandle == linked->clientHandle() && x.value == 2;
    CHECK(linkedSeen);
}

TEST_CASE("items 10b: a StatusResult event field gets the diagnostics mask") {
    Engine e;
    auto sub = e.subscription(100, 3, 30, 0);
    MonitoredItem* it = e.eventItem(*sub, 5);
    it->setDiagnosticsMask(0x100);  // InnerStatusCode only
    ua::StatusResult sr{};
    sr.statusCode = UAPLEX_BadInternalError;
    sr.diagnosticInfo.mask = 0x01 | 0x20;  // SymbolicId and InnerStatusCode
    sr.diagnosticInfo.symbolic_id = 3;
    sr.diagnosticInfo.inner_status_code = UAPLEX_BadTimeout;
    ua::ExtensionObject eo{};
    eo.type_id = ua::numericNodeId(0, enc::dataTypeOf<ua::StatusResult>()->binaryEncodingId);
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.data_type = enc::dataTypeOf<ua::StatusResult>();
    eo.object = &sr;
    ua::DataValue dv{};
    dv.mask = UAPLEX_DATAVALUE_VALUE;
    dv.value.encoding = 22;
    dv.value.value.pointer = &eo;
    auto* ev = new EventCell;
    ev->entry.source_handle = 1;
    ev->cells.push_back(e.ctx.values.copy(dv));
    REQUIRE(ev->cells[0]);
    REQUIRE(it->queueEvent(ev));
    e.clock.mono = 101;
    sub->tick(e.clock.mono);
    auto o = sub->publish();
    auto& list = o.message.message().notificationData[0];
    REQUIRE(list.data_type == enc::dataTypeOf<ua::EventNotificationList>());
    auto& field = static_cast<ua::EventNotificationList*>(list.object)->events[0].eventFields[0];
    auto* got = static_cast<ua::ExtensionObject*>(field.value.pointer);
    REQUIRE(got->data_type == enc::dataTypeOf<ua::StatusResult>());
    auto& di = static_cast<ua::StatusResult*>(got->object)->diagnosticInfo;
    CHECK(di.mask == 0x20);
    CHECK(di.inner_status_code == UAPLEX_BadTimeout);
}
