// SPDX-License-Identifier: Apache-2.0
// Names the [access] configuration uses: the well-known roles (Part 3 4.9.2) with their
// namespace-0 Object ids, and the PermissionType bits (Part 3 8.55).
#pragma once

#include <cstdint>
#include <string_view>

namespace uaplex::config {

struct RoleName {
    std::string_view name;
    std::uint32_t nodeId;  // ns=0 numeric id of the role Object (WellKnownRole_*)
};

// Index i in this table is bit i of a session's role mask.
inline constexpr RoleName kWellKnownRoles[] = {
    {"Anonymous", 15644},      {"AuthenticatedUser", 15656}, {"Observer", 15668},
    {"Operator", 15680},       {"Engineer", 16036},          {"Supervisor", 15692},
    {"ConfigureAdmin", 15716}, {"SecurityAdmin", 15704},
};
inline constexpr std::size_t kRoleCount = sizeof kWellKnownRoles / sizeof kWellKnownRoles[0];

// -1 when `name` is not a well-known role.
constexpr int roleIndex(std::string_view name) noexcept {
    for (std::size_t i = 0; i < kRoleCount; ++i)
        if (kWellKnownRoles[i].name == name) return int(i);
    return -1;
}

struct PermissionName {
    std::string_view name;
    std::uint32_t bit;
};

inline constexpr PermissionName kPermissions[] = {
    {"Browse", 1u << 0},
    {"ReadRolePermissions", 1u << 1},
    {"WriteAttribute", 1u << 2},
    {"WriteRolePermissions", 1u << 3},
    {"WriteHistorizing", 1u << 4},
    {"Read", 1u << 5},
    {"Write", 1u << 6},
    {"ReadHistory", 1u << 7},
    {"InsertHistory", 1u << 8},
    {"ModifyHistory", 1u << 9},
    {"DeleteHistory", 1u << 10},
    {"ReceiveEvents", 1u << 11},
    {"Call", 1u << 12},
    {"AddReference", 1u << 13},
    {"RemoveReference", 1u << 14},
    {"DeleteNode", 1u << 15},
    {"AddNode", 1u << 16},
};
inline constexpr std::uint32_t kAllPermissions = (1u << 17) - 1;

// 0 when `name` is not a PermissionType bit ("All" names every bit).
constexpr std::uint32_t permissionBit(std::string_view name) noexcept {
    if (name == "All") return kAllPermissions;
    for (const auto& p : kPermissions)
        if (p.name == name) return p.bit;
    return 0;
}

}  // namespace uaplex::config
