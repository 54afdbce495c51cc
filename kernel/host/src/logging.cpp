// SPDX-License-Identifier: Apache-2.0
#include <uaplex/host/logging.hpp>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <mutex>

namespace uaplex::host {
namespace {
std::mutex g_mutex;
std::shared_ptr<spdlog::logger> g_logger;
constexpr const char* kPattern = "%Y-%m-%d %H:%M:%S.%e %-5l %v";
}  // namespace

spdlog::level::level_enum parseLevel(std::string_view level) {
    return spdlog::level::from_str(std::string(level));
}

void setupLogging(const config::LogConfig& log) {
    std::shared_ptr<spdlog::logger> l;
    try {
        if (log.sink == "file") {
            l = std::make_shared<spdlog::logger>(
                "uaplex", std::make_shared<spdlog::sinks::basic_file_sink_mt>(log.file.string()));
        } else if (log.sink == "stderr") {
            l = std::make_shared<spdlog::logger>("uaplex",
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
        } else {
            l = std::make_shared<spdlog::logger>("uaplex",
                                                 std::make_shared<spdlog::sinks::stdout_sink_mt>());
        }
    } catch (const spdlog::spdlog_ex& e) {
        throw config::ConfigError("[log] file " + log.file.string() + ": " + e.what());
    }
    l->set_pattern(kPattern);
    l->set_level(parseLevel(log.level));
    // Warnings and errors must reach the file or terminal before a crash or exit.
    l->flush_on(spdlog::level::warn);
    std::lock_guard lock(g_mutex);
    g_logger = std::move(l);
}

void setLogger(std::shared_ptr<spdlog::logger> l) {
    std::lock_guard lock(g_mutex);
    g_logger = std::move(l);
}

std::shared_ptr<spdlog::logger> logger() {
    std::lock_guard lock(g_mutex);
    if (!g_logger) {
        g_logger = std::make_shared<spdlog::logger>(
            "uaplex", std::make_shared<spdlog::sinks::stderr_sink_mt>());
        g_logger->set_pattern(kPattern);
        g_logger->set_level(spdlog::level::info);
    }
    return g_logger;
}

}  // namespace uaplex::host
