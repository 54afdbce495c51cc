// SPDX-License-Identifier: Apache-2.0
// A Subscription and its publish engine (Part 4 5.13.1-5.13.3; docs/pipeline.md).
// A publishing cycle examines only the ready list (items that turned ready since the last
// tick), so its cost is O(items with something to report), not O(items).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include <uaplex/subscription/block_slab.hpp>
#include <uaplex/subscription/clock.hpp>
#include <uaplex/subscription/monitored_item.hpp>
#include <uaplex/subscription/retransmission_queue.hpp>
#include <uaplex/subscription/ring_queue.hpp>

namespace uaplex::subscription {

// Server limits: the engine's defaults; the server sets them from [server.limits] and
// ServerCapabilities advertise them.
struct SubscriptionLimits {
    double minPublishingInterval = 100;
    double maxPublishingInterval = 3600000;
    uint32_t publishingResolution = 100;
    double maxSubscriptionLifetime = 3600000;
    double minSubscriptionLifetime = 10000;
    uint32_t maxNotificationsPerPublish = 100;  // 0 = unlimited
    uint32_t maxMessageQueueSize = 10;
    uint32_t maxNotificationQueueSize = 100;  // data items
    uint32_t maxEventQueueSize = 10000;
    uint32_t maxSubscriptionCount = 100;
    uint32_t maxPublishRequestCount = 20;           // per session
    uint32_t maxMonitoredItemCount = 0;             // 0 = unlimited
    uint32_t maxSubscriptionsPerSession = 0;        // 0 = unlimited
    uint32_t maxMonitoredItemsPerSubscription = 0;  // 0 = unlimited
    uint32_t maxMonitoredItemsPerSession = 0;       // over its subscriptions; 0 = unlimited
    uint32_t maxMonitoredItemsPerCall = 0;          // 0 = unlimited (OperationLimits)
    double minSamplingInterval = 0;
    double maxSamplingInterval = 3600000;
    // AggregateFilter: raw samples one item buffers per processing interval (the buffer is
    // ProcessingInterval / SamplingInterval + 1, at most this; this
    // with a sampling interval of 0); later samples of a full
    // interval are dropped. Processing intervals above maxProcessingInterval are revised down.
    uint32_t maxAggregateSamples = 1000;
    double maxProcessingInterval = 86400000;  // one day
    // > 0: a new (or re-timed) subscription's first publishing cycle is delayed by up to one
    // interval, in steps of this many ms, to the phase the fewest subscriptions of its interval
    // share, so that their bursts do not coincide. 0: each keeps its creation phase.
    uint32_t phaseSlotMs = 0;
};

struct RevisedSettings {
    double publishingInterval;
    uint32_t lifetimeCount, maxKeepAliveCount, maxNotificationsPerPublish;
};
RevisedSettings reviseSettings(const SubscriptionLimits& limits, double publishingInterval,
                               uint32_t lifetimeCount, uint32_t maxKeepAliveCount,
                               uint32_t maxNotificationsPerPublish);

// What every subscription of a server shares: clock, pools, limits.
struct EngineContext {
    const Clock& clock;
    SubscriptionLimits limits;
    // Whether a session with access view `access` (Subscription::access) may receive an
    // event from `source`: ReceiveEvents on the source (Part 3 8.55), whatever notifier the
    // item is on. Null: every event goes to every item on its notifiers.
    bool (*mayReceiveEvent)(const void* access, const ua::NodeId& source) noexcept = nullptr;
    ValuePool values;
    MessagePool messages;
    const EventTypeModel* eventTypes = nullptr;  // the address space, for event filters
    // Bumped when an item's sampling interval, a publishing interval or the item set changes:
    // the manager recounts the items of a node it caches.
    uint64_t itemGeneration = 0;
    // Values compared by an item's own filter (not a node's shared comparison): diagnostics.
    uint64_t itemComparisons = 0;
    // Every subscription's items: no allocator header per item, and a deletion's pages go
    // back to the kernel as soon as a chunk empties.
    BlockSlab itemSlab{sizeof(MonitoredItem), alignof(MonitoredItem)};
    // Subscription::publish stages notifications here and builds its messages from them in
    // the same call (one at a time: the manager's lock), so every subscription shares one
    // staging area instead of keeping its own capacity.
    std::vector<StagedData> stagedData;
    std::vector<StagedEvent> stagedEvents;
    size_t stagedDataHead = 0, stagedEventHead = 0;
    // The ids the last Subscription::tick moved to its publish list (tests).
    std::vector<uint32_t> lastMoved;
    explicit EngineContext(const Clock& c, SubscriptionLimits l = {}) : clock(c), limits(l) {}
    void releaseEvent(EventCell* e) {
        for (ValueCell* c : e->cells) values.release(c);
        delete e;
    }
};

enum class TickResult { Idle, WaitingForPublish, NotificationsAvailable, Expired };

// One Publish (or Republish) outcome: the message is a lease (retained messages are shared
// with the retransmission queue; keep-alives and status messages belong to it alone).
struct PublishOutcome {
    uaplex_status status = UAPLEX_Good;
    bool noMessage = false;  // false alarm: requeue the request at the head
    uint32_t subscriptionId = 0;
    MessageLease message;
    std::vector<uint32_t> available;
    bool more = false;
};

// What SubscriptionDiagnosticsDataType counts of a subscription (Part 5 12.15); the engine
// counts under its lock.
struct SubscriptionCounts {
    uint32_t modify = 0, enable = 0, disable = 0;
    uint32_t republishRequest = 0, republishMessageRequest = 0, republishMessage = 0;
    uint32_t transferRequest = 0, transferredToAltClient = 0, transferredToSameClient = 0;
    uint32_t publishRequest = 0;
    uint32_t dataChangeNotifications = 0, eventNotifications = 0, notifications = 0;
};

class Subscription {
  public:
    Subscription(EngineContext& ctx, uint32_t id, uint64_t sessionId, const RevisedSettings& s,
                 uint8_t priority, bool publishingEnabled);
    ~Subscription();
    Subscription(const Subscription&) = delete;
    Subscription& operator=(const Subscription&) = delete;

