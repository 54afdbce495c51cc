// SPDX-License-Identifier: Apache-2.0
// `uaplex ctl` against the running executable: status, sessions and close-session as a
// client works, the request-queue swap and the log level without editing the file, reload,
// and the control socket's defences (its modes, long, silent and binary lines, a second
// server on the same path, a stale socket file).
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
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

std::string tomlOf(std::uint16_t port, const std::filesystem::path& dir,
                   std::string_view extra = "") {
    return test::configHead(port, "info") + "[control]\nenabled = true\nsocket = \"" +
           (dir / "run" / "ctl.sock").string() + "\"\ntimeout_ms = 500\nmax_request_bytes = 256\n" +
           std::string(extra) +
           "[slots]\nrequest_queue = \"fair\"\n[plugins.fair]\n[plugins.transport-tcp]\n";
}

// The control socket starts once the server serves (after the endpoint a ServerProcess waits
// for): up to 5 s for it to answer.
bool socketReady(const std::filesystem::path& socket) {
    for (int i = 0; i < 100; ++i) {
        int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, socket.c_str(), sizeof a.sun_path - 1);
        bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        if (ok) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

struct Ctl {
    int rc = -1;
    std::string out, err;
};

// `uaplex ctl --config <dir>/test.toml <args>`.
Ctl ctl(const test::ServerProcess& server, const std::string& args) {
    auto outFile = server.dir / "ctl.out", errFile = server.dir / "ctl.err";
    std::string cmd = std::string(UAPLEX_EXE) + " ctl --config '" +
                      (server.dir / "test.toml").string() + "' " + args + " >'" + outFile.string() +
                      "' 2>'" + errFile.string() + "'";
    Ctl r;
    int st = std::system(cmd.c_str());
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    auto slurp = [](const std::filesystem::path& p) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    };
    r.out = slurp(outFile);
    r.err = slurp(errFile);
    return r;
}

std::vector<std::vector<std::string>> rows(const std::string& text) {
    std::vector<std::vector<std::string>> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        std::vector<std::string> cols;
        std::istringstream l(line);
        std::string c;
        while (std::getline(l, c, '\t')) cols.push_back(c);
        out.push_back(cols);
    }
    return out;
}

std::string valueOf(const std::string& status, const std::string& key) {
    std::istringstream in(status);
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(key + ": ", 0) == 0) return line.substr(key.size() + 2);
    return "<none>";
}

// A raw connection to the control socket; what the server answers before it closes.
std::string raw(const std::filesystem::path& socket, const std::string& bytes,
                bool closeWrite = true) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return "<no connection>";
    }
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (!bytes.empty()) (void)!::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (closeWrite) ::shutdown(fd, SHUT_WR);
    std::string answer;
    char buf[1024];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        answer.append(buf, size_t(n));
    }
    ::close(fd);
    return answer;
}

}  // namespace

