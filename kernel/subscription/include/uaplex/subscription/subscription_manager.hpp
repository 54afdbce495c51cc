// SPDX-License-Identifier: Apache-2.0
// The subscription services (Part 4 5.12, 5.13) over the publish engine, and the per-session
// Publish queue (docs/pipeline.md, Publish queue). The dispatcher calls these under one lock
// (the manager is not thread-safe); Publish completes asynchronously through a PublishSink.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <queue>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <uaplex/subscription/inline_vector.hpp>
#include <uaplex/subscription/ring_queue.hpp>
#include <uaplex/subscription/subscription.hpp>
#include "uaplex/monitored_item_queue.h"

namespace uaplex::subscription {

class SampleBatch;
class Sampler;

// What CreateMonitoredItems learnt of an item before taking the engine's lock
// (NodeValueSource::prepare): its handle or the resolve error, and the first sample.
struct PreparedItem {
    bool valid = false;  // false: resolve under the lock as before
    uaplex_status status = UAPLEX_Good;
    uint64_t handle = 0;
    ua::DataValue first{};  // out-of-line parts in the request's arena
};

// Node values as the services layer provides them.
class NodeValueSource {
  public:
    virtual ~NodeValueSource() = default;
    // A handle for the node attribute; BadNodeIdUnknown, BadAttributeIdInvalid, ...
    virtual uaplex_status resolve(const ua::ReadValueId& id, uint64_t* handle) = 0;
    // The current value; out-of-line parts in `arena`.
    virtual uaplex_status read(uint64_t handle, enc::Arena& arena, ua::DataValue& out) = 0;
    // EURange of an analog item (Percent deadband); an error when it has none.
    virtual uaplex_status euRange(uint64_t, double*, double*) {
        return UAPLEX_BadMonitoredItemFilterUnsupported;
    }
    // True when changes of this node arrive through SubscriptionManager::valueChanged; the
    // others are polled on their sampling interval.
    virtual bool reportsChanges(uint64_t) { return true; }
    // The type model event filters are checked against; null: no event items.
    virtual const EventTypeModel* eventTypes() { return nullptr; }
    // The sampler of a node a plugin serves (null: the kernel's own value, read in place).
    // Its polled items are read in batches off the engine's lock (see Sampler).
    virtual Sampler* samplerOf(uint64_t) { return nullptr; }
    // Without the engine's lock, before CreateMonitoredItems: for a plugin-served node, the
    // handle (or the error a probe Read finds) and the first sample, from one read into
    // `arena`. False: not plugin-served (resolve() and read() under the lock as before).
    virtual bool prepare(const ua::ReadValueId&, enc::Arena&, PreparedItem&) { return false; }
    // The first item started (true) or the last one stopped (false) watching a sampler-served
    // handle. Under the engine's lock: queue the plugin's call, never make it here.
    virtual void watch(uint64_t, bool) {}
    // Who hears that reportsChanges() of a handle turned (the manager's owner).
    virtual void setListener(const std::shared_ptr<class SourceListener>&) {}
};

// Told, without the engine's lock and from any thread, that reportsChanges() of `handle`
// turned; the owner then calls SubscriptionManager::reportsChangesMoved under its lock.
class SourceListener {
  public:
    virtual ~SourceListener() = default;
    virtual void reportsChangesMoved(uint64_t handle) noexcept = 0;
};

// Completes sample batches: the engine's owner applies them under its lock
// (SubscriptionManager::applyBatch). Any thread.
class SampleSink {
  public:
    virtual ~SampleSink() = default;
    virtual void sampled(SampleBatch& batch) noexcept = 0;
};

// One sampler's due polled items of a tick: each node attribute once (`handles`), read by
// the sampler into values()/statuses() (out-of-line parts in arena()) and completed once,
// now or later, from any thread. The engine hands a sampler at most one batch at a time: a
// tick that finds the previous one out skips that sampler's items (they are sampled at
// their next interval), so a slow node manager delays only its own items.
class SampleBatch {
  public:
    std::span<const uint64_t> handles() const noexcept { return handles_; }
    ua::DataValue* values() noexcept { return values_.data(); }
    uaplex_status* statuses() noexcept { return statuses_.data(); }
    enc::Arena& arena() noexcept { return arena_; }
    Sampler* sampler() const noexcept { return sampler_; }
    // Hands the results back (any thread, exactly once per batch handed out).
    void complete() noexcept {
        if (auto s = sink_) s->sampled(*this);
    }

