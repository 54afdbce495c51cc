// SPDX-License-Identifier: Apache-2.0
// A burst of sessions against the real `uaplex` process: 2,000 connections open at once, each
// with a session, a subscription of 10 items and a Publish queued, are closed again
// (CloseSession with deleteSubscriptions, then CLO); the server's resident memory (VmRSS)
// comes back within 10 % of what it was before the burst. The same for a burst of channels
// without sessions, for 1,000 sessions with 20 Publish requests queued each, and for 5,000
// subscriptions deleted by DeleteSubscriptions in sessions that stay open.
// tools/bench/memory_churn.py measures the 10,000-session figure.
#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

constexpr int kSessions = 2000;
constexpr int kWarmSessions = 50;
constexpr std::uint32_t kItems = 10;

// The shipped slots (fair queue, leases, bounded pool) with limits for the burst, and the
// benchmark node manager's scalars (ns=1;i=1001..1100) to monitor.
test::ServerProcess startServer() {
    return test::ServerProcess("sessmem", [](std::uint16_t port, const std::filesystem::path&) {
        std::ostringstream toml;
        toml << test::configHead(port) << "request_threads = 2\n"
             << "[server.limits]\nmax_sessions = 2500\nmax_channels = 2500\n"
             << "max_channels_per_peer = 2500\nmax_subscriptions = 5500\n"
             << "[slots]\nrequest_queue = \"fair\"\nadmission = \"leases\"\n"
             << "buffer_pool = \"bounded\"\n"
             << "[plugins.fair]\n[plugins.leases]\n[plugins.bounded]\n[plugins.transport-tcp]\n"
             << "[plugins.benchmark]\n";
        return toml.str();
    });
}

// The test process holds every client's socket at once.
void raiseFileLimit() {
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
}

// A subscription (publishing 1 s) of kItems items on the benchmark scalars (sampling 100 ms,
// queue size 1); its id.
std::uint32_t subscribe(Client& c, int n) {
    test::SubscriptionParams p{};
    p.publishingInterval = 1000;
    std::uint32_t sub = test::createSubscription(c, p, 2);
    ua::MonitoredItemCreateRequest items[kItems]{};
    for (std::uint32_t i = 0; i < kItems; ++i) {
        auto& it = items[i];
        it.itemToMonitor.nodeId = ua::numericNodeId(1, 1001 + (std::uint32_t(n) + i) % 100);
        it.itemToMonitor.attributeId = 13;
        it.monitoringMode = ua::MonitoringMode::Reporting;
        it.requestedParameters.clientHandle = i;
        it.requestedParameters.samplingInterval = 100;
        it.requestedParameters.queueSize = 1;
        it.requestedParameters.discardOldest = true;
    }
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToCreate = {std::int32_t(kItems), items};
    auto m = c.call(req, 3);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    for (auto& r : static_cast<ua::CreateMonitoredItemsResponse*>(m.object)->results)
        REQUIRE(r.statusCode == UAPLEX_Good);
    return sub;
}

