// SPDX-License-Identifier: Apache-2.0
#include <uaplex/session/request_registry.hpp>

namespace uaplex::session {

namespace {
// The registry whose lock this thread holds while it cancels: a completion triggered by the
// cancel comes back through remove() on the same thread and must not lock again.
thread_local const RequestRegistry* tCancelling = nullptr;
}  // namespace

void DeadlineMonitor::added() noexcept {
    if (active_.fetch_add(1, std::memory_order_acq_rel) == 0) active_.notify_all();
}

void DeadlineMonitor::removed() noexcept {
    active_.fetch_sub(1, std::memory_order_acq_rel);
}

bool DeadlineMonitor::waitForDeadlines() noexcept {
    for (;;) {
        std::int64_t n = active_.load(std::memory_order_acquire);
        if (n >= kStopped / 2) return false;
        if (n > 0) return true;
        active_.wait(n, std::memory_order_acquire);
    }
}

void DeadlineMonitor::stop() noexcept {
    active_.fetch_add(kStopped, std::memory_order_acq_rel);
    active_.notify_all();
}

void RequestRegistry::add(TrackedRequest& r, std::uint32_t requestHandle,
                          std::int64_t deadlineMs) noexcept {
    std::lock_guard lock(mutex_);
    if (r.state != TrackedRequest::State::Idle) return;  // registered already: a no-op
    r.requestHandle = requestHandle;
    r.deadlineMs = deadlineMs;
    r.seq = nextSeq_++;
    if (deadlineMs != 0 && monitor_) monitor_->added();
    if (deadlineMs != 0 && deadlineMs < earliestDeadline_.load(std::memory_order_relaxed))
        earliestDeadline_.store(deadlineMs, std::memory_order_release);
    r.state = TrackedRequest::State::Queued;
    r.cancelStatus.store(UAPLEX_Good, std::memory_order_relaxed);
    r.prev_ = nullptr;
    r.next_ = first_;
    if (first_) first_->prev_ = &r;
    first_ = &r;
    ++size_;
}

void RequestRegistry::executing(TrackedRequest& r) noexcept {
    std::lock_guard lock(mutex_);
    if (r.state == TrackedRequest::State::Queued) r.state = TrackedRequest::State::Executing;
}

bool RequestRegistry::park(TrackedRequest& r) noexcept {
    std::lock_guard lock(mutex_);
    if (r.state != TrackedRequest::State::Executing ||
        r.cancelStatus.load(std::memory_order_relaxed) != UAPLEX_Good)
        return false;
    r.state = TrackedRequest::State::Parked;
    return true;
}

void RequestRegistry::unlinkLocked(TrackedRequest& r) noexcept {
    if (r.state == TrackedRequest::State::Idle) return;
    if (r.prev_)
        r.prev_->next_ = r.next_;
    else
        first_ = r.next_;
    if (r.next_) r.next_->prev_ = r.prev_;
    r.prev_ = r.next_ = nullptr;
    r.state = TrackedRequest::State::Idle;
    if (r.deadlineMs != 0 && monitor_) monitor_->removed();
    r.deadlineMs = 0;
    --size_;
}

void RequestRegistry::remove(TrackedRequest& r) noexcept {
    if (tCancelling == this) {
        unlinkLocked(r);
        return;
    }
    std::lock_guard lock(mutex_);
    unlinkLocked(r);
}

template <class Match>
std::uint32_t RequestRegistry::cancelMatching(Match match, uaplex_status status,
                                              const QueuedCanceller& canceller) noexcept {
    // The lock stays held while queued requests are unlinked: every path that completes a
    // registered request removes it under this lock first, so none can be recycled (and
    // queued again as another request) while it is cancelled here.
    std::lock_guard lock(mutex_);
    const RequestRegistry* outer = tCancelling;
    tCancelling = this;
    std::uint32_t cancelled = 0;
    for (TrackedRequest* r = first_; r;) {
        TrackedRequest* next = r->next_;  // r may be removed by its completion
        if (match(*r)) {
            uaplex_status expected = UAPLEX_Good;
            r->cancelStatus.compare_exchange_strong(expected, status);
            bool waiting = r->state == TrackedRequest::State::Queued ||
                           r->state == TrackedRequest::State::Parked;
            if (waiting && canceller.unlink && canceller.unlink(canceller.user, *r, status))
                ++cancelled;
        }
        r = next;
    }
    tCancelling = outer;
    return cancelled;
}

std::uint32_t RequestRegistry::cancel(std::uint32_t requestHandle, uaplex_status status,
                                      const QueuedCanceller& canceller) noexcept {
    return cancelMatching(
        [requestHandle](const TrackedRequest& r) { return r.requestHandle == requestHandle; },
        status, canceller);
}

std::uint32_t RequestRegistry::cancelAll(uaplex_status status,
                                         const QueuedCanceller& canceller) noexcept {
    return cancelMatching([](const TrackedRequest&) { return true; }, status, canceller);
}

std::uint32_t RequestRegistry::expire(std::int64_t nowMs,
                                      const QueuedCanceller& canceller) noexcept {
    // Nothing due: no lock (the sweep visits every session and connection every 20 ms).
    if (earliestDeadline_.load(std::memory_order_acquire) > nowMs) return 0;
    std::uint32_t n = 0;
    cancelMatching(
        [nowMs, &n](const TrackedRequest& r) {
            bool due = r.deadlineMs != 0 && r.deadlineMs <= nowMs &&
                       r.cancelStatus.load(std::memory_order_relaxed) == UAPLEX_Good;
            n += due;
            return due;
        },
        UAPLEX_BadTimeout, canceller);
    std::lock_guard lock(mutex_);
    std::int64_t earliest = INT64_MAX;
    for (const TrackedRequest* r = first_; r; r = r->next_)
        if (r->deadlineMs != 0 && r->deadlineMs < earliest &&
            r->cancelStatus.load(std::memory_order_relaxed) == UAPLEX_Good)
            earliest = r->deadlineMs;
    earliestDeadline_.store(earliest, std::memory_order_release);
    return n;
}

std::size_t RequestRegistry::size() const noexcept {
    std::lock_guard lock(mutex_);
    return size_;
}

std::uint64_t RequestRegistry::nextSeq() const noexcept {
    std::lock_guard lock(mutex_);
    return nextSeq_;
}

std::size_t RequestRegistry::countBefore(std::uint64_t seqLimit, std::int64_t snapshotMs,
                                         std::int64_t graceMs,
                                         std::int64_t* maxDeadlineMs) const noexcept {
    std::lock_guard lock(mutex_);
    std::size_t n = 0;
    for (const TrackedRequest* r = first_; r; r = r->next_) {
        if (r->seq >= seqLimit) continue;  // registered after the snapshot
        if (r->deadlineMs != 0 && snapshotMs - r->deadlineMs > graceMs) continue;  // stuck
        ++n;
        if (maxDeadlineMs && r->deadlineMs > *maxDeadlineMs) *maxDeadlineMs = r->deadlineMs;
    }
    return n;
}

void RequestDrain::snapshot(const RequestRegistry& registry) {
    std::uint64_t limit = registry.nextSeq();
    registry.countBefore(limit, snapshotMs_, graceMs_, &maxDeadlineMs_);
    entries_.push_back({&registry, limit});
}

std::int64_t RequestDrain::budgetEndMs() const noexcept {
    std::int64_t remaining = maxDeadlineMs_ > snapshotMs_ ? maxDeadlineMs_ - snapshotMs_ : 0;
    return snapshotMs_ + remaining + graceMs_;
}

RequestDrain::Result RequestDrain::poll(std::int64_t nowMs) const noexcept {
    std::size_t pending = 0;
    for (const Entry& e : entries_)
        pending += e.registry->countBefore(e.seqLimit, snapshotMs_, graceMs_, nullptr);
    if (pending == 0) return Result::Done;
    return nowMs >= budgetEndMs() ? Result::Timeout : Result::Pending;
}

}  // namespace uaplex::session
