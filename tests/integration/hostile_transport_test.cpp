// SPDX-License-Identifier: Apache-2.0
// Hostile opc.tcp clients against the real `uaplex` executable: partial messages that are
// never finished (the reassembly budget and the stalled-message timeout), and a client that
// sends requests but reads none of the answers (the send queue's high-water mark and
// maximum). Each attack runs next to a legitimate client that must be served during and
// after it, and the server's VmRSS must stay bounded.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

// Secure policies next to None make a GetEndpoints answer about 3.7 kB (seven endpoints with
// the server certificate), as in the reported attack.
constexpr const char* kNoneOnly = "[{ policy = \"None\" }]";
constexpr const char* kAllPolicies =
    "[{ policy = \"None\" }, { policy = \"Basic256Sha256\" }, "
    "{ policy = \"Aes128_Sha256_RsaOaep\" }, { policy = \"Aes256_Sha256_RsaPss\" }]";

std::string tomlOf(std::uint16_t port, const std::filesystem::path& dir, const std::string& limits,
                   bool admission, const char* security = kNoneOnly) {
    std::ostringstream s;
    s << test::configHead(port) << "security = " << security << "\n"
      << "pki_dir = \"" << (dir / "pki").string() << "\"\n"
      << "[server.limits]\n"
      << limits;
    if (admission)
        s << "[slots]\nrequest_queue = \"fair\"\nadmission = \"leases\"\nbuffer_pool = "
             "\"bounded\"\n"
          << "[plugins.fair]\n[plugins.bounded]\n[plugins.leases]\n"
          << "reassembly_floor_bytes = 4194304\n";
    else
        s << "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n";
    s << "[plugins.transport-tcp]\n";
    return s.str();
}

// The largest VmRSS seen while it runs, sampled every 20 ms.
struct RssMonitor {
    explicit RssMonitor(const test::ServerProcess& p) : process(p) {
        thread = std::thread([this] {
            while (!stop.load()) {
                peak = std::max(peak.load(), process.rssKb());
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        });
    }
    ~RssMonitor() { finish(); }
    long finish() {
        stop = true;
        if (thread.joinable()) thread.join();
        return peak;
    }
    const test::ServerProcess& process;
    std::atomic<bool> stop{false};
    std::atomic<long> peak{0};
    std::thread thread;
};

// A channel negotiated for 64 KiB chunks in both directions, built chunk by chunk.
struct RawChannel {
    Client c;
    std::uint32_t seq = 2;  // the OPN took 1
    bool open(std::uint16_t port) {
        if (!c.connect(port, 5000)) return false;
        std::string url = "opc.tcp://127.0.0.1:" + std::to_string(port);
        if (!c.sendRaw(Client::hello(url, 65535, 65535))) return false;
        auto ack = c.receive();
        if (ack.size() != 28 || std::memcmp(ack.data(), "ACK", 3) != 0) return false;
        return c.openSecureChannel(ua::SecurityTokenRequestType::Issue);
    }
    std::vector<std::uint8_t> chunk(const char* type, std::uint32_t requestId, std::size_t body) {
        std::vector<std::uint8_t> v(24 + body, 0x5a);
        std::memcpy(v.data(), type, 4);
        Client::put(v, 4, std::uint32_t(v.size()));
        Client::put(v, 8, c.channelId());
        Client::put(v, 12, c.tokenId());
        Client::put(v, 16, seq++);
        Client::put(v, 20, requestId);
        return v;
    }
};

// A client with a session whose single-chunk Read must keep working.
struct Legit {
    Client c;
    std::vector<ua::ReadValueId> ids = std::vector<ua::ReadValueId>(1);
    ua::ReadRequest read = test::readServerState(ids);
    std::uint32_t handle = 1;
    bool start(std::uint16_t port) { return c.open(port) && c.createSession() == UAPLEX_Good; }
    uaplex_status readOnce() { return Client::result(c.call(read, handle++)); }
    // The same Read sent as several chunks: a multi-chunk message, charged to the budget.
    uaplex_status readInChunks() {
        auto body = c.encodeRequest(read, handle++);
        return Client::result(c.callRaw(body, 16));
    }
};

}  // namespace

