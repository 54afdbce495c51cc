// SPDX-License-Identifier: Apache-2.0
// Queue handlers (docs/pipeline.md): the reporting rules above a plugin's raw queue.
// The plugin only stores; sampling-grid throttling, the enqueue rules, the overflow mark and
// the deleted-node marker live here, so every factory behaves the same.
#pragma once

#include <memory>

#include <cstdint>
#include <vector>

#include <uaplex/subscription/value_cell.hpp>
#include "uaplex/monitored_item_queue.h"

namespace uaplex::subscription {

// The Overflow InfoBit of a DataValue status (InfoType DataValue | Overflow).
inline constexpr uint32_t kOverflowInfoBits = 0x00000480u;

class DataChangeQueueHandler {
  public:
    // Takes the queue (made by a factory whose params release values to `pool`).
    DataChangeQueueHandler(void* queue, const uaplex_data_change_queue_ops* ops, ValuePool& pool)
        : queue_(queue), ops_(ops), pool_(&pool) {}
    ~DataChangeQueueHandler() { ops_->destroy(queue_); }
    DataChangeQueueHandler(const DataChangeQueueHandler&) = delete;
    DataChangeQueueHandler& operator=(const DataChangeQueueHandler&) = delete;

    // Re-queues what is held through the enqueue rules (not the throttle).
    void setQueueSize(uint32_t size, bool discardOldest, bool keepErrors);
    void setSamplingInterval(int64_t ms);
    // Drops every queued value (Disabled mode); the size stays.
    void clear();
    // Takes the cell. True when the value overflowed the queue (rules c and d).
    bool queueValue(ValueCell* value, uaplex_status error, int64_t nowMs);
    // The deleted-node marker: never discarded; at most one pending.
    void queueRequiredValue(ValueCell* value, uaplex_status error);
    // The oldest value (owned by the caller), with the Overflow bits when it carries the mark.
    bool publishSingleValue(ValueCell** out, uaplex_status* outError);
    uint32_t itemsInQueue() const;
    uint32_t queueSize() const { return size_; }
    bool discardOldest() const { return discardOldest_; }
    int64_t nextSampleTime() const { return nextSample_; }
    uint64_t discarded() const { return discarded_; }
    uint64_t overflows() const { return overflows_; }  // MonitoringQueueOverflowCount share

  private:
    bool enqueue(ValueCell* value, uaplex_status error);
    // Replaces the newest entry; false (and the value dropped) when the queue refuses.
    bool overwriteNewest(ValueCell* value, uaplex_status error);
    ValueCell* peek(bool newest) const;
    void drop(ValueCell* c) { pool_->release(c); }

    void* queue_;
    const uaplex_data_change_queue_ops* ops_;

  public:
    // The factory (and its library) that made the queue: held until the queue is destroyed,
    // so a factory swapped out at run time outlives its last queue.
    std::shared_ptr<void> factory;

  private:
    ValuePool* pool_;
    ValueCell* mark_ = nullptr;    // the entry that carries the pending overflow, by identity
    ValueCell* marker_ = nullptr;  // the pending deleted-node marker
    int64_t nextSample_ = 0;
    int64_t interval_ = 0;
    uint64_t discarded_ = 0, overflows_ = 0;
    uint32_t size_ = 0;
    bool discardOldest_ = true, keepErrors_ = false;
};

// One queued event: its selected fields, kept as pooled cells.
struct EventCell {
    uaplex_event_entry entry{};
    std::vector<ValueCell*> cells;
    std::vector<uaplex_variant*> fields;
    bool overflowEvent = false;
    static EventCell* of(uaplex_event_entry* e) { return reinterpret_cast<EventCell*>(e); }
};
static_assert(std::is_standard_layout_v<uaplex_event_entry>);

class EventQueueHandler {
  public:
    EventQueueHandler(void* queue, const uaplex_event_queue_ops* ops) : queue_(queue), ops_(ops) {}
    ~EventQueueHandler() { ops_->destroy(queue_); }
    EventQueueHandler(const EventQueueHandler&) = delete;
    EventQueueHandler& operator=(const EventQueueHandler&) = delete;

    void setQueueSize(uint32_t size, bool discardOldest);
    bool containsEvent(uint64_t sourceHandle) const;
    // Full with discardOldest=false: overflow is set and the caller drops the new event.
    bool setOverflowIfFull();
    // Takes the event. Full: overflow; with discardOldest=false that is BadInvalidState.
    uaplex_status queueEvent(uaplex_event_entry* event);
    // Dequeues up to max events (0 = all) into out; returns the count.
    uint32_t publish(std::vector<uaplex_event_entry*>& out, uint32_t max);
    uint32_t itemsInQueue() const;
    // The next event overflows: queued with discardOldest, it drops the oldest.
    bool full() const { return size_ > 0 && itemsInQueue() >= size_; }
    bool overflow = false;
    bool discardOldest() const { return discardOldest_; }

  private:
    void* queue_;
    const uaplex_event_queue_ops* ops_;

  public:
    std::shared_ptr<void> factory;  // as for DataChangeQueueHandler

  private:
    uint32_t size_ = 0;
    bool discardOldest_ = true;
};

}  // namespace uaplex::subscription
