// SPDX-License-Identifier: Apache-2.0
#include "control_commands.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <set>

#include <uaplex/host/logging.hpp>
#include <uaplex/host/plugin_host.hpp>
#include <uaplex/server/server.hpp>
#include <uaplex/session/session_manager.hpp>
#include <uaplex/version.hpp>

namespace uaplex::cli {

namespace {

using admin::ControlReply;

constexpr const char* kHelp =
    "commands:\n"
    "  status                     version, uptime, endpoints, plugins and counts\n"
    "  sessions                   every session: id, name, user, peer, since, subscriptions\n"
    "  close-session ID           closes the session (ns=1;g=<guid>) and its subscriptions\n"
    "  reload                     re-reads the configuration file, as SIGHUP does\n"
    "  swap request_queue NAME    hot-swaps the request queue until the next reload\n"
    "  log-level LEVEL            trace, debug, info, warn, error, critical or off\n"
    "  help                       this list\n";

// A client's strings (names, URIs) go into a line-and-tab format: no control characters.
std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) out += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? '?' : c;
    return out.empty() ? "-" : out;
}

std::string utcText(std::int64_t unixMs) {
    std::time_t t = std::time_t(unixMs / 1000);
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

ControlReply status(ControlTarget& t) {
    std::string out;
    auto line = [&out](std::string_view key, const std::string& value) {
        out.append(key).append(": ").append(value).append("\n");
    };
    auto up = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() -
                                                               t.started)
                  .count();
    line("version", std::string(kVersion) + " (plugin ABI " +
                        std::to_string(UAPLEX_ABI_VERSION_MAJOR) + "." +
                        std::to_string(UAPLEX_ABI_VERSION_MINOR) + ")");
    line("pid", std::to_string(::getpid()));
    line("uptime_seconds", std::to_string(up));
    std::lock_guard lock(t.mutex);
    line("configuration", t.cfg.file.string());
    for (const auto& e : t.cfg.server.endpoints) line("endpoint", e);
    line("request_queue", t.host.requestQueue().pluginName());
    line("log_level", std::string(spdlog::level::to_string_view(host::logger()->level()).data()));
    auto& sessions = t.server.sessions();
    line("sessions", std::to_string(sessions.count()));
    line("sessions_not_activated", std::to_string(sessions.unactivatedCount()));
    line("connections", std::to_string(t.server.connectionCount()));
    line("subscriptions", std::to_string(t.server.subscriptionCount()));
    line("monitored_items", std::to_string(t.server.monitoredItemCount()));
    for (const auto& p : t.host.plugins())
        line("plugin", p.name + " " + p.version + " " + p.kinds +
                           (p.instantiated ? "" : " (not instantiated)") + " " + p.path);
    return {true, out};
}

ControlReply sessions(ControlTarget& t) {
    std::string out =
        "session_id\tname\tapplication_uri\tuser\tpeer\tsince\tchannel\tactivated\tsubscriptions"
        "\tmonitored_items\n";
    for (const auto& s : t.server.sessionInfos()) {
        out += s.sessionId + '\t' + printable(s.name) + '\t' + printable(s.applicationUri) + '\t' +
               printable(s.user) + '\t' + printable(s.peer) + '\t' + utcText(s.createdUnixMs) +
               '\t' + std::to_string(s.channelId) + '\t' + (s.activated ? "yes" : "no") + '\t' +
               std::to_string(s.subscriptions) + '\t' + std::to_string(s.monitoredItems) + '\n';
    }
    return {true, out};
}

ControlReply swapRequestQueue(ControlTarget& t, std::string_view name) {
    std::lock_guard lock(t.mutex);
    config::ServerConfig next = t.cfg;
    next.slots.request_queue = std::string(name);
    if (const config::PluginConfig* pc = next.plugin(name)) {
        if (!pc->enabled) return {false, "plugin '" + std::string(name) + "' is disabled"};
    } else {
        // Not in the file: the plugin with its defaults.
        config::PluginConfig defaults;
        defaults.name = std::string(name);
        next.plugins.push_back(std::move(defaults));
    }
    std::string before = t.host.requestQueue().pluginName();
    t.host.reload(next);  // HostError: nothing changed
    t.cfg = std::move(next);
    host::logger()->info("uaplex ctl: request_queue '{}' -> '{}' (until the next reload)", before,
                         name);
    return {true, "request_queue: " + before + " -> " + std::string(name) + "\n"};
}

ControlReply logLevel(ControlTarget& t, std::string_view level) {
    static const std::set<std::string_view> levels{"trace", "debug",    "info", "warn",
                                                   "error", "critical", "off"};
    if (!levels.contains(level))
        return {false, "log-level: one of trace, debug, info, warn, error, critical, off"};
    std::lock_guard lock(t.mutex);
    host::logger()->set_level(host::parseLevel(level));
    // A later reload sets the file's level again when it differs.
    t.cfg.log.level = std::string(level);
    host::logger()->info("uaplex ctl: log level {}", level);
    return {true, "log_level: " + std::string(level) + "\n"};
}

}  // namespace

