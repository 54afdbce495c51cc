// SPDX-License-Identifier: Apache-2.0
#include <uaplex/subscription/queue_handlers.hpp>

#include <algorithm>

namespace uaplex::subscription {

namespace {
bool isWaitingForInitialData(const ValueCell* c) {
    return c && (c->dv.status & 0xFFFF0000u) == (UAPLEX_BadWaitingForInitialData & 0xFFFF0000u);
}
// A queue plugin's answer is trusted only when it is Good and carries what Good promises:
// anything else counts as empty or refused (docs/plugin-guide.md, Faulty plugins).
template <class T>
bool gave(uaplex_status st, T* const* out) {
    return st == UAPLEX_Good && *out != nullptr;
}
}  // namespace

ValueCell* DataChangeQueueHandler::peek(bool newest) const {
    uaplex_datavalue* v = nullptr;
    uaplex_status e = UAPLEX_Good;
    auto st = newest ? ops_->peek_newest(queue_, &v, &e) : ops_->peek_oldest(queue_, &v, &e);
    return gave(st, &v) ? ValueCell::of(v) : nullptr;
}

uint32_t DataChangeQueueHandler::itemsInQueue() const {
    uint32_t n = 0;
    if (ops_->items_in_queue(queue_, &n) != UAPLEX_Good) return 0;
    return std::min(n, size_);  // never more than the size the queue was reset to
}

void DataChangeQueueHandler::setQueueSize(uint32_t size, bool discardOldest, bool keepErrors) {
    std::vector<std::pair<ValueCell*, uaplex_status>> held;
    uaplex_datavalue* v = nullptr;
    uaplex_status e = UAPLEX_Good;
    // Bounded by the old size: a queue that keeps answering Good cannot hold the engine.
    for (uint32_t i = 0; i < size_; ++i) {
        if (!gave(ops_->dequeue(queue_, &v, &e), &v)) break;
        held.emplace_back(ValueCell::of(v), e);
    }
    ops_->reset(queue_, size, keepErrors ? 1 : 0);
    size_ = size;
    discardOldest_ = discardOldest;
    keepErrors_ = keepErrors;
    mark_ = nullptr;
    for (auto& [c, err] : held) enqueue(c, err);
}

void DataChangeQueueHandler::clear() {
    ops_->reset(queue_, size_, keepErrors_ ? 1 : 0);  // the queue releases what it held
    mark_ = nullptr;
    marker_ = nullptr;
}

void DataChangeQueueHandler::setSamplingInterval(int64_t ms) {
    if (interval_ < nextSample_) nextSample_ -= interval_;
    interval_ = ms;
    if (ms <= 0)
        nextSample_ = 0;  // throttling off
    else
        nextSample_ += ms;
}

bool DataChangeQueueHandler::queueValue(ValueCell* value, uaplex_status error, int64_t now) {
    if (itemsInQueue() > 0 && now < nextSample_) {
        // Inside the current sampling slot: the newest entry takes the value.
        ValueCell* newest = peek(true);
        ++discarded_;
        ++overflows_;
        if (newest == marker_) {
            drop(value);
            return false;
        }
        if (!overwriteNewest(value, error)) return false;
        if (mark_ == newest) mark_ = value;
        return false;
    }
    if (nextSample_ == 0) {
        nextSample_ = now + interval_;
    } else if (now >= nextSample_ && interval_ > 0) {
        nextSample_ += ((now - nextSample_) / interval_ + 1) * interval_;  // stays on the grid
    }
    return enqueue(value, error);
}

void DataChangeQueueHandler::queueRequiredValue(ValueCell* value, uaplex_status error) {
    if (marker_) {  // one pending marker is enough
        drop(value);
        return;
    }
    marker_ = value;
    enqueue(value, error);
}

bool DataChangeQueueHandler::enqueue(ValueCell* value, uaplex_status error) {
    uint32_t n = itemsInQueue();
    if (n == 0) {
        if (ops_->enqueue(queue_, &value->dv, error) != UAPLEX_Good) drop(value);
        return false;
    }
    ValueCell* newest = peek(true);
    if (isWaitingForInitialData(newest) && newest != marker_) {
        overwriteNewest(value, error);
        return false;
    }
    if (n < size_) {
        if (ops_->enqueue(queue_, &value->dv, error) != UAPLEX_Good) drop(value);
        return false;
    }
    ++overflows_;
    if (!discardOldest_) {
        if (newest == marker_ && value != marker_) {  // the marker is never displaced
            drop(value);
            mark_ = marker_;
            return true;
        }
        if (overwriteNewest(value, error)) mark_ = value;
        return true;
    }
    ValueCell* oldest = peek(false);
    if (oldest == marker_ && value != marker_) {
        drop(value);
        mark_ = marker_;
        return true;
    }
    // The queue drops the oldest; a refusal leaves the value ours.
    if (ops_->enqueue(queue_, &value->dv, error) != UAPLEX_Good) drop(value);
    mark_ = peek(false);
    return true;
}

bool DataChangeQueueHandler::overwriteNewest(ValueCell* value, uaplex_status error) {
    if (ops_->overwrite_newest(queue_, &value->dv, error) == UAPLEX_Good) return true;
    drop(value);  // refused: the value stays ours
    return false;
}

bool DataChangeQueueHandler::publishSingleValue(ValueCell** out, uaplex_status* outError) {
    uaplex_datavalue* v = nullptr;
    uaplex_status e = UAPLEX_Good;
    if (!gave(ops_->dequeue(queue_, &v, &e), &v)) return false;
    ValueCell* c = ValueCell::of(v);
    if (c == mark_) {
        c->dv.status |= kOverflowInfoBits;
        c->dv.mask |= UAPLEX_DATAVALUE_STATUS;
        if (e != UAPLEX_Good) e |= kOverflowInfoBits;
        mark_ = nullptr;
    }
    if (c == marker_) marker_ = nullptr;
    *out = c;
    *outError = e;
    return true;
}

void EventQueueHandler::setQueueSize(uint32_t size, bool discardOldest) {
    ops_->set_queue_size(queue_, size, discardOldest ? 1 : 0);
    size_ = size;
    discardOldest_ = discardOldest;
}

bool EventQueueHandler::containsEvent(uint64_t handle) const {
    int32_t found = 0;
    return ops_->contains_event(queue_, handle, &found) == UAPLEX_Good && found != 0;
}

uint32_t EventQueueHandler::itemsInQueue() const {
    uint32_t n = 0;
    if (ops_->items_in_queue(queue_, &n) != UAPLEX_Good) return 0;
    return size_ ? std::min(n, size_) : n;
}

bool EventQueueHandler::setOverflowIfFull() {
    if (itemsInQueue() < size_ || discardOldest_) return false;
    overflow = true;
    return true;
}

uaplex_status EventQueueHandler::queueEvent(uaplex_event_entry* event) {
    if (size_ > 0 && itemsInQueue() >= size_) {
        overflow = true;
        if (!discardOldest_) return UAPLEX_BadInvalidState;
    }
    return ops_->enqueue(queue_, event);  // full: the queue drops the oldest
}

uint32_t EventQueueHandler::publish(std::vector<uaplex_event_entry*>& out, uint32_t max) {
    uint32_t count = 0;
    uaplex_event_entry* e = nullptr;
    // Never more than the queue can hold: a queue that keeps answering Good cannot hold the
    // engine.
    const uint32_t cap = size_ ? size_ : UINT32_MAX;
    while ((max == 0 || count < max) && count < cap && gave(ops_->dequeue(queue_, &e), &e)) {
        out.push_back(e);
        ++count;
    }
    overflow = overflow && count == max && !discardOldest_;
    return count;
}

}  // namespace uaplex::subscription
