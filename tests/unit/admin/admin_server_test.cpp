// SPDX-License-Identifier: Apache-2.0
// The admin listener alone (port 0, no server behind it): its paths, /ready, the token, the
// text writer, and hostile clients (oversized headers, a request that never ends, too many
// connections, bodies, unknown paths and methods).
#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>

#include <uaplex/admin/admin_server.hpp>
#include <uaplex/admin/prometheus.hpp>

#include "support/raw_http.hpp"

using uaplex::admin::AdminServer;
using uaplex::admin::MetricsText;
using uaplex::config::AdminConfig;
using namespace uaplex::test;

namespace {

AdminConfig loopback() {
    AdminConfig c;
    c.enabled = true;
    c.host = "127.0.0.1";
    c.port = 0;
    c.listen = "127.0.0.1:0";
    return c;
}

// The value of an unlabelled sample line "name value" in `text`; -1 when absent.
long long sampleOf(const std::string& text, const std::string& name) {
    auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stoll(text.substr(at + name.size() + 2));
}

// A /metrics scrape that got through (a connection closed at accept is tried again).
HttpReply scrape(std::uint16_t port, std::string_view extra = {}) {
    HttpReply r;
    for (int i = 0; i < 200 && r.status == 0; ++i) {
        r = httpGet(port, "/metrics", extra);
        if (r.status == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return r;
}

// GET `path` over TLS (no certificate check: the test's own self-signed one); the raw reply,
// or "" when the handshake fails.
std::string tlsGet(std::uint16_t port, const std::string& path) {
    namespace net = boost::asio;
    net::io_context ioc;
    net::ssl::context ctx(net::ssl::context::tls_client);
    ctx.set_verify_mode(net::ssl::verify_none);
    net::ssl::stream<net::ip::tcp::socket> s(ioc, ctx);
    boost::system::error_code ec;
    s.next_layer().connect({net::ip::make_address("127.0.0.1"), port}, ec);
    if (ec) return "";
    s.handshake(net::ssl::stream_base::client, ec);
    if (ec) return "";
    std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    net::write(s, net::buffer(req), ec);
    std::string all;
    char buf[4096];
    for (;;) {
        std::size_t n = s.read_some(net::buffer(buf), ec);
        all.append(buf, n);
        if (ec) break;
    }
    return all;
}

}  // namespace

TEST_CASE("health answers, ready follows setReady, metrics renders what it is given") {
    AdminServer a(loopback());
    a.start();
    REQUIRE(a.port() != 0);
    auto h = httpGet(a.port(), "/health");
    CHECK(h.status == 200);
    CHECK(h.body == "ok\n");
    CHECK(h.closed);
    CHECK(httpGet(a.port(), "/ready").status == 503);
    a.setReady(true);
    CHECK(httpGet(a.port(), "/ready").status == 200);
    CHECK(httpGet(a.port(), "/ready?verbose=1").status == 200);
    a.setMetrics([](std::string& out) {
        MetricsText m(out);
        m.family("test_things_total", "counter", "Things.");
        m.sample("test_things_total", {{"kind", "a\"b\\c\nd"}}, std::uint64_t(7));
    });
    auto m = httpGet(a.port(), "/metrics");
    CHECK(m.status == 200);
    CHECK(headerOf(m, "Content-Type") == "text/plain; version=0.0.4; charset=utf-8");
    CHECK(m.body.find("# HELP test_things_total Things.\n# TYPE test_things_total counter\n"
                      "test_things_total{kind=\"a\\\"b\\\\c\\nd\"} 7\n") != std::string::npos);
    CHECK(sampleOf(m.body, "uaplex_ready") == 1);
    a.setReady(false);
    CHECK(httpGet(a.port(), "/ready").status == 503);
    a.setMetrics({});
    m = httpGet(a.port(), "/metrics");
    CHECK(m.body.find("test_things_total") == std::string::npos);
    CHECK(sampleOf(m.body, "uaplex_ready") == 0);
}

TEST_CASE("HEAD has the GET's length and no body; other methods 405; other paths 404") {
    AdminServer a(loopback());
    a.start();
    auto get = httpGet(a.port(), "/health");
    auto head = httpGet(a.port(), "/health", {}, "HEAD");
    CHECK(head.status == 200);
    CHECK(head.body.empty());
    CHECK(headerOf(head, "Content-Length") == std::to_string(get.body.size()));
    for (const char* method : {"POST", "PUT", "DELETE", "OPTIONS"}) {
        auto r = httpGet(a.port(), "/metrics", "Content-Length: 0\r\n", method);
        CHECK(r.status == 405);
        CHECK(headerOf(r, "Allow") == "GET, HEAD");
    }
    CHECK(httpGet(a.port(), "/").status == 404);
    CHECK(httpGet(a.port(), "/metricsx").status == 404);
    CHECK(httpGet(a.port(), "/../etc/passwd").status == 404);
    CHECK(httpExchange(a.port(), "GARBAGE\r\n\r\n").status == 400);
    // A body is not taken.
    CHECK(httpGet(a.port(), "/health", "Content-Length: 5\r\n").status == 400);
    auto m = scrape(a.port());
    CHECK(m.body.find("uaplex_admin_responses_total{code=\"405\"} 4\n") != std::string::npos);
    CHECK(m.body.find("uaplex_admin_responses_total{code=\"404\"} 3\n") != std::string::npos);
}

TEST_CASE("with a token every path needs it") {
    AdminConfig c = loopback();
    c.token = "s3cret-token-0123456789";
    AdminServer a(c);
    a.start();
    for (const char* path : {"/health", "/ready", "/metrics", "/nothing"}) {
        auto r = httpGet(a.port(), path);
        CHECK(r.status == 401);
        CHECK(headerOf(r, "WWW-Authenticate") == "Bearer");
        CHECK(httpGet(a.port(), path, "Authorization: Bearer s3cret-token-012345678X\r\n").status ==
              401);
        CHECK(
            httpGet(a.port(), path, "Authorization: Bearer s3cret-token-01234567890\r\n").status ==
            401);
        CHECK(httpGet(a.port(), path, "Authorization: Basic s3cret-token-0123456789\r\n").status ==
              401);
    }
    CHECK(
        httpGet(a.port(), "/health", "Authorization: Bearer s3cret-token-0123456789\r\n").status ==
        200);
    CHECK(
        httpGet(a.port(), "/metrics", "Authorization: Bearer s3cret-token-0123456789\r\n").status ==
        200);
}

TEST_CASE("an oversized request header is 431 and the connection closes") {
    AdminConfig c = loopback();
    c.max_request_header_bytes = 2048;
    AdminServer a(c);
    a.start();
    std::string big = "X-Filler: " + std::string(4096, 'a') + "\r\n";
    auto r = httpGet(a.port(), "/health", big);
    CHECK(r.status == 431);
    CHECK(r.closed);
    // Within the limit it is served.
    CHECK(httpGet(a.port(), "/health", "X-Filler: " + std::string(1024, 'a') + "\r\n").status ==
          200);
    // A header that never ends is cut at the limit too, not read on.
    int fd = connectLoopback(a.port());
    REQUIRE(fd >= 0);
    std::string endless = "GET /health HTTP/1.1\r\nX-Endless: " + std::string(64 * 1024, 'b');
    ::send(fd, endless.data(), endless.size(), MSG_NOSIGNAL);
    bool closed = false;
    auto reply = parseReply(readUntilClosed(fd, 10000, &closed), closed);
    ::close(fd);
    CHECK(reply.status == 431);
    CHECK(closed);
}

TEST_CASE("a request that never finishes is closed after idle_timeout_ms (slowloris)") {
    AdminConfig c = loopback();
    c.idle_timeout_ms = 200;
    AdminServer a(c);
    a.start();
    int fd = connectLoopback(a.port());
    REQUIRE(fd >= 0);
    std::string partial = "GET /health HTTP/1.1\r\nHost: x\r\n";
    ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    // A byte now and then does not keep it open: the deadline covers the whole request.
    bool closed = false;
    for (int i = 0; i < 100 && !closed; ++i) {
        ::send(fd, "X", 1, MSG_NOSIGNAL);
        char b;
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 50) > 0 && ::recv(fd, &b, 1, 0) <= 0) closed = true;
    }
    ::close(fd);
    CHECK(closed);
    auto m = scrape(a.port());
    CHECK(sampleOf(m.body, "uaplex_admin_timeouts_total") == 1);
}

