// SPDX-License-Identifier: Apache-2.0
// Session lifecycle: create (limits, revised timeout, tokens), activate (identity tokens,
// channel binding, transfer), resolve statuses, close, timeout, counters.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <uaplex/session/server_counters.hpp>
#include <uaplex/session/session_manager.hpp>
#include "owned_token.hpp"

using namespace uaplex;
using namespace uaplex::session;

namespace {
const UserIdentity kAnonymous{};
const UserIdentity kAlice{IdentityKind::UserName, "user:alice", "alice", kAuthenticatedUserRole};
}  // namespace

TEST_CASE("create revises the timeout and makes distinct unguessable tokens") {
    session::ServerCounters counters;
    SessionManager m({10, 10000, 60000}, &counters);
    auto a = m.create(1, 5, "a", 0, 0);
    auto b = m.create(1, 1e12, "", 0, 0);
    REQUIRE(a.status == UAPLEX_Good);
    REQUIRE(b.status == UAPLEX_Good);
    CHECK(a.session->timeoutMs() == 10000);
    CHECK(b.session->timeoutMs() == 60000);
    auto ta = a.session->authenticationToken();
    auto tb = b.session->authenticationToken();
    CHECK(ta.identifier_type == UAPLEX_ID_BYTESTRING);
    CHECK(ta.identifier.bytestring.length == 32);
    CHECK_FALSE(ua::equal(ta, tb));
    CHECK_FALSE(ua::equal(a.session->sessionId(), b.session->sessionId()));
    CHECK(counters.currentSessionCount == 2);
    CHECK(counters.cumulatedSessionCount == 2);
    CHECK(m.count() == 2);
}

TEST_CASE("max_sessions answers BadTooManySessions") {
    session::ServerCounters counters;
    SessionManager m({2, 10000, 60000}, &counters);
    CHECK(m.create(1, 0, "", 0, 0).status == UAPLEX_Good);
    CHECK(m.create(1, 0, "", 0, 0).status == UAPLEX_Good);
    CHECK(m.create(1, 0, "", 0, 0).status == UAPLEX_BadTooManySessions);
    CHECK(counters.rejectedSessionCount == 1);
}