  private:
    friend class SubscriptionManager;
    struct Ref {
        uint64_t handle;
        uint32_t sub, item;
        uint32_t slot;  // in handles_
    };
    std::vector<uint64_t> handles_;
    std::vector<ua::DataValue> values_;
    std::vector<uaplex_status> statuses_;
    std::vector<Ref> refs_;     // the items of the batch out
    std::vector<Ref> pending_;  // the items for the next one
    int64_t pendingAt_ = 0;
    enc::Arena arena_{4096, 512};
    std::shared_ptr<SampleSink> sink_;
    Sampler* sampler_ = nullptr;
    int64_t sampledAt_ = 0;  // the tick's clock reading
    bool busy_ = false;      // handed out, not yet applied (engine's lock)
};

// Reads the batches of one node manager (the services layer: a sampling thread per node
// manager). sample() is called without the engine's lock and must not block: it hands the
// batch on and completes it later.
class Sampler {
  public:
    virtual ~Sampler() = default;
    virtual void sample(std::shared_ptr<SampleBatch> batch) noexcept = 0;
};

// Acknowledgement results of one Publish: up to 8 (one per subscription of a typical
// session) without an allocation.
using AckResults = InlineVector<uaplex_status, 8>;

// Where a Publish ends. Implemented by the dispatcher.
class PublishSink {
  public:
    virtual ~PublishSink() = default;
    // The request is parked: release its worker.
    virtual void parked(uint64_t requestId) = 0;
    // The response (status Good) or a ServiceFault status; exactly once per request.
    virtual void complete(uint64_t requestId, uaplex_status status, PublishOutcome&& outcome,
                          AckResults&& ackResults) = 0;
    // False when the request's secure channel is gone or no longer the session's: the
    // request is then dropped before a message is taken for it, so nothing is lost.
    virtual bool channelValid(uint64_t /*requestId*/, uint64_t /*session*/, uint32_t) {
        return true;
    }
};

struct PublishRequestRef {
    uint64_t requestId;
    uint32_t channelId;
    int64_t deadlineMs;  // monoMs; 0 = none
};

class SubscriptionManager {
  public:
    SubscriptionManager(const Clock& clock, SubscriptionLimits limits, NodeValueSource& source,
                        PublishSink& sink);
    ~SubscriptionManager();

    // The params a monitored-item queue factory is created with (values go back to our pool),
    // and the factory instance new items use (a swap applies to items created afterwards).
    const uaplex_mi_queue_params& queueParams() const { return queueParams_; }
    // `keep` (optional) is held by every queue the factory makes, so that the instance and
    // its library outlive the last of them after a swap.
    void setQueueFactory(const uaplex_mi_queue_factory_ops* ops, void* self,
                         std::shared_ptr<void> keep = {}) {
        factoryOps_ = ops;
        factory_ = self;
        factoryKeep_ = std::move(keep);
    }

