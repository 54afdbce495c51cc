// SPDX-License-Identifier: Apache-2.0
// What the service table hands the address-space services to: the kernel's ServiceSet in the
// server, a fake in tests. Kept abstract so that the protocol stack builds and is tested without
// the address space.
#pragma once

#include <uaplex/statuscodes.h>
#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace uaplex::enc {
class Arena;
struct DataType;
}  // namespace uaplex::enc
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
struct ServerCounters;
struct RequestContext;
}  // namespace uaplex::session

namespace uaplex::server {

// Told of every stored value change (Write, the host API's value_set) with the node's
// NodeValueSource handle.
using ValueChangedFn = void (*)(void* user, std::uint64_t node, const ua::DataValue& value);

// Server.GetMonitoredItems for the session whose services state is `session` (its address).
using GetMonitoredItemsFn = uaplex_status (*)(void* user, std::uint64_t session,
                                              std::uint32_t subscriptionId, enc::Arena& arena,
                                              ua::Array<ua::UInt32>& serverHandles,
                                              ua::Array<ua::UInt32>& clientHandles);
using EventRaisedFn = void (*)(void* user, std::span<const std::uint64_t> notifiers,
                               const subscription::EventView& event);
// Fills the Server object's diagnostics array `arrayNode` (its ns=0 id) in `arena`; with
// `session` (a SessionId's GUID), the rows of that session only.
using DiagnosticsArrayFn = void (*)(void* user, std::uint32_t arrayNode, const ua::Guid* session,
                                    enc::Arena& arena, ua::Variant& out) noexcept;
// The sessions with a SessionDiagnosticsObject (oldest first, at most `capacity`; with `only`,
// that one alone): GUIDs and names (in `arena`); returns how many.
using DiagnosedSessionsFn = std::size_t (*)(void* user, const ua::Guid* only, enc::Arena& arena,
                                            ua::Guid* guids, ua::String* names,
                                            std::size_t capacity) noexcept;

using PubSubStateFn = std::int32_t (*)(void* user, config::PubSubComponent kind,
                                       std::uint32_t index) noexcept;

// One address-space service: Good with the response set (allocated in `arena`, its
// ResponseHeader left for the caller), or a Bad status answered as a ServiceFault. `access` is
// what the session may do (null: everything). GoodCompletesAsynchronously: the service parked
// the request through ctx.defer and took the arena's contents; it answers later. `ctx` may be
// null (no deferral). Any worker thread; never throws.
using NodeServiceFn = uaplex_status (*)(void* self, enc::Arena& arena, void* sessionState,
                                        const session::AccessView* access, const void* request,
                                        const session::RequestContext* ctx,
                                        std::uint32_t returnDiagnostics,
                                        const enc::DataType*& responseType,
                                        void*& response) noexcept;

// The address-space services of a ServiceHandler; a null entry is not served.
struct NodeServices {
    void* self = nullptr;
    NodeServiceFn read = nullptr;
    NodeServiceFn write = nullptr;
    NodeServiceFn browse = nullptr;
    NodeServiceFn browseNext = nullptr;
    NodeServiceFn translateBrowsePaths = nullptr;
    NodeServiceFn registerNodes = nullptr;
    NodeServiceFn unregisterNodes = nullptr;
    NodeServiceFn call = nullptr;
    // The Part 9 condition methods (Enable, Disable, AddComment, Acknowledge, Confirm) the
    // Call service checked and left BadNotImplemented: run on the condition `object` for
    // `user` (ClientUserId). Null: not served.
    uaplex_status (*conditionCall)(void* self, const ua::NodeId& object, std::uint32_t method,
                                   std::span<const ua::Variant> inputs,
                                   std::string_view user) noexcept = nullptr;
    NodeServiceFn historyRead = nullptr;
    NodeServiceFn historyUpdate = nullptr;
    // The NodeManagement service set (Part 4 5.7).
    NodeServiceFn addNodes = nullptr;
    NodeServiceFn addReferences = nullptr;
    NodeServiceFn deleteNodes = nullptr;
    NodeServiceFn deleteReferences = nullptr;
};

class ServiceHandler {
  public:
    virtual ~ServiceHandler() = default;
    // Per-session state of the services (created with the session, destroyed with it).
    virtual void* createSessionState() = 0;
    virtual void destroySessionState(void* state) noexcept = 0;
    // Read, Write, Browse, BrowseNext, TranslateBrowsePathsToNodeIds, RegisterNodes,
    // UnregisterNodes, Call as plain functions, asked for once: the service table calls them.
    // None by default (those services answer BadServiceUnsupported).
    virtual NodeServices nodeServices() noexcept { return {}; }
    // The namespace table (NamespaceArray), for compiling the access rules.
    virtual std::vector<std::string> namespaceUris() const { return {}; }
    // The access rules, for the RolePermissions attributes (null: none); outlives its use.
    virtual void setAccessPolicy(const session::AccessPolicy*) noexcept {}
    // The ServerDiagnosticsSummary counters the session layer updates (never null).
    virtual session::ServerCounters& counters() noexcept = 0;
    // The node values monitored items read, or null when subscriptions are not served.
    virtual subscription::NodeValueSource* valueSource() noexcept { return nullptr; }
    virtual void setValueChanged(ValueChangedFn, void*) noexcept {}
    virtual void setGetMonitoredItems(GetMonitoredItemsFn, void*) noexcept {}
    // Told of every event a node manager raises, with its notifier handles.
    virtual void setEventRaised(EventRaisedFn, void*) noexcept {}
    // Raises an event of the server's own (the Audit events) on its source's notifiers.
    virtual uaplex_status raiseEvent(const uaplex_event_spec&) noexcept {
        return UAPLEX_BadNotSupported;
    }
    // Who fills SessionDiagnosticsArray, SessionSecurityDiagnosticsArray and
    // SubscriptionDiagnosticsArray when they are read, and lists the sessions of the
    // per-session SessionDiagnosticsObjects (set before serving).
    virtual void setDiagnosticsArrays(DiagnosticsArrayFn, DiagnosedSessionsFn, void*) noexcept {}
    // Who answers the PubSubState of the [pubsub] components in the PublishSubscribe model
    // (any thread, atomics only: reads of Status.State call it).
    virtual void setPubSubState(PubSubStateFn, void*) noexcept {}
    // The ConfigurationVersion the PublishSubscribe model shows (0: none; [pubsub] sends it).
    virtual std::uint32_t pubsubConfigurationVersion() const noexcept { return 0; }
    // Stores a Variable's value as a node manager's value_set does (the change reaches the
    // monitored items and the publisher): the [pubsub] DataSetReaders' TargetVariables. Any
    // thread; waits on no I/O (persistent nodes are written with the next transaction).
    virtual uaplex_status setValue(const ua::NodeId&, const ua::DataValue&) noexcept {
        return UAPLEX_BadNotSupported;
    }
    // The server is stopping (ServerState Shutdown).
    virtual void shutdown() noexcept {}
};

// The handler the `uaplex` executable uses: the kernel's ServiceSet (uaplex_server_services).
// Construct after host.start().
std::unique_ptr<ServiceHandler> makeServiceHandler(const config::ServerConfig& cfg,
                                                   host::Host& host);

}  // namespace uaplex::server
