// SPDX-License-Identifier: Apache-2.0
// Secure defaults and the strict profile against the real `uaplex` process: the shipped
// etc/uaplex.toml lets an anonymous client Browse and Read but not Write or Call; every
// insecure setting in force is one warning line in the log at start; under
// `security_profile = "strict"` a None channel serves discovery only (CreateSession is
// refused), Anonymous is not offered, and a contradicting setting stops the server at load
// with a message naming the key.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "support/client_services.hpp"
#include "support/opcua_client.hpp"
#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;

namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A scratch directory for one test's files (users file, PKI, log), removed at the end.
struct Scratch {
    fs::path dir;
    explicit Scratch(const std::string& tag)
        : dir(fs::temp_directory_path() /
              ("uaplex-hostile-defaults-" + tag + "-" + std::to_string(::getpid()))) {
        fs::remove_all(dir);
        fs::create_directories(dir);
    }
    ~Scratch() {
        std::error_code ec;
        fs::remove_all(dir, ec);
    }
    fs::path log() const { return dir / "server.log"; }
    // A users file with one Operator, written by the executable's own `users` command.
    fs::path users() const {
        fs::path f = dir / "users.toml";
        std::string add = std::string(UAPLEX_EXE) +
                          " users add operator --roles Operator --password op-secret "
                          "--iterations 1000 --file " +
                          f.string() + " >/dev/null";
        REQUIRE(std::system(add.c_str()) == 0);
        return f;
    }
};

// A server whose stderr (the log sink) goes to `log`.
test::ServerProcess start(const std::string& tag, const fs::path& log,
                          std::function<std::string(std::uint16_t)> toml) {
    return test::ServerProcess(
        tag, [toml](std::uint16_t port, const fs::path&) { return toml(port); },
        [log] { std::freopen(log.c_str(), "w", stderr); });
}

std::string header(std::uint16_t port, const std::string& serverKeys) {
    std::ostringstream t;
    t << test::configHead(port, "info") << serverKeys << "[slots]\nrequest_queue = \"fifo\"\n"
      << "[plugins.fifo]\n[plugins.transport-tcp]\n[plugins.demo]\n";
    return t.str();
}

std::size_t count(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
}

uaplex_status callMultiply(Client& c, std::uint16_t d) {
    ua::Variant args[2] = {ua::variantDouble(3), ua::variantDouble(4)};
    ua::CallMethodRequest m{};
    m.objectId = ua::stringNodeId(d, "Demo");
    m.methodId = ua::stringNodeId(d, "Demo.Multiply");
    m.inputArguments = {2, args};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    auto r = c.call(req);
    REQUIRE(Client::result(r) == UAPLEX_Good);
    return static_cast<ua::CallResponse*>(r.object)->results[0].statusCode;
}

}  // namespace

TEST_CASE(
    "hostile defaults: the shipped configuration lets Anonymous Browse and Read, "
    "not Write or Call, and says what is insecure") {
    Scratch scratch("shipped");
    // etc/uaplex.toml with the test's port, plugin directory, PKI and log.
    const std::string shipped = readFile(UAPLEX_SOURCE_DIR "/etc/uaplex.toml");
    REQUIRE(!shipped.empty());
    auto s = start("defaults-shipped", scratch.log(), [&](std::uint16_t port) {
        std::string t = shipped;
        auto replaceLine = [&](const std::string& key, const std::string& line) {
            auto at = t.find("\n" + key + " = ");
            REQUIRE(at != std::string::npos);
            auto end = t.find('\n', at + 1);
            t.replace(at + 1, end - at - 1, line);
        };
        replaceLine("endpoints",
                    "endpoints = [\"opc.tcp://127.0.0.1:" + std::to_string(port) + "\"]");
        replaceLine("plugin_dirs", "plugin_dirs = [\"" UAPLEX_PLUGIN_DIR "\"]");
        replaceLine("pki_dir", "pki_dir = \"" + (scratch.dir / "pki").string() + "\"");
        replaceLine("sink", "sink = \"stderr\"");
        replaceLine("listen", "listen = \"127.0.0.1:0\"");  // the admin listener
        return t;
    });
    Client c;
    REQUIRE(c.open(s.port));
    REQUIRE(c.createSession() == UAPLEX_Good);
    std::uint16_t d = test::demoNamespace(c);
    ua::NodeId int32 = ua::stringNodeId(d, "Demo.Scalars.Int32");
    CHECK(test::readOne(c, int32).status == UAPLEX_Good);
    CHECK(test::writeInt32(c, int32, 7) == UAPLEX_BadUserAccessDenied);
    CHECK(callMultiply(c, d) == UAPLEX_BadUserAccessDenied);

    std::string log = readFile(scratch.log());
    INFO(log);
    CHECK(count(log, "insecure: [server] security offers SecurityPolicy None") == 1);
    CHECK(count(log, "insecure:") == 1);  // nothing else in the shipped file
}