ControlReply runControlCommand(ControlTarget& target, const std::vector<std::string_view>& w) {
    const std::string_view cmd = w[0];
    auto args = w.size() - 1;
    if (cmd == "help" && args == 0) return {true, kHelp};
    if (cmd == "status" && args == 0) return status(target);
    if (cmd == "sessions" && args == 0) return sessions(target);
    if (cmd == "close-session" && args == 1) {
        if (!target.server.closeSessionById(w[1])) return {false, "no session " + printable(w[1])};
        host::logger()->info("uaplex ctl: closed session {}", w[1]);
        return {true, "closed " + std::string(w[1]) + "\n"};
    }
    if (cmd == "reload" && args == 0) {
        std::string why = target.reload();
        if (!why.empty()) return {false, why};
        return {true, "configuration reloaded\n"};
    }
    if (cmd == "swap" && args == 2 && w[1] == "request_queue")
        return swapRequestQueue(target, w[2]);
    if (cmd == "log-level" && args == 1) return logLevel(target, w[1]);
    static const std::set<std::string_view> known{"help",   "status", "sessions", "close-session",
                                                  "reload", "swap",   "log-level"};
    if (known.contains(cmd))
        return {false, "wrong arguments for " + std::string(cmd) + " (try: help)"};
    return {false, "unknown command '" + printable(cmd.substr(0, 64)) + "' (try: help)"};
}

namespace {

void ctlUsage(std::FILE* to) {
    std::fprintf(to,
                 "usage: uaplex ctl [--config <file> | --socket <path>] [--timeout <ms>] "
                 "<command> [args]\n"
                 "  --config <file>  the server's configuration: its [control] socket (default: "
                 "etc/uaplex.toml)\n"
                 "  --socket <path>  the control socket itself\n"
                 "  --timeout <ms>   how long to wait for the answer (default 60000)\n"
                 "%s",
                 kHelp);
}

}  // namespace

int ctlCommand(int argc, char** argv, const char* defaultConfig,
               const std::filesystem::path& exeDir) {
    std::filesystem::path configFile = defaultConfig;
    std::string socket;
    std::uint32_t timeoutMs = 60000;
    int i = 1;
    for (; i < argc; ++i) {
        std::string_view a = argv[i];
        if (a == "--config" && i + 1 < argc) {
            configFile = argv[++i];
        } else if (a == "--socket" && i + 1 < argc) {
            socket = argv[++i];
        } else if (a == "--timeout" && i + 1 < argc) {
            char* end = nullptr;
            unsigned long v = std::strtoul(argv[++i], &end, 10);
            if (end == nullptr || *end != 0 || v == 0 || v > 3600000) {
                std::fprintf(stderr, "uaplex ctl: error: --timeout takes 1 to 3600000 ms\n");
                return 2;
            }
            timeoutMs = std::uint32_t(v);
        } else if (a == "--help" || a == "-h") {
            ctlUsage(stdout);
            return 0;
        } else if (a.starts_with("--")) {
            std::fprintf(stderr, "uaplex ctl: error: unknown option '%s'\n", argv[i]);
            ctlUsage(stderr);
            return 2;
        } else {
            break;
        }
    }
    if (i >= argc) {
        ctlUsage(stderr);
        return 2;
    }
    std::string command;
    for (; i < argc; ++i) {
        if (!command.empty()) command += ' ';
        command += argv[i];
    }
    if (command.find('\n') != std::string::npos) {
        std::fprintf(stderr, "uaplex ctl: error: a command is one line\n");
        return 2;
    }
    if (socket.empty()) {
        try {
            auto cfg = config::loadFile(configFile, config::PathContext{exeDir});
            if (!cfg.control.enabled) {
                std::fprintf(stderr, "uaplex ctl: error: [control] is not enabled in %s\n",
                             configFile.c_str());
                return 1;
            }
            socket = cfg.control.socket.string();
        } catch (const std::exception& e) {
            std::fprintf(stderr, "uaplex ctl: error: %s\n", e.what());
            return 1;
        }
    }
    std::string answer;
    try {
        answer = admin::controlRequest(socket, command, timeoutMs);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "uaplex ctl: error: %s\n", e.what());
        return 1;
    }
    if (answer.starts_with("OK\n")) {
        std::fwrite(answer.data() + 3, 1, answer.size() - 3, stdout);
        return 0;
    }
    if (answer.starts_with("ERR ")) {
        std::fprintf(stderr, "uaplex ctl: error: %s", answer.c_str() + 4);
        if (!answer.ends_with('\n')) std::fputc('\n', stderr);
        return 1;
    }
    std::fprintf(stderr, "uaplex ctl: error: the server's answer is not understood\n");
    return 1;
}

}  // namespace uaplex::cli
