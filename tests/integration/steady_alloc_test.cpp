// SPDX-License-Identifier: Apache-2.0
// Steady-state Read requests must not touch the heap on the server side: the server runs
// in this process, every allocation made by a thread other than the test's client thread is
// counted while a batch of Reads runs after a warm-up.
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>
#include <thread>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/server/server.hpp>
#include <uaplex/server/service_handler.hpp>
#include "in_process_server.hpp"
#include "support/opcua_client.hpp"

#include "support/counting_new.hpp"

using namespace uaplex;

namespace {

// Runs the server in this process with `slots` and `plugins` and returns the server-side
// allocations during 1000 steady-state Reads.
long steadyAllocations(const std::string& slots, const std::string& plugins) {
    test::tUncounted = true;  // the client thread; the server threads are counted
    test::InProcessServer process(
        "[slots]\n" + slots + "[plugins.fifo]\n[plugins.transport-tcp]\n" + plugins, "alloc.toml");
    const std::uint16_t port = process.port;

    test::Client c;
    REQUIRE(c.open(port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids(10);
    auto read = test::readServerState(ids);
    auto run = [&](int n) {
        for (int i = 0; i < n; ++i)
            REQUIRE(test::Client::result(c.call(read, std::uint32_t(i + 1))) == UAPLEX_Good);
    };
    run(300);  // warm-up: pools, arenas and buffers grow to their steady size
    test::HeapScope window;
    run(1000);
    const long allocations = long(window.allocations());
    c.disconnect();
    return allocations;
}

}  // namespace

TEST_CASE("steady-state Reads do not allocate in the server") {
    long n = steadyAllocations("request_queue = \"fifo\"\n", "");
    INFO("server-side allocations during 1000 Reads: " << n);
    CHECK(n == 0);
}

// The whole request pipeline on the path: the bounded buffer pool, leases admission (owner
// classification, revalidation, three leases per request) and the fair queue.
TEST_CASE("steady-state Reads do not allocate with the pool, leases and fair queue") {
    long n = steadyAllocations(
        "request_queue = \"fair\"\nadmission = \"leases\"\nbuffer_pool = \"bounded\"\n",
        "[plugins.fair]\n[plugins.leases]\n[plugins.bounded]\n");
    INFO("server-side allocations during 1000 Reads: " << n);
    CHECK(n == 0);
}

// Access rules on the read nodes: the session's permission view is consulted for every
// item (a namespace table and, with node rules, a binary search) without allocating.
TEST_CASE("steady-state Reads do not allocate with access rules in force") {
    long n = steadyAllocations("request_queue = \"fifo\"\n",
                               "[access]\n"
                               "[[access.rules]]\nnamespace = \"http://opcfoundation.org/UA/\"\n"
                               "roles = [\"Anonymous\"]\npermissions = [\"Browse\", \"Read\"]\n"
                               "[[access.rules]]\nnode = \"i=2259\"\nroles = [\"Anonymous\"]\n"
                               "permissions = [\"Browse\", \"Read\"]\n"
                               "[[access.rules]]\nnode = \"ns=0;s=Elsewhere\"\n"
                               "roles = [\"Operator\"]\npermissions = [\"Read\"]\n");
    INFO("server-side allocations during 1000 Reads: " << n);
    CHECK(n == 0);
}

// Released request records serve every connection: sessions that each ran requests one at a
// time keep none of their own (two Publish sent together made each keep two for good).
TEST_CASE("connections share the released request records") {
    test::tUncounted = true;
    test::InProcessServer process(
        "[slots]\nrequest_queue = \"fair\"\nadmission = \"leases\"\nbuffer_pool = "
        "\"bounded\"\n[plugins.fair]\n[plugins.leases]\n[plugins.bounded]\n"
        "[plugins.transport-tcp]\n",
        "shared.toml");
    const std::uint16_t port = process.port;
    const std::size_t before = server::Server::pendingRequestObjects();
    std::vector<std::unique_ptr<test::Client>> clients;
    ua::ReadValueId id{};
    id.nodeId = ua::numericNodeId(0, 2259);
    id.attributeId = 13;
    ua::ReadRequest read{};
    read.nodesToRead = {1, &id};
    for (int i = 0; i < 40; ++i) {
        clients.push_back(std::make_unique<test::Client>());
        REQUIRE(clients.back()->open(port));
        REQUIRE(clients.back()->createSession() == UAPLEX_Good);
        REQUIRE(test::Client::result(clients.back()->call(read, 1)) == UAPLEX_Good);
    }
    // The 40 connections are open; what exists is what ran at once, not one per connection.
    const std::size_t kept = server::Server::pendingRequestObjects() - before;
    INFO("request records for 40 idle connections: " << kept);
    CHECK(kept <= 8);
    for (auto& c : clients) c->disconnect();
}

// A connection's handshake deadline is a place in the transport's list of unfinished
// handshakes, served by one timer: no timer and no timer wait of its own (about 400 bytes,
// the wait freed again when the channel opens, between the connection's long-lived blocks).
TEST_CASE("opening a SecureChannel allocates no handshake timer wait") {
    test::tUncounted = true;
    test::InProcessServer process(
        "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n",
        "handshake.toml");
    const std::uint16_t port = process.port;
    std::vector<std::unique_ptr<test::Client>> clients;
    auto openOne = [&] {
        clients.push_back(std::make_unique<test::Client>());
        REQUIRE(clients.back()->open(port));
        // The server's I/O thread finishes the OPN after the client has its answer.
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    };
    for (int i = 0; i < 3; ++i) openOne();  // warm-up: pools, the transport's one timer
    test::HeapScope heap;
    for (int i = 0; i < 10; ++i) openOne();
    double perConnection = double(heap.bytes()) / 10;
    INFO("server heap bytes allocated per opened connection: " << perConnection);
    CHECK(perConnection < 3000);  // 3,232 with a timer and its wait per connection
    for (auto& c : clients) c->disconnect();
}
