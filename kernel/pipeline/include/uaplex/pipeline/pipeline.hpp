// SPDX-License-Identifier: Apache-2.0
// The kernel's request pipeline (docs/pipeline.md, docs/architecture.md "The kernel's request
// pipeline"): the transport instances and their connections, admission classification and
// revalidation, submission to the request-queue slot, the workers, and the deadline sweep.
// The server composes it with the services above, which it reaches only through Dispatch.
//
// Threads: the transports' I/O threads assemble chunks, classify and submit; `request_threads`
// workers execute through Dispatch, encode and send; one thread expires requests past their
// TimeoutHint; the JSON decode threads transcode opc.https JSON bodies.
#pragma once

#include <uaplex/admission.h>
#include <uaplex/buffer_pool.h>
#include <uaplex/request_queue.h>
#include <uaplex/cpp/clock.hpp>
#include <uaplex/encoding/encoding.hpp>
#include <uaplex/pipeline/dispatch.hpp>
#include <uaplex/pipeline/request.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <uaplex/config/config.hpp>

namespace uaplex::host {
class Host;
class PluginInstance;
}  // namespace uaplex::host
namespace uaplex::securechannel {
class SecurityProvider;
}  // namespace uaplex::securechannel
namespace uaplex::session {
class SessionManager;
class DeadlineMonitor;
struct TrackedRequest;
struct QueuedCanceller;
}  // namespace uaplex::session

namespace uaplex::pipeline {

class Connection;
class JsonDecodePool;
class CheckedBufferPool;
class KernelBufferPool;
class PoolBufferAllocator;
struct TransportBinding;

// The pipeline's clock (deadlines, timeouts, sweeps): the one the session layer and the
// plugins read as well.
inline std::int64_t monotonicMs() noexcept {
    return sdk::monotonic_ms();
}
// The same clock in nanoseconds (the request queue's wait times).
inline std::int64_t steadyNs() noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

class Pipeline {
  public:
    // The channels' security: the policies other than None (null: None only) and whether
    // None is offered.
    struct ChannelSecurity {
        securechannel::SecurityProvider* provider = nullptr;
        bool offersNone = true;
    };
    // Asks the housekeeping sweep to run by `dueMs` (monotonic ms) at the latest: a new
    // channel's token expiry or idle timeout, a message that starts to be assembled.
    struct SweepHook {
        void (*schedule)(void* user, std::int64_t dueMs) = nullptr;
        void* user = nullptr;
    };

    // Every reference must outlive the pipeline. Sets up the buffer pool managers and the
    // sessions' establishment leases; throws std::runtime_error.
    Pipeline(const config::ServerConfig& cfg, host::Host& host, session::SessionManager& sessions,
             session::DeadlineMonitor& deadlines, Dispatch dispatch, ChannelSecurity security,
             SweepHook sweep);
    ~Pipeline();
    Pipeline(const Pipeline&) = delete;
    Pipeline& operator=(const Pipeline&) = delete;

    // Starts the workers, the deadline sweep and the JSON decode threads, then creates the
    // transports, listens on every endpoint and starts the reverse connects (announcing
    // `reverseEndpoint`). Throws std::runtime_error with a one-line message.
    void start(std::string_view reverseEndpoint);
    // The shutdown, in the server's order (docs/architecture.md, Shutdown drain):
    // refuse new connections and requests, drop the queued JSON bodies;
    void stopAccepting() noexcept;
    // stop the request queue (queued requests answer BadServerHalted), wait for the registered
    // requests (their longest remaining deadline + `graceMs`), join the workers and the
    // deadline sweep, stop the transports (closing every connection);
    void drain(std::int64_t graceMs) noexcept;
    // release what was queued after the drain, unanswered (its connection is closed);
    void discardQueued() noexcept;
    // then let the transports and connections go.
    void clear() noexcept;

    // How Cancel and session close take a registered request out of the request queue.
    session::QueuedCanceller canceller() noexcept;
    // Housekeeping (one thread): closes connections whose token expired, whose unfinished
    // message stalled or that carry no session for idle_channel_timeout_ms, and trims the
    // request records a burst left. Returns when it needs to look again (INT64_MAX: never).
    std::int64_t housekeep(std::int64_t nowMs);

    std::size_t connectionCount() const;
    // The request queue's waits so far (the metrics); any thread.
    QueueWaits queueWaits() const noexcept { return queueWaits_.read(); }
    // Connections closed since the start (the heap trim after a burst of them).
    std::uint64_t connectionsClosed() const;
    // What transport-https serves on its metrics path: the server's text (the admin
    // listener's, docs/metrics.md). Unset: the host's plugin metrics as "name value" lines.
    // Before start().
    void setMetricsText(std::function<void(std::string&)> text) { metricsText_ = std::move(text); }

  private:
    friend class Connection;
    struct Callbacks;
    std::function<void(std::string&)> metricsText_;

