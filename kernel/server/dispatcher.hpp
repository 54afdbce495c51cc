// Service dispatch: decodes a request message, answers discovery and session services itself,
// resolves the session of every other request by its AuthenticationToken and hands the
// attribute, view and method services to the ServiceHandler. Everything else answers a
// ServiceFault with BadServiceUnsupported.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <span>
#include <string_view>

#include "server/discovery.hpp"
#include "server/service_handler.hpp"
#include "session/session_manager.hpp"

namespace uaplex::server {

struct RequestContext {
    std::uint32_t channelId;
    std::int64_t nowMs;                             // monotonic
    std::int64_t utc;                               // OPC UA DateTime
    std::string_view endpointUrl;                   // the EndpointUrl of the connection's Hello
    session::SessionCache* sessionCache = nullptr;  // the connection's, if any
};

class Dispatcher {
  public:
    Dispatcher(const config::ServerConfig& cfg, session::SessionManager& sessions,
               ServiceHandler& services, const Discovery& discovery);

    // Decodes and executes one request; appends the encoded response (encoding NodeId and
    // body) to `out`. Returns the request's RequestHandle (0 if it could not be decoded).
    // Worker threads; never throws.
    std::uint32_t handle(std::span<const std::uint8_t> request, const RequestContext& ctx,
                         enc::Arena& arena, enc::ByteBuffer& out) noexcept;
    // A ServiceFault with `status` for `requestHandle`.
    static void encodeFault(std::uint32_t requestHandle, uaplex_status status, std::int64_t utc,
                            enc::ByteBuffer& out) noexcept;
    // The RequestHandle of an encoded request, 0 when its header does not decode.
    static std::uint32_t peekRequestHandle(std::span<const std::uint8_t> request) noexcept;

    const enc::DecodeLimits& decodeLimits() const noexcept { return limits_; }

  private:
    uaplex_status dispatch(const enc::DataType* type, const void* request,
                           const RequestContext& ctx, enc::Arena& arena,
                           const enc::DataType*& responseType, void*& response) noexcept;

    session::SessionManager& sessions_;
    ServiceHandler& services_;
    const Discovery& discovery_;
    enc::DecodeLimits limits_;
    std::uint32_t maxMessageSize_;
};

}  // namespace uaplex::server
