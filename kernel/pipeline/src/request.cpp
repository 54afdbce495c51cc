// SPDX-License-Identifier: Apache-2.0
#include "uaplex/pipeline/request.hpp"

namespace uaplex::pipeline {

namespace {
// PendingRequest objects alive (pendingRequestObjects).
std::atomic<std::size_t> gPendingRequests{0};
}  // namespace

std::size_t pendingRequestObjects() noexcept {
    return gPendingRequests.load(std::memory_order_relaxed);
}

PendingRequest::PendingRequest() {
    tracked.owner = this;
    gPendingRequests.fetch_add(1, std::memory_order_relaxed);
}

PendingRequest::~PendingRequest() {
    gPendingRequests.fetch_sub(1, std::memory_order_relaxed);
}

}  // namespace uaplex::pipeline
