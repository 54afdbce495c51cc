// SPDX-License-Identifier: Apache-2.0
// request-queue/fifo: the bounded first-in first-out request queue (docs/pipeline.md, Request
// queue), without a lock. Entries travel through the SDK's bounded multi-producer
// multi-consumer ring (uaplex/cpp/mpmc_ring.hpp); each entry's queue_private words carry
// its state, so a cancel or stop and a dequeue decide by one CAS who completes it.
#include <atomic>
#include <bit>
#include <chrono>
#include <climits>
#include <limits>
#include <memory>
#include <new>
#include <semaphore>
#include <string>
#include <thread>

#include "uaplex/cpp/kinds.hpp"
#include "uaplex/cpp/mpmc_ring.hpp"

namespace {

using uaplex::sdk::Context;

class FifoQueue final : public uaplex::sdk::RequestQueue {
  public:
    FifoQueue(Context ctx, const uaplex_request_queue_params& params)
        : RequestQueue(ctx, params),
          capacity_(checkedCapacity(ctx, params.max_queued)),
          // Twice the capacity: cells of cancelled entries stay until a consumer passes them,
          // so that many cancels between two dequeues do not refuse live requests early.
          ring_(std::bit_ceil(uint64_t{capacity_} * 2)) {
        auto api = ctx.api();
        api->metric_register(ctx.raw(), uaplex::sdk::to_str("enqueued"), UAPLEX_METRIC_COUNTER,
                             &enqueued_);
        api->metric_register(ctx.raw(), uaplex::sdk::to_str("rejected"), UAPLEX_METRIC_COUNTER,
                             &rejected_);
        api->metric_register(ctx.raw(), uaplex::sdk::to_str("depth"), UAPLEX_METRIC_GAUGE, &depth_);
    }

    uaplex_status start() override {
        ctx_.info("bounded FIFO, max_queued " + std::to_string(capacity_));
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        stopped_.store(true, std::memory_order_seq_cst);
        uint64_t halted = 0;
        // Every entry still in the ring is claimed here or by a racing consumer/canceller;
        // the CAS on its state decides, so each is completed exactly once. A producer between
        // its place and its publish holds the ring up for a few instructions: wait for it
        // (it sees the stop afterwards and takes its own entry back).
        for (;;) {
            if (Claimed c = pop()) {
                if (c.entry) {
                    complete(c.entry, UAPLEX_BadServerHalted);
                    ++halted;
                }
                continue;
            }
            if (ring_.empty()) break;
            std::this_thread::yield();
        }
        wake_.release(kWakeAll);  // every waiting dequeue returns BadServerHalted
        if (halted)
            ctx_.info("stopped; " + std::to_string(halted) +
                      " queued request(s) completed with BadServerHalted");
        return UAPLEX_Good;
    }

    uaplex_status enqueue(uaplex_request_entry* e) override {
        if (!e) return UAPLEX_BadInvalidArgument;
        if (e->cancel && e->cancel->is_cancelled) {
            uaplex_status c = e->cancel->is_cancelled(e->cancel->self);
            if (c != UAPLEX_Good) return UAPLEX_BadRequestCancelledByClient;
        }
        if (stopped_.load(std::memory_order_acquire)) return UAPLEX_BadServerHalted;
        // A place is claimed below the bound before the entry enters the ring.
        uint64_t n = count_.load(std::memory_order_relaxed);
        do {
            if (n >= capacity_) {
                metric_add(rejected_, 1);
                return UAPLEX_BadServerTooBusy;
            }
        } while (!count_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel));
        if (!push(e)) {  // the ring is full of cancelled cells no consumer has passed yet
            count_.fetch_sub(1, std::memory_order_acq_rel);
            metric_add(rejected_, 1);
            return UAPLEX_BadServerTooBusy;
        }
        // A stop that ran between the check above and the push may have drained the ring
        // already: take the entry back (the caller completes it) unless stop claimed it.
        if (stopped_.load(std::memory_order_seq_cst)) {
            if (claim(e, kCancelled)) return UAPLEX_BadServerHalted;
            return UAPLEX_Good;  // stop completed it
        }
        gauge_set(depth_, int64_t(count_.load(std::memory_order_relaxed)));
        metric_add(enqueued_, 1);
        wake_.release();
        return UAPLEX_Good;
    }