    // --- Subscription services ---
    // `access` is the calling session's access view (Subscription::access): the view is the
    // session's, the engine keeps no copy of its own.
    uaplex_status createSubscription(uint64_t session, const void* access,
                                     const ua::CreateSubscriptionRequest& req,
                                     ua::CreateSubscriptionResponse& resp);
    uaplex_status modifySubscription(uint64_t session, const ua::ModifySubscriptionRequest& req,
                                     ua::ModifySubscriptionResponse& resp);
    uaplex_status setPublishingMode(uint64_t session, const ua::SetPublishingModeRequest& req,
                                    ua::SetPublishingModeResponse& resp, enc::Arena& arena);
    // Completes now or later through the sink.
    void publish(uint64_t session, const PublishRequestRef& ref, const ua::PublishRequest& req);
    // Good with outcome.message set, or the fault status.
    uaplex_status republish(uint64_t session, const ua::RepublishRequest& req,
                            PublishOutcome& outcome);
    uaplex_status deleteSubscriptions(uint64_t session, const ua::DeleteSubscriptionsRequest& req,
                                      ua::DeleteSubscriptionsResponse& resp, enc::Arena& arena);
    // The subscriptions taken over filter events by `access`, the calling session's view.
    uaplex_status transferSubscriptions(uint64_t session, const void* access,
                                        const ua::TransferSubscriptionsRequest& req,
                                        ua::TransferSubscriptionsResponse& resp, enc::Arena& arena);
    // --- MonitoredItem services ---
    // `prepared` (empty, or one per item): what NodeValueSource::prepare found off the lock.
    uaplex_status createMonitoredItems(uint64_t session, const ua::CreateMonitoredItemsRequest& req,
                                       ua::CreateMonitoredItemsResponse& resp, enc::Arena& arena,
                                       std::span<const PreparedItem> prepared = {});
    uaplex_status modifyMonitoredItems(uint64_t session, const ua::ModifyMonitoredItemsRequest& req,
                                       ua::ModifyMonitoredItemsResponse& resp, enc::Arena& arena);
    uaplex_status setMonitoringMode(uint64_t session, const ua::SetMonitoringModeRequest& req,
                                    ua::SetMonitoringModeResponse& resp, enc::Arena& arena);
    uaplex_status setTriggering(uint64_t session, const ua::SetTriggeringRequest& req,
                                ua::SetTriggeringResponse& resp, enc::Arena& arena);
    uaplex_status deleteMonitoredItems(uint64_t session, const ua::DeleteMonitoredItemsRequest& req,
                                       ua::DeleteMonitoredItemsResponse& resp, enc::Arena& arena);

    // Server.GetMonitoredItems (Part 5 9.1): the items' server and client handles, in the
    // arena; BadSubscriptionIdInvalid, or BadUserAccessDenied for another session's.
    uaplex_status getMonitoredItems(uint64_t session, uint32_t subscriptionId, enc::Arena& arena,
                                    ua::Array<ua::UInt32>& serverHandles,
                                    ua::Array<ua::UInt32>& clientHandles);

    // --- Session and server events ---
    // The user identity of `session` (Session::identityKey); subscriptions it creates carry
    // it, and TransferSubscriptions moves only to a session with the same one.
    void setIdentity(uint64_t session, std::string_view key);
    // The access view of `session` after a re-activation (ActivateSession with another user):
    // its subscriptions filter events by it from now on (EngineContext::mayReceiveEvent).
    void setAccess(uint64_t session, const void* access);
    // Queued Publish requests get BadSessionClosed; subscriptions are deleted or abandoned.
    void closeSession(uint64_t session, bool deleteSubscriptions);
    // Every queued Publish request gets BadServerHalted.
    void stop();
    // Ends a parked request (Cancel, the request registry's deadline sweep).
    bool cancelPublish(uint64_t requestId, uaplex_status status);
    // Sampling of polled items, subscription ticks, assignment. `full` (every
    // PublishingResolution ms): every subscription and session is examined (keep-alive and
    // lifetime counting, the parked requests' deadline backstop); otherwise only the
    // subscriptions whose publishing timer expired and their sessions: O(due), so that waking
    // at each subscription's own expiry costs nothing for the thousands that are not due.
    void timerTick(bool full = true);
    // When timerTick has work next: the earliest publishing timer expiry of a subscription or
    // due polled sampling group (INT64_MAX: none). Waking then, rather than on the next tick of
    // a coarser loop, publishes each subscription at its own grid point and spreads the
    // subscriptions' bursts over their phases.
    int64_t nextTickAt();

    // --- The change hook (report on change) ---
    void valueChanged(uint64_t nodeHandle, const ua::DataValue& value);
    void nodeDeleted(uint64_t nodeHandle);
    // NodeValueSource::reportsChanges of `nodeHandle` turned (a node manager's monitor
    // answered): its items move between sampling and the pushed-change index.
    void reportsChangesMoved(uint64_t nodeHandle);

