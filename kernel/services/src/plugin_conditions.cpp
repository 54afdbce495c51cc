// SPDX-License-Identifier: Apache-2.0
// Conditions of plugins (host API condition_create and condition_set, since 1.13): a plugin
// names a condition's NodeId, type (a ConditionType subtype), BrowseName and source; the kernel
// adds its Object (HasComponent from the parent, default the source) and the HasCondition from
// the source while the node managers start, and buildConditions takes it into the
// ConditionTable like a NodeSet's condition, with the plugin's callback. condition_set turns
// what the plugin measures into a report on the condition (the raise_event path of a node
// manager's condition, without its event type and source checks).
#include <array>

#include "services_internal.hpp"

namespace uaplex::services {

namespace {
namespace cond = conditions;
}  // namespace

uaplex_status ServiceSet::Impl::conditionCreate(uaplex_plugin_ctx*,
                                                const uaplex_condition_spec* spec) noexcept {
    std::lock_guard lock(modelMutex());
    // Once sealed the store takes no new nodes (BadInvalidState, as node_add).
    if (space.sealed()) return UAPLEX_BadInvalidState;
    try {
        const ua::NodeId conditionType = ua::numericNodeId(0, cond::kConditionType);
        const ua::NodeId& type = *spec->type_id;
        NodeRef typeNode = space.find(type);
        if (!typeNode || typeNode.nodeClass() != addressspace::kObjectType ||
            !(ua::equal(type, conditionType) || space.isSubtypeOf(type, conditionType)))
            return UAPLEX_BadTypeDefinitionInvalid;
        NodeRef source = space.find(*spec->source_id);
        if (!source) return UAPLEX_BadNodeIdUnknown;
        const ua::NodeId parent = spec->parent_id ? *spec->parent_id : space.nodeIdOf(source);
        if (!space.find(parent)) return UAPLEX_BadNodeIdUnknown;
        const ua::NodeId hasComponent = ua::numericNodeId(0, addressspace::kHasComponent);
        uaplex_node_spec node{};
        node.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
        node.node_class = addressspace::kObject;
        node.node_id = spec->condition_id;
        node.parent_id = &parent;
        node.reference_type_id = &hasComponent;
        node.type_definition = spec->type_id;
        node.browse_name = spec->browse_name;
        // The kernel's node (not the plugin's: nodes_delete does not take it away from the
        // condition table).
        if (uaplex_status st = addSpec(nullptr, node, false); st != UAPLEX_Good) return st;
        const ua::NodeId id = space.nodeIdOf(space.find(*spec->condition_id));  // interned
        if (uaplex_status st =
                space.addReference(space.nodeIdOf(source), cond::kHasCondition, id, true);
            st != UAPLEX_Good)
            return st;
        pluginConditions.push_back({id, spec->call, spec->user, spec->flags});
        return UAPLEX_Good;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

uaplex_status ServiceSet::Impl::conditionSet(uaplex_plugin_ctx*, const uaplex_nodeid* condition,
                                             const uaplex_condition_state* state) noexcept {
    if (!space.sealed() || !conditions) return UAPLEX_BadInvalidState;
    if (!conditions->contains(*condition)) return UAPLEX_BadNodeIdUnknown;
    // The report's fields, on the stack (the table copies what it keeps), then the plugin's.
    static const ua::QualifiedName kActive[] = {{0, ua::makeString("ActiveState")},
                                                {0, ua::makeString("Id")}};
    static const ua::QualifiedName kSeverity[] = {{0, ua::makeString("Severity")}};
    static const ua::QualifiedName kMessage[] = {{0, ua::makeString("Message")}};
    static const ua::QualifiedName kQuality[] = {{0, ua::makeString("Quality")}};
    static const ua::QualifiedName kLimitState[] = {{0, ua::makeString("LimitState")},
                                                    {0, ua::makeString("CurrentState")},
                                                    {0, ua::makeString("Id")}};
    std::array<ua::Variant, 6> values{};
    ua::LocalizedText stateText{};
    ua::NodeId stateId{};
    try {
        std::vector<uaplex_event_field> fields;
        fields.reserve(values.size() +
                       std::min<std::size_t>(state->field_count, cond::kMaxReportedFields));
        auto add = [&](const ua::QualifiedName* path, std::uint32_t len, const ua::Variant& v) {
            values[fields.size()] = v;
            fields.push_back({path, len, 0, &values[fields.size()]});
        };
        const std::uint32_t mask = state->mask;
        if (mask & UAPLEX_CONDITION_SET_ACTIVE) add(kActive, 2, ua::variantBoolean(state->active));
        if (mask & UAPLEX_CONDITION_SET_SEVERITY) {
            ua::Variant v = ua::makeVariant(ua::BuiltinType::UInt16);
            v.value.uint16 = state->severity;
            add(kSeverity, 1, v);
        }
        if ((mask & UAPLEX_CONDITION_SET_MESSAGE) && state->message) {
            ua::Variant v = ua::makeVariant(ua::BuiltinType::LocalizedText);
            v.value.pointer = const_cast<uaplex_localizedtext*>(state->message);
            add(kMessage, 1, v);
        }
        if (mask & UAPLEX_CONDITION_SET_QUALITY) {
            ua::Variant v = ua::makeVariant(ua::BuiltinType::StatusCode);
            v.value.statuscode = state->quality;
            add(kQuality, 1, v);
        }
        if (mask & UAPLEX_CONDITION_SET_LIMIT_STATE) {
            const auto level = state->limit_state;
            const char* name = level == cond::kLimitStateHighHigh ? "HighHigh"
                               : level == cond::kLimitStateHigh   ? "High"
                               : level == cond::kLimitStateLow    ? "Low"
                               : level == cond::kLimitStateLowLow ? "LowLow"
                                                                  : "";
            if (level != 0 && *name == '\0') return UAPLEX_BadInvalidArgument;
            stateText = ua::makeLocalizedText({}, name);
            stateId = ua::numericNodeId(0, level);
            ua::Variant t = ua::makeVariant(ua::BuiltinType::LocalizedText);
            t.value.pointer = &stateText;
            add(kLimitState, 2, t);
            ua::Variant i = ua::makeVariant(ua::BuiltinType::NodeId);
            i.value.pointer = &stateId;
            add(kLimitState, 3, i);
        }
        for (std::uint32_t k = 0; k < state->field_count && k < cond::kMaxReportedFields; ++k)
            fields.push_back(state->fields[k]);
        NodeRef node = space.find(*condition);
        uaplex_event_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
        spec.field_count = std::uint32_t(fields.size());
        spec.fields = fields.data();
        spec.condition_id = condition;
        ua::NodeId type = node ? space.typeDefinitionOf(node) : ua::NodeId{};
        spec.event_type = &type;
        spec.source_node = condition;
        return conditions->report(*condition, spec, now());
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

}  // namespace uaplex::services
