// SPDX-License-Identifier: Apache-2.0
#include <uaplex/subscription/subscription.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace uaplex::subscription {

namespace {

uint32_t ceilDiv(double total, double pi) {
    double v = std::ceil(total / pi);
    return v >= 4294967295.0 ? 0xFFFFFFFFu : uint32_t(v);
}

template <typename T>
ua::ExtensionObject wrap(T* object) {
    const enc::DataType* t = enc::dataTypeOf<T>();
    ua::ExtensionObject eo{};
    eo.type_id = ua::numericNodeId(0, t->binaryEncodingId);
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.data_type = t;
    eo.object = object;
    return eo;
}

// Keeps the parts of a DiagnosticInfo that the operation-level returnDiagnostics bits ask for.
void applyDiagnosticsMask(ua::DiagnosticInfo& d, uint32_t mask) {
    uint8_t keep = 0;
    if (mask & 0x020) keep |= 0x01 | 0x02;  // SymbolicId (and its namespace)
    if (mask & 0x040) keep |= 0x04 | 0x08;  // LocalizedText (and its locale)
    if (mask & 0x080) keep |= 0x10;         // AdditionalInfo
    if (mask & 0x100) keep |= 0x20;         // InnerStatusCode
    if (mask & 0x200) keep |= 0x40;         // InnerDiagnosticInfo
    d.mask &= keep;
    if (!(keep & 0x40)) d.inner_diagnostic_info = nullptr;
}

// StatusResult event fields carry the item's diagnostics mask.
void maskStatusResult(ua::Variant& v, uint32_t mask) {
    if ((v.encoding & UAPLEX_VARIANT_TYPE_MASK) != 22 || (v.encoding & UAPLEX_VARIANT_ARRAY))
        return;
    auto* eo = static_cast<ua::ExtensionObject*>(v.value.pointer);
    if (!eo || eo->data_type != enc::dataTypeOf<ua::StatusResult>() || !eo->object) return;
    applyDiagnosticsMask(static_cast<ua::StatusResult*>(eo->object)->diagnosticInfo, mask);
}

}  // namespace

RevisedSettings reviseSettings(const SubscriptionLimits& lim, double pi, uint32_t lifetime,
                               uint32_t keepAlive, uint32_t maxNotifications) {
    RevisedSettings r{};
    if (std::isnan(pi) || pi < lim.minPublishingInterval) pi = lim.minPublishingInterval;
    if (pi > lim.maxPublishingInterval) pi = lim.maxPublishingInterval;
    double res = lim.publishingResolution;
    if (pi < res) pi = res;
    if (res > 0 && std::fmod(pi, res) != 0) pi = (std::floor(pi / res) + 1) * res;
    r.publishingInterval = pi;

    uint32_t k = keepAlive == 0 ? 3 : keepAlive;
    if (double(k) * pi > lim.maxSubscriptionLifetime) k = ceilDiv(lim.maxSubscriptionLifetime, pi);
    if (double(k) * pi > lim.maxPublishingInterval) k = ceilDiv(lim.maxPublishingInterval, pi);
    r.maxKeepAliveCount = k;

    uint32_t l = lifetime;
    if (double(l) * pi > lim.maxSubscriptionLifetime) l = ceilDiv(lim.maxSubscriptionLifetime, pi);
    uint64_t threeK = uint64_t(k) * 3;
    l = threeK > 0xFFFFFFFFu ? 0xFFFFFFFFu : std::max<uint32_t>(l, uint32_t(threeK));
    if (lim.minSubscriptionLifetime > pi && lim.minSubscriptionLifetime > double(l) * pi)
        l = ceilDiv(lim.minSubscriptionLifetime, pi);
    r.lifetimeCount = l;

    uint32_t serverMax = lim.maxNotificationsPerPublish;
    if (maxNotifications == 0)
        r.maxNotificationsPerPublish = serverMax;
    else
        r.maxNotificationsPerPublish =
            serverMax == 0 ? maxNotifications : std::min(maxNotifications, serverMax);
    return r;
}

