// SPDX-License-Identifier: Apache-2.0
// Conditions in the address space (kernel/services/src/condition_nodes.cpp): the Objects of
// ConditionType subtypes a node manager (here a NodeSet2 file) adds become the kernel's, with
// the state variables of their kind as nodes (browsed, read), the methods through
// callCondition; one with an EnabledState of its own stays its node manager's.
#include <catch2/catch.hpp>

#include <deque>
#include <set>
#include <string>

#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

std::string conditionsPlugin(const std::string& file) {
    return std::string("[plugins.nodeset]\nlibrary = \"") + UAPLEX_NODESET_PLUGIN +
           "\"\nfiles = [\"" + UAPLEX_SOURCE_DIR + "/tests/unit/services/data/" + file + "\"]\n";
}

struct Model {
    test::Server s;
    std::uint16_t ns;
    explicit Model(const std::string& limits = "")
        : s(limits, conditionsPlugin("Uaplex.Conditions.NodeSet2.xml")),
          ns(s.namespaceIndex("urn:uaplex:test:conditions")) {}
    ua::NodeId id(std::uint32_t n) const { return ua::numericNodeId(ns, n); }
    ua::NodeId child(std::uint32_t n, std::string_view path) const {
        names.push_back("i=" + std::to_string(n) + "." + std::string(path));
        return ua::stringNodeId(ns, names.back());
    }
    // The browse names of the hierarchical children of `node`.
    std::set<std::string> children(const ua::NodeId& node) {
        std::set<std::string> out;
        for (const auto& r : s.browse(node).references)
            out.insert(std::string(ua::view(r.browseName.name)));
        return out;
    }
    mutable std::deque<std::string> names;
};

bool has(const std::set<std::string>& s, std::string_view name) {
    return s.count(std::string(name)) != 0;
}

}  // namespace

TEST_CASE("conditions: each kind gets the state variables of its type, read from the kernel") {
    Model m;
    REQUIRE(m.ns != 0xFFFF);
    // ConditionType: EnabledState and the ConditionType properties, no AckedState.
    auto plain = m.children(m.id(100));
    for (const char* n : {"EnabledState", "Retain", "Severity", "LastSeverity", "Quality",
                          "Comment", "ClientUserId", "BranchId", "Message", "ConditionName"})
        CHECK(has(plain, n));
    CHECK_FALSE(has(plain, "AckedState"));
    CHECK_FALSE(has(plain, "ActiveState"));
    // AcknowledgeableConditionType: AckedState and ConfirmedState, no ActiveState.
    auto ack = m.children(m.id(101));
    CHECK(has(ack, "AckedState"));
    CHECK(has(ack, "ConfirmedState"));
    CHECK_FALSE(has(ack, "ActiveState"));
    CHECK_FALSE(has(ack, "ShelvingState"));
    // OffNormalAlarmType and NonExclusiveLevelAlarmType are alarms: ActiveState, shelving.
    for (std::uint32_t alarm : {102u, 103u}) {
        auto c = m.children(m.id(alarm));
        CHECK(has(c, "ActiveState"));
        CHECK(has(c, "AckedState"));
        CHECK(has(c, "ShelvingState"));
        CHECK(has(c, "SuppressedOrShelved"));
    }
    auto twoState = m.children(m.child(102, "AckedState"));
    CHECK(has(twoState, "Id"));
    CHECK(has(twoState, "TransitionTime"));
    auto shelving = m.children(m.child(103, "ShelvingState"));
    CHECK(has(shelving, "CurrentState"));
    CHECK(has(shelving, "UnshelveTime"));

    // Values: enabled, acknowledged, inactive; ConditionName is the browse name.
    ua::DataValue v = m.s.read(m.child(102, "EnabledState.Id"));
    REQUIRE(v.status == UAPLEX_Good);
    CHECK(v.value.value.boolean);
    v = m.s.read(m.child(102, "ActiveState.Id"));
    CHECK_FALSE(v.value.value.boolean);
    v = m.s.read(m.child(101, "AckedState"));
    REQUIRE(ua::variantType(v.value) == ua::BuiltinType::LocalizedText);
    CHECK(ua::view(static_cast<ua::LocalizedText*>(v.value.value.pointer)->text) == "Acknowledged");
    v = m.s.read(m.child(100, "ConditionName"));
    CHECK(ua::view(v.value.value.string) == "Plain");
    v = m.s.read(m.child(103, "ShelvingState.CurrentState.Id"));
    REQUIRE(ua::variantType(v.value) == ua::BuiltinType::NodeId);
    CHECK(static_cast<ua::NodeId*>(v.value.value.pointer)->identifier.numeric == 2930);

    // The node manager's own condition is left alone: no kernel state variables.
    auto own = m.children(m.id(104));
    CHECK(has(own, "EnabledState"));
    CHECK_FALSE(has(own, "AckedState"));
    CHECK(m.s.services->callCondition(m.id(104), 9028, {}, "u") == UAPLEX_BadNodeIdInvalid);
}

TEST_CASE("conditions: methods change the state the nodes show; refusals") {
    Model m;
    REQUIRE(m.ns != 0xFFFF);
    auto& set = *m.s.services;
    CHECK(set.callCondition(m.id(100), 9028, {}, "user:op") == UAPLEX_Good);  // Disable
    CHECK_FALSE(m.s.read(m.child(100, "EnabledState.Id")).value.value.boolean);
    CHECK(set.callCondition(m.id(100), 9028, {}, "user:op") == UAPLEX_BadConditionAlreadyDisabled);
    CHECK(set.callCondition(m.id(100), 9027, {}, "user:op") == UAPLEX_Good);  // Enable
    CHECK(m.s.read(m.child(100, "EnabledState.Id")).value.value.boolean);
    // Not a condition: the source, the type node.
    CHECK(set.callCondition(m.id(10), 9027, {}, "u") == UAPLEX_BadNodeIdInvalid);
    CHECK(set.callCondition(ua::numericNodeId(0, 2782), 9027, {}, "u") == UAPLEX_BadNodeIdInvalid);
    // Shelving is on the ShelvingState Object.
    ua::Variant minute = ua::variantDouble(60000);
    CHECK(set.callCondition(m.child(103, "ShelvingState"), 2949, {&minute, 1}, "user:op") ==
          UAPLEX_Good);
    ua::DataValue v = m.s.read(m.child(103, "ShelvingState.CurrentState.Id"));
    CHECK(static_cast<ua::NodeId*>(v.value.value.pointer)->identifier.numeric == 2932);
    v = m.s.read(m.child(103, "ShelvingState.UnshelveTime"));
    CHECK(v.value.value.double_ > 0);
    CHECK(v.value.value.double_ <= 60000);
    CHECK(m.s.read(m.child(103, "ClientUserId")).value.value.string.length == 7);
    CHECK(set.callCondition(m.id(103), 2949, {&minute, 1}, "u") == UAPLEX_BadMethodInvalid);
}

TEST_CASE("conditions: [server.limits] max_conditions bounds the conditions the kernel holds") {
    Model m("max_conditions = 1");
    REQUIRE(m.ns != 0xFFFF);
    int served = 0;
    for (std::uint32_t c : {100u, 101u, 102u, 103u})
        served += m.s.services->callCondition(m.id(c), 9028, {}, "u") == UAPLEX_Good;
    CHECK(served == 1);
}
