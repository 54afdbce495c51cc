// SPDX-License-Identifier: Apache-2.0
#include <uaplex/server/server.hpp>

#include <uaplex/pipeline/pipeline.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>

#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/security/channel_security.hpp>
#include <uaplex/security/crypto.hpp>
#include <uaplex/security/user_token_crypto.hpp>
#include <uaplex/server/audit_trail.hpp>
#include <uaplex/server/discovery.hpp>
#include <uaplex/server/dispatcher.hpp>
#include <uaplex/server/pki_identity_crypto.hpp>
#include <uaplex/server/service_table.hpp>
#include <uaplex/server/subscription_service.hpp>
#include <uaplex/session/access_control.hpp>
#include <uaplex/session/identity_verifier.hpp>
#include <uaplex/session/server_counters.hpp>
#include <uaplex/session/session_manager.hpp>
#include <uaplex/subscription/retransmission_queue.hpp>
#include "pubsub_publisher.hpp"
#include "security_posture.hpp"

namespace uaplex::server {

using host::logger;

namespace {

constexpr std::string_view kTokenPolicyOnNone =
    "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256";

// Whether a refused certificate may be logged now (the refusal log budget of
// [server.limits]); `note` then counts the refusals it dropped since the last line.
bool refusalLogAllowed(security::EventBudget& budget, std::string& note) {
    std::uint64_t suppressed = 0;
    if (!budget.allow(pipeline::monotonicMs(), suppressed)) return false;
    if (suppressed) note = fmt::format(" ({} more refusals not logged)", suppressed);
    return true;
}

// The Dispatch the pipeline executes requests through: the service table and the dispatcher.
pipeline::Dispatch dispatchOf(Dispatcher& d) noexcept {
    pipeline::Dispatch out;
    out.self = &d;
    out.traits = [](void*, std::uint32_t id) noexcept {
        const ServiceDescriptor* row = findService(id);
        return row ? pipeline::ServiceTraits{row->admission, row->onIoThread}
                   : pipeline::ServiceTraits{};
    };
    out.execute = [](void* self, std::span<const std::uint8_t> request,
                     const session::RequestContext& ctx, enc::Arena& arena,
                     enc::ByteBuffer& out) noexcept {
        return static_cast<Dispatcher*>(self)->handle(request, ctx, arena, out);
    };
    return out;
}

}  // namespace

using pipeline::monotonicMs;

Server::Server(const config::ServerConfig& cfg, host::Host& host, ServiceHandler& services)
    : cfg_(cfg), host_(host), services_(services) {
    if (cfg_.audit.enabled) audit_ = std::make_unique<AuditTrail>(cfg_, services_);
    const auto& l = cfg_.server.limits;
    session::SessionLimits sl{l.max_sessions,
                              l.min_session_timeout_ms,
                              l.max_session_timeout_ms,
                              l.max_unactivated_sessions_per_channel,
                              l.max_unactivated_sessions_per_peer,
                              l.unactivated_session_timeout_ms,
                              l.max_session_string_length};
    session::SessionStateHooks hooks{[this] { return services_.createSessionState(); },
                                     [this](void* p) { services_.destroySessionState(p); }};
    sessions_ =
        std::make_unique<session::SessionManager>(sl, &services_.counters(), std::move(hooks));
    deadlines_ = std::make_unique<session::DeadlineMonitor>();
    sessions_->setDeadlineMonitor(deadlines_.get());
    sessions_->setTimeoutScheduled(
        [](void* user, std::int64_t dueMs) {
            // Its subscriptions may free messages: the heap check starts within a second.
            static_cast<Server*>(user)->scheduleSweep(
                std::min(dueMs, monotonicMs() + kHeapCheckMs));
        },
        this);
    setUpSecurity();
    discovery_ = std::make_unique<Discovery>(cfg_.server, pki_ ? pki_->own().get() : nullptr);
    // Identities and access control ([access]): the token policies the endpoints offer and
    // the rules compiled against the namespaces the services now have.
    std::shared_ptr<PkiIdentityCrypto> identityCrypto;
    if (pki_) {
        identityCrypto = std::make_shared<PkiIdentityCrypto>(*pki_);
        identityCrypto->onRefused = [this, budget = refusalLogBudget_](
                                        uaplex_status st, const security::Certificate& c) {
            if (audit_) audit_->certificate(c.der, st, "ActivateSession X509IdentityToken");
            std::string note;
            if (refusalLogAllowed(*budget, note))
                logger()->warn("pki: refused user certificate {} ({}): 0x{:08X}{}", c.subject(),
                               c.thumbprintHex(), st, note);
        };
    }
    identity_ = std::make_unique<session::IdentityVerifier>(cfg_.access, identityCrypto);
    if (pki_ && pki_->own()) {
        // On None endpoints passwords and token signatures are secured with the server
        // certificate under Basic256Sha256 (Part 4 7.41), never sent in clear.
        identity_->setNoneTokenPolicyUri(std::string(kTokenPolicyOnNone));
        discovery_->setNoneTokenPolicyUri(std::string(kTokenPolicyOnNone));
    }
    accessPolicy_ = std::make_unique<session::AccessPolicy>(cfg_.access, services_.namespaceUris());
    for (const auto& w : accessPolicy_->warnings()) logger()->warn("{}", w);
    // One line per insecure setting in force (the strict profile leaves none).
    for (const auto& w : insecureSettings(cfg_, pki_ && pki_->own(), *accessPolicy_))
        logger()->warn("{}", w);
    discovery_->setTokenPolicies(identity_->policies());
    dispatcher_ = std::make_unique<Dispatcher>(cfg_, *sessions_, services_, *discovery_);
    dispatcher_->setPki(pki_.get());
    dispatcher_->setAudit(audit_.get());
    dispatcher_->setAccess(identity_.get(), accessPolicy_.get());
    if (services_.valueSource()) setUpSubscriptions();
    services_.setDiagnosticsArrays(
        [](void* user, std::uint32_t arrayNode, const ua::Guid* session, enc::Arena& arena,
           ua::Variant& out) noexcept {
            static_cast<Server*>(user)->diagnosticsArray(arrayNode, session, arena, out);
        },
        [](void* user, const ua::Guid* only, enc::Arena& arena, ua::Guid* guids, ua::String* names,
           std::size_t capacity) noexcept {
            return static_cast<Server*>(user)->diagnosedSessions(only, arena, guids, names,
                                                                 capacity);
        },
        this);
    // The Status.State of the PublishSubscribe model, from the publisher once it exists.
    services_.setPubSubState(
        [](void* user, config::PubSubComponent kind, std::uint32_t index) noexcept {
            const PubSubPublisher* p =
                static_cast<Server*>(user)->pubsubLive_.load(std::memory_order_acquire);
            return p != nullptr ? p->stateOf(kind, index) : std::int32_t(0);  // Disabled
        },
        this);
    pipeline_ = std::make_unique<pipeline::Pipeline>(
        cfg_, host_, *sessions_, *deadlines_, dispatchOf(*dispatcher_),
        pipeline::Pipeline::ChannelSecurity{securityProvider_.get(), offersNone_},
        pipeline::Pipeline::SweepHook{[](void* user, std::int64_t dueMs) {
                                          static_cast<Server*>(user)->scheduleSweep(dueMs);
                                      },
                                      this});
    session::QueuedCanceller canceller = pipeline_->canceller();
    dispatcher_->setCanceller(canceller);
    sessions_->setClosedHook([this, canceller](session::Session& s) {
        s.requests().cancelAll(UAPLEX_BadSessionClosed, canceller);
        if (subscriptions_)
            subscriptions_->closeSession(sessionKey(s), s.deleteSubscriptionsOnClose());
    });
}

void Server::setUpSubscriptions() {
    subscriptions_ = std::make_unique<SubscriptionService>(cfg_, *services_.valueSource());
    subscriptions_->setSubscriptionCounters(&services_.counters().currentSubscriptionCount,
                                            &services_.counters().cumulatedSubscriptionCount);
    dispatcher_->setSubscriptions(subscriptions_.get());
    // Without a factory every data item keeps its last value only (queue size 1).
    if ((miQueues_ = host_.createMiQueueFactory(subscriptions_->queueParams()))) {
        miQueues_->start();
        subscriptions_->setQueueFactory(miQueues_->ops<uaplex_mi_queue_factory_ops>(),
                                        miQueues_->self(), miQueues_);
    }
    // Stored values' changes: the monitored items, and the [pubsub] fields once it started.
    services_.setValueChanged(
        [](void* user, std::uint64_t node, const ua::DataValue& v) {
            auto* self = static_cast<Server*>(user);
            self->subscriptions_->valueChanged(node, v);
            if (PubSubPublisher* p = self->pubsubLive_.load(std::memory_order_acquire))
                p->valueChanged(node, v);
        },
        this);
    services_.setGetMonitoredItems(
        [](void* user, std::uint64_t session, std::uint32_t id, enc::Arena& arena,
           ua::Array<ua::UInt32>& server, ua::Array<ua::UInt32>& client) {
            return static_cast<SubscriptionService*>(user)->getMonitoredItems(session, id, arena,
                                                                              server, client);
        },
        subscriptions_.get());
    services_.setEventRaised(
        [](void* user, std::span<const std::uint64_t> notifiers, const subscription::EventView& e) {
            static_cast<SubscriptionService*>(user)->eventRaised(notifiers, e);
        },
        subscriptions_.get());
}

Server::~Server() {
    stop();
}

void Server::setUpSecurity() {
    std::vector<security::OfferedPolicy> offered;
    for (const auto& o : cfg_.server.security) {
        if (o.policy == "None") {
            offersNone_ = true;
            continue;
        }
        security::OfferedPolicy p{security::findPolicy(o.policy)};
        if (!p.policy) throw std::runtime_error("security: unknown policy " + o.policy);
        for (const auto& m : o.modes) (m == "Sign" ? p.sign : p.signAndEncrypt) = true;
        offered.push_back(p);
    }
    if (offered.empty()) return;
    // The application instance certificate: created at first start (Part 6 6.2.2).
    pki_ = std::make_unique<security::Pki>(cfg_.server.pki_dir);
    security::CertificateRequest request;
    request.applicationUri = cfg_.server.application_uri;
    request.commonName = cfg_.server.application_name;
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) == 0 && name[0]) request.dnsNames.push_back(name);
    request.dnsNames.push_back("localhost");
    bool existed = std::filesystem::exists(pki_->ownCertificateFile());
    pki_->loadOrCreateOwn(request);
    if (!existed)
        logger()->info("pki: created the application instance certificate {} ({})",
                       pki_->ownCertificateFile().string(), pki_->own()->thumbprintHex());
    const auto& limits = cfg_.server.limits;
    pki_->setRejectedLimits({limits.max_rejected_certificates, limits.max_rejected_bytes});
    securityProvider_ = std::make_unique<security::Provider>(*pki_, std::move(offered));
    // Every refused OPN may log, before any proof of possession: a budget per minute keeps a
    // flood from filling the log; what it drops is counted in the next line.
    refusalLogBudget_ = std::make_shared<security::EventBudget>(
        limits.max_certificate_refusal_logs_per_minute, 60000);
    securityProvider_->onRefused = [this, budget = refusalLogBudget_](
                                       uaplex_status st, const security::Certificate& c) {
        if (audit_) audit_->certificate(c.der, st, "OpenSecureChannel");
        std::string note;
        if (refusalLogAllowed(*budget, note))
            logger()->warn("pki: refused client certificate {} ({}): 0x{:08X}{}{}", c.subject(),
                           c.thumbprintHex(), st,
                           st == UAPLEX_BadCertificateUntrusted ? " BadCertificateUntrusted" : "",
                           note);
    };
    securityProvider_->onRecorded = [budget = refusalLogBudget_](const security::Certificate& c) {
        std::string note;
        if (refusalLogAllowed(*budget, note))
            logger()->info("pki: {} ({}) proved its key: kept in rejected/certs for review",
                           c.subject(), c.thumbprintHex());
    };
}

