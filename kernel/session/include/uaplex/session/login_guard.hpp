// SPDX-License-Identifier: Apache-2.0
// Failed logins and the password checks behind them (Part 4 5.6.3, ActivateSession).
//
// LoginThrottle counts ActivateSession attempts refused for their identity token per
// session (the caller keeps that count on the Session), per user name and per peer (remote
// IP address). After a few failures the next answers come later and later, and past a
// threshold a user name or peer is locked out for a while: its attempts are refused without
// a password check, the right password included. The tables are bounded.
//
// LoginPool runs the expensive part (PBKDF2) on threads of its own, never on the request
// workers, with a finite queue; a delayed answer waits in that queue (a due time), never in
// a sleeping thread.
//
// Threads: both are callable from any thread; each has one lock of its own, taken only by
// ActivateSession (not by the steady request path).
#pragma once

#include <uaplex/statuscodes.h>
#include <uaplex/cpp/clock.hpp>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace uaplex::session {

struct LoginLimits {
    std::uint32_t failuresBeforeDelay = 3;  // per session, user name or peer
    std::uint32_t delayMs = 500;            // the first delay, doubled per further failure
    std::uint32_t maxDelayMs = 8000;
    std::uint32_t lockoutFailures = 10;    // per user name or peer
    std::uint32_t lockoutMs = 60000;       // a failure is remembered this long
    std::uint32_t maxSessionFailures = 5;  // then the session is closed
    std::uint32_t maxPendingPerPeer = 4;   // logins of one peer in the pool at once
    std::size_t maxTracked = 4096;         // entries per table (user names, peers)
};

class LoginThrottle {
  public:
    explicit LoginThrottle(LoginLimits limits) : limits_(limits) {}

    struct Decision {
        bool lockedOut = false;    // refuse without checking the password
        std::int64_t delayMs = 0;  // answer no sooner than this after the request
    };
    // What an attempt by `peer` for `user` (empty: none) on a session that
    // failed `sessionFailures` times gets.
    Decision check(std::string_view peer, std::string_view user, std::uint32_t sessionFailures,
                   std::int64_t nowMs);
    // A refused identity token: counts for the user name and the peer.
    void failed(std::string_view peer, std::string_view user, std::int64_t nowMs);
    // A verified identity: the user name's failures are forgotten (the peer's are not, so
    // that one valid account does not reset a guesser's budget).
    void succeeded(std::string_view user);
    // A place for one more login of `peer` in the pool; false beyond maxPendingPerPeer.
    bool reservePending(std::string_view peer);
    void releasePending(std::string_view peer);

    const LoginLimits& limits() const noexcept { return limits_; }
    std::uint32_t failures(std::string_view peer, std::string_view user, std::int64_t nowMs);

  private:
    struct Entry {
        std::uint32_t failures = 0;
        std::int64_t lastMs = 0;
    };
    using Table = std::map<std::string, Entry, std::less<>>;
    std::uint32_t countOf(Table& t, std::string_view key, std::int64_t nowMs);
    void bump(Table& t, std::string_view key, std::int64_t nowMs);

    LoginLimits limits_;
    std::mutex mutex_;
    Table users_, peers_;
    std::map<std::string, std::uint32_t, std::less<>> pending_;
};

// A fixed number of threads and a finite queue of jobs, each due at a time (now, or later
// for a delayed answer). Jobs run in due order.
class LoginPool {
  public:
    LoginPool(std::uint32_t threads, std::uint32_t queueCapacity);
    ~LoginPool();
    LoginPool(const LoginPool&) = delete;
    LoginPool& operator=(const LoginPool&) = delete;

    // Queues `job` to run at `dueMs` (sdk::monotonic_ms) or later. False when the queue is full
    // or the pool stopped (the caller answers BadTooManyOperations).
    bool submit(std::int64_t dueMs, std::function<void()> job);
    // Drops the jobs not started (destroyed without running: a job releases what it holds
    // in its captures' destructors) and joins the threads. Idempotent.
    void stop();
    std::size_t queued() const;

  private:
    void run();
    std::uint32_t threadCount_;
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::multimap<std::pair<std::int64_t, std::uint64_t>, std::function<void()>> jobs_;
    std::uint64_t order_ = 0;
    bool stopped_ = false;
    std::vector<std::thread> threads_;  // started with the first job
};

}  // namespace uaplex::session
