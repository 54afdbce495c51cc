// SPDX-License-Identifier: Apache-2.0
// The OPC UA server: composes the request pipeline (kernel/pipeline: transports, connections,
// admission, the request queue, workers, deadlines) with the services above it (dispatch
// through the service table, discovery, sessions, subscriptions); start, stop, housekeeping.
//
// Threads: the pipeline's (see pipeline.hpp); one housekeeping thread closes timed-out
// sessions and channels whose token expired; one publishing thread ticks the subscriptions.
#pragma once

#include <uaplex/pipeline/request.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <uaplex/config/config.hpp>
#include <uaplex/server/service_handler.hpp>

namespace uaplex::host {
class Host;
class PluginInstance;
}  // namespace uaplex::host
namespace uaplex::pipeline {
class Pipeline;
}  // namespace uaplex::pipeline
namespace uaplex::security {
class Pki;
class Provider;
class EventBudget;
}  // namespace uaplex::security
namespace uaplex::session {
class SessionManager;
class DeadlineMonitor;
class IdentityVerifier;
class AccessPolicy;
}  // namespace uaplex::session

namespace uaplex::server {

class AuditTrail;
class Dispatcher;
class SubscriptionService;
class Discovery;
class PubSubPublisher;

// The heap-trim policy, in one place (housekeeping, server.cpp); the trim itself is the
// pipeline's, whose workers shrink their arenas after one.
using pipeline::heapTrimCount;
using pipeline::trimHeap;
// Housekeeping (one thread), every tick: once the engine freed at least 256 KiB of
// NotificationMessages (e.g. the first messages of a thousand new subscriptions, all
// acknowledged) and then a tick passed without more, the heap gives its free pages back;
// true when it trimmed. A steady churn of messages is never quiet, so it costs no trims.
bool trimHeapAfterMessageBurst() noexcept;

class Server {
  public:
    // `services` must outlive the server.
    Server(const config::ServerConfig& cfg, host::Host& host, ServiceHandler& services);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Creates and starts the transports, listens on every endpoint, starts reverse connects
    // and the workers. Throws std::runtime_error with a one-line message.
    void start();
    // Stops accepting, waits for the registered requests (a drain: bounded by their longest
    // remaining deadline + the drain grace), closes every connection and session, joins the
    // threads. Idempotent.
    void stop() noexcept;
    // The grace a shutdown drain adds to the longest remaining deadline (2 min by default;
    // docs/pipeline.md, Request registry and deadlines).
    void setDrainGraceMs(std::int64_t ms) noexcept { drainGraceMs_ = ms; }
    // After a reload that changed [slots] monitored_item_queue: items created from now on
    // use the new factory; existing ones keep theirs. Throws HostError (nothing changes).
    void reloadMonitoredItemQueues();

    session::SessionManager& sessions() noexcept { return *sessions_; }
    // Re-reads the users file of [access] (SIGHUP); throws session::UserStoreError and keeps
    // the users it had.
    void reloadUsers();
    // The certificate store with the application instance certificate and its private key
    // (security::Pki::own(), privateKey()); null when every endpoint offers None only.
    security::Pki* pki() noexcept { return pki_.get(); }
    std::size_t connectionCount() const;
    // What an operator sees of a session (`uaplex ctl sessions`).
    struct SessionInfo {
        std::string sessionId;  // "ns=1;g=<guid>", as a client reads it
        std::string name, applicationUri, peer;
        std::string user;  // the identity key: "anonymous", "user:<name>", "x509:<thumbprint>"
        std::int64_t createdUnixMs = 0;
        std::uint32_t channelId = 0;
        bool activated = false;
        std::size_t subscriptions = 0, monitoredItems = 0;
    };
    // Every live session, oldest first. Any thread but the request path's (takes the session
    // table's shared lock and the engine's mutex).
    std::vector<SessionInfo> sessionInfos();
    // Closes the session whose SessionId is `id` ("ns=1;g=<guid>" or the Guid alone, any
    // case) with its subscriptions, as CloseSession with deleteSubscriptions; false if none.
    bool closeSessionById(std::string_view id);
    std::size_t subscriptionCount();
    std::size_t monitoredItemCount();
    // Appends the server's metrics in the Prometheus text format (docs/metrics.md): sessions,
    // connections, subscriptions, monitored items, requests, faults and latency by service,
    // the request queue, and the plugins' metrics of the host API. Any thread; reads
    // counters the request path updates without locks.
    void writeMetrics(std::string& out);
    // The request records that exist in the process (in flight or kept for reuse); tests.
    static std::size_t pendingRequestObjects() noexcept {
        return pipeline::pendingRequestObjects();
    }