    // --- Sampling off the lock ---
    // Where completed batches go (default: applied at once, for single-threaded use).
    void setSampleSink(std::shared_ptr<SampleSink> sink);
    // The batches that have items waiting and no batch out: marked out and appended to `out`;
    // the caller hands each to its sampler after releasing the lock.
    void takeBatches(std::vector<std::shared_ptr<SampleBatch>>& out);
    // A completed batch's values go to its items (those still there), as a sample taken at
    // the tick that collected them; the batch may then be handed out again.
    void applyBatch(SampleBatch& batch);
    // takeBatches, then each batch to its sampler (single-threaded use and tests).
    void dispatchBatches();

    // --- Events (event_routing.cpp) ---
    // An event for the items on `notifiers` (the notifier handles resolve() gives for
    // EventNotifier: the source, its notifier ancestors, the Server object).
    void raiseEvent(std::span<const uint64_t> notifiers, const EventView& event);
    // ConditionRefresh (monitoredItemId 0) and ConditionRefresh2 (Part 9 5.5.7).
    uaplex_status conditionRefresh(uint64_t session, uint32_t subscriptionId,
                                   uint32_t monitoredItemId);

    // Items the last timerTick visited to sample pushed values: O(items of changed nodes).
    size_t itemsVisitedLastTick() const { return visitedLastTick_; }
    // Subscriptions the last timerTick examined: every one on a full pass, else the due ones.
    size_t subscriptionsVisitedLastTick() const { return subsVisitedLastTick_; }
    // Entries in the heap of publishing timer expiries, stale ones included (tests).
    size_t dueEntries() const { return due_.size(); }
    // True (once) when deletions freed many items since the last time (at least
    // kTrimAfterItems, and as many as remain): the caller then hands the C allocator's free
    // pages back to the kernel, outside the engine's lock.
    bool takeTrimDue();
    static constexpr size_t kTrimAfterItems = 10000;

    size_t subscriptionCount() const { return subs_.size(); }
    // The ServerDiagnosticsSummary's CurrentSubscriptionCount and CumulatedSubscriptionCount
    // (Part 5 12.9), counted here so every way a subscription ends is seen; null: not counted.
    void setSubscriptionCounters(std::atomic<uint32_t>* current, std::atomic<uint32_t>* cumulated) {
        currentCount_ = current;
        cumulatedCount_ = cumulated;
    }
    size_t monitoredItemCount() const { return itemCount_; }
    // The subscriptions `session` owns and their monitored items (`uaplex ctl sessions`).
    struct SessionCounts {
        size_t subscriptions = 0, monitoredItems = 0, publishRequests = 0;
    };
    SessionCounts countsOf(uint64_t session) const;
    // Every subscription, with the session that owns it (0: none, after a timeout).
    template <class F>
    void forEachSubscription(F&& f) const {
        for (const auto& [id, st] : subs_)
            if (st.sub) f(*st.sub);
    }
    Subscription* find(uint32_t id) const;
    EngineContext& context() { return ctx_; }

  private:
    struct SubState {
        std::unique_ptr<Subscription> sub;
        std::string owner;  // the creating session's identity key
        bool ready = false, publishing = false;
        int64_t readyAt = 0;
    };
    struct Parked {
        PublishRequestRef ref;
        AckResults acks;
    };
    // Rings, not deques: an idle session holds no queue storage, and two queued Publish
    // requests take one 2-entry allocation.
    struct Session {
        RingQueue<Parked, 2> requests;
        std::vector<uint32_t> subs;
        RingQueue<PublishOutcome, 1> statusMessages;
    };
    struct SamplingGroup {
        int64_t next = 0;
        std::vector<MonitoredItem*> items;
        std::vector<Sampler*> samplers;  // per item (null: read in place), same order
    };
    // A written node with pushed items: its latest value for the items sampled on their
    // publishing grid, those items grouped by subscription (a tick visits only the groups
    // whose subscription fires), and the count of the others. Rebuilt from byNode_ when
    // itemGeneration moved (items created, deleted or re-timed), so no pointer is stale.
    struct NodeState {
        ValueCell* latest = nullptr;  // the newest value written (pooled)
        uint32_t version = 0;         // of `latest`; 0: never written
        struct Group {
            Subscription* sub;
            uint32_t begin, end;   // in gridItems
            uint32_t doneVersion;  // every item of the group took this version
            // The group's view of the node: `base` (owned) is the version its items last all
            // took, so one comparison with the latest holds for all of them even while the
            // groups of other phases have not caught up; `latest` is borrowed from the node.
            NodeSample sample;
            // No item of the group may sample before this (the earliest of their next sampling
            // times; INT64_MIN: not known yet): a Write checks it without visiting the items.
            int64_t earliestNext = std::numeric_limits<int64_t>::min();
        };
        std::vector<MonitoredItem*> gridItems;
        std::vector<Group> groups;
        uint64_t generation = ~uint64_t(0);
        int64_t changedAt = 0;  // when `latest` was written (monotonic ms)
        uint32_t pushedItems = 0;
        bool dirty = false;  // in dirtyNodes_: a version not yet taken by every grid item
    };

