// SPDX-License-Identifier: Apache-2.0
// Shared by the service implementations of kernel/services (not part of the contract).
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <uaplex/addressspace/address_space.hpp>
#include <uaplex/conditions/condition_table.hpp>
#include <uaplex/conditions/delay_timer.hpp>
#include <uaplex/conditions/limit_evaluator.hpp>
#include <uaplex/config/config.hpp>
#include <uaplex/cpp/mpmc_ring.hpp>
#include <uaplex/host/address_space_hooks.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/services/service_set.hpp>
#include <uaplex/session/access_control.hpp>
#include <uaplex/subscription/event_filter.hpp>
#include <uaplex/subscription/subscription_manager.hpp>

namespace uaplex::services {

using addressspace::AddressSpace;
using addressspace::Node;
using addressspace::NodeRef;
namespace ns0 = addressspace::ns0;

// A node manager's answers before the encoder sees them (plugin_values.cpp): false for a
// reserved severity, a NULL behind a length or box, a type or identifier kind that does not
// exist; the operation is then BadInternalError.
bool pluginStatusOk(uaplex_status status) noexcept;
bool pluginNodeIdOk(const ua::NodeId& id) noexcept;
bool pluginVariantOk(const ua::Variant& v) noexcept;
bool pluginDataValueOk(const ua::DataValue& v) noexcept;

// A store callback of a plugin (uaplex_node_spec read, write, call). The SDK's guards
// (uaplex/cpp/address_space.hpp) keep exceptions on the plugin's side of the C ABI; one from
// a C++ callback without them reaches this catch on the Itanium C++ ABI (GCC and Clang on
// Linux), and the operation is BadInternalError; the first such exception is logged.
void noteThrowingCallback(const char* what) noexcept;
template <class F>
uaplex_status storeCallback(const char* what, F&& f) noexcept {
    try {
        return f();
    } catch (...) {
        noteThrowingCallback(what);
        return UAPLEX_BadInternalError;
    }
}

// Attribute ids (Part 6 A.1).
enum AttributeId : std::uint32_t {
    kAttrNodeId = 1,
    kAttrNodeClass,
    kAttrBrowseName,
    kAttrDisplayName,
    kAttrDescription,
    kAttrWriteMask,
    kAttrUserWriteMask,
    kAttrIsAbstract,
    kAttrSymmetric,
    kAttrInverseName,
    kAttrContainsNoLoops,
    kAttrEventNotifier,
    kAttrValue,
    kAttrDataType,
    kAttrValueRank,
    kAttrArrayDimensions,
    kAttrAccessLevel,
    kAttrUserAccessLevel,
    kAttrMinimumSamplingInterval,
    kAttrHistorizing,
    kAttrExecutable,
    kAttrUserExecutable,
    kAttrDataTypeDefinition,
    kAttrRolePermissions,
    kAttrUserRolePermissions,
    kAttrAccessRestrictions,
    kAttrAccessLevelEx,
};

// A parsed NumericRange (Part 4 7.27): up to 4 dimensions of [first, last].
struct IndexRange {
    struct Dim {
        std::uint32_t first;
        std::uint32_t last;
    };
    Dim dims[4];
    std::uint32_t count = 0;  // 0: no range
};
// Good, or BadIndexRangeInvalid for a malformed range.
uaplex_status parseIndexRange(const ua::String& text, IndexRange& out) noexcept;
// Read: narrows `v` to the elements `range` selects: arrays and matrices (one range
// dimension per ArrayDimensions entry, the result keeps the shape of the selection), and one
// more dimension into String/ByteString elements; a substring of a String/ByteString scalar.
// BadIndexRangeNoData when nothing is selected or the range does not fit the value.
uaplex_status readIndexRange(enc::Arena& arena, const IndexRange& range, ua::Variant& v) noexcept;
// Write: replaces in `cur` (copied into the arena) the elements `range` selects with `in`,
// which must have exactly the shape of the range (BadIndexRangeInvalid otherwise); a range
// reaching past `cur` is BadIndexRangeNoData.
uaplex_status writeIndexRange(enc::Arena& arena, const IndexRange& range, ua::Variant& cur,
                              const ua::Variant& in) noexcept;

// A browse continuation point kept in the session (Part 4 7.9).
struct ContinuationPoint {
    std::uint64_t id = 0;
    std::string nodeKey;  // the browsed NodeId, binary encoded
    std::int32_t direction = 0;
    ua::NodeId referenceType{};  // a ReferenceType of the address space, or null
    bool includeSubtypes = false;
    std::uint32_t nodeClassMask = 0;
    std::uint32_t resultMask = 0;
    std::uint32_t maxReferences = 0;
    std::uint32_t offset = 0;  // references already returned
    // A node of the address space: its references' generation when the browse began; a
    // BrowseNext after they changed (or after the node was deleted) is refused.
    bool stored = false;
    std::uint32_t generation = 0;
};

// A HistoryRead continuation point kept in the session (Part 11 6.3): the store's cursor
// and the read it belongs to.
struct HistoryContinuation {
    std::uint64_t id = 0;
    std::string key;  // the node's key
    std::int64_t start = 0;
    std::int64_t end = 0;
    std::uint32_t flags = 0;
    std::vector<std::uint8_t> cursor;
};

// One matching reference of a browse, before paging.
struct BrowseHit {
    std::uint32_t referenceType;
    bool isForward;
    ua::NodeId target;
    std::uint8_t nodeClass;  // 0 when the target is not in the address space
};

}  // namespace uaplex::services

