// SPDX-License-Identifier: Apache-2.0
// Roles and permissions (Part 3 4.8, 4.9, 8.55): the [access] rules compiled against the
// namespace table, and the per-session view the services check on every operation.
//
// A node's permissions for one role come from the rules that name the node, else from the
// rules of its namespace, else from [access] default_permissions (for the Anonymous role
// outside namespace 0: narrowed by anonymous_permissions). A session's permissions are the
// union over its roles. The view is built once per role set (at ActivateSession) and
// answers with a table index per namespace, plus a binary search only when node rules exist:
// nothing on the request path allocates or locks.
#pragma once

#include <uaplex/encoding/builtin.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <uaplex/config/access_names.hpp>
#include <uaplex/config/config.hpp>

namespace uaplex::session {

// PermissionType bits (Part 3 8.55) the services check.
enum Permission : std::uint32_t {
    kPermBrowse = 1u << 0,
    kPermReadRolePermissions = 1u << 1,
    kPermWriteAttribute = 1u << 2,
    kPermRead = 1u << 5,
    kPermWrite = 1u << 6,
    kPermReadHistory = 1u << 7,
    kPermInsertHistory = 1u << 8,
    kPermModifyHistory = 1u << 9,
    kPermDeleteHistory = 1u << 10,
    kPermReceiveEvents = 1u << 11,
    kPermCall = 1u << 12,
};

// Bit i: config::kWellKnownRoles[i].
using RoleMask = std::uint32_t;
RoleMask roleMask(const std::vector<std::string>& names) noexcept;
inline constexpr RoleMask kAnonymousRole = 1u << 0;
inline constexpr RoleMask kAuthenticatedUserRole = 1u << 1;

// Compares a NodeId with a rule's node without allocating; only numeric and string
// identifiers can be named by rules.
struct NodeKey {
    std::uint16_t ns = 0;
    bool isString = false;
    std::uint32_t numeric = 0;
    std::string text;
};
int compare(const NodeKey& k, const ua::NodeId& id) noexcept;  // <0, 0, >0

// What one session may do. Immutable; shared by the sessions with the same roles.
class AccessView {
  public:
    std::uint32_t permissions(const ua::NodeId& node) const noexcept;
    RoleMask roles() const noexcept { return roles_; }
    // Every permission the view grants on some node outside namespace 0 (start-up checks).
    std::uint32_t grantedOutsideNamespace0() const noexcept;

  private:
    friend class AccessPolicy;
    RoleMask roles_ = 0;
    std::uint32_t defaultPermissions_ = config::kAllPermissions;
    std::vector<std::uint32_t> namespaces_;  // by namespace index
    struct Override {
        NodeKey key;
        std::uint32_t permissions;
    };
    std::vector<Override> overrides_;  // sorted by key
};

// The subscription engine's event check (EngineContext::mayReceiveEvent) over an
// AccessView: ReceiveEvents on `source`. A null view (no access policy) receives everything,
// as the services then check nothing either.
bool receivesEventsFrom(const void* view, const ua::NodeId& source) noexcept;

// Permissions per well-known role.
using RolePermissionTable = std::array<std::uint32_t, config::kRoleCount>;

class AccessPolicy {
  public:
    // Rules naming a namespace URI that is not in `namespaceUris` are dropped with a line in
    // warnings().
    AccessPolicy(const config::AccessSection& cfg, const std::vector<std::string>& namespaceUris);

    // The view for a role set (made once per set, then shared). May allocate: ActivateSession.
    std::shared_ptr<const AccessView> view(RoleMask roles) const;
    // The RolePermissions of `node` when a rule covers it (node or namespace); false when
    // none does, so that the node's own RolePermissions (if any) stand.
    bool rolePermissions(const ua::NodeId& node, RolePermissionTable& out) const noexcept;
    // True when a rule of [access] exists or the defaults are narrowed: otherwise every
    // session may do everything but read the security diagnostics (security_diagnostics_roles).
    bool restricts() const noexcept { return restricts_; }
    const std::vector<std::string>& warnings() const noexcept { return warnings_; }

  private:
    struct NodeRules {
        NodeKey key;
        RolePermissionTable perRole{};
    };
    // The permissions of `roles` where no rule applies, on namespace `ns`.
    std::uint32_t defaultsFor(RoleMask roles, std::size_t ns) const noexcept;
    std::uint32_t defaultPermissions_;
    std::uint32_t anonymousDefaults_;  // default_permissions & anonymous_permissions
    std::vector<bool> nsHasRules_;
    std::vector<RolePermissionTable> ns_;  // by namespace index
    std::vector<NodeRules> nodes_;         // sorted by key
    bool restricts_ = false;
    std::vector<std::string> warnings_;
    mutable std::mutex cacheMutex_;
    mutable std::map<RoleMask, std::shared_ptr<const AccessView>> cache_;
};

}  // namespace uaplex::session
