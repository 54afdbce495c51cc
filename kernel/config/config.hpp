// The server configuration, read from TOML. Every key and its default is documented in
// docs/configuration.md; keep the two in step.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <toml++/toml.h>

namespace uaplex::config {

// A configuration that cannot be used. what() is one line, prefixed with the file and, for
// syntax errors, line:column.
class ConfigError : public std::runtime_error {
  public:
    using std::runtime_error::runtime_error;
};

struct LogConfig {
    std::string level = "info";                 // trace, debug, info, warn, error, critical, off
    std::string sink = "stdout";                // stdout, stderr, file
    std::filesystem::path file = "uaplex.log";  // when sink = "file"
};

// Reserved for the OPC UA server settings that arrive with the protocol.
struct ServerSection {
    std::string application_name = "uaplex";
    std::vector<std::string> endpoints{"opc.tcp://0.0.0.0:4840"};
};

// Which plugin serves each single-instance slot; empty = no plugin (kernel fallback).
struct SlotsConfig {
    std::string request_queue;
    std::string admission;
    std::string buffer_pool;
    std::string monitored_item_queue;
};

struct PluginConfig {
    std::string name;
    bool enabled = true;
    std::optional<std::filesystem::path> library;  // explicit path instead of the scan
    toml::table settings;  // the plugin's table without the host's keys (enabled, library)
    std::string position;  // "file:line:column" of the [plugins.<name>] table
    std::map<std::string, std::string> key_positions;  // settings key -> "file:line:column"
};

struct ServerConfig {
    std::filesystem::path file;  // where it was read from (empty for a string)
    LogConfig log;
    std::vector<std::filesystem::path> plugin_dirs;
    ServerSection server;
    SlotsConfig slots;
    std::vector<PluginConfig> plugins;  // in file order
    std::vector<std::string> warnings;  // unknown keys and similar, one line each

    const PluginConfig* plugin(std::string_view name) const;
};

// Where relative paths and placeholders resolve: `{exe_dir}` expands to the directory of the
// running executable; other relative paths are relative to the config file's directory.
struct PathContext {
    std::filesystem::path exe_dir;
};

ServerConfig load_file(const std::filesystem::path& file, const PathContext& paths);
ServerConfig parse_string(std::string_view text, const std::filesystem::path& source_name,
                          const PathContext& paths);

// "file:line:column" of a TOML node, for messages.
std::string position_of(const toml::node& node, const std::filesystem::path& file);

}  // namespace uaplex::config