// Per-session state: continuation points and registered nodes. Guarded by its own mutex (a
// session may have several requests in flight); never shared between sessions.
class uaplex::services::SessionState {
  public:
    std::mutex mutex;
    std::vector<ContinuationPoint> continuationPoints;
    std::vector<HistoryContinuation> historyPoints;  // [history] max_continuation_points
    std::uint64_t nextContinuationId = 1;
    // The session's handle and each pending asynchronous browse hold one (SessionStateDeleter
    // drops the session's): a browse completing after its session closed finds it still there.
    std::atomic<std::uint32_t> refs{1};
    void acquire() noexcept { refs.fetch_add(1, std::memory_order_relaxed); }
    void release() noexcept {
        if (refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
    }
};

namespace uaplex::services {

// The null NodeId (Part 3 8.2.4): namespace 0 and a zero or empty identifier of any type.
inline bool isNullNodeId(const ua::NodeId& id) noexcept {
    if (id.namespace_index != 0) return false;
    switch (id.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            return id.identifier.numeric == 0;
        case UAPLEX_ID_STRING:
            return id.identifier.string.length <= 0;
        case UAPLEX_ID_BYTESTRING:
            return id.identifier.bytestring.length <= 0;
        default: {
            static const ua::Guid zero{};
            return std::memcmp(&id.identifier.guid, &zero, sizeof(zero)) == 0;
        }
    }
}

// A node-manager plugin that owns namespaces and answers for nodes not in the store.
struct NamespaceOwner {
    std::uint16_t namespaceIndex;
    const uaplex_node_manager_ops* ops;
    void* self;
    const void* ctx;  // its plugin instance
    // Since 1.8 (NULL when the plugin's table is older or has none).
    decltype(uaplex_node_manager_ops::read_async) readAsync = nullptr;
    decltype(uaplex_node_manager_ops::write_async) writeAsync = nullptr;
    decltype(uaplex_node_manager_ops::call_async) callAsync = nullptr;
    decltype(uaplex_node_manager_ops::browse_async) browseAsync = nullptr;
    // Its synchronous read and write run on its lane (blocking_calls.hpp).
    bool blocking = false;
};

class AsyncRequest;
class AsyncBatch;
class Persistence;

// The SessionDiagnosticsObject of each session (Part 5 6.3.4) under
// Server.ServerDiagnostics.SessionsDiagnosticsSummary, answered from the session table when a
// node is looked up (session_nodes.cpp); nothing of it is stored. Its shape is the image's
// placeholder of SessionsDiagnosticsSummaryType (<ClientName>, i=12097) and the nodes below
// it: the object's NodeId is the SessionId (ns=1, the session's GUID), each node below it
// ns=1;s=<guid>.<BrowseName path> ("....SessionDiagnostics.ReadCount"). Built once, read
// without a lock.
class SessionNodes {
  public:
    struct Entry {
        std::uint32_t id = 0;      // its node of the placeholder's tree in the image
        std::int32_t parent = -1;  // its parent entry (-1: the object)
        std::string path;          // BrowseNames from the object, '.'-separated
        std::uint32_t array = 0;   // the Server's array it repeats: its rows and permissions
        const enc::FieldDescriptor* field = nullptr;  // the row's member; null: the whole row
        std::uint8_t nodeClass = 0;
    };
    explicit SessionNodes(const AddressSpace& space);
    // The session and entry of `id` when it has the shape of one of these nodes.
    bool parse(const ua::NodeId& id, ua::Guid& session, std::uint32_t& entry) const noexcept;
    // The NodeId of `entry` for `session` (a string one in `arena`); false when it is full.
    bool nodeId(enc::Arena& arena, const ua::Guid& session, std::uint32_t entry,
                ua::NodeId& out) const noexcept;
    const Entry& entry(std::uint32_t i) const noexcept { return entries_[i]; }
    // The entry of the image node `id`, or -1.
    std::int32_t entryOf(std::uint32_t id) const noexcept;

