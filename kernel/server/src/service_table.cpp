// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/service_table.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>

#include <uaplex/server/audit_trail.hpp>
#include <uaplex/server/discovery.hpp>
#include <uaplex/server/subscription_service.hpp>
#include "monitored_item_access.hpp"

namespace uaplex::server {

std::uint64_t sessionKey(const session::Session& s) noexcept {
    // The services' state when there is one, so that Server.GetMonitoredItems (called with
    // that state) names the same session; both live exactly as long as the session.
    return s.state() ? reinterpret_cast<std::uintptr_t>(s.state())
                     : reinterpret_cast<std::uintptr_t>(&s);
}

namespace {

namespace ns0 = ua::ns0;
using SubscriptionManager = subscription::SubscriptionManager;

template <class T>
const T& requestOf(const ServiceRequest& c) noexcept {
    return *static_cast<const T*>(c.request);
}

template <class T>
T* make(enc::Arena& arena) noexcept {
    return arena.allocateArray<T>(1);
}

// --- discovery (Part 4 5.4): no session ---------------------------------------------------------

uaplex_status getEndpoints(ServiceRequest& c) noexcept {
    const auto& req = requestOf<ua::GetEndpointsRequest>(c);
    auto* resp = make<ua::GetEndpointsResponse>(c.arena);
    if (!resp) return UAPLEX_BadOutOfMemory;
    std::string_view url =
        req.endpointUrl.length > 0 ? ua::view(req.endpointUrl) : c.ctx.endpointUrl;
    resp->endpoints = c.discovery.endpoints(c.arena, url, req.profileUris);
    c.responseType = enc::dataTypeOf<ua::GetEndpointsResponse>();
    c.response = resp;
    return UAPLEX_Good;
}

uaplex_status findServers(ServiceRequest& c) noexcept {
    const auto& req = requestOf<ua::FindServersRequest>(c);
    auto* resp = make<ua::FindServersResponse>(c.arena);
    if (!resp) return UAPLEX_BadOutOfMemory;
    std::string_view url =
        req.endpointUrl.length > 0 ? ua::view(req.endpointUrl) : c.ctx.endpointUrl;
    resp->servers = c.discovery.servers(c.arena, url, req.serverUris);
    c.responseType = enc::dataTypeOf<ua::FindServersResponse>();
    c.response = resp;
    return UAPLEX_Good;
}

// --- session services (Part 4 5.6): session/session_services.cpp --------------------------------

uaplex_status createSession(ServiceRequest& c) noexcept {
    const auto& req = requestOf<ua::CreateSessionRequest>(c);
    uaplex_status st =
        c.sessionServices.createSession(req, c.ctx, c.arena, c.responseType, c.response);
    // The client certificate of the session refused (Part 4 5.6.2).
    if (c.audit && (st == UAPLEX_BadCertificateUriInvalid || st == UAPLEX_BadCertificateInvalid))
        c.audit->sessionCertificate(ua::view(req.clientCertificate), st,
                                    ua::view(req.clientDescription.applicationUri));
    if (c.audit)
        c.audit->createSession(c.ctx, req, st,
                               st == UAPLEX_Good
                                   ? static_cast<const ua::CreateSessionResponse*>(c.response)
                                   : nullptr);
    return st;
}

uaplex_status activateSession(ServiceRequest& c) noexcept {
    const auto& req = requestOf<ua::ActivateSessionRequest>(c);
    uaplex_status st = c.sessionServices.activateSession(req, c.raw, c.ctx, c.arena, c.responseType,
                                                         c.response, c.deferred);
    // A deferred login is reported by the login pool once checked.
    if (c.audit && !c.deferred) c.sessionServices.reportActivation(req, c.ctx.channelId, st);
    return st;
}

uaplex_status closeSession(ServiceRequest& c) noexcept {
    return c.sessionServices.closeSession(requestOf<ua::CloseSessionRequest>(c), c.ctx, c.arena,
                                          c.responseType, c.response);
}

uaplex_status cancel(ServiceRequest& c) noexcept {
    const auto& req = requestOf<ua::CancelRequest>(c);
    uaplex_status st =
        c.sessionServices.cancel(*c.session, req, c.arena, c.responseType, c.response);
    if (c.audit) c.audit->cancel(*c.session, req, st);
    return st;
}

// --- attribute, view and method services: the ServiceHandler's NodeServices ---------------------

// With `ctx` instead of the request's own context (the audited Write and Call's).
template <NodeServiceFn NodeServices::*Fn>
uaplex_status nodeServiceIn(ServiceRequest& c, const session::RequestContext* ctx) noexcept {
    NodeServiceFn fn = c.nodeServices.*Fn;
    if (fn == nullptr) return UAPLEX_BadServiceUnsupported;
    return fn(c.nodeServices.self, c.arena, c.session->state(), c.session->access(), c.request, ctx,
              c.header.returnDiagnostics, c.responseType, c.response);
}

template <NodeServiceFn NodeServices::*Fn>
uaplex_status nodeService(ServiceRequest& c) noexcept {
    return nodeServiceIn<Fn>(c, &c.ctx);
}

// A deep copy of `value` of `type` in `arena` (encoded, then decoded there); null when it
// does not encode or memory is short.
void* copyInto(enc::Arena& arena, const enc::DataType& type, const void* value) noexcept {
    try {
        enc::ByteBuffer buf;
        if (enc::encodeValue(buf, type, value) != UAPLEX_Good) return nullptr;
        auto* bytes = static_cast<std::uint8_t*>(arena.allocate(buf.size() ? buf.size() : 1, 8));
        if (bytes == nullptr) return nullptr;
        std::memcpy(bytes, buf.data(), buf.size());
        void* out = nullptr;
        if (enc::decodeValue({bytes, buf.size()}, arena, enc::DecodeLimits{}, type, &out) !=
            UAPLEX_Good)
            return nullptr;
        return out;
    } catch (...) {
        return nullptr;
    }
}

// A Write or Call whose operations complete later (write_async, call_async, the blocking
// lanes): its Audit events are raised when it is answered, from copies taken when it was
// parked (the worker's request is gone by then), with the results it is answered with.
class AuditedAnswer final : public session::DeferredRequest {
  public:
    AuditedAnswer(std::shared_ptr<session::DeferredRequest> inner, AuditTrail& audit,
                  std::string user, const ua::NodeId& sessionId)
        : inner_(std::move(inner)), audit_(audit), user_(std::move(user)), sessionId_(sessionId) {}
    bool answer(uaplex_status status, const enc::DataType* responseType, void* response,
                enc::Arena& arena) noexcept override {
        if (!reported_.exchange(true, std::memory_order_acq_rel)) {
            if (write) {
                const bool ok =
                    status == UAPLEX_Good && responseType == enc::dataTypeOf<ua::WriteResponse>();
                audit_.write(
                    user_, sessionId_, *write, reported(status, ok),
                    ok ? static_cast<const ua::WriteResponse*>(response) : nullptr,
                    old ? std::span<const ua::DataValue>(old->results.data, old->results.size())
                        : std::span<const ua::DataValue>{});
            } else if (call) {
                const bool ok =
                    status == UAPLEX_Good && responseType == enc::dataTypeOf<ua::CallResponse>();
                audit_.methodCall(user_, sessionId_, *call, reported(status, ok),
                                  ok ? static_cast<const ua::CallResponse*>(response) : nullptr);
            } else if (history) {
                const bool ok = status == UAPLEX_Good &&
                                responseType == enc::dataTypeOf<ua::HistoryUpdateResponse>();
                audit_.historyUpdate(
                    user_, sessionId_, *history, reported(status, ok),
                    ok ? static_cast<const ua::HistoryUpdateResponse*>(response) : nullptr);
            }
        }
        return inner_->answer(status, responseType, response, arena);
    }
    uaplex_status status() const noexcept override { return inner_->status(); }

