// Sessions (Part 4 5.6): CreateSession, ActivateSession, CloseSession, timeouts and the
// session limit. A session is found by its AuthenticationToken (an opaque 32-byte ByteString
// NodeId from a CSPRNG) and is bound to the secure channel that last activated it.
//
// Threads: every method is callable from any worker thread. Lookups take a shared lock on
// the token map; create/close/sweep take it exclusively. Per-session state is atomic.
#pragma once

#include <uaplex/statuscodes.h>
#include <uaplex/encoding/builtin.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>

#include "session/access_control.hpp"
#include "session/identity.hpp"
#include "session/request_registry.hpp"

namespace uaplex::services {
struct ServerCounters;
}

namespace uaplex::session {

struct SessionLimits {
    std::uint32_t maxSessions = 1000;
    std::uint32_t minTimeoutMs = 10000;
    std::uint32_t maxTimeoutMs = 3600000;
};

// What the services layer keeps per session, owned through these two hooks so that this
// library does not depend on the services.
struct SessionStateHooks {
    std::function<void*()> create;
    std::function<void(void*)> destroy;
};

class Session;
// Called once when a session closes (CloseSession, timeout, shutdown), outside the session
// table's lock: the server cancels the session's queued requests here.
using SessionClosedHook = std::function<void(Session&)>;

class Session {
  public:
    static constexpr std::size_t kTokenSize = 32;
    static constexpr std::size_t kNonceSize = 32;
    // AuthenticationToken, SessionId Guid, CreateSession's serverNonce and the first
    // ActivateSession's serverNonce: one CSPRNG draw, sliced.
    static constexpr std::size_t kRandomSize = kTokenSize + sizeof(ua::Guid) + 2 * kNonceSize;

    ua::NodeId sessionId() const noexcept;            // ns=1, Guid
    ua::NodeId authenticationToken() const noexcept;  // ns=0, ByteString (points into *this)
    std::string_view name() const noexcept { return name_; }
    double timeoutMs() const noexcept { return timeoutMs_; }
    std::uint32_t channelId() const noexcept { return channelId_.load(std::memory_order_acquire); }
    bool activated() const noexcept { return activated_.load(std::memory_order_acquire); }
    void* state() const noexcept { return state_; }
    const std::array<std::uint8_t, kNonceSize>& serverNonce() const noexcept { return nonce_; }
    std::uint32_t maxResponseMessageSize() const noexcept { return maxResponseMessageSize_; }
    void touch(std::int64_t nowMs) noexcept { lastUsedMs_.store(nowMs, std::memory_order_relaxed); }
    bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
    // CloseSession's deleteSubscriptions; a timeout keeps them (Part 4 5.7.2), shutdown not.
    bool deleteSubscriptionsOnClose() const noexcept {
        return deleteSubscriptions_.load(std::memory_order_acquire);
    }
    // The session's requests in flight (queued or executing).
    RequestRegistry& requests() noexcept { return requests_; }
    // The user the session acts for and what it may do (set by each ActivateSession; a
    // later activation may change them). Copies under the session's own lock, no allocation.
    UserIdentity identity() const;
    std::string identityKey() const;
    // The view for the request path: one atomic load, no reference count shared with other
    // sessions. A view replaced by a later activation stays valid: the AccessPolicy keeps
    // every view it made until it is destroyed, after every session.
    const AccessView* access() const noexcept {
        return accessView_.load(std::memory_order_acquire);
    }

    ~Session();

  private:
    friend class SessionManager;
    void takeRandom(std::span<const std::uint8_t, kRandomSize> random) noexcept;

    std::array<std::uint8_t, kTokenSize> token_{};
    ua::Guid guid_{};
    std::string name_;
    double timeoutMs_ = 0;
    std::uint32_t maxResponseMessageSize_ = 0;
    std::atomic<std::uint32_t> channelId_{0};
    std::atomic<bool> activated_{false};
    std::atomic<std::int64_t> lastUsedMs_{0};
    std::atomic<bool> closed_{false};
    mutable std::mutex identityMutex_;
    UserIdentity identity_;
    std::shared_ptr<const AccessView> access_;            // null: everything allowed
    std::atomic<const AccessView*> accessView_{nullptr};  // access_.get()
    std::atomic<bool> deleteSubscriptions_{false};
    std::array<std::uint8_t, kNonceSize> nonce_{};
    std::array<std::uint8_t, kNonceSize> activationNonce_{};  // unused until the first activation
    std::atomic<bool> activationNonceFresh_{false};
    void* state_ = nullptr;
    std::function<void(void*)> destroyState_;
    RequestRegistry requests_;
};

// The session a connection used last, so that its requests resolve without touching the
// server-wide session table. One per connection; its mutex is per connection.
struct SessionCache {
    std::mutex mutex;
    std::shared_ptr<Session> session;
};

class SessionManager {
  public:
    SessionManager(SessionLimits limits, services::ServerCounters* counters,
                   SessionStateHooks hooks = {});
    ~SessionManager();

