// SPDX-License-Identifier: Apache-2.0
// uaplex: loads the configuration, loads and starts the enabled plugins, and runs until
// SIGINT or SIGTERM. SIGHUP (or `uaplex ctl reload`) re-reads the configuration and applies
// slot changes; a bad new file is reported and the running configuration stays.
#include <pthread.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>

#include <uaplex/admin/admin_server.hpp>
#include <uaplex/admin/control_socket.hpp>
#include <uaplex/config/config.hpp>
#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/server/server.hpp>
#include <uaplex/server/service_handler.hpp>
#include <uaplex/version.hpp>
#include "control_commands.hpp"
#include "pki_tool.hpp"
#include "users_cli.hpp"

namespace fs = std::filesystem;
using uaplex::config::ConfigError;
using uaplex::host::HostError;
using uaplex::host::logger;

namespace {

// Descriptors the server needs besides one per connection: listeners, eventfds, epoll,
// plugin libraries, log and PKI files.
constexpr rlim_t kSpareDescriptors = 64;

// Every connection is a descriptor: the soft open-file limit (often 1024) goes up to the
// hard limit at start, and a max_channels beyond what that allows is reported.
void raiseOpenFileLimit(std::uint32_t maxChannels) {
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t before = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &rl) == 0)
            logger()->info("open file limit raised from {} to {}", before, rl.rlim_cur);
        else
            ::getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur != RLIM_INFINITY && rlim_t{maxChannels} + kSpareDescriptors > rl.rlim_cur)
        logger()->warn(
            "max_channels = {} exceeds what the open file limit of {} allows (about {} "
            "connections); raise the hard limit (ulimit -Hn, systemd LimitNOFILE=)",
            maxChannels, rl.rlim_cur,
            rl.rlim_cur > kSpareDescriptors ? rl.rlim_cur - kSpareDescriptors : 0);
}

void usage() {
    std::printf(
        "usage: uaplex [--config <file>]\n"
        "       uaplex users add|remove|list ... (uaplex users --help)\n"
        "       uaplex pki [--config <file> | --pki <dir>] <command>  (uaplex pki --help)\n"
        "       uaplex ctl [--config <file> | --socket <path>] <command>  (uaplex ctl --help)\n"
        "  --config <file>  configuration file (default: etc/uaplex.toml)\n"
        "  --version        print the version and exit\n");
}

fs::path exeDir() {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? fs::current_path() : self.parent_path();
}

void logConfigWarnings(const uaplex::config::ServerConfig& cfg) {
    for (const auto& w : cfg.warnings) logger()->warn("{}", w);
}

// An error before or during startup: one line on stderr, and in the log when the log is not
// the terminal already.
int fail(const std::string& message, bool logging_ready, const std::string& sink) {
    if (logging_ready) logger()->error("{}", message);
    if (!logging_ready || sink == "file")
        std::fprintf(stderr, "uaplex: error: %s\n", message.c_str());
    return 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::strcmp(argv[1], "users") == 0)
        return uaplex::cli::usersCommand(argc - 1, argv + 1, "etc/uaplex.toml");
    fs::path config_file = "etc/uaplex.toml";
    if (argc > 1 && std::strcmp(argv[1], "pki") == 0)
        return runPkiTool(argc - 2, argv + 2, exeDir());
    if (argc > 1 && std::strcmp(argv[1], "ctl") == 0)
        return uaplex::cli::ctlCommand(argc - 1, argv + 1, "etc/uaplex.toml", exeDir());
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--config" && i + 1 < argc) {
            config_file = argv[++i];
        } else if (a.rfind("--config=", 0) == 0) {
            config_file = a.substr(9);
        } else if (a == "--version") {
            std::printf("uaplex %.*s (plugin ABI %u.%u)\n", int(uaplex::kVersion.size()),
                        uaplex::kVersion.data(), UAPLEX_ABI_VERSION_MAJOR,
                        UAPLEX_ABI_VERSION_MINOR);
            return 0;
        } else if (a == "--help" || a == "-h") {
            usage();
            return 0;
        } else {
            std::fprintf(stderr, "uaplex: error: unknown argument '%s'\n", a.c_str());
            usage();
            return 2;
        }
    }

#if defined(__GLIBC__)
    // glibc raises its mmap and trim thresholds whenever a large block is freed (up to 32 and
    // 64 MiB), after which what a bulk deletion frees (a million items' index vectors) stays
    // in the heaps for good. Fixed at the defaults, large blocks are mapped and unmapped and
    // free heap tops go back to the kernel.
    ::mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    ::mallopt(M_TRIM_THRESHOLD, 128 * 1024);
