// SPDX-License-Identifier: Apache-2.0
#include <uaplex/session/session_manager.hpp>

#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <uaplex/encoding/hex.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

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

// At most `max` bytes of `s`, not cutting a UTF-8 sequence.
std::string_view truncateUtf8(std::string_view s, std::size_t max) noexcept {
    if (s.size() <= max) return s;
    std::size_t n = max;
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return s.substr(0, n);
}

std::array<std::uint8_t, 32> sha256(std::span<const std::uint8_t> data) noexcept {
    std::array<std::uint8_t, 32> out{};
    SHA256(data.data(), data.size(), out.data());
    return out;
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

std::array<std::uint8_t, Session::kNonceSize> Session::currentNonce() const {
    std::lock_guard lock(identityMutex_);
    return nonce_;
}

std::string Session::transferKey() const {
    std::lock_guard lock(identityMutex_);
    if (identity_.kind != IdentityKind::Anonymous) return identity_.key;
    // Part 4 5.13.7: for Anonymous the same ApplicationUri, and only over Sign or
    // SignAndEncrypt (where the certificate vouches for the URI).
    if (mode_ != ChannelMode::None) return "anonymous:app:" + enc::toHex(applicationUriHash_);
    return "anonymous:session:" +
           enc::toHex({reinterpret_cast<const std::uint8_t*>(&guid_), sizeof guid_});
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

SessionManager::SessionManager(SessionLimits limits, ServerCounters* counters,
                               SessionStateHooks hooks)
    : limits_(limits), counters_(counters), hooks_(std::move(hooks)) {}

SessionManager::~SessionManager() {
    closeAll();
}

void SessionManager::releaseLease(Session& s) noexcept {
    if (s.leaseHeld_.exchange(false, std::memory_order_acq_rel) && leases_.release)
        leases_.release(leases_.user, s.lease_);
}

void SessionManager::uncount(Session& s) noexcept {
    if (!s.unactivated_) return;
    s.unactivated_ = false;
    --unactivated_;
    if (s.ownChannel_) {
        auto it = unactivatedPerChannel_.find(s.channelId());
        if (it != unactivatedPerChannel_.end() && --it->second == 0)
            unactivatedPerChannel_.erase(it);
    }
    if (!s.peer_.empty()) {
        auto it = unactivatedPerPeer_.find(s.peer_);
        if (it != unactivatedPerPeer_.end() && --it->second == 0) unactivatedPerPeer_.erase(it);
    }
}

void SessionManager::closed(Session& s) {
    releaseLease(s);
    if (s.closed_.exchange(true)) return;
    if (counters_) counters_->currentSessionCount.fetch_sub(1, std::memory_order_relaxed);
    // Every caller holds a reference to `s`: completing its requests never drops the last.
    if (closedHook_) closedHook_(s);
}

SessionManager::Created SessionManager::create(std::uint32_t channelId, double requestedTimeoutMs,
                                               std::string_view name,
                                               std::uint32_t maxResponseMessageSize,
                                               std::int64_t nowMs, const ChannelOrigin& origin,
                                               std::string_view applicationUri,
                                               void* admissionOwner) {
    auto s = std::make_shared<Session>();
    // One CSPRNG draw for every random field of the session: the DRBG's cost is mostly per
    // call, not per byte. The slices never overlap, so each field stays independent.
    std::array<std::uint8_t, Session::kRandomSize> random;
    randomBytes(random.data(), random.size(), randomDraws_);
    s->takeRandom(random);
    OPENSSL_cleanse(random.data(), random.size());
    // Kept strings are cut: a CreateSession on a None channel costs the client nothing, so
    // it must not pin megabytes of names.
    s->name_ = std::string(truncateUtf8(name, limits_.maxStringLength));
    if (s->name_.empty()) s->name_ = "session-" + std::to_string(nextSessionNumber_++);
    s->applicationUri_ = std::string(truncateUtf8(applicationUri, limits_.maxStringLength));
    s->applicationUriHash_ = sha256(
        {reinterpret_cast<const std::uint8_t*>(applicationUri.data()), applicationUri.size()});
    if (!origin.clientCertificate.empty()) {
        s->certificateHash_ = sha256(origin.clientCertificate);
        s->hasCertificate_ = true;
    }
    s->mode_ = origin.mode;
    s->peer_ = std::string(truncateUtf8(origin.peer, 64));
    s->applicationName_ =
        std::string(truncateUtf8(origin.applicationName, limits_.maxStringLength));
    s->productUri_ = std::string(truncateUtf8(origin.productUri, limits_.maxStringLength));
    s->endpointUrl_ = std::string(truncateUtf8(origin.endpointUrl, limits_.maxStringLength));
    s->securityPolicyUri_ = std::string(truncateUtf8(origin.securityPolicyUri, 256));
    s->applicationType_ = origin.applicationType;
    if (origin.clientCertificate.size() <= 16384)
        s->certificate_.assign(origin.clientCertificate.begin(), origin.clientCertificate.end());
    s->createdUnixMs_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    s->ownChannel_ = origin.ownChannel;
    double t = requestedTimeoutMs;
    if (!(t >= limits_.minTimeoutMs)) t = limits_.minTimeoutMs;  // also NaN and <= 0
    if (t > limits_.maxTimeoutMs) t = limits_.maxTimeoutMs;
    s->timeoutMs_ = t;
    s->maxResponseMessageSize_ = maxResponseMessageSize;
    s->channelId_ = channelId;
    s->requests_.setDeadlineMonitor(deadlineMonitor_);
    s->lastUsedMs_ = nowMs;
    auto refuse = [&] {
        releaseLease(*s);
        if (counters_) counters_->rejectedSessionCount.fetch_add(1, std::memory_order_relaxed);
        return Created{UAPLEX_BadTooManySessions, nullptr};
    };
    // The admission provider's share of concurrent session establishments (its floors keep
    // one for a new client and one for a reconnect on a saturated server).
    if (admissionOwner && leases_.acquire) {
        s->lease_.hdr = UAPLEX_HEADER_INIT(uaplex_admission_lease, UAPLEX_STYPE_ADMISSION_LEASE);
        if (leases_.acquire(leases_.user, admissionOwner, s->lease_) != UAPLEX_Good)
            return refuse();
        s->leaseHeld_.store(true, std::memory_order_release);
    }
    {
        std::unique_lock lock(mutex_);
        if (sessions_.size() >= limits_.maxSessions) return refuse();
        std::uint32_t* perChannel = nullptr;
        std::uint32_t* perPeer = nullptr;
        if (s->ownChannel_) {
            perChannel = &unactivatedPerChannel_[channelId];
            if (*perChannel >= limits_.maxUnactivatedPerChannel) {
                if (*perChannel == 0) unactivatedPerChannel_.erase(channelId);
                return refuse();
            }
        }
        if (!s->peer_.empty()) {
            auto it = unactivatedPerPeer_.find(s->peer_);
            if (it == unactivatedPerPeer_.end())
                it = unactivatedPerPeer_.emplace(s->peer_, 0).first;
            perPeer = &it->second;
            if (*perPeer >= limits_.maxUnactivatedPerPeer) {
                if (*perPeer == 0) unactivatedPerPeer_.erase(it);
                if (perChannel && *perChannel == 0) unactivatedPerChannel_.erase(channelId);
                return refuse();
            }
        }
        if (perChannel) ++*perChannel;
        if (perPeer) ++*perPeer;
        ++unactivated_;
        std::string key(reinterpret_cast<const char*>(s->token_.data()), s->token_.size());
        sessions_.emplace(std::move(key), s);
    }
    // Until its first activation the session lives at most the unactivated timeout.
    std::int64_t life = std::int64_t(std::min<double>(t, limits_.unactivatedTimeoutMs));
    if (timeoutScheduled_) timeoutScheduled_(timeoutScheduledUser_, nowMs + life + 1);
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

uaplex_status SessionManager::bindingAllows(const Session& s, std::uint32_t channelId,
                                            const ChannelOrigin& origin) const noexcept {
    if (s.channelId() == channelId) return UAPLEX_Good;
    // A transfer to a new channel (Part 4 5.6.3): only an activated session, from a channel
    // of the same client certificate (so the client signature is checked with the session's
    // own certificate) and no weaker security mode.
    if (!s.activated()) return UAPLEX_BadSecureChannelIdInvalid;
    if (origin.clientCertificate.empty() == s.hasCertificate_)
        return UAPLEX_BadSecureChannelIdInvalid;
    if (s.hasCertificate_ && sha256(origin.clientCertificate) != s.certificateHash_)
        return UAPLEX_BadSecureChannelIdInvalid;
    if (std::uint8_t(origin.mode) < std::uint8_t(s.mode_)) return UAPLEX_BadSecureChannelIdInvalid;
    return UAPLEX_Good;
}

uaplex_status SessionManager::checkActivation(const ua::NodeId& authenticationToken,
                                              std::uint32_t channelId,
                                              const ChannelOrigin& origin) const {
    auto s = find(authenticationToken);
    if (!s) return UAPLEX_BadSessionIdInvalid;
    return bindingAllows(*s, channelId, origin);
}

uaplex_status SessionManager::activate(
    const ua::NodeId& authenticationToken, std::uint32_t channelId, UserIdentity identity,
    std::shared_ptr<const AccessView> access, std::int64_t nowMs, std::shared_ptr<Session>* out,
    const ChannelOrigin& origin, const std::array<std::uint8_t, Session::kNonceSize>* checkedNonce,
    std::array<std::uint8_t, Session::kNonceSize>* nonceOut) {
    auto s = find(authenticationToken);
    if (!s) return UAPLEX_BadSessionIdInvalid;
    // The first activation leaves the unactivated counts: under the table's lock, so that a
    // channel close or the sweep sees either state whole.
    std::unique_lock<std::shared_mutex> table(mutex_, std::defer_lock);
    if (!s->activated()) {
        table.lock();
        auto it = sessions_.find(tokenKey(authenticationToken));
        if (it == sessions_.end() || it->second != s) return UAPLEX_BadSessionIdInvalid;
    }
    bool wasActivated = s->activated();
    {
        std::lock_guard lock(s->identityMutex_);
        if (uaplex_status st = bindingAllows(*s, channelId, origin); st != UAPLEX_Good) return st;
        // Only the same user moves a session to another channel.
        if (s->channelId() != channelId && s->identity_.key != identity.key)
            return UAPLEX_BadSecureChannelIdInvalid;
        // Signatures were checked against this nonce; a concurrent activation that renewed it
        // meanwhile wins, this one is refused.
        if (checkedNonce && *checkedNonce != s->nonce_) return UAPLEX_BadNonceInvalid;
        s->identity_ = std::move(identity);
        s->access_ = std::move(access);
        s->accessView_.store(s->access_.get(), std::memory_order_release);
        if (!wasActivated) uncount(*s);
        s->channelId_.store(channelId, std::memory_order_release);
        // The first activation takes the nonce drawn with the session; later ones draw anew.
        if (s->activationNonceFresh_.exchange(false, std::memory_order_acq_rel)) {
            s->nonce_ = s->activationNonce_;
            OPENSSL_cleanse(s->activationNonce_.data(), s->activationNonce_.size());
        } else {
            randomBytes(s->nonce_.data(), s->nonce_.size(), randomDraws_);
        }
        if (nonceOut) *nonceOut = s->nonce_;
        s->activated_.store(true, std::memory_order_release);
    }
    if (table.owns_lock()) table.unlock();
    if (!wasActivated) releaseLease(*s);
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
        uncount(*s);
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
            Session& s = *it->second;
            // Timed out once more than its timeout passed since its last use; one never
            // activated gets the unactivated timeout at most.
            double timeout = s.timeoutMs_;
            if (s.unactivated_) timeout = std::min<double>(timeout, limits_.unactivatedTimeoutMs);
            std::int64_t due =
                s.lastUsedMs_.load(std::memory_order_relaxed) + std::int64_t(timeout) + 1;
            if (nowMs >= due) {
                uncount(s);
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
        for (auto& [k, s] : all) uncount(*s);
    }
    for (auto& [k, s] : all) {
        s->deleteSubscriptions_.store(true, std::memory_order_release);
        closed(*s);
    }
}

void SessionManager::list(std::vector<std::shared_ptr<Session>>& out) const {
    std::shared_lock lock(mutex_);
    out.reserve(out.size() + sessions_.size());
    for (const auto& [k, s] : sessions_) out.push_back(s);
}

bool SessionManager::closeSession(const std::shared_ptr<Session>& s) {
    {
        std::unique_lock lock(mutex_);
        std::string_view key(reinterpret_cast<const char*>(s->token_.data()), s->token_.size());
        auto it = sessions_.find(key);
        if (it == sessions_.end() || it->second != s) return false;
        sessions_.erase(it);
        uncount(*s);
    }
    s->deleteSubscriptions_.store(true, std::memory_order_release);
    closed(*s);
    return true;
}

std::size_t SessionManager::channelClosed(std::uint32_t channelId) {
    std::vector<std::shared_ptr<Session>> gone;
    {
        std::unique_lock lock(mutex_);
        if (!unactivatedPerChannel_.contains(channelId)) return 0;  // nothing pending there
        for (auto it = sessions_.begin(); it != sessions_.end();) {
            Session& s = *it->second;
            if (s.unactivated_ && s.ownChannel_ && s.channelId() == channelId) {
                uncount(s);
                gone.push_back(std::move(it->second));
                it = sessions_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& s : gone) {
        s->deleteSubscriptions_.store(true, std::memory_order_release);
        closed(*s);
    }
    return gone.size();
}

std::size_t SessionManager::unactivatedCount() const {
    std::shared_lock lock(mutex_);
    return unactivated_;
}

std::size_t SessionManager::count() const {
    std::shared_lock lock(mutex_);
    return sessions_.size();
}

void SessionManager::boundChannels(std::vector<std::uint32_t>& out) const {
    out.clear();
    {
        std::shared_lock lock(mutex_);
        out.reserve(sessions_.size());
        for (const auto& [key, s] : sessions_)
            if (!s->closed()) out.push_back(s->channelId());
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
}

}  // namespace uaplex::session
