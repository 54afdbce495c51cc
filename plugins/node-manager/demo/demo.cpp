// SPDX-License-Identifier: Apache-2.0
// The demo layout of docs/nodemanagers.md in namespace urn:uaplex:demo: a variable of every
// built-in type (scalar and 3-element array), an AnalogItem with EURange and
// EngineeringUnits, three values that change every 100 ms (Demo.Pushed pushed through
// value_changed while monitored), the methods Multiply and Reset, and
// events: the notifier Demo.Events raises a BaseEventType event every event_interval_ms and
// holds two alarms, conditions the kernel serves (their state variables, Acknowledge,
// Confirm, ...): Demo.Events.HighAlarm (AlarmConditionType) on Demo.Dynamic, active while the
// sine is above 50, and Demo.Events.LevelAlarm (ExclusiveLevelAlarmType) on the writable
// Demo.Level, active while it is above its HighLimit 80.
#include <array>
#include <atomic>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <string>

#include "uaplex/cpp/address_space.hpp"
#include "uaplex/cpp/events.hpp"

namespace {

using namespace uaplex::sdk;

constexpr uint32_t kOrganizes = 35, kHasComponent = 47, kHasProperty = 46;
constexpr uint32_t kFolderType = 61, kPropertyType = 68, kAnalogItemType = 2368;
constexpr uint32_t kReadWrite = 3, kReadOnly = 1;
constexpr uint32_t kRange = 884, kEUInformation = 887;
constexpr uint32_t kBaseObjectType = 58, kBaseEventType = 2041, kAlarmConditionType = 2915;
constexpr uint32_t kExclusiveLevelAlarmType = 9482;
constexpr double kLevelHighLimit = 80.0;
constexpr uint32_t kHasEventSource = 36, kHasNotifier = 48;
constexpr uint32_t kHasCondition = 9006, kServer = 2253;
constexpr uint16_t kEventSeverity = 500, kAlarmSeverity = 700;

struct TypeInfo {
    const char* name;
    uint8_t builtin;    // Variant type of the values
    uint32_t dataType;  // ns0 DataType NodeId
};

constexpr std::array<TypeInfo, 25> kTypes{{
    {"Boolean", UAPLEX_TYPE_BOOLEAN, 1},
    {"SByte", UAPLEX_TYPE_SBYTE, 2},
    {"Byte", UAPLEX_TYPE_BYTE, 3},
    {"Int16", UAPLEX_TYPE_INT16, 4},
    {"UInt16", UAPLEX_TYPE_UINT16, 5},
    {"Int32", UAPLEX_TYPE_INT32, 6},
    {"UInt32", UAPLEX_TYPE_UINT32, 7},
    {"Int64", UAPLEX_TYPE_INT64, 8},
    {"UInt64", UAPLEX_TYPE_UINT64, 9},
    {"Float", UAPLEX_TYPE_FLOAT, 10},
    {"Double", UAPLEX_TYPE_DOUBLE, 11},
    {"String", UAPLEX_TYPE_STRING, 12},
    {"DateTime", UAPLEX_TYPE_DATETIME, 13},
    {"Guid", UAPLEX_TYPE_GUID, 14},
    {"ByteString", UAPLEX_TYPE_BYTESTRING, 15},
    {"XmlElement", UAPLEX_TYPE_XMLELEMENT, 16},
    {"NodeId", UAPLEX_TYPE_NODEID, 17},
    {"ExpandedNodeId", UAPLEX_TYPE_EXPANDEDNODEID, 18},
    {"StatusCode", UAPLEX_TYPE_STATUSCODE, 19},
    {"QualifiedName", UAPLEX_TYPE_QUALIFIEDNAME, 20},
    {"LocalizedText", UAPLEX_TYPE_LOCALIZEDTEXT, 21},
    {"Structure", UAPLEX_TYPE_EXTENSIONOBJECT, 22},
    {"DataValue", UAPLEX_TYPE_DATAVALUE, 23},
    {"BaseDataType", UAPLEX_TYPE_VARIANT, 24},
    {"DiagnosticInfo", UAPLEX_TYPE_DIAGNOSTICINFO, 25},
}};

// Keeps the storage that initial values point to alive while the nodes are added.
class Keep {
  public:
    template <class T>
    T* one(const T& v) {
        auto p = std::make_shared<T>(v);
        items_.push_back(p);
        return p.get();
    }
    template <class T>
    T* three(const T& a, const T& b, const T& c) {
        auto p = std::make_shared<std::array<T, 3>>(std::array<T, 3>{a, b, c});
        items_.push_back(p);
        return p->data();
    }
    BinaryBody* body(const BinaryBody& b) { return one(b); }

