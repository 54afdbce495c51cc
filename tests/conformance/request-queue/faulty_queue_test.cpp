// SPDX-License-Identifier: Apache-2.0
// Misbehaving request queues (faulty_queue.cpp): in the real server a refusal that is no Bad
// status and an exception are answered BadInternalError, a dequeue that never waits does not
// make the workers spin, and the server serves its clients throughout; broken ops tables are
// refused at load with one line.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

test::ServerProcess startServer(const std::string& fault) {
    return test::ServerProcess(
        "faultyq", [fault](std::uint16_t port, const std::filesystem::path&) {
            return test::configHead(port, "error") +
                   "request_threads = 2\n"
                   "[slots]\nrequest_queue = \"test-faulty-queue\"\n"
                   "[plugins.transport-tcp]\n"
                   "[plugins.test-faulty-queue]\nlibrary = \"" UAPLEX_FAULTY_QUEUE
                   "\"\n"
                   "fault = \"" +
                   fault + "\"\n";
        });
}

// The Value of Server_ServerStatus_State: the status of the Read.
uaplex_status readState(Client& c) {
    ua::ReadValueId id{};
    id.nodeId = ua::numericNodeId(0, 2259);
    id.attributeId = 13;
    ua::ReadRequest r{};
    r.nodesToRead = {1, &id};
    return Client::result(c.call(r));
}

// utime + stime of a process, in clock ticks.
long cpuTicks(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    std::string field;
    long utime = 0, stime = 0;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14) utime = std::stol(field);
        if (i == 15) stime = std::stol(field);
    }
    return utime + stime;
}

std::string startupError(const std::string& table) {
    try {
        auto cfg =
            config::parseString("[host]\nplugin_dirs = [\"" UAPLEX_FAULTY_QUEUE_DIR "/" + table +
                                    "\"]\n[slots]\nrequest_queue = "
                                    "\"test-faulty-queue-" +
                                    table + "\"\n[plugins.test-faulty-queue-" + table + "]\n",
                                "test.toml", {});
        host::Host h;
        h.load(cfg);
        h.start();
        return "";
    } catch (const std::exception& e) {
        return e.what();
    }
}

}  // namespace

TEST_CASE("a refusal that is no Bad status, or an exception, is answered BadInternalError") {
    for (const char* fault : {"garbage_status", "throw"}) {
        INFO(fault);
        test::ServerProcess s = startServer(fault);
        Client c;
        REQUIRE(c.open(s.port));
        REQUIRE(c.createSession() == UAPLEX_Good);
        int good = 0, internal = 0;
        for (int i = 0; i < 6; ++i) {
            uaplex_status st = readState(c);
            CHECK((st == UAPLEX_Good || st == UAPLEX_BadInternalError));
            good += st == UAPLEX_Good;
            internal += st == UAPLEX_BadInternalError;
        }
        CHECK(good == 3);
        CHECK(internal == 3);
        CHECK(s.alive());
        test::legitimateClientServed(s.port);
    }
}

TEST_CASE("a dequeue that returns at once without a request does not spin the workers") {
    test::ServerProcess s = startServer("spin");
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    CHECK(readState(c) == UAPLEX_Good);
    // Two workers spinning would burn two seconds of CPU in one second; backing off, they
    // take a small fraction of one tick budget (the bound is far from both).
    long ticksPerSecond = ::sysconf(_SC_CLK_TCK);
    long before = cpuTicks(s.pid);
    std::this_thread::sleep_for(std::chrono::seconds(1));
    long used = cpuTicks(s.pid) - before;
    INFO("server CPU in an idle second: " << used << " of " << ticksPerSecond << " ticks");
    CHECK(used < ticksPerSecond / 4);
    CHECK(readState(c) == UAPLEX_Good);
    test::legitimateClientServed(s.port);
}

TEST_CASE("a broken request-queue ops table is refused at load with one line") {
    std::string huge = startupError("huge");
    CHECK(huge ==
          "plugin 'test-faulty-queue-huge': request_queue ops table has struct_size "
          "1048576 (at least 88)");
    std::string null = startupError("null");
    CHECK(null ==
          "plugin 'test-faulty-queue-null': request_queue ops table lacks a required entry "
          "(offset 32)");
    std::string older = startupError("older");
    CHECK_THAT(older, Catch::Contains("request_queue ops table has struct_size"));
    CHECK_THAT(older, Catch::Contains("larger than its ABI 1.4 table"));
}