std::size_t Server::connectionCount() const {
    return pipeline_->connectionCount();
}

void Server::start() {
    if (started_) return;
    // [pubsub] first: a configuration it cannot serve fails the start before anything runs.
    if (cfg_.pubsub.enabled && !pubsub_) {
        if (!subscriptions_) throw std::runtime_error("[pubsub] needs the services' value source");
        pubsub_ = std::make_unique<PubSubPublisher>(cfg_.pubsub, host_, services_);
        pubsubLive_.store(pubsub_.get(), std::memory_order_release);
        pubsub_->start();
    }
    started_ = true;
    services_.setAccessPolicy(accessPolicy_.get());  // cleared by stop(): the policy is ours
    running_ = true;
    housekeeping_ = std::thread([this] { housekeepingLoop(); });
    if (subscriptions_) publishing_ = std::thread([this] { publishingLoop(); });
    // Reverse connects announce the first endpoint, its host as configured.
    const auto& endpoints = cfg_.server.endpoints;
    // transport-https's metrics path serves what the admin listener serves.
    pipeline_->setMetricsText([this](std::string& out) { writeMetrics(out); });
    pipeline_->start(endpoints.empty() ? std::string()
                                       : discovery_->substituteHost(endpoints.front(), ""));
}

void Server::stop() noexcept {
    if (!started_) return;
    started_ = false;
    running_ = false;
    pipeline_->stopAccepting();
    services_.setAccessPolicy(nullptr);
    // Logins waiting for the password pool are dropped (their clients see the channel close).
    dispatcher_->stopLogins();
    // No more NetworkMessages; the plugin goes (the offline status first). The publisher
    // itself stays until ~Server: the change hook may still be running into it.
    if (pubsub_) pubsub_->stop();
    // Parked Publish requests are answered BadServerHalted while their channels still exist.
    if (subscriptions_) {
        subscriptions_->stop();
        services_.setEventRaised(nullptr, nullptr);
        services_.setValueChanged(nullptr, nullptr);  // node managers may still write; the
                                                      // service stays alive until ~Server
    }
    // Queued requests answer BadServerHalted, executing ones get a bounded wait; then the
    // workers are joined and the transports stopped (docs/architecture.md, Shutdown drain).
    pipeline_->drain(drainGraceMs_);
    {
        // Under the lock: the sweep either sees running_ false or is waiting already.
        std::lock_guard lock(housekeepingMutex_);
        sweepWake_.notify_all();
    }
    housekeepingWake_.notify_all();
    if (housekeeping_.joinable()) housekeeping_.join();
    if (publishing_.joinable()) publishing_.join();
    pipeline_->discardQueued();
    sessions_->closeAll();
    services_.shutdown();
    pipeline_->clear();
}

