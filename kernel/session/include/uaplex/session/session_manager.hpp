// SPDX-License-Identifier: Apache-2.0
// Sessions (Part 4 5.6): CreateSession, ActivateSession, CloseSession, timeouts and the
// session limit. A session is found by its AuthenticationToken (an opaque 32-byte ByteString
// NodeId from a CSPRNG) and is bound to the secure channel that last activated it.
//
// Threads: every method is callable from any worker thread. Lookups take a shared lock on
// the token map; create/close/sweep take it exclusively. Per-session state is atomic.
#pragma once

#include <uaplex/admission.h>
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
#include <vector>

#include <uaplex/session/access_control.hpp>
#include <uaplex/session/identity_verifier.hpp>
#include <uaplex/session/request_registry.hpp>
#include <uaplex/session/server_counters.hpp>

namespace uaplex::session {

struct SessionLimits {
    std::uint32_t maxSessions = 1000;
    std::uint32_t minTimeoutMs = 10000;
    std::uint32_t maxTimeoutMs = 3600000;
    // Sessions not activated yet cost their creator nothing but a CreateSession: few per
    // channel and per peer (remote IP address), and a short life whatever timeout the
    // client asked for.
    std::uint32_t maxUnactivatedPerChannel = 8;
    std::uint32_t maxUnactivatedPerPeer = 32;
    std::uint32_t unactivatedTimeoutMs = 10000;
    // Every string kept from the client (SessionName, ...) is cut to this many bytes.
    std::uint32_t maxStringLength = 256;
};

// MessageSecurityMode (Part 4 7.20) of a channel.
enum class ChannelMode : std::uint8_t { None = 1, Sign = 2, SignAndEncrypt = 3 };

// The channel a CreateSession or ActivateSession came over, beyond its id: who is on the other
// end (a session is bound to its creator's certificate and mode, Part 4 5.6.3).
struct ChannelOrigin {
    std::string_view peer{};  // remote IP address (no port); empty: not counted per peer
    // False where one channel id stands for many connections (opc.https, Part 6 7.4.1):
    // then neither the per-channel cap nor the close with the channel applies.
    bool ownChannel = true;
    std::span<const std::uint8_t> clientCertificate;  // DER; empty on SecurityPolicy None
    ChannelMode mode = ChannelMode::None;
    // What the diagnostics show of the session (Part 5 12.10, 12.11), kept cut to the
    // string limit: the CreateSession's clientDescription and endpointUrl, the policy.
    std::string_view applicationName{}, productUri{}, endpointUrl{}, securityPolicyUri{};
    std::uint32_t applicationType = 1;  // ApplicationType Client
};

// The session's requests by service-table row (Part 5 SessionDiagnosticsDataType: a total and
// an error count per service) and those refused for authorization. Relaxed atomics in the
// session itself: counting takes no lock, allocates nothing, and only the session's own
// requests touch its lines.
class SessionServiceCounts {
  public:
    static constexpr std::size_t kRows = 64;  // the service table's kMaxServiceRows
    void count(std::size_t row, bool error, bool unauthorized) noexcept {
        if (row >= kRows) return;
        total_[row].fetch_add(1, std::memory_order_relaxed);
        if (error) errors_[row].fetch_add(1, std::memory_order_relaxed);
        if (unauthorized) unauthorized_.fetch_add(1, std::memory_order_relaxed);
    }
    std::uint32_t total(std::size_t row) const noexcept {
        return row < kRows ? total_[row].load(std::memory_order_relaxed) : 0;
    }
    std::uint32_t errors(std::size_t row) const noexcept {
        return row < kRows ? errors_[row].load(std::memory_order_relaxed) : 0;
    }
    std::uint32_t unauthorized() const noexcept {
        return unauthorized_.load(std::memory_order_relaxed);
    }

