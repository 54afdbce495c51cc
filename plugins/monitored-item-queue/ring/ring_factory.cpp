// SPDX-License-Identifier: Apache-2.0
// monitored-item-queue/ring (plugin mi-ring): the ring-buffer event queue (O(1) enqueue at a
// full queue: nothing shifts) with parity to the default's FIFO, except that the duplicate
// check scans the NEWEST 1000 entries (the interface's documented window). The handles in
// that window are counted in a small open-addressing table, so the duplicate check is O(1)
// too instead of a 1000-entry scan per delivered event. Data changes use the shared ring.
#include <memory>

#include "data_change_ring.hpp"
#include "uaplex/cpp/kinds.hpp"

namespace {

using namespace uaplex::miqueues;

// A multiset of source handles (linear probing, backward-shift deletion), kept at most half
// full. It grows with the distinct handles in the window (at most 1000, so at most 2048 slots;
// an item with a large, mostly empty queue does not pay 32 KB up front) and never shrinks.
class HandleCounts {
  public:
    // Room for `n` distinct handles; may allocate (call before changing anything else).
    void reserve(uint32_t n) {
        uint32_t size = slots_ ? mask_ + 1 : 0;
        if (2 * n <= size) return;
        uint32_t next = size ? size : 8;
        while (next < 2 * n) next <<= 1;
        std::unique_ptr<Slot[]> old = std::move(slots_);
        slots_ = std::make_unique<Slot[]>(next);
        mask_ = next - 1;
        for (uint32_t i = 0; i < size; ++i)
            if (old[i].count) *find(old[i].handle) = old[i];
    }
    void reserveOne() { reserve(distinct_ + 1); }
    void add(uint64_t h) {
        Slot* s = find(h);
        if (s->count++ == 0) ++distinct_;
        s->handle = h;
    }
    void remove(uint64_t h) {
        if (!slots_) return;
        Slot* s = find(h);
        if (s->count == 0 || --s->count) return;
        --distinct_;
        // Backward-shift: move later entries of the probe run into the hole.
        uint32_t hole = uint32_t(s - slots_.get());
        for (uint32_t i = (hole + 1) & mask_; slots_[i].count; i = (i + 1) & mask_) {
            uint32_t home = bucket(slots_[i].handle);
            if (((i - home) & mask_) >= ((i - hole) & mask_)) {
                slots_[hole] = slots_[i];
                slots_[i] = {};
                hole = i;
            }
        }
    }
    bool contains(uint64_t h) const { return slots_ && find(h)->count != 0; }

  private:
    struct Slot {
        uint64_t handle = 0;
        uint32_t count = 0;  // 0: empty
    };
    uint32_t bucket(uint64_t h) const {
        return uint32_t((h * 0x9E3779B97F4A7C15ull) >> 32) & mask_;
    }
    Slot* find(uint64_t h) const {
        uint32_t i = bucket(h);
        while (slots_[i].count && slots_[i].handle != h) i = (i + 1) & mask_;
        return &slots_[i];
    }
    std::unique_ptr<Slot[]> slots_;
    uint32_t mask_ = 0, distinct_ = 0;
};

class EventRing {
  public:
    explicit EventRing(const uaplex_mi_queue_params& p) : params_(p) {}
    ~EventRing() {
        while (count_) release(pop());
    }
    // Reallocates: resizing is rare and may be slow (the queue contract allows it).
    uaplex_status setQueueSize(uint32_t n, bool discardOldest) {
        std::unique_ptr<uaplex_event_entry*[]> next(n ? new uaplex_event_entry*[n] : nullptr);
        HandleCounts index;
        uint32_t window = n < kDuplicateWindow ? n : kDuplicateWindow;
        uint32_t keep = count_ < n ? count_ : n;
        index.reserve(keep < window ? keep : window);  // every allocation before the first pop
        if (discardOldest)
            while (count_ > keep) release(pop());
        uint32_t i = 0;
        for (; i < keep; ++i) next[i] = pop();
        while (count_) release(pop());  // discardOldest=false: the newest go
        for (i = keep > window ? keep - window : 0; i < keep; ++i)
            index.add(next[i]->source_handle);
        slots_ = std::move(next);
        index_ = std::move(index);
        cap_ = n;
        window_ = window;
        head_ = 0;
        count_ = keep;
        return UAPLEX_Good;
    }
    bool containsEvent(uint64_t handle) const { return index_.contains(handle); }
    uaplex_status enqueue(uaplex_event_entry* e) {
        if (cap_ == 0) return UAPLEX_BadInternalError;
        index_.reserveOne();  // before anything changes: it may throw (BadOutOfMemory)
        if (count_ == cap_) release(pop());
        slots_[(head_ + count_) % cap_] = e;
        ++count_;
        index_.add(e->source_handle);
        if (count_ > window_) index_.remove(at(count_ - 1 - window_)->source_handle);  // left it
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
    // Removes the oldest; it is in the window only when the whole queue is.
    uaplex_event_entry* pop() {
        uaplex_event_entry* e = slots_[head_];
        if (count_ <= window_) index_.remove(e->source_handle);
        head_ = (head_ + 1) % cap_;
        --count_;
        return e;
    }
    void release(uaplex_event_entry* e) {
        if (params_.release_event) params_.release_event(params_.user, e);
    }
    uaplex_mi_queue_params params_;
    std::unique_ptr<uaplex_event_entry*[]> slots_;
    HandleCounts index_;  // source handles of the newest window_ entries
    uint32_t cap_ = 0, head_ = 0, count_ = 0, window_ = 0;
};

}  // namespace

UAPLEX_PLUGIN(("mi-ring", "1.0.0", "Ring-buffer event queue"),
              uaplex::sdk::MonitoredItemQueueFactoryOf<QueueFactory<EventRing>>)