TEST_CASE("requests before activation, from another channel, with an unknown token") {
    SessionManager m({10, 10000, 60000}, nullptr);
    auto c = m.create(7, 0, "", 0, 0);
    auto token = c.session->authenticationToken();
    std::shared_ptr<Session> s;
    CHECK(m.resolve(token, 7, 0, s) == UAPLEX_BadSessionNotActivated);
    CHECK(m.resolve(token, 8, 0, s) == UAPLEX_BadSecureChannelIdInvalid);
    CHECK(m.resolve(ua::numericNodeId(0, 1), 7, 0, s) == UAPLEX_BadSessionIdInvalid);
    // A first activation must come over the channel that created the session.
    CHECK(m.activate(token, 8, kAnonymous, nullptr, 0) == UAPLEX_BadSecureChannelIdInvalid);
    CHECK(m.activate(token, 7, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(m.resolve(token, 7, 0, s) == UAPLEX_Good);
    CHECK(s == c.session);
    CHECK(m.resolve(token, 8, 0, s) == UAPLEX_BadSecureChannelIdInvalid);
}

TEST_CASE("a session keeps its identity, a second activation may change it on its channel") {
    SessionManager m({10, 10000, 60000}, nullptr);
    auto c = m.create(1, 0, "", 0, 0);
    auto token = c.session->authenticationToken();
    REQUIRE(m.activate(token, 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(c.session->identityKey() == "anonymous");
    REQUIRE(m.activate(token, 1, kAlice, nullptr, 0) == UAPLEX_Good);
    CHECK(c.session->identityKey() == "user:alice");
    CHECK(c.session->identity().kind == IdentityKind::UserName);
    CHECK(c.session->identity().roles == kAuthenticatedUserRole);
    // A transfer to another channel keeps the user: another identity is refused.
    CHECK(m.activate(token, 2, kAnonymous, nullptr, 0) == UAPLEX_BadSecureChannelIdInvalid);
    CHECK(m.activate(token, 2, kAlice, nullptr, 0) == UAPLEX_Good);
    CHECK(c.session->channelId() == 2);
}

TEST_CASE("an activated session transfers to a new channel and leaves the old one") {
    SessionManager m({10, 10000, 60000}, nullptr);
    auto c = m.create(1, 0, "", 0, 0);
    auto token = c.session->authenticationToken();
    auto nonce = c.session->serverNonce();
    REQUIRE(m.activate(token, 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(c.session->serverNonce() != nonce);  // a fresh nonce per activation
    REQUIRE(m.activate(token, 2, kAnonymous, nullptr, 0) == UAPLEX_Good);
    std::shared_ptr<Session> s;
    CHECK(m.resolve(token, 2, 0, s) == UAPLEX_Good);
    CHECK(m.resolve(token, 1, 0, s) == UAPLEX_BadSecureChannelIdInvalid);
}

TEST_CASE("close ends the session and releases its services state") {
    session::ServerCounters counters;
    int created = 0, destroyed = 0;
    SessionStateHooks hooks{[&] {
                                ++created;
                                return static_cast<void*>(&created);
                            },
                            [&](void*) { ++destroyed; }};
    SessionManager m({10, 10000, 60000}, &counters, hooks);
    auto c = m.create(1, 0, "", 0, 0);
    auto token = c.session->authenticationToken();
    CHECK(created == 1);
    CHECK(c.session->state() == &created);
    CHECK(m.close(token, 2) == UAPLEX_BadSecureChannelIdInvalid);
    CHECK(m.close(token, 1) == UAPLEX_Good);
    CHECK(m.close(token, 1) == UAPLEX_BadSessionIdInvalid);
    CHECK(counters.currentSessionCount == 0);
    c.session.reset();  // the last holder (a request in flight) lets go
    CHECK(destroyed == 1);
}

TEST_CASE("sessions without requests within their timeout are closed") {
    session::ServerCounters counters;
    SessionManager m({10, 10000, 60000}, &counters);
    test::OwnedToken a(m.create(1, 10000, "", 0, 0).session->authenticationToken());
    test::OwnedToken b(m.create(1, 20000, "", 0, 0).session->authenticationToken());
    REQUIRE(m.activate(b, 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    std::shared_ptr<Session> s;
    CHECK(m.sweep(9000) == 0);
    CHECK(m.resolve(b, 1, 15000, s) == UAPLEX_Good);  // a request keeps b alive
    CHECK(m.sweep(15000) == 1);                       // a timed out
    CHECK(m.resolve(a, 1, 15000, s) == UAPLEX_BadSessionIdInvalid);
    std::int64_t next = 0;
    CHECK(m.sweep(34000, &next) == 0);
    CHECK(next == 35001);  // b's last use + its timeout + 1 ms: the sweep sleeps until then
    CHECK(m.sweep(35001, &next) == 1);
    CHECK(next == INT64_MAX);  // none left: nothing to wake for
    CHECK(counters.sessionTimeoutCount == 2);
    CHECK(counters.currentSessionCount == 0);
    CHECK(m.count() == 0);
}

TEST_CASE(
    "a connection's session cache resolves without the table and never revives a closed session") {
    SessionManager m({10, 10000, 60000}, nullptr);
    auto c = m.create(1, 0, "", 0, 0);
    auto token = c.session->authenticationToken();
    REQUIRE(m.activate(token, 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    SessionCache cache;
    std::shared_ptr<Session> s;
    CHECK(m.resolve(token, 1, 0, s, &cache) == UAPLEX_Good);
    CHECK(cache.session == c.session);
    CHECK(m.resolve(token, 1, 0, s, &cache) == UAPLEX_Good);
    CHECK(m.resolve(token, 2, 0, s, &cache) == UAPLEX_BadSecureChannelIdInvalid);
    auto other = m.create(1, 0, "", 0, 0).session->authenticationToken();
    CHECK(m.resolve(other, 1, 0, s, &cache) == UAPLEX_BadSessionNotActivated);  // another token
    CHECK(m.resolve(token, 1, 0, s, &cache) == UAPLEX_Good);
    REQUIRE(m.close(token, 1) == UAPLEX_Good);
    CHECK(m.resolve(token, 1, 0, s, &cache) == UAPLEX_BadSessionIdInvalid);
}

TEST_CASE("the closed hook sees deleteSubscriptions: CloseSession's flag, a timeout keeps them") {
    SessionManager m({10, 10000, 60000}, nullptr);
    std::vector<std::pair<std::string, bool>> closed;
    m.setClosedHook([&](Session& s) {
        closed.emplace_back(std::string(s.name()), s.deleteSubscriptionsOnClose());
    });
    auto keep = m.create(1, 10000, "keep", 0, 0).session->authenticationToken();
    auto del = m.create(1, 10000, "delete", 0, 0).session->authenticationToken();
    m.create(1, 10000, "timeout", 0, 0);
    REQUIRE(m.activate(keep, 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    REQUIRE(m.activate(del, 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(m.close(keep, 1, false) == UAPLEX_Good);
    CHECK(m.close(del, 1, true) == UAPLEX_Good);
    CHECK(m.sweep(20001) == 1);
    m.create(1, 10000, "shutdown", 0, 0);
    m.closeAll();
    CHECK(closed == std::vector<std::pair<std::string, bool>>{
                        {"keep", false}, {"delete", true}, {"timeout", false}, {"shutdown", true}});
}

TEST_CASE("the identity key compares sessions of the same user") {
    SessionManager m({10, 10000, 60000}, nullptr);
    auto a = m.create(1, 10000, "a", 0, 0);
    auto b = m.create(1, 10000, "b", 0, 0);
    REQUIRE(m.activate(a.session->authenticationToken(), 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    REQUIRE(m.activate(b.session->authenticationToken(), 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(a.session->identityKey() == "anonymous");
    CHECK(a.session->identityKey() == b.session->identityKey());
}

TEST_CASE("one CSPRNG draw gives a session distinct token, SessionId and both nonces") {
    // 500 sessions before their activation on one channel: above the default cap.
    SessionManager m({2000, 10000, 60000, 1000}, nullptr);
    constexpr int kSessions = 500;
    std::vector<std::shared_ptr<Session>> sessions;
    std::vector<std::string> createNonces;
    for (int i = 0; i < kSessions; ++i) {
        auto c = m.create(1, 0, "", 0, 0);
        REQUIRE(c.status == UAPLEX_Good);
        const auto& n = c.session->serverNonce();
        createNonces.emplace_back(reinterpret_cast<const char*>(n.data()), n.size());
        sessions.push_back(c.session);
    }
    // CreateSession draws once; the first activation takes the nonce drawn with it.
    CHECK(m.randomDraws() == kSessions);
    std::vector<std::string> fields;  // every random field of every session, as bytes
    for (int i = 0; i < kSessions; ++i) {
        auto& s = sessions[std::size_t(i)];
        auto token = s->authenticationToken();
        REQUIRE(token.identifier_type == UAPLEX_ID_BYTESTRING);
        REQUIRE(token.identifier.bytestring.length == std::int32_t(Session::kTokenSize));
        auto id = s->sessionId();
        REQUIRE(id.identifier_type == UAPLEX_ID_GUID);
        REQUIRE(m.activate(token, 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
        const auto& n = s->serverNonce();
        REQUIRE(n.size() == Session::kNonceSize);
        fields.emplace_back(reinterpret_cast<const char*>(token.identifier.bytestring.data),
                            Session::kTokenSize);
        fields.emplace_back(reinterpret_cast<const char*>(&id.identifier.guid),
                            sizeof id.identifier.guid);
        fields.push_back(createNonces[std::size_t(i)]);
        fields.emplace_back(reinterpret_cast<const char*>(n.data()), n.size());
    }
    CHECK(m.randomDraws() == kSessions);
    // Distinct everywhere, and no field is a prefix of another (the slices do not overlap).
    std::vector<std::string> prefixes;
    for (const auto& f : fields) prefixes.push_back(f.substr(0, 16));
    std::sort(prefixes.begin(), prefixes.end());
    CHECK(std::adjacent_find(prefixes.begin(), prefixes.end()) == prefixes.end());
    // Not all zero bytes, and bits near half set (a slice that was never filled would not be).
    std::size_t ones = 0, bits = 0;
    for (const auto& f : fields)
        for (unsigned char c : f) {
            ones += std::size_t(__builtin_popcount(c));
            bits += 8;
        }
    CHECK(double(ones) / double(bits) > 0.45);
    CHECK(double(ones) / double(bits) < 0.55);

    // A second activation draws a fresh nonce.
    auto& s0 = sessions[0];
    auto before = s0->serverNonce();
    REQUIRE(m.activate(s0->authenticationToken(), 1, kAnonymous, nullptr, 0) == UAPLEX_Good);
    CHECK(m.randomDraws() == kSessions + 1);
    CHECK(s0->serverNonce() != before);
}

TEST_CASE("create reports when the new session times out, for the sweep that sleeps until then") {
    // Unactivated sessions live as long as they asked here (the short life has its own test).
    SessionManager m({10, 10000, 60000, 8, 32, 60000}, nullptr);
    std::vector<std::int64_t> due;
    m.setTimeoutScheduled(
        [](void* user, std::int64_t dueMs) {
            static_cast<std::vector<std::int64_t>*>(user)->push_back(dueMs);
        },
        &due);
    m.create(1, 20000, "", 0, 500);
    m.create(1, 1, "", 0, 700);  // revised up to the minimum, 10000
    REQUIRE(due.size() == 2);
    CHECK(due[0] == 20501);
    CHECK(due[1] == 10701);
    std::int64_t next = 0;
    CHECK(m.sweep(10700, &next) == 0);
    CHECK(next == 10701);
    CHECK(m.sweep(10701, &next) == 1);
    CHECK(next == 20501);
}