    // An item array longer than OperationLimits.MaxMonitoredItemsPerCall.
    bool tooManyOperations(size_t n) const {
        return ctx_.limits.maxMonitoredItemsPerCall && n > ctx_.limits.maxMonitoredItemsPerCall;
    }
    SubState* state(uint32_t id);
    SubState* owned(uint64_t sessionId, uint32_t id);
    Session* session(uint64_t id);
    SubState* chooseReady(Session& s);
    void assign(uint64_t sessionId, Session& s);
    void complete(Parked& p, uaplex_status status, PublishOutcome&& o = {});
    void removeSubscription(uint32_t id, bool failQueuedIfEmpty);
    void deliverStatus(uint64_t sessionId, PublishOutcome&& status, bool newest);
    void indexItem(MonitoredItem* it);
    void unindexItem(MonitoredItem* it);
    void dropItemsOf(Subscription& s);
    // `block`: a slab block for the item (null: one is allocated); nulled when taken.
    // `sessionItems`: the owning session's items, counted up when one is created.
    uaplex_status createItem(Subscription& s, ua::TimestampsToReturn ts,
                             const ua::MonitoredItemCreateRequest& r,
                             ua::MonitoredItemCreateResult& out, void*& block, size_t& sessionItems,
                             const PreparedItem* prepared = nullptr);
    uaplex_status applyParameters(Subscription& s, MonitoredItem& it,
                                  const ua::MonitoringParameters& p, bool creating,
                                  double* revisedInterval, uint32_t* revisedQueue);
    void sampleInitial(MonitoredItem& it, const PreparedItem* prepared = nullptr);
    // `it` waits for its sampler's next batch (at most one entry per item and batch slot).
    void requestSample(MonitoredItem& it, Sampler* s, int64_t now);
    SampleBatch& batchOf(Sampler* s);
    void moveIndex(MonitoredItem* it);  // re-indexes without watch() calls
    void spreadPhase(Subscription& s);
    void countItems(NodeState& ns, const std::vector<MonitoredItem*>& items);
    void releaseNode(NodeState& ns);
    void releaseGroups(NodeState& ns);
    void sampleChangedNodes(int64_t now, bool firing);
    // The group's items take the node's latest version as their sample for the publishing
    // interval ending at `slot`; true when some item still waits for its sampling interval.
    bool sampleGroup(NodeState& ns, NodeState::Group& g, int64_t slot, int64_t now);
    // ReceiveEvents on one event's source (no source: the server's own) for the views of the
    // items it is offered to, looked up once per run of items with the same view: the items
    // of a subscription, and of every session with the same roles, share one.
    class ReceiveCheck {
      public:
        ReceiveCheck(const EngineContext& ctx, const EventView& event) noexcept
            : check_(event.sourceNode ? ctx.mayReceiveEvent : nullptr), source_(event.sourceNode) {}
        bool operator()(const void* access) noexcept {
            if (!check_) return true;
            if (!known_ || access != view_) {
                view_ = access;
                allowed_ = check_(access, *source_);
                known_ = true;
            }
            return allowed_;
        }