    struct Created {
        uaplex_status status;
        std::shared_ptr<Session> session;
    };
    // CreateSession: BadTooManySessions at the limit.
    Created create(std::uint32_t channelId, double requestedTimeoutMs, std::string_view name,
                   std::uint32_t maxResponseMessageSize, std::int64_t nowMs);
    // ActivateSession on `channelId` for a verified `identity` (IdentityVerifier) with its
    // `access` view. Statuses: BadSessionIdInvalid, BadSecureChannelIdInvalid (first
    // activation from another channel, or a transfer whose identity key does not match).
    // On the same channel the identity may change (Part 4 5.6.3).
    uaplex_status activate(const ua::NodeId& authenticationToken, std::uint32_t channelId,
                           UserIdentity identity, std::shared_ptr<const AccessView> access,
                           std::int64_t nowMs, std::shared_ptr<Session>* out = nullptr);
    // An ActivateSession refused for its identity token (ServerDiagnostics'
    // SecurityRejectedSessionCount).
    void countSecurityRejected() noexcept;
    // The session of a request that needs one: BadSessionIdInvalid (unknown token),
    // BadSecureChannelIdInvalid (another channel), BadSessionNotActivated. Touches it.
    uaplex_status resolve(const ua::NodeId& authenticationToken, std::uint32_t channelId,
                          std::int64_t nowMs, std::shared_ptr<Session>& out,
                          SessionCache* cache = nullptr) const;
    // The live session `authenticationToken` names, activated or not (admission
    // classification of session services); null when none.
    std::shared_ptr<Session> lookup(const ua::NodeId& authenticationToken) const {
        return find(authenticationToken);
    }
    // CloseSession: the same checks as resolve, except that a session not yet activated may
    // be closed. `deleteSubscriptions` is what the closed hook reads from the session.
    uaplex_status close(const ua::NodeId& authenticationToken, std::uint32_t channelId,
                        bool deleteSubscriptions = true);
    // Closes sessions idle past their timeout; returns how many. `nextDueMs` (optional)
    // receives the earliest time a remaining session can time out (INT64_MAX: none left).
    std::size_t sweep(std::int64_t nowMs, std::int64_t* nextDueMs = nullptr);
    // Closes every session (server shutdown).
    void closeAll();
    std::size_t count() const;
    // CSPRNG draws made so far (one per CreateSession, one per later re-activation).
    std::uint64_t randomDraws() const noexcept {
        return randomDraws_.load(std::memory_order_relaxed);
    }
    // Set before the first session is created.
    void setClosedHook(SessionClosedHook hook) { closedHook_ = std::move(hook); }
    // Called by create with the time the new session times out unless it is used: the sweep
    // that sleeps until the earliest such time must wake sooner. Set before the first create.
    void setTimeoutScheduled(void (*fn)(void* user, std::int64_t dueMs), void* user) noexcept {
        timeoutScheduled_ = fn;
        timeoutScheduledUser_ = user;
    }
    // Where every session's registry counts its requests with a deadline (set before the
    // first session is created).
    void setDeadlineMonitor(DeadlineMonitor* m) noexcept { deadlineMonitor_ = m; }
    // The deadline sweep over every session's requests (RequestRegistry::expire); returns
    // how many expired. Takes the table's lock shared, so requests keep flowing.
    std::uint32_t expireRequests(std::int64_t nowMs, const QueuedCanceller& canceller) const;
    // Adds every session's registered requests to `drain`; `keep` holds the sessions (and so
    // their registries) alive for as long as the drain runs.
    void snapshotRequests(RequestDrain& drain, std::vector<std::shared_ptr<Session>>& keep) const;

  private:
    std::shared_ptr<Session> find(const ua::NodeId& token) const;
    void closed(Session& s);

    SessionLimits limits_;
    services::ServerCounters* counters_;
    SessionStateHooks hooks_;
    SessionClosedHook closedHook_;
    DeadlineMonitor* deadlineMonitor_ = nullptr;
    void (*timeoutScheduled_)(void*, std::int64_t) = nullptr;
    void* timeoutScheduledUser_ = nullptr;
    mutable std::shared_mutex mutex_;
    std::map<std::string, std::shared_ptr<Session>, std::less<>> sessions_;
    std::atomic<std::uint32_t> nextSessionNumber_{1};
    std::atomic<std::uint64_t> randomDraws_{0};
};

}  // namespace uaplex::session
