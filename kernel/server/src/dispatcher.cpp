// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/dispatcher.hpp>

#include <uaplex/server/audit_trail.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace uaplex::server {

static_assert(kMaxServiceRows <= session::SessionServiceCounts::kRows,
              "every service-table row has a per-session counter");

namespace {

// Requests and responses start with their RequestHeader / ResponseHeader (Part 4 7.32/7.33).
bool isRequest(const enc::DataType* t) noexcept {
    return t->fieldCount > 0 && t->fields[0].name == "requestHeader" && t->fields[0].offset == 0;
}

}  // namespace

Dispatcher::Dispatcher(const config::ServerConfig& cfg, session::SessionManager& sessions,
                       ServiceHandler& services, const Discovery& discovery)
    : sessions_(sessions),
      nodeServices_(services.nodeServices()),
      discovery_(discovery),
      limits_(session::decodeLimitsOf(cfg)),
      sessionServices_(cfg, sessions),
      counters_(std::make_unique<ServiceCounters>()),
      diagnosticsEnabled_(&services.counters().diagnosticsEnabled) {
    sessionServices_.setEndpoints(
        [](void* user, enc::Arena& arena, std::string_view url) {
            return static_cast<const Discovery*>(user)->endpoints(arena, url, {-1, nullptr});
        },
        const_cast<Discovery*>(&discovery_));
    sessionServices_.setParkedCancel(
        [](void* user, const session::Session& s, std::uint32_t requestHandle) -> std::uint32_t {
            auto* self = static_cast<Dispatcher*>(user);
            return self->subscriptions_ ? self->subscriptions_->cancel(sessionKey(s), requestHandle)
                                        : 0;
        },
        this);
    sessionServices_.setActivated(
        [](void* user, const session::Session& s) {
            auto* self = static_cast<Dispatcher*>(user);
            if (self->subscriptions_) self->subscriptions_->setAccess(sessionKey(s), s.access());
        },
        this);
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
    ServiceRequest call{ctx,           header,         m.object,  request, arena, sessionServices_,
                        nodeServices_, subscriptions_, discovery_};
    call.audit = audit_;
    // Read now: a service answered later (GoodCompletesAsynchronously) owns the request's memory.
    const std::uint32_t requestHandle = header.requestHandle;
    uaplex_status st = dispatch(call, m.type);
    if (call.deferred || st == UAPLEX_GoodCompletesAsynchronously) {
        out.clear();
        return requestHandle;
    }
    if (st == UAPLEX_Good && call.response && call.responseType)
        session::sizeDiagnostics(header.returnDiagnostics, *call.responseType, call.response,
                                 arena);
    session::encodeResponse(header.requestHandle, st, call.responseType, call.response, ctx.utc,
                            out);
    return header.requestHandle;
}

uaplex_status Dispatcher::dispatch(ServiceRequest& call, const enc::DataType* type) noexcept {
    const ServiceDescriptor* row = findService(type->binaryEncodingId);
    const std::size_t index = row ? serviceIndex(*row) : 0;
    if (row) counters_->countRequest(index);
    // A vDSO clock read: no system call, no lock.
    const auto started = std::chrono::steady_clock::now();
    // A request without a row is treated as one that needs a session: a client without one
    // learns nothing about which services exist.
    std::shared_ptr<session::Session> s;
    uaplex_status st = UAPLEX_Good;
    if (!row || row->session == SessionUse::Activated) {
        const RequestContext& ctx = call.ctx;
        st = sessions_.resolve(call.header.authenticationToken, ctx.channelId, ctx.nowMs, s,
                               ctx.sessionCache);
        call.session = s.get();
    }
    if (st == UAPLEX_Good) st = row ? row->handler(call) : UAPLEX_BadServiceUnsupported;
    const bool failed = st != UAPLEX_Good && st != UAPLEX_GoodCompletesAsynchronously;
    if (row && failed) counters_->countError(index, st);
    // The session's own diagnostics (SessionDiagnosticsDataType): its requests that resolved.
    if (row && call.session && diagnosticsEnabled_->load(std::memory_order_relaxed))
        call.session->serviceCounts().count(
            index, failed,
            st == UAPLEX_BadUserAccessDenied || st == UAPLEX_BadSecurityChecksFailed);
    if (row) {
        auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
        counters_->countLatency(index, ns > 0 ? std::uint64_t(ns) : 0);
    }
    return st;
}

void Dispatcher::setAudit(AuditTrail* audit) noexcept {
    audit_ = audit;
    if (!audit) {
        sessionServices_.setActivationAudit(nullptr, nullptr);
        return;
    }
    sessionServices_.setActivationAudit(
        [](void* user, std::uint32_t channelId, const ua::ActivateSessionRequest& req,
           uaplex_status status, const session::Session* s) {
            static_cast<AuditTrail*>(user)->activateSession(channelId, req, status, s);
        },
        audit);
}

}  // namespace uaplex::server