    enc::Arena arena;  // the copies
    const ua::WriteRequest* write = nullptr;
    const ua::ReadResponse* old = nullptr;  // the values the Write replaces
    const ua::CallRequest* call = nullptr;
    const ua::HistoryUpdateRequest* history = nullptr;

  private:
    // Good with the response expected, the answer's Bad status, or BadInternalError.
    static uaplex_status reported(uaplex_status status, bool ok) noexcept {
        return ok || status != UAPLEX_Good ? status : UAPLEX_BadInternalError;
    }
    std::shared_ptr<session::DeferredRequest> inner_;
    AuditTrail& audit_;
    const std::string user_;
    const ua::NodeId sessionId_;  // ns=1, a GUID: nothing to copy
    std::atomic<bool> reported_{false};
};

// The request context a Write or Call runs with when [audit] is on: its `defer` parks the
// request as the original does and wraps it in an AuditedAnswer.
struct AuditedDefer {
    const session::RequestContext& original;
    AuditTrail& audit;
    const session::Session& session;
    const ua::WriteRequest* write = nullptr;
    std::span<const ua::DataValue> old;
    const ua::CallRequest* call = nullptr;
    const ua::HistoryUpdateRequest* history = nullptr;
    session::RequestContext ctx;

    AuditedDefer(const session::RequestContext& o, AuditTrail& a, const session::Session& s)
        : original(o), audit(a), session(s), ctx(o) {
        if (ctx.defer == nullptr) return;
        ctx.defer = &AuditedDefer::defer;
        ctx.deferUser = this;
    }
    static std::shared_ptr<session::DeferredRequest> defer(void* user,
                                                           std::uint32_t returnDiagnostics) {
        auto& self = *static_cast<AuditedDefer*>(user);
        auto inner = self.original.defer(self.original.deferUser, returnDiagnostics);
        if (!inner) return inner;
        try {
            auto a = std::make_shared<AuditedAnswer>(
                inner, self.audit, AuditTrail::userOf(self.session), self.session.sessionId());
            if (self.write) {
                a->write = static_cast<const ua::WriteRequest*>(
                    copyInto(a->arena, *enc::dataTypeOf<ua::WriteRequest>(), self.write));
                if (!self.old.empty()) {
                    ua::ReadResponse r{};
                    r.results = {std::int32_t(self.old.size()),
                                 const_cast<ua::DataValue*>(self.old.data())};
                    r.diagnosticInfos = {-1, nullptr};
                    a->old = static_cast<const ua::ReadResponse*>(
                        copyInto(a->arena, *enc::dataTypeOf<ua::ReadResponse>(), &r));
                }
                if (a->write == nullptr) return inner;  // not reported: memory is short
            }
            if (self.call) {
                a->call = static_cast<const ua::CallRequest*>(
                    copyInto(a->arena, *enc::dataTypeOf<ua::CallRequest>(), self.call));
                if (a->call == nullptr) return inner;
            }
            if (self.history) {
                a->history = static_cast<const ua::HistoryUpdateRequest*>(
                    copyInto(a->arena, *enc::dataTypeOf<ua::HistoryUpdateRequest>(), self.history));
                if (a->history == nullptr) return inner;
            }
            return a;
        } catch (...) {
            return inner;
        }
    }
};

// ConditionRefresh (i=3875) and ConditionRefresh2 (i=12912) of ConditionType (Part 9 5.5.7):
// the services checked the object, method and inputs and left them unimplemented; they act
// on the session's subscriptions, which the subscription engine holds.
void conditionRefresh(SubscriptionService& subscriptions, std::uint64_t session,
                      const ua::CallRequest& req, ua::CallResponse& resp) noexcept {
    for (std::size_t i = 0; i < req.methodsToCall.size() && i < resp.results.size(); ++i) {
        const auto& m = req.methodsToCall[i];
        auto& r = resp.results[i];
        if (r.statusCode != UAPLEX_BadNotImplemented || m.methodId.namespace_index != 0 ||
            m.methodId.identifier_type != UAPLEX_ID_NUMERIC)
            continue;
        std::uint32_t method = m.methodId.identifier.numeric;
        std::size_t want = method == 3875 ? 1 : method == 12912 ? 2 : 0;
        if (want == 0 || m.inputArguments.size() != want) continue;
        std::uint32_t ids[2] = {0, 0};
        for (std::size_t k = 0; k < want; ++k)
            ids[k] = m.inputArguments[k].value.uint32;  // UInt32 (IntegerId), checked already
        r.statusCode = want == 2 && ids[1] == 0
                           ? UAPLEX_BadMonitoredItemIdInvalid
                           : subscriptions.conditionRefresh(session, ids[0], ids[1]);
        r.outputArguments = {0, nullptr};
    }
}

// Enable (i=9027), Disable (i=9028), AddComment (i=9029) of ConditionType, Acknowledge
// (i=9111) and Confirm (i=9113) of AcknowledgeableConditionType (Part 9 5.5.4-5.5.6, 5.7.3,
// 5.7.4), Unshelve (i=2947), OneShotShelve (i=2948) and TimedShelve (i=2949) of an alarm's
// ShelvingState (5.8.10): the services checked the object (a component of its type), the session's
// Call permission on object and method and the inputs, and left them unimplemented; the conditions
// act for the session's user, their ClientUserId.
void conditionMethods(const NodeServices& services, const session::Session& session,
                      AuditTrail* audit, const ua::CallRequest& req, ua::CallResponse& resp,
                      bool* reported) noexcept {
    std::string user;
    bool known = false;
    for (std::size_t i = 0; i < req.methodsToCall.size() && i < resp.results.size(); ++i) {
        const auto& m = req.methodsToCall[i];
        auto& r = resp.results[i];
        if (r.statusCode != UAPLEX_BadNotImplemented || m.methodId.namespace_index != 0 ||
            m.methodId.identifier_type != UAPLEX_ID_NUMERIC)
            continue;
        const std::uint32_t method = m.methodId.identifier.numeric;
        if (method != 9027 && method != 9028 && method != 9029 && method != 9111 &&
            method != 9113 && method != 2947 && method != 2948 && method != 2949)
            continue;
        try {
            if (!known) {
                session::UserIdentity id = session.identity();
                user = id.name.empty() ? id.key : id.name;
                known = true;
            }
        } catch (...) {
            r.statusCode = UAPLEX_BadOutOfMemory;
            continue;
        }
        r.statusCode =
            services.conditionCall(services.self, m.objectId, method,
                                   {m.inputArguments.data, m.inputArguments.size()}, user);
        r.outputArguments = {0, nullptr};
        if (audit) audit->conditionMethod(session, req, m, method, r.statusCode);
        if (reported) reported[i] = true;  // its own Audit event
    }
}

// The values a Write is about to replace (AuditWriteUpdate's OldValue), read as the session
// may read them and without deferral; empty when they cannot be read.
std::span<const ua::DataValue> oldValues(ServiceRequest& c, const ua::WriteRequest& w) noexcept {
    NodeServiceFn read = c.nodeServices.read;
    const std::size_t n = w.nodesToWrite.size();
    if (read == nullptr || n == 0) return {};
    auto* ids = c.arena.allocateArray<ua::ReadValueId>(n);
    if (ids == nullptr) return {};
    for (std::size_t i = 0; i < n; ++i) {
        ids[i].nodeId = w.nodesToWrite[i].nodeId;
        ids[i].attributeId = w.nodesToWrite[i].attributeId;
        ids[i].indexRange = w.nodesToWrite[i].indexRange;
    }
    ua::ReadRequest r{};
    r.timestampsToReturn = ua::TimestampsToReturn::Neither;
    r.nodesToRead = {std::int32_t(n), ids};
    const enc::DataType* type = nullptr;
    void* resp = nullptr;
    if (read(c.nodeServices.self, c.arena, c.session->state(), c.session->access(), &r, nullptr, 0,
             type, resp) != UAPLEX_Good ||
        resp == nullptr)
        return {};
    const auto& results = static_cast<const ua::ReadResponse*>(resp)->results;
    return {results.data, results.size()};
}

// Write with its AuditWriteUpdate events; a write answered later (GoodCompletesAsynchronously)
// reports when it is answered (AuditedAnswer).
uaplex_status write(ServiceRequest& c) noexcept {
    if (!c.audit) return nodeService<&NodeServices::write>(c);
    const auto& req = requestOf<ua::WriteRequest>(c);
    std::span<const ua::DataValue> old = oldValues(c, req);
    AuditedDefer parked(c.ctx, *c.audit, *c.session);
    parked.write = &req;
    parked.old = old;
    uaplex_status st = nodeServiceIn<&NodeServices::write>(c, &parked.ctx);
    if (st != UAPLEX_GoodCompletesAsynchronously)
        c.audit->write(
            *c.session, req, st,
            st == UAPLEX_Good ? static_cast<const ua::WriteResponse*>(c.response) : nullptr, old);
    return st;
}

// HistoryUpdate with its AuditHistory*Update/Delete events, also when answered later.
uaplex_status historyUpdate(ServiceRequest& c) noexcept {
    if (!c.audit) return nodeService<&NodeServices::historyUpdate>(c);
    const auto& req = requestOf<ua::HistoryUpdateRequest>(c);
    AuditedDefer parked(c.ctx, *c.audit, *c.session);
    parked.history = &req;
    uaplex_status st = nodeServiceIn<&NodeServices::historyUpdate>(c, &parked.ctx);
    if (st != UAPLEX_GoodCompletesAsynchronously) {
        try {
            c.audit->historyUpdate(AuditTrail::userOf(*c.session), c.session->sessionId(), req, st,
                                   st == UAPLEX_Good
                                       ? static_cast<const ua::HistoryUpdateResponse*>(c.response)
                                       : nullptr);
        } catch (...) {
            // userOf out of memory: the event is lost, as when the log queue is full
        }
    }
    return st;
}

// Call with its AuditUpdateMethod events (the condition methods raise their own, more specific
// ones); a call answered later reports when it is answered.
uaplex_status callMethods(ServiceRequest& c) noexcept {
    const auto& req = requestOf<ua::CallRequest>(c);
    std::optional<AuditedDefer> parked;
    if (c.audit) {
        parked.emplace(c.ctx, *c.audit, *c.session);
        parked->call = &req;
    }
    uaplex_status st = nodeServiceIn<&NodeServices::call>(c, parked ? &parked->ctx : &c.ctx);
    bool* reported = nullptr;
    if (c.audit && st == UAPLEX_Good && c.response != nullptr) {
        reported = c.arena.allocateArray<bool>(std::max<std::size_t>(req.methodsToCall.size(), 1));
        if (reported) std::fill_n(reported, req.methodsToCall.size(), false);
    }
    if (st == UAPLEX_Good && c.response != nullptr && c.nodeServices.conditionCall != nullptr)
        conditionMethods(c.nodeServices, *c.session, c.audit, req,
                         *static_cast<ua::CallResponse*>(c.response), reported);
    if (st == UAPLEX_Good && c.subscriptions)
        conditionRefresh(*c.subscriptions, sessionKey(*c.session), req,
                         *static_cast<ua::CallResponse*>(c.response));
    if (c.audit && st != UAPLEX_GoodCompletesAsynchronously) {
        try {
            c.audit->methodCall(
                AuditTrail::userOf(*c.session), c.session->sessionId(), req, st,
                st == UAPLEX_Good ? static_cast<const ua::CallResponse*>(c.response) : nullptr,
                reported ? std::span<const bool>(reported, req.methodsToCall.size())
                         : std::span<const bool>{});
        } catch (...) {
            // userOf out of memory: the event is lost, as when the log queue is full
        }
    }
    return st;
}

// --- NodeManagement (Part 4 5.7): the ServiceSet's store, with their Audit events ----------

template <NodeServiceFn NodeServices::*Fn, class Req, class Resp,
          void (AuditTrail::*Report)(std::string_view, const Req&, uaplex_status,
                                     const Resp*) noexcept>
uaplex_status nodeManagement(ServiceRequest& c) noexcept {
    uaplex_status st = nodeService<Fn>(c);
    if (c.audit) {
        try {
            (c.audit->*Report)(AuditTrail::userOf(*c.session), requestOf<Req>(c), st,
                               st == UAPLEX_Good ? static_cast<const Resp*>(c.response) : nullptr);
        } catch (...) {
            // userOf out of memory: the event is lost, as when the log queue is full
        }
    }
    return st;
}

constexpr auto addNodes = &nodeManagement<&NodeServices::addNodes, ua::AddNodesRequest,
                                          ua::AddNodesResponse, &AuditTrail::addNodes>;
constexpr auto addReferences =
    &nodeManagement<&NodeServices::addReferences, ua::AddReferencesRequest,
                    ua::AddReferencesResponse, &AuditTrail::addReferences>;
constexpr auto deleteNodes = &nodeManagement<&NodeServices::deleteNodes, ua::DeleteNodesRequest,
                                             ua::DeleteNodesResponse, &AuditTrail::deleteNodes>;
constexpr auto deleteReferences =
    &nodeManagement<&NodeServices::deleteReferences, ua::DeleteReferencesRequest,
                    ua::DeleteReferencesResponse, &AuditTrail::deleteReferences>;

// --- subscription services (Part 4 5.12, 5.13): the subscription engine --------------------------

template <class Req, class Resp,
          uaplex_status (SubscriptionManager::*Op)(std::uint64_t, const Req&, Resp&, enc::Arena&)>
uaplex_status engineService(ServiceRequest& c) noexcept {
    if (c.subscriptions == nullptr) return UAPLEX_BadServiceUnsupported;
    auto op = [](SubscriptionManager& m, std::uint64_t session, const void*, const void* request,
                 void* response, enc::Arena& arena) {
        return (m.*Op)(session, *static_cast<const Req*>(request), *static_cast<Resp*>(response),
                       arena);
    };
    return c.subscriptions->call<Resp>(sessionKey(*c.session), c.session->transferKey(), false,
                                       nullptr, op, c.request, c.arena, c.responseType, c.response);
}

// The engine's services that take no arena.
template <class Req, class Resp,
          uaplex_status (SubscriptionManager::*Op)(std::uint64_t, const Req&, Resp&)>
uaplex_status engineServiceNoArena(ServiceRequest& c) noexcept {
    if (c.subscriptions == nullptr) return UAPLEX_BadServiceUnsupported;
    auto op = [](SubscriptionManager& m, std::uint64_t session, const void*, const void* request,
                 void* response, enc::Arena&) {
        return (m.*Op)(session, *static_cast<const Req*>(request), *static_cast<Resp*>(response));
    };
    return c.subscriptions->call<Resp>(sessionKey(*c.session), c.session->transferKey(), false,
                                       nullptr, op, c.request, c.arena, c.responseType, c.response);
}

// CreateSubscription and TransferSubscriptions attach subscriptions to the calling session:
// the engine records its identity first and hands the session's access view to them.
uaplex_status createSubscription(ServiceRequest& c) noexcept {
    if (c.subscriptions == nullptr) return UAPLEX_BadServiceUnsupported;
    auto op = [](SubscriptionManager& m, std::uint64_t session, const void* access,
                 const void* request, void* response, enc::Arena&) {
        return m.createSubscription(session, access,
                                    *static_cast<const ua::CreateSubscriptionRequest*>(request),
                                    *static_cast<ua::CreateSubscriptionResponse*>(response));
    };
    return c.subscriptions->call<ua::CreateSubscriptionResponse>(
        sessionKey(*c.session), c.session->transferKey(), true, c.session->access(), op, c.request,
        c.arena, c.responseType, c.response);
}

uaplex_status transferSubscriptions(ServiceRequest& c) noexcept {
    if (c.subscriptions == nullptr) return UAPLEX_BadServiceUnsupported;
    auto op = [](SubscriptionManager& m, std::uint64_t session, const void* access,
                 const void* request, void* response, enc::Arena& arena) {
        return m.transferSubscriptions(
            session, access, *static_cast<const ua::TransferSubscriptionsRequest*>(request),
            *static_cast<ua::TransferSubscriptionsResponse*>(response), arena);
    };
    return c.subscriptions->call<ua::TransferSubscriptionsResponse>(
        sessionKey(*c.session), c.session->transferKey(), true, c.session->access(), op, c.request,
        c.arena, c.responseType, c.response);
}

uaplex_status createMonitoredItems(ServiceRequest& c) noexcept {
    if (c.subscriptions == nullptr) return UAPLEX_BadServiceUnsupported;
    // The engine does not see the session's permissions: the gate answers the items it denies.
    if (const session::AccessView* access = c.session->access())
        return createMonitoredItemsChecked(
            *c.subscriptions, sessionKey(*c.session), c.session->transferKey(), *access,
            requestOf<ua::CreateMonitoredItemsRequest>(c), c.arena, c.responseType, c.response);
    return c.subscriptions->createMonitoredItems(sessionKey(*c.session), c.session->transferKey(),
                                                 requestOf<ua::CreateMonitoredItemsRequest>(c),
                                                 c.arena, c.responseType, c.response);
}

// Publish and Republish answer through a route to the request's channel, now or later: they
// never hold a worker.
uaplex_status publish(ServiceRequest& c) noexcept {
    if (c.subscriptions == nullptr || !c.ctx.makeRoute) return UAPLEX_BadServiceUnsupported;
    std::shared_ptr<ResponseRoute> route = c.ctx.makeRoute(c.ctx.routeUser);
    if (!route) return UAPLEX_BadOutOfMemory;
    c.deferred = true;
    std::int64_t deadline =
        c.header.timeoutHint ? c.ctx.nowMs + std::int64_t(c.header.timeoutHint) : 0;
    c.subscriptions->publish(sessionKey(*c.session), std::move(route),
                             requestOf<ua::PublishRequest>(c), deadline);
    return UAPLEX_Good;
}

uaplex_status republish(ServiceRequest& c) noexcept {
    if (c.subscriptions == nullptr || !c.ctx.makeRoute) return UAPLEX_BadServiceUnsupported;
    std::shared_ptr<ResponseRoute> route = c.ctx.makeRoute(c.ctx.routeUser);
    if (!route) return UAPLEX_BadOutOfMemory;
    c.deferred = true;
    c.subscriptions->republish(sessionKey(*c.session), std::move(route),
                               requestOf<ua::RepublishRequest>(c));
    return UAPLEX_Good;
}

// --- the table --------------------------------------------------------------------------------

template <class Req, class Resp>
constexpr ServiceDescriptor row(std::uint32_t encodingId, std::string_view name, SessionUse use,
                                ServiceFn handler,
                                AdmissionClass admission = AdmissionClass::Request,
                                bool onIoThread = false) noexcept {
    return {encodingId, name,   &enc::dataTypeOf<Req>, &enc::dataTypeOf<Resp>, use, admission,
            onIoThread, handler};
}

constexpr auto None = SessionUse::None;
constexpr auto Own = SessionUse::Own;
constexpr auto Activated = SessionUse::Activated;

using SM = SubscriptionManager;

// Sorted by the request's binary encoding id (checked below).
constexpr ServiceDescriptor kServices[] = {
    row<ua::FindServersRequest, ua::FindServersResponse>(
        ns0::FindServersRequest_Encoding_DefaultBinary, "FindServers", None, &findServers),
    row<ua::GetEndpointsRequest, ua::GetEndpointsResponse>(
        ns0::GetEndpointsRequest_Encoding_DefaultBinary, "GetEndpoints", None, &getEndpoints),
    row<ua::CreateSessionRequest, ua::CreateSessionResponse>(
        ns0::CreateSessionRequest_Encoding_DefaultBinary, "CreateSession", Own, &createSession,
        AdmissionClass::SessionEstablishment),
    row<ua::ActivateSessionRequest, ua::ActivateSessionResponse>(
        ns0::ActivateSessionRequest_Encoding_DefaultBinary, "ActivateSession", Own,
        &activateSession, AdmissionClass::SessionEstablishment),
    row<ua::CloseSessionRequest, ua::CloseSessionResponse>(
        ns0::CloseSessionRequest_Encoding_DefaultBinary, "CloseSession", Own, &closeSession,
        AdmissionClass::Control),
    row<ua::CancelRequest, ua::CancelResponse>(ns0::CancelRequest_Encoding_DefaultBinary, "Cancel",
                                               Activated, &cancel, AdmissionClass::Control, true),
    row<ua::AddNodesRequest, ua::AddNodesResponse>(ns0::AddNodesRequest_Encoding_DefaultBinary,
                                                   "AddNodes", Activated, addNodes),
    row<ua::AddReferencesRequest, ua::AddReferencesResponse>(
        ns0::AddReferencesRequest_Encoding_DefaultBinary, "AddReferences", Activated,
        addReferences),
    row<ua::DeleteNodesRequest, ua::DeleteNodesResponse>(
        ns0::DeleteNodesRequest_Encoding_DefaultBinary, "DeleteNodes", Activated, deleteNodes),
    row<ua::DeleteReferencesRequest, ua::DeleteReferencesResponse>(
        ns0::DeleteReferencesRequest_Encoding_DefaultBinary, "DeleteReferences", Activated,
        deleteReferences),
    row<ua::BrowseRequest, ua::BrowseResponse>(ns0::BrowseRequest_Encoding_DefaultBinary, "Browse",
                                               Activated, &nodeService<&NodeServices::browse>),
    row<ua::BrowseNextRequest, ua::BrowseNextResponse>(
        ns0::BrowseNextRequest_Encoding_DefaultBinary, "BrowseNext", Activated,
        &nodeService<&NodeServices::browseNext>),
    row<ua::TranslateBrowsePathsToNodeIdsRequest, ua::TranslateBrowsePathsToNodeIdsResponse>(
        ns0::TranslateBrowsePathsToNodeIdsRequest_Encoding_DefaultBinary,
        "TranslateBrowsePathsToNodeIds", Activated,
        &nodeService<&NodeServices::translateBrowsePaths>),
    row<ua::RegisterNodesRequest, ua::RegisterNodesResponse>(
        ns0::RegisterNodesRequest_Encoding_DefaultBinary, "RegisterNodes", Activated,
        &nodeService<&NodeServices::registerNodes>),
    row<ua::UnregisterNodesRequest, ua::UnregisterNodesResponse>(
        ns0::UnregisterNodesRequest_Encoding_DefaultBinary, "UnregisterNodes", Activated,
        &nodeService<&NodeServices::unregisterNodes>),
    row<ua::ReadRequest, ua::ReadResponse>(ns0::ReadRequest_Encoding_DefaultBinary, "Read",
                                           Activated, &nodeService<&NodeServices::read>),
    row<ua::HistoryReadRequest, ua::HistoryReadResponse>(
        ns0::HistoryReadRequest_Encoding_DefaultBinary, "HistoryRead", Activated,
        &nodeService<&NodeServices::historyRead>),
    row<ua::WriteRequest, ua::WriteResponse>(ns0::WriteRequest_Encoding_DefaultBinary, "Write",
                                             Activated, &write),
    row<ua::HistoryUpdateRequest, ua::HistoryUpdateResponse>(
        ns0::HistoryUpdateRequest_Encoding_DefaultBinary, "HistoryUpdate", Activated,
        &historyUpdate),
    row<ua::CallRequest, ua::CallResponse>(ns0::CallRequest_Encoding_DefaultBinary, "Call",
                                           Activated, &callMethods),
    row<ua::CreateMonitoredItemsRequest, ua::CreateMonitoredItemsResponse>(
        ns0::CreateMonitoredItemsRequest_Encoding_DefaultBinary, "CreateMonitoredItems", Activated,
        &createMonitoredItems),
    row<ua::ModifyMonitoredItemsRequest, ua::ModifyMonitoredItemsResponse>(
        ns0::ModifyMonitoredItemsRequest_Encoding_DefaultBinary, "ModifyMonitoredItems", Activated,

        &engineService<ua::ModifyMonitoredItemsRequest, ua::ModifyMonitoredItemsResponse,
                       &SM::modifyMonitoredItems>),
    row<ua::SetMonitoringModeRequest, ua::SetMonitoringModeResponse>(
        ns0::SetMonitoringModeRequest_Encoding_DefaultBinary, "SetMonitoringMode", Activated,
        &engineService<ua::SetMonitoringModeRequest, ua::SetMonitoringModeResponse,
                       &SM::setMonitoringMode>),
    row<ua::SetTriggeringRequest, ua::SetTriggeringResponse>(
        ns0::SetTriggeringRequest_Encoding_DefaultBinary, "SetTriggering", Activated,
        &engineService<ua::SetTriggeringRequest, ua::SetTriggeringResponse, &SM::setTriggering>),
    row<ua::DeleteMonitoredItemsRequest, ua::DeleteMonitoredItemsResponse>(
        ns0::DeleteMonitoredItemsRequest_Encoding_DefaultBinary, "DeleteMonitoredItems", Activated,

        &engineService<ua::DeleteMonitoredItemsRequest, ua::DeleteMonitoredItemsResponse,
                       &SM::deleteMonitoredItems>),
    row<ua::CreateSubscriptionRequest, ua::CreateSubscriptionResponse>(
        ns0::CreateSubscriptionRequest_Encoding_DefaultBinary, "CreateSubscription", Activated,
        &createSubscription),
    row<ua::ModifySubscriptionRequest, ua::ModifySubscriptionResponse>(
        ns0::ModifySubscriptionRequest_Encoding_DefaultBinary, "ModifySubscription", Activated,
        &engineServiceNoArena<ua::ModifySubscriptionRequest, ua::ModifySubscriptionResponse,
                              &SM::modifySubscription>),
    row<ua::SetPublishingModeRequest, ua::SetPublishingModeResponse>(
        ns0::SetPublishingModeRequest_Encoding_DefaultBinary, "SetPublishingMode", Activated,
        &engineService<ua::SetPublishingModeRequest, ua::SetPublishingModeResponse,
                       &SM::setPublishingMode>),
    row<ua::PublishRequest, ua::PublishResponse>(ns0::PublishRequest_Encoding_DefaultBinary,
                                                 "Publish", Activated, &publish),
    row<ua::RepublishRequest, ua::RepublishResponse>(ns0::RepublishRequest_Encoding_DefaultBinary,
                                                     "Republish", Activated, &republish),
    row<ua::TransferSubscriptionsRequest, ua::TransferSubscriptionsResponse>(
        ns0::TransferSubscriptionsRequest_Encoding_DefaultBinary, "TransferSubscriptions",
        Activated, &transferSubscriptions),
    row<ua::DeleteSubscriptionsRequest, ua::DeleteSubscriptionsResponse>(
        ns0::DeleteSubscriptionsRequest_Encoding_DefaultBinary, "DeleteSubscriptions", Activated,
        &engineService<ua::DeleteSubscriptionsRequest, ua::DeleteSubscriptionsResponse,
                       &SM::deleteSubscriptions>),
};

constexpr bool sortedAndUnique() noexcept {
    for (std::size_t i = 1; i < std::size(kServices); ++i)
        if (kServices[i - 1].requestEncodingId >= kServices[i].requestEncodingId) return false;
    return true;
}
static_assert(sortedAndUnique(), "kServices: sort the rows by request encoding id, one each");
static_assert(std::size(kServices) <= kMaxServiceRows, "ServiceCounters: raise kMaxServiceRows");

// The request encoding ids of the services lie close together (Part 6's ids 422 to 841), so
// the row of an id is one index into a dense byte table instead of a search per request.
constexpr std::uint32_t kFirstId = kServices[0].requestEncodingId;
constexpr std::uint32_t kLastId = kServices[std::size(kServices) - 1].requestEncodingId;
constexpr std::uint8_t kNoRow = 0xFF;
static_assert(kLastId - kFirstId < 4096, "kServices: ids too far apart for the dense table");
static_assert(std::size(kServices) < kNoRow, "kServices: a row index must fit a byte");

constexpr auto kRowOfId = [] {
    std::array<std::uint8_t, kLastId - kFirstId + 1> t{};
    for (auto& r : t) r = kNoRow;
    for (std::size_t i = 0; i < std::size(kServices); ++i)
        t[kServices[i].requestEncodingId - kFirstId] = std::uint8_t(i);
    return t;
}();

}  // namespace

std::span<const ServiceDescriptor> serviceTable() noexcept {
    return kServices;
}

const ServiceDescriptor* findService(std::uint32_t requestEncodingId) noexcept {
    if (requestEncodingId < kFirstId || requestEncodingId > kLastId) return nullptr;
    const std::uint8_t r = kRowOfId[requestEncodingId - kFirstId];
    return r == kNoRow ? nullptr : &kServices[r];
}

std::size_t serviceIndex(const ServiceDescriptor& row) noexcept {
    return std::size_t(&row - kServices);
}

}  // namespace uaplex::server
