// SPDX-License-Identifier: Apache-2.0
// A large number of monitored items in one session against the real `uaplex` process: the
// server's resident memory (VmRSS) comes back within 10 % of what it was before, after
// DeleteMonitoredItems, after DeleteSubscriptions and after CloseSession. The items are
// deleted while their initial values are still queued (no Publish is ever sent).
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
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

constexpr std::uint32_t kItems = 200000;  // per batch
constexpr std::uint32_t kPerCall = 1000;
constexpr std::uint32_t kNodes = 100;  // ns=1;i=1001..1100 of the benchmark node manager

// The benchmark node manager's scalars, the fifo queue, two request workers.
test::ServerProcess startServer() {
    return test::ServerProcess("mem", [](std::uint16_t port, const std::filesystem::path&) {
        std::ostringstream toml;
        toml << test::configHead(port)
             << "request_threads = 2\n"
             // 200,000 items in one subscription: above the finite defaults, on purpose.
             << "[server.limits]\nmax_monitored_items = 250000\n"
             << "max_monitored_items_per_session = 250000\n"
             << "max_monitored_items_per_subscription = 250000\n"
             << "[slots]\nrequest_queue = \"fifo\"\n"
             << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.benchmark]\n";
        return toml.str();
    });
}

std::uint32_t handle = 100;

// `n` items over the benchmark scalars round-robin, kPerCall per request; their ids.
std::vector<std::uint32_t> createItems(Client& c, std::uint32_t sub, std::uint32_t n) {
    std::vector<std::uint32_t> ids;
    ids.reserve(n);
    std::vector<ua::MonitoredItemCreateRequest> items(kPerCall);
    for (std::uint32_t done = 0; done < n; done += kPerCall) {
        std::uint32_t k = std::min(kPerCall, n - done);
        for (std::uint32_t i = 0; i < k; ++i) {
            auto& it = items[i];
            it = {};
            it.itemToMonitor.nodeId = ua::numericNodeId(1, 1001 + (done + i) % kNodes);
            it.itemToMonitor.attributeId = 13;
            it.monitoringMode = ua::MonitoringMode::Reporting;
            it.requestedParameters.clientHandle = done + i;
            it.requestedParameters.samplingInterval = 100;
            it.requestedParameters.queueSize = 1;
            it.requestedParameters.discardOldest = true;
        }
        ua::CreateMonitoredItemsRequest req{};
        req.subscriptionId = sub;
        req.timestampsToReturn = ua::TimestampsToReturn::Both;
        req.itemsToCreate = {std::int32_t(k), items.data()};
        auto m = c.call(req, ++handle);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        auto& r = *static_cast<ua::CreateMonitoredItemsResponse*>(m.object);
        REQUIRE(r.results.size() == k);
        for (auto& res : r.results) {
            REQUIRE(res.statusCode == UAPLEX_Good);
            ids.push_back(res.monitoredItemId);
        }
    }
    return ids;
}

void deleteItems(Client& c, std::uint32_t sub, std::vector<std::uint32_t> ids) {
    for (std::size_t done = 0; done < ids.size(); done += kPerCall) {
        std::size_t k = std::min<std::size_t>(kPerCall, ids.size() - done);
        ua::DeleteMonitoredItemsRequest req{};
        req.subscriptionId = sub;
        req.monitoredItemIds = {std::int32_t(k), ids.data() + done};
        auto m = c.call(req, ++handle);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        for (auto st : static_cast<ua::DeleteMonitoredItemsResponse*>(m.object)->results)
            REQUIRE(st == UAPLEX_Good);
    }
}

void deleteSubscription(Client& c, std::uint32_t sub) {
    ua::DeleteSubscriptionsRequest req{};
    req.subscriptionIds = {1, &sub};
    auto m = c.call(req, ++handle);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    REQUIRE(static_cast<ua::DeleteSubscriptionsResponse*>(m.object)->results[0] == UAPLEX_Good);
}

// The server gives memory back on its publishing timer after a deletion: the RSS once it is
// at or under `limit`, or after a few seconds (then the figure the check reports).
long settledRss(const test::ServerProcess& s, long limitKb) {
    long rss = s.rssKb();
    for (int i = 0; i < 60 && rss > limitKb; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        rss = s.rssKb();
    }
    return rss;
}

}  // namespace

TEST_CASE("item memory: RSS after deleting 200,000 items is within 10 % of before") {
    test::ServerProcess s = startServer();
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);

    // A first round grows what every large request needs (worker arenas sized by a
    // 1000-item request, buffers) to its working size; the baseline is taken after it.
    std::uint32_t warm = test::createSubscription(c, {}, ++handle);
    deleteItems(c, warm, createItems(c, warm, 5 * kPerCall));
    deleteSubscription(c, warm);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const long before = s.rssKb();
    REQUIRE(before > 0);
    // Within 10 %, plus 2 MB for pages the C allocator keeps by chance.
    const long limit = before + before / 10 + 2048;
    INFO("RSS before " << before << " kB, limit " << limit << " kB");

    // DeleteMonitoredItems.
    std::uint32_t sub = test::createSubscription(c, {}, ++handle);
    std::vector<std::uint32_t> ids = createItems(c, sub, kItems);
    const long created = s.rssKb();
    INFO("RSS with " << kItems << " items " << created << " kB");
    CHECK(created > before + long(kItems) * 100 / 1024);  // the items did take memory
    deleteItems(c, sub, ids);
    long afterDelete = settledRss(s, limit);
    INFO("RSS after DeleteMonitoredItems " << afterDelete << " kB");
    CHECK(afterDelete <= limit);

    // DeleteSubscriptions with the items in it.
    createItems(c, sub, kItems);
    deleteSubscription(c, sub);
    long afterDeleteSubscription = settledRss(s, limit);
    INFO("RSS after DeleteSubscriptions " << afterDeleteSubscription << " kB");
    CHECK(afterDeleteSubscription <= limit);

    // CloseSession (deleteSubscriptions) with the items in it.
    sub = test::createSubscription(c, {}, ++handle);
    createItems(c, sub, kItems);
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    REQUIRE(Client::result(c.call(close, ++handle)) == UAPLEX_Good);
    long afterClose = settledRss(s, limit);
    INFO("RSS after CloseSession " << afterClose << " kB");
    CHECK(afterClose <= limit);
    WARN("RSS kB: before " << before << ", " << kItems << " items " << created
                           << ", after DeleteMonitoredItems " << afterDelete
                           << ", DeleteSubscriptions " << afterDeleteSubscription
                           << ", CloseSession " << afterClose);
}
