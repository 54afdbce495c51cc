// SPDX-License-Identifier: Apache-2.0
// The Part 9 state machines of ConditionTable, one test per model: ConditionType (Enable,
// Disable, AddComment), AcknowledgeableConditionType (Acknowledge, Confirm) and
// AlarmConditionType (ActiveState from the node manager's reports, Retain), with the event
// each transition raises and the status of each refusal.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include <uaplex/conditions/condition_table.hpp>

using namespace uaplex;
using namespace uaplex::conditions;

namespace {

// One raised event, its fields by path ("AckedState/Id") as text.
using Event = std::map<std::string, std::string>;

std::string text(const ua::Variant& v) {
    if (ua::isArray(v)) return "<array>";
    switch (ua::variantType(v)) {
        case ua::BuiltinType::Boolean:
            return v.value.boolean ? "true" : "false";
        case ua::BuiltinType::UInt16:
            return std::to_string(v.value.uint16);
        case ua::BuiltinType::Double:
            return std::to_string(v.value.double_);
        case ua::BuiltinType::StatusCode:
            return std::to_string(v.value.statuscode);
        case ua::BuiltinType::DateTime:
            return std::to_string(v.value.datetime);
        case ua::BuiltinType::String:
            return std::string(ua::view(v.value.string));
        case ua::BuiltinType::LocalizedText: {
            const auto* t = static_cast<const ua::LocalizedText*>(v.value.pointer);
            return std::string(ua::view(t->locale)) + "|" + std::string(ua::view(t->text));
        }
        case ua::BuiltinType::ByteString: {
            auto b = ua::view(v.value.bytestring);
            return std::string(b.begin(), b.end());
        }
        case ua::BuiltinType::NodeId: {
            const auto* n = static_cast<const ua::NodeId*>(v.value.pointer);
            if (n->identifier_type == UAPLEX_ID_STRING)
                return std::to_string(n->namespace_index) +
                       ";s=" + std::string(ua::view(n->identifier.string));
            return std::to_string(n->namespace_index) +
                   ";i=" + std::to_string(n->identifier.numeric);
        }
        default:
            return "?";
    }
}

struct Recorder {
    std::vector<Event> events;
    std::vector<std::string> conditionIds;
    static uaplex_status sink(void* user, const uaplex_event_spec& spec) {
        auto* self = static_cast<Recorder*>(user);
        Event e;
        for (std::uint32_t i = 0; i < spec.field_count; ++i) {
            std::string path;
            for (std::uint32_t k = 0; k < spec.fields[i].browse_path_length; ++k)
                path += (k ? "/" : "") + std::string(ua::view(spec.fields[i].browse_path[k].name));
            e[path] = text(*spec.fields[i].value);
        }
        self->events.push_back(e);
        self->conditionIds.push_back(std::string(ua::view(spec.condition_id->identifier.string)));
        return UAPLEX_Good;
    }
};

const ua::NodeId kSource = ua::stringNodeId(2, "Tank.Level");

struct Fixture {
    ConditionTable table{8};
    Recorder rec;
    ua::DateTime now = ua::dateTimeFromUnixSeconds(1'800'000'000);
    explicit Fixture(Kind kind, std::uint32_t type) {
        table.setSink(&Recorder::sink, &rec);
        REQUIRE(table.add(id(), ua::numericNodeId(0, type), kind, kSource, "Level", "HighLevel"));
    }
    static ua::NodeId id() { return ua::stringNodeId(2, "Tank.HighLevel"); }
    const Event& last() const {
        REQUIRE(!rec.events.empty());
        return rec.events.back();
    }
    std::vector<std::uint8_t> eventId() const { return table.lastEventId(id()); }
    uaplex_status call(std::uint32_t method, std::vector<std::uint8_t> eventId,
                       std::string_view comment = "", std::string_view user = "user:op") {
        ua::Variant in[2];
        in[0] = ua::makeVariant(ua::BuiltinType::ByteString);
        in[0].value.bytestring = ua::ByteString{std::int32_t(eventId.size()), eventId.data()};
        ua::LocalizedText t = ua::makeLocalizedText("en", comment);
        in[1] = ua::makeVariant(ua::BuiltinType::LocalizedText);
        in[1].value.pointer = &t;
        now += 10'000'000;
        return table.call(id(), method, in, user, now);
    }
    uaplex_status toggle(std::uint32_t method) {
        now += 10'000'000;
        return table.call(id(), method, {}, "user:op", now);
    }
    // The node manager's report: ActiveState/Id and Severity, plus a field of its own.
    uaplex_status report(bool active, std::uint16_t severity) {
        static const ua::QualifiedName active0[2] = {{0, ua::makeString("ActiveState")},
                                                     {0, ua::makeString("Id")}};
        static const ua::QualifiedName sev[1] = {{0, ua::makeString("Severity")}};
        static const ua::QualifiedName retain[1] = {{0, ua::makeString("Retain")}};
        static const ua::QualifiedName limit[1] = {{0, ua::makeString("HighLimit")}};
        ua::Variant a = ua::variantBoolean(active);
        ua::Variant s = ua::makeVariant(ua::BuiltinType::UInt16);
        s.value.uint16 = severity;
        ua::Variant r = ua::variantBoolean(true);  // kernel-owned for alarms: ignored
        ua::Variant l = ua::variantDouble(80.0);
        uaplex_event_field f[4] = {};
        f[0] = {active0, 2, 0, &a};
        f[1] = {sev, 1, 0, &s};
        f[2] = {retain, 1, 0, &r};
        f[3] = {limit, 1, 0, &l};
        uaplex_event_spec spec{};
        spec.field_count = 4;
        spec.fields = f;
        now += 10'000'000;
        return table.report(id(), spec, now);
    }
    std::string read(Field f) {
        enc::Arena arena(std::size_t(-1), 256);
        uaplex_value_alloc alloc{&arena, [](void* self, size_t size, size_t align) -> void* {
                                     return static_cast<enc::Arena*>(self)->allocate(size, align);
                                 }};
        ua::Variant v{};
        uaplex_status st = table.read(id(), f, alloc, v);
        return st == UAPLEX_Good ? text(v) : "status " + std::to_string(st);
    }
};

}  // namespace

TEST_CASE("ConditionType: Enable, Disable and AddComment with their events and refusals") {
    Fixture fx(Kind::Condition, kConditionType);
    CHECK(fx.read(Field::EnabledStateId) == "true");
    CHECK(fx.read(Field::EnabledState) == "en|Enabled");
    CHECK(fx.read(Field::ConditionName) == "HighLevel");
    CHECK(fx.read(Field::Retain) == "false");
    // A ConditionType has no AckedState, ActiveState nor Acknowledge.
    CHECK(fx.read(Field::AckedStateId) == "status " + std::to_string(UAPLEX_BadNotReadable));
    CHECK(fx.read(Field::ActiveStateId) == "status " + std::to_string(UAPLEX_BadNotReadable));
    CHECK(fx.call(kAcknowledge, {}) == UAPLEX_BadMethodInvalid);
    CHECK(fx.call(kConfirm, {}) == UAPLEX_BadMethodInvalid);
    CHECK(fx.call(4711, {}) == UAPLEX_BadMethodInvalid);
    // Not a condition: the object is refused.
    CHECK(fx.table.call(ua::stringNodeId(2, "Tank"), kEnable, {}, "u", fx.now) ==
          UAPLEX_BadNodeIdInvalid);
    CHECK(fx.toggle(kEnable) == UAPLEX_BadConditionAlreadyEnabled);
    CHECK(fx.rec.events.empty());

    // No event yet: no EventId to comment on.
    CHECK(fx.call(kAddComment, {1, 2, 3}, "x") == UAPLEX_BadEventIdUnknown);

    REQUIRE(fx.toggle(kDisable) == UAPLEX_Good);
    REQUIRE(fx.rec.events.size() == 1);
    CHECK(fx.last().at("EnabledState/Id") == "false");
    CHECK(fx.last().at("EnabledState") == "en|Disabled");
    CHECK(fx.last().at("EnabledState/TransitionTime") == std::to_string(fx.now));
    CHECK(fx.last().at("Retain") == "false");
    CHECK(fx.last().at("SourceName") == "Level");
    CHECK(fx.last().at("SourceNode") == "2;s=Tank.Level");
    CHECK(fx.last().at("BranchId") == "0;i=0");
    CHECK(fx.last().at("EventType") == "0;i=2782");
    CHECK(fx.last().at("EventId").size() == 16);
    CHECK(fx.last().count("AckedState/Id") == 0);
    CHECK(fx.rec.conditionIds.back() == "Tank.HighLevel");
    CHECK(fx.toggle(kDisable) == UAPLEX_BadConditionAlreadyDisabled);
    CHECK(fx.call(kAddComment, fx.eventId(), "while disabled") == UAPLEX_BadConditionDisabled);
    // Reports while disabled change the state but raise nothing.
    CHECK(fx.report(true, 300) == UAPLEX_Good);
    CHECK(fx.rec.events.size() == 1);
    CHECK(fx.read(Field::Severity) == "300");

    REQUIRE(fx.toggle(kEnable) == UAPLEX_Good);
    REQUIRE(fx.rec.events.size() == 2);
    CHECK(fx.last().at("EnabledState/Id") == "true");
    CHECK(fx.last().at("Severity") == "300");

    // AddComment: with a recent EventId; the comment and the user are in the event.
    auto first = fx.eventId();
    CHECK(fx.call(kAddComment, {9, 9, 9}, "wrong id") == UAPLEX_BadEventIdUnknown);
    REQUIRE(fx.call(kAddComment, first, "checked the tank", "user:alice") == UAPLEX_Good);
    CHECK(fx.last().at("Comment") == "en|checked the tank");
    CHECK(fx.last().at("ClientUserId") == "user:alice");
    CHECK(fx.read(Field::Comment) == "en|checked the tank");
    CHECK(fx.eventId() != first);
    // A comment beyond kMaxText bytes is refused, the condition's stays.
    CHECK(fx.call(kAddComment, fx.eventId(), std::string(kMaxText + 1, 'x')) ==
          UAPLEX_BadInvalidArgument);
    CHECK(fx.read(Field::Comment) == "en|checked the tank");
    // Wrong inputs.
    ua::Variant wrong[2] = {ua::variantBoolean(true), ua::variantBoolean(true)};
    CHECK(fx.table.call(Fixture::id(), kAddComment, wrong, "u", fx.now) ==
          UAPLEX_BadInvalidArgument);
    CHECK(fx.table.call(Fixture::id(), kAddComment, {wrong, 1}, "u", fx.now) ==
          UAPLEX_BadArgumentsMissing);
    CHECK(fx.table.call(Fixture::id(), kEnable, {wrong, 1}, "u", fx.now) ==
          UAPLEX_BadTooManyArguments);
}

TEST_CASE("AcknowledgeableConditionType: Acknowledge and Confirm") {
    Fixture fx(Kind::Acknowledgeable, kAcknowledgeableConditionType);
    CHECK(fx.read(Field::AckedStateId) == "true");
    CHECK(fx.read(Field::ConfirmedStateId) == "true");
    // The node manager asks for acknowledgement.
    static const ua::QualifiedName acked[2] = {{0, ua::makeString("AckedState")},
                                               {0, ua::makeString("Id")}};
    ua::Variant f = ua::variantBoolean(false);
    uaplex_event_field field{acked, 2, 0, &f};
    uaplex_event_spec spec{};
    spec.field_count = 1;
    spec.fields = &field;
    REQUIRE(fx.table.report(Fixture::id(), spec, fx.now) == UAPLEX_Good);
    CHECK(fx.last().at("AckedState/Id") == "false");
    CHECK(fx.last().at("ConfirmedState/Id") == "false");
    CHECK(fx.last().at("Retain") == "true");
    CHECK(fx.last().count("ActiveState/Id") == 0);

    auto stale = fx.eventId();
    CHECK(fx.call(kAcknowledge, {0}, "") == UAPLEX_BadEventIdUnknown);
    REQUIRE(fx.call(kAcknowledge, stale, "seen", "user:op") == UAPLEX_Good);
    CHECK(fx.last().at("AckedState/Id") == "true");
    CHECK(fx.last().at("AckedState") == "en|Acknowledged");
    CHECK(fx.last().at("AckedState/TransitionTime") == std::to_string(fx.now));
    CHECK(fx.last().at("ConfirmedState/Id") == "false");
    CHECK(fx.last().at("Retain") == "true");  // still to be confirmed
    CHECK(fx.last().at("Comment") == "en|seen");
    CHECK(fx.last().at("ClientUserId") == "user:op");
    CHECK(fx.call(kAcknowledge, fx.eventId()) == UAPLEX_BadConditionBranchAlreadyAcked);
    // The EventId is checked before the state.
    CHECK(fx.call(kAcknowledge, {1, 2, 3}) == UAPLEX_BadEventIdUnknown);

    // An empty comment leaves the condition's comment.
    REQUIRE(fx.call(kConfirm, fx.eventId(), "") == UAPLEX_Good);
    CHECK(fx.last().at("ConfirmedState/Id") == "true");
    CHECK(fx.last().at("ConfirmedState") == "en|Confirmed");
    CHECK(fx.last().at("Comment") == "en|seen");
    CHECK(fx.last().at("Retain") == "false");  // acknowledged and confirmed
    CHECK(fx.call(kConfirm, fx.eventId()) == UAPLEX_BadConditionBranchAlreadyConfirmed);

    // Disabled: Acknowledge and Confirm are refused.
    REQUIRE(fx.table.report(Fixture::id(), spec, fx.now) == UAPLEX_Good);
    REQUIRE(fx.toggle(kDisable) == UAPLEX_Good);
    CHECK(fx.last().at("Retain") == "false");
    CHECK(fx.call(kAcknowledge, fx.eventId()) == UAPLEX_BadConditionDisabled);
    CHECK(fx.call(kConfirm, fx.eventId()) == UAPLEX_BadConditionDisabled);
    REQUIRE(fx.toggle(kEnable) == UAPLEX_Good);
    CHECK(fx.last().at("Retain") == "true");  // still unacknowledged
    CHECK(fx.call(kAcknowledge, fx.eventId()) == UAPLEX_Good);
}

TEST_CASE("AlarmConditionType: ActiveState from reports, Retain, Severity and LastSeverity") {
    Fixture fx(Kind::Alarm, 9482 /* ExclusiveLevelAlarmType */);
    CHECK(fx.read(Field::ActiveStateId) == "false");
    REQUIRE(fx.report(true, 700) == UAPLEX_Good);
    const ua::DateTime activated = fx.now;
    CHECK(fx.last().at("EventType") == "0;i=9482");
    CHECK(fx.last().at("ActiveState/Id") == "true");
    CHECK(fx.last().at("ActiveState") == "en|Active");
    CHECK(fx.last().at("ActiveState/TransitionTime") == std::to_string(activated));
    CHECK(fx.last().at("AckedState/Id") == "false");
    CHECK(fx.last().at("ConfirmedState/Id") == "false");
    CHECK(fx.last().at("Retain") == "true");
    CHECK(fx.last().at("Severity") == "700");
    CHECK(fx.last().at("LastSeverity") == "0");
    CHECK(fx.last().at("Quality") == "0");
    CHECK(fx.last().at("HighLimit") == std::to_string(80.0));  // passed on as reported

    REQUIRE(fx.call(kAcknowledge, fx.eventId(), "on it") == UAPLEX_Good);
    CHECK(fx.last().at("AckedState/Id") == "true");
    CHECK(fx.last().at("ActiveState/Id") == "true");
    CHECK(fx.last().at("ActiveState/TransitionTime") == std::to_string(activated));
    CHECK(fx.last().at("HighLimit") == std::to_string(80.0));  // kept from the report
    REQUIRE(fx.call(kConfirm, fx.eventId()) == UAPLEX_Good);
    CHECK(fx.last().at("Retain") == "true");  // still active

    // A severity change: LastSeverity is the one before.
    REQUIRE(fx.report(true, 900) == UAPLEX_Good);
    CHECK(fx.last().at("Severity") == "900");
    CHECK(fx.last().at("LastSeverity") == "700");
    CHECK(fx.last().at("AckedState/Id") == "true");  // the same occurrence

    // Back to normal, acknowledged and confirmed: Retain false.
    REQUIRE(fx.report(false, 900) == UAPLEX_Good);
    CHECK(fx.last().at("ActiveState/Id") == "false");
    CHECK(fx.last().at("ActiveState") == "en|Inactive");
    CHECK(fx.last().at("Retain") == "false");

    // Active again: a new occurrence to acknowledge and confirm; inactive and unacknowledged
    // it stays retained.
    REQUIRE(fx.report(true, 900) == UAPLEX_Good);
    CHECK(fx.last().at("AckedState/Id") == "false");
    REQUIRE(fx.report(false, 900) == UAPLEX_Good);
    CHECK(fx.last().at("Retain") == "true");
    REQUIRE(fx.call(kAcknowledge, fx.eventId()) == UAPLEX_Good);
    CHECK(fx.last().at("Retain") == "true");  // unconfirmed
    REQUIRE(fx.call(kConfirm, fx.eventId()) == UAPLEX_Good);
    CHECK(fx.last().at("Retain") == "false");
    CHECK(fx.read(Field::Retain) == "false");
    // Severity out of 1..1000 is clamped.
    REQUIRE(fx.report(false, 5000) == UAPLEX_Good);
    CHECK(fx.last().at("Severity") == "1000");
}

TEST_CASE("ConditionTable: bounded, unknown conditions, duplicate ids") {
    ConditionTable table(1);
    const ua::NodeId a = ua::stringNodeId(2, "A"), b = ua::stringNodeId(2, "B");
    REQUIRE(table.add(a, ua::numericNodeId(0, kAlarmConditionType), Kind::Alarm, a, "A", "A"));
    CHECK_FALSE(table.add(a, ua::numericNodeId(0, kAlarmConditionType), Kind::Alarm, a, "A", "A"));
    CHECK_FALSE(table.add(b, ua::numericNodeId(0, kAlarmConditionType), Kind::Alarm, b, "B", "B"));
    CHECK(table.size() == 1);
    uaplex_event_spec spec{};
    CHECK(table.report(b, spec, 0) == UAPLEX_BadNodeIdUnknown);
    CHECK(table.report(a, spec, 0) == UAPLEX_Good);  // no sink: nothing raised
    CHECK(table.lastEventId(a).size() == 16);
}

TEST_CASE("AlarmConditionType: shelving (TimedShelve, OneShotShelve, Unshelve) on ShelvingState") {
    Fixture fx(Kind::Alarm, kAlarmConditionType);
    const ua::NodeId shelving = ua::stringNodeId(2, "Tank.HighLevel.ShelvingState");
    REQUIRE(fx.table.setShelvingObject(Fixture::id(), shelving));
    CHECK_FALSE(fx.table.setShelvingObject(Fixture::id(), Fixture::id()));
    CHECK(fx.read(Field::ShelvingStateCurrentStateId) == "0;i=2930");
    CHECK(fx.read(Field::ShelvingStateCurrentState) == "en|Unshelved");
    CHECK(fx.read(Field::SuppressedOrShelved) == "false");
    CHECK(fx.read(Field::ShelvingState) == "status " + std::to_string(UAPLEX_BadNotReadable));
    auto shelve = [&](std::uint32_t method, std::vector<ua::Variant> in) {
        fx.now += 10'000'000;
        return fx.table.call(shelving, method, in, "user:op", fx.now);
    };
    const ua::Variant minute = ua::variantDouble(60'000);
    // The shelving methods are the ShelvingState's, the others the alarm's.
    CHECK(fx.table.call(Fixture::id(), kTimedShelve, {&minute, 1}, "u", fx.now) ==
          UAPLEX_BadMethodInvalid);
    CHECK(fx.table.call(shelving, kEnable, {}, "u", fx.now) == UAPLEX_BadMethodInvalid);
    CHECK(shelve(kUnshelve, {}) == UAPLEX_BadConditionNotShelved);
    CHECK(shelve(kTimedShelve, {}) == UAPLEX_BadArgumentsMissing);
    CHECK(shelve(kTimedShelve, {ua::variantBoolean(true)}) == UAPLEX_BadInvalidArgument);
    CHECK(shelve(kTimedShelve, {ua::variantDouble(0)}) == UAPLEX_BadShelvingTimeOutOfRange);
    CHECK(shelve(kTimedShelve, {ua::variantDouble(-5)}) == UAPLEX_BadShelvingTimeOutOfRange);
    CHECK(shelve(kTimedShelve, {ua::variantDouble(kMaxShelvingTimeMs * 2)}) ==
          UAPLEX_BadShelvingTimeOutOfRange);
    CHECK(shelve(kOneShotShelve, {minute}) == UAPLEX_BadTooManyArguments);
    CHECK(fx.rec.events.empty());

    REQUIRE(shelve(kTimedShelve, {minute}) == UAPLEX_Good);
    const ua::DateTime shelvedAt = fx.now;
    CHECK(fx.last().at("ShelvingState/CurrentState/Id") == "0;i=2932");
    CHECK(fx.last().at("ShelvingState/CurrentState") == "en|TimedShelved");
    CHECK(fx.last().at("ShelvingState/UnshelveTime") == std::to_string(60'000.0));
    CHECK(fx.last().at("SuppressedOrShelved") == "true");
    CHECK(fx.last().at("ClientUserId") == "user:op");
    CHECK(shelve(kTimedShelve, {minute}) == UAPLEX_BadConditionAlreadyShelved);
    // The ShelvingTime runs out: unshelved with an event, not before.
    std::size_t events = fx.rec.events.size();
    fx.table.expire(shelvedAt + 59 * 10'000'000LL);
    CHECK(fx.rec.events.size() == events);
    fx.table.expire(shelvedAt + 60 * 10'000'000LL);
    REQUIRE(fx.rec.events.size() == events + 1);
    CHECK(fx.last().at("ShelvingState/CurrentState/Id") == "0;i=2930");
    CHECK(fx.last().at("SuppressedOrShelved") == "false");
    CHECK(fx.last().at("ShelvingState/UnshelveTime") == std::to_string(0.0));

    // OneShotShelve: ends when the occurrence ends (the alarm returns to normal).
    REQUIRE(shelve(kOneShotShelve, {}) == UAPLEX_Good);
    CHECK(fx.last().at("ShelvingState/CurrentState/Id") == "0;i=2933");
    CHECK(shelve(kOneShotShelve, {}) == UAPLEX_BadConditionAlreadyShelved);
    REQUIRE(fx.report(true, 500) == UAPLEX_Good);
    CHECK(fx.last().at("ShelvingState/CurrentState/Id") == "0;i=2933");
    REQUIRE(fx.report(false, 500) == UAPLEX_Good);
    CHECK(fx.last().at("ShelvingState/CurrentState/Id") == "0;i=2930");

    // From a TimedShelve to a OneShotShelve, then Unshelve.
    REQUIRE(shelve(kTimedShelve, {minute}) == UAPLEX_Good);
    REQUIRE(shelve(kOneShotShelve, {}) == UAPLEX_Good);
    CHECK(fx.last().at("ShelvingState/UnshelveTime") == std::to_string(0.0));
    fx.table.expire(fx.now + 120 * 10'000'000LL);  // no timed shelve left to end
    CHECK(fx.last().at("ShelvingState/CurrentState/Id") == "0;i=2933");
    REQUIRE(shelve(kUnshelve, {}) == UAPLEX_Good);
    CHECK(fx.last().at("ShelvingState/CurrentState/Id") == "0;i=2930");
    CHECK(shelve(kUnshelve, {}) == UAPLEX_BadConditionNotShelved);
}

TEST_CASE(
    "Methods: the last kRecentEventIds EventIds, Confirm after Acknowledge, reported fields") {
    Fixture fx(Kind::Alarm, kAlarmConditionType);
    REQUIRE(fx.report(true, 500) == UAPLEX_Good);
    const auto activation = fx.eventId();
    // Confirm of an unacknowledged state (Part 9 4.3, the Confirmed Acknowledge model).
    CHECK(fx.call(kConfirm, activation) == UAPLEX_BadInvalidState);
    CHECK(fx.read(Field::ConfirmedStateId) == "false");
    // Seven more events: the activation's EventId is the oldest of the last eight.
    for (int i = 0; i < int(kRecentEventIds) - 1; ++i)
        REQUIRE(fx.call(kAddComment, fx.eventId(), "note") == UAPLEX_Good);
    REQUIRE(fx.call(kAcknowledge, activation, "seen") == UAPLEX_Good);
    CHECK(fx.last().at("AckedState/Id") == "true");
    // Now it is the ninth last: unknown.
    CHECK(fx.call(kConfirm, activation) == UAPLEX_BadEventIdUnknown);
    // The method's event carries what the node manager reported (HighLimit), also after
    // later reports without it, which replace only what they bring.
    CHECK(fx.last().at("HighLimit") == std::to_string(80.0));
    REQUIRE(fx.call(kConfirm, fx.eventId()) == UAPLEX_Good);
    CHECK(fx.last().at("HighLimit") == std::to_string(80.0));
    static const ua::QualifiedName limit[1] = {{0, ua::makeString("HighLimit")}};
    ua::Variant l = ua::variantDouble(95.0);
    uaplex_event_field f{limit, 1, 0, &l};
    uaplex_event_spec spec{};
    spec.field_count = 1;
    spec.fields = &f;
    REQUIRE(fx.table.report(Fixture::id(), spec, fx.now) == UAPLEX_Good);
    CHECK(fx.last().at("HighLimit") == std::to_string(95.0));
    REQUIRE(fx.toggle(kDisable) == UAPLEX_Good);
    REQUIRE(fx.toggle(kEnable) == UAPLEX_Good);
    CHECK(fx.last().at("HighLimit") == std::to_string(95.0));
    // A field too large to keep is not passed on; the others stay.
    std::vector<double> big(kMaxReportedValue / sizeof(double) + 1, 1.0);
    ua::Variant arr = ua::makeVariant(ua::BuiltinType::Double);
    arr.encoding |= UAPLEX_VARIANT_ARRAY;
    arr.array_length = std::int32_t(big.size());
    arr.value.pointer = big.data();
    static const ua::QualifiedName huge[1] = {{2, ua::makeString("Samples")}};
    uaplex_event_field g{huge, 1, 0, &arr};
    spec.fields = &g;
    REQUIRE(fx.table.report(Fixture::id(), spec, fx.now) == UAPLEX_Good);
    CHECK(fx.last().count("Samples") == 0);
    CHECK(fx.last().at("HighLimit") == std::to_string(95.0));
}

TEST_CASE("A plugin's callback: after the checks, before the change, may refuse") {
    Fixture fx(Kind::Alarm, kAlarmConditionType);
    struct Seen {
        std::vector<std::uint32_t> methods;
        std::string comment, user;
        std::size_t eventIdSize = 0;
        double shelvingMs = 0;
        uaplex_status answer = UAPLEX_Good;
    } seen;
    auto fn = [](void* user, const uaplex_condition_call* call) -> uaplex_status {
        auto* s = static_cast<Seen*>(user);
        s->methods.push_back(call->method);
        s->user.assign(call->user.data, call->user.len);
        s->eventIdSize = call->event_id.len;
        s->comment = call->comment ? std::string(ua::view(call->comment->text)) : "";
        s->shelvingMs = call->shelving_time_ms;
        return s->answer;
    };
    REQUIRE(fx.table.setCallback(Fixture::id(), fn, &seen));
    CHECK_FALSE(fx.table.setCallback(ua::stringNodeId(2, "Nope"), fn, &seen));
    REQUIRE(fx.report(true, 500) == UAPLEX_Good);
    // Refused by the kernel's checks: the plugin never hears of it.
    CHECK(fx.call(kAcknowledge, {1, 2}) == UAPLEX_BadEventIdUnknown);
    CHECK(seen.methods.empty());
    // Refused by the plugin: its status, nothing changes, no event.
    seen.answer = UAPLEX_BadUserAccessDenied;
    const std::size_t events = fx.rec.events.size();
    CHECK(fx.call(kAcknowledge, fx.eventId(), "not you", "user:guest") ==
          UAPLEX_BadUserAccessDenied);
    CHECK(fx.rec.events.size() == events);
    CHECK(fx.read(Field::AckedStateId) == "false");
    REQUIRE(seen.methods.size() == 1);
    CHECK(seen.methods[0] == kAcknowledge);
    CHECK(seen.comment == "not you");
    CHECK(seen.user == "user:guest");
    CHECK(seen.eventIdSize == 16);
    // Allowed: the change happens.
    seen.answer = UAPLEX_Good;
    REQUIRE(fx.call(kAcknowledge, fx.eventId(), "on it", "user:op") == UAPLEX_Good);
    CHECK(fx.last().at("AckedState/Id") == "true");
    CHECK(seen.user == "user:op");
    CHECK(seen.comment == "on it");
    // Shelving and Disable reach it too.
    ua::Variant ms = ua::variantDouble(60000);
    const ua::NodeId shelving = ua::stringNodeId(2, "Tank.HighLevel.ShelvingState");
    REQUIRE(fx.table.setShelvingObject(Fixture::id(), shelving));
    REQUIRE(fx.table.call(shelving, kTimedShelve, {&ms, 1}, "user:op", fx.now) == UAPLEX_Good);
    CHECK(seen.methods.back() == kTimedShelve);
    CHECK(seen.shelvingMs == 60000);
    CHECK(seen.eventIdSize == 0);
    REQUIRE(fx.toggle(kDisable) == UAPLEX_Good);
    CHECK(seen.methods.back() == kDisable);
}

TEST_CASE("Branches: an unacknowledged state kept when the alarm changes, acked on its own") {
    Fixture fx(Kind::Alarm, kAlarmConditionType);
    REQUIRE(fx.table.setBranching(Fixture::id(), true));
    CHECK_FALSE(fx.table.setBranching(ua::stringNodeId(2, "Nope"), true));
    REQUIRE(fx.report(true, 700) == UAPLEX_Good);
    CHECK(fx.last().at("BranchId") == "0;i=0");  // the trunk: null
    const auto activation = fx.eventId();
    // Back to normal while unacknowledged: the active state becomes a branch.
    const std::size_t before = fx.rec.events.size();
    REQUIRE(fx.report(false, 700) == UAPLEX_Good);
    REQUIRE(fx.rec.events.size() == before + 2);
    const Event branch = fx.rec.events[before];
    const Event trunk = fx.rec.events[before + 1];
    CHECK(branch.at("BranchId") != "0;i=0");
    CHECK(branch.at("ActiveState/Id") == "true");
    CHECK(branch.at("AckedState/Id") == "false");
    CHECK(branch.at("Retain") == "true");
    CHECK(branch.at("HighLimit") == std::to_string(80.0));
    CHECK(trunk.at("BranchId") == "0;i=0");
    CHECK(trunk.at("ActiveState/Id") == "false");
    CHECK(trunk.at("AckedState/Id") == "true");  // the occurrence is the branch's
    CHECK(trunk.at("Retain") == "true");         // while a branch exists
    CHECK(fx.table.branchCount(Fixture::id()) == 1);
    // The trunk's nodes show the trunk.
    CHECK(fx.read(Field::ActiveStateId) == "false");
    CHECK(fx.read(Field::AckedStateId) == "true");
    // The trunk's EventIds are the branch's now: the activation's names the branch.
    std::vector<std::uint8_t> branchEventId(branch.at("EventId").begin(),
                                            branch.at("EventId").end());
    CHECK(fx.call(kAcknowledge, fx.eventId()) == UAPLEX_BadConditionBranchAlreadyAcked);
    CHECK(fx.call(kConfirm, branchEventId) == UAPLEX_BadInvalidState);  // not acked yet
    REQUIRE(fx.call(kAcknowledge, activation, "the earlier one") == UAPLEX_Good);
    CHECK(fx.last().at("BranchId") == branch.at("BranchId"));
    CHECK(fx.last().at("AckedState/Id") == "true");
    CHECK(fx.last().at("Comment") == "en|the earlier one");
    CHECK(fx.last().at("Retain") == "true");  // still to be confirmed
    CHECK(fx.read(Field::Comment) == "|");    // the trunk's comment is untouched
    const std::vector<std::uint8_t> ackId(fx.last().at("EventId").begin(),
                                          fx.last().at("EventId").end());
    CHECK(fx.call(kAcknowledge, ackId) == UAPLEX_BadConditionBranchAlreadyAcked);
    // Confirmed: the branch goes (its event Retain false), and the trunk is no longer
    // retained (its own event says so).
    const std::size_t n = fx.rec.events.size();
    REQUIRE(fx.call(kConfirm, ackId, "done") == UAPLEX_Good);
    REQUIRE(fx.rec.events.size() == n + 2);
    CHECK(fx.rec.events[n].at("BranchId") == branch.at("BranchId"));
    CHECK(fx.rec.events[n].at("Retain") == "false");
    CHECK(fx.rec.events[n + 1].at("BranchId") == "0;i=0");
    CHECK(fx.rec.events[n + 1].at("Retain") == "false");
    CHECK(fx.table.branchCount(Fixture::id()) == 0);
    CHECK(fx.call(kConfirm, branchEventId) == UAPLEX_BadEventIdUnknown);  // gone

    // Bounded: at most kMaxBranches; beyond, the change makes none.
    for (std::size_t i = 0; i < kMaxBranches + 2; ++i) {
        REQUIRE(fx.report(true, 700) == UAPLEX_Good);
        REQUIRE(fx.report(false, 700) == UAPLEX_Good);
    }
    CHECK(fx.table.branchCount(Fixture::id()) == kMaxBranches);
    // Without branching nothing of the kind happens.
    Fixture plain(Kind::Alarm, kAlarmConditionType);
    REQUIRE(plain.report(true, 700) == UAPLEX_Good);
    const std::size_t m = plain.rec.events.size();
    REQUIRE(plain.report(false, 700) == UAPLEX_Good);
    CHECK(plain.rec.events.size() == m + 1);
    CHECK(plain.table.branchCount(Fixture::id()) == 0);
}
