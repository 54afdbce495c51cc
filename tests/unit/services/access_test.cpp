// SPDX-License-Identifier: Apache-2.0
// Access control in the services: a session's AccessView (from [access] rules) refuses Read,
// Write and Call with BadUserAccessDenied (BadNodeIdUnknown, as for a node that does not
// exist, when it may not even Browse the node), hides nodes without Browse, and shapes the
// UserAccessLevel, UserExecutable, RolePermissions and UserRolePermissions attributes.
#include <catch2/catch.hpp>

#include <uaplex/session/access_control.hpp>
#include "support/services_fixture.hpp"

using namespace uaplex;
using test::Server;

namespace {

// Observers read the demo namespace; Operators also write and call; Demo.Counter is hidden
// from everyone but Operators.
config::AccessSection demoRules() {
    config::AccessSection a;
    config::AccessRule read;
    read.namespace_uri = "urn:uaplex:demo";
    read.roles = {"Anonymous", "Observer"};
    read.permissions =
        session::kPermBrowse | session::kPermRead | session::kPermReadRolePermissions;
    config::AccessRule operate = read;
    operate.roles = {"Operator"};
    operate.permissions = read.permissions | session::kPermWrite | session::kPermCall;
    config::AccessRule counter;
    counter.namespace_uri = "urn:uaplex:demo";
    counter.has_node = true;
    counter.node_is_string = true;
    counter.node_string = "Demo.Counter";
    counter.roles = {"Operator"};
    counter.permissions = session::kPermBrowse | session::kPermRead;
    a.rules = {read, operate, counter};
    return a;
}

session::RoleMask role(std::string_view name) {
    return 1u << config::roleIndex(name);
}

std::vector<std::string> browseNames(Server& s, const ua::NodeId& id) {
    auto r = s.browse(id);
    REQUIRE(r.statusCode == UAPLEX_Good);
    std::vector<std::string> out;
    for (const auto& ref : r.references) out.emplace_back(ua::view(ref.browseName.name));
    return out;
}

}  // namespace

TEST_CASE("access: Read, Write and Call are refused without the permission") {
    Server s;
    session::AccessPolicy policy(demoRules(), s.services->namespaceUris());
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    ua::NodeId int32 = ua::stringNodeId(d, "Demo.Scalars.Int32");
    auto observer = policy.view(role("Observer"));
    auto operatorView = policy.view(role("Operator"));
    auto nobody = policy.view(role("Engineer"));

    ua::Variant five = ua::makeVariant(ua::BuiltinType::Int32);
    five.value.int32 = 5;
    s.access = observer.get();
    CHECK(s.read(int32).status == UAPLEX_Good);
    CHECK(s.write(int32, five) == UAPLEX_BadUserAccessDenied);
    CHECK(s.read(int32, 18).value.value.byte == 1);  // UserAccessLevel: CurrentRead only
    CHECK(s.read(int32, 17).value.value.byte == 3);  // AccessLevel unchanged
    s.access = operatorView.get();
    CHECK(s.write(int32, five) == UAPLEX_Good);
    CHECK(s.read(int32, 18).value.value.byte == 3);
    s.access = nobody.get();  // a role no rule names: nothing in the demo namespace
    // Without Browse the node is unknown to the session, whatever the attribute (no oracle).
    CHECK(s.read(int32).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(int32, 3).status == UAPLEX_BadNodeIdUnknown);   // BrowseName
    CHECK(s.read(int32, 99).status == UAPLEX_BadNodeIdUnknown);  // not BadAttributeIdInvalid
    CHECK(s.read(ua::stringNodeId(d, "Demo.NoSuchNode")).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.write(int32, five) == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(ua::numericNodeId(0, 2259)).status == UAPLEX_Good);  // ns0 has no rules

    // Call needs Call on the object and the method; UserExecutable follows.
    ua::NodeId demo = ua::stringNodeId(d, "Demo");
    ua::NodeId reset = ua::stringNodeId(d, "Demo.Reset");
    ua::CallMethodRequest m{};
    m.objectId = demo;
    m.methodId = reset;
    m.inputArguments = {0, nullptr};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    ua::CallResponse* resp = nullptr;
    s.access = observer.get();
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_BadUserAccessDenied);
    CHECK(s.read(reset, 21).value.value.boolean == true);   // Executable
    CHECK(s.read(reset, 22).value.value.boolean == false);  // UserExecutable
    s.access = operatorView.get();
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_Good);
    CHECK(s.read(reset, 22).value.value.boolean == true);
}

