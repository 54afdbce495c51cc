// SPDX-License-Identifier: Apache-2.0
// A MonitoredItem (Part 4 5.12; docs/pipeline.md, Queue handlers and monitored items): its
// filter, queue handler, readiness and triggering. Kept small for issue 11 (a million
// items): the common case is an item with a queue size of 1, a default filter and no links,
// which needs no heap object besides its last value; everything rarer sits behind `extras`.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <uaplex/aggregates/aggregates.hpp>
#include <uaplex/subscription/event_filter.hpp>
#include <uaplex/subscription/queue_handlers.hpp>
#include "uaplex/encoding/encoding.hpp"

namespace uaplex::subscription {

// The DataChangeFilter as the engine applies it (Part 4 7.22.2; Part 8 for Percent).
struct DataChangeFilterSpec {
    ua::DataChangeTrigger trigger = ua::DataChangeTrigger::StatusValue;
    ua::DeadbandType deadbandType = ua::DeadbandType::None_;
    double deadbandValue = 0;
    double euLow = 0, euHigh = 0;  // EURange, for Percent
};

// The AggregateFilter as the engine applies it (Part 4 7.22.4; docs/pipeline.md,
// AggregateFilter): the revised start time and processing interval, and how many raw samples
// one interval buffers (sized at creation; samples beyond it in one interval are dropped).
struct AggregateSpec {
    aggregates::AggregateFunction function = aggregates::AggregateFunction::Average;
    aggregates::AggregateConfiguration configuration;
    ua::DateTime startTime = 0;       // the first interval's start (a DateTime)
    double processingIntervalMs = 0;  // > 0, whole milliseconds
    uint32_t capacity = 1;            // raw samples kept per interval
};

// An aggregate item's interval: raw[0] is the bounding value from the previous interval when
// hasBound, then the samples of the interval. Reserved at creation (capacity + 2: the bound
// and the sample after the interval's end), so sampling never allocates.
struct AggregateState {
    AggregateSpec spec;
    std::vector<ua::DataValue> raw;
    bool hasBound = false;
    ua::DateTime intervalStart = 0;
    uint64_t dropped = 0;
};

// True when `next` is a change against `last` (null: no previous value).
bool dataChanged(const DataChangeFilterSpec& filter, const ValueCell* last, const ValueCell& next);
// Clears the timestamps an item's TimestampsToReturn does not ask for.
void maskTimestamps(ua::DataValue& dv, ua::TimestampsToReturn ts);

class Subscription;

struct StagedData {
    ValueCell* value;  // owned until the message is built, unless borrowed
    uint32_t clientHandle;
    uaplex_status error;
    // Borrowed: the item's own last value (all timestamps returned), read and not released
    // when the message is built in the same Subscription::publish call.
    bool borrowed = false;
};

// The value a node's pushed items sample (report on change): one copy per node, taken by the
// items at their sample, and the node's previous sample, so that the default filter is
// evaluated once per node and version rather than once per item.
struct NodeSample {
    ValueCell* latest = nullptr;  // the newest value written (pooled)
    ValueCell* base = nullptr;    // the value of `baseVersion`, the last version items took
    uint32_t version = 0, baseVersion = 0;
    uint32_t comparedVersion = 0;  // the version `baseChanged` holds for
    bool baseChanged = true;       // dataChanged(default filter, base, latest)
    // True when `latest` differs from `base` under the default filter (computed once).
    bool changedSinceBase();
};
struct StagedEvent {
    uint32_t clientHandle;
    EventCell* event;  // null: the queue-overflow event of this item
    const class MonitoredItem* item;
};

class MonitoredItem {
  public:
    enum Flags : uint16_t {
        kEvents = 1 << 0,          // an event item
        kHasPending = 1 << 1,      // size 1: `last_` not yet published
        kReadyToTrigger = 1 << 2,  // a value after the first arrived
        kTriggered = 1 << 3,
        kInReadyList = 1 << 4,
        kInPublishList = 1 << 5,
        kDiscardOldest = 1 << 6,
        kHadValue = 1 << 7,      // at least one value since creation or re-enable
        kAlwaysReport = 1 << 8,  // filters bypassed
        kResendData = 1 << 9,    // publish exactly one value next time
        kOperationDiagnostics = 1 << 10,
        kHasLast = 1 << 11,    // lastCell_ holds a value
        kPolled = 1 << 12,     // sampled by a timer group, not pushed
        kDiscarded = 1 << 13,  // deleted while a list of its subscription still holds it
        kInTriggerSources = 1 << 14,
        // lastCell_ equals (in status and value) the node sample `sampledVersion_`
        kLastIsSample = 1 << 15,
    };

