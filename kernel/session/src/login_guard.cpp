// SPDX-License-Identifier: Apache-2.0
#include <uaplex/session/login_guard.hpp>

#include <algorithm>
#include <chrono>

namespace uaplex::session {

std::uint32_t LoginThrottle::countOf(Table& t, std::string_view key, std::int64_t nowMs) {
    if (key.empty()) return 0;
    auto it = t.find(key);
    if (it == t.end()) return 0;
    if (nowMs - it->second.lastMs >= std::int64_t(limits_.lockoutMs)) {
        t.erase(it);  // forgotten
        return 0;
    }
    return it->second.failures;
}

void LoginThrottle::bump(Table& t, std::string_view key, std::int64_t nowMs) {
    if (key.empty()) return;
    auto it = t.find(key);
    if (it == t.end()) {
        if (t.size() >= limits_.maxTracked) {
            // Full: forget the stale entries, then the oldest one, so the table stays bounded
            // whatever names a guesser invents.
            for (auto i = t.begin(); i != t.end();)
                i = nowMs - i->second.lastMs >= std::int64_t(limits_.lockoutMs) ? t.erase(i)
                                                                                : std::next(i);
            if (t.size() >= limits_.maxTracked)
                t.erase(std::min_element(t.begin(), t.end(), [](const auto& a, const auto& b) {
                    return a.second.lastMs < b.second.lastMs;
                }));
        }
        it = t.emplace(std::string(key), Entry{}).first;
    } else if (nowMs - it->second.lastMs >= std::int64_t(limits_.lockoutMs)) {
        it->second.failures = 0;
    }
    ++it->second.failures;
    it->second.lastMs = nowMs;
}

LoginThrottle::Decision LoginThrottle::check(std::string_view peer, std::string_view user,
                                             std::uint32_t sessionFailures, std::int64_t nowMs) {
    std::lock_guard lock(mutex_);
    const std::uint32_t u = countOf(users_, user, nowMs);
    const std::uint32_t p = countOf(peers_, peer, nowMs);
    Decision d;
    d.lockedOut = u >= limits_.lockoutFailures || p >= limits_.lockoutFailures;
    const std::uint32_t f = std::max({u, p, sessionFailures});
    if (d.lockedOut) {
        d.delayMs = limits_.maxDelayMs;  // a locked-out guess is as slow as the slowest
    } else if (f >= limits_.failuresBeforeDelay) {
        const std::uint32_t doublings =
            std::min<std::uint32_t>(f - limits_.failuresBeforeDelay, 20);
        d.delayMs =
            std::min<std::int64_t>(std::int64_t(limits_.delayMs) << doublings, limits_.maxDelayMs);
    }
    return d;
}

std::uint32_t LoginThrottle::failures(std::string_view peer, std::string_view user,
                                      std::int64_t nowMs) {
    std::lock_guard lock(mutex_);
    return std::max(countOf(users_, user, nowMs), countOf(peers_, peer, nowMs));
}

void LoginThrottle::failed(std::string_view peer, std::string_view user, std::int64_t nowMs) {
    std::lock_guard lock(mutex_);
    bump(users_, user, nowMs);
    bump(peers_, peer, nowMs);
}

void LoginThrottle::succeeded(std::string_view user) {
    if (user.empty()) return;
    std::lock_guard lock(mutex_);
    if (auto it = users_.find(user); it != users_.end()) users_.erase(it);
}

bool LoginThrottle::reservePending(std::string_view peer) {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(peer);
    if (it == pending_.end()) {
        // One entry per peer with a login in the pool, so bounded by the pool's queue.
        pending_.emplace(std::string(peer), 1);
        return true;
    }
    if (it->second >= limits_.maxPendingPerPeer) return false;
    ++it->second;
    return true;
}

void LoginThrottle::releasePending(std::string_view peer) {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(peer);
    if (it != pending_.end() && --it->second == 0) pending_.erase(it);
}

LoginPool::LoginPool(std::uint32_t threads, std::uint32_t queueCapacity)
    : threadCount_(std::max<std::uint32_t>(threads, 1)),
      capacity_(std::max<std::uint32_t>(queueCapacity, 1)) {}

LoginPool::~LoginPool() {
    stop();
}

bool LoginPool::submit(std::int64_t dueMs, std::function<void()> job) {
    {
        std::lock_guard lock(mutex_);
        if (stopped_ || jobs_.size() >= capacity_) return false;
        if (threads_.empty()) {
            // Started on first use: a server without password logins runs no extra threads.
            for (std::uint32_t i = 0; i < threadCount_; ++i)
                threads_.emplace_back([this] { run(); });
        }
        jobs_.emplace(std::make_pair(dueMs, order_++), std::move(job));
    }
    wake_.notify_one();
    return true;
}

void LoginPool::run() {
    std::unique_lock lock(mutex_);
    while (!stopped_) {
        if (jobs_.empty()) {
            wake_.wait(lock);
            continue;
        }
        auto first = jobs_.begin();
        const std::int64_t now = sdk::monotonic_ms();
        if (first->first.first > now) {
            // The earliest is a delayed answer: wait for its time (or an earlier job).
            wake_.wait_for(lock, std::chrono::milliseconds(first->first.first - now));
            continue;
        }
        std::function<void()> fn = std::move(first->second);
        jobs_.erase(first);
        lock.unlock();
        fn();
        fn = nullptr;  // what the job holds (a route, a session) goes outside the lock
        lock.lock();
    }
}

void LoginPool::stop() {
    std::vector<std::thread> threads;
    decltype(jobs_) dropped;
    {
        std::lock_guard lock(mutex_);
        stopped_ = true;
        threads.swap(threads_);
        dropped.swap(jobs_);
    }
    wake_.notify_all();
    for (auto& t : threads) t.join();
    // Dropped jobs release what they hold here; they are never run.
}

std::size_t LoginPool::queued() const {
    std::lock_guard lock(mutex_);
    return jobs_.size();
}

}  // namespace uaplex::session
