// SPDX-License-Identifier: Apache-2.0
// AddNodes, AddReferences, DeleteNodes, DeleteReferences (Part 4 5.7) on the kernel's store.
// Who may: sessions with one of [access] node_management_roles (ConfigureAdmin by default)
// that also hold the node's AddNode, DeleteNode, AddReference or RemoveReference permission;
// what: nodes in the server's own namespace (1) or a store namespace a plugin registered, never
// namespace 0 or a node manager's own namespace; DeleteNodes deletes what clients added only,
// and a reference is added or deleted only where one end is such a node. Each request is one
// batch under the model mutex, with one GeneralModelChangeEvent (model_changes.cpp).
#include <cmath>
#include <cstring>
#include <unordered_set>

#include <uaplex/encoding/generated/ns0.hpp>

#include "services_internal.hpp"

namespace uaplex::services {

namespace {

namespace n0 = ua::ns0;
using addressspace::kDataType;
using addressspace::kHasProperty;
using addressspace::kHasSubtype;
using addressspace::kHasTypeDefinition;
using addressspace::kHierarchicalReferences;
using addressspace::kMethod;
using addressspace::kObject;
using addressspace::kObjectType;
using addressspace::kReferenceType;
using addressspace::kVariable;
using addressspace::kVariableType;
using addressspace::kView;

// NodeAttributesMask bits (Part 4 7.19.1) the store takes.
enum : std::uint32_t {
    kSpecAccessLevel = 1u << 0,
    kSpecArrayDimensions = 1u << 1,
    kSpecDataType = 1u << 4,
    kSpecDescription = 1u << 5,
    kSpecDisplayName = 1u << 6,
    kSpecEventNotifier = 1u << 7,
    kSpecExecutable = 1u << 8,
    kSpecHistorizing = 1u << 9,
    kSpecIsAbstract = 1u << 11,
    kSpecMinimumSamplingInterval = 1u << 12,
    kSpecValueRank = 1u << 19,
    kSpecWriteMask = 1u << 20,
    kSpecValue = 1u << 21,
};

constexpr std::uint32_t kPermAddReference = config::permissionBit("AddReference");
constexpr std::uint32_t kPermRemoveReference = config::permissionBit("RemoveReference");
constexpr std::uint32_t kPermDeleteNode = config::permissionBit("DeleteNode");
constexpr std::uint32_t kPermAddNode = config::permissionBit("AddNode");
constexpr std::int32_t kTimestampsNeither = 3;
// More ArrayDimensions than any Variable needs; the decoder's array limit is far above it.
constexpr std::size_t kMaxArrayDimensions = 32;

bool isNullExpanded(const ua::ExpandedNodeId& e) noexcept {
    return e.server_index == 0 && e.namespace_uri.length <= 0 && isNullNodeId(e.node_id);
}

bool isTypeClass(std::uint32_t nc) noexcept {
    return nc == kObjectType || nc == kVariableType || nc == kDataType || nc == kReferenceType;
}

// A string or opaque identifier of no bytes names nothing (Part 3 8.2.4).
bool identifierValid(const ua::NodeId& id) noexcept {
    if (id.identifier_type == UAPLEX_ID_STRING) return id.identifier.string.length > 0;
    if (id.identifier_type == UAPLEX_ID_BYTESTRING) return id.identifier.bytestring.length > 0;
    return true;
}

// `in` with its identifier bytes copied into `arena` (the response outlives the node's).
bool copyNodeId(enc::Arena& arena, const ua::NodeId& in, ua::NodeId& out) noexcept {
    out = in;
    const char* src = nullptr;
    std::int32_t len = 0;
    if (in.identifier_type == UAPLEX_ID_STRING) {
        src = in.identifier.string.data;
        len = in.identifier.string.length;
    } else if (in.identifier_type == UAPLEX_ID_BYTESTRING) {
        src = reinterpret_cast<const char*>(in.identifier.bytestring.data);
        len = in.identifier.bytestring.length;
    }
    if (len <= 0) return true;
    char* dst = arena.allocateArray<char>(std::size_t(len));
    if (dst == nullptr) return false;
    std::memcpy(dst, src, std::size_t(len));
    if (in.identifier_type == UAPLEX_ID_STRING)
        out.identifier.string.data = dst;
    else
        out.identifier.bytestring.data = reinterpret_cast<const std::uint8_t*>(dst);
    return true;
}

bool sameName(const ua::QualifiedName& a, const ua::QualifiedName& b) noexcept {
    return a.namespace_index == b.namespace_index && ua::view(a.name) == ua::view(b.name);
}

// The base NodeAttributes every class has: DisplayName, Description, WriteMask.
template <class A>
void baseAttributes(const A& a, uaplex_node_spec& spec) noexcept {
    if (a.specifiedAttributes & kSpecDisplayName) spec.display_name = &a.displayName;
    if (a.specifiedAttributes & kSpecDescription) spec.description = &a.description;
    if (a.specifiedAttributes & kSpecWriteMask) spec.write_mask = a.writeMask;
}

template <class T>
const T* attributesAs(const ua::ExtensionObject& eo) noexcept {
    return eo.data_type == enc::dataTypeOf<T>() && eo.object != nullptr
               ? static_cast<const T*>(eo.object)
               : nullptr;
}

}  // namespace

bool ServiceSet::Impl::localNodeId(const ua::ExpandedNodeId& e, ua::NodeId& out) const noexcept {
    if (e.server_index != 0) return false;
    out = e.node_id;
    if (e.namespace_uri.length < 0 || !(e.mask & UAPLEX_EXPANDEDNODEID_NAMESPACEURI)) return true;
    const auto& ns = space.namespaces();  // fixed once the server runs
    for (std::size_t i = 0; i < ns.size(); ++i)
        if (ns[i] == ua::view(e.namespace_uri)) {
            out.namespace_index = std::uint16_t(i);
            return true;
        }
    return false;
}

bool ServiceSet::Impl::booleanAttribute(enc::Arena& arena, const ua::NodeId& id,
                                        std::uint32_t attr) noexcept {
    ua::DataValue dv{};
    readAttribute(arena, id, attr, ua::nullString(), kTimestampsNeither, dv);
    return (dv.mask & UAPLEX_DATAVALUE_VALUE) && !(dv.status & 0x80000000u) &&
           ua::variantType(dv.value) == ua::BuiltinType::Boolean && !ua::isArray(dv.value) &&
           dv.value.value.boolean;
}

// --- AddNodes (Part 4 5.7.2) ----------------------------------------------------------------

uaplex_status ServiceSet::Impl::addNodeItem(const ServiceCall& call, const ua::AddNodesItem& item,
                                            ua::NodeId& added) noexcept {
    enc::Arena& arena = call.arena;
    // The parent and the reference from it.
    ua::NodeId parentId{};
    if (!localNodeId(item.parentNodeId, parentId)) return UAPLEX_BadParentNodeIdInvalid;
    const NodeRef parent = space.find(parentId);
    if (!parent) return UAPLEX_BadParentNodeIdInvalid;
    const std::uint32_t nc = std::uint32_t(item.nodeClass);
    if (nc != kObject && nc != kVariable && nc != kMethod && nc != kObjectType &&
        nc != kVariableType && nc != kReferenceType && nc != kDataType && nc != kView)
        return UAPLEX_BadNodeClassInvalid;
    const NodeRef refType = space.find(item.referenceTypeId);
    const std::uint32_t code = refType && refType.nodeClass() == kReferenceType
                                   ? space.referenceTypeCode(item.referenceTypeId)
                                   : 0;
    if (code == 0) return UAPLEX_BadReferenceTypeIdInvalid;
    if (booleanAttribute(arena, item.referenceTypeId, kAttrIsAbstract))
        return UAPLEX_BadReferenceNotAllowed;
    if (isTypeClass(nc)) {
        // A type is added below its supertype, which is of its own NodeClass.
        if (code != kHasSubtype) return UAPLEX_BadReferenceNotAllowed;
        if (parent.nodeClass() != nc) return UAPLEX_BadParentNodeIdInvalid;
    } else {
        if (code == kHasSubtype || !space.isSubtypeOf(code, kHierarchicalReferences))
            return UAPLEX_BadReferenceNotAllowed;
        if (space.isSubtypeOf(code, kHasProperty) && nc != kVariable)
            return UAPLEX_BadReferenceNotAllowed;
    }
    // Views live in namespace 0 only; a ReferenceType's code is fixed once the server runs
    // (address_space.hpp): neither is added while it runs.
    if (nc == kView || nc == kReferenceType) return UAPLEX_BadNodeClassInvalid;

    // The NodeId: the client's, or the next free one of namespace 1.
    ua::NodeId id{};
    if (isNullExpanded(item.requestedNewNodeId)) {
        if (ownerOf(1) != nullptr) return UAPLEX_BadNodeIdRejected;
        std::size_t probes = 0;
        for (;; ++nextAssignedId) {
            if (nextAssignedId == 0) nextAssignedId = 1;
            id = ua::numericNodeId(1, nextAssignedId);
            if (!space.find(id)) break;
            // More probes than stored nodes: every id tried is taken (a full store).
            if (++probes > space.dynamicNodeCount() + 1) return UAPLEX_BadResourceUnavailable;
        }
        ++nextAssignedId;
    } else {
        if (!localNodeId(item.requestedNewNodeId, id)) return UAPLEX_BadNodeIdRejected;
        SessionNodeRef sessionRef;
        if (id.namespace_index == 0 || id.namespace_index >= space.namespaces().size() ||
            ownerOf(id.namespace_index) != nullptr || !identifierValid(id) ||
            isSessionNode(id, sessionRef))
            return UAPLEX_BadNodeIdRejected;
        if (space.find(id)) return UAPLEX_BadNodeIdExists;
    }
    if (!(permissionsOf(call, id) & kPermAddNode)) return UAPLEX_BadUserAccessDenied;

    // The BrowseName: present, and unique among the parent's children by this reference.
    const ua::QualifiedName& name = item.browseName;
    if (name.name.length <= 0 || name.namespace_index >= space.namespaces().size())
        return UAPLEX_BadBrowseNameInvalid;
    bool duplicated = false;
    space.forEachReference(parent, [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
        if (duplicated || !forward || type != code) return;
        const NodeRef child = space.find(target);
        if (child && sameName(space.browseNameOf(child), name)) duplicated = true;
    });
    if (duplicated) return UAPLEX_BadBrowseNameDuplicated;

    // The attributes of the class (SpecifiedAttributes says which the client set).
    uaplex_node_spec spec{};
    spec.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
    spec.node_class = nc;
    spec.node_id = &id;
    spec.parent_id = &parentId;
    spec.reference_type_id = &item.referenceTypeId;
    spec.browse_name = &name;
    spec.value_rank = nc == kVariable ? -1 : -2;
    spec.access_level = addressspace::kCurrentRead;
    ua::DataValue initial{};
    const ua::ExtensionObject& eo = item.nodeAttributes;
    auto variableLike = [&](const auto& a) -> uaplex_status {
        const std::uint32_t m = a.specifiedAttributes;
        if (m & kSpecDataType) {
            const NodeRef dt = space.find(a.dataType);
            if (!dt || dt.nodeClass() != kDataType) return UAPLEX_BadNodeAttributesInvalid;
            spec.data_type = &a.dataType;
        }
        if (m & kSpecValueRank) {
            if (a.valueRank < -3) return UAPLEX_BadNodeAttributesInvalid;
            spec.value_rank = a.valueRank;
        }
        if ((m & kSpecArrayDimensions) && a.arrayDimensions.size() > 0) {
            // As many dimensions as the ValueRank says (Part 3 5.6.2).
            if (a.arrayDimensions.size() > kMaxArrayDimensions || spec.value_rank <= 0 ||
                a.arrayDimensions.size() != std::size_t(spec.value_rank))
                return UAPLEX_BadNodeAttributesInvalid;
            spec.array_dimensions_count = std::uint32_t(a.arrayDimensions.size());
            spec.array_dimensions = a.arrayDimensions.data;
        }
        if ((m & kSpecValue) && a.value.encoding != 0) {
            const ua::NodeId dataType =
                spec.data_type != nullptr ? *spec.data_type : ua::numericNodeId(0, 24);
            if (!typeMatches(dataType, a.value) || !rankMatches(spec.value_rank, a.value))
                return UAPLEX_BadNodeAttributesInvalid;
            initial.mask = UAPLEX_DATAVALUE_VALUE;
            initial.value = a.value;
            spec.value = &initial;
        }
        return UAPLEX_Good;
    };
    uaplex_status attrs = UAPLEX_BadNodeAttributesInvalid;
    switch (nc) {
        case kObject:
            if (const auto* a = attributesAs<ua::ObjectAttributes>(eo)) {
                baseAttributes(*a, spec);
                attrs = UAPLEX_Good;
                if (a->specifiedAttributes & kSpecEventNotifier) {
                    // SubscribeToEvents only: the history of events is fixed at start.
                    if (a->eventNotifier & ~UAPLEX_EVENT_NOTIFIER_SUBSCRIBE)
                        attrs = UAPLEX_BadNodeAttributesInvalid;
                    spec.event_notifier = a->eventNotifier;
                }
            }
            break;
        case kVariable:
            if (const auto* a = attributesAs<ua::VariableAttributes>(eo)) {
                baseAttributes(*a, spec);
                attrs = variableLike(*a);
                const std::uint32_t m = a->specifiedAttributes;
                if (m & kSpecAccessLevel) spec.access_level = a->accessLevel;
                if (m & kSpecMinimumSamplingInterval) {
                    if (!std::isfinite(a->minimumSamplingInterval) ||
                        (a->minimumSamplingInterval < 0 && a->minimumSamplingInterval != -1))
                        attrs = UAPLEX_BadNodeAttributesInvalid;
                    spec.minimum_sampling_interval = a->minimumSamplingInterval;
                }
                // The recorded nodes of [history] are fixed when the server starts.
                if ((m & kSpecHistorizing) && a->historizing)
                    attrs = UAPLEX_BadNodeAttributesInvalid;
            }
            break;
        case kMethod:
            if (const auto* a = attributesAs<ua::MethodAttributes>(eo)) {
                baseAttributes(*a, spec);
                if ((a->specifiedAttributes & kSpecExecutable) && !a->executable)
                    spec.method_flags = UAPLEX_METHOD_NOT_EXECUTABLE;
                attrs = UAPLEX_Good;
            }
            break;
        case kObjectType:
            if (const auto* a = attributesAs<ua::ObjectTypeAttributes>(eo)) {
                baseAttributes(*a, spec);
                spec.is_abstract = (a->specifiedAttributes & kSpecIsAbstract) && a->isAbstract;
                attrs = UAPLEX_Good;
            }
            break;
        case kVariableType:
            if (const auto* a = attributesAs<ua::VariableTypeAttributes>(eo)) {
                baseAttributes(*a, spec);
                spec.is_abstract = (a->specifiedAttributes & kSpecIsAbstract) && a->isAbstract;
                attrs = variableLike(*a);
            }
            break;
        default:  // kDataType
            if (const auto* a = attributesAs<ua::DataTypeAttributes>(eo)) {
                baseAttributes(*a, spec);
                spec.is_abstract = (a->specifiedAttributes & kSpecIsAbstract) && a->isAbstract;
                attrs = UAPLEX_Good;
            }
            break;
    }
    if (attrs != UAPLEX_Good) return attrs;

    // The TypeDefinition: Objects and Variables only, a concrete type of the matching class.
    ua::NodeId typeDef{};
    if (!isNullExpanded(item.typeDefinition)) {
        if (nc != kObject && nc != kVariable) return UAPLEX_BadTypeDefinitionInvalid;
        if (!localNodeId(item.typeDefinition, typeDef)) return UAPLEX_BadTypeDefinitionInvalid;
        const NodeRef t = space.find(typeDef);
        if (!t || t.nodeClass() != (nc == kObject ? kObjectType : kVariableType) ||
            booleanAttribute(arena, typeDef, kAttrIsAbstract))
            return UAPLEX_BadTypeDefinitionInvalid;
        spec.type_definition = &typeDef;
    }

    Node* node = nullptr;
    uaplex_status st = addSpec(nullptr, spec, true, &node);
    if (st != UAPLEX_Good) return st;
    if (node == nullptr || !copyNodeId(arena, node->id, added)) return UAPLEX_BadOutOfMemory;
    return UAPLEX_Good;
}

template <class Response, class Result, class Each>
uaplex_status ServiceSet::Impl::nodeManagementFrame(ServiceCall& call, std::size_t n,
                                                    Each&& each) noexcept {
    if (!cfg.server.node_management) return UAPLEX_BadServiceUnsupported;
    if (n == 0) return UAPLEX_BadNothingToDo;
    if (n > cfg.server.limits.max_nodes_per_node_management) return UAPLEX_BadTooManyOperations;
    auto* resp = call.arena.allocateArray<Response>(1);
    auto* results = call.arena.allocateArray<Result>(n);
    if (resp == nullptr || results == nullptr) return UAPLEX_BadOutOfMemory;
    const bool admin = call.access == nullptr || (call.access->roles() & nodeManagementRoles);
    std::vector<addressspace::ModelChange> changes;
    {
        std::lock_guard lock(modelMutex());
        each(admin, results);
        changes = finishChanges();
    }
    raiseModelChange(changes);
    resp->results = {std::int32_t(n), results};
    resp->diagnosticInfos = {-1, nullptr};
    call.responseType = enc::dataTypeOf<Response>();
    call.response = resp;
    return UAPLEX_Good;
}

uaplex_status ServiceSet::Impl::addNodes(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::AddNodesRequest*>(call.request);
    return nodeManagementFrame<ua::AddNodesResponse, ua::AddNodesResult>(
        call, req.nodesToAdd.size(), [&](bool admin, ua::AddNodesResult* results) {
            for (std::size_t i = 0; i < req.nodesToAdd.size(); ++i)
                results[i].statusCode =
                    admin ? addNodeItem(call, req.nodesToAdd[i], results[i].addedNodeId)
                          : UAPLEX_BadUserAccessDenied;
        });
}

// --- DeleteNodes (Part 4 5.7.4) -------------------------------------------------------------

uaplex_status ServiceSet::Impl::deleteNodes(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::DeleteNodesRequest*>(call.request);
    const std::size_t n = req.nodesToDelete.size();
    return nodeManagementFrame<ua::DeleteNodesResponse, ua::StatusCode>(
        call, n, [&](bool admin, ua::StatusCode* results) {
            try {
                // deleteTargetReferences is per item: one deletion per setting.
                std::vector<Node*> doomed[2];
                std::unordered_set<const Node*> seen;
                seen.reserve(n);
                for (std::size_t i = 0; i < n; ++i) {
                    const ua::DeleteNodesItem& item = req.nodesToDelete[i];
                    uaplex_status& st = results[i];
                    if (!admin) {
                        st = UAPLEX_BadUserAccessDenied;
                        continue;
                    }
                    Node* node = space.mutableNode(item.nodeId);
                    SessionNodeRef sessionRef;
                    const std::uint32_t perms = permissionsOf(call, item.nodeId);
                    if (!(perms & kPermDeleteNode)) {
                        st = deniedStatus(perms);
                    } else if (node == nullptr) {
                        // Namespace 0, a node manager's and the session diagnostics nodes exist
                        // but are not the client's to delete.
                        const bool other = space.find(item.nodeId) ||
                                           ownerOf(item.nodeId.namespace_index) != nullptr ||
                                           isSessionNode(item.nodeId, sessionRef);
                        st = other ? UAPLEX_BadUserAccessDenied : UAPLEX_BadNodeIdUnknown;
                    } else if (!node->clientAdded) {
                        st = UAPLEX_BadUserAccessDenied;  // a node manager's or the kernel's
                    } else if (!seen.insert(node).second) {
                        st = UAPLEX_BadNodeIdUnknown;  // named twice: gone with the first
                    } else {
                        st = space.deletable(*node);
                    }
                    if (st == UAPLEX_Good)
                        doomed[item.deleteTargetReferences ? 1 : 0].push_back(node);
                }
                removeNodes(doomed[0], false);
                removeNodes(doomed[1], true);
            } catch (...) {
                for (std::size_t i = 0; i < n; ++i)
                    if (results[i] == UAPLEX_Good) results[i] = UAPLEX_BadOutOfMemory;
            }
        });
}

// --- AddReferences (Part 4 5.7.3) -----------------------------------------------------------

uaplex_status ServiceSet::Impl::referenceSource(const ua::NodeId& sourceId,
                                                const ua::NodeId& typeId, NodeRef& source,
                                                std::uint32_t& code) noexcept {
    source = space.find(sourceId);
    if (!source)
        return ownerOf(sourceId.namespace_index) != nullptr ? UAPLEX_BadUserAccessDenied
                                                            : UAPLEX_BadSourceNodeIdInvalid;
    const NodeRef refType = space.find(typeId);
    code = refType && refType.nodeClass() == kReferenceType ? space.referenceTypeCode(typeId) : 0;
    return code == 0 ? UAPLEX_BadReferenceTypeIdInvalid : UAPLEX_Good;
}

uaplex_status ServiceSet::Impl::addReferenceItem(const ServiceCall& call,
                                                 const ua::AddReferencesItem& item) noexcept {
    NodeRef source;
    std::uint32_t code = 0;
    if (const uaplex_status st =
            referenceSource(item.sourceNodeId, item.referenceTypeId, source, code);
        st != UAPLEX_Good)
        return st;
    if (booleanAttribute(call.arena, item.referenceTypeId, kAttrIsAbstract))
        return UAPLEX_BadReferenceNotAllowed;
    // References to other servers are not kept.
    if (item.targetServerUri.length > 0 || item.targetNodeId.server_index != 0)
        return UAPLEX_BadServerUriInvalid;
    ua::NodeId targetId{};
    if (!localNodeId(item.targetNodeId, targetId)) return UAPLEX_BadTargetNodeIdInvalid;
    const NodeRef target = space.find(targetId);
    if (!target) return UAPLEX_BadTargetNodeIdInvalid;
    if (ua::equal(item.sourceNodeId, targetId)) return UAPLEX_BadInvalidSelfReference;
    if (item.targetNodeClass != ua::NodeClass(0) &&
        std::uint32_t(item.targetNodeClass) != target.nodeClass())
        return UAPLEX_BadNodeClassInvalid;
    // Only a node a client added may gain references (the others' models are their owners').
    const bool clientEnd =
        (source.dyn && source.dyn->clientAdded) || (target.dyn && target.dyn->clientAdded);
    if (!clientEnd) return UAPLEX_BadUserAccessDenied;
    const std::uint32_t perms = permissionsOf(call, item.sourceNodeId);
    if (!(perms & kPermAddReference)) return deniedStatus(perms);
    bool duplicate = false;
    space.forEachReference(source, [&](std::uint32_t type, bool forward, const ua::NodeId& to) {
        duplicate =
            duplicate || (type == code && forward == item.isForward && ua::equal(to, targetId));
    });
    if (duplicate) return UAPLEX_BadDuplicateReferenceNotAllowed;

    // The references the model's structure depends on (Part 3 7.10, 7.13, 7.15).
    const NodeRef& from = item.isForward ? source : target;  // the forward direction's source
    const NodeRef& to = item.isForward ? target : source;
    const ua::NodeId fromId = space.nodeIdOf(from);
    const ua::NodeId toId = space.nodeIdOf(to);
    if (space.isSubtypeOf(code, kHasSubtype)) {
        // A client's type gets its one supertype, of its own NodeClass, without a cycle.
        if (from.nodeClass() != to.nodeClass() || !isTypeClass(from.nodeClass()) ||
            from.nodeClass() == kReferenceType || !to.dyn || !to.dyn->clientAdded ||
            space.superTypeOf(to) || space.isSubtypeOf(fromId, toId))
            return UAPLEX_BadReferenceNotAllowed;
    } else if (space.isSubtypeOf(code, kHasTypeDefinition)) {
        const std::uint8_t want = from.nodeClass() == kObject     ? kObjectType
                                  : from.nodeClass() == kVariable ? kVariableType
                                                                  : 0;
        if (want == 0 || to.nodeClass() != want || !isNullNodeId(space.typeDefinitionOf(from)))
            return UAPLEX_BadReferenceNotAllowed;
    } else if (space.isSubtypeOf(code, kHasProperty)) {
        if (to.nodeClass() != kVariable) return UAPLEX_BadReferenceNotAllowed;
    }
    try {
        return space.addReference(item.sourceNodeId, code, targetId, item.isForward);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

uaplex_status ServiceSet::Impl::addReferences(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::AddReferencesRequest*>(call.request);
    return nodeManagementFrame<ua::AddReferencesResponse, ua::StatusCode>(
        call, req.referencesToAdd.size(), [&](bool admin, ua::StatusCode* results) {
            for (std::size_t i = 0; i < req.referencesToAdd.size(); ++i)
                results[i] = admin ? addReferenceItem(call, req.referencesToAdd[i])
                                   : UAPLEX_BadUserAccessDenied;
        });
}

// --- DeleteReferences (Part 4 5.7.5) --------------------------------------------------------

uaplex_status ServiceSet::Impl::deleteReferenceItem(const ServiceCall& call,
                                                    const ua::DeleteReferencesItem& item) noexcept {
    NodeRef source;
    std::uint32_t code = 0;
    if (const uaplex_status st =
            referenceSource(item.sourceNodeId, item.referenceTypeId, source, code);
        st != UAPLEX_Good)
        return st;
    if (item.targetNodeId.server_index != 0) return UAPLEX_BadServerIndexInvalid;
    ua::NodeId targetId{};
    if (!localNodeId(item.targetNodeId, targetId)) return UAPLEX_BadTargetNodeIdInvalid;
    // The target may be gone already (DeleteNodes without deleteTargetReferences).
    const NodeRef target = space.find(targetId);
    const bool clientEnd =
        (source.dyn && source.dyn->clientAdded) || (target.dyn && target.dyn->clientAdded);
    if (!clientEnd) return UAPLEX_BadUserAccessDenied;
    const std::uint32_t perms = permissionsOf(call, item.sourceNodeId);
    if (!(perms & kPermRemoveReference)) return deniedStatus(perms);
    try {
        return space.deleteReference(item.sourceNodeId, code, targetId, item.isForward,
                                     item.deleteBidirectional);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

uaplex_status ServiceSet::Impl::deleteReferences(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::DeleteReferencesRequest*>(call.request);
    return nodeManagementFrame<ua::DeleteReferencesResponse, ua::StatusCode>(
        call, req.referencesToDelete.size(), [&](bool admin, ua::StatusCode* results) {
            for (std::size_t i = 0; i < req.referencesToDelete.size(); ++i)
                results[i] = admin ? deleteReferenceItem(call, req.referencesToDelete[i])
                                   : UAPLEX_BadUserAccessDenied;
        });
}

}  // namespace uaplex::services
