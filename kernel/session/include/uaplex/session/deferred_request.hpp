// SPDX-License-Identifier: Apache-2.0
// A request answered after its worker moved on (asynchronous node-manager operations,
// docs/pipeline.md "Asynchronous operations"). Unlike a parked Publish it stays in its
// registry while it waits, so its TimeoutHint, Cancel and session close still reach it, and it
// keeps its admission leases until it is answered.
#pragma once

#include <uaplex/statuscodes.h>
#include <uaplex/encoding/encoding.hpp>

#include <cstdint>

namespace uaplex::session {

class DeferredRequest {
  public:
    virtual ~DeferredRequest() = default;
    // Answers the request with `response` of `responseType` (in `arena`), or a ServiceFault
    // for a Bad `status`, and releases it: true, or false when the deadline sweep, Cancel, a
    // session close or the shutdown answered it first (nothing is sent then). The first
    // answer wins. Any thread.
    virtual bool answer(uaplex_status status, const enc::DataType* responseType, void* response,
                        enc::Arena& arena) noexcept = 0;
    // Good while the request waits; the status it was answered with otherwise. Any thread.
    virtual uaplex_status status() const noexcept = 0;
};

}  // namespace uaplex::session