TEST_CASE("access: nodes without Browse are left out of Browse and TranslateBrowsePaths") {
    Server s;
    session::AccessPolicy policy(demoRules(), s.services->namespaceUris());
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    ua::NodeId demo = ua::stringNodeId(d, "Demo");
    auto observer = policy.view(role("Observer"));
    auto operatorView = policy.view(role("Operator"));
    s.access = operatorView.get();
    auto all = browseNames(s, demo);
    CHECK(std::count(all.begin(), all.end(), "Counter") == 1);
    s.access = observer.get();
    auto seen = browseNames(s, demo);
    CHECK(std::count(seen.begin(), seen.end(), "Counter") == 0);
    CHECK(seen.size() == all.size() - 1);
    // Browsing from a hidden node is refused as if it did not exist.
    CHECK(s.browse(ua::stringNodeId(d, "Demo.Counter")).statusCode == UAPLEX_BadNodeIdUnknown);
    CHECK(s.browse(ua::stringNodeId(d, "Demo.NoSuchNode")).statusCode == UAPLEX_BadNodeIdUnknown);

    ua::RelativePathElement e{};
    e.referenceTypeId = ua::numericNodeId(0, 33);
    e.includeSubtypes = true;
    e.targetName = ua::QualifiedName{d, ua::makeString("Counter")};
    ua::BrowsePath path{};
    path.startingNode = demo;
    path.relativePath.elements = {1, &e};
    ua::TranslateBrowsePathsToNodeIdsRequest tr{};
    tr.browsePaths = {1, &path};
    ua::TranslateBrowsePathsToNodeIdsResponse* resp = nullptr;
    REQUIRE(s.call(tr, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_BadNoMatch);
    s.access = operatorView.get();
    REQUIRE(s.call(tr, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_Good);
}

TEST_CASE("access: RolePermissions lists every role's rules, UserRolePermissions the session's") {
    Server s;
    session::AccessPolicy policy(demoRules(), s.services->namespaceUris());
    s.services->setAccessPolicy(&policy);
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    ua::NodeId int32 = ua::stringNodeId(d, "Demo.Scalars.Int32");
    auto observer = policy.view(role("Observer"));
    s.access = observer.get();
    auto entries = [](const ua::DataValue& dv) {
        std::vector<std::pair<std::uint32_t, std::uint32_t>> out;
        REQUIRE(dv.status == UAPLEX_Good);
        auto* eos = static_cast<const ua::ExtensionObject*>(dv.value.value.pointer);
        for (std::int32_t i = 0; i < dv.value.array_length; ++i) {
            REQUIRE(eos[i].data_type == enc::dataTypeOf<ua::RolePermissionType>());
            auto* rp = static_cast<const ua::RolePermissionType*>(eos[i].object);
            out.emplace_back(rp->roleId.identifier.numeric, std::uint32_t(rp->permissions));
        }
        return out;
    };
    const std::uint32_t read = 0x23, operate = 0x1063;
    CHECK(entries(s.read(int32, 24)) ==
          std::vector<std::pair<std::uint32_t, std::uint32_t>>{
              {15644, read}, {15668, read}, {15680, operate}});  // Anonymous, Observer, Operator
    CHECK(entries(s.read(int32, 25)) ==
          std::vector<std::pair<std::uint32_t, std::uint32_t>>{{15668, read}});
    // Without ReadRolePermissions the RolePermissions attribute is refused.
    auto anonymousOperator = policy.view(role("Engineer"));
    s.access = anonymousOperator.get();
    CHECK(s.read(int32, 24).status == UAPLEX_BadNodeIdUnknown);  // no Browse either
    auto counterOnly = policy.view(role("Operator"));            // Browse+Read on Demo.Counter only
    s.access = counterOnly.get();
    CHECK(s.read(ua::stringNodeId(d, "Demo.Counter"), 24).status == UAPLEX_BadUserAccessDenied);
    s.services->setAccessPolicy(nullptr);
}

TEST_CASE("access: the well-known roles the rules name are in namespace 0's RoleSet") {
    Server s;
    for (const auto& r : config::kWellKnownRoles) {
        ua::DataValue dv = s.read(ua::numericNodeId(0, r.nodeId), 3);  // BrowseName
        REQUIRE(dv.status == UAPLEX_Good);
        CHECK(ua::view(static_cast<const ua::QualifiedName*>(dv.value.value.pointer)->name) ==
              r.name);
    }
    auto refs = s.browse(ua::numericNodeId(0, 15606));  // Server.ServerCapabilities.RoleSet
    REQUIRE(refs.statusCode == UAPLEX_Good);
    CHECK(refs.references.size() >= config::kRoleCount);
}

// The probe plugin's "Owned.Calls" counts its read, write and call callbacks (owned
// namespace) and the read/write callbacks of its "Callback" store node.
TEST_CASE("access: a node manager's read, write and call run only after the permission check") {
    test::Server s("",
                   std::string("[plugins.svc-probe]\nlibrary = \"") + UAPLEX_PROBE_PLUGIN + "\"\n");
    const std::uint16_t owned = s.namespaceIndex("urn:uaplex:probe-owned");
    const std::uint16_t probe = s.namespaceIndex("urn:uaplex:probe");
    REQUIRE(owned != 0xFFFF);
    REQUIRE(probe != 0xFFFF);
    // Operators do everything on both namespaces; Observers may only Browse them; other roles
    // nothing.
    config::AccessSection a;
    for (const char* uri : {"urn:uaplex:probe-owned", "urn:uaplex:probe"}) {
        config::AccessRule r;
        r.namespace_uri = uri;
        r.roles = {"Operator"};
        r.permissions = config::kAllPermissions;
        a.rules.push_back(r);
        r.roles = {"Observer"};
        r.permissions = session::kPermBrowse;
        a.rules.push_back(r);
    }
    session::AccessPolicy policy(a, s.services->namespaceUris());
    auto operatorView = policy.view(role("Operator"));
    auto browseOnly = policy.view(role("Observer"));
    auto nobody = policy.view(role("Engineer"));
    const ua::NodeId value = ua::stringNodeId(owned, "Owned.Value");
    const ua::NodeId missing = ua::stringNodeId(owned, "Missing");
    const ua::NodeId callback = ua::stringNodeId(probe, "Callback");
    auto calls = [&] {
        const session::AccessView* keep = s.access;
        s.access = nullptr;
        ua::DataValue dv = s.read(ua::stringNodeId(owned, "Owned.Calls"));
        s.access = keep;
        REQUIRE(dv.status == UAPLEX_Good);
        return dv.value.value.int32;
    };
    ua::CallMethodRequest m{};
    m.objectId = ua::stringNodeId(owned, "Owned");
    m.methodId = ua::stringNodeId(owned, "Owned.Do");
    m.inputArguments = {0, nullptr};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    ua::CallResponse* resp = nullptr;

    const std::int32_t before = calls();
    // No permission at all: no callback runs, and denied looks exactly like unknown.
    s.access = nobody.get();
    CHECK(s.read(value).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(missing).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(value, 3).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(callback).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.write(value, ua::variantInt32(3)) == UAPLEX_BadNodeIdUnknown);
    CHECK(s.write(missing, ua::variantInt32(3)) == UAPLEX_BadNodeIdUnknown);
    CHECK(s.write(callback, ua::variantDouble(3)) == UAPLEX_BadNodeIdUnknown);
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_BadNodeIdUnknown);
    CHECK(calls() == before);
    // Browse only: the session may know the nodes, so it is told it is denied; still no
    // callback.
    s.access = browseOnly.get();
    CHECK(s.read(value).status == UAPLEX_BadUserAccessDenied);
    CHECK(s.read(callback).status == UAPLEX_BadUserAccessDenied);
    CHECK(s.write(value, ua::variantInt32(3)) == UAPLEX_BadUserAccessDenied);
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_BadUserAccessDenied);
    CHECK(calls() == before);
    // Permitted: each runs once.
    s.access = operatorView.get();
    CHECK(s.read(value).status == UAPLEX_Good);
    CHECK(s.read(callback).status == UAPLEX_Good);
    CHECK(s.write(value, ua::variantInt32(3)) == UAPLEX_Good);
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_Good);
    CHECK(calls() == before + 4);
}

