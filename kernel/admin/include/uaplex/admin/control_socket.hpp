// SPDX-License-Identifier: Apache-2.0
// The operator's control socket of [control] (`uaplex ctl`): a Unix stream socket taking one
// command line per connection and answering "OK" or "ERR <why>" on the first line, the text
// of the answer after it, then closing.
//
// Threads: one of its own; commands run there, one at a time, never on the request path.
//
// Hostile input: only the server's user (or root) may connect: the socket is 0600 in a
// directory of its own that is 0700, and the peer's uid (SO_PEERCRED) is checked besides. A
// command line is at most max_request_bytes and must arrive within timeout_ms, its answer
// must be taken within timeout_ms; otherwise the connection is closed.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <uaplex/config/config.hpp>

namespace uaplex::admin {

struct ControlReply {
    bool ok = true;
    std::string text;  // ok: the answer's body; otherwise the reason (one line)
};

class ControlSocket {
  public:
    // A command as words (split on spaces and tabs); runs on the control thread.
    using Handler = std::function<ControlReply(const std::vector<std::string_view>& words)>;

    ControlSocket(const config::ControlConfig& cfg, Handler handler);
    ~ControlSocket();
    ControlSocket(const ControlSocket&) = delete;
    ControlSocket& operator=(const ControlSocket&) = delete;

    // Creates the directory (0700) if missing, removes a stale socket file no server answers
    // on, binds (0600), listens and starts the thread. Throws std::runtime_error with one line
    // (another server answers on the path, the path is no socket, a system call failed).
    void start();
    // Closes the listener, removes the socket file, joins the thread. Idempotent.
    void stop() noexcept;

    struct Impl;  // control_socket.cpp

  private:
    std::unique_ptr<Impl> impl_;
};

// The client side (`uaplex ctl`): sends `command` (one line) to the socket at `path` and
// returns the whole answer; throws std::runtime_error when no server answers there.
std::string controlRequest(const std::string& path, std::string_view command,
                           std::uint32_t timeoutMs);

}  // namespace uaplex::admin