TEST_CASE("hostile defaults: each insecure setting in force is one warning at start") {
    Scratch scratch("warnings");
    const fs::path users = scratch.users();
    {
        auto s = start("defaults-warn", scratch.log(), [&](std::uint16_t port) {
            return header(port,
                          "security = [{policy = \"None\"}, {policy = \"Basic256\"}, "
                          "{policy = \"Basic256Sha256\"}]\npki_dir = \"" +
                              (scratch.dir / "pki").string() + "\"\n") +
                   "[access]\nusers_file = \"" + users.string() +
                   "\"\nusername_security_policy = "
                   "\"http://opcfoundation.org/UA/SecurityPolicy#None\"\n"
                   "anonymous_permissions = [\"All\"]\n";
        });
        Client c;
        REQUIRE(c.open(s.port));
        REQUIRE(c.createSession() == UAPLEX_Good);  // still served
        // An explicit grant is honoured.
        std::uint16_t d = test::demoNamespace(c);
        CHECK(test::writeInt32(c, ua::stringNodeId(d, "Demo.Scalars.Int32"), 7) == UAPLEX_Good);
        std::string log = readFile(scratch.log());
        INFO(log);
        CHECK(count(log, "insecure: [server] security offers SecurityPolicy None") == 1);
        CHECK(count(log, "insecure: [server] security offers the deprecated policies Basic256") ==
              1);
        CHECK(count(log, "insecure: Anonymous sessions are granted Write and Call") == 1);
        CHECK(count(log, "insecure: [access] username_security_policy is None") == 1);
        CHECK(count(log, "insecure:") == 4);
    }
    {
        // Only None: the users' passwords travel in clear.
        auto s = start("defaults-nocert", scratch.log(), [&](std::uint16_t port) {
            return header(port, "") + "[access]\nusers_file = \"" + users.string() + "\"\n";
        });
        Client c;
        REQUIRE(c.open(s.port));
        REQUIRE(c.createSession() == UAPLEX_Good);
        std::string log = readFile(scratch.log());
        INFO(log);
        CHECK(count(log,
                    "insecure: [access] users_file is used without an application "
                    "certificate") == 1);
        CHECK(count(log, "insecure: Anonymous sessions are granted") == 0);  // the default
        CHECK(count(log, "insecure:") == 2);                                 // and None
    }
}

TEST_CASE("hostile defaults: strict serves discovery over None but refuses its sessions") {
    Scratch scratch("strict");
    const fs::path users = scratch.users();
    auto s = start("defaults-strict", scratch.log(), [&](std::uint16_t port) {
        return header(port,
                      "security_profile = \"strict\"\n"
                      "security = [{policy = \"None\"}, {policy = \"Basic256Sha256\", "
                      "modes = [\"SignAndEncrypt\"]}]\npki_dir = \"" +
                          (scratch.dir / "pki").string() + "\"\n") +
               "[access]\nusers_file = \"" + users.string() + "\"\n";
    });
    Client c;
    REQUIRE(c.open(s.port));
    // Discovery over None: the endpoints are the secure ones only, without Anonymous.
    ua::GetEndpointsRequest ge{};
    ge.endpointUrl = ua::makeString(c.url());
    auto m = c.call(ge);
    REQUIRE(Client::result(m) == UAPLEX_Good);
    const auto& eps = static_cast<ua::GetEndpointsResponse*>(m.object)->endpoints;
    REQUIRE(eps.size() == 1);
    CHECK(eps[0].securityMode == ua::MessageSecurityMode::SignAndEncrypt);
    for (const auto& t : eps[0].userIdentityTokens)
        CHECK(t.tokenType != ua::UserTokenType::Anonymous);
    ua::FindServersRequest find{};
    find.endpointUrl = ua::makeString(c.url());
    CHECK(Client::result(c.call(find)) == UAPLEX_Good);
    // A session over None is refused, the channel stays open for discovery.
    CHECK(c.createSession() == UAPLEX_BadSecurityModeInsufficient);
    m = c.call(ge);
    CHECK(Client::result(m) == UAPLEX_Good);
    std::string log = readFile(scratch.log());
    INFO(log);
    CHECK(count(log, "insecure:") == 0);
    CHECK(s.alive());
}

TEST_CASE("hostile defaults: strict with a contradicting setting does not start and names it") {
    Scratch scratch("contradict");
    auto run = [&](const std::string& extra) {
        fs::path cfg = scratch.dir / "strict.toml";
        std::ofstream(cfg) << header(28999,
                                     "security_profile = \"strict\"\n"
                                     "security = [{policy = \"Basic256Sha256\"}]\npki_dir = \"" +
                                         (scratch.dir / "pki").string() + "\"\n") +
                                  extra;
        std::string cmd = std::string(UAPLEX_EXE) + " --config " + cfg.string() + " 2>&1";
        std::string out;
        FILE* p = ::popen(cmd.c_str(), "r");
        REQUIRE(p);
        char buf[512];
        while (std::fgets(buf, sizeof buf, p)) out += buf;
        int status = ::pclose(p);
        CHECK(status != 0);  // exits at load, never listens
        return out;
    };
    std::string out = run("[access]\nanonymous = true\n");
    INFO(out);
    CHECK(out.find("strict.toml:") != std::string::npos);
    CHECK(out.find("[access] anonymous = true contradicts [server] security_profile = "
                   "\"strict\"") != std::string::npos);
    out =
        run("[access]\nusername_security_policy = "
            "\"http://opcfoundation.org/UA/SecurityPolicy#None\"\n");
    CHECK(out.find("[access] username_security_policy = None (passwords in clear) contradicts") !=
          std::string::npos);
}
