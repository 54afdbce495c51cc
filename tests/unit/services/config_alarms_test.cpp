// SPDX-License-Identifier: Apache-2.0
// [[alarms]] (kernel/services/src/config_alarms.cpp): a configured level alarm on a stored
// Variable gets its nodes (type, limits, InputNode, LimitState / the limit state variables,
// HasCondition from the source), is evaluated on each write of the source, and raises its
// events through the ConditionTable (ActiveState/Id, LimitState/CurrentState/Id, Severity,
// Retain); Acknowledge works on it. Deviation alarms follow source minus setpoint (either's
// change), rate of change alarms the change per second of source timestamps, and the
// off-normal subtypes a NormalState node or a constant, each with its TypeDefinition/EventType.
#include <catch2/catch.hpp>

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <uaplex/subscription/event_filter.hpp>

#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

struct Captured {
    std::string condition;
    std::map<std::string, ua::Variant> fields;  // by path "A/B"; values borrowed: scalars only
    bool activeId = false, retain = false, acked = true;
    std::uint16_t severity = 0;
    std::uint32_t limitStateId = 0;
    std::map<std::string, bool> states;  // "HighState" -> Id
    std::vector<std::uint8_t> eventId;
    std::map<std::string, double> limits;  // "HighLimit" -> value
    bool hasLimitState = false;
    std::uint32_t eventType = 0;
    std::string setpointNode, normalState;  // string ids of the SetpointNode / NormalState fields
};

struct Recorder {
    std::vector<Captured> events;
    static void fn(void* user, std::span<const std::uint64_t>, const subscription::EventView& e) {
        auto* self = static_cast<Recorder*>(user);
        if (e.conditionId == nullptr) return;
        Captured c;
        if (e.conditionId->identifier_type == UAPLEX_ID_STRING)
            c.condition = std::string(ua::view(e.conditionId->identifier.string));
        c.eventType = e.eventType.identifier.numeric;
        for (const auto& f : e.fields) {
            std::string path;
            for (const auto& q : f.path)
                path += (path.empty() ? "" : "/") + std::string(ua::view(q.name));
            const ua::Variant& v = *f.value;
            if (path == "ActiveState/Id") c.activeId = v.value.boolean;
            if (path == "Retain") c.retain = v.value.boolean;
            if (path == "AckedState/Id") c.acked = v.value.boolean;
            if (path == "Severity") c.severity = v.value.uint16;
            if (path == "LimitState/CurrentState/Id")
                c.limitStateId =
                    static_cast<const ua::NodeId*>(v.value.pointer)->identifier.numeric;
            if (path.size() > 3 && path.substr(path.size() - 3) == "/Id" &&
                path.find("State/Id") != std::string::npos &&
                ua::variantType(v) == ua::BuiltinType::Boolean)
                c.states[path.substr(0, path.size() - 3)] = v.value.boolean;
            if (path.size() > 5 && path.substr(path.size() - 5) == "Limit" &&
                ua::variantType(v) == ua::BuiltinType::Double)
                c.limits[path] = v.value.double_;
            if (path == "LimitState/CurrentState/Id") c.hasLimitState = true;
            if ((path == "SetpointNode" || path == "NormalState") &&
                ua::variantType(v) == ua::BuiltinType::NodeId) {
                const auto* n = static_cast<const ua::NodeId*>(v.value.pointer);
                std::string text = n->identifier_type == UAPLEX_ID_STRING
                                       ? std::string(ua::view(n->identifier.string))
                                       : "i=" + std::to_string(n->identifier.numeric);
                (path == "SetpointNode" ? c.setpointNode : c.normalState) = text;
            }
            if (path == "EventId") {
                auto b = ua::view(v.value.bytestring);
                c.eventId.assign(b.begin(), b.end());
            }
        }
        self->events.push_back(std::move(c));
    }
};

