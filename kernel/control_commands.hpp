// SPDX-License-Identifier: Apache-2.0
// `uaplex ctl`: the operator's commands over the control socket of [control] (status,
// sessions, close-session, reload, swap, log-level), the server's side and the client's.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <uaplex/admin/control_socket.hpp>
#include <uaplex/config/config.hpp>

namespace uaplex::host {
class Host;
}
namespace uaplex::server {
class Server;
}

namespace uaplex::cli {

// What the commands act on; main owns every part. `mutex` serializes the commands that
// change the configuration with the SIGHUP reload.
struct ControlTarget {
    config::ServerConfig& cfg;  // the running configuration (under mutex)
    std::mutex& mutex;
    host::Host& host;
    server::Server& server;
    // The SIGHUP reload (under mutex): "" when done, else why the running configuration stays.
    std::function<std::string()> reload;
    std::chrono::steady_clock::time_point started;
};

// Runs one command on the control thread.
admin::ControlReply runControlCommand(ControlTarget& target,
                                      const std::vector<std::string_view>& words);

// argv[0] is "ctl". Returns the process exit code (0 done, 1 refused or no server, 2 usage).
int ctlCommand(int argc, char** argv, const char* defaultConfig,
               const std::filesystem::path& exeDir);

}  // namespace uaplex::cli
