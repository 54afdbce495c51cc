// SPDX-License-Identifier: Apache-2.0
// A raw HTTP/1.1 exchange over a loopback TCP connection, for the admin listener's tests:
// sends bytes as given, reads until the server closes (or `timeoutMs` of silence).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>

namespace uaplex::test {

struct HttpReply {
    int status = 0;       // 0: no status line (closed without an answer)
    std::string headers;  // the status line and header fields
    std::string body;
    bool closed = false;  // the server closed the connection
};

// A connected socket on 127.0.0.1:<port>, or -1.
inline int connectLoopback(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Reads until EOF or `timeoutMs` without data.
inline std::string readUntilClosed(int fd, int timeoutMs, bool* closed = nullptr) {
    std::string all;
    char buf[16384];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, timeoutMs) <= 0) break;
        ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) {
            if (closed) *closed = true;
            break;
        }
        all.append(buf, std::size_t(n));
    }
    return all;
}

inline HttpReply parseReply(const std::string& all, bool closed) {
    HttpReply r;
    r.closed = closed;
    auto end = all.find("\r\n\r\n");
    if (all.rfind("HTTP/1.1 ", 0) != 0 || end == std::string::npos) return r;
    r.status = std::stoi(all.substr(9, 3));
    r.headers = all.substr(0, end);
    r.body = all.substr(end + 4);
    return r;
}

inline HttpReply httpExchange(std::uint16_t port, std::string_view request, int timeoutMs = 10000) {
    int fd = connectLoopback(port);
    if (fd < 0) return {};
    std::size_t sent = 0;
    while (sent < request.size()) {
        ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) break;
        sent += std::size_t(n);
    }
    bool closed = false;
    std::string all = readUntilClosed(fd, timeoutMs, &closed);
    ::close(fd);
    return parseReply(all, closed);
}

inline HttpReply httpGet(std::uint16_t port, std::string_view path, std::string_view extra = {},
                         std::string_view method = "GET") {
    std::string req = std::string(method) + " " + std::string(path) +
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + std::string(extra) + "\r\n";
    return httpExchange(port, req);
}

// A header field's value ("" when absent); `name` as sent, case-insensitive match.
inline std::string headerOf(const HttpReply& r, std::string_view name) {
    std::string lower = r.headers;
    for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    std::string key = "\r\n";
    for (char c : name) key += char(std::tolower(static_cast<unsigned char>(c)));
    key += ":";
    auto at = lower.find(key);
    if (at == std::string::npos) return "";
    auto start = at + key.size();
    auto end = r.headers.find("\r\n", start);
    std::string v =
        r.headers.substr(start, end == std::string::npos ? std::string::npos : end - start);
    while (!v.empty() && v.front() == ' ') v.erase(v.begin());
    return v;
}

}  // namespace uaplex::test