Subscription::Subscription(EngineContext& ctx, uint32_t id, uint64_t sessionId,
                           const RevisedSettings& s, uint8_t priority, bool enabled)
    : ctx_(ctx),
      id_(id),
      sessionId_(sessionId),
      settings_(s),
      priority_(priority),
      publishingEnabled_(enabled),
      keepAliveCounter_(s.maxKeepAliveCount),  // the first tick yields a message
      timerExpiry_(ctx.clock.monoMs() + int64_t(s.publishingInterval)),
      retransmission_(ctx.limits.maxMessageQueueSize),
      data_(ctx.stagedData),
      events_(ctx.stagedEvents),
      dataHead_(ctx.stagedDataHead),
      eventHead_(ctx.stagedEventHead),
      lastMoved_(ctx.lastMoved) {}

Subscription::~Subscription() {
    // Nothing is staged here: publish() builds every notification it stages.
    for (MonitoredItem* it : items_)
        if (it) destroyItem(it);
    if (discarded_)
        for (auto& z : discarded_->zombies)
            for (MonitoredItem* it : z) destroyItem(it);
}

void Subscription::modify(const RevisedSettings& s, uint8_t priority) {
    bool newInterval = s.publishingInterval != settings_.publishingInterval;
    settings_ = s;
    priority_ = priority;
    lifetimeCounter_ = 0;
    if (newInterval) {
        ++ctx_.itemGeneration;  // items may move between pushed and gridded sampling
        timerExpiry_ = ctx_.clock.monoMs() + int64_t(s.publishingInterval);
        keepAliveCounter_ = 0;
    }
}

void Subscription::setPublishingMode(bool enabled) {
    publishingEnabled_ = enabled;
    lifetimeCounter_ = 0;
}

MonitoredItem* Subscription::createItem(uint32_t clientHandle, uint64_t nodeHandle, void* block) {
    if (!block) block = ctx_.itemSlab.allocate();
    if (!block) return nullptr;
    uint32_t id = 0;
    while (!freeIds_.empty() && id == 0) {
        id = freeIds_.back();
        freeIds_.pop_back();
        if (id > items_.size() || items_[id - 1]) id = 0;  // the tail was trimmed since
    }
    if (id == 0) {
        items_.push_back(nullptr);
        id = uint32_t(items_.size());
    }
    items_[id - 1] = new (block) MonitoredItem(*this, id, clientHandle, nodeHandle);
    ++itemCount_;
    // A small subscription's ready and publish lists hold all its items from here, on the
    // service's thread: grown by the publishing thread, they were long-lived blocks among its
    // short-lived messages (a burst of first messages freed left holes around each).
    if (itemCount_ <= kListsReserved) {
        if (ready_.capacity() < itemCount_)
            ready_.reserve(std::max<size_t>(itemCount_, 2 * ready_.capacity()));
        publishList_.reserve(itemCount_);
    }
    return items_[id - 1];
}

MonitoredItem* Subscription::item(uint32_t id) const {
    return id && id <= items_.size() ? items_[id - 1] : nullptr;
}

void Subscription::destroyItem(MonitoredItem* it) {
    it->~MonitoredItem();
    ctx_.itemSlab.release(it);
}

bool Subscription::deleteItem(uint32_t id) {
    MonitoredItem* raw = item(id);
    if (!raw) return false;
    items_[id - 1] = nullptr;
    if (id == items_.size()) {  // trailing free ids need no entry
        while (!items_.empty() && !items_.back()) items_.pop_back();
    } else {
        freeIds_.push_back(id);
    }
    --itemCount_;
    constexpr uint16_t kListed = MonitoredItem::kInReadyList | MonitoredItem::kInPublishList |
                                 MonitoredItem::kInTriggerSources;
    if (raw->flags_ & kListed)
        parkDiscarded(raw);  // freed once no list points at it
    else
        destroyItem(raw);
    compactSparseLists();  // also frees items the publishing cycle has dropped since
    shrinkIfSparse();
    return true;
}

void Subscription::parkDiscarded(MonitoredItem* it) {
    if (!discarded_) discarded_ = std::make_unique<Discarded>();
    Discarded& d = *discarded_;
    it->discard();
    const uint16_t flags[3] = {MonitoredItem::kInReadyList, MonitoredItem::kInPublishList,
                               MonitoredItem::kInTriggerSources};
    int first = -1;
    for (int i = 0; i < 3; ++i) {
        if (!(it->flags_ & flags[i])) continue;
        ++d.in[i];
        if (first < 0) first = i;
    }
    d.zombies[first].push_back(it);
}

