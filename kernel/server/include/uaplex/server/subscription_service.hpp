// SPDX-License-Identifier: Apache-2.0
// The server's subscription engine: one SubscriptionManager behind one short lock, the
// PublishSink that sends parked Publish responses on their channel, and the real clock.
//
// Publish never holds a worker: the dispatcher hands the request over with a ResponseRoute
// and returns without a response; whoever completes it (the request itself, a tick, a Write)
// encodes and sends after the lock is released.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <uaplex/session/response_route.hpp>
#include <uaplex/subscription/subscription_manager.hpp>

namespace uaplex::config {
struct ServerConfig;
}
namespace uaplex::session {
class AccessView;
}

namespace uaplex::server {

using ResponseRoute = session::ResponseRoute;

// The engine's limits from [server.limits].
subscription::SubscriptionLimits subscriptionLimitsOf(const config::ServerConfig& cfg);

class SubscriptionService final : public subscription::PublishSink {
  public:
    SubscriptionService(const config::ServerConfig& cfg, subscription::NodeValueSource& source);
    ~SubscriptionService() override;

    // One engine service (CreateSubscription ... DeleteMonitoredItems; the service table
    // names which): fills a `responseSize`-byte response allocated in `arena` under the
    // engine's lock. Good with the response set, or a ServiceFault status.
    // `identity` is the session's identity key; `claimsIdentity`: the engine records it first
    // (CreateSubscription, TransferSubscriptions compare them). `access` is the session's
    // access view (null: no access policy), handed to the op for the subscriptions it attaches.
    using ManagerOp = uaplex_status (*)(subscription::SubscriptionManager& manager,
                                        std::uint64_t session, const void* access,
                                        const void* request, void* response, enc::Arena& arena);
    template <class Resp>
    uaplex_status call(std::uint64_t session, std::string_view identity, bool claimsIdentity,
                       const session::AccessView* access, ManagerOp op, const void* request,
                       enc::Arena& arena, const enc::DataType*& responseType,
                       void*& response) noexcept {
        auto* resp = arena.allocateArray<Resp>(1);
        if (!resp) return UAPLEX_BadOutOfMemory;
        uaplex_status st = run(session, identity, claimsIdentity, access, op, request, resp, arena);
        if (st != UAPLEX_Good) return st;
        responseType = enc::dataTypeOf<Resp>();
        response = resp;
        return UAPLEX_Good;
    }
    // CreateMonitoredItems (the access gate calls it with the items the session may monitor).
    uaplex_status createMonitoredItems(std::uint64_t session, std::string_view identity,
                                       const ua::CreateMonitoredItemsRequest& request,
                                       enc::Arena& arena, const enc::DataType*& responseType,
                                       void*& response) noexcept;
    // Server.GetMonitoredItems for `session`.
    uaplex_status getMonitoredItems(std::uint64_t session, std::uint32_t subscriptionId,
                                    enc::Arena& arena, ua::Array<ua::UInt32>& serverHandles,
                                    ua::Array<ua::UInt32>& clientHandles) noexcept;
    // Counts for tests and diagnostics.
    std::size_t subscriptionCount() noexcept;
    // Monitored items of every subscription (/metrics: under the engine's mutex, a moment
    // per scrape).
    std::size_t monitoredItemCount() noexcept;
    // The subscriptions and monitored items of one session (under the engine's mutex).
    subscription::SubscriptionManager::SessionCounts countsOf(std::uint64_t session) noexcept;
    // Calls `f` with every subscription under the engine's mutex (diagnostics; `f` must not
    // call back into the engine).
    template <class F>
    void forEachSubscription(F&& f) {
        EngineLock lock(*this);
        manager_.forEachSubscription(f);
    }
    // Where the engine counts live and created subscriptions (ServerDiagnosticsSummary);
    // set before the first request.
    void setSubscriptionCounters(std::atomic<std::uint32_t>* current,
                                 std::atomic<std::uint32_t>* cumulated) noexcept {
        manager_.setSubscriptionCounters(current, cumulated);
    }
    // Publish: the response goes through `route`, now or later.
    void publish(std::uint64_t session, std::shared_ptr<ResponseRoute> route,
                 const ua::PublishRequest& request, std::int64_t deadlineMs) noexcept;
    // Republish: answered through `route` too, so that the retained message is encoded
    // while its lease holds it.
    void republish(std::uint64_t session, std::shared_ptr<ResponseRoute> route,
                   const ua::RepublishRequest& request) noexcept;
    // Cancel: parked Publish requests of `session` with `requestHandle`; how many.
    std::uint32_t cancel(std::uint64_t session, std::uint32_t requestHandle) noexcept;

