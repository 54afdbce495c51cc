// SPDX-License-Identifier: Apache-2.0
// The address space: namespace 0 indexed straight from the generated image (read-only data,
// no per-node objects), the namespace table, and a store for the nodes node managers add.
//
// Threading: nodes and references are added while the server starts (node managers build
// their nodes in start); seal() then freezes the structure, and from there on lookups and
// browsing read it without any lock. Variable values change at any time; each stored value
// has its own small lock (ValueSlot).
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <uaplex/addressspace/ns0_image.h>
#include <uaplex/addressspace/text_slot.hpp>
#include <uaplex/addressspace/value_slot.hpp>
#include "uaplex/node_manager.h"

namespace uaplex::addressspace {

// NodeClass values (Part 3 8.29), also the masks of BrowseDescription.nodeClassMask.
enum NodeClassValue : std::uint8_t {
    kObject = 1,
    kVariable = 2,
    kMethod = 4,
    kObjectType = 8,
    kVariableType = 16,
    kReferenceType = 32,
    kDataType = 64,
    kView = 128,
};

// AccessLevel bits (Part 3 8.57).
enum AccessLevelBits : std::uint8_t {
    kCurrentRead = 1,
    kCurrentWrite = 2,
    kStatusWrite = 32,
    kTimestampWrite = 64,
};

// Hash and equality of NodeIds by value (string/bytestring/guid identifiers by content).
struct NodeIdHash {
    std::size_t operator()(const ua::NodeId& id) const noexcept;
};
struct NodeIdEqual {
    bool operator()(const ua::NodeId& a, const ua::NodeId& b) const noexcept {
        return ua::equal(a, b);
    }
};

// Reference type codes at and above this one stand for ReferenceTypes of the store (a
// companion's, e.g. DI's ConnectsTo): kStoreReferenceType | n. Below it: namespace-0 ids.
inline constexpr std::uint32_t kStoreReferenceType = 0x80000000u;

// A reference held by the store (from a dynamic node, or added to a namespace-0 node).
struct Reference {
    std::uint32_t referenceType;  // ns=0 numeric id, or a store type's code
    bool isForward;
    ua::NodeId target;  // identifier text interned in the address space
};

// Serves a Value attribute for a plugin (uaplex_node_spec read/write/call callbacks).
struct Callbacks {
    uaplex_value_read_fn read = nullptr;
    uaplex_value_write_fn write = nullptr;
    uaplex_method_fn call = nullptr;
    void* user = nullptr;
    // Since 1.8: the Value's asynchronous forms (read and write go through them when set).
    uaplex_value_read_async_fn readAsync = nullptr;
    uaplex_value_write_async_fn writeAsync = nullptr;
    bool readsValue() const noexcept { return read != nullptr || readAsync != nullptr; }
    const void* owner = nullptr;  // the plugin instance that added the node (its sampler)
};

// A Method implementation a plugin bound (host API method_bind): by the method's NodeId, or for
// the instances of an ObjectType and its subtypes. NodeIds are interned.
struct MethodBinding {
    ua::NodeId method{};
    ua::NodeId objectType{};  // null NodeId when bound by the method's NodeId
    bool byType = false;
    uaplex_method_call_fn call = nullptr;
    void* user = nullptr;
};

// A node added by a node manager (or by the kernel for the Server object's helpers). All text
// is interned, so the views below stay valid for the life of the address space.
struct Node {
    ua::NodeId id{};
    std::uint8_t nodeClass = kObject;
    ua::QualifiedName browseName{};
    // DisplayName, Description and InverseName as added; a Write replaces them through the
    // TextSlots below (texts), which readers consult first.
    ua::LocalizedText displayName{};
    ua::LocalizedText description{};
    // Scalars a Write may change while other threads read them (WriteMask decides).
    std::atomic<std::uint32_t> writeMask{0};
    std::atomic<std::uint8_t> eventNotifier{0};
    // Variables.
    ua::NodeId dataType{};
    std::atomic<std::int32_t> valueRank{-2};
    std::vector<std::uint32_t> arrayDimensions;
    std::atomic<std::uint8_t> accessLevel{kCurrentRead};
    // Narrows AccessLevel (the effective UserAccessLevel is both ANDed): 0xFF narrows nothing.
    std::atomic<std::uint8_t> userAccessLevel{0xFF};
    std::atomic<double> minimumSamplingInterval{0};
    // Historizing: its changes are recorded into the history store ([history]).
    std::atomic<bool> historizing{false};
    // Methods.
    std::atomic<bool> executable{true};
    // Type nodes (ObjectType, VariableType, ReferenceType, DataType).
    std::atomic<bool> isAbstract{false};
    std::atomic<bool> symmetric{false};
    ua::LocalizedText inverseName{0, {-1, nullptr}, {-1, nullptr}};
    NodeTexts texts;
    // DataTypes: DataTypeDefinition as an ExtensionObject (binary-encoding id + body).
    ua::NodeId definitionEncoding{};
    std::vector<std::uint8_t> definitionBody;
    Callbacks callbacks;
    ValueSlot value;  // Variables without a read callback
    std::vector<Reference> references;
};

// One node of either kind; cheap to copy. Exactly one of rec/dyn is set when found.
struct NodeRef {
    const ns0::NodeRecord* rec = nullptr;
    const Node* dyn = nullptr;
    explicit operator bool() const noexcept { return rec != nullptr || dyn != nullptr; }
    std::uint8_t nodeClass() const noexcept { return rec ? rec->nodeClass : dyn->nodeClass; }
};

// Value computed at read time for a namespace-0 Variable (the Server object's live values).
using ComputedValue = std::function<void(enc::Arena&, ua::Variant&)>;

class AddressSpace {
  public:
    explicit AddressSpace(std::string applicationUri);
    AddressSpace(const AddressSpace&) = delete;
    AddressSpace& operator=(const AddressSpace&) = delete;