#endif

    // Signals are taken synchronously by the main thread (sigwait); every thread started
    // later inherits the mask, so no handler ever runs inside arbitrary code.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    const uaplex::config::PathContext paths{exeDir()};
    uaplex::config::ServerConfig cfg;
    try {
        cfg = uaplex::config::loadFile(config_file, paths);
        uaplex::host::setupLogging(cfg.log);
    } catch (const ConfigError& e) {
        return fail(e.what(), false, "");
    }
    logConfigWarnings(cfg);
    logger()->info("uaplex {} starting (plugin ABI {}.{}), configuration {}", uaplex::kVersion,
                   UAPLEX_ABI_VERSION_MAJOR, UAPLEX_ABI_VERSION_MINOR, cfg.file.string());
    for (const auto& d : cfg.plugin_dirs) logger()->info("plugin directory {}", d.string());
    raiseOpenFileLimit(cfg.server.limits.max_channels);

    // The admin listener first: /health answers while the plugins load, /ready says 503
    // until every transport listens.
    std::unique_ptr<uaplex::admin::AdminServer> admin;
    if (cfg.admin.enabled) {
        try {
            admin = std::make_unique<uaplex::admin::AdminServer>(cfg.admin);
            admin->start();
        } catch (const std::exception& e) {
            return fail(e.what(), true, cfg.log.sink);
        }
    }

    uaplex::host::Host host;
    // Until the server attaches its request path, nothing is enqueued.
    host.requestQueue().setCompletion([](uaplex_request_entry* e, uaplex_status st) {
        logger()->debug("request {} completed by the queue with 0x{:08X}", e->request_id, st);
    });
    try {
        host.load(cfg);
        host.start();
    } catch (const HostError& e) {
        return fail(e.what(), true, cfg.log.sink);
    }
    // The services (address space, node managers) and the protocol stack in front of them.
    std::unique_ptr<uaplex::server::ServiceHandler> services;
    std::unique_ptr<uaplex::server::Server> server;
    try {
        services = uaplex::server::makeServiceHandler(cfg, host);
        server = std::make_unique<uaplex::server::Server>(cfg, host, *services);
        server->start();
    } catch (const std::exception& e) {
        if (admin) admin->stop();
        server.reset();
        services.reset();
        host.shutdown();
        return fail(e.what(), true, cfg.log.sink);
    }
    if (admin) {
        admin->setMetrics([&server](std::string& out) { server->writeMetrics(out); });
    }

    // The reload of SIGHUP and `uaplex ctl reload`; commands that change the configuration
    // hold configMutex, so a signal and a command never apply at once.
    std::mutex configMutex;
    auto reload = [&]() -> std::string {
        std::lock_guard lock(configMutex);
        logger()->info("reloading {}", cfg.file.string());
        std::string failure;
        try {
            auto next = uaplex::config::loadFile(config_file, paths);
            host.reload(next);
            if (host.takeMiQueueChange()) server->reloadMonitoredItemQueues();
            if (next.log.level != cfg.log.level || next.log.sink != cfg.log.sink ||
                next.log.file != cfg.log.file)
                uaplex::host::setupLogging(next.log);
            logConfigWarnings(next);
            if (next.control != cfg.control)
                logger()->warn("[control] changes take effect after a restart");
            if (next.alarms != cfg.alarms)  // the running alarms keep their nodes and state
                logger()->warn("[[alarms]] changes take effect after a restart");
            cfg = std::move(next);
            logger()->info("configuration reloaded");
        } catch (const std::exception& e) {
            logger()->error("reload failed, keeping the running configuration: {}", e.what());
            failure = std::string("reload failed, keeping the running configuration: ") + e.what();
        }
        // The users file of [access] is re-read; the rest of [access] needs a restart.
        try {
            server->reloadUsers();
        } catch (const std::exception& e) {
            logger()->error("users file not reloaded, keeping the users: {}", e.what());
            if (failure.empty())
                failure = std::string("users file not reloaded, keeping the users: ") + e.what();
        }
        return failure;
    };

    uaplex::cli::ControlTarget control_target{
        cfg, configMutex, host, *server, reload, std::chrono::steady_clock::now()};
    std::unique_ptr<uaplex::admin::ControlSocket> control;
    if (cfg.control.enabled) {
        control = std::make_unique<uaplex::admin::ControlSocket>(
            cfg.control, [&control_target](const std::vector<std::string_view>& words) {
                return uaplex::cli::runControlCommand(control_target, words);
            });
        try {
            control->start();
        } catch (const std::exception& e) {
            if (admin) admin->stop();
            server->stop();
            server.reset();
            services.reset();
            host.shutdown();
            return fail(e.what(), true, cfg.log.sink);
        }
    }
    // Ready once everything an operator or a probe may use answers: the endpoints and ctl.
    if (admin) admin->setReady(true);
    logger()->info("running; send SIGINT or SIGTERM to stop, SIGHUP to reload");

    for (;;) {
        int sig = 0;
        if (sigwait(&signals, &sig) != 0) continue;
        if (sig == SIGHUP) {
            logger()->info("SIGHUP");
            reload();
            continue;
        }
        logger()->info("{}: stopping", sig == SIGINT ? "SIGINT" : "SIGTERM");
        break;
    }
    // No command runs from here on: they reach into the server.
    if (control) control->stop();
    // Not ready from here on; /metrics keeps answering while the requests drain.
    if (admin) admin->setReady(false);
    server->stop();
    if (admin) admin->setMetrics({});
    server.reset();
    services.reset();
    host.shutdown();
    if (admin) admin->stop();
    logger()->info("stopped");
    logger()->flush();
    return 0;
}
