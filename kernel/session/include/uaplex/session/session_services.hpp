// SPDX-License-Identifier: Apache-2.0
// The session services (Part 4 5.6): CreateSession, ActivateSession, CloseSession and Cancel,
// with the checks of the application certificate, the signatures and the nonces, and the login
// pool that checks passwords off the workers. The service table (server/service_table.cpp)
// reaches them; everything they need of a request is in its RequestContext.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include <uaplex/securechannel/security_policy.hpp>
#include <uaplex/security/pki.hpp>
#include <uaplex/session/access_control.hpp>
#include <uaplex/session/deferred_request.hpp>
#include <uaplex/session/identity_verifier.hpp>
#include <uaplex/session/login_guard.hpp>
#include <uaplex/session/response_route.hpp>
#include <uaplex/session/session_manager.hpp>

namespace uaplex::config {
struct ServerConfig;
}

namespace uaplex::session {

// What the channel tells the services about one request.
struct RequestContext {
    std::uint32_t channelId;
    std::int64_t nowMs;                    // monotonic
    std::int64_t utc;                      // OPC UA DateTime
    std::string_view endpointUrl;          // the EndpointUrl of the connection's Hello
    SessionCache* sessionCache = nullptr;  // the connection's, if any
    // For responses sent later (Publish, Republish, a parked login): makes a route to this
    // request's channel. Null: Publish and Republish answer BadServiceUnsupported, logins are
    // checked at once.
    std::shared_ptr<ResponseRoute> (*makeRoute)(void* user) = nullptr;
    void* routeUser = nullptr;
    // The channel's security; null for SecurityPolicy None.
    const securechannel::ChannelSecurity* channelSecurity = nullptr;
    // The remote end as the transport names it ("ip:port"), for the per-peer limits.
    std::string_view peer{};
    // One channel id for many connections (opc.https): no per-channel session limits.
    bool sharedChannel = false;
    securechannel::SecurityMode securityMode = securechannel::SecurityMode::None;
    // The admission owner the request is charged to (a uaplex_admission_owner*, borrowed for
    // the call): CreateSession charges its establishment lease to it.
    void* admissionOwner = nullptr;
    // Parks the request for an answer later (asynchronous node-manager operations): it stays
    // registered and keeps its leases while its worker moves on. Null where requests cannot
    // wait (inline rows, tests): operations then run synchronously. The result is null when the
    // request was cancelled or expired already. `returnDiagnostics` is the RequestHeader's.
    std::shared_ptr<DeferredRequest> (*defer)(void* user,
                                              std::uint32_t returnDiagnostics) = nullptr;
    void* deferUser = nullptr;
};

// A ServiceFault with `status` for `requestHandle`, replacing what `out` held.
void encodeFault(std::uint32_t requestHandle, uaplex_status status, std::int64_t utc,
                 enc::ByteBuffer& out) noexcept;
// A service's answer, replacing what `out` held: `response` with its ResponseHeader's
// timestamp and requestHandle set, or a ServiceFault with `status` (BadInternalError for Good
// without a response, BadEncodingError when the response does not encode).
void encodeResponse(std::uint32_t requestHandle, uaplex_status status,
                    const enc::DataType* responseType, void* response, std::int64_t utc,
                    enc::ByteBuffer& out) noexcept;

// Operation-level diagnostics asked for (RequestHeader.returnDiagnostics bits 5-9): each
// diagnosticInfos array of `response` gets one (empty) entry per result.
void sizeDiagnostics(std::uint32_t returnDiagnostics, const enc::DataType& type, void* response,
                     enc::Arena& arena) noexcept;

// The decode limits of [server.limits] (0 for a length is no limit).
enc::DecodeLimits decodeLimitsOf(const config::ServerConfig& cfg) noexcept;

class SessionServices {
  public:
    // The server's endpoints for a CreateSessionResponse (Discovery lives above this layer).
    using EndpointsFn = ua::Array<ua::EndpointDescription> (*)(void* user, enc::Arena& arena,
                                                               std::string_view endpointUrl);
    // Cancel of requests that wait outside the request registry (parked Publish requests):
    // how many of `session`'s with `requestHandle` were cancelled.
    using ParkedCancelFn = std::uint32_t (*)(void* user, const Session& session,
                                             std::uint32_t requestHandle);
    // Told of each successful ActivateSession (the session's identity and access view may
    // have changed).
    using ActivatedFn = void (*)(void* user, const Session& session);
    // Told of every ActivateSession answered, Good or not ([audit]); `session` null when the
    // request names none.
    using ActivationAuditFn = void (*)(void* user, std::uint32_t channelId,
                                       const ua::ActivateSessionRequest& request,
                                       uaplex_status status, const Session* session);