    // --- namespaces ---
    // The index of `uri`, registering it if new (only before seal()).
    std::uint16_t registerNamespace(std::string_view uri);
    const std::vector<std::string>& namespaces() const noexcept { return namespaces_; }

    // --- lookup (any thread after seal) ---
    NodeRef find(const ua::NodeId& id) const noexcept;
    ua::NodeId nodeIdOf(const NodeRef& n) const noexcept;
    ua::QualifiedName browseNameOf(const NodeRef& n) const noexcept;
    // The current DisplayName (a written one is copied into `arena`); false when it is full.
    bool displayNameOf(const NodeRef& n, enc::Arena& arena, ua::LocalizedText& out) const noexcept;
    // Calls fn(referenceType, isForward, target) for every reference of n, image ones first.
    template <class Fn>
    void forEachReference(const NodeRef& n, Fn&& fn) const;
    // The HasTypeDefinition target of n, or a null NodeId.
    ua::NodeId typeDefinitionOf(const NodeRef& n) const noexcept;
    // True if the reference type (or ns0 type) `sub` is `super` or one of its subtypes
    // (HasSubtype hierarchy), through store ReferenceTypes too.
    bool isSubtypeOf(std::uint32_t sub, std::uint32_t super) const noexcept;
    // The code a Reference holds for a ReferenceType: the numeric id in namespace 0, the store
    // type's code otherwise; 0 when `type` is no ReferenceType of the address space.
    std::uint32_t referenceTypeCode(const ua::NodeId& type) const noexcept;
    // The ReferenceType's NodeId for a code (what clients see).
    ua::NodeId referenceTypeId(std::uint32_t code) const noexcept;
    // Any node: walks store types too (inverse HasSubtype), bounded in depth.
    bool isSubtypeOf(const ua::NodeId& sub, const ua::NodeId& super) const noexcept;
    // The supertype of a type node (its inverse HasSubtype target), or an empty NodeRef.
    NodeRef superTypeOf(const NodeRef& type) const noexcept;

    // --- method implementations (bound before seal, read lock-free after) ---
    uaplex_status bindMethod(const ua::NodeId& method, const ua::NodeId* objectType,
                             uaplex_method_call_fn call, void* user);
    const MethodBinding* methodBinding(const ua::NodeId& method) const noexcept;
    // The binding of `type` (itself, no supertypes) for `method` or for a method of the type
    // with the browse name `name` (an instance's copy); null when none.
    const MethodBinding* typeMethodBinding(const ua::NodeId& type, const ua::NodeId& method,
                                           const ua::QualifiedName& name) const noexcept;
    bool hasTypeMethodBindings() const noexcept { return !typeBindings_.empty(); }