std::string alarmsToml() {
    return test::nodeManagerPlugins() +
           "[[alarms]]\nname = \"Tank\"\ntype = \"exclusive_level\"\n"
           "source = \"nsu=urn:uaplex:demo;s=Demo.AnalogItem\"\nhigh_high = 90\nhigh = 80\n"
           "low = 20\nhigh_high_severity = 900\nhigh_severity = 600\ndeadband = 2\n"
           "message = \"Tank level\"\n"
           "[[alarms]]\nname = \"TankNx\"\ntype = \"non_exclusive_level\"\n"
           "source = \"nsu=urn:uaplex:demo;s=Demo.AnalogItem\"\nhigh_high = 90\nhigh = 80\n";
}

}  // namespace

TEST_CASE("[[alarms]]: a level alarm on a stored variable, its nodes, events and Acknowledge") {
    test::Server s("", alarmsToml());
    Recorder rec;
    s.services->setEventRaised(&Recorder::fn, &rec);
    const std::uint16_t ns = s.namespaceIndex("urn:test:uaplex");
    const std::uint16_t demo = s.namespaceIndex("urn:uaplex:demo");
    REQUIRE(ns != 0xFFFF);
    const ua::NodeId tank = ua::stringNodeId(ns, "Alarms.Tank");
    const ua::NodeId source = ua::stringNodeId(demo, "Demo.AnalogItem");

    // Its nodes: type, limits, InputNode, the LimitState machine; HasCondition from source.
    ua::DataValue v = s.read(tank, 1);  // NodeId attribute
    REQUIRE(v.status == UAPLEX_Good);
    v = s.read(ua::stringNodeId(ns, "Alarms.Tank.HighLimit"));
    REQUIRE(v.status == UAPLEX_Good);
    CHECK(v.value.value.double_ == 80.0);
    v = s.read(ua::stringNodeId(ns, "Alarms.Tank.InputNode"));
    REQUIRE(ua::variantType(v.value) == ua::BuiltinType::NodeId);
    CHECK(ua::equal(*static_cast<ua::NodeId*>(v.value.value.pointer), source));
    bool hasCondition = false;
    for (const auto& r :
         s.browse(source, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 9006)).references)
        hasCondition = hasCondition || ua::equal(r.nodeId.node_id, tank);
    CHECK(hasCondition);
    bool typed = false;
    for (const auto& r : s.browse(tank).references)
        typed = typed || (r.typeDefinition.node_id.identifier.numeric == 9318);  // LimitState
    CHECK(typed);

    auto write = [&](double x) {
        rec.events.clear();
        REQUIRE(s.write(source, ua::variantDouble(x)) == UAPLEX_Good);
    };
    auto tankEvents = [&] {
        std::vector<Captured> out;
        for (auto& e : rec.events)
            if (e.condition == "Alarms.Tank") out.push_back(e);
        return out;
    };
    write(50);
    CHECK(rec.events.empty());  // normal: nothing

    write(85);
    auto ev = tankEvents();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].activeId);
    CHECK(ev[0].limitStateId == 9331);  // High
    CHECK(ev[0].severity == 600);
    CHECK(ev[0].limits == std::map<std::string, double>{
                              {"HighHighLimit", 90}, {"HighLimit", 80}, {"LowLimit", 20}});
    CHECK(ev[0].retain);
    CHECK_FALSE(ev[0].acked);
    v = s.read(ua::stringNodeId(ns, "Alarms.Tank.LimitState.CurrentState"));
    REQUIRE(ua::variantType(v.value) == ua::BuiltinType::LocalizedText);
    CHECK(ua::view(static_cast<ua::LocalizedText*>(v.value.value.pointer)->text) == "High");

    write(86);
    CHECK(tankEvents().empty());  // same state: no event

    write(95);
    ev = tankEvents();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].limitStateId == 9329);  // HighHigh
    CHECK(ev[0].severity == 900);
    // The non-exclusive alarm: both high states at once.
    bool nx = false;
    for (auto& e : rec.events)
        if (e.condition == "Alarms.TankNx") {
            nx = true;
            CHECK(e.states["HighHighState"]);
            CHECK(e.states["HighState"]);
        }
    CHECK(nx);

    write(89);  // inside HighHigh's deadband
    CHECK(tankEvents().empty());
    write(79);  // below HighHigh - 2, inside High's deadband: High
    ev = tankEvents();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].limitStateId == 9331);

    write(70);  // back to normal: inactive, still retained (not acknowledged)
    ev = tankEvents();
    REQUIRE(ev.size() == 1);
    CHECK_FALSE(ev[0].activeId);
    CHECK(ev[0].limitStateId == 0);
    CHECK(ev[0].retain);

    // Acknowledge with the last EventId.
    ua::Variant args[2];
    ua::ByteString id = ua::makeByteString(ev[0].eventId);
    args[0] = ua::makeVariant(ua::BuiltinType::ByteString);
    args[0].value.bytestring = id;
    ua::LocalizedText comment = ua::makeLocalizedText({}, "seen");
    args[1] = ua::makeVariant(ua::BuiltinType::LocalizedText);
    args[1].value.pointer = &comment;
    rec.events.clear();
    CHECK(s.services->callCondition(tank, 9111, {args, 2}, "user:op") == UAPLEX_Good);
    ev = tankEvents();
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].acked);
    // The method's event carries the alarm's LimitState and limits as last evaluated.
    CHECK(ev[0].hasLimitState);
    CHECK(ev[0].limitStateId == 0);
    CHECK(ev[0].limits.at("HighLimit") == 80.0);
    CHECK(s.read(ua::stringNodeId(ns, "Alarms.Tank.AckedState.Id")).value.value.boolean);
}

