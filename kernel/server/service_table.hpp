// The service table: every service the server answers is one row (request and response type,
// what session it needs, how admission classifies it, where it runs, its handler). The dispatcher
// looks a request up by its binary encoding id and calls the row's handler; a request without a row
// is BadServiceUnsupported.
//
// Adding a service: one row in service_table.cpp and one handler (docs/architecture.md,
// "Adding a service").
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <uaplex/session/session_services.hpp>
#include "server/service_handler.hpp"

namespace uaplex::server {

class Discovery;
class SubscriptionService;

// What a row needs of the request's session before its handler runs.
enum class SessionUse : std::uint8_t {
    None,       // no session (discovery)
    Own,        // the handler finds the session by its token itself (Create/Activate/Close)
    Activated,  // an activated session on this channel, resolved by the dispatcher
};

// How the admission stage classifies a row's requests (sdk/include/uaplex/admission.h).
enum class AdmissionClass : std::uint8_t {
    Request,               // ordinary: charged to its session's owner
    SessionEstablishment,  // UAPLEX_ADMISSION_SESSION_ESTABLISHMENT (Create/ActivateSession)
    Control,               // UAPLEX_ADMISSION_CONTROL (CloseSession, Cancel): never starved
};

// One request on its way through its row's handler.
struct ServiceRequest {
    const session::RequestContext& ctx;
    const ua::RequestHeader& header;
    const void* request;                // the decoded request (header first)
    std::span<const std::uint8_t> raw;  // its encoding (without the message header)
    enc::Arena& arena;                  // the response goes here
    // The server parts the handlers answer with.
    session::SessionServices& sessionServices;
    const NodeServices& nodeServices;
    SubscriptionService* subscriptions;  // null: the subscription services are not served
    const Discovery& discovery;
    session::Session* session = nullptr;  // SessionUse::Activated: the resolved session
    // Out: the response (its ResponseHeader is filled by the dispatcher), or `deferred` when
    // it goes through ctx.makeRoute's route later.
    const enc::DataType* responseType = nullptr;
    void* response = nullptr;
    bool deferred = false;
};

// Good with the response set (or deferred), or a Bad status answered as a ServiceFault.
using ServiceFn = uaplex_status (*)(ServiceRequest& request) noexcept;

struct ServiceDescriptor {
    std::uint32_t requestEncodingId;  // ns0 <Request>_Encoding_DefaultBinary: the key
    std::string_view name;
    const enc::DataType* (*requestType)() noexcept;
    const enc::DataType* (*responseType)() noexcept;
    SessionUse session;
    AdmissionClass admission;
    // Runs on the I/O thread as it arrives, never queued (Cancel: it must reach the requests
    // waiting behind busy workers).
    bool onIoThread;
    ServiceFn handler;
};

// How often a row was called and how often it answered a ServiceFault (any thread, relaxed:
// no lock, no allocation). A deferred answer counts when the handler hands it over.
struct ServiceCounters {
    std::atomic<std::uint64_t> requests{0};
    std::atomic<std::uint64_t> errors{0};
};

// The rows, sorted by requestEncodingId.
std::span<const ServiceDescriptor> serviceTable() noexcept;
// The row of a request's binary encoding id, null when the server does not serve it. A binary
// search over the rows: no allocation.
const ServiceDescriptor* findService(std::uint32_t requestEncodingId) noexcept;
// A row's index (for its counters).
std::size_t serviceIndex(const ServiceDescriptor& row) noexcept;

// The session's identity in the subscription engine (unique while the session lives; the
// engine forgets it when the session closes).
std::uint64_t sessionKey(const session::Session& s) noexcept;

}  // namespace uaplex::server
