// SPDX-License-Identifier: Apache-2.0
// The real `uaplex` executable on 127.0.0.1 with a test configuration, driven by the small
// client in opcua_client.hpp: channel, discovery, sessions, a Read through the services,
// chunking both ways, CLO, and hostile input after which a normal session must still work.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <sstream>
#include <thread>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

using test::freePort;

// The test configuration: `slots` are the [slots] lines, the rest is fixed per server.
using Toml = std::function<std::string(std::uint16_t port, const std::string& slots)>;
Toml tomlOf(const std::string& extraServerKeys, int requestThreads, const std::string& extraPlugins,
            bool captureLog) {
    return [=](std::uint16_t port, const std::string& slotLines) {
        std::ostringstream s;
        s << test::configHead(port, captureLog ? "info" : "warn")
          << "request_threads = " << requestThreads << "\n"
          << extraServerKeys << "[server.limits]\nhandshake_timeout_ms = 500\n"
          << "max_message_size = 65536\nmax_pending_handshakes = 100\n"
          << "[slots]\n"
          << slotLines
          // A test may configure fifo itself (its library, say).
          << (extraPlugins.find("[plugins.fifo]") == std::string::npos ? "[plugins.fifo]\n" : "")
          << "[plugins.transport-tcp]\n"
          << extraPlugins;
        return s.str();
    };
}

// A server process for one or more tests, reloadable with other [slots] lines.
struct ServerProcess : test::ServerProcess {
    Toml toml;

    explicit ServerProcess(const std::string& extraServerKeys = "", int requestThreads = 2,
                           const std::string& extraPlugins = "",
                           const std::string& slots = "request_queue = \"fifo\"\n",
                           bool captureLog = false)
        : ServerProcess(tomlOf(extraServerKeys, requestThreads, extraPlugins, captureLog), slots,
                        captureLog) {}
    ServerProcess(Toml t, const std::string& slots, bool captureLog)
        : test::ServerProcess(
              "it", [&](std::uint16_t p, const std::filesystem::path&) { return t(p, slots); },
              [this, captureLog] {
                  if (captureLog) std::freopen((dir / "server.log").c_str(), "w", stderr);
              }),
          toml(std::move(t)) {}

    // Rewrites the configuration with other [slots] lines and reloads it (SIGHUP).
    void reload(const std::string& slots) {
        std::ofstream(dir / "test.toml") << toml(port, slots);
        ::kill(pid, SIGHUP);
    }
    std::string log() const {
        std::ifstream in(dir / "server.log");
        return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    }
};

ServerProcess& server() {
    static ServerProcess s;
    return s;
}

ua::ReadRequest readState(std::vector<ua::ReadValueId>& ids, std::size_t n) {
    ids.assign(n, ua::ReadValueId{});
    for (auto& id : ids) {
        id.nodeId = ua::numericNodeId(0, 2259);  // Server_ServerStatus_State
        id.attributeId = 13;                     // Value
    }
    ua::ReadRequest r{};
    r.timestampsToReturn = ua::TimestampsToReturn::Neither;
    r.nodesToRead = {std::int32_t(n), ids.data()};
    return r;
}

// A full normal session: the server must still serve after each hostile case.
void normalSessionWorks() {
    REQUIRE(server().alive());
    Client c;
    REQUIRE(c.open(server().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 1);
    auto m = c.call(read);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::ReadResponse*>(m.object);
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].status == UAPLEX_Good);
    CHECK(r.results[0].value.value.int32 == 0);  // ServerState Running
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    CHECK(Client::result(c.call(close)) == UAPLEX_Good);
    CHECK(c.closeChannel());
    CHECK(c.closedByServer());
}

// The server answered with ERR (status returned) and/or closed the socket.
uaplex_status refused(Client& c) {
    auto m = c.receive();
    uaplex_status st = UAPLEX_Good;
    if (!m.empty()) {
        REQUIRE(std::memcmp(m.data(), "ERRF", 4) == 0);
        st = Client::get(m, 8);
    }
    CHECK(c.closedByServer());
    return st;
}

}  // namespace

TEST_CASE("discovery without a session, then a session with a Read and an orderly close") {
    Client c;
    REQUIRE(c.open(server().port));
    CHECK(c.channelId() != 0);
    ua::GetEndpointsRequest ge{};
    ge.endpointUrl = ua::makeString(c.url());
    auto m = c.call(ge);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& eps = *static_cast<ua::GetEndpointsResponse*>(m.object);
    REQUIRE(eps.endpoints.size() == 1);
    CHECK(ua::view(eps.endpoints[0].endpointUrl) == c.url());
    CHECK(eps.endpoints[0].securityMode == ua::MessageSecurityMode::None_);
    ua::FindServersRequest fs{};
    m = c.call(fs);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::FindServersResponse*>(m.object)->servers.size() == 1);

    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 1);
    CHECK(Client::result(c.call(read)) == UAPLEX_BadSessionIdInvalid);
    c.disconnect();
    normalSessionWorks();
}

TEST_CASE("chunks cut anywhere by the network arrive whole: headers and bodies over reads") {
    Client c;
    REQUIRE(c.connect(server().port));
    // Sent in pieces with pauses, so that each piece is a read of its own on the server.
    auto trickle = [&](const std::vector<std::uint8_t>& bytes, std::vector<std::size_t> cuts) {
        cuts.push_back(bytes.size());
        std::size_t from = 0;
        for (std::size_t to : cuts) {
            REQUIRE(c.sendRaw(
                {bytes.begin() + std::ptrdiff_t(from), bytes.begin() + std::ptrdiff_t(to)}));
            std::this_thread::sleep_for(std::chrono::milliseconds(30));
            from = to;
        }
    };
    const std::string url = "opc.tcp://127.0.0.1:" + std::to_string(server().port);
    // The Hello cut inside its header (3 of 8 bytes), at its end and in its body.
    trickle(Client::hello(url), {3, 8, 10});
    auto ack = c.receive();
    REQUIRE(ack.size() == 28);
    CHECK(std::memcmp(ack.data(), "ACKF", 4) == 0);
    // An OPN followed at once by the start of a second one: the first cut after its header
    // (its body is read into its own buffer), the second's header cut after 5 bytes.
    enc::ByteBuffer b;
    enc::BinaryWriter w(b);
    w.writeBytes("OPNF", 4);
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw<std::uint32_t>(0);
    enc::encode(w, ua::makeString("http://opcfoundation.org/UA/SecurityPolicy#None"));
    enc::encode(w, ua::nullByteString());
    enc::encode(w, ua::nullByteString());
    w.writeRaw<std::uint32_t>(1);
    w.writeRaw<std::uint32_t>(1);
    ua::OpenSecureChannelRequest req{};
    req.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    req.requestType = ua::SecurityTokenRequestType::Issue;
    req.securityMode = ua::MessageSecurityMode::None_;
    req.clientNonce = ua::nullByteString();
    req.requestedLifetime = 60000;
    enc::encodeMessage(w, req);
    auto opn = b.toVector();
    Client::put(opn, 4, std::uint32_t(opn.size()));
    trickle(opn, {20});
    auto first = c.receive();
    REQUIRE(first.size() > 12);
    CHECK(std::memcmp(first.data(), "OPNF", 4) == 0);
    // A GetEndpoints on that channel whose first 5 bytes end a read: answered, so its
    // header was put together across the reads.
    const std::uint32_t channelId = Client::get(first, 8);
    std::size_t off = 12 + 4 + Client::get(first, 12) + 4 + 4 + 8;
    enc::Arena arena;
    enc::DecodeLimits limits;
    auto m = enc::decodeMessage({first.data() + off, first.size() - off}, arena, limits);
    REQUIRE(m.status == UAPLEX_Good);
    const std::uint32_t tokenId =
        static_cast<ua::OpenSecureChannelResponse*>(m.object)->securityToken.tokenId;
    enc::ByteBuffer mb;
    enc::BinaryWriter mw(mb);
    mw.writeBytes("MSGF", 4);
    mw.writeRaw<std::uint32_t>(0);
    mw.writeRaw<std::uint32_t>(channelId);
    mw.writeRaw<std::uint32_t>(tokenId);
    mw.writeRaw<std::uint32_t>(2);
    mw.writeRaw<std::uint32_t>(2);
    ua::GetEndpointsRequest ge{};
    ge.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    ge.requestHeader.requestHandle = 7;
    ge.endpointUrl = ua::makeString(url);
    enc::encodeMessage(mw, ge);
    auto msg = mb.toVector();
    Client::put(msg, 4, std::uint32_t(msg.size()));
    trickle(msg, {5, 7});
    auto resp = c.receive();
    REQUIRE(resp.size() > 24);
    REQUIRE(std::memcmp(resp.data(), "MSGF", 4) == 0);
    auto r = enc::decodeMessage({resp.data() + 24, resp.size() - 24}, arena, limits);
    REQUIRE(r.status == UAPLEX_Good);
    CHECK(r.type == enc::dataTypeOf<ua::GetEndpointsResponse>());
    CHECK(static_cast<ua::GetEndpointsResponse*>(r.object)->responseHeader.requestHandle == 7);
    normalSessionWorks();
}

