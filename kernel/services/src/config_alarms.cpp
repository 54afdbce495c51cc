// SPDX-License-Identifier: Apache-2.0
// [[alarms]] (docs/configuration.md): limit and off-normal alarms declared in the
// configuration. Before the conditions are collected the kernel adds each alarm's Object (the
// level, deviation and rate of change alarms, exclusive or not; OffNormalAlarmType,
// DiscreteAlarmType, TripAlarmType, SystemOffNormalAlarmType) below its parent (default: the
// Alarms folder under Objects, in the server's namespace 1), a HasCondition from its source
// Variable, its limit properties, InputNode, SetpointNode or NormalState, and the LimitState
// machine (exclusive) or the four limit state variables (non-exclusive); buildConditions then
// takes it into the ConditionTable like any other condition. Each stored value change of the
// source or of the setpoint / NormalState node (the same path that feeds monitored items) runs
// its LimitEvaluator; only a change of the alarm's state reports to the table (ActiveState/Id,
// Severity, Message, the limit state), which raises the event and serves the methods.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <uaplex/host/logging.hpp>

#include "services_internal.hpp"

namespace uaplex::services {

namespace {

namespace cond = conditions;

constexpr std::uint32_t kObjectsFolder = 85;
constexpr std::uint32_t kFolderType = 61;
constexpr std::uint32_t kPropertyType = 68;
constexpr std::uint32_t kFiniteStateVariableType = 2760;
constexpr std::uint32_t kDoubleType = 11;
constexpr std::uint32_t kNodeIdType = 17;
constexpr std::uint32_t kBooleanType = 1;
constexpr std::uint32_t kLocalizedTextType = 21;
constexpr std::uint32_t kNumberType = 26;
constexpr std::uint32_t kBaseDataVariableType = 63;

// A config type: its evaluation and its ns0 TypeDefinition.
struct AlarmTypeInfo {
    std::string_view name;
    cond::AlarmKind kind;
    cond::LimitInput input;
    std::uint32_t typeDefinition;
};
constexpr AlarmTypeInfo kAlarmTypes[] = {
    {"exclusive_level", cond::AlarmKind::ExclusiveLevel, cond::LimitInput::Value,
     cond::kExclusiveLevelAlarmType},
    {"non_exclusive_level", cond::AlarmKind::NonExclusiveLevel, cond::LimitInput::Value,
     cond::kNonExclusiveLevelAlarmType},
    {"exclusive_deviation", cond::AlarmKind::ExclusiveLevel, cond::LimitInput::Deviation,
     cond::kExclusiveDeviationAlarmType},
    {"non_exclusive_deviation", cond::AlarmKind::NonExclusiveLevel, cond::LimitInput::Deviation,
     cond::kNonExclusiveDeviationAlarmType},
    {"exclusive_rate_of_change", cond::AlarmKind::ExclusiveLevel, cond::LimitInput::RateOfChange,
     cond::kExclusiveRateOfChangeAlarmType},
    {"non_exclusive_rate_of_change", cond::AlarmKind::NonExclusiveLevel,
     cond::LimitInput::RateOfChange, cond::kNonExclusiveRateOfChangeAlarmType},
    {"off_normal", cond::AlarmKind::OffNormal, cond::LimitInput::Value, cond::kOffNormalAlarmType},
    {"discrete", cond::AlarmKind::OffNormal, cond::LimitInput::Value, cond::kDiscreteAlarmType},
    {"trip", cond::AlarmKind::OffNormal, cond::LimitInput::Value, cond::kTripAlarmType},
    {"system_off_normal", cond::AlarmKind::OffNormal, cond::LimitInput::Value,
     cond::kSystemOffNormalAlarmType},
};

void* allocate(const uaplex_value_alloc& a, std::size_t size, std::size_t align) {
    return a.allocate ? a.allocate(a.self, size, align) : nullptr;
}

// The value of a Variant as a number for the evaluation (NaN: not a number).
double numberOf(const ua::Variant& v) noexcept {
    if (ua::isArray(v)) return std::nan("");
    switch (ua::variantType(v)) {
        case ua::BuiltinType::Boolean:
            return v.value.boolean ? 1.0 : 0.0;
        case ua::BuiltinType::SByte:
            return v.value.sbyte;
        case ua::BuiltinType::Byte:
            return v.value.byte;
        case ua::BuiltinType::Int16:
            return v.value.int16;
        case ua::BuiltinType::UInt16:
            return v.value.uint16;
        case ua::BuiltinType::Int32:
            return v.value.int32;
        case ua::BuiltinType::UInt32:
            return v.value.uint32;
        case ua::BuiltinType::Int64:
            return double(v.value.int64);
        case ua::BuiltinType::UInt64:
            return double(v.value.uint64);
        case ua::BuiltinType::Float:
            return v.value.float_;
        case ua::BuiltinType::Double:
            return v.value.double_;
        default:
            return std::nan("");
    }
}

}  // namespace

uaplex_status ServiceSet::Impl::readAlarmField(void* user, const uaplex_nodeid*,
                                               const uaplex_value_alloc* alloc,
                                               uaplex_datavalue* out) noexcept {
    const auto* f = static_cast<const AlarmFieldNode*>(user);
    cond::LimitLevel level;
    bool limitActive;
    {
        std::lock_guard lock(f->alarm->mutex);
        level = f->alarm->eval.level();
        limitActive = f->alarm->eval.limitActive(f->limit);
    }
    ua::Variant v{};
    auto text = [&](std::string_view s) {
        auto* t = static_cast<ua::LocalizedText*>(
            allocate(*alloc, sizeof(ua::LocalizedText), alignof(ua::LocalizedText)));
        char* buf = static_cast<char*>(allocate(*alloc, s.size() + 1, 1));
        if (t == nullptr || buf == nullptr) return false;
        std::memcpy(buf, s.data(), s.size());
        *t = ua::makeLocalizedText({}, {buf, s.size()});
        if (s.empty()) t->text = ua::nullString();
        v = ua::makeVariant(ua::BuiltinType::LocalizedText);
        v.value.pointer = t;
        return true;
    };
    bool ok = true;
    switch (f->what) {
        case AlarmFieldNode::What::CurrentState:
            ok = text(cond::limitStateName(level));
            break;
        case AlarmFieldNode::What::CurrentStateId: {
            auto* n =
                static_cast<ua::NodeId*>(allocate(*alloc, sizeof(ua::NodeId), alignof(ua::NodeId)));
            if (n == nullptr) return UAPLEX_BadOutOfMemory;
            *n = ua::numericNodeId(0, cond::limitStateId(level));
            v = ua::makeVariant(ua::BuiltinType::NodeId);
            v.value.pointer = n;
            break;
        }
        case AlarmFieldNode::What::LimitState:
            ok = text(limitActive ? "Active" : "Inactive");
            break;
        case AlarmFieldNode::What::LimitStateId:
            v = ua::variantBoolean(limitActive);
            break;
    }
    if (!ok) return UAPLEX_BadOutOfMemory;
    out->value = v;
    out->mask |= UAPLEX_DATAVALUE_VALUE;
    return UAPLEX_Good;
}

void ServiceSet::Impl::addConfiguredAlarms() {
    if (cfg.alarms.empty()) return;
    const std::uint16_t ns = 1;  // the server's own namespace (its ApplicationUri)
    const auto& uris = space.namespaces();
    auto resolve = [&](const config::PersistentNode& p, ua::NodeId& out) {
        std::size_t index = 0;
        if (!p.namespace_uri.empty()) {
            auto it = std::find(uris.begin(), uris.end(), p.namespace_uri);
            if (it == uris.end()) return false;
            index = std::size_t(it - uris.begin());
        } else {
            index = std::size_t(p.ns);
            if (index >= uris.size()) return false;
        }
        out = p.is_string ? ua::stringNodeId(std::uint16_t(index), p.string_id)
                          : ua::numericNodeId(std::uint16_t(index), p.numeric);
        return true;
    };
    // Node specs: everything borrowed for the call.
    auto addChild = [&](const ua::NodeId& parent, const std::string& idText, std::string_view name,
                        std::uint32_t nodeClass, std::uint32_t refType, std::uint32_t typeDef,
                        std::uint32_t dataType, const uaplex_datavalue* value,
                        uaplex_value_read_fn read, void* user) {
        ua::NodeId id = ua::stringNodeId(ns, idText);
        ua::QualifiedName bn{0, ua::makeString(name)};
        ua::NodeId rt = ua::numericNodeId(0, refType);
        ua::NodeId td = ua::numericNodeId(0, typeDef);
        ua::NodeId dt = ua::numericNodeId(0, dataType);
        uaplex_node_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
        spec.node_id = &id;
        spec.parent_id = &parent;
        spec.reference_type_id = &rt;
        spec.type_definition = &td;
        spec.browse_name = &bn;
        spec.node_class = nodeClass;
        if (nodeClass == addressspace::kVariable) {
            spec.data_type = &dt;
            spec.value_rank = -1;
            spec.access_level = addressspace::kCurrentRead;
            spec.value = value;
            spec.read = read;
            spec.user = user;
        }
        return space.addNode(spec) == UAPLEX_Good;
    };
    const ua::NodeId folder = ua::stringNodeId(ns, "Alarms");
    bool folderAdded = false;
    for (const config::AlarmConfig& a : cfg.alarms) {
        ua::NodeId source{};
        NodeRef sourceRef{};
        if (!resolve(a.source, source) || !(sourceRef = space.find(source))) {
            host::logger()->warn("{}: [[alarms]] '{}': source {}: no such node: not served",
                                 a.position, a.name, a.source.text);
            continue;
        }
        ua::NodeId parent = folder;
        if (a.has_parent) {
            if (!resolve(a.parent, parent) || !space.find(parent)) {
                host::logger()->warn("{}: [[alarms]] '{}': parent {}: no such node: not served",
                                     a.position, a.name, a.parent.text);
                continue;
            }
        } else if (!folderAdded) {
            folderAdded = addChild(ua::numericNodeId(0, kObjectsFolder), "Alarms", "Alarms",
                                   addressspace::kObject, addressspace::kOrganizes, kFolderType, 0,
                                   nullptr, nullptr, nullptr);
            if (!folderAdded) {
                host::logger()->warn("[[alarms]]: cannot add the Alarms folder");
                return;
            }
        }
        // The second input (setpoint, NormalState): a stored numeric scalar Variable, not the
        // source, so that its changes reach the alarm.
        Node* referenceNode = nullptr;
        if (a.has_setpoint || a.has_normal_state) {
            const config::PersistentNode& p = a.has_setpoint ? a.setpoint : a.normal_state;
            const char* key = a.has_setpoint ? "setpoint" : "normal_state";
            ua::NodeId rid{};
            NodeRef r{};
            if (!resolve(p, rid) || !(r = space.find(rid))) {
                host::logger()->warn("{}: [[alarms]] '{}': {} {}: no such node: not served",
                                     a.position, a.name, key, p.text);
                continue;
            }
            referenceNode = space.mutableNode(space.nodeIdOf(r));
            const ua::NodeId number = ua::numericNodeId(0, kNumberType);
            const bool numeric =
                referenceNode != nullptr && referenceNode->nodeClass == addressspace::kVariable &&
                referenceNode->valueRank.load(std::memory_order_relaxed) < 0 &&
                (ua::equal(referenceNode->dataType, number) ||
                 space.isSubtypeOf(referenceNode->dataType, number) ||
                 (a.has_normal_state &&
                  ua::equal(referenceNode->dataType, ua::numericNodeId(0, kBooleanType))));
            if (!numeric || ua::equal(space.nodeIdOf(r), space.nodeIdOf(sourceRef))) {
                host::logger()->warn(
                    "{}: [[alarms]] '{}': {} {}: not a scalar {} Variable of the server's "
                    "own nodes other than the source: not served",
                    a.position, a.name, key, p.text,
                    a.has_setpoint ? "numeric" : "numeric or Boolean");
                continue;
            }
        }
        const AlarmTypeInfo* info = &kAlarmTypes[0];
        for (const AlarmTypeInfo& k : kAlarmTypes)
            if (k.name == a.type) info = &k;
        cond::LimitAlarmSpec spec;
        spec.kind = info->kind;
        spec.input = info->input;
        spec.normalFromReference = a.has_normal_state;
        const std::uint32_t type = info->typeDefinition;
        const config::AlarmLimitConfig* limits[] = {&a.high_high, &a.high, &a.low, &a.low_low};
        for (std::size_t i = 0; i < cond::kLimitCount; ++i)
            spec.limits[i] = {limits[i]->present, limits[i]->value,
                              std::uint16_t(limits[i]->severity)};
        spec.deadband = a.deadband;
        spec.normalValue = a.normal_value;
        spec.severity = std::uint16_t(a.severity);
        spec.onDelay = std::int64_t(a.on_delay_ms) * 10000;
        spec.offDelay = std::int64_t(a.off_delay_ms) * 10000;

        const std::string idText = "Alarms." + a.name;
        if (!addChild(parent, idText, a.name, addressspace::kObject, addressspace::kHasComponent,
                      type, 0, nullptr, nullptr, nullptr)) {
            host::logger()->warn("{}: [[alarms]] '{}': cannot add its node: not served", a.position,
                                 a.name);
            continue;
        }
        const ua::NodeId id = space.nodeIdOf(space.find(ua::stringNodeId(ns, idText)));
        space.addReference(space.nodeIdOf(sourceRef), cond::kHasCondition, id, true);
        auto alarm = std::make_unique<ConfiguredAlarm>(spec);
        alarm->condition = id;
        alarm->type = ua::numericNodeId(0, type);
        alarm->source = space.nodeIdOf(sourceRef);
        alarm->message = a.message;
        alarm->branches = a.branches;
        if (referenceNode != nullptr) {
            alarm->reference = referenceNode->id;  // interned
            alarm->hasReference = true;
            // The values known at start: a setpoint change evaluates the current input.
            auto stored = [&](const Node& n) {
                if (n.callbacks.readsValue()) return std::nan("");
                enc::Arena arena;
                ua::DataValue dv{};
                if (n.value.read(arena, dv) != UAPLEX_Good) return std::nan("");
                return (dv.mask & UAPLEX_DATAVALUE_VALUE) ? numberOf(dv.value) : std::nan("");
            };
            const Node* src = space.mutableNode(alarm->source);
            alarm->eval.seed(src ? stored(*src) : std::nan(""), stored(*referenceNode));
        }

        // InputNode and the limits: properties with fixed values.
        {
            ua::NodeId input = alarm->source;
            ua::Variant v = ua::makeVariant(ua::BuiltinType::NodeId);
            v.value.pointer = &input;
            uaplex_datavalue dv{};
            dv.mask = UAPLEX_DATAVALUE_VALUE;
            dv.value = v;
            addChild(id, idText + ".InputNode", "InputNode", addressspace::kVariable,
                     addressspace::kHasProperty, kPropertyType, kNodeIdType, &dv, nullptr, nullptr);
        }
        // SetpointNode (deviation) or NormalState (off-normal: the node given, else a
        // NormalValue Variable of the alarm's holding the constant).
        if (spec.input == cond::LimitInput::Deviation || spec.kind == cond::AlarmKind::OffNormal) {
            ua::NodeId target = alarm->reference;
            if (spec.kind == cond::AlarmKind::OffNormal && referenceNode == nullptr) {
                uaplex_datavalue dv{};
                dv.mask = UAPLEX_DATAVALUE_VALUE;
                dv.value = ua::variantDouble(a.normal_value);
                if (addChild(id, idText + ".NormalValue", "NormalValue", addressspace::kVariable,
                             addressspace::kHasComponent, kBaseDataVariableType, kDoubleType, &dv,
                             nullptr, nullptr))
                    target =
                        space.nodeIdOf(space.find(ua::stringNodeId(ns, idText + ".NormalValue")));
                alarm->reference = target;  // interned, for the events
                alarm->hasReference = true;
            }
            ua::Variant v = ua::makeVariant(ua::BuiltinType::NodeId);
            v.value.pointer = &target;
            uaplex_datavalue dv{};
            dv.mask = UAPLEX_DATAVALUE_VALUE;
            dv.value = v;
            const std::string_view prop =
                spec.kind == cond::AlarmKind::OffNormal ? "NormalState" : "SetpointNode";
            addChild(id, idText + "." + std::string(prop), prop, addressspace::kVariable,
                     addressspace::kHasProperty, kPropertyType, kNodeIdType, &dv, nullptr, nullptr);
        }
        static constexpr std::string_view kLimitNames[] = {"HighHighLimit", "HighLimit", "LowLimit",
                                                           "LowLowLimit"};
        static constexpr std::string_view kStateNames[] = {"HighHighState", "HighState", "LowState",
                                                           "LowLowState"};
        for (std::size_t i = 0; i < cond::kLimitCount; ++i) {
            if (!spec.limits[i].present) continue;
            uaplex_datavalue dv{};
            dv.mask = UAPLEX_DATAVALUE_VALUE;
            dv.value = ua::variantDouble(spec.limits[i].value);
            addChild(id, idText + "." + std::string(kLimitNames[i]), kLimitNames[i],
                     addressspace::kVariable, addressspace::kHasProperty, kPropertyType,
                     kDoubleType, &dv, nullptr, nullptr);
        }
        auto field = [&](AlarmFieldNode::What what, cond::Limit limit) {
            auto f = std::make_unique<AlarmFieldNode>();
            f->alarm = alarm.get();
            f->what = what;
            f->limit = limit;
            alarmFields.push_back(std::move(f));
            return alarmFields.back().get();
        };
        if (spec.kind == cond::AlarmKind::ExclusiveLevel) {
            const std::string ls = idText + ".LimitState";
            addChild(id, ls, "LimitState", addressspace::kObject, addressspace::kHasComponent,
                     cond::kExclusiveLimitStateMachineType, 0, nullptr, nullptr, nullptr);
            const ua::NodeId lsId = ua::stringNodeId(ns, ls);
            addChild(lsId, ls + ".CurrentState", "CurrentState", addressspace::kVariable,
                     addressspace::kHasComponent, kFiniteStateVariableType, kLocalizedTextType,
                     nullptr, &Impl::readAlarmField,
                     field(AlarmFieldNode::What::CurrentState, cond::Limit::High));
            addChild(ua::stringNodeId(ns, ls + ".CurrentState"), ls + ".CurrentState.Id", "Id",
                     addressspace::kVariable, addressspace::kHasProperty, kPropertyType,
                     kNodeIdType, nullptr, &Impl::readAlarmField,
                     field(AlarmFieldNode::What::CurrentStateId, cond::Limit::High));
        } else if (spec.kind == cond::AlarmKind::NonExclusiveLevel) {
            for (std::size_t i = 0; i < cond::kLimitCount; ++i) {
                if (!spec.limits[i].present) continue;
                const std::string st = idText + "." + std::string(kStateNames[i]);
                addChild(id, st, kStateNames[i], addressspace::kVariable,
                         addressspace::kHasComponent, cond::kTwoStateVariableType,
                         kLocalizedTextType, nullptr, &Impl::readAlarmField,
                         field(AlarmFieldNode::What::LimitState, cond::Limit(i)));
                addChild(ua::stringNodeId(ns, st), st + ".Id", "Id", addressspace::kVariable,
                         addressspace::kHasProperty, kPropertyType, kBooleanType, nullptr,
                         &Impl::readAlarmField,
                         field(AlarmFieldNode::What::LimitStateId, cond::Limit(i)));
            }
        }
        if (Node* n = space.mutableNode(alarm->source)) {
            n->pinned.store(true, std::memory_order_relaxed);  // alarmsBySource is fixed
            alarmsBySource.push_back({n, alarm.get(), false});
        }
        if (referenceNode != nullptr) {
            referenceNode->pinned.store(true, std::memory_order_relaxed);
            alarmsBySource.push_back({referenceNode, alarm.get(), true});
        }
        configuredAlarms.push_back(std::move(alarm));
    }
    std::sort(alarmsBySource.begin(), alarmsBySource.end(),
              [](const AlarmInput& x, const AlarmInput& y) { return x.node < y.node; });
    // One timer for every delay: a delayed change takes effect when its delay ends.
    if (std::any_of(cfg.alarms.begin(), cfg.alarms.end(), [](const config::AlarmConfig& a) {
            return a.on_delay_ms > 0 || a.off_delay_ms > 0;
        })) {
        alarmDelays = std::make_unique<cond::DelayTimer>(&Impl::alarmDelayEnded, this);
        alarmDelays->start();
    }
}

void ServiceSet::Impl::evaluateAlarms(const Node& n, const ua::DataValue& v) noexcept {
    auto it = std::lower_bound(alarmsBySource.begin(), alarmsBySource.end(), &n,
                               [](const AlarmInput& e, const Node* key) { return e.node < key; });
    if (it == alarmsBySource.end() || it->node != &n || !conditions) return;
    const double x = (v.mask & UAPLEX_DATAVALUE_VALUE) ? numberOf(v.value) : std::nan("");
    const ua::DateTime t = now();
    // The rate of change is taken between the values' source timestamps.
    const ua::DateTime sourceTime =
        (v.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) ? v.source_timestamp : t;
    for (; it != alarmsBySource.end() && it->node == &n; ++it)
        evaluateAlarm(*it->alarm, it->reference ? AlarmUpdate::Reference : AlarmUpdate::Source, x,
                      sourceTime, t);
}

void ServiceSet::Impl::evaluateAlarm(ConfiguredAlarm& a, AlarmUpdate what, double x,
                                     ua::DateTime sourceTime, ua::DateTime t) noexcept {
    std::lock_guard order(a.reportMutex);
    bool active;
    std::uint16_t severity;
    cond::LimitLevel level;
    std::array<bool, cond::kLimitCount> limits{};
    {
        std::lock_guard lock(a.mutex);
        const bool tick = what == AlarmUpdate::Tick;
        if (tick) a.scheduledAt = 0;  // the timer unlinked it
        const bool changed = tick                             ? a.eval.tick(t)
                             : what == AlarmUpdate::Reference ? a.eval.updateReference(x, t)
                                                              : a.eval.update(x, sourceTime, t);
        // A delay begun, ended or taken back: the timer learns of it (no lock otherwise).
        if (alarmDelays) {
            const ua::DateTime next = a.eval.nextDeadline();
            if (next != a.scheduledAt) {
                a.scheduledAt = next;
                alarmDelays->schedule(a.delay, next);
            }
        }
        if (!changed) return;  // unchanged: nothing allocated
        active = a.eval.active();
        severity = a.eval.severity();
        level = a.eval.level();
        for (std::size_t i = 0; i < cond::kLimitCount; ++i)
            limits[i] = a.eval.limitActive(cond::Limit(i));
    }
    reportAlarm(a, active, severity, level, limits, t);
}

void ServiceSet::Impl::alarmDelayEnded(void* user, cond::DelayEntry& e, ua::DateTime now) {
    auto* impl = static_cast<Impl*>(user);
    addressspace::Pin pin = impl->space.pin();  // the timer's thread: the store may change
    impl->evaluateAlarm(*static_cast<ConfiguredAlarm::Delay&>(e).alarm, AlarmUpdate::Tick, 0.0, 0,
                        now);
}

void ServiceSet::Impl::reportAlarm(const ConfiguredAlarm& a, bool active, std::uint16_t severity,
                                   cond::LimitLevel level,
                                   const std::array<bool, cond::kLimitCount>& limits,
                                   ua::DateTime t) noexcept {
    // The report's fields, all on the stack (the table copies what it keeps).
    static const ua::QualifiedName kActive[] = {{0, ua::makeString("ActiveState")},
                                                {0, ua::makeString("Id")}};
    static const ua::QualifiedName kSeverity[] = {{0, ua::makeString("Severity")}};
    static const ua::QualifiedName kMessage[] = {{0, ua::makeString("Message")}};
    static const ua::QualifiedName kLimitState[] = {{0, ua::makeString("LimitState")},
                                                    {0, ua::makeString("CurrentState")},
                                                    {0, ua::makeString("Id")}};
    static const ua::QualifiedName kStates[][2] = {
        {{0, ua::makeString("HighHighState")}, {0, ua::makeString("Id")}},
        {{0, ua::makeString("HighState")}, {0, ua::makeString("Id")}},
        {{0, ua::makeString("LowState")}, {0, ua::makeString("Id")}},
        {{0, ua::makeString("LowLowState")}, {0, ua::makeString("Id")}}};
    static const ua::QualifiedName kLimits[][1] = {{{0, ua::makeString("HighHighLimit")}},
                                                   {{0, ua::makeString("HighLimit")}},
                                                   {{0, ua::makeString("LowLimit")}},
                                                   {{0, ua::makeString("LowLowLimit")}}};
    static const ua::QualifiedName kSetpoint[] = {{0, ua::makeString("SetpointNode")}};
    static const ua::QualifiedName kNormalState[] = {{0, ua::makeString("NormalState")}};
    std::array<uaplex_event_field, 5 + 2 + 2 * cond::kLimitCount> fields{};
    std::array<ua::Variant, fields.size()> values{};
    std::uint32_t count = 0;
    auto add = [&](const ua::QualifiedName* path, std::uint32_t len, const ua::Variant& v) {
        values[count] = v;
        fields[count] = {path, len, 0, &values[count]};
        ++count;
    };
    add(kActive, 2, ua::variantBoolean(active));
    ua::Variant sev = ua::makeVariant(ua::BuiltinType::UInt16);
    sev.value.uint16 = severity;
    if (active) add(kSeverity, 1, sev);
    ua::LocalizedText message = ua::makeLocalizedText({}, a.message);
    ua::Variant msg = ua::makeVariant(ua::BuiltinType::LocalizedText);
    msg.value.pointer = &message;
    if (!a.message.empty()) add(kMessage, 1, msg);
    const cond::AlarmKind kind = a.eval.spec().kind;
    ua::LocalizedText stateText = ua::makeLocalizedText({}, cond::limitStateName(level));
    ua::NodeId stateId = ua::numericNodeId(0, cond::limitStateId(level));
    if (kind == cond::AlarmKind::ExclusiveLevel) {
        ua::Variant s = ua::makeVariant(ua::BuiltinType::LocalizedText);
        s.value.pointer = &stateText;
        add(kLimitState, 2, s);
        ua::Variant sid = ua::makeVariant(ua::BuiltinType::NodeId);
        sid.value.pointer = &stateId;
        add(kLimitState, 3, sid);
    } else if (kind == cond::AlarmKind::NonExclusiveLevel) {
        for (std::size_t i = 0; i < cond::kLimitCount; ++i)
            if (a.eval.spec().limits[i].present) add(kStates[i], 2, ua::variantBoolean(limits[i]));
    }
    // SetpointNode / NormalState when a node gives it (the table keeps it for later events).
    ua::NodeId reference = a.reference;
    ua::Variant ref = ua::makeVariant(ua::BuiltinType::NodeId);
    ref.value.pointer = &reference;
    if (a.hasReference) add(kind == cond::AlarmKind::OffNormal ? kNormalState : kSetpoint, 1, ref);
    // The limits (the table keeps them for the events of its methods too).
    if (kind != cond::AlarmKind::OffNormal)
        for (std::size_t i = 0; i < cond::kLimitCount; ++i)
            if (a.eval.spec().limits[i].present)
                add(kLimits[i], 1, ua::variantDouble(a.eval.spec().limits[i].value));
    uaplex_event_spec spec{};
    spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
    spec.field_count = count;
    spec.event_type = &a.type;
    spec.source_node = &a.source;
    spec.condition_id = &a.condition;
    spec.fields = fields.data();
    try {
        (void)conditions->report(a.condition, spec, t);
    } catch (...) {
        host::logger()->warn("[[alarms]]: out of memory raising an alarm's event");
    }
}

}  // namespace uaplex::services
