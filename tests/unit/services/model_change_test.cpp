// SPDX-License-Identifier: Apache-2.0
// The model while it changes: one GeneralModelChangeEvent per host call with its Changes,
// the monitored items of a deleted Variable, Browse continuation points over a changed node,
// NodeVersion.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <uaplex/host/host_api.hpp>
#include <uaplex/subscription/event_filter.hpp>
#include <uaplex/subscription/subscription_manager.hpp>

#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

struct Heard {
    std::vector<std::vector<std::pair<ua::NodeId, std::uint8_t>>> events;  // per event
    std::vector<std::string> ids;  // keeps string identifiers' bytes
    std::vector<std::pair<std::uint64_t, ua::StatusCode>> values;
};

void onEvent(void* user, std::span<const std::uint64_t>, const subscription::EventView& view) {
    auto* h = static_cast<Heard*>(user);
    if (!(view.eventType.namespace_index == 0 && view.eventType.identifier.numeric == 2133)) return;
    const ua::Variant* changes = view.find("Changes");
    std::vector<std::pair<ua::NodeId, std::uint8_t>> list;
    if (changes != nullptr && ua::isArray(*changes)) {
        const auto* eos = static_cast<const ua::ExtensionObject*>(changes->value.pointer);
        for (std::int32_t i = 0; i < changes->array_length; ++i) {
            const auto* c = static_cast<const ua::ModelChangeStructureDataType*>(eos[i].object);
            list.emplace_back(c->affected, c->verb);
            if (c->affected.identifier_type == UAPLEX_ID_STRING)
                h->ids.emplace_back(ua::view(c->affected.identifier.string));
        }
    }
    h->events.push_back(std::move(list));
}

void onValue(void* user, std::uint64_t handle, const ua::DataValue& dv) {
    auto* h = static_cast<Heard*>(user);
    h->values.emplace_back(handle, (dv.mask & UAPLEX_DATAVALUE_STATUS) ? dv.status : 0u);
}

uaplex_node_spec variableSpec(const ua::NodeId& id, const ua::QualifiedName& name,
                              const ua::NodeId& parent, const ua::DataValue* value) {
    uaplex_node_spec s{};
    s.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
    s.node_class = 2;
    s.node_id = &id;
    s.browse_name = &name;
    s.parent_id = &parent;
    s.value_rank = -1;
    s.access_level = 3;
    s.value = value;
    return s;
}

}  // namespace

TEST_CASE("one GeneralModelChangeEvent per change, and deleted Variables' items hear it") {
    test::Server s("", "");
    Heard heard;
    s.services->setEventRaised(&onEvent, &heard);
    s.services->setValueChanged(&onValue, &heard);
    const uaplex_host_api* api = host::hostApiTable();
    uaplex_plugin_ctx ctx;
    ctx.name = "probe";
    ctx.services = &s.host.services();
    ua::NodeId objects = ua::numericNodeId(0, 85);
    ua::NodeId ids[2] = {ua::numericNodeId(1, 7001), ua::numericNodeId(1, 7002)};
    ua::QualifiedName names[2] = {test::qn(1, "A"), test::qn(1, "B")};
    ua::DataValue v{};
    v.mask = UAPLEX_DATAVALUE_VALUE;
    v.value = ua::variantInt32(5);
    uaplex_node_spec specs[2] = {variableSpec(ids[0], names[0], objects, &v),
                                 variableSpec(ids[1], names[1], objects, &v)};
    const uaplex_node_spec* list[2] = {&specs[0], &specs[1]};
    uaplex_status results[2] = {};
    REQUIRE(api->nodes_add(&ctx, list, 2, results) == UAPLEX_Good);
    REQUIRE(results[0] == UAPLEX_Good);
    REQUIRE(heard.events.size() == 1);  // one call, one event
    const auto& added = heard.events[0];
    REQUIRE(added.size() == 4);  // each node, and the folder's new reference for each
    CHECK(ua::equal(added[0].first, ids[0]));
    CHECK(added[0].second == 1);  // NodeAdded
    CHECK(ua::equal(added[1].first, objects));
    CHECK(added[1].second == 4);  // ReferenceAdded

    // A monitored item's handle of the first Variable's Value.
    subscription::NodeValueSource& source = s.services->valueSource();
    ua::ReadValueId rv{};
    rv.nodeId = ids[0];
    rv.attributeId = 13;
    rv.indexRange = ua::nullString();
    std::uint64_t handle = 0;
    REQUIRE(source.resolve(rv, &handle) == UAPLEX_Good);

    heard.values.clear();
    REQUIRE(api->nodes_delete(&ctx, ids, 2, 1, results) == UAPLEX_Good);
    CHECK(results[0] == UAPLEX_Good);
    CHECK(results[1] == UAPLEX_Good);
    REQUIRE(heard.events.size() == 2);
    const auto& deleted = heard.events[1];
    REQUIRE(deleted.size() == 3);   // two nodes, one folder lost references
    CHECK(deleted[0].second == 2);  // NodeDeleted
    CHECK(deleted[2].second == 8);  // ReferenceDeleted
    CHECK(ua::equal(deleted[2].first, objects));
    bool told = false;
    for (const auto& [h, status] : heard.values)
        told = told || (h == handle && status == UAPLEX_BadNodeIdUnknown);
    CHECK(told);
    enc::Arena arena(4096, 256);
    ua::DataValue now{};
    REQUIRE(source.read(handle, arena, now) == UAPLEX_Good);
    CHECK(now.status == UAPLEX_BadNodeIdUnknown);
    // Nothing changed: no event.
    REQUIRE(api->nodes_delete(&ctx, ids, 1, 1, results) == UAPLEX_Good);
    CHECK(results[0] == UAPLEX_BadNodeIdUnknown);
    CHECK(heard.events.size() == 2);
}

