// SPDX-License-Identifier: Apache-2.0
#include <uaplex/addressspace/address_space.hpp>

#include <chrono>
#include <cstring>

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

AddressSpace::AddressSpace(std::string applicationUri) {
    namespaces_.emplace_back("http://opcfoundation.org/UA/");
    namespaces_.push_back(std::move(applicationUri));
    const ns0::Image& img = ns0::kImage;
    std::uint32_t maxId = img.nodeCount ? img.nodes[img.nodeCount - 1].id : 0;
    ns0Index_.assign(maxId + 1, kNoRecord);
    ns0SuperType_.assign(img.nodeCount, 0);
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
    auto it = nodes_.find(id);
    return it == nodes_.end() ? NodeRef{} : NodeRef{nullptr, it->second.get()};
}

Node* AddressSpace::mutableNode(const ua::NodeId& id) noexcept {
    auto it = nodes_.find(id);
    return it == nodes_.end() ? nullptr : it->second.get();
}

void AddressSpace::forEachNode(const std::function<void(Node&)>& fn) {
    for (auto& [id, node] : nodes_) fn(*node);
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
        for (const Reference& r : type.dyn->references)
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

std::vector<Reference>* AddressSpace::referencesOf(const ua::NodeId& id) {
    NodeRef n = find(id);
    if (n.rec) return &ns0Extra_[n.rec->id];
    if (n.dyn) return &const_cast<Node*>(n.dyn)->references;
    return nullptr;
}

uaplex_status AddressSpace::addReference(const ua::NodeId& source, std::uint32_t referenceType,
                                         const ua::NodeId& target, bool isForward) {
    if (sealed()) return UAPLEX_BadInvalidState;
    std::vector<Reference>* from = referencesOf(source);
    if (from == nullptr) return UAPLEX_BadNodeIdUnknown;
    ua::NodeId t = internNodeId(target);
    from->push_back(Reference{referenceType, isForward, t});
    // The other end, when it is a node of this address space.
    if (std::vector<Reference>* to = referencesOf(target))
        to->push_back(Reference{referenceType, !isForward, internNodeId(source)});
    return UAPLEX_Good;
}

uaplex_status AddressSpace::addNode(const uaplex_node_spec& spec, Node** out) {
    if (sealed()) return UAPLEX_BadInvalidState;
    if (spec.node_id == nullptr || spec.browse_name == nullptr) return UAPLEX_BadInvalidArgument;
    // Type nodes arrived with ABI minor 2, with the fields that describe them.
    const bool typeFields = UAPLEX_HAS_FIELD(&spec, uaplex_node_spec, data_type_definition);
    const bool isType = spec.node_class == kObjectType || spec.node_class == kVariableType ||
                        spec.node_class == kReferenceType || spec.node_class == kDataType;
    if (spec.node_class != kObject && spec.node_class != kVariable && spec.node_class != kMethod &&
        !(isType && typeFields))
        return UAPLEX_BadNodeClassInvalid;
    if (find(*spec.node_id)) return UAPLEX_BadNodeIdExists;
    if (spec.node_id->namespace_index == 0 || spec.node_id->namespace_index >= namespaces_.size())
        return UAPLEX_BadNodeIdRejected;
    if (spec.parent_id != nullptr && !find(*spec.parent_id)) return UAPLEX_BadParentNodeIdInvalid;

    auto node = std::make_unique<Node>();
    node->id = internNodeId(*spec.node_id);
    node->nodeClass = static_cast<std::uint8_t>(spec.node_class);
    node->browseName.namespace_index = spec.browse_name->namespace_index;
    node->browseName.name = internString(spec.browse_name->name);
    if (spec.display_name != nullptr) {
        node->displayName.mask = spec.display_name->mask;
        node->displayName.locale = internString(spec.display_name->locale);
        node->displayName.text = internString(spec.display_name->text);
    } else {
        node->displayName.mask = UAPLEX_LOCALIZEDTEXT_TEXT;
        node->displayName.locale = ua::nullString();
        node->displayName.text = node->browseName.name;
    }
    if (spec.description != nullptr) {
        node->description.mask = spec.description->mask;
        node->description.locale = internString(spec.description->locale);
        node->description.text = internString(spec.description->text);
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
            node->inverseName.locale = internString(spec.inverse_name->locale);
            node->inverseName.text = internString(spec.inverse_name->text);
        }
        if (const uaplex_extensionobject* d = spec.data_type_definition) {
            if (d->encoding != UAPLEX_EXTENSIONOBJECT_BINARY || d->body.length < 0)
                return UAPLEX_BadInvalidArgument;
            node->definitionEncoding = internNodeId(d->type_id);
            node->definitionBody.assign(d->body.data, d->body.data + d->body.length);
        }
    }
    if (spec.node_class == kVariable || spec.node_class == kVariableType) {
        if (spec.data_type != nullptr) node->dataType = internNodeId(*spec.data_type);
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
    Node* raw = node.get();
    nodes_.emplace(raw->id, std::move(node));
    if (raw->nodeClass == kReferenceType) registerReferenceType(*raw);

    if (spec.node_class == kObject || spec.node_class == kVariable) {
        ua::NodeId typeDef = ua::numericNodeId(
            0, spec.node_class == kObject ? kBaseObjectType : kBaseDataVariableType);
        if (spec.type_definition != nullptr) typeDef = internNodeId(*spec.type_definition);
        raw->references.push_back(Reference{kHasTypeDefinition, true, typeDef});
    }
    if (spec.parent_id != nullptr) {
        std::uint32_t refType = kHasComponent;
        if (spec.reference_type_id != nullptr) {
            refType = referenceTypeCode(*spec.reference_type_id);
            if (refType == 0) return UAPLEX_BadReferenceTypeIdInvalid;
        }
        uaplex_status st = addReference(*spec.parent_id, refType, raw->id, true);
        if (st != UAPLEX_Good) return st;
    }
    if (out != nullptr) *out = raw;
    return UAPLEX_Good;
}

}  // namespace uaplex::addressspace
