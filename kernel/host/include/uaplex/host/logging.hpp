// SPDX-License-Identifier: Apache-2.0
// Server logging (spdlog). One logger, "uaplex"; plugin lines carry "[<plugin>]" in front of
// the message so that every line of a plugin names it.
#pragma once

#include <memory>
#include <string_view>

#include <spdlog/spdlog.h>

#include <uaplex/config/config.hpp>

namespace uaplex::host {

// Installs the server logger from [log]; throws config::ConfigError if the file sink
// cannot be opened. Safe to call again on reload.
void setupLogging(const config::LogConfig& log);
// Replaces the server logger (tests capture log lines with their own sink).
void setLogger(std::shared_ptr<spdlog::logger> l);
// The server logger (a stderr logger until setupLogging ran).
std::shared_ptr<spdlog::logger> logger();
spdlog::level::level_enum parseLevel(std::string_view level);

}  // namespace uaplex::host
