// SPDX-License-Identifier: Apache-2.0
// A small event type model for the filter tests: BaseEventType > ConditionType >
// AlarmConditionType, BaseEventType > SystemEventType; the built-in DataTypes; Objects (an
// Object, not a type).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <uaplex/subscription/event_filter.hpp>

namespace uaplex::subscription::test {

struct FakeModel : EventTypeModel {
    std::map<uint32_t, uint32_t> super{{2041, 0}, {2782, 2041}, {2915, 2782}, {2130, 2041}};
    // Instance declarations by type: paths joined with '/'.
    std::map<uint32_t, std::set<std::string>> decls{
        {2041,
         {"EventId", "EventType", "SourceNode", "SourceName", "Time", "ReceiveTime", "Message",
          "Severity"}},
        {2782, {"Retain", "EnabledState", "EnabledState/Id", "ConditionName"}},
        {2915, {"ActiveState", "ActiveState/Id"}},
    };
    static bool ns0(const ua::NodeId& id) {
        return id.namespace_index == 0 && id.identifier_type == UAPLEX_ID_NUMERIC;
    }
    bool known(const ua::NodeId& id, bool* isObjectType, bool* isDataType) const override {
        *isObjectType = ns0(id) && super.count(id.identifier.numeric);
        *isDataType = ns0(id) && id.identifier.numeric >= 1 && id.identifier.numeric <= 25;
        return *isObjectType || *isDataType || (ns0(id) && id.identifier.numeric == 85);
    }
    bool isSubtypeOf(const ua::NodeId& sub, const ua::NodeId& base) const override {
        if (!ns0(sub) || !ns0(base)) return false;
        for (uint32_t t = sub.identifier.numeric; t;) {
            if (t == base.identifier.numeric) return true;
            auto it = super.find(t);
            t = it == super.end() ? 0 : it->second;
        }
        return false;
    }
    bool hasInstanceDeclaration(const ua::NodeId& type,
                                std::span<const ua::QualifiedName> path) const override {
        std::string p;
        for (auto& q : path) p += (p.empty() ? "" : "/") + std::string(ua::view(q.name));
        for (uint32_t t = type.identifier.numeric; t; t = super.at(t))
            if (decls.count(t) && decls.at(t).count(p)) return true;
        return false;
    }
};

}  // namespace uaplex::subscription::test
