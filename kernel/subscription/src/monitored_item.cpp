// SPDX-License-Identifier: Apache-2.0
#include <uaplex/subscription/monitored_item.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <uaplex/subscription/subscription.hpp>

namespace uaplex::subscription {

namespace {

bool beyondDeadband(const DataChangeFilterSpec& f, double a, double b) {
    double diff = std::fabs(a - b);
    if (std::isnan(diff)) return true;  // NaN is never equal
    if (f.deadbandType == ua::DeadbandType::Absolute) return diff > f.deadbandValue;
    double range = f.euHigh - f.euLow;
    if (range <= 0) return true;  // no usable baseline: always a change
    return diff / (range / 100.0) > f.deadbandValue;
}

}  // namespace

bool dataChanged(const DataChangeFilterSpec& f, const ValueCell* last, const ValueCell& next) {
    if (!last) return true;
    if (last->dv.status != next.dv.status) return true;  // all bits
    bool deadband = f.deadbandType != ua::DeadbandType::None_;
    auto trigger = f.trigger;
    if (deadband && trigger == ua::DataChangeTrigger::StatusValueTimestamp)
        trigger = ua::DataChangeTrigger::StatusValue;
    if (trigger == ua::DataChangeTrigger::StatusValueTimestamp &&
        last->dv.source_timestamp != next.dv.source_timestamp)
        return true;
    if (trigger == ua::DataChangeTrigger::Status) return false;
    if (!deadband || !last->isNumeric() || !next.isNumeric() ||
        last->dv.value.encoding != next.dv.value.encoding)
        return !sameValue(*last, next);
    int32_t n = next.arrayLength();
    if (n != last->arrayLength()) return true;
    if (n < 0) return beyondDeadband(f, last->number(), next.number());
    for (int32_t i = 0; i < n; ++i)
        if (beyondDeadband(f, last->number(uint32_t(i)), next.number(uint32_t(i)))) return true;
    return false;
}

bool NodeSample::changedSinceBase() {
    if (comparedVersion != version) {
        static const DataChangeFilterSpec kDefault{};
        baseChanged = !base || !latest || dataChanged(kDefault, base, *latest);
        comparedVersion = version;
    }
    return baseChanged;
}

void maskTimestamps(ua::DataValue& dv, ua::TimestampsToReturn ts) {
    switch (ts) {
        case ua::TimestampsToReturn::Source:
            dv.server_timestamp = 0;
            dv.mask &= uint8_t(~UAPLEX_DATAVALUE_SERVER_TIMESTAMP);
            break;
        case ua::TimestampsToReturn::Server:
            dv.source_timestamp = 0;
            dv.mask &= uint8_t(~UAPLEX_DATAVALUE_SOURCE_TIMESTAMP);
            break;
        case ua::TimestampsToReturn::Neither:
            dv.source_timestamp = dv.server_timestamp = 0;
            dv.mask &=
                uint8_t(~(UAPLEX_DATAVALUE_SOURCE_TIMESTAMP | UAPLEX_DATAVALUE_SERVER_TIMESTAMP));
            break;
        default:
            break;
    }
}

MonitoredItem::MonitoredItem(Subscription& sub, uint32_t id, uint32_t clientHandle,
                             uint64_t nodeHandle)
    : sub_(&sub), nodeHandle_(nodeHandle), id_(id), clientHandle_(clientHandle) {}

MonitoredItem::~MonitoredItem() {
    std::free(lastCell_.bytes);
    ++sub_->context().itemGeneration;  // the manager's per-node item counts are stale
}

void MonitoredItem::discard() {
    flags_ &= uint16_t(~(kHasPending | kResendData | kReadyToTrigger | kTriggered | kHasLast));
    flags_ |= kDiscarded;
    extras_.reset();  // queued values and events go back to their pools
    std::free(lastCell_.bytes);
    // Member by member: the item's flags live in the cell's tail padding.
    lastCell_.dv = {};
    lastCell_.bytes = nullptr;
    lastCell_.byteCount = lastCell_.capacity = 0;
    lastCell_.payload = ValueCell::Payload::Inline;
}

void MonitoredItem::takeAsLast(ValueCell* c) {
    ValuePool::swapContents(lastCell_, *c);
    sub_->context().values.release(c);
    flags_ |= kHasLast;
}

MonitoredItem::Extras& MonitoredItem::extras() {
    if (!extras_) extras_ = std::make_unique<Extras>();
    return *extras_;
}

std::vector<uint32_t>* MonitoredItem::links() const {
    return extras_ && !extras_->links.empty() ? &extras_->links : nullptr;
}
std::vector<uint32_t>& MonitoredItem::mutableLinks() {
    return extras().links;
}

void MonitoredItem::setSamplingInterval(int64_t ms, int64_t now) {
    samplingInterval_ = int32_t(ms);
    ++sub_->context().itemGeneration;  // the item may move between pushed and gridded sampling
    if (nextSamplingTime_ == 0) nextSamplingTime_ = now;
    if (extras_ && extras_->dataQueue) extras_->dataQueue->setSamplingInterval(ms);
}

void MonitoredItem::setQueue(uint32_t size, bool discardOldest,
                             std::unique_ptr<DataChangeQueueHandler> dq,
                             std::unique_ptr<EventQueueHandler> eq) {
    queueSize_ = size;
    flags_ = discardOldest ? (flags_ | kDiscardOldest) : (flags_ & uint16_t(~kDiscardOldest));
    if (eq) {
        eq->setQueueSize(size, discardOldest);
        extras().eventQueue = std::move(eq);
        return;
    }
    if (isEventItem()) {
        if (extras_ && extras_->eventQueue) extras_->eventQueue->setQueueSize(size, discardOldest);
        return;
    }
    if (dq) {  // a queue only above size 1; the pending last value moves into it
        dq->setQueueSize(size, discardOldest, flags_ & kOperationDiagnostics);
        dq->setSamplingInterval(samplingInterval_);
        if ((flags_ & kHasPending) && last()) {
            dq->queueValue(sub_->context().values.copy(lastCell_), UAPLEX_Good, 0);
            flags_ &= uint16_t(~kHasPending);
        }
        extras().dataQueue = std::move(dq);
    } else if (extras_ && extras_->dataQueue) {
        if (size > 1)
            extras_->dataQueue->setQueueSize(size, discardOldest, flags_ & kOperationDiagnostics);
        else
            extras_->dataQueue.reset();  // back to a single value, kept in last_
    }
}

bool MonitoredItem::hasDataQueue() const {
    return extras_ && extras_->dataQueue;
}

void MonitoredItem::setFilter(const DataChangeFilterSpec& f) {
    bool isDefault = f.trigger == ua::DataChangeTrigger::StatusValue &&
                     f.deadbandType == ua::DeadbandType::None_;
    if (!isDefault || extras_) extras().filter = f;
}

void MonitoredItem::setAggregate(const AggregateSpec* spec) {
    if (!spec) {
        if (extras_) extras_->aggregate.reset();
        return;
    }
    auto a = std::make_unique<AggregateState>();
    a->spec = *spec;
    a->spec.capacity = std::max<uint32_t>(spec->capacity, 1);
    a->raw.reserve(size_t(a->spec.capacity) + 2);
    a->intervalStart = spec->startTime;
    extras().aggregate = std::move(a);
}

const AggregateSpec* MonitoredItem::aggregate() const {
    return extras_ && extras_->aggregate ? &extras_->aggregate->spec : nullptr;
}

uint64_t MonitoredItem::aggregateDroppedSamples() const {
    return extras_ && extras_->aggregate ? extras_->aggregate->dropped : 0;
}

namespace {
// A sample as the aggregates take it: its status and numeric scalar at the sampling time.
// A Good or Uncertain value that is no numeric scalar becomes Bad_TypeMismatch.
ua::DataValue rawSample(const ValueCell& v, uaplex_status error, ua::DateTime t) {
    ua::DataValue dv{};
    dv.mask = UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    dv.source_timestamp = t;
    dv.status = (error & 0x80000000u) ? error : v.dv.status;
    bool scalar = v.payload == ValueCell::Payload::Inline && (v.dv.mask & UAPLEX_DATAVALUE_VALUE) &&
                  (v.isNumeric() || v.type() == UAPLEX_TYPE_BOOLEAN) &&
                  !(v.dv.value.encoding & ~UAPLEX_VARIANT_TYPE_MASK);
    if (scalar) {
        dv.value = v.dv.value;
        dv.mask |= UAPLEX_DATAVALUE_VALUE;
    } else if (!(dv.status & 0x80000000u)) {
        dv.status = UAPLEX_BadTypeMismatch;
    }
    return dv;
}
constexpr int kMaxIntervalsPerSample = 16;  // results queued for one sample; older ones skipped
}  // namespace

void MonitoredItem::aggregateSample(const ValueCell& v, uaplex_status error, int64_t now) {
    auto& a = *extras_->aggregate;
    ua::DateTime t = sub_->context().clock.utcNow();
    ua::DataValue raw = rawSample(v, error, t);
    // Strictly increasing times: a second sample at the same instant replaces the first.
    if (!a.raw.empty() && t <= a.raw.back().source_timestamp) {
        raw.source_timestamp = a.raw.back().source_timestamp;
        a.raw.back() = raw;
        return;
    }
    closeIntervals(t, &raw, now);
    if (t < a.intervalStart) {  // before the revised start time: only the bounding value
        a.raw.clear();
        a.raw.push_back(raw);
        a.hasBound = true;
        return;
    }
    if (a.raw.size() - (a.hasBound ? 1 : 0) >= a.spec.capacity) {
        ++a.dropped;
        return;
    }
    a.raw.push_back(raw);
}

void MonitoredItem::closeIntervals(ua::DateTime t, const ua::DataValue* after, int64_t now) {
    auto& a = *extras_->aggregate;
    const auto ticks = ua::DateTime(a.spec.processingIntervalMs * 10000.0);
    if (ticks <= 0 || t < a.intervalStart + ticks) return;
    // After a long silence only the latest intervals get a result.
    int64_t elapsed = (t - a.intervalStart) / ticks;
    for (int n = 0; a.intervalStart + ticks <= t; ++n) {
        if (n == 0 && elapsed > kMaxIntervalsPerSample) {
            // The skipped intervals get no result; their last value bounds the next one.
            a.intervalStart += (elapsed - kMaxIntervalsPerSample) * ticks;
            if (a.raw.size() > 1) {
                a.raw.front() = a.raw.back();
                a.raw.resize(1);
                a.hasBound = true;
            }
        }
        aggregates::ProcessedRequest rq;
        rq.startTime = a.intervalStart;
        rq.endTime = a.intervalStart + ticks;
        rq.processingIntervalMs = a.spec.processingIntervalMs;
        rq.configuration = a.spec.configuration;
        rq.endOfData = after ? after->source_timestamp : rq.endTime;
        bool pushed = false;
        if (after && a.raw.size() < a.raw.capacity()) {
            a.raw.push_back(*after);  // the bounding value after the interval
            pushed = true;
        }
        ua::DataValue out[1]{};
        auto r = aggregates::compute(a.spec.function, a.raw, rq, out);
        if (pushed) a.raw.pop_back();
        ua::DataValue result = out[0];
        if (r.status != UAPLEX_Good || r.written != 1) {
            result = {};
            result.status = r.status != UAPLEX_Good ? r.status : UAPLEX_BadInternalError;
        }
        result.mask |= UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP |
                       UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
        result.source_timestamp = rq.startTime;
        result.server_timestamp = sub_->context().clock.utcNow();
        // Queued like a data change, past the data change filter, at the monotonic time of
        // the interval's end: the queue keeps one value per sampling interval, and results
        // closed by one sample are a processing interval (at least a sampling interval) apart.
        int64_t at = now - (t - rq.endTime) / 10000;
        if (ValueCell* cell = sub_->context().values.copy(result))
            queueCell(cell, *cell, UAPLEX_Good, at, true);
        // The interval's last value bounds the next one.
        if (!a.raw.empty()) {
            a.raw.front() = a.raw.back();
            a.raw.resize(1);
            a.hasBound = true;
        }
        a.intervalStart = rq.endTime;
    }
}

void MonitoredItem::setMode(ua::MonitoringMode m, int64_t now) {
    auto old = ua::MonitoringMode(mode_);
    mode_ = uint8_t(m);
    if (m == old) return;
    if (m == ua::MonitoringMode::Disabled) {
        // Clears the flags and drops what is queued.
        flags_ &= uint16_t(~(kHasPending | kReadyToTrigger | kTriggered | kResendData));
        if (extras_ && extras_->dataQueue) extras_->dataQueue->clear();
        if (extras_ && extras_->eventQueue) {
            extras_->eventQueue->setQueueSize(0, true);
            extras_->eventQueue->setQueueSize(queueSize_, discardOldest());
            extras_->eventQueue->overflow = false;
        }
    } else if (old == ua::MonitoringMode::Disabled) {
        nextSamplingTime_ = now;
        ++sub_->context().itemGeneration;  // its node's groups recount their earliest sample
        flags_ &= uint16_t(~(kHadValue | kHasLast));  // forget the last value
    }
    if (m == ua::MonitoringMode::Reporting && holdsNotification()) signalReady();
}

void MonitoredItem::requestResend() {
    if (isEventItem() || !last() || mode_ == uint8_t(ua::MonitoringMode::Disabled)) return;
    flags_ |= kResendData;
    signalReady();
}

void MonitoredItem::signalReady() {
    sub_->itemReady(this);
}

bool MonitoredItem::queueValue(const ua::DataValue& in, uaplex_status error, int64_t now) {
    if (mode_ == uint8_t(ua::MonitoringMode::Disabled) || isEventItem() || (flags_ & kDiscarded))
        return false;
    auto& pool = sub_->context().values;
    ValueCell* cell = nullptr;
    if (error != UAPLEX_Good && (error & 0xC0000000u) != 0) {  // a non-Good error wins
        ua::DataValue dv = in;
        if ((error & 0x80000000u) && !(in.mask & UAPLEX_DATAVALUE_VALUE)) {
            int64_t utc = sub_->context().clock.utcNow();
            dv = {};
            dv.source_timestamp = dv.server_timestamp = utc;
            dv.mask = UAPLEX_DATAVALUE_SOURCE_TIMESTAMP | UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
        }
        dv.status = error;
        dv.mask |= UAPLEX_DATAVALUE_STATUS;
        cell = pool.copy(dv);
    } else {
        cell = pool.copy(in);
    }
    flags_ &= uint16_t(~kLastIsSample);  // not a node sample: the next one compares in full
    if (!cell) return false;
    if (extras_ && extras_->aggregate) {  // the interval's result is queued when it ends
        aggregateSample(*cell, error, now);
        pool.release(cell);
        return false;
    }
    return queueCell(cell, *cell, error, now, false);
}

bool MonitoredItem::defaultFilter() const {
    if (flags_ & kAlwaysReport) return false;
    if (!extras_) return true;
    if (extras_->aggregate) return false;  // every sample goes into the interval
    const auto& f = extras_->filter;
    return f.trigger == ua::DataChangeTrigger::StatusValue &&
           f.deadbandType == ua::DeadbandType::None_;
}

bool MonitoredItem::takeSample(NodeSample& node, int64_t gridTime, int64_t) {
    if (flags_ & kDiscarded) return false;  // deleted: never ready again
    uint32_t seen = sampledVersion_;
    sampledVersion_ = node.version;
    nextSamplingTime_ = gridTime + samplingInterval_;
    if (!node.latest) return false;
    if (extras_ && extras_->aggregate) {
        aggregateSample(*node.latest, UAPLEX_Good, gridTime);
        return false;
    }
    bool plain = defaultFilter();
    bool knownChanged = false;
    // The default filter is an equivalence: when the last value equals the node's previous
    // sample, the node's one comparison of that sample with the latest holds for this item.
    if (plain && (flags_ & (kLastIsSample | kHasLast)) == (kLastIsSample | kHasLast) &&
        seen == node.baseVersion && node.base) {
        if (!node.changedSinceBase()) return false;
        knownChanged = true;
    }
    // The queue's sampling slots follow the grid time, not the tick's jitter.
    bool queued = queueCell(nullptr, *node.latest, UAPLEX_Good, gridTime, knownChanged);
    // Queued: last is the sample; refused by the default filter: last equals it.
    if (plain)
        flags_ |= kLastIsSample;
    else
        flags_ &= uint16_t(~kLastIsSample);
    return queued;
}

bool MonitoredItem::queueCell(ValueCell* cell, const ValueCell& v, uaplex_status error, int64_t now,
                              bool knownChanged) {
    auto& pool = sub_->context().values;
    if (!knownChanged && !(flags_ & kAlwaysReport)) {
        ++sub_->context().itemComparisons;
        static const DataChangeFilterSpec kDefault{};
        const DataChangeFilterSpec& f = extras_ ? extras_->filter : kDefault;
        if (!dataChanged(f, last(), v)) {
            pool.release(cell);
            return false;
        }
    }
    if (!cell && !pool.assignContents(lastCell_, v)) {
        sampledVersion_ = 0;  // out of memory: the node's value is sampled again, in full
        return false;
    }
    if (flags_ & kHadValue) flags_ |= kReadyToTrigger;
    flags_ |= kHadValue;
    if (extras_ && extras_->dataQueue) {
        ValueCell* queued = pool.copy(v);
        if (queued) {
            if (extras_->dataQueue->queueValue(queued, error, now)) sub_->countQueueOverflow();
        }
    } else {
        flags_ |= kHasPending;  // size 1: only the last value is kept, never an overflow
    }
    if (cell)
        takeAsLast(cell);
    else
        flags_ |= kHasLast;  // assigned in place above
    signalReady();
    return true;
}

void MonitoredItem::queueNodeDeleted(int64_t utcNow) {
    if (flags_ & kDiscarded) return;
    ua::DataValue dv{};
    dv.mask = UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP |
              UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
    dv.status = UAPLEX_BadNodeIdUnknown;
    dv.source_timestamp = dv.server_timestamp = utcNow;
    auto& pool = sub_->context().values;
    if (extras_ && extras_->dataQueue) {
        extras_->dataQueue->queueRequiredValue(pool.copy(dv), UAPLEX_BadNodeIdUnknown);
    } else {
        if (ValueCell* c = pool.copy(dv)) takeAsLast(c);
        flags_ |= kHasPending;
    }
    signalReady();
}

bool MonitoredItem::queueEvent(EventCell* e) {
    auto* q = extras_ ? extras_->eventQueue.get() : nullptr;
    if (!q || mode_ == uint8_t(ua::MonitoringMode::Disabled)) return false;
    if (q->containsEvent(e->entry.source_handle)) return false;  // a duplicate, not an overflow
    if (q->setOverflowIfFull()) {
        sub_->countEventQueueOverflow();
        return false;
    }
    const bool full = q->full();
    if (q->queueEvent(&e->entry) != UAPLEX_Good) return false;
    if (full) sub_->countEventQueueOverflow();
    signalReady();
    return true;
}

bool MonitoredItem::offerEvent(const EventView& event, uint64_t eventHandle, enc::Arena& scratch,
                               bool applyWhere) {
    auto* q = extras_ ? extras_->eventQueue.get() : nullptr;
    const EventFilterSpec* f = eventFilter();
    const EventTypeModel* model = sub_->context().eventTypes;
    if (!q || !f || !model || mode_ == uint8_t(ua::MonitoringMode::Disabled)) return false;
    if (q->containsEvent(eventHandle)) return false;  // reached this item twice
    if (applyWhere && !f->matches(event, *model, scratch)) return false;
    EventCell* e = f->select(event, *model, sub_->context().values, eventHandle);
    if (!queueEvent(e)) {
        sub_->context().releaseEvent(e);
        return false;
    }
    return true;
}

// The EventQueueOverflowEventType event (Part 4 5.12.1.5) through this item's select clauses.
EventCell* MonitoredItem::overflowEvent() const {
    const EventFilterSpec* f = eventFilter();
    const EventTypeModel* model = sub_->context().eventTypes;
    if (!f || !model) return nullptr;
    OwnedEvent ev;
    ev.setType(ua::numericNodeId(0, kEventQueueOverflowEventType));
    enc::Arena arena(4096, 256);
    ua::Variant v = ua::makeVariant(ua::BuiltinType::ByteString);
    v.value.bytestring = newEventId(arena);
    ev.add("EventId", v);
    ua::NodeId type = ua::numericNodeId(0, kEventQueueOverflowEventType);
    ua::NodeId server = ua::numericNodeId(0, kServerObject);
    v = ua::makeVariant(ua::BuiltinType::NodeId);
    v.value.pointer = &type;
    ev.add("EventType", v);
    v.value.pointer = &server;
    ev.add("SourceNode", v);
    ev.add("SourceName", ua::variantString("Internal"));
    v = ua::makeVariant(ua::BuiltinType::DateTime);
    v.value.datetime = sub_->context().clock.utcNow();
    ev.add("Time", v);
    ev.add("ReceiveTime", v);
    ua::LocalizedText msg = ua::makeLocalizedText("", "Events lost due to queue overflow.");
    v = ua::makeVariant(ua::BuiltinType::LocalizedText);
    v.value.pointer = &msg;
    ev.add("Message", v);
    v = ua::makeVariant(ua::BuiltinType::UInt16);
    v.value.uint16 = 1;  // Low
    ev.add("Severity", v);
    return f->select(ev.view(), *model, sub_->context().values, 0);
}

bool MonitoredItem::holdsNotification() const {
    if (extras_ && extras_->eventQueue)
        return extras_->eventQueue->itemsInQueue() > 0 || extras_->eventQueue->overflow;
    // ResendData counts with a queue too: an empty queue resends the last value.
    if (extras_ && extras_->dataQueue)
        return extras_->dataQueue->itemsInQueue() > 0 || (flags_ & kResendData);
    return (flags_ & (kHasPending | kResendData)) != 0;
}

bool MonitoredItem::isReadyToPublish(int64_t now) const {
    if (!holdsNotification()) return false;
    if ((flags_ & kTriggered) && mode_ != uint8_t(ua::MonitoringMode::Disabled)) return true;
    if (mode_ != uint8_t(ua::MonitoringMode::Reporting)) return false;
    // Items on the publishing grid were sampled at most once per interval already.
    if (!isEventItem() && samplingInterval_ > 0 && now < nextSamplingTime_ && !onPublishGrid())
        return false;
    return true;
}

void MonitoredItem::advanceSamplingTime(int64_t now) {
    if (samplingInterval_ <= 0 || now < nextSamplingTime_) return;
    if (!isEventItem() && onPublishGrid()) return;  // takeSample keeps their grid
    nextSamplingTime_ += ((now - nextSamplingTime_) / samplingInterval_ + 1) * samplingInterval_;
}

void MonitoredItem::applyTimestamps(ValueCell& c) const {
    maskTimestamps(c.dv, ua::TimestampsToReturn(timestamps_));
}

bool MonitoredItem::publish(std::vector<StagedData>& data, std::vector<StagedEvent>& events,
                            uint32_t max, int64_t now) {
    flags_ &= uint16_t(~kTriggered);
    advanceSamplingTime(now);
    auto& pool = sub_->context().values;
    if (auto* q = extras_ ? extras_->eventQueue.get() : nullptr) {
        // The queue-overflow event: first with discardOldest (counts against max), else last.
        bool overflowFirst = q->overflow && q->discardOldest();
        uint32_t budget = max;
        if (overflowFirst) {
            events.push_back({clientHandle_, overflowEvent(), this});
            if (budget) --budget;
            q->overflow = false;
        }
        bool owed = q->overflow;  // publish() recomputes the flag
        std::vector<uaplex_event_entry*> out;
        uint32_t n = (max && budget == 0) ? 0 : q->publish(out, budget);
        for (auto* e : out) events.push_back({clientHandle_, EventCell::of(e), this});
        if (!overflowFirst && owed && (max == 0 || n < max)) {
            events.push_back({clientHandle_, overflowEvent(), this});
            q->overflow = false;
        }
        return holdsNotification();
    }
    if (auto* q = extras_ ? extras_->dataQueue.get() : nullptr) {
        bool resend = flags_ & kResendData;
        // Never more than the queue holds, whatever its plugin answers.
        uint32_t limit = resend ? 1 : max == 0 ? q->queueSize() : std::min(max, q->queueSize());
        flags_ &= uint16_t(~kResendData);
        uint32_t n = 0;
        ValueCell* c = nullptr;
        uaplex_status e = UAPLEX_Good;
        while ((limit == 0 || n < limit) && q->publishSingleValue(&c, &e)) {
            applyTimestamps(*c);
            data.push_back({c, clientHandle_, e});
            ++n;
        }
        if (n == 0 && resend && last()) {  // ResendData on an empty queue: the last value
            ValueCell* copy = pool.copy(lastCell_);
            if (copy) {
                applyTimestamps(*copy);
                data.push_back({copy, clientHandle_, UAPLEX_Good});
            }
        }
        return holdsNotification();
    }
    if (last() && (flags_ & (kHasPending | kResendData))) {
        if (timestamps_ == uint8_t(ua::TimestampsToReturn::Both)) {
            // Size 1: the message is built from lastCell_ before anything can change it.
            data.push_back({&lastCell_, clientHandle_, UAPLEX_Good, true});
        } else if (ValueCell* copy = pool.copy(lastCell_)) {
            applyTimestamps(*copy);
            data.push_back({copy, clientHandle_, UAPLEX_Good});
        }
    }
    flags_ &= uint16_t(~(kHasPending | kResendData));
    return false;
}

size_t MonitoredItem::residentBytes() const {
    size_t n = sizeof(*this);
    n += lastCell_.capacity;
    if (extras_) n += sizeof(Extras) + extras_->links.capacity() * sizeof(uint32_t);
    return n;
}

}  // namespace uaplex::subscription