    // Classifies a request for the admission provider (owner cached per connection).
    void classify(Connection& c, PendingRequest& r, const RequestPrefix& prefix,
                  ServiceTraits traits) noexcept;
    // Classifies a new connection (its channel owner) and charges its Connection lease.
    uaplex_status admitConnection(Connection& c) noexcept;
    // The request queue's check before dispatch (docs/pipeline.md, Admission: revalidation).
    static uaplex_status revalidate(void* user, uaplex_request_entry* entry);
    void submit(Connection& c);
    // The same for a request body held elsewhere than the channel's assembly (opc.https JSON,
    // transcoded on a decode thread).
    void submit(Connection& c, enc::ByteBuffer& body, std::uint32_t secureRequestId);
    // Cancel runs on the I/O thread, so that it reaches requests still queued behind busy
    // workers.
    void executeInline(Connection& c, std::span<const std::uint8_t> body,
                       std::uint32_t secureRequestId, std::uint32_t requestHandle);
    // opc.https JSON: decoded and transcoded to the binary encoding on a decode thread.
    void transcodeJson(Connection& c, std::vector<std::uint8_t>& text) noexcept;
    // The request queue completed an entry itself (stop, cancel, refusal): answer a fault.
    void completeRefused(PendingRequest& request, std::uint32_t status) noexcept;
    // QueuedCanceller::unlink: takes a registered request out of the request queue.
    static bool unlinkQueued(void* user, session::TrackedRequest& t, uaplex_status status);
    void workerLoop(Worker& worker);
    // Dequeues that return at once without a request, in a row, before a worker backs off,
    // and its sleep between tries then (a request-queue plugin that never waits).
    static constexpr std::uint32_t kFastEmptyDequeues = 16;
    static constexpr int kSpinBackoffMs = 5;
    void noteSpinningQueue(uaplex_status st) noexcept;
    std::atomic<bool> spinLogged_{false};
    void execute(PendingRequest& request, Worker& worker, host::PluginInstance* queue) noexcept;
    // The one TimeoutHint sweep for all requests (docs/pipeline.md): every 20 ms while any
    // registered request has a deadline, asleep otherwise.
    void deadlineLoop();
    void scheduleSweep(std::int64_t dueMs) noexcept {
        if (sweep_.schedule) sweep_.schedule(sweep_.user, dueMs);
    }

    const config::ServerConfig& cfg_;
    host::Host& host_;
    session::SessionManager& sessions_;
    session::DeadlineMonitor& deadlines_;
    const Dispatch dispatch_;
    const enc::DecodeLimits limits_;
    const ChannelSecurity security_;
    const SweepHook sweep_;
    std::unique_ptr<KernelBufferPool> pool_;          // the fallback when no buffer_pool plugin
    std::unique_ptr<CheckedBufferPool> checkedPool_;  // a buffer_pool plugin, checked
    const uaplex_buffer_pool_ops* poolOps_ = nullptr;
    void* poolSelf_ = nullptr;
    void* poolManager_ = nullptr;  // uasc-chunks
    // With a buffer_pool plugin: request bodies and response encodings are rented from its
    // `uasc-messages` manager (MaxBufferSize = the chunk buffer size) through this
    // allocator; larger messages use the heap.
    std::unique_ptr<PoolBufferAllocator> messageAllocator_;
    std::uint32_t poolBufferSize_ = 0;  // the largest buffer poolManager_ lends
    RequestPool requestPool_;           // released PendingRequests, for any connection
    // The [slots] admission provider, or null: then requests carry no owner.
    const uaplex_admission_ops* admission_ = nullptr;
    void* admissionSelf_ = nullptr;
    std::unique_ptr<JsonDecodePool> jsonPool_;                 // from start() to stopAccepting()
    std::vector<std::unique_ptr<TransportBinding>> bindings_;  // outlive the transports
    std::vector<std::shared_ptr<host::PluginInstance>> transports_;
    std::vector<std::unique_ptr<Worker>> workers_;
    QueueWaitHistogram queueWaits_;
    std::vector<std::thread> threads_;
    std::thread deadlineSweeper_;
    std::vector<std::uint32_t> boundChannels_;          // housekeeping thread only
    std::int64_t recordsTrimmedMs_ = 0;                 // housekeeping thread only
    static constexpr std::int64_t kRecordTrimMs = 250;  // a burst's records go this soon after
    // Bytes charged for unfinished messages when no admission provider is loaded
    // (max_reassembly_bytes); with one, its ReassemblyBytes stage holds them.
    std::atomic<std::int64_t> reassemblyUsed_{0};
    std::atomic<bool> running_{false};
    bool started_ = false;  // from start() to clear()
    std::atomic<std::uint32_t> nextChannelId_{1};
    std::atomic<std::uint32_t> nextRequestId_{1};
    // Every live connection (accept/close, the deadline sweep and housekeeping only; never
    // on the request path).
    mutable std::mutex connectionsMutex_;
    std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
    std::uint64_t connectionsClosed_ = 0;  // under connectionsMutex_
};

}  // namespace uaplex::pipeline
