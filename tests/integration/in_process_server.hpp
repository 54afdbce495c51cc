// SPDX-License-Identifier: Apache-2.0
// A server in the test's own process, so that the test can count what the server threads do
// (allocations, locks, pooled buffers): the test configuration (warn log on stderr, the built
// plugins, one opc.tcp endpoint on a free port) followed by the test's own tables.
#pragma once

#include <memory>
#include <string>

#include <uaplex/config/config.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/server/server.hpp>
#include <uaplex/server/service_handler.hpp>
#include "support/server_process.hpp"

namespace uaplex::test {

class InProcessServer {
  public:
    // `tables`: the TOML after [server], e.g. "[slots]\nrequest_queue =
    // \"fifo\"\n[plugins.fifo]\n".
    explicit InProcessServer(const std::string& tables, const char* name = "test.toml")
        : port(freePort()), cfg(config::parseString(toml(port, tables), name, {})) {
        host.load(cfg);
        host.start();
        services = server::makeServiceHandler(cfg, host);
        server = std::make_unique<server::Server>(cfg, host, *services);
        server->start();
    }
    ~InProcessServer() {
        server->stop();
        services.reset();
        host.shutdown();
    }
    InProcessServer(const InProcessServer&) = delete;
    InProcessServer& operator=(const InProcessServer&) = delete;

    const std::uint16_t port;
    const config::ServerConfig cfg;
    host::Host host;
    std::unique_ptr<server::ServiceHandler> services;
    std::unique_ptr<server::Server> server;

  private:
    static std::string toml(std::uint16_t port, const std::string& tables) {
        return "[log]\nlevel = \"warn\"\nsink = \"stderr\"\n[host]\nplugin_dirs = "
               "[\"" UAPLEX_PLUGIN_DIR "\"]\n[server]\nendpoints = [\"opc.tcp://127.0.0.1:" +
               std::to_string(port) + "\"]\n" + tables;
    }
};

}  // namespace uaplex::test