TEST_CASE("large requests are reassembled and large responses chunked") {
    Client c;
    REQUIRE(c.open(server().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 1500);
    read.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    // Encoded with the session token by call(); 1500 nodes take several 8 KiB chunks.
    auto m = c.call(read);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::ReadResponse*>(m.object);
    CHECK(r.results.size() == 1500);
    CHECK(c.chunksReceived() >= 2);
}

TEST_CASE("a request above max_message_size is aborted with BadRequestTooLarge") {
    Client c;
    REQUIRE(c.open(server().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 8000);  // about 88 KiB > 64 KiB
    auto m = c.call(read);
    CHECK(m.status == UAPLEX_BadRequestTooLarge);
    // The channel survives: the next request is answered.
    auto small = readState(ids, 1);
    CHECK(Client::result(c.call(small)) == UAPLEX_Good);
}

TEST_CASE("sessions: an unused session is closed after its timeout by a sweep that was asleep") {
    // The housekeeping sweep sleeps until the earliest session timeout or token expiry; a
    // session created while it waits for the channel's expiry (60 s) must wake it sooner.
    ServerProcess s(
        [](std::uint16_t port, const std::string& slots) {
            std::string toml = tomlOf("", 2, "", true)(port, slots);
            const std::string limits = "[server.limits]\n";
            toml.insert(toml.find(limits) + limits.size(),
                        "min_session_timeout_ms = 300\nmax_session_timeout_ms = 300\n");
            return toml;
        },
        "request_queue = \"fifo\"\n", true);
    REQUIRE(s.alive());
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);  // revised to 300 ms; not used again
    bool closed = false;
    for (int i = 0; i < 2000 && !closed; ++i) {  // up to 20 s; the log is not the session
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        closed = s.log().find("1 session(s) timed out") != std::string::npos;
    }
    CHECK(closed);
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 1);
    CHECK(Client::result(c.call(read)) == UAPLEX_BadSessionIdInvalid);
}

