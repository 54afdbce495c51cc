// SPDX-License-Identifier: Apache-2.0
// The node-manager paths of the host API and the owned-namespace ops, through the services:
// read/write callbacks, UserAccessLevel, status and timestamp writes, method outputs, and a
// namespace answered by the plugin itself.
#include <catch2/catch.hpp>

#include <uaplex/host/host_api.hpp>
#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

std::string probe() {
    return std::string("[plugins.svc-probe]\nlibrary = \"") + UAPLEX_PROBE_PLUGIN + "\"\n";
}

}  // namespace

TEST_CASE("store nodes: UserAccessLevel, status and timestamp writes, callbacks, outputs") {
    test::Server s("", probe());
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:probe");
    REQUIRE(ns != 0xFFFF);
    auto id = [&](std::string_view name) { return ua::stringNodeId(ns, name); };

    CHECK(s.read(id("UserDenied"), 18).value.value.byte == 1);
    CHECK(s.write(id("UserDenied"), ua::variantInt32(1)) == UAPLEX_BadUserAccessDenied);

    // StatusWrite and TimestampWrite allow both to be written and read back.
    ua::WriteValue wv{};
    wv.nodeId = id("StatusWritable");
    wv.attributeId = 13;
    wv.indexRange = ua::nullString();
    wv.value.mask =
        UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    wv.value.value = ua::variantInt32(9);
    wv.value.status = UAPLEX_UncertainInitialValue;
    wv.value.source_timestamp = 130000000000000000LL;
    CHECK(s.writeValue(wv) == UAPLEX_Good);
    ua::DataValue back = s.read(id("StatusWritable"));
    CHECK(back.status == UAPLEX_UncertainInitialValue);
    CHECK(back.source_timestamp == 130000000000000000LL);
    CHECK(back.value.value.int32 == 9);

    // Read and write callbacks: the plugin holds the value; its refusal is the result.
    CHECK(s.read(id("Callback")).value.value.double_ == 1.5);
    CHECK(s.write(id("Callback"), ua::variantDouble(4.25)) == UAPLEX_Good);
    CHECK(s.read(id("Callback")).value.value.double_ == 4.25);
    CHECK(s.write(id("Callback"), ua::variantDouble(-1)) == UAPLEX_BadOutOfRange);
    CHECK(s.write(id("Callback"), ua::variantInt32(1)) == UAPLEX_BadTypeMismatch);

    // A method without InputArguments: no inputs allowed, outputs from the plugin's memory.
    ua::CallMethodRequest m{};
    m.objectId = id("Probe");
    m.methodId = id("Outputs");
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    ua::CallResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    REQUIRE(resp->results[0].statusCode == UAPLEX_Good);
    REQUIRE(resp->results[0].outputArguments.size() == 2);
    CHECK(ua::view(resp->results[0].outputArguments[0].value.string) == "done");
    CHECK(resp->results[0].outputArguments[1].value.int32 == 7);

    // Executable false: BadNotExecutable, and the attributes say so.
    m.methodId = id("Disabled");
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_BadNotExecutable);
    CHECK(s.read(id("Disabled"), 21).value.value.boolean == false);
    CHECK(s.read(id("Disabled"), 22).value.value.boolean == false);
}