    uint32_t id() const { return id_; }
    uint64_t sessionId() const { return sessionId_; }
    void setSession(uint64_t s) { sessionId_ = s; }
    // The owning session's access view (opaque here; EngineContext::mayReceiveEvent reads it),
    // borrowed from the session: the access policy keeps every view it made while the server
    // runs, so it stays valid when the session closes without deleting the subscription (an
    // abandoned one keeps it). Replaced on transfer and re-activation.
    const void* access() const { return access_; }
    void setAccess(const void* a) { access_ = a; }
    bool sessionAttached() const { return sessionId_ != 0; }
    uint8_t priority() const { return priority_; }
    const RevisedSettings& settings() const { return settings_; }
    bool publishingEnabled() const { return publishingEnabled_; }
    bool waitingForPublish() const { return waitingForPublish_; }
    uint32_t keepAliveCounter() const { return keepAliveCounter_; }
    uint32_t lifetimeCounter() const { return lifetimeCounter_; }
    uint64_t latePublishRequestCount() const { return latePublishRequests_; }
    uint64_t monitoringQueueOverflowCount() const { return queueOverflows_; }
    // Events lost to a full event queue, the overflow event's cause (EventQueueOverflowCount).
    uint64_t eventQueueOverflowCount() const { return eventQueueOverflows_; }
    uint64_t discardedMessageCount() const { return retransmission_.discardedCount(); }
    bool expired() const { return expired_; }
    bool transferring = false;

    void modify(const RevisedSettings& s, uint8_t priority);
    void setPublishingMode(bool enabled);
    // `now`: the manager's one clock reading for the whole tick, so that the subscriptions it
    // fires are the ones whose items it sampled.
    TickResult tick(int64_t now);
    // The publishing-grid time the next tick() at `now` fires for (the last grid point before
    // `now`), or -1 when it does not fire then.
    int64_t gridTime(int64_t now) const {
        if (transferring || expired_ || now <= timerExpiry_) return -1;
        auto pi = int64_t(settings_.publishingInterval);
        return timerExpiry_ + (now - timerExpiry_ - 1) / pi * pi;
    }
    // The first clock reading at which tick() fires (its publishing timer expired), or
    // INT64_MAX when it does not tick: the publishing loop wakes then.
    int64_t timerExpiry() const { return timerExpiry_; }
    // Moves the publishing timer's phase later (SubscriptionManager spreads the phases).
    void delayTimer(int64_t ms) { timerExpiry_ += ms; }
    PublishOutcome publish();
    // Good, BadSequenceNumberUnknown or BadSequenceNumberInvalid; resets the lifetime counter.
    uaplex_status acknowledge(uint32_t sequenceNumber);
    PublishOutcome republish(uint32_t sequenceNumber);
    // A StatusChangeNotification message with its own sequence number (expiry, transfer).
    PublishOutcome statusMessage(uaplex_status status);
    std::vector<uint32_t> availableSequenceNumbers() const {
        return retransmission_.availableForTransfer();
    }
    SequenceNumbers& sequenceNumbers() { return sequence_; }
    // Diagnostics (SubscriptionDiagnosticsDataType): the next sequence number a message
    // takes and the messages kept for Republish that the client has not acknowledged.
    uint32_t nextSequenceNumber() const { return sequence_.next(); }
    size_t unacknowledgedMessageCount() const { return retransmission_.retainedCount(); }
    SubscriptionCounts& counts() { return counts_; }
    const SubscriptionCounts& counts() const { return counts_; }

