// SPDX-License-Identifier: Apache-2.0
// The address space: namespace 0 indexed straight from the generated image (read-only data,
// no per-node objects), the namespace table, and a store for the nodes node managers add.
//
// Threading: lookups and browsing never lock. Nodes and references are added (and, once
// sealed, deleted) by one writer at a time (the caller serialises mutations); readers hold a
// Pin (reclaim.hpp) while they use what they found, and what a mutation unlinks (a node, a
// replaced reference array, an outgrown table) is freed only once no Pin that might see it is
// left. Variable values change at any time; each stored value has its own small lock
// (ValueSlot).
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <atomic>
#include <cstdint>
#include <forward_list>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <uaplex/addressspace/ns0_image.h>
#include <uaplex/addressspace/node_table.hpp>
#include <uaplex/addressspace/reclaim.hpp>
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
    ua::NodeId target;  // identifier text owned by the node that holds the reference
};

// The references of one node, read without a lock: entries below `count` never change; an
// append writes the next entry and then publishes the count, anything else (a removal, a
// full array) publishes a new array and retires this one.
struct alignas(8) RefArray {
    std::uint32_t capacity = 0;
    std::atomic<std::uint32_t> count{0};
    Reference* items() noexcept { return reinterpret_cast<Reference*>(this + 1); }
    const Reference* items() const noexcept { return reinterpret_cast<const Reference*>(this + 1); }
    std::span<const Reference> view() const noexcept {
        return {items(), count.load(std::memory_order_acquire)};
    }
    static RefArray* make(std::uint32_t capacity);
    static void destroy(void* a) noexcept;
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

// A node added by a node manager (or by the kernel for the Server object's helpers). Its text
// (and that of the NodeIds its references name) is owned by the node, so the views below stay
// valid as long as the node is.
struct Node {
    Node() = default;
    Node(const Node&) = delete;
    Node& operator=(const Node&) = delete;
    ~Node();
    ua::NodeId id{};
    // Never reused: the subscription engine's handle of the node's Value (serial << 1).
    std::uint64_t serial = 0;
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
    // Deleted: unlinked, freed once no reader holds it.
    std::atomic<bool> deleted{false};
    // Held by a kernel table that is fixed once the server runs (persistence, history,
    // [[alarms]] sources): not deletable.
    std::atomic<bool> pinned{false};
    // Added by a client (NodeManagement AddNodes): DeleteNodes may delete it.
    bool clientAdded = false;

    std::span<const Reference> references() const noexcept {
        const RefArray* a = refs.load(std::memory_order_acquire);
        return a != nullptr ? a->view() : std::span<const Reference>{};
    }
    std::atomic<RefArray*> refs{nullptr};
    std::atomic<std::uint32_t> refGeneration{0};  // counts changes of refs
    std::forward_list<std::string> text;          // what the views of this node point into
};

// One entry of a GeneralModelChangeEvent's Changes (ModelChangeStructureDataType, Part 5
// 12.16): the verbs are bits.
struct ModelChange {
    enum : std::uint8_t {
        kNodeAdded = 1,
        kNodeDeleted = 2,
        kReferenceAdded = 4,
        kReferenceDeleted = 8,
        kDataTypeChanged = 16,
    };
    std::uint8_t verb = 0;
    ua::NodeId affected{};      // a string/opaque identifier's bytes are in `text`
    ua::NodeId affectedType{};  // in `typeText`
    std::string text;
    std::string typeText;
    ua::NodeId affectedId() const noexcept;
    ua::NodeId affectedTypeId() const noexcept;
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

    // --- lookup (any thread, inside a Pin for as long as the result is used) ---
    Pin pin() noexcept { return Pin(reclaimer_); }
    Reclaimer& reclaimer() noexcept { return reclaimer_; }
    NodeRef find(const ua::NodeId& id) const noexcept;
    // Counts the changes of n's references (Browse continuation points compare it).
    std::uint32_t referenceGeneration(const NodeRef& n) const noexcept;
    // The stored node of a serial (its Value's subscription handle), null once deleted.
    const Node* findSerial(std::uint64_t serial) const noexcept;
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