    MonitoredItem(Subscription& sub, uint32_t id, uint32_t clientHandle, uint64_t nodeHandle);
    ~MonitoredItem();
    MonitoredItem(const MonitoredItem&) = delete;
    MonitoredItem& operator=(const MonitoredItem&) = delete;

    uint32_t id() const { return id_; }
    uint32_t clientHandle() const { return clientHandle_; }
    uint64_t nodeHandle() const { return nodeHandle_; }
    ua::MonitoringMode mode() const { return ua::MonitoringMode(mode_); }
    ua::TimestampsToReturn timestamps() const { return ua::TimestampsToReturn(timestamps_); }
    bool isEventItem() const { return flags_ & kEvents; }
    int64_t samplingInterval() const { return samplingInterval_; }
    int64_t nextSamplingTime() const { return nextSamplingTime_; }
    uint32_t queueSize() const { return queueSize_; }
    bool discardOldest() const { return flags_ & kDiscardOldest; }
    bool has(Flags f) const { return flags_ & f; }

    void setClientHandle(uint32_t h) { clientHandle_ = h; }
    void setTimestamps(ua::TimestampsToReturn t) { timestamps_ = uint8_t(t); }
    void setSamplingInterval(int64_t ms, int64_t now);
    // Data items: size 0 becomes 1; event items: 0 becomes 1000. Caps applied by the caller.
    void setQueue(uint32_t size, bool discardOldest, std::unique_ptr<DataChangeQueueHandler> dq,
                  std::unique_ptr<EventQueueHandler> eq);
    bool hasDataQueue() const;
    // The operation-level returnDiagnostics bits applied to StatusResult event fields.
    void setDiagnosticsMask(uint32_t mask) { extras().diagnosticsMask = mask; }
    uint32_t diagnosticsMask() const { return extras_ ? extras_->diagnosticsMask : 0; }
    void setFilter(const DataChangeFilterSpec& f);
    // An AggregateFilter (null: none): the item then reports one aggregated value per
    // processing interval instead of its data changes. Starts a fresh interval buffer.
    void setAggregate(const AggregateSpec* spec);
    const AggregateSpec* aggregate() const;
    // Samples dropped because an interval held `capacity` samples already.
    uint64_t aggregateDroppedSamples() const;
    void setMode(ua::MonitoringMode m, int64_t now);
    void markEventItem() { flags_ |= kEvents; }
    void requestResend();

    // A sampled or pushed value (borrowed). Returns true when it was queued.
    bool queueValue(const ua::DataValue& value, uaplex_status error, int64_t now);
    // Report on change: the node's latest value sampled at `gridTime` (the publishing tick of
    // the item's subscription); the next sample is due `samplingInterval` later on that grid.
    // Returns true when it was queued.
    bool takeSample(NodeSample& node, int64_t gridTime, int64_t now);
    uint32_t sampledVersion() const { return sampledVersion_; }
    // Sampled on its subscription's publishing grid from the node's latest value (a sampling
    // interval of at least the publishing interval); faster items queue every pushed change.
    bool onPublishGrid() const;
    Subscription& subscription() const { return *sub_; }
    // Node deletion: a null value with BadNodeIdUnknown.
    void queueNodeDeleted(int64_t utcNow);
    // An event (taken). False when ignored or dropped (the event then goes back to its pool).
    bool queueEvent(EventCell* event);
    // Event items: the EventFilter (select and where clauses) the item applies.
    void setEventFilter(std::unique_ptr<EventFilterSpec> f) { extras().eventFilter = std::move(f); }
    const EventFilterSpec* eventFilter() const {
        return extras_ ? extras_->eventFilter.get() : nullptr;
    }
    // A raised event: ignored when disabled, a duplicate or full (discardOldest=false), dropped
    // when the where clause fails; otherwise its selected fields are queued. True when queued.
    bool offerEvent(const EventView& event, uint64_t eventHandle, enc::Arena& scratch,
                    bool applyWhere = true);