  private:
    std::deque<std::shared_ptr<void>> items_;
};

uaplex_guid guid(uint32_t d1) {
    uaplex_guid g{};
    g.data1 = d1;
    g.data2 = 0x1234;
    g.data3 = 0x5678;
    for (uint8_t i = 0; i < 8; ++i) g.data4[i] = i;
    return g;
}

uaplex_bytestring bytes(const char* s) {
    return {static_cast<int32_t>(std::strlen(s)), reinterpret_cast<const uint8_t*>(s)};
}

uaplex_expandednodeid expanded(uint16_t ns, uint32_t id) {
    uaplex_expandednodeid e{};
    e.node_id = numeric_id(ns, id);
    e.namespace_uri = {-1, nullptr};
    return e;
}

uaplex_extensionobject range(Keep& keep, double low, double high) {
    return keep.body(range_body(low, high))->extension_object(kRangeBinary);
}

uaplex_diagnosticinfo diagnostic(int32_t symbolic) {
    uaplex_diagnosticinfo d{};
    d.mask = UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID;
    d.symbolic_id = symbolic;
    return d;
}

// The initial scalar and array value of one built-in type.
std::pair<uaplex_variant, uaplex_variant> initialValues(uint8_t t, Keep& keep) {
    switch (t) {
        case UAPLEX_TYPE_BOOLEAN:
            return {scalar<bool>(t, true), array(t, 3, keep.three<bool>(true, false, true))};
        case UAPLEX_TYPE_SBYTE:
            return {scalar<int8_t>(t, -5), array(t, 3, keep.three<int8_t>(-1, 0, 1))};
        case UAPLEX_TYPE_BYTE:
            return {scalar<uint8_t>(t, 5), array(t, 3, keep.three<uint8_t>(1, 2, 3))};
        case UAPLEX_TYPE_INT16:
            return {scalar<int16_t>(t, -300), array(t, 3, keep.three<int16_t>(-1, 0, 1))};
        case UAPLEX_TYPE_UINT16:
            return {scalar<uint16_t>(t, 300), array(t, 3, keep.three<uint16_t>(1, 2, 3))};
        case UAPLEX_TYPE_INT32:
            return {scalar<int32_t>(t, -70000), array(t, 3, keep.three<int32_t>(-1, 0, 1))};
        case UAPLEX_TYPE_UINT32:
            return {scalar<uint32_t>(t, 70000), array(t, 3, keep.three<uint32_t>(1, 2, 3))};
        case UAPLEX_TYPE_INT64:
            return {scalar<int64_t>(t, -5000000000LL), array(t, 3, keep.three<int64_t>(-1, 0, 1))};
        case UAPLEX_TYPE_UINT64:
            return {scalar<uint64_t>(t, 5000000000ULL), array(t, 3, keep.three<uint64_t>(1, 2, 3))};
        case UAPLEX_TYPE_FLOAT:
            return {scalar<float>(t, 1.5f), array(t, 3, keep.three<float>(0.5f, 1.5f, 2.5f))};
        case UAPLEX_TYPE_DOUBLE:
            return {scalar<double>(t, 2.25), array(t, 3, keep.three<double>(0.25, 1.25, 2.25))};
        case UAPLEX_TYPE_STRING:
        case UAPLEX_TYPE_XMLELEMENT: {
            bool xml = t == UAPLEX_TYPE_XMLELEMENT;
            return {scalar(t, ua_string(xml ? "<demo/>" : "uaplex")),
                    array(t, 3,
                          keep.three(ua_string(xml ? "<a/>" : "a"), ua_string(xml ? "<b/>" : "b"),
                                     ua_string(xml ? "<c/>" : "c")))};
        }
        case UAPLEX_TYPE_DATETIME: {
            // 2026-01-01T00:00:00Z
            constexpr int64_t kSecond = UAPLEX_DATETIME_TICKS_PER_SECOND;
            int64_t ticks = UAPLEX_DATETIME_UNIX_EPOCH + 1767225600LL * kSecond;
            return {scalar<int64_t>(t, ticks),
                    array(t, 3, keep.three<int64_t>(ticks, ticks + kSecond, ticks + 2 * kSecond))};
        }
        case UAPLEX_TYPE_GUID:
            return {scalar(t, guid(1)), array(t, 3, keep.three(guid(2), guid(3), guid(4)))};
        case UAPLEX_TYPE_BYTESTRING:
            return {scalar(t, bytes("\x01\x02\x03")),
                    array(t, 3, keep.three(bytes("a"), bytes("bc"), bytes("def")))};
        case UAPLEX_TYPE_NODEID:
            return {
                boxed(t, keep.one(numeric_id(0, 85))),
                array(t, 3, keep.three(numeric_id(0, 84), numeric_id(0, 85), numeric_id(0, 86)))};
        case UAPLEX_TYPE_EXPANDEDNODEID:
            return {boxed(t, keep.one(expanded(0, 85))),
                    array(t, 3, keep.three(expanded(0, 84), expanded(0, 85), expanded(0, 86)))};
        case UAPLEX_TYPE_STATUSCODE:
            return {scalar<uint32_t>(t, 0),
                    array(t, 3, keep.three<uint32_t>(0, 0x40000000u, 0x80000000u))};
        case UAPLEX_TYPE_QUALIFIEDNAME:
            return {boxed(t, keep.one(qualified_name(0, "Name"))),
                    array(t, 3,
                          keep.three(qualified_name(0, "a"), qualified_name(0, "b"),
                                     qualified_name(0, "c")))};
        case UAPLEX_TYPE_LOCALIZEDTEXT:
            return {boxed(t, keep.one(localized_text("en", "text"))),
                    array(t, 3,
                          keep.three(localized_text("en", "a"), localized_text("en", "b"),
                                     localized_text("en", "c")))};
        case UAPLEX_TYPE_EXTENSIONOBJECT:
            return {
                boxed(t, keep.one(range(keep, 0, 1))),
                array(t, 3, keep.three(range(keep, 0, 1), range(keep, 1, 2), range(keep, 2, 3)))};
        case UAPLEX_TYPE_DATAVALUE: {
            auto dv = [](double d) { return data_value(scalar<double>(UAPLEX_TYPE_DOUBLE, d)); };
            return {boxed(t, keep.one(dv(1.0))),
                    array(t, 3, keep.three(dv(1.0), dv(2.0), dv(3.0)))};
        }
        case UAPLEX_TYPE_VARIANT: {
            // A BaseDataType scalar is a value of any type; the array is an array of Variants.
            auto i32 = [](int32_t x) { return scalar<int32_t>(UAPLEX_TYPE_INT32, x); };
            return {i32(0), array(t, 3, keep.three(i32(0), i32(1), i32(2)))};
        }
        case UAPLEX_TYPE_DIAGNOSTICINFO:
            return {boxed(t, keep.one(diagnostic(1))),
                    array(t, 3, keep.three(diagnostic(1), diagnostic(2), diagnostic(3)))};
        default:
            return {};
    }
}

class Demo : public StoreNodeManager {
  public:
    Demo(Context ctx, const uaplex_node_manager_params& params) : StoreNodeManager(ctx, params) {
        ctx_.check_known_keys({"update_interval_ms", "event_interval_ms"});
        interval_ms_ = uint64_t(ctx_.config_int("update_interval_ms").value_or(100));
        if (interval_ms_ == 0) interval_ms_ = 100;
        event_interval_ms_ = uint64_t(ctx_.config_int("event_interval_ms").value_or(1000));
        if (event_interval_ms_ == 0) event_interval_ms_ = 1000;
    }