TEST_CASE("a Browse continuation point over a node whose references changed is invalid") {
    test::Server s("", "");
    const uaplex_host_api* api = host::hostApiTable();
    uaplex_plugin_ctx ctx;
    ctx.name = "probe";
    ctx.services = &s.host.services();
    ua::NodeId objects = ua::numericNodeId(0, 85);
    ua::NodeId folder = ua::numericNodeId(1, 8000);
    ua::QualifiedName fname = test::qn(1, "Folder");
    uaplex_node_spec f{};
    f.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
    f.node_class = 1;
    f.node_id = &folder;
    f.browse_name = &fname;
    f.parent_id = &objects;
    REQUIRE(api->node_add(&ctx, &f) == UAPLEX_Good);
    std::vector<ua::NodeId> ids;
    std::vector<ua::QualifiedName> names;
    ids.reserve(6);
    names.reserve(6);
    for (int i = 0; i < 6; ++i) ids.push_back(ua::numericNodeId(1, 8001 + i));
    for (int i = 0; i < 6; ++i) names.push_back(test::qn(1, "C" + std::to_string(i)));
    for (int i = 0; i < 6; ++i) {
        uaplex_node_spec c = f;
        c.node_id = &ids[i];
        c.browse_name = &names[i];
        c.parent_id = &folder;
        REQUIRE(api->node_add(&ctx, &c) == UAPLEX_Good);
    }
    // Unchanged: the point goes on.
    ua::BrowseResult first = s.browse(folder, 2);
    REQUIRE(first.continuationPoint.length > 0);
    ua::BrowseResult next = s.browseNext(first.continuationPoint);
    CHECK(next.statusCode == UAPLEX_Good);
    CHECK(next.references.size() == 2);
    REQUIRE(next.continuationPoint.length > 0);
    // A child deleted in between: the offset would skip one, so the point is invalid.
    uaplex_status st = 0;
    REQUIRE(api->nodes_delete(&ctx, &ids[0], 1, 1, &st) == UAPLEX_Good);
    REQUIRE(st == UAPLEX_Good);
    ua::BrowseResult after = s.browseNext(next.continuationPoint);
    CHECK(after.statusCode == UAPLEX_BadContinuationPointInvalid);
    // And the browsed node deleted: the same.
    ua::BrowseResult again = s.browse(folder, 2);
    REQUIRE(again.continuationPoint.length > 0);
    REQUIRE(api->nodes_delete(&ctx, &folder, 1, 1, &st) == UAPLEX_Good);
    CHECK(s.browseNext(again.continuationPoint).statusCode == UAPLEX_BadContinuationPointInvalid);
}