  private:
    std::array<std::atomic<std::uint32_t>, kRows> total_{};
    std::array<std::atomic<std::uint32_t>, kRows> errors_{};
    std::atomic<std::uint32_t> unauthorized_{0};
};

// The admission stage `session_establishment` (sdk/include/uaplex/admission.h): held by a
// session from CreateSession until its first activation or its close.
struct EstablishmentLeases {
    // Good, or a refusal (the session is then refused with BadTooManySessions).
    uaplex_status (*acquire)(void* user, void* owner, uaplex_admission_lease& lease) = nullptr;
    void (*release)(void* user, uaplex_admission_lease& lease) = nullptr;
    void* user = nullptr;
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
    // The nonce as it is while no activation runs (tests); concurrent callers use
    // currentNonce(), which copies it under the session's lock.
    const std::array<std::uint8_t, kNonceSize>& serverNonce() const noexcept { return nonce_; }
    std::array<std::uint8_t, kNonceSize> currentNonce() const;
    // The client's ApplicationUri (clientDescription), cut to the string limit.
    std::string_view applicationUri() const noexcept { return applicationUri_; }
    // The remote IP address of the creating channel (empty over opc.https).
    std::string_view peer() const noexcept { return peer_; }
    // The creating CreateSession's clientDescription, endpointUrl and channel (diagnostics).
    std::string_view applicationName() const noexcept { return applicationName_; }
    std::string_view productUri() const noexcept { return productUri_; }
    std::uint32_t applicationType() const noexcept { return applicationType_; }
    std::string_view endpointUrl() const noexcept { return endpointUrl_; }
    std::string_view securityPolicyUri() const noexcept { return securityPolicyUri_; }
    ChannelMode securityMode() const noexcept { return mode_; }
    bool ownChannel() const noexcept { return ownChannel_; }
    // The creating channel's client certificate (DER; empty on None or when over 16 KiB).
    std::span<const std::uint8_t> clientCertificate() const noexcept { return certificate_; }
    // The last request's time, monotonic ms (Session::touch).
    std::int64_t lastUsedMs() const noexcept { return lastUsedMs_.load(std::memory_order_relaxed); }
    SessionServiceCounts& serviceCounts() noexcept { return serviceCounts_; }
    const SessionServiceCounts& serviceCounts() const noexcept { return serviceCounts_; }
    // When CreateSession made it (wall clock, ms since 1970).
    std::int64_t createdUnixMs() const noexcept { return createdUnixMs_; }
    // Who may take the session's subscriptions (TransferSubscriptions, Part 4 5.13.7): the
    // identity key for a user; for Anonymous the client's ApplicationUri on a signed channel,
    // and on an unsigned one a key of this session alone (nobody else).
    std::string transferKey() const;
    // ActivateSession attempts refused for their identity token so far.
    std::uint32_t loginFailures() const noexcept {
        return loginFailures_.load(std::memory_order_relaxed);
    }
    std::uint32_t addLoginFailure() noexcept {
        return loginFailures_.fetch_add(1, std::memory_order_relaxed) + 1;
    }
    // One ActivateSession in flight at a time (the password check runs off the workers).
    bool beginLogin() noexcept { return !loginPending_.exchange(true, std::memory_order_acq_rel); }
    void endLogin() noexcept { loginPending_.store(false, std::memory_order_release); }
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
    std::string applicationUri_;
    std::array<std::uint8_t, 32> applicationUriHash_{};  // SHA-256 of the whole URI
    // The creating channel: its client certificate (SHA-256 of the DER) and mode.
    std::array<std::uint8_t, 32> certificateHash_{};
    bool hasCertificate_ = false;
    ChannelMode mode_ = ChannelMode::None;
    std::string peer_;  // counted per peer while not activated (empty: not counted)
    std::int64_t createdUnixMs_ = 0;
    std::string applicationName_, productUri_, endpointUrl_, securityPolicyUri_;
    std::uint32_t applicationType_ = 1;
    std::vector<std::uint8_t> certificate_;
    SessionServiceCounts serviceCounts_;
    bool ownChannel_ = true;   // counted per channel while not activated
    bool unactivated_ = true;  // still in the unactivated counts (under the table's lock)
    uaplex_admission_lease lease_{};
    std::atomic<bool> leaseHeld_{false};
    std::atomic<std::uint32_t> loginFailures_{0};
    std::atomic<bool> loginPending_{false};
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
    SessionManager(SessionLimits limits, ServerCounters* counters, SessionStateHooks hooks = {});
    ~SessionManager();

