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
    ua::NodeId organizes = ua::numericNodeId(0, 35), objects = ua::numericNodeId(0, 85);
    spec.parent_id = &objects;
    spec.reference_type_id = &organizes;
    // Since 1.12 the structure changes too: the node is there for the next request.
    CHECK(api->node_add(&ctx, &spec) == UAPLEX_Good);
    CHECK(s.read(fresh, 3).value.value.pointer != nullptr);  // BrowseName
    CHECK(api->node_add(&ctx, &spec) == UAPLEX_BadNodeIdExists);
    CHECK(api->reference_add(&ctx, &fresh, &organizes, &folder) == UAPLEX_Good);
    auto organized = [&](const ua::NodeId& from, const ua::NodeId& to) {
        ua::BrowseResult r = s.browse(from);
        for (const auto& ref : r.references)
            if (ref.isForward && ua::equal(ref.nodeId.node_id, to)) return true;
        return false;
    };
    CHECK(organized(objects, fresh));
    CHECK(organized(fresh, folder));
    CHECK(api->reference_delete(&ctx, &fresh, &organizes, &folder, 1) == UAPLEX_Good);
    CHECK_FALSE(organized(fresh, folder));
    CHECK(api->reference_delete(&ctx, &fresh, &organizes, &folder, 1) == UAPLEX_BadNotFound);
    // The benchmark plugin's folder is not this plugin's to change.
    CHECK(api->reference_delete(&ctx, &folder, &organizes, &fresh, 1) ==
          UAPLEX_BadUserAccessDenied);
    // A batch: each item its own status, one change.
    ua::NodeId ids[3] = {ua::numericNodeId(1, 5001), ua::numericNodeId(1, 5002),
                         ua::numericNodeId(1, 5001)};
    uaplex_node_spec specs[3] = {spec, spec, spec};
    const uaplex_node_spec* list[4] = {&specs[0], &specs[1], &specs[2], nullptr};
    for (int i = 0; i < 3; ++i) specs[i].node_id = &ids[i];
    uaplex_status results[4] = {};
    CHECK(api->nodes_add(&ctx, list, 4, results) == UAPLEX_Good);
    CHECK(results[0] == UAPLEX_Good);
    CHECK(results[1] == UAPLEX_Good);
    CHECK(results[2] == UAPLEX_BadNodeIdExists);
    CHECK(results[3] == UAPLEX_BadInvalidArgument);
    // Deleting: only what this plugin added, once per call.
    ua::NodeId doomed[5] = {fresh, ids[0], ids[0], folder, unknown};
    const uaplex_status expected[5] = {UAPLEX_Good, UAPLEX_Good, UAPLEX_BadNodeIdUnknown,
                                       UAPLEX_BadUserAccessDenied, UAPLEX_BadNodeIdUnknown};
    uaplex_status got[5] = {};
    CHECK(api->nodes_delete(&ctx, doomed, 5, 1, got) == UAPLEX_Good);
    for (int i = 0; i < 5; ++i) CHECK(got[i] == expected[i]);
    CHECK(api->nodes_delete(&ctx, doomed, 2, 1, got) == UAPLEX_Good);  // gone by now
    CHECK(got[0] == UAPLEX_BadNodeIdUnknown);
    CHECK(got[1] == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(fresh, 3).status == UAPLEX_BadNodeIdUnknown);
    CHECK_FALSE(organized(objects, fresh));
    CHECK(organized(objects, ids[1]));
    CHECK(s.read(folder, 3).status == UAPLEX_Good);
    // Another plugin's context may not delete it.
    uaplex_plugin_ctx other;
    other.name = "other";
    other.services = &s.host.services();
    CHECK(api->nodes_delete(&other, &ids[1], 1, 1, got) == UAPLEX_Good);
    CHECK(got[0] == UAPLEX_BadUserAccessDenied);
    CHECK(api->nodes_delete(&ctx, doomed, 1001, 1, got) == UAPLEX_BadTooManyOperations);
    CHECK(api->nodes_delete(&ctx, nullptr, 1, 1, got) == UAPLEX_BadInvalidArgument);
    CHECK(api->reference_add(&ctx, &objects, &objects, &folder) ==
          UAPLEX_BadReferenceTypeIdInvalid);
}
