// The OPC UA server: transport plugins on the configured endpoints, a SecureChannel per
// connection, the request path through the request-queue slot to `request_threads` workers,
// sessions and their timeouts.
//
// Threads: the transports' I/O threads run chunk assembly and OPN/CLO; workers decode,
// dispatch, encode and send; one housekeeping thread closes timed-out sessions and channels
// whose token expired; one deadline thread expires requests past their TimeoutHint.
#pragma once

#include <uaplex/admission.h>
#include <uaplex/buffer_pool.h>
#include <uaplex/request_queue.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <unordered_map>
#include <vector>

#include <uaplex/config/config.hpp>
#include "server/service_handler.hpp"

namespace uaplex::enc {
class ByteBuffer;
}  // namespace uaplex::enc
namespace uaplex::host {
class Host;
class PluginInstance;
}  // namespace uaplex::host
namespace uaplex::security {
class Pki;
class Provider;
class EventBudget;
}  // namespace uaplex::security
namespace uaplex::session {
class SessionManager;
class DeadlineMonitor;
struct TrackedRequest;
class IdentityVerifier;
class IdentityCrypto;
class AccessPolicy;
}  // namespace uaplex::session

namespace uaplex::pipeline {
struct PendingRequest;
struct RequestPool;
struct Worker;
}  // namespace uaplex::pipeline

namespace uaplex::server {

using pipeline::PendingRequest;
using pipeline::RequestPool;
using pipeline::Worker;

class Connection;
class Dispatcher;
class SubscriptionService;
class Discovery;
class KernelBufferPool;
class PoolBufferAllocator;
struct RequestPrefix;
struct ServiceDescriptor;
struct TransportBinding;
class JsonDecodePool;

// The heap-trim policy, in one place (housekeeping, server.cpp). After a bulk deletion (many
// monitored items or subscriptions freed) the C allocator keeps the freed pages: trimHeap
// gives them back, outside any engine lock.
void trimHeap() noexcept;
// How often the heap was given back: a request worker that sees it change drops the arena
// blocks a large request made it grow.
std::uint32_t heapTrimCount() noexcept;
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
    // The request records that exist in the process (in flight or kept for reuse); tests.
    static std::size_t pendingRequestObjects() noexcept;

  private:
    friend class Connection;
    struct Callbacks;

    // The PKI and the channel security of [server] security (none for None only).
    void setUpSecurity();
    void workerLoop(Worker& worker);
    void housekeepingLoop();
    // Every publishing resolution: the subscription engine's tick.
    void publishingLoop();
    // The one TimeoutHint sweep for all requests (docs/pipeline.md): every 20 ms while any
    // registered request has a deadline, asleep otherwise.
    void deadlineLoop();
    void execute(PendingRequest& request, Worker& worker, host::PluginInstance* queue) noexcept;
    // Classifies a request for the admission provider (owner cached per connection);
    // `service` is submit's row of the request (null: none).
    void classify(Connection& c, PendingRequest& r, const RequestPrefix& prefix,
                  const ServiceDescriptor* service) noexcept;
    // Classifies a new connection (its channel owner) and charges its Connection lease.
    uaplex_status admitConnection(Connection& c) noexcept;
    // The request queue's check before dispatch (docs/pipeline.md, Admission: revalidation).
    static uaplex_status revalidate(void* user, uaplex_request_entry* entry);
    // The request queue completed an entry itself (stop, cancel, refusal): answer a fault.
    void completeRefused(PendingRequest& request, std::uint32_t status) noexcept;
    void submit(Connection& c);
    // The same for a request body held elsewhere than the channel's assembly (opc.https JSON,
    // transcoded on a decode thread).
    void submit(Connection& c, enc::ByteBuffer& body, std::uint32_t secureRequestId);
    // Cancel runs on the I/O thread, so that it reaches requests still queued behind busy
    // workers.
    void executeInline(Connection& c, std::span<const std::uint8_t> body,
                       std::uint32_t secureRequestId, std::uint32_t requestHandle);
    // opc.https JSON: decoded and transcoded to the binary encoding on a decode thread.
    void transcodeJson(Connection& c, std::vector<std::uint8_t>& text) noexcept;
    // QueuedCanceller::unlink: takes a registered request out of the request queue.
    static bool unlinkQueued(void* user, session::TrackedRequest& t, uaplex_status status);

