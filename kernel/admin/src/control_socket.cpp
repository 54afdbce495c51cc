// SPDX-License-Identifier: Apache-2.0
#include <uaplex/admin/control_socket.hpp>

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include <uaplex/host/logging.hpp>

namespace uaplex::admin {

namespace {

namespace fs = std::filesystem;
using host::logger;

std::int64_t nowMs() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

std::runtime_error systemError(const std::string& what, const fs::path& path) {
    return std::runtime_error("control socket " + path.string() + ": " + what + ": " +
                              std::strerror(errno));
}

sockaddr_un addressOf(const std::string& path) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    if (path.size() >= sizeof a.sun_path)
        throw std::runtime_error("control socket " + path + ": the path is too long");
    std::memcpy(a.sun_path, path.data(), path.size());
    return a;
}

// Waits for `events` on `fd` until `deadline` (steady ms); false on timeout or error.
bool waitFor(int fd, short events, std::int64_t deadline) {
    for (;;) {
        std::int64_t left = deadline - nowMs();
        if (left <= 0) return false;
        pollfd p{fd, events, 0};
        int n = ::poll(&p, 1, int(left));
        if (n > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
        if (n < 0 && errno != EINTR) return false;
    }
}

bool sendAll(int fd, std::string_view data, std::int64_t deadline) {
    while (!data.empty()) {
        ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n > 0) {
            data.remove_prefix(size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && waitFor(fd, POLLOUT, deadline))
            continue;
        return false;
    }
    return true;
}

std::vector<std::string_view> splitWords(std::string_view line) {
    std::vector<std::string_view> words;
    size_t i = 0;
    while (i < line.size()) {
        while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
        size_t start = i;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') ++i;
        if (i > start) words.push_back(line.substr(start, i - start));
    }
    return words;
}

}  // namespace

struct ControlSocket::Impl {
    config::ControlConfig cfg;
    Handler handler;
    int listenFd = -1;
    int wakeFd = -1;
    std::thread thread;

