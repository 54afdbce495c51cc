// SPDX-License-Identifier: Apache-2.0
// What the integration tests share to run the real `uaplex` executable: a free loopback
// port, the first lines of a test configuration, and a server process on a configuration the
// test writes (SIGTERM and wait at the end; SIGKILL when the test process dies first).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <string_view>
#include <thread>

#include "support/opcua_client.hpp"

namespace uaplex::test {

// A port the kernel just handed out on 127.0.0.1 (free unless another process races for it).
// A port below the kernel's ephemeral range (32768 and up), where a client socket of another
// test running in parallel cannot take it between this pick and the server's listen.
inline std::uint16_t freePort() {
    static std::minstd_rand pick(std::uint32_t(::getpid()) * 7919u +
                                 std::uint32_t(::time(nullptr)));
    for (int attempt = 0; attempt < 200; ++attempt) {
        auto port = std::uint16_t(20000 + pick() % 8000);  // 20000-27999
        int fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons(port);
        bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
        ::close(fd);
        if (free) return port;
    }
    return 0;
}

#if defined(UAPLEX_PLUGIN_DIR)
// The lines a test configuration starts with: `level` and up logged to stderr, the build's
// plugins, one opc.tcp endpoint on 127.0.0.1:<port>. More [server] keys may follow.
inline std::string configHead(std::uint16_t port, std::string_view level = "warn") {
    return "[log]\nlevel = \"" + std::string(level) +
           "\"\nsink = \"stderr\"\n"
           "[host]\nplugin_dirs = [\"" UAPLEX_PLUGIN_DIR
           "\"]\n"
           "[server]\nendpoints = [\"opc.tcp://127.0.0.1:" +
           std::to_string(port) + "\"]\n";
}
#endif

#if defined(UAPLEX_EXE)
// `uaplex --config <dir>/test.toml`, where `toml(port, dir)` gives the file's text; `inChild`
// runs in the child before exec (say, to lower a resource limit). Ready once a client
// connects, or after `attempts` x 50 ms.
class ServerProcess {
  public:
    using Toml = std::function<std::string(std::uint16_t port, const std::filesystem::path& dir)>;

    ServerProcess(const std::string& tag, const Toml& toml,
                  const std::function<void()>& inChild = {}, int attempts = 100)
        : port(freePort()),
          dir(std::filesystem::temp_directory_path() /
              ("uaplex-" + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(port))) {
        std::filesystem::create_directories(dir);
        std::ofstream(dir / "test.toml") << toml(port, dir);
        pid_t parent = ::getpid();
        pid = ::fork();
        if (pid == 0) {
            // A test killed on timeout never runs the destructor: the server must not outlive
            // it (holding ports and lock files). getppid catches a parent gone before prctl.
            ::prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (::getppid() != parent) std::_Exit(127);
            if (inChild) inChild();
            std::string cfg = (dir / "test.toml").string();
            ::execl(UAPLEX_EXE, UAPLEX_EXE, "--config", cfg.c_str(), nullptr);
            std::_Exit(127);
        }
        for (int i = 0; i < attempts; ++i) {
            Client c;
            if (c.connect(port)) return;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
    ~ServerProcess() {
        if (pid > 0) {
            ::kill(pid, SIGTERM);
            int status = 0;
            ::waitpid(pid, &status, 0);
        }
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    ServerProcess(const ServerProcess&) = delete;
    ServerProcess& operator=(const ServerProcess&) = delete;

    bool alive() const {
        int status = 0;
        return ::waitpid(pid, &status, WNOHANG) == 0;
    }
    // VmRSS in kB; -1 when unreadable.
    long rssKb() const {
        std::ifstream in("/proc/" + std::to_string(pid) + "/status");
        std::string line;
        while (std::getline(in, line))
            if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
        return -1;
    }

    pid_t pid = -1;
    std::uint16_t port;
    std::filesystem::path dir;
};
#endif

}  // namespace uaplex::test