TEST_CASE("hostile: unfinished messages on 8 channels stay within the reassembly budget") {
    // The attack as reported: 8 None channels, each 255 intermediate chunks of 65,000 bytes
    // (16.5 MB, just under max_message_size) and no final chunk. Unbounded, the server held
    // all of it (+126 MiB); with a budget of 32 MiB it holds at most that.
    const bool admission = GENERATE(true, false);
    INFO((admission ? "with the leases admission provider" : "kernel budget, no admission"));
    const std::string limits =
        "max_reassembly_bytes = 33554432\n"
        "reassembly_idle_timeout_ms = 1500\n"
        "max_pending_handshakes = 100\n";
    test::ServerProcess server(
        "hostile-reassembly",
        [&](std::uint16_t port, const std::filesystem::path& dir) {
            return tomlOf(port, dir, limits, admission);
        },
        {}, 200);
    Legit legit;
    REQUIRE(legit.start(server.port));
    REQUIRE(legit.readOnce() == UAPLEX_Good);
    const long before = server.rssKb();
    REQUIRE(before > 0);

    constexpr int kAttackers = 8;
    std::vector<std::unique_ptr<RawChannel>> attackers;
    for (int i = 0; i < kAttackers; ++i) {
        attackers.push_back(std::make_unique<RawChannel>());
        REQUIRE(attackers.back()->open(server.port));
    }
    RssMonitor rss(server);
    std::atomic<int> served{0}, failed{0};
    std::atomic<bool> attacking{true};
    std::thread reader([&] {
        // The legitimate client all through the attack.
        while (attacking.load()) {
            (legit.readOnce() == UAPLEX_Good ? served : failed)++;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    });
    std::vector<std::thread> senders;
    std::atomic<int> sendFailures{0};
    for (auto& a : attackers)
        senders.emplace_back([&a, &sendFailures] {
            for (int k = 0; k < 255; ++k)
                if (!a->c.sendRaw(a->chunk("MSGC", 77, 65000))) {
                    ++sendFailures;
                    return;
                }
        });
    for (auto& t : senders) t.join();
    // The server has read the chunks when a request sent after them is answered on each
    // channel (a single-chunk request after the refused message's chunks is served).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const long during = server.rssKb();
    attacking = false;
    reader.join();
    CHECK(sendFailures == 0);
    CHECK(failed == 0);
    CHECK(served > 0);
    // A legitimate multi-chunk message fits what the survivor left, or is refused alone;
    // the channel stays fine for single-chunk requests either way.
    const uaplex_status chunked = legit.readInChunks();
    CHECK((chunked == UAPLEX_Good || chunked == UAPLEX_BadTcpNotEnoughResources));
    CHECK(legit.readOnce() == UAPLEX_Good);
    // Some attackers had their message aborted with BadTcpNotEnoughResources.
    int aborted = 0;
    for (auto& a : attackers) {
        ::timeval tv{0, 200 * 1000};
        ::setsockopt(a->c.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        auto m = a->c.receive();
        if (m.size() >= 28 && std::memcmp(m.data(), "MSGA", 4) == 0 &&
            Client::get(m, 24) == UAPLEX_BadTcpNotEnoughResources)
            ++aborted;
    }
    CHECK(aborted >= kAttackers - 2);  // 32 MiB holds at most two of the 16.5 MB messages
    const long peak = rss.finish();
    WARN("reassembly attack: VmRSS before " << before << " kB, after the chunks " << during
                                            << " kB, peak " << peak << " kB; legit Reads served "
                                            << served << ", aborted attackers " << aborted);
    // Unbounded this is +130 MB; the budget (32 MiB) plus chunk buffers and allocator slack.
    CHECK(peak - before < 64 * 1024);

    // The unfinished messages stall: their channels are closed with ERR BadTimeout after
    // reassembly_idle_timeout_ms, which gives the budget back.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    int timedOut = 0;
    for (auto& a : attackers) {
        ::timeval tv{1, 0};
        ::setsockopt(a->c.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        for (;;) {
            auto m = a->c.receive();
            if (m.empty()) break;
            if (std::memcmp(m.data(), "ERRF", 4) == 0) {
                timedOut += Client::get(m, 8) == UAPLEX_BadTimeout;
                break;
            }
        }
    }
    CHECK(timedOut >= 1);
    CHECK(legit.readInChunks() == UAPLEX_Good);
    CHECK(legit.readOnce() == UAPLEX_Good);
    Legit after;
    REQUIRE(after.start(server.port));
    CHECK(after.readOnce() == UAPLEX_Good);
    CHECK(server.alive());
}

TEST_CASE("hostile: a client that reads no responses is throttled and its queue stays bounded") {
    // The attack as reported: one None channel, 30,000 GetEndpoints (2.7 MB) and nothing
    // read. Unbounded the answers piled up in the server (+110 MiB); above the high-water
    // mark the server stops reading the connection, so what it holds stays near the mark.
    test::ServerProcess server(
        "hostile-slowreader",
        [&](std::uint16_t port, const std::filesystem::path& dir) {
            return tomlOf(port, dir,
                          "send_queue_high_water_bytes = 1048576\n"
                          "idle_channel_timeout_ms = 120000\n",
                          true, kAllPolicies);
        },
        {}, 200);
    Legit legit;
    REQUIRE(legit.start(server.port));
    const long before = server.rssKb();
    Client slow;
    REQUIRE(slow.open(server.port));
    RssMonitor rss(server);
    ua::GetEndpointsRequest ge{};
    ge.endpointUrl = ua::makeString(slow.url());
    std::atomic<bool> done{false};
    std::atomic<int> sent{0};
    std::thread flood([&] {
        // The server stops reading: the sends block once the socket buffers are full.
        ::timeval tv{5, 0};
        ::setsockopt(slow.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        for (int i = 0; i < 30000; ++i) {
            if (!slow.send(ge, std::uint32_t(i + 1))) break;
            ++sent;
        }
        done = true;
    });
    // Served all through.
    int served = 0;
    while (!done.load()) {
        REQUIRE(legit.readOnce() == UAPLEX_Good);
        ++served;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    flood.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    const long peak = rss.finish();
    WARN("slow reader: sent " << sent << " GetEndpoints; VmRSS before " << before << " kB, peak "
                              << peak << " kB; legit Reads served during the flood: " << served);
    // Unbounded: +110 MiB. Bounded: the high-water mark plus the answers to what was
    // already read when the mark was passed.
    CHECK(peak - before < 32 * 1024);
    CHECK(legit.readOnce() == UAPLEX_Good);
    // The throttled connection still works once its peer reads.
    ::timeval tv{10, 0};
    ::setsockopt(slow.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    // Every request is answered exactly once (workers answer in any order).
    std::vector<bool> seen(std::size_t(sent.load()) + 1, false);
    int answered = 0, duplicates = 0;
    while (answered < sent.load()) {
        auto m = slow.receiveResponse();
        if (m.status != UAPLEX_Good) break;
        auto h = static_cast<const ua::ResponseHeader*>(m.object)->requestHandle;
        if (h == 0 || h >= seen.size() || seen[h]) {
            ++duplicates;
            continue;
        }
        seen[h] = true;
        ++answered;
    }
    CHECK(answered == sent.load());
    CHECK(duplicates == 0);
    Legit after;
    REQUIRE(after.start(server.port));
    CHECK(after.readOnce() == UAPLEX_Good);
}

TEST_CASE("hostile: a client that reads nothing past max_send_queue_bytes is closed") {
    // A tiny queue: the answers to the requests already read when reading stopped exceed the
    // maximum, and the connection is closed (ERR Bad_TcpNotEnoughResources if it is read).
    test::ServerProcess server(
        "hostile-sendqueue",
        [&](std::uint16_t port, const std::filesystem::path& dir) {
            return tomlOf(port, dir,
                          "max_message_size = 65536\nsend_queue_high_water_bytes = 65536\n"
                          "max_send_queue_bytes = 131072\n",
                          true, kAllPolicies);
        },
        {}, 200);
    Legit legit;
    REQUIRE(legit.start(server.port));
    const long before = server.rssKb();
    Client slow;
    REQUIRE(slow.open(server.port));
    ::timeval tv{3, 0};
    ::setsockopt(slow.fd(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ua::GetEndpointsRequest ge{};
    ge.endpointUrl = ua::makeString(slow.url());
    int sent = 0;
    for (int i = 0; i < 30000 && slow.send(ge, std::uint32_t(i + 1)); ++i) ++sent;
    CHECK(legit.readOnce() == UAPLEX_Good);
    // Read until the server's close: what was written, maybe its ERR, then EOF or a reset.
    ::timeval rtv{10, 0};
    ::setsockopt(slow.fd(), SOL_SOCKET, SO_RCVTIMEO, &rtv, sizeof rtv);
    auto start = std::chrono::steady_clock::now();
    uaplex_status lastErr = UAPLEX_Good;
    int messages = 0;
    for (;;) {
        auto m = slow.receive();
        if (m.empty()) break;
        ++messages;
        if (std::memcmp(m.data(), "ERRF", 4) == 0) lastErr = Client::get(m, 8);
    }
    auto waited = std::chrono::steady_clock::now() - start;
    WARN("send queue overflow: sent "
         << sent << ", read " << messages << " messages before the close, ERR 0x" << std::hex
         << lastErr << std::dec << ", VmRSS +" << server.rssKb() - before << " kB");
    CHECK(waited < std::chrono::seconds(9));  // closed, not a receive timeout
    CHECK(messages < sent);
    CHECK((lastErr == UAPLEX_Good || lastErr == UAPLEX_BadTcpNotEnoughResources));
    CHECK(server.rssKb() - before < 32 * 1024);
    CHECK(legit.readOnce() == UAPLEX_Good);
    Legit after;
    REQUIRE(after.start(server.port));
    CHECK(after.readOnce() == UAPLEX_Good);
}

// A test process killed on timeout never runs ~ServerProcess: its server must die with it
// rather than keep the port and the lock files it inherited.
TEST_CASE("a server process dies with the test process that started it") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t tester = ::fork();
    REQUIRE(tester >= 0);
    if (tester == 0) {
        ::close(fds[0]);
        test::ServerProcess server("orphan",
                                   [](std::uint16_t port, const std::filesystem::path& dir) {
                                       return tomlOf(port, dir, "", false);
                                   });
        const pid_t started[2] = {server.pid, pid_t(server.port)};
        if (::write(fds[1], started, sizeof started) != sizeof started) std::_Exit(1);
        ::pause();
        std::_Exit(0);
    }
    ::close(fds[1]);
    pid_t started[2] = {-1, 0};
    const bool told = ::read(fds[0], started, sizeof started) == sizeof started;
    ::close(fds[0]);
    ::kill(tester, SIGKILL);
    ::waitpid(tester, nullptr, 0);
    REQUIRE(told);
    const pid_t server = started[0];
    REQUIRE(server > 0);

    // Gone, or a zombie waiting for init to reap it: either way it holds nothing.
    auto dead = [server] {
        std::ifstream in("/proc/" + std::to_string(server) + "/stat");
        std::string stat;
        if (!std::getline(in, stat)) return true;
        auto close = stat.rfind(')');
        return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
    };
    bool died = false;
    for (int i = 0; i < 100 && !(died = dead()); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!died) ::kill(server, SIGKILL);
    std::error_code ec;
    std::filesystem::remove_all(
        std::filesystem::temp_directory_path() /
            ("uaplex-orphan-" + std::to_string(tester) + "-" + std::to_string(started[1])),
        ec);
    CHECK(died);
}