    uaplex_status start() override {
        AddressSpace as = space();
        if (!as.available()) return UAPLEX_BadNotSupported;
        if (uaplex_status st = as.register_namespace("urn:uaplex:demo", &ns_); st != UAPLEX_Good)
            return st;
        if (uaplex_status st = build(as); st != UAPLEX_Good) return st;
        ctx_.api()->monotonic_ns(ctx_.raw(), &start_ns_);
        if (uaplex_status st =
                ctx_.api()->timer_start(ctx_.raw(), event_interval_ms_, event_interval_ms_,
                                        &Demo::eventTick, this, &event_timer_);
            st != UAPLEX_Good)
            return st;
        return ctx_.api()->timer_start(ctx_.raw(), interval_ms_, interval_ms_, &Demo::tick, this,
                                       &timer_);
    }

    uaplex_status stop() override {
        if (timer_ != nullptr) ctx_.api()->timer_cancel(ctx_.raw(), timer_);
        if (event_timer_ != nullptr) ctx_.api()->timer_cancel(ctx_.raw(), event_timer_);
        timer_ = event_timer_ = nullptr;
        return UAPLEX_Good;
    }

  private:
    uaplex_nodeid id(std::string_view name) {
        names_.emplace_back(name);
        return string_id(ns_, names_.back());
    }