void Subscription::compactSparseLists() {
    const size_t sizes[3] = {ready_.size(), publishList_.size(), triggerSources_.size()};
    for (int i = 0; i < 3; ++i)
        if (discarded_ && discarded_->in[i] && 2 * discarded_->in[i] >= sizes[i]) compact(i);
}

// Drops the discarded entries of one list, then frees the items parked under it that no
// other list holds (the others move to the next list they are in).
void Subscription::compact(int list) {
    auto dropDiscarded = [](auto& v, uint16_t flag) {
        auto end = std::remove_if(v.begin(), v.end(), [flag](MonitoredItem* it) {
            if (!it->has(MonitoredItem::kDiscarded)) return false;
            it->flags_ = uint16_t(it->flags_ & ~flag);
            return true;
        });
        v.erase(end, v.end());
    };
    if (list == kReadyIdx)
        dropDiscarded(ready_, MonitoredItem::kInReadyList);
    else if (list == kPublishIdx)
        dropDiscarded(publishList_, MonitoredItem::kInPublishList);
    else
        dropDiscarded(triggerSources_, MonitoredItem::kInTriggerSources);
    Discarded& d = *discarded_;
    d.in[list] = 0;
    std::vector<MonitoredItem*> parked;
    parked.swap(d.zombies[list]);
    for (MonitoredItem* it : parked) {
        if (it->has(MonitoredItem::kInReadyList))
            d.zombies[kReadyIdx].push_back(it);
        else if (it->has(MonitoredItem::kInPublishList))
            d.zombies[kPublishIdx].push_back(it);
        else if (it->has(MonitoredItem::kInTriggerSources))
            d.zombies[kTriggerIdx].push_back(it);
        else
            destroyItem(it);
    }
}

// After a bulk deletion the containers give their memory back too: a vector whose contents
// dropped below a quarter of its capacity is reallocated (amortized O(1) per deletion).
void Subscription::shrinkIfSparse() {
    auto shrink = [](auto& v) {
        if (v.capacity() > 64 && v.size() < v.capacity() / 4) v.shrink_to_fit();
    };
    if (itemCount_ == 0) {  // every id is free again
        items_.clear();
        freeIds_.clear();
    }
    shrink(items_);
    shrink(freeIds_);
    shrink(ready_);
    shrink(publishList_);
    shrink(lastMoved_);
    if (discarded_)
        for (auto& z : discarded_->zombies) shrink(z);
}

void Subscription::itemReady(MonitoredItem* item) {
    if (item->links() && !item->has(MonitoredItem::kInTriggerSources)) {
        triggerSources_.push_back(item);
        item->flags_ |= MonitoredItem::kInTriggerSources;
    }
    if (item->has(MonitoredItem::kInReadyList) || item->has(MonitoredItem::kInPublishList)) return;
    if (samplingForTick_ && item->mode_ == uint8_t(ua::MonitoringMode::Reporting) &&
        !item->links()) {
        item->flags_ |= MonitoredItem::kInPublishList;  // what moveReadyItems would do
        publishList_.push_back(item);
        return;
    }
    ready_.push_back(item);
    item->flags_ |= MonitoredItem::kInReadyList;
}

void Subscription::moveReadyItems(int64_t now) {
    lastMoved_.clear();
    // Triggers first, so that a linked item triggered now moves in this tick.
    // By index over the sources present now: a triggered item with links of its own is
    // appended by itemReady (it holds no new value, so it triggers nothing).
    const size_t sources = triggerSources_.size();
    for (size_t i = 0; i < sources; ++i) {
        MonitoredItem* src = triggerSources_[i];
        if (!src->readyToTrigger() || !src->links()) continue;  // links removed since
        for (uint32_t linkId : *src->links()) {
            MonitoredItem* linked = item(linkId);
            if (!linked || !linked->holdsNotification()) continue;
            linked->setTriggered();
            itemReady(linked);
        }
        src->clearTriggerFlag();
    }
    for (MonitoredItem* src : triggerSources_)
        src->flags_ = uint16_t(src->flags_ & ~MonitoredItem::kInTriggerSources);
    triggerSources_.clear();
    size_t keep = 0;
    for (MonitoredItem* it : ready_) {
        if (it->isReadyToPublish(now)) {
            it->flags_ = uint16_t(it->flags_ & ~MonitoredItem::kInReadyList);
            it->flags_ |= MonitoredItem::kInPublishList;
            publishList_.push_back(it);
            lastMoved_.push_back(it->id());
        } else if (it->holdsNotification()) {
            ready_[keep++] = it;  // throttled or not reporting: examined again next tick
        } else {
            it->flags_ = uint16_t(it->flags_ & ~MonitoredItem::kInReadyList);
        }
    }
    ready_.resize(keep);
}

