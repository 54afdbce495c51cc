// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/server.hpp>
#include <uaplex/server/subscription_service.hpp>

#include <uaplex/cpp/clock.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <shared_mutex>

#include <uaplex/config/config.hpp>
#include <uaplex/session/access_control.hpp>
#include <uaplex/session/session_services.hpp>

namespace uaplex::server {

subscription::SubscriptionLimits subscriptionLimitsOf(const config::ServerConfig& cfg) {
    const auto& c = cfg.server.limits;
    subscription::SubscriptionLimits l;
    l.minPublishingInterval = c.min_publishing_interval_ms;
    l.maxPublishingInterval = std::max(c.max_publishing_interval_ms, c.min_publishing_interval_ms);
    // 50 ms resolution (or the minimum interval, if smaller) so that a 100 ms publishing
    // interval keeps its rhythm.
    l.publishingResolution = std::min<std::uint32_t>(50, c.min_publishing_interval_ms);
    l.maxSubscriptionCount = c.max_subscriptions;
    l.maxSubscriptionsPerSession = c.max_subscriptions_per_session;
    l.maxMonitoredItemCount = c.max_monitored_items;
    l.maxMonitoredItemsPerSubscription = c.max_monitored_items_per_subscription;
    l.maxMonitoredItemsPerSession = c.max_monitored_items_per_session;
    l.maxMonitoredItemsPerCall = c.max_monitored_items_per_call;
    l.maxNotificationQueueSize = c.max_monitored_item_queue_size;
    l.maxEventQueueSize = c.max_event_queue_size;
    l.maxPublishRequestCount = c.max_publish_requests_per_session;
    l.maxNotificationsPerPublish = c.max_notifications_per_publish;
    l.minSamplingInterval = c.min_sampling_interval_ms;
    l.maxSamplingInterval = std::max(c.max_sampling_interval_ms, c.min_sampling_interval_ms);
    l.maxAggregateSamples = c.max_aggregate_samples;
    l.maxProcessingInterval = c.max_processing_interval_ms;
    // Subscriptions created together publish on phases 10 ms apart, not in one burst: one
    // subscription's items per tick stay in the cache (docs/results-log.md, scale).
    l.phaseSlotMs = 10;
    return l;
}

std::int64_t SubscriptionService::SteadyClock::monoMs() const {
    return sdk::monotonic_ms();
}

std::int64_t SubscriptionService::SteadyClock::utcNow() const {
    return ua::utcNow();
}

class SubscriptionService::Gate final : public subscription::SampleSink,
                                        public subscription::SourceListener {
  public:
    explicit Gate(SubscriptionService* s) : service_(s) {}
    void sampled(subscription::SampleBatch& b) noexcept override {
        std::shared_lock lock(mutex_);
        if (service_) service_->sampled(b);
    }
    void reportsChangesMoved(std::uint64_t handle) noexcept override {
        std::shared_lock lock(mutex_);
        if (service_) service_->reportsChangesMoved(handle);
    }
    void detach() noexcept {
        std::unique_lock lock(mutex_);  // waits for the completions under way
        service_ = nullptr;
    }

  private:
    std::shared_mutex mutex_;
    SubscriptionService* service_;
};

SubscriptionService::SubscriptionService(const config::ServerConfig& cfg,
                                         subscription::NodeValueSource& source)
    : resolutionMs_(subscriptionLimitsOf(cfg).publishingResolution),
      source_(source),
      gate_(std::make_shared<Gate>(this)),
      manager_(clock_, subscriptionLimitsOf(cfg), source, *this) {
    manager_.context().mayReceiveEvent = session::receivesEventsFrom;
    manager_.setSampleSink(gate_);
    source_.setListener(gate_);
}

void SubscriptionService::dispatch(Batches& batches) noexcept {
    for (auto& b : batches) {
        subscription::Sampler* sampler = b->sampler();  // before the batch moves into it
        sampler->sample(std::move(b));
    }
    batches.clear();
}

void SubscriptionService::sampled(subscription::SampleBatch& batch) noexcept {
    std::vector<Done> done;
    thread_local Batches next;
    {
        EngineLock lock(*this);
        manager_.applyBatch(batch);
        // Items that asked for a sample while it was out go now.
        manager_.takeBatches(next);
        done.swap(done_);
    }
    dispatch(next);
    flush(done);
}

void SubscriptionService::reportsChangesMoved(std::uint64_t handle) noexcept {
    thread_local Batches next;
    try {
        EngineLock lock(*this);
        manager_.reportsChangesMoved(handle);
        manager_.takeBatches(next);
    } catch (...) {
    }
    dispatch(next);
}

void SubscriptionService::setAccess(std::uint64_t session,
                                    const session::AccessView* access) noexcept {
    EngineLock lock(*this);
    manager_.setAccess(session, access);  // updates the session's subscriptions, allocates nothing
}

SubscriptionService::~SubscriptionService() {
    stop();
    gate_->detach();  // the source (it may be gone already) keeps a detached gate
}

uaplex_status SubscriptionService::run(std::uint64_t session, std::string_view identity,
                                       bool claimsIdentity, const session::AccessView* access,
                                       ManagerOp op, const void* request, void* response,
                                       enc::Arena& arena) noexcept {
    uaplex_status st = UAPLEX_BadServiceUnsupported;
    std::vector<Done> done;
    thread_local Batches batches;
    bool trim = false;
    try {
        if (claimsIdentity) {
            EngineLock lock(*this);
            manager_.setIdentity(session, identity);  // no copy while it stays the same
        }
        {
            EngineLock lock(*this);
            st = op(manager_, session, access, request, response, arena);
        }
        // Deleting or transferring subscriptions may answer queued Publish requests; items
        // created or re-enabled on a plugin's node wait for a sample batch.
        {
            EngineLock lock(*this);
            done.swap(done_);
            trim = manager_.takeTrimDue();
            manager_.takeBatches(batches);
        }
    } catch (...) {
        st = UAPLEX_BadOutOfMemory;
    }
    dispatch(batches);
    flush(done);
    if (trim) trimHeap();  // before the response: the client sees the memory back
    return st;
}

uaplex_status SubscriptionService::createMonitoredItems(
    std::uint64_t session, std::string_view identity,
    const ua::CreateMonitoredItemsRequest& request, enc::Arena& arena,
    const enc::DataType*& responseType, void*& response) noexcept {
    // A plugin's nodes are resolved and read for their first sample here, on the request's
    // worker and before the engine's lock: a slow read delays this request only.
    struct Prepared {
        const ua::CreateMonitoredItemsRequest* request;
        std::span<const subscription::PreparedItem> items;
    };
    Prepared prepared{&request, {}};
    const std::size_t n = request.itemsToCreate.size();
    if (n > 0 && (manager_.context().limits.maxMonitoredItemsPerCall == 0 ||
                  n <= manager_.context().limits.maxMonitoredItemsPerCall)) {
        auto* items = arena.allocateArray<subscription::PreparedItem>(n);
        if (!items) return UAPLEX_BadOutOfMemory;
        bool any = false;
        for (std::size_t i = 0; i < n; ++i) {
            items[i] = subscription::PreparedItem{};
            any |= source_.prepare(request.itemsToCreate[i].itemToMonitor, arena, items[i]);
        }
        if (any) prepared.items = {items, n};
    }
    auto op = [](subscription::SubscriptionManager& m, std::uint64_t s, const void*,
                 const void* req, void* resp, enc::Arena& a) {
        const auto& p = *static_cast<const Prepared*>(req);
        return m.createMonitoredItems(
            s, *p.request, *static_cast<ua::CreateMonitoredItemsResponse*>(resp), a, p.items);
    };
    return call<ua::CreateMonitoredItemsResponse>(session, identity, false, nullptr, op, &prepared,
                                                  arena, responseType, response);
}

void SubscriptionService::publish(std::uint64_t session, std::shared_ptr<ResponseRoute> route,
                                  const ua::PublishRequest& req, std::int64_t deadlineMs) noexcept {
    std::vector<Done> done;
    try {
        EngineLock lock(*this);
        std::uint64_t id = nextRequestId_++;
        std::uint32_t channel = route->channelId();
        channels_[session] = channel;
        // Known before the call: the engine may complete it from inside publish().
        waiting_.emplace(id, Waiting{session, req.requestHeader.requestHandle, std::move(route)});
        manager_.publish(session, {id, channel, deadlineMs}, req);
        done.swap(done_);
    } catch (...) {
        // Out of memory: the request is lost like a dropped connection would lose it.
    }
    flush(done);
}

void SubscriptionService::republish(std::uint64_t session, std::shared_ptr<ResponseRoute> route,
                                    const ua::RepublishRequest& req) noexcept {
    Done d{
        Waiting{session, req.requestHeader.requestHandle, std::move(route)}, UAPLEX_Good, {}, {}};
    {
        EngineLock lock(*this);
        d.status = manager_.republish(session, req, d.outcome);
    }
    d.republish = true;
    send(d);
}

std::uint32_t SubscriptionService::cancel(std::uint64_t session,
                                          std::uint32_t requestHandle) noexcept {
    std::vector<Done> done;
    std::uint32_t n = 0;
    {
        EngineLock lock(*this);
        std::vector<std::uint64_t> ids;
        for (const auto& [id, w] : waiting_)
            if (w.session == session && w.requestHandle == requestHandle) ids.push_back(id);
        for (auto id : ids)
            if (manager_.cancelPublish(id, UAPLEX_BadRequestCancelledByRequest)) ++n;
        done.swap(done_);
    }
    flush(done);
    return n;
}

void SubscriptionService::closeSession(std::uint64_t session, bool deleteSubscriptions) noexcept {
    std::vector<Done> done;
    bool trim = false;
    {
        EngineLock lock(*this);
        manager_.closeSession(session, deleteSubscriptions);
        channels_.erase(session);
        done.swap(done_);
        trim = manager_.takeTrimDue();
    }
    flush(done);
    if (trim) trimHeap();
}

void SubscriptionService::stop() noexcept {
    std::vector<Done> done;
    {
        EngineLock lock(*this);
        manager_.stop();
        done.swap(done_);
    }
    flush(done);
}

void SubscriptionService::timerTick(bool full) noexcept {
    std::vector<Done> done;
    thread_local Batches batches;
    bool trim = false;  // expired subscriptions
    {
        EngineLock lock(*this);
        manager_.timerTick(full);
        done.swap(done_);
        trim = manager_.takeTrimDue();
        // The due items of plugin-served nodes, one batch per node manager: read off the lock.
        try {
            manager_.takeBatches(batches);
        } catch (...) {
        }
    }
    dispatch(batches);
    flush(done);
    if (trim) trimHeap();
}

std::int64_t SubscriptionService::nextDueMs() noexcept {
    EngineLock lock(*this);
    return manager_.nextTickAt();  // SteadyClock counts steady_clock milliseconds
}

void SubscriptionService::valueChanged(std::uint64_t node, const ua::DataValue& value) noexcept {
    EngineLock lock(*this);
    manager_.valueChanged(node, value);  // queues only; the next tick publishes
}

void SubscriptionService::eventRaised(std::span<const std::uint64_t> notifiers,
                                      const subscription::EventView& event) noexcept {
    try {
        EngineLock lock(*this);
        manager_.raiseEvent(notifiers, event);  // queues only; the next tick publishes
    } catch (...) {
    }
}

uaplex_status SubscriptionService::conditionRefresh(std::uint64_t session,
                                                    std::uint32_t subscriptionId,
                                                    std::uint32_t monitoredItemId) noexcept {
    try {
        EngineLock lock(*this);
        return manager_.conditionRefresh(session, subscriptionId, monitoredItemId);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

void SubscriptionService::setQueueFactory(const uaplex_mi_queue_factory_ops* ops, void* self,
                                          std::shared_ptr<void> keep) noexcept {
    EngineLock lock(*this);
    manager_.setQueueFactory(ops, self, std::move(keep));
}

void SubscriptionService::parked(std::uint64_t) {
    // Nothing to release: the dispatcher returned the worker when it handed the request over.
}

void SubscriptionService::complete(std::uint64_t requestId, uaplex_status status,
                                   subscription::PublishOutcome&& outcome,
                                   subscription::AckResults&& ackResults) {
    auto it = waiting_.find(requestId);
    if (it == waiting_.end()) return;
    done_.push_back(Done{std::move(it->second), status, std::move(outcome), std::move(ackResults)});
    waiting_.erase(it);
}

bool SubscriptionService::channelValid(std::uint64_t requestId, std::uint64_t session,
                                       std::uint32_t channelId) {
    // The session resolved on this channel when the request came; since then the connection
    // may have gone, or the session moved to another channel and publishes there.
    auto it = waiting_.find(requestId);
    if (it == waiting_.end() || !it->second.route->open()) return false;
    auto c = channels_.find(session);
    return c == channels_.end() || c->second == channelId;
}

uaplex_status SubscriptionService::getMonitoredItems(
    std::uint64_t session, std::uint32_t subscriptionId, enc::Arena& arena,
    ua::Array<ua::UInt32>& serverHandles, ua::Array<ua::UInt32>& clientHandles) noexcept {
    EngineLock lock(*this);
    return manager_.getMonitoredItems(session, subscriptionId, arena, serverHandles, clientHandles);
}

std::size_t SubscriptionService::subscriptionCount() noexcept {
    EngineLock lock(*this);
    return manager_.subscriptionCount();
}

std::size_t SubscriptionService::monitoredItemCount() noexcept {
    EngineLock lock(*this);
    return manager_.monitoredItemCount();
}

subscription::SubscriptionManager::SessionCounts SubscriptionService::countsOf(
    std::uint64_t session) noexcept {
    EngineLock lock(*this);
    return manager_.countsOf(session);
}

void SubscriptionService::flush(std::vector<Done>& done) noexcept {
    for (auto& d : done) send(d);
    done.clear();  // ends the leases: the messages go back to the pool or stay retained
}

void SubscriptionService::send(Done& d) noexcept {
    // One buffer per sending thread, kept across responses: a full NotificationMessage does
    // not grow a fresh buffer by doubling each time. The route copies it into chunks.
    thread_local enc::ByteBuffer out(64 * 1024);
    out.clear();
    auto utc = clock_.utcNow();
    if (d.status != UAPLEX_Good) {
        session::encodeFault(d.waiting.requestHandle, d.status, utc, out);
        d.waiting.route->send(out.span());
        return;
    }
    if (d.republish) {
        ua::RepublishResponse resp{};
        resp.responseHeader.timestamp = utc;
        resp.responseHeader.requestHandle = d.waiting.requestHandle;
        if (d.outcome.message) resp.notificationMessage = d.outcome.message.message();
        enc::BinaryWriter w(out);
        enc::encodeMessage(w, resp);
        d.waiting.route->send(out.span());
        return;
    }
    ua::PublishResponse resp{};
    resp.responseHeader.timestamp = utc;
    resp.responseHeader.requestHandle = d.waiting.requestHandle;
    resp.subscriptionId = d.outcome.subscriptionId;
    resp.availableSequenceNumbers = {std::int32_t(d.outcome.available.size()),
                                     d.outcome.available.data()};
    resp.moreNotifications = d.outcome.more;
    // Encoded straight from the retained message: the lease keeps it alive until then.
    if (d.outcome.message) resp.notificationMessage = d.outcome.message.message();
    resp.results = {std::int32_t(d.acks.size()), d.acks.data()};
    resp.diagnosticInfos = {0, nullptr};
    enc::BinaryWriter w(out);
    enc::encodeMessage(w, resp);
    if (!w.ok()) session::encodeFault(d.waiting.requestHandle, UAPLEX_BadEncodingError, utc, out);
    d.waiting.route->send(out.span());
}

}  // namespace uaplex::server