    void run();
    void serve(int fd);
};

ControlSocket::ControlSocket(const config::ControlConfig& cfg, Handler handler)
    : impl_(std::make_unique<Impl>()) {
    impl_->cfg = cfg;
    impl_->handler = std::move(handler);
}

ControlSocket::~ControlSocket() {
    stop();
}

void ControlSocket::start() {
    Impl& m = *impl_;
    const fs::path& path = m.cfg.socket;
    std::error_code ec;
    fs::path dir = path.parent_path();
    if (!dir.empty() && !fs::exists(dir, ec)) {
        fs::create_directories(dir, ec);
        if (ec)
            throw std::runtime_error("control socket " + path.string() +
                                     ": cannot create its directory: " + ec.message());
        // A directory of its own is the server user's alone.
        ::chmod(dir.c_str(), 0700);
    }
    sockaddr_un addr = addressOf(path.string());
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            throw std::runtime_error("control socket " + path.string() +
                                     ": the path exists and is not a socket");
        // A socket file left by a server that is gone refuses connections; a live one answers.
        int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool live =
            probe >= 0 && ::connect(probe, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
        if (probe >= 0) ::close(probe);
        if (live)
            throw std::runtime_error("control socket " + path.string() +
                                     ": another running server answers on it");
        ::unlink(path.c_str());
    }
    m.listenFd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (m.listenFd < 0) throw systemError("socket", path);
    // Linux creates the socket file with the socket inode's mode: 0600 from the first moment,
    // without touching the process-wide umask.
    ::fchmod(m.listenFd, 0600);
    if (::bind(m.listenFd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        auto e = systemError("bind", path);
        ::close(m.listenFd);
        m.listenFd = -1;
        throw e;
    }
    ::chmod(path.c_str(), 0600);
    if (::listen(m.listenFd, 8) != 0) {
        auto e = systemError("listen", path);
        stop();
        throw e;
    }
    m.wakeFd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (m.wakeFd < 0) {
        auto e = systemError("eventfd", path);
        stop();
        throw e;
    }
    m.thread = std::thread([&m] { m.run(); });
    logger()->info("control socket {}", path.string());
}

void ControlSocket::stop() noexcept {
    Impl& m = *impl_;
    if (m.wakeFd >= 0) {
        std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(m.wakeFd, &one, sizeof one);
    }
    if (m.thread.joinable()) m.thread.join();
    if (m.listenFd >= 0) {
        ::close(m.listenFd);
        m.listenFd = -1;
        ::unlink(m.cfg.socket.c_str());
    }
    if (m.wakeFd >= 0) {
        ::close(m.wakeFd);
        m.wakeFd = -1;
    }
}

void ControlSocket::Impl::run() {
    for (;;) {
        pollfd p[2] = {{listenFd, POLLIN, 0}, {wakeFd, POLLIN, 0}};
        int n = ::poll(p, 2, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            logger()->error("control socket: poll: {}", std::strerror(errno));
            return;
        }
        if (p[1].revents != 0) return;
        if ((p[0].revents & POLLIN) == 0) continue;
        int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) continue;
        try {
            serve(fd);
        } catch (const std::exception& e) {
            logger()->error("control socket: {}", e.what());
        }
        ::close(fd);
    }
}

void ControlSocket::Impl::serve(int fd) {
    const std::int64_t deadline = nowMs() + cfg.timeout_ms;
    ucred cred{};
    socklen_t len = sizeof cred;
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        (cred.uid != ::geteuid() && cred.uid != 0)) {
        logger()->warn("control socket: refused a connection from uid {} (not the server's user)",
                       cred.uid);
        sendAll(fd, "ERR not the server's user\n", deadline);
        return;
    }
    std::string line;
    char buf[512];
    for (;;) {
        auto nl = line.find('\n');
        if (nl != std::string::npos) {
            line.resize(nl);
            break;
        }
        if (line.size() > cfg.max_request_bytes) {
            sendAll(fd, "ERR the command line is longer than max_request_bytes\n", deadline);
            return;
        }
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
            line.append(buf, size_t(n));
            continue;
        }
        if (n == 0) break;  // the client closed its side: the line is what came
        if (errno == EINTR) continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && waitFor(fd, POLLIN, deadline)) continue;
        return;  // timed out or broken: nothing to answer
    }
    if (line.size() > cfg.max_request_bytes) {
        sendAll(fd, "ERR the command line is longer than max_request_bytes\n", deadline);
        return;
    }
    if (!line.empty() && line.back() == '\r') line.pop_back();
    for (char c : line)
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
            sendAll(fd, "ERR the command line holds control characters\n", deadline);
            return;
        }
    auto words = splitWords(line);
    ControlReply reply;
    if (words.empty()) {
        reply = {false, "no command (try: help)"};
    } else {
        try {
            reply = handler(words);
        } catch (const std::exception& e) {
            reply = {false, e.what()};
        }
    }
    std::string out;
    if (reply.ok) {
        out = "OK\n" + reply.text;
        if (!out.empty() && out.back() != '\n') out += '\n';
    } else {
        out = "ERR " + reply.text + "\n";
    }
    // The reply is taken within the timeout from when the command is done.
    sendAll(fd, out, nowMs() + cfg.timeout_ms);
}

std::string controlRequest(const std::string& path, std::string_view command,
                           std::uint32_t timeoutMs) {
    sockaddr_un addr = addressOf(path);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        std::string why = std::strerror(errno);
        ::close(fd);
        throw std::runtime_error("no server answers on " + path + " (" + why + ")");
    }
    std::int64_t deadline = nowMs() + timeoutMs;
    std::string line(command);
    line += '\n';
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
    if (!sendAll(fd, line, deadline)) {
        ::close(fd);
        throw std::runtime_error("the server at " + path + " did not take the command");
    }
    ::shutdown(fd, SHUT_WR);
    std::string answer;
    char buf[4096];
    for (;;) {
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n > 0) {
            answer.append(buf, size_t(n));
            continue;
        }
        if (n == 0) break;
        if (errno == EINTR) continue;
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && waitFor(fd, POLLIN, deadline)) continue;
        ::close(fd);
        throw std::runtime_error("no answer from " + path + " within " + std::to_string(timeoutMs) +
                                 " ms");
    }
    ::close(fd);
    return answer;
}

}  // namespace uaplex::admin
