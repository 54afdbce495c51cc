// SPDX-License-Identifier: Apache-2.0
#include <uaplex/config/config.hpp>

#include <uaplex/config/access_names.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <unordered_set>

namespace uaplex::config {
namespace fs = std::filesystem;

namespace {

std::string fileLabel(const fs::path& file) {
    return file.empty() ? "<config>" : file.string();
}

[[noreturn]] void fail(const toml::node& node, const fs::path& file, const std::string& what) {
    throw ConfigError(positionOf(node, file) + ": " + what);
}

// Warns about keys of a server table that the server does not know.
void checkKeys(const toml::table& table, std::initializer_list<std::string_view> known,
               const std::string& table_name, const fs::path& file, ServerConfig& out) {
    for (auto&& [key, node] : table) {
        bool found = false;
        for (auto k : known) found = found || k == key.str();
        if (!found) {
            out.warnings.push_back(positionOf(node, file) + ": unknown key '" +
                                   std::string(key.str()) + "' in [" + table_name + "]");
        }
    }
}

const toml::table* subTable(const toml::table& root, std::string_view name, const fs::path& file) {
    const toml::node* node = root.get(name);
    if (!node) return nullptr;
    if (!node->is_table()) fail(*node, file, "'" + std::string(name) + "' must be a table");
    return node->as_table();
}

std::string getString(const toml::table& t, std::string_view key, const std::string& def,
                      const std::string& table_name, const fs::path& file) {
    const toml::node* node = t.get(key);
    if (!node) return def;
    if (!node->is_string())
        fail(*node, file, "[" + table_name + "] " + std::string(key) + " must be a string");
    return node->as_string()->get();
}

std::vector<std::string> getStrings(const toml::table& t, std::string_view key,
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

std::uint32_t getUint(const toml::table& t, std::string_view key, std::uint32_t def,
                      std::uint32_t min, std::uint32_t max, const std::string& table_name,
                      const fs::path& file) {
    const toml::node* node = t.get(key);
    if (!node) return def;
    const auto* v = node->as_integer();
    if (!v || v->get() < std::int64_t(min) || v->get() > std::int64_t(max))
        fail(*node, file,
             "[" + table_name + "] " + std::string(key) + " must be an integer from " +
                 std::to_string(min) + " to " + std::to_string(max));
    return std::uint32_t(v->get());
}

// "{hostname}" in the ApplicationUri becomes this machine's host name.
void expandHostname(std::string& uri) {
    const std::string token = "{hostname}";
    auto pos = uri.find(token);
    if (pos == std::string::npos) return;
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0 || host[0] == 0) std::strcpy(host, "localhost");
    uri.replace(pos, token.size(), host);
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

bool validPluginName(std::string_view name) {
    if (name.empty()) return false;
    for (char c : name) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
        if (!ok) return false;
    }
    return true;
}

std::vector<std::string> getRoles(const toml::table& t, const std::string& table_name,
                                  const fs::path& file, std::vector<std::string> def = {}) {
    auto roles = getStrings(t, "roles", std::move(def), table_name, file);
    for (const auto& r : roles)
        if (roleIndex(r) < 0)
            fail(*t.get("roles"), file,
                 "[" + table_name + "] roles: '" + r +
                     "' is not a well-known role (Anonymous, AuthenticatedUser, Observer, "
                     "Operator, Engineer, Supervisor, ConfigureAdmin, SecurityAdmin)");
    return roles;
}

std::uint32_t getPermissions(const toml::table& t, std::string_view key, std::uint32_t def,
                             const std::string& table_name, const fs::path& file) {
    if (!t.get(key)) return def;
    std::uint32_t bits = 0;
    for (const auto& p : getStrings(t, key, {}, table_name, file)) {
        std::uint32_t b = permissionBit(p);
        if (b == 0)
            fail(*t.get(key), file,
                 "[" + table_name + "] " + std::string(key) + ": '" + p +
                     "' is not a PermissionType name (Browse, Read, Write, Call, ...)");
        bits |= b;
    }
    return bits;
}

// "ns=<n>;i=<n>", "ns=<n>;s=<text>", or the same without "ns=<n>;".
bool parseNode(std::string_view text, AccessRule& r) {
    if (text.rfind("ns=", 0) == 0) {
        auto semi = text.find(';');
        if (semi == std::string_view::npos || semi == 3) return false;
        std::uint32_t ns = 0;
        for (char c : text.substr(3, semi - 3)) {
            if (c < '0' || c > '9' || ns > 6553) return false;
            ns = ns * 10 + std::uint32_t(c - '0');
        }
        if (ns > 65535) return false;
        r.node_ns = std::int32_t(ns);
        text = text.substr(semi + 1);
    }
    if (text.rfind("s=", 0) == 0 && text.size() > 2) {
        r.node_is_string = true;
        r.node_string = std::string(text.substr(2));
        return true;
    }
    if (text.rfind("i=", 0) == 0 && text.size() > 2 && text.size() <= 12) {
        std::uint64_t v = 0;
        for (char c : text.substr(2)) {
            if (c < '0' || c > '9') return false;
            v = v * 10 + std::uint64_t(c - '0');
        }
        if (v > 0xFFFFFFFFu) return false;
        r.node_numeric = std::uint32_t(v);
        return true;
    }
    return false;
}

void buildAccess(const toml::table& access, const fs::path& file, const PathContext& paths,
                 ServerConfig& cfg) {
    checkKeys(access,
              {"anonymous", "anonymous_roles", "users_file", "username_security_policy",
               "certificate_security_policy", "default_permissions", "anonymous_permissions",
               "certificates", "rules", "security_diagnostics_roles", "diagnostics_admin_roles",
               "node_management_roles"},
              "access", file, cfg);
    AccessSection& a = cfg.access;
    if (const toml::node* n = access.get("anonymous")) {
        if (!n->is_boolean()) fail(*n, file, "[access] anonymous must be a boolean");
        a.anonymous = n->as_boolean()->get();
    }
    a.anonymous_roles = getStrings(access, "anonymous_roles", a.anonymous_roles, "access", file);
    for (const auto& r : a.anonymous_roles)
        if (roleIndex(r) < 0)
            fail(*access.get("anonymous_roles"), file,
                 "[access] anonymous_roles: '" + r + "' is not a well-known role");
    a.security_diagnostics_roles = getStrings(access, "security_diagnostics_roles",
                                              a.security_diagnostics_roles, "access", file);
    for (const auto& r : a.security_diagnostics_roles)
        if (roleIndex(r) < 0)
            fail(*access.get("security_diagnostics_roles"), file,
                 "[access] security_diagnostics_roles: '" + r + "' is not a well-known role");
    a.diagnostics_admin_roles =
        getStrings(access, "diagnostics_admin_roles", a.diagnostics_admin_roles, "access", file);
    for (const auto& r : a.diagnostics_admin_roles)
        if (roleIndex(r) < 0)
            fail(*access.get("diagnostics_admin_roles"), file,
                 "[access] diagnostics_admin_roles: '" + r + "' is not a well-known role");
    a.node_management_roles =
        getStrings(access, "node_management_roles", a.node_management_roles, "access", file);
    for (const auto& r : a.node_management_roles)
        if (roleIndex(r) < 0)
            fail(*access.get("node_management_roles"), file,
                 "[access] node_management_roles: '" + r + "' is not a well-known role");
    std::string users = getString(access, "users_file", "", "access", file);
    if (!users.empty()) a.users_file = resolve(users, file, paths);
    a.username_security_policy =
        getString(access, "username_security_policy", a.username_security_policy, "access", file);
    a.certificate_security_policy = getString(access, "certificate_security_policy",
                                              a.certificate_security_policy, "access", file);
    a.default_permissions =
        getPermissions(access, "default_permissions", a.default_permissions, "access", file);
    a.anonymous_permissions =
        getPermissions(access, "anonymous_permissions", a.anonymous_permissions, "access", file);
    auto tables = [&](std::string_view key, auto&& each) {
        const toml::node* n = access.get(key);
        if (!n) return;
        const toml::array* arr = n->as_array();
        if (!arr) fail(*n, file, "[access] " + std::string(key) + " must be an array of tables");
        for (const toml::node& item : *arr) {
            if (!item.is_table())
                fail(item, file,
                     "[access] " + std::string(key) + " must be an array of tables ([[access." +
                         std::string(key) + "]])");
            each(*item.as_table(), item);
        }
    };
    tables("certificates", [&](const toml::table& t, const toml::node& node) {
        checkKeys(t, {"thumbprint", "subject", "roles"}, "access.certificates", file, cfg);
        CertificateUser u;
        u.thumbprint = getString(t, "thumbprint", "", "access.certificates", file);
        std::string hex;
        for (char c : u.thumbprint) {
            if (c == ':' || c == ' ') continue;
            if (!std::isxdigit(static_cast<unsigned char>(c)))
                fail(node, file, "[[access.certificates]] thumbprint must be hexadecimal");
            hex += char(std::toupper(static_cast<unsigned char>(c)));
        }
        if (!hex.empty() && hex.size() != 40)
            fail(node, file, "[[access.certificates]] thumbprint must be a SHA-1 (40 hex digits)");
        u.thumbprint = hex;
        u.subject = getString(t, "subject", "", "access.certificates", file);
        if (u.thumbprint.empty() == u.subject.empty())
            fail(node, file, "[[access.certificates]] needs exactly one of thumbprint, subject");
        u.roles = getRoles(t, "access.certificates", file);
        a.certificates.push_back(std::move(u));
    });
    tables("rules", [&](const toml::table& t, const toml::node& node) {
        checkKeys(t, {"namespace", "node", "roles", "permissions"}, "access.rules", file, cfg);
        AccessRule r;
        r.position = positionOf(node, file);
        r.namespace_uri = getString(t, "namespace", "", "access.rules", file);
        std::string nodeText = getString(t, "node", "", "access.rules", file);
        if (!nodeText.empty()) {
            r.has_node = true;
            if (!parseNode(nodeText, r))
                fail(*t.get("node"), file,
                     "[[access.rules]] node must be \"ns=<n>;i=<n>\" or \"ns=<n>;s=<text>\" "
                     "(ns= may be left out when namespace is given)");
            if (r.node_ns >= 0 && !r.namespace_uri.empty())
                fail(*t.get("node"), file,
                     "[[access.rules]] give the namespace either as ns= in node or as namespace");
            if (r.node_ns < 0 && r.namespace_uri.empty()) r.node_ns = 0;
        } else if (r.namespace_uri.empty()) {
            fail(node, file, "[[access.rules]] needs namespace, node or both");
        }
        r.roles = getRoles(t, "access.rules", file);
        if (r.roles.empty()) fail(node, file, "[[access.rules]] roles must name at least one role");
        if (!t.get("permissions"))
            fail(node, file, "[[access.rules]] permissions is required (it may be [])");
        r.permissions = getPermissions(t, "permissions", 0, "access.rules", file);
        a.rules.push_back(std::move(r));
    });
}

// [server] security_profile = "strict": what it implies, and a ConfigError naming the key
// for a setting that contradicts it (nothing is silently overridden).
void applyStrict(const toml::table& root, const fs::path& file, ServerConfig& cfg) {
    const std::string why = " contradicts [server] security_profile = \"strict\"";
    auto at = [&](std::string_view path) -> const toml::node& {
        const toml::node* n = root.at_path(path).node();
        return n ? *n : static_cast<const toml::node&>(root);
    };
    bool secure = false;
    for (const auto& o : cfg.server.security) {
        if (o.policy == "Basic128Rsa15" || o.policy == "Basic256")
            fail(at("server.security"), file,
                 "[server] security: the legacy policy " + o.policy + why +
                     " (Basic256Sha256, Aes128_Sha256_RsaOaep, Aes256_Sha256_RsaPss only)");
        secure = secure || o.policy != "None";
    }
    if (!secure)
        fail(at("server.security"), file,
             "[server] security must offer a policy other than None under security_profile = "
             "\"strict\" (None serves discovery only)");
    if (root.at_path("access.anonymous").node() && cfg.access.anonymous)
        fail(at("access.anonymous"), file, "[access] anonymous = true" + why);
    cfg.access.anonymous = false;
    static constexpr std::string_view kNone = "http://opcfoundation.org/UA/SecurityPolicy#None";
    if (cfg.access.username_security_policy == kNone)
        fail(at("access.username_security_policy"), file,
             "[access] username_security_policy = None (passwords in clear)" + why);
    if (cfg.access.certificate_security_policy == kNone)
        fail(at("access.certificate_security_policy"), file,
             "[access] certificate_security_policy = None" + why);
}

// "nsu=<uri>;s=<text>", "nsu=<uri>;i=<n>", "ns=<n>;s=<text>", "ns=<n>;i=<n>" (n >= 1).
bool parsePersistentNode(std::string_view text, PersistentNode& out) {
    out.text = std::string(text);
    if (text.size() > 4096) return false;
    auto semi = text.find(';');
    if (semi == std::string_view::npos) return false;
    std::string_view ns = text.substr(0, semi), id = text.substr(semi + 1);
    if (ns.rfind("nsu=", 0) == 0 && ns.size() > 4) {
        out.namespace_uri = std::string(ns.substr(4));
    } else if (ns.rfind("ns=", 0) == 0 && ns.size() > 3 && ns.size() <= 8) {
        std::uint32_t v = 0;
        for (char c : ns.substr(3)) {
            if (c < '0' || c > '9') return false;
            v = v * 10 + std::uint32_t(c - '0');
        }
        if (v == 0 || v > 65535) return false;  // namespace 0 holds no stored values
        out.ns = std::int32_t(v);
    } else {
        return false;
    }
    if (id.rfind("s=", 0) == 0 && id.size() > 2) {
        out.is_string = true;
        out.string_id = std::string(id.substr(2));
        return true;
    }
    if (id.rfind("i=", 0) == 0 && id.size() > 2 && id.size() <= 12) {
        std::uint64_t v = 0;
        for (char c : id.substr(2)) {
            if (c < '0' || c > '9') return false;
            v = v * 10 + std::uint64_t(c - '0');
        }
        if (v > 0xFFFFFFFFu) return false;
        out.numeric = std::uint32_t(v);
        return true;
    }
    return false;
}

// A name that is one MQTT topic level and readable in a log line.
bool validTopicLevel(const std::string& s) {
    if (s.empty() || s.size() > 128) return false;
    for (unsigned char c : s)
        if (c < 0x21 || c == 0x7F || c == '/' || c == '+' || c == '#') return false;
    return true;
}

std::vector<const toml::table*> getTables(const toml::table& t, std::string_view key,
                                          const std::string& table_name, const fs::path& file,
                                          std::size_t max) {
    std::vector<const toml::table*> out;
    const toml::node* node = t.get(key);
    if (!node) return out;
    const toml::array* arr = node->as_array();
    if (!arr)
        fail(*node, file,
             "[" + table_name + "] " + std::string(key) + " must be an array of tables");
    if (arr->size() > max)
        fail(*node, file,
             "[" + table_name + "] " + std::string(key) + " has more than " + std::to_string(max) +
                 " entries");
    for (const toml::node& item : *arr) {
        if (!item.is_table())
            fail(item, file, "[" + table_name + "] " + std::string(key) + " must hold tables");
        out.push_back(item.as_table());
    }
    return out;
}

std::string getName(const toml::table& t, const std::string& table_name, const fs::path& file) {
    std::string name = getString(t, "name", "", table_name, file);
    if (!validTopicLevel(name))
        fail(t.get("name") ? *t.get("name") : static_cast<const toml::node&>(t), file,
             "[" + table_name +
                 "] name must be 1 to 128 printable characters without "
                 "space, '/', '+' or '#' (it is a topic level)");
    return name;
}

void buildPubSub(const toml::table& t, const fs::path& file, ServerConfig& cfg) {
    const std::string name = "pubsub";
    checkKeys(t,
              {"plugin", "publisher_id", "topic_prefix", "max_message_bytes", "max_field_bytes",
               "data_sets", "writer_groups", "readers"},
              name, file, cfg);
    PubSubSection& p = cfg.pubsub;
    p.enabled = true;
    p.plugin = getString(t, "plugin", "", name, file);
    if (p.plugin.empty()) fail(t, file, "[pubsub] plugin must name a pubsub plugin");
    p.publisher_id = getString(t, "publisher_id", "", name, file);
    if (!validTopicLevel(p.publisher_id))
        fail(t.get("publisher_id") ? *t.get("publisher_id") : static_cast<const toml::node&>(t),
             file,
             "[pubsub] publisher_id must be 1 to 128 printable characters without space, '/', "
             "'+' or '#' (it is a topic level)");
    p.topic_prefix = getString(t, "topic_prefix", p.topic_prefix, name, file);
    if (p.topic_prefix.empty() || p.topic_prefix.size() > 256 ||
        p.topic_prefix.find_first_of("+# ") != std::string::npos || p.topic_prefix.front() == '/' ||
        p.topic_prefix.back() == '/')
        fail(*t.get("topic_prefix"), file,
             "[pubsub] topic_prefix must be 1 to 256 characters without '+', '#' or spaces, "
             "not starting or ending with '/'");
    p.max_message_bytes =
        getUint(t, "max_message_bytes", p.max_message_bytes, 1024, 16u << 20, name, file);
    p.max_field_bytes = getUint(t, "max_field_bytes", p.max_field_bytes, 16, 1u << 20, name, file);
    for (const toml::table* d : getTables(t, "data_sets", name, file, 1000)) {
        const std::string dn = "pubsub.data_sets";
        checkKeys(*d, {"name", "fields"}, dn, file, cfg);
        PubSubDataSet ds;
        ds.name = getName(*d, dn, file);
        for (const auto& other : p.data_sets)
            if (other.name == ds.name) fail(*d, file, "[pubsub] data set '" + ds.name + "' twice");
        for (const toml::table* f : getTables(*d, "fields", dn, file, 1000)) {
            checkKeys(*f, {"name", "node"}, dn + ".fields", file, cfg);
            PubSubField field;
            field.name = getString(*f, "name", "", dn + ".fields", file);
            if (field.name.empty() || field.name.size() > 256)
                fail(*f, file,
                     "[pubsub] data set '" + ds.name + "': a field needs a name (1 to 256 bytes)");
            for (const auto& other : ds.fields)
                if (other.name == field.name)
                    fail(*f, file,
                         "[pubsub] data set '" + ds.name + "': field '" + field.name + "' twice");
            const std::string node = getString(*f, "node", "", dn + ".fields", file);
            if (!parsePersistentNode(node, field.node))
                fail(f->get("node") ? *f->get("node") : static_cast<const toml::node&>(*f), file,
                     "[pubsub] field '" + field.name +
                         "': node must be \"nsu=<uri>;s=<text>\", \"nsu=<uri>;i=<n>\" or the same "
                         "with \"ns=<index>;\" (1 to 65535)");
            ds.fields.push_back(std::move(field));
        }
        if (ds.fields.empty()) fail(*d, file, "[pubsub] data set '" + ds.name + "' has no fields");
        p.data_sets.push_back(std::move(ds));
    }
    std::vector<std::uint16_t> writer_ids;
    for (const toml::table* g : getTables(t, "writer_groups", name, file, 256)) {
        const std::string gn = "pubsub.writer_groups";
        checkKeys(*g,
                  {"name", "writer_group_id", "publishing_interval_ms", "qos", "encoding",
                   "network_message_content_mask", "writers"},
                  gn, file, cfg);
        PubSubGroup group;
        group.name = getName(*g, gn, file);
        group.id = std::uint16_t(getUint(*g, "writer_group_id", 0, 1, 65535, gn, file));
        if (group.id == 0)
            fail(*g, file, "[pubsub] writer group '" + group.name + "' needs writer_group_id");
        for (const auto& other : p.writer_groups)
            if (other.name == group.name || other.id == group.id)
                fail(*g, file,
                     "[pubsub] writer group '" + group.name +
                         "': name or writer_group_id used twice");
        group.publishing_interval_ms = getUint(*g, "publishing_interval_ms",
                                               group.publishing_interval_ms, 10, 3600000, gn, file);
        group.qos = getUint(*g, "qos", group.qos, 0, 1, gn, file);
        const std::string encoding = getString(*g, "encoding", "json", gn, file);
        if (encoding != "json" && encoding != "uadp")
            fail(*g->get("encoding"), file,
                 "[pubsub] writer group '" + group.name +
                     "': encoding must be \"json\" or \"uadp\"");
        group.uadp = encoding == "uadp";
        // UadpNetworkMessageContentMask bits 0-8 (DataSetClassId and PromotedFields are not
        // supported).
        group.network_message_content_mask =
            getUint(*g, "network_message_content_mask", group.network_message_content_mask, 0,
                    0x1FF, gn, file);
        for (const toml::table* w : getTables(*g, "writers", gn, file, 256)) {
            const std::string wn = gn + ".writers";
            checkKeys(*w,
                      {"name", "data_set_writer_id", "data_set", "key_frame_count",
                       "data_set_message_content_mask", "field_content_mask"},
                      wn, file, cfg);
            PubSubWriter writer;
            writer.name = getName(*w, wn, file);
            writer.id = std::uint16_t(getUint(*w, "data_set_writer_id", 0, 1, 65535, wn, file));
            if (writer.id == 0)
                fail(*w, file, "[pubsub] writer '" + writer.name + "' needs data_set_writer_id");
            if (std::find(writer_ids.begin(), writer_ids.end(), writer.id) != writer_ids.end())
                fail(*w, file,
                     "[pubsub] data_set_writer_id " + std::to_string(writer.id) + " used twice");
            writer_ids.push_back(writer.id);
            for (const auto& other : group.writers)
                if (other.name == writer.name)
                    fail(*w, file,
                         "[pubsub] writer '" + writer.name + "' twice in group '" + group.name +
                             "'");
            writer.data_set = getString(*w, "data_set", "", wn, file);
            bool found = false;
            for (const auto& ds : p.data_sets) found = found || ds.name == writer.data_set;
            if (!found)
                fail(*w, file,
                     "[pubsub] writer '" + writer.name + "': data_set '" + writer.data_set +
                         "' is not in [[pubsub.data_sets]]");
            writer.key_frame_count =
                getUint(*w, "key_frame_count", writer.key_frame_count, 1, 65535, wn, file);
            // UadpDataSetMessageContentMask bits 0-5; DataSetFieldContentMask bits 0-4 (RawData
            // is not supported).
            writer.data_set_message_content_mask =
                getUint(*w, "data_set_message_content_mask", writer.data_set_message_content_mask,
                        0, 0x3F, wn, file);
            writer.field_content_mask =
                getUint(*w, "field_content_mask", writer.field_content_mask, 0, 0x1F, wn, file);
            group.writers.push_back(std::move(writer));
        }
        if (group.writers.empty())
            fail(*g, file, "[pubsub] writer group '" + group.name + "' has no writers");
        p.writer_groups.push_back(std::move(group));
    }
    std::vector<PersistentNode> targets;  // one reader field per target Variable
    for (const toml::table* r : getTables(t, "readers", name, file, 256)) {
        const std::string rn = "pubsub.readers";
        checkKeys(*r,
                  {"name", "topic", "encoding", "qos", "publisher_id", "writer_group_id",
                   "data_set_writer_id", "message_receive_timeout_ms", "fields"},
                  rn, file, cfg);
        PubSubReader reader;
        reader.name = getName(*r, rn, file);
        for (const auto& other : p.readers)
            if (other.name == reader.name)
                fail(*r, file, "[pubsub] reader '" + reader.name + "' twice");
        const std::string encoding = getString(*r, "encoding", "json", rn, file);
        if (encoding != "json" && encoding != "uadp")
            fail(*r->get("encoding"), file,
                 "[pubsub] reader '" + reader.name + "': encoding must be \"json\" or \"uadp\"");
        reader.uadp = encoding == "uadp";
        reader.qos = getUint(*r, "qos", reader.qos, 0, 1, rn, file);
        if (r->get("publisher_id")) {
            reader.publisher_id = getString(*r, "publisher_id", "", rn, file);
            if (!validTopicLevel(reader.publisher_id))
                fail(*r->get("publisher_id"), file,
                     "[pubsub] reader '" + reader.name +
                         "': publisher_id must be 1 to 128 printable characters without space, "
                         "'/', '+' or '#'");
        }
        reader.writer_group_id =
            std::uint16_t(getUint(*r, "writer_group_id", 0, 1, 65535, rn, file));
        // A JSON NetworkMessage does not carry the WriterGroupId (Part 14 7.2.5.3).
        if (!reader.uadp && r->get("writer_group_id"))
            fail(*r->get("writer_group_id"), file,
                 "[pubsub] reader '" + reader.name +
                     "': writer_group_id is matched for encoding = \"uadp\" only (JSON messages "
                     "do not carry it; choose the group with topic)");
        reader.data_set_writer_id =
            std::uint16_t(getUint(*r, "data_set_writer_id", 0, 1, 65535, rn, file));
        reader.message_receive_timeout_ms =
            getUint(*r, "message_receive_timeout_ms", reader.message_receive_timeout_ms, 10,
                    86400000, rn, file);
        reader.topic = getString(*r, "topic", "", rn, file);
        if (!r->get("topic")) {
            reader.topic = p.topic_prefix + (reader.uadp ? "/uadp/data/" : "/json/data/") +
                           (reader.publisher_id.empty() ? "#" : reader.publisher_id + "/#");
        } else {
            // An MQTT topic filter: '+' and '#' whole levels, '#' last (MQTT 3.1.1 4.7.1).
            const std::string& f = reader.topic;
            bool valid = !f.empty() && f.size() <= 1024;
            for (std::size_t i = 0; valid && i < f.size(); ++i) {
                const char c = f[i];
                const bool levelStart = i == 0 || f[i - 1] == '/';
                const bool levelEnd = i + 1 == f.size() || f[i + 1] == '/';
                if (c == '+') valid = levelStart && levelEnd;
                if (c == '#') valid = levelStart && i + 1 == f.size();
                if (static_cast<unsigned char>(c) < 0x20 || c == 0x7F) valid = false;
            }
            if (!valid)
                fail(*r->get("topic"), file,
                     "[pubsub] reader '" + reader.name +
                         "': topic must be an MQTT topic filter of 1 to 1024 characters ('+' a "
                         "whole level, '#' the last level)");
        }
        for (const toml::table* f : getTables(*r, "fields", rn, file, 1000)) {
            checkKeys(*f, {"name", "node"}, rn + ".fields", file, cfg);
            PubSubField field;
            field.name = getString(*f, "name", "", rn + ".fields", file);
            if (field.name.empty() || field.name.size() > 256)
                fail(
                    *f, file,
                    "[pubsub] reader '" + reader.name + "': a field needs a name (1 to 256 bytes)");
            for (const auto& other : reader.fields)
                if (other.name == field.name)
                    fail(*f, file,
                         "[pubsub] reader '" + reader.name + "': field '" + field.name + "' twice");
            const std::string node = getString(*f, "node", "", rn + ".fields", file);
            if (!parsePersistentNode(node, field.node))
                fail(f->get("node") ? *f->get("node") : static_cast<const toml::node&>(*f), file,
                     "[pubsub] reader '" + reader.name + "', field '" + field.name +
                         "': node must be \"nsu=<uri>;s=<text>\", \"nsu=<uri>;i=<n>\" or the same "
                         "with \"ns=<index>;\" (1 to 65535)");
            PersistentNode key = field.node;
            key.text.clear();  // the NodeId, not how it is written
            if (std::find(targets.begin(), targets.end(), key) != targets.end())
                fail(*f, file,
                     "[pubsub] reader '" + reader.name + "', field '" + field.name + "': node " +
                         field.node.text + " is already the target of another reader field");
            targets.push_back(std::move(key));
            reader.fields.push_back(std::move(field));
        }
        if (reader.fields.empty())
            fail(*r, file, "[pubsub] reader '" + reader.name + "' has no fields");
        p.readers.push_back(std::move(reader));
    }
}

// A number (integer or float), finite.
double getNumber(const toml::table& t, std::string_view key, double def,
                 const std::string& table_name, const fs::path& file) {
    const toml::node* node = t.get(key);
    if (!node) return def;
    double v = 0;
    if (const auto* i = node->as_integer())
        v = double(i->get());
    else if (const auto* f = node->as_floating_point())
        v = f->get();
    else if (const auto* b = node->as_boolean())
        v = b->get() ? 1.0 : 0.0;
    else
        fail(*node, file, "[" + table_name + "] " + std::string(key) + " must be a number");
    if (!std::isfinite(v))
        fail(*node, file, "[" + table_name + "] " + std::string(key) + " must be finite");
    return v;
}

void buildAlarms(const toml::node& node, const fs::path& file, ServerConfig& cfg) {
    const std::string name = "alarms";
    const toml::array* arr = node.as_array();
    if (!arr || !arr->is_array_of_tables())
        fail(node, file, "alarms must be an array of tables ([[alarms]])");
    if (arr->size() > cfg.server.limits.max_conditions)
        fail(node, file,
             "[[alarms]] declares " + std::to_string(arr->size()) +
                 " alarms, more than [server.limits] max_conditions = " +
                 std::to_string(cfg.server.limits.max_conditions));
    static constexpr const char* kNodeForm =
        " must be \"nsu=<uri>;s=<text>\", \"nsu=<uri>;i=<n>\" or the same with "
        "\"ns=<index>;\" (1 to 65535)";
    std::unordered_set<std::string> names;  // 100,000 alarms: no pairwise name check
    names.reserve(arr->size());
    for (const toml::node& item : *arr) {
        const toml::table& t = *item.as_table();
        checkKeys(t, {"name",          "type",         "source",
                      "parent",        "high_high",    "high",
                      "low",           "low_low",      "high_high_severity",
                      "high_severity", "low_severity", "low_low_severity",
                      "deadband",      "normal_value", "normal_state",
                      "setpoint",      "severity",     "message",
                      "on_delay_ms",   "off_delay_ms", "branches"},
                  name, file, cfg);
        auto at = [&](std::string_view key) -> const toml::node& {
            return t.get(key) ? *t.get(key) : static_cast<const toml::node&>(t);
        };
        AlarmConfig a;
        a.position = positionOf(t, file);
        a.name = getString(t, "name", "", name, file);
        bool printable = !a.name.empty() && a.name.size() <= 128;
        for (unsigned char c : a.name) printable = printable && c >= 0x20 && c != 0x7f;
        if (!printable)
            fail(at("name"), file, "[[alarms]] name must be 1 to 128 printable characters");
        if (!names.insert(a.name).second)
            fail(at("name"), file, "[[alarms]] '" + a.name + "' twice");
        const std::string what = "[[alarms]] '" + a.name + "': ";
        a.type = getString(t, "type", "", name, file);
        static constexpr std::string_view kLimitTypes[] = {
            "exclusive_level",         "non_exclusive_level",      "exclusive_deviation",
            "non_exclusive_deviation", "exclusive_rate_of_change", "non_exclusive_rate_of_change"};
        static constexpr std::string_view kOffNormalTypes[] = {"off_normal", "discrete", "trip",
                                                               "system_off_normal"};
        const bool offNormal = std::find(std::begin(kOffNormalTypes), std::end(kOffNormalTypes),
                                         a.type) != std::end(kOffNormalTypes);
        if (!offNormal && std::find(std::begin(kLimitTypes), std::end(kLimitTypes), a.type) ==
                              std::end(kLimitTypes))
            fail(at("type"), file,
                 what +
                     "type must be \"exclusive_level\", \"non_exclusive_level\", "
                     "\"exclusive_deviation\", \"non_exclusive_deviation\", "
                     "\"exclusive_rate_of_change\", \"non_exclusive_rate_of_change\", "
                     "\"off_normal\", \"discrete\", \"trip\" or \"system_off_normal\"");
        // "an off_normal alarm", "a trip alarm": for the messages below.
        const std::string kindText =
            std::string(a.type[0] == 'e' || a.type[0] == 'o' ? "an " : "a ") + a.type + " alarm";
        const bool deviation = a.type.find("deviation") != std::string::npos;
        if (!parsePersistentNode(getString(t, "source", "", name, file), a.source))
            fail(at("source"), file, what + "source" + kNodeForm);
        if (t.get("parent")) {
            a.has_parent = true;
            if (!parsePersistentNode(getString(t, "parent", "", name, file), a.parent))
                fail(at("parent"), file, what + "parent" + kNodeForm);
        }
        // The second input: a deviation alarm's setpoint, an off-normal alarm's NormalState.
        if (t.get("setpoint")) {
            if (!deviation)
                fail(at("setpoint"), file,
                     what + "setpoint is for deviation alarms, not for " + kindText);
            a.has_setpoint = true;
            if (!parsePersistentNode(getString(t, "setpoint", "", name, file), a.setpoint))
                fail(at("setpoint"), file, what + "setpoint" + kNodeForm);
            if (a.setpoint.text == a.source.text)
                fail(at("setpoint"), file, what + "setpoint must not be the source");
        } else if (deviation) {
            fail(t, file, what + kindText + " needs setpoint (the SetpointNode)");
        }
        if (t.get("normal_state")) {
            if (!offNormal)
                fail(at("normal_state"), file,
                     what +
                         "normal_state is for off_normal, discrete, trip and system_off_normal "
                         "alarms, not for " +
                         kindText);
            if (t.get("normal_value"))
                fail(at("normal_state"), file,
                     what + "normal_state and normal_value exclude each other");
            a.has_normal_state = true;
            if (!parsePersistentNode(getString(t, "normal_state", "", name, file), a.normal_state))
                fail(at("normal_state"), file, what + "normal_state" + kNodeForm);
            if (a.normal_state.text == a.source.text)
                fail(at("normal_state"), file, what + "normal_state must not be the source");
        }
        struct LimitKey {
            const char* key;
            const char* severityKey;
            AlarmLimitConfig* out;
            std::uint32_t severity;
        };
        const LimitKey limits[] = {{"high_high", "high_high_severity", &a.high_high, 800},
                                   {"high", "high_severity", &a.high, 500},
                                   {"low", "low_severity", &a.low, 500},
                                   {"low_low", "low_low_severity", &a.low_low, 800}};
        for (const LimitKey& k : limits) {
            if (offNormal && (t.get(k.key) || t.get(k.severityKey)))
                fail(at(t.get(k.key) ? k.key : k.severityKey), file,
                     what + kindText + " has no " + k.key + " limit");
            k.out->present = t.get(k.key) != nullptr;
            k.out->value = getNumber(t, k.key, 0.0, name, file);
            k.out->severity = getUint(t, k.severityKey, k.severity, 1, 1000, name, file);
        }
        if (!offNormal) {
            if (!a.high_high.present && !a.high.present && !a.low.present && !a.low_low.present)
                fail(t, file,
                     what + kindText + " needs at least one of high_high, high, low, low_low");
            // The limits in order: high_high >= high > low >= low_low (those given).
            std::vector<std::pair<const char*, double>> given;
            for (const LimitKey& k : limits)
                if (k.out->present) given.emplace_back(k.key, k.out->value);
            for (std::size_t i = 1; i < given.size(); ++i)
                if (given[i].second > given[i - 1].second)
                    fail(at(given[i].first), file,
                         what + given[i].first + " must not be above " + given[i - 1].first);
            if (a.high.present && a.low.present && !(a.low.value < a.high.value))
                fail(at("low"), file, what + "low must be below high");
            if (t.get("normal_value") || t.get("severity"))
                fail(at(t.get("normal_value") ? "normal_value" : "severity"), file,
                     what +
                         "normal_value and severity are for off_normal alarms (a limit "
                         "alarm has a severity per limit)");
        } else {
            if (!t.get("normal_value") && !a.has_normal_state)
                fail(t, file, what + kindText + " needs normal_value or normal_state");
            a.normal_value = getNumber(t, "normal_value", 0.0, name, file);
            a.severity = getUint(t, "severity", a.severity, 1, 1000, name, file);
            if (t.get("deadband")) fail(at("deadband"), file, what + kindText + " has no deadband");
        }
        a.deadband = getNumber(t, "deadband", 0.0, name, file);
        if (a.deadband < 0) fail(at("deadband"), file, what + "deadband must not be negative");
        a.message = getString(t, "message", "", name, file);
        if (a.message.size() > 4096)
            fail(at("message"), file, what + "message must be at most 4096 bytes");
        a.on_delay_ms = getUint(t, "on_delay_ms", 0, 0, 86400000, name, file);
        a.off_delay_ms = getUint(t, "off_delay_ms", 0, 0, 86400000, name, file);
        if (const toml::node* n = t.get("branches")) {
            if (!n->is_boolean()) fail(*n, file, what + "branches must be a boolean");
            a.branches = n->as_boolean()->get();
        }
        cfg.alarms.push_back(std::move(a));
    }
}

void buildPersistence(const toml::table& t, const fs::path& file, const PathContext& paths,
                      ServerConfig& cfg) {
    const std::string name = "persistence";
    checkKeys(t, {"file", "nodes", "namespaces", "synchronous", "max_nodes", "max_value_bytes"},
              name, file, cfg);
    PersistenceSection& p = cfg.persistence;
    p.enabled = true;
    std::string db = getString(t, "file", "", name, file);
    if (db.empty()) fail(t, file, "[persistence] file must name the database file");
    p.file = resolve(db, file, paths);
    p.max_nodes = getUint(t, "max_nodes", p.max_nodes, 1, 1000000, name, file);
    p.max_value_bytes = getUint(t, "max_value_bytes", p.max_value_bytes, 16, 16u << 20, name, file);
    std::string sync = getString(t, "synchronous", "full", name, file);
    if (sync != "full" && sync != "normal")
        fail(*t.get("synchronous"), file,
             "[persistence] synchronous must be \"full\" or \"normal\"");
    p.synchronous_full = sync == "full";
    for (const auto& text : getStrings(t, "nodes", {}, name, file)) {
        PersistentNode n;
        if (!parsePersistentNode(text, n))
            fail(*t.get("nodes"), file,
                 "[persistence] nodes: '" + text.substr(0, 200) +
                     "' must be \"nsu=<uri>;s=<text>\", \"nsu=<uri>;i=<n>\" or the same with "
                     "\"ns=<index>;\" (1 to 65535)");
        p.nodes.push_back(std::move(n));
    }
    if (p.nodes.size() > p.max_nodes)
        fail(*t.get("nodes"), file,
             "[persistence] nodes names " + std::to_string(p.nodes.size()) +
                 " nodes, more than max_nodes = " + std::to_string(p.max_nodes));
    p.namespaces = getStrings(t, "namespaces", {}, name, file);
    for (const auto& uri : p.namespaces)
        if (uri.empty() || uri.size() > 4096 || uri == "http://opcfoundation.org/UA/")
            fail(*t.get("namespaces"), file,
                 "[persistence] namespaces: a namespace URI (1 to 4096 characters) other than "
                 "namespace 0's");
    if (p.namespaces.size() > p.max_nodes)
        fail(*t.get("namespaces"), file,
             "[persistence] namespaces names more namespaces than max_nodes = " +
                 std::to_string(p.max_nodes));
    if (p.nodes.empty() && p.namespaces.empty())
        fail(t, file, "[persistence] names no nodes and no namespaces");
}

void buildHistory(const toml::table& t, const fs::path& file, ServerConfig& cfg) {
    const std::string name = "history";
    checkKeys(t,
              {"plugin",
               "nodes",
               "historizing",
               "max_nodes",
               "max_value_bytes",
               "max_nodes_per_read",
               "max_values_per_node",
               "max_continuation_points",
               "max_intervals_per_node",
               "max_processed_values",
               "max_req_times",
               "max_nodes_per_update",
               "max_values_per_update",
               "event_notifiers",
               "max_events_per_node",
               "max_events_per_update",
               "max_event_bytes",
               "stepped",
               "min_time_interval_ms",
               "max_time_interval_ms",
               "exception_deviation",
               "treat_uncertain_as_bad",
               "percent_data_bad",
               "percent_data_good",
               "use_sloped_extrapolation"},
              name, file, cfg);
    HistorySection& h = cfg.history;
    h.enabled = true;
    h.plugin = getString(t, "plugin", "", name, file);
    if (h.plugin.empty()) fail(t, file, "[history] plugin must name a history plugin");
    auto flag = [&](const char* key, bool& out) {
        if (const toml::node* n = t.get(key)) {
            if (!n->is_boolean())
                fail(*n, file, std::string("[history] ") + key + " must be a boolean");
            out = n->as_boolean()->get();
        }
    };
    flag("historizing", h.historizing);
    flag("stepped", h.stepped);
    flag("treat_uncertain_as_bad", h.treat_uncertain_as_bad);
    flag("use_sloped_extrapolation", h.use_sloped_extrapolation);
    h.max_nodes_per_update =
        getUint(t, "max_nodes_per_update", h.max_nodes_per_update, 1, 100000, name, file);
    h.max_values_per_update =
        getUint(t, "max_values_per_update", h.max_values_per_update, 1, 1000000, name, file);
    auto duration = [&](const char* key, double& out) {
        out = getNumber(t, key, out, name, file);
        if (!(out >= 0 && out <= 31536000000.0))
            fail(*t.get(key), file,
                 std::string("[history] ") + key +
                     " must be a duration in milliseconds (0 ... one year)");
    };
    duration("min_time_interval_ms", h.min_time_interval_ms);
    duration("max_time_interval_ms", h.max_time_interval_ms);
    h.exception_deviation = getNumber(t, "exception_deviation", h.exception_deviation, name, file);
    if (!(h.exception_deviation >= 0 && h.exception_deviation <= 1e300))
        fail(*t.get("exception_deviation"), file,
             "[history] exception_deviation must be a finite number, not negative");
    h.percent_data_bad = getUint(t, "percent_data_bad", h.percent_data_bad, 0, 100, name, file);
    h.percent_data_good = getUint(t, "percent_data_good", h.percent_data_good, 0, 100, name, file);
    if (h.percent_data_good < 100 - h.percent_data_bad)
        fail(t, file, "[history] percent_data_good must be at least 100 - percent_data_bad");
    h.max_nodes = getUint(t, "max_nodes", h.max_nodes, 1, 1000000, name, file);
    h.max_value_bytes = getUint(t, "max_value_bytes", h.max_value_bytes, 16, 1u << 20, name, file);
    h.max_nodes_per_read =
        getUint(t, "max_nodes_per_read", h.max_nodes_per_read, 1, 100000, name, file);
    h.max_values_per_node =
        getUint(t, "max_values_per_node", h.max_values_per_node, 1, 1000000, name, file);
    h.max_continuation_points =
        getUint(t, "max_continuation_points", h.max_continuation_points, 1, 65535, name, file);
    h.max_intervals_per_node =
        getUint(t, "max_intervals_per_node", h.max_intervals_per_node, 1, 1000000, name, file);
    h.max_processed_values =
        getUint(t, "max_processed_values", h.max_processed_values, 16, 100000000, name, file);
    h.max_req_times = getUint(t, "max_req_times", h.max_req_times, 1, 1000000, name, file);
    for (const auto& text : getStrings(t, "nodes", {}, name, file)) {
        PersistentNode n;
        if (!parsePersistentNode(text, n))
            fail(*t.get("nodes"), file,
                 "[history] nodes: '" + text.substr(0, 200) +
                     "' must be \"nsu=<uri>;s=<text>\", \"nsu=<uri>;i=<n>\" or the same with "
                     "\"ns=<index>;\" (1 to 65535)");
        h.nodes.push_back(std::move(n));
    }
    if (h.nodes.size() > h.max_nodes)
        fail(*t.get("nodes"), file,
             "[history] nodes names " + std::to_string(h.nodes.size()) +
                 " nodes, more than max_nodes = " + std::to_string(h.max_nodes));
    h.max_events_per_node =
        getUint(t, "max_events_per_node", h.max_events_per_node, 1, 1000000, name, file);
    h.max_events_per_update =
        getUint(t, "max_events_per_update", h.max_events_per_update, 1, 100000, name, file);
    h.max_event_bytes = getUint(t, "max_event_bytes", h.max_event_bytes, 256, 1u << 22, name, file);
    for (const auto& text : getStrings(t, "event_notifiers", {}, name, file)) {
        if (text == "server") {
            h.server_events = true;
            continue;
        }
        PersistentNode n;
        if (!parsePersistentNode(text, n))
            fail(*t.get("event_notifiers"), file,
                 "[history] event_notifiers: '" + text.substr(0, 200) +
                     "' must be \"server\" or a NodeId as in nodes");
        h.event_notifiers.push_back(std::move(n));
    }
    if (h.event_notifiers.size() > h.max_nodes)
        fail(*t.get("event_notifiers"), file,
             "[history] event_notifiers names " + std::to_string(h.event_notifiers.size()) +
                 " notifiers, more than max_nodes = " + std::to_string(h.max_nodes));
    if (h.nodes.empty() && !h.historizing && h.event_notifiers.empty() && !h.server_events)
        fail(t, file, "[history] names no nodes, no event_notifiers and historizing is false");
}

// "host:port" or "[v6]:port".
void splitListen(const toml::node& at, const fs::path& file, AdminConfig& a) {
    const std::string& l = a.listen;
    std::string host;
    std::string port;
    if (!l.empty() && l[0] == '[') {
        auto close = l.find(']');
        if (close == std::string::npos || close + 1 >= l.size() || l[close + 1] != ':')
            fail(at, file, "[admin] listen must be \"host:port\" or \"[v6 address]:port\"");
        host = l.substr(1, close - 1);
        port = l.substr(close + 2);
    } else {
        auto colon = l.rfind(':');
        if (colon == std::string::npos || colon == 0 || l.find(':') != colon)
            fail(at, file, "[admin] listen must be \"host:port\" or \"[v6 address]:port\"");
        host = l.substr(0, colon);
        port = l.substr(colon + 1);
    }
    bool digits =
        !port.empty() && port.size() <= 5 &&
        std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (host.empty() || !digits || std::stoul(port) > 65535)
        fail(at, file, "[admin] listen: '" + l + "' needs a host and a port from 0 to 65535");
    a.host = host;
    a.port = std::uint16_t(std::stoul(port));
}

void buildAdmin(const toml::table& t, const fs::path& file, const PathContext& paths,
                ServerConfig& cfg) {
    checkKeys(t,
              {"enabled", "listen", "max_connections", "max_request_header_bytes",
               "idle_timeout_ms", "token", "tls_certificate", "tls_private_key"},
              "admin", file, cfg);
    AdminConfig& a = cfg.admin;
    if (const toml::node* n = t.get("enabled")) {
        if (!n->is_boolean()) fail(*n, file, "[admin] enabled must be a boolean");
        a.enabled = n->as_boolean()->get();
    }
    a.listen = getString(t, "listen", a.listen, "admin", file);
    splitListen(t.get("listen") ? *t.get("listen") : static_cast<const toml::node&>(t), file, a);
    a.max_connections = getUint(t, "max_connections", a.max_connections, 1, 1024, "admin", file);
    a.max_request_header_bytes = getUint(t, "max_request_header_bytes", a.max_request_header_bytes,
                                         1024, 65536, "admin", file);
    a.idle_timeout_ms =
        getUint(t, "idle_timeout_ms", a.idle_timeout_ms, 100, 600000, "admin", file);
    a.token = getString(t, "token", a.token, "admin", file);
    if (t.get("token") && a.token.size() < 16)
        fail(*t.get("token"), file, "[admin] token must be at least 16 characters");
    for (char c : a.token)
        if (c <= ' ' || c > '~')
            fail(*t.get("token"), file, "[admin] token must be printable ASCII without spaces");
    std::string cert = getString(t, "tls_certificate", "", "admin", file);
    std::string key = getString(t, "tls_private_key", "", "admin", file);
    if (cert.empty() != key.empty())
        fail(t, file, "[admin] tls_certificate and tls_private_key go together");
    if (!cert.empty()) {
        a.tls_certificate = resolve(cert, file, paths);
        a.tls_private_key = resolve(key, file, paths);
    }
}

void buildControl(const toml::table& t, const fs::path& file, const PathContext& paths,
                  ServerConfig& cfg) {
    checkKeys(t, {"enabled", "socket", "max_request_bytes", "timeout_ms"}, "control", file, cfg);
    ControlConfig& c = cfg.control;
    if (const toml::node* n = t.get("enabled")) {
        if (!n->is_boolean()) fail(*n, file, "[control] enabled must be a boolean");
        c.enabled = n->as_boolean()->get();
    }
    std::string socket = getString(t, "socket", "", "control", file);
    if (!socket.empty()) c.socket = resolve(socket, file, paths);
    // sockaddr_un holds 108 bytes with the terminating NUL.
    if (c.socket.native().size() > 107)
        fail(*t.get("socket"), file,
             "[control] socket: the path is longer than a Unix socket address allows (107 "
             "bytes); choose a shorter one");
    if (c.enabled && c.socket.empty()) fail(t, file, "[control] enabled needs socket = \"<path>\"");
    c.max_request_bytes =
        getUint(t, "max_request_bytes", c.max_request_bytes, 64, 65536, "control", file);
    c.timeout_ms = getUint(t, "timeout_ms", c.timeout_ms, 100, 60000, "control", file);
}

void buildAudit(const toml::table& t, const fs::path& file, const PathContext& paths,
                ServerConfig& cfg) {
    checkKeys(t, {"enabled", "file", "format", "max_line_bytes", "max_file_mib", "queue_records"},
              "audit", file, cfg);
    AuditConfig& a = cfg.audit;
    if (const toml::node* n = t.get("enabled")) {
        if (!n->is_boolean()) fail(*n, file, "[audit] enabled must be a boolean");
        a.enabled = n->as_boolean()->get();
    }
    std::string log = getString(t, "file", "", "audit", file);
    if (!log.empty()) a.file = resolve(log, file, paths);
    std::string format = getString(t, "format", "text", "audit", file);
    if (format != "text" && format != "json")
        fail(*t.get("format"), file, "[audit] format must be \"text\" or \"json\"");
    a.json = format == "json";
    a.max_line_bytes = getUint(t, "max_line_bytes", a.max_line_bytes, 256, 65536, "audit", file);
    // Whole MiB keep the value within getUint's range and the rotation meaningful.
    a.max_file_bytes = std::uint64_t(getUint(t, "max_file_mib", 16, 1, 4096, "audit", file)) << 20;
    a.queue_records = getUint(t, "queue_records", a.queue_records, 16, 1u << 20, "audit", file);
}

ServerConfig build(const toml::table& root, const fs::path& file, const PathContext& paths) {
    ServerConfig cfg;
    cfg.file = file;
    checkKeys(root,
              {"log", "host", "server", "access", "slots", "plugins", "persistence", "history",
               "admin", "control", "audit", "pubsub", "alarms"},
              "top level", file, cfg);
    if (const toml::table* audit = subTable(root, "audit", file))
        buildAudit(*audit, file, paths, cfg);
    if (const toml::table* admin = subTable(root, "admin", file))
        buildAdmin(*admin, file, paths, cfg);
    if (const toml::table* control = subTable(root, "control", file))
        buildControl(*control, file, paths, cfg);
    if (const toml::table* access = subTable(root, "access", file))
        buildAccess(*access, file, paths, cfg);

    if (const toml::table* log = subTable(root, "log", file)) {
        checkKeys(*log, {"level", "sink", "file"}, "log", file, cfg);
        cfg.log.level = getString(*log, "level", cfg.log.level, "log", file);
        static const std::set<std::string> levels{"trace", "debug",    "info", "warn",
                                                  "error", "critical", "off"};
        if (!levels.count(cfg.log.level))
            fail(*log->get("level"), file,
                 "[log] level must be one of trace, debug, info, warn, error, critical, off");
        cfg.log.sink = getString(*log, "sink", cfg.log.sink, "log", file);
        if (cfg.log.sink != "stdout" && cfg.log.sink != "stderr" && cfg.log.sink != "file")
            fail(*log->get("sink"), file, "[log] sink must be one of stdout, stderr, file");
        cfg.log.file =
            resolve(getString(*log, "file", cfg.log.file.string(), "log", file), file, paths);
    } else {
        cfg.log.file = resolve(cfg.log.file.string(), file, paths);
    }

    std::vector<std::string> dirs{"{exe_dir}/../plugins"};
    if (const toml::table* host = subTable(root, "host", file)) {
        checkKeys(*host, {"plugin_dirs"}, "host", file, cfg);
        dirs = getStrings(*host, "plugin_dirs", dirs, "host", file);
    }
    for (const auto& d : dirs) cfg.plugin_dirs.push_back(resolve(d, file, paths));

    if (const toml::table* server = subTable(root, "server", file)) {
        checkKeys(*server,
                  {"application_name", "application_uri", "product_uri", "manufacturer_name",
                   "product_name", "endpoints", "reverse_connect", "request_threads", "security",
                   "pki_dir", "security_profile", "limits", "diagnostics", "node_management"},
                  "server", file, cfg);
        ServerSection& s = cfg.server;
        s.application_name =
            getString(*server, "application_name", s.application_name, "server", file);
        s.application_uri =
            getString(*server, "application_uri", s.application_uri, "server", file);
        s.product_uri = getString(*server, "product_uri", s.product_uri, "server", file);
        s.manufacturer_name =
            getString(*server, "manufacturer_name", s.manufacturer_name, "server", file);
        s.product_name = getString(*server, "product_name", s.product_name, "server", file);
        s.endpoints = getStrings(*server, "endpoints", s.endpoints, "server", file);
        s.reverse_connect =
            getStrings(*server, "reverse_connect", s.reverse_connect, "server", file);
        s.request_threads =
            getUint(*server, "request_threads", s.request_threads, 1, 1024, "server", file);
        if (const toml::node* n = server->get("diagnostics")) {
            if (!n->is_boolean()) fail(*n, file, "[server] diagnostics must be a boolean");
            s.diagnostics = n->as_boolean()->get();
        }
        if (const toml::node* n = server->get("node_management")) {
            if (!n->is_boolean()) fail(*n, file, "[server] node_management must be a boolean");
            s.node_management = n->as_boolean()->get();
        }
        if (s.endpoints.empty())
            fail(*server->get("endpoints"), file, "[server] endpoints must name at least one URL");
        s.pki_dir = getString(*server, "pki_dir", s.pki_dir.string(), "server", file);
        s.security_profile =
            getString(*server, "security_profile", s.security_profile, "server", file);
        if (s.security_profile != "default" && s.security_profile != "strict")
            fail(*server->get("security_profile"), file,
                 "[server] security_profile must be \"default\" or \"strict\"");
        if (const toml::node* node = server->get("security")) {
            static const std::set<std::string> policies{
                "None",          "Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss",
                "Basic128Rsa15", "Basic256"};
            const toml::array* arr = node->as_array();
            if (!arr || arr->empty())
                fail(*node, file, "[server] security must be a non-empty array of tables");
            s.security.clear();
            for (const toml::node& item : *arr) {
                const toml::table* t = item.as_table();
                if (!t) fail(item, file, "[server] security entries are tables {policy, modes}");
                checkKeys(*t, {"policy", "modes"}, "server.security", file, cfg);
                SecurityOffer o;
                o.policy = getString(*t, "policy", "", "server.security", file);
                if (!policies.count(o.policy))
                    fail(item, file,
                         "[server] security: unknown policy '" + o.policy +
                             "' (None, Basic256Sha256, Aes128_Sha256_RsaOaep, "
                             "Aes256_Sha256_RsaPss, Basic128Rsa15, Basic256)");
                if (o.policy != "None") {
                    o.modes = getStrings(*t, "modes", {"Sign", "SignAndEncrypt"}, "server.security",
                                         file);
                    if (o.modes.empty())
                        fail(item, file, "[server] security: modes must not be empty");
                    for (const auto& m : o.modes)
                        if (m != "Sign" && m != "SignAndEncrypt")
                            fail(item, file,
                                 "[server] security: mode '" + m +
                                     "' is not Sign or SignAndEncrypt");
                } else if (t->get("modes")) {
                    fail(item, file, "[server] security: policy None has no modes");
                }
                s.security.push_back(std::move(o));
            }
        }
        if (const toml::table* limits = subTable(*server, "limits", file)) {
            ServerLimits& l = s.limits;
            struct Key {
                const char* name;
                std::uint32_t* value;
                std::uint32_t min;
                std::uint32_t max = 0xFFFFFFFFu;
            };
            const Key keys[] = {
                {"max_channels", &l.max_channels, 1},
                {"max_pending_handshakes", &l.max_pending_handshakes, 1},
                {"handshake_timeout_ms", &l.handshake_timeout_ms, 100},
                {"hello_timeout_ms", &l.hello_timeout_ms, 100},
                {"max_channels_per_peer", &l.max_channels_per_peer, 1},
                {"idle_channel_timeout_ms", &l.idle_channel_timeout_ms, 100},
                {"send_queue_high_water_bytes", &l.send_queue_high_water_bytes, 65536},
                {"max_send_queue_bytes", &l.max_send_queue_bytes, 65536},
                {"max_reassembly_bytes", &l.max_reassembly_bytes, 65536},
                {"reassembly_idle_timeout_ms", &l.reassembly_idle_timeout_ms, 100},
                {"receive_buffer_size", &l.receive_buffer_size, 8192},
                {"send_buffer_size", &l.send_buffer_size, 8192},
                {"max_message_size", &l.max_message_size, 8192},
                {"max_chunk_count", &l.max_chunk_count, 1},
                {"min_token_lifetime_ms", &l.min_token_lifetime_ms, 1000},
                {"max_token_lifetime_ms", &l.max_token_lifetime_ms, 1000},
                {"max_rejected_certificates", &l.max_rejected_certificates, 0, 100000},
                {"max_rejected_bytes", &l.max_rejected_bytes, 0, 1u << 30},
                {"max_certificate_refusal_logs_per_minute",
                 &l.max_certificate_refusal_logs_per_minute, 0, 100000},
                {"max_sessions", &l.max_sessions, 1},
                {"min_session_timeout_ms", &l.min_session_timeout_ms, 100},
                {"max_session_timeout_ms", &l.max_session_timeout_ms, 100},
                // Advertised as MaxBrowseContinuationPoints, a UInt16.
                {"max_browse_continuation_points", &l.max_browse_continuation_points, 1, 65535},
                {"max_async_operations", &l.max_async_operations, 1, 1000000},
                {"sampling_stop_timeout_ms", &l.sampling_stop_timeout_ms, 1, 600000},
                {"max_unactivated_sessions_per_channel", &l.max_unactivated_sessions_per_channel,
                 1},
                {"max_unactivated_sessions_per_peer", &l.max_unactivated_sessions_per_peer, 1},
                {"unactivated_session_timeout_ms", &l.unactivated_session_timeout_ms, 100},
                {"max_session_string_length", &l.max_session_string_length, 16, 65535},
                {"login_failures_before_delay", &l.login_failures_before_delay, 0},
                {"login_delay_ms", &l.login_delay_ms, 0, 600000},
                {"login_max_delay_ms", &l.login_max_delay_ms, 0, 600000},
                {"login_lockout_failures", &l.login_lockout_failures, 1},
                {"login_lockout_ms", &l.login_lockout_ms, 0, 86400000},
                {"max_login_failures_per_session", &l.max_login_failures_per_session, 1},
                {"password_hash_threads", &l.password_hash_threads, 1, 64},
                {"password_hash_queue", &l.password_hash_queue, 1, 65536},
                {"max_pending_logins_per_peer", &l.max_pending_logins_per_peer, 1},
                {"max_nesting_depth", &l.max_nesting_depth, 4},
                {"json_decode_threads", &l.json_decode_threads, 1, 64},
                {"json_decode_queue_bytes", &l.json_decode_queue_bytes, 65536},
                {"max_nodes_per_read", &l.max_nodes_per_read, 0},
                {"max_nodes_per_write", &l.max_nodes_per_write, 0},
                {"max_nodes_per_browse", &l.max_nodes_per_browse, 0},
                {"max_nodes_per_register_nodes", &l.max_nodes_per_register_nodes, 0},
                {"max_nodes_per_translate", &l.max_nodes_per_translate, 0},
                {"max_nodes_per_method_call", &l.max_nodes_per_method_call, 0},
                {"max_nodes_per_node_management", &l.max_nodes_per_node_management, 1},
                {"max_store_nodes", &l.max_store_nodes, 1, 100000000},
                {"max_references_per_node", &l.max_references_per_node, 1},
                {"max_monitored_items_per_call", &l.max_monitored_items_per_call, 0},
                {"max_conditions", &l.max_conditions, 0},
                {"max_subscriptions", &l.max_subscriptions, 1},
                {"max_subscriptions_per_session", &l.max_subscriptions_per_session, 0},
                // Monitored items: no "no limit" value (the hardening work made them finite).
                {"max_monitored_items", &l.max_monitored_items, 1},
                {"max_monitored_items_per_session", &l.max_monitored_items_per_session, 1},
                {"max_monitored_items_per_subscription", &l.max_monitored_items_per_subscription,
                 1},
                {"max_monitored_item_queue_size", &l.max_monitored_item_queue_size, 1},
                {"max_event_queue_size", &l.max_event_queue_size, 1},
                {"max_publish_requests_per_session", &l.max_publish_requests_per_session, 1},
                {"max_notifications_per_publish", &l.max_notifications_per_publish, 0},
                {"min_publishing_interval_ms", &l.min_publishing_interval_ms, 10},
                {"max_publishing_interval_ms", &l.max_publishing_interval_ms, 10},
                {"min_sampling_interval_ms", &l.min_sampling_interval_ms, 0},
                {"max_sampling_interval_ms", &l.max_sampling_interval_ms, 1},
                {"max_aggregate_samples", &l.max_aggregate_samples, 1},
                {"max_processing_interval_ms", &l.max_processing_interval_ms, 1},
            };
            // Decoding limits: 0 is no limit (the message size bounds them); a positive value
            // must leave room for a CreateSession's URIs and a client certificate.
            const Key signed_keys[] = {
                {"max_string_length", reinterpret_cast<std::uint32_t*>(&l.max_string_length), 256},
                {"max_bytestring_length",
                 reinterpret_cast<std::uint32_t*>(&l.max_bytestring_length), 4096},
                {"max_array_length", reinterpret_cast<std::uint32_t*>(&l.max_array_length), 16},
            };
            std::vector<std::string_view> known;
            for (const Key& k : keys) known.push_back(k.name);
            for (const Key& k : signed_keys) known.push_back(k.name);
            for (auto&& [key, node] : *limits) {
                bool found = false;
                for (auto k : known) found = found || k == key.str();
                if (!found)
                    cfg.warnings.push_back(positionOf(node, file) + ": unknown key '" +
                                           std::string(key.str()) + "' in [server.limits]");
            }
            for (const Key& k : keys)
                *k.value = getUint(*limits, k.name, *k.value, k.min, k.max, "server.limits", file);
            for (const Key& k : signed_keys) {
                const toml::node* node = limits->get(k.name);
                if (!node) continue;
                const auto* v = node->as_integer();
                if (!v || (v->get() != 0 && (v->get() < k.min || v->get() > 0x7FFFFFFF)))
                    fail(*node, file,
                         std::string("[server.limits] ") + k.name +
                             " must be 0 (no limit) or an integer from " + std::to_string(k.min) +
                             " to 2147483647");
                *k.value = std::uint32_t(v->get());
            }
            if (l.receive_buffer_size > l.max_message_size ||
                l.send_buffer_size > l.max_message_size)
                fail(*limits, file,
                     "[server.limits] receive_buffer_size and send_buffer_size must not exceed "
                     "max_message_size");
            // A response of max_message_size waiting for a slow reader must fit above the
            // high-water mark, or every large response would close its connection.
            if (l.max_send_queue_bytes != 0 &&
                std::uint64_t{l.max_send_queue_bytes} <
                    std::uint64_t{l.send_queue_high_water_bytes} + l.max_message_size)
                fail(*limits, file,
                     "[server.limits] max_send_queue_bytes must be at least "
                     "send_queue_high_water_bytes + max_message_size");
            if (l.min_publishing_interval_ms > l.max_publishing_interval_ms)
                fail(*limits, file,
                     "[server.limits] min_publishing_interval_ms exceeds "
                     "max_publishing_interval_ms");
            if (l.min_sampling_interval_ms > l.max_sampling_interval_ms)
                fail(*limits, file,
                     "[server.limits] min_sampling_interval_ms exceeds max_sampling_interval_ms");
            if (l.max_aggregate_samples > 100000)
                fail(*limits, file, "[server.limits] max_aggregate_samples must be at most 100000");
            if (l.min_token_lifetime_ms > l.max_token_lifetime_ms)
                fail(*limits, file,
                     "[server.limits] min_token_lifetime_ms exceeds max_token_lifetime_ms");
            if (l.min_session_timeout_ms > l.max_session_timeout_ms)
                fail(*limits, file,
                     "[server.limits] min_session_timeout_ms exceeds max_session_timeout_ms");
        }
    }
    if (cfg.server.limits.max_reassembly_bytes == 0) {
        // Room for the admission provider's floors (two retained-message footprints of
        // 4 x (max_message_size + 64 KiB)) twice over, and at least 64 MiB.
        std::uint64_t derived = std::max<std::uint64_t>(
            std::uint64_t{64} << 20,
            16 * (std::uint64_t{cfg.server.limits.max_message_size} + 65536));
        cfg.server.limits.max_reassembly_bytes =
            std::uint32_t(std::min<std::uint64_t>(derived, 0xFFFFFFFFu));
    }
    if (cfg.server.limits.max_send_queue_bytes == 0) {
        std::uint64_t derived = std::max<std::uint64_t>(
            33554432, std::uint64_t{cfg.server.limits.send_queue_high_water_bytes} +
                          cfg.server.limits.max_message_size);
        cfg.server.limits.max_send_queue_bytes =
            std::uint32_t(std::min<std::uint64_t>(derived, 0xFFFFFFFFu));
    }
    expandHostname(cfg.server.application_uri);
    cfg.server.pki_dir = resolve(cfg.server.pki_dir.string(), file, paths);
    if (cfg.server.strict()) applyStrict(root, file, cfg);

    if (const toml::table* slots = subTable(root, "slots", file)) {
        checkKeys(*slots, {"request_queue", "admission", "buffer_pool", "monitored_item_queue"},
                  "slots", file, cfg);
        cfg.slots.request_queue = getString(*slots, "request_queue", "", "slots", file);
        cfg.slots.admission = getString(*slots, "admission", "", "slots", file);
        cfg.slots.buffer_pool = getString(*slots, "buffer_pool", "", "slots", file);
        cfg.slots.monitored_item_queue =
            getString(*slots, "monitored_item_queue", "", "slots", file);
    }

    if (const toml::table* persistence = subTable(root, "persistence", file))
        buildPersistence(*persistence, file, paths, cfg);
    if (const toml::table* pubsub = subTable(root, "pubsub", file)) buildPubSub(*pubsub, file, cfg);
    if (const toml::node* alarms = root.get("alarms")) buildAlarms(*alarms, file, cfg);
    if (const toml::table* history = subTable(root, "history", file))
        buildHistory(*history, file, cfg);

    if (const toml::table* plugins = subTable(root, "plugins", file)) {
        for (auto&& [key, node] : *plugins) {
            std::string name(key.str());
            const toml::table* t = node.as_table();
            if (!t)
                fail(node, file, "[plugins] " + name + " must be a table ([plugins." + name + "])");
            if (!validPluginName(name))
                fail(node, file, "plugin name '" + name + "' may use only a-z, 0-9, '-' and '_'");
            PluginConfig pc;
            pc.name = name;
            pc.position = positionOf(node, file);
            for (auto&& [k, v] : *t) {
                if (k.str() == "enabled") {
                    if (!v.is_boolean())
                        fail(v, file, "[plugins." + name + "] enabled must be a boolean");
                    pc.enabled = v.as_boolean()->get();
                } else if (k.str() == "library") {
                    if (!v.is_string())
                        fail(v, file, "[plugins." + name + "] library must be a string");
                    pc.library = resolve(v.as_string()->get(), file, paths);
                } else if (k.str() == "blocking_threads") {
                    const auto n = v.value<std::int64_t>();
                    if (!v.is_integer() || !n || *n < 0 || *n > kMaxBlockingThreads)
                        fail(v, file,
                             "[plugins." + name +
                                 "] blocking_threads must be an integer from 0 to " +
                                 std::to_string(kMaxBlockingThreads));
                    pc.blocking_threads = std::uint32_t(*n);
                } else {
                    pc.settings.insert(k, v);
                    pc.key_positions.emplace(std::string(k.str()), positionOf(v, file));
                }
            }
            cfg.plugins.push_back(std::move(pc));
        }
    }

    // A slot names a plugin that must be configured and enabled.
    auto checkSlot = [&](const std::string& slot, const std::string& name) {
        if (name.empty()) return;
        const PluginConfig* pc = cfg.plugin(name);
        const toml::node* node = root.at_path("slots." + slot).node();
        if (!pc)
            fail(*node, file,
                 "[slots] " + slot + " = \"" + name + "\": no [plugins." + name + "] table");
        if (!pc->enabled)
            fail(*node, file, "[slots] " + slot + " = \"" + name + "\": plugin is disabled");
    };
    checkSlot("request_queue", cfg.slots.request_queue);
    checkSlot("admission", cfg.slots.admission);
    checkSlot("buffer_pool", cfg.slots.buffer_pool);
    checkSlot("monitored_item_queue", cfg.slots.monitored_item_queue);
    if (cfg.pubsub.enabled) {
        const PluginConfig* pc = cfg.plugin(cfg.pubsub.plugin);
        const toml::node* node = root.at_path("pubsub.plugin").node();
        if (!pc || !pc->enabled)
            fail(*node, file,
                 "[pubsub] plugin = \"" + cfg.pubsub.plugin + "\": no enabled [plugins." +
                     cfg.pubsub.plugin + "] table");
    }
    return cfg;
}

}  // namespace

const PluginConfig* ServerConfig::plugin(std::string_view name) const {
    for (const auto& p : plugins)
        if (p.name == name) return &p;
    return nullptr;
}

std::string positionOf(const toml::node& node, const fs::path& file) {
    const auto& src = node.source();
    std::ostringstream s;
    s << fileLabel(file);
    if (src.begin.line) s << ':' << src.begin.line << ':' << src.begin.column;
    return s.str();
}

ServerConfig parseString(std::string_view text, const fs::path& source_name,
                         const PathContext& paths) {
    toml::table root;
    try {
        root = toml::parse(text, source_name.string());
    } catch (const toml::parse_error& e) {
        const auto& b = e.source().begin;
        throw ConfigError(fileLabel(source_name) + ":" + std::to_string(b.line) + ":" +
                          std::to_string(b.column) + ": " + std::string(e.description()));
    }
    return build(root, source_name, paths);
}

ServerConfig loadFile(const fs::path& file, const PathContext& paths) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw ConfigError(file.string() + ": cannot open configuration file");
    std::stringstream buf;
    buf << in.rdbuf();
    fs::path absolute = fs::absolute(file).lexically_normal();
    ServerConfig cfg = parseString(buf.str(), absolute, paths);
    return cfg;
}

}  // namespace uaplex::config
