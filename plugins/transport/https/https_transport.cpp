// SPDX-License-Identifier: Apache-2.0
// transport-https: opc.https endpoints (Part 6 7.4). HTTP/1.1 over TLS 1.2/1.3 on Boost.Asio
// and OpenSSL. Each POST body is one whole request message, handed to the kernel with
// on_request (application/octet-stream: the binary encoding, application/opcua+uajson: the
// JSON encoding); the kernel's one send() per request is the response body. There is no
// UASC: the TLS connection protects the bytes and the endpoint is one shared SecureChannel.
// GET on the health and metrics paths answers from the transport itself.
//
// One io_context thread serves every socket; send/close come from any thread and are
// posted to it. A connection has at most one request in the kernel: the next request is
// read once the response is written (HTTP/1.1 answers in order anyway).
//
// Hardening: TLS 1.2 offers only ECDHE key exchange with AEAD suites; the health and metrics
// paths answer only the configured peers (loopback) or a trusted client certificate; the
// trusted list carries CRLs and is reloaded when its files change; connections are limited
// per peer address, and when slots run short the connection that has waited longest for its
// client is closed to make room (a flood of silent sockets cannot lock real clients out).
#include <utility>  // before Asio: 1.74 uses std::exchange without it under C++20

#include <sys/stat.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "address_block.hpp"
#include "uaplex/cpp/kinds.hpp"

namespace asio = boost::asio;
namespace ssl = asio::ssl;
using asio::ip::tcp;

