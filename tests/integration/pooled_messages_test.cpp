// SPDX-License-Identifier: Apache-2.0
// With a buffer-pool plugin in the slot, the messages live in pooled arrays like the chunks
// that carry them: an assembled request body and a response encoding are rented from the
// pool and given back, which the pool's own metrics show, and nothing stays lent once the
// connection is closed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <thread>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/server/server.hpp>
#include <uaplex/server/service_handler.hpp>
#include "in_process_server.hpp"
#include "support/opcua_client.hpp"

using namespace uaplex;

namespace {

std::int64_t metric(host::Host& host, const char* name) {
    std::int64_t v = -1;
    REQUIRE(host.services().metrics.value(name, v));
    return v;
}

// Waits (bounded) until `done` holds: buffers come back after the writes complete.
template <class F>
bool eventually(F done) {
    for (int i = 0; i < 500 && !done(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return done();
}

}  // namespace

TEST_CASE("a multi-chunk request and its response are assembled and encoded in pooled buffers") {
    test::InProcessServer process(
        "[slots]\nrequest_queue = \"fifo\"\nbuffer_pool = \"bounded\"\n"
        "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.bounded]\n",
        "pooled.toml");
    const std::uint16_t port = process.port;
    host::Host& host = process.host;
    server::Server& srv = *process.server;

    const std::int64_t idleOutstanding = metric(host, "bounded.outstanding_bytes");
    {
        test::Client c;
        REQUIRE(c.open(port));
        REQUIRE(c.createSession() == UAPLEX_Good);
        std::vector<ua::ReadValueId> ids(20);
        auto read = test::readServerState(ids);
        auto body = c.encodeRequest(read, 42);
        constexpr std::size_t kChunkBody = 64;
        const std::int64_t chunksIn = std::int64_t((body.size() + kChunkBody - 1) / kChunkBody);
        REQUIRE(chunksIn >= 4);

        const std::int64_t rents0 = metric(host, "bounded.rents");
        auto m = c.callRaw(body, kChunkBody);
        REQUIRE(test::Client::result(m) == UAPLEX_Good);
        const std::int64_t rents = metric(host, "bounded.rents") - rents0;
        const std::int64_t chunksOut = c.chunksReceived();
        INFO("rents " << rents << ", chunks in " << chunksIn << ", chunks out " << chunksOut);
        // One rent per chunk read and per chunk sent, and beyond those at least one for the
        // assembled request body and one for the response encoding.
        CHECK(rents >= chunksIn + chunksOut + 2);
        // Every one of them comes back (the last after the response was written).
        CHECK(eventually([&] {
            return metric(host, "bounded.returns") - rents0 >= rents &&
                   metric(host, "bounded.outstanding_bytes") <= idleOutstanding + 8192;
        }));
    }
    // After the close nothing the connection rented is still lent.
    CHECK(eventually([&] { return srv.connectionCount() == 0; }));
    CHECK(eventually([&] {
        return metric(host, "bounded.rents") == metric(host, "bounded.returns") &&
               metric(host, "bounded.outstanding_bytes") == idleOutstanding;
    }));
}

TEST_CASE("the request records a burst left unused go back to the heap") {
    // One worker, held 1.5 s by a read of the slow test node: the burst waits in the queue
    // whatever the machine's pace (sampled between answers, a quick server could keep up).
    test::InProcessServer process(
        "request_threads = 1\n[slots]\nrequest_queue = \"fifo\"\n"
        "[plugins.fifo]\n[plugins.transport-tcp]\n"
        "[plugins.test-slowread]\nlibrary = \"" UAPLEX_SLOWREAD_PLUGIN "\"\n",
        "records.toml");
    const std::size_t idle = server::Server::pendingRequestObjects();
    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    ua::ReadValueId slowId{};
    slowId.nodeId = ua::stringNodeId(2, "Slow");  // the first namespace after the server's
    slowId.attributeId = 13;
    ua::ReadRequest slow{};
    slow.nodesToRead = {1, &slowId};
    REQUIRE(c.send(slow, 9));
    // 400 Reads of 1,000 values sent at once: they wait in the queue, each in a record.
    std::vector<ua::ReadValueId> ids(1000);
    auto read = test::readServerState(ids);
    constexpr std::uint32_t kBurst = 400;
    std::thread writer([&] {
        for (std::uint32_t i = 0; i < kBurst; ++i)
            if (!c.send(read, 10 + i)) return;
    });
    std::size_t peak = 0;
    for (std::uint32_t i = 0; i <= kBurst; ++i) {
        peak = std::max(peak, server::Server::pendingRequestObjects());
        REQUIRE(test::Client::result(c.receiveResponse()) == UAPLEX_Good);
    }
    writer.join();
    // The reserve the pool keeps: a record per worker (1) and 64.
    constexpr std::size_t kReserve = 65;
    INFO("records: " << idle << " idle, " << peak << " at the burst's peak");
    REQUIRE(peak > idle + kReserve + 20);  // the burst needed more than the reserve
    // Soon after, nobody needed them: housekeeping frees all but the reserve.
    CHECK(eventually([&] { return server::Server::pendingRequestObjects() <= idle + kReserve; }));
}
