// SPDX-License-Identifier: Apache-2.0
// [persistence] end to end (docs/configuration.md "State across restarts"): the real
// executable with the demo node manager, some of its variables persistent. A Write answered
// Good is there after kill -9 and a restart on the same database; a variable that is not
// persistent is back at its initial value; a storm of writes killed at a random moment comes
// back with the last value answered Good or a later one; a value over max_value_bytes is
// refused and not applied; a corrupt database, or one another server holds, stops the
// server at start.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;
namespace fs = std::filesystem;

namespace {

const char* const kInt32 = "Demo.Scalars.Int32";    // persistent
const char* const kString = "Demo.Scalars.String";  // persistent
const char* const kDouble = "Demo.Scalars.Double";  // not persistent

// A directory of the test (the database and the server's log), removed at the end.
struct Scratch {
    explicit Scratch(const std::string& tag)
        : dir(fs::temp_directory_path() /
              ("uaplex-persist-" + tag + "-" + std::to_string(::getpid()))) {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    fs::path db() const { return dir / "values.db"; }
    fs::path log() const { return dir / "server.log"; }
    fs::path dir;
};

std::string readFile(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The server on `scratch`'s database; its stderr (the log) appended to scratch.log().
// `extra` goes into [persistence], `demo` into [plugins.demo]; `inChild` runs before exec.
std::unique_ptr<test::ServerProcess> start(const Scratch& scratch, const std::string& extra = "",
                                           int attempts = 100, const std::string& demo = "",
                                           const std::function<void()>& inChild = {}) {
    const std::string log = scratch.log().string();
    return std::make_unique<test::ServerProcess>(
        "persist",
        [&](std::uint16_t port, const fs::path&) {
            std::ostringstream s;
            s << test::configHead(port, "info") << "[slots]\nrequest_queue = \"fifo\"\n"
              << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.demo]\n"
              << demo << "[access]\nanonymous_permissions = [\"All\"]\n"
              << "[persistence]\nfile = \"" << scratch.db().string() << "\"\n"
              << "nodes = [\"nsu=urn:uaplex:demo;s=" << kInt32
              << "\", \"nsu=urn:uaplex:demo;s=" << kString << "\"]\n"
              << extra;
            return s.str();
        },
        [log, inChild] {
            int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
            if (fd >= 0) ::dup2(fd, 2);
            if (inChild) inChild();
        },
        attempts);
}

void killHard(test::ServerProcess& s) {
    ::kill(s.pid, SIGKILL);
    int status = 0;
    ::waitpid(s.pid, &status, 0);
    s.pid = -1;
}

// One Write of the Value; the operation's status (the service's when it failed, or
// BadConnectionClosed). No REQUIRE: the storm's thread calls it.
uaplex_status writeValue(Client& c, const ua::NodeId& node, const ua::Variant& v,
                         std::uint32_t handle = 1) {
    ua::WriteValue wv{};
    wv.nodeId = node;
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask = UAPLEX_DATAVALUE_VALUE;
    wv.value.value = v;
    ua::WriteRequest w{};
    w.nodesToWrite = {1, &wv};
    auto m = c.call(w, handle);
    if (uaplex_status st = Client::result(m); st != UAPLEX_Good) return st;
    const auto& r = *static_cast<ua::WriteResponse*>(m.object);
    return r.results.size() == 1 ? r.results[0] : UAPLEX_BadUnexpectedError;
}

struct Seen {
    uaplex_status status = UAPLEX_Good;
    std::int32_t int32 = 0;
    double number = 0;
    std::string text;
    ua::DateTime source = 0;
};

Seen readValue(Client& c, const ua::NodeId& node) {
    ua::DataValue dv = test::readOne(c, node);
    Seen s;
    s.status = (dv.mask & UAPLEX_DATAVALUE_STATUS) ? dv.status : UAPLEX_Good;
    s.source = (dv.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) ? dv.source_timestamp : 0;
    switch (dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) {
        case UAPLEX_TYPE_INT32:
            s.int32 = dv.value.value.int32;
            break;
        case UAPLEX_TYPE_DOUBLE:
            s.number = dv.value.value.double_;
            break;
        case UAPLEX_TYPE_STRING:
            if (dv.value.value.string.length > 0)
                s.text.assign(dv.value.value.string.data,
                              std::size_t(dv.value.value.string.length));
            break;
        default:
            break;
    }
    return s;
}

struct Session {
    explicit Session(std::uint16_t port) {
        REQUIRE(c.open(port));
        REQUIRE(c.createSession() == UAPLEX_Good);
        ns = test::demoNamespace(c);
    }
    ua::NodeId node(const char* id) const { return ua::stringNodeId(ns, id); }
    Client c;
    std::uint16_t ns = 0;
};

}  // namespace

TEST_CASE("a write answered Good survives kill -9, a volatile one does not") {
    Scratch scratch("survive");
    double initialDouble = 0;
    ua::DateTime written = 0;
    {
        auto s = start(scratch);
        Session a(s->port);
        initialDouble = readValue(a.c, a.node(kDouble)).number;
        REQUIRE(writeValue(a.c, a.node(kInt32), ua::variantInt32(424242)) == UAPLEX_Good);
        REQUIRE(writeValue(a.c, a.node(kString), ua::variantString("kept")) == UAPLEX_Good);
        REQUIRE(writeValue(a.c, a.node(kDouble), ua::variantDouble(initialDouble + 17.5)) ==
                UAPLEX_Good);
        Seen now = readValue(a.c, a.node(kInt32));
        CHECK(now.int32 == 424242);
        written = now.source;
        CHECK(readValue(a.c, a.node(kDouble)).number == initialDouble + 17.5);
        killHard(*s);  // at once after the answer
    }
    auto s = start(scratch);
    Session b(s->port);
    Seen v = readValue(b.c, b.node(kInt32));
    CHECK(v.status == UAPLEX_Good);
    CHECK(v.int32 == 424242);
    CHECK(v.source == written);  // the source timestamp comes back with the value
    CHECK(readValue(b.c, b.node(kString)).text == "kept");
    CHECK(readValue(b.c, b.node(kDouble)).number == initialDouble);  // volatile
    std::string log = readFile(scratch.log());
    INFO(log);
    CHECK_THAT(log, Catch::Contains("persistence: 2 value(s) restored, 0 row(s) skipped"));
}

TEST_CASE("a value over max_value_bytes is refused and not applied") {
    Scratch scratch("limit");
    {
        auto s = start(scratch, "max_value_bytes = 64\n");
        Session a(s->port);
        REQUIRE(writeValue(a.c, a.node(kString), ua::variantString("short")) == UAPLEX_Good);
        const std::string big(200, 'x');
        CHECK(writeValue(a.c, a.node(kString), ua::variantString(big)) ==
              UAPLEX_BadEncodingLimitsExceeded);
        CHECK(readValue(a.c, a.node(kString)).text == "short");
        killHard(*s);
    }
    auto s = start(scratch, "max_value_bytes = 64\n");
    Session b(s->port);
    CHECK(readValue(b.c, b.node(kString)).text == "short");
}

TEST_CASE("a write storm killed at a random moment keeps the last Good") {
    Scratch scratch("storm");
    std::minstd_rand pick(std::uint32_t(::getpid()) ^ std::uint32_t(::time(nullptr)));
    // Two clients, each writing its own node one write at a time (so that the order of its
    // writes is the order of their commits); together their writes commit in groups.
    struct Storm {
        const char* node;
        std::atomic<std::int32_t> lastGood{-1}, lastSent{-1};
        std::int32_t floor = 0;  // each round writes values above the previous round's
    };
    Storm storms[2];
    storms[0].node = kInt32;
    storms[1].node = kString;
    auto seen = [](const Storm& st, const Seen& v) {
        if (st.node == kInt32) return v.int32;
        INFO("String value: " << v.text);
        REQUIRE(!v.text.empty());
        REQUIRE(v.text.find_first_not_of("0123456789") == std::string::npos);
        return std::stoi(v.text);
    };
    for (int round = 0; round < 4; ++round) {
        const std::string extra = round % 2 ? "synchronous = \"normal\"\n" : "";
        {
            auto s = start(scratch, extra);
            std::atomic<bool> done{false};
            std::vector<std::thread> writers;
            for (Storm& st : storms) {
                st.lastGood = -1;
                st.lastSent = -1;
                writers.emplace_back([&, port = s->port] {
                    Client c;
                    if (!c.open(port) || c.createSession() != UAPLEX_Good) return;
                    const ua::NodeId id = ua::stringNodeId(test::demoNamespace(c), st.node);
                    for (std::int32_t v = st.floor + 1; !done.load(); ++v) {
                        st.lastSent.store(v);
                        const std::string text = std::to_string(v);  // outlives the call
                        ua::Variant value =
                            st.node == kInt32 ? ua::variantInt32(v) : ua::variantString(text);
                        if (writeValue(c, id, value) != UAPLEX_Good) break;
                        st.lastGood.store(v);
                    }
                });
            }
            // Once both storms run (a loaded machine may take a while to get there), the kill
            // falls at a random moment.
            for (int i = 0; i < 1000; ++i) {
                if (storms[0].lastGood.load() > storms[0].floor &&
                    storms[1].lastGood.load() > storms[1].floor)
                    break;
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50 + pick() % 400));
            killHard(*s);
            done.store(true);
            for (auto& w : writers) w.join();
        }
        auto s = start(scratch, extra);
        Session b(s->port);
        const std::string log = readFile(scratch.log());
        INFO(log.substr(log.size() > 3000 ? log.size() - 3000 : 0));
        for (Storm& st : storms) {
            INFO("round " << round << " " << st.node << ": last Good " << st.lastGood.load()
                          << ", last sent " << st.lastSent.load());
            REQUIRE(st.lastGood.load() > st.floor);  // the storm ran
            std::int32_t v = seen(st, readValue(b.c, b.node(st.node)));
            CHECK(v >= st.lastGood.load());
            CHECK(v <= st.lastSent.load());
            st.floor = std::max(st.lastSent.load(), v) + 1;
        }
        killHard(*s);
    }
}