namespace {

using uaplex::https::AddressBlock;
using uaplex::https::parseBlocks;

class HttpsTransport;

constexpr std::size_t kMaxHeaderBytes = 16 * 1024;

// Forward secrecy and authenticated encryption only: no static RSA key exchange, no CBC.
constexpr char kDefaultTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr char kDefaultTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";

using Clock = std::chrono::steady_clock;

// Verification of client certificates: a CRL is checked where the issuer has one in the
// trusted list; an issuer without a CRL is not an error (self-signed clients have none).
int verifyAllowingMissingCrl(int ok, X509_STORE_CTX* ctx) {
    if (!ok && X509_STORE_CTX_get_error(ctx) == X509_V_ERR_UNABLE_TO_GET_CRL) {
        X509_STORE_CTX_set_error(ctx, X509_V_OK);
        return 1;
    }
    return ok;
}

struct Connection : std::enable_shared_from_this<Connection> {
    Connection(HttpsTransport& t, tcp::socket s, ssl::context& ctx)
        : transport(t), stream(std::move(s), ctx), timer(stream.get_executor()) {}
    HttpsTransport& transport;
    ssl::stream<tcp::socket> stream;
    asio::steady_timer timer;
    asio::streambuf input{kMaxHeaderBytes};
    void* user = nullptr;  // the kernel's context, once accepted
    std::string endpointUrl;
    std::string peer;
    std::string peerAddress;  // the per-peer limit's key
    asio::ip::address address;
    Clock::time_point waitingSince;  // since when the connection waits for its client
    bool trustedClient = false;      // presented a client certificate that verified
    bool closed = false;
    bool closing = false;             // close once the current write is done
    bool inKernel = false;            // a request was handed over; its response is due
    bool json = false;                // that request's encoding
    bool keepAlive = true;            // after the current response
    std::uint32_t served = 0;         // requests on this connection
    std::vector<uaplex_buffer> body;  // the request body being read (pool buffers)
    std::size_t bodyRemaining = 0;
    std::vector<uaplex_buffer> response;  // the kernel's response being written
    std::string head;                     // status line and headers being written
    std::vector<asio::const_buffer> gather;
};

uaplex_connection* handle(Connection* c) {
    return reinterpret_cast<uaplex_connection*>(c);
}
Connection* from(uaplex_connection* c) {
    return reinterpret_cast<Connection*>(c);
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

// "opc.https://host:port/path" -> host and port (the port is required).
bool parseUrl(std::string_view url, std::string& host, std::uint16_t& port) {
    constexpr std::string_view kScheme = "opc.https://";
    if (url.substr(0, kScheme.size()) != kScheme) return false;
    std::string_view rest = url.substr(kScheme.size());
    std::string_view hostPart;
    if (!rest.empty() && rest.front() == '[') {
        auto end = rest.find(']');
        if (end == std::string_view::npos) return false;
        hostPart = rest.substr(1, end - 1);
        rest = rest.substr(end + 1);
    } else {
        auto end = rest.find(':');
        if (end == std::string_view::npos) return false;
        hostPart = rest.substr(0, end);
        rest = rest.substr(end);
    }
    if (rest.empty() || rest.front() != ':') return false;
    rest.remove_prefix(1);
    auto slash = rest.find('/');
    std::string_view p = rest.substr(0, slash);
    unsigned v = 0;
    auto r = std::from_chars(p.data(), p.data() + p.size(), v);
    if (r.ec != std::errc() || r.ptr != p.data() + p.size() || v == 0 || v > 65535) return false;
    host.assign(hostPart);
    port = std::uint16_t(v);
    return !host.empty();
}

struct Request {
    std::string_view method, target, version;
    bool hasLength = false;
    std::size_t contentLength = 0;
    bool chunked = false;
    bool close = false;
    bool keepAliveHeader = false;
    std::string_view contentType;
};

// Parses the request line and the headers we act on. False: a malformed request (400).
bool parseHead(std::string_view head, Request& r) {
    auto eol = head.find("\r\n");
    std::string_view line = head.substr(0, eol);
    auto sp1 = line.find(' ');
    auto sp2 = line.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 == sp1) return false;
    r.method = line.substr(0, sp1);
    r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    r.version = line.substr(sp2 + 1);
    if (r.version != "HTTP/1.1" && r.version != "HTTP/1.0") return false;
    if (r.target.empty() || r.method.empty()) return false;
    head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
    while (!head.empty()) {
        eol = head.find("\r\n");
        std::string_view h = head.substr(0, eol);
        head.remove_prefix(eol == std::string_view::npos ? head.size() : eol + 2);
        if (h.empty()) break;
        auto colon = h.find(':');
        if (colon == std::string_view::npos || colon == 0) return false;
        std::string_view name = h.substr(0, colon);
        std::string_view value = trim(h.substr(colon + 1));
        if (iequals(name, "Content-Length")) {
            std::size_t n = 0;
            auto res = std::from_chars(value.data(), value.data() + value.size(), n);
            if (res.ec != std::errc() || res.ptr != value.data() + value.size() || value.empty())
                return false;
            if (r.hasLength && n != r.contentLength) return false;  // smuggling guard
            r.hasLength = true;
            r.contentLength = n;
        } else if (iequals(name, "Transfer-Encoding")) {
            r.chunked = true;
        } else if (iequals(name, "Connection")) {
            if (iequals(value, "close")) r.close = true;
            if (iequals(value, "keep-alive")) r.keepAliveHeader = true;
        } else if (iequals(name, "Content-Type")) {
            r.contentType = trim(value.substr(0, value.find(';')));
        }
    }
    return true;
}

class HttpsTransport final : public uaplex::sdk::Transport {
  public:
    HttpsTransport(uaplex::sdk::Context ctx, const uaplex_transport_params& p)
        : Transport(ctx, p), tls_(ssl::context::tls_server), work_(asio::make_work_guard(io_)) {
        ctx.check_known_keys({"certificate", "private_key", "client_certificates", "trusted",
                              "max_connections", "keep_alive_timeout_ms", "max_body_size",
                              "max_requests_per_connection", "health_path", "metrics_path",
                              "tls12_ciphers", "tls13_ciphersuites", "monitoring_peers",
                              "monitoring_client_certificates", "max_connections_per_peer",
                              "trusted_reload_interval_ms"});
        if (!UAPLEX_HAS_FIELD(&p, uaplex_transport_params, on_request) || !params_.on_request)
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "the kernel does not take whole request messages");
        if (!UAPLEX_HAS_FIELD(&p, uaplex_transport_params, write_metrics))
            params_.write_metrics = nullptr;
        auto str = [&](std::string_view key, std::string_view def) {
            auto v = ctx.config_string(key);
            return std::string(v ? *v : def);
        };
        auto num = [&](std::string_view key, std::int64_t def, std::int64_t lo, std::int64_t hi) {
            std::int64_t v = ctx.config_int(key).value_or(def);
            if (v < lo || v > hi)
                throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                               std::string(key) + " is out of range");
            return v;
        };
        maxConnections_ = std::size_t(num("max_connections", 100, 1, 100000));
        maxPerPeer_ = std::size_t(num("max_connections_per_peer", 32, 1, 100000));
        reloadMs_ = std::uint32_t(num("trusted_reload_interval_ms", 5000, 100, 3600000));
        if (!parseBlocks(str("monitoring_peers", "127.0.0.0/8, ::1"), monitoringPeers_))
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "monitoring_peers: a list of addresses or CIDR blocks");
        monitoringByCertificate_ = ctx.config_bool("monitoring_client_certificates").value_or(true);
        keepAliveMs_ = std::uint32_t(num("keep_alive_timeout_ms", 30000, 100, 3600000));
        maxBody_ = std::size_t(num("max_body_size", 4 << 20, 1, std::int64_t(1) << 31));
        maxRequests_ = std::uint32_t(num("max_requests_per_connection", 1000, 1, 1 << 30));
        healthPath_ = str("health_path", "/health");
        metricsPath_ = str("metrics_path", "/metrics");
        if (UAPLEX_HAS_FIELD(&p, uaplex_transport_params, handshake_timeout_ms) &&
            params_.handshake_timeout_ms)
            handshakeMs_ = params_.handshake_timeout_ms;
        if (params_.max_message_size)
            maxBody_ = std::min<std::size_t>(maxBody_, params_.max_message_size);
        pieceSize_ = std::max<std::uint32_t>(params_.receive_buffer_size, 1024);

        // TLS 1.2 and 1.3 only; the server's certificate (PEM chain or DER, as the PKI store
        // keeps it in own/certs) and its PEM key.
        const std::string cert = str("certificate", "");
        const std::string key = str("private_key", "");
        if (cert.empty() || key.empty())
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "certificate and private_key are required");
        boost::system::error_code ec;
        tls_.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1 | ssl::context::single_dh_use);
        SSL_CTX* native = tls_.native_handle();
        SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
        SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION |
                                        SSL_OP_NO_COMPRESSION);
        const std::string ciphers = str("tls12_ciphers", kDefaultTls12Ciphers);
        if (SSL_CTX_set_cipher_list(native, ciphers.c_str()) != 1)
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "tls12_ciphers: no usable cipher in " + ciphers);
        const std::string suites = str("tls13_ciphersuites", kDefaultTls13Suites);
        if (SSL_CTX_set_ciphersuites(native, suites.c_str()) != 1)
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "tls13_ciphersuites: no usable suite in " + suites);
        ERR_clear_error();
        tls_.use_certificate_chain_file(cert, ec);
        if (ec) {
            ec.clear();
            tls_.use_certificate_file(cert, ssl::context::asn1, ec);
        }
        if (!ec) tls_.use_private_key_file(key, ssl::context::pem, ec);
        if (ec)
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "TLS certificate/key: " + ec.message());
        const std::string mode = str("client_certificates", "none");
        if (mode == "required" || mode == "optional") {
            // Trusted client certificates (or their issuers) and CRLs: every PEM or DER file
            // in `trusted` (and in its certs/ and crl/, the PKI store's layout). "optional": a
            // client may present none, but one it presents must verify, or the handshake
            // fails; a verified one opens the health and metrics paths.
            trustedDir_ = str("trusted", "");
            if (trustedDir_.empty())
                throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                               "client_certificates needs a trusted directory");
            std::string error;
            TrustList list;
            trustedStamp_ = stampOf(trustedDir_);
            if (!loadTrusted(trustedDir_, list, error))
                throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError, "trusted: " + error);
            SSL_CTX_set_cert_store(native, list.store);
            context().info("trusting " + std::to_string(list.certificates) +
                           " client certificate(s) and " + std::to_string(list.crls) +
                           " CRL(s) from " + trustedDir_);
            SSL_CTX_set_verify(
                native,
                SSL_VERIFY_PEER | (mode == "required" ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                &verifyAllowingMissingCrl);
            // No session resumption: a resumed session skips the certificate check, so a
            // certificate revoked (or removed) since would still get in.
            SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_OFF);
            SSL_CTX_set_options(native, SSL_OP_NO_TICKET);
            SSL_CTX_set_num_tickets(native, 0);
            verifyClients_ = true;
        } else if (mode != "none") {
            throw uaplex::sdk::StatusError(UAPLEX_BadConfigurationError,
                                           "client_certificates: none, optional or required");
        }
    }
    ~HttpsTransport() override { stop(); }

    uaplex_status start() override {
        if (thread_.joinable()) return UAPLEX_Good;
        if (verifyClients_) asio::post(io_, [this] { scheduleReload(); });
        thread_ = std::thread([this] { io_.run(); });
        return UAPLEX_Good;
    }

    uaplex_status stop() override {
        if (!thread_.joinable()) return UAPLEX_Good;
        std::promise<void> done;
        asio::post(io_, [this, &done] {
            stopping_ = true;
            reloadTimer_.cancel();
            for (auto& a : acceptors_) {
                boost::system::error_code ec;
                a->close(ec);
            }
            auto conns = connections_;
            for (auto& c : conns) finalize(c, UAPLEX_BadShutdown);
            done.set_value();
        });
        done.get_future().wait();
        work_.reset();
        io_.stop();
        thread_.join();
        return UAPLEX_Good;
    }

    uaplex_status scheme(uaplex_str* out) override {
        static constexpr char kScheme[] = "opc.https";
        *out = {kScheme, sizeof kScheme - 1};
        return UAPLEX_Good;
    }

    uaplex_status listen(uaplex_str endpoint_url) override {
        std::string url(endpoint_url.data, endpoint_url.len);
        std::string host;
        std::uint16_t port = 0;
        if (!parseUrl(url, host, port)) {
            context().error("not an opc.https URL with a port: " + url);
            return UAPLEX_BadTcpEndpointUrlInvalid;
        }
        boost::system::error_code ec;
        std::vector<tcp::endpoint> endpoints;
        auto addr = asio::ip::make_address(host, ec);
        if (!ec) {
            endpoints.emplace_back(addr, port);
        } else {
            tcp::resolver resolver(io_);
            auto results = resolver.resolve(host, std::to_string(port), tcp::resolver::passive, ec);
            if (ec) return UAPLEX_BadTcpEndpointUrlInvalid;
            for (const auto& r : results) endpoints.push_back(r.endpoint());
        }
        std::size_t opened = 0;
        for (const auto& ep : endpoints) {
            auto a = std::make_unique<tcp::acceptor>(io_);
            a->open(ep.protocol(), ec);
            if (!ec) a->set_option(asio::socket_base::reuse_address(true), ec);
            if (!ec && ep.address().is_v6()) a->set_option(asio::ip::v6_only(true), ec);
            if (!ec) a->bind(ep, ec);
            if (!ec) a->listen(asio::socket_base::max_listen_connections, ec);
            if (ec) {
                context().error("cannot listen on " + url + ": " + ec.message());
                continue;
            }
            tcp::acceptor* raw = a.get();
            {
                std::lock_guard lock(acceptorsMutex_);
                acceptors_.push_back(std::move(a));
            }
            asio::post(io_, [this, raw, url] { accept(raw, url); });
            ++opened;
        }
        return opened ? UAPLEX_Good : UAPLEX_BadResourceUnavailable;
    }

    // The kernel's response to the request in flight: all of it in one call.
    uaplex_status send(uaplex_connection* c, uaplex_buffer* buffers, size_t count) override {
        std::vector<uaplex_buffer> bufs(buffers, buffers + count);
        asio::post(io_, [this, self = from(c)->shared_from_this(), bufs = std::move(bufs)] {
            respond(self, bufs);
        });
        return UAPLEX_Good;
    }

    uaplex_status close(uaplex_connection* c, uaplex_status reason) override {
        asio::post(io_, [this, self = from(c)->shared_from_this(), reason] {
            if (self->closed) return;
            if (self->head.empty())
                finalize(self, reason);
            else
                self->closing = true;
        });
        return UAPLEX_Good;
    }

  private:
    // A new X509 store with the certificates and CRLs of `dir` (and of dir/certs, dir/crl).
    struct TrustList {
        X509_STORE* store = nullptr;
        std::size_t certificates = 0, crls = 0;
    };
    static std::vector<std::filesystem::path> trustedDirs(const std::string& dir) {
        std::vector<std::filesystem::path> dirs{dir};
        std::error_code ec;
        for (const char* sub : {"certs", "crl"})
            if (std::filesystem::is_directory(std::filesystem::path(dir) / sub, ec))
                dirs.push_back(std::filesystem::path(dir) / sub);
        return dirs;
    }
    static bool loadTrusted(const std::string& dir, TrustList& out, std::string& error) {
        X509_STORE* store = X509_STORE_new();
        if (!store) return error = "out of memory", false;
        // Revocation is checked along the whole chain, for every issuer with a CRL.
        X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK | X509_V_FLAG_CRL_CHECK_ALL);
        X509_STORE_set_verify_cb(store, &verifyAllowingMissingCrl);
        std::size_t certs = 0, crls = 0;
        for (const auto& d : trustedDirs(dir)) {
            std::error_code fec;
            for (const auto& entry : std::filesystem::directory_iterator(d, fec)) {
                std::error_code tec;
                if (!entry.is_regular_file(tec)) continue;
                std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(entry.path().c_str(), "r"),
                                                        &std::fclose);
                if (!f) continue;
                bool pem = false;
                if (STACK_OF(X509_INFO)* infos =
                        PEM_X509_INFO_read(f.get(), nullptr, nullptr, nullptr)) {
                    for (int i = 0; i < sk_X509_INFO_num(infos); ++i) {
                        X509_INFO* info = sk_X509_INFO_value(infos, i);
                        if (info->x509 && X509_STORE_add_cert(store, info->x509) == 1) ++certs;
                        if (info->crl && X509_STORE_add_crl(store, info->crl) == 1) ++crls;
                        pem = pem || info->x509 || info->crl;
                    }
                    sk_X509_INFO_pop_free(infos, X509_INFO_free);
                }
                if (!pem) {  // DER, as the PKI store's trusted/certs and trusted/crl hold them
                    ERR_clear_error();
                    std::rewind(f.get());
                    if (X509* x = d2i_X509_fp(f.get(), nullptr)) {
                        if (X509_STORE_add_cert(store, x) == 1) ++certs;
                        X509_free(x);
                    } else {
                        std::rewind(f.get());
                        if (X509_CRL* crl = d2i_X509_CRL_fp(f.get(), nullptr)) {
                            if (X509_STORE_add_crl(store, crl) == 1) ++crls;
                            X509_CRL_free(crl);
                        }
                    }
                }
                ERR_clear_error();
            }
            if (fec) {
                X509_STORE_free(store);
                error = d.string() + ": " + fec.message();
                return false;
            }
        }
        out = TrustList{store, certs, crls};
        return true;
    }
    // What identifies the trusted list's state: names, sizes, inodes and modification times
    // of its files (a file replaced in place changes it, not only an added or removed one).
    static std::string stampOf(const std::string& dir) {
        std::vector<std::string> parts;
        for (const auto& d : trustedDirs(dir)) {
            std::error_code ec;
            for (const auto& entry : std::filesystem::directory_iterator(d, ec)) {
                struct stat st {};
                if (::stat(entry.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
                parts.push_back(entry.path().string() + "|" + std::to_string(st.st_size) + "|" +
                                std::to_string(st.st_ino) + "|" +
                                std::to_string(st.st_mtim.tv_sec) + "." +
                                std::to_string(st.st_mtim.tv_nsec));
            }
        }
        std::sort(parts.begin(), parts.end());
        std::string out;
        for (const auto& p : parts) out += p + "\n";
        return out;
    }
    // io thread: every trusted_reload_interval_ms, reloads a changed trusted list; the new
    // list verifies new handshakes, and open connections whose certificate it no longer
    // accepts (revoked, removed) are closed.
    void scheduleReload() {
        reloadTimer_.expires_after(std::chrono::milliseconds(reloadMs_));
        reloadTimer_.async_wait([this](boost::system::error_code ec) {
            if (ec || stopping_) return;
            reloadIfChanged();
            scheduleReload();
        });
    }
    void reloadIfChanged() {
        std::string stamp = stampOf(trustedDir_);
        if (stamp == trustedStamp_) return;
        TrustList list;
        std::string error;
        if (!loadTrusted(trustedDir_, list, error)) {
            context().warn("trusted list not reloaded (the previous one stays): " + error);
            return;
        }
        trustedStamp_ = std::move(stamp);
        SSL_CTX_set_cert_store(tls_.native_handle(), list.store);  // frees the previous one
        context().info("trusted list reloaded: " + std::to_string(list.certificates) +
                       " client certificate(s), " + std::to_string(list.crls) + " CRL(s)");
        auto conns = connections_;
        for (const auto& c : conns)
            if (c->trustedClient && !stillTrusted(*c, list.store)) {
                context().info("closing " + c->peer +
                               ": its client certificate is no longer trusted");
                finalize(c, UAPLEX_BadCertificateRevoked);
            }
    }
    static bool stillTrusted(Connection& c, X509_STORE* store) {
        SSL* ssl = c.stream.native_handle();
        X509* leaf = SSL_get0_peer_certificate(ssl);
        if (!leaf) return true;
        std::unique_ptr<X509_STORE_CTX, void (*)(X509_STORE_CTX*)> ctx(X509_STORE_CTX_new(),
                                                                       &X509_STORE_CTX_free);
        if (!ctx || X509_STORE_CTX_init(ctx.get(), store, leaf, SSL_get_peer_cert_chain(ssl)) != 1)
            return false;
        X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_CLIENT);
        bool ok = X509_verify_cert(ctx.get()) == 1;
        ERR_clear_error();
        return ok;
    }

    void giveBack(uaplex_buffer& b) {
        if (b.data) params_.pool->give_back(params_.pool_self, &b, this);
        b.data = nullptr;
    }
    bool rent(std::size_t size, uaplex_buffer& out) {
        out = uaplex_buffer{};
        out.hdr = UAPLEX_HEADER_INIT(uaplex_buffer, UAPLEX_STYPE_BUFFER);
        return params_.pool->take(params_.pool_self, params_.pool_manager, std::uint32_t(size),
                                  this, nullptr, &out) == UAPLEX_Good;
    }

    void accept(tcp::acceptor* a, const std::string& url) {
        a->async_accept([this, a, url](boost::system::error_code ec, tcp::socket s) {
            if (stopping_ || !a->is_open()) return;
            if (!ec) admit(std::move(s), url);
            accept(a, url);
        });
    }

    // A connection that waits for its client (TLS handshake, the next request, a request
    // being read) may be closed to make room; one whose request is in the kernel or whose
    // response is being written may not.
    static bool evictable(const Connection& c) noexcept {
        return !c.closed && !c.inKernel && c.head.empty();
    }
    // Closes the connection that has waited longest, of `peer` (or, with none given, of the
    // peer holding the most connections), never `spare`; `admitted`: only one the kernel has
    // accepted (it holds a share of the kernel's budget). False when none may be closed.
    bool evictFor(const std::string* peer, const Connection* spare = nullptr,
                  bool admitted = false) {
        std::shared_ptr<Connection> victim;
        std::size_t victimPeerCount = 0;
        for (const auto& c : connections_) {
            if (!evictable(*c) || c.get() == spare || (peer && c->peerAddress != *peer) ||
                (admitted && !c->user))
                continue;
            std::size_t n = peerCounts_[c->peerAddress];
            if (!victim || n > victimPeerCount ||
                (n == victimPeerCount && c->waitingSince < victim->waitingSince)) {
                victim = c;
                victimPeerCount = n;
            }
        }
        if (!victim) return false;
        context().debug("closing the idle connection " + victim->peer + " to make room");
        ++evicted_;
        finalize(victim, UAPLEX_BadTcpNotEnoughResources);
        return true;
    }

    void admit(tcp::socket s, const std::string& url) {
        boost::system::error_code ec;
        auto remote = s.remote_endpoint(ec);
        if (ec) {
            s.close(ec);
            return;
        }
        std::string address = remote.address().to_string();
        auto count = peerCounts_.find(address);
        if (count != peerCounts_.end() && count->second >= maxPerPeer_ && !evictFor(&address)) {
            s.close(ec);
            context().debug("connection refused: max_connections_per_peer");
            return;
        }
        if (connections_.size() >= maxConnections_ && !evictFor(nullptr)) {
            s.close(ec);
            context().debug("connection refused: max_connections");
            return;
        }
        s.set_option(tcp::no_delay(true), ec);
        auto c = std::make_shared<Connection>(*this, std::move(s), tls_);
        c->address = remote.address();
        c->peerAddress = std::move(address);
        c->peer = c->peerAddress + ":" + std::to_string(remote.port());
        c->endpointUrl = url;
        c->waitingSince = Clock::now();
        connections_.insert(c);
        ++peerCounts_[c->peerAddress];
        arm(c, handshakeMs_);
        c->stream.async_handshake(
            ssl::stream_base::server, [this, c](boost::system::error_code ec) {
                if (c->closed) return;
                if (ec) {
                    // An untrusted or absent client certificate ends here, before the kernel.
                    context().debug("TLS handshake with " + c->peer + " failed: " + ec.message());
                    return finalize(c, UAPLEX_BadSecurityChecksFailed);
                }
                // With verify_peer a presented certificate that does not verify fails the
                // handshake: one that is there now is trusted.
                c->trustedClient = verifyClients_ &&
                                   SSL_get0_peer_certificate(c->stream.native_handle()) &&
                                   SSL_get_verify_result(c->stream.native_handle()) == X509_V_OK;
                auto accepted = [&] {
                    return params_.on_accepted(params_.user, handle(c.get()),
                                               {c->endpointUrl.data(), c->endpointUrl.size()},
                                               {c->peer.data(), c->peer.size()}, &c->user);
                };
                uaplex_status st = accepted();
                // The kernel's connection budget (of this peer, or of all) is spent: room is
                // made as for the transport's own slots, once, then the kernel is asked again.
                if (st == UAPLEX_BadServerTooBusy &&
                    (evictFor(&c->peerAddress, c.get(), true) || evictFor(nullptr, c.get(), true)))
                    st = accepted();
                if (st != UAPLEX_Good) {
                    c->user = nullptr;
                    return finalize(c, st, false);
                }
                readHead(c);
            });
    }

    // One timer per connection: handshake, idle keep-alive and reading a request.
    void arm(const std::shared_ptr<Connection>& c, std::uint32_t ms) {
        c->timer.expires_after(std::chrono::milliseconds(ms));
        c->timer.async_wait([this, c](boost::system::error_code ec) {
            if (ec || c->closed || c->inKernel) return;
            finalize(c, UAPLEX_BadTimeout);
        });
    }

    void readHead(const std::shared_ptr<Connection>& c) {
        if (c->closed) return;
        c->waitingSince = Clock::now();
        arm(c, keepAliveMs_);
        asio::async_read_until(
            c->stream, c->input, "\r\n\r\n",
            [this, c](boost::system::error_code ec, std::size_t headBytes) {
                if (c->closed) return;
                if (ec == asio::error::not_found)  // headers beyond kMaxHeaderBytes
                    return simple(c, 431, "Request Header Fields Too Large", false);
                if (ec) return finalize(c, UAPLEX_BadConnectionClosed);
                onHead(c, headBytes);
            });
    }

    void onHead(const std::shared_ptr<Connection>& c, std::size_t headBytes) {
        std::string head(asio::buffers_begin(c->input.data()),
                         asio::buffers_begin(c->input.data()) + std::ptrdiff_t(headBytes));
        c->input.consume(headBytes);
        Request r;
        if (!parseHead(head, r)) return simple(c, 400, "Bad Request", false);
        ++c->served;
        c->keepAlive =
            !r.close && (r.version == "HTTP/1.1" || r.keepAliveHeader) && c->served < maxRequests_;
        std::string_view path = r.target.substr(0, r.target.find('?'));
        if (r.method == "GET") {
            if (r.hasLength && r.contentLength) return simple(c, 400, "Bad Request", false);
            if ((path == healthPath_ || path == metricsPath_) && !monitoringAllowed(*c))
                return simple(c, 403, "Forbidden", c->keepAlive);
            if (path == healthPath_)
                return simple(c, 200, "OK", c->keepAlive, "application/json", R"({"status":"ok"})");
            if (path == metricsPath_ && params_.write_metrics) return metrics(c);
            return simple(c, 404, "Not Found", c->keepAlive);
        }
        if (r.method != "POST") return simple(c, 405, "Method Not Allowed", c->keepAlive);
        if (r.chunked || !r.hasLength) return simple(c, 411, "Length Required", false);
        // The body is refused unread: the connection cannot be reused.
        if (r.contentLength > maxBody_) return simple(c, 413, "Content Too Large", false);
        if (iequals(r.contentType, "application/octet-stream") ||
            iequals(r.contentType, "application/opcua+uabinary")) {
            c->json = false;
        } else if (iequals(r.contentType, "application/opcua+uajson") ||
                   iequals(r.contentType, "application/json")) {
            c->json = true;
        } else {
            // Unread body: close after the answer.
            return simple(c, 415, "Unsupported Media Type", false);
        }
        c->bodyRemaining = r.contentLength;
        readBody(c);
    }

    // Moves the body into pool buffers: first what is already buffered, then the socket.
    void readBody(const std::shared_ptr<Connection>& c) {
        while (c->bodyRemaining > 0) {
            if (c->body.empty() || c->body.back().used == c->body.back().length) {
                uaplex_buffer b;
                if (!rent(std::min<std::size_t>(pieceSize_, c->bodyRemaining), b))
                    return simple(c, 503, "Service Unavailable", false);
                b.used = 0;
                c->body.push_back(b);
            }
            uaplex_buffer& b = c->body.back();
            std::size_t room = std::min(b.length - b.used, c->bodyRemaining);
            std::size_t buffered = std::min(room, c->input.size());
            if (buffered > 0) {
                asio::buffer_copy(asio::buffer(b.data + b.used, buffered), c->input.data());
                c->input.consume(buffered);
                b.used += buffered;
                c->bodyRemaining -= buffered;
                continue;
            }
            c->stream.async_read_some(asio::buffer(b.data + b.used, room),
                                      [this, c](boost::system::error_code ec, std::size_t n) {
                                          if (c->closed) return;
                                          if (ec) return finalize(c, UAPLEX_BadConnectionClosed);
                                          c->body.back().used += n;
                                          c->bodyRemaining -= n;
                                          readBody(c);
                                      });
            return;
        }
        c->timer.cancel();
        c->inKernel = true;
        std::vector<uaplex_buffer> body;
        body.swap(c->body);  // ownership passes to the kernel
        params_.on_request(params_.user, c->user,
                           c->json ? UAPLEX_TRANSPORT_BODY_JSON : UAPLEX_TRANSPORT_BODY_BINARY,
                           body.data(), body.size());
    }

    void respond(const std::shared_ptr<Connection>& c, std::vector<uaplex_buffer> bufs) {
        if (c->closed || !c->inKernel) {
            for (auto& b : bufs) giveBack(b);
            return;
        }
        c->inKernel = false;
        std::size_t total = 0;
        for (const auto& b : bufs) total += b.used;
        c->head = "HTTP/1.1 200 OK\r\nContent-Type: ";
        c->head += c->json ? "application/opcua+uajson" : "application/octet-stream";
        c->head += "\r\nContent-Length: " + std::to_string(total) + "\r\n";
        c->head += c->keepAlive ? "\r\n" : "Connection: close\r\n\r\n";
        c->response = std::move(bufs);
        write(c, c->keepAlive);
    }

    // The health and metrics paths: for the configured peers, or a trusted client certificate.
    bool monitoringAllowed(const Connection& c) const noexcept {
        if (monitoringByCertificate_ && c.trustedClient) return true;
        for (const auto& b : monitoringPeers_)
            if (b.contains(c.address)) return true;
        return false;
    }

    void metrics(const std::shared_ptr<Connection>& c) {
        std::string text(64 * 1024, '\0');
        std::size_t len = 0;
        uaplex_status st = params_.write_metrics(params_.user, text.data(), text.size(), &len);
        if (st == UAPLEX_BadOutOfRange && len < (64u << 20)) {
            text.resize(len);
            st = params_.write_metrics(params_.user, text.data(), text.size(), &len);
        }
        if (st != UAPLEX_Good) return simple(c, 500, "Internal Server Error", c->keepAlive);
        text.resize(len);
        simple(c, 200, "OK", c->keepAlive, "text/plain; version=0.0.4", text);
    }

    // A response the transport writes itself (health, metrics, HTTP-level errors).
    void simple(const std::shared_ptr<Connection>& c, int status, std::string_view reason,
                bool keepAlive, std::string_view type = "text/plain", std::string_view body = {}) {
        std::string text = body.empty() ? std::string(reason) + "\n" : std::string(body);
        c->head = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) +
                  "\r\nContent-Type: " + std::string(type) +
                  "\r\nContent-Length: " + std::to_string(text.size()) + "\r\n" +
                  (keepAlive ? "" : "Connection: close\r\n") + "\r\n" + text;
        c->keepAlive = keepAlive;
        write(c, keepAlive);
    }

    void write(const std::shared_ptr<Connection>& c, bool thenRead) {
        c->gather.clear();
        c->gather.emplace_back(c->head.data(), c->head.size());
        for (const auto& b : c->response) c->gather.emplace_back(b.data, b.used);
        asio::async_write(c->stream, c->gather,
                          [this, c, thenRead](boost::system::error_code ec, std::size_t) {
                              for (auto& b : c->response) giveBack(b);
                              c->response.clear();
                              c->head.clear();
                              if (c->closed) return;
                              if (ec) return finalize(c, UAPLEX_BadConnectionClosed);
                              if (!thenRead || c->closing) return lingerThenClose(c);
                              readHead(c);
                          });
    }

    // Closing a socket with request bytes unread resets the connection, and a client still
    // sending (a body past max_body_size) can then lose the response written just before.
    // So the server stops sending and reads and drops what comes, for a bounded time and
    // amount, until the client closes.
    void lingerThenClose(const std::shared_ptr<Connection>& c) {
        boost::system::error_code ec;
        c->stream.lowest_layer().shutdown(tcp::socket::shutdown_send, ec);
        if (ec) return finalize(c, UAPLEX_Good);
        arm(c, kLingerMs);
        dropInput(c, 0);
    }
    void dropInput(const std::shared_ptr<Connection>& c, std::size_t dropped) {
        // Bytes the request left behind are dropped undecrypted: TLS is over for it.
        c->stream.next_layer().async_read_some(
            asio::buffer(dropScratch_),
            [this, c, dropped](boost::system::error_code ec, std::size_t n) {
                if (c->closed) return;
                if (ec || dropped + n >= kLingerBytes) return finalize(c, UAPLEX_Good);
                dropInput(c, dropped + n);
            });
    }
    static constexpr std::uint32_t kLingerMs = 2000;
    static constexpr std::size_t kLingerBytes = 16u << 20;
    std::array<char, 4096> dropScratch_;  // io thread: what lingering connections drop

    // The one place a connection ends: socket closed, buffers back, kernel told once.
    void finalize(const std::shared_ptr<Connection>& c, uaplex_status reason, bool notify = true) {
        if (c->closed) return;
        c->closed = true;
        for (auto& b : c->body) giveBack(b);
        c->body.clear();
        boost::system::error_code ec;
        c->timer.cancel();
        c->stream.lowest_layer().shutdown(tcp::socket::shutdown_both, ec);
        c->stream.lowest_layer().close(ec);
        if (connections_.erase(c)) {
            auto it = peerCounts_.find(c->peerAddress);
            if (it != peerCounts_.end() && --it->second == 0) peerCounts_.erase(it);
        }
        if (notify && c->user) params_.on_closed(params_.user, c->user, reason);
    }

    ssl::context tls_;
    asio::io_context io_;
    asio::executor_work_guard<asio::io_context::executor_type> work_;
    std::thread thread_;
    std::mutex acceptorsMutex_;
    std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
    std::unordered_set<std::shared_ptr<Connection>> connections_;  // io thread
    std::unordered_map<std::string, std::size_t> peerCounts_;      // io thread: per address
    std::uint64_t evicted_ = 0;
    bool stopping_ = false;
    std::size_t maxConnections_ = 100;
    std::size_t maxPerPeer_ = 32;
    std::vector<AddressBlock> monitoringPeers_;
    bool monitoringByCertificate_ = true;
    bool verifyClients_ = false;
    std::string trustedDir_, trustedStamp_;
    std::uint32_t reloadMs_ = 5000;
    asio::steady_timer reloadTimer_{io_};
    std::uint32_t keepAliveMs_ = 30000;
    std::uint32_t handshakeMs_ = 10000;
    std::size_t maxBody_ = 4 << 20;
    std::uint32_t maxRequests_ = 1000;
    std::uint32_t pieceSize_ = 65536;
    std::string healthPath_, metricsPath_;
};

}  // namespace

UAPLEX_PLUGIN(
    ("transport-https", "0.1.0",
     "opc.https transport (HTTPS with the binary and JSON encodings; Boost.Asio, OpenSSL)"),
    uaplex::sdk::TransportFactory<HttpsTransport>)