  private:
    std::vector<Entry> entries_;
};
class History;
class BlockingCalls;

// The completions of the pending asynchronous operations (uaplex_completion, docs/pipeline.md
// "Asynchronous operations"): max_async_operations slots, each named by its index and a
// generation, so that a second or late complete finds its slot moved on and changes nothing.
// The requests they belong to are pooled and never freed before the table: a late reader of a
// slot's request finds valid memory and re-checks the slot.
class CompletionTable {
  public:
    explicit CompletionTable(std::uint32_t capacity);
    ~CompletionTable();
    CompletionTable(const CompletionTable&) = delete;
    CompletionTable& operator=(const CompletionTable&) = delete;

    // A request record (its arena empty), or null when none is left.
    AsyncRequest* makeRequest() noexcept;
    void recycle(AsyncRequest* request) noexcept;
    // A slot for operation `part` of `request`: fills `out`; false when every slot is taken.
    bool acquire(AsyncRequest& request, std::uint32_t part, uaplex_completion& out) noexcept;
    // The entry returned without GoodCompletesAsynchronously: completes the operation with
    // `status` unless the plugin completed it already.
    void completeNow(const uaplex_completion& c, uaplex_status status) noexcept {
        complete(this, c.token, status);
    }
    std::uint32_t pending() const noexcept { return pending_.load(std::memory_order_relaxed); }

  private:
    struct Slot {
        std::atomic<std::uint64_t> state{0};  // generation << 1 | pending
        AsyncRequest* request = nullptr;
        std::uint32_t part = 0;
    };
    static uaplex_status complete(void* self, std::uint64_t token, uaplex_status status) noexcept;
    static uaplex_status statusOf(void* self, std::uint64_t token) noexcept;
    Slot* pendingSlot(std::uint64_t token) noexcept;

    const std::uint32_t capacity_;
    std::unique_ptr<Slot[]> slots_;
    std::unique_ptr<sdk::MpmcRing<Slot*>> free_;
    std::atomic<std::uint32_t> pending_{0};
    std::unique_ptr<sdk::MpmcRing<AsyncRequest*>> spareRequests_;
    std::mutex growMutex_;  // only when a new request record is made
    std::vector<std::unique_ptr<AsyncRequest>> requests_;
    std::size_t maxRequests_;
};

// A node manager instance: what its sampling thread calls.
struct ManagerRef {
    const void* ctx;
    const uaplex_node_manager_ops* ops;
    void* self;
    bool monitors;  // ops->monitor is called (built against ABI 1.9 or later)
    std::string name;
    // Since 1.8 (NULL when absent): sampling reads go to it when set.
    decltype(uaplex_node_manager_ops::read_async) readAsync = nullptr;
};

struct ServiceSet::Impl final : host::AddressSpaceHooks {
    Impl(const config::ServerConfig& cfg, host::Host& host);
    ~Impl() override;

    // host API (address space part)
    uaplex_status namespaceRegister(uaplex_plugin_ctx*, uaplex_str uri,
                                    uint16_t* out) noexcept override;
    uaplex_status nodeAdd(uaplex_plugin_ctx*, const uaplex_node_spec* spec) noexcept override;
    uaplex_status referenceAdd(uaplex_plugin_ctx*, const uaplex_nodeid* source,
                               const uaplex_nodeid* type,
                               const uaplex_nodeid* target) noexcept override;
    uaplex_status valueSet(uaplex_plugin_ctx*, const uaplex_nodeid* node,
                           const uaplex_datavalue* value) noexcept override;
    uaplex_status nodesAdd(uaplex_plugin_ctx*, const uaplex_node_spec* const* specs, size_t count,
                           uaplex_status* results) noexcept override;
    uaplex_status nodesDelete(uaplex_plugin_ctx*, const uaplex_nodeid* ids, size_t count,
                              bool deleteTargetReferences,
                              uaplex_status* results) noexcept override;
    uaplex_status referenceDelete(uaplex_plugin_ctx*, const uaplex_nodeid* source,
                                  const uaplex_nodeid* type, const uaplex_nodeid* target,
                                  bool bidirectional) noexcept override;