    struct Created {
        uaplex_status status;
        std::shared_ptr<Session> session;
    };
    // CreateSession: BadTooManySessions at the limit, at the unactivated sessions' caps (per
    // channel, per peer) and when the admission provider refuses the establishment lease
    // (charged to `admissionOwner`, a uaplex_admission_owner*).
    Created create(std::uint32_t channelId, double requestedTimeoutMs, std::string_view name,
                   std::uint32_t maxResponseMessageSize, std::int64_t nowMs,
                   const ChannelOrigin& origin = {}, std::string_view applicationUri = {},
                   void* admissionOwner = nullptr);
    // ActivateSession on `channelId` for a verified `identity` (IdentityVerifier) with its
    // `access` view. Statuses: BadSessionIdInvalid, BadSecureChannelIdInvalid (first
    // activation from another channel, or a transfer whose identity key does not match).
    // On the same channel the identity may change (Part 4 5.6.3).
    // A transfer also needs the creating channel's client certificate and no lower mode
    // (Part 4 5.6.3), else BadSecureChannelIdInvalid. With `checkedNonce`, the nonce the
    // caller checked signatures against must still be the session's (a concurrent
    // activation consumed it otherwise: BadNonceInvalid). `nonceOut` receives the new nonce.
    uaplex_status activate(
        const ua::NodeId& authenticationToken, std::uint32_t channelId, UserIdentity identity,
        std::shared_ptr<const AccessView> access, std::int64_t nowMs,
        std::shared_ptr<Session>* out = nullptr, const ChannelOrigin& origin = {},
        const std::array<std::uint8_t, Session::kNonceSize>* checkedNonce = nullptr,
        std::array<std::uint8_t, Session::kNonceSize>* nonceOut = nullptr);
    // The checks of activate that do not depend on the identity token (the session, the
    // channel binding), so that a refused transfer costs no password check.
    uaplex_status checkActivation(const ua::NodeId& authenticationToken, std::uint32_t channelId,
                                  const ChannelOrigin& origin) const;
    // Closes a session regardless of its channel (too many failed logins); false if gone.
    bool closeSession(const std::shared_ptr<Session>& s);
    // The channel closed: its sessions that were never activated go with it (activated ones
    // stay for a transfer or their timeout). Returns how many closed.
    std::size_t channelClosed(std::uint32_t channelId);
    // Sessions not yet activated (all channels).
    std::size_t unactivatedCount() const;
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
    // Every live session (`uaplex ctl sessions`): copies the table under its shared lock.
    void list(std::vector<std::shared_ptr<Session>>& out) const;
    // The secure channels live sessions are bound to (activated or not), sorted; the
    // housekeeping sweep closes channels that carry none for idle_channel_timeout_ms.
    void boundChannels(std::vector<std::uint32_t>& out) const;
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
    // The admission provider's establishment leases (set before the first session).
    void setEstablishmentLeases(EstablishmentLeases l) noexcept { leases_ = l; }
    // The deadline sweep over every session's requests (RequestRegistry::expire); returns
    // how many expired. Takes the table's lock shared, so requests keep flowing.
    std::uint32_t expireRequests(std::int64_t nowMs, const QueuedCanceller& canceller) const;
    // Adds every session's registered requests to `drain`; `keep` holds the sessions (and so
    // their registries) alive for as long as the drain runs.
    void snapshotRequests(RequestDrain& drain, std::vector<std::shared_ptr<Session>>& keep) const;

  private:
    std::shared_ptr<Session> find(const ua::NodeId& token) const;
    void closed(Session& s);
    void releaseLease(Session& s) noexcept;
    // Takes `s` out of the unactivated counts (the table's lock held).
    void uncount(Session& s) noexcept;
    uaplex_status bindingAllows(const Session& s, std::uint32_t channelId,
                                const ChannelOrigin& origin) const noexcept;

    SessionLimits limits_;
    ServerCounters* counters_;
    SessionStateHooks hooks_;
    SessionClosedHook closedHook_;
    DeadlineMonitor* deadlineMonitor_ = nullptr;
    void (*timeoutScheduled_)(void*, std::int64_t) = nullptr;
    void* timeoutScheduledUser_ = nullptr;
    mutable std::shared_mutex mutex_;
    std::map<std::string, std::shared_ptr<Session>, std::less<>> sessions_;
    // Sessions not yet activated, per channel and per peer (under mutex_).
    std::map<std::uint32_t, std::uint32_t> unactivatedPerChannel_;
    std::map<std::string, std::uint32_t, std::less<>> unactivatedPerPeer_;
    std::size_t unactivated_ = 0;
    EstablishmentLeases leases_;
    std::atomic<std::uint32_t> nextSessionNumber_{1};
    std::atomic<std::uint64_t> randomDraws_{0};
};

}  // namespace uaplex::session