    uaplex_status add(const AddressSpace& as, NodeSpec spec) { return as.add(spec.get()); }

    uaplex_status build(const AddressSpace& as) {
        Keep keep;
        uaplex_status st = UAPLEX_Good;
        auto check = [&](uaplex_status s) {
            if (st == UAPLEX_Good) st = s;
        };
        uaplex_nodeid demo = id("Demo");
        check(add(as, object_spec(demo, numeric_id(0, 85), kOrganizes, qualified_name(ns_, "Demo"),
                                  kFolderType)));
        for (const char* kind : {"Scalars", "Arrays"}) {
            bool isArray = kind[0] == 'A';
            uaplex_nodeid folder = id(std::string("Demo.") + kind);
            check(add(
                as, object_spec(folder, demo, kOrganizes, qualified_name(ns_, kind), kFolderType)));
            for (const TypeInfo& t : kTypes) {
                auto [scalarValue, arrayValue] = initialValues(t.builtin, keep);
                uaplex_datavalue value = data_value(isArray ? arrayValue : scalarValue);
                NodeSpec v = variable_spec(id(std::string("Demo.") + kind + "." + t.name), folder,
                                           kOrganizes, qualified_name(ns_, t.name), t.dataType,
                                           isArray ? 1 : -1, kReadWrite);
                static const uint32_t dims[1] = {0};
                if (isArray) {
                    v.spec.array_dimensions_count = 1;
                    v.spec.array_dimensions = dims;
                }
                v.spec.value = &value;
                check(add(as, v));
            }
        }

        // AnalogItem (Part 8 5.3.2) with its EURange and EngineeringUnits properties.
        uaplex_nodeid analog = id("Demo.AnalogItem");
        {
            NodeSpec v = variable_spec(analog, demo, kOrganizes, qualified_name(ns_, "AnalogItem"),
                                       11 /* Double */, -1, kReadWrite);
            v.type_definition = numeric_id(0, kAnalogItemType);
            uaplex_datavalue value = data_value(scalar<double>(UAPLEX_TYPE_DOUBLE, 42.0));
            v.spec.value = &value;
            // Clients may rename and describe it (WriteMask DisplayName and Description).
            v.spec.write_mask = (1u << 6) | (1u << 5);
            check(add(as, v));
        }
        {
            uaplex_extensionobject eo = range(keep, 0, 100);
            uaplex_datavalue value = data_value(boxed(UAPLEX_TYPE_EXTENSIONOBJECT, &eo));
            NodeSpec p = variable_spec(id("Demo.AnalogItem.EURange"), analog, kHasProperty,
                                       qualified_name(0, "EURange"), kRange, -1, kReadOnly);
            p.type_definition = numeric_id(0, kPropertyType);
            p.spec.value = &value;
            check(add(as, p));
        }
        {
            uaplex_extensionobject eo = keep.body(eu_information_body("CEL",
                                                                      "\xC2\xB0"
                                                                      "C",
                                                                      "degree Celsius"))
                                            ->extension_object(kEUInformationBinary);
            uaplex_datavalue value = data_value(boxed(UAPLEX_TYPE_EXTENSIONOBJECT, &eo));
            NodeSpec p =
                variable_spec(id("Demo.AnalogItem.EngineeringUnits"), analog, kHasProperty,
                              qualified_name(0, "EngineeringUnits"), kEUInformation, -1, kReadOnly);
            p.type_definition = numeric_id(0, kPropertyType);
            p.spec.value = &value;
            check(add(as, p));
        }

        // Written with a source timestamp and status (AccessLevel StatusWrite 0x20 and
        // TimestampWrite 0x40): a client fills a history with values of times it chooses.
        {
            uaplex_datavalue value = data_value(scalar<double>(UAPLEX_TYPE_DOUBLE, 0.0));
            NodeSpec v = variable_spec(id("Demo.Measured"), demo, kOrganizes,
                                       qualified_name(ns_, "Measured"), 11 /* Double */, -1,
                                       kReadWrite | 0x20 | 0x40);
            v.spec.value = &value;
            check(add(as, v));
        }

        // Values that change on the timer: read-only for clients.
        dynamic_ = id("Demo.Dynamic");
        counter_id_ = id("Demo.Counter");
        {
            uaplex_datavalue value = data_value(scalar<double>(UAPLEX_TYPE_DOUBLE, 0.0));
            NodeSpec v = variable_spec(dynamic_, demo, kOrganizes, qualified_name(ns_, "Dynamic"),
                                       11 /* Double */, -1, kReadOnly);
            v.spec.value = &value;
            v.spec.minimum_sampling_interval = double(interval_ms_);
            check(add(as, v));
        }
        {
            uaplex_datavalue value = data_value(scalar<uint32_t>(UAPLEX_TYPE_UINT32, 0));
            NodeSpec v =
                variable_spec(counter_id_, demo, kOrganizes, qualified_name(ns_, "Counter"),
                              7 /* UInt32 */, -1, kReadOnly);
            v.spec.value = &value;
            v.spec.minimum_sampling_interval = double(interval_ms_);
            check(add(as, v));
        }

        // A value the node manager pushes once the kernel asks it to (monitor), rather than
        // one the kernel samples through its read callback.
        pushed_id_ = id("Demo.Pushed");
        monitored_id_ = id("Demo.Pushed.Monitored");
        {
            NodeSpec v = variable_spec(pushed_id_, demo, kOrganizes, qualified_name(ns_, "Pushed"),
                                       7 /* UInt32 */, -1, kReadOnly);
            v.spec.read = &Demo::readPushed;
            v.spec.user = this;
            v.spec.minimum_sampling_interval = double(interval_ms_);
            check(add(as, v));
            uaplex_datavalue off = data_value(scalar<bool>(UAPLEX_TYPE_BOOLEAN, false));
            NodeSpec m =
                variable_spec(monitored_id_, pushed_id_, kHasProperty,
                              qualified_name(ns_, "Monitored"), 1 /* Boolean */, -1, kReadOnly);
            m.type_definition = numeric_id(0, kPropertyType);
            m.spec.value = &off;
            check(add(as, m));
        }

        check(buildEvents(as, demo));

        // Methods on the Demo object.
        uaplex_nodeid multiply = id("Demo.Multiply");
        check(add(as, method_spec(multiply, demo, qualified_name(ns_, "Multiply"), &Demo::multiply,
                                  this)));
        check(as.add_arguments(multiply, id("Demo.Multiply.InputArguments"), false,
                               {{"a", 11, -1, "first factor"}, {"b", 11, -1, "second factor"}}));
        check(as.add_arguments(multiply, id("Demo.Multiply.OutputArguments"), true,
                               {{"product", 11, -1, "a times b"}}));
        check(add(as, method_spec(id("Demo.Reset"), demo, qualified_name(ns_, "Reset"),
                                  &Demo::reset, this)));
        return st;
    }