TEST_CASE("[[alarms]]: an unknown source is logged and not served") {
    test::Server s("", test::nodeManagerPlugins() +
                           "[[alarms]]\nname = \"X\"\ntype = \"off_normal\"\n"
                           "source = \"nsu=urn:uaplex:demo;s=Nope\"\nnormal_value = 0\n");
    const std::uint16_t ns = s.namespaceIndex("urn:test:uaplex");
    REQUIRE(ns != 0xFFFF);
    CHECK(s.read(ua::stringNodeId(ns, "Alarms.X"), 1).status == UAPLEX_BadNodeIdUnknown);
}

namespace {

// Events of one condition, from any thread (the delays end on the timer's).
struct DelayRecorder {
    std::mutex mutex;
    std::vector<std::pair<bool, std::int64_t>> events;  // ActiveState/Id, when received
    std::string condition;
    static void fn(void* user, std::span<const std::uint64_t>, const subscription::EventView& e) {
        auto* self = static_cast<DelayRecorder*>(user);
        if (e.conditionId == nullptr || e.conditionId->identifier_type != UAPLEX_ID_STRING ||
            ua::view(e.conditionId->identifier.string) != self->condition)
            return;
        for (const auto& f : e.fields)
            if (f.path.size() == 2 && ua::view(f.path[0].name) == "ActiveState" &&
                ua::view(f.path[1].name) == "Id") {
                std::lock_guard lock(self->mutex);
                self->events.emplace_back(f.value->value.boolean, ua::utcNow());
            }
    }
    std::size_t size() {
        std::lock_guard lock(mutex);
        return events.size();
    }
    bool waitFor(std::size_t n, int ms) {
        for (int i = 0; i < ms / 10 && size() < n; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return size() >= n;
    }
};

}  // namespace

TEST_CASE("[[alarms]]: on_delay_ms and off_delay_ms end on a timer, without another write") {
    DelayRecorder rec;  // outlives the server's timer
    rec.condition = "Alarms.Slow";
    test::Server s("", test::nodeManagerPlugins() +
                           "[[alarms]]\nname = \"Slow\"\ntype = \"exclusive_level\"\n"
                           "source = \"nsu=urn:uaplex:demo;s=Demo.AnalogItem\"\nhigh = 80\n"
                           "on_delay_ms = 300\noff_delay_ms = 200\n");
    s.services->setEventRaised(&DelayRecorder::fn, &rec);
    const ua::NodeId source =
        ua::stringNodeId(s.namespaceIndex("urn:uaplex:demo"), "Demo.AnalogItem");
    REQUIRE(s.write(source, ua::variantDouble(50)) == UAPLEX_Good);

    // Above High: active once 300 ms passed, with no further write.
    const std::int64_t wrote = ua::utcNow();
    REQUIRE(s.write(source, ua::variantDouble(85)) == UAPLEX_Good);
    CHECK(rec.size() == 0);
    REQUIRE(rec.waitFor(1, 5000));
    {
        std::lock_guard lock(rec.mutex);
        CHECK(rec.events[0].first);
        CHECK(rec.events[0].second - wrote >= 300 * 10'000);
    }
    // Back to normal: inactive 200 ms later, again on its own.
    REQUIRE(s.write(source, ua::variantDouble(50)) == UAPLEX_Good);
    REQUIRE(rec.waitFor(2, 5000));
    {
        std::lock_guard lock(rec.mutex);
        CHECK_FALSE(rec.events[1].first);
    }
    // Taken back within the delay: no event at all.
    REQUIRE(s.write(source, ua::variantDouble(90)) == UAPLEX_Good);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    REQUIRE(s.write(source, ua::variantDouble(40)) == UAPLEX_Good);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    CHECK(rec.size() == 2);
    s.services->setEventRaised(nullptr, nullptr);
}

namespace {

// The TypeDefinition of a node (its HasTypeDefinition target's number).
std::uint32_t typeOf(test::Server& s, const ua::NodeId& id) {
    for (const auto& r :
         s.browse(id, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 40)).references)
        return r.nodeId.node_id.identifier.numeric;
    return 0;
}

// The NodeId a NodeId-valued property holds, as a string id (empty: not a string id).
std::string nodeIdValue(test::Server& s, const ua::NodeId& id) {
    ua::DataValue v = s.read(id);
    if (v.status != UAPLEX_Good || ua::variantType(v.value) != ua::BuiltinType::NodeId) return "";
    const auto* n = static_cast<const ua::NodeId*>(v.value.value.pointer);
    return n->identifier_type == UAPLEX_ID_STRING ? std::string(ua::view(n->identifier.string))
                                                  : "";
}

std::vector<Captured> eventsOf(const Recorder& rec, const std::string& condition) {
    std::vector<Captured> out;
    for (const auto& e : rec.events)
        if (e.condition == condition) out.push_back(e);
    return out;
}

}  // namespace

TEST_CASE("[[alarms]]: a deviation alarm follows source minus setpoint, re-evaluated on both") {
    // AnalogItem starts at 42, Scalars.Double at 2.25: both known before any write.
    test::Server s("", test::nodeManagerPlugins() +
                           "[[alarms]]\nname = \"Dev\"\ntype = \"exclusive_deviation\"\n"
                           "source = \"nsu=urn:uaplex:demo;s=Demo.AnalogItem\"\n"
                           "setpoint = \"nsu=urn:uaplex:demo;s=Demo.Scalars.Double\"\n"
                           "high_high = 20\nhigh = 10\nlow = -10\nhigh_severity = 600\n"
                           "deadband = 2\n"
                           "[[alarms]]\nname = \"DevNx\"\ntype = \"non_exclusive_deviation\"\n"
                           "source = \"nsu=urn:uaplex:demo;s=Demo.AnalogItem\"\n"
                           "setpoint = \"nsu=urn:uaplex:demo;s=Demo.Scalars.Double\"\n"
                           "high_high = 20\nhigh = 10\n");
    Recorder rec;
    s.services->setEventRaised(&Recorder::fn, &rec);
    const std::uint16_t ns = s.namespaceIndex("urn:test:uaplex");
    const std::uint16_t demo = s.namespaceIndex("urn:uaplex:demo");
    const ua::NodeId dev = ua::stringNodeId(ns, "Alarms.Dev");
    const ua::NodeId source = ua::stringNodeId(demo, "Demo.AnalogItem");
    const ua::NodeId setpoint = ua::stringNodeId(demo, "Demo.Scalars.Double");
    CHECK(typeOf(s, dev) == 9764);  // ExclusiveDeviationAlarmType
    CHECK(typeOf(s, ua::stringNodeId(ns, "Alarms.DevNx")) == 10368);
    CHECK(nodeIdValue(s, ua::stringNodeId(ns, "Alarms.Dev.SetpointNode")) == "Demo.Scalars.Double");
    CHECK(s.read(ua::stringNodeId(ns, "Alarms.Dev.LowLimit")).value.value.double_ == -10.0);

    auto write = [&](const ua::NodeId& id, double x) {
        rec.events.clear();
        REQUIRE(s.write(id, ua::variantDouble(x)) == UAPLEX_Good);
    };
    write(setpoint, 50);  // 42 - 50 = -8: normal
    CHECK(rec.events.empty());
    write(setpoint, 30);  // 42 - 30 = 12: High, from the setpoint's change alone
    auto ev = eventsOf(rec, "Alarms.Dev");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].eventType == 9764);
    CHECK(ev[0].activeId);
    CHECK(ev[0].limitStateId == 9331);
    CHECK(ev[0].severity == 600);
    CHECK(ev[0].setpointNode == "Demo.Scalars.Double");
    write(source, 39);  // 9: inside High's deadband
    CHECK(eventsOf(rec, "Alarms.Dev").empty());
    write(source, 55);  // 25: HighHigh; the non-exclusive one has both
    ev = eventsOf(rec, "Alarms.Dev");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].limitStateId == 9329);
    auto nx = eventsOf(rec, "Alarms.DevNx");
    REQUIRE(nx.size() == 1);
    CHECK(nx[0].eventType == 10368);
    CHECK(nx[0].states["HighHighState"]);
    CHECK(nx[0].states["HighState"]);
    write(setpoint, 48);  // 7: below High - deadband: normal
    ev = eventsOf(rec, "Alarms.Dev");
    REQUIRE(ev.size() == 1);
    CHECK_FALSE(ev[0].activeId);
    CHECK(ev[0].limitStateId == 0);
    write(source, 37);  // -11: Low
    ev = eventsOf(rec, "Alarms.Dev");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].limitStateId == 9333);

    // Acknowledge works as for the level alarms.
    ua::Variant args[2];
    ua::ByteString id = ua::makeByteString(ev[0].eventId);
    args[0] = ua::makeVariant(ua::BuiltinType::ByteString);
    args[0].value.bytestring = id;
    ua::LocalizedText comment = ua::makeLocalizedText({}, "seen");
    args[1] = ua::makeVariant(ua::BuiltinType::LocalizedText);
    args[1].value.pointer = &comment;
    rec.events.clear();
    CHECK(s.services->callCondition(dev, 9111, {args, 2}, "user:op") == UAPLEX_Good);
    ev = eventsOf(rec, "Alarms.Dev");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].acked);
    CHECK(ev[0].eventType == 9764);
    CHECK(ev[0].setpointNode == "Demo.Scalars.Double");
    s.services->setEventRaised(nullptr, nullptr);
}

