// SPDX-License-Identifier: Apache-2.0
// The admin listener of [admin]: GET/HEAD /metrics (the Prometheus text format), /health
// (200 while the process serves) and /ready (200 once every enabled transport listens, 503
// before and from the start of shutdown), over HTTP/1.1 or HTTPS, one request per connection.
//
// Threads: one of its own (one io_context), never the request path's. What /metrics renders
// is read there, from atomics and registries the request path updates without locks.
//
// Hostile input: at most max_connections open (more are closed at accept); a request's header
// is limited to max_request_header_bytes (431); the TLS handshake and the whole request must
// arrive within idle_timeout_ms (then the connection is closed); a body is refused (400);
// methods other than GET and HEAD are 405, other paths 404; with a token, 401 without it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <uaplex/config/config.hpp>

namespace uaplex::admin {

class AdminServer {
  public:
    // Appends the /metrics text to `out`; runs on the admin thread.
    using Render = std::function<void(std::string& out)>;

    explicit AdminServer(const config::AdminConfig& cfg);
    ~AdminServer();
    AdminServer(const AdminServer&) = delete;
    AdminServer& operator=(const AdminServer&) = delete;

    // Loads the TLS files, binds and listens, starts the thread. Throws std::runtime_error
    // with a one-line message.
    void start();
    // Closes the listener and every connection, joins the thread. Idempotent.
    void stop() noexcept;
    // The port it listens on (the configured one, or the kernel's pick for port 0).
    std::uint16_t port() const noexcept;

    void setReady(bool ready) noexcept;
    // What /metrics serves (empty: only the admin listener's own metrics). Waits for a
    // scrape in progress, so the parts `render` reads may go once this returns with {}.
    void setMetrics(Render render);

    struct Impl;  // admin_server.cpp

  private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace uaplex::admin