    SessionServices(const config::ServerConfig& cfg, SessionManager& sessions);

    // Each answers Good with `response` set (in `arena`, its ResponseHeader left for the
    // caller), or a Bad status for a ServiceFault. Worker threads; never throw.
    uaplex_status createSession(const ua::CreateSessionRequest& request, const RequestContext& ctx,
                                enc::Arena& arena, const enc::DataType*& responseType,
                                void*& response) noexcept;
    // `raw` is the encoded request: a UserName login waits in the login pool as these bytes
    // and is answered through ctx.makeRoute's route (`deferred` set, no response).
    uaplex_status activateSession(const ua::ActivateSessionRequest& request,
                                  std::span<const std::uint8_t> raw, const RequestContext& ctx,
                                  enc::Arena& arena, const enc::DataType*& responseType,
                                  void*& response, bool& deferred) noexcept;
    uaplex_status closeSession(const ua::CloseSessionRequest& request, const RequestContext& ctx,
                               enc::Arena& arena, const enc::DataType*& responseType,
                               void*& response) noexcept;
    // `session` is the activated session the request resolved to.
    uaplex_status cancel(Session& session, const ua::CancelRequest& request, enc::Arena& arena,
                         const enc::DataType*& responseType, void*& response) noexcept;

    void setEndpoints(EndpointsFn fn, void* user) noexcept {
        endpoints_ = fn;
        endpointsUser_ = user;
    }
    void setParkedCancel(ParkedCancelFn fn, void* user) noexcept {
        parkedCancel_ = fn;
        parkedCancelUser_ = user;
    }
    void setActivated(ActivatedFn fn, void* user) noexcept {
        activated_ = fn;
        activatedUser_ = user;
    }
    void setActivationAudit(ActivationAuditFn fn, void* user) noexcept {
        activationAudit_ = fn;
        activationAuditUser_ = user;
    }
    // An ActivateSession answered at once (not deferred) with `status`, for the audit hook.
    void reportActivation(const ua::ActivateSessionRequest& request, std::uint32_t channelId,
                          uaplex_status status) noexcept;
    // How Cancel and session close take queued requests out of the request queue.
    void setCanceller(QueuedCanceller canceller) noexcept { canceller_ = canceller; }
    // How ActivateSession checks identity tokens and what each identity may do; without
    // them only Anonymous is accepted and everything is allowed.
    void setAccess(const IdentityVerifier* identity, const AccessPolicy* policy) noexcept {
        identity_ = identity ? identity : &anonymousOnly_;
        accessPolicy_ = policy;
    }
    // The application instance certificate and key for CreateSession/ActivateSession
    // signatures (Part 4 5.6.2, 5.6.3); null when only None is offered.
    void setPki(security::Pki* pki) noexcept { pki_ = pki; }
    // Drops the logins waiting for the password pool and joins its threads (server stop,
    // before the transports go).
    void stopLogins() noexcept { loginPool_.stop(); }

  private:
    struct LoginCall;
    uaplex_status finishActivation(const ua::ActivateSessionRequest& req, const LoginCall& call,
                                   std::int64_t nowMs, enc::Arena& arena,
                                   const enc::DataType*& responseType, void*& response) noexcept;
    void runLogin(const LoginCall& call) noexcept;
    // Under security_profile = "strict": SecurityPolicy None serves discovery only, so
    // CreateSession and ActivateSession on a None channel are refused (opc.https is secured
    // by its TLS connection and keeps its sessions).
    bool refusesSessionsOn(const RequestContext& ctx) const noexcept {
        return strict_ && !ctx.channelSecurity && ctx.endpointUrl.rfind("opc.https:", 0) != 0;
    }

    SessionManager& sessions_;
    enc::DecodeLimits limits_;
    std::uint32_t maxMessageSize_;
    bool strict_ = false;  // [server] security_profile = "strict"
    EndpointsFn endpoints_ = nullptr;
    void* endpointsUser_ = nullptr;
    ParkedCancelFn parkedCancel_ = nullptr;
    void* parkedCancelUser_ = nullptr;
    ActivatedFn activated_ = nullptr;
    void* activatedUser_ = nullptr;
    ActivationAuditFn activationAudit_ = nullptr;
    void* activationAuditUser_ = nullptr;
    QueuedCanceller canceller_;
    const IdentityVerifier anonymousOnly_{config::AccessSection{}, nullptr};
    const IdentityVerifier* identity_ = &anonymousOnly_;
    const AccessPolicy* accessPolicy_ = nullptr;
    security::Pki* pki_ = nullptr;
    LoginThrottle throttle_;
    LoginPool loginPool_;
};

}  // namespace uaplex::session