    uaplex_status try_dequeue(uaplex_request_entry** out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        (void)wake_.try_acquire();  // keeps the wake count near the queued count
        return take(out);
    }

    uaplex_status dequeue(uint32_t timeout_ms, uaplex_request_entry** out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        const bool forever = timeout_ms == std::numeric_limits<uint32_t>::max();
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(forever ? 0 : timeout_ms);
        const uint32_t woken = wake_calls_.load();
        for (;;) {
            uaplex_status st = take(out);
            if (st != UAPLEX_BadNothingToDo) return st;
            // Counted before the check: wake_waiters either is seen here or sees this waiter.
            waiters_.fetch_add(1);
            if (wake_calls_.load() != woken) {
                waiters_.fetch_sub(1);
                return UAPLEX_BadTimeout;
            }
            // A wake may be left over from a cancelled entry: try again until the deadline.
            bool timedOut = false;
            if (forever) {
                wake_.acquire();
            } else {
                timedOut = !wake_.try_acquire_until(deadline);
            }
            waiters_.fetch_sub(1);
            if (timedOut) {
                st = take(out);
                return st == UAPLEX_BadNothingToDo ? UAPLEX_BadTimeout : st;
            }
        }
    }

    // The host retires this queue: every waiting dequeue returns (BadTimeout).
    uaplex_status wake_waiters() override {
        wake_calls_.fetch_add(1);
        if (int32_t n = waiters_.load(); n > 0) wake_.release(n);
        return UAPLEX_Good;
    }

    uaplex_status cancel(uaplex_request_entry* e, uaplex_status status) override {
        if (!e) return UAPLEX_BadInvalidArgument;
        if (!claim(e, kCancelled)) return UAPLEX_BadNotFound;
        gauge_set(depth_, int64_t(count_.load(std::memory_order_relaxed)));
        complete(e, status);
        return UAPLEX_Good;
    }

    uaplex_status count(uint64_t* out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        *out = count_.load(std::memory_order_acquire);
        return UAPLEX_Good;
    }

