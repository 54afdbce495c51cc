// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/dispatcher.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

namespace uaplex::server {

namespace {

// Requests and responses start with their RequestHeader / ResponseHeader (Part 4 7.32/7.33).
bool isRequest(const enc::DataType* t) noexcept {
    return t->fieldCount > 0 && t->fields[0].name == "requestHeader" && t->fields[0].offset == 0;
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

Dispatcher::Dispatcher(const config::ServerConfig& cfg, session::SessionManager& sessions,
                       ServiceHandler& services, const Discovery& discovery)
    : sessions_(sessions),
      nodeServices_(services.nodeServices()),
      discovery_(discovery),
      limits_(session::decodeLimitsOf(cfg)),
      sessionServices_(cfg, sessions),
      counters_(std::make_unique<ServiceCounters>()) {
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
    uaplex_status st = dispatch(call, m.type);
    if (call.deferred) {
        out.clear();
        return header.requestHandle;
    }
    if (st == UAPLEX_Good && call.response && call.responseType &&
        (header.returnDiagnostics & kOperationDiagnostics))
        sizeDiagnostics(*call.responseType, call.response, arena);
    session::encodeResponse(header.requestHandle, st, call.responseType, call.response, ctx.utc,
                            out);
    return header.requestHandle;
}

uaplex_status Dispatcher::dispatch(ServiceRequest& call, const enc::DataType* type) noexcept {
    const ServiceDescriptor* row = findService(type->binaryEncodingId);
    const std::size_t index = row ? serviceIndex(*row) : 0;
    if (row) counters_->countRequest(index);
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
    if (row && st != UAPLEX_Good) counters_->countError(index);
    return st;
}

}  // namespace uaplex::server