TEST_CASE("[[alarms]]: a rate of change alarm takes the change per second of source times") {
    test::Server s("", test::nodeManagerPlugins() +
                           "[[alarms]]\nname = \"Rate\"\ntype = \"exclusive_rate_of_change\"\n"
                           "source = \"nsu=urn:uaplex:demo;s=Demo.Measured\"\n"
                           "high = 5\nlow = -5\ndeadband = 1\n"
                           "[[alarms]]\nname = \"RateNx\"\n"
                           "type = \"non_exclusive_rate_of_change\"\n"
                           "source = \"nsu=urn:uaplex:demo;s=Demo.Measured\"\nhigh = 5\n");
    Recorder rec;
    s.services->setEventRaised(&Recorder::fn, &rec);
    const std::uint16_t ns = s.namespaceIndex("urn:test:uaplex");
    const ua::NodeId source =
        ua::stringNodeId(s.namespaceIndex("urn:uaplex:demo"), "Demo.Measured");
    CHECK(typeOf(s, ua::stringNodeId(ns, "Alarms.Rate")) == 9623);
    CHECK(typeOf(s, ua::stringNodeId(ns, "Alarms.RateNx")) == 10214);
    constexpr std::int64_t kSecond = 10'000'000;
    const std::int64_t t0 = ua::utcNow() - 100 * kSecond;
    auto write = [&](double x, std::int64_t at) {
        rec.events.clear();
        ua::WriteValue wv{};
        wv.nodeId = source;
        wv.attributeId = 13;
        wv.indexRange = ua::nullString();
        wv.value.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        wv.value.value = ua::variantDouble(x);
        wv.value.source_timestamp = at;
        REQUIRE(s.writeValue(wv) == UAPLEX_Good);
    };
    write(1000, t0);  // the first value: no rate yet
    CHECK(rec.events.empty());
    write(1003, t0 + kSecond);  // 3/s
    CHECK(rec.events.empty());
    write(1013, t0 + 2 * kSecond);  // 10/s: High
    auto ev = eventsOf(rec, "Alarms.Rate");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].eventType == 9623);
    CHECK(ev[0].activeId);
    CHECK(ev[0].limitStateId == 9331);
    CHECK(eventsOf(rec, "Alarms.RateNx").size() == 1);
    write(1015.25, t0 + 2 * kSecond + kSecond / 2);  // 4.5/s: inside the deadband
    CHECK(eventsOf(rec, "Alarms.Rate").empty());
    write(1018.25, t0 + 3 * kSecond + kSecond / 2);  // 3/s: normal
    ev = eventsOf(rec, "Alarms.Rate");
    REQUIRE(ev.size() == 1);
    CHECK_FALSE(ev[0].activeId);
    write(1008.25, t0 + 4 * kSecond);  // -20/s: Low
    ev = eventsOf(rec, "Alarms.Rate");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].limitStateId == 9333);
    write(0, t0 + 4 * kSecond);  // not newer than the last value: no rate, ignored
    CHECK(rec.events.empty());
    write(1009.25, t0 + 5 * kSecond);  // 1/s from the last newer value: normal
    ev = eventsOf(rec, "Alarms.Rate");
    REQUIRE(ev.size() == 1);
    CHECK_FALSE(ev[0].activeId);
    s.services->setEventRaised(nullptr, nullptr);
}

