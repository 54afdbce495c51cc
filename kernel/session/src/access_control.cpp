// SPDX-License-Identifier: Apache-2.0
#include <uaplex/session/access_control.hpp>

#include <uaplex/encoding/generated/ns0.hpp>

#include <algorithm>
#include <cstring>

namespace uaplex::session {

RoleMask roleMask(const std::vector<std::string>& names) noexcept {
    RoleMask m = 0;
    for (const auto& n : names)
        if (int i = config::roleIndex(n); i >= 0) m |= 1u << i;
    return m;
}

namespace {

int compareKeys(const NodeKey& a, const NodeKey& b) noexcept {
    if (a.ns != b.ns) return a.ns < b.ns ? -1 : 1;
    if (a.isString != b.isString) return a.isString ? 1 : -1;
    if (!a.isString) return a.numeric == b.numeric ? 0 : (a.numeric < b.numeric ? -1 : 1);
    return a.text.compare(b.text) < 0 ? -1 : (a.text == b.text ? 0 : 1);
}

template <class V>
const typename V::value_type* findNode(const V& sorted, const ua::NodeId& id) noexcept {
    if (sorted.empty()) return nullptr;
    if (id.identifier_type != UAPLEX_ID_NUMERIC && id.identifier_type != UAPLEX_ID_STRING)
        return nullptr;
    std::size_t lo = 0, hi = sorted.size();
    while (lo < hi) {
        std::size_t mid = (lo + hi) / 2;
        int c = compare(sorted[mid].key, id);
        if (c == 0) return &sorted[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return nullptr;
}

}  // namespace

int compare(const NodeKey& k, const ua::NodeId& id) noexcept {
    if (k.ns != id.namespace_index) return k.ns < id.namespace_index ? -1 : 1;
    bool idString = id.identifier_type == UAPLEX_ID_STRING;
    if (k.isString != idString) return k.isString ? 1 : -1;
    if (!idString) {
        std::uint32_t n = id.identifier.numeric;
        return k.numeric == n ? 0 : (k.numeric < n ? -1 : 1);
    }
    std::string_view s = ua::view(id.identifier.string);
    int c = std::string_view(k.text).compare(s);
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

std::uint32_t AccessView::permissions(const ua::NodeId& node) const noexcept {
    if (const Override* o = findNode(overrides_, node)) return o->permissions;
    return node.namespace_index < namespaces_.size() ? namespaces_[node.namespace_index]
                                                     : defaultPermissions_;
}

std::uint32_t AccessView::grantedOutsideNamespace0() const noexcept {
    std::uint32_t p = defaultPermissions_;
    for (std::size_t i = 1; i < namespaces_.size(); ++i) p |= namespaces_[i];
    for (const Override& o : overrides_)
        if (o.key.ns != 0) p |= o.permissions;
    return p;
}

bool receivesEventsFrom(const void* view, const ua::NodeId& source) noexcept {
    if (!view) return true;
    return (static_cast<const AccessView*>(view)->permissions(source) & kPermReceiveEvents) != 0;
}

AccessPolicy::AccessPolicy(const config::AccessSection& cfg,
                           const std::vector<std::string>& namespaceUris)
    : defaultPermissions_(cfg.default_permissions),
      anonymousDefaults_(cfg.default_permissions & cfg.anonymous_permissions) {
    RolePermissionTable everyRole;
    everyRole.fill(defaultPermissions_);
    ns_.assign(namespaceUris.size(), everyRole);
    for (std::size_t i = 1; i < ns_.size(); ++i) ns_[i][0] = anonymousDefaults_;  // Anonymous
    nsHasRules_.assign(namespaceUris.size(), false);
    restricts_ = defaultPermissions_ != config::kAllPermissions ||
                 anonymousDefaults_ != config::kAllPermissions;
    auto indexOf = [&](const std::string& uri) -> int {
        for (std::size_t i = 0; i < namespaceUris.size(); ++i)
            if (namespaceUris[i] == uri) return int(i);
        return -1;
    };
    for (const config::AccessRule& r : cfg.rules) {
        int ns = r.has_node && r.node_ns >= 0 ? r.node_ns : indexOf(r.namespace_uri);
        if (ns < 0 || std::size_t(ns) >= namespaceUris.size()) {
            warnings_.push_back(
                r.position + ": [[access.rules]] names namespace '" +
                (r.namespace_uri.empty() ? std::to_string(r.node_ns) : r.namespace_uri) +
                "', which the server does not have; the rule is ignored");
            continue;
        }
        restricts_ = true;
        RoleMask roles = roleMask(r.roles);
        auto apply = [&](RolePermissionTable& t) {
            for (std::size_t i = 0; i < config::kRoleCount; ++i)
                if (roles & (1u << i)) t[i] |= r.permissions;
        };
        if (!r.has_node) {
            if (!nsHasRules_[std::size_t(ns)]) ns_[std::size_t(ns)].fill(0);
            nsHasRules_[std::size_t(ns)] = true;
            apply(ns_[std::size_t(ns)]);
            continue;
        }
        NodeKey key{std::uint16_t(ns), r.node_is_string, r.node_numeric, r.node_string};
        auto it = std::find_if(nodes_.begin(), nodes_.end(),
                               [&](const NodeRules& n) { return compareKeys(n.key, key) == 0; });
        if (it == nodes_.end()) {
            nodes_.push_back(NodeRules{std::move(key), {}});
            it = nodes_.end() - 1;
        }
        apply(it->perRole);
    }
    // Built-in node rules: the security diagnostics name every session's user, policy and
    // certificate (readable by the configured roles only); the diagnostics EnabledFlag is
    // written by the diagnostics admins only. A rule of the file on the node adds to these.
    auto builtIn = [&](std::uint32_t id, const std::vector<std::string>& roles,
                       std::uint32_t others) {
        NodeKey key{0, false, id, {}};
        auto it = std::find_if(nodes_.begin(), nodes_.end(),
                               [&](const NodeRules& n) { return compareKeys(n.key, key) == 0; });
        if (it == nodes_.end()) {
            nodes_.push_back(NodeRules{std::move(key), {}});
            it = nodes_.end() - 1;
        }
        const RoleMask admins = roleMask(roles);
        for (std::size_t i = 0; i < config::kRoleCount; ++i)
            it->perRole[i] |= (admins & (1u << i)) ? config::kAllPermissions : others;
    };
    const std::uint32_t browse = config::permissionBit("Browse");
    builtIn(ua::ns0::
                Server_ServerDiagnostics_SessionsDiagnosticsSummary_SessionSecurityDiagnosticsArray,
            cfg.security_diagnostics_roles, browse);
    builtIn(ua::ns0::Server_ServerDiagnostics_EnabledFlag, cfg.diagnostics_admin_roles,
            browse | config::permissionBit("ReadRolePermissions") | config::permissionBit("Read"));
    std::sort(nodes_.begin(), nodes_.end(),
              [](const NodeRules& a, const NodeRules& b) { return compareKeys(a.key, b.key) < 0; });
}

std::uint32_t AccessPolicy::defaultsFor(RoleMask roles, std::size_t ns) const noexcept {
    // A session without roles still gets the defaults.
    if (roles == 0) return defaultPermissions_;
    std::uint32_t p = (roles & ~kAnonymousRole) ? defaultPermissions_ : 0;
    if (roles & kAnonymousRole) p |= ns == 0 ? defaultPermissions_ : anonymousDefaults_;
    return p;
}

std::shared_ptr<const AccessView> AccessPolicy::view(RoleMask roles) const {
    std::lock_guard lock(cacheMutex_);
    auto& cached = cache_[roles];
    if (cached) return cached;
    auto v = std::make_shared<AccessView>();
    v->roles_ = roles;
    v->defaultPermissions_ = defaultsFor(roles, 1);  // namespaces added later are not ns0
    auto unite = [&](const RolePermissionTable& t) {
        std::uint32_t p = 0;
        for (std::size_t i = 0; i < config::kRoleCount; ++i)
            if (roles & (1u << i)) p |= t[i];
        return p;
    };
    for (std::size_t i = 0; i < ns_.size(); ++i)
        v->namespaces_.push_back(nsHasRules_[i] ? unite(ns_[i]) : defaultsFor(roles, i));
    for (const NodeRules& n : nodes_) v->overrides_.push_back({n.key, unite(n.perRole)});
    cached = std::move(v);
    return cached;
}

bool AccessPolicy::rolePermissions(const ua::NodeId& node,
                                   RolePermissionTable& out) const noexcept {
    if (const NodeRules* n = findNode(nodes_, node)) {
        out = n->perRole;
        return true;
    }
    if (node.namespace_index < ns_.size() && nsHasRules_[node.namespace_index]) {
        out = ns_[node.namespace_index];
        return true;
    }
    return false;
}

}  // namespace uaplex::session