// A session with a subscription of kItems items and one Publish request queued.
void openSubscribed(Client& c, std::uint16_t port, int n) {
    REQUIRE(c.open(port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    subscribe(c, n);
    ua::PublishRequest pub{};
    REQUIRE(c.send(pub, 4));
}

// `sessions` sessions, each creating `perSession` subscriptions of kItems items and then
// deleting them all with one DeleteSubscriptions; the sessions stay open (returned), *peak
// is the RSS with every subscription made.
std::vector<std::unique_ptr<Client>> subscriptionsMadeAndDeleted(const test::ServerProcess& s,
                                                                 int sessions, int perSession,
                                                                 long* peak) {
    std::vector<std::unique_ptr<Client>> clients;
    std::vector<std::vector<std::uint32_t>> ids(static_cast<std::size_t>(sessions));
    for (int i = 0; i < sessions; ++i) {
        clients.push_back(std::make_unique<Client>());
        REQUIRE(clients.back()->open(s.port));
        REQUIRE(clients.back()->createSession() == UAPLEX_Good);
        for (int k = 0; k < perSession; ++k)
            ids[std::size_t(i)].push_back(subscribe(*clients.back(), i * perSession + k));
    }
    *peak = s.rssKb();
    for (int i = 0; i < sessions; ++i) {
        auto& v = ids[std::size_t(i)];
        ua::DeleteSubscriptionsRequest del{};
        del.subscriptionIds = {std::int32_t(v.size()), v.data()};
        auto m = clients[std::size_t(i)]->call(del, 6);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        for (auto st : static_cast<ua::DeleteSubscriptionsResponse*>(m.object)->results)
            REQUIRE(st == UAPLEX_Good);
    }
    return clients;
}

// CloseSession (deleteSubscriptions; the queued Publish is answered before it), then CLO.
void closeSubscribed(Client& c) {
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    REQUIRE(c.send(close, 5));
    for (int i = 0; i < 3; ++i) {
        auto m = c.receiveResponse();
        REQUIRE(m.status == UAPLEX_Good);
        if (m.type == enc::dataTypeOf<ua::CloseSessionResponse>()) {
            REQUIRE(Client::result(m) == UAPLEX_Good);
            break;
        }
        REQUIRE(i < 2);
    }
    c.closeChannel();
    c.disconnect();
}

// CloseSession (deleteSubscriptions), reading the responses of whatever was queued before it.
void closeAfterQueued(Client& c, int queued) {
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    REQUIRE(c.send(close, 5));
    for (int i = 0;; ++i) {
        REQUIRE(i <= queued);
        auto m = c.receiveResponse();
        REQUIRE(m.status == UAPLEX_Good);
        if (m.type == enc::dataTypeOf<ua::CloseSessionResponse>()) break;
    }
    c.closeChannel();
    c.disconnect();
}

// `n` sessions opened one after the other and kept open together, then closed.
void burstOfSessions(std::uint16_t port, int n) {
    std::vector<std::unique_ptr<Client>> clients;
    clients.reserve(std::size_t(n));
    for (int i = 0; i < n; ++i) {
        clients.push_back(std::make_unique<Client>());
        openSubscribed(*clients.back(), port, i);
    }
    for (auto& c : clients) closeSubscribed(*c);
}

// `n` secure channels without sessions open together, then closed with CLO.
void burstOfChannels(std::uint16_t port, int n) {
    std::vector<std::unique_ptr<Client>> clients;
    clients.reserve(std::size_t(n));
    for (int i = 0; i < n; ++i) {
        clients.push_back(std::make_unique<Client>());
        REQUIRE(clients.back()->open(port));
    }
    for (auto& c : clients) {
        c->closeChannel();
        c->disconnect();
    }
}

// ServerDiagnosticsSummary.CurrentSessionCount, read by a session of its own (not counted).
std::uint32_t sessionCount(std::uint16_t port) {
    Client c;
    REQUIRE(c.open(port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    auto v = test::readOne(c, ua::numericNodeId(0, 2277));
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    c.call(close, 9);
    c.closeChannel();
    return v.value.value.uint32 - 1;
}

// The server gives memory back from its housekeeping thread: the RSS once it is at or under
// `limit`, or after three seconds (then the figure the check reports).
long settledRss(const test::ServerProcess& s, long limitKb) {
    long rss = s.rssKb();
    for (int i = 0; i < 60 && rss > limitKb; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        rss = s.rssKb();
    }
    return rss;
}

// Within 10 % of before, plus 1.5 MB: pages the C allocator keeps by chance and the
// per-thread caches of the two request workers, the publishing and the transport thread.
long limitFor(long before) {
    return before + before / 10 + 1536;
}

}  // namespace

TEST_CASE("session memory: RSS after 2000 subscribed sessions closed is within 10 % of before") {
    raiseFileLimit();
    test::ServerProcess s = startServer();
    // A small round first grows what any session needs once (worker arenas, pools, the
    // diagnostics' first read) to its working size; the baseline is taken after it.
    burstOfSessions(s.port, kWarmSessions);
    REQUIRE(sessionCount(s.port) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const long before = s.rssKb();
    REQUIRE(before > 0);
    const long limit = limitFor(before);
    INFO("RSS before " << before << " kB, limit " << limit << " kB");

    std::vector<std::unique_ptr<Client>> clients;
    clients.reserve(kSessions);
    for (int i = 0; i < kSessions; ++i) {
        clients.push_back(std::make_unique<Client>());
        openSubscribed(*clients.back(), s.port, i);
    }
    const long peak = s.rssKb();
    INFO("RSS with " << kSessions << " sessions " << peak << " kB");
    CHECK(peak > before + kSessions * 3);  // the sessions did take memory (3 kB each at least)
    for (auto& c : clients) closeSubscribed(*c);
    clients.clear();
    REQUIRE(sessionCount(s.port) == 0);
    long after = settledRss(s, limit);
    INFO("RSS after closing them " << after << " kB");
    CHECK(after <= limit);
    WARN("RSS kB: before " << before << ", " << kSessions << " sessions " << peak
                           << ", after closing them " << after << ", limit " << limit);
}

TEST_CASE("session memory: RSS after 2000 channels closed is within 10 % of before") {
    raiseFileLimit();
    test::ServerProcess s = startServer();
    burstOfChannels(s.port, kWarmSessions);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const long before = s.rssKb();
    REQUIRE(before > 0);
    const long limit = limitFor(before);
    INFO("RSS before " << before << " kB, limit " << limit << " kB");
    burstOfChannels(s.port, kSessions);
    REQUIRE(sessionCount(s.port) == 0);
    long after = settledRss(s, limit);
    INFO("RSS after closing them " << after << " kB");
    CHECK(after <= limit);
    WARN("RSS kB: before " << before << ", after " << kSessions << " channels " << after
                           << ", limit " << limit);
}

TEST_CASE("session memory: RSS after a burst of 20000 Publish requests is within 10 % of before") {
    raiseFileLimit();
    test::ServerProcess s = startServer();
    constexpr int kClients = 1000, kPublish = 20;  // max_publish_requests_per_session
    long peak = 0;
    auto burst = [&](int clients) {
        std::vector<std::unique_ptr<Client>> cs;
        for (int i = 0; i < clients; ++i) {
            cs.push_back(std::make_unique<Client>());
            Client& c = *cs.back();
            REQUIRE(c.open(s.port));
            REQUIRE(c.createSession() == UAPLEX_Good);
            test::SubscriptionParams p{};
            p.publishingInterval = 1000;
            test::createSubscription(c, p, 2);
            for (int j = 0; j < kPublish; ++j) {
                ua::PublishRequest pub{};
                REQUIRE(c.send(pub, std::uint32_t(10 + j)));
            }
        }
        peak = s.rssKb();
        for (auto& c : cs) closeAfterQueued(*c, kPublish);
    };
    burst(5);
    REQUIRE(sessionCount(s.port) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const long before = s.rssKb();
    const long limit = limitFor(before);
    INFO("RSS before " << before << " kB, limit " << limit << " kB");
    burst(kClients);
    INFO("RSS with them queued " << peak << " kB");
    CHECK(peak > before + 1024);  // the sessions and their Publish requests did take memory
    REQUIRE(sessionCount(s.port) == 0);
    long after = settledRss(s, limit);
    INFO("RSS after " << after << " kB");
    CHECK(after <= limit);
    WARN("RSS kB: before " << before << ", " << kClients * kPublish << " Publish requests " << peak
                           << ", after " << after << ", limit " << limit);
}

TEST_CASE("session memory: RSS after 5000 subscriptions deleted is within 10 % of before") {
    raiseFileLimit();
    test::ServerProcess s = startServer();
    constexpr int kSubSessions = 50, kPerSession = 100;  // max_subscriptions_per_session
    long peak = 0;
    // The sessions of a small round first, and open while the baseline is taken: what comes
    // back is the subscriptions' memory alone.
    auto clients = subscriptionsMadeAndDeleted(s, kSubSessions, 5, &peak);
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    const long before = s.rssKb();
    REQUIRE(before > 0);
    const long limit = limitFor(before);
    INFO("RSS before " << before << " kB, limit " << limit << " kB");
    for (auto& c : clients) closeAfterQueued(*c, 0);
    clients = subscriptionsMadeAndDeleted(s, kSubSessions, kPerSession, &peak);
    INFO("RSS with " << kSubSessions * kPerSession << " subscriptions " << peak << " kB");
    CHECK(peak > before + kSubSessions * kPerSession * 2);  // they did take memory
    long after = settledRss(s, limit);
    INFO("RSS after deleting them " << after << " kB");
    CHECK(after <= limit);
    WARN("RSS kB: before " << before << ", " << kSubSessions * kPerSession << " subscriptions "
                           << peak << ", after deleting them " << after << ", limit " << limit);
    for (auto& c : clients) closeAfterQueued(*c, 0);
    REQUIRE(sessionCount(s.port) == 0);
}