    // The session's access view after each ActivateSession: events reach the items of its
    // subscriptions only from sources it has ReceiveEvents on. The view outlives the session
    // (AccessPolicy); the engine keeps no copy per session, only its subscriptions point to it.
    void setAccess(std::uint64_t session, const session::AccessView* access) noexcept;
    void closeSession(std::uint64_t session, bool deleteSubscriptions) noexcept;
    void stop() noexcept;
    // `full`: every subscription and session (the loop's resolution grid); otherwise only the
    // subscriptions whose timer expired (see SubscriptionManager::timerTick).
    void timerTick(bool full = true) noexcept;
    // When the engine has work due, in steady_clock milliseconds (INT64_MAX: none).
    std::int64_t nextDueMs() noexcept;
    // Node values changed (Write, the host API's value_set).
    void valueChanged(std::uint64_t node, const ua::DataValue& value) noexcept;
    // An event a node manager raised, for the items on `notifiers`.
    void eventRaised(std::span<const std::uint64_t> notifiers,
                     const subscription::EventView& event) noexcept;
    // ConditionRefresh / ConditionRefresh2 (Part 9 5.5.7) for a subscription of `session`.
    uaplex_status conditionRefresh(std::uint64_t session, std::uint32_t subscriptionId,
                                   std::uint32_t monitoredItemId) noexcept;
    void setQueueFactory(const uaplex_mi_queue_factory_ops* ops, void* self,
                         std::shared_ptr<void> keep = {}) noexcept;
    const uaplex_mi_queue_params& queueParams() const noexcept { return manager_.queueParams(); }
    std::uint32_t resolutionMs() const noexcept { return resolutionMs_; }

    // PublishSink (called under the lock).
    void parked(std::uint64_t requestId) override;
    void complete(std::uint64_t requestId, uaplex_status status,
                  subscription::PublishOutcome&& outcome,
                  subscription::AckResults&& ackResults) override;
    bool channelValid(std::uint64_t requestId, std::uint64_t session,
                      std::uint32_t channelId) override;

  private:
    // Where completed sample batches and the source's pushed-state changes arrive (any
    // thread): detached when the service goes, so a batch a node manager still holds
    // completes into nothing.
    class Gate;
    using Batches = std::vector<std::shared_ptr<subscription::SampleBatch>>;
    // Hands batches to their samplers; call after releasing the lock.
    static void dispatch(Batches& batches) noexcept;
    void sampled(subscription::SampleBatch& batch) noexcept;
    void reportsChangesMoved(std::uint64_t handle) noexcept;

    class SteadyClock final : public subscription::Clock {
      public:
        std::int64_t monoMs() const override;
        std::int64_t utcNow() const override;
    };
    struct Waiting {
        std::uint64_t session;
        std::uint32_t requestHandle;
        std::shared_ptr<ResponseRoute> route;
    };
    struct Done {
        Waiting waiting;
        uaplex_status status;
        subscription::PublishOutcome outcome;
        subscription::AckResults acks;
        bool republish = false;
    };
    uaplex_status run(std::uint64_t session, std::string_view identity, bool claimsIdentity,
                      const session::AccessView* access, ManagerOp op, const void* request,
                      void* response, enc::Arena& arena) noexcept;
    // Sends what completed while the lock was held; call after releasing it.
    void flush(std::vector<Done>& done) noexcept;
    void send(Done& d) noexcept;

    SteadyClock clock_;
    std::uint32_t resolutionMs_;
    subscription::NodeValueSource& source_;
    std::shared_ptr<Gate> gate_;
    std::mutex mutex_;  // the engine's lock: every manager call, never an encode or a send
    // Who holds mutex_ on this thread. The engine reads node values under it (the probe of a
    // new monitored item, the kernel's own values' samples), and a diagnostics value read
    // there (SubscriptionDiagnosticsArray, the session objects) asks the engine again: on the
    // thread that holds it, that read goes on under the lock it already has.
    static inline thread_local const SubscriptionService* holder_ = nullptr;
    class EngineLock {
      public:
        explicit EngineLock(SubscriptionService& s) : s_(s), nested_(holder_ == &s) {
            if (nested_) return;
            s_.mutex_.lock();
            holder_ = &s_;
        }
        ~EngineLock() {
            if (nested_) return;
            holder_ = nullptr;
            s_.mutex_.unlock();
        }
        EngineLock(const EngineLock&) = delete;
        EngineLock& operator=(const EngineLock&) = delete;

      private:
        SubscriptionService& s_;
        const bool nested_;
    };
    subscription::SubscriptionManager manager_;
    std::unordered_map<std::uint64_t, Waiting> waiting_;
    // The channel each session last published on: a parked request from another channel is
    // stale (the session moved by ActivateSession).
    std::unordered_map<std::uint64_t, std::uint32_t> channels_;
    std::vector<Done> done_;
    std::uint64_t nextRequestId_ = 1;
};

}  // namespace uaplex::server
