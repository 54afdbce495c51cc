// SPDX-License-Identifier: Apache-2.0
#include <uaplex/admin/admin_server.hpp>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <uaplex/admin/prometheus.hpp>
#include <uaplex/host/logging.hpp>

namespace uaplex::admin {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using host::logger;

namespace {

// Equal strings, in a time that does not depend on where they differ.
bool sameSecret(std::string_view a, std::string_view b) noexcept {
    if (a.size() != b.size()) return false;
    unsigned diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
        diff |= unsigned(static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]));
    return diff == 0;
}

}  // namespace

struct AdminServer::Impl {
    explicit Impl(const config::AdminConfig& c) : cfg(c) {}

    const config::AdminConfig cfg;
    std::atomic<bool> ready{false};
    std::mutex renderMutex;
    Render render;
    // The admin listener's own counters (admin thread writes, scrapes read).
    std::atomic<std::uint64_t> refusedConnections{0};
    std::atomic<std::uint64_t> timedOut{0};
    std::atomic<std::uint64_t> responses[6]{};  // 2xx, 400, 401, 404, 405, 431/other
    std::uint32_t open = 0;                     // connections, admin thread only
    std::optional<ssl::context> tls;
    // Destroyed before the members above: its handlers hold sessions that use them.
    net::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    net::steady_timer retry{ioc};
    std::thread thread;
    std::uint16_t boundPort = 0;
    bool started = false;

    void accept();
    void respond(const http::request<http::empty_body>& req,
                 http::response<http::string_body>& res);
    void count(unsigned status) noexcept {
        std::size_t i = status < 300    ? 0
                        : status == 400 ? 1
                        : status == 401 ? 2
                        : status == 404 ? 3
                        : status == 405 ? 4
                                        : 5;
        responses[i].fetch_add(1, std::memory_order_relaxed);
    }
    void ownMetrics(std::string& out);
};

namespace {

// One connection: (the TLS handshake,) one request, one response, close. The deadline set
// at accept covers the handshake and the whole request; the response gets one of its own.
template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
  public:
    Session(AdminServer::Impl& impl, Stream stream) : impl_(impl), stream_(std::move(stream)) {
        ++impl_.open;
        parser_.header_limit(impl_.cfg.max_request_header_bytes);
        parser_.body_limit(0);
    }
    ~Session() { --impl_.open; }
    Session(const Session&) = delete;
    Session& operator=(const Session&) = delete;

    void run() {
        beast::get_lowest_layer(stream_).expires_after(
            std::chrono::milliseconds(impl_.cfg.idle_timeout_ms));
        if constexpr (kTls) {
            stream_.async_handshake(ssl::stream_base::server,
                                    [self = this->shared_from_this()](beast::error_code ec) {
                                        if (ec) return self->failed(ec);
                                        self->read();
                                    });
        } else {
            read();
        }
    }

  private:
    static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

    void read() {
        http::async_read(stream_, buffer_, parser_,
                         [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                             self->onRead(ec);
                         });
    }

    void failed(beast::error_code ec) {
        if (ec == beast::error::timeout) impl_.timedOut.fetch_add(1, std::memory_order_relaxed);
    }

    void onRead(beast::error_code ec) {
        if (ec == beast::error::timeout || ec == net::error::eof ||
            ec == net::error::connection_reset || ec == net::error::operation_aborted ||
            ec == http::error::end_of_stream)
            return failed(ec);
        res_.version(11);
        res_.keep_alive(false);
        if (ec == http::error::header_limit) {
            res_.result(http::status::request_header_fields_too_large);
            res_.set(http::field::content_type, "text/plain; charset=utf-8");
            res_.body() = "request header too large\n";
        } else if (ec) {
            res_.result(http::status::bad_request);
            res_.set(http::field::content_type, "text/plain; charset=utf-8");
            res_.body() = "bad request\n";
        } else {
            impl_.respond(parser_.get(), res_);
        }
        impl_.count(res_.result_int());
        const bool head = !ec && parser_.get().method() == http::verb::head;
        res_.prepare_payload();
        if (head) res_.body().clear();  // Content-Length stays that of the GET
        beast::get_lowest_layer(stream_).expires_after(
            std::chrono::milliseconds(impl_.cfg.idle_timeout_ms));
        http::async_write(stream_, res_,
                          [self = this->shared_from_this()](beast::error_code wec, std::size_t) {
                              if (wec) return self->failed(wec);
                              self->finish();
                          });
    }

    void finish() {
        if constexpr (kTls) {
            stream_.async_shutdown([self = this->shared_from_this()](beast::error_code) {});
        } else {
            beast::error_code ignored;
            stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
        }
    }

    AdminServer::Impl& impl_;
    Stream stream_;
    beast::flat_buffer buffer_;
    http::request_parser<http::empty_body> parser_;
    http::response<http::string_body> res_;
};

}  // namespace

void AdminServer::Impl::accept() {
    acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
        if (ec == net::error::operation_aborted) return;
        if (ec) {
            // Out of descriptors, say: try again shortly instead of spinning.
            logger()->warn("[admin] accept failed: {}", ec.message());
            retry.expires_after(std::chrono::milliseconds(100));
            retry.async_wait([this](beast::error_code wec) {
                if (!wec) accept();
            });
            return;
        }
        if (open >= cfg.max_connections) {
            refusedConnections.fetch_add(1, std::memory_order_relaxed);
            beast::error_code ignored;
            socket.close(ignored);
        } else if (tls) {
            std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(
                *this, beast::ssl_stream<beast::tcp_stream>(std::move(socket), *tls))
                ->run();
        } else {
            std::make_shared<Session<beast::tcp_stream>>(*this,
                                                         beast::tcp_stream(std::move(socket)))
                ->run();
        }
        accept();
    });
}

