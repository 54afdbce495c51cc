// SPDX-License-Identifier: Apache-2.0
// The in-flight requests of one session (queued or executing), for Cancel (Part 4 5.6.5) and
// for the session-close sweep. Each request embeds its TrackedRequest, so registering never
// allocates; the list is guarded by the session's own mutex (no server-wide lock).
//
// With DeadlineMonitor this is the pipeline's request registry (docs/pipeline.md, Request
// registry and deadlines): the session's registry serves Cancel and the session-close sweep,
// the monitor the TimeoutHint expiry over every session.
#pragma once

#include <uaplex/abi.h>
#include <uaplex/statuscodes.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace uaplex::session {

struct TrackedRequest {
    // Parked: its worker moved on and an asynchronous operation answers it later
    // (DeferredRequest); Cancel, the deadline sweep and session close answer it at once.
    enum class State : std::uint8_t { Idle, Queued, Executing, Parked };

    void* owner = nullptr;            // the request that embeds this, for the canceller
    std::uint32_t requestHandle = 0;  // RequestHeader.requestHandle
    std::int64_t deadlineMs = 0;      // monotonic; 0: no TimeoutHint
    std::uint64_t seq = 0;            // registration order in its registry (for drains)
    State state = State::Idle;        // Idle: not registered
    // The first cancellation's status, Good until then. An executing request keeps running
    // (services are short); a long one may poll this.
    std::atomic<uaplex_status> cancelStatus{UAPLEX_Good};

  private:
    friend class RequestRegistry;
    TrackedRequest* prev_ = nullptr;
    TrackedRequest* next_ = nullptr;
};

// Takes a queued request out of the request queue (or a parked one out of its wait) and
// completes it with `status`; true when it did, false when a worker dequeued it (or its
// answer came) first. Called with the registry's lock held; the
// completion it runs may call remove() on the same registry from the same thread.
struct QueuedCanceller {
    bool (*unlink)(void* user, TrackedRequest& request, uaplex_status status) = nullptr;
    void* user = nullptr;
};

// Counts the registered requests that carry a deadline, server-wide, and runs the one sweep
// that expires them (Part 4 7.32 TimeoutHint). The sweep thread sleeps on the counter while
// it is 0, so a server without deadlines pays nothing, and a request with one pays an atomic
// increment: no timer per request.
class DeadlineMonitor {
  public:
    static constexpr std::int64_t kPeriodMs = 20;

    // A request with a deadline was registered / unregistered.
    void added() noexcept;
    void removed() noexcept;
    std::int64_t active() const noexcept { return active_.load(std::memory_order_acquire); }
    // Blocks while no deadline is registered; false once stop() was called.
    bool waitForDeadlines() noexcept;
    void stop() noexcept;

  private:
    static constexpr std::int64_t kStopped = std::int64_t(1) << 62;
    std::atomic<std::int64_t> active_{0};
};

class RequestRegistry {
  public:
    RequestRegistry() = default;
    RequestRegistry(const RequestRegistry&) = delete;
    RequestRegistry& operator=(const RequestRegistry&) = delete;

    // Registers `r` as queued (before it is handed to the request queue); registering a
    // registered request again changes nothing.
    // `deadlineMs` (monotonic, 0 for none) is expired by expire().
    void add(TrackedRequest& r, std::uint32_t requestHandle, std::int64_t deadlineMs = 0) noexcept;
    // A worker dequeued `r`.
    void executing(TrackedRequest& r) noexcept;
    // The executing `r` waits for an asynchronous answer: from now on Cancel, the deadline
    // sweep and session close answer it through the canceller, as a queued one. False (and
    // no change) when it was cancelled or expired already.
    bool park(TrackedRequest& r) noexcept;
    // `r` is complete; idempotent. Must run before `r` can be reused.
    void remove(TrackedRequest& r) noexcept;

    // Cancel: every request with `requestHandle` is marked with `status`; queued ones are
    // unlinked through `canceller` and completed. Returns how many were cancelled, i.e.
    // unlinked (an executing request still completes normally and does not count).
    std::uint32_t cancel(std::uint32_t requestHandle, uaplex_status status,
                         const QueuedCanceller& canceller) noexcept;
    // The same for every request of the session (CloseSession, timeout: BadSessionClosed).
    std::uint32_t cancelAll(uaplex_status status, const QueuedCanceller& canceller) noexcept;

    // TimeoutHint expiry: every request whose deadline is <= nowMs is marked BadTimeout; a
    // queued one is unlinked and completed through `canceller`, an executing one answers
    // BadTimeout when its service returns. Returns how many were marked.
    std::uint32_t expire(std::int64_t nowMs, const QueuedCanceller& canceller) noexcept;

    // Where requests with a deadline are counted (set before the first add; may be null).
    void setDeadlineMonitor(DeadlineMonitor* m) noexcept { monitor_ = m; }

    std::size_t size() const noexcept;

    // For RequestDrain: the sequence number the next registered request gets, and how many
    // registered requests came before `seqLimit`, leaving out those whose deadline lies more
    // than `graceMs` before `snapshotMs`. `maxDeadlineMs` is raised to the latest deadline
    // of the counted ones.
    std::uint64_t nextSeq() const noexcept;
    std::size_t countBefore(std::uint64_t seqLimit, std::int64_t snapshotMs, std::int64_t graceMs,
                            std::int64_t* maxDeadlineMs) const noexcept;

  private:
    template <class Match>
    std::uint32_t cancelMatching(Match match, uaplex_status status,
                                 const QueuedCanceller& canceller) noexcept;
    void unlinkLocked(TrackedRequest& r) noexcept;

    mutable std::mutex mutex_;
    TrackedRequest* first_ = nullptr;
    std::size_t size_ = 0;
    std::uint64_t nextSeq_ = 1;
    // The earliest deadline of a registered request not yet expired (INT64_MAX: none); may
    // be earlier than the truth (removals leave it), never later. Written under mutex_; the
    // deadline sweep reads it without the lock, so a registry with nothing due costs one load.
    std::atomic<std::int64_t> earliestDeadline_{INT64_MAX};
    DeadlineMonitor* monitor_ = nullptr;
};

// The drain (docs/pipeline.md, Request registry and deadlines): snapshots the requests
// registered now, completes when each of them has completed (an empty snapshot at once) and
// ignores later ones; gives Timeout after a budget of the longest remaining deadline +
// `graceMs`. Requests more than
// `graceMs` past their deadline are left out: they are stuck, not finishing. Polled rather
// than signalled so that completing a request pays nothing for drains; the clock is the
// caller's, so tests run it on a fake one. The registries must outlive the drain.
class RequestDrain {
  public:
    enum class Result : std::uint8_t { Pending, Done, Timeout };
    static constexpr std::int64_t kDefaultGraceMs = 2 * 60 * 1000;

    explicit RequestDrain(std::int64_t nowMs, std::int64_t graceMs = kDefaultGraceMs) noexcept
        : snapshotMs_(nowMs), graceMs_(graceMs) {}

    // Adds the requests `registry` holds now to the snapshot.
    void snapshot(const RequestRegistry& registry);
    Result poll(std::int64_t nowMs) const noexcept;
    // The time poll() gives Timeout at, when requests are still pending.
    std::int64_t budgetEndMs() const noexcept;

  private:
    struct Entry {
        const RequestRegistry* registry;
        std::uint64_t seqLimit;
    };
    std::int64_t snapshotMs_;
    std::int64_t graceMs_;
    std::int64_t maxDeadlineMs_ = 0;
    std::vector<Entry> entries_;
};

}  // namespace uaplex::session