    // Structure changes (model_changes.cpp): all under modelMutex(). addSpec adds one node
    // for `owner` (a plugin context, or null with clientAdded for AddNodes); removeNodes
    // deletes nodes already checked, after telling their monitored items.
    static std::mutex& modelMutex();
    uaplex_status addSpec(const void* owner, const uaplex_node_spec& spec, bool clientAdded,
                          Node** out = nullptr) noexcept;
    void removeNodes(std::span<Node* const> nodes, bool deleteTargetReferences);
    // After a batch of changes (its lock still held): frees what no reader holds, takes the
    // recorded changes; raiseModelChange (lock released) raises their event.
    std::vector<addressspace::ModelChange> finishChanges() noexcept;
    void raiseModelChange(const std::vector<addressspace::ModelChange>& changes) noexcept;
    void bumpNodeVersion(const ua::NodeId& affected) noexcept;

    // The Server object (server_object.cpp).
    void buildServerObject();

    // Services; each fills call.response / call.responseType or returns a service fault.
    uaplex_status read(ServiceCall& call) noexcept;
    uaplex_status write(ServiceCall& call) noexcept;
    uaplex_status browse(ServiceCall& call) noexcept;
    uaplex_status browseNext(ServiceCall& call) noexcept;
    uaplex_status translate(ServiceCall& call) noexcept;
    uaplex_status registerNodes(ServiceCall& call) noexcept;
    uaplex_status unregisterNodes(ServiceCall& call) noexcept;
    uaplex_status callMethods(ServiceCall& call) noexcept;
    uaplex_status historyRead(ServiceCall& call) noexcept;    // history.cpp
    uaplex_status historyUpdate(ServiceCall& call) noexcept;  // history_update.cpp
    // NodeManagement (node_management.cpp, Part 4 5.7): the store's nodes and references,
    // for sessions with one of [access] node_management_roles.
    uaplex_status addNodes(ServiceCall& call) noexcept;
    uaplex_status addReferences(ServiceCall& call) noexcept;
    uaplex_status deleteNodes(ServiceCall& call) noexcept;
    uaplex_status deleteReferences(ServiceCall& call) noexcept;
    // One item each, under modelMutex(); the result's NodeId is copied into `arena`.
    uaplex_status addNodeItem(const ServiceCall& call, const ua::AddNodesItem& item,
                              ua::NodeId& added) noexcept;
    uaplex_status addReferenceItem(const ServiceCall& call,
                                   const ua::AddReferencesItem& item) noexcept;
    uaplex_status deleteReferenceItem(const ServiceCall& call,
                                      const ua::DeleteReferencesItem& item) noexcept;
    // What the four services share: the switch, the list's limits, the response, and one
    // model-change event per request. `each(admin, results)` runs under modelMutex().
    template <class Response, class Result, class Each>
    uaplex_status nodeManagementFrame(ServiceCall& call, std::size_t n, Each&& each) noexcept;
    // AddReferences' and DeleteReferences' source node and ReferenceType (its code).
    uaplex_status referenceSource(const ua::NodeId& sourceId, const ua::NodeId& typeId,
                                  NodeRef& source, std::uint32_t& code) noexcept;
    // The local NodeId of `e` (its namespace URI resolved); false for another server's or an
    // unknown URI.
    bool localNodeId(const ua::ExpandedNodeId& e, ua::NodeId& out) const noexcept;
    // A Boolean attribute of a node of the address space (IsAbstract), false when unreadable.
    bool booleanAttribute(enc::Arena& arena, const ua::NodeId& id, std::uint32_t attr) noexcept;
    // AddNodes' server-assigned NodeIds: ns=1;i=<n>, the next free n (under modelMutex()).
    std::uint32_t nextAssignedId = 1;
    session::RoleMask nodeManagementRoles = 0;
    // The end of an owned namespace's Method call (`status` from its plugin): outputs and
    // input results as the response carries them (BadInternalError when not encodable).
    static void finishOwnedCall(uaplex_status status, std::size_t outCount, ua::Variant* outputs,
                                uaplex_status* inputResults, std::size_t given,
                                ua::CallMethodResult& r) noexcept;