      private:
        bool (*check_)(const void*, const ua::NodeId&) noexcept;
        const ua::NodeId* source_;
        const void* view_ = nullptr;
        bool allowed_ = true;
        bool known_ = false;
    };
    // Validates an item's EventFilter; the EventFilterResult goes to filterOut_ (if set).
    uaplex_status applyEventFilter(const ua::EventFilter& f, std::unique_ptr<EventFilterSpec>& out);
    // Sets an item's accepted AggregateFilter, revised; the AggregateFilterResult goes to
    // filterOut_ (if set).
    void applyAggregate(Subscription& s, MonitoredItem& it, const ua::AggregateFilter& f,
                        aggregates::AggregateFunction function,
                        const aggregates::AggregateConfiguration& configuration,
                        double samplingInterval);

    EngineContext ctx_;
    NodeValueSource& source_;
    PublishSink& sink_;
    uaplex_mi_queue_params queueParams_{};
    const uaplex_mi_queue_factory_ops* factoryOps_ = nullptr;
    void* factory_ = nullptr;
    std::shared_ptr<void> factoryKeep_;
    std::unordered_map<uint32_t, SubState> subs_;
    std::unordered_map<uint64_t, Session> sessions_;
    std::unordered_map<uint64_t, std::string> identities_;
    std::unordered_map<uint64_t, std::vector<MonitoredItem*>> byNode_;
    std::unordered_map<uint64_t, NodeState> nodeStates_;
    std::vector<uint64_t> dirtyNodes_;  // nodes written since their grid items last sampled
    // (first clock reading at which a subscription's tick fires, its id): one valid entry per
    // subscription, pushed when its timer moves; entries whose time no longer matches are
    // dropped when they surface.
    using Due = std::pair<int64_t, uint32_t>;
    std::priority_queue<Due, std::vector<Due>, std::greater<Due>> due_;
    std::vector<uint32_t> dueNow_;  // the subscriptions the current tick fires
    struct PhaseTurn {
        int64_t origin;  // the first subscription's phase (ms within the interval)
        uint64_t next;   // the slot the next one takes, modulo the slot count
    };
    std::unordered_map<int64_t, PhaseTurn> phases_;  // by publishing interval
    // Stale entries (deleted or re-timed subscriptions) are bounded: past twice the live
    // subscriptions the heap is rebuilt from them (a client re-timing in a loop grows nothing).
    void scheduleTick(const Subscription& s) {
        if (due_.size() >= 2 * subs_.size() + 64) rebuildDue();
        due_.push({s.timerExpiry() + 1, s.id()});
    }
    void rebuildDue();
    bool validDue(const Due& d) const {
        auto it = subs_.find(d.second);
        return it != subs_.end() && it->second.sub->timerExpiry() + 1 == d.first;
    }
    size_t visitedLastTick_ = 0, subsVisitedLastTick_ = 0;
    std::map<int64_t, SamplingGroup> groups_;  // polled items by sampling interval
    std::unordered_map<uint64_t, std::vector<MonitoredItem*>> byNotifier_;  // event items
    // One batch per sampler (node manager), reused; and the items watching each
    // sampler-served handle (NodeValueSource::watch on the first and the last).
    std::unordered_map<Sampler*, std::shared_ptr<SampleBatch>> batches_;
    std::shared_ptr<SampleSink> sampleSink_;
    std::unordered_map<uint64_t, uint32_t> watchers_;
    bool moving_ = false;                      // moveIndex: no watch() calls
    std::vector<RetainedCondition> retained_;  // any order (ConditionRefresh needs none)
    // retained_'s positions by conditionKey: an event finds its condition without a scan.
    std::unordered_map<std::string, std::size_t> retainedIndex_;
    std::string retainedKey_, branchKey_;  // reused for lookups
    uint64_t nextEventHandle_ = 1;
    ua::ExtensionObject* filterOut_ = nullptr;  // the result being filled (its request's arena)
    enc::Arena* filterArena_ = nullptr;
    enc::Arena scratch_;
    std::random_device idSource_;  // subscription ids: the OS's random source
    size_t itemCount_ = 0;
    size_t freedSinceTrim_ = 0;
    std::atomic<uint32_t>* currentCount_ = nullptr;
    std::atomic<uint32_t>* cumulatedCount_ = nullptr;
};

}  // namespace uaplex::subscription
