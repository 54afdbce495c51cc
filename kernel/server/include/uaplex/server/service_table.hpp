// SPDX-License-Identifier: Apache-2.0
// The service table: every service the server answers is one row (request and response type,
// what session it needs, how admission classifies it, where it runs, its handler). The dispatcher
// looks a request up by its binary encoding id and calls the row's handler; a request without a row
// is BadServiceUnsupported.
//
// Adding a service: one row in service_table.cpp and one handler (docs/architecture.md,
// "Adding a service").
#pragma once

#include <uaplex/encoding/encoding.hpp>
#include <uaplex/pipeline/dispatch.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include <uaplex/server/service_handler.hpp>
#include <uaplex/session/session_services.hpp>

namespace uaplex::server {

class AuditTrail;
class Discovery;
class SubscriptionService;

// What a row needs of the request's session before its handler runs.
enum class SessionUse : std::uint8_t {
    None,       // no session (discovery)
    Own,        // the handler finds the session by its token itself (Create/Activate/Close)
    Activated,  // an activated session on this channel, resolved by the dispatcher
};

// How the admission stage classifies a row's requests (the pipeline's classes).
using pipeline::AdmissionClass;

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
    AuditTrail* audit = nullptr;          // [audit] enabled: the Audit events to raise
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

// How often a row was called and how often it answered a ServiceFault. A deferred answer
// counts when the handler hands it over.
struct ServiceCounts {
    std::uint64_t requests = 0;
    std::uint64_t errors = 0;
};

// Rows the counters have room for (service_table.cpp checks the table against it).
inline constexpr std::size_t kMaxServiceRows = 64;

// A row's request latency: how many took at most each bound of kLatencyBoundsNs (not
// cumulative; the last cell counts those above every bound) and the sum of all of them.
inline constexpr std::array<std::uint64_t, 16> kLatencyBoundsNs = {
    100'000,       250'000,       500'000,       1'000'000,     2'500'000,   5'000'000,
    10'000'000,    25'000'000,    50'000'000,    100'000'000,   250'000'000, 500'000'000,
    1'000'000'000, 2'500'000'000, 5'000'000'000, 10'000'000'000};
struct ServiceLatency {
    std::array<std::uint64_t, kLatencyBoundsNs.size() + 1> buckets{};
    std::uint64_t sumNs = 0;
};

// The ServiceFault statuses counted one by one per row (the metrics' status label); any
// other Bad status is counted in the last cell.
inline constexpr std::array<uaplex_status, 20> kCountedFaults = {UAPLEX_BadSessionIdInvalid,
                                                                 UAPLEX_BadSessionClosed,
                                                                 UAPLEX_BadSessionNotActivated,
                                                                 UAPLEX_BadTooManySessions,
                                                                 UAPLEX_BadTooManyOperations,
                                                                 UAPLEX_BadNothingToDo,
                                                                 UAPLEX_BadTimeout,
                                                                 UAPLEX_BadServerTooBusy,
                                                                 UAPLEX_BadRequestCancelledByClient,
                                                                 UAPLEX_BadUserAccessDenied,
                                                                 UAPLEX_BadIdentityTokenInvalid,
                                                                 UAPLEX_BadIdentityTokenRejected,
                                                                 UAPLEX_BadSecurityChecksFailed,
                                                                 UAPLEX_BadServiceUnsupported,
                                                                 UAPLEX_BadDecodingError,
                                                                 UAPLEX_BadEncodingLimitsExceeded,
                                                                 UAPLEX_BadNoSubscription,
                                                                 UAPLEX_BadTooManyPublishRequests,
                                                                 UAPLEX_BadInternalError,
                                                                 UAPLEX_BadOutOfMemory};
inline constexpr std::size_t kFaultCells = kCountedFaults.size() + 1;

// The counts of every row. Every worker counts every request, so each thread counts in one
// of kShards copies of the table, each on cache lines of its own: threads do not pass a line
// back and forth, neither for one busy row (Read) nor for neighbouring rows. A read sums the
// copies. Any thread, relaxed atomics: no lock, no allocation.
class ServiceCounters {
  public:
    static constexpr std::size_t kShards = 16;

    void countRequest(std::size_t row) noexcept {
        mine().cells[row].requests.fetch_add(1, std::memory_order_relaxed);
    }
    void countError(std::size_t row) noexcept {
        mine().cells[row].errors.fetch_add(1, std::memory_order_relaxed);
    }
    // The same, also by status: faults are rare, so these cells are not sharded.
    void countError(std::size_t row, uaplex_status status) noexcept {
        countError(row);
        std::size_t i = 0;
        while (i < kCountedFaults.size() && kCountedFaults[i] != status) ++i;
        faults_[row][i].fetch_add(1, std::memory_order_relaxed);
    }
    // A row's faults by status, indexed like kCountedFaults (the last: any other).
    std::array<std::uint64_t, kFaultCells> faults(std::size_t row) const noexcept {
        std::array<std::uint64_t, kFaultCells> out{};
        for (std::size_t i = 0; i < kFaultCells; ++i)
            out[i] = faults_[row][i].load(std::memory_order_relaxed);
        return out;
    }
    // One request of `row` took `ns` from dispatch to its answer (or its hand-off).
    void countLatency(std::size_t row, std::uint64_t ns) noexcept {
        std::size_t b = 0;
        while (b < kLatencyBoundsNs.size() && ns > kLatencyBoundsNs[b]) ++b;
        Cell& c = mine().cells[row];
        c.latency[b].fetch_add(1, std::memory_order_relaxed);
        c.latencySumNs.fetch_add(ns, std::memory_order_relaxed);
    }
    ServiceCounts read(std::size_t row) const noexcept {
        ServiceCounts sum;
        for (const Shard& s : shards_) {
            sum.requests += s.cells[row].requests.load(std::memory_order_relaxed);
            sum.errors += s.cells[row].errors.load(std::memory_order_relaxed);
        }
        return sum;
    }
    ServiceLatency latency(std::size_t row) const noexcept {
        ServiceLatency sum;
        for (const Shard& s : shards_) {
            for (std::size_t b = 0; b < sum.buckets.size(); ++b)
                sum.buckets[b] += s.cells[row].latency[b].load(std::memory_order_relaxed);
            sum.sumNs += s.cells[row].latencySumNs.load(std::memory_order_relaxed);
        }
        return sum;
    }

  private:
    struct Cell {
        std::atomic<std::uint64_t> requests{0};
        std::atomic<std::uint64_t> errors{0};
        std::array<std::atomic<std::uint64_t>, kLatencyBoundsNs.size() + 1> latency{};
        std::atomic<std::uint64_t> latencySumNs{0};
    };
    struct alignas(64) Shard {
        std::array<Cell, kMaxServiceRows> cells;
    };
    // Threads take the shards in turn, once each.
    Shard& mine() noexcept {
        static std::atomic<std::size_t> next{0};
        thread_local const std::size_t index = next.fetch_add(1, std::memory_order_relaxed);
        return shards_[index % kShards];
    }
    std::array<Shard, kShards> shards_;
    std::array<std::array<std::atomic<std::uint64_t>, kFaultCells>, kMaxServiceRows> faults_{};
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