    // Demo.Events (an event notifier, also reached from the Server by HasNotifier) and its
    // alarm on Demo.Dynamic with the state variables clients read.
    uaplex_status buildEvents(const AddressSpace& as, const uaplex_nodeid& demo) {
        uaplex_status st = UAPLEX_Good;
        auto check = [&](uaplex_status s) {
            if (st == UAPLEX_Good) st = s;
        };
        events_ = id("Demo.Events");
        NodeSpec o =
            object_spec(events_, demo, kOrganizes, qualified_name(ns_, "Events"), kBaseObjectType);
        o.spec.event_notifier = UAPLEX_EVENT_NOTIFIER_SUBSCRIBE;
        check(add(as, o));
        check(as.add_reference(numeric_id(0, kServer), kHasNotifier, events_));
        check(as.add_reference(events_, kHasEventSource, dynamic_));
        alarm_ = id("Demo.Events.HighAlarm");
        check(add(as, object_spec(alarm_, events_, kHasComponent, qualified_name(ns_, "HighAlarm"),
                                  kAlarmConditionType)));
        check(as.add_reference(dynamic_, kHasCondition, alarm_));
        // The level alarm on Demo.Level (writable; a write reports the alarm's state).
        level_ = id("Demo.Level");
        {
            uaplex_datavalue value = data_value(scalar<double>(UAPLEX_TYPE_DOUBLE, 0.0));
            NodeSpec v = variable_spec(level_, demo, kOrganizes, qualified_name(ns_, "Level"),
                                       11 /* Double */, -1, kReadWrite);
            v.spec.value = &value;
            v.spec.write = &ValueWrite<&Demo::writeLevel>::fn;
            v.spec.user = this;
            check(add(as, v));
        }
        check(as.add_reference(events_, kHasEventSource, level_));
        level_alarm_ = id("Demo.Events.LevelAlarm");
        check(add(as, object_spec(level_alarm_, events_, kHasComponent,
                                  qualified_name(ns_, "LevelAlarm"), kExclusiveLevelAlarmType)));
        check(as.add_reference(level_, kHasCondition, level_alarm_));
        {
            uaplex_datavalue value =
                data_value(scalar<double>(UAPLEX_TYPE_DOUBLE, kLevelHighLimit));
            NodeSpec p =
                variable_spec(id("Demo.Events.LevelAlarm.HighLimit"), level_alarm_, kHasProperty,
                              qualified_name(0, "HighLimit"), 11 /* Double */, -1, kReadOnly);
            p.type_definition = numeric_id(0, kPropertyType);
            p.spec.value = &value;
            check(add(as, p));
        }
        return st;
    }

