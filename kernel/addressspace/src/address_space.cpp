// SPDX-License-Identifier: Apache-2.0
#include <uaplex/addressspace/address_space.hpp>

#include <chrono>
#include <cstring>
#include <new>
#include <unordered_set>

namespace uaplex::addressspace {

namespace {

constexpr std::uint16_t kNoRecord = 0xFFFF;
constexpr std::uint32_t kBaseObjectType = 58;
constexpr std::uint32_t kBaseDataVariableType = 63;
constexpr std::uint32_t kBaseDataType = 24;

std::size_t mix(std::size_t h, std::size_t v) noexcept {
    return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

}  // namespace

std::size_t NodeIdHash::operator()(const ua::NodeId& id) const noexcept {
    std::size_t h = mix(id.namespace_index, id.identifier_type);
    switch (id.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            return mix(h, id.identifier.numeric);
        case UAPLEX_ID_STRING:
            return mix(h, std::hash<std::string_view>{}(ua::view(id.identifier.string)));
        case UAPLEX_ID_GUID:
            return mix(h,
                       std::hash<std::string_view>{}(std::string_view(
                           reinterpret_cast<const char*>(&id.identifier.guid), sizeof(ua::Guid))));
        default: {
            auto b = ua::view(id.identifier.bytestring);
            return mix(h, std::hash<std::string_view>{}(
                              std::string_view(reinterpret_cast<const char*>(b.data()), b.size())));
        }
    }
}

RefArray* RefArray::make(std::uint32_t capacity) {
    void* mem = ::operator new(sizeof(RefArray) + std::size_t(capacity) * sizeof(Reference),
                               std::align_val_t(alignof(RefArray)));
    auto* a = new (mem) RefArray();
    a->capacity = capacity;
    return a;
}

void RefArray::destroy(void* p) noexcept {
    if (p == nullptr) return;
    static_cast<RefArray*>(p)->~RefArray();
    ::operator delete(p, std::align_val_t(alignof(RefArray)));
}

Node::~Node() {
    RefArray::destroy(refs.load(std::memory_order_relaxed));
}

namespace {
void ownText(std::string& text, ua::NodeId& id) {
    if (id.identifier_type == UAPLEX_ID_STRING) {
        text.assign(ua::view(id.identifier.string));
    } else if (id.identifier_type == UAPLEX_ID_BYTESTRING) {
        auto b = ua::view(id.identifier.bytestring);
        text.assign(reinterpret_cast<const char*>(b.data()), b.size());
    }
}
ua::NodeId withText(ua::NodeId id, const std::string& text) noexcept {
    if (id.identifier_type == UAPLEX_ID_STRING && id.identifier.string.length >= 0)
        id.identifier.string = ua::String{std::int32_t(text.size()), text.data()};
    else if (id.identifier_type == UAPLEX_ID_BYTESTRING && id.identifier.bytestring.length >= 0)
        id.identifier.bytestring = ua::ByteString{
            std::int32_t(text.size()), reinterpret_cast<const std::uint8_t*>(text.data())};
    return id;
}
}  // namespace

ua::NodeId ModelChange::affectedId() const noexcept {
    return withText(affected, text);
}
ua::NodeId ModelChange::affectedTypeId() const noexcept {
    return withText(affectedType, typeText);
}

AddressSpace::~AddressSpace() {
    nodes_.forEach([](Node& n) { delete &n; });
    const ns0::Image& img = ns0::kImage;
    for (std::uint32_t i = 0; i < img.nodeCount; ++i)
        RefArray::destroy(ns0Extra_[i].load(std::memory_order_relaxed));
}

AddressSpace::AddressSpace(std::string applicationUri) {
    namespaces_.emplace_back("http://opcfoundation.org/UA/");
    namespaces_.push_back(std::move(applicationUri));
    const ns0::Image& img = ns0::kImage;
    std::uint32_t maxId = img.nodeCount ? img.nodes[img.nodeCount - 1].id : 0;
    ns0Index_.assign(maxId + 1, kNoRecord);
    ns0SuperType_.assign(img.nodeCount, 0);
    ns0Extra_ = std::make_unique<std::atomic<RefArray*>[]>(img.nodeCount);
    ns0RefGeneration_ = std::make_unique<std::atomic<std::uint32_t>[]>(img.nodeCount);
    for (std::uint32_t i = 0; i < img.nodeCount; ++i) {
        ns0Extra_[i].store(nullptr, std::memory_order_relaxed);
        ns0RefGeneration_[i].store(0, std::memory_order_relaxed);
    }
    for (std::uint32_t i = 0; i < img.nodeCount; ++i) {
        const ns0::NodeRecord& r = img.nodes[i];
        ns0Index_[r.id] = static_cast<std::uint16_t>(i);
        for (std::uint32_t k = 0; k < r.referenceCount; ++k) {
            const ns0::ReferenceRecord& ref = img.references[r.firstReference + k];
            if (ref.referenceType == kHasSubtype && !ref.isForward) ns0SuperType_[i] = ref.target;
        }
    }
}

std::uint16_t AddressSpace::registerNamespace(std::string_view uri) {
    for (std::size_t i = 0; i < namespaces_.size(); ++i)
        if (namespaces_[i] == uri) return static_cast<std::uint16_t>(i);
    namespaces_.emplace_back(uri);
    return static_cast<std::uint16_t>(namespaces_.size() - 1);
}

NodeRef AddressSpace::find(const ua::NodeId& id) const noexcept {
    if (id.namespace_index == 0 && id.identifier_type == UAPLEX_ID_NUMERIC) {
        std::uint32_t n = id.identifier.numeric;
        if (n < ns0Index_.size() && ns0Index_[n] != kNoRecord)
            return NodeRef{&ns0::kImage.nodes[ns0Index_[n]], nullptr};
    }
    const Node* n = nodes_.find(id);
    return n == nullptr ? NodeRef{} : NodeRef{nullptr, n};
}

std::uint32_t AddressSpace::referenceGeneration(const NodeRef& n) const noexcept {
    if (n.rec)
        return ns0RefGeneration_[std::size_t(n.rec - ns0::kImage.nodes)].load(
            std::memory_order_acquire);
    return n.dyn ? n.dyn->refGeneration.load(std::memory_order_acquire) : 0;
}

void AddressSpace::bumpGeneration(std::atomic<RefArray*>& slot, Node* owner) noexcept {
    if (owner != nullptr)
        owner->refGeneration.fetch_add(1, std::memory_order_release);
    else
        ns0RefGeneration_[std::size_t(&slot - ns0Extra_.get())].fetch_add(
            1, std::memory_order_release);
}

const Node* AddressSpace::findSerial(std::uint64_t serial) const noexcept {
    return bySerial_.find(serial);
}

Node* AddressSpace::mutableNode(const ua::NodeId& id) noexcept {
    return nodes_.find(id);
}

void AddressSpace::forEachNode(const std::function<void(Node&)>& fn) {
    nodes_.forEach(fn);
}

std::string_view AddressSpace::imageString(ns0::Slice s) const noexcept {
    if (s.length == 0xFFFFFFFFu) return {};
    return {ns0::kImage.strings + s.offset, s.length};
}

std::span<const std::uint8_t> AddressSpace::imageBlob(ns0::Slice s) const noexcept {
    return {ns0::kImage.blob + s.offset, s.length};
}

ua::NodeId AddressSpace::nodeIdOf(const NodeRef& n) const noexcept {
    return n.rec ? ua::numericNodeId(0, n.rec->id) : n.dyn->id;
}

ua::QualifiedName AddressSpace::browseNameOf(const NodeRef& n) const noexcept {
    if (n.dyn) return n.dyn->browseName;
    auto s = imageString(n.rec->browseName);
    return ua::QualifiedName{n.rec->browseNameNamespace, ua::makeString(s)};
}

ua::NodeId AddressSpace::typeDefinitionOf(const NodeRef& n) const noexcept {
    ua::NodeId out{};
    bool found = false;
    forEachReference(n, [&](std::uint32_t type, bool forward, const ua::NodeId& target) {
        if (!found && forward && type == kHasTypeDefinition) {
            out = target;
            found = true;
        }
    });
    return out;
}

bool AddressSpace::isSubtypeOf(std::uint32_t sub, std::uint32_t super) const noexcept {
    // The hierarchy is a tree of a few levels; bounded in case of a malformed image.
    for (int depth = 0; depth < 64; ++depth) {
        if (sub == super) return true;
        if (sub & kStoreReferenceType) {
            // A store ReferenceType: its supertype is in the store or in namespace 0.
            std::uint32_t i = sub & ~kStoreReferenceType;
            if (i >= storeReferenceTypes_.size()) return false;
            NodeRef up = superTypeOf(find(storeReferenceTypes_[i]));
            if (!up) return false;
            sub = up.rec ? up.rec->id : referenceTypeCode(up.dyn->id);
            if (sub == 0) return false;
            continue;
        }
        if (sub >= ns0Index_.size() || ns0Index_[sub] == kNoRecord) return false;
        sub = ns0SuperType_[ns0Index_[sub]];
        if (sub == 0) return false;
    }
    return false;
}

bool AddressSpace::isSubtypeOf(const ua::NodeId& sub, const ua::NodeId& super) const noexcept {
    if (ua::equal(sub, super)) return true;
    if (sub.namespace_index == 0 && super.namespace_index == 0 &&
        sub.identifier_type == UAPLEX_ID_NUMERIC && super.identifier_type == UAPLEX_ID_NUMERIC)
        return isSubtypeOf(sub.identifier.numeric, super.identifier.numeric);
    // A store type: up its HasSubtype chain (a few levels; bounded against loops).
    NodeRef n = find(sub);
    for (int depth = 0; n && depth < 64; ++depth) {
        n = superTypeOf(n);
        if (n && ua::equal(nodeIdOf(n), super)) return true;
    }
    return false;
}

NodeRef AddressSpace::superTypeOf(const NodeRef& type) const noexcept {
    if (type.rec) {
        std::uint32_t super = ns0SuperType_[ns0Index_[type.rec->id]];
        return super == 0 ? NodeRef{} : find(ua::numericNodeId(0, super));
    }
    if (type.dyn)
        for (const Reference& r : type.dyn->references())
            if (r.referenceType == kHasSubtype && !r.isForward) return find(r.target);
    return NodeRef{};
}

uaplex_status AddressSpace::bindMethod(const ua::NodeId& method, const ua::NodeId* objectType,
                                       uaplex_method_call_fn call, void* user) {
    if (sealed()) return UAPLEX_BadInvalidState;
    NodeRef m = find(method);
    if (m && m.nodeClass() != kMethod) return UAPLEX_BadNodeClassInvalid;
    MethodBinding b{internNodeId(method), {}, objectType != nullptr, call, user};
    if (objectType != nullptr) {
        NodeRef t = find(*objectType);
        if (t && t.nodeClass() != kObjectType) return UAPLEX_BadNodeClassInvalid;
        b.objectType = internNodeId(*objectType);
        auto [first, last] = typeBindings_.equal_range(b.objectType);
        for (auto it = first; it != last; ++it)
            if (ua::equal(it->second.method, b.method)) return UAPLEX_BadEntryExists;
        typeBindings_.emplace(b.objectType, b);
        return UAPLEX_Good;
    }
    // The node's own implementation is not replaced.
    if (m.dyn && m.dyn->callbacks.call != nullptr) return UAPLEX_BadEntryExists;
    if (!methodBindings_.emplace(b.method, b).second) return UAPLEX_BadEntryExists;
    return UAPLEX_Good;
}

const MethodBinding* AddressSpace::methodBinding(const ua::NodeId& method) const noexcept {
    if (methodBindings_.empty()) return nullptr;
    auto it = methodBindings_.find(method);
    return it == methodBindings_.end() ? nullptr : &it->second;
}

const MethodBinding* AddressSpace::typeMethodBinding(const ua::NodeId& type,
                                                     const ua::NodeId& method,
                                                     const ua::QualifiedName& name) const noexcept {
    auto [first, last] = typeBindings_.equal_range(type);
    for (auto it = first; it != last; ++it) {
        const MethodBinding& b = it->second;
        if (ua::equal(b.method, method)) return &b;
        NodeRef declared = find(b.method);
        if (!declared) continue;
        ua::QualifiedName bn = browseNameOf(declared);
        if (bn.namespace_index == name.namespace_index && ua::view(bn.name) == ua::view(name.name))
            return &b;
    }
    return nullptr;
}

void AddressSpace::setComputedValue(std::uint32_t ns0Id, ComputedValue fn) {
    computed_[ns0Id] = std::move(fn);
}

const ComputedValue* AddressSpace::computedValue(std::uint32_t ns0Id) const noexcept {
    if (computed_.empty()) return nullptr;
    auto it = computed_.find(ns0Id);
    return it == computed_.end() ? nullptr : &it->second;
}

ua::String AddressSpace::internString(const ua::String& s) {
    if (s.length < 0) return ua::nullString();
    const std::string& stored = *strings_.emplace(ua::view(s)).first;
    return ua::String{static_cast<std::int32_t>(stored.size()), stored.data()};
}

ua::NodeId AddressSpace::internNodeId(const ua::NodeId& id) {
    ua::NodeId out = id;
    if (id.identifier_type == UAPLEX_ID_STRING) {
        out.identifier.string = internString(id.identifier.string);
    } else if (id.identifier_type == UAPLEX_ID_BYTESTRING) {
        auto b = ua::view(id.identifier.bytestring);
        ua::String s = internString(ua::String{static_cast<std::int32_t>(b.size()),
                                               reinterpret_cast<const char*>(b.data())});
        out.identifier.bytestring =
            ua::ByteString{s.length, reinterpret_cast<const std::uint8_t*>(s.data)};
    }
    return out;
}

ua::String AddressSpace::own(Node& n, const ua::String& s) {
    if (s.length < 0) return ua::nullString();
    const std::string& stored = n.text.emplace_front(ua::view(s));
    return ua::String{static_cast<std::int32_t>(stored.size()), stored.data()};
}

ua::NodeId AddressSpace::ownNodeId(Node& n, const ua::NodeId& id) {
    ua::NodeId out = id;
    if (id.identifier_type == UAPLEX_ID_STRING) {
        out.identifier.string = own(n, id.identifier.string);
    } else if (id.identifier_type == UAPLEX_ID_BYTESTRING) {
        auto b = ua::view(id.identifier.bytestring);
        ua::String s = own(n, ua::String{static_cast<std::int32_t>(b.size()),
                                         reinterpret_cast<const char*>(b.data())});
        out.identifier.bytestring =
            ua::ByteString{s.length, reinterpret_cast<const std::uint8_t*>(s.data)};
    }
    return out;
}

std::atomic<RefArray*>* AddressSpace::referencesOf(const ua::NodeId& id, Node** owner) noexcept {
    *owner = nullptr;
    NodeRef n = find(id);
    if (n.rec) return &ns0Extra_[std::size_t(n.rec - ns0::kImage.nodes)];
    if (n.dyn) {
        *owner = const_cast<Node*>(n.dyn);
        return &(*owner)->refs;
    }
    return nullptr;
}

void AddressSpace::appendReference(std::atomic<RefArray*>& slot, Node* owner,
                                   const Reference& ref) {
    Reference r = ref;
    r.target = owner != nullptr ? ownNodeId(*owner, ref.target) : internNodeId(ref.target);
    RefArray* a = slot.load(std::memory_order_relaxed);
    const std::uint32_t count = a != nullptr ? a->count.load(std::memory_order_relaxed) : 0;
    if (a != nullptr && count < a->capacity) {
        a->items()[count] = r;  // beyond what readers read until the count says so
        a->count.store(count + 1, std::memory_order_release);
        bumpGeneration(slot, owner);
        return;
    }
    RefArray* grown = RefArray::make(std::max<std::uint32_t>(4, count * 2));
    if (count > 0) std::memcpy(grown->items(), a->items(), count * sizeof(Reference));
    grown->items()[count] = r;
    grown->count.store(count + 1, std::memory_order_relaxed);
    if (a != nullptr) {
        try {
            reclaimer_.retire(a, &RefArray::destroy);
        } catch (...) {
            RefArray::destroy(grown);
            throw;
        }
    }
    slot.store(grown, std::memory_order_release);
    bumpGeneration(slot, owner);
}

template <class Keep>
bool AddressSpace::filterReferences(std::atomic<RefArray*>& slot, Node* owner, Keep&& keep) {
    RefArray* a = slot.load(std::memory_order_relaxed);
    if (a == nullptr) return false;
    std::span<const Reference> refs = a->view();
    std::uint32_t kept = 0;
    for (const Reference& r : refs) kept += keep(r) ? 1u : 0u;
    if (kept == refs.size()) return false;
    RefArray* fresh = nullptr;
    if (kept > 0) {
        fresh = RefArray::make(std::max<std::uint32_t>(4, kept));
        std::uint32_t k = 0;
        for (const Reference& r : refs)
            if (keep(r)) fresh->items()[k++] = r;
        fresh->count.store(k, std::memory_order_relaxed);
    }
    try {
        reclaimer_.retire(a, &RefArray::destroy);
    } catch (...) {
        RefArray::destroy(fresh);
        throw;
    }
    slot.store(fresh, std::memory_order_seq_cst);
    bumpGeneration(slot, owner);
    return true;
}

void AddressSpace::record(std::uint8_t verb, const ua::NodeId& affected, const ua::NodeId& type) {
    if (!sealed()) return;
    try {
        ModelChange c;
        c.verb = verb;
        c.affected = affected;
        c.affectedType = type;
        ownText(c.text, c.affected);
        ownText(c.typeText, c.affectedType);
        changes_.push_back(std::move(c));
    } catch (...) {  // NOLINT(bugprone-empty-catch): the event loses an entry, not the change
    }
}

uaplex_status AddressSpace::addReference(const ua::NodeId& source, std::uint32_t referenceType,
                                         const ua::NodeId& target, bool isForward) {
    Node* fromOwner = nullptr;
    std::atomic<RefArray*>* from = referencesOf(source, &fromOwner);
    if (from == nullptr) return UAPLEX_BadNodeIdUnknown;
    appendReference(*from, fromOwner, Reference{referenceType, isForward, target});
    // The other end, when it is a node of this address space.
    Node* toOwner = nullptr;
    if (std::atomic<RefArray*>* to = referencesOf(target, &toOwner))
        appendReference(*to, toOwner, Reference{referenceType, !isForward, source});
    record(ModelChange::kReferenceAdded, source, ua::NodeId{});
    return UAPLEX_Good;
}

uaplex_status AddressSpace::deletable(const Node& n) const noexcept {
    if (n.nodeClass == kReferenceType) return UAPLEX_BadNodeClassInvalid;
    if (n.pinned.load(std::memory_order_relaxed)) return UAPLEX_BadUserAccessDenied;
    return UAPLEX_Good;
}

void AddressSpace::deleteNodes(std::span<Node* const> nodes, bool deleteTargetReferences) {
    if (nodes.empty()) return;
    // Everything that may allocate comes first: the sets, the other ends, the retire list.
    std::unordered_set<ua::NodeId, NodeIdHash, NodeIdEqual> goneIds;
    std::unordered_set<const Node*> gone;
    goneIds.reserve(nodes.size());
    gone.reserve(nodes.size());
    for (Node* n : nodes) {
        goneIds.insert(n->id);
        gone.insert(n);
    }
    struct Other {
        std::atomic<RefArray*>* slot;
        Node* owner;
        ua::NodeId id;
    };
    std::vector<Other> others;
    std::unordered_set<std::atomic<RefArray*>*> seen;
    for (Node* n : nodes)
        for (const Reference& r : n->references()) {
            Node* owner = nullptr;
            std::atomic<RefArray*>* slot = referencesOf(r.target, &owner);
            if (slot == nullptr || (owner != nullptr && gone.count(owner))) continue;
            if (seen.insert(slot).second) others.push_back(Other{slot, owner, r.target});
        }
    std::vector<ua::NodeId> types;
    types.reserve(nodes.size());
    for (Node* n : nodes) types.push_back(typeDefinitionOf(NodeRef{nullptr, n}));
    reclaimer_.reserve(nodes.size() + others.size() * 2 + 8);

    for (std::size_t i = 0; i < nodes.size(); ++i) {
        Node* n = nodes[i];
        record(ModelChange::kNodeDeleted, n->id, types[i]);
        nodes_.erase(n->id);
        bySerial_.erase(n->serial);
        n->deleted.store(true, std::memory_order_release);
    }
    for (const Other& o : others) {
        // An inverse entry names a deleted source: always gone; a forward one points at a
        // deleted target: gone with deleteTargetReferences.
        if (filterReferences(*o.slot, o.owner, [&](const Reference& r) {
                return !goneIds.count(r.target) || (r.isForward && !deleteTargetReferences);
            }))
            record(ModelChange::kReferenceDeleted, o.id, ua::NodeId{});
    }
    for (Node* n : nodes) reclaimer_.retire(n, [](void* p) { delete static_cast<Node*>(p); });
}

uaplex_status AddressSpace::deleteReference(const ua::NodeId& source, std::uint32_t referenceType,
                                            const ua::NodeId& target, bool isForward,
                                            bool bidirectional) {
    Node* fromOwner = nullptr;
    std::atomic<RefArray*>* from = referencesOf(source, &fromOwner);
    if (from == nullptr) return UAPLEX_BadSourceNodeIdInvalid;
    auto matches = [&](const Reference& r, bool forward, const ua::NodeId& other) {
        return r.referenceType == referenceType && r.isForward == forward &&
               ua::equal(r.target, other);
    };
    bool found = false;
    if (const RefArray* a = from->load(std::memory_order_relaxed))
        for (const Reference& r : a->view()) found = found || matches(r, isForward, target);
    if (!found) return UAPLEX_BadNotFound;
    reclaimer_.reserve(4);
    filterReferences(*from, fromOwner,
                     [&](const Reference& r) { return !matches(r, isForward, target); });
    record(ModelChange::kReferenceDeleted, source, ua::NodeId{});
    Node* toOwner = nullptr;
    if (bidirectional)
        if (std::atomic<RefArray*>* to = referencesOf(target, &toOwner)) {
            if (filterReferences(*to, toOwner, [&](const Reference& r) {
                    return !matches(r, !isForward, source);
                }))
                record(ModelChange::kReferenceDeleted, target, ua::NodeId{});
        }
    return UAPLEX_Good;
}

uaplex_status AddressSpace::addNode(const uaplex_node_spec& spec, Node** out, const void* owner,
                                    bool clientAdded) {
    if (spec.node_id == nullptr || spec.browse_name == nullptr) return UAPLEX_BadInvalidArgument;
    // Type nodes arrived with ABI minor 2, with the fields that describe them.
    const bool typeFields = UAPLEX_HAS_FIELD(&spec, uaplex_node_spec, data_type_definition);
    const bool isType = spec.node_class == kObjectType || spec.node_class == kVariableType ||
                        spec.node_class == kReferenceType || spec.node_class == kDataType;
    if (spec.node_class != kObject && spec.node_class != kVariable && spec.node_class != kMethod &&
        !(isType && typeFields))
        return UAPLEX_BadNodeClassInvalid;
    // A ReferenceType's code is read without a lock once the server runs: only before.
    if (spec.node_class == kReferenceType && sealed()) return UAPLEX_BadNodeClassInvalid;
    if (find(*spec.node_id)) return UAPLEX_BadNodeIdExists;
    if (spec.node_id->namespace_index == 0 || spec.node_id->namespace_index >= namespaces_.size())
        return UAPLEX_BadNodeIdRejected;
    if (spec.parent_id != nullptr && !find(*spec.parent_id)) return UAPLEX_BadParentNodeIdInvalid;
    std::uint32_t parentRefType = kHasComponent;
    if (spec.parent_id != nullptr && spec.reference_type_id != nullptr) {
        parentRefType = referenceTypeCode(*spec.reference_type_id);
        if (parentRefType == 0) return UAPLEX_BadReferenceTypeIdInvalid;
    }
    if (nodes_.size() >= maxNodes_) return UAPLEX_BadResourceUnavailable;

    auto node = std::make_unique<Node>();
    node->id = ownNodeId(*node, *spec.node_id);
    node->nodeClass = static_cast<std::uint8_t>(spec.node_class);
    node->browseName.namespace_index = spec.browse_name->namespace_index;
    node->browseName.name = own(*node, spec.browse_name->name);
    if (spec.display_name != nullptr) {
        node->displayName.mask = spec.display_name->mask;
        node->displayName.locale = own(*node, spec.display_name->locale);
        node->displayName.text = own(*node, spec.display_name->text);
    } else {
        node->displayName.mask = UAPLEX_LOCALIZEDTEXT_TEXT;
        node->displayName.locale = ua::nullString();
        node->displayName.text = node->browseName.name;
    }
    if (spec.description != nullptr) {
        node->description.mask = spec.description->mask;
        node->description.locale = own(*node, spec.description->locale);
        node->description.text = own(*node, spec.description->text);
    } else {
        node->description = ua::LocalizedText{0, ua::nullString(), ua::nullString()};
    }
    node->writeMask = spec.write_mask;
    node->eventNotifier = static_cast<std::uint8_t>(spec.event_notifier);
    node->dataType = ua::numericNodeId(0, kBaseDataType);
    if (isType) {
        node->isAbstract = spec.is_abstract != 0;
        node->symmetric = spec.symmetric != 0;
        if (spec.inverse_name != nullptr) {
            node->inverseName.mask = spec.inverse_name->mask;
            node->inverseName.locale = own(*node, spec.inverse_name->locale);
            node->inverseName.text = own(*node, spec.inverse_name->text);
        }
        if (const uaplex_extensionobject* d = spec.data_type_definition) {
            if (d->encoding != UAPLEX_EXTENSIONOBJECT_BINARY || d->body.length < 0)
                return UAPLEX_BadInvalidArgument;
            node->definitionEncoding = ownNodeId(*node, d->type_id);
            node->definitionBody.assign(d->body.data, d->body.data + d->body.length);
        }
    }
    if (spec.node_class == kVariable || spec.node_class == kVariableType) {
        if (spec.data_type != nullptr) node->dataType = ownNodeId(*node, *spec.data_type);
        node->valueRank = spec.value_rank;
        node->arrayDimensions.assign(spec.array_dimensions,
                                     spec.array_dimensions + spec.array_dimensions_count);
        node->accessLevel = static_cast<std::uint8_t>(spec.access_level);
        if (spec.user_access_level != 0)
            node->userAccessLevel = static_cast<std::uint8_t>(spec.user_access_level);
        node->minimumSamplingInterval = spec.minimum_sampling_interval;
        if (spec.node_class == kVariable)
            node->historizing = UAPLEX_FIELD_OR(&spec, uaplex_node_spec, historizing, 0u) != 0;
        if (spec.value != nullptr) {
            // A value without a source timestamp is as of now (Read returns one).
            ua::DataValue initial = *spec.value;
            if (!(initial.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)) {
                initial.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
                initial.source_timestamp = ua::utcNow();
            }
            uaplex_status st = node->value.store(initial);
            if (st != UAPLEX_Good) return st;
        }
    }
    node->callbacks = Callbacks{spec.read, spec.write, spec.call, spec.user};
    node->callbacks.readAsync = UAPLEX_FIELD_OR(&spec, uaplex_node_spec, read_async, nullptr);
    node->callbacks.writeAsync = UAPLEX_FIELD_OR(&spec, uaplex_node_spec, write_async, nullptr);
    node->executable = (spec.method_flags & UAPLEX_METHOD_NOT_EXECUTABLE) == 0;
    node->callbacks.owner = owner;
    node->clientAdded = clientAdded;
    ua::NodeId typeDef{};
    if (spec.node_class == kObject || spec.node_class == kVariable) {
        typeDef = ua::numericNodeId(
            0, spec.node_class == kObject ? kBaseObjectType : kBaseDataVariableType);
        if (spec.type_definition != nullptr) typeDef = *spec.type_definition;
        appendReference(node->refs, node.get(), Reference{kHasTypeDefinition, true, typeDef});
    }
    node->serial = nextSerial_;
    // Complete before it is published: readers may find it from here on.
    Node* raw = node.get();
    nodes_.insert(raw);
    try {
        bySerial_.insert(raw);
        if (raw->nodeClass == kReferenceType) registerReferenceType(*raw);
    } catch (...) {
        nodes_.erase(raw->id);
        bySerial_.erase(raw->serial);
        reclaimer_.retire(node.release(), [](void* p) { delete static_cast<Node*>(p); });
        throw;
    }
    (void)node.release();  // owned by the table now (freed through the Reclaimer)
    ++nextSerial_;
    record(ModelChange::kNodeAdded, raw->id, typeDef);
    if (spec.parent_id != nullptr) {
        uaplex_status st = addReference(*spec.parent_id, parentRefType, raw->id, true);
        if (st != UAPLEX_Good) return st;
    }
    if (out != nullptr) *out = raw;
    return UAPLEX_Good;
}

}  // namespace uaplex::addressspace
