// Service dispatch: decodes a request message, answers discovery and session services itself,
// resolves the session of every other request by its AuthenticationToken and hands the
// attribute, view and method services to the ServiceHandler. Everything else answers a
// ServiceFault with BadServiceUnsupported.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "securechannel/security_policy.hpp"
#include "security/pki.hpp"
#include "server/discovery.hpp"
#include "server/service_handler.hpp"
#include "server/subscription_service.hpp"
#include "session/access_control.hpp"
#include "session/identity.hpp"
#include "session/login_guard.hpp"
#include "session/session_manager.hpp"

namespace uaplex::server {

// What the I/O thread reads of a request before it is queued, without decoding or allocating:
// the encoding NodeId and the start of the RequestHeader (Part 6 5.2.2.9, Part 4 7.32).
struct RequestPrefix {
    bool ok = false;
    std::uint32_t encodingId = 0;      // numeric ns0 encoding id, 0 for any other NodeId
    ua::NodeId authenticationToken{};  // points into the message
    std::uint32_t requestHandle = 0;
    std::uint32_t timeoutHint = 0;  // ms; 0 when absent or unreadable
};

struct RequestContext {
    std::uint32_t channelId;
    std::int64_t nowMs;                             // monotonic
    std::int64_t utc;                               // OPC UA DateTime
    std::string_view endpointUrl;                   // the EndpointUrl of the connection's Hello
    session::SessionCache* sessionCache = nullptr;  // the connection's, if any
    // For responses sent later (Publish, Republish): makes a route to this request's channel.
    // Null: those services answer BadServiceUnsupported.
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
};

// The session's identity in the subscription engine (unique while the session lives; the
// engine forgets it when the session closes).
std::uint64_t sessionKey(const session::Session& s) noexcept;

class Dispatcher {
  public:
    Dispatcher(const config::ServerConfig& cfg, session::SessionManager& sessions,
               ServiceHandler& services, const Discovery& discovery);

    // Decodes and executes one request; appends the encoded response (encoding NodeId and
    // body) to `out`. Returns the request's RequestHandle (0 if it could not be decoded).
    // `out` stays empty when the response goes through ctx.makeRoute's route instead.
    // Worker threads; never throws.
    std::uint32_t handle(std::span<const std::uint8_t> request, const RequestContext& ctx,
                         enc::Arena& arena, enc::ByteBuffer& out) noexcept;
    // A ServiceFault with `status` for `requestHandle`.
    static void encodeFault(std::uint32_t requestHandle, uaplex_status status, std::int64_t utc,
                            enc::ByteBuffer& out) noexcept;
    // The RequestHandle of an encoded request, 0 when its header does not decode.
    static std::uint32_t peekRequestHandle(std::span<const std::uint8_t> request) noexcept;
    static RequestPrefix peekPrefix(std::span<const std::uint8_t> request) noexcept;

    // How Cancel and session close take queued requests out of the request queue.
    void setCanceller(session::QueuedCanceller canceller) noexcept { canceller_ = canceller; }
    // The subscription services' engine; without one they answer BadServiceUnsupported.
    void setSubscriptions(SubscriptionService* s) noexcept { subscriptions_ = s; }
    // How ActivateSession checks identity tokens and what each identity may do; without
    // them only Anonymous is accepted and everything is allowed.
    void setAccess(const session::IdentityVerifier* identity,
                   const session::AccessPolicy* policy) noexcept {
        identity_ = identity ? identity : &anonymousOnly_;
        accessPolicy_ = policy;
    }
    // The application instance certificate and key for CreateSession/ActivateSession
    // signatures (Part 4 5.6.2, 5.6.3); null when only None is offered.
    void setPki(security::Pki* pki) noexcept { pki_ = pki; }

    const enc::DecodeLimits& decodeLimits() const noexcept { return limits_; }
    // Drops the logins waiting for the password pool and joins its threads (server stop,
    // before the transports go).
    void stopLogins() noexcept { loginPool_.stop(); }
    session::LoginThrottle& loginThrottle() noexcept { return throttle_; }

  private:
    struct LoginCall;
    uaplex_status activateSession(const ua::ActivateSessionRequest& req,
                                  std::span<const std::uint8_t> raw, const RequestContext& ctx,
                                  enc::Arena& arena, const enc::DataType*& responseType,
                                  void*& response, bool& deferred) noexcept;
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
    void conditionRefresh(std::uint64_t session, const ua::CallRequest& req,
                          ua::CallResponse& resp) noexcept;
    uaplex_status dispatch(const enc::DataType* type, const void* request,
                           const RequestContext& ctx, enc::Arena& arena,
                           const enc::DataType*& responseType, void*& response, bool& deferred,
                           std::span<const std::uint8_t> raw) noexcept;

    session::SessionManager& sessions_;
    ServiceHandler& services_;
    const Discovery& discovery_;
    enc::DecodeLimits limits_;
    bool strict_ = false;  // [server] security_profile = "strict"
    std::uint32_t maxMessageSize_;
    session::QueuedCanceller canceller_;
    SubscriptionService* subscriptions_ = nullptr;
    const session::IdentityVerifier anonymousOnly_{config::AccessSection{}, nullptr};
    const session::IdentityVerifier* identity_ = &anonymousOnly_;
    const session::AccessPolicy* accessPolicy_ = nullptr;
    security::Pki* pki_ = nullptr;
    session::LoginThrottle throttle_;
    session::LoginPool loginPool_;
};

// The remote IP address of a transport's "ip:port" / "[ipv6]:port" (IPv4-mapped IPv6 as
// IPv4), the key of the per-peer limits.
std::string peerHost(std::string_view peer);

}  // namespace uaplex::server
