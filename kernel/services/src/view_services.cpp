// SPDX-License-Identifier: Apache-2.0
// Browse, BrowseNext, TranslateBrowsePathsToNodeIds, RegisterNodes, UnregisterNodes
// (Part 4 5.8).
#include <algorithm>
#include <cstring>

#include <uaplex/encoding/generated/ns0.hpp>

#include "async_operations.hpp"
#include "services_internal.hpp"

namespace uaplex::services {

namespace {

constexpr std::uint32_t kMaskReferenceType = 1, kMaskIsForward = 2, kMaskNodeClass = 4,
                        kMaskBrowseName = 8, kMaskDisplayName = 16, kMaskTypeDefinition = 32;

using Hit = BrowseHit;

std::string encodeNodeId(const ua::NodeId& id) {
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    enc::encode(w, id);
    return std::string(reinterpret_cast<const char*>(buf.data()), buf.size());
}

bool decodeNodeId(const std::string& bytes, enc::Arena& arena, ua::NodeId& out) {
    enc::BinaryReader r(std::span<const std::uint8_t>(
                            reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()),
                        arena, enc::DecodeLimits{});
    enc::decode(r, out);
    return r.ok();
}

ua::ByteString continuationBytes(enc::Arena& arena, std::uint64_t id) {
    auto* p = static_cast<std::uint8_t*>(arena.allocate(8, 8));
    if (p == nullptr) return ua::nullByteString();
    std::memcpy(p, &id, 8);
    return ua::ByteString{8, p};
}

struct SinkState {
    std::vector<Hit>* hits;
    enc::Arena* arena;
    const addressspace::AddressSpace* space;
    std::size_t limit;    // max_array_length (0: none)
    bool faulty = false;  // a reference the encoder cannot take, or past the limit
};

// The references a node manager may report for one node: no more than an array may hold
// (MaxArrayLength), so a browse that never ends cannot take the worker's memory.
std::size_t ownedReferenceLimit(const config::ServerConfig& cfg) noexcept {
    const std::int32_t n = cfg.server.limits.max_array_length;
    return n > 0 ? std::size_t(n) : SIZE_MAX;
}

// Copies what a node-manager plugin reports (borrowed for the call) into the arena.
uaplex_status collectPluginReference(void* user, const uaplex_reference* ref) {
    auto* s = static_cast<SinkState*>(user);
    if (ref == nullptr || ref->target_id == nullptr || !pluginNodeIdOk(*ref->target_id)) {
        s->faulty = true;
        return UAPLEX_BadInvalidArgument;
    }
    if (s->hits->size() >= s->limit) {
        s->faulty = true;
        return UAPLEX_BadInternalError;
    }
    ua::NodeId target = *ref->target_id;
    // String and ByteString identifiers (one layout) are borrowed for this call only.
    if ((target.identifier_type == UAPLEX_ID_STRING ||
         target.identifier_type == UAPLEX_ID_BYTESTRING) &&
        target.identifier.string.length > 0) {
        auto* text =
            static_cast<char*>(s->arena->allocate(std::size_t(target.identifier.string.length), 1));
        if (text == nullptr) return UAPLEX_BadOutOfMemory;
        std::memcpy(text, target.identifier.string.data,
                    std::size_t(target.identifier.string.length));
        target.identifier.string.data = text;
    }
    std::uint32_t type = ref->reference_type_id != nullptr
                             ? s->space->referenceTypeCode(*ref->reference_type_id)
                             : 0;
    s->hits->push_back(Hit{type, ref->is_forward != 0, target, std::uint8_t(ref->node_class)});
    return UAPLEX_Good;
}

// The direction and reference type a browse asks for.
struct BrowseMatch {
    const addressspace::AddressSpace& space;
    const ContinuationPoint& cp;
    bool hasType;
    std::uint32_t wantType;
    BrowseMatch(const addressspace::AddressSpace& s, const ContinuationPoint& c)
        : space(s),
          cp(c),
          hasType(!isNullNodeId(c.referenceType)),
          wantType(hasType ? s.referenceTypeCode(c.referenceType) : 0) {}
    bool operator()(std::uint32_t type, bool forward) const {
        if (cp.direction == 0 && !forward) return false;
        if (cp.direction == 1 && forward) return false;
        if (!hasType) return true;
        return cp.includeSubtypes ? space.isSubtypeOf(type, wantType) : type == wantType;
    }
};

}  // namespace

uaplex_status ServiceSet::Impl::collectAsyncReference(void* user,
                                                      const uaplex_reference* ref) noexcept {
    auto* b = static_cast<PendingBrowse*>(user);
    AsyncRequest& r = *b->request;
    std::lock_guard lock(r.mutex);  // the request's arena; one sink call at a time anyway
    if (b->done) return UAPLEX_BadInvalidState;
    SinkState sink{&b->hits, &r.arena, &r.impl->space, b->limit, b->faulty};
    uaplex_status st = UAPLEX_BadOutOfMemory;
    try {
        st = collectPluginReference(&sink, ref);
    } catch (...) {
        sink.faulty = true;
    }
    b->faulty = sink.faulty;
    return st;
}

void ServiceSet::Impl::browseOne(enc::Arena& arena, SessionState* session, ContinuationPoint& cp,
                                 const ua::NodeId& nodeId, bool isNewBrowse,
                                 ua::BrowseResult& result,
                                 const session::AccessView* access) noexcept {
    result = ua::BrowseResult{};
    result.continuationPoint = ua::nullByteString();
    result.references = {0, nullptr};
    // Nodes without Browse are not shown; browsing from one is refused.
    auto visible = [&](const ua::NodeId& id) {
        return !access || (nodePermissions(access, id) & session::kPermBrowse) != 0;
    };
    if (!visible(nodeId)) {
        result.statusCode = UAPLEX_BadNodeIdUnknown;  // as if it did not exist (no oracle)
        return;
    }
    // Reused per worker thread: browsing allocates only while the vector grows.
    thread_local std::vector<Hit> hits;
    hits.clear();
    // A node manager's flood (up to max_array_length) is not kept for every later browse.
    if (hits.capacity() > 65536) std::vector<Hit>().swap(hits);
    const BrowseMatch matches(space, cp);
    const bool hasType = matches.hasType;
    NodeRef node = space.find(nodeId);
    // The offset of a continuation point counts references of the node as they were: once
    // they changed it would skip or repeat some (Part 4 5.8.3: the point is invalid).
    if (isNewBrowse) {
        cp.stored = bool(node);
        cp.generation = space.referenceGeneration(node);
    } else if (cp.stored && (!node || space.referenceGeneration(node) != cp.generation)) {
        result.statusCode = UAPLEX_BadContinuationPointInvalid;
        return;
    }
    try {
        if (node) {
            space.forEachReference(node,
                                   [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
                                       if (!matches(type, forward)) return;
                                       NodeRef t = space.find(target);
                                       std::uint8_t nc = t ? t.nodeClass() : 0;
                                       if (cp.nodeClassMask != 0 && !(cp.nodeClassMask & nc))
                                           return;
                                       if (!visible(target)) return;
                                       hits.push_back(Hit{type, forward, target, nc});
                                   });
            if (node.rec != nullptr &&
                node.rec->id == ua::ns0::Server_ServerDiagnostics_SessionsDiagnosticsSummary &&
                matches(addressspace::kHasComponent, true) &&
                (cp.nodeClassMask == 0 || (cp.nodeClassMask & addressspace::kObject))) {
                // Its SessionDiagnosticsObjects, one per session (session_nodes.cpp).
                const std::size_t first = hits.size();
                sessionObjectReferences(arena, hits);
                hits.erase(std::remove_if(hits.begin() + std::ptrdiff_t(first), hits.end(),
                                          [&](const Hit& h) { return !visible(h.target); }),
                           hits.end());
            }
        } else if (SessionNodeRef ref; isSessionNode(nodeId, ref)) {
            if (!sessionNodeReferences(arena, ref, hits)) {
                result.statusCode = UAPLEX_BadNodeIdUnknown;
                return;
            }
            pageBrowse(arena, session, cp, nodeId, isNewBrowse, hits, true, result, access);
            return;
        } else {
            const NamespaceOwner* owner = ownerOf(nodeId.namespace_index);
            if (owner == nullptr || owner->ops->browse == nullptr) {
                result.statusCode = UAPLEX_BadNodeIdUnknown;
                return;
            }
            SinkState sink{&hits, &arena, &space, ownedReferenceLimit(cfg)};
            uaplex_status st =
                owner->ops->browse(owner->self, &nodeId, std::uint32_t(cp.direction),
                                   hasType ? &cp.referenceType : nullptr, cp.includeSubtypes,
                                   &collectPluginReference, &sink);
            if (uaplex_status bad = ownerBrowseStatus(st, sink.faulty); bad != UAPLEX_Good) {
                hits.clear();
                result.statusCode = bad;
                return;
            }
            pageBrowse(arena, session, cp, nodeId, isNewBrowse, hits, true, result, access);
            return;
        }
    } catch (...) {
        result.statusCode = UAPLEX_BadOutOfMemory;
        return;
    }
    pageBrowse(arena, session, cp, nodeId, isNewBrowse, hits, false, result, access);
}

void ServiceSet::Impl::pageBrowse(enc::Arena& arena, SessionState* session, ContinuationPoint& cp,
                                  const ua::NodeId& nodeId, bool isNewBrowse,
                                  std::vector<BrowseHit>& hits, bool owned,
                                  ua::BrowseResult& result,
                                  const session::AccessView* access) noexcept {
    auto visible = [&](const ua::NodeId& id) {
        return !access || (nodePermissions(access, id) & session::kPermBrowse) != 0;
    };
    if (owned) {
        const BrowseMatch matches(space, cp);
        std::erase_if(hits, [&](const Hit& h) {
            return (h.referenceType != 0 && !matches(h.referenceType, h.isForward)) ||
                   (cp.nodeClassMask != 0 && !(cp.nodeClassMask & h.nodeClass)) ||
                   !visible(h.target);
        });
    }

    std::size_t total = hits.size();
    std::size_t start = std::min<std::size_t>(cp.offset, total);
    std::size_t count = total - start;
    if (cp.maxReferences != 0 && count > cp.maxReferences) count = cp.maxReferences;
    bool more = start + count < total;
    if (more && isNewBrowse) {
        std::uint32_t limit = cfg.server.limits.max_browse_continuation_points;
        if (session == nullptr) {
            result.statusCode = UAPLEX_BadNoContinuationPoints;
            return;
        }
        std::lock_guard lock(session->mutex);
        if (session->continuationPoints.size() >= limit) {
            result.statusCode = UAPLEX_BadNoContinuationPoints;
            return;
        }
        cp.id = session->nextContinuationId++;
        cp.offset = std::uint32_t(start + count);
        try {
            cp.nodeKey = encodeNodeId(nodeId);
            session->continuationPoints.push_back(cp);
        } catch (...) {
            result.statusCode = UAPLEX_BadOutOfMemory;
            return;
        }
    } else {
        cp.offset = std::uint32_t(start + count);
    }
    if (more) result.continuationPoint = continuationBytes(arena, cp.id);

    auto* refs = arena.allocateArray<ua::ReferenceDescription>(count);
    if (count != 0 && refs == nullptr) {
        result.statusCode = UAPLEX_BadOutOfMemory;
        return;
    }
    for (std::size_t i = 0; i < count; ++i) {
        const Hit& h = hits[start + i];
        ua::ReferenceDescription& r = refs[i];
        r.nodeId.node_id = h.target;
        r.nodeId.namespace_uri = ua::nullString();
        r.browseName.name = ua::nullString();
        r.displayName = ua::LocalizedText{0, ua::nullString(), ua::nullString()};
        r.typeDefinition.namespace_uri = ua::nullString();
        if (cp.resultMask & kMaskReferenceType)
            r.referenceTypeId = space.referenceTypeId(h.referenceType);
        if (cp.resultMask & kMaskIsForward) r.isForward = h.isForward;
        NodeRef t = space.find(h.target);
        if (cp.resultMask & kMaskNodeClass) r.nodeClass = static_cast<ua::NodeClass>(h.nodeClass);
        if (!t) {
            // A node of an owned namespace: its plugin knows the names.
            ua::Variant v{};
            if ((cp.resultMask & kMaskBrowseName) && ownedAttribute(arena, h.target, 3, v) &&
                (v.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_QUALIFIEDNAME)
                r.browseName = *static_cast<const ua::QualifiedName*>(v.value.pointer);
            if ((cp.resultMask & kMaskDisplayName) && ownedAttribute(arena, h.target, 4, v) &&
                (v.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_LOCALIZEDTEXT)
                r.displayName = *static_cast<const ua::LocalizedText*>(v.value.pointer);
            if ((cp.resultMask & kMaskTypeDefinition) &&
                (h.nodeClass == addressspace::kObject || h.nodeClass == addressspace::kVariable))
                r.typeDefinition.node_id = sessionNodeType(h.target);
            continue;
        }
        if (cp.resultMask & kMaskBrowseName) r.browseName = space.browseNameOf(t);
        if ((cp.resultMask & kMaskDisplayName) && !space.displayNameOf(t, arena, r.displayName)) {
            result.statusCode = UAPLEX_BadOutOfMemory;
            return;
        }
        if ((cp.resultMask & kMaskTypeDefinition) &&
            (h.nodeClass == addressspace::kObject || h.nodeClass == addressspace::kVariable))
            r.typeDefinition.node_id = space.typeDefinitionOf(t);
    }
    result.references = {std::int32_t(count), refs};
}

namespace {

// A node of an owned namespace whose manager has browse_async (or blocks): left to the batch (its
// result answered when the operation completes); false to browse it now.
template <class Impl>
bool browseLater(Impl& impl, AsyncBatch& batch, const ServiceCall& call,
                 const ContinuationPoint& cp, const ua::NodeId& nodeId, bool isNewBrowse,
                 std::uint32_t index, ua::BrowseResult& result) noexcept {
    if (!batch.enabled() || impl.space.find(nodeId)) return false;
    if (typename Impl::SessionNodeRef ref; impl.isSessionNode(nodeId, ref)) return false;
    const NamespaceOwner* owner = impl.ownerOf(nodeId.namespace_index);
    // A blocking node manager's synchronous browse goes to its lane the same way.
    if (owner == nullptr ||
        (owner->browseAsync == nullptr && !(owner->blocking && owner->ops->browse != nullptr)))
        return false;
    if (!(Impl::permissionsOf(call, nodeId) & session::kPermBrowse)) return false;
    if (!batch.addOwnerBrowse(*owner, index, cp, nodeId,
                              isNullNodeId(cp.referenceType) ? nullptr : &cp.referenceType,
                              isNewBrowse, ownedReferenceLimit(impl.cfg)))
        return false;
    result = ua::BrowseResult{};
    result.continuationPoint = ua::nullByteString();
    result.references = {0, nullptr};
    return true;
}

}  // namespace

uaplex_status ServiceSet::Impl::browse(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::BrowseRequest*>(call.request);
    if (!isNullNodeId(req.view.viewId)) return UAPLEX_BadViewIdUnknown;
    if (req.nodesToBrowse.size() == 0) return UAPLEX_BadNothingToDo;
    const auto& limits = cfg.server.limits;
    if (limits.max_nodes_per_browse != 0 && req.nodesToBrowse.size() > limits.max_nodes_per_browse)
        return UAPLEX_BadTooManyOperations;
    std::uint32_t maxRefs = req.requestedMaxReferencesPerNode;
    if (limits.max_references_per_node != 0 &&
        (maxRefs == 0 || maxRefs > limits.max_references_per_node))
        maxRefs = limits.max_references_per_node;

    auto* resp = call.arena.allocateArray<ua::BrowseResponse>(1);
    auto* results = call.arena.allocateArray<ua::BrowseResult>(req.nodesToBrowse.size());
    if (resp == nullptr || results == nullptr) return UAPLEX_BadOutOfMemory;
    resp->results = {req.nodesToBrowse.length, results};
    resp->diagnosticInfos = {-1, nullptr};
    AsyncBatch batch(*this, call);
    for (std::size_t i = 0; i < req.nodesToBrowse.size(); ++i) {
        const ua::BrowseDescription& d = req.nodesToBrowse[i];
        ua::BrowseResult& r = results[i];
        r.continuationPoint = ua::nullByteString();
        r.references = {-1, nullptr};
        auto direction = static_cast<std::int32_t>(d.browseDirection);
        if (direction < 0 || direction > 2) {
            r.statusCode = UAPLEX_BadBrowseDirectionInvalid;
            continue;
        }
        if (!isNullNodeId(d.referenceTypeId)) {
            NodeRef t = space.find(d.referenceTypeId);
            if (!t || t.nodeClass() != addressspace::kReferenceType) {
                r.statusCode = UAPLEX_BadReferenceTypeIdInvalid;
                continue;
            }
        }
        ContinuationPoint cp;
        cp.direction = direction;
        cp.referenceType = isNullNodeId(d.referenceTypeId) ? ua::NodeId{} : d.referenceTypeId;
        cp.includeSubtypes = d.includeSubtypes;
        cp.nodeClassMask = d.nodeClassMask;
        cp.resultMask = d.resultMask;
        cp.maxReferences = maxRefs;
        if (browseLater(*this, batch, call, cp, d.nodeId, true, std::uint32_t(i), r)) continue;
        browseOne(call.arena, call.session, cp, d.nodeId, true, r, call.access);
    }
    if (!batch.empty()) {
        // Some nodes wait for asynchronous browses: the last one to complete answers.
        uaplex_status st = batch.startBrowse(enc::dataTypeOf<ua::BrowseResponse>(), resp, results);
        if (st != UAPLEX_Good) return st;
    }
    call.responseType = enc::dataTypeOf<ua::BrowseResponse>();
    call.response = resp;
    return UAPLEX_Good;
}

uaplex_status ServiceSet::Impl::browseNext(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::BrowseNextRequest*>(call.request);
    if (req.continuationPoints.size() == 0) return UAPLEX_BadNothingToDo;
    const auto limit = cfg.server.limits.max_nodes_per_browse;
    if (limit != 0 && req.continuationPoints.size() > limit) return UAPLEX_BadTooManyOperations;
    auto* resp = call.arena.allocateArray<ua::BrowseNextResponse>(1);
    auto* results = call.arena.allocateArray<ua::BrowseResult>(req.continuationPoints.size());
    if (resp == nullptr || results == nullptr) return UAPLEX_BadOutOfMemory;
    resp->results = {req.continuationPoints.length, results};
    resp->diagnosticInfos = {-1, nullptr};
    SessionState* session = call.session;
    AsyncBatch batch(*this, call);
    for (std::size_t i = 0; i < req.continuationPoints.size(); ++i) {
        ua::BrowseResult& r = results[i];
        r.continuationPoint = ua::nullByteString();
        r.references = {-1, nullptr};
        const ua::ByteString& bytes = req.continuationPoints[i];
        std::uint64_t id = 0;
        bool wellFormed = bytes.length == 8;
        if (wellFormed) std::memcpy(&id, bytes.data, 8);
        ContinuationPoint cp;
        bool found = false;
        if (session != nullptr && wellFormed) {
            std::lock_guard lock(session->mutex);
            auto& cps = session->continuationPoints;
            for (auto it = cps.begin(); it != cps.end(); ++it) {
                if (it->id != id) continue;
                found = true;
                cp = *it;
                // Taken out now; put back below if references remain.
                cps.erase(it);
                break;
            }
        }
        if (!found) {
            r.statusCode = UAPLEX_BadContinuationPointInvalid;
            continue;
        }
        if (req.releaseContinuationPoints) {
            r.references = {0, nullptr};
            continue;
        }
        ua::NodeId nodeId{};
        if (!decodeNodeId(cp.nodeKey, call.arena, nodeId)) {
            r.statusCode = UAPLEX_BadContinuationPointInvalid;
            continue;
        }
        // The node's copy in the arena: the asynchronous browse keeps pointing at it.
        auto* kept = arenaNew(call.arena, nodeId);
        if (kept != nullptr &&
            browseLater(*this, batch, call, cp, *kept, false, std::uint32_t(i), r))
            continue;
        browseOne(call.arena, session, cp, nodeId, false, r, call.access);
        if (r.continuationPoint.length > 0) {
            std::lock_guard lock(session->mutex);
            try {
                session->continuationPoints.push_back(cp);
            } catch (...) {
                r.statusCode = UAPLEX_BadOutOfMemory;
            }
        }
    }
    if (!batch.empty()) {
        uaplex_status st =
            batch.startBrowse(enc::dataTypeOf<ua::BrowseNextResponse>(), resp, results);
        if (st != UAPLEX_Good) return st;
    }
    call.responseType = enc::dataTypeOf<ua::BrowseNextResponse>();
    call.response = resp;
    return UAPLEX_Good;
}

uaplex_status ServiceSet::Impl::translate(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::TranslateBrowsePathsToNodeIdsRequest*>(call.request);
    if (req.browsePaths.size() == 0) return UAPLEX_BadNothingToDo;
    const auto limit = cfg.server.limits.max_nodes_per_translate;
    if (limit != 0 && req.browsePaths.size() > limit) return UAPLEX_BadTooManyOperations;
    auto* resp = call.arena.allocateArray<ua::TranslateBrowsePathsToNodeIdsResponse>(1);
    auto* results = call.arena.allocateArray<ua::BrowsePathResult>(req.browsePaths.size());
    if (resp == nullptr || results == nullptr) return UAPLEX_BadOutOfMemory;
    resp->results = {req.browsePaths.length, results};
    resp->diagnosticInfos = {-1, nullptr};
    std::vector<ua::NodeId> current, next;
    for (std::size_t i = 0; i < req.browsePaths.size(); ++i) {
        const ua::BrowsePath& path = req.browsePaths[i];
        ua::BrowsePathResult& r = results[i];
        r.targets = {0, nullptr};
        const auto& elements = path.relativePath.elements;
        if (elements.size() == 0) {
            r.statusCode = UAPLEX_BadNothingToDo;
            continue;
        }
        bool badName = false;
        for (const auto& e : elements) badName = badName || e.targetName.name.length <= 0;
        if (badName) {
            r.statusCode = UAPLEX_BadBrowseNameInvalid;
            continue;
        }
        if (!space.find(path.startingNode)) {
            ua::Variant v{};
            if (!ownedAttribute(call.arena, path.startingNode, 1, v)) {
                r.statusCode = UAPLEX_BadNodeIdUnknown;
                continue;
            }
        }
        if (!(nodePermissions(call.access, path.startingNode) & session::kPermBrowse)) {
            r.statusCode = UAPLEX_BadNodeIdUnknown;  // as if it did not exist (no oracle)
            continue;
        }
        bool badType = false;
        current.assign(1, path.startingNode);
        for (const auto& e : elements) {
            bool anyType = isNullNodeId(e.referenceTypeId);
            NodeRef rt = anyType ? NodeRef{} : space.find(e.referenceTypeId);
            if (!anyType && (!rt || rt.nodeClass() != addressspace::kReferenceType)) {
                badType = true;
                break;
            }
            std::uint32_t want = anyType ? 0 : space.referenceTypeCode(e.referenceTypeId);
            next.clear();
            auto consider = [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
                if (forward == e.isInverse) return;
                if (!(nodePermissions(call.access, target) & session::kPermBrowse))
                    return;  // hidden
                if (!anyType && !(e.includeSubtypes ? space.isSubtypeOf(type, want) : type == want))
                    return;
                ua::QualifiedName bn{};
                if (NodeRef t = space.find(target)) {
                    bn = space.browseNameOf(t);
                } else {
                    ua::Variant v{};
                    if (!ownedAttribute(call.arena, target, 3, v) ||
                        (v.encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_QUALIFIEDNAME)
                        return;
                    bn = *static_cast<const ua::QualifiedName*>(v.value.pointer);
                }
                if (bn.namespace_index != e.targetName.namespace_index ||
                    ua::view(bn.name) != ua::view(e.targetName.name))
                    return;
                for (const auto& n : next)
                    if (ua::equal(n, target)) return;
                next.push_back(target);
            };
            for (const ua::NodeId& from : current) {
                if (NodeRef node = space.find(from)) {
                    space.forEachReference(node, consider);
                    if (node.rec != nullptr &&
                        node.rec->id ==
                            ua::ns0::Server_ServerDiagnostics_SessionsDiagnosticsSummary) {
                        std::vector<Hit> hits;  // its session objects
                        sessionObjectReferences(call.arena, hits);
                        for (const Hit& h : hits) consider(h.referenceType, h.isForward, h.target);
                    }
                    continue;
                }
                if (SessionNodeRef ref; isSessionNode(from, ref)) {
                    std::vector<Hit> hits;
                    if (sessionNodeReferences(call.arena, ref, hits))
                        for (const Hit& h : hits) consider(h.referenceType, h.isForward, h.target);
                    continue;
                }
                // A node of an owned namespace: its plugin lists the references.
                const NamespaceOwner* owner = ownerOf(from.namespace_index);
                if (owner == nullptr || owner->ops->browse == nullptr) continue;
                std::vector<Hit> hits;
                SinkState sink{&hits, &call.arena, &space, ownedReferenceLimit(cfg)};
                owner->ops->browse(owner->self, &from, e.isInverse ? 1 : 0,
                                   anyType ? nullptr : &e.referenceTypeId, e.includeSubtypes,
                                   &collectPluginReference, &sink);
                if (sink.faulty) continue;  // no path through a node its manager got wrong
                for (const Hit& h : hits) consider(h.referenceType, h.isForward, h.target);
            }
            current.swap(next);
            if (current.empty()) break;
        }
        if (badType) {
            r.statusCode = UAPLEX_BadReferenceTypeIdInvalid;
            continue;
        }
        if (current.empty()) {
            r.statusCode = UAPLEX_BadNoMatch;
            continue;
        }
        auto* targets = call.arena.allocateArray<ua::BrowsePathTarget>(current.size());
        if (targets == nullptr) return UAPLEX_BadOutOfMemory;
        for (std::size_t k = 0; k < current.size(); ++k) {
            targets[k].targetId.node_id = current[k];
            targets[k].targetId.namespace_uri = ua::nullString();
            targets[k].remainingPathIndex = 0xFFFFFFFFu;
        }
        r.targets = {std::int32_t(current.size()), targets};
    }
    call.responseType = enc::dataTypeOf<ua::TranslateBrowsePathsToNodeIdsResponse>();
    call.response = resp;
    return UAPLEX_Good;
}

uaplex_status ServiceSet::Impl::registerNodes(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::RegisterNodesRequest*>(call.request);
    if (req.nodesToRegister.size() == 0) return UAPLEX_BadNothingToDo;
    const auto limit = cfg.server.limits.max_nodes_per_register_nodes;
    if (limit != 0 && req.nodesToRegister.size() > limit) return UAPLEX_BadTooManyOperations;
    auto* resp = call.arena.allocateArray<ua::RegisterNodesResponse>(1);
    if (resp == nullptr) return UAPLEX_BadOutOfMemory;
    // Lookups are already direct, so the registered id is the id itself (Part 4 5.8.5 allows).
    resp->registeredNodeIds = req.nodesToRegister;
    call.responseType = enc::dataTypeOf<ua::RegisterNodesResponse>();
    call.response = resp;
    return UAPLEX_Good;
}

uaplex_status ServiceSet::Impl::unregisterNodes(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::UnregisterNodesRequest*>(call.request);
    if (req.nodesToUnregister.size() == 0) return UAPLEX_BadNothingToDo;
    const auto limit = cfg.server.limits.max_nodes_per_register_nodes;
    if (limit != 0 && req.nodesToUnregister.size() > limit) return UAPLEX_BadTooManyOperations;
    auto* resp = call.arena.allocateArray<ua::UnregisterNodesResponse>(1);
    if (resp == nullptr) return UAPLEX_BadOutOfMemory;
    call.responseType = enc::dataTypeOf<ua::UnregisterNodesResponse>();
    call.response = resp;
    return UAPLEX_Good;
}

}  // namespace uaplex::services