TickResult Subscription::tick(int64_t now) {
    if (transferring || expired_) return expired_ ? TickResult::Expired : TickResult::Idle;
    if (now <= timerExpiry_)
        return waitingForPublish_ ? TickResult::WaitingForPublish : TickResult::Idle;
    auto pi = int64_t(settings_.publishingInterval);
    timerExpiry_ += ((now - timerExpiry_) / pi + 1) * pi;  // missed intervals collapse
    if (waitingForPublish_) {
        ++lifetimeCounter_;
        ++latePublishRequests_;
        if (lifetimeCounter_ >= settings_.lifetimeCount) {
            expired_ = true;
            return TickResult::Expired;
        }
    }
    ++keepAliveCounter_;
    if (publishingEnabled_ && sessionAttached()) {
        moveReadyItems(now);
        if (!publishList_.empty()) {
            waitingForPublish_ = true;
            return TickResult::NotificationsAvailable;
        }
    }
    if (keepAliveCounter_ >= settings_.maxKeepAliveCount) {
        waitingForPublish_ = true;
        return TickResult::NotificationsAvailable;
    }
    return TickResult::Idle;
}

RetainedMessage* Subscription::buildMessage(uint32_t max) {
    size_t events = events_.size() - eventHead_, data = data_.size() - dataHead_;
    size_t total = events + data;
    if (max && total > max) total = max;
    size_t nEvents = std::min(events, total), nData = total - nEvents;
    RetainedMessage* m = ctx_.messages.acquire();
    enc::Arena& arena = m->arena;
    m->message.sequenceNumber = sequence_.assign();
    m->message.publishTime = ctx_.clock.utcNow();
    size_t parts = (nEvents ? 1 : 0) + (nData ? 1 : 0);
    auto* eos = arena.allocateArray<ua::ExtensionObject>(parts);
    size_t p = 0;
    if (nEvents) {  // events first
        auto* list = arena.allocateArray<ua::EventNotificationList>(1);
        auto* fields = arena.allocateArray<ua::EventFieldList>(nEvents);
        for (size_t i = 0; i < nEvents; ++i) {
            StagedEvent& s = events_[eventHead_ + i];
            fields[i].clientHandle = s.clientHandle;
            EventCell* e = s.event;
            size_t nf = e ? e->cells.size() : 0;
            auto* vars = arena.allocateArray<ua::Variant>(nf);
            for (size_t f = 0; f < nf; ++f) {
                ua::DataValue dv{};
                if (e->cells[f] && ValuePool::materialize(*e->cells[f], arena, dv)) {
                    vars[f] = dv.value;
                    maskStatusResult(vars[f], s.item->diagnosticsMask());
                }
            }
            fields[i].eventFields = {int32_t(nf), vars};
            if (e) ctx_.releaseEvent(e);
        }
        list->events = {int32_t(nEvents), fields};
        eos[p++] = wrap(list);
        eventHead_ += nEvents;
    }
    if (nData) {
        auto* dcn = arena.allocateArray<ua::DataChangeNotification>(1);
        // Every field is written below: no zeroing of the (large) array first.
        auto* items = static_cast<ua::MonitoredItemNotification*>(arena.allocate(
            nData * sizeof(ua::MonitoredItemNotification), alignof(ua::MonitoredItemNotification)));
        for (size_t i = 0; i < nData; ++i) {
            StagedData& s = data_[dataHead_ + i];
            items[i].clientHandle = s.clientHandle;
            if (!ValuePool::materialize(*s.value, arena, items[i].value)) items[i].value = {};
            if (!s.borrowed) ctx_.values.release(s.value);
        }
        dcn->monitoredItems = {int32_t(nData), items};
        dcn->diagnosticInfos = {0, nullptr};
        eos[p++] = wrap(dcn);
        dataHead_ += nData;
    }
    m->message.notificationData = {int32_t(parts), eos};
    m->notificationCount = uint32_t(total);
    counts_.eventNotifications += uint32_t(nEvents);
    counts_.dataChangeNotifications += uint32_t(nData);
    counts_.notifications += uint32_t(total);
    if (dataHead_ == data_.size()) data_.clear(), dataHead_ = 0;
    if (eventHead_ == events_.size()) events_.clear(), eventHead_ = 0;
    return m;
}

