// queues/fifo: the bounded first-in first-out request queue (the shared FIFO of the
// pipeline spec). One lock per queue; entries are linked through their queue_private words,
// so queueing never allocates.
#include <condition_variable>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "uaplex/cpp/kinds.hpp"

namespace {

using uaplex::sdk::Context;

class FifoQueue final : public uaplex::sdk::RequestQueue {
  public:
    FifoQueue(Context ctx, const uaplex_request_queue_params& params)
        : RequestQueue(ctx, params), capacity_(params.max_queued) {
        ctx.check_known_keys({"max_queued"});
        if (auto v = ctx.config_int("max_queued")) {
            if (*v <= 0 || *v > std::numeric_limits<uint32_t>::max())
                throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                               "max_queued must be between 1 and 4294967295");
            capacity_ = static_cast<uint32_t>(*v);
        }
        if (capacity_ == 0)
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError, "capacity is 0");
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
        std::vector<uaplex_request_entry*> halted;
        {
            std::lock_guard lock(mutex_);
            stopped_ = true;
            while (uaplex_request_entry* e = pop_locked()) halted.push_back(e);
        }
        ready_.notify_all();
        // Completion outside the lock: the pipeline may call back into the queue.
        for (auto* e : halted) complete(e, UAPLEX_BadServerHalted);
        if (!halted.empty())
            ctx_.info("stopped; " + std::to_string(halted.size()) +
                      " queued request(s) completed with BadServerHalted");
        return UAPLEX_Good;
    }

    uaplex_status enqueue(uaplex_request_entry* e) override {
        if (!e) return UAPLEX_BadInvalidArgument;
        if (e->cancel && e->cancel->is_cancelled) {
            uaplex_status c = e->cancel->is_cancelled(e->cancel->self);
            if (c != UAPLEX_Good) return UAPLEX_BadRequestCancelledByClient;
        }
        {
            std::lock_guard lock(mutex_);
            if (stopped_) return UAPLEX_BadServerHalted;
            if (count_ >= capacity_) {
                metric_add(rejected_, 1);
                return UAPLEX_BadServerTooBusy;
            }
            push_locked(e);
        }
        ready_.notify_one();
        metric_add(enqueued_, 1);
        return UAPLEX_Good;
    }

    uaplex_status try_dequeue(uaplex_request_entry** out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        std::lock_guard lock(mutex_);
        return take_locked(out);
    }

    uaplex_status dequeue(uint32_t timeout_ms, uaplex_request_entry** out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        std::unique_lock lock(mutex_);
        auto ready = [&] { return stopped_ || head_ != nullptr; };
        if (timeout_ms == std::numeric_limits<uint32_t>::max()) {
            ready_.wait(lock, ready);
        } else if (!ready_.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
            return UAPLEX_BadTimeout;
        }
        return take_locked(out);
    }

    uaplex_status cancel(uaplex_request_entry* e, uaplex_status status) override {
        if (!e) return UAPLEX_BadInvalidArgument;
        {
            std::lock_guard lock(mutex_);
            if (e->queue_private[kOwner] != this) return UAPLEX_BadNotFound;
            unlink_locked(e);
        }
        complete(e, status);
        return UAPLEX_Good;
    }

    uaplex_status count(uint64_t* out) override {
        if (!out) return UAPLEX_BadInvalidArgument;
        std::lock_guard lock(mutex_);
        *out = count_;
        return UAPLEX_Good;
    }

  private:
    // queue_private words: previous, next, and the queue that holds the entry (for cancel).
    enum { kPrev = 0, kNext = 1, kOwner = 2 };
    static uaplex_request_entry* link(uaplex_request_entry* e, int which) {
        return static_cast<uaplex_request_entry*>(e->queue_private[which]);
    }

    void push_locked(uaplex_request_entry* e) {
        e->queue_private[kPrev] = tail_;
        e->queue_private[kNext] = nullptr;
        e->queue_private[kOwner] = this;
        if (tail_) {
            tail_->queue_private[kNext] = e;
        } else {
            head_ = e;
        }
        tail_ = e;
        ++count_;
        gauge_set(depth_, count_);
    }

    void unlink_locked(uaplex_request_entry* e) {
        auto* prev = link(e, kPrev);
        auto* next = link(e, kNext);
        if (prev) {
            prev->queue_private[kNext] = next;
        } else {
            head_ = next;
        }
        if (next) {
            next->queue_private[kPrev] = prev;
        } else {
            tail_ = prev;
        }
        e->queue_private[kPrev] = e->queue_private[kNext] = e->queue_private[kOwner] = nullptr;
        --count_;
        gauge_set(depth_, count_);
    }

    uaplex_request_entry* pop_locked() {
        uaplex_request_entry* e = head_;
        if (e) unlink_locked(e);
        return e;
    }

    uaplex_status take_locked(uaplex_request_entry** out) {
        if (uaplex_request_entry* e = pop_locked()) {
            *out = e;
            return UAPLEX_Good;
        }
        *out = nullptr;
        return stopped_ ? UAPLEX_BadServerHalted : UAPLEX_BadNothingToDo;
    }

    void metric_add(uaplex_metric* m, int64_t d) {
        if (m) ctx_.api()->metric_add(ctx_.raw(), m, d);
    }
    void gauge_set(uaplex_metric* m, int64_t v) {
        if (m) ctx_.api()->metric_set(ctx_.raw(), m, v);
    }

    std::mutex mutex_;
    std::condition_variable ready_;
    uaplex_request_entry* head_ = nullptr;
    uaplex_request_entry* tail_ = nullptr;
    uint64_t count_ = 0;
    uint32_t capacity_;
    bool stopped_ = false;
    uaplex_metric* enqueued_ = nullptr;
    uaplex_metric* rejected_ = nullptr;
    uaplex_metric* depth_ = nullptr;
};

}  // namespace

// The hot-swap test builds a second copy with another version, to reload a rebuilt library.
#ifndef UAPLEX_FIFO_VERSION
#define UAPLEX_FIFO_VERSION "1.0.0"
#endif

UAPLEX_PLUGIN(("fifo", UAPLEX_FIFO_VERSION, "Bounded FIFO request queue"),
              uaplex::sdk::RequestQueueFactory<FifoQueue>)
