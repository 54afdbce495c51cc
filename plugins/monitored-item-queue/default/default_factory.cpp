// SPDX-License-Identifier: Apache-2.0
// monitored-item-queue/default (plugin mi-default): the reference monitored-item queues
// (docs/pipeline.md). Data changes go to a ring; events to a FIFO whose duplicate check scans
// the OLDEST 1000 entries, as the reference server does (a kept divergence; the ring plugin
// scans the newest).
// Durable queues are not served.
#include <deque>

#include "data_change_ring.hpp"
#include "uaplex/cpp/kinds.hpp"

namespace {

using namespace uaplex::miqueues;

class EventFifo {
  public:
    explicit EventFifo(const uaplex_mi_queue_params& p) : params_(p) {}
    ~EventFifo() {
        for (auto* e : entries_) release(e);
    }
    uaplex_status setQueueSize(uint32_t n, bool discardOldest) {
        while (entries_.size() > n) {
            if (discardOldest) {
                release(entries_.front());
                entries_.pop_front();
            } else {
                release(entries_.back());
                entries_.pop_back();
            }
        }
        size_ = n;
        return UAPLEX_Good;
    }
    bool containsEvent(uint64_t handle) const {
        uint32_t seen = 0;
        for (auto* e : entries_) {
            if (seen++ == kDuplicateWindow) break;
            if (e->source_handle == handle) return true;
        }
        return false;
    }
    uaplex_status enqueue(uaplex_event_entry* e) {
        if (size_ == 0) return UAPLEX_BadInternalError;
        if (entries_.size() >= size_) {
            release(entries_.front());
            entries_.pop_front();
        }
        entries_.push_back(e);
        return UAPLEX_Good;
    }
    uaplex_status dequeue(uaplex_event_entry** out) {
        if (entries_.empty()) return UAPLEX_BadNothingToDo;
        *out = entries_.front();
        entries_.pop_front();
        return UAPLEX_Good;
    }
    uint32_t count() const { return static_cast<uint32_t>(entries_.size()); }

  private:
    void release(uaplex_event_entry* e) {
        if (params_.release_event) params_.release_event(params_.user, e);
    }
    uaplex_mi_queue_params params_;
    std::deque<uaplex_event_entry*> entries_;
    uint32_t size_ = 0;
};

}  // namespace

UAPLEX_PLUGIN(("mi-default", "1.0.0", "Reference monitored-item queues"),
              uaplex::sdk::MonitoredItemQueueFactoryOf<QueueFactory<EventFifo>>)
