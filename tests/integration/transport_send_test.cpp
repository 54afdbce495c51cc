// How opc.tcp responses reach the socket: a response on a quiet connection with nothing
// queued ahead of it is written by the thread that produced it; a busy connection's responses,
// and what the socket does not take, wait in the connection's queue for the I/O thread. The
// transport's `sends_queued` counter tells the two apart.
#include <catch2/catch.hpp>

#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>
#include <vector>

#include "in_process_server.hpp"
#include "opcua_client.hpp"

using namespace uaplex;

namespace {

const char* const kTables =
    "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n";

std::int64_t metric(host::Host& host, const char* name) {
    std::int64_t v = -1;
    REQUIRE(host.services().metrics.value(name, v));
    return v;
}

ua::ReadRequest readOf(std::vector<ua::ReadValueId>& ids) {
    for (auto& id : ids) {
        id.nodeId = ua::numericNodeId(0, 2259);  // Server_ServerStatus_State
        id.attributeId = 13;
    }
    ua::ReadRequest read{};
    read.nodesToRead = {std::int32_t(ids.size()), ids.data()};
    return read;
}

}  // namespace

TEST_CASE("a response on a quiet connection is written without the I/O thread") {
    test::InProcessServer process(kTables, "send-direct.toml");
    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    const std::int64_t before = metric(process.host, "transport-tcp.sends_queued");
    REQUIRE(before >= 0);
    std::vector<ua::ReadValueId> ids(5);
    auto read = readOf(ids);
    for (std::uint32_t i = 0; i < 50; ++i) {
        // Requests a few milliseconds apart: each answer finds its connection quiet.
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        auto m = c.call(read, 100 + i);
        REQUIRE(test::Client::result(m) == UAPLEX_Good);
        REQUIRE(static_cast<const ua::ResponseHeader*>(m.object)->requestHandle == 100 + i);
    }
    // None waited for the io thread (a few may, when a sleep ends early).
    CHECK(metric(process.host, "transport-tcp.sends_queued") - before <= 5);
}

TEST_CASE("a client that waits for each answer gets it from the responding thread") {
    test::InProcessServer process(kTables, "send-one-at-a-time.toml");
    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    const std::int64_t before = metric(process.host, "transport-tcp.sends_queued");
    std::vector<ua::ReadValueId> ids(5);
    auto read = readOf(ids);
    // Back to back, microseconds apart, but never more than one request unanswered.
    for (std::uint32_t i = 0; i < 200; ++i)
        REQUIRE(test::Client::result(c.call(read, 100 + i)) == UAPLEX_Good);
    CHECK(metric(process.host, "transport-tcp.sends_queued") - before <= 5);
}

TEST_CASE("the responses of a busy connection are batched by the I/O thread") {
    test::InProcessServer process(kTables, "send-batched.toml");
    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    const std::int64_t before = metric(process.host, "transport-tcp.sends_queued");
    std::vector<ua::ReadValueId> ids(5);
    auto read = readOf(ids);
    constexpr std::uint32_t kPipelined = 200;
    for (std::uint32_t i = 0; i < kPipelined; ++i) REQUIRE(c.send(read, 100 + i));
    std::set<std::uint32_t> handles;
    for (std::uint32_t i = 0; i < kPipelined; ++i) {
        auto m = c.receiveResponse();
        REQUIRE(test::Client::result(m) == UAPLEX_Good);
        handles.insert(static_cast<const ua::ResponseHeader*>(m.object)->requestHandle);
    }
    CHECK(handles.size() == kPipelined);
    // Answers produced microseconds apart while many more are due go through the queue (a
    // syscall each would cost more than the batch's one gathered write).
    CHECK(metric(process.host, "transport-tcp.sends_queued") - before >= kPipelined / 2);
}

TEST_CASE("responses a slow reader does not take queue behind the socket and arrive whole") {
    test::InProcessServer process(kTables, "send-backpressure.toml");
    test::Client c;
    REQUIRE(c.open(process.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    int small = 65536;  // the peer's window stays small, so the server's socket fills
    ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    const std::int64_t before = metric(process.host, "transport-tcp.sends_queued");

    // 200 Reads of 2,000 values: responses of about 40 kB each, 8 MB in all, more than the
    // socket buffers hold while the client reads nothing.
    constexpr std::uint32_t kRequests = 200;
    std::vector<ua::ReadValueId> ids(2000);
    auto read = readOf(ids);
    std::atomic<bool> sent{false};
    std::thread writer([&] {
        for (std::uint32_t i = 0; i < kRequests; ++i)
            if (!c.send(read, 1000 + i)) return;
        sent = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // Workers may finish a connection's requests in any order (Part 4 matches responses by
    // handle); each response must come whole and exactly once.
    std::set<std::uint32_t> handles;
    for (std::uint32_t i = 0; i < kRequests; ++i) {
        auto m = c.receiveResponse();
        REQUIRE(test::Client::result(m) == UAPLEX_Good);
        const auto& resp = *static_cast<const ua::ReadResponse*>(m.object);
        handles.insert(resp.responseHeader.requestHandle);
        REQUIRE(resp.results.size() == 2000);
        CHECK(resp.results[1999].status == UAPLEX_Good);
    }
    writer.join();
    CHECK(sent.load());
    CHECK(handles.size() == kRequests);
    CHECK(*handles.begin() == 1000);
    CHECK(*handles.rbegin() == 1000 + kRequests - 1);
    // The queue was used: the socket did not take every response when it was produced.
    CHECK(metric(process.host, "transport-tcp.sends_queued") - before > 0);
}
