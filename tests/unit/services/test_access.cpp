// Access control in the services: a session's AccessView (from [access] rules) refuses Read,
// Write and Call with BadUserAccessDenied, hides nodes without Browse, and shapes the
// UserAccessLevel, UserExecutable, RolePermissions and UserRolePermissions attributes.
#include <catch2/catch.hpp>

#include "fixture.hpp"
#include "session/access_control.hpp"

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
    CHECK(s.read(int32).status == UAPLEX_BadUserAccessDenied);
    CHECK(s.read(int32, 3).status == UAPLEX_BadUserAccessDenied);     // BrowseName needs Browse
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
    // Browsing from a hidden node is refused.
    CHECK(s.browse(ua::stringNodeId(d, "Demo.Counter")).statusCode == UAPLEX_BadUserAccessDenied);

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
    CHECK(s.read(int32, 24).status == UAPLEX_BadUserAccessDenied);
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