TEST_CASE("token renewal: the new token works, the old one stays valid until the new one is used") {
    Client c;
    REQUIRE(c.open(server().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 1);
    std::uint32_t oldToken = c.tokenId();
    REQUIRE(c.openSecureChannel(ua::SecurityTokenRequestType::Renew));
    std::uint32_t newToken = c.tokenId();
    CHECK(newToken != oldToken);
    c.useToken(oldToken);  // still accepted: the client has not switched yet
    CHECK(Client::result(c.call(read)) == UAPLEX_Good);
    c.useToken(newToken);
    CHECK(Client::result(c.call(read)) == UAPLEX_Good);
    c.useToken(oldToken);  // superseded once the new one was used: the channel is closed
    CHECK(c.call(read).status == UAPLEX_BadSecureChannelTokenUnknown);
    normalSessionWorks();
}

TEST_CASE("a session moves to a new channel by ActivateSession; the old channel loses it") {
    Client a;
    REQUIRE(a.open(server().port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    Client b;
    REQUIRE(b.open(server().port));
    b.adoptSession(a);
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 1);
    CHECK(Client::result(b.call(read)) == UAPLEX_BadSecureChannelIdInvalid);
    REQUIRE(b.activateSession() == UAPLEX_Good);
    CHECK(Client::result(b.call(read)) == UAPLEX_Good);
    CHECK(Client::result(a.call(read)) == UAPLEX_BadSecureChannelIdInvalid);
}

TEST_CASE("hostile: garbage before Hello") {
    Client c;
    REQUIRE(c.connect(server().port));
    std::string http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    c.sendRaw({http.begin(), http.end()});
    CHECK(refused(c) != UAPLEX_Good);
    normalSessionWorks();
}

TEST_CASE("hostile: a chunk claiming gigabytes after the handshake") {
    Client c;
    REQUIRE(c.connect(server().port));
    c.sendRaw(Client::hello("opc.tcp://127.0.0.1"));
    auto ack = c.receive();
    REQUIRE(ack.size() == 28);
    std::vector<std::uint8_t> opn(40, 0);
    std::memcpy(opn.data(), "OPNF", 4);
    Client::put(opn, 4, 0xC0000000u);
    c.sendRaw(opn);
    CHECK(refused(c) == UAPLEX_BadTcpMessageTooLarge);
    normalSessionWorks();
}

TEST_CASE("hostile: absurd Hello sizes") {
    {
        Client c;
        REQUIRE(c.connect(server().port));
        c.sendRaw(Client::hello("opc.tcp://127.0.0.1", 0, 0));
        CHECK(refused(c) != UAPLEX_Good);
    }
    {
        Client c;
        REQUIRE(c.connect(server().port));
        auto h = Client::hello("opc.tcp://127.0.0.1");
        Client::put(h, 4, 0xFFFFFFF0u);  // the header claims 4 GiB
        c.sendRaw(h);
        CHECK(refused(c) == UAPLEX_BadTcpMessageTooLarge);
    }
    {
        Client c;
        REQUIRE(c.connect(server().port));
        c.sendRaw(
            Client::hello("opc.tcp://127.0.0.1", 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF));
        auto ack = c.receive();
        REQUIRE(ack.size() == 28);
        CHECK(Client::get(ack, 12) == 65535);  // revised to the server's own sizes
        CHECK(Client::get(ack, 16) == 65535);
    }
    normalSessionWorks();
}

TEST_CASE("hostile: an EndpointUrl longer than 4096 bytes") {
    Client c;
    REQUIRE(c.connect(server().port));
    c.sendRaw(Client::hello("opc.tcp://127.0.0.1/" + std::string(5000, 'a')));
    CHECK(refused(c) == UAPLEX_BadTcpEndpointUrlInvalid);
    normalSessionWorks();
}

TEST_CASE("hostile: fifty silent connections are closed after handshake_timeout_ms") {
    std::vector<std::unique_ptr<Client>> silent;
    for (int i = 0; i < 50; ++i) {
        silent.push_back(std::make_unique<Client>());
        REQUIRE(silent.back()->connect(server().port, 3000));
    }
    normalSessionWorks();  // served while they wait
    auto start = std::chrono::steady_clock::now();
    int closed = 0;
    for (auto& c : silent) closed += c->closedByServer();
    auto waited = std::chrono::steady_clock::now() - start;
    CHECK(closed == 50);
    CHECK(waited < std::chrono::milliseconds(2500));
    normalSessionWorks();
}

TEST_CASE("reverse connect: the server connects out, sends ReverseHello, then serves") {
    // The test is the client: it listens and waits for the server to call.
    int listener = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    socklen_t len = sizeof a;
    ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    REQUIRE(::listen(listener, 4) == 0);
    std::uint16_t clientPort = ntohs(a.sin_port);
    ServerProcess s("reverse_connect = [\"opc.tcp://127.0.0.1:" + std::to_string(clientPort) +
                    "\"]\n");
    timeval tv{5, 0};
    setsockopt(listener, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    int fd = ::accept(listener, nullptr, nullptr);
    ::close(listener);
    REQUIRE(fd >= 0);
    Client c;
    c.adopt(fd);
    auto rhe = c.receive();
    REQUIRE(rhe.size() > 16);
    CHECK(std::memcmp(rhe.data(), "RHEF", 4) == 0);
    std::uint32_t uriLength = Client::get(rhe, 8);
    std::string endpoint(reinterpret_cast<const char*>(rhe.data()) + 16 + uriLength,
                         Client::get(rhe, 12 + uriLength));
    CHECK(endpoint == "opc.tcp://127.0.0.1:" + std::to_string(s.port));
    REQUIRE(c.openOnConnected(endpoint));
    CHECK(c.createSession() == UAPLEX_Good);
}

namespace {

// One worker, held by a read of the slow test node, so that later requests stay queued.
ServerProcess& slowServer() {
    static ServerProcess s("", 1,
                           "[plugins.test-slowread]\nlibrary = \"" UAPLEX_SLOWREAD_PLUGIN "\"\n");
    return s;
}

ua::ReadRequest readSlow(std::vector<ua::ReadValueId>& ids) {
    ids.assign(1, ua::ReadValueId{});
    ids[0].nodeId = ua::stringNodeId(2, "Slow");  // the first namespace after ns=1
    ids[0].attributeId = 13;
    ua::ReadRequest r{};
    r.timestampsToReturn = ua::TimestampsToReturn::Neither;
    r.nodesToRead = {1, ids.data()};
    return r;
}

std::uint32_t handleOf(const enc::DecodedMessage& m) {
    return static_cast<const ua::ResponseHeader*>(m.object)->requestHandle;
}

}  // namespace

TEST_CASE("Cancel: a queued Read is answered BadRequestCancelledByRequest and counted") {
    Client c;
    REQUIRE(c.open(slowServer().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, ids;
    auto slow = readSlow(slowIds);
    auto read = readState(ids, 1);

    REQUIRE(c.send(slow, 100));  // holds the only worker
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(c.send(read, 7));  // queued behind it
    ua::CancelRequest cancel{};
    cancel.requestHandle = 7;
    REQUIRE(c.send(cancel, 8));

    // Cancel does not wait for the worker: the fault for 7 and the Cancel response come
    // first, the slow Read last.
    auto first = c.receiveResponse();
    REQUIRE(first.object != nullptr);
    CHECK(handleOf(first) == 7);
    CHECK(first.type == enc::dataTypeOf<ua::ServiceFault>());
    CHECK(Client::result(first) == UAPLEX_BadRequestCancelledByRequest);
    auto second = c.receiveResponse();
    REQUIRE(second.object != nullptr);
    CHECK(handleOf(second) == 8);
    REQUIRE(second.type == enc::dataTypeOf<ua::CancelResponse>());
    CHECK(static_cast<ua::CancelResponse*>(second.object)->cancelCount == 1);
    auto third = c.receiveResponse();
    REQUIRE(third.object != nullptr);
    CHECK(handleOf(third) == 100);
    REQUIRE(Client::result(third) == UAPLEX_Good);
    auto& r = *static_cast<ua::ReadResponse*>(third.object);
    REQUIRE(r.results.size() == 1);
    CHECK(r.results[0].value.value.int32 == 42);
}

TEST_CASE("Cancel: an unknown handle and an executing request count 0") {
    Client c;
    REQUIRE(c.open(slowServer().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    ua::CancelRequest cancel{};
    cancel.requestHandle = 4242;
    auto m = c.call(cancel, 9);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::CancelResponse*>(m.object)->cancelCount == 0);

    // The slow Read executes when Cancel arrives: it completes normally and is not counted.
    std::vector<ua::ReadValueId> slowIds;
    auto slow = readSlow(slowIds);
    REQUIRE(c.send(slow, 11));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    cancel.requestHandle = 11;
    REQUIRE(c.send(cancel, 12));
    auto first = c.receiveResponse();
    REQUIRE(first.object != nullptr);
    CHECK(handleOf(first) == 12);
    REQUIRE(first.type == enc::dataTypeOf<ua::CancelResponse>());
    CHECK(static_cast<ua::CancelResponse*>(first.object)->cancelCount == 0);
    auto second = c.receiveResponse();
    REQUIRE(second.object != nullptr);
    CHECK(handleOf(second) == 11);
    CHECK(Client::result(second) == UAPLEX_Good);
}

TEST_CASE("Cancel: requests of another session with the same handle are untouched") {
    Client a, b;
    REQUIRE(a.open(slowServer().port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    REQUIRE(b.open(slowServer().port));
    REQUIRE(b.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, ids;
    auto slow = readSlow(slowIds);
    auto read = readState(ids, 1);
    REQUIRE(a.send(slow, 1));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(a.send(read, 5));  // queued, session a
    ua::CancelRequest cancel{};
    cancel.requestHandle = 5;
    auto m = b.call(cancel, 6);  // session b has no request 5
    REQUIRE(Client::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::CancelResponse*>(m.object)->cancelCount == 0);
    auto first = a.receiveResponse();
    REQUIRE(first.object != nullptr);
    CHECK(handleOf(first) == 1);
    auto second = a.receiveResponse();
    REQUIRE(second.object != nullptr);
    CHECK(handleOf(second) == 5);
    CHECK(Client::result(second) == UAPLEX_Good);
}

TEST_CASE("TimeoutHint: a queued request past its deadline is answered BadTimeout at once") {
    Client c;
    REQUIRE(c.open(slowServer().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, ids;
    auto slow = readSlow(slowIds);
    auto read = readState(ids, 1);
    REQUIRE(c.send(slow, 30));  // holds the only worker for 1.5 s
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    c.setTimeoutHint(100);
    auto sent = std::chrono::steady_clock::now();
    REQUIRE(c.send(read, 31));  // queued behind it, expires long before the worker is free
    auto first = c.receiveResponse();
    auto waited = std::chrono::steady_clock::now() - sent;
    REQUIRE(first.object != nullptr);
    CHECK(handleOf(first) == 31);
    CHECK(Client::result(first) == UAPLEX_BadTimeout);
    CHECK(waited < std::chrono::milliseconds(800));  // not after the slow Read
    auto second = c.receiveResponse();
    REQUIRE(second.object != nullptr);
    CHECK(handleOf(second) == 30);
    CHECK(Client::result(second) == UAPLEX_Good);
}

TEST_CASE("TimeoutHint: a queued GetEndpoints without a session is answered BadTimeout") {
    Client busy, c;
    REQUIRE(busy.open(slowServer().port));
    REQUIRE(busy.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds;
    auto slow = readSlow(slowIds);
    REQUIRE(busy.send(slow, 35));  // holds the only worker for 1.5 s
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(c.open(slowServer().port));
    c.setTimeoutHint(200);
    ua::GetEndpointsRequest ge{};
    ge.endpointUrl = ua::makeString(c.url());
    auto sent = std::chrono::steady_clock::now();
    auto m = c.call(ge, 36);  // queued behind the slow Read, on a channel without a session
    auto waited = std::chrono::steady_clock::now() - sent;
    REQUIRE(m.object != nullptr);
    CHECK(handleOf(m) == 36);
    CHECK(Client::result(m) == UAPLEX_BadTimeout);
    CHECK(waited < std::chrono::milliseconds(800));  // by the sweep, not after the slow Read
    auto done = busy.receiveResponse();
    REQUIRE(done.object != nullptr);
    CHECK(Client::result(done) == UAPLEX_Good);
}

TEST_CASE("TimeoutHint: an executing request past its deadline answers BadTimeout") {
    Client c;
    REQUIRE(c.open(slowServer().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, ids;
    auto slow = readSlow(slowIds);
    c.setTimeoutHint(300);
    auto m = c.call(slow, 40);
    REQUIRE(m.object != nullptr);
    CHECK(handleOf(m) == 40);
    CHECK(Client::result(m) == UAPLEX_BadTimeout);
    // TimeoutHint 0 means no deadline: the same Read completes Good.
    c.setTimeoutHint(0);
    auto ok = c.call(slow, 41);
    REQUIRE(ok.object != nullptr);
    CHECK(Client::result(ok) == UAPLEX_Good);
}

TEST_CASE("shutdown drain: queued requests answer BadServerHalted, the executing one completes") {
    ServerProcess s("", 1, "[plugins.test-slowread]\nlibrary = \"" UAPLEX_SLOWREAD_PLUGIN "\"\n");
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, ids;
    auto slow = readSlow(slowIds);
    auto read = readState(ids, 1);
    REQUIRE(c.send(slow, 50));  // executing
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(c.send(read, 51));  // queued
    REQUIRE(c.send(read, 52));  // queued
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ::kill(s.pid, SIGTERM);
    for (std::uint32_t h : {51u, 52u}) {
        auto m = c.receiveResponse();
        REQUIRE(m.object != nullptr);
        CHECK(handleOf(m) == h);
        CHECK(Client::result(m) == UAPLEX_BadServerHalted);
    }
    auto last = c.receiveResponse();
    REQUIRE(last.object != nullptr);
    CHECK(handleOf(last) == 50);
    CHECK(Client::result(last) == UAPLEX_Good);
}

// --- the request pipeline plugins: bounded pool, leases admission, fair queue -----------------

namespace {

// One worker held by the slow Read; a request queue of 20 of which Bootstrap (a channel
// without a session), Reconnect (Create/ActivateSession) and Control (CloseSession) keep
// one place each, so the greedy session can saturate the shared 17.
ServerProcess& pipelineServer() {
    static ServerProcess s(
        "", 1,
        "[plugins.test-slowread]\nlibrary = \"" UAPLEX_SLOWREAD_PLUGIN
        "\"\n"
        "[plugins.fair]\n[plugins.bounded]\n[plugins.leases]\n"
        "[plugins.leases.stages.request_queue]\ntotal = 20\nbootstrap = 1\n"
        "[plugins.leases.stages.request_execution]\nbootstrap = 1\n"
        "[plugins.leases.stages.request_queue_bytes]\nbootstrap = 65536\n",
        "request_queue = \"fair\"\nadmission = \"leases\"\nbuffer_pool = \"bounded\"\n");
    return s;
}

}  // namespace

TEST_CASE("pipeline: a new session gets in while a greedy session saturates the queue") {
    Client greedy;
    REQUIRE(greedy.open(pipelineServer().port));
    REQUIRE(greedy.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, ids;
    auto slow = readSlow(slowIds);
    auto read = readState(ids, 1);
    REQUIRE(greedy.send(slow, 1));  // holds the only worker
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    constexpr std::uint32_t kFlood = 40;
    for (std::uint32_t h = 2; h < 2 + kFlood; ++h) REQUIRE(greedy.send(read, h));
    // Refused requests are answered at once, before the slow Read completes.
    std::uint32_t tooBusy = 0;
    for (std::uint32_t i = 0; i < kFlood - 17; ++i) {
        auto m = greedy.receiveResponse();
        REQUIRE(m.object != nullptr);
        CHECK(Client::result(m) == UAPLEX_BadServerTooBusy);
        tooBusy += Client::result(m) == UAPLEX_BadServerTooBusy;
    }
    CHECK(tooBusy == kFlood - 17);

    // The shared queue is full: a new client still creates and activates its session
    // (Bootstrap, then Reconnect floor), and closes it (Control floor).
    Client fresh;
    REQUIRE(fresh.open(pipelineServer().port));
    CHECK(fresh.createSession() == UAPLEX_Good);
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    CHECK(Client::result(fresh.call(close, 9)) == UAPLEX_Good);

    // Every admitted greedy request is answered Good exactly once.
    std::vector<int> seen(2 + kFlood, 0);
    for (std::uint32_t i = 0; i < 1 + 17; ++i) {
        auto m = greedy.receiveResponse();
        REQUIRE(m.object != nullptr);
        CHECK(Client::result(m) == UAPLEX_Good);
        std::uint32_t h = handleOf(m);
        REQUIRE(h < seen.size());
        ++seen[h];
    }
    CHECK(seen[1] == 1);
    for (std::uint32_t h = 2; h < 2 + 17; ++h) CHECK(seen[h] == 1);
}

TEST_CASE("pipeline: Cancel and TimeoutHint on queued requests, leases returned") {
    Client c;
    REQUIRE(c.open(pipelineServer().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> slowIds, ids;
    auto slow = readSlow(slowIds);
    auto read = readState(ids, 1);
    REQUIRE(c.send(slow, 100));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    REQUIRE(c.send(read, 7));
    c.setTimeoutHint(100);
    REQUIRE(c.send(read, 8));
    c.setTimeoutHint(10000);
    ua::CancelRequest cancel{};
    cancel.requestHandle = 7;
    REQUIRE(c.send(cancel, 9));
    auto first = c.receiveResponse();
    REQUIRE(first.object != nullptr);
    CHECK(handleOf(first) == 7);
    CHECK(Client::result(first) == UAPLEX_BadRequestCancelledByRequest);
    auto second = c.receiveResponse();
    REQUIRE(second.object != nullptr);
    CHECK(handleOf(second) == 9);
    auto third = c.receiveResponse();
    REQUIRE(third.object != nullptr);
    CHECK(handleOf(third) == 8);
    CHECK(Client::result(third) == UAPLEX_BadTimeout);
    auto fourth = c.receiveResponse();
    REQUIRE(fourth.object != nullptr);
    CHECK(handleOf(fourth) == 100);
    CHECK(Client::result(fourth) == UAPLEX_Good);
    // The queue's 17 shared places are all free again: a burst of 17 is admitted.
    REQUIRE(c.send(slow, 200));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (std::uint32_t h = 201; h < 201 + 17; ++h) REQUIRE(c.send(read, h));
    for (std::uint32_t i = 0; i < 18; ++i) {
        auto m = c.receiveResponse();
        REQUIRE(m.object != nullptr);
        CHECK(Client::result(m) == UAPLEX_Good);
    }
}

namespace {

// 10 clients keep 100 Reads each in flight while `swaps` runs (it sees how many responses
// arrived so far); then every request must have been answered Good exactly once.
void underLoad(ServerProcess& s, const std::function<void(std::atomic<std::uint64_t>&)>& swaps) {
    constexpr int kClients = 10;
    constexpr std::uint32_t kInFlight = 100;
    std::atomic<bool> stopSending{false};
    std::atomic<std::uint64_t> answered{0};
    struct Result {
        std::uint64_t sent = 0, good = 0, bad = 0, duplicate = 0, lost = 0;
    };
    std::vector<Result> results(kClients);
    std::vector<std::thread> clients;
    for (int i = 0; i < kClients; ++i) {
        clients.emplace_back([&, i] {
            Result& res = results[i];
            Client c;
            if (!c.open(s.port) || c.createSession() != UAPLEX_Good) {
                res.lost = 1;
                return;
            }
            std::vector<ua::ReadValueId> ids;
            auto read = readState(ids, 1);
            std::vector<std::uint8_t> seen;
            auto send = [&] {
                seen.push_back(0);
                ++res.sent;
                return c.send(read, std::uint32_t(res.sent));  // handles 1, 2, ...
            };
            for (std::uint32_t k = 0; k < kInFlight; ++k)
                if (!send()) return;
            std::uint64_t received = 0;
            while (received < res.sent) {
                auto m = c.receiveResponse();
                if (m.object == nullptr) break;  // lost: the counts below show it
                ++received;
                answered.fetch_add(1, std::memory_order_relaxed);
                std::uint32_t h = handleOf(m);
                if (Client::result(m) != UAPLEX_Good) ++res.bad;
                if (h == 0 || h > seen.size() || seen[h - 1]++) ++res.duplicate;
                if (!stopSending.load(std::memory_order_relaxed) && !send()) break;
            }
            res.good = received - res.bad;
            res.lost = res.sent - received;
        });
    }
    swaps(answered);
    stopSending = true;
    for (auto& t : clients) t.join();
    REQUIRE(s.alive());
    std::uint64_t total = 0;
    for (const auto& r : results) {
        CHECK(r.sent >= kInFlight);
        CHECK(r.bad == 0);
        CHECK(r.duplicate == 0);
        CHECK(r.lost == 0);
        total += r.good;
    }
    CHECK(total > 10 * kInFlight);
    INFO("requests answered Good: " << total);
}

// After a reload: 300 ms of load, then responses must have moved past `before` by a round of
// every client's window; a loaded machine gets up to 5 s more, so a stalled server still fails.
bool flowsOn(const std::atomic<std::uint64_t>& answered, std::uint64_t before) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    for (int i = 0; i < 100 && answered.load() <= before + 100; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    return answered.load() > before + 100;
}

}  // namespace

TEST_CASE("hot swap: fifo <-> fair by SIGHUP under 10 x 100 requests in flight loses none") {
    const std::string pipeline = "admission = \"leases\"\nbuffer_pool = \"bounded\"\n";
    ServerProcess s("", 2, "[plugins.fair]\n[plugins.bounded]\n[plugins.leases]\n",
                    "request_queue = \"fifo\"\n" + pipeline);
    underLoad(s, [&](std::atomic<std::uint64_t>& answered) {
        // Several swaps while the load runs; each waits for requests to flow on the new queue.
        const char* queues[] = {"fair", "fifo"};
        for (int swap = 0; swap < 6; ++swap) {
            std::uint64_t before = answered.load();
            s.reload(std::string("request_queue = \"") + queues[swap % 2] + "\"\n" + pipeline);
            CHECK(flowsOn(answered, before));
        }
    });
}

TEST_CASE("hot swap: a rebuilt fifo library renamed over the old one is reloaded by SIGHUP") {
    // The server loads fifo from a test directory, where the test replaces the file the way a
    // deployment would: the new build is written next to it and renamed over it.
    auto libDir =
        std::filesystem::temp_directory_path() / ("uaplex-it-lib-" + std::to_string(::getpid()));
    std::filesystem::create_directories(libDir);
    auto lib = libDir / "uaplex-fifo.so";
    auto install = [&](const char* build) {
        auto next = libDir / "uaplex-fifo.so.new";
        std::filesystem::copy_file(build, next, std::filesystem::copy_options::overwrite_existing);
        std::filesystem::rename(next, lib);
    };
    install(UAPLEX_FIFO_PLUGIN);
    const std::string slots =
        "request_queue = \"fifo\"\nadmission = \"leases\"\nbuffer_pool = \"bounded\"\n";
    {
        ServerProcess s("", 2,
                        "[plugins.fifo]\nlibrary = \"" + lib.string() +
                            "\"\n[plugins.bounded]\n[plugins.leases]\n",
                        slots, true);
        underLoad(s, [&](std::atomic<std::uint64_t>& answered) {
            for (int swap = 0; swap < 4; ++swap) {
                std::uint64_t before = answered.load();
                install(swap % 2 == 0 ? UAPLEX_FIFO_REBUILT_PLUGIN : UAPLEX_FIFO_PLUGIN);
                s.reload(slots);  // the same configuration: only the file changed
                CHECK(flowsOn(answered, before));
            }
        });
        std::string log = s.log();
        auto count = [&](const std::string& what) {
            std::size_t n = 0;
            for (auto at = log.find(what); at != std::string::npos; at = log.find(what, at + 1))
                ++n;
            return n;
        };
        CHECK(count("(request_queue 1.0.0-rebuilt)") == 2);
        CHECK(count("was replaced on disk") == 4);
    }
    std::error_code ec;
    std::filesystem::remove_all(libDir, ec);
}

// --- Subscriptions ---------------------------------------------------------------------------

ServerProcess& benchmarkServer() {
    static ServerProcess s("", 2, "[plugins.benchmark]\n");
    return s;
}

ua::PublishResponse* publishOnce(Client& c, enc::DecodedMessage& m, std::uint32_t handle,
                                 const ua::SubscriptionAcknowledgement* ack = nullptr) {
    ua::PublishRequest p{};
    p.requestHeader.timeoutHint = 10000;
    if (ack)
        p.subscriptionAcknowledgements = {1, const_cast<ua::SubscriptionAcknowledgement*>(ack)};
    m = c.call(p, handle);
    if (Client::result(m) != UAPLEX_Good || m.type != enc::dataTypeOf<ua::PublishResponse>())
        return nullptr;
    return static_cast<ua::PublishResponse*>(m.object);
}

TEST_CASE(
    "subscription: a Write of ns=1;i=1001 arrives as a DataChange through Publish; "
    "keep-alive when idle; DeleteSubscriptions") {
    auto& s = benchmarkServer();
    REQUIRE(s.alive());
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);

    ua::CreateSubscriptionRequest cs{};
    cs.requestedPublishingInterval = 100;
    cs.requestedLifetimeCount = 100;
    cs.requestedMaxKeepAliveCount = 3;
    cs.publishingEnabled = true;
    auto m = c.call(cs);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& created = *static_cast<ua::CreateSubscriptionResponse*>(m.object);
    std::uint32_t subscriptionId = created.subscriptionId;
    CHECK(subscriptionId != 0);
    CHECK(created.revisedPublishingInterval == 100);

    ua::MonitoredItemCreateRequest item{};
    item.itemToMonitor.nodeId = ua::numericNodeId(1, 1001);
    item.itemToMonitor.attributeId = 13;
    item.monitoringMode = ua::MonitoringMode::Reporting;
    item.requestedParameters.clientHandle = 42;
    item.requestedParameters.samplingInterval = 0;
    item.requestedParameters.queueSize = 1;
    item.requestedParameters.discardOldest = true;
    ua::CreateMonitoredItemsRequest cmi{};
    cmi.subscriptionId = subscriptionId;
    cmi.timestampsToReturn = ua::TimestampsToReturn::Both;
    cmi.itemsToCreate = {1, &item};
    m = c.call(cmi);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& items = *static_cast<ua::CreateMonitoredItemsResponse*>(m.object);
    REQUIRE(items.results.size() == 1);
    CHECK(items.results[0].statusCode == UAPLEX_Good);

    // The first Publish carries the initial value.
    enc::DecodedMessage pm;
    auto* p = publishOnce(c, pm, 10);
    REQUIRE(p != nullptr);
    CHECK(p->subscriptionId == subscriptionId);
    REQUIRE(p->notificationMessage.notificationData.size() == 1);
    ua::SubscriptionAcknowledgement ack{subscriptionId, p->notificationMessage.sequenceNumber};

    ua::WriteValue wv{};
    wv.nodeId = ua::numericNodeId(1, 1001);
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    wv.value.value = ua::variantInt32(123456);
    ua::WriteRequest write{};
    write.nodesToWrite = {1, &wv};
    m = c.call(write);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::WriteResponse*>(m.object)->results[0] == UAPLEX_Good);

    p = publishOnce(c, pm, 11, &ack);
    REQUIRE(p != nullptr);
    REQUIRE(p->results.size() == 1);
    CHECK(p->results[0] == UAPLEX_Good);  // the acknowledgement
    REQUIRE(p->notificationMessage.notificationData.size() == 1);
    const auto& eo = p->notificationMessage.notificationData[0];
    REQUIRE(eo.data_type == enc::dataTypeOf<ua::DataChangeNotification>());
    const auto& dc = *static_cast<const ua::DataChangeNotification*>(eo.object);
    REQUIRE(dc.monitoredItems.size() == 1);
    CHECK(dc.monitoredItems[0].clientHandle == 42);
    CHECK(dc.monitoredItems[0].value.value.value.int32 == 123456);
    ack.sequenceNumber = p->notificationMessage.sequenceNumber;

    // Nothing changes: a keep-alive (no notifications) after maxKeepAliveCount intervals.
    auto before = std::chrono::steady_clock::now();
    p = publishOnce(c, pm, 12, &ack);
    REQUIRE(p != nullptr);
    CHECK(p->subscriptionId == subscriptionId);
    CHECK(p->notificationMessage.notificationData.size() == 0);
    CHECK(std::chrono::steady_clock::now() - before >= std::chrono::milliseconds(200));

    ua::DeleteSubscriptionsRequest del{};
    del.subscriptionIds = {1, &subscriptionId};
    m = c.call(del);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& deleted = *static_cast<ua::DeleteSubscriptionsResponse*>(m.object);
    REQUIRE(deleted.results.size() == 1);
    CHECK(deleted.results[0] == UAPLEX_Good);

    // No subscription left: Publish is refused at once.
    m = c.call(*std::make_unique<ua::PublishRequest>(), 13);
    CHECK(Client::result(m) == UAPLEX_BadNoSubscription);

    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = true;
    CHECK(Client::result(c.call(close)) == UAPLEX_Good);
}

// --- Subscriptions across sessions and channels (Part 4 5.13.7, 5.7.4, Part 5 9.1) ---------

namespace {

// Publishing every 100 ms, lifetime three keep-alives.
std::uint32_t subscribeEvery100ms(Client& c, std::uint32_t keepAlive = 20) {
    return test::createSubscription(c, {100, keepAlive * 3, keepAlive});
}

// A polled item on ServerStatus.State (its value is 0 while the server runs).
std::uint32_t monitorState(Client& c, std::uint32_t sub, std::uint32_t clientHandle) {
    ua::MonitoredItemCreateRequest item{};
    item.itemToMonitor.nodeId = ua::numericNodeId(0, 2259);
    item.itemToMonitor.attributeId = 13;
    item.monitoringMode = ua::MonitoringMode::Reporting;
    item.requestedParameters.clientHandle = clientHandle;
    item.requestedParameters.samplingInterval = 100;
    item.requestedParameters.queueSize = 1;
    ua::CreateMonitoredItemsRequest req{};
    req.subscriptionId = sub;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.itemsToCreate = {1, &item};
    auto m = c.call(req);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::CreateMonitoredItemsResponse*>(m.object);
    REQUIRE(r.results.size() == 1);
    REQUIRE(r.results[0].statusCode == UAPLEX_Good);
    return r.results[0].monitoredItemId;
}

struct Published {
    uaplex_status status = UAPLEX_BadUnexpectedError;
    std::uint32_t subscriptionId = 0, sequenceNumber = 0;
    std::size_t notifications = 0;
    std::vector<std::uint32_t> available;
};

Published publish(Client& c, std::uint32_t handle) {
    ua::PublishRequest p{};
    auto m = c.call(p, handle);
    Published out;
    out.status = Client::result(m);
    if (out.status != UAPLEX_Good) return out;
    auto& r = *static_cast<ua::PublishResponse*>(m.object);
    out.subscriptionId = r.subscriptionId;
    out.sequenceNumber = r.notificationMessage.sequenceNumber;
    out.notifications = r.notificationMessage.notificationData.size();
    for (std::size_t i = 0; i < r.availableSequenceNumbers.size(); ++i)
        out.available.push_back(r.availableSequenceNumbers[i]);
    return out;
}

// Server.GetMonitoredItems(sub) by Call: the method's status and the two handle arrays.
uaplex_status getMonitoredItems(Client& c, std::uint32_t sub, std::vector<std::uint32_t>* server,
                                std::vector<std::uint32_t>* client) {
    ua::CallMethodRequest m{};
    m.objectId = ua::numericNodeId(0, 2253);
    m.methodId = ua::numericNodeId(0, 11492);
    ua::Variant arg = ua::variantUInt32(sub);
    m.inputArguments = {1, &arg};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    auto msg = c.call(req);
    REQUIRE(Client::result(msg) == UAPLEX_Good);
    auto& r = *static_cast<ua::CallResponse*>(msg.object);
    REQUIRE(r.results.size() == 1);
    const auto& res = r.results[0];
    if (res.statusCode != UAPLEX_Good) return res.statusCode;
    REQUIRE(res.outputArguments.size() == 2);
    auto take = [](const ua::Variant& v, std::vector<std::uint32_t>* out) {
        REQUIRE((v.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_UINT32);
        const auto* p = static_cast<const std::uint32_t*>(v.value.pointer);
        out->assign(p, p + std::max<std::int32_t>(v.array_length, 0));
    };
    take(res.outputArguments[0], server);
    take(res.outputArguments[1], client);
    return UAPLEX_Good;
}

uaplex_status transfer(Client& c, std::uint32_t sub, bool sendInitialValues,
                       std::vector<std::uint32_t>* available = nullptr) {
    ua::TransferSubscriptionsRequest t{};
    t.subscriptionIds = {1, &sub};
    t.sendInitialValues = sendInitialValues;
    auto m = c.call(t);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::TransferSubscriptionsResponse*>(m.object);
    REQUIRE(r.results.size() == 1);
    if (available)
        for (std::size_t i = 0; i < r.results[0].availableSequenceNumbers.size(); ++i)
            available->push_back(r.results[0].availableSequenceNumbers[i]);
    return r.results[0].statusCode;
}

}  // namespace

TEST_CASE("subscriptions: a Publish parked on a lost channel does not take the next message") {
    Client a;
    REQUIRE(a.open(server().port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    std::uint32_t sub = subscribeEvery100ms(a);
    Published first = publish(a, 10);  // the first keep-alive
    REQUIRE(first.status == UAPLEX_Good);
    CHECK(first.notifications == 0);
    ua::PublishRequest parked{};
    REQUIRE(a.send(parked, 11));  // waits: nothing to report for K = 20 cycles
    // A Read behind it: once it is answered, the Publish has been handed to the engine.
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 1);
    REQUIRE(Client::result(a.call(read, 12)) == UAPLEX_Good);
    a.disconnect();  // the client loses its connection
    Client b;
    REQUIRE(b.open(server().port));
    b.adoptSession(a);
    REQUIRE(b.activateSession() == UAPLEX_Good);
    monitorState(b, sub, 7);
    // The initial value is message 1, and it reaches the Publish on the new channel.
    Published p = publish(b, 13);
    REQUIRE(p.status == UAPLEX_Good);
    CHECK(p.subscriptionId == sub);
    CHECK(p.sequenceNumber == 1);
    CHECK(p.notifications == 1);
}

// Part 4 5.6.5: Cancel ends a Publish the session holds for later like any other request.
TEST_CASE("Cancel: a parked Publish is answered BadRequestCancelledByRequest and counted") {
    Client a;
    REQUIRE(a.open(server().port));
    REQUIRE(a.createSession() == UAPLEX_Good);
    subscribeEvery100ms(a);
    Published first = publish(a, 10);  // the first keep-alive
    REQUIRE(first.status == UAPLEX_Good);
    CHECK(first.notifications == 0);
    ua::PublishRequest parked{};
    REQUIRE(a.send(parked, 11));  // waits: nothing to report for K = 20 cycles
    // A Read behind it: once it is answered, the Publish has been handed to the engine.
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 1);
    REQUIRE(Client::result(a.call(read, 12)) == UAPLEX_Good);
    ua::CancelRequest cancel{};
    cancel.requestHandle = 11;
    REQUIRE(a.send(cancel, 13));
    // Both answers come now, in either order: the Publish's fault and the Cancel response.
    bool faulted = false, counted = false;
    for (int i = 0; i < 2; ++i) {
        auto m = a.receiveResponse();
        REQUIRE(m.object != nullptr);
        std::uint32_t handle = static_cast<const ua::ResponseHeader*>(m.object)->requestHandle;
        if (handle == 11) {
            CHECK(m.type == enc::dataTypeOf<ua::ServiceFault>());
            CHECK(Client::result(m) == UAPLEX_BadRequestCancelledByRequest);
            faulted = true;
        } else {
            REQUIRE(handle == 13);
            REQUIRE(m.type == enc::dataTypeOf<ua::CancelResponse>());
            CHECK(static_cast<ua::CancelResponse*>(m.object)->cancelCount == 1);
            counted = true;
        }
    }
    CHECK(faulted);
    CHECK(counted);
}

namespace {
ServerProcess& accessServer();
}

// Both sessions act for the same user: TransferSubscriptions refuses anonymous sessions on
// None channels (Part 4 5.13.7).
TEST_CASE("subscriptions: CloseSession(deleteSubscriptions=false) leaves them for a transfer") {
    Client::UserName op("username", "operator", "op-secret");
    Client a;
    REQUIRE(a.open(accessServer().port));
    REQUIRE(a.createSessionAs(&op.eo) == UAPLEX_Good);
    std::uint32_t kept = subscribeEvery100ms(a), gone = 0;
    std::uint32_t item = monitorState(a, kept, 41);
    Published p = publish(a, 2);
    REQUIRE(p.status == UAPLEX_Good);
    CHECK(p.sequenceNumber == 1);  // not acknowledged: stays available
    ua::CloseSessionRequest close{};
    close.deleteSubscriptions = false;
    REQUIRE(Client::result(a.call(close)) == UAPLEX_Good);

    // An anonymous session may not take it.
    Client anonymous;
    REQUIRE(anonymous.open(accessServer().port));
    REQUIRE(anonymous.createSession() == UAPLEX_Good);
    CHECK(transfer(anonymous, kept, true) == UAPLEX_BadUserAccessDenied);

    Client b;
    REQUIRE(b.open(accessServer().port));
    REQUIRE(b.createSessionAs(&op.eo) == UAPLEX_Good);
    std::vector<std::uint32_t> available;
    REQUIRE(transfer(b, kept, true, &available) == UAPLEX_Good);
    CHECK(available == std::vector<std::uint32_t>{1});
    CHECK(transfer(b, 0x7FFFFFF0u, true) == UAPLEX_BadSubscriptionIdInvalid);
    // sendInitialValues: the item's current value comes again on the new session.
    Published q = publish(b, 3);
    REQUIRE(q.status == UAPLEX_Good);
    CHECK(q.subscriptionId == kept);
    CHECK(q.notifications == 1);
    CHECK(q.sequenceNumber == 2);

    // Server.GetMonitoredItems: the owner sees the handles, another session may not.
    std::vector<std::uint32_t> sh, ch;
    REQUIRE(getMonitoredItems(b, kept, &sh, &ch) == UAPLEX_Good);
    CHECK(sh == std::vector<std::uint32_t>{item});
    CHECK(ch == std::vector<std::uint32_t>{41});
    CHECK(getMonitoredItems(b, 0x7FFFFFF0u, &sh, &ch) == UAPLEX_BadSubscriptionIdInvalid);
    Client c;
    REQUIRE(c.open(accessServer().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    CHECK(getMonitoredItems(c, kept, &sh, &ch) == UAPLEX_BadUserAccessDenied);

    // deleteSubscriptions = true deletes them: nothing left to transfer.
    gone = subscribeEvery100ms(c);
    ua::CloseSessionRequest closeAll{};
    closeAll.deleteSubscriptions = true;
    REQUIRE(Client::result(c.call(closeAll)) == UAPLEX_Good);
    CHECK(transfer(b, gone, false) == UAPLEX_BadSubscriptionIdInvalid);
}

TEST_CASE("subscriptions: ServerCapabilities advertise the configured subscription limits") {
    Client c;
    REQUIRE(c.open(server().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids(3);
    const std::uint32_t nodes[] = {24098 /* MaxSubscriptionsPerSession */,
                                   11714 /* OperationLimits.MaxMonitoredItemsPerCall */,
                                   31916 /* MaxMonitoredItemsQueueSize */};
    for (std::size_t i = 0; i < ids.size(); ++i) {
        ids[i].nodeId = ua::numericNodeId(0, nodes[i]);
        ids[i].attributeId = 13;
    }
    ua::ReadRequest read{};
    read.timestampsToReturn = ua::TimestampsToReturn::Neither;
    read.nodesToRead = {3, ids.data()};
    auto m = c.call(read);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::ReadResponse*>(m.object);
    REQUIRE(r.results.size() == 3);
    CHECK(r.results[0].value.value.uint32 == 100);  // the defaults of [server.limits]
    CHECK(r.results[1].value.value.uint32 == 10000);
    CHECK(r.results[2].value.value.uint32 == 10000);  // the larger of data and event queues
}

TEST_CASE("diagnostics: operation-level returnDiagnostics sizes diagnosticInfos like results") {
    Client c;
    REQUIRE(c.open(server().port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids;
    auto read = readState(ids, 3);
    {
        auto m = c.call(read);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        CHECK(static_cast<ua::ReadResponse*>(m.object)->diagnosticInfos.size() == 0);
    }
    read.requestHeader.returnDiagnostics = 0x3E0;  // every operation-level field
    {
        auto m = c.call(read);
        REQUIRE(Client::result(m) == UAPLEX_Good);
        auto& r = *static_cast<ua::ReadResponse*>(m.object);
        CHECK(r.results.size() == 3);
        CHECK(r.diagnosticInfos.size() == 3);
    }
    std::uint32_t sub = subscribeEvery100ms(c);
    std::uint32_t item = monitorState(c, sub, 5);
    std::uint32_t unknown = item + 1000;
    std::uint32_t items[] = {item, unknown};
    ua::SetMonitoringModeRequest sm{};
    sm.requestHeader.returnDiagnostics = 0x3E0;
    sm.subscriptionId = sub;
    sm.monitoringMode = ua::MonitoringMode::Sampling;
    sm.monitoredItemIds = {2, items};
    auto m = c.call(sm);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& r = *static_cast<ua::SetMonitoringModeResponse*>(m.object);
    REQUIRE(r.results.size() == 2);
    CHECK(r.results[1] == UAPLEX_BadMonitoredItemIdInvalid);
    CHECK(r.diagnosticInfos.size() == 2);
}

// --- user identities and access control ([access]) ------------------------------------------

namespace {

// The users file for the access server, written by the executable's own `users` command.
std::filesystem::path accessUsersFile() {
    struct Dir {
        std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("uaplex-it-users-" + std::to_string(::getpid()));
        ~Dir() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    };
    static Dir dir;
    static std::filesystem::path file = [] {
        std::filesystem::create_directories(dir.path);
        auto f = dir.path / "users.toml";
        std::string add = std::string(UAPLEX_EXE) + " users add operator --roles Operator " +
                          "--password op-secret --iterations 1000 --file " + f.string() +
                          " >/dev/null";
        REQUIRE(std::system(add.c_str()) == 0);
        return f;
    }();
    return file;
}

// Anonymous and Observers may browse and read the demo namespace; Operators also write and
// call. Demo.Counter is for Operators only.
ServerProcess& accessServer() {
    static ServerProcess s("[access]\nusers_file = \"" + accessUsersFile().string() +
                               "\"\n"
                               "[[access.rules]]\nnamespace = \"urn:uaplex:demo\"\n"
                               "roles = [\"Anonymous\", \"Observer\"]\n"
                               "permissions = [\"Browse\", \"Read\"]\n"
                               "[[access.rules]]\nnamespace = \"urn:uaplex:demo\"\n"
                               "roles = [\"Operator\"]\n"
                               "permissions = [\"Browse\", \"Read\", \"Write\", \"Call\", "
                               "\"ReceiveEvents\"]\n"
                               "[[access.rules]]\nnamespace = \"urn:uaplex:demo\"\n"
                               "node = \"s=Demo.Counter\"\nroles = [\"Operator\"]\n"
                               "permissions = [\"Browse\", \"Read\"]\n",
                           2, "[plugins.demo]\n");
    return s;
}

ServerProcess& noAnonymousServer() {
    static ServerProcess s("[access]\nanonymous = false\nusers_file = \"" +
                           accessUsersFile().string() + "\"\n");
    return s;
}

}  // namespace

TEST_CASE("access: GetEndpoints offers the enabled token policies") {
    auto& s = accessServer();
    Client c;
    REQUIRE(c.open(s.port));
    ua::GetEndpointsRequest ge{};
    ge.endpointUrl = ua::makeString(c.url());
    auto m = c.call(ge);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& eps = *static_cast<ua::GetEndpointsResponse*>(m.object);
    REQUIRE(eps.endpoints.size() == 1);
    const auto& tokens = eps.endpoints[0].userIdentityTokens;
    REQUIRE(tokens.size() == 2);
    CHECK(ua::view(tokens[0].policyId) == "anonymous");
    CHECK(tokens[0].tokenType == ua::UserTokenType::Anonymous);
    CHECK(ua::view(tokens[1].policyId) == "username");
    CHECK(tokens[1].tokenType == ua::UserTokenType::UserName);

    Client n;
    REQUIRE(n.open(noAnonymousServer().port));
    ge.endpointUrl = ua::makeString(n.url());
    m = n.call(ge);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    auto& only = static_cast<ua::GetEndpointsResponse*>(m.object)->endpoints[0].userIdentityTokens;
    REQUIRE(only.size() == 1);
    CHECK(only[0].tokenType == ua::UserTokenType::UserName);
}

TEST_CASE("access: anonymous reads but may not write, call, see or monitor Operator nodes") {
    auto& s = accessServer();
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::uint16_t d = test::demoNamespace(c);
    ua::NodeId int32 = ua::stringNodeId(d, "Demo.Scalars.Int32");
    ua::NodeId counter = ua::stringNodeId(d, "Demo.Counter");
    CHECK(test::readOne(c, int32).status == UAPLEX_Good);
    CHECK(test::writeInt32(c, int32, 7) == UAPLEX_BadUserAccessDenied);
    CHECK(test::readOne(c, int32, 17).value.value.byte == 3);  // AccessLevel
    CHECK(test::readOne(c, int32, 18).value.value.byte == 1);  // UserAccessLevel: CurrentRead
    CHECK(test::readOne(c, counter).status == UAPLEX_BadNodeIdUnknown);  // hidden: no Browse

    ua::CallMethodRequest call{};
    call.objectId = ua::stringNodeId(d, "Demo");
    call.methodId = ua::stringNodeId(d, "Demo.Reset");
    ua::CallRequest cr{};
    cr.methodsToCall = {1, &call};
    auto m = c.call(cr);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    CHECK(static_cast<ua::CallResponse*>(m.object)->results[0].statusCode ==
          UAPLEX_BadUserAccessDenied);
    CHECK(test::readOne(c, call.methodId, 22).value.value.boolean == false);  // UserExecutable

    ua::BrowseDescription bd{};
    bd.nodeId = ua::stringNodeId(d, "Demo");
    bd.browseDirection = ua::BrowseDirection::Forward;
    bd.referenceTypeId = ua::numericNodeId(0, 33);
    bd.includeSubtypes = true;
    bd.resultMask = 63;
    ua::BrowseRequest br{};
    br.nodesToBrowse = {1, &bd};
    m = c.call(br);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& refs = static_cast<ua::BrowseResponse*>(m.object)->results[0].references;
    CHECK(refs.size() > 0);
    for (const auto& r : refs) CHECK(ua::view(r.browseName.name) != "Counter");

    ua::CreateSubscriptionRequest cs{};
    cs.requestedPublishingInterval = 100;
    cs.requestedLifetimeCount = 100;
    cs.requestedMaxKeepAliveCount = 3;
    cs.publishingEnabled = true;
    m = c.call(cs);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    std::uint32_t sid = static_cast<ua::CreateSubscriptionResponse*>(m.object)->subscriptionId;
    ua::MonitoredItemCreateRequest items[3]{};
    ua::NodeId nodes[3] = {int32, counter, ua::stringNodeId(d, "Demo")};
    std::uint32_t attributes[3] = {13, 13, 12};  // Value, Value, EventNotifier
    for (int i = 0; i < 3; ++i) {
        items[i].itemToMonitor.nodeId = nodes[i];
        items[i].itemToMonitor.attributeId = attributes[i];
        items[i].monitoringMode = ua::MonitoringMode::Reporting;
        items[i].requestedParameters.clientHandle = std::uint32_t(i + 1);
        items[i].requestedParameters.queueSize = 1;
    }
    ua::CreateMonitoredItemsRequest cmi{};
    cmi.subscriptionId = sid;
    cmi.timestampsToReturn = ua::TimestampsToReturn::Both;
    cmi.itemsToCreate = {3, items};
    m = c.call(cmi);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& results = static_cast<ua::CreateMonitoredItemsResponse*>(m.object)->results;
    REQUIRE(results.size() == 3);
    CHECK(results[0].statusCode == UAPLEX_Good);
    CHECK(results[0].monitoredItemId != 0);
    CHECK(results[1].statusCode == UAPLEX_BadNodeIdUnknown);     // hidden: no Browse
    CHECK(results[2].statusCode == UAPLEX_BadUserAccessDenied);  // events without ReceiveEvents
}

TEST_CASE("access: UserName logs in with the right password, a second activation changes user") {
    auto& s = accessServer();
    Client c;
    REQUIRE(c.open(s.port));
    {
        Client::UserName wrong("username", "operator", "op-secreT");
        CHECK(c.createSessionAs(&wrong.eo) == UAPLEX_BadUserAccessDenied);
        Client::UserName unknown("username", "nobody", "op-secret");
        CHECK(c.activateAs(unknown.eo) == UAPLEX_BadUserAccessDenied);
        Client::UserName badPolicy("anonymous", "operator", "op-secret");
        CHECK(c.activateAs(badPolicy.eo) == UAPLEX_BadIdentityTokenInvalid);
    }
    Client::UserName op("username", "operator", "op-secret");
    REQUIRE(c.activateAs(op.eo) == UAPLEX_Good);
    std::uint16_t d = test::demoNamespace(c);
    ua::NodeId int32 = ua::stringNodeId(d, "Demo.Scalars.Int32");
    CHECK(test::writeInt32(c, int32, 4242) == UAPLEX_Good);
    CHECK(test::readOne(c, int32).value.value.int32 == 4242);
    CHECK(test::readOne(c, int32, 18).value.value.byte == 3);
    CHECK(test::readOne(c, ua::stringNodeId(d, "Demo.Counter")).status == UAPLEX_Good);
    // Back to anonymous on the same session: the Operator's rights are gone.
    REQUIRE(c.activateSession() == UAPLEX_Good);
    CHECK(test::writeInt32(c, int32, 1) == UAPLEX_BadUserAccessDenied);
}

TEST_CASE("access: anonymous switched off is BadIdentityTokenRejected, UserName still works") {
    auto& s = noAnonymousServer();
    Client c;
    REQUIRE(c.open(s.port));
    CHECK(c.createSession() == UAPLEX_BadIdentityTokenRejected);
    Client::UserName op("username", "operator", "op-secret");
    CHECK(c.activateAs(op.eo) == UAPLEX_Good);
}

// A server with an application certificate (a secured policy next to None): on the None
// endpoint the UserName token policy names Basic256Sha256, so a password in clear is refused.
static ServerProcess& certifiedAccessServer() {
    // Next to the users file, so that it is removed with it.
    static std::filesystem::path pki = accessUsersFile().parent_path() / "pki";
    static ServerProcess s(
        "security = [{policy = \"None\"}, {policy = \"Basic256Sha256\", "
        "modes = [\"SignAndEncrypt\"]}]\npki_dir = \"" +
        pki.string() + "\"\n[access]\nusers_file = \"" + accessUsersFile().string() + "\"\n");
    return s;
}

TEST_CASE(
    "access: a password in clear is BadIdentityTokenInvalid once the server has a certificate") {
    auto& s = certifiedAccessServer();
    Client c;
    REQUIRE(c.open(s.port));
    ua::GetEndpointsRequest ge{};
    ge.endpointUrl = ua::makeString(c.url());
    auto m = c.call(ge);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    bool sawNone = false;
    for (const auto& e : static_cast<ua::GetEndpointsResponse*>(m.object)->endpoints) {
        if (ua::view(e.securityPolicyUri) != "http://opcfoundation.org/UA/SecurityPolicy#None")
            continue;
        sawNone = true;
        REQUIRE(e.userIdentityTokens.size() == 2);
        CHECK(ua::view(e.userIdentityTokens[1].securityPolicyUri) ==
              "http://opcfoundation.org/UA/SecurityPolicy#Basic256Sha256");
    }
    CHECK(sawNone);
    Client::UserName clear("username", "operator", "op-secret");
    CHECK(c.createSessionAs(&clear.eo) == UAPLEX_BadIdentityTokenInvalid);
    // The session itself is fine: an anonymous activation goes through.
    CHECK(c.activateSession() == UAPLEX_Good);
}

TEST_CASE("access: a user added with `uaplex users` logs in after SIGHUP") {
    auto& s = accessServer();
    std::string add = std::string(UAPLEX_EXE) + " users add late --roles Observer " +
                      "--iterations 1000 --file " + accessUsersFile().string() +
                      " >/dev/null <<< 'late-secret'";
    REQUIRE(std::system(("bash -c \"" + add + "\"").c_str()) == 0);
    Client c;
    REQUIRE(c.open(s.port));
    Client::UserName late("username", "late", "late-secret");
    CHECK(c.createSessionAs(&late.eo) == UAPLEX_BadUserAccessDenied);  // not read yet
    ::kill(s.pid, SIGHUP);
    uaplex_status st = UAPLEX_BadUserAccessDenied;
    for (int i = 0; i < 50 && st != UAPLEX_Good; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        st = c.activateAs(late.eo);
    }
    CHECK(st == UAPLEX_Good);
    // An Observer reads but does not write.
    std::uint16_t d = test::demoNamespace(c);
    CHECK(test::writeInt32(c, ua::stringNodeId(d, "Demo.Scalars.Int32"), 1) ==
          UAPLEX_BadUserAccessDenied);
}