    // Readiness.
    bool holdsNotification() const;
    bool isReadyToPublish(int64_t now) const;
    bool readyToTrigger() const { return flags_ & kReadyToTrigger; }
    void setTriggered() { flags_ |= kTriggered; }
    void clearTriggerFlag() { flags_ &= uint16_t(~kReadyToTrigger); }
    // Moves up to `max` notifications (0 = unlimited) to the staging lists; true when the
    // item still holds notifications afterwards.
    bool publish(std::vector<StagedData>& data, std::vector<StagedEvent>& events, uint32_t max,
                 int64_t now);

    // Deletion while a ready, publish or trigger list still points here: drops everything
    // queued (and the links), so the item holds nothing until its subscription frees it.
    void discard();

    // SetTriggering links (item ids); rare, so they live in the extras.
    std::vector<uint32_t>* links() const;
    std::vector<uint32_t>& mutableLinks();

    // Bytes this item holds (struct, last value, extras), for the issue 11 budget.
    size_t residentBytes() const;

    bool polled() const { return flags_ & kPolled; }
    void setPolled(bool p) { flags_ = p ? (flags_ | kPolled) : (flags_ & uint16_t(~kPolled)); }

  private:
    friend class Subscription;  // the ready and publish list flags
    struct Extras {
        DataChangeFilterSpec filter;
        std::unique_ptr<DataChangeQueueHandler> dataQueue;
        std::unique_ptr<EventQueueHandler> eventQueue;
        std::unique_ptr<EventFilterSpec> eventFilter;
        std::vector<uint32_t> links;
        uint32_t diagnosticsMask = 0;
        std::unique_ptr<AggregateState> aggregate;
    };
    Extras& extras();
    void signalReady();
    void applyTimestamps(ValueCell& c) const;
    void advanceSamplingTime(int64_t now);
    EventCell* overflowEvent() const;

    Subscription* sub_;
    const ValueCell* last() const { return (flags_ & kHasLast) ? &lastCell_ : nullptr; }
    void takeAsLast(ValueCell* c);
    // The filter and queue step of queueValue and takeSample: `owned` (taken; may be null)
    // holds `v`, or `v` is borrowed and copied where it is kept.
    bool queueCell(ValueCell* owned, const ValueCell& v, uaplex_status error, int64_t now,
                   bool knownChanged);
    bool defaultFilter() const;
    // The AggregateFilter's step in place of the data change filter: closes the intervals
    // that ended before this sample, then keeps it.
    void aggregateSample(const ValueCell& v, uaplex_status error, int64_t now);
    void closeIntervals(ua::DateTime t, const ua::DataValue* after, int64_t now);

    // The last value passed by the filter (size 1: also the pending one), embedded so that an
    // item is one allocation.
    [[no_unique_address]] ValueCell lastCell_{};
    // In the cell's tail padding: 8 bytes less per item.
    uint16_t flags_ = kDiscardOldest;
    uint8_t mode_ = uint8_t(ua::MonitoringMode::Reporting);
    uint8_t timestamps_ = uint8_t(ua::TimestampsToReturn::Both);
    std::unique_ptr<Extras> extras_;
    int64_t nextSamplingTime_ = 0;
    uint64_t nodeHandle_;
    uint32_t id_, clientHandle_;
    int32_t samplingInterval_ = 0;
    uint32_t queueSize_ = 1;
    uint32_t sampledVersion_ = 0;  // the node sample last taken (fills the struct's padding)

  public:
    // Position in the manager's node index (pushed changes) or sampling group (polled):
    // swap-remove keeps deletion O(1) with a thousand items on one node.
    uint32_t indexSlot = 0;
};

}  // namespace uaplex::subscription
