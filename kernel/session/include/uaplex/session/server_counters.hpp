// SPDX-License-Identifier: Apache-2.0
// Counters of the ServerDiagnosticsSummary (Part 5 12.9): the session layer and the services
// count, the Server object reads them. Kept here, below both, so the session table counts
// without depending on the services.
#pragma once

#include <atomic>
#include <cstdint>

namespace uaplex::session {

struct ServerCounters {
    std::atomic<std::uint32_t> serverViewCount{0};
    std::atomic<std::uint32_t> currentSessionCount{0};
    std::atomic<std::uint32_t> cumulatedSessionCount{0};
    std::atomic<std::uint32_t> securityRejectedSessionCount{0};
    std::atomic<std::uint32_t> rejectedSessionCount{0};
    std::atomic<std::uint32_t> sessionTimeoutCount{0};
    std::atomic<std::uint32_t> sessionAbortCount{0};
    std::atomic<std::uint32_t> currentSubscriptionCount{0};
    std::atomic<std::uint32_t> cumulatedSubscriptionCount{0};
    std::atomic<std::uint32_t> publishingIntervalCount{0};
    std::atomic<std::uint32_t> securityRejectedRequestsCount{0};
    std::atomic<std::uint32_t> rejectedRequestsCount{0};
    // ServerDiagnostics EnabledFlag: off, sessions do not count their requests and the
    // diagnostics arrays read empty (the summary above is always kept).
    std::atomic<bool> diagnosticsEnabled{true};
};

}  // namespace uaplex::session
