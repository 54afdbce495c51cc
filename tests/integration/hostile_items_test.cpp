// SPDX-License-Identifier: Apache-2.0
// Hostile clients against the real `uaplex` process: monitored items. With the shipped
// defaults (no [server.limits] item keys) one anonymous client floods CreateMonitoredItems;
// the (limit+1)th item gets BadTooManyMonitoredItems per subscription (10,000), per session
// (50,000) and server-wide (100,000), the server's VmRSS stops growing at the limit, and a
// legitimate client is still served.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
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

constexpr std::uint32_t kPerCall = 10000;  // MaxMonitoredItemsPerCall's default
constexpr std::uint32_t kNodes = 100;      // ns=1;i=1001..1100 of the benchmark node manager

test::ServerProcess startServer() {
    return test::ServerProcess(
        "hostile-items", [](std::uint16_t port, const std::filesystem::path&) {
            std::ostringstream toml;
            toml << test::configHead(port) << "request_threads = 2\n"
                 << "[slots]\nrequest_queue = \"fifo\"\n"
                 << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.benchmark]\n";
            return toml.str();
        });
}

std::uint32_t handle = 100;

// One CreateMonitoredItems of kPerCall items; how many were Good and how many
// BadTooManyMonitoredItems (nothing else is expected).
struct Outcome {
    std::uint32_t good = 0, tooMany = 0, other = 0;
};
Outcome createItems(Client& c, std::uint32_t sub) {
    std::vector<ua::MonitoredItemCreateRequest> items(kPerCall);
    for (std::uint32_t i = 0; i < kPerCall; ++i) {
        auto& it = items[i];
        it.itemToMonitor.nodeId = ua::numericNodeId(1, 1001 + i % kNodes);
        it.itemToMonitor.attributeId = 13;
        it.monitoringMode = ua::MonitoringMode::Reporting;
        it.requestedParameters.clientHandle = i;
        it.requestedParameters.samplingInterval = 1000;
        it.requestedParameters.queueSize = 1;
        it.requestedParameters.discardOldest = true;
    }
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToCreate = {std::int32_t(kPerCall), items.data()};
    auto m = c.call(req, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    Outcome o;
    for (auto& r : static_cast<ua::CreateMonitoredItemsResponse*>(m.object)->results) {
        if (r.statusCode == UAPLEX_Good)
            ++o.good;
        else if (r.statusCode == UAPLEX_BadTooManyMonitoredItems)
            ++o.tooMany;
        else
            ++o.other;
    }
    return o;
}

// A legitimate client: a fresh session that reads the server state.
void legitimateRead(std::uint16_t port) {
    Client c;
    REQUIRE(c.open(port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids(1);
    ua::ReadRequest read = test::readServerState(ids);
    auto m = c.call(read, 1);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::ReadResponse*>(m.object);
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].status == UAPLEX_Good);
}

}  // namespace

TEST_CASE(
    "hostile items: the shipped limits stop an item flood per subscription, session "
    "and server") {
    test::ServerProcess s = startServer();
    Client a;
    REQUIRE(a.open(s.port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    const long before = s.rssKb();
    REQUIRE(before > 0);

    // Per subscription: 10,000, then every further item is refused.
    std::uint32_t sub = test::createSubscription(a, {}, ++handle);
    Outcome o = createItems(a, sub);
    CHECK(o.good == kPerCall);
    o = createItems(a, sub);
    CHECK(o.good == 0);
    CHECK(o.tooMany == kPerCall);
    CHECK(o.other == 0);
    legitimateRead(s.port);

    // Per session: five full subscriptions, the sixth gets nothing.
    for (int i = 0; i < 4; ++i)
        CHECK(createItems(a, test::createSubscription(a, {}, ++handle)).good == kPerCall);
    o = createItems(a, test::createSubscription(a, {}, ++handle));
    CHECK(o.good == 0);
    CHECK(o.tooMany == kPerCall);

    // Server-wide: a second session takes the other 50,000, a third gets nothing.
    Client b;
    REQUIRE(b.open(s.port));
    REQUIRE(b.createSession() == UAPLEX_Good);
    for (int i = 0; i < 5; ++i)
        CHECK(createItems(b, test::createSubscription(b, {}, ++handle)).good == kPerCall);
    const long full = s.rssKb();
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::uint32_t csub = test::createSubscription(c, {}, ++handle);
    for (int i = 0; i < 10; ++i) {  // 100,000 more attempts
        o = createItems(c, csub);
        CHECK(o.good == 0);
        CHECK(o.tooMany == kPerCall);
    }
    const long after = s.rssKb();
    WARN("RSS kB: before " << before << ", at 100,000 items " << full << ", after 100,000 "
                           << "refused items " << after);
    // The refused items took nothing lasting: at most 16 MB over the plateau (request
    // arenas, allocator slack); the plateau (measured 25 MB for 100,000 items of queue
    // size 1) stays under 100 MB.
    CHECK(after <= full + 16 * 1024);
    CHECK(full - before < 100 * 1024);
    legitimateRead(s.port);
    CHECK(s.alive());
}
