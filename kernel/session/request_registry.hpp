// The in-flight requests of one session (queued or executing), for Cancel (Part 4 5.6.5) and
// for the session-close sweep. Each request embeds its TrackedRequest, so registering never
// allocates; the list is guarded by the session's own mutex (no server-wide lock).
//
// The pipeline's RequestManager builds on this: deadlines and lifetimes go into
// TrackedRequest, the sweeps into RequestRegistry.
#pragma once

#include <uaplex/abi.h>
#include <uaplex/statuscodes.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>

namespace uaplex::session {

struct TrackedRequest {
    enum class State : std::uint8_t { Idle, Queued, Executing };

    void* owner = nullptr;            // the request that embeds this, for the canceller
    std::uint32_t requestHandle = 0;  // RequestHeader.requestHandle
    State state = State::Idle;        // Idle: not registered
    // The first cancellation's status, Good until then. An executing request keeps running
    // (services are short); a long one may poll this.
    std::atomic<uaplex_status> cancelStatus{UAPLEX_Good};

  private:
    friend class RequestRegistry;
    TrackedRequest* prev_ = nullptr;
    TrackedRequest* next_ = nullptr;
};

// Takes a queued request out of the request queue and completes it with `status`; true when
// it did, false when a worker dequeued it first. Called with the registry's lock held; the
// completion it runs may call remove() on the same registry from the same thread.
struct QueuedCanceller {
    bool (*unlink)(void* user, TrackedRequest& request, uaplex_status status) = nullptr;
    void* user = nullptr;
};

class RequestRegistry {
  public:
    RequestRegistry() = default;
    RequestRegistry(const RequestRegistry&) = delete;
    RequestRegistry& operator=(const RequestRegistry&) = delete;

    // Registers `r` as queued (before it is handed to the request queue).
    void add(TrackedRequest& r, std::uint32_t requestHandle) noexcept;
    // A worker dequeued `r`.
    void executing(TrackedRequest& r) noexcept;
    // `r` is complete; idempotent. Must run before `r` can be reused.
    void remove(TrackedRequest& r) noexcept;

    // Cancel: every request with `requestHandle` is marked with `status`; queued ones are
    // unlinked through `canceller` and completed. Returns how many were cancelled, i.e.
    // unlinked (an executing request still completes normally and does not count).
    std::uint32_t cancel(std::uint32_t requestHandle, uaplex_status status,
                         const QueuedCanceller& canceller) noexcept;
    // The same for every request of the session (CloseSession, timeout: BadSessionClosed).
    std::uint32_t cancelAll(uaplex_status status, const QueuedCanceller& canceller) noexcept;

    std::size_t size() const noexcept;

  private:
    template <class Match>
    std::uint32_t cancelMatching(Match match, uaplex_status status,
                                 const QueuedCanceller& canceller) noexcept;
    void unlinkLocked(TrackedRequest& r) noexcept;

    mutable std::mutex mutex_;
    TrackedRequest* first_ = nullptr;
    std::size_t size_ = 0;
};

}  // namespace uaplex::session
