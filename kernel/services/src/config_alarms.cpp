// SPDX-License-Identifier: Apache-2.0
// [[alarms]] (docs/configuration.md): limit and off-normal alarms declared in the
// configuration. Before the conditions are collected the kernel adds each alarm's Object
// (ExclusiveLevelAlarmType, NonExclusiveLevelAlarmType or OffNormalAlarmType) below its parent
// (default: the Alarms folder under Objects, in the server's namespace 1), a HasCondition
// from its source Variable, its limit properties, InputNode, and the LimitState machine
// (exclusive) or the four limit state variables (non-exclusive); buildConditions then takes it
// into the ConditionTable like any other condition. Each stored value change of the source
// (the same path that feeds monitored items) runs its LimitEvaluator; only a change of the
// alarm's state reports to the table (ActiveState/Id, Severity, Message, the limit state),
// which raises the event and serves the methods.
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
        cond::LimitAlarmSpec spec;
        std::uint32_t type = cond::kExclusiveLevelAlarmType;
        if (a.type == "non_exclusive_level") {
            spec.kind = cond::AlarmKind::NonExclusiveLevel;
            type = cond::kNonExclusiveLevelAlarmType;
        } else if (a.type == "off_normal") {
            spec.kind = cond::AlarmKind::OffNormal;
            type = cond::kOffNormalAlarmType;
        }
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
            alarmsBySource.emplace_back(n, alarm.get());
        }
        configuredAlarms.push_back(std::move(alarm));
    }
    std::sort(alarmsBySource.begin(), alarmsBySource.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
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
                               [](const auto& e, const Node* key) { return e.first < key; });
    if (it == alarmsBySource.end() || it->first != &n || !conditions) return;
    const double x = (v.mask & UAPLEX_DATAVALUE_VALUE) ? numberOf(v.value) : std::nan("");
    const ua::DateTime t = now();
    for (; it != alarmsBySource.end() && it->first == &n; ++it)
        evaluateAlarm(*it->second, x, false, t);
}

void ServiceSet::Impl::evaluateAlarm(ConfiguredAlarm& a, double x, bool tick,
                                     ua::DateTime t) noexcept {
    std::lock_guard order(a.reportMutex);
    bool active;
    std::uint16_t severity;
    cond::LimitLevel level;
    std::array<bool, cond::kLimitCount> limits{};
    {
        std::lock_guard lock(a.mutex);
        if (tick) a.scheduledAt = 0;  // the timer unlinked it
        const bool changed = tick ? a.eval.tick(t) : a.eval.update(x, t);
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
    impl->evaluateAlarm(*static_cast<ConfiguredAlarm::Delay&>(e).alarm, 0.0, true, now);
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
    std::array<uaplex_event_field, 4 + 2 + 2 * cond::kLimitCount> fields{};
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