    // --- namespace-0 data ---
    const ns0::Image& image() const noexcept { return ns0::kImage; }
    std::string_view imageString(ns0::Slice s) const noexcept;
    std::span<const std::uint8_t> imageBlob(ns0::Slice s) const noexcept;
    void setComputedValue(std::uint32_t ns0Id, ComputedValue fn);
    const ComputedValue* computedValue(std::uint32_t ns0Id) const noexcept;

    // --- building (host main thread, before seal) ---
    // Adds a node from a plugin's spec (with its parent reference); Bad on duplicates,
    // unknown parents or invalid specs. BadInvalidState after seal.
    uaplex_status addNode(const uaplex_node_spec& spec, Node** out = nullptr);
    uaplex_status addReference(const ua::NodeId& source, std::uint32_t referenceType,
                               const ua::NodeId& target, bool isForward);
    void seal() noexcept { sealed_.store(true, std::memory_order_release); }
    bool sealed() const noexcept { return sealed_.load(std::memory_order_acquire); }
    // A stored node for writes from plugins (value_set) and the services.
    Node* mutableNode(const ua::NodeId& id) noexcept;

    std::size_t dynamicNodeCount() const noexcept { return nodes_.size(); }
    // Calls fn for every stored node (after seal; not for a request path).
    void forEachNode(const std::function<void(Node&)>& fn);

  private:
    // Gives a ReferenceType node of the store its code (addNode).
    void registerReferenceType(const Node& type);
    ua::NodeId internNodeId(const ua::NodeId& id);
    ua::String internString(const ua::String& s);
    std::vector<Reference>* referencesOf(const ua::NodeId& id);

    std::vector<std::string> namespaces_;
    std::vector<std::uint16_t> ns0Index_;      // numeric id -> record index, 0xFFFF when none
    std::vector<std::uint32_t> ns0SuperType_;  // record index -> HasSubtype parent id (0 none)
    std::unordered_map<std::uint32_t, std::vector<Reference>> ns0Extra_;
    std::unordered_map<std::uint32_t, ComputedValue> computed_;
    std::unordered_map<ua::NodeId, std::unique_ptr<Node>, NodeIdHash, NodeIdEqual> nodes_;
    std::unordered_map<ua::NodeId, MethodBinding, NodeIdHash, NodeIdEqual> methodBindings_;
    std::unordered_multimap<ua::NodeId, MethodBinding, NodeIdHash, NodeIdEqual> typeBindings_;
    std::vector<ua::NodeId> storeReferenceTypes_;  // code & ~kStoreReferenceType -> NodeId
    std::unordered_map<ua::NodeId, std::uint32_t, NodeIdHash, NodeIdEqual> referenceTypeCodes_;
    std::unordered_set<std::string> strings_;  // node-based: element addresses are stable
    std::atomic<bool> sealed_{false};
};

inline constexpr std::uint32_t kHasSubtype = 45;
inline constexpr std::uint32_t kHasTypeDefinition = 40;
inline constexpr std::uint32_t kHasComponent = 47;
inline constexpr std::uint32_t kHasProperty = 46;
inline constexpr std::uint32_t kOrganizes = 35;
inline constexpr std::uint32_t kHierarchicalReferences = 33;

template <class Fn>
void AddressSpace::forEachReference(const NodeRef& n, Fn&& fn) const {
    if (n.rec) {
        const auto* refs = ns0::kImage.references + n.rec->firstReference;
        for (std::uint32_t i = 0; i < n.rec->referenceCount; ++i)
            fn(refs[i].referenceType, refs[i].isForward != 0, ua::numericNodeId(0, refs[i].target));
        auto it = ns0Extra_.find(n.rec->id);
        if (it != ns0Extra_.end())
            for (const Reference& r : it->second) fn(r.referenceType, r.isForward, r.target);
    } else if (n.dyn) {
        for (const Reference& r : n.dyn->references) fn(r.referenceType, r.isForward, r.target);
    }
}

}  // namespace uaplex::addressspace
