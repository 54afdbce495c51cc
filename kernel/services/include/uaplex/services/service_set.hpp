// SPDX-License-Identifier: Apache-2.0
// The attribute, view and method services of the kernel over the address space. The server's
// service table decodes a request, resolves its session and calls the service's function
// here; everything it needs to answer is in the ServiceCall.
#pragma once

#include <uaplex/encoding/encoding.hpp>
#include <uaplex/session/server_counters.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

struct uaplex_event_spec;

namespace uaplex::config {
struct ServerConfig;
enum class PubSubComponent : std::uint8_t;
}  // namespace uaplex::config
namespace uaplex::host {
class Host;
}

namespace uaplex::subscription {
class NodeValueSource;
struct EventView;
}  // namespace uaplex::subscription
namespace uaplex::session {
class AccessView;
class AccessPolicy;
struct RequestContext;
}  // namespace uaplex::session

namespace uaplex::services {

class AsyncRequest;
class AsyncBatch;

// What the services keep per session: browse continuation points, registered nodes. Created
// when the session is created, destroyed when it closes (releasing its continuation points).
class SessionState;
struct SessionStateDeleter {
    void operator()(SessionState* state) const noexcept;
};
using SessionStatePtr = std::unique_ptr<SessionState, SessionStateDeleter>;

// The counters live with the session table, which counts sessions without the services.
using session::ServerCounters;

// Server.GetMonitoredItems (Part 5 9.1) for the session whose state is `session`: the handles
// go into `arena`. BadSubscriptionIdInvalid, BadUserAccessDenied.
using GetMonitoredItemsFn = uaplex_status (*)(void* user, std::uint64_t session,
                                              std::uint32_t subscriptionId, enc::Arena& arena,
                                              ua::Array<ua::UInt32>& serverHandles,
                                              ua::Array<ua::UInt32>& clientHandles);

// ServerState (Part 5 12.6).
enum class ServerState : std::int32_t {
    Running = 0,
    Failed = 1,
    NoConfiguration = 2,
    Suspended = 3,
    Shutdown = 4,
    Test = 5,
    CommunicationFault = 6,
    Unknown = 7,
};

// One service invocation on a worker thread. The response is allocated in `arena` and must
// stay valid until the caller has encoded it; its ResponseHeader is left zeroed for the caller
// (requestHandle, timestamp, serviceResult) to fill.
struct ServiceCall {
    enc::Arena& arena;
    SessionState* session = nullptr;  // the activated session's state
    const enc::DataType* requestType = nullptr;
    const void* request = nullptr;
    const enc::DataType* responseType = nullptr;  // out
    void* response = nullptr;                     // out
    // What the session may do (Part 3 8.55 bits per node); null: everything.
    const session::AccessView* access = nullptr;
    // The request's context: its `defer` parks the request for asynchronous node-manager
    // operations (the service then returns GoodCompletesAsynchronously). Null: none.
    const session::RequestContext* ctx = nullptr;
    std::uint32_t returnDiagnostics = 0;
};

// Owns the address space (namespace 0, the Server object, the node-manager plugins' nodes)
// and answers Read, Write, Browse, BrowseNext, TranslateBrowsePathsToNodeIds, RegisterNodes,
// UnregisterNodes, Call, HistoryRead, HistoryUpdate and the NodeManagement services.
class ServiceSet {
  public:
    // Builds namespace 0 and the Server object from the configuration; creates and starts the
    // node-manager plugins the host loaded. Throws std::runtime_error with a one-line message.
    ServiceSet(const config::ServerConfig& cfg, host::Host& host);
    ~ServiceSet();
    ServiceSet(const ServiceSet&) = delete;
    ServiceSet& operator=(const ServiceSet&) = delete;

    SessionStatePtr createSessionState();

    // The services, one function each (the server's service table names them): Good with
    // call.response set, or a Bad status for a ServiceFault (BadTooManyOperations,
    // BadNothingToDo, ...). Any worker thread; never throw.
    uaplex_status read(ServiceCall& call) noexcept;
    uaplex_status write(ServiceCall& call) noexcept;
    uaplex_status browse(ServiceCall& call) noexcept;
    uaplex_status browseNext(ServiceCall& call) noexcept;
    uaplex_status translateBrowsePaths(ServiceCall& call) noexcept;
    uaplex_status registerNodes(ServiceCall& call) noexcept;
    uaplex_status unregisterNodes(ServiceCall& call) noexcept;
    uaplex_status callMethods(ServiceCall& call) noexcept;
    // HistoryRead ([history]; BadServiceUnsupported without it).
    uaplex_status historyRead(ServiceCall& call) noexcept;
    // HistoryUpdate ([history]; BadServiceUnsupported without it).
    uaplex_status historyUpdate(ServiceCall& call) noexcept;
    // AddNodes, AddReferences, DeleteNodes, DeleteReferences ([server] node_management;
    // BadServiceUnsupported without it).
    uaplex_status addNodes(ServiceCall& call) noexcept;
    uaplex_status addReferences(ServiceCall& call) noexcept;
    uaplex_status deleteNodes(ServiceCall& call) noexcept;
    uaplex_status deleteReferences(ServiceCall& call) noexcept;