void Server::reloadUsers() {
    identity_->reloadUsers();
}

void Server::reloadMonitoredItemQueues() {
    if (!subscriptions_) return;
    std::shared_ptr<host::PluginInstance> next =
        host_.createMiQueueFactory(subscriptions_->queueParams());
    if (next) {
        next->start();
        subscriptions_->setQueueFactory(next->ops<uaplex_mi_queue_factory_ops>(), next->self(),
                                        next);
    } else {
        subscriptions_->setQueueFactory(nullptr, nullptr);
    }
    // The old instance lives on in the queues it made; the last one to go unloads it.
    miQueues_ = std::move(next);
}

void Server::publishingLoop() {
    // Wakes when a subscription's publishing timer expires (or a polled sampling group is due),
    // so that each subscription publishes at its own grid point and the subscriptions' bursts
    // stay apart, on their own phases; those ticks visit only the due subscriptions. The full
    // pass over every subscription and session (the backstops) runs on a fixed grid, not
    // `period` after the previous tick's end, and coarser than any publishing interval needs:
    // an idle server wakes only for its subscriptions.
    const auto period = std::max(std::chrono::milliseconds(subscriptions_->resolutionMs()),
                                 std::chrono::milliseconds(250));
    auto next = std::chrono::steady_clock::now() + period;
    std::unique_lock lock(housekeepingMutex_);
    std::int64_t lastDue = 0;
    while (running_.load()) {
        auto wake = next;
        lock.unlock();
        std::int64_t due = subscriptions_->nextDueMs();
        lock.lock();
        if (due != std::numeric_limits<std::int64_t>::max()) {
            // Exactly at the due millisecond (the engine's clock is steady_clock's), so that
            // samples keep their phase; 1 ms on if a tick did not move it (never a spin).
            auto at = std::chrono::steady_clock::time_point(std::chrono::milliseconds(due));
            if (due <= lastDue)
                at = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
            if (at < wake) wake = at;
        }
        if (housekeepingWake_.wait_until(lock, wake) != std::cv_status::timeout) continue;
        if (!running_.load()) break;
        const auto woke = std::chrono::steady_clock::now();
        const auto nowMs =
            std::chrono::duration_cast<std::chrono::milliseconds>(woke.time_since_epoch()).count();
        if (nowMs >= due) lastDue = due;  // this tick serves it
        // Only a full pass moves the grid on, so a due tick that ends past it never skips one.
        const bool full = woke >= next;
        if (full) next += ((woke - next) / period + 1) * period;  // missed passes collapse
        lock.unlock();
        subscriptions_->timerTick(full);
        lock.lock();
    }
}