  private:
    // The PKI and the channel security of [server] security (none for None only).
    void setUpSecurity();
    // The subscription engine, its monitored-item queues and the ServiceHandler's hooks into it.
    void setUpSubscriptions();
    void housekeepingLoop();
    // Every publishing resolution: the subscription engine's tick.
    void publishingLoop();
    void scheduleSweep(std::int64_t dueMs);
    // SessionDiagnosticsArray, SessionSecurityDiagnosticsArray or SubscriptionDiagnosticsArray
    // (the ns=0 id) from the sessions and the engine, in `arena` (session_diagnostics.cpp);
    // with `only`, the rows of the session whose SessionId has that GUID.
    void diagnosticsArray(std::uint32_t arrayNode, const ua::Guid* only, enc::Arena& arena,
                          ua::Variant& out) noexcept;
    // The live sessions' SessionId GUIDs and names (ServiceHandler DiagnosedSessionsFn).
    std::size_t diagnosedSessions(const ua::Guid* only, enc::Arena& arena, ua::Guid* guids,
                                  ua::String* names, std::size_t capacity) noexcept;

    config::ServerConfig cfg_;
    host::Host& host_;
    ServiceHandler& services_;
    // [audit] enabled; first made and last gone: every part that raises Audit events uses it.
    std::unique_ptr<AuditTrail> audit_;
    std::unique_ptr<security::Pki> pki_;
    std::unique_ptr<security::Provider> securityProvider_;
    // Log lines of refused client and user certificates ([server.limits]).
    std::shared_ptr<security::EventBudget> refusalLogBudget_;
    bool offersNone_ = false;
    // Before the sessions: their registries count deadlines in it until they are gone.
    std::unique_ptr<session::DeadlineMonitor> deadlines_;
    std::unique_ptr<session::SessionManager> sessions_;
    // After the sessions and the deadline monitor its connections use; before the engine,
    // whose parked Publish routes hold connections.
    std::unique_ptr<pipeline::Pipeline> pipeline_;
    std::unique_ptr<Discovery> discovery_;
    std::unique_ptr<session::IdentityVerifier> identity_;
    std::unique_ptr<session::AccessPolicy> accessPolicy_;
    // The [slots] monitored_item_queue factory: outlives the engine and the queues it made.
    std::shared_ptr<host::PluginInstance> miQueues_;
    std::unique_ptr<SubscriptionService> subscriptions_;  // null without a value source
    // [pubsub]: made by start(), stopped by stop(), gone with the server (the change hook may
    // still reach it after stop); `pubsubLive_` is what the hook reads.
    std::unique_ptr<PubSubPublisher> pubsub_;
    std::atomic<PubSubPublisher*> pubsubLive_{nullptr};
    std::unique_ptr<Dispatcher> dispatcher_;
    std::thread housekeeping_;
    std::thread publishing_;
    std::mutex housekeepingMutex_;
    std::condition_variable housekeepingWake_;
    // The housekeeping sweep sleeps until the earliest session timeout, channel token expiry
    // or pipeline due time (sweepDueMs_, monotonic, under housekeepingMutex_; INT64_MAX:
    // nothing due); a new session or channel that is due sooner wakes it (scheduleSweep).
    std::condition_variable sweepWake_;
    std::int64_t sweepDueMs_ = INT64_MAX;
    // The heap trim after a message burst (trimHeapAfterMessageBurst) looks again this soon
    // while messages are being freed, and this often while sessions exist.
    static constexpr std::int64_t kBurstTickMs = 200;
    static constexpr std::int64_t kHeapCheckMs = 1000;
    std::uint64_t messagesFreedSeen_ = 0;  // housekeeping thread only
    // The heap trim after a burst of closed connections and sessions (housekeeping thread).
    static constexpr std::uint64_t kTrimAfterClosed = 256;
    std::uint64_t closedSeen_ = 0, closedAtTrim_ = 0;
    std::int64_t secondTrimDueMs_ = INT64_MAX;  // the trim after the burst's trim
    std::atomic<bool> running_{false};
    bool started_ = false;
    std::int64_t drainGraceMs_ = 2 * 60 * 1000;
};

}  // namespace uaplex::server
