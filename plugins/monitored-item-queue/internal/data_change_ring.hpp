// SPDX-License-Identifier: Apache-2.0
// What both monitored-item queue plugins share: the data-change queue (a fixed ring of
// (value, error) slots sized at reset, so enqueue at a full queue is O(1) and never
// allocates), the C ops tables, and the factory, which differ only in the event queue.
#pragma once

#include <cstdint>
#include <memory>

#include "uaplex/cpp/kinds.hpp"
#include "uaplex/monitored_item_queue.h"
#include "uaplex/types.h"

namespace uaplex::miqueues {

class DataChangeRing {
  public:
    explicit DataChangeRing(const uaplex_mi_queue_params& p) : params_(p) {}
    ~DataChangeRing() { clear(); }

    uaplex_status reset(uint32_t size, bool keepErrors) {
        clear();
        slots_.reset(size ? new Slot[size] : nullptr);
        size_ = size;
        keepErrors_ = keepErrors;
        isReset_ = true;
        return UAPLEX_Good;
    }
    uaplex_status enqueue(uaplex_datavalue* v, uaplex_status err) {
        if (!isReset_ || size_ == 0) return UAPLEX_BadInvalidState;
        if (count_ == size_) {  // drop the oldest
            release(slots_[head_].value);
            head_ = (head_ + 1) % size_;
            --count_;
        }
        slots_[(head_ + count_) % size_] = {v, keepErrors_ ? err : UAPLEX_Good};
        ++count_;
        return UAPLEX_Good;
    }
    uaplex_status overwriteNewest(uaplex_datavalue* v, uaplex_status err) {
        if (count_ == 0) return UAPLEX_BadInvalidState;
        Slot& s = slots_[(head_ + count_ - 1) % size_];
        release(s.value);
        s = {v, keepErrors_ ? err : UAPLEX_Good};
        return UAPLEX_Good;
    }
    uaplex_status dequeue(uaplex_datavalue** v, uaplex_status* err) {
        if (count_ == 0) return UAPLEX_BadNothingToDo;
        Slot& s = slots_[head_];
        *v = s.value;
        if (err) *err = s.error;
        s = {};
        head_ = (head_ + 1) % size_;
        --count_;
        return UAPLEX_Good;
    }
    uaplex_status peek(bool newest, uaplex_datavalue** v, uaplex_status* err) const {
        if (count_ == 0) return UAPLEX_BadNothingToDo;
        const Slot& s = slots_[newest ? (head_ + count_ - 1) % size_ : head_];
        *v = s.value;
        if (err) *err = s.error;
        return UAPLEX_Good;
    }
    uint32_t count() const { return count_; }
    uint32_t size() const { return size_; }

  private:
    struct Slot {
        uaplex_datavalue* value = nullptr;
        uaplex_status error = UAPLEX_Good;
    };
    void release(uaplex_datavalue* v) {
        if (v && params_.release_value) params_.release_value(params_.user, v);
    }
    void clear() {
        while (count_) {
            release(slots_[head_].value);
            head_ = (head_ + 1) % size_;
            --count_;
        }
        head_ = 0;
    }