    ServerCounters& counters() noexcept;
    // The namespace table (NamespaceArray order).
    std::vector<std::string> namespaceUris() const;
    // The [access] rules the RolePermissions attributes show; null: none. Must outlive use.
    void setAccessPolicy(const session::AccessPolicy* policy) noexcept;
    // Node values for monitored items: stored values report their changes through `fn`
    // (Write, value_set), every other node attribute is polled.
    subscription::NodeValueSource& valueSource();
    void setValueChanged(void (*fn)(void*, std::uint64_t, const ua::DataValue&),
                         void* user) noexcept;
    // `session` in the callback is the SessionState's address.
    void setGetMonitoredItems(GetMonitoredItemsFn fn, void* user) noexcept;
    // Events node managers raise (host API raise_event) go to `fn` with the notifier handles
    // of their source; null stops them.
    using EventRaisedFn = void (*)(void*, std::span<const std::uint64_t>,
                                   const subscription::EventView&);
    void setEventRaised(EventRaisedFn fn, void* user) noexcept;
    // An event the server itself raises (the Audit events): checked and completed like a
    // node manager's.
    uaplex_status raiseEvent(const uaplex_event_spec& spec) noexcept;
    // Enable, Disable, AddComment, Acknowledge, Confirm (ns0 method ids, Part 9) on the
    // condition `object` for `user` (its ClientUserId), inputs checked against the method's
    // InputArguments already: BadNodeIdInvalid when `object` is no condition the kernel holds.
    uaplex_status callCondition(const ua::NodeId& object, std::uint32_t method,
                                std::span<const ua::Variant> inputs,
                                std::string_view user) noexcept;
    // The Server object's diagnostics arrays (SessionDiagnosticsArray, its security
    // counterpart, SubscriptionDiagnosticsArray: `arrayNode` is the ns=0 id read) are filled
    // by `fn` when read, in the Read's arena; without one they read as empty arrays. With
    // `session` (the GUID of a SessionId), the rows of that session only.
    using DiagnosticsArrayFn = void (*)(void*, std::uint32_t arrayNode, const ua::Guid* session,
                                        enc::Arena& arena, ua::Variant& out) noexcept;
    // The sessions that have a SessionDiagnosticsObject under SessionsDiagnosticsSummary:
    // at most `capacity` of them, oldest first (with `only`, that session alone), their
    // SessionIds' GUIDs into `guids` and names (copied into `arena`) into `names`; returns
    // how many.
    using DiagnosedSessionsFn = std::size_t (*)(void*, const ua::Guid* only, enc::Arena& arena,
                                                ua::Guid* guids, ua::String* names,
                                                std::size_t capacity) noexcept;
    void setDiagnosticsArrays(DiagnosticsArrayFn fn, DiagnosedSessionsFn sessions,
                              void* user) noexcept;
    void setState(ServerState state) noexcept;
    // The PubSubState of a [pubsub] component, asked when its Status.State in the
    // PublishSubscribe model is read (pubsub_model.cpp); without one every State is Disabled.
    using PubSubStateFn = std::int32_t (*)(void*, config::PubSubComponent,
                                           std::uint32_t index) noexcept;
    void setPubSubState(PubSubStateFn fn, void* user) noexcept;
    // The [pubsub] ConfigurationVersion (a VersionTime) the model shows and messages carry.
    std::uint32_t pubsubConfigurationVersion() const noexcept;
    // A stored Variable's value set as a node manager's value_set sets it (the change path of
    // the monitored items); BadNodeIdUnknown, BadNodeClassInvalid.
    uaplex_status setValue(const ua::NodeId& node, const ua::DataValue& value) noexcept;

  private:
    struct Impl;
    friend class AsyncRequest;  // asynchronous operations (async_operations.hpp)
    friend class AsyncBatch;
    uaplex_status guarded(ServiceCall& call, uaplex_status (Impl::*service)(ServiceCall&)) noexcept;
    std::unique_ptr<Impl> impl_;
};

}  // namespace uaplex::services