TEST_CASE("[[alarms]]: trip, discrete and system off-normal alarms, NormalState from a node") {
    // Scalars.Int32 starts at -70000, Scalars.Int16 at -300.
    test::Server s("", test::nodeManagerPlugins() +
                           "[[alarms]]\nname = \"Trip\"\ntype = \"trip\"\nseverity = 900\n"
                           "source = \"nsu=urn:uaplex:demo;s=Demo.Scalars.Int32\"\n"
                           "normal_state = \"nsu=urn:uaplex:demo;s=Demo.Scalars.Int16\"\n"
                           "[[alarms]]\nname = \"Disc\"\ntype = \"discrete\"\n"
                           "source = \"nsu=urn:uaplex:demo;s=Demo.Scalars.Int32\"\n"
                           "normal_value = 5\n"
                           "[[alarms]]\nname = \"Sys\"\ntype = \"system_off_normal\"\n"
                           "source = \"nsu=urn:uaplex:demo;s=Demo.Scalars.Boolean\"\n"
                           "normal_value = true\n");
    Recorder rec;
    s.services->setEventRaised(&Recorder::fn, &rec);
    const std::uint16_t ns = s.namespaceIndex("urn:test:uaplex");
    const std::uint16_t demo = s.namespaceIndex("urn:uaplex:demo");
    const ua::NodeId source = ua::stringNodeId(demo, "Demo.Scalars.Int32");
    const ua::NodeId normal = ua::stringNodeId(demo, "Demo.Scalars.Int16");
    CHECK(typeOf(s, ua::stringNodeId(ns, "Alarms.Trip")) == 10751);  // TripAlarmType
    CHECK(typeOf(s, ua::stringNodeId(ns, "Alarms.Disc")) == 10523);  // DiscreteAlarmType
    CHECK(typeOf(s, ua::stringNodeId(ns, "Alarms.Sys")) == 11753);   // SystemOffNormal...
    CHECK(nodeIdValue(s, ua::stringNodeId(ns, "Alarms.Trip.NormalState")) == "Demo.Scalars.Int16");
    // A constant normal value: NormalState names the alarm's NormalValue Variable.
    CHECK(nodeIdValue(s, ua::stringNodeId(ns, "Alarms.Disc.NormalState")) ==
          "Alarms.Disc.NormalValue");
    CHECK(s.read(ua::stringNodeId(ns, "Alarms.Disc.NormalValue")).value.value.double_ == 5.0);

    auto write = [&](const ua::NodeId& id, const ua::Variant& v) {
        rec.events.clear();
        REQUIRE(s.write(id, v) == UAPLEX_Good);
    };
    ua::Variant int16 = ua::makeVariant(ua::BuiltinType::Int16);
    int16.value.int16 = 5;
    write(normal, int16);  // -70000 against 5: the trip is active, from NormalState's change
    auto ev = eventsOf(rec, "Alarms.Trip");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].eventType == 10751);
    CHECK(ev[0].activeId);
    CHECK(ev[0].severity == 900);
    CHECK(ev[0].normalState == "Demo.Scalars.Int16");
    write(source, ua::variantInt32(5));  // normal for both
    ev = eventsOf(rec, "Alarms.Trip");
    REQUIRE(ev.size() == 1);
    CHECK_FALSE(ev[0].activeId);
    auto disc = eventsOf(rec, "Alarms.Disc");
    CHECK(disc.empty());  // never active: nothing changed
    write(source, ua::variantInt32(6));
    REQUIRE(eventsOf(rec, "Alarms.Trip").size() == 1);
    disc = eventsOf(rec, "Alarms.Disc");
    REQUIRE(disc.size() == 1);
    CHECK(disc[0].eventType == 10523);
    CHECK(disc[0].activeId);
    CHECK(disc[0].severity == 500);
    CHECK(disc[0].normalState == "Alarms.Disc.NormalValue");
    int16.value.int16 = 6;
    write(normal, int16);  // the normal value moved to the value: the trip is inactive
    ev = eventsOf(rec, "Alarms.Trip");
    REQUIRE(ev.size() == 1);
    CHECK_FALSE(ev[0].activeId);
    CHECK(eventsOf(rec, "Alarms.Disc").empty());  // a constant normal value: not affected
    write(ua::stringNodeId(demo, "Demo.Scalars.Boolean"), ua::variantBoolean(false));
    ev = eventsOf(rec, "Alarms.Sys");
    REQUIRE(ev.size() == 1);
    CHECK(ev[0].eventType == 11753);
    CHECK(ev[0].activeId);
    s.services->setEventRaised(nullptr, nullptr);
}

