// SPDX-License-Identifier: Apache-2.0
// Sessions against hostile clients: unactivated sessions (caps per channel and peer, short
// timeout, closed with their channel, the establishment lease, strings cut), the binding of a
// session to its creator's certificate and mode, the nonce a concurrent activation renewed,
// the key TransferSubscriptions compares, and the failed-login throttle and its pool.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <uaplex/session/login_guard.hpp>
#include <uaplex/session/server_counters.hpp>
#include <uaplex/session/session_manager.hpp>
#include "owned_token.hpp"

using namespace uaplex;
using namespace uaplex::session;

namespace {

const UserIdentity kAnonymous{};
const UserIdentity kAlice{IdentityKind::UserName, "user:alice", "alice", kAuthenticatedUserRole};

SessionLimits small() {
    SessionLimits l;
    l.maxSessions = 100;
    l.maxUnactivatedPerChannel = 4;
    l.maxUnactivatedPerPeer = 6;
    l.unactivatedTimeoutMs = 3000;
    return l;
}

ChannelOrigin from(std::string_view peer) {
    ChannelOrigin o;
    o.peer = peer;
    return o;
}

// Counts the leases the manager holds through a fake provider.
struct FakeLeases {
    int held = 0;
    int refusedAfter = 1 << 30;
    int acquired = 0;
    EstablishmentLeases hooks() {
        EstablishmentLeases l;
        l.user = this;
        l.acquire = [](void* u, void*, uaplex_admission_lease&) {
            auto& f = *static_cast<FakeLeases*>(u);
            if (f.acquired >= f.refusedAfter) return uaplex_status(UAPLEX_BadServerTooBusy);
            ++f.acquired;
            ++f.held;
            return uaplex_status(UAPLEX_Good);
        };
        l.release = [](void* u, uaplex_admission_lease&) { --static_cast<FakeLeases*>(u)->held; };
        return l;
    }
};

}  // namespace