TEST_CASE("ctl: status, sessions and close-session follow a client's work") {
    test::ServerProcess server("ctl", [](std::uint16_t port, const std::filesystem::path& dir) {
        return tomlOf(port, dir);
    });
    REQUIRE(server.alive());
    REQUIRE(socketReady(server.dir / "run" / "ctl.sock"));

    auto idle = ctl(server, "status");
    REQUIRE(idle.rc == 0);
    CHECK(valueOf(idle.out, "pid") == std::to_string(server.pid));
    CHECK(valueOf(idle.out, "endpoint") == "opc.tcp://127.0.0.1:" + std::to_string(server.port));
    CHECK(valueOf(idle.out, "request_queue") == "fair");
    CHECK(valueOf(idle.out, "sessions") == "0");
    CHECK(valueOf(idle.out, "configuration") == (server.dir / "test.toml").string());
    CHECK(idle.out.find("plugin: fair 1.0.0 request_queue") != std::string::npos);

    Client c;
    REQUIRE(c.open(server.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    const std::uint32_t sub = test::createSubscription(c);
    std::vector<ua::MonitoredItemCreateRequest> items(3);
    for (std::uint32_t i = 0; i < items.size(); ++i) {
        auto& it = items[i];
        it.itemToMonitor.nodeId = ua::numericNodeId(0, 2259);
        it.itemToMonitor.attributeId = 13;
        it.monitoringMode = ua::MonitoringMode::Reporting;
        it.requestedParameters.clientHandle = i;
        it.requestedParameters.samplingInterval = 1000;
        it.requestedParameters.queueSize = 1;
    }
    ua::CreateMonitoredItemsRequest create{};
    create.subscriptionId = sub;
    create.timestampsToReturn = ua::TimestampsToReturn::Both;
    create.itemsToCreate = {std::int32_t(items.size()), items.data()};
    REQUIRE(Client::result(c.call(create)) == UAPLEX_Good);
    Client other;
    REQUIRE(other.open(server.port));
    REQUIRE(other.createSession() == UAPLEX_Good);

    auto busy = ctl(server, "status");
    REQUIRE(busy.rc == 0);
    CHECK(valueOf(busy.out, "sessions") == "2");
    CHECK(valueOf(busy.out, "subscriptions") == "1");
    CHECK(valueOf(busy.out, "monitored_items") == "3");
    CHECK(std::stoi(valueOf(busy.out, "connections")) >= 2);

    auto list = ctl(server, "sessions");
    REQUIRE(list.rc == 0);
    auto table = rows(list.out);
    REQUIRE(table.size() == 3);  // the header and two sessions, oldest first
    CHECK(table[0][0] == "session_id");
    // c's row by its channel; the other row is the second client's.
    const std::size_t mine =
        table[1].size() > 6 && table[1][6] == std::to_string(c.channelId()) ? 1 : 2;
    const std::size_t theirs = 3 - mine;
    REQUIRE(table[mine].size() == 10);
    CHECK(table[mine][0].rfind("ns=1;g=", 0) == 0);
    CHECK(table[mine][1] == "integration");
    CHECK(table[mine][3] == "anonymous");
    CHECK(table[mine][4] == "127.0.0.1");
    CHECK(table[mine][5].size() == 20);  // 2026-12-03T06:00:00Z
    CHECK(table[mine][6] == std::to_string(c.channelId()));
    CHECK(table[mine][7] == "yes");
    CHECK(table[mine][8] == "1");
    CHECK(table[mine][9] == "3");
    CHECK(table[theirs][8] == "0");
    CHECK(table[mine][0] != table[theirs][0]);

    // The first client's session goes, with its subscription; the other one is still served.
    auto closed = ctl(server, "close-session '" + table[mine][0] + "'");
    CHECK(closed.rc == 0);
    std::vector<ua::ReadValueId> ids(1);
    auto read = test::readServerState(ids);
    CHECK(Client::result(c.call(read)) == UAPLEX_BadSessionIdInvalid);
    auto read2 = test::readServerState(ids);
    CHECK(Client::result(other.call(read2)) == UAPLEX_Good);
    auto after = ctl(server, "status");
    CHECK(valueOf(after.out, "sessions") == "1");
    CHECK(valueOf(after.out, "subscriptions") == "0");
    CHECK(rows(ctl(server, "sessions").out).size() == 2);

    auto again = ctl(server, "close-session '" + table[mine][0] + "'");
    CHECK(again.rc == 1);
    CHECK_THAT(again.err, Catch::Contains("no session"));
}

TEST_CASE("ctl: swap request_queue and log-level until the next reload") {
    test::ServerProcess server("ctl", [](std::uint16_t port, const std::filesystem::path& dir) {
        return tomlOf(port, dir);
    });
    REQUIRE(server.alive());
    REQUIRE(socketReady(server.dir / "run" / "ctl.sock"));
    Client c;
    REQUIRE(c.open(server.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::vector<ua::ReadValueId> ids(1);

    // fifo has no [plugins.fifo] table: it runs with its defaults.
    auto swap = ctl(server, "swap request_queue fifo");
    CHECK(swap.rc == 0);
    CHECK(swap.out == "request_queue: fair -> fifo\n");
    CHECK(valueOf(ctl(server, "status").out, "request_queue") == "fifo");
    auto read = test::readServerState(ids);
    CHECK(Client::result(c.call(read)) == UAPLEX_Good);

    auto bad = ctl(server, "swap request_queue nosuch");
    CHECK(bad.rc == 1);
    CHECK_THAT(bad.err, Catch::Contains("nosuch"));
    auto notQueue = ctl(server, "swap request_queue transport-tcp");
    CHECK(notQueue.rc == 1);
    CHECK(valueOf(ctl(server, "status").out, "request_queue") == "fifo");

    CHECK(ctl(server, "log-level debug").rc == 0);
    CHECK(valueOf(ctl(server, "status").out, "log_level") == "debug");
    auto badLevel = ctl(server, "log-level loud");
    CHECK(badLevel.rc == 1);
    CHECK_THAT(badLevel.err, Catch::Contains("one of trace, debug"));

    // reload applies the file again: fair and info.
    auto reload = ctl(server, "reload");
    CHECK(reload.rc == 0);
    CHECK(reload.out == "configuration reloaded\n");
    auto st = ctl(server, "status");
    CHECK(valueOf(st.out, "request_queue") == "fair");
    CHECK(valueOf(st.out, "log_level") == "info");
    auto read2 = test::readServerState(ids);
    CHECK(Client::result(c.call(read2)) == UAPLEX_Good);

    // A file that no longer parses: the reload is refused and says why.
    std::ofstream(server.dir / "test.toml", std::ios::app) << "[slots\n";
    auto broken =
        ctl(server, "--socket '" + (server.dir / "run" / "ctl.sock").string() + "' reload");
    CHECK(broken.rc == 1);
    CHECK_THAT(broken.err, Catch::Contains("keeping the running configuration"));

    auto unknown =
        ctl(server, "--socket '" + (server.dir / "run" / "ctl.sock").string() + "' frobnicate");
    CHECK(unknown.rc == 1);
    CHECK_THAT(unknown.err, Catch::Contains("unknown command 'frobnicate'"));
    CHECK(server.alive());
}

TEST_CASE("ctl: the socket is the server user's, bad lines are refused, the server serves on") {
    {
        test::ServerProcess server("ctl", [](std::uint16_t port, const std::filesystem::path& dir) {
            return tomlOf(port, dir);
        });
        REQUIRE(server.alive());
        const auto socket = server.dir / "run" / "ctl.sock";
        REQUIRE(socketReady(socket));
        struct stat st {};
        REQUIRE(::stat(socket.c_str(), &st) == 0);
        CHECK(S_ISSOCK(st.st_mode));
        CHECK((st.st_mode & 0777) == 0600);
        REQUIRE(::stat(socket.parent_path().c_str(), &st) == 0);
        CHECK((st.st_mode & 0777) == 0700);

        CHECK(raw(socket, std::string(300, 'a') + "\n").rfind("ERR ", 0) == 0);  // > 256 bytes
        CHECK(raw(socket, std::string(100000, 'a'), false).rfind("ERR ", 0) == 0);
        CHECK(raw(socket, std::string("status\x01\n")) ==
              "ERR the command line holds control characters\n");
        CHECK(raw(socket, "\n").rfind("ERR no command", 0) == 0);
        // Silent: closed after timeout_ms (500 ms) without an answer; then served again.
        auto t0 = std::chrono::steady_clock::now();
        CHECK(raw(socket, "", false).empty());
        CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(4));
        CHECK(raw(socket, "help\n").rfind("OK\ncommands:", 0) == 0);
        CHECK(ctl(server, "status").rc == 0);

        // A second server on the same socket path does not start, and says why.
        test::ServerProcess second(
            "ctl2",
            [&](std::uint16_t port, const std::filesystem::path&) {
                return tomlOf(port, server.dir);
            },
            {}, 20);
        int status = 0;
        CHECK(::waitpid(second.pid, &status, 0) == second.pid);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 1);
        second.pid = -1;
        CHECK(ctl(server, "status").rc == 0);  // the first one's socket is still its own

        // kill -9 leaves the socket file; the next start replaces it.
        ::kill(server.pid, SIGKILL);
        ::waitpid(server.pid, &status, 0);
        server.pid = -1;
        CHECK(std::filesystem::exists(socket));
        test::ServerProcess next("ctl3", [&](std::uint16_t port, const std::filesystem::path&) {
            return tomlOf(port, server.dir);
        });
        REQUIRE(next.alive());
        REQUIRE(socketReady(socket));
        CHECK(raw(socket, "status\n").rfind("OK\n", 0) == 0);

        // A clean stop removes the socket file (its directory stays).
        ::kill(next.pid, SIGTERM);
        ::waitpid(next.pid, &status, 0);
        next.pid = -1;
        CHECK(std::filesystem::exists(socket.parent_path()));
        CHECK_FALSE(std::filesystem::exists(socket));
    }
}