PublishOutcome Subscription::publish() {
    PublishOutcome out;
    out.subscriptionId = id_;
    if (expired_) {
        out.noMessage = true;
        return out;
    }
    if (transferring) {
        out.status = UAPLEX_BadSubscriptionIdInvalid;
        return out;
    }
    int64_t now = ctx_.clock.monoMs();
    bool keepAliveIfNoData = keepAliveCounter_ >= settings_.maxKeepAliveCount;
    if (retransmission_.hasQueued()) {
        auto sent = retransmission_.tryDequeueQueued(!publishList_.empty());
        out.message = std::move(sent.lease);
        out.available = std::move(sent.available);
        out.more = sent.more;
        waitingForPublish_ = out.more;
        resetCounters();
        return out;
    }
    std::vector<RetainedMessage*> built;
    if (publishingEnabled_) {
        uint32_t n = settings_.maxNotificationsPerPublish;
        uint32_t perItem = n ? 3 * n : 0;
        uint32_t m = retransmission_.maxMessages();
        size_t stopAt = m > 2 ? m - 2 : 1;
        std::vector<MonitoredItem*> left;  // values left: they stay at the front
        while (!publishList_.empty() && built.size() < stopAt) {
            MonitoredItem* it = publishList_.front();
            publishList_.pop_front();
            if (it->publish(data_, events_, perItem, now))
                left.push_back(it);
            else
                it->flags_ = uint16_t(it->flags_ & ~MonitoredItem::kInPublishList);
            size_t pending = (data_.size() - dataHead_) + (events_.size() - eventHead_);
            if (n && pending > n) built.push_back(buildMessage(n));
        }
        for (auto r = left.rbegin(); r != left.rend(); ++r) publishList_.push_front(*r);
        while ((data_.size() - dataHead_) + (events_.size() - eventHead_) > 0)
            built.push_back(buildMessage(n));
        if (built.empty() && !keepAliveIfNoData) {
            waitingForPublish_ = false;  // a false alarm: the request goes back to the head
            out.noMessage = true;
            return out;
        }
    }
    if (built.empty()) {
        if (!keepAliveIfNoData && !publishingEnabled_) {
            waitingForPublish_ = false;
            out.noMessage = true;
            return out;
        }
        RetainedMessage* ka = ctx_.messages.acquire();
        ka->message.sequenceNumber = sequence_.next();  // shown, not consumed
        ka->message.publishTime = ctx_.clock.utcNow();
        out.message = MessageLease(ka);
        ctx_.messages.release(ka);  // the response's lease is the only reference
        out.available = retransmission_.fillAvailable();
        out.more = false;
        waitingForPublish_ = false;
    } else {
        auto sent = retransmission_.enqueue(std::move(built));
        out.message = std::move(sent.lease);
        out.available = std::move(sent.available);
        out.more = sent.more;
        waitingForPublish_ = out.more;
    }
    resetCounters();
    return out;
}

uaplex_status Subscription::acknowledge(uint32_t seq) {
    lifetimeCounter_ = 0;  // even for an unknown number
    return retransmission_.acknowledge(seq);
}

PublishOutcome Subscription::republish(uint32_t seq) {
    PublishOutcome out;
    out.subscriptionId = id_;
    lifetimeCounter_ = 0;
    out.message = retransmission_.findForRepublish(seq);
    if (!out.message) out.status = UAPLEX_BadMessageNotAvailable;
    return out;
}

PublishOutcome Subscription::statusMessage(uaplex_status status) {
    PublishOutcome out;
    out.subscriptionId = id_;
    RetainedMessage* m = ctx_.messages.acquire();
    m->message.sequenceNumber = sequence_.assign();
    m->message.publishTime = ctx_.clock.utcNow();
    auto* sc = m->arena.allocateArray<ua::StatusChangeNotification>(1);
    sc->status = status;
    auto* eo = m->arena.allocateArray<ua::ExtensionObject>(1);
    *eo = wrap(sc);
    m->message.notificationData = {1, eo};
    out.message = MessageLease(m);
    ctx_.messages.release(m);
    return out;
}

}  // namespace uaplex::subscription
