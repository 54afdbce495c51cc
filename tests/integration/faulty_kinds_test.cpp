// SPDX-License-Identifier: Apache-2.0
// An admission provider and a buffer pool that misbehave on purpose (plugins/
// faulty_admission.c, plugins/faulty_pool.c) in the real executable. Admission garbage is a
// refusal of that connection or request, never an admission; pool garbage (Good without
// bytes, fewer bytes than asked for, a reserved status) fails that one message or channel.
// Either way the server stays up and another client is served.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

bool isBad(uaplex_status st) {
    return (st & 0xC0000000u) == 0x80000000u;
}

std::string head(std::uint16_t port) {
    return test::configHead(port, "error") +
           "[access]\nanonymous_permissions = [\"All\"]\n"
           "[slots]\nrequest_queue = \"fifo\"\n"
           "[plugins.fifo]\n[plugins.transport-tcp]\n";
}

// One server per configuration, started on first use and kept for the run.
test::ServerProcess& serverWith(const std::string& tag, const std::string& slot,
                                const std::string& plugin, const std::string& library,
                                const std::string& keys) {
    static std::map<std::string, std::unique_ptr<test::ServerProcess>> servers;
    auto& s = servers[tag];
    if (!s)
        s = std::make_unique<test::ServerProcess>(
            tag, [=](std::uint16_t port, const std::filesystem::path&) {
                std::string toml = head(port);
                // [slots] is already open: the slot key goes right after request_queue.
                toml.insert(toml.find("[plugins.fifo]"), slot + " = \"" + plugin + "\"\n");
                return toml + "[plugins." + plugin + "]\nlibrary = \"" + library + "\"\n" + keys;
            });
    return *s;
}

test::ServerProcess& admission(const std::string& tag, const std::string& keys) {
    return serverWith("faulty-admission-" + tag, "admission", "test-faulty-admission",
                      UAPLEX_FAULTY_ADMISSION_PLUGIN, "fault_peer = \"127.0.0.2:\"\n" + keys);
}

test::ServerProcess& pool(const std::string& fault) {
    return serverWith("faulty-pool-" + fault, "buffer_pool", "test-faulty-pool",
                      UAPLEX_FAULTY_POOL_PLUGIN,
                      "fault = \"" + fault + "\"\nfault_at_least = 8000\n");
}

// A connection from 127.0.0.2, the peer the faulty provider answers with garbage.
bool openFromFaultyPeer(Client& c, std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = inet_addr("127.0.0.2");
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return false;
    }
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return false;
    }
    c.adopt(fd);
    return c.openOnConnected("opc.tcp://127.0.0.1:" + std::to_string(port));
}

// A Read of `n` server states: its request and response both grow with n.
uaplex_status readMany(Client& c, std::size_t n) {
    std::vector<ua::ReadValueId> ids(n);
    auto read = test::readServerState(ids);
    read.timestampsToReturn = ua::TimestampsToReturn::Both;
    auto m = c.call(read);
    if (Client::result(m) != UAPLEX_Good) return Client::result(m);
    const auto& results = static_cast<ua::ReadResponse*>(m.object)->results;
    if (results.size() != n) return UAPLEX_BadUnexpectedError;
    for (const auto& r : results)
        if (r.status != UAPLEX_Good) return r.status;
    return UAPLEX_Good;
}

void othersServed(test::ServerProcess& s) {
    REQUIRE(s.alive());
    test::legitimateClientServed(s.port);
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    CHECK(readMany(c, 2000) == UAPLEX_Good);  // the healthy peer's large messages pass
    REQUIRE(s.alive());
}

}  // namespace

TEST_CASE("faulty admission: a reserved status from classify refuses the connection") {
    auto& s = admission("classify", "fault = \"reserved-classify\"\n");
    Client victim;
    CHECK_FALSE(openFromFaultyPeer(victim, s.port));
    othersServed(s);
}

TEST_CASE("faulty admission: Good without an owner refuses the connection") {
    auto& s = admission("null-owner", "fault = \"null-owner\"\n");
    Client victim;
    CHECK_FALSE(openFromFaultyPeer(victim, s.port));
    othersServed(s);
}

TEST_CASE("faulty admission: a reserved status from try_acquire refuses the connection") {
    auto& s = admission("acquire", "fault = \"acquire-status\"\n");
    Client victim;
    CHECK_FALSE(openFromFaultyPeer(victim, s.port));
    othersServed(s);
}

TEST_CASE("faulty admission: a Good-severity code other than Good is no grant either") {
    // GoodClamped: a success code, but not the Good a grant is.
    auto& s = admission("good-clamped", "fault = \"acquire-status\"\nacquire_status = 0x300000\n");
    Client victim;
    CHECK_FALSE(openFromFaultyPeer(victim, s.port));
    othersServed(s);
}

TEST_CASE("faulty admission: garbage at SessionEstablishment refuses CreateSession") {
    auto& s = admission("establishment", "fault = \"acquire-status\"\nacquire_stage = 3\n");
    Client victim;
    REQUIRE(openFromFaultyPeer(victim, s.port));
    uaplex_status st = victim.createSession();
    CHECK(isBad(st));
    othersServed(s);
}

TEST_CASE("faulty admission: garbage at ReassemblyBytes refuses the multi-chunk request") {
    auto& s = admission("reassembly", "fault = \"acquire-status\"\nacquire_stage = 2\n");
    Client victim;
    REQUIRE(openFromFaultyPeer(victim, s.port));
    REQUIRE(victim.createSession() == UAPLEX_Good);
    CHECK(readMany(victim, 1) == UAPLEX_Good);  // a single chunk is not charged
    CHECK(isBad(readMany(victim, 2000)));       // 36 kB in 8 kB chunks
    othersServed(s);
}

TEST_CASE("faulty buffer pool: each kind of garbage fails one channel, the server serves on") {
    for (const char* fault : {"null", "short", "reserved"}) {
        INFO(fault);
        auto& s = pool(fault);
        {
            // A small request with a large response: the kernel's rents for it get garbage.
            Client victim;
            REQUIRE(victim.open(s.port));
            REQUIRE(victim.createSession() == UAPLEX_Good);
            CHECK(readMany(victim, 1) == UAPLEX_Good);
            CHECK(isBad(readMany(victim, 400)));
        }
        {
            // A request in 8 kB chunks: the transport's receive rents get garbage.
            Client victim;
            REQUIRE(victim.open(s.port));
            REQUIRE(victim.createSession() == UAPLEX_Good);
            CHECK(isBad(readMany(victim, 2000)));
        }
        REQUIRE(s.alive());
        test::legitimateClientServed(s.port);
        REQUIRE(s.alive());
    }
}