    // Reads one attribute into `out` (status included); `access` null: no access checks
    // (the kernel's own reads).
    // With `batch`, an owned namespace's read_async and a store node's read_async are left to
    // it (item `index`, `out` filled when the operation completes).
    void readAttribute(enc::Arena& arena, const ua::NodeId& id, std::uint32_t attributeId,
                       const ua::String& indexRange, std::int32_t timestamps, ua::DataValue& out,
                       const session::AccessView* access = nullptr, AsyncBatch* batch = nullptr,
                       std::uint32_t index = 0) noexcept;
    // The end of a read: an owned namespace's result (`status` from its plugin), a store
    // Value's (from its callback), and what every attribute gets (the timestamps asked for).
    void finishOwnedRead(std::uint32_t attributeId, std::uint32_t perms, std::int32_t timestamps,
                         uaplex_status status, ua::DataValue& out) noexcept;
    void finishValueRead(enc::Arena& arena, uaplex_status status, const IndexRange& range,
                         std::int32_t timestamps, ua::DataValue& out) noexcept;
    void finishRead(std::uint32_t attributeId, std::int32_t timestamps,
                    ua::DataValue& out) noexcept;
    // RolePermissions from the [access] rules, restricted to the roles in `only`; false when
    // no rule covers the node.
    bool rolePermissionsOf(enc::Arena& arena, const ua::NodeId& id, session::RoleMask only,
                           ua::Variant& out) noexcept;
    // The permissions of the call's session on `id` (every bit without access control).
    static std::uint32_t permissionsOf(const ServiceCall& call, const ua::NodeId& id) noexcept {
        return call.access ? call.access->permissions(id) : config::kAllPermissions;
    }
    // What a session that may not do an operation on a node is told (Part 4 7.38 allows
    // either): BadUserAccessDenied when it may Browse the node, else BadNodeIdUnknown, the
    // same as for a node that does not exist, so that existence does not leak.
    static uaplex_status deniedStatus(std::uint32_t perms) noexcept {
        return (perms & session::kPermBrowse) ? UAPLEX_BadUserAccessDenied
                                              : UAPLEX_BadNodeIdUnknown;
    }
    // The Value attribute of a Variable/VariableType node (without IndexRange).
    uaplex_status readValue(enc::Arena& arena, const NodeRef& node, ua::DataValue& out) noexcept;
    // With `batch`, an owned namespace's write_async and a store node's write_async are left
    // to it (item `index`; the result is set when the operation completes).
    uaplex_status writeOne(enc::Arena& arena, const ua::WriteValue& wv,
                           const session::AccessView* access = nullptr, AsyncBatch* batch = nullptr,
                           std::uint32_t index = 0) noexcept;
    // After a store Variable's write callback: stores the value when the node has no read
    // callback.
    uaplex_status storeWritten(Node& n, const ua::DataValue& dv, uaplex_status st) noexcept;
    // A write of an attribute other than Value to a store node: WriteMask, type, range.
    uaplex_status writeStoreAttribute(Node& n, const ua::WriteValue& wv) noexcept;
    // True if `value` may be written to a variable of `dataType` and `valueRank`.
    bool typeMatches(const ua::NodeId& dataType, const ua::Variant& value) const noexcept;
    static bool rankMatches(std::int32_t valueRank, const ua::Variant& value) noexcept;
    const NamespaceOwner* ownerOf(std::uint16_t ns) const noexcept;
    // Reads an attribute of a node in an owned namespace through its plugin; false if none.
    bool ownedAttribute(enc::Arena& arena, const ua::NodeId& id, std::uint32_t attributeId,
                        ua::Variant& out) noexcept;
    // Browses one node into `result`, starting at cp.offset; creates or updates `cp` in the
    // session when references remain.
    // Nodes the session may not Browse (`access`) are left out.
    void browseOne(enc::Arena& arena, SessionState* session, ContinuationPoint& cp,
                   const ua::NodeId& nodeId, bool isNewBrowse, ua::BrowseResult& result,
                   const session::AccessView* access = nullptr) noexcept;
    // The second half of browseOne: `hits` (of an owned namespace's node when `owned`, then
    // filtered here) paged into `result`.
    void pageBrowse(enc::Arena& arena, SessionState* session, ContinuationPoint& cp,
                    const ua::NodeId& nodeId, bool isNewBrowse, std::vector<BrowseHit>& hits,
                    bool owned, ua::BrowseResult& result,
                    const session::AccessView* access) noexcept;
    // An owned namespace's answer to browse (its sink calls done): `result`'s status when it
    // is not to be paged, Good otherwise.
    static uaplex_status ownerBrowseStatus(uaplex_status st, bool faulty) noexcept {
        if (faulty || !pluginStatusOk(st)) return UAPLEX_BadInternalError;
        return st == UAPLEX_BadNotSupported ? UAPLEX_BadNodeIdUnknown : st;
    }
    // uaplex_reference_sink of an asynchronous browse (user: its PendingBrowse).
    static uaplex_status collectAsyncReference(void* user,
                                               const uaplex_reference* reference) noexcept;

    ua::DateTime now() const noexcept;