  private:
    // The configured bound (max_queued), validated.
    static uint32_t checkedCapacity(Context& ctx, uint32_t capacity) {
        ctx.check_known_keys({"max_queued"});
        if (auto v = ctx.config_int("max_queued")) {
            if (*v <= 0 || *v > kMaxCapacity)
                throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                               "max_queued must be between 1 and 1048576");
            capacity = static_cast<uint32_t>(*v);
        }
        if (capacity == 0)
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError, "capacity is 0");
        return std::min<uint32_t>(capacity, kMaxCapacity);
    }

    static constexpr int64_t kMaxCapacity = 1 << 20;  // the ring takes 128 bytes per place
    static constexpr std::ptrdiff_t kWakeAll = 1 << 16;

    // An entry's state word (queue_private[0]): the ring position it was queued at, shifted
    // left by 2, plus kQueued; the winner of the CAS away from kQueued owns the entry. The
    // position keeps a stale ring cell from claiming the entry after it was queued again.
    enum : uint64_t { kIdle = 0, kQueued = 1, kTaken = 2, kCancelled = 3 };
    static std::atomic<uint64_t>& state(uaplex_request_entry* e) {
        static_assert(sizeof(std::atomic<uint64_t>) == sizeof(void*));
        return *std::launder(reinterpret_cast<std::atomic<uint64_t>*>(&e->queue_private[0]));
    }
    // queue_private[1]: the queue the entry was queued in (cancel of another queue's entry).

    struct Claimed {
        bool popped = false;
        uaplex_request_entry* entry = nullptr;  // null: the cell's entry was cancelled
        explicit operator bool() const { return popped; }
    };

    // A producer records its ticket in the entry's state before the entry is visible.
    // stop() relies on the ring's seq_cst place and empty(): either it sees this place
    // taken, or this producer sees the stop.
    bool push(uaplex_request_entry* e) {
        return ring_.push(e, [&](uint64_t ticket) {
            e->queue_private[1] = this;
            state(e).store((ticket << 2) | kQueued, std::memory_order_release);
        });
    }

    // Pops the oldest entry and claims it; an entry cancelled meanwhile leaves an empty
    // claim (its canceller completed it).
    Claimed pop() {
        uint64_t ticket = 0;
        uaplex_request_entry* e = ring_.pop(&ticket);
        if (!e) return {};
        Claimed r;
        r.popped = true;
        uint64_t expected = (ticket << 2) | kQueued;
        if (state(e).compare_exchange_strong(expected, (ticket << 2) | kTaken,
                                             std::memory_order_acq_rel)) {
            count_.fetch_sub(1, std::memory_order_acq_rel);
            r.entry = e;
        }
        return r;
    }

    // Takes a queued entry out of the queue (cancel; enqueue racing stop). Its ring cell
    // stays and is skipped by the consumer that reaches it.
    bool claim(uaplex_request_entry* e, uint64_t to) {
        if (e->queue_private[1] != this) return false;
        uint64_t s = state(e).load(std::memory_order_acquire);
        while ((s & 3) == kQueued) {
            if (state(e).compare_exchange_weak(s, (s & ~uint64_t{3}) | to,
                                               std::memory_order_acq_rel)) {
                count_.fetch_sub(1, std::memory_order_acq_rel);
                return true;
            }
        }
        return false;
    }

    uaplex_status take(uaplex_request_entry** out) {
        while (Claimed c = pop()) {
            if (!c.entry) continue;
            if (stopped_.load(std::memory_order_acquire)) {
                complete(c.entry, UAPLEX_BadServerHalted);  // left behind by a racing stop
                continue;
            }
            gauge_set(depth_, int64_t(count_.load(std::memory_order_relaxed)));
            *out = c.entry;
            return UAPLEX_Good;
        }
        *out = nullptr;
        return stopped_.load(std::memory_order_acquire) ? UAPLEX_BadServerHalted
                                                        : UAPLEX_BadNothingToDo;
    }

    void metric_add(uaplex_metric* m, int64_t d) {
        if (m) ctx_.api()->metric_add(ctx_.raw(), m, d);
    }
    void gauge_set(uaplex_metric* m, int64_t v) {
        if (m) ctx_.api()->metric_set(ctx_.raw(), m, v);
    }

    uint32_t capacity_;
    // A cache line per cell: producers and consumers work on neighbouring cells.
    uaplex::sdk::MpmcRing<uaplex_request_entry*, 64> ring_;
    alignas(64) std::atomic<uint64_t> count_{0};
    std::atomic<bool> stopped_{false};
    // Wakes waiting workers; a futex-backed counter, not a lock. It may run ahead of the
    // queued count (cancelled entries), which costs a consumer one more look at the ring.
    std::counting_semaphore<INT_MAX> wake_{0};
    std::atomic<uint32_t> wake_calls_{0};  // wake_waiters calls: a dequeue that saw one returns
    std::atomic<int32_t> waiters_{0};      // dequeues waiting on wake_
    uaplex_metric* enqueued_ = nullptr;
    uaplex_metric* rejected_ = nullptr;
    uaplex_metric* depth_ = nullptr;
};

}  // namespace

// The hot-swap test builds a second copy with another version, to reload a rebuilt library.
#ifndef UAPLEX_FIFO_VERSION
#define UAPLEX_FIFO_VERSION "1.0.0"
#endif

UAPLEX_PLUGIN(("fifo", UAPLEX_FIFO_VERSION, "Bounded lock-free FIFO request queue"),
              uaplex::sdk::RequestQueueFactory<FifoQueue>)