    // The periodic event (BaseEventType, Severity 500, "Demo event N").
    static void eventTick(void* user) {
        auto* self = static_cast<Demo*>(user);
        uint32_t n = self->events_raised_.fetch_add(1) + 1;
        std::string text = "Demo event " + std::to_string(n);
        uaplex_localizedtext message = localized_text("en", text);
        Event(numeric_id(0, kBaseEventType), self->events_)
            .set("Message", boxed(UAPLEX_TYPE_LOCALIZEDTEXT, &message))
            .set("Severity", scalar<uint16_t>(UAPLEX_TYPE_UINT16, kEventSeverity))
            .set("SourceName", scalar(UAPLEX_TYPE_STRING, ua_string("Events")))
            .raise(self->ctx_);
    }

    // The alarm's state when it changed (or was never reported): values and a condition event.
    void updateAlarm(double sine) {
        bool active = sine > 50.0;
        int state = active ? 1 : 0;
        if (alarm_state_.exchange(state) == state) return;
        // The kernel holds the condition's state: the report says what was measured.
        std::string text = active ? "Dynamic is above 50" : "Dynamic is back to normal";
        uaplex_localizedtext message = localized_text("en", text);
        Event event(numeric_id(0, kAlarmConditionType), dynamic_);
        event.condition(alarm_)
            .set("Message", boxed(UAPLEX_TYPE_LOCALIZEDTEXT, &message))
            .set("Severity", scalar<uint16_t>(UAPLEX_TYPE_UINT16, kAlarmSeverity))
            .set("ActiveState/Id", scalar<bool>(UAPLEX_TYPE_BOOLEAN, active));
        if (event.raise(ctx_) != UAPLEX_Good) alarm_state_.store(-1);  // e.g. not sealed yet
    }