TEST_CASE("owned namespace: read, write, browse and call go to the plugin") {
    test::Server s("", probe());
    std::uint16_t ns = s.namespaceIndex("urn:uaplex:probe-owned");
    REQUIRE(ns != 0xFFFF);
    ua::NodeId value = ua::stringNodeId(ns, "Owned.Value");
    CHECK(s.read(value).value.value.int32 == 7);
    CHECK(s.read(value, 3).status == UAPLEX_Good);
    CHECK(s.read(value, 12).status == UAPLEX_BadAttributeIdInvalid);
    CHECK(s.read(ua::stringNodeId(ns, "Missing")).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.write(value, ua::variantInt32(11)) == UAPLEX_Good);
    CHECK(s.read(value).value.value.int32 == 11);
    CHECK(s.write(value, ua::variantDouble(1)) == UAPLEX_BadTypeMismatch);

    ua::BrowseResult r = s.browse(ua::stringNodeId(ns, "Owned"), 0, ua::BrowseDirection::Forward,
                                  ua::NodeId{}, false);
    REQUIRE(r.statusCode == UAPLEX_Good);
    REQUIRE(r.references.size() == 1);
    CHECK(ua::view(r.references[0].nodeId.node_id.identifier.string) == "Owned.Value");
    CHECK(r.references[0].nodeClass == ua::NodeClass::Variable);
    CHECK(s.browse(ua::stringNodeId(ns, "Missing")).statusCode == UAPLEX_BadNodeIdUnknown);
    CHECK(ua::view(r.references[0].browseName.name) == "Value");  // names from the plugin
    CHECK(ua::view(r.references[0].displayName.text) == "Value");

    // TranslateBrowsePaths walks the plugin's references and names.
    auto* element = s.arena.allocateArray<ua::RelativePathElement>(1);
    element->referenceTypeId = ua::numericNodeId(0, 33);
    element->includeSubtypes = true;
    element->targetName = test::qn(ns, "Value");
    ua::BrowsePath path{};
    path.startingNode = ua::stringNodeId(ns, "Owned");
    path.relativePath.elements = {1, element};
    ua::TranslateBrowsePathsToNodeIdsRequest treq{};
    treq.browsePaths = {1, &path};
    ua::TranslateBrowsePathsToNodeIdsResponse* tresp = nullptr;
    REQUIRE(s.call(treq, tresp) == UAPLEX_Good);
    REQUIRE(tresp->results[0].statusCode == UAPLEX_Good);
    CHECK(ua::view(tresp->results[0].targets[0].targetId.node_id.identifier.string) ==
          "Owned.Value");
    path.startingNode = ua::stringNodeId(ns, "Missing");
    REQUIRE(s.call(treq, tresp) == UAPLEX_Good);
    CHECK(tresp->results[0].statusCode == UAPLEX_BadNodeIdUnknown);

    ua::Variant in = ua::variantInt32(1);
    ua::CallMethodRequest m{};
    m.objectId = ua::stringNodeId(ns, "Owned");
    m.methodId = ua::stringNodeId(ns, "Owned.Do");
    m.inputArguments = {1, &in};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    ua::CallResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    CHECK(resp->results[0].statusCode == UAPLEX_Good);
    CHECK(resp->results[0].inputArgumentResults.size() == 1);
}

TEST_CASE("host API address-space entries: before, while and after the services own it") {
    const uaplex_host_api* api = host::hostApiTable();
    REQUIRE(UAPLEX_HAS_FIELD(api, uaplex_host_api, value_set));
    ua::NodeId node = ua::numericNodeId(1, 1001);
    ua::DataValue dv{};
    dv.mask = UAPLEX_DATAVALUE_VALUE;
    dv.value = ua::variantInt32(31);
    uint16_t index = 0;

    // Without services: nothing to add to.
    host::Services bare;
    uaplex_plugin_ctx ctx;
    ctx.name = "probe";
    ctx.services = &bare;
    CHECK(api->value_set(&ctx, &node, &dv) == UAPLEX_BadInvalidState);
    CHECK(api->namespace_register(&ctx, {"urn:x", 5}, &index) == UAPLEX_BadInvalidState);

    test::Server s("", test::benchmarkPlugin());
    ctx.services = &s.host.services();
    // Running: values change, the structure does not.
    CHECK(api->value_set(&ctx, &node, &dv) == UAPLEX_Good);
    CHECK(s.read(node).value.value.int32 == 31);
    ua::NodeId unknown = ua::numericNodeId(1, 999999);
    CHECK(api->value_set(&ctx, &unknown, &dv) == UAPLEX_BadNodeIdUnknown);
    ua::NodeId folder = ua::numericNodeId(1, 1000);
    CHECK(api->value_set(&ctx, &folder, &dv) == UAPLEX_BadNodeClassInvalid);
    CHECK(api->namespace_register(&ctx, {"urn:test:uaplex", 15}, &index) == UAPLEX_Good);
    CHECK(index == 1);
    CHECK(api->namespace_register(&ctx, {"urn:new", 7}, &index) == UAPLEX_BadInvalidState);
    uaplex_node_spec spec{};
    spec.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
    spec.node_class = 1;
    ua::NodeId fresh = ua::numericNodeId(1, 5000);
    ua::QualifiedName name = test::qn(1, "Late");
    spec.node_id = &fresh;
    spec.browse_name = &name;
    CHECK(api->node_add(&ctx, &spec) == UAPLEX_BadInvalidState);
    ua::NodeId organizes = ua::numericNodeId(0, 35), objects = ua::numericNodeId(0, 85);
    CHECK(api->reference_add(&ctx, &objects, &organizes, &folder) == UAPLEX_BadInvalidState);
    CHECK(api->reference_add(&ctx, &objects, &objects, &folder) ==
          UAPLEX_BadReferenceTypeIdInvalid);
}
