// SPDX-License-Identifier: Apache-2.0
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
#include "support/opcua_client.hpp"

using namespace uaplex;

namespace {

const char* const kTables =
    "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n";

std::int64_t metric(host::Host& host, const char* name) {
    std::int64_t v = -1;
    REQUIRE(host.services().metrics.value(name, v));
    return v;
}

// A server, a client with a session, and the transport's queued sends so far.
struct Session {
    // `nodes`: how many values each Read of `read` asks for.
    Session(const char* name, std::size_t nodes) : process(kTables, name), ids(nodes) {
        read = test::readServerState(ids);
        REQUIRE(c.open(process.port));
        REQUIRE(c.createSession() == UAPLEX_Good);
        queuedBefore = queued();
        REQUIRE(queuedBefore >= 0);
    }
    std::int64_t queued() { return metric(process.host, "transport-tcp.sends_queued"); }
    std::int64_t queuedSince() { return queued() - queuedBefore; }
    test::InProcessServer process;
    test::Client c;
    std::vector<ua::ReadValueId> ids;
    ua::ReadRequest read{};
    std::int64_t queuedBefore = 0;
};

}  // namespace

TEST_CASE("a response on a quiet connection is written without the I/O thread") {
    Session t("send-direct.toml", 5);
    auto& c = t.c;
    auto& read = t.read;
    for (std::uint32_t i = 0; i < 50; ++i) {
        // Requests a few milliseconds apart: each answer finds its connection quiet.
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        auto m = c.call(read, 100 + i);
        REQUIRE(test::Client::result(m) == UAPLEX_Good);
        REQUIRE(static_cast<const ua::ResponseHeader*>(m.object)->requestHandle == 100 + i);
    }
    // None waited for the io thread (a few may, when a sleep ends early).
    CHECK(t.queuedSince() <= 5);
}

TEST_CASE("a client that waits for each answer gets it from the responding thread") {
    Session t("send-one-at-a-time.toml", 5);
    auto& c = t.c;
    auto& read = t.read;
    // Back to back, microseconds apart, but never more than one request unanswered.
    for (std::uint32_t i = 0; i < 200; ++i)
        REQUIRE(test::Client::result(c.call(read, 100 + i)) == UAPLEX_Good);
    CHECK(t.queuedSince() <= 5);
}

TEST_CASE("the responses of a busy connection are batched by the I/O thread") {
    Session t("send-batched.toml", 5);
    auto& c = t.c;
    auto& read = t.read;
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
    CHECK(t.queuedSince() >= kPipelined / 2);
}

TEST_CASE("responses a slow reader does not take queue behind the socket and arrive whole") {
    Session t("send-backpressure.toml", 2000);
    auto& c = t.c;
    auto& read = t.read;
    int small = 65536;  // the peer's window stays small, so the server's socket fills
    ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);

    // 200 Reads of 2,000 values: responses of about 40 kB each, 8 MB in all, more than the
    // socket buffers hold while the client reads nothing.
    constexpr std::uint32_t kRequests = 200;
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
    CHECK(t.queuedSince() > 0);
}
