// SPDX-License-Identifier: Apache-2.0
// More sessions than the usual soft open-file limit (1024): the server is started with that
// soft limit and must raise it to the hard limit itself. 1,500 sessions, each with a
// subscription of three items, answer a Read and then a queued Publish each.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

constexpr int kSessions = 1500;
constexpr rlim_t kServerSoftLimit = 1024;

// The server with limits for the test's sessions, started with a soft open-file limit of
// 1024 (as a login shell or a plain service gets it).
test::ServerProcess startServer() {
    auto toml = [](std::uint16_t port, const std::filesystem::path& dir) {
        std::ostringstream s;
        s << test::configHead(port) << "security = [{ policy = \"None\" }]\n"
          << "pki_dir = \"" << (dir / "pki").string() << "\"\n"
          << "[server.limits]\nmax_sessions = 2000\nmax_channels = 2000\nmax_channels_per_peer = "
             "2000\n"
          << "max_subscriptions = 2000\n"
          << "[slots]\nrequest_queue = \"fair\"\nadmission = \"leases\"\n"
          << "buffer_pool = \"bounded\"\n"
          << "[plugins.fair]\n[plugins.leases]\n[plugins.bounded]\n[plugins.transport-tcp]\n";
        return s.str();
    };
    auto lowerFileLimit = [] {
        rlimit rl{};
        ::getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = std::min(rl.rlim_max, kServerSoftLimit);
        ::setrlimit(RLIMIT_NOFILE, &rl);
    };
    return test::ServerProcess("many", toml, lowerFileLimit);
}

// A subscription (publishing 100 ms) with three items on ServerStatus' State,
// CurrentTime's node and BuildInfo's ProductName; their initial values make the first
// Publish response.
bool subscribe(Client& c, std::uint32_t session) {
    ua::CreateSubscriptionRequest cs{};
    cs.requestedPublishingInterval = 100;
    cs.requestedMaxKeepAliveCount = 20;
    cs.requestedLifetimeCount = 600;
    cs.publishingEnabled = true;
    auto m = c.call(cs);
    if (Client::result(m) != UAPLEX_Good) return false;
    std::uint32_t sub = static_cast<ua::CreateSubscriptionResponse*>(m.object)->subscriptionId;
    const std::uint32_t nodes[3] = {2259, 2258, 2261};
    ua::MonitoredItemCreateRequest items[3]{};
    for (int i = 0; i < 3; ++i) {
        items[i].itemToMonitor.nodeId = ua::numericNodeId(0, nodes[i]);
        items[i].itemToMonitor.attributeId = 13;
        items[i].monitoringMode = ua::MonitoringMode::Reporting;
        items[i].requestedParameters.clientHandle = session * 3 + std::uint32_t(i);
        items[i].requestedParameters.samplingInterval = 5000;
        items[i].requestedParameters.queueSize = 1;
    }
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Neither;
    req.itemsToCreate = {3, items};
    m = c.call(req);
    if (Client::result(m) != UAPLEX_Good) return false;
    auto& r = *static_cast<ua::CreateMonitoredItemsResponse*>(m.object);
    if (r.results.size() != 3) return false;
    for (std::size_t i = 0; i < 3; ++i)
        if (r.results[i].statusCode != UAPLEX_Good) return false;
    return true;
}

}  // namespace

TEST_CASE("1,500 sessions with subscriptions beyond a soft open-file limit of 1024") {
    // The test's own sockets need the room too.
    rlimit rl{};
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &rl) == 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < rlim_t(kSessions) + 200) {
        WARN("hard open-file limit " << rl.rlim_max << " is below what the test needs; skipped");
        return;
    }
    rl.rlim_cur = rl.rlim_max;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &rl) == 0);

    test::ServerProcess server = startServer();
    REQUIRE(server.alive());
    std::vector<std::unique_ptr<Client>> clients;
    clients.reserve(kSessions);
    int opened = 0, subscribed = 0;
    for (int i = 0; i < kSessions; ++i) {
        auto c = std::make_unique<Client>();
        if (!c->open(server.port) || c->createSession() != UAPLEX_Good) break;
        ++opened;
        if (!subscribe(*c, std::uint32_t(i))) break;
        ++subscribed;
        clients.push_back(std::move(c));
    }
    REQUIRE(opened == kSessions);
    REQUIRE(subscribed == kSessions);

    // A Read on every session.
    int read = 0;
    for (auto& c : clients) {
        ua::ReadValueId id{};
        id.nodeId = ua::numericNodeId(0, 2259);
        id.attributeId = 13;
        ua::ReadRequest r{};
        r.timestampsToReturn = ua::TimestampsToReturn::Neither;
        r.nodesToRead = {1, &id};
        auto m = c->call(r);
        if (Client::result(m) == UAPLEX_Good &&
            static_cast<ua::ReadResponse*>(m.object)->results.size() == 1)
            ++read;
    }
    CHECK(read == kSessions);

    // One Publish queued on every session first, then every answer: the initial values.
    int sent = 0;
    for (auto& c : clients) {
        ua::PublishRequest p{};
        if (c->send(p, 77)) ++sent;
    }
    REQUIRE(sent == kSessions);
    int published = 0;
    for (auto& c : clients) {
        auto m = c->receiveResponse();
        if (Client::result(m) != UAPLEX_Good) continue;
        auto& r = *static_cast<ua::PublishResponse*>(m.object);
        if (r.notificationMessage.notificationData.size() >= 1) ++published;
    }
    CHECK(published == kSessions);
    CHECK(server.alive());

    for (auto& c : clients) {
        ua::CloseSessionRequest close{};
        close.deleteSubscriptions = true;
        c->send(close, 78);
    }
    clients.clear();
    CHECK(server.alive());
}