    uaplex_mi_queue_params params_;
    std::unique_ptr<Slot[]> slots_;
    uint32_t size_ = 0, head_ = 0, count_ = 0;
    bool keepErrors_ = false, isReset_ = false;
};

// The C ops table over a queue type Q (static; `self` is a Q*).
template <typename Q>
struct DataChangeOps {
    static Q* q(void* s) { return static_cast<Q*>(s); }
    static constexpr uaplex_data_change_queue_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_data_change_queue_ops, UAPLEX_STYPE_DATA_CHANGE_QUEUE_OPS),
        .destroy = [](void* s) noexcept -> uaplex_status {
            delete q(s);
            return UAPLEX_Good;
        },
        .reset = [](void* s, uint32_t n, int32_t keep) noexcept -> uaplex_status {
            try {
                return q(s)->reset(n, keep != 0);
            } catch (...) {
                return UAPLEX_BadOutOfMemory;
            }
        },
        .enqueue = [](void* s, uaplex_datavalue* v,
                      uaplex_status e) noexcept { return q(s)->enqueue(v, e); },
        .overwrite_newest = [](void* s, uaplex_datavalue* v,
                               uaplex_status e) noexcept { return q(s)->overwriteNewest(v, e); },
        .dequeue = [](void* s, uaplex_datavalue** v,
                      uaplex_status* e) noexcept { return q(s)->dequeue(v, e); },
        .peek_oldest = [](void* s, uaplex_datavalue** v,
                          uaplex_status* e) noexcept { return q(s)->peek(false, v, e); },
        .peek_newest = [](void* s, uaplex_datavalue** v,
                          uaplex_status* e) noexcept { return q(s)->peek(true, v, e); },
        .items_in_queue = [](void* s, uint32_t* n) noexcept -> uaplex_status {
            *n = q(s)->count();
            return UAPLEX_Good;
        },
        .queue_size = [](void* s, uint32_t* n) noexcept -> uaplex_status {
            *n = q(s)->size();
            return UAPLEX_Good;
        },
    };
};

// The C ops table over an event queue type Q.
template <typename Q>
struct EventOps {
    static Q* q(void* s) { return static_cast<Q*>(s); }
    static constexpr uaplex_event_queue_ops ops{
        .hdr = UAPLEX_HEADER_INIT(uaplex_event_queue_ops, UAPLEX_STYPE_EVENT_QUEUE_OPS),
        .destroy = [](void* s) noexcept -> uaplex_status {
            delete q(s);
            return UAPLEX_Good;
        },
        .set_queue_size = [](void* s, uint32_t n, int32_t discardOldest) noexcept -> uaplex_status {
            try {
                return q(s)->setQueueSize(n, discardOldest != 0);
            } catch (...) {
                return UAPLEX_BadOutOfMemory;
            }
        },
        .contains_event = [](void* s, uint64_t h, int32_t* found) noexcept -> uaplex_status {
            *found = q(s)->containsEvent(h) ? 1 : 0;
            return UAPLEX_Good;
        },
        .enqueue = [](void* s, uaplex_event_entry* e) noexcept -> uaplex_status {
            try {
                return q(s)->enqueue(e);
            } catch (...) {
                return UAPLEX_BadOutOfMemory;
            }
        },
        .dequeue = [](void* s, uaplex_event_entry** e) noexcept { return q(s)->dequeue(e); },
        .items_in_queue = [](void* s, uint32_t* n) noexcept -> uaplex_status {
            *n = q(s)->count();
            return UAPLEX_Good;
        },
    };
};

// Entries compared by the duplicate check (docs/pipeline.md, Monitored-item queues).
inline constexpr uint32_t kDuplicateWindow = 1000;

// A factory serving the shared data-change ring and the plugin's own event queue EventQueue
// (constructed from the queue params). Durable queues are not served.
template <typename EventQueue>
class QueueFactory final : public uaplex::sdk::MonitoredItemQueueFactory {
  public:
    QueueFactory(uaplex::sdk::Context ctx, const uaplex_mi_queue_params& p)
        : MonitoredItemQueueFactory(ctx, p) {
        ctx.check_known_keys({});
    }
    uaplex_status supports_durable(int32_t* out) override {
        *out = 0;
        return UAPLEX_Good;
    }
    uaplex_status create_data_change_queue(int32_t durable, uint32_t, void** out,
                                           const uaplex_data_change_queue_ops** ops) override {
        if (durable) return UAPLEX_BadInvalidArgument;
        *out = new DataChangeRing(params_);
        *ops = &DataChangeOps<DataChangeRing>::ops;
        return UAPLEX_Good;
    }
    uaplex_status create_event_queue(int32_t durable, uint32_t, void** out,
                                     const uaplex_event_queue_ops** ops) override {
        if (durable) return UAPLEX_BadInvalidArgument;
        *out = new EventQueue(params_);
        *ops = &EventOps<EventQueue>::ops;
        return UAPLEX_Good;
    }
};

}  // namespace uaplex::miqueues