    // --- mutation (one writer at a time: the caller serialises them) ---
    // Adds a node from a plugin's spec (with its parent reference); Bad on duplicates,
    // unknown parents or invalid specs, BadResourceUnavailable past setMaxNodes. Once sealed,
    // ReferenceTypes are refused (BadNodeClassInvalid: their codes are fixed by then).
    // `owner` (the plugin instance, Callbacks::owner) and clientAdded are set before the node
    // is published.
    uaplex_status addNode(const uaplex_node_spec& spec, Node** out = nullptr,
                          const void* owner = nullptr, bool clientAdded = false);
    uaplex_status addReference(const ua::NodeId& source, std::uint32_t referenceType,
                               const ua::NodeId& target, bool isForward);
    // Why `n` may not be deleted (Good when it may): a ReferenceType (BadNodeClassInvalid),
    // a pinned node (BadUserAccessDenied).
    uaplex_status deletable(const Node& n) const noexcept;
    // Deletes the nodes (each deletable(), no duplicates) with their own references and the
    // other ends of those; with deleteTargetReferences also the references of other nodes
    // that point at them (Part 4 5.7.4). Throws std::bad_alloc before changing anything.
    void deleteNodes(std::span<Node* const> nodes, bool deleteTargetReferences);
    // Deletes source --type--> target (isForward as stored at the source) and, with
    // bidirectional, the other end. BadNotFound when the source holds no such reference.
    uaplex_status deleteReference(const ua::NodeId& source, std::uint32_t referenceType,
                                  const ua::NodeId& target, bool isForward, bool bidirectional);
    // Frees what no reader can hold any more; the writer calls it after its mutations.
    void collect() noexcept { reclaimer_.collect(); }
    // The cap on stored nodes ([server.limits] max_store_nodes).
    void setMaxNodes(std::size_t n) noexcept { maxNodes_ = n; }
    std::size_t maxNodes() const noexcept { return maxNodes_; }
    // Once sealed, every mutation is recorded here for the model change events; the writer
    // takes them after its batch.
    std::vector<ModelChange> takeChanges() noexcept { return std::exchange(changes_, {}); }
    void seal() noexcept { sealed_.store(true, std::memory_order_release); }
    bool sealed() const noexcept { return sealed_.load(std::memory_order_acquire); }
    // A stored node for writes from plugins (value_set) and the services (inside a Pin).
    Node* mutableNode(const ua::NodeId& id) noexcept;

    std::size_t dynamicNodeCount() const noexcept { return nodes_.size(); }
    // Calls fn for every stored node (inside a Pin; not for a request path).
    void forEachNode(const std::function<void(Node&)>& fn);
    ~AddressSpace();

  private:
    // Gives a ReferenceType node of the store its code (addNode).
    void registerReferenceType(const Node& type);
    ua::NodeId internNodeId(const ua::NodeId& id);
    ua::String internString(const ua::String& s);
    // The reference array slot of a node (a stored node's, or a namespace-0 node's extra
    // references) and, for a stored node, the node that owns the text of its targets.
    std::atomic<RefArray*>* referencesOf(const ua::NodeId& id, Node** owner) noexcept;
    // Appends r (its target's text copied to `owner`, or interned for namespace 0).
    void appendReference(std::atomic<RefArray*>& slot, Node* owner, const Reference& r);
    // Publishes the references of `slot` (owned by `owner`, null for namespace 0) for which
    // keep(r) holds; the old array is retired. False when all were kept.
    template <class Keep>
    bool filterReferences(std::atomic<RefArray*>& slot, Node* owner, Keep&& keep);
    void bumpGeneration(std::atomic<RefArray*>& slot, Node* owner) noexcept;
    void record(std::uint8_t verb, const ua::NodeId& affected, const ua::NodeId& type);
    static ua::String own(Node& n, const ua::String& s);
    static ua::NodeId ownNodeId(Node& n, const ua::NodeId& id);

    struct ByNodeId {
        static const ua::NodeId& keyOf(const Node& n) noexcept { return n.id; }
        static std::size_t hash(const ua::NodeId& id) noexcept { return NodeIdHash{}(id); }
        static bool equal(const ua::NodeId& a, const ua::NodeId& b) noexcept {
            return ua::equal(a, b);
        }
    };
    struct BySerial {
        static std::uint64_t keyOf(const Node& n) noexcept { return n.serial; }
        static std::size_t hash(std::uint64_t s) noexcept { return s * 0x9e3779b97f4a7c15ull; }
        static bool equal(std::uint64_t a, std::uint64_t b) noexcept { return a == b; }
    };

    Reclaimer reclaimer_;  // first: destroyed last, after the tables that retire into it
    std::vector<std::string> namespaces_;
    std::vector<std::uint16_t> ns0Index_;      // numeric id -> record index, 0xFFFF when none
    std::vector<std::uint32_t> ns0SuperType_;  // record index -> HasSubtype parent id (0 none)
    // record index -> references added to the namespace-0 node (null: none)
    std::unique_ptr<std::atomic<RefArray*>[]> ns0Extra_;
    std::unique_ptr<std::atomic<std::uint32_t>[]> ns0RefGeneration_;  // as Node::refGeneration
    std::unordered_map<std::uint32_t, ComputedValue> computed_;
    PtrTable<Node, ua::NodeId, ByNodeId> nodes_{reclaimer_};
    PtrTable<Node, std::uint64_t, BySerial> bySerial_{reclaimer_};
    std::uint64_t nextSerial_ = 1;
    std::size_t maxNodes_ = 1000000;
    std::vector<ModelChange> changes_;
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
        if (const RefArray* extra =
                ns0Extra_[std::size_t(n.rec - ns0::kImage.nodes)].load(std::memory_order_acquire))
            for (const Reference& r : extra->view()) fn(r.referenceType, r.isForward, r.target);
    } else if (n.dyn) {
        for (const Reference& r : n.dyn->references()) fn(r.referenceType, r.isForward, r.target);
    }
}

}  // namespace uaplex::addressspace