    // Demo.Level written: the level alarm's state (reported when it changes).
    uaplex_status writeLevel(const uaplex_nodeid&, const uaplex_datavalue& dv) {
        if (!(dv.mask & UAPLEX_DATAVALUE_VALUE) || dv.value.encoding != UAPLEX_TYPE_DOUBLE)
            return UAPLEX_Good;
        const double level = dv.value.value.double_;
        const bool active = level > kLevelHighLimit;
        if (level_state_.exchange(active ? 1 : 0) == (active ? 1 : 0)) return UAPLEX_Good;
        std::string text = active ? "Level is above its high limit" : "Level is back to normal";
        uaplex_localizedtext message = localized_text("en", text);
        Event event(numeric_id(0, kExclusiveLevelAlarmType), level_);
        event.condition(level_alarm_)
            .set("Message", boxed(UAPLEX_TYPE_LOCALIZEDTEXT, &message))
            .set("Severity", scalar<uint16_t>(UAPLEX_TYPE_UINT16, kAlarmSeverity))
            .set("ActiveState/Id", scalar<bool>(UAPLEX_TYPE_BOOLEAN, active))
            .set("HighLimit", scalar<double>(UAPLEX_TYPE_DOUBLE, kLevelHighLimit));
        if (event.raise(ctx_) != UAPLEX_Good) level_state_.store(-1);
        return UAPLEX_Good;  // the kernel stores the value
    }

    static void tick(void* user) {
        auto* self = static_cast<Demo*>(user);
        uint64_t now = 0;
        self->ctx_.api()->monotonic_ns(self->ctx_.raw(), &now);
        double seconds = double(now - self->start_ns_) / 1e9;
        const double kPi = 3.14159265358979323846;
        double sine = 100.0 * std::sin(2 * kPi * seconds / 10.0);  // period 10 s
        AddressSpace as = self->space();
        as.set_value(self->dynamic_, data_value(scalar<double>(UAPLEX_TYPE_DOUBLE, sine)));
        self->updateAlarm(sine);
        uint32_t count = self->counter_.fetch_add(1) + 1;
        as.set_value(self->counter_id_, data_value(scalar<uint32_t>(UAPLEX_TYPE_UINT32, count)));
        uint32_t pushed = self->pushed_.fetch_add(1) + 1;
        const auto& p = self->params_;
        if (self->pushing_.load() && p.value_changed != nullptr) {
            uaplex_datavalue dv = data_value(scalar<uint32_t>(UAPLEX_TYPE_UINT32, pushed));
            p.value_changed(p.user, &self->pushed_id_, 13, &dv);
        }
    }