// --- memory policy (housekeeping) ------------------------------------------------------------

bool trimHeapAfterMessageBurst() noexcept {
    // Process-wide like the pools' count (two servers in one process share them).
    static std::atomic<std::uint64_t> seen{0}, trimmedAt{0};
    std::uint64_t freed = subscription::MessagePool::freedBytes();
    if (seen.exchange(freed, std::memory_order_relaxed) != freed)
        return false;  // still freeing: wait for a quiet tick
    std::uint64_t at = trimmedAt.load(std::memory_order_relaxed);
    if (freed - at < (std::uint64_t{256} << 10) ||
        !trimmedAt.compare_exchange_strong(at, freed, std::memory_order_relaxed))
        return false;
    trimHeap();
    return true;
}

void Server::scheduleSweep(std::int64_t dueMs) {
    std::lock_guard lock(housekeepingMutex_);
    if (dueMs >= sweepDueMs_) return;
    sweepDueMs_ = dueMs;
    sweepWake_.notify_all();
}

void Server::housekeepingLoop() {
    std::unique_lock lock(housekeepingMutex_);
    while (running_.load()) {
        // A session or channel made from here on lowers sweepDueMs_ (scheduleSweep).
        sweepDueMs_ = INT64_MAX;
        lock.unlock();
        std::int64_t now = monotonicMs();
        std::int64_t next = INT64_MAX;
        if (std::size_t n = sessions_->sweep(now, &next))
            logger()->info("{} session(s) timed out", n);
        // The heap trim after a burst of freed NotificationMessages needs a tick after the
        // burst: every 200 ms while messages are being freed, every second while sessions
        // (whose subscriptions free them) exist, not at all on a server without any.
        trimHeapAfterMessageBurst();
        std::uint64_t freed = subscription::MessagePool::freedBytes();
        if (freed != messagesFreedSeen_)
            next = std::min(next, now + kBurstTickMs);
        else if (next != INT64_MAX)
            next = std::min(next, now + kHeapCheckMs);
        messagesFreedSeen_ = freed;
        // The same after a burst of closed sessions and channels: what they freed is spread
        // over the heaps of the threads that made them (the transport's, the workers'), and
        // the C allocator gives free pages inside a heap back only when trimmed. Once at
        // least kTrimAfterClosed closed since the last trim and a tick passed without another
        // (200 ms while they close, at most 1 s later while connections or sessions exist),
        // the heap is trimmed once; a steady churn of connections is never quiet.
        const auto& counters = services_.counters();
        std::uint64_t closed =
            pipeline_->connectionsClosed() + std::uint32_t(counters.cumulatedSessionCount.load() -
                                                           counters.currentSessionCount.load());
        if (closed != closedSeen_) {
            next = std::min(next, now + kBurstTickMs);
            closedSeen_ = closed;
        } else if (closed - closedAtTrim_ >= kTrimAfterClosed) {
            closedAtTrim_ = closed;
            pipeline::trimHeap();
            // What the closed sessions' last owners free after the trim (the engine's and the
            // pools' deferred releases) is given back by one more, a second later.
            secondTrimDueMs_ = now + kHeapCheckMs;
        } else if (now >= secondTrimDueMs_) {
            secondTrimDueMs_ = INT64_MAX;
            pipeline::trimHeap();
        }
        next = std::min(next, secondTrimDueMs_);
        if (pipeline_->connectionCount() > 0) next = std::min(next, now + kHeapCheckMs);
        // The connections' timeouts and the request records a burst left.
        next = std::min(next, pipeline_->housekeep(now));
        lock.lock();
        // Sleeps until the earliest timeout or expiry: no wake-up while nothing is due.
        sweepDueMs_ = std::min(sweepDueMs_, next);
        while (running_.load() && monotonicMs() < sweepDueMs_) {
            if (sweepDueMs_ == INT64_MAX)
                sweepWake_.wait(lock);
            else
                sweepWake_.wait_until(lock, std::chrono::steady_clock::time_point(
                                                std::chrono::milliseconds(sweepDueMs_)));
        }
    }
}

}  // namespace uaplex::server