TEST_CASE("connections beyond max_connections are closed at accept") {
    AdminConfig c = loopback();
    c.max_connections = 2;
    c.idle_timeout_ms = 60000;
    AdminServer a(c);
    a.start();
    int idle1 = connectLoopback(a.port());
    int idle2 = connectLoopback(a.port());
    REQUIRE(idle1 >= 0);
    REQUIRE(idle2 >= 0);
    // The third is accepted and closed without an answer.
    auto refused = httpGet(a.port(), "/health");
    CHECK(refused.status == 0);
    CHECK(refused.closed);
    ::close(idle1);
    ::close(idle2);
    // Once they are gone there is room again.
    auto m = scrape(a.port());
    REQUIRE(m.status == 200);
    CHECK(sampleOf(m.body, "uaplex_admin_connections_refused_total") >= 1);
}

TEST_CASE("a port in use is an error at start") {
    AdminServer first(loopback());
    first.start();
    AdminConfig c = loopback();
    c.port = first.port();
    AdminServer second(c);
    CHECK_THROWS_WITH(second.start(), Catch::Contains("[admin] cannot listen on"));
    AdminConfig bad = loopback();
    bad.host = "localhost.invalid";
    AdminServer third(bad);
    CHECK_THROWS_WITH(third.start(), Catch::Contains("is not an IP address"));
}

TEST_CASE("metric names are sanitized") {
    CHECK(MetricsText::sanitize("leases.request-queue.refused") == "leases_request_queue_refused");
    CHECK(MetricsText::sanitize("9lives") == "_9lives");
}

TEST_CASE("with tls_certificate and tls_private_key it speaks HTTPS only") {
    auto dir =
        std::filesystem::temp_directory_path() / ("uaplex-admin-tls-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto cert = dir / "admin.pem";
    const auto key = dir / "admin.key";
    std::string cmd =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 "
        "-nodes -days 1 -subj /CN=127.0.0.1 -keyout " +
        key.string() + " -out " + cert.string() + " >/dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    AdminConfig c = loopback();
    c.tls_certificate = cert;
    c.tls_private_key = key;
    AdminServer a(c);
    a.start();
    a.setReady(true);
    auto reply = parseReply(tlsGet(a.port(), "/ready"), true);
    CHECK(reply.status == 200);
    CHECK(reply.body == "ready\n");
    CHECK(parseReply(tlsGet(a.port(), "/metrics"), true).status == 200);
    // Plain HTTP on the TLS port gets no HTTP answer.
    CHECK(httpGet(a.port(), "/ready").status == 0);
    // A key that does not load is an error at start.
    AdminConfig broken = c;
    broken.tls_private_key = dir / "missing.key";
    AdminServer b(broken);
    CHECK_THROWS_WITH(b.start(), Catch::Contains("[admin] tls_private_key"));
    std::filesystem::remove_all(dir);
}
