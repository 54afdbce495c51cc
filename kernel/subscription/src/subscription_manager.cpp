// SPDX-License-Identifier: Apache-2.0
#include <uaplex/subscription/subscription_manager.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <random>

namespace uaplex::subscription {

namespace {

constexpr uint32_t kEventNotifierAttribute = 12;
constexpr uint32_t kValueAttribute = 13;

template <typename T>
ua::Array<T> arrayOf(enc::Arena& arena, size_t n) {
    return {int32_t(n), n ? arena.allocateArray<T>(n) : nullptr};
}

// A queue whose table lacks an entry of its first release is not used: it is destroyed at
// once (destroy is the table's first entry) and the item goes on without it.
template <typename Ops>
void discardQueue(void* queue, const Ops* ops) noexcept {
    if (auto destroy = ops ? UAPLEX_FIELD_OR(ops, Ops, destroy, nullptr) : nullptr) destroy(queue);
}

}  // namespace

SubscriptionManager::SubscriptionManager(const Clock& clock, SubscriptionLimits limits,
                                         NodeValueSource& source, PublishSink& sink)
    : ctx_(clock, limits), source_(source), sink_(sink) {
    ctx_.eventTypes = source_.eventTypes();
    queueParams_.hdr = UAPLEX_HEADER_INIT(uaplex_mi_queue_params, UAPLEX_STYPE_MI_QUEUE_PARAMS);
    queueParams_.user = &ctx_;
    queueParams_.release_value = [](void* u, uaplex_datavalue* v) -> uaplex_status {
        static_cast<EngineContext*>(u)->values.release(ValueCell::of(v));
        return UAPLEX_Good;
    };
    queueParams_.release_event = [](void* u, uaplex_event_entry* e) -> uaplex_status {
        static_cast<EngineContext*>(u)->releaseEvent(EventCell::of(e));
        return UAPLEX_Good;
    };
}

SubscriptionManager::~SubscriptionManager() {
    for (auto& [node, ns] : nodeStates_) releaseNode(ns);
    if (currentCount_) currentCount_->fetch_sub(uint32_t(subs_.size()), std::memory_order_relaxed);
    subs_.clear();  // items (and their plugin queues) go before the pools
}

SubscriptionManager::SubState* SubscriptionManager::state(uint32_t id) {
    auto it = subs_.find(id);
    return it == subs_.end() ? nullptr : &it->second;
}

// The subscription `id` if it belongs to `sessionId`; another session's counts as unknown.
SubscriptionManager::SubState* SubscriptionManager::owned(uint64_t sessionId, uint32_t id) {
    SubState* st = state(id);
    return st && st->sub->sessionId() == sessionId ? st : nullptr;
}

Subscription* SubscriptionManager::find(uint32_t id) const {
    auto it = subs_.find(id);
    return it == subs_.end() ? nullptr : it->second.sub.get();
}

SubscriptionManager::Session* SubscriptionManager::session(uint64_t id) {
    auto it = sessions_.find(id);
    return it == sessions_.end() ? nullptr : &it->second;
}

// --- Subscription services -------------------------------------------------------------

uaplex_status SubscriptionManager::createSubscription(uint64_t sessionId, const void* access,
                                                      const ua::CreateSubscriptionRequest& req,
                                                      ua::CreateSubscriptionResponse& resp) {
    if (subs_.size() >= ctx_.limits.maxSubscriptionCount) return UAPLEX_BadTooManySubscriptions;
    if (uint32_t max = ctx_.limits.maxSubscriptionsPerSession) {
        Session* s = session(sessionId);
        if (s && s->subs.size() >= max) return UAPLEX_BadTooManySubscriptions;
    }
    RevisedSettings r =
        reviseSettings(ctx_.limits, req.requestedPublishingInterval, req.requestedLifetimeCount,
                       req.requestedMaxKeepAliveCount, req.maxNotificationsPerPublish);
    // Each id is drawn at random (never 0, unique among the live ones): a client that knows
    // its own subscription's id cannot guess another client's from it (TransferSubscriptions).
    uint32_t id = 0;
    while (id == 0 || subs_.count(id)) id = uint32_t(idSource_());
    SubState& st = subs_[id];
    st.sub =
        std::make_unique<Subscription>(ctx_, id, sessionId, r, req.priority, req.publishingEnabled);
    spreadPhase(*st.sub);
    scheduleTick(*st.sub);
    sessions_[sessionId].subs.push_back(id);  // the session's Publish queue starts here
    if (auto idn = identities_.find(sessionId); idn != identities_.end()) st.owner = idn->second;
    st.sub->setAccess(access);
    if (currentCount_) currentCount_->fetch_add(1, std::memory_order_relaxed);
    if (cumulatedCount_) cumulatedCount_->fetch_add(1, std::memory_order_relaxed);
    resp.subscriptionId = id;
    resp.revisedPublishingInterval = r.publishingInterval;
    resp.revisedLifetimeCount = r.lifetimeCount;
    resp.revisedMaxKeepAliveCount = r.maxKeepAliveCount;
    return UAPLEX_Good;
}

uaplex_status SubscriptionManager::modifySubscription(uint64_t sessionId,
                                                      const ua::ModifySubscriptionRequest& req,
                                                      ua::ModifySubscriptionResponse& resp) {
    SubState* st = owned(sessionId, req.subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    RevisedSettings r =
        reviseSettings(ctx_.limits, req.requestedPublishingInterval, req.requestedLifetimeCount,
                       req.requestedMaxKeepAliveCount, req.maxNotificationsPerPublish);
    double before = st->sub->settings().publishingInterval;
    st->sub->modify(r, req.priority);
    ++st->sub->counts().modify;
    if (r.publishingInterval != before) {  // its timer restarted
        spreadPhase(*st->sub);
        scheduleTick(*st->sub);
    }
    resp.revisedPublishingInterval = r.publishingInterval;
    resp.revisedLifetimeCount = r.lifetimeCount;
    resp.revisedMaxKeepAliveCount = r.maxKeepAliveCount;
    return UAPLEX_Good;
}

uaplex_status SubscriptionManager::setPublishingMode(uint64_t sessionId,
                                                     const ua::SetPublishingModeRequest& req,
                                                     ua::SetPublishingModeResponse& resp,
                                                     enc::Arena& arena) {
    if (req.subscriptionIds.size() == 0) return UAPLEX_BadNothingToDo;
    resp.results = arrayOf<ua::StatusCode>(arena, req.subscriptionIds.size());
    for (size_t i = 0; i < req.subscriptionIds.size(); ++i) {
        SubState* st = owned(sessionId, req.subscriptionIds[i]);
        if (!st) {
            resp.results[i] = UAPLEX_BadSubscriptionIdInvalid;
            continue;
        }
        st->sub->setPublishingMode(req.publishingEnabled);
        ++(req.publishingEnabled ? st->sub->counts().enable : st->sub->counts().disable);
        resp.results[i] = UAPLEX_Good;
    }
    return UAPLEX_Good;
}

// Subscriptions created together (clients connecting at once) would otherwise publish in the
// same tick: one burst that samples, builds and sends for all of them while Writes wait. The
// subscriptions of one publishing interval take its phase slots (up to 64, `phaseSlotMs`
// apart) in turn, the timer delayed by less than one interval: O(1) per creation.
void SubscriptionManager::spreadPhase(Subscription& s) {
    const int64_t w = ctx_.limits.phaseSlotMs;
    const auto pi = int64_t(s.settings().publishingInterval);
    if (w <= 0 || pi < 2 * w) return;
    constexpr int64_t kMaxSlots = 64;
    const int64_t slots = std::min(pi / w, kMaxSlots);
    if (phases_.size() >= 256 && !phases_.count(pi)) phases_.clear();  // intervals come and go
    auto [it, first] = phases_.try_emplace(pi, PhaseTurn{s.timerExpiry() % pi, 0});
    PhaseTurn& turn = it->second;
    const int64_t target = (turn.origin + int64_t(turn.next++ % uint64_t(slots)) * w) % pi;
    s.delayTimer(((target - s.timerExpiry()) % pi + pi) % pi);
}

void SubscriptionManager::complete(Parked& p, uaplex_status status, PublishOutcome&& o) {
    sink_.complete(p.ref.requestId, status, std::move(o), std::move(p.acks));
}

SubscriptionManager::SubState* SubscriptionManager::chooseReady(Session& s) {
    SubState* best = nullptr;
    for (uint32_t id : s.subs) {
        SubState* st = state(id);
        if (!st || !st->ready || st->publishing) continue;
        // Highest priority first, then the one ready longest.
        if (!best || st->sub->priority() > best->sub->priority() ||
            (st->sub->priority() == best->sub->priority() && st->readyAt < best->readyAt))
            best = st;
    }
    return best;
}

void SubscriptionManager::publish(uint64_t sessionId, const PublishRequestRef& ref,
                                  const ua::PublishRequest& req) {
    Parked p{ref, {}};
    Session* s = session(sessionId);
    if (!s) {  // no Publish queue: a kept quirk of the reference server
        complete(p, subs_.empty() ? UAPLEX_BadNoSubscription : UAPLEX_BadSessionClosed);
        return;
    }
    // A Publish serves every subscription of the session (Part 5 PublishRequestCount).
    for (uint32_t id : s->subs)
        if (Subscription* sub = find(id)) ++sub->counts().publishRequest;
    for (auto& a : req.subscriptionAcknowledgements) {
        SubState* st = owned(sessionId, a.subscriptionId);
        if (!st)
            p.acks.push_back(UAPLEX_BadSubscriptionIdInvalid);
        else
            p.acks.push_back(st->sub->acknowledge(a.sequenceNumber));
    }
    if (!s->statusMessages.empty()) {
        PublishOutcome o = std::move(s->statusMessages.front());
        s->statusMessages.pop_front();
        complete(p, UAPLEX_Good, std::move(o));
        return;
    }
    if (s->subs.empty()) {
        complete(p, UAPLEX_BadNoSubscription);
        return;
    }
    // Part 4 5.13.5: beyond the limit the oldest queued request is dropped; the queue always
    // holds more requests than the session has subscriptions.
    std::size_t limit =
        std::max<std::size_t>(ctx_.limits.maxPublishRequestCount, s->subs.size() + 1);
    if (s->requests.size() >= limit) {
        Parked oldest = std::move(s->requests.front());
        s->requests.pop_front();
        complete(oldest, UAPLEX_BadTooManyPublishRequests);
    }
    s->requests.push_back(std::move(p));
    assign(sessionId, *s);
    for (const Parked& q : s->requests)
        if (q.ref.requestId == ref.requestId) sink_.parked(ref.requestId);
}

void SubscriptionManager::assign(uint64_t sessionId, Session& s) {
    int64_t now = ctx_.clock.monoMs();
    while (!s.requests.empty()) {
        SubState* st = chooseReady(s);
        if (!st) return;
        Parked p = std::move(s.requests.front());
        s.requests.pop_front();
        if (!sink_.channelValid(p.ref.requestId, sessionId, p.ref.channelId)) {
            complete(p, UAPLEX_BadSecureChannelIdInvalid);
            continue;
        }
        st->publishing = true;
        PublishOutcome o = st->sub->publish();
        st->publishing = false;
        if (o.noMessage) {  // a false alarm: the request goes back to the head
            st->ready = false;
            s.requests.push_front(std::move(p));
            continue;
        }
        st->ready = o.more;
        st->readyAt = now;
        if (o.status != UAPLEX_Good)
            complete(p, o.status);
        else
            complete(p, UAPLEX_Good, std::move(o));
    }
}

uaplex_status SubscriptionManager::republish(uint64_t sessionId, const ua::RepublishRequest& req,
                                             PublishOutcome& outcome) {
    SubState* st = owned(sessionId, req.subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    outcome = st->sub->republish(req.retransmitSequenceNumber);
    SubscriptionCounts& c = st->sub->counts();
    ++c.republishRequest;
    ++c.republishMessageRequest;  // one message per Republish (Part 4 5.13.6)
    if (outcome.status == UAPLEX_Good) ++c.republishMessage;
    return outcome.status;
}

void SubscriptionManager::removeSubscription(uint32_t id, bool failQueuedIfEmpty) {
    SubState* st = state(id);
    if (!st) return;
    uint64_t sessionId = st->sub->sessionId();
    dropItemsOf(*st->sub);
    subs_.erase(id);
    if (currentCount_) currentCount_->fetch_sub(1, std::memory_order_relaxed);
    Session* s = session(sessionId);
    if (!s) return;
    s->subs.erase(std::remove(s->subs.begin(), s->subs.end(), id), s->subs.end());
    if (failQueuedIfEmpty && s->subs.empty()) {
        while (!s->requests.empty()) {
            Parked p = std::move(s->requests.front());
            s->requests.pop_front();
            complete(p, UAPLEX_BadNoSubscription);
        }
    }
}

uaplex_status SubscriptionManager::deleteSubscriptions(uint64_t sessionId,
                                                       const ua::DeleteSubscriptionsRequest& req,
                                                       ua::DeleteSubscriptionsResponse& resp,
                                                       enc::Arena& arena) {
    if (req.subscriptionIds.size() == 0) return UAPLEX_BadNothingToDo;
    resp.results = arrayOf<ua::StatusCode>(arena, req.subscriptionIds.size());
    for (size_t i = 0; i < req.subscriptionIds.size(); ++i) {
        SubState* st = owned(sessionId, req.subscriptionIds[i]);
        if (!st) {
            resp.results[i] = UAPLEX_BadSubscriptionIdInvalid;
            continue;
        }
        removeSubscription(req.subscriptionIds[i], true);
        resp.results[i] = UAPLEX_Good;
    }
    return UAPLEX_Good;
}

void SubscriptionManager::deliverStatus(uint64_t sessionId, PublishOutcome&& status, bool newest) {
    Session* s = session(sessionId);
    if (!s) return;
    if (newest && !s->requests.empty()) {  // the newest waiting Publish takes it
        Parked p = std::move(s->requests.back());
        s->requests.pop_back();
        complete(p, UAPLEX_Good, std::move(status));
        return;
    }
    s->statusMessages.push_back(std::move(status));
}

uaplex_status SubscriptionManager::transferSubscriptions(
    uint64_t sessionId, const void* access, const ua::TransferSubscriptionsRequest& req,
    ua::TransferSubscriptionsResponse& resp, enc::Arena& arena) {
    if (req.subscriptionIds.size() == 0) return UAPLEX_BadNothingToDo;
    resp.results = arrayOf<ua::TransferResult>(arena, req.subscriptionIds.size());
    for (size_t i = 0; i < req.subscriptionIds.size(); ++i) {
        ua::TransferResult& r = resp.results[i];
        SubState* st = state(req.subscriptionIds[i]);
        if (!st) {
            r.statusCode = UAPLEX_BadSubscriptionIdInvalid;
            continue;
        }
        Subscription& sub = *st->sub;
        uint64_t old = sub.sessionId();
        auto idn = identities_.find(sessionId);
        if (st->owner != (idn == identities_.end() ? std::string_view{} : idn->second)) {
            r.statusCode = UAPLEX_BadUserAccessDenied;  // only the same user identity
            continue;
        }
        ++sub.counts().transferRequest;
        if (old != sessionId) {
            if (uint32_t max = ctx_.limits.maxSubscriptionsPerSession) {
                Session* ns = session(sessionId);
                if (ns && ns->subs.size() >= max) {
                    r.statusCode = UAPLEX_BadTooManySubscriptions;  // Part 4 5.13.7.4
                    continue;
                }
            }
            if (Session* os = session(old)) {
                os->subs.erase(std::remove(os->subs.begin(), os->subs.end(), sub.id()),
                               os->subs.end());
                deliverStatus(old, sub.statusMessage(UAPLEX_GoodSubscriptionTransferred), true);
            }
            sub.setSession(sessionId);
            sessions_[sessionId].subs.push_back(sub.id());
            ++sub.counts().transferredToAltClient;
        } else {
            ++sub.counts().transferredToSameClient;
        }
        // Events are filtered by the receiving session's permissions from now on.
        sub.setAccess(access);
        if (req.sendInitialValues) sub.forEachItem([](MonitoredItem& it) { it.requestResend(); });
        auto seqs = sub.availableSequenceNumbers();
        r.availableSequenceNumbers = arrayOf<ua::UInt32>(arena, seqs.size());
        std::copy(seqs.begin(), seqs.end(), r.availableSequenceNumbers.data);
        r.statusCode = UAPLEX_Good;
    }
    return UAPLEX_Good;
}

// --- MonitoredItem services --------------------------------------------------------------

void SubscriptionManager::indexItem(MonitoredItem* it) {
    if (it->isEventItem()) {  // event items wait on their notifier
        auto& list = byNotifier_[it->nodeHandle()];
        it->indexSlot = uint32_t(list.size());
        list.push_back(it);
        return;
    }
    it->setPolled(!source_.reportsChanges(it->nodeHandle()));
    Sampler* sampler = source_.samplerOf(it->nodeHandle());
    // The node manager hears of the first item watching the node (it may push changes).
    if (sampler && !moving_ && watchers_[it->nodeHandle()]++ == 0)
        source_.watch(it->nodeHandle(), true);
    std::vector<MonitoredItem*>* list;
    if (it->polled()) {
        int64_t si = std::max<int64_t>(it->samplingInterval(), ctx_.limits.publishingResolution);
        SamplingGroup& g = groups_[si];
        if (g.items.empty()) g.next = ctx_.clock.monoMs() + si;
        g.samplers.push_back(sampler);
        list = &g.items;
    } else {
        list = &byNode_[it->nodeHandle()];
    }
    it->indexSlot = uint32_t(list->size());
    list->push_back(it);
}

void SubscriptionManager::moveIndex(MonitoredItem* it) {
    moving_ = true;
    unindexItem(it);
    indexItem(it);
    moving_ = false;
}

void SubscriptionManager::reportsChangesMoved(uint64_t nodeHandle) {
    bool pushed = source_.reportsChanges(nodeHandle);
    std::vector<MonitoredItem*> moving;
    if (pushed) {
        for (auto& [si, g] : groups_)
            for (MonitoredItem* it : g.items)
                if (it->nodeHandle() == nodeHandle) moving.push_back(it);
    } else if (auto n = byNode_.find(nodeHandle); n != byNode_.end()) {
        moving = n->second;
    }
    for (MonitoredItem* it : moving) moveIndex(it);
    if (!pushed)
        if (auto s = nodeStates_.find(nodeHandle); s != nodeStates_.end()) {
            releaseNode(s->second);  // the dirty list skips it
            nodeStates_.erase(s);
        }
}

void SubscriptionManager::unindexItem(MonitoredItem* it) {
    std::vector<MonitoredItem*>* list = nullptr;
    SamplingGroup* group = nullptr;
    if (it->isEventItem()) {
        auto n = byNotifier_.find(it->nodeHandle());
        if (n != byNotifier_.end()) list = &n->second;
    } else if (it->polled()) {
        int64_t si = std::max<int64_t>(it->samplingInterval(), ctx_.limits.publishingResolution);
        auto g = groups_.find(si);
        if (g != groups_.end()) {
            list = &g->second.items;
            group = &g->second;
        }
    } else {
        auto n = byNode_.find(it->nodeHandle());
        if (n != byNode_.end()) list = &n->second;
    }
    if (!list || it->indexSlot >= list->size() || (*list)[it->indexSlot] != it) return;
    // The node states cache item pointers: a deleted item may stay parked (not destroyed)
    // while a list of its subscription holds it, so the caches are renewed here.
    ++ctx_.itemGeneration;
    if (!it->isEventItem() && !moving_)
        if (auto w = watchers_.find(it->nodeHandle()); w != watchers_.end() && --w->second == 0) {
            watchers_.erase(w);
            source_.watch(it->nodeHandle(), false);
        }
    if (group) {
        group->samplers[it->indexSlot] = group->samplers.back();
        group->samplers.pop_back();
    }
    (*list)[it->indexSlot] = list->back();  // swap-remove: O(1)
    (*list)[it->indexSlot]->indexSlot = it->indexSlot;
    list->pop_back();
    // A bulk deletion gives the index's memory back too (amortized O(1)).
    if (list->capacity() > 64 && list->size() < list->capacity() / 4) list->shrink_to_fit();
    if (list->empty()) {
        if (it->isEventItem())
            byNotifier_.erase(it->nodeHandle());
        else if (it->polled())
            groups_.erase(
                std::max<int64_t>(it->samplingInterval(), ctx_.limits.publishingResolution));
        else
            byNode_.erase(it->nodeHandle());
    }
}

void SubscriptionManager::dropItemsOf(Subscription& s) {
    s.forEachItem([this](MonitoredItem& it) { unindexItem(&it); });
    itemCount_ -= s.itemCount();
    freedSinceTrim_ += s.itemCount();
}

bool SubscriptionManager::takeTrimDue() {
    // At least as many freed as remain: a deletion of N items in batches trims O(log N) times.
    if (freedSinceTrim_ < kTrimAfterItems || freedSinceTrim_ < itemCount_) return false;
    freedSinceTrim_ = 0;
    // The pools sized for the deleted items' publishing go too.
    ctx_.values.trim();
    ctx_.messages.trim();
    std::vector<StagedData>().swap(ctx_.stagedData);  // empty between publish() calls
    std::vector<StagedEvent>().swap(ctx_.stagedEvents);
    return true;
}

void SubscriptionManager::sampleInitial(MonitoredItem& it, const PreparedItem* prepared) {
    if (it.isEventItem() || it.mode() == ua::MonitoringMode::Disabled) return;
    int64_t now = ctx_.clock.monoMs();
    if (prepared) {  // read before the lock was taken
        it.queueValue(prepared->first, UAPLEX_Good, now);
        return;
    }
    // A plugin's node is never read under the engine's lock: its sampler's next batch.
    if (Sampler* s = source_.samplerOf(it.nodeHandle())) return requestSample(it, s, now);
    scratch_.reset();
    ua::DataValue dv{};
    uaplex_status st = source_.read(it.nodeHandle(), scratch_, dv);
    it.queueValue(dv, st, now);
}

SampleBatch& SubscriptionManager::batchOf(Sampler* s) {
    auto& b = batches_[s];
    if (!b) {
        b = std::make_shared<SampleBatch>();
        b->sampler_ = s;
    }
    return *b;
}

void SubscriptionManager::requestSample(MonitoredItem& it, Sampler* s, int64_t now) {
    SampleBatch& b = batchOf(s);
    // Bounded: a client toggling monitoring modes while the batch is out adds nothing more
    // than the items there are.
    if (b.pending_.size() >= itemCount_ + 64) return;
    if (b.pending_.empty()) b.pendingAt_ = now;
    b.pending_.push_back({it.nodeHandle(), it.subscription().id(), it.id(), 0});
}

void SubscriptionManager::setSampleSink(std::shared_ptr<SampleSink> sink) {
    sampleSink_ = std::move(sink);
}

namespace {
// The default sink: the batch is applied at once (single-threaded use).
class DirectSink final : public SampleSink {
  public:
    explicit DirectSink(SubscriptionManager& m) : m_(m) {}
    void sampled(SampleBatch& b) noexcept override { m_.applyBatch(b); }

  private:
    SubscriptionManager& m_;
};
}  // namespace

void SubscriptionManager::takeBatches(std::vector<std::shared_ptr<SampleBatch>>& out) {
    for (auto& [sampler, bp] : batches_) {
        SampleBatch& b = *bp;
        if (b.busy_ || b.pending_.empty()) continue;
        b.refs_.swap(b.pending_);  // the emptied list keeps its capacity
        b.sampledAt_ = b.pendingAt_;
        // Each node attribute once, however many items watch it.
        std::sort(b.refs_.begin(), b.refs_.end(),
                  [](const SampleBatch::Ref& x, const SampleBatch::Ref& y) {
                      return x.handle < y.handle;
                  });
        b.handles_.clear();
        for (auto& r : b.refs_) {
            if (b.handles_.empty() || b.handles_.back() != r.handle) b.handles_.push_back(r.handle);
            r.slot = uint32_t(b.handles_.size() - 1);
        }
        b.values_.assign(b.handles_.size(), ua::DataValue{});
        b.statuses_.assign(b.handles_.size(), UAPLEX_Good);
        b.arena_.reset();
        if (!sampleSink_) sampleSink_ = std::make_shared<DirectSink>(*this);
        b.sink_ = sampleSink_;
        b.busy_ = true;
        out.push_back(bp);
    }
}

void SubscriptionManager::applyBatch(SampleBatch& b) {
    if (!b.busy_) return;  // not handed out (a second complete())
    for (const auto& r : b.refs_) {
        SubState* st = state(r.sub);
        MonitoredItem* it = st ? st->sub->item(r.item) : nullptr;
        if (!it || it->nodeHandle() != r.handle) continue;  // deleted meanwhile
        it->queueValue(b.values_[r.slot], b.statuses_[r.slot], b.sampledAt_);
    }
    b.refs_.clear();
    b.busy_ = false;
}

void SubscriptionManager::dispatchBatches() {
    std::vector<std::shared_ptr<SampleBatch>> out;
    takeBatches(out);
    for (auto& b : out) b->sampler()->sample(b);
}

uaplex_status SubscriptionManager::applyEventFilter(const ua::EventFilter& f,
                                                    std::unique_ptr<EventFilterSpec>& out) {
    enc::Arena local(1 << 16, 1024);
    enc::Arena& arena = filterArena_ ? *filterArena_ : local;
    auto* result = arena.allocateArray<ua::EventFilterResult>(1);
    if (!result) return UAPLEX_BadOutOfMemory;
    uaplex_status st = EventFilterSpec::create(f, *ctx_.eventTypes, arena, *result, out);
    if (filterOut_ && filterArena_) {
        filterOut_->type_id =
            ua::numericNodeId(0, enc::dataTypeOf<ua::EventFilterResult>()->binaryEncodingId);
        filterOut_->encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        filterOut_->data_type = enc::dataTypeOf<ua::EventFilterResult>();
        filterOut_->object = result;
    }
    return st;
}

void SubscriptionManager::applyAggregate(Subscription& s, MonitoredItem& it,
                                         const ua::AggregateFilter& f,
                                         aggregates::AggregateFunction function,
                                         const aggregates::AggregateConfiguration& configuration,
                                         double samplingInterval) {
    const auto& lim = ctx_.limits;
    // The processing interval: whole ms, at least the sampling interval (the publishing
    // interval when that is 0), at most maxProcessingInterval.
    double pi = std::floor(f.processingInterval);
    double floorPi = samplingInterval > 0 ? samplingInterval : s.settings().publishingInterval;
    pi = std::max(pi, std::max(floorPi, 1.0));
    pi = std::min(pi, std::max(lim.maxProcessingInterval, floorPi));
    AggregateSpec spec;
    spec.function = function;
    spec.configuration = configuration;
    spec.processingIntervalMs = pi;
    // One interval's samples: pi / si, one more for a sample on each edge.
    double perInterval = samplingInterval > 0 ? std::ceil(pi / samplingInterval) + 1 : 1e18;
    spec.capacity = uint32_t(std::max(1.0, std::min(perInterval, double(lim.maxAggregateSamples))));
    // The start time: a future one stays; a past one (or none) moves forward by whole
    // processing intervals to the interval that holds now, as there is no history to fill.
    const int64_t ticks = int64_t(pi * 10000.0);
    ua::DateTime now = ctx_.clock.utcNow();
    // A start more than one maxProcessingInterval ahead is revised to that far.
    ua::DateTime start = std::max<ua::DateTime>(f.startTime, 0);
    const auto ahead = ua::DateTime(std::max(lim.maxProcessingInterval, pi) * 10000.0);
    if (start > now + ahead) start = now + ahead;
    if (start < now) start += (now - start) / ticks * ticks;
    spec.startTime = start;
    it.setAggregate(&spec);
    if (filterOut_ && filterArena_) {
        auto* result = filterArena_->allocateArray<ua::AggregateFilterResult>(1);
        if (!result) return;
        result->revisedStartTime = start;
        result->revisedProcessingInterval = pi;
        auto& c = result->revisedAggregateConfiguration;
        c.useServerCapabilitiesDefaults = f.aggregateConfiguration.useServerCapabilitiesDefaults;
        c.treatUncertainAsBad = configuration.treatUncertainAsBad;
        c.percentDataBad = configuration.percentDataBad;
        c.percentDataGood = configuration.percentDataGood;
        c.useSlopedExtrapolation = configuration.useSlopedExtrapolation;
        filterOut_->type_id =
            ua::numericNodeId(0, enc::dataTypeOf<ua::AggregateFilterResult>()->binaryEncodingId);
        filterOut_->encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        filterOut_->data_type = enc::dataTypeOf<ua::AggregateFilterResult>();
        filterOut_->object = result;
    }
}

uaplex_status SubscriptionManager::applyParameters(Subscription& s, MonitoredItem& it,
                                                   const ua::MonitoringParameters& p, bool creating,
                                                   double* revisedInterval,
                                                   uint32_t* revisedQueue) {
    const auto& lim = ctx_.limits;
    // The filter first: a refused filter changes nothing.
    DataChangeFilterSpec filter;
    const ua::AggregateFilter* aggregate = nullptr;
    std::optional<aggregates::AggregateFunction> function;
    aggregates::AggregateConfiguration configuration;
    const ua::ExtensionObject& f = p.filter;
    bool hasFilter = f.encoding != UAPLEX_EXTENSIONOBJECT_NOBODY || f.object != nullptr;
    if (hasFilter) {
        if (it.isEventItem()) {
            if (f.data_type != enc::dataTypeOf<ua::EventFilter>())
                return f.object ? UAPLEX_BadFilterNotAllowed : UAPLEX_BadEventFilterInvalid;
        } else {
            if (f.data_type == enc::dataTypeOf<ua::EventFilter>())
                return UAPLEX_BadFilterNotAllowed;
            if (f.data_type == enc::dataTypeOf<ua::AggregateFilter>() && f.object) {
                // Part 4 7.22.4: an aggregate the server does not compute, a configuration
                // Part 13 4.2.1.2 refuses, a processing interval that is no duration.
                aggregate = static_cast<const ua::AggregateFilter*>(f.object);
                function = aggregates::aggregateFromNodeId(aggregate->aggregateType);
                if (!function) return UAPLEX_BadAggregateNotSupported;
                double pi = aggregate->processingInterval;
                if (std::isnan(pi) || std::isinf(pi) || pi < 0)
                    return UAPLEX_BadMonitoredItemFilterInvalid;
                configuration = aggregates::effectiveConfiguration(
                    aggregate->aggregateConfiguration, aggregates::AggregateConfiguration{});
                if (aggregates::checkConfiguration(configuration) != UAPLEX_Good)
                    return UAPLEX_BadAggregateConfigurationRejected;
            } else if (f.data_type != enc::dataTypeOf<ua::DataChangeFilter>() || !f.object)
                return UAPLEX_BadMonitoredItemFilterUnsupported;
        }
        if (!it.isEventItem() && !aggregate) {
            auto* dcf = static_cast<const ua::DataChangeFilter*>(f.object);
            if (int32_t(dcf->trigger) < 0 || int32_t(dcf->trigger) > 2 || dcf->deadbandType > 2)
                return UAPLEX_BadDeadbandFilterInvalid;
            filter.trigger = dcf->trigger;
            filter.deadbandType = ua::DeadbandType(dcf->deadbandType);
            filter.deadbandValue = dcf->deadbandValue;
            if (filter.deadbandType == ua::DeadbandType::Percent) {
                if (dcf->deadbandValue < 0 || dcf->deadbandValue > 100)
                    return UAPLEX_BadDeadbandFilterInvalid;
                uaplex_status st = source_.euRange(it.nodeHandle(), &filter.euLow, &filter.euHigh);
                if (st != UAPLEX_Good) return st;
            }
        }
    }
    if (it.isEventItem()) {
        if (!hasFilter || !f.object || !ctx_.eventTypes) return UAPLEX_BadEventFilterInvalid;
        std::unique_ptr<EventFilterSpec> spec;
        uaplex_status st = applyEventFilter(*static_cast<const ua::EventFilter*>(f.object), spec);
        if (!spec) return st;
        it.setEventFilter(std::move(spec));
    }
    it.setClientHandle(p.clientHandle);
    double si = p.samplingInterval;
    if (std::isnan(si) || si < 0) si = s.settings().publishingInterval;  // -1: the PI
    if (si > 0 && si < lim.minSamplingInterval) si = lim.minSamplingInterval;
    if (si > lim.maxSamplingInterval) si = lim.maxSamplingInterval;
    si = std::floor(si);  // whole ms
    if (creating || int64_t(si) != it.samplingInterval()) {
        if (!creating) unindexItem(&it);
        it.setSamplingInterval(int64_t(si), ctx_.clock.monoMs());
        if (!creating) indexItem(&it);
    }
    *revisedInterval = si;
    if (!it.isEventItem()) it.setFilter(filter);
    if (!it.isEventItem()) {
        if (aggregate)
            applyAggregate(s, it, *aggregate, *function, configuration, si);
        else
            it.setAggregate(nullptr);
    }

    uint32_t size = p.queueSize;
    if (it.isEventItem()) {
        size = size == 0 ? 1000 : std::min(size, lim.maxEventQueueSize);
        std::unique_ptr<EventQueueHandler> eq;
        if (creating) {
            void* q = nullptr;
            const uaplex_event_queue_ops* ops = nullptr;
            if (!factoryOps_ ||
                factoryOps_->create_event_queue(factory_, 0, it.id(), &q, &ops) != UAPLEX_Good)
                return UAPLEX_BadInternalError;
            if (!ops || !UAPLEX_HAS_FIELD(ops, uaplex_event_queue_ops, items_in_queue)) {
                discardQueue(q, ops);
                return UAPLEX_BadInternalError;
            }
            eq = std::make_unique<EventQueueHandler>(q, ops);
            eq->factory = factoryKeep_;
        }
        it.setQueue(size, p.discardOldest, nullptr, std::move(eq));
    } else {
        size = size == 0 ? 1 : std::min(size, lim.maxNotificationQueueSize);
        std::unique_ptr<DataChangeQueueHandler> dq;
        if (size > 1 && !it.hasDataQueue()) {
            void* q = nullptr;
            const uaplex_data_change_queue_ops* ops = nullptr;
            if (factoryOps_ && factoryOps_->create_data_change_queue(factory_, 0, it.id(), &q,
                                                                     &ops) == UAPLEX_Good) {
                if (ops && UAPLEX_HAS_FIELD(ops, uaplex_data_change_queue_ops, queue_size))
                    dq = std::make_unique<DataChangeQueueHandler>(q, ops, ctx_.values);
                else
                    discardQueue(q, ops);
            }
            if (!dq) size = 1;  // without a factory an item keeps its last value only
        }
        if (dq) dq->factory = factoryKeep_;
        it.setQueue(size, p.discardOldest, std::move(dq), nullptr);
    }
    *revisedQueue = size;
    return UAPLEX_Good;
}

uaplex_status SubscriptionManager::createItem(Subscription& s, ua::TimestampsToReturn ts,
                                              const ua::MonitoredItemCreateRequest& r,
                                              ua::MonitoredItemCreateResult& out, void*& block,
                                              size_t& sessionItems, const PreparedItem* prepared) {
    // Admission before anything is taken: server-wide, per session, per subscription.
    const auto& lim = ctx_.limits;
    if (lim.maxMonitoredItemCount && itemCount_ >= lim.maxMonitoredItemCount)
        return UAPLEX_BadTooManyMonitoredItems;
    if (lim.maxMonitoredItemsPerSession && sessionItems >= lim.maxMonitoredItemsPerSession)
        return UAPLEX_BadTooManyMonitoredItems;
    if (lim.maxMonitoredItemsPerSubscription &&
        s.itemCount() >= lim.maxMonitoredItemsPerSubscription)
        return UAPLEX_BadTooManyMonitoredItems;
    if (int32_t(r.monitoringMode) < 0 || int32_t(r.monitoringMode) > 2)
        return UAPLEX_BadMonitoringModeInvalid;
    uint64_t handle = 0;
    uaplex_status st = prepared ? prepared->status : source_.resolve(r.itemToMonitor, &handle);
    if (st != UAPLEX_Good) return st;
    if (prepared) handle = prepared->handle;
    MonitoredItem* it = s.createItem(r.requestedParameters.clientHandle, handle, block);
    block = nullptr;
    if (!it) return UAPLEX_BadOutOfMemory;
    if (r.itemToMonitor.attributeId == kEventNotifierAttribute) it->markEventItem();
    // An AggregateFilter aggregates values: only on the Value attribute (Part 4 7.22.4).
    if (r.itemToMonitor.attributeId != kValueAttribute &&
        r.requestedParameters.filter.data_type == enc::dataTypeOf<ua::AggregateFilter>()) {
        s.deleteItem(it->id());
        return UAPLEX_BadFilterNotAllowed;
    }
    it->setTimestamps(ts);
    double si = 0;
    uint32_t q = 0;
    st = applyParameters(s, *it, r.requestedParameters, true, &si, &q);
    if (st != UAPLEX_Good) {
        s.deleteItem(it->id());
        return st;
    }
    it->setMode(r.monitoringMode, ctx_.clock.monoMs());
    indexItem(it);
    ++itemCount_;
    ++sessionItems;
    sampleInitial(*it, prepared);
    out.monitoredItemId = it->id();
    out.revisedSamplingInterval = si;
    out.revisedQueueSize = q;
    return UAPLEX_Good;
}

namespace {
// Equal for equal NodeIds (numeric and string identifiers exactly, others by their bytes):
// the order in which a request's items take their blocks.
uint64_t nodeKey(const uaplex_nodeid& id) {
    uint64_t h = (uint64_t(id.namespace_index) << 8 | id.identifier_type) * 0x9E3779B97F4A7C15u;
    if (id.identifier_type == UAPLEX_ID_NUMERIC) return h ^ id.identifier.numeric;
    const uint8_t* p = nullptr;
    size_t len = 0;
    if (id.identifier_type == UAPLEX_ID_STRING || id.identifier_type == UAPLEX_ID_BYTESTRING) {
        p = reinterpret_cast<const uint8_t*>(id.identifier.string.data);
        len = id.identifier.string.length > 0 ? size_t(id.identifier.string.length) : 0;
    } else {
        p = reinterpret_cast<const uint8_t*>(&id.identifier.guid);
        len = sizeof(id.identifier.guid);
    }
    for (size_t i = 0; i < len; ++i) h = (h ^ p[i]) * 0x100000001B3u;
    return h;
}
}  // namespace

uaplex_status SubscriptionManager::createMonitoredItems(uint64_t sessionId,
                                                        const ua::CreateMonitoredItemsRequest& req,
                                                        ua::CreateMonitoredItemsResponse& resp,
                                                        enc::Arena& arena,
                                                        std::span<const PreparedItem> prepared) {
    SubState* st = owned(sessionId, req.subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    if (int32_t(req.timestampsToReturn) < 0 || int32_t(req.timestampsToReturn) > 3)
        return UAPLEX_BadTimestampsToReturnInvalid;
    if (req.itemsToCreate.size() == 0) return UAPLEX_BadNothingToDo;
    if (tooManyOperations(req.itemsToCreate.size())) return UAPLEX_BadTooManyOperations;
    resp.results = arrayOf<ua::MonitoredItemCreateResult>(arena, req.itemsToCreate.size());
    filterArena_ = &arena;
    const size_t n = req.itemsToCreate.size();
    st->sub->reserveItems(n);
    // The items of one node take neighbouring blocks: a publishing tick walks a node's items
    // in a row, so they come in whole cache lines and the prefetcher follows.
    std::vector<void*> blocks;
    std::vector<uint32_t> blockOf;
    if (n > 1) {
        std::vector<std::pair<uint64_t, uint32_t>> byNode(n);
        for (size_t i = 0; i < n; ++i)
            byNode[i] = {nodeKey(req.itemsToCreate[i].itemToMonitor.nodeId), uint32_t(i)};
        std::stable_sort(byNode.begin(), byNode.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        blocks.resize(n);
        blockOf.resize(n);
        for (size_t k = 0; k < n; ++k) {
            blocks[k] = ctx_.itemSlab.allocate();
            blockOf[byNode[k].second] = uint32_t(k);
        }
    }
    // The session's items over its subscriptions (at most MaxSubscriptionsPerSession).
    size_t sessionItems = 0;
    if (const Session* ses = session(sessionId))
        for (uint32_t id : ses->subs)
            if (const SubState* other = state(id)) sessionItems += other->sub->itemCount();
    for (size_t i = 0; i < n; ++i) {
        filterOut_ = &resp.results[i].filterResult;
        void* unplaced = nullptr;
        resp.results[i].statusCode =
            createItem(*st->sub, req.timestampsToReturn, req.itemsToCreate[i], resp.results[i],
                       blocks.empty() ? unplaced : blocks[blockOf[i]], sessionItems,
                       prepared.size() == n && prepared[i].valid ? &prepared[i] : nullptr);
    }
    for (void* b : blocks) ctx_.itemSlab.release(b);  // items refused before they took one
    filterOut_ = nullptr;
    // Event items keep the operation-level diagnostics bits for their StatusResult fields.
    if (uint32_t mask = req.requestHeader.returnDiagnostics & 0x3E0)
        for (size_t i = 0; i < req.itemsToCreate.size(); ++i)
            if (MonitoredItem* it = st->sub->item(resp.results[i].monitoredItemId);
                it && it->isEventItem() && resp.results[i].statusCode == UAPLEX_Good)
                it->setDiagnosticsMask(mask);
    return UAPLEX_Good;
}

uaplex_status SubscriptionManager::modifyMonitoredItems(uint64_t sessionId,
                                                        const ua::ModifyMonitoredItemsRequest& req,
                                                        ua::ModifyMonitoredItemsResponse& resp,
                                                        enc::Arena& arena) {
    SubState* st = owned(sessionId, req.subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    if (int32_t(req.timestampsToReturn) < 0 || int32_t(req.timestampsToReturn) > 3)
        return UAPLEX_BadTimestampsToReturnInvalid;
    if (req.itemsToModify.size() == 0) return UAPLEX_BadNothingToDo;
    if (tooManyOperations(req.itemsToModify.size())) return UAPLEX_BadTooManyOperations;
    resp.results = arrayOf<ua::MonitoredItemModifyResult>(arena, req.itemsToModify.size());
    for (size_t i = 0; i < req.itemsToModify.size(); ++i) {
        auto& r = resp.results[i];
        MonitoredItem* it = st->sub->item(req.itemsToModify[i].monitoredItemId);
        if (!it) {
            r.statusCode = UAPLEX_BadMonitoredItemIdInvalid;
            continue;
        }
        it->setTimestamps(req.timestampsToReturn);
        filterArena_ = &arena;
        filterOut_ = &r.filterResult;
        r.statusCode = applyParameters(*st->sub, *it, req.itemsToModify[i].requestedParameters,
                                       false, &r.revisedSamplingInterval, &r.revisedQueueSize);
        filterOut_ = nullptr;
    }
    return UAPLEX_Good;
}

uaplex_status SubscriptionManager::setMonitoringMode(uint64_t sessionId,
                                                     const ua::SetMonitoringModeRequest& req,
                                                     ua::SetMonitoringModeResponse& resp,
                                                     enc::Arena& arena) {
    SubState* st = owned(sessionId, req.subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    if (int32_t(req.monitoringMode) < 0 || int32_t(req.monitoringMode) > 2)
        return UAPLEX_BadMonitoringModeInvalid;
    if (req.monitoredItemIds.size() == 0) return UAPLEX_BadNothingToDo;
    if (tooManyOperations(req.monitoredItemIds.size())) return UAPLEX_BadTooManyOperations;
    resp.results = arrayOf<ua::StatusCode>(arena, req.monitoredItemIds.size());
    for (size_t i = 0; i < req.monitoredItemIds.size(); ++i) {
        MonitoredItem* it = st->sub->item(req.monitoredItemIds[i]);
        if (!it) {
            resp.results[i] = UAPLEX_BadMonitoredItemIdInvalid;
            continue;
        }
        bool wasDisabled = it->mode() == ua::MonitoringMode::Disabled;
        it->setMode(req.monitoringMode, ctx_.clock.monoMs());
        if (wasDisabled) sampleInitial(*it);  // a pushed item would otherwise wait for a change
        resp.results[i] = UAPLEX_Good;
    }
    return UAPLEX_Good;
}

uaplex_status SubscriptionManager::setTriggering(uint64_t sessionId,
                                                 const ua::SetTriggeringRequest& req,
                                                 ua::SetTriggeringResponse& resp,
                                                 enc::Arena& arena) {
    SubState* st = owned(sessionId, req.subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    if (req.linksToAdd.size() == 0 && req.linksToRemove.size() == 0) return UAPLEX_BadNothingToDo;
    if (tooManyOperations(req.linksToAdd.size()) || tooManyOperations(req.linksToRemove.size()))
        return UAPLEX_BadTooManyOperations;
    MonitoredItem* trigger = st->sub->item(req.triggeringItemId);
    if (!trigger) return UAPLEX_BadMonitoredItemIdInvalid;
    resp.removeResults = arrayOf<ua::StatusCode>(arena, req.linksToRemove.size());
    for (size_t i = 0; i < req.linksToRemove.size(); ++i) {
        auto* links = trigger->links();
        auto pos = links ? std::find(links->begin(), links->end(), req.linksToRemove[i])
                         : std::vector<uint32_t>::iterator{};
        if (!links || pos == links->end()) {
            resp.removeResults[i] = UAPLEX_BadMonitoredItemIdInvalid;
            continue;
        }
        links->erase(pos);
        resp.removeResults[i] = UAPLEX_Good;
    }
    resp.addResults = arrayOf<ua::StatusCode>(arena, req.linksToAdd.size());
    for (size_t i = 0; i < req.linksToAdd.size(); ++i) {
        uint32_t id = req.linksToAdd[i];
        if (!st->sub->item(id)) {
            resp.addResults[i] = UAPLEX_BadMonitoredItemIdInvalid;
            continue;
        }
        auto& links = trigger->mutableLinks();
        if (std::find(links.begin(), links.end(), id) == links.end()) links.push_back(id);
        resp.addResults[i] = UAPLEX_Good;
    }
    return UAPLEX_Good;
}

uaplex_status SubscriptionManager::deleteMonitoredItems(uint64_t sessionId,
                                                        const ua::DeleteMonitoredItemsRequest& req,
                                                        ua::DeleteMonitoredItemsResponse& resp,
                                                        enc::Arena& arena) {
    SubState* st = owned(sessionId, req.subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    if (req.monitoredItemIds.size() == 0) return UAPLEX_BadNothingToDo;
    if (tooManyOperations(req.monitoredItemIds.size())) return UAPLEX_BadTooManyOperations;
    resp.results = arrayOf<ua::StatusCode>(arena, req.monitoredItemIds.size());
    for (size_t i = 0; i < req.monitoredItemIds.size(); ++i) {
        MonitoredItem* it = st->sub->item(req.monitoredItemIds[i]);
        if (!it) {
            resp.results[i] = UAPLEX_BadMonitoredItemIdInvalid;
            continue;
        }
        unindexItem(it);
        st->sub->deleteItem(it->id());
        --itemCount_;
        ++freedSinceTrim_;
        resp.results[i] = UAPLEX_Good;
    }
    return UAPLEX_Good;
}

uaplex_status SubscriptionManager::getMonitoredItems(uint64_t sessionId, uint32_t subscriptionId,
                                                     enc::Arena& arena,
                                                     ua::Array<ua::UInt32>& serverHandles,
                                                     ua::Array<ua::UInt32>& clientHandles) {
    SubState* st = state(subscriptionId);
    if (!st) return UAPLEX_BadSubscriptionIdInvalid;
    if (st->sub->sessionId() != sessionId) return UAPLEX_BadUserAccessDenied;
    size_t n = st->sub->itemCount();
    serverHandles = arrayOf<ua::UInt32>(arena, n);
    clientHandles = arrayOf<ua::UInt32>(arena, n);
    if (n && (!serverHandles.data || !clientHandles.data)) return UAPLEX_BadOutOfMemory;
    size_t i = 0;
    st->sub->forEachItem([&](const MonitoredItem& it) {
        serverHandles[i] = it.id();
        clientHandles[i] = it.clientHandle();
        ++i;
    });
    return UAPLEX_Good;
}

// --- Session and server events ---------------------------------------------------------

void SubscriptionManager::setIdentity(uint64_t sessionId, std::string_view key) {
    auto it = identities_.find(sessionId);
    if (it == identities_.end())
        identities_.emplace(sessionId, std::string(key));
    else if (it->second != key)
        it->second.assign(key);
}

void SubscriptionManager::setAccess(uint64_t sessionId, const void* access) {
    if (Session* s = session(sessionId))
        for (uint32_t id : s->subs)
            if (SubState* st = state(id)) st->sub->setAccess(access);
}

void SubscriptionManager::closeSession(uint64_t sessionId, bool deleteSubscriptions) {
    Session* s = session(sessionId);
    if (!s) return;
    while (!s->requests.empty()) {
        Parked p = std::move(s->requests.front());
        s->requests.pop_front();
        complete(p, UAPLEX_BadSessionClosed);
    }
    std::vector<uint32_t> ids = s->subs;
    for (uint32_t id : ids) {
        if (deleteSubscriptions) {
            removeSubscription(id, false);
        } else if (SubState* st = state(id)) {
            st->sub->setSession(0);  // abandoned: ticks until it expires
            st->ready = false;
        }
    }
    sessions_.erase(sessionId);  // pending status messages go with it
    identities_.erase(sessionId);
}

void SubscriptionManager::stop() {
    for (auto& [id, s] : sessions_) {
        while (!s.requests.empty()) {
            Parked p = std::move(s.requests.front());
            s.requests.pop_front();
            complete(p, UAPLEX_BadServerHalted);
        }
    }
}

bool SubscriptionManager::cancelPublish(uint64_t requestId, uaplex_status status) {
    for (auto& [id, s] : sessions_) {
        for (auto it = s.requests.begin(); it != s.requests.end(); ++it) {
            if (it->ref.requestId != requestId) continue;
            Parked p = std::move(*it);
            s.requests.erase(it);
            complete(p, status);
            return true;
        }
    }
    return false;
}

void SubscriptionManager::timerTick(bool full) {
    int64_t now = ctx_.clock.monoMs();
    dueNow_.clear();
    while (!due_.empty() && due_.top().first <= now) {
        Due d = due_.top();
        due_.pop();
        if (!full && validDue(d)) dueNow_.push_back(d.second);
    }
    if (dueNow_.size() > 1) {  // a rebuilt heap may hold a subscription twice
        std::sort(dueNow_.begin(), dueNow_.end());
        dueNow_.erase(std::unique(dueNow_.begin(), dueNow_.end()), dueNow_.end());
    }
    // The full pass finds the due subscriptions itself: one whose timer moved without a new
    // entry in the heap is still sampled and scheduled again.
    if (full)
        for (auto& [id, st] : subs_)
            if (st.sub->gridTime(now) >= 0) dueNow_.push_back(id);
    sampleChangedNodes(now, !dueNow_.empty());
    // Polled items: only the groups that are due.
    for (auto& [si, g] : groups_) {
        if (now < g.next) continue;
        g.next += ((now - g.next) / si + 1) * si;
        for (size_t i = 0; i < g.items.size(); ++i) {
            MonitoredItem* it = g.items[i];
            if (it->mode() == ua::MonitoringMode::Disabled) continue;
            // A plugin's node: into its node manager's batch, read off the lock; skipped while
            // the previous batch is out (the node manager is slow: no queue builds up).
            if (Sampler* s = g.samplers[i]) {
                if (!batchOf(s).busy_) requestSample(*it, s, now);
                continue;
            }
            scratch_.reset();
            ua::DataValue dv{};
            uaplex_status st = source_.read(it->nodeHandle(), scratch_, dv);
            it->queueValue(dv, st, now);
        }
    }
    std::vector<uint32_t> expired;
    std::vector<SubState*> collected;
    auto tickOne = [&](uint32_t id, SubState& st) {
        switch (st.sub->tick(now)) {
            case TickResult::Expired:
                expired.push_back(id);
                break;
            case TickResult::Idle:
                st.ready = false;
                break;
            default:
                if (!st.ready && !st.publishing) collected.push_back(&st);
        }
    };
    subsVisitedLastTick_ = full ? subs_.size() : dueNow_.size();
    if (full) {
        for (auto& [id, st] : subs_) tickOne(id, st);
    } else {
        for (uint32_t id : dueNow_) tickOne(id, subs_.find(id)->second);
    }
    // Their next expiry (a timer that did not move, a subscription being transferred, is
    // looked at again one interval on).
    for (uint32_t id : dueNow_) {
        auto it = subs_.find(id);
        if (it == subs_.end()) continue;
        const Subscription& sub = *it->second.sub;
        if (sub.timerExpiry() >= now)
            scheduleTick(sub);
        else
            due_.push({now + int64_t(sub.settings().publishingInterval), id});
    }
    // All at once, so that priority and age decide, not table order.
    for (SubState* st : collected) {
        st->ready = true;
        st->readyAt = now;
    }
    for (uint32_t id : expired) {
        SubState* st = state(id);
        uint64_t sessionId = st->sub->sessionId();
        PublishOutcome status = st->sub->statusMessage(UAPLEX_BadTimeout);
        removeSubscription(id, false);
        if (sessionId != 0) deliverStatus(sessionId, std::move(status), false);
    }
    if (!full) {
        // The sessions of the subscriptions that fired (a session's few subscriptions: a
        // repeated session is assigned again, which finds nothing more to do).
        for (SubState* st : collected)
            if (uint64_t sid = st->sub->sessionId())
                if (Session* s = session(sid)) assign(sid, *s);
        return;
    }
    for (auto& [sessionId, s] : sessions_) {
        // The queue's backstop: deadline + 500 ms (the registry's sweep usually fires first).
        for (auto it = s.requests.begin(); it != s.requests.end();) {
            if (it->ref.deadlineMs && now > it->ref.deadlineMs + 500) {
                Parked p = std::move(*it);
                it = s.requests.erase(it);
                complete(p, UAPLEX_BadTimeout);
            } else {
                ++it;
            }
        }
        assign(sessionId, s);
    }
}

void SubscriptionManager::rebuildDue() {
    std::vector<Due> live;
    live.reserve(subs_.size());
    for (auto& [id, st] : subs_) live.push_back({st.sub->timerExpiry() + 1, id});
    due_ = decltype(due_)(std::greater<Due>{}, std::move(live));
}

int64_t SubscriptionManager::nextTickAt() {
    while (!due_.empty() && !validDue(due_.top())) due_.pop();
    int64_t at = due_.empty() ? std::numeric_limits<int64_t>::max() : due_.top().first;
    for (const auto& [si, g] : groups_) at = std::min(at, g.next);
    return at;
}

void SubscriptionManager::releaseGroups(NodeState& ns) {
    for (auto& g : ns.groups)
        if (g.sample.base) ctx_.values.release(g.sample.base);
    ns.groups.clear();
}

void SubscriptionManager::countItems(NodeState& ns, const std::vector<MonitoredItem*>& items) {
    ns.gridItems.clear();
    releaseGroups(ns);  // their items compare in full once
    ns.pushedItems = 0;
    for (MonitoredItem* it : items) {
        if (it->onPublishGrid())
            ns.gridItems.push_back(it);
        else
            ++ns.pushedItems;
    }
    std::sort(ns.gridItems.begin(), ns.gridItems.end(),
              [](const MonitoredItem* a, const MonitoredItem* b) {
                  // By subscription, then by address: a group is walked in memory order.
                  if (&a->subscription() != &b->subscription())
                      return std::less<const Subscription*>{}(&a->subscription(),
                                                              &b->subscription());
                  return std::less<const MonitoredItem*>{}(a, b);
              });
    for (uint32_t i = 0; i < ns.gridItems.size(); ++i) {
        Subscription* s = &ns.gridItems[i]->subscription();
        if (ns.groups.empty() || ns.groups.back().sub != s) ns.groups.push_back({s, i, i, 0, {}});
        ns.groups.back().end = i + 1;
    }
    ns.generation = ctx_.itemGeneration;
}

void SubscriptionManager::releaseNode(NodeState& ns) {
    releaseGroups(ns);
    if (ns.latest) ctx_.values.release(ns.latest);
    ns.latest = nullptr;
}

// Report on change: a Write costs O(1) for the items that sample on their publishing grid
// (the node keeps the latest value; sampleChangedNodes hands it over); only items sampling
// faster than they publish take every change as it comes.
void SubscriptionManager::valueChanged(uint64_t nodeHandle, const ua::DataValue& value) {
    auto n = byNode_.find(nodeHandle);
    if (n == byNode_.end()) {
        if (auto s = nodeStates_.find(nodeHandle); s != nodeStates_.end()) {
            releaseNode(s->second);  // its items are gone
            nodeStates_.erase(s);
        }
        return;
    }
    NodeState& ns = nodeStates_[nodeHandle];
    if (ns.generation != ctx_.itemGeneration) countItems(ns, n->second);
    int64_t now = ctx_.clock.monoMs();
    if (ns.pushedItems) {
        for (MonitoredItem* it : n->second)
            if (!it->onPublishGrid()) it->queueValue(value, UAPLEX_Good, now);
    }
    if (ns.gridItems.empty()) return;
    // A publishing tick is due but has not run yet (the loop is late): the groups it fires
    // take the version current at their grid point before this Write replaces it.
    if (ns.dirty && ns.latest) {
        for (auto& g : ns.groups) {
            if (g.doneVersion == ns.version) continue;
            int64_t grid = g.sub->gridTime(now);
            if (grid >= 0 && ns.changedAt <= grid && grid >= g.earliestNext)
                sampleGroup(ns, g, grid, now);
        }
    }
    ValueCell* c = ctx_.values.copy(value);
    if (!c) return;
    if (ns.latest) ctx_.values.release(ns.latest);
    ns.latest = c;
    ns.changedAt = now;
    if (++ns.version == 0) ns.version = 1;  // 0: never sampled
    if (!ns.dirty) {
        ns.dirty = true;
        dirtyNodes_.push_back(nodeHandle);
    }
}

bool SubscriptionManager::sampleGroup(NodeState& ns, NodeState::Group& g, int64_t slot,
                                      int64_t now) {
    NodeSample& gs = g.sample;
    gs.latest = ns.latest;
    gs.version = ns.version;
    g.sub->setSamplingForTick(true);  // only called for a subscription whose tick fires
    bool groupPending = false, taken = false;
    int64_t earliest = std::numeric_limits<int64_t>::max();
    for (uint32_t i = g.begin; i < g.end; ++i) {
        MonitoredItem* it = ns.gridItems[i];
        ++visitedLastTick_;
        if (it->sampledVersion() == ns.version || it->mode() == ua::MonitoringMode::Disabled)
            continue;                         // re-enabling samples the current value anyway
        if (slot < it->nextSamplingTime()) {  // its interval has not elapsed
            groupPending = true;
        } else {
            it->takeSample(gs, slot, now);
            taken = true;
        }
        earliest = std::min(earliest, it->nextSamplingTime());
    }
    gs.latest = nullptr;  // borrowed
    g.sub->setSamplingForTick(false);
    g.earliestNext = earliest;
    if (groupPending) return true;
    g.doneVersion = ns.version;
    // Every item of the group took the latest: the next comparison is against it.
    if (taken && ns.latest) {
        if (!gs.base) {
            gs.base = ctx_.values.copy(*ns.latest);
        } else if (!ctx_.values.assignContents(*gs.base, *ns.latest)) {
            ctx_.values.release(gs.base);
            gs.base = nullptr;
        }
        gs.baseVersion = ns.version;
        gs.comparedVersion = 0;
    }
    return false;
}

// The grid items of the nodes written since their last sample take the latest value when
// their subscription's publishing tick fires now and their sampling interval has elapsed on
// that grid; a node stays listed
// until all of them have. Idle nodes are not visited.
void SubscriptionManager::sampleChangedNodes(int64_t now, bool firing) {
    visitedLastTick_ = 0;
    // A tick where no subscription fires (the loop's own grid, a polled group) leaves the
    // written nodes for later without visiting them.
    if (dirtyNodes_.empty() || !firing) return;
    size_t keep = 0;
    for (uint64_t node : dirtyNodes_) {
        auto s = nodeStates_.find(node);
        if (s == nodeStates_.end()) continue;
        NodeState& ns = s->second;
        auto n = byNode_.find(node);
        if (n == byNode_.end()) {
            releaseNode(ns);
            nodeStates_.erase(s);
            continue;
        }
        if (ns.generation != ctx_.itemGeneration) countItems(ns, n->second);
        bool pending = false;
        for (auto& g : ns.groups) {
            if (g.doneVersion == ns.version) continue;
            // Its subscription does not fire now, or no item is due on this grid point: the
            // items are not visited.
            int64_t grid = g.sub->gridTime(now);
            if (grid < 0 || grid < g.earliestNext) {
                pending = true;
                continue;
            }
            if (sampleGroup(ns, g, grid, now)) pending = true;
        }
        if (pending)
            dirtyNodes_[keep++] = node;
        else
            ns.dirty = false;
    }
    dirtyNodes_.resize(keep);
}

void SubscriptionManager::nodeDeleted(uint64_t nodeHandle) {
    if (auto s = nodeStates_.find(nodeHandle); s != nodeStates_.end()) {
        releaseNode(s->second);  // the dirty list skips it
        nodeStates_.erase(s);
    }
    auto n = byNode_.find(nodeHandle);
    if (n == byNode_.end()) return;
    int64_t utc = ctx_.clock.utcNow();
    for (MonitoredItem* it : n->second) it->queueNodeDeleted(utc);
}

SubscriptionManager::SessionCounts SubscriptionManager::countsOf(uint64_t session) const {
    SessionCounts c;
    auto it = sessions_.find(session);
    if (it == sessions_.end()) return c;
    c.publishRequests = it->second.requests.size();
    for (uint32_t id : it->second.subs)
        if (const Subscription* sub = find(id)) {
            ++c.subscriptions;
            c.monitoredItems += sub->itemCount();
        }
    return c;
}

}  // namespace uaplex::subscription
