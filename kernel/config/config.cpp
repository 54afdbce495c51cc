#include "config/config.hpp"

#include <fstream>
#include <set>
#include <sstream>

namespace uaplex::config {
namespace fs = std::filesystem;

namespace {

std::string file_label(const fs::path& file) {
    return file.empty() ? "<config>" : file.string();
}

[[noreturn]] void fail(const toml::node& node, const fs::path& file, const std::string& what) {
    throw ConfigError(position_of(node, file) + ": " + what);
}

// Warns about keys of a server table that the server does not know.
void check_keys(const toml::table& table, std::initializer_list<std::string_view> known,
                const std::string& table_name, const fs::path& file, ServerConfig& out) {
    for (auto&& [key, node] : table) {
        bool found = false;
        for (auto k : known) found = found || k == key.str();
        if (!found) {
            out.warnings.push_back(position_of(node, file) + ": unknown key '" +
                                   std::string(key.str()) + "' in [" + table_name + "]");
        }
    }
}

const toml::table* sub_table(const toml::table& root, std::string_view name, const fs::path& file) {
    const toml::node* node = root.get(name);
    if (!node) return nullptr;
    if (!node->is_table()) fail(*node, file, "'" + std::string(name) + "' must be a table");
    return node->as_table();
}

std::string get_string(const toml::table& t, std::string_view key, const std::string& def,
                       const std::string& table_name, const fs::path& file) {
    const toml::node* node = t.get(key);
    if (!node) return def;
    if (!node->is_string())
        fail(*node, file, "[" + table_name + "] " + std::string(key) + " must be a string");
    return node->as_string()->get();
}

std::vector<std::string> get_strings(const toml::table& t, std::string_view key,
                                     std::vector<std::string> def, const std::string& table_name,
                                     const fs::path& file) {
    const toml::node* node = t.get(key);
    if (!node) return def;
    const toml::array* arr = node->as_array();
    if (!arr) fail(*node, file, "[" + table_name + "] " + std::string(key) + " must be an array");
    std::vector<std::string> out;
    for (const toml::node& item : *arr) {
        if (!item.is_string())
            fail(item, file, "[" + table_name + "] " + std::string(key) + " must hold strings");
        out.push_back(item.as_string()->get());
    }
    return out;
}

fs::path resolve(const std::string& raw, const fs::path& file, const PathContext& paths) {
    std::string s = raw;
    const std::string token = "{exe_dir}";
    if (auto pos = s.find(token); pos != std::string::npos) {
        s.replace(pos, token.size(), paths.exe_dir.string());
    }
    fs::path p(s);
    if (p.is_relative()) {
        fs::path base = file.empty() ? fs::current_path() : file.parent_path();
        if (base.empty()) base = fs::current_path();
        p = base / p;
    }
    return p.lexically_normal();
}

bool valid_plugin_name(std::string_view name) {
    if (name.empty()) return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!ok) return false;
    }
    return true;
}

