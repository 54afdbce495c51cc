// queues/mi-ring: the ring-buffer event queue (O(1) enqueue at a full queue: nothing shifts)
// with parity to the default's FIFO, except that the duplicate check scans the NEWEST 1000
// entries (the interface's documented window). Data changes use the shared ring.
#include <memory>

#include "data_change_ring.hpp"
#include "uaplex/cpp/kinds.hpp"

namespace {

using namespace uaplex::miqueues;

class EventRing {
  public:
    explicit EventRing(const uaplex_mi_queue_params& p) : params_(p) {}
    ~EventRing() {
        while (count_) release(pop());
    }
    // Reallocates: resizing is rare and may be slow (spec section 5 contract).
    uaplex_status setQueueSize(uint32_t n, bool discardOldest) {
        std::unique_ptr<uaplex_event_entry*[]> next(n ? new uaplex_event_entry*[n] : nullptr);
        uint32_t keep = count_ < n ? count_ : n;
        if (discardOldest)
            while (count_ > keep) release(pop());
        uint32_t i = 0;
        for (; i < keep; ++i) next[i] = pop();
        while (count_) release(pop());  // discardOldest=false: the newest go
        slots_ = std::move(next);
        cap_ = n;
        head_ = 0;
        count_ = keep;
        return UAPLEX_Good;
    }
    bool containsEvent(uint64_t handle) const {
        uint32_t n = count_ < kDuplicateWindow ? count_ : kDuplicateWindow;
        for (uint32_t i = 0; i < n; ++i)
            if (at(count_ - 1 - i)->source_handle == handle) return true;
        return false;
    }
    uaplex_status enqueue(uaplex_event_entry* e) {
        if (cap_ == 0) return UAPLEX_BadInternalError;
        if (count_ == cap_) release(pop());
        slots_[(head_ + count_) % cap_] = e;
        ++count_;
        return UAPLEX_Good;
    }
    uaplex_status dequeue(uaplex_event_entry** out) {
        if (count_ == 0) return UAPLEX_BadNothingToDo;
        *out = pop();
        return UAPLEX_Good;
    }
    uint32_t count() const { return count_; }

  private:
    uaplex_event_entry* at(uint32_t i) const { return slots_[(head_ + i) % cap_]; }
    uaplex_event_entry* pop() {
        uaplex_event_entry* e = slots_[head_];
        head_ = (head_ + 1) % cap_;
        --count_;
        return e;
    }
    void release(uaplex_event_entry* e) {
        if (params_.release_event) params_.release_event(params_.user, e);
    }
    uaplex_mi_queue_params params_;
    std::unique_ptr<uaplex_event_entry*[]> slots_;
    uint32_t cap_ = 0, head_ = 0, count_ = 0;
};

}  // namespace

UAPLEX_PLUGIN(("mi-ring", "1.0.0", "Ring-buffer event queue"),
              uaplex::sdk::MonitoredItemQueueFactoryOf<QueueFactory<EventRing>>)
