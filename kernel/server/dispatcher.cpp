#include "server/dispatcher.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "server/access_gate.hpp"

#include "security/identity.hpp"

namespace uaplex::server {

namespace {

template <class T>
bool is(const enc::DataType* t) noexcept {
    return t == enc::dataTypeOf<T>();
}

// Requests and responses start with their RequestHeader / ResponseHeader (Part 4 7.32/7.33).
bool isRequest(const enc::DataType* t) noexcept {
    return t->fieldCount > 0 && t->fields[0].name == "requestHeader" && t->fields[0].offset == 0;
}

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

// Operation-level diagnostics asked for (RequestHeader.returnDiagnostics bits 5-9, Part 4
// 7.32): each diagnosticInfos array of the response gets one entry per result of the array
// it belongs to ("results", or "<x>Results" for "<x>DiagnosticInfos"), empty where the
// server has nothing to say. Part 4 7.8 allows empty entries, not a shorter list.
constexpr std::uint32_t kOperationDiagnostics = 0x3E0;

void sizeDiagnostics(const enc::DataType& type, void* response, enc::Arena& arena) noexcept {
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

}  // namespace

std::uint64_t sessionKey(const session::Session& s) noexcept {
    // The services' state when there is one, so that Server.GetMonitoredItems (called with
    // that state) names the same session; both live exactly as long as the session.
    return s.state() ? reinterpret_cast<std::uintptr_t>(s.state())
                     : reinterpret_cast<std::uintptr_t>(&s);
}

// ConditionRefresh (i=3875) and ConditionRefresh2 (i=12912) of ConditionType (Part 9 5.5.7):
// the services checked the object, method and inputs and left them unimplemented; they act
// on the session's subscriptions, which live here.
void Dispatcher::conditionRefresh(std::uint64_t session, const ua::CallRequest& req,
                                  ua::CallResponse& resp) noexcept {
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
                           : subscriptions_->conditionRefresh(session, ids[0], ids[1]);
        r.outputArguments = {0, nullptr};
    }
}

namespace {

session::LoginLimits loginLimitsOf(const config::ServerLimits& l) noexcept {
    session::LoginLimits r;
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

std::string peerHost(std::string_view a) {
    std::string_view host = a;
    if (!a.empty() && a.front() == '[') {
        std::size_t end = a.find(']');
        host = a.substr(1, end == std::string_view::npos ? a.size() - 1 : end - 1);
    } else if (std::count(a.begin(), a.end(), ':') == 1) {
        host = a.substr(0, a.find(':'));
    }
    std::string h(host.substr(0, 64));
    std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
    if (h.rfind("::ffff:", 0) == 0 && h.find('.') != std::string::npos) h = h.substr(7);
    return h;
}

Dispatcher::Dispatcher(const config::ServerConfig& cfg, session::SessionManager& sessions,
                       ServiceHandler& services, const Discovery& discovery)
    : sessions_(sessions),
      services_(services),
      discovery_(discovery),
      throttle_(loginLimitsOf(cfg.server.limits)),
      loginPool_(cfg.server.limits.password_hash_threads, cfg.server.limits.password_hash_queue) {
    strict_ = cfg.server.strict();
    const auto& l = cfg.server.limits;
    limits_.maxMessageSize = l.max_message_size;
    // 0 in the configuration is no limit (as in ServerCapabilities): the message size bounds it.
    const auto orNoLimit = [](std::int32_t v) { return v == 0 ? INT32_MAX : v; };
    limits_.maxStringLength = orNoLimit(l.max_string_length);
    limits_.maxByteStringLength = orNoLimit(l.max_bytestring_length);
    limits_.maxArrayLength = orNoLimit(l.max_array_length);
    limits_.maxNestingDepth = l.max_nesting_depth;
    maxMessageSize_ = l.max_message_size;
}

void Dispatcher::encodeFault(std::uint32_t requestHandle, uaplex_status status, std::int64_t utc,
                             enc::ByteBuffer& out) noexcept {
    ua::ServiceFault fault{};
    fault.responseHeader.timestamp = utc;
    fault.responseHeader.requestHandle = requestHandle;
    fault.responseHeader.serviceResult = status;
    out.clear();
    enc::BinaryWriter w(out);
    enc::encodeMessage(w, fault);
}

std::uint32_t Dispatcher::peekRequestHandle(std::span<const std::uint8_t> request) noexcept {
    enc::Arena arena(64 * 1024, 512);
    enc::DecodeLimits limits;
    enc::BinaryReader r(request, arena, limits);
    ua::NodeId encoding{};
    ua::RequestHeader header{};
    enc::decode(r, encoding);
    enc::decode(r, header);
    return r.ok() ? header.requestHandle : 0;
}

RequestPrefix Dispatcher::peekPrefix(std::span<const std::uint8_t> m) noexcept {
    RequestPrefix p{};
    std::size_t at = 0;
    auto need = [&](std::size_t n) { return m.size() - at >= n; };
    auto u8 = [&] { return m[at++]; };
    auto u16 = [&] {
        std::uint16_t v = std::uint16_t(m[at] | m[at + 1] << 8);
        at += 2;
        return v;
    };
    auto u32 = [&] {
        std::uint32_t v = std::uint32_t(m[at]) | std::uint32_t(m[at + 1]) << 8 |
                          std::uint32_t(m[at + 2]) << 16 | std::uint32_t(m[at + 3]) << 24;
        at += 4;
        return v;
    };
    // A NodeId in binary (Part 6 5.2.2.9); fills `id` for the numeric and ByteString forms.
    auto nodeId = [&](ua::NodeId& id) -> bool {
        if (!need(1)) return false;
        std::uint8_t form = u8();
        id = ua::NodeId{};
        switch (form) {
            case 0x00:
                if (!need(1)) return false;
                id.identifier_type = UAPLEX_ID_NUMERIC;
                id.identifier.numeric = u8();
                return true;
            case 0x01:
                if (!need(3)) return false;
                id.identifier_type = UAPLEX_ID_NUMERIC;
                id.namespace_index = u8();
                id.identifier.numeric = u16();
                return true;
            case 0x02:
                if (!need(6)) return false;
                id.identifier_type = UAPLEX_ID_NUMERIC;
                id.namespace_index = u16();
                id.identifier.numeric = u32();
                return true;
            case 0x03:
            case 0x05: {
                if (!need(6)) return false;
                id.namespace_index = u16();
                std::int32_t n = std::int32_t(u32());
                if (n > 0 && !need(std::size_t(n))) return false;
                if (form == 0x05) {
                    id.identifier_type = UAPLEX_ID_BYTESTRING;
                    id.identifier.bytestring =
                        ua::ByteString{n, n > 0 ? const_cast<std::uint8_t*>(&m[at]) : nullptr};
                } else {
                    id.identifier_type = UAPLEX_ID_STRING;
                }
                if (n > 0) at += std::size_t(n);
                return true;
            }
            case 0x04:
                if (!need(18)) return false;
                id.identifier_type = UAPLEX_ID_GUID;
                at += 18;
                return true;
            default:
                return false;
        }
    };
    ua::NodeId encoding{};
    if (!nodeId(encoding) || !nodeId(p.authenticationToken) || !need(12)) return p;
    if (encoding.identifier_type == UAPLEX_ID_NUMERIC && encoding.namespace_index == 0)
        p.encodingId = encoding.identifier.numeric;
    at += 8;  // timestamp
    p.requestHandle = u32();
    p.ok = true;
    // returnDiagnostics, auditEntryId (String), timeoutHint
    if (!need(8)) return p;
    at += 4;
    std::int32_t auditLength = std::int32_t(u32());
    if (auditLength > 0) {
        if (!need(std::size_t(auditLength))) return p;
        at += std::size_t(auditLength);
    }
    if (need(4)) p.timeoutHint = u32();
    return p;
}

std::uint32_t Dispatcher::handle(std::span<const std::uint8_t> request, const RequestContext& ctx,
                                 enc::Arena& arena, enc::ByteBuffer& out) noexcept {
    enc::DecodedMessage m = enc::decodeMessage(request, arena, limits_);
    if (m.status != UAPLEX_Good || !isRequest(m.type)) {
        std::uint32_t handle = peekRequestHandle(request);
        encodeFault(handle, m.status == UAPLEX_Good ? UAPLEX_BadServiceUnsupported : m.status,
                    ctx.utc, out);
        return handle;
    }
    const auto& header = *static_cast<const ua::RequestHeader*>(m.object);
    const enc::DataType* responseType = nullptr;
    void* response = nullptr;
    bool deferred = false;
    uaplex_status st =
        dispatch(m.type, m.object, ctx, arena, responseType, response, deferred, request);
    if (deferred) {
        out.clear();
        return header.requestHandle;
    }
    if (st != UAPLEX_Good || response == nullptr || responseType == nullptr) {
        encodeFault(header.requestHandle, st == UAPLEX_Good ? UAPLEX_BadInternalError : st, ctx.utc,
                    out);
        return header.requestHandle;
    }
    if (header.returnDiagnostics & kOperationDiagnostics)
        sizeDiagnostics(*responseType, response, arena);
    auto& rh = *static_cast<ua::ResponseHeader*>(response);
    rh.timestamp = ctx.utc;
    rh.requestHandle = header.requestHandle;
    out.clear();
    enc::BinaryWriter w(out);
    enc::encodeMessage(w, *responseType, response);
    if (!w.ok()) encodeFault(header.requestHandle, UAPLEX_BadEncodingError, ctx.utc, out);
    return header.requestHandle;
}

uaplex_status Dispatcher::dispatch(const enc::DataType* type, const void* request,
                                   const RequestContext& ctx, enc::Arena& arena,
                                   const enc::DataType*& responseType, void*& response,
                                   bool& deferred, std::span<const std::uint8_t> raw) noexcept {
    const auto& header = *static_cast<const ua::RequestHeader*>(request);

    // --- discovery: no session needed ---
    if (is<ua::GetEndpointsRequest>(type)) {
        const auto& req = *static_cast<const ua::GetEndpointsRequest*>(request);
        auto* resp = make<ua::GetEndpointsResponse>(arena);
        if (!resp) return UAPLEX_BadOutOfMemory;
        std::string_view url =
            req.endpointUrl.length > 0 ? ua::view(req.endpointUrl) : ctx.endpointUrl;
        resp->endpoints = discovery_.endpoints(arena, url, req.profileUris);
        responseType = enc::dataTypeOf<ua::GetEndpointsResponse>();
        response = resp;
        return UAPLEX_Good;
    }
    if (is<ua::FindServersRequest>(type)) {
        const auto& req = *static_cast<const ua::FindServersRequest*>(request);
        auto* resp = make<ua::FindServersResponse>(arena);
        if (!resp) return UAPLEX_BadOutOfMemory;
        std::string_view url =
            req.endpointUrl.length > 0 ? ua::view(req.endpointUrl) : ctx.endpointUrl;
        resp->servers = discovery_.servers(arena, url, req.serverUris);
        responseType = enc::dataTypeOf<ua::FindServersResponse>();
        response = resp;
        return UAPLEX_Good;
    }

    // --- session services ---
    if (is<ua::CreateSessionRequest>(type)) {
        if (refusesSessionsOn(ctx)) return UAPLEX_BadSecurityModeInsufficient;
        const auto& req = *static_cast<const ua::CreateSessionRequest*>(request);
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
        std::string peer = peerHost(ctx.peer);
        session::ChannelOrigin origin;
        origin.peer = peer;
        origin.ownChannel = !ctx.sharedChannel;
        origin.mode = session::ChannelMode(ctx.securityMode);
        if (ctx.channelSecurity)
            origin.clientCertificate = ctx.channelSecurity->remoteCertificate();
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
        resp->authenticationToken.identifier.bytestring =
            copyBytes(arena, resp->authenticationToken.identifier.bytestring.data,
                      session::Session::kTokenSize);
        resp->revisedSessionTimeout = s.timeoutMs();
        resp->serverNonce = copyBytes(arena, s.serverNonce().data(), s.serverNonce().size());
        resp->serverCertificate = ua::nullByteString();
        if (pki_) {
            const auto& der = pki_->own()->der;
            resp->serverCertificate = copyBytes(arena, der.data(), der.size());
        }
        std::string_view url =
            req.endpointUrl.length > 0 ? ua::view(req.endpointUrl) : ctx.endpointUrl;
        resp->serverEndpoints = discovery_.endpoints(arena, url, {-1, nullptr});
        resp->serverSoftwareCertificates = {0, nullptr};
        resp->serverSignature = serverSignature;
        resp->maxRequestMessageSize = maxMessageSize_;
        responseType = enc::dataTypeOf<ua::CreateSessionResponse>();
        response = resp;
        return UAPLEX_Good;
    }
    if (is<ua::ActivateSessionRequest>(type)) {
        if (refusesSessionsOn(ctx)) return UAPLEX_BadSecurityModeInsufficient;
        return activateSession(*static_cast<const ua::ActivateSessionRequest*>(request), raw, ctx,
                               arena, responseType, response, deferred);
    }
    if (is<ua::CloseSessionRequest>(type)) {
        // The session's closed hook deletes its subscriptions, or with deleteSubscriptions =
        // false leaves them to their lifetime for a TransferSubscriptions.
        const auto& req = *static_cast<const ua::CloseSessionRequest*>(request);
        uaplex_status st =
            sessions_.close(header.authenticationToken, ctx.channelId, req.deleteSubscriptions);
        if (st != UAPLEX_Good) return st;
        auto* resp = make<ua::CloseSessionResponse>(arena);
        if (!resp) return UAPLEX_BadOutOfMemory;
        responseType = enc::dataTypeOf<ua::CloseSessionResponse>();
        response = resp;
        return UAPLEX_Good;
    }

    // --- everything else needs an activated session on this channel ---
    std::shared_ptr<session::Session> s;
    uaplex_status st = sessions_.resolve(header.authenticationToken, ctx.channelId, ctx.nowMs, s,
                                         ctx.sessionCache);
    if (st != UAPLEX_Good) return st;

    if (is<ua::CancelRequest>(type)) {
        // Queued requests of this session with the handle are completed with
        // BadRequestCancelledByRequest ("cancelled by the client with the Cancel service");
        // executing ones finish normally and are not counted.
        const auto& req = *static_cast<const ua::CancelRequest*>(request);
        auto* resp = make<ua::CancelResponse>(arena);
        if (!resp) return UAPLEX_BadOutOfMemory;
        resp->cancelCount = s->requests().cancel(req.requestHandle,
                                                 UAPLEX_BadRequestCancelledByRequest, canceller_);
        // Parked Publish requests are no longer in the request registry.
        if (subscriptions_)
            resp->cancelCount += subscriptions_->cancel(sessionKey(*s), req.requestHandle);
        responseType = enc::dataTypeOf<ua::CancelResponse>();
        response = resp;
        return UAPLEX_Good;
    }
    if (is<ua::ReadRequest>(type) || is<ua::WriteRequest>(type) || is<ua::BrowseRequest>(type) ||
        is<ua::BrowseNextRequest>(type) || is<ua::TranslateBrowsePathsToNodeIdsRequest>(type) ||
        is<ua::RegisterNodesRequest>(type) || is<ua::UnregisterNodesRequest>(type) ||
        is<ua::CallRequest>(type)) {
        uaplex_status st =
            services_.call(arena, s->state(), s->access(), type, request, responseType, response);
        if (st == UAPLEX_Good && subscriptions_ && is<ua::CallRequest>(type))
            conditionRefresh(sessionKey(*s), *static_cast<const ua::CallRequest*>(request),
                             *static_cast<ua::CallResponse*>(response));
        return st;
    }
    if (subscriptions_ == nullptr) return UAPLEX_BadServiceUnsupported;
    if (is<ua::CreateMonitoredItemsRequest>(type)) {
        if (const session::AccessView* access = s->access())
            return createMonitoredItemsChecked(
                *subscriptions_, sessionKey(*s), s->transferKey(), *access,
                *static_cast<const ua::CreateMonitoredItemsRequest*>(request), arena, responseType,
                response);
    }
    if (SubscriptionService::serves(type))
        return subscriptions_->call(sessionKey(*s), s->transferKey(), type, request, arena,
                                    responseType, response);
    if ((is<ua::PublishRequest>(type) || is<ua::RepublishRequest>(type)) && ctx.makeRoute) {
        std::shared_ptr<ResponseRoute> route = ctx.makeRoute(ctx.routeUser);
        if (!route) return UAPLEX_BadOutOfMemory;
        deferred = true;
        if (is<ua::PublishRequest>(type)) {
            const auto& req = *static_cast<const ua::PublishRequest*>(request);
            std::int64_t deadline =
                header.timeoutHint ? ctx.nowMs + std::int64_t(header.timeoutHint) : 0;
            subscriptions_->publish(sessionKey(*s), std::move(route), req, deadline);
        } else {
            subscriptions_->republish(sessionKey(*s), std::move(route),
                                      *static_cast<const ua::RepublishRequest*>(request));
        }
        return UAPLEX_Good;
    }
    return UAPLEX_BadServiceUnsupported;
}

// --- ActivateSession (Part 4 5.6.3) ------------------------------------------------------------

// One ActivateSession as the check of its identity token needs it, also after the worker that
// decoded it moved on: everything is copied (the request itself as its encoded bytes).
struct Dispatcher::LoginCall {
    std::shared_ptr<session::Session> session;
    std::uint32_t channelId = 0;
    std::uint32_t requestHandle = 0;
    std::string peer;  // remote IP address
    std::string userName;
    bool ownChannel = true;
    session::ChannelMode mode = session::ChannelMode::None;
    std::vector<std::uint8_t> clientCertificate;
    std::string channelPolicyUri{session::kSecurityPolicyNoneUri};
    std::array<std::uint8_t, session::Session::kNonceSize> nonce{};
    bool lockedOut = false;
    // The deferred path: the request's bytes and where the answer goes.
    std::vector<std::uint8_t> raw;
    std::shared_ptr<ResponseRoute> route;
    Dispatcher* dispatcher = nullptr;
    // Holds a pending place of its peer and the session's one login in flight.
    mutable bool reserved = false;
    // Given back before the answer is sent: the client may send its next attempt at once.
    void release() const noexcept {
        if (!reserved) return;
        reserved = false;
        dispatcher->throttle_.releasePending(peer);
        session->endLogin();
    }

    session::ChannelOrigin origin() const noexcept {
        session::ChannelOrigin o;
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

uaplex_status Dispatcher::activateSession(const ua::ActivateSessionRequest& req,
                                          std::span<const std::uint8_t> raw,
                                          const RequestContext& ctx, enc::Arena& arena,
                                          const enc::DataType*& responseType, void*& response,
                                          bool& deferred) noexcept {
    const auto& header = req.requestHeader;
    try {
        auto call = std::make_shared<LoginCall>();
        call->dispatcher = this;
        call->channelId = ctx.channelId;
        call->requestHandle = header.requestHandle;
        call->peer = peerHost(ctx.peer);
        call->ownChannel = !ctx.sharedChannel;
        call->mode = session::ChannelMode(ctx.securityMode);
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
        if (!loginPool_.submit(session::loginClockMs() + decision.delayMs,
                               [this, call] { runLogin(*call); }))
            return UAPLEX_BadTooManyOperations;
        deferred = true;
        return UAPLEX_Good;
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

uaplex_status Dispatcher::finishActivation(const ua::ActivateSessionRequest& req,
                                           const LoginCall& call, std::int64_t nowMs,
                                           enc::Arena& arena, const enc::DataType*& responseType,
                                           void*& response) noexcept {
    const ua::ExtensionObject& token = req.userIdentityToken;
    const bool credential = isPassword(token);
    auto& s = call.session;
    session::UserIdentity identity;
    std::shared_ptr<const session::AccessView> access;
    uaplex_status st = UAPLEX_Good;
    // Failures that came in meanwhile may have locked the name or peer out: looked at again.
    bool lockedOut =
        call.lockedOut ||
        (credential &&
         throttle_.check(call.peer, call.userName, s->loginFailures(), nowMs).lockedOut);
    if (lockedOut) {
        st = UAPLEX_BadUserAccessDenied;  // no password check while locked out
    } else {
        session::ActivationContext actx;
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
    std::array<std::uint8_t, session::Session::kNonceSize> nonce{};
    std::shared_ptr<session::Session> activated;
    st = sessions_.activate(req.requestHeader.authenticationToken, call.channelId,
                            std::move(identity), std::move(access), nowMs, &activated,
                            call.origin(), &call.nonce, &nonce);
    if (st != UAPLEX_Good) return st;
    // The session's subscriptions filter events by its (possibly new) permissions.
    if (subscriptions_ && activated)
        subscriptions_->setAccess(sessionKey(*activated), activated->access());
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

void Dispatcher::runLogin(const LoginCall& call) noexcept {
    try {
        enc::Arena arena(limits_.maxArenaBytes, 4096);
        enc::ByteBuffer out(512);
        std::int64_t utc = 0;
        {
            // OPC UA DateTime: 100 ns since 1601.
            auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
            utc = 116444736000000000LL + ns / 100;
        }
        enc::DecodedMessage m = enc::decodeMessage(call.raw, arena, limits_);
        uaplex_status st = m.status;
        const enc::DataType* responseType = nullptr;
        void* response = nullptr;
        if (st == UAPLEX_Good && is<ua::ActivateSessionRequest>(m.type))
            st = finishActivation(*static_cast<const ua::ActivateSessionRequest*>(m.object), call,
                                  session::loginClockMs(), arena, responseType, response);
        else if (st == UAPLEX_Good)
            st = UAPLEX_BadInternalError;
        if (st == UAPLEX_Good && response && responseType) {
            auto& rh = *static_cast<ua::ResponseHeader*>(response);
            rh.timestamp = utc;
            rh.requestHandle = call.requestHandle;
            enc::BinaryWriter w(out);
            enc::encodeMessage(w, *responseType, response);
            if (!w.ok()) encodeFault(call.requestHandle, UAPLEX_BadEncodingError, utc, out);
        } else {
            encodeFault(call.requestHandle, st == UAPLEX_Good ? UAPLEX_BadInternalError : st, utc,
                        out);
        }
        call.release();
        if (call.route->open()) call.route->send(out.span());
    } catch (...) {
        // Out of memory: the client's request times out.
    }
}

}  // namespace uaplex::server