    config::ServerConfig cfg;
    host::Host& host;
    AddressSpace space;
    ServerCounters counters;
    std::atomic<std::int32_t> state{static_cast<std::int32_t>(ServerState::Running)};
    ua::DateTime startTime = 0;
    std::vector<NamespaceOwner> owners;
    // Asynchronous operations (async_operations.cpp).
    CompletionTable completions;
    // [persistence] (persistence.cpp); null without the section. Made after seal, while
    // node managers may already call value_set: they read `persisting`.
    std::unique_ptr<Persistence> persistence;
    std::atomic<Persistence*> persisting{nullptr};
    // [history] (history.cpp); null without the section. The recorder reads `recording`.
    std::unique_ptr<History> history;
    // The recorded Variables, resolved before seal (history_model.cpp), and their model:
    // HistoricalDataConfigurations, HistoryServerCapabilities, AggregateFunctions.
    std::vector<Node*> historyNodes;
    void buildHistoryModel();
    std::atomic<History*> recording{nullptr};
    // The EventNotifier bits [history] adds to namespace-0 image Objects (event history):
    // (numeric id, bits), set before any client is served and read-only afterwards.
    std::vector<std::pair<std::uint32_t, std::uint8_t>> staticNotifierBits;
    std::uint8_t staticNotifierBitsOf(std::uint32_t ns0Id) const noexcept {
        for (const auto& [id, bits] : staticNotifierBits)
            if (id == ns0Id) return bits;
        return 0;
    }
    void record(const Node& n, const ua::DataValue& v) noexcept;               // history.cpp
    void recordPushed(const ua::NodeId& id, const ua::DataValue& v) noexcept;  // history.cpp
    // Keeps a recorded node's pushes on for good (value_source.cpp): its node manager's
    // monitor op is called once, and the last monitored item does not switch it off. False
    // when its node manager does not push it.
    bool holdPushes(const ua::NodeId& id);
    // The lanes of the node managers with blocking_threads (null when none has them).
    std::unique_ptr<BlockingCalls> blocking;
    bool offloads(const void* ctx) const noexcept;
    std::vector<ManagerRef> managers;
    const ManagerRef* managerOf(const void* ctx) const noexcept {
        for (const ManagerRef& m : managers)
            if (m.ctx == ctx) return &m;
        return nullptr;
    }
    // params->value_changed of every node manager: a pushed change of a watched node.
    static uaplex_status valueChangedSink(void* user, const uaplex_nodeid* node,
                                          std::uint32_t attributeId,
                                          const uaplex_datavalue* value) noexcept;
    // Hands a handle's change to the engine (the stored values' path).
    void changedHandle(std::uint64_t handle, const ua::DataValue& v) noexcept {
        if (auto fn = valueChanged.load(std::memory_order_acquire)) fn(valueChangedUser, handle, v);
    }
    // The [access] rules (RolePermissions attributes); set by the server, cleared before it
    // goes.
    std::atomic<const session::AccessPolicy*> accessPolicy{nullptr};
    // Monitored items: the value source (made on first use) and who hears of stored changes.
    class ValueSource;  // value_source.cpp
    std::unique_ptr<subscription::NodeValueSource> makeValueSource();
    std::unique_ptr<subscription::NodeValueSource> values;
    // Atomic: the server clears it at stop while workers and node managers may still write.
    // Server.GetMonitoredItems, answered by the subscription engine (null: not served).
    std::atomic<GetMonitoredItemsFn> getMonitoredItems{nullptr};
    void* getMonitoredItemsUser = nullptr;  // set before the fn, never cleared
    using ValueChangedFn = void (*)(void*, std::uint64_t, const ua::DataValue&);
    std::atomic<ValueChangedFn> valueChanged{nullptr};
    void* valueChangedUser = nullptr;  // set before the first fn, never cleared
    // Events (host API raise_event): the subscription engine hears of them through `eventFn`
    // with the notifier handles of the source (itself, its notifier ancestors, the Server).
    using EventRaisedFn = void (*)(void*, std::span<const std::uint64_t>,
                                   const subscription::EventView&);
    std::atomic<EventRaisedFn> eventRaised{nullptr};
    void* eventRaisedUser = nullptr;  // set before the first fn, never cleared
    // The per-session SessionDiagnosticsObjects (session_nodes.cpp).
    struct SessionNodeRef {
        ua::Guid session{};
        std::uint32_t entry = 0;
    };
    std::unique_ptr<SessionNodes> sessionNodes;  // made with the Server object
    bool isSessionNode(const ua::NodeId& id, SessionNodeRef& out) const noexcept {
        return id.namespace_index == 1 && sessionNodes &&
               sessionNodes->parse(id, out.session, out.entry);
    }
    // The session is live (and diagnostics on): its name into `name` (in `arena`).
    bool sessionDiagnosed(const ua::Guid& session, enc::Arena& arena,
                          ua::String* name) const noexcept;
    // What the session may do on `id`: the per-session nodes have the permissions of the
    // Server array they repeat (SessionSecurityDiagnostics those of
    // SessionSecurityDiagnosticsArray).
    std::uint32_t nodePermissions(const session::AccessView* access,
                                  const ua::NodeId& id) const noexcept;
    void readSessionNode(enc::Arena& arena, const ua::NodeId& id, const SessionNodeRef& ref,
                         std::uint32_t attributeId, const ua::String& indexRange,
                         std::int32_t timestamps, ua::DataValue& out,
                         const session::AccessView* access) noexcept;
    // The references of a per-session node (all directions; the caller filters); false when
    // the session is gone. May throw std::bad_alloc.
    bool sessionNodeReferences(enc::Arena& arena, const SessionNodeRef& ref,
                               std::vector<BrowseHit>& hits) const;
    // SessionsDiagnosticsSummary's forward HasComponent references to the session objects.
    void sessionObjectReferences(enc::Arena& arena, std::vector<BrowseHit>& hits) const;
    // The type definition of a per-session node (null NodeId when not one).
    ua::NodeId sessionNodeType(const ua::NodeId& id) const noexcept;
    std::atomic<ServiceSet::DiagnosticsArrayFn> diagnosticsArrays{nullptr};
    std::atomic<ServiceSet::DiagnosedSessionsFn> diagnosedSessions{nullptr};
    void* diagnosticsArraysUser = nullptr;  // set before the first fn, never cleared
    uaplex_status raiseEvent(uaplex_plugin_ctx*, const uaplex_event_spec* spec) noexcept override;
    // An event checked and completed (EventId, Time, ...) and handed to the engine: the
    // raise_event of a non-condition event, the server's own, a condition's (its table's sink).
    uaplex_status deliverEvent(const uaplex_event_spec& spec) noexcept;
    // Conditions (condition_nodes.cpp): the table, built with the address space (before
    // seal) from the Objects of ConditionType subtypes, and the nodes of their fields.
    struct ConditionFieldNode {
        Impl* impl = nullptr;
        ua::NodeId condition{};  // interned in the address space
        conditions::Field field{};
    };
    std::unique_ptr<conditions::ConditionTable> conditions;
    std::vector<std::unique_ptr<ConditionFieldNode>> conditionFields;
    // The ConditionTable, made before the node managers start: their timers may raise events
    // (raiseEvent reads `conditions`) while buildConditions fills it.
    void makeConditionTable();
    void buildConditions();
    static uaplex_status readConditionField(void* user, const uaplex_nodeid* id,
                                            const uaplex_value_alloc* alloc,
                                            uaplex_datavalue* out) noexcept;
    static uaplex_status conditionEvent(void* user, const uaplex_event_spec& spec);
    uaplex_status callCondition(const ua::NodeId& object, std::uint32_t method,
                                std::span<const ua::Variant> inputs,
                                std::string_view user) noexcept;
    uaplex_status methodBind(uaplex_plugin_ctx*, const uaplex_method_spec* spec) noexcept override;
    // Conditions of plugins (host API condition_create / condition_set, since 1.13;
    // plugin_conditions.cpp): their Objects are added at once, their callbacks handed to the
    // table once buildConditions made it.
    uaplex_status conditionCreate(uaplex_plugin_ctx*,
                                  const uaplex_condition_spec* spec) noexcept override;
    uaplex_status conditionSet(uaplex_plugin_ctx*, const uaplex_nodeid* condition,
                               const uaplex_condition_state* state) noexcept override;
    struct PluginCondition {
        ua::NodeId id{};  // interned in the address space
        uaplex_condition_call_fn call = nullptr;
        void* user = nullptr;
        std::uint32_t flags = 0;
    };
    std::vector<PluginCondition> pluginConditions;  // before seal only (host main thread)
    // [[alarms]] (config_alarms.cpp): the configured alarms' nodes, added before the
    // conditions are collected, and their evaluation on each value change of their source.
    struct ConfiguredAlarm {
        ua::NodeId condition{};  // interned in the address space
        ua::NodeId type{};
        ua::NodeId source{};  // interned
        // A deviation alarm's SetpointNode, an off-normal alarm's NormalState (interned): the
        // node given, or the alarm's NormalValue Variable holding the constant normal value.
        ua::NodeId reference{};
        bool hasReference = false;
        std::string message;
        bool branches = false;  // [[alarms]] branches
        // Taken first, across an evaluation and its report: reports arrive in the order of the
        // evaluations. Not held by node reads (sampling reads under the engine's lock).
        std::mutex reportMutex;
        mutable std::mutex mutex;  // the evaluator (value changes, node reads)
        conditions::LimitEvaluator eval;
        // Its pending OnDelay/OffDelay end in alarmDelays; scheduledAt (under `mutex`) is the
        // deadline last given to it, so an unchanged evaluation takes no timer lock.
        struct Delay : conditions::DelayEntry {
            ConfiguredAlarm* alarm = nullptr;
        } delay;
        ua::DateTime scheduledAt = 0;
        explicit ConfiguredAlarm(const conditions::LimitAlarmSpec& s) : eval(s) {
            delay.alarm = this;
        }
    };
    struct AlarmFieldNode {  // a node of the limit state, read from the evaluator
        const ConfiguredAlarm* alarm = nullptr;
        enum class What : std::uint8_t { CurrentState, CurrentStateId, LimitState, LimitStateId };
        What what{};
        conditions::Limit limit{};
    };
    std::vector<std::unique_ptr<ConfiguredAlarm>> configuredAlarms;
    std::vector<std::unique_ptr<AlarmFieldNode>> alarmFields;
    // The inputs of the alarms by node: the source, or the reference (setpoint, NormalState).
    struct AlarmInput {
        const Node* node = nullptr;
        ConfiguredAlarm* alarm = nullptr;
        bool reference = false;
    };
    std::vector<AlarmInput> alarmsBySource;  // sorted by node, fixed
    // The delays' ends of all configured alarms (made when one has a delay); stopped first
    // when the services end.
    std::unique_ptr<conditions::DelayTimer> alarmDelays;
    void addConfiguredAlarms();
    // [pubsub] in the address space (pubsub_model.cpp): the Part 14 9.1 objects of the
    // configuration under Server.PublishSubscribe, read-only; Status.State asks pubsubState.
    struct PubSubStateNode {
        const Impl* impl = nullptr;
        config::PubSubComponent kind{};
        std::uint32_t index = 0;
    };
    std::vector<std::unique_ptr<PubSubStateNode>> pubsubStateNodes;
    std::atomic<ServiceSet::PubSubStateFn> pubsubState{nullptr};
    void* pubsubStateUser = nullptr;  // set before the first fn, never cleared
    std::uint32_t pubsubVersion = 0;
    void buildPubSubModel();
    std::int32_t pubsubStateOf(config::PubSubComponent kind, std::uint32_t index) const noexcept;
    static uaplex_status readPubSubState(void* user, const uaplex_nodeid* id,
                                         const uaplex_value_alloc* alloc,
                                         uaplex_datavalue* out) noexcept;
    void evaluateAlarms(const Node& n, const ua::DataValue& v) noexcept;
    // One alarm: a new value of its source (at `sourceTime`) or of its reference, or the end
    // of a delay.
    enum class AlarmUpdate : std::uint8_t { Source, Reference, Tick };
    void evaluateAlarm(ConfiguredAlarm& a, AlarmUpdate what, double x, ua::DateTime sourceTime,
                       ua::DateTime t) noexcept;
    static void alarmDelayEnded(void* user, conditions::DelayEntry& e, ua::DateTime now);
    void reportAlarm(const ConfiguredAlarm& a, bool active, std::uint16_t severity,
                     conditions::LimitLevel level,
                     const std::array<bool, conditions::kLimitCount>& limits,
                     ua::DateTime t) noexcept;
    static uaplex_status readAlarmField(void* user, const uaplex_nodeid* id,
                                        const uaplex_value_alloc* alloc,
                                        uaplex_datavalue* out) noexcept;
    // The handle an event item on notifier `n` has (ns0 records odd, stored nodes by address).
    static std::uint64_t notifierKey(const NodeRef& n) noexcept {
        return n.rec ? (std::uint64_t(n.rec->id) << 1) | 1 : n.dyn->serial << 1;
    }
    // After a stored value changed: tells the subscription engine (handle = the Node's serial
    // << 1). Not after the node was deleted: its items have had BadNodeIdUnknown.
    void changed(const Node& n, const ua::DataValue& v) noexcept {
        if (n.deleted.load(std::memory_order_acquire)) return;
        if (!alarmsBySource.empty()) evaluateAlarms(n, v);  // [[alarms]]
        if (auto fn = valueChanged.load(std::memory_order_acquire))
            fn(valueChangedUser, n.serial << 1, v);
        if (n.historizing.load(std::memory_order_relaxed)) record(n, v);
    }
};

// Arena helpers.
template <class T>
T* arenaNew(enc::Arena& arena, const T& value) noexcept {
    T* p = static_cast<T*>(arena.allocate(sizeof(T), alignof(T)));
    if (p != nullptr) *p = value;
    return p;
}
uaplex_value_alloc arenaAlloc(enc::Arena& arena) noexcept;
// The size of one array element of a built-in type (the C struct or scalar).
inline std::size_t elementSize(std::uint8_t builtinType) noexcept {
    return uaplex_builtin_size(builtinType);
}

}  // namespace uaplex::services