    config::ServerConfig cfg_;
    host::Host& host_;
    ServiceHandler& services_;
    std::unique_ptr<security::Pki> pki_;
    std::unique_ptr<security::Provider> securityProvider_;
    // Log lines of refused client and user certificates ([server.limits]).
    std::shared_ptr<security::EventBudget> refusalLogBudget_;
    bool offersNone_ = false;
    std::unique_ptr<KernelBufferPool> pool_;    // the fallback when no buffer_pool plugin
    std::unique_ptr<RequestPool> requestPool_;  // released PendingRequests, for any connection
    const uaplex_buffer_pool_ops* poolOps_ = nullptr;
    void* poolSelf_ = nullptr;
    void* poolManager_ = nullptr;
    // With a buffer_pool plugin: request bodies and response encodings are rented from its
    // `uasc-messages` manager (MaxBufferSize = the chunk buffer size) through this
    // allocator; larger messages use the heap.
    std::unique_ptr<PoolBufferAllocator> messageAllocator_;
    std::uint32_t poolBufferSize_ = 0;  // the largest buffer poolManager_ lends
    // The [slots] admission provider, or null: then requests carry no owner.
    const uaplex_admission_ops* admission_ = nullptr;
    void* admissionSelf_ = nullptr;
    // Before the sessions: their registries count deadlines in it until they are gone.
    std::unique_ptr<session::DeadlineMonitor> deadlines_;
    std::unique_ptr<session::SessionManager> sessions_;
    std::unique_ptr<Discovery> discovery_;
    std::unique_ptr<session::IdentityVerifier> identity_;
    std::unique_ptr<session::AccessPolicy> accessPolicy_;
    // The [slots] monitored_item_queue factory: outlives the engine and the queues it made.
    std::shared_ptr<host::PluginInstance> miQueues_;
    std::unique_ptr<SubscriptionService> subscriptions_;  // null without a value source
    std::unique_ptr<Dispatcher> dispatcher_;
    std::unique_ptr<JsonDecodePool> jsonPool_;                 // from start() to stop()
    std::vector<std::unique_ptr<TransportBinding>> bindings_;  // outlive the transports
    std::vector<std::shared_ptr<host::PluginInstance>> transports_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<std::thread> threads_;
    std::thread housekeeping_;
    std::thread publishing_;
    std::thread deadlineSweeper_;
    std::mutex housekeepingMutex_;
    std::condition_variable housekeepingWake_;
    // The housekeeping sweep sleeps until the earliest session timeout or channel token
    // expiry (sweepDueMs_, monotonic, under housekeepingMutex_; INT64_MAX: nothing due);
    // a new session or channel that is due sooner wakes it (scheduleSweep).
    std::condition_variable sweepWake_;
    std::int64_t sweepDueMs_ = INT64_MAX;
    void scheduleSweep(std::int64_t dueMs);
    // The heap trim after a message burst (trimHeapAfterMessageBurst) looks again this soon
    // while messages are being freed, and this often while sessions exist.
    static constexpr std::int64_t kBurstTickMs = 200;
    static constexpr std::int64_t kHeapCheckMs = 1000;
    std::uint64_t messagesFreedSeen_ = 0;               // housekeeping thread only
    std::vector<std::uint32_t> boundChannels_;          // housekeeping thread only
    std::int64_t recordsTrimmedMs_ = 0;                 // housekeeping thread only
    static constexpr std::int64_t kRecordTrimMs = 250;  // a burst's records go this soon after
    // Bytes charged for unfinished messages when no admission provider is loaded
    // (max_reassembly_bytes); with one, its ReassemblyBytes stage holds them.
    std::atomic<std::int64_t> reassemblyUsed_{0};
    std::atomic<bool> running_{false};
    std::atomic<std::uint32_t> nextChannelId_{1};
    std::atomic<std::uint32_t> nextRequestId_{1};
    // Every live connection (accept/close and housekeeping only; not on the request path).
    mutable std::mutex connectionsMutex_;
    std::unordered_map<Connection*, std::shared_ptr<Connection>> connections_;
    bool started_ = false;
    std::int64_t drainGraceMs_ = 2 * 60 * 1000;
};

}  // namespace uaplex::server
