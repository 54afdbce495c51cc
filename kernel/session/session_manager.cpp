#include "session/session_manager.hpp"

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "services/service_set.hpp"

namespace uaplex::session {

namespace {

void randomBytes(std::uint8_t* out, std::size_t n, std::atomic<std::uint64_t>& draws) {
    if (RAND_bytes(out, int(n)) != 1) throw std::runtime_error("RAND_bytes failed");
    draws.fetch_add(1, std::memory_order_relaxed);
}

std::string_view tokenKey(const ua::NodeId& token) noexcept {
    if (token.identifier_type != UAPLEX_ID_BYTESTRING || token.namespace_index != 0 ||
        token.identifier.bytestring.length != std::int32_t(Session::kTokenSize))
        return {};
    return {reinterpret_cast<const char*>(token.identifier.bytestring.data), Session::kTokenSize};
}

}  // namespace

void Session::takeRandom(std::span<const std::uint8_t, kRandomSize> r) noexcept {
    const std::uint8_t* p = r.data();
    std::memcpy(token_.data(), p, kTokenSize);
    p += kTokenSize;
    std::memcpy(&guid_, p, sizeof guid_);
    p += sizeof guid_;
    std::memcpy(nonce_.data(), p, kNonceSize);
    p += kNonceSize;
    std::memcpy(activationNonce_.data(), p, kNonceSize);
    activationNonceFresh_.store(true, std::memory_order_release);
}

Session::~Session() {
    if (state_ && destroyState_) destroyState_(state_);
}

UserIdentity Session::identity() const {
    std::lock_guard lock(identityMutex_);
    return identity_;
}

std::string Session::identityKey() const {
    std::lock_guard lock(identityMutex_);
    return identity_.key;
}

ua::NodeId Session::sessionId() const noexcept {
    ua::NodeId id{};
    id.namespace_index = 1;
    id.identifier_type = UAPLEX_ID_GUID;
    id.identifier.guid = guid_;
    return id;
}

ua::NodeId Session::authenticationToken() const noexcept {
    ua::NodeId id{};
    id.identifier_type = UAPLEX_ID_BYTESTRING;
    id.identifier.bytestring = ua::ByteString{std::int32_t(kTokenSize), token_.data()};
    return id;
}

SessionManager::SessionManager(SessionLimits limits, services::ServerCounters* counters,
                               SessionStateHooks hooks)
    : limits_(limits), counters_(counters), hooks_(std::move(hooks)) {}

SessionManager::~SessionManager() {
    closeAll();
}

void SessionManager::closed(Session& s) {
    if (s.closed_.exchange(true)) return;
    if (counters_) counters_->currentSessionCount.fetch_sub(1, std::memory_order_relaxed);
    // Every caller holds a reference to `s`: completing its requests never drops the last.
    if (closedHook_) closedHook_(s);
}

SessionManager::Created SessionManager::create(std::uint32_t channelId, double requestedTimeoutMs,
                                               std::string_view name,
                                               std::uint32_t maxResponseMessageSize,
                                               std::int64_t nowMs) {
    auto s = std::make_shared<Session>();
    // One CSPRNG draw for every random field of the session: the DRBG's cost is mostly per
    // call, not per byte. The slices never overlap, so each field stays independent.
    std::array<std::uint8_t, Session::kRandomSize> random;
    randomBytes(random.data(), random.size(), randomDraws_);
    s->takeRandom(random);
    OPENSSL_cleanse(random.data(), random.size());
    s->name_ = std::string(name);
    if (s->name_.empty()) s->name_ = "session-" + std::to_string(nextSessionNumber_++);
    double t = requestedTimeoutMs;
    if (!(t >= limits_.minTimeoutMs)) t = limits_.minTimeoutMs;  // also NaN and <= 0
    if (t > limits_.maxTimeoutMs) t = limits_.maxTimeoutMs;
    s->timeoutMs_ = t;
    s->maxResponseMessageSize_ = maxResponseMessageSize;
    s->channelId_ = channelId;
    s->requests_.setDeadlineMonitor(deadlineMonitor_);
    s->lastUsedMs_ = nowMs;
    {
        std::unique_lock lock(mutex_);
        if (sessions_.size() >= limits_.maxSessions) {
            if (counters_) counters_->rejectedSessionCount.fetch_add(1, std::memory_order_relaxed);
            return {UAPLEX_BadTooManySessions, nullptr};
        }
        std::string key(reinterpret_cast<const char*>(s->token_.data()), s->token_.size());
        sessions_.emplace(std::move(key), s);
    }
    if (timeoutScheduled_) timeoutScheduled_(timeoutScheduledUser_, nowMs + std::int64_t(t) + 1);
    // The services' per-session state is made outside the lock; nothing can use the session
    // before CreateSession's response reaches the client.
    if (hooks_.create) {
        s->state_ = hooks_.create();
        s->destroyState_ = hooks_.destroy;
    }
    if (counters_) {
        counters_->currentSessionCount.fetch_add(1, std::memory_order_relaxed);
        counters_->cumulatedSessionCount.fetch_add(1, std::memory_order_relaxed);
    }
    return {UAPLEX_Good, s};
}

std::shared_ptr<Session> SessionManager::find(const ua::NodeId& token) const {
    std::string_view key = tokenKey(token);
    if (key.empty()) return nullptr;
    std::shared_lock lock(mutex_);
    auto it = sessions_.find(key);
    return it == sessions_.end() ? nullptr : it->second;
}

uaplex_status SessionManager::activate(const ua::NodeId& authenticationToken,
                                       std::uint32_t channelId, UserIdentity identity,
                                       std::shared_ptr<const AccessView> access, std::int64_t nowMs,
                                       std::shared_ptr<Session>* out) {
    auto s = find(authenticationToken);
    if (!s) return UAPLEX_BadSessionIdInvalid;
    bool wasActivated = s->activated();
    {
        std::lock_guard lock(s->identityMutex_);
        if (s->channelId() != channelId) {
            // A transfer to a new channel (Part 4 5.6.3): only an activated session, and only
            // for the same user.
            if (!wasActivated || s->identity_.key != identity.key)
                return UAPLEX_BadSecureChannelIdInvalid;
        }
        s->identity_ = std::move(identity);
        s->access_ = std::move(access);
        s->accessView_.store(s->access_.get(), std::memory_order_release);
    }
    s->channelId_.store(channelId, std::memory_order_release);
    // The first activation takes the nonce drawn with the session; later ones draw anew.
    if (s->activationNonceFresh_.exchange(false, std::memory_order_acq_rel)) {
        s->nonce_ = s->activationNonce_;
        OPENSSL_cleanse(s->activationNonce_.data(), s->activationNonce_.size());
    } else {
        randomBytes(s->nonce_.data(), s->nonce_.size(), randomDraws_);
    }
    s->activated_.store(true, std::memory_order_release);
    s->touch(nowMs);
    if (out) *out = s;
    return UAPLEX_Good;
}

void SessionManager::countSecurityRejected() noexcept {
    if (counters_) counters_->securityRejectedSessionCount.fetch_add(1, std::memory_order_relaxed);
}

uaplex_status SessionManager::resolve(const ua::NodeId& authenticationToken,
                                      std::uint32_t channelId, std::int64_t nowMs,
                                      std::shared_ptr<Session>& out, SessionCache* cache) const {
    std::shared_ptr<Session> s;
    if (cache) {
        std::string_view key = tokenKey(authenticationToken);
        std::lock_guard lock(cache->mutex);
        const auto& c = cache->session;
        if (c && !key.empty() && !c->closed() &&
            std::memcmp(c->token_.data(), key.data(), Session::kTokenSize) == 0)
            s = c;
    }
    if (!s) {
        s = find(authenticationToken);
        if (!s) return UAPLEX_BadSessionIdInvalid;
        if (cache) {
            std::lock_guard lock(cache->mutex);
            cache->session = s;
        }
    }
    if (s->channelId() != channelId) return UAPLEX_BadSecureChannelIdInvalid;
    if (!s->activated()) return UAPLEX_BadSessionNotActivated;
    s->touch(nowMs);
    out = std::move(s);
    return UAPLEX_Good;
}

uaplex_status SessionManager::close(const ua::NodeId& authenticationToken, std::uint32_t channelId,
                                    bool deleteSubscriptions) {
    std::string_view key = tokenKey(authenticationToken);
    if (key.empty()) return UAPLEX_BadSessionIdInvalid;
    std::shared_ptr<Session> s;
    {
        std::unique_lock lock(mutex_);
        auto it = sessions_.find(key);
        if (it == sessions_.end()) return UAPLEX_BadSessionIdInvalid;
        if (it->second->channelId() != channelId) return UAPLEX_BadSecureChannelIdInvalid;
        s = std::move(it->second);
        sessions_.erase(it);
    }
    s->deleteSubscriptions_.store(deleteSubscriptions, std::memory_order_release);
    closed(*s);
    return UAPLEX_Good;  // its state goes when the last request holding it is done
}

std::size_t SessionManager::sweep(std::int64_t nowMs, std::int64_t* nextDueMs) {
    std::vector<std::shared_ptr<Session>> expired;
    std::int64_t next = INT64_MAX;
    {
        std::unique_lock lock(mutex_);
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            const Session& s = *it->second;
            // Timed out once more than its timeout passed since its last use.
            std::int64_t due =
                s.lastUsedMs_.load(std::memory_order_relaxed) + std::int64_t(s.timeoutMs_) + 1;
            if (nowMs >= due) {
                expired.push_back(std::move(it->second));
                it = sessions_.erase(it);
            } else {
                next = std::min(next, due);
                ++it;
            }
        }
    }
    if (nextDueMs) *nextDueMs = next;
    for (auto& s : expired) {
        closed(*s);
        if (counters_) counters_->sessionTimeoutCount.fetch_add(1, std::memory_order_relaxed);
    }
    return expired.size();
}

std::uint32_t SessionManager::expireRequests(std::int64_t nowMs,
                                             const QueuedCanceller& canceller) const {
    std::uint32_t n = 0;
    std::shared_lock lock(mutex_);
    for (const auto& [key, s] : sessions_) n += s->requests_.expire(nowMs, canceller);
    return n;
}

void SessionManager::snapshotRequests(RequestDrain& drain,
                                      std::vector<std::shared_ptr<Session>>& keep) const {
    std::shared_lock lock(mutex_);
    for (const auto& [key, s] : sessions_) {
        drain.snapshot(s->requests_);
        keep.push_back(s);
    }
}

void SessionManager::closeAll() {
    std::map<std::string, std::shared_ptr<Session>, std::less<>> all;
    {
        std::unique_lock lock(mutex_);
        all.swap(sessions_);
    }
    for (auto& [k, s] : all) {
        s->deleteSubscriptions_.store(true, std::memory_order_release);
        closed(*s);
    }
}

std::size_t SessionManager::count() const {
    std::shared_lock lock(mutex_);
    return sessions_.size();
}

}  // namespace uaplex::session
