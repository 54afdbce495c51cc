// SPDX-License-Identifier: Apache-2.0
// The real `uaplex` executable and its users file under local tampering: a users file the
// group or others may read, or one swapped for a symlink, is refused at start and at reload
// (SIGHUP), the users the server had keep logging in, and a user smuggled into the refused
// file does not.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "support/server_process.hpp"

using namespace uaplex;
using test::Client;
namespace fs = std::filesystem;

namespace {

std::string baseToml(std::uint16_t port, const fs::path& usersFile) {
    return test::configHead(port, "info") +
           "[slots]\nrequest_queue = \"fifo\"\n[plugins.fifo]\n[plugins.transport-tcp]\n"
           "[access]\nusers_file = \"" +
           usersFile.string() + "\"\n";
}

// `uaplex users add` with the password on stdin (1000 iterations: fast).
void addUser(const fs::path& file, const std::string& name, const std::string& password) {
    std::string cmd = "printf '%s\\n' '" + password + "' | " + UAPLEX_EXE + " users add " + name +
                      " --roles Operator --password-stdin --iterations 1000 --file '" +
                      file.string() + "' >/dev/null";
    REQUIRE(std::system(cmd.c_str()) == 0);
}

uaplex_status login(std::uint16_t port, const std::string& name, const std::string& password) {
    Client c;
    if (!c.open(port)) return UAPLEX_BadConnectionClosed;
    Client::UserName token("username", name, password);
    return c.createSessionAs(&token.eo);
}

// Waits until `name` logs in as `expected`, up to 5 s (the reload is asynchronous).
uaplex_status loginUntil(std::uint16_t port, const std::string& name, const std::string& password,
                         uaplex_status expected) {
    uaplex_status st = UAPLEX_BadInternalError;
    for (int i = 0; i < 100; ++i) {
        st = login(port, name, password);
        if (st == expected) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return st;
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Waits until the log holds `what` `times` times, up to 10 s.
bool logged(const fs::path& log, const std::string& what, int times) {
    for (int i = 0; i < 200; ++i) {
        std::string text = slurp(log);
        int n = 0;
        for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
        if (n >= times) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

struct Dir {
    fs::path path =
        fs::temp_directory_path() / ("uaplex-hostile-files-" + std::to_string(::getpid()));
    Dir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~Dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

}  // namespace

TEST_CASE("hostile files: a users file the group can read stops the start with a clear error") {
    Dir dir;
    fs::path users = dir.path / "users.toml";
    addUser(users, "operator", "op-secret");
    ::chmod(users.c_str(), 0640);
    std::uint16_t port = test::freePort();
    std::ofstream(dir.path / "server.toml") << baseToml(port, users);
    std::string cmd = std::string("timeout 20 ") + UAPLEX_EXE + " --config '" +
                      (dir.path / "server.toml").string() + "' > '" + (dir.path / "out").string() +
                      "' 2>&1";
    int rc = std::system(cmd.c_str());
    REQUIRE(WIFEXITED(rc));
    CHECK(WEXITSTATUS(rc) == 1);  // not 124: it did not start and run
    CHECK(slurp(dir.path / "out").find("mode 0640 lets the group or others read") !=
          std::string::npos);
}

TEST_CASE("hostile files: a reload of a tampered users file keeps the users the server has") {
    Dir dir;
    fs::path users = dir.path / "users.toml";
    addUser(users, "operator", "op-secret");
    fs::path log = dir.path / "server.log";
    test::ServerProcess s(
        "hostile-files", [&](std::uint16_t port, const fs::path&) { return baseToml(port, users); },
        [&] { std::freopen(log.c_str(), "w", stderr); });
    REQUIRE(s.alive());
    REQUIRE(login(s.port, "operator", "op-secret") == UAPLEX_Good);

    // Someone adds a user and leaves the file world-readable: the reload is refused.
    addUser(users, "intruder", "in-secret");
    ::chmod(users.c_str(), 0644);
    ::kill(s.pid, SIGHUP);
    CHECK(logged(log, "users file not reloaded, keeping the users", 1));
    CHECK(slurp(log).find("mode 0644") != std::string::npos);
    CHECK(login(s.port, "intruder", "in-secret") == UAPLEX_BadUserAccessDenied);
    CHECK(login(s.port, "operator", "op-secret") == UAPLEX_Good);  // still served
    CHECK(s.alive());

    // The file swapped for a symlink to a private file with the intruder: refused too.
    fs::path elsewhere = dir.path / "elsewhere.toml";
    fs::rename(users, elsewhere);
    ::chmod(elsewhere.c_str(), 0600);
    fs::create_symlink(elsewhere, users);
    ::kill(s.pid, SIGHUP);
    CHECK(logged(log, "users file not reloaded, keeping the users", 2));
    CHECK(slurp(log).find("is a symbolic link") != std::string::npos);
    CHECK(login(s.port, "intruder", "in-secret") == UAPLEX_BadUserAccessDenied);
    CHECK(login(s.port, "operator", "op-secret") == UAPLEX_Good);

    // The same users as a private regular file load: the refusals were the mode and the link.
    fs::remove(users);
    fs::rename(elsewhere, users);
    ::kill(s.pid, SIGHUP);
    CHECK(loginUntil(s.port, "intruder", "in-secret", UAPLEX_Good) == UAPLEX_Good);
    CHECK(login(s.port, "operator", "op-secret") == UAPLEX_Good);
    CHECK(s.alive());
}