TEST_CASE("unactivated sessions are capped per channel and per peer with BadTooManySessions") {
    session::ServerCounters counters;
    SessionManager m(small(), &counters);
    std::vector<std::shared_ptr<Session>> kept;
    // 1000 CreateSessions on one channel: only the cap is kept.
    int good = 0;
    for (int i = 0; i < 1000; ++i) {
        auto c = m.create(1, 60000, "", 0, 0, from("10.0.0.1"));
        if (c.status == UAPLEX_Good) {
            ++good;
            kept.push_back(c.session);
        } else {
            CHECK(c.status == UAPLEX_BadTooManySessions);
        }
    }
    CHECK(good == 4);
    CHECK(m.count() == 4);
    CHECK(counters.rejectedSessionCount == 996);
    // Another channel of the same peer: up to the peer's cap.
    CHECK(m.create(2, 60000, "", 0, 0, from("10.0.0.1")).status == UAPLEX_Good);
    CHECK(m.create(2, 60000, "", 0, 0, from("10.0.0.1")).status == UAPLEX_Good);
    CHECK(m.create(2, 60000, "", 0, 0, from("10.0.0.1")).status == UAPLEX_BadTooManySessions);
    // Another peer is not affected.
    auto other = m.create(3, 60000, "", 0, 0, from("10.0.0.2"));
    REQUIRE(other.status == UAPLEX_Good);
    // An activation frees a place on its channel (and its peer's).
    REQUIRE(m.activate(kept[0]->authenticationToken(), 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(m.unactivatedCount() == 6);
    CHECK(m.create(1, 60000, "", 0, 0, from("10.0.0.1")).status == UAPLEX_Good);
    CHECK(m.create(1, 60000, "", 0, 0, from("10.0.0.1")).status == UAPLEX_BadTooManySessions);
}

TEST_CASE("an unactivated session times out after the unactivated timeout, whatever it asked") {
    SessionManager m(small(), nullptr);
    std::int64_t scheduled = 0;
    m.setTimeoutScheduled([](void* u, std::int64_t due) { *static_cast<std::int64_t*>(u) = due; },
                          &scheduled);
    test::OwnedToken idle(m.create(1, 3600000, "idle", 0, 0).session->authenticationToken());
    CHECK(scheduled == 3001);  // the sweep wakes for the short life, not the hour
    test::OwnedToken used(m.create(1, 3600000, "used", 0, 0).session->authenticationToken());
    REQUIRE(m.activate(used, 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    std::int64_t next = 0;
    CHECK(m.sweep(3000, &next) == 0);
    CHECK(next == 3001);
    CHECK(m.sweep(3001, &next) == 1);
    std::shared_ptr<Session> s;
    CHECK(m.activate(idle, 1, kAnonymous, nullptr, 3001) == UAPLEX_BadSessionIdInvalid);
    CHECK(m.resolve(used, 1, 3001, s) == UAPLEX_Good);  // activated: its own timeout
    CHECK(m.unactivatedCount() == 0);
}

TEST_CASE("unactivated sessions close with their channel, activated ones stay") {
    std::vector<std::string> closed;  // outlives the manager, whose end closes the rest
    SessionManager m(small(), nullptr);
    m.setClosedHook([&](Session& s) { closed.emplace_back(s.name()); });
    auto a = m.create(1, 60000, "pending", 0, 0, from("10.0.0.1")).session;
    auto b = m.create(1, 60000, "active", 0, 0, from("10.0.0.1")).session;
    auto c = m.create(2, 60000, "elsewhere", 0, 0, from("10.0.0.1")).session;
    REQUIRE(m.activate(b->authenticationToken(), 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(m.channelClosed(1) == 1);
    CHECK(closed == std::vector<std::string>{"pending"});
    CHECK(m.count() == 2);
    CHECK(m.channelClosed(1) == 0);
    // The peer's places came back with it.
    for (int i = 0; i < 5; ++i)
        CHECK(m.create(3, 60000, "", 0, 0, from("10.0.0.1")).status ==
              (i < 4 ? UAPLEX_Good : UAPLEX_BadTooManySessions));
    // opc.https: one channel id for all its connections, never closed with one of them.
    ChannelOrigin https = from("10.0.0.9");
    https.ownChannel = false;
    for (int i = 0; i < 6; ++i) CHECK(m.create(9, 60000, "", 0, 0, https).status == UAPLEX_Good);
    CHECK(m.channelClosed(9) == 0);
}

TEST_CASE("SessionName and the ApplicationUri are cut to the string limit") {
    SessionManager m(small(), nullptr);
    std::string huge(1 << 20, 'n');
    auto c = m.create(1, 0, huge, 0, 0, {}, huge);
    REQUIRE(c.status == UAPLEX_Good);
    CHECK(c.session->name().size() == 256);
    CHECK(c.session->applicationUri().size() == 256);
    // Not inside a UTF-8 sequence: 255 ASCII bytes and a two-byte character.
    std::string utf8(255, 'a');
    utf8 += "\xC3\xA9tail";
    auto d = m.create(1, 0, utf8, 0, 0);
    CHECK(d.session->name() == std::string(255, 'a'));
}

TEST_CASE("CreateSession holds a session_establishment lease until activation or close") {
    FakeLeases leases;
    SessionManager m(small(), nullptr);
    m.setEstablishmentLeases(leases.hooks());
    int owner = 0;
    auto a = m.create(1, 0, "", 0, 0, {}, {}, &owner).session;
    auto b = m.create(1, 0, "", 0, 0, {}, {}, &owner).session;
    auto c = m.create(2, 0, "", 0, 0, {}, {}, &owner).session;
    CHECK(leases.held == 3);
    REQUIRE(m.activate(a->authenticationToken(), 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(leases.held == 2);
    REQUIRE(m.activate(a->authenticationToken(), 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(leases.held == 2);  // released once
    REQUIRE(m.close(b->authenticationToken(), 1) == UAPLEX_Good);
    CHECK(leases.held == 1);
    CHECK(m.channelClosed(2) == 1);
    CHECK(leases.held == 0);
    // The provider refuses: BadTooManySessions, and nothing stays held.
    leases.refusedAfter = leases.acquired;
    CHECK(m.create(3, 0, "", 0, 0, {}, {}, &owner).status == UAPLEX_BadTooManySessions);
    CHECK(leases.held == 0);
    // A cap refusal gives the lease back too.
    leases.refusedAfter = 1 << 30;
    for (int i = 0; i < 4; ++i) m.create(4, 0, "", 0, 0, {}, {}, &owner);
    CHECK(leases.held == 4);
    CHECK(m.create(4, 0, "", 0, 0, {}, {}, &owner).status == UAPLEX_BadTooManySessions);
    CHECK(leases.held == 4);
    CHECK(m.sweep(3001) == 4);  // timed out: released
    CHECK(leases.held == 0);
}

TEST_CASE("a transfer needs the creating channel's certificate and no weaker mode") {
    SessionManager m(small(), nullptr);
    const std::vector<std::uint8_t> certA(600, 0xA1), certB(600, 0xB2);
    ChannelOrigin secured;
    secured.clientCertificate = certA;
    secured.mode = ChannelMode::SignAndEncrypt;
    auto c = m.create(1, 0, "", 0, 0, secured);
    auto token = c.session->authenticationToken();
    REQUIRE(m.activate(token, 1, kAnonymous, nullptr, 0, nullptr, secured) == UAPLEX_Good);
    // A None channel: refused, and the session stays on its channel.
    ChannelOrigin none;
    CHECK(m.checkActivation(token, 2, none) == UAPLEX_BadSecureChannelIdInvalid);
    CHECK(m.activate(token, 2, kAnonymous, nullptr, 0, nullptr, none) ==
          UAPLEX_BadSecureChannelIdInvalid);
    // Another client certificate, even on SignAndEncrypt: refused.
    ChannelOrigin other = secured;
    other.clientCertificate = certB;
    CHECK(m.activate(token, 3, kAnonymous, nullptr, 0, nullptr, other) ==
          UAPLEX_BadSecureChannelIdInvalid);
    // The same certificate with Sign only: a weaker mode, refused.
    ChannelOrigin signOnly = secured;
    signOnly.mode = ChannelMode::Sign;
    CHECK(m.activate(token, 4, kAnonymous, nullptr, 0, nullptr, signOnly) ==
          UAPLEX_BadSecureChannelIdInvalid);
    std::shared_ptr<Session> s;
    CHECK(m.resolve(token, 1, 0, s) == UAPLEX_Good);  // the victim's channel still works
    // The same certificate and mode: the transfer Part 4 5.6.3 allows.
    CHECK(m.activate(token, 5, kAnonymous, nullptr, 0, nullptr, secured) == UAPLEX_Good);
    CHECK(m.resolve(token, 5, 0, s) == UAPLEX_Good);
    // A session made on None may move between None channels (no certificate either side) but
    // not to a secured channel of some certificate.
    auto n = m.create(6, 0, "", 0, 0).session->authenticationToken();
    REQUIRE(m.activate(n, 6, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(m.activate(n, 7, kAnonymous, nullptr, 0, nullptr, secured) ==
          UAPLEX_BadSecureChannelIdInvalid);
    CHECK(m.activate(n, 7, kAnonymous, nullptr, 0) == UAPLEX_Good);
}

TEST_CASE("an activation checked against a nonce another activation renewed is refused") {
    SessionManager m(small(), nullptr);
    auto c = m.create(1, 0, "", 0, 0);
    auto token = c.session->authenticationToken();
    auto first = c.session->currentNonce();
    std::array<std::uint8_t, Session::kNonceSize> next{};
    REQUIRE(m.activate(token, 1, kAnonymous, nullptr, 0, nullptr, {}, &first, &next) ==
            UAPLEX_Good);
    CHECK(next == c.session->currentNonce());
    CHECK(next != first);
    // A second request that checked its signature against the old nonce loses.
    CHECK(m.activate(token, 1, kAnonymous, nullptr, 0, nullptr, {}, &first) ==
          UAPLEX_BadNonceInvalid);
    // Concurrent activations: each reads the nonce under the lock and at most one of two
    // with the same nonce wins (no torn reads; run under TSan to see the race is gone).
    std::atomic<int> won{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 200; ++i) {
                auto n = c.session->currentNonce();
                if (m.activate(token, 1, kAnonymous, nullptr, 0, nullptr, {}, &n) == UAPLEX_Good)
                    ++won;
            }
        });
    for (auto& t : threads) t.join();
    CHECK(won > 0);
    CHECK(won <= 800);
}

TEST_CASE("the transfer key: Anonymous needs a signed channel and the same ApplicationUri") {
    SessionManager m(small(), nullptr);
    const std::vector<std::uint8_t> cert(300, 0x33);
    ChannelOrigin sign;
    sign.clientCertificate = cert;
    sign.mode = ChannelMode::Sign;
    auto make = [&](std::uint32_t channel, const ChannelOrigin& o, std::string_view uri,
                    const UserIdentity& who) {
        auto s = m.create(channel, 0, "", 0, 0, o, uri).session;
        REQUIRE(m.activate(s->authenticationToken(), channel, who, nullptr, 0, nullptr, o) ==
                UAPLEX_Good);
        return s;
    };
    auto noneA = make(1, {}, "urn:app", kAnonymous);
    auto noneB = make(2, {}, "urn:app", kAnonymous);
    CHECK(noneA->identityKey() == noneB->identityKey());  // both "anonymous"
    CHECK(noneA->transferKey() != noneB->transferKey());  // but nobody takes the other's
    auto signA = make(3, sign, "urn:app", kAnonymous);
    auto signB = make(4, sign, "urn:app", kAnonymous);
    auto signOther = make(5, sign, "urn:other", kAnonymous);
    CHECK(signA->transferKey() == signB->transferKey());
    CHECK(signA->transferKey() != signOther->transferKey());
    CHECK(signA->transferKey() != noneA->transferKey());
    auto alice1 = make(6, {}, "urn:app", kAlice);
    auto alice2 = make(7, {}, "urn:x", kAlice);
    CHECK(alice1->transferKey() == "user:alice");
    CHECK(alice1->transferKey() == alice2->transferKey());
}

TEST_CASE("login throttle: delays grow with failures, then a lockout refuses even the right one") {
    LoginLimits l;
    l.failuresBeforeDelay = 2;
    l.delayMs = 100;
    l.maxDelayMs = 800;
    l.lockoutFailures = 6;
    l.lockoutMs = 10000;
    LoginThrottle t(l);
    std::vector<std::int64_t> delays;
    for (int i = 0; i < 6; ++i) {
        auto d = t.check("10.0.0.1", "alice", 0, 1000);
        CHECK_FALSE(d.lockedOut);
        delays.push_back(d.delayMs);
        t.failed("10.0.0.1", "alice", 1000);
    }
    CHECK(delays == std::vector<std::int64_t>{0, 0, 100, 200, 400, 800});
    auto locked = t.check("10.0.0.1", "alice", 0, 1000);
    CHECK(locked.lockedOut);
    CHECK(locked.delayMs == 800);
    // Locked per user name from any peer, and per peer for any user name.
    CHECK(t.check("10.0.0.2", "alice", 0, 1000).lockedOut);
    CHECK(t.check("10.0.0.1", "bob", 0, 1000).lockedOut);
    CHECK_FALSE(t.check("10.0.0.2", "bob", 0, 1000).lockedOut);
    // A session's own failures delay it too.
    CHECK(t.check("10.0.0.3", "carol", 3, 1000).delayMs == 200);
    // A success forgets the user name's failures, not the peer's.
    t.succeeded("alice");
    CHECK_FALSE(t.check("10.0.0.2", "alice", 0, 1000).lockedOut);
    CHECK(t.check("10.0.0.1", "alice", 0, 1000).lockedOut);
    // The lockout ends lockoutMs after the last failure.
    CHECK_FALSE(t.check("10.0.0.1", "bob", 0, 11000).lockedOut);
}

TEST_CASE("login throttle: bounded tables and pending logins per peer") {
    LoginLimits l;
    l.maxTracked = 16;
    l.maxPendingPerPeer = 2;
    l.lockoutFailures = 3;
    LoginThrottle t(l);
    // A guesser inventing names keeps the table at its bound; its peer is still locked out.
    for (int i = 0; i < 1000; ++i) t.failed("10.0.0.1", "user" + std::to_string(i), 1000 + i);
    CHECK(t.check("10.0.0.1", "someone", 0, 2000).lockedOut);
    CHECK(t.failures("", "user999", 2000) == 1);
    CHECK(t.failures("", "user0", 2000) == 0);  // evicted
    CHECK(t.reservePending("10.0.0.1"));
    CHECK(t.reservePending("10.0.0.1"));
    CHECK_FALSE(t.reservePending("10.0.0.1"));
    CHECK(t.reservePending("10.0.0.2"));
    t.releasePending("10.0.0.1");
    CHECK(t.reservePending("10.0.0.1"));
}

TEST_CASE("login pool: a finite queue, delayed jobs run at their time, stop drops the rest") {
    LoginPool pool(1, 3);
    std::atomic<int> ran{0};
    std::atomic<bool> release{false};
    // The one thread is held by a job; three more fill the queue; the next is refused.
    REQUIRE(pool.submit(sdk::monotonic_ms(), [&] {
        while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ++ran;
    }));
    while (pool.queued() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    for (int i = 0; i < 3; ++i) REQUIRE(pool.submit(sdk::monotonic_ms(), [&] { ++ran; }));
    CHECK_FALSE(pool.submit(sdk::monotonic_ms(), [&] { ++ran; }));
    release = true;
    while (ran < 4) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    // A delayed job does not run before its due time, and holds no thread while it waits.
    const std::int64_t due = sdk::monotonic_ms() + 200;
    std::atomic<std::int64_t> ranAt{0};
    REQUIRE(pool.submit(due, [&] { ranAt = sdk::monotonic_ms(); }));
    REQUIRE(pool.submit(sdk::monotonic_ms(), [&] { ++ran; }));  // an earlier one passes it
    while (ranAt == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    CHECK(ranAt >= due);
    CHECK(ran == 5);
    // Dropped on stop: never run, and what they hold is released.
    auto held = std::make_shared<int>(0);
    REQUIRE(pool.submit(sdk::monotonic_ms() + 60000, [&, held] { ++ran; }));
    CHECK(held.use_count() == 2);
    pool.stop();
    CHECK(held.use_count() == 1);
    CHECK(ran == 5);
    CHECK_FALSE(pool.submit(sdk::monotonic_ms(), [&] { ++ran; }));
}
