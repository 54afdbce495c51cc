// SPDX-License-Identifier: Apache-2.0
// Structure changes of the store while the server runs: the host API's node_add, nodes_add,
// nodes_delete, reference_add and reference_delete (and the NodeManagement services) change
// the address space under one mutex; readers never take it (address_space.hpp, reclaim.hpp).
// Each batch ends by freeing what no reader can hold any more and by one
// GeneralModelChangeEvent naming what changed.
#include <unordered_set>

#include "services_internal.hpp"

namespace uaplex::services {

std::mutex& ServiceSet::Impl::modelMutex() {
    // Serialises every structure change of the address space (before and after seal).
    static std::mutex m;
    return m;
}

uaplex_status ServiceSet::Impl::addSpec(const void* owner, const uaplex_node_spec& spec,
                                        bool clientAdded, Node** out) noexcept {
    // The 1.1 layout is the smallest accepted; later fields are read only when present.
    if (!UAPLEX_HAS_FIELD(&spec, uaplex_node_spec, reserved1)) return UAPLEX_BadInvalidArgument;
    try {
        Node* node = nullptr;
        // Owner first: readers may find the node as soon as it is published.
        uaplex_status st = space.addNode(spec, &node, owner, clientAdded);
        if (st == UAPLEX_Good && node && out != nullptr) *out = node;
        return st;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

namespace {
constexpr std::uint32_t kGeneralModelChangeEventType = 2133;
constexpr std::uint32_t kServerObject = 2253;
}  // namespace

void ServiceSet::Impl::bumpNodeVersion(const ua::NodeId& affected) noexcept {
    // The NodeVersion property (Part 3 5.2.8, a String) of a node whose references changed.
    NodeRef n = space.find(affected);
    if (!n.dyn) return;
    Node* version = nullptr;
    space.forEachReference(n, [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
        if (version != nullptr || !forward || type != addressspace::kHasProperty) return;
        Node* p = space.mutableNode(target);
        if (p != nullptr && p->nodeClass == addressspace::kVariable &&
            p->browseName.namespace_index == 0 && ua::view(p->browseName.name) == "NodeVersion")
            version = p;
    });
    if (version == nullptr || version->callbacks.readsValue()) return;
    try {
        enc::Arena arena(256, 256);
        ua::DataValue current{};
        std::uint64_t next = 1;
        if (version->value.read(arena, current) == UAPLEX_Good &&
            (current.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_STRING &&
            !ua::isArray(current.value)) {
            std::string text(ua::view(current.value.value.string));
            std::uint64_t was = 0;
            bool digits = !text.empty() && text.size() < 20;
            for (char ch : text) {
                if (ch < '0' || ch > '9')
                    digits = false;
                else
                    was = was * 10 + std::uint64_t(ch - '0');
            }
            if (digits) next = was + 1;
        }
        std::string text = std::to_string(next);
        ua::DataValue dv{};
        dv.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        dv.value = ua::variantString(text);
        dv.source_timestamp = ua::utcNow();
        if (version->value.store(dv) == UAPLEX_Good) changed(*version, dv);
    } catch (...) {  // NOLINT(bugprone-empty-catch): the version stays as it was
    }
}

std::vector<addressspace::ModelChange> ServiceSet::Impl::finishChanges() noexcept {
    std::vector<addressspace::ModelChange> changes = space.takeChanges();
    for (const addressspace::ModelChange& c : changes)
        if (c.verb & (addressspace::ModelChange::kReferenceAdded |
                      addressspace::ModelChange::kReferenceDeleted))
            bumpNodeVersion(c.affectedId());
    space.collect();
    return changes;
}

uaplex_status ServiceSet::Impl::nodesAdd(uaplex_plugin_ctx* ctx,
                                         const uaplex_node_spec* const* specs, size_t count,
                                         uaplex_status* results) noexcept {
    if (count > cfg.server.limits.max_nodes_per_node_management && count > 1)
        return UAPLEX_BadTooManyOperations;
    std::vector<addressspace::ModelChange> changes;
    uaplex_status single = UAPLEX_Good;
    {
        std::lock_guard lock(modelMutex());
        for (size_t i = 0; i < count; ++i) {
            uaplex_status st =
                specs[i] == nullptr ? UAPLEX_BadInvalidArgument : addSpec(ctx, *specs[i], false);
            if (results != nullptr) results[i] = st;
            single = st;
        }
        changes = finishChanges();
    }
    raiseModelChange(changes);
    // node_add (no results array) answers its one item's status.
    return results == nullptr ? single : UAPLEX_Good;
}

void ServiceSet::Impl::removeNodes(std::span<Node* const> nodes, bool deleteTargetReferences) {
    std::vector<std::uint64_t> handles;
    handles.reserve(nodes.size());
    for (Node* n : nodes)
        if (n->nodeClass == addressspace::kVariable) handles.push_back(n->serial << 1);
    space.deleteNodes(nodes, deleteTargetReferences);
    // Their monitored items hear it once (the Value's handle is never served again).
    if (auto fn = valueChanged.load(std::memory_order_acquire)) {
        ua::DataValue gone{};
        gone.mask = UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
        gone.status = UAPLEX_BadNodeIdUnknown;
        gone.server_timestamp = ua::utcNow();
        for (std::uint64_t h : handles) fn(valueChangedUser, h, gone);
    }
}

uaplex_status ServiceSet::Impl::nodesDelete(uaplex_plugin_ctx* ctx, const uaplex_nodeid* ids,
                                            size_t count, bool deleteTargetReferences,
                                            uaplex_status* results) noexcept {
    if (count > cfg.server.limits.max_nodes_per_node_management) return UAPLEX_BadTooManyOperations;
    std::vector<addressspace::ModelChange> changes;
    {
        std::lock_guard lock(modelMutex());
        try {
            std::vector<Node*> doomed;
            std::unordered_set<const Node*> seen;
            doomed.reserve(count);
            for (size_t i = 0; i < count; ++i) {
                Node* n = space.mutableNode(ids[i]);
                uaplex_status st = UAPLEX_Good;
                if (n == nullptr || !seen.insert(n).second)
                    st = UAPLEX_BadNodeIdUnknown;
                else if (n->callbacks.owner != ctx || n->clientAdded)
                    st = UAPLEX_BadUserAccessDenied;  // not this plugin's node
                else
                    st = space.deletable(*n);
                results[i] = st;
                if (st == UAPLEX_Good) doomed.push_back(n);
            }
            removeNodes(doomed, deleteTargetReferences);
        } catch (...) {
            for (size_t i = 0; i < count; ++i)
                if (results[i] == UAPLEX_Good) results[i] = UAPLEX_BadOutOfMemory;
        }
        changes = finishChanges();
    }
    raiseModelChange(changes);
    return UAPLEX_Good;
}

uaplex_status ServiceSet::Impl::referenceDelete(uaplex_plugin_ctx* ctx, const uaplex_nodeid* source,
                                                const uaplex_nodeid* type,
                                                const uaplex_nodeid* target,
                                                bool bidirectional) noexcept {
    std::vector<addressspace::ModelChange> changes;
    uaplex_status st = UAPLEX_Good;
    {
        std::lock_guard lock(modelMutex());
        NodeRef s = space.find(*source);
        NodeRef t = space.find(*type);
        std::uint32_t code =
            t && t.nodeClass() == addressspace::kReferenceType ? space.referenceTypeCode(*type) : 0;
        if (!s) {
            st = UAPLEX_BadSourceNodeIdInvalid;
        } else if (code == 0) {
            st = UAPLEX_BadReferenceTypeIdInvalid;
        } else if (s.dyn && s.dyn->callbacks.owner != ctx) {
            st = UAPLEX_BadUserAccessDenied;
        } else {
            try {
                st = space.deleteReference(*source, code, *target, true, bidirectional);
            } catch (...) {
                st = UAPLEX_BadOutOfMemory;
            }
        }
        changes = finishChanges();
    }
    raiseModelChange(changes);
    return st;
}

void ServiceSet::Impl::raiseModelChange(
    const std::vector<addressspace::ModelChange>& changes) noexcept {
    if (changes.empty() || !space.sealed()) return;  // while node managers start: no event
    try {
        // One entry per node and verb set (a node added and its parent's new reference are
        // two entries), in the order they happened.
        std::vector<ua::ModelChangeStructureDataType> items(changes.size());
        std::vector<ua::ExtensionObject> eos(changes.size());
        const enc::DataType* type = enc::dataTypeOf<ua::ModelChangeStructureDataType>();
        for (std::size_t i = 0; i < changes.size(); ++i) {
            items[i].affected = changes[i].affectedId();
            items[i].affectedType = changes[i].affectedTypeId();
            items[i].verb = changes[i].verb;
            eos[i] = ua::ExtensionObject{};
            eos[i].encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
            eos[i].type_id = ua::numericNodeId(0, type->binaryEncodingId);
            eos[i].data_type = type;
            eos[i].object = &items[i];
        }
        ua::Variant value = ua::variantArray(ua::BuiltinType::ExtensionObject,
                                             std::int32_t(eos.size()), eos.data());
        static const ua::QualifiedName kChanges{0, ua::makeString("Changes")};
        uaplex_event_field field{};
        field.browse_path = &kChanges;
        field.browse_path_length = 1;
        field.value = &value;
        const ua::NodeId eventType = ua::numericNodeId(0, kGeneralModelChangeEventType);
        const ua::NodeId server = ua::numericNodeId(0, kServerObject);
        uaplex_event_spec spec{};
        spec.hdr = UAPLEX_HEADER_INIT(uaplex_event_spec, UAPLEX_STYPE_EVENT_SPEC);
        spec.field_count = 1;
        spec.event_type = &eventType;
        spec.source_node = &server;
        spec.fields = &field;
        addressspace::Pin pin = space.pin();
        (void)deliverEvent(spec);
    } catch (...) {  // NOLINT(bugprone-empty-catch): out of memory: the event is lost
    }
}

}  // namespace uaplex::services
