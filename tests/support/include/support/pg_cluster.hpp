// SPDX-License-Identifier: Apache-2.0
// A throw-away PostgreSQL server for tests: initdb into a temporary directory, the server on
// 127.0.0.1 on a free port with its unix socket in that directory and trust authentication,
// stopped and removed by the destructor. Run as root (CI), initdb and the server run as
// `nobody` (initdb refuses root), the directory owned by it. Every wait is bounded.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace uaplex::test {

class PgCluster {
  public:
    PgCluster() : port_(freePort()) {
        bin_ = binDir();
        if (bin_.empty()) throw std::runtime_error("no PostgreSQL server binaries (initdb)");
        char tmpl[] = "/tmp/uaplex-pg-XXXXXX";
        if (!::mkdtemp(tmpl)) throw std::runtime_error("mkdtemp failed");
        dir_ = tmpl;
        if (::geteuid() == 0 && ::chown(dir_.c_str(), kNobody, kNobody) != 0)
            throw std::runtime_error("chown of the cluster directory failed");
        const std::string data = (dir_ / "data").string();
        const int rc = runAndWait({(bin_ / "initdb").string(), "-D", data, "-U", "postgres", "-A",
                                   "trust", "-E", "UTF8", "--locale=C", "--no-sync"},
                                  60);
        if (rc != 0) throw std::runtime_error("initdb failed: " + log());
        // Another process may take the port between the pick and the server's bind: a few
        // more ports then.
        for (int attempt = 0;; ++attempt) {
            try {
                start();
                return;
            } catch (const std::runtime_error&) {
                if (attempt == 4 || log().find("could not bind") == std::string::npos) throw;
                port_ = freePort();
            }
        }
    }
    ~PgCluster() {
        stop();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    PgCluster(const PgCluster&) = delete;
    PgCluster& operator=(const PgCluster&) = delete;

    std::uint16_t port() const noexcept { return port_; }
    std::string conninfo() const {
        return "host=127.0.0.1 port=" + std::to_string(port_) +
               " dbname=postgres user=postgres connect_timeout=5";
    }
    bool running() const noexcept { return pid_ > 0; }

    // Starts the server and waits (bounded) until it accepts connections.
    void start() {
        if (pid_ > 0) return;
        const std::string data = (dir_ / "data").string();
        std::filesystem::remove(dir_ / "data" / "postmaster.pid");
        pid_ = spawn({(bin_ / "postgres").string(), "-D", data, "-k", dir_.string(), "-h",
                      "127.0.0.1", "-p", std::to_string(port_), "-c", "fsync=off", "-c",
                      "synchronous_commit=off", "-c", "full_page_writes=off", "-c",
                      "max_connections=40", "-c", "log_min_messages=warning"});
        for (int i = 0; i < 3000; ++i) {  // 30 s
            if (ready()) return;
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_) {
                pid_ = -1;
                throw std::runtime_error("postgres exited: " + log());
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        stop();
        throw std::runtime_error("postgres did not get ready: " + log());
    }
    // Fast shutdown (SIGINT: clients are disconnected), bounded; then SIGKILL.
    void stop() {
        if (pid_ <= 0) return;
        ::kill(pid_, SIGINT);
        if (!reap(30)) {
            ::kill(pid_, SIGKILL);
            reap(10);
        }
        pid_ = -1;
    }
    std::string log() const {
        std::ifstream in(dir_ / "pg.log");
        std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
    }

  private:
    static constexpr uid_t kNobody = 65534;

    // UAPLEX_PG_BIN, or the newest /usr/lib/postgresql/<major>/bin with an initdb.
    static std::filesystem::path binDir() {
        if (const char* env = std::getenv("UAPLEX_PG_BIN")) return env;
        std::filesystem::path best;
        int major = 0;
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
            const int m = std::atoi(e.path().filename().c_str());
            if (m > major && std::filesystem::exists(e.path() / "bin" / "initdb")) {
                major = m;
                best = e.path() / "bin";
            }
        }
        return best;
    }

    // A loopback port below the ephemeral range that nothing listens on just now.
    static std::uint16_t freePort() {
        static std::minstd_rand pick(std::uint32_t(::getpid()) * 7919U +
                                     std::uint32_t(::time(nullptr)));
        for (int attempt = 0; attempt < 200; ++attempt) {
            auto port = std::uint16_t(20000 + pick() % 8000);
            const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            a.sin_port = htons(port);
            const bool free = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
            ::close(fd);
            if (free) return port;
        }
        throw std::runtime_error("no free port");
    }

    bool ready() const {
        // The postmaster.pid's 8th line says "ready" once connections are accepted.
        std::ifstream in(dir_ / "data" / "postmaster.pid");
        std::string line;
        for (int i = 0; i < 8 && std::getline(in, line); ++i) {
        }
        return line.rfind("ready", 0) == 0;
    }

    bool reap(int seconds) {
        for (int i = 0; i < seconds * 100; ++i) {
            int st = 0;
            if (::waitpid(pid_, &st, WNOHANG) == pid_) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }

    // Forks and execs `argv` (as nobody when root), output into pg.log.
    pid_t spawn(const std::vector<std::string>& argv) const {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        const std::string logfile = (dir_ / "pg.log").string();
        const bool root = ::geteuid() == 0;
        const pid_t parent = ::getpid();
        const pid_t pid = ::fork();
        if (pid < 0) throw std::runtime_error("fork failed");
        if (pid == 0) {
            if (root &&
                (::setgroups(0, nullptr) != 0 || ::setgid(kNobody) != 0 || ::setuid(kNobody) != 0))
                ::_exit(126);
            // The server goes when the test does, also when it crashes.
            ::prctl(PR_SET_PDEATHSIG, SIGQUIT);
            if (::getppid() != parent) ::_exit(125);
            const int fd = ::open(logfile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
            if (fd >= 0) {
                ::dup2(fd, 1);
                ::dup2(fd, 2);
                ::close(fd);
            }
            ::execv(args[0], args.data());
            ::_exit(127);
        }
        return pid;
    }

    int runAndWait(const std::vector<std::string>& argv, int seconds) const {
        const pid_t pid = spawn(argv);
        for (int i = 0; i < seconds * 100; ++i) {
            int st = 0;
            if (::waitpid(pid, &st, WNOHANG) == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
        return -1;
    }

    std::uint16_t port_;
    std::filesystem::path bin_;
    std::filesystem::path dir_;
    pid_t pid_ = -1;
};

}  // namespace uaplex::test
