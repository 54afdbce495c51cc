// SPDX-License-Identifier: Apache-2.0
// [[alarms]] (kernel/services/src/config_alarms.cpp): a configured level alarm on a stored
// Variable gets its nodes (type, limits, InputNode, LimitState / the limit state variables,
// HasCondition from the source), is evaluated on each write of the source, and raises its
// events through the ConditionTable (ActiveState/Id, LimitState/CurrentState/Id, Severity,
// Retain); Acknowledge works on it.
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
};

struct Recorder {
    std::vector<Captured> events;
    static void fn(void* user, std::span<const std::uint64_t>, const subscription::EventView& e) {
        auto* self = static_cast<Recorder*>(user);
        if (e.conditionId == nullptr) return;
        Captured c;
        if (e.conditionId->identifier_type == UAPLEX_ID_STRING)
            c.condition = std::string(ua::view(e.conditionId->identifier.string));
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