TEST_CASE("a corrupt database stops the server at start with a clear message") {
    Scratch scratch("corrupt");
    { std::ofstream(scratch.db()) << std::string(8192, 'z'); }
    auto s = start(scratch, "", 20);
    for (int i = 0; i < 100 && s->alive(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(s->alive());
    s->pid = -1;  // reaped by alive()
    std::string log = readFile(scratch.log());
    INFO(log);
    CHECK_THAT(log, Catch::Contains("persistence: " + scratch.db().string()) &&
                        Catch::Contains("the server does not start without its persisted values"));
}

TEST_CASE("a second server on the same database does not start") {
    Scratch scratch("locked");
    auto first = start(scratch);
    Session a(first->port);
    REQUIRE(writeValue(a.c, a.node(kInt32), ua::variantInt32(77)) == UAPLEX_Good);
    auto second = start(scratch, "", 20);
    for (int i = 0; i < 100 && second->alive(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK_FALSE(second->alive());
    second->pid = -1;
    std::string log = readFile(scratch.log());
    INFO(log);
    CHECK_THAT(log, Catch::Contains("in use by another process"));
    CHECK(readValue(a.c, a.node(kInt32)).int32 == 77);  // the first one goes on
}

TEST_CASE("a row whose DataType no longer matches is logged, skipped and kept") {
    Scratch scratch("mismatch");
    {
        auto s = start(scratch);
        Session a(s->port);
        REQUIRE(writeValue(a.c, a.node(kInt32), ua::variantInt32(5)) == UAPLEX_Good);
        REQUIRE(writeValue(a.c, a.node(kString), ua::variantString("text")) == UAPLEX_Good);
        killHard(*s);
    }
    // The String row's value under the Int32 node (a node whose DataType changed).
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(scratch.db().c_str(), &db) == SQLITE_OK);
    const std::string sql =
        "UPDATE persisted_values SET value = (SELECT value FROM persisted_values WHERE "
        "length(value) = (SELECT max(length(value)) FROM persisted_values)) WHERE "
        "length(value) = (SELECT min(length(value)) FROM persisted_values)";
    CHECK(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
    CHECK(sqlite3_changes(db) == 1);
    sqlite3_close(db);
    auto s = start(scratch);
    Session b(s->port);
    CHECK(readValue(b.c, b.node(kInt32)).int32 != 5);  // the demo's initial value
    CHECK(readValue(b.c, b.node(kString)).text == "text");
    std::string log = readFile(scratch.log());
    INFO(log);
    CHECK_THAT(log, Catch::Contains("does not match the node's DataType or ValueRank: skipped"));
    CHECK_THAT(log, Catch::Contains("1 value(s) restored, 1 row(s) skipped"));
}

TEST_CASE("values a node manager sets are persisted after the fact") {
    Scratch scratch("value-set");
    // Demo.Counter counts up with value_set on the demo's timer; the whole demo namespace is
    // persistent.
    const std::string kWholeDemo = "namespaces = [\"urn:uaplex:demo\"]\n";

    std::uint32_t before = 0;
    auto counterOf = [](Client& c, std::uint16_t ns) {
        ua::DataValue dv = test::readOne(c, ua::stringNodeId(ns, "Demo.Counter"));
        return (dv.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_UINT32
                   ? dv.value.value.uint32
                   : 0u;
    };
    {
        auto s = start(scratch, kWholeDemo, 100, "update_interval_ms = 10\n");
        Session a(s->port);
        for (int i = 0; i < 200 && before < 20; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
            before = counterOf(a.c, a.ns);
        }
        REQUIRE(before >= 20);
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // committed by now
        killHard(*s);
    }
    // The timer far away now: the counter read is the restored one.
    auto s = start(scratch, kWholeDemo, 100, "update_interval_ms = 600000\n");
    Session b(s->port);
    CHECK(counterOf(b.c, b.ns) >= before);
}

TEST_CASE("a failed commit answers BadResourceUnavailable and leaves the value as persisted") {
    Scratch scratch("full");
    // The files may not grow past 256 KiB (a full disk): a commit fails once the WAL is there.
    auto limited = [] {
        ::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of the signal
        rlimit r{256 * 1024, 256 * 1024};
        ::setrlimit(RLIMIT_FSIZE, &r);
    };
    std::string lastGood;
    uaplex_status failed = UAPLEX_Good;
    {
        auto s = start(scratch, "", 100, "", limited);
        Session a(s->port);
        for (int i = 0; i < 400 && failed == UAPLEX_Good; ++i) {
            std::string v = std::to_string(i) + std::string(20000, char('a' + i % 26));
            failed = writeValue(a.c, a.node(kString), ua::variantString(v));
            if (failed == UAPLEX_Good) lastGood = v;
        }
        REQUIRE_FALSE(lastGood.empty());
        CHECK(failed == UAPLEX_BadResourceUnavailable);
        CHECK(readValue(a.c, a.node(kString)).text == lastGood);  // not applied in memory
        CHECK(s->alive());
        killHard(*s);
    }
    auto s = start(scratch);
    Session b(s->port);
    CHECK(readValue(b.c, b.node(kString)).text == lastGood);
    std::string log = readFile(scratch.log());
    CHECK_THAT(log, Catch::Contains("a transaction failed"));
}