    // Items. createItem gives nullptr when no memory is left.
    // `block`: from ctx.itemSlab, taken (null: one is allocated).
    MonitoredItem* createItem(uint32_t clientHandle, uint64_t nodeHandle, void* block = nullptr);
    MonitoredItem* item(uint32_t id) const;
    // Before the first CreateMonitoredItems of a typical size: its ids fit exactly (doubling
    // from one would leave a third unused). The first retained message's place is taken here
    // and the lists' blocks too, by the service's thread (see createItem).
    void reserveItems(size_t n) {
        if (items_.capacity() == 0 && n <= 4096) {
            items_.reserve(n);
            retransmission_.reserveFirst();
            if (n <= kListsReserved) {  // at once, not doubled item by item
                ready_.reserve(n);
                publishList_.reserve(n);
            }
        }
    }
    // Up to this many items the ready and publish lists are sized as items are created.
    static constexpr size_t kListsReserved = 64;
    size_t publishListCapacity() const { return publishList_.capacity(); }
    size_t retainedCapacity() const { return retransmission_.retainedCapacity(); }
    bool deleteItem(uint32_t id);
    size_t itemCount() const { return itemCount_; }
    template <typename F>
    void forEachItem(F&& f) const {
        for (auto& it : items_)
            if (it) f(*it);
    }
    void itemReady(MonitoredItem* item);
    // While set, the items that become ready were sampled for the tick about to fire (the
    // manager's report on change): a reporting item goes straight to the publish list instead
    // of being examined again by that tick.
    void setSamplingForTick(bool on) { samplingForTick_ = on && publishingEnabled_ && sessionId_; }
    void countQueueOverflow() { ++queueOverflows_; }
    void countEventQueueOverflow() {
        ++queueOverflows_;
        ++eventQueueOverflows_;
    }
    EngineContext& context() { return ctx_; }
    // The items moved to the publish list by the last tick of any subscription of the context
    // (tests compare with a full scan).
    const std::vector<uint32_t>& lastMoved() const { return lastMoved_; }
    size_t readyListSize() const { return ready_.size(); }
    size_t publishListSize() const { return publishList_.size(); }
    // Deleted items not yet freed because a list still pointed at them (tests).
    size_t discardedCount() const {
        if (!discarded_) return 0;
        auto& z = discarded_->zombies;
        return z[0].size() + z[1].size() + z[2].size();
    }

  private:
    void moveReadyItems(int64_t now);
    void destroyItem(MonitoredItem* it);
    // The lists a deleted item may still be in; each is compacted (its discarded entries
    // dropped) once they make up half of it, so a deletion costs O(1) amortized.
    enum ListIndex { kReadyIdx = 0, kPublishIdx = 1, kTriggerIdx = 2 };
    void parkDiscarded(MonitoredItem* it);
    void compact(int list);
    void compactSparseLists();
    void shrinkIfSparse();
    RetainedMessage* buildMessage(uint32_t max);
    void resetCounters() {
        keepAliveCounter_ = 0;
        lifetimeCounter_ = 0;
    }

    EngineContext& ctx_;
    uint32_t id_;
    uint64_t sessionId_;
    const void* access_ = nullptr;
    RevisedSettings settings_;
    uint8_t priority_;
    bool publishingEnabled_;
    bool waitingForPublish_ = false;
    bool expired_ = false;
    uint32_t keepAliveCounter_;
    uint32_t lifetimeCounter_ = 0;
    int64_t timerExpiry_;
    uint64_t latePublishRequests_ = 0, queueOverflows_ = 0, eventQueueOverflows_ = 0;
    SequenceNumbers sequence_;
    RetransmissionQueue retransmission_;
    // Items by id - 1 (in ctx_.itemSlab): 8 bytes per item instead of a hash node; freed ids
    // are reused.
    std::vector<MonitoredItem*> items_;
    std::vector<uint32_t> freeIds_;
    size_t itemCount_ = 0;
    SubscriptionCounts counts_;
    bool samplingForTick_ = false;
    std::vector<MonitoredItem*> ready_;           // duplicate-free, insertion order
    std::vector<MonitoredItem*> triggerSources_;  // items with links that got a value
    // Up to every item of the subscription: a ring (nothing allocated while never used),
    // shrunk with the other lists after bulk deletions.
    RingQueue<MonitoredItem*, 8> publishList_;
    // The context's staging area (empty between publish() calls).
    std::vector<StagedData>& data_;
    std::vector<StagedEvent>& events_;
    size_t &dataHead_, &eventHead_;
    std::vector<uint32_t>& lastMoved_;  // the context's
    // Deleted items still pointed at by a list (by the first list they are in), and how many
    // discarded entries each list holds at most.
    // Made on the first deletion of a listed item: most subscriptions never need it.
    struct Discarded {
        std::vector<MonitoredItem*> zombies[3];
        size_t in[3] = {0, 0, 0};
    };
    std::unique_ptr<Discarded> discarded_;
};

inline bool MonitoredItem::onPublishGrid() const {
    return !(flags_ & (kPolled | kEvents)) && samplingInterval_ > 0 &&
           samplingInterval_ >= int64_t(sub_->settings().publishingInterval);
}

}  // namespace uaplex::subscription