ServerConfig build(const toml::table& root, const fs::path& file, const PathContext& paths) {
    ServerConfig cfg;
    cfg.file = file;
    check_keys(root, {"log", "host", "server", "slots", "plugins"}, "top level", file, cfg);

    if (const toml::table* log = sub_table(root, "log", file)) {
        check_keys(*log, {"level", "sink", "file"}, "log", file, cfg);
        cfg.log.level = get_string(*log, "level", cfg.log.level, "log", file);
        static const std::set<std::string> levels{"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};
        if (!levels.count(cfg.log.level))
            fail(*log->get("level"), file,
                 "[log] level must be one of trace, debug, info, warn, error, critical, off");
        cfg.log.sink = get_string(*log, "sink", cfg.log.sink, "log", file);
        if (cfg.log.sink != "stdout" && cfg.log.sink != "stderr" && cfg.log.sink != "file")
            fail(*log->get("sink"), file, "[log] sink must be one of stdout, stderr, file");
        cfg.log.file =
            resolve(get_string(*log, "file", cfg.log.file.string(), "log", file), file, paths);
    } else {
        cfg.log.file = resolve(cfg.log.file.string(), file, paths);
    }

    std::vector<std::string> dirs{"{exe_dir}/../plugins"};
    if (const toml::table* host = sub_table(root, "host", file)) {
        check_keys(*host, {"plugin_dirs"}, "host", file, cfg);
        dirs = get_strings(*host, "plugin_dirs", dirs, "host", file);
    }
    for (const auto& d : dirs) cfg.plugin_dirs.push_back(resolve(d, file, paths));

    if (const toml::table* server = sub_table(root, "server", file)) {
        check_keys(*server, {"application_name", "endpoints"}, "server", file, cfg);
        cfg.server.application_name =
            get_string(*server, "application_name", cfg.server.application_name, "server", file);
        cfg.server.endpoints =
            get_strings(*server, "endpoints", cfg.server.endpoints, "server", file);
    }

    if (const toml::table* slots = sub_table(root, "slots", file)) {
        check_keys(*slots, {"request_queue", "admission", "buffer_pool", "monitored_item_queue"},
                   "slots", file, cfg);
        cfg.slots.request_queue = get_string(*slots, "request_queue", "", "slots", file);
        cfg.slots.admission = get_string(*slots, "admission", "", "slots", file);
        cfg.slots.buffer_pool = get_string(*slots, "buffer_pool", "", "slots", file);
        cfg.slots.monitored_item_queue =
            get_string(*slots, "monitored_item_queue", "", "slots", file);
    }

    if (const toml::table* plugins = sub_table(root, "plugins", file)) {
        for (auto&& [key, node] : *plugins) {
            std::string name(key.str());
            const toml::table* t = node.as_table();
            if (!t)
                fail(node, file, "[plugins] " + name + " must be a table ([plugins." + name + "])");
            if (!valid_plugin_name(name))
                fail(node, file, "plugin name '" + name + "' may use only a-z, 0-9, '-' and '_'");
            PluginConfig pc;
            pc.name = name;
            pc.position = position_of(node, file);
            for (auto&& [k, v] : *t) {
                if (k.str() == "enabled") {
                    if (!v.is_boolean())
                        fail(v, file, "[plugins." + name + "] enabled must be a boolean");
                    pc.enabled = v.as_boolean()->get();
                } else if (k.str() == "library") {
                    if (!v.is_string())
                        fail(v, file, "[plugins." + name + "] library must be a string");
                    pc.library = resolve(v.as_string()->get(), file, paths);
                } else {
                    pc.settings.insert(k, v);
                    pc.key_positions.emplace(std::string(k.str()), position_of(v, file));
                }
            }
            cfg.plugins.push_back(std::move(pc));
        }
    }

    // A slot names a plugin that must be configured and enabled.
    auto check_slot = [&](const std::string& slot, const std::string& name) {
        if (name.empty()) return;
        const PluginConfig* pc = cfg.plugin(name);
        const toml::node* node = root.at_path("slots." + slot).node();
        if (!pc)
            fail(*node, file,
                 "[slots] " + slot + " = \"" + name + "\": no [plugins." + name + "] table");
        if (!pc->enabled)
            fail(*node, file, "[slots] " + slot + " = \"" + name + "\": plugin is disabled");
    };
    check_slot("request_queue", cfg.slots.request_queue);
    check_slot("admission", cfg.slots.admission);
    check_slot("buffer_pool", cfg.slots.buffer_pool);
    check_slot("monitored_item_queue", cfg.slots.monitored_item_queue);
    return cfg;
}

}  // namespace

const PluginConfig* ServerConfig::plugin(std::string_view name) const {
    for (const auto& p : plugins)
        if (p.name == name) return &p;
    return nullptr;
}

std::string position_of(const toml::node& node, const fs::path& file) {
    const auto& src = node.source();
    std::ostringstream s;
    s << file_label(file);
    if (src.begin.line) s << ':' << src.begin.line << ':' << src.begin.column;
    return s.str();
}

ServerConfig parse_string(std::string_view text, const fs::path& source_name,
                          const PathContext& paths) {
    toml::table root;
    try {
        root = toml::parse(text, source_name.string());
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        throw ConfigError(file_label(source_name) + ":" + std::to_string(b.line) + ":" +
                          std::to_string(b.column) + ": " + std::string(e.description()));
    }
    return build(root, source_name, paths);
}

ServerConfig load_file(const fs::path& file, const PathContext& paths) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ConfigError(file.string() + ": cannot open configuration file");
    std::stringstream buf;
    buf << in.rdbuf();
    fs::path absolute = fs::absolute(file).lexically_normal();
    ServerConfig cfg = parse_string(buf.str(), absolute, paths);
    return cfg;
}

}  // namespace uaplex::config