TEST_CASE(
    "access: without rules Anonymous may Browse, Read and receive events, not Write or Call") {
    Server s;
    session::AccessPolicy policy(config::AccessSection{}, s.services->namespaceUris());
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    ua::NodeId int32 = ua::stringNodeId(d, "Demo.Scalars.Int32");
    auto anonymous = policy.view(session::kAnonymousRole);
    auto user = policy.view(role("AuthenticatedUser"));
    ua::Variant five = ua::makeVariant(ua::BuiltinType::Int32);
    five.value.int32 = 5;
    ua::Variant args[2] = {ua::variantDouble(2), ua::variantDouble(3)};
    ua::CallMethodRequest m{};
    m.objectId = ua::stringNodeId(d, "Demo");
    m.methodId = ua::stringNodeId(d, "Demo.Multiply");
    m.inputArguments = {2, args};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    ua::CallResponse* resp = nullptr;

    s.access = anonymous.get();
    CHECK(s.read(int32).status == UAPLEX_Good);
    CHECK(s.write(int32, five) == UAPLEX_BadUserAccessDenied);
    CHECK(s.read(int32, 18).value.value.byte == 1);  // UserAccessLevel: CurrentRead
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_BadUserAccessDenied);
    CHECK((anonymous->permissions(int32) & session::kPermReceiveEvents) != 0);
    // Namespace 0 keeps the defaults: its methods (GetMonitoredItems, ConditionRefresh) act
    // on the caller's own subscriptions.
    CHECK((anonymous->permissions(ua::numericNodeId(0, 11492)) & session::kPermCall) != 0);
    CHECK((anonymous->grantedOutsideNamespace0() & (session::kPermWrite | session::kPermCall)) ==
          0);

    // Authenticated users keep default_permissions.
    s.access = user.get();
    CHECK(s.write(int32, five) == UAPLEX_Good);
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_Good);

    // Granted explicitly, Anonymous writes and calls again.
    config::AccessSection open;
    open.anonymous_permissions = config::kAllPermissions;
    session::AccessPolicy openPolicy(open, s.services->namespaceUris());
    auto openAnonymous = openPolicy.view(session::kAnonymousRole);
    s.access = openAnonymous.get();
    CHECK(s.write(int32, five) == UAPLEX_Good);
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_Good);
}