    // Demo.Pushed for Read (and the item's first sample): its current count.
    static uaplex_status readPushed(void* user, const uaplex_nodeid*, const uaplex_value_alloc*,
                                    uaplex_datavalue* out) {
        auto* self = static_cast<Demo*>(user);
        *out = data_value(scalar<uint32_t>(UAPLEX_TYPE_UINT32, self->pushed_.load()));
        return UAPLEX_Good;
    }

  public:
    // The kernel's first item on Demo.Pushed (enabled) and after its last one: from then on
    // the timer pushes each change; Demo.Pushed.Monitored shows it. Other nodes: sampled.
    uaplex_status monitor(const uaplex_nodeid* node, uint32_t attribute, int32_t enabled) override {
        const auto& a = node->identifier.string;
        const auto& b = pushed_id_.identifier.string;
        if (attribute != 13 || node->namespace_index != ns_ ||
            node->identifier_type != UAPLEX_ID_STRING || a.length != b.length ||
            std::memcmp(a.data, b.data, size_t(b.length)) != 0)
            return UAPLEX_BadNotSupported;
        pushing_.store(enabled != 0);
        return space().set_value(monitored_id_,
                                 data_value(scalar<bool>(UAPLEX_TYPE_BOOLEAN, enabled != 0)));
    }

  private:
    static uaplex_status multiply(void*, const uaplex_nodeid*, const uaplex_nodeid*, size_t count,
                                  const uaplex_variant* inputs, const uaplex_value_alloc* alloc,
                                  size_t* out_count, uaplex_variant** out) {
        // The kernel checked the inputs against InputArguments: two Doubles.
        if (count != 2) return UAPLEX_BadArgumentsMissing;
        auto* result = static_cast<uaplex_variant*>(
            alloc->allocate(alloc->self, sizeof(uaplex_variant), alignof(uaplex_variant)));
        if (result == nullptr) return UAPLEX_BadOutOfMemory;
        *result =
            scalar<double>(UAPLEX_TYPE_DOUBLE, inputs[0].value.double_ * inputs[1].value.double_);
        *out_count = 1;
        *out = result;
        return UAPLEX_Good;
    }

    static uaplex_status reset(void* user, const uaplex_nodeid*, const uaplex_nodeid*, size_t,
                               const uaplex_variant*, const uaplex_value_alloc*, size_t* out_count,
                               uaplex_variant** out) {
        auto* self = static_cast<Demo*>(user);
        self->counter_.store(0);
        *out_count = 0;
        *out = nullptr;
        return self->space().set_value(self->counter_id_,
                                       data_value(scalar<uint32_t>(UAPLEX_TYPE_UINT32, 0)));
    }

    uint16_t ns_ = 0;
    uint64_t interval_ms_ = 100;
    uint64_t start_ns_ = 0;
    uaplex_timer* timer_ = nullptr;
    uaplex_timer* event_timer_ = nullptr;
    uint64_t event_interval_ms_ = 1000;
    uaplex_nodeid events_{}, alarm_{}, level_{}, level_alarm_{};
    std::atomic<int> level_state_{0};  // the level alarm: inactive at start
    std::atomic<uint32_t> events_raised_{0};
    std::atomic<int> alarm_state_{-1};  // -1: not reported yet
    std::deque<std::string> names_;     // NodeId text, stable addresses
    uaplex_nodeid dynamic_{}, counter_id_{};
    std::atomic<uint32_t> counter_{0};
    uaplex_nodeid pushed_id_{}, monitored_id_{};
    std::atomic<uint32_t> pushed_{0};
    std::atomic<bool> pushing_{false};
};

}  // namespace

UAPLEX_PLUGIN(("demo", "1.0.0", "Demo address space: every built-in type, AnalogItem, methods"),
              uaplex::sdk::NodeManagerFactory<Demo>)
