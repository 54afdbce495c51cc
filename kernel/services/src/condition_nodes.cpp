// SPDX-License-Identifier: Apache-2.0
// Conditions in the address space (Part 9): every Object of a ConditionType subtype a node
// manager added without state variables (no EnabledState) becomes a condition of the
// kernel's ConditionTable when the address space is built; the kernel adds its state variables and
// properties (EnabledState with Id and TransitionTime, Retain, Severity, ...) as nodes whose values
// the table serves, raises its events and answers its methods (the server calls callCondition with
// the session's user).
#include <string>

#include <uaplex/host/logging.hpp>

#include "services_internal.hpp"

namespace uaplex::services {

namespace {

namespace cond = conditions;

// Does `parent` have a hierarchical child named `name` (namespace 0) already?
bool hasChild(const AddressSpace& space, const NodeRef& parent, std::string_view name) {
    bool found = false;
    space.forEachReference(parent, [&](std::uint32_t type, bool forward, const ua::NodeId& t) {
        if (found || !forward || !space.isSubtypeOf(type, addressspace::kHierarchicalReferences))
            return;
        NodeRef c = space.find(t);
        if (!c) return;
        ua::QualifiedName bn = space.browseNameOf(c);
        found = bn.namespace_index == 0 && ua::view(bn.name) == name;
    });
    return found;
}

}  // namespace

uaplex_status ServiceSet::Impl::readConditionField(void* user, const uaplex_nodeid*,
                                                   const uaplex_value_alloc* alloc,
                                                   uaplex_datavalue* out) noexcept {
    const auto* f = static_cast<const ConditionFieldNode*>(user);
    try {
        ua::Variant v{};
        uaplex_status st = f->impl->conditions->read(f->condition, f->field, *alloc, v);
        if (st != UAPLEX_Good) return st;
        out->value = v;
        out->mask |= UAPLEX_DATAVALUE_VALUE;
        return UAPLEX_Good;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

uaplex_status ServiceSet::Impl::conditionEvent(void* user, const uaplex_event_spec& spec) {
    return static_cast<Impl*>(user)->deliverEvent(spec);
}

void ServiceSet::Impl::makeConditionTable() {
    conditions = std::make_unique<cond::ConditionTable>(cfg.server.limits.max_conditions);
    conditions->setSink(&Impl::conditionEvent, this);
}

void ServiceSet::Impl::buildConditions() {
    addConfiguredAlarms();  // [[alarms]]: their Objects, collected below as any condition
    const ua::NodeId conditionType = ua::numericNodeId(0, cond::kConditionType);
    const ua::NodeId acknowledgeable = ua::numericNodeId(0, cond::kAcknowledgeableConditionType);
    const ua::NodeId alarm = ua::numericNodeId(0, cond::kAlarmConditionType);
    // The Objects of a ConditionType (sub)type, collected first: adding nodes moves the map.
    std::vector<ua::NodeId> found;
    space.forEachNode([&](Node& n) {
        if (n.nodeClass != addressspace::kObject) return;
        ua::NodeId t = space.typeDefinitionOf(NodeRef{nullptr, &n});
        if (ua::equal(t, conditionType) || space.isSubtypeOf(t, conditionType))
            found.push_back(n.id);  // interned: stays valid
    });
    for (const ua::NodeId& id : found) {
        NodeRef node = space.find(id);
        // A condition with an EnabledState of its node manager's is that node manager's: it
        // keeps its state and answers its methods (method_bind) itself.
        if (hasChild(space, node, "EnabledState")) continue;
        ua::NodeId type = space.typeDefinitionOf(node);
        cond::Kind kind =
            ua::equal(type, alarm) || space.isSubtypeOf(type, alarm) ? cond::Kind::Alarm
            : ua::equal(type, acknowledgeable) || space.isSubtypeOf(type, acknowledgeable)
                ? cond::Kind::Acknowledgeable
                : cond::Kind::Condition;
        // The source: the node with a HasCondition to it (else the condition itself).
        ua::NodeId source = id;
        space.forEachReference(node, [&](std::uint32_t rt, bool forward, const ua::NodeId& t) {
            if (!forward && rt == cond::kHasCondition) source = t;
        });
        NodeRef sourceNode = space.find(source);
        std::string sourceName(sourceNode ? ua::view(space.browseNameOf(sourceNode).name)
                                          : std::string_view());
        std::string name(ua::view(space.browseNameOf(node).name));
        if (!conditions->add(id, type, kind, source, sourceName, name)) {
            host::logger()->warn(
                "condition '{}' not served: more than [server.limits] max_conditions", name);
            continue;
        }
        // Its state variables, unless the node manager added one of that name itself.
        // Child NodeIds: `<string id>.<Name>`, `i=<number>.<Name>`, else `Condition<n>.<Name>`.
        const std::string prefix = id.identifier_type == UAPLEX_ID_STRING
                                       ? std::string(ua::view(id.identifier.string))
                                   : id.identifier_type == UAPLEX_ID_NUMERIC
                                       ? "i=" + std::to_string(id.identifier.numeric)
                                       : "Condition" + std::to_string(conditions->size());
        for (std::size_t i = 0; i < std::size_t(cond::Field::Count); ++i) {
            const auto f = cond::Field(i);
            if (!cond::hasField(kind, f)) continue;
            const cond::FieldInfo& info = cond::fieldInfo(f);
            std::string parentText = prefix;
            for (std::uint32_t k = 0; k + 1 < info.depth; ++k)
                parentText += "." + std::string(info.steps[k]);
            ua::NodeId parent =
                info.depth > 1 ? ua::stringNodeId(id.namespace_index, parentText) : id;
            NodeRef parentRef = space.find(parent);
            if (!parentRef) continue;  // the node manager's own state variable
            std::string_view childName = info.steps[info.depth - 1];
            if (hasChild(space, parentRef, childName)) continue;
            std::string text = parentText + "." + std::string(childName);
            ua::NodeId childId = ua::stringNodeId(id.namespace_index, text);
            ua::QualifiedName bn{0, ua::makeString(childName)};
            ua::NodeId refType = ua::numericNodeId(
                0, info.component ? addressspace::kHasComponent : addressspace::kHasProperty);
            ua::NodeId typeDef = ua::numericNodeId(0, info.typeDefinition);
            ua::NodeId dataType = ua::numericNodeId(0, info.dataType);
            uaplex_node_spec spec{};
            spec.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
            spec.node_id = &childId;
            spec.parent_id = &parent;
            spec.reference_type_id = &refType;
            spec.type_definition = &typeDef;
            spec.browse_name = &bn;
            if (info.dataType == 0) {  // the ShelvingState Object: its methods' ObjectId
                spec.node_class = addressspace::kObject;
                if (space.addNode(spec) == UAPLEX_Good) {
                    NodeRef added = space.find(childId);
                    conditions->setShelvingObject(id, space.nodeIdOf(added));  // interned
                }
                continue;
            }
            auto ref = std::make_unique<ConditionFieldNode>();
            ref->impl = this;
            ref->condition = id;
            ref->field = f;
            spec.node_class = addressspace::kVariable;
            spec.data_type = &dataType;
            spec.value_rank = -1;
            spec.access_level = addressspace::kCurrentRead;
            spec.read = &Impl::readConditionField;
            spec.user = ref.get();
            if (space.addNode(spec) == UAPLEX_Good) conditionFields.push_back(std::move(ref));
        }
    }
    // Conditions of plugins (condition_create): their callbacks; branches where asked for.
    for (const PluginCondition& p : pluginConditions) {
        if (p.call != nullptr) conditions->setCallback(p.id, p.call, p.user);
        if (p.flags & UAPLEX_CONDITION_BRANCHES) conditions->setBranching(p.id, true);
    }
    for (const auto& a : configuredAlarms)
        if (a->branches) conditions->setBranching(a->condition, true);
    conditions->startTimer();  // timed shelving ends on time
}

uaplex_status ServiceSet::Impl::raiseEvent(uaplex_plugin_ctx*,
                                           const uaplex_event_spec* spec) noexcept {
    addressspace::Pin pin = space.pin();  // any thread: the store may change meanwhile
    // A report on a condition the kernel holds: its state changes and it raises the event.
    if (spec->condition_id != nullptr && conditions && space.sealed() &&
        conditions->contains(*spec->condition_id)) {
        try {
            NodeRef source = space.find(*spec->source_node);
            if (!source) return UAPLEX_BadNodeIdUnknown;
            return conditions->report(*spec->condition_id, *spec, now());
        } catch (...) {
            return UAPLEX_BadOutOfMemory;
        }
    }
    return deliverEvent(*spec);
}

uaplex_status ServiceSet::Impl::callCondition(const ua::NodeId& object, std::uint32_t method,
                                              std::span<const ua::Variant> inputs,
                                              std::string_view user) noexcept {
    if (!conditions) return UAPLEX_BadNodeIdInvalid;
    addressspace::Pin pin = space.pin();
    try {
        return conditions->call(object, method, inputs, user, now());
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

uaplex_status ServiceSet::callCondition(const ua::NodeId& object, std::uint32_t method,
                                        std::span<const ua::Variant> inputs,
                                        std::string_view user) noexcept {
    return impl_->callCondition(object, method, inputs, user);
}

}  // namespace uaplex::services