TEST_CASE("[[alarms]]: a setpoint or NormalState that is no numeric Variable is not served") {
    const std::string head =
        "[[alarms]]\ntype = \"exclusive_deviation\"\nhigh = 1\n"
        "source = \"nsu=urn:uaplex:demo;s=Demo.AnalogItem\"\n";
    test::Server s(
        "",
        test::nodeManagerPlugins() + head + "name = \"Missing\"\n" +
            "setpoint = \"nsu=urn:uaplex:demo;s=Nope\"\n" + head + "name = \"Text\"\n" +
            "setpoint = \"nsu=urn:uaplex:demo;s=Demo.Scalars.String\"\n" + head +
            "name = \"Folder\"\nsetpoint = \"nsu=urn:uaplex:demo;s=Demo\"\n" + head +
            "name = \"Array\"\nsetpoint = \"nsu=urn:uaplex:demo;s=Demo.Arrays.Double\"\n" + head +
            "name = \"Flag\"\n" + "setpoint = \"nsu=urn:uaplex:demo;s=Demo.Scalars.Boolean\"\n" +
            head + "name = \"Same\"\nsetpoint = \"ns=2;s=Demo.AnalogItem\"\n" +
            "[[alarms]]\nname = \"Normal\"\ntype = \"off_normal\"\n"
            "source = \"nsu=urn:uaplex:demo;s=Demo.AnalogItem\"\n"
            "normal_state = \"nsu=urn:uaplex:demo;s=Demo.Scalars.String\"\n" +
            head + "name = \"Good\"\nsetpoint = \"nsu=urn:uaplex:demo;s=Demo.Scalars.Float\"\n");
    const std::uint16_t ns = s.namespaceIndex("urn:test:uaplex");
    REQUIRE(ns != 0xFFFF);
    REQUIRE(s.namespaceIndex("urn:uaplex:demo") == 2);  // "Same" names the source by index
    for (const char* name : {"Missing", "Text", "Folder", "Array", "Flag", "Same", "Normal"}) {
        INFO(name);
        CHECK(s.read(ua::stringNodeId(ns, std::string("Alarms.") + name), 1).status ==
              UAPLEX_BadNodeIdUnknown);
    }
    CHECK(s.read(ua::stringNodeId(ns, "Alarms.Good"), 1).status == UAPLEX_Good);
}
