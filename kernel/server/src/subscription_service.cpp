// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/server.hpp>
#include <uaplex/server/subscription_service.hpp>

#include <uaplex/cpp/clock.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>

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

SubscriptionService::SubscriptionService(const config::ServerConfig& cfg,
                                         subscription::NodeValueSource& source)
    : resolutionMs_(subscriptionLimitsOf(cfg).publishingResolution),
      manager_(clock_, subscriptionLimitsOf(cfg), source, *this) {
    manager_.context().mayReceiveEvent = session::receivesEventsFrom;
}

void SubscriptionService::setAccess(std::uint64_t session,
                                    const session::AccessView* access) noexcept {
    std::lock_guard lock(mutex_);
    manager_.setAccess(session, access);  // updates the session's subscriptions, allocates nothing
}

SubscriptionService::~SubscriptionService() {
    stop();
}

uaplex_status SubscriptionService::run(std::uint64_t session, std::string_view identity,
                                       bool claimsIdentity, const session::AccessView* access,
                                       ManagerOp op, const void* request, void* response,
                                       enc::Arena& arena) noexcept {
    uaplex_status st = UAPLEX_BadServiceUnsupported;
    std::vector<Done> done;
    bool trim = false;
    try {
        if (claimsIdentity) {
            std::lock_guard lock(mutex_);
            manager_.setIdentity(session, identity);  // no copy while it stays the same
        }
        {
            std::lock_guard lock(mutex_);
            st = op(manager_, session, access, request, response, arena);
        }
        // Deleting or transferring subscriptions may answer queued Publish requests.
        {
            std::lock_guard lock(mutex_);
            done.swap(done_);
            trim = manager_.takeTrimDue();
        }
    } catch (...) {
        st = UAPLEX_BadOutOfMemory;
    }
    flush(done);
    if (trim) trimHeap();  // before the response: the client sees the memory back
    return st;
}

uaplex_status SubscriptionService::createMonitoredItems(
    std::uint64_t session, std::string_view identity,
    const ua::CreateMonitoredItemsRequest& request, enc::Arena& arena,
    const enc::DataType*& responseType, void*& response) noexcept {
    auto op = [](subscription::SubscriptionManager& m, std::uint64_t s, const void*,
                 const void* req, void* resp, enc::Arena& a) {
        return m.createMonitoredItems(s, *static_cast<const ua::CreateMonitoredItemsRequest*>(req),
                                      *static_cast<ua::CreateMonitoredItemsResponse*>(resp), a);
    };
    return call<ua::CreateMonitoredItemsResponse>(session, identity, false, nullptr, op, &request,
                                                  arena, responseType, response);
}

void SubscriptionService::publish(std::uint64_t session, std::shared_ptr<ResponseRoute> route,
                                  const ua::PublishRequest& req, std::int64_t deadlineMs) noexcept {
    std::vector<Done> done;
    try {
        std::lock_guard lock(mutex_);
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
        std::lock_guard lock(mutex_);
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
        std::lock_guard lock(mutex_);
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
        std::lock_guard lock(mutex_);
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
        std::lock_guard lock(mutex_);
        manager_.stop();
        done.swap(done_);
    }
    flush(done);
}

void SubscriptionService::timerTick(bool full) noexcept {
    std::vector<Done> done;
    bool trim = false;  // expired subscriptions
    {
        std::lock_guard lock(mutex_);
        manager_.timerTick(full);
        done.swap(done_);
        trim = manager_.takeTrimDue();
    }
    flush(done);
    if (trim) trimHeap();
}

std::int64_t SubscriptionService::nextDueMs() noexcept {
    std::lock_guard lock(mutex_);
    return manager_.nextTickAt();  // SteadyClock counts steady_clock milliseconds
}

void SubscriptionService::valueChanged(std::uint64_t node, const ua::DataValue& value) noexcept {
    std::lock_guard lock(mutex_);
    manager_.valueChanged(node, value);  // queues only; the next tick publishes
}

void SubscriptionService::eventRaised(std::span<const std::uint64_t> notifiers,
                                      const subscription::EventView& event) noexcept {
    try {
        std::lock_guard lock(mutex_);
        manager_.raiseEvent(notifiers, event);  // queues only; the next tick publishes
    } catch (...) {
    }
}

uaplex_status SubscriptionService::conditionRefresh(std::uint64_t session,
                                                    std::uint32_t subscriptionId,
                                                    std::uint32_t monitoredItemId) noexcept {
    try {
        std::lock_guard lock(mutex_);
        return manager_.conditionRefresh(session, subscriptionId, monitoredItemId);
    } catch (...) {
        return UAPLEX_BadOutOfMemory;
    }
}

void SubscriptionService::setQueueFactory(const uaplex_mi_queue_factory_ops* ops, void* self,
                                          std::shared_ptr<void> keep) noexcept {
    std::lock_guard lock(mutex_);
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
    std::lock_guard lock(mutex_);
    return manager_.getMonitoredItems(session, subscriptionId, arena, serverHandles, clientHandles);
}

std::size_t SubscriptionService::subscriptionCount() noexcept {
    std::lock_guard lock(mutex_);
    return manager_.subscriptionCount();
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