void AdminServer::Impl::respond(const http::request<http::empty_body>& req,
                                http::response<http::string_body>& res) {
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    if (!cfg.token.empty()) {
        auto auth = req[http::field::authorization];
        std::string_view given(auth.data(), auth.size());
        constexpr std::string_view kBearer = "Bearer ";
        bool ok = given.size() > kBearer.size() && given.substr(0, kBearer.size()) == kBearer &&
                  sameSecret(given.substr(kBearer.size()), cfg.token);
        if (!ok) {
            res.result(http::status::unauthorized);
            res.set(http::field::www_authenticate, "Bearer");
            res.body() = "unauthorized\n";
            return;
        }
    }
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
        res.result(http::status::method_not_allowed);
        res.set(http::field::allow, "GET, HEAD");
        res.body() = "method not allowed\n";
        return;
    }
    std::string_view target(req.target().data(), req.target().size());
    if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
    if (target == "/health") {
        res.result(http::status::ok);
        res.body() = "ok\n";
    } else if (target == "/ready") {
        bool r = ready.load(std::memory_order_acquire);
        res.result(r ? http::status::ok : http::status::service_unavailable);
        res.body() = r ? "ready\n" : "not ready\n";
    } else if (target == "/metrics") {
        res.result(http::status::ok);
        res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        std::string& out = res.body();
        {
            std::lock_guard lock(renderMutex);
            if (render) render(out);
        }
        ownMetrics(out);
    } else {
        res.result(http::status::not_found);
        res.body() = "not found\n";
    }
}

void AdminServer::Impl::ownMetrics(std::string& out) {
    MetricsText m(out);
    m.family("uaplex_ready", "gauge",
             "1 once every enabled transport listens, 0 before and during shutdown.");
    m.sample("uaplex_ready", std::uint64_t(ready.load(std::memory_order_relaxed) ? 1 : 0));
    m.family("uaplex_admin_connections_refused_total", "counter",
             "Admin connections closed at accept because max_connections were open.");
    m.sample("uaplex_admin_connections_refused_total",
             refusedConnections.load(std::memory_order_relaxed));
    m.family("uaplex_admin_timeouts_total", "counter",
             "Admin connections closed because their request did not arrive within "
             "idle_timeout_ms.");
    m.sample("uaplex_admin_timeouts_total", timedOut.load(std::memory_order_relaxed));
    m.family("uaplex_admin_responses_total", "counter",
             "Admin responses by HTTP status class (this scrape not yet counted).");
    static constexpr std::string_view kCodes[] = {"2xx", "400", "401", "404", "405", "other"};
    for (std::size_t i = 0; i < 6; ++i)
        m.sample("uaplex_admin_responses_total", {{"code", kCodes[i]}},
                 responses[i].load(std::memory_order_relaxed));
}

AdminServer::AdminServer(const config::AdminConfig& cfg) : impl_(std::make_unique<Impl>(cfg)) {}

AdminServer::~AdminServer() {
    stop();
}

void AdminServer::start() {
    Impl& s = *impl_;
    const auto& cfg = s.cfg;
    if (!cfg.tls_certificate.empty()) {
        s.tls.emplace(ssl::context::tls_server);
        s.tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1);
        beast::error_code ec;
        s.tls->use_certificate_chain_file(cfg.tls_certificate.string(), ec);
        if (ec)
            throw std::runtime_error("[admin] tls_certificate " + cfg.tls_certificate.string() +
                                     ": " + ec.message());
        s.tls->use_private_key_file(cfg.tls_private_key.string(), ssl::context::pem, ec);
        if (ec)
            throw std::runtime_error("[admin] tls_private_key " + cfg.tls_private_key.string() +
                                     ": " + ec.message());
    }
    beast::error_code ec;
    auto address = net::ip::make_address(cfg.host, ec);
    if (ec) throw std::runtime_error("[admin] listen: '" + cfg.host + "' is not an IP address");
    tcp::endpoint ep(address, cfg.port);
    s.acceptor.open(ep.protocol(), ec);
    if (!ec) s.acceptor.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) s.acceptor.bind(ep, ec);
    if (!ec) s.acceptor.listen(net::socket_base::max_listen_connections, ec);
    if (ec)
        throw std::runtime_error("[admin] cannot listen on " + cfg.listen + ": " + ec.message());
    s.boundPort = s.acceptor.local_endpoint().port();
    s.accept();
    s.thread = std::thread([&s] {
        ::pthread_setname_np(::pthread_self(), "uaplex-admin");
        s.ioc.run();
    });
    s.started = true;
    logger()->info("admin listener on {}://{}:{} (/metrics, /health, /ready)",
                   s.tls ? "https" : "http", cfg.host, s.boundPort);
}

void AdminServer::stop() noexcept {
    Impl& s = *impl_;
    if (!s.started) return;
    s.started = false;
    s.ready.store(false, std::memory_order_release);
    s.ioc.stop();
    if (s.thread.joinable()) s.thread.join();
    beast::error_code ignored;
    s.acceptor.close(ignored);
}

std::uint16_t AdminServer::port() const noexcept {
    return impl_->boundPort;
}

void AdminServer::setReady(bool ready) noexcept {
    impl_->ready.store(ready, std::memory_order_release);
}

void AdminServer::setMetrics(Render render) {
    std::lock_guard lock(impl_->renderMutex);
    impl_->render = std::move(render);
}

}  // namespace uaplex::admin
