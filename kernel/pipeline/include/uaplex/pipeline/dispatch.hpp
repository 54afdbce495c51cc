// SPDX-License-Identifier: Apache-2.0
// What the request pipeline needs of the services above it, injected by the server that
// composes both: the service table's word on a request kind, and the call that decodes and
// executes one. A context and plain function pointers: no virtual call per request.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <span>

#include <uaplex/session/session_services.hpp>

namespace uaplex::pipeline {

// How the admission stage classifies a request kind (sdk/include/uaplex/admission.h).
enum class AdmissionClass : std::uint8_t {
    Request,               // ordinary: charged to its session's owner
    SessionEstablishment,  // UAPLEX_ADMISSION_SESSION_ESTABLISHMENT (Create/ActivateSession)
    Control,               // UAPLEX_ADMISSION_CONTROL (CloseSession, Cancel): never starved
};

// What the pipeline must know of a request kind before it queues a request.
struct ServiceTraits {
    AdmissionClass admission = AdmissionClass::Request;
    // Runs on the I/O thread as it arrives, never queued (Cancel: it must reach the requests
    // waiting behind busy workers).
    bool onIoThread = false;
};

struct Dispatch {
    void* self = nullptr;
    // The traits of a request's binary encoding id; the defaults for a kind that is not
    // served. I/O threads; no allocation, no lock.
    ServiceTraits (*traits)(void* self, std::uint32_t requestEncodingId) noexcept = nullptr;
    // Decodes and executes one request and appends the encoded response (encoding NodeId and
    // body) to `out`, which stays empty when the response goes through ctx.makeRoute's route.
    // Returns the request's RequestHandle (0 if it could not be decoded). Workers and the I/O
    // threads (inline rows); never throws.
    std::uint32_t (*execute)(void* self, std::span<const std::uint8_t> request,
                             const session::RequestContext& ctx, enc::Arena& arena,
                             enc::ByteBuffer& out) noexcept = nullptr;
};

// What the I/O thread reads of a request before it is queued, without decoding or allocating:
// the encoding NodeId and the start of the RequestHeader (Part 6 5.2.2.9, Part 4 7.32).
struct RequestPrefix {
    bool ok = false;
    std::uint32_t encodingId = 0;      // numeric ns0 encoding id, 0 for any other NodeId
    ua::NodeId authenticationToken{};  // points into the message
    std::uint32_t requestHandle = 0;
    std::uint32_t timeoutHint = 0;  // ms; 0 when absent or unreadable
};

RequestPrefix peekPrefix(std::span<const std::uint8_t> request) noexcept;

}  // namespace uaplex::pipeline