TEST_CASE("NodeVersion counts the changes of a node's references") {
    test::Server s("", "");
    const uaplex_host_api* api = host::hostApiTable();
    uaplex_plugin_ctx ctx;
    ctx.name = "probe";
    ctx.services = &s.host.services();
    ua::NodeId objects = ua::numericNodeId(0, 85);
    ua::NodeId node = ua::numericNodeId(1, 9000), version = ua::numericNodeId(1, 9001);
    ua::QualifiedName name = test::qn(1, "Versioned"), vname = test::qn(0, "NodeVersion");
    uaplex_node_spec n{};
    n.hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
    n.node_class = 1;
    n.node_id = &node;
    n.browse_name = &name;
    n.parent_id = &objects;
    REQUIRE(api->node_add(&ctx, &n) == UAPLEX_Good);
    ua::DataValue v{};
    v.mask = UAPLEX_DATAVALUE_VALUE;
    v.value = ua::variantString("1");
    uaplex_node_spec p = variableSpec(version, vname, node, &v);
    ua::NodeId hasProperty = ua::numericNodeId(0, 46), organizes = ua::numericNodeId(0, 35);
    p.reference_type_id = &hasProperty;
    REQUIRE(api->node_add(&ctx, &p) == UAPLEX_Good);
    auto text = [&] {
        ua::DataValue dv = s.read(version);
        return std::string(ua::view(dv.value.value.string));
    };
    CHECK(text() == "2");  // the property's own HasProperty reference was a change already
    REQUIRE(api->reference_add(&ctx, &node, &organizes, &objects) == UAPLEX_Good);
    CHECK(text() == "3");
    REQUIRE(api->reference_delete(&ctx, &node, &organizes, &objects, 1) == UAPLEX_Good);
    CHECK(text() == "4");
}

TEST_CASE("[server.limits] max_store_nodes caps the store, max_nodes_per_node_management a call") {
    test::Server s("max_store_nodes = 3\nmax_nodes_per_node_management = 2", "");
    const uaplex_host_api* api = host::hostApiTable();
    uaplex_plugin_ctx ctx;
    ctx.name = "probe";
    ctx.services = &s.host.services();
    ua::NodeId objects = ua::numericNodeId(0, 85);
    std::vector<ua::NodeId> ids;
    ids.reserve(4);
    for (std::uint32_t i = 0; i < 4; ++i) ids.push_back(ua::numericNodeId(1, 9500 + i));
    ua::QualifiedName name = test::qn(1, "Capped");
    std::vector<uaplex_node_spec> specs(4);
    const uaplex_node_spec* list[4];
    for (std::size_t i = 0; i < 4; ++i) {
        specs[i] = uaplex_node_spec{};
        specs[i].hdr = UAPLEX_HEADER_INIT(uaplex_node_spec, UAPLEX_STYPE_NODE_SPEC);
        specs[i].node_class = 1;
        specs[i].node_id = &ids[i];
        specs[i].browse_name = &name;
        specs[i].parent_id = &objects;
        list[i] = &specs[i];
    }
    uaplex_status results[4] = {};
    CHECK(api->nodes_add(&ctx, list, 3, results) == UAPLEX_BadTooManyOperations);
    CHECK_FALSE(s.read(ids[0], 3).status == UAPLEX_Good);
    REQUIRE(api->nodes_add(&ctx, list, 2, results) == UAPLEX_Good);
    CHECK(results[1] == UAPLEX_Good);
    CHECK(api->node_add(&ctx, list[2]) == UAPLEX_Good);  // the third node: the cap
    CHECK(api->node_add(&ctx, list[3]) == UAPLEX_BadResourceUnavailable);
    uaplex_status st = 0;
    REQUIRE(api->nodes_delete(&ctx, &ids[0], 1, 1, &st) == UAPLEX_Good);
    CHECK(api->node_add(&ctx, list[3]) == UAPLEX_Good);  // room again
}
