// SPDX-License-Identifier: Apache-2.0
#include <uaplex/session/session_services.hpp>

#include <uaplex/cpp/clock.hpp>
#include <uaplex/cpp/peer_address.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/security/crypto.hpp>
#include <uaplex/security/user_token_crypto.hpp>

namespace uaplex::session {

namespace {

template <class T>
T* make(enc::Arena& arena) noexcept {
    return arena.allocateArray<T>(1);
}

ua::ByteString copyBytes(enc::Arena& arena, const std::uint8_t* data, std::size_t n) noexcept {
    auto* p = arena.allocateArray<std::uint8_t>(n);
    if (!p) return ua::nullByteString();
    std::memcpy(p, data, n);
    return ua::ByteString{std::int32_t(n), p};
}

LoginLimits loginLimitsOf(const config::ServerLimits& l) noexcept {
    LoginLimits r;
    r.failuresBeforeDelay = l.login_failures_before_delay;
    r.delayMs = l.login_delay_ms;
    r.maxDelayMs = std::max(l.login_max_delay_ms, l.login_delay_ms);
    r.lockoutFailures = l.login_lockout_failures;
    r.lockoutMs = l.login_lockout_ms;
    r.maxSessionFailures = l.max_login_failures_per_session;
    r.maxPendingPerPeer = l.max_pending_logins_per_peer;
    return r;
}

// An ActivateSession with a UserName token waits in the login pool as its encoded bytes, at
// most this many (the queue then holds at most password_hash_queue times it).
constexpr std::size_t kMaxQueuedLoginBytes = 64 * 1024;

// A password can be guessed and costs a PBKDF2 to check: UserName tokens are throttled and
// checked in the login pool. An X509 token needs the user's private key (nothing to guess)
// and costs one signature check: it is checked on the worker like Anonymous.
bool isPassword(const ua::ExtensionObject& token) noexcept {
    return token.object && token.data_type == enc::dataTypeOf<ua::UserNameIdentityToken>();
}

}  // namespace

void encodeFault(std::uint32_t requestHandle, uaplex_status status, std::int64_t utc,
                 enc::ByteBuffer& out) noexcept {
    ua::ServiceFault fault{};
    fault.responseHeader.timestamp = utc;
    fault.responseHeader.requestHandle = requestHandle;
    fault.responseHeader.serviceResult = status;
    out.clear();
    enc::BinaryWriter w(out);
    enc::encodeMessage(w, fault);
}

void encodeResponse(std::uint32_t requestHandle, uaplex_status status,
                    const enc::DataType* responseType, void* response, std::int64_t utc,
                    enc::ByteBuffer& out) noexcept {
    if (status != UAPLEX_Good || response == nullptr || responseType == nullptr) {
        encodeFault(requestHandle, status == UAPLEX_Good ? UAPLEX_BadInternalError : status, utc,
                    out);
        return;
    }
    auto& rh = *static_cast<ua::ResponseHeader*>(response);
    rh.timestamp = utc;
    rh.requestHandle = requestHandle;
    out.clear();
    enc::BinaryWriter w(out);
    enc::encodeMessage(w, *responseType, response);
    if (!w.ok()) encodeFault(requestHandle, UAPLEX_BadEncodingError, utc, out);
}

// Operation-level diagnostics asked for (RequestHeader.returnDiagnostics bits 5-9, Part 4
// 7.32): each diagnosticInfos array of the response gets one entry per result of the array
// it belongs to ("results", or "<x>Results" for "<x>DiagnosticInfos"), empty where the
// server has nothing to say. Part 4 7.8 allows empty entries, not a shorter list.
static constexpr std::uint32_t kOperationDiagnostics = 0x3E0;

void sizeDiagnostics(std::uint32_t returnDiagnostics, const enc::DataType& type, void* response,
                     enc::Arena& arena) noexcept {
    if (!(returnDiagnostics & kOperationDiagnostics)) return;
    auto* base = static_cast<std::uint8_t*>(response);
    for (const auto& f : type.fieldSpan()) {
        if (f.kind != enc::FieldKind::DiagnosticInfo || !f.isArray) continue;
        std::string_view name = f.name, prefix;
        if (name == "diagnosticInfos")
            prefix = "";
        else if (name.ends_with("DiagnosticInfos"))
            prefix = name.substr(0, name.size() - std::string_view("DiagnosticInfos").size());
        else
            continue;
        for (const auto& r : type.fieldSpan()) {
            if (!r.isArray) continue;
            std::string_view rn = r.name;
            bool match = prefix.empty() ? rn == "results"
                                        : rn.size() == prefix.size() + 7 &&
                                              rn.starts_with(prefix) && rn.ends_with("Results");
            if (!match) continue;
            const std::int32_t n =
                reinterpret_cast<const ua::Array<std::uint8_t>*>(base + r.offset)->length;
            auto& diag = *reinterpret_cast<ua::Array<ua::DiagnosticInfo>*>(base + f.offset);
            if (n > 0 && diag.length <= 0) {
                auto* d = arena.allocateArray<ua::DiagnosticInfo>(std::size_t(n));
                if (d) diag = {n, d};  // zeroed: no fields present
            }
            break;
        }
    }
}

enc::DecodeLimits decodeLimitsOf(const config::ServerConfig& cfg) noexcept {
    const auto& l = cfg.server.limits;
    enc::DecodeLimits limits;
    limits.maxMessageSize = l.max_message_size;
    // 0 in the configuration is no limit (as in ServerCapabilities): the message size bounds it.
    const auto orNoLimit = [](std::int32_t v) { return v == 0 ? INT32_MAX : v; };
    limits.maxStringLength = orNoLimit(l.max_string_length);
    limits.maxByteStringLength = orNoLimit(l.max_bytestring_length);
    limits.maxArrayLength = orNoLimit(l.max_array_length);
    limits.maxNestingDepth = l.max_nesting_depth;
    return limits;
}

SessionServices::SessionServices(const config::ServerConfig& cfg, SessionManager& sessions)
    : sessions_(sessions),
      limits_(decodeLimitsOf(cfg)),
      maxMessageSize_(cfg.server.limits.max_message_size),
      strict_(cfg.server.strict()),
      throttle_(loginLimitsOf(cfg.server.limits)),
      loginPool_(cfg.server.limits.password_hash_threads, cfg.server.limits.password_hash_queue) {}

// --- CreateSession (Part 4 5.6.2) --------------------------------------------------------------

uaplex_status SessionServices::createSession(const ua::CreateSessionRequest& req,
                                             const RequestContext& ctx, enc::Arena& arena,
                                             const enc::DataType*& responseType,
                                             void*& response) noexcept {
    if (refusesSessionsOn(ctx)) return UAPLEX_BadSecurityModeInsufficient;
    try {
        ua::SignatureData serverSignature{ua::nullString(), ua::nullByteString()};
        if (ctx.channelSecurity) {
            // Part 4 5.6.2: the client's certificate names its application; the server proves
            // possession of its key by signing clientCertificate + clientNonce.
            const security::PolicyInfo* policy = security::findPolicy(ctx.channelSecurity->uri());
            if (!policy || !pki_) return UAPLEX_BadSecurityChecksFailed;
            if (uaplex_status st = security::checkSessionClientNonce(
                    {req.clientNonce.data, std::size_t(std::max(req.clientNonce.length, 0))});
                st != UAPLEX_Good)
                return st;
            auto bytes = [](const ua::ByteString& b) {
                return std::span<const std::uint8_t>(b.data, std::size_t(std::max(b.length, 0)));
            };
            auto channelCert = ctx.channelSecurity->remoteCertificate();
            auto clientCert = bytes(req.clientCertificate);
            std::shared_ptr<security::Certificate> parsed;
            try {
                parsed = security::Certificate::fromDer(clientCert);
            } catch (...) {
                return UAPLEX_BadOutOfMemory;
            }
            if (!parsed || parsed->der.size() != channelCert.size() ||
                std::memcmp(parsed->der.data(), channelCert.data(), channelCert.size()) != 0)
                return UAPLEX_BadCertificateInvalid;
            if (parsed->applicationUri() != ua::view(req.clientDescription.applicationUri))
                return UAPLEX_BadCertificateUriInvalid;
            std::size_t sigSize = security::rsaKeyBytes(pki_->privateKey());
            auto* sig = arena.allocateArray<std::uint8_t>(sigSize);
            if (!sig) return UAPLEX_BadOutOfMemory;
            if (!security::rsaSign(policy->signature, pki_->privateKey(),
                                   {clientCert, bytes(req.clientNonce)}, {sig, sigSize}))
                return UAPLEX_BadSecurityChecksFailed;
            serverSignature.algorithm = ua::makeString(policy->signatureUri);
            serverSignature.signature = ua::ByteString{std::int32_t(sigSize), sig};
        }
        std::string peer = sdk::peer_host(ctx.peer);
        ChannelOrigin origin;
        origin.peer = peer;
        origin.ownChannel = !ctx.sharedChannel;
        origin.mode = ChannelMode(ctx.securityMode);
        if (ctx.channelSecurity) {
            origin.clientCertificate = ctx.channelSecurity->remoteCertificate();
            origin.securityPolicyUri = ctx.channelSecurity->uri();
        } else {
            origin.securityPolicyUri = "http://opcfoundation.org/UA/SecurityPolicy#None";
        }
        origin.applicationName = ua::view(req.clientDescription.applicationName.text);
        origin.productUri = ua::view(req.clientDescription.productUri);
        origin.applicationType = std::uint32_t(req.clientDescription.applicationType);
        origin.endpointUrl = ua::view(req.endpointUrl);
        auto created =
            sessions_.create(ctx.channelId, req.requestedSessionTimeout, ua::view(req.sessionName),
                             req.maxResponseMessageSize, ctx.nowMs, origin,
                             ua::view(req.clientDescription.applicationUri), ctx.admissionOwner);
        if (created.status != UAPLEX_Good) return created.status;
        const auto& s = *created.session;
        auto* resp = make<ua::CreateSessionResponse>(arena);
        if (!resp) return UAPLEX_BadOutOfMemory;
        resp->sessionId = s.sessionId();
        resp->authenticationToken = s.authenticationToken();
        resp->authenticationToken.identifier.bytestring = copyBytes(
            arena, resp->authenticationToken.identifier.bytestring.data, Session::kTokenSize);
        resp->revisedSessionTimeout = s.timeoutMs();
        resp->serverNonce = copyBytes(arena, s.serverNonce().data(), s.serverNonce().size());
        resp->serverCertificate = ua::nullByteString();
        if (pki_) {
            const auto& der = pki_->own()->der;
            resp->serverCertificate = copyBytes(arena, der.data(), der.size());
        }
        std::string_view url =
            req.endpointUrl.length > 0 ? ua::view(req.endpointUrl) : ctx.endpointUrl;
        resp->serverEndpoints = endpoints_ ? endpoints_(endpointsUser_, arena, url)
                                           : ua::Array<ua::EndpointDescription>{0, nullptr};
        resp->serverSoftwareCertificates = {0, nullptr};
        resp->serverSignature = serverSignature;
        resp->maxRequestMessageSize = maxMessageSize_;
        responseType = enc::dataTypeOf<ua::CreateSessionResponse>();
        response = resp;
        return UAPLEX_Good;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

// --- CloseSession (Part 4 5.6.4) and Cancel (Part 4 5.6.5) -------------------------------------

uaplex_status SessionServices::closeSession(const ua::CloseSessionRequest& req,
                                            const RequestContext& ctx, enc::Arena& arena,
                                            const enc::DataType*& responseType,
                                            void*& response) noexcept {
    // The session's closed hook deletes its subscriptions, or with deleteSubscriptions =
    // false leaves them to their lifetime for a TransferSubscriptions.
    uaplex_status st = sessions_.close(req.requestHeader.authenticationToken, ctx.channelId,
                                       req.deleteSubscriptions);
    if (st != UAPLEX_Good) return st;
    auto* resp = make<ua::CloseSessionResponse>(arena);
    if (!resp) return UAPLEX_BadOutOfMemory;
    responseType = enc::dataTypeOf<ua::CloseSessionResponse>();
    response = resp;
    return UAPLEX_Good;
}

uaplex_status SessionServices::cancel(Session& s, const ua::CancelRequest& req, enc::Arena& arena,
                                      const enc::DataType*& responseType,
                                      void*& response) noexcept {
    // Queued requests of this session with the handle are completed with
    // BadRequestCancelledByRequest ("cancelled by the client with the Cancel service");
    // executing ones finish normally and are not counted.
    auto* resp = make<ua::CancelResponse>(arena);
    if (!resp) return UAPLEX_BadOutOfMemory;
    resp->cancelCount =
        s.requests().cancel(req.requestHandle, UAPLEX_BadRequestCancelledByRequest, canceller_);
    // Parked Publish requests are no longer in the request registry.
    if (parkedCancel_) resp->cancelCount += parkedCancel_(parkedCancelUser_, s, req.requestHandle);
    responseType = enc::dataTypeOf<ua::CancelResponse>();
    response = resp;
    return UAPLEX_Good;
}

// --- ActivateSession (Part 4 5.6.3) ------------------------------------------------------------

// One ActivateSession as the check of its identity token needs it, also after the worker that
// decoded it moved on: everything is copied (the request itself as its encoded bytes).
struct SessionServices::LoginCall {
    std::shared_ptr<Session> session;
    std::uint32_t channelId = 0;
    std::uint32_t requestHandle = 0;
    std::string peer;  // remote IP address
    std::string userName;
    bool ownChannel = true;
    ChannelMode mode = ChannelMode::None;
    std::vector<std::uint8_t> clientCertificate;
    std::string channelPolicyUri{kSecurityPolicyNoneUri};
    std::array<std::uint8_t, Session::kNonceSize> nonce{};
    bool lockedOut = false;
    // The deferred path: the request's bytes and where the answer goes.
    std::vector<std::uint8_t> raw;
    std::shared_ptr<ResponseRoute> route;
    SessionServices* services = nullptr;
    // Holds a pending place of its peer and the session's one login in flight.
    mutable bool reserved = false;
    // Given back before the answer is sent: the client may send its next attempt at once.
    void release() const noexcept {
        if (!reserved) return;
        reserved = false;
        services->throttle_.releasePending(peer);
        session->endLogin();
    }

    ChannelOrigin origin() const noexcept {
        ChannelOrigin o;
        o.peer = peer;
        o.ownChannel = ownChannel;
        o.clientCertificate = clientCertificate;
        o.mode = mode;
        return o;
    }
    LoginCall() = default;
    LoginCall(const LoginCall&) = delete;
    // Also when the pool drops the job unrun (stop).
    ~LoginCall() { release(); }
};

uaplex_status SessionServices::activateSession(const ua::ActivateSessionRequest& req,
                                               std::span<const std::uint8_t> raw,
                                               const RequestContext& ctx, enc::Arena& arena,
                                               const enc::DataType*& responseType, void*& response,
                                               bool& deferred) noexcept {
    if (refusesSessionsOn(ctx)) return UAPLEX_BadSecurityModeInsufficient;
    const auto& header = req.requestHeader;
    try {
        auto call = std::make_shared<LoginCall>();
        call->services = this;
        call->channelId = ctx.channelId;
        call->requestHandle = header.requestHandle;
        call->peer = sdk::peer_host(ctx.peer);
        call->ownChannel = !ctx.sharedChannel;
        call->mode = ChannelMode(ctx.securityMode);
        if (ctx.channelSecurity) {
            auto cert = ctx.channelSecurity->remoteCertificate();
            call->clientCertificate.assign(cert.begin(), cert.end());
            call->channelPolicyUri = std::string(ctx.channelSecurity->uri());
        }
        call->session = sessions_.lookup(header.authenticationToken);
        if (!call->session) return UAPLEX_BadSessionIdInvalid;
        // The channel binding first: a session moves only to a channel of its own client
        // certificate and no weaker mode, so a refused transfer costs no signature or hash.
        if (uaplex_status st = sessions_.checkActivation(header.authenticationToken, ctx.channelId,
                                                         call->origin());
            st != UAPLEX_Good)
            return st;
        // One copy of the nonce, taken under the session's lock: the signatures are checked
        // against it, and the activation is refused if a concurrent one renewed it meanwhile.
        call->nonce = call->session->currentNonce();
        if (ctx.channelSecurity) {
            // clientSignature over serverCertificate + the last serverNonce, by the key of
            // the client certificate, which the binding made the session's own.
            if (!pki_) return UAPLEX_BadSecurityChecksFailed;
            security::AsymmetricSignature algorithm;
            std::shared_ptr<security::Certificate> client;
            try {
                client = security::Certificate::fromDer(call->clientCertificate);
            } catch (...) {
                return UAPLEX_BadOutOfMemory;
            }
            const auto& sig = req.clientSignature;
            if (!client ||
                !security::signatureAlgorithmFor(call->channelPolicyUri, ua::view(sig.algorithm),
                                                 algorithm) ||
                !security::rsaVerify(
                    algorithm, client->publicKey.get(),
                    {std::span<const std::uint8_t>(pki_->own()->der),
                     std::span<const std::uint8_t>(call->nonce.data(), call->nonce.size())},
                    {sig.signature.data, std::size_t(std::max(sig.signature.length, 0))}))
                return UAPLEX_BadApplicationSignatureInvalid;
        }
        const ua::ExtensionObject& token = req.userIdentityToken;
        if (!isPassword(token)) {
            // Anonymous, X509 (or not a token at all): nothing to guess, checked here.
            return finishActivation(req, *call, ctx.nowMs, arena, responseType, response);
        }
        const auto& name = static_cast<const ua::UserNameIdentityToken*>(token.object)->userName;
        call->userName = std::string(ua::view(name).substr(0, 256));
        auto decision =
            throttle_.check(call->peer, call->userName, call->session->loginFailures(), ctx.nowMs);
        call->lockedOut = decision.lockedOut;
        if (!ctx.makeRoute) {
            // No way to answer later (in-process callers): checked here, without the delay.
            return finishActivation(req, *call, ctx.nowMs, arena, responseType, response);
        }
        // The request waits in the pool as its bytes: a login is small, so a large one (filled
        // with locale ids, headers, certificates) is refused rather than kept.
        if (raw.size() > kMaxQueuedLoginBytes) return UAPLEX_BadRequestTooLarge;
        // Off the workers: the password check runs in the login pool, and a delayed answer
        // waits there as a due time. One login per session and a few per peer at once.
        if (!call->session->beginLogin()) return UAPLEX_BadTooManyOperations;
        if (!throttle_.reservePending(call->peer)) {
            call->session->endLogin();
            return UAPLEX_BadTooManyOperations;
        }
        call->reserved = true;
        call->raw.assign(raw.begin(), raw.end());
        call->route = ctx.makeRoute(ctx.routeUser);
        if (!call->route) return UAPLEX_BadOutOfMemory;
        if (!loginPool_.submit(sdk::monotonic_ms() + decision.delayMs,
                               [this, call] { runLogin(*call); }))
            return UAPLEX_BadTooManyOperations;
        deferred = true;
        return UAPLEX_Good;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

uaplex_status SessionServices::finishActivation(const ua::ActivateSessionRequest& req,
                                                const LoginCall& call, std::int64_t nowMs,
                                                enc::Arena& arena,
                                                const enc::DataType*& responseType,
                                                void*& response) noexcept {
    const ua::ExtensionObject& token = req.userIdentityToken;
    const bool credential = isPassword(token);
    auto& s = call.session;
    UserIdentity identity;
    std::shared_ptr<const AccessView> access;
    uaplex_status st = UAPLEX_Good;
    // Failures that came in meanwhile may have locked the name or peer out: looked at again.
    bool lockedOut =
        call.lockedOut ||
        (credential &&
         throttle_.check(call.peer, call.userName, s->loginFailures(), nowMs).lockedOut);
    if (lockedOut) {
        st = UAPLEX_BadUserAccessDenied;  // no password check while locked out
    } else {
        ActivationContext actx;
        actx.userTokenSignature = &req.userTokenSignature;
        actx.serverNonce = {call.nonce.data(), call.nonce.size()};
        if (pki_ && pki_->own()) actx.serverCertificate = pki_->own()->der;
        actx.channelSecurityPolicyUri = call.channelPolicyUri;
        st = identity_->verify(token, actx, identity);
    }
    if (st != UAPLEX_Good) {
        sessions_.countSecurityRejected();
        if (credential) {
            if (!lockedOut) throttle_.failed(call.peer, call.userName, nowMs);
            // A session that keeps guessing is closed.
            if (s->addLoginFailure() >= throttle_.limits().maxSessionFailures)
                sessions_.closeSession(s);
        }
        return st;
    }
    if (credential) throttle_.succeeded(call.userName);
    if (accessPolicy_) access = accessPolicy_->view(identity.roles);
    std::array<std::uint8_t, Session::kNonceSize> nonce{};
    std::shared_ptr<Session> activated;
    st = sessions_.activate(req.requestHeader.authenticationToken, call.channelId,
                            std::move(identity), std::move(access), nowMs, &activated,
                            call.origin(), &call.nonce, &nonce);
    if (st != UAPLEX_Good) return st;
    // The session's subscriptions filter events by its (possibly new) permissions.
    if (activated_ && activated) activated_(activatedUser_, *activated);
    auto* resp = make<ua::ActivateSessionResponse>(arena);
    if (!resp) return UAPLEX_BadOutOfMemory;
    resp->serverNonce = copyBytes(arena, nonce.data(), nonce.size());
    std::size_t n = req.clientSoftwareCertificates.size();
    auto* results = arena.allocateArray<ua::StatusCode>(n);
    resp->results = {std::int32_t(n), results};  // Good for each (none are checked)
    resp->diagnosticInfos = {0, nullptr};
    responseType = enc::dataTypeOf<ua::ActivateSessionResponse>();
    response = resp;
    return UAPLEX_Good;
}

void SessionServices::reportActivation(const ua::ActivateSessionRequest& req,
                                       std::uint32_t channelId, uaplex_status status) noexcept {
    if (!activationAudit_) return;
    std::shared_ptr<Session> s;
    try {
        s = sessions_.lookup(req.requestHeader.authenticationToken);
    } catch (...) {
    }
    activationAudit_(activationAuditUser_, channelId, req, status, s.get());
}

void SessionServices::runLogin(const LoginCall& call) noexcept {
    try {
        enc::Arena arena(limits_.maxArenaBytes, 4096);
        enc::ByteBuffer out(512);
        const std::int64_t utc = ua::utcNow();
        enc::DecodedMessage m = enc::decodeMessage(call.raw, arena, limits_);
        uaplex_status st = m.status;
        const enc::DataType* responseType = nullptr;
        void* response = nullptr;
        if (st == UAPLEX_Good && m.type == enc::dataTypeOf<ua::ActivateSessionRequest>())
            st = finishActivation(*static_cast<const ua::ActivateSessionRequest*>(m.object), call,
                                  sdk::monotonic_ms(), arena, responseType, response);
        else if (st == UAPLEX_Good)
            st = UAPLEX_BadInternalError;
        if (activationAudit_ && m.type == enc::dataTypeOf<ua::ActivateSessionRequest>())
            activationAudit_(activationAuditUser_, call.channelId,
                             *static_cast<const ua::ActivateSessionRequest*>(m.object), st,
                             call.session.get());
        encodeResponse(call.requestHandle, st, responseType, response, utc, out);
        call.release();
        if (call.route->open()) call.route->send(out.span());
    } catch (...) {
        // Out of memory: the client's request times out.
    }
}

}  // namespace uaplex::session
