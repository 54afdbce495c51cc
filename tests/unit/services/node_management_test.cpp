// SPDX-License-Identifier: Apache-2.0
// The NodeManagement services (Part 4 5.7) on the kernel's store: AddNodes with its
// attributes, server-assigned NodeIds and every refusal; AddReferences, DeleteReferences and
// DeleteNodes; who may ([access] node_management_roles and the node's permissions); the
// limits; hostile input (undecoded attributes, HasSubtype cycles).
#include <catch2/catch.hpp>

#include <limits>
#include <string>
#include <vector>

#include <uaplex/host/host_api.hpp>
#include <uaplex/subscription/event_filter.hpp>
#include <uaplex/subscription/subscription_manager.hpp>

#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

constexpr std::uint32_t kObjects = 85, kOrganizes = 35, kHasComponent = 47, kHasProperty = 46,
                        kHasSubtype = 45, kHierarchical = 33, kBaseObjectType = 58,
                        kFolderType = 61, kBaseEventType = 2041, kServer = 2253;

const std::string kProbe =
    std::string("[plugins.svc-probe]\nlibrary = \"") + UAPLEX_PROBE_PLUGIN + "\"\n";

ua::ExpandedNodeId expanded(const ua::NodeId& id) {
    ua::ExpandedNodeId e{};
    e.node_id = id;
    e.namespace_uri = ua::nullString();
    return e;
}

template <class T>
ua::ExtensionObject attributes(const T* a) {
    ua::ExtensionObject eo{};
    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    eo.type_id = ua::numericNodeId(0, enc::dataTypeOf<T>()->binaryEncodingId);
    eo.data_type = enc::dataTypeOf<T>();
    eo.object = const_cast<T*>(a);
    return eo;
}

// Items whose attributes and names live in the test's arena.
struct Items {
    test::Server& s;
    std::vector<ua::AddNodesItem> list;

    ua::AddNodesItem& object(const ua::NodeId& parent, std::uint32_t reference,
                             const ua::NodeId& requested, std::string_view name) {
        auto* a = s.arena.allocateArray<ua::ObjectAttributes>(1);
        a->specifiedAttributes = 64 | 32;  // DisplayName, Description
        a->displayName = ua::makeLocalizedText("en", name);
        a->description = ua::makeLocalizedText("", "added by a client");
        return push(parent, reference, requested, name, ua::NodeClass::Object, attributes(a));
    }
    ua::AddNodesItem& variable(const ua::NodeId& parent, const ua::NodeId& requested,
                               std::string_view name, const ua::Variant& value,
                               std::uint32_t dataType = 6) {
        auto* a = s.arena.allocateArray<ua::VariableAttributes>(1);
        // Value, DataType, ValueRank, AccessLevel, WriteMask.
        a->specifiedAttributes = (1u << 21) | 16 | (1u << 19) | 1 | (1u << 20);
        a->value = value;
        a->dataType = ua::numericNodeId(0, dataType);
        a->valueRank = -1;
        a->arrayDimensions = {-1, nullptr};
        a->accessLevel = 3;
        a->writeMask = 0;
        return push(parent, kHasComponent, requested, name, ua::NodeClass::Variable, attributes(a));
    }
    ua::AddNodesItem& objectType(const ua::NodeId& parent, const ua::NodeId& requested,
                                 std::string_view name) {
        auto* a = s.arena.allocateArray<ua::ObjectTypeAttributes>(1);
        a->specifiedAttributes = 1u << 11;
        a->isAbstract = false;
        return push(parent, kHasSubtype, requested, name, ua::NodeClass::ObjectType, attributes(a));
    }
    ua::AddNodesItem& push(const ua::NodeId& parent, std::uint32_t reference,
                           const ua::NodeId& requested, std::string_view name, ua::NodeClass nc,
                           const ua::ExtensionObject& eo) {
        ua::AddNodesItem item{};
        item.parentNodeId = expanded(parent);
        item.referenceTypeId = ua::numericNodeId(0, reference);
        item.requestedNewNodeId = expanded(requested);
        char* text = s.arena.allocateArray<char>(name.size() + 1);
        std::copy(name.begin(), name.end(), text);
        item.browseName = ua::QualifiedName{1, ua::String{std::int32_t(name.size()), text}};
        item.nodeClass = nc;
        item.nodeAttributes = eo;
        item.typeDefinition = expanded(ua::NodeId{});
        list.push_back(item);
        return list.back();
    }
};

struct Added {
    uaplex_status service = UAPLEX_Good;
    std::vector<uaplex_status> status;
    std::vector<ua::NodeId> ids;
};

Added addNodes(test::Server& s, std::vector<ua::AddNodesItem>& items) {
    ua::AddNodesRequest req{};
    req.nodesToAdd = {std::int32_t(items.size()), items.data()};
    ua::AddNodesResponse* resp = nullptr;
    Added out;
    out.service = s.call(req, resp);
    if (out.service != UAPLEX_Good) return out;
    REQUIRE(resp->results.size() == items.size());
    for (const auto& r : resp->results) {
        out.status.push_back(r.statusCode);
        out.ids.push_back(r.addedNodeId);
    }
    return out;
}

uaplex_status addOne(test::Server& s, Items& items) {
    Added a = addNodes(s, items.list);
    REQUIRE(a.service == UAPLEX_Good);
    items.list.clear();
    return a.status.at(0);
}

std::vector<uaplex_status> deleteNodes(test::Server& s, std::vector<ua::NodeId> ids,
                                       bool targetReferences = true) {
    std::vector<ua::DeleteNodesItem> items;
    for (const auto& id : ids) items.push_back(ua::DeleteNodesItem{id, targetReferences});
    ua::DeleteNodesRequest req{};
    req.nodesToDelete = {std::int32_t(items.size()), items.data()};
    ua::DeleteNodesResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    return {resp->results.data, resp->results.data + resp->results.size()};
}

ua::AddReferencesItem referenceItem(const ua::NodeId& source, std::uint32_t type, bool forward,
                                    const ua::NodeId& target) {
    ua::AddReferencesItem r{};
    r.sourceNodeId = source;
    r.referenceTypeId = ua::numericNodeId(0, type);
    r.isForward = forward;
    r.targetServerUri = ua::nullString();
    r.targetNodeId = expanded(target);
    r.targetNodeClass = ua::NodeClass::Unspecified;
    return r;
}

uaplex_status addReference(test::Server& s, const ua::AddReferencesItem& item) {
    ua::AddReferencesRequest req{};
    req.referencesToAdd = {1, const_cast<ua::AddReferencesItem*>(&item)};
    ua::AddReferencesResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    return resp->results[0];
}

uaplex_status deleteReference(test::Server& s, const ua::NodeId& source, std::uint32_t type,
                              bool forward, const ua::NodeId& target, bool bidirectional = true) {
    ua::DeleteReferencesItem item{};
    item.sourceNodeId = source;
    item.referenceTypeId = ua::numericNodeId(0, type);
    item.isForward = forward;
    item.targetNodeId = expanded(target);
    item.deleteBidirectional = bidirectional;
    ua::DeleteReferencesRequest req{};
    req.referencesToDelete = {1, &item};
    ua::DeleteReferencesResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    return resp->results[0];
}

bool browses(test::Server& s, const ua::NodeId& from, const ua::NodeId& to,
             ua::BrowseDirection dir = ua::BrowseDirection::Forward) {
    ua::BrowseResult r = s.browse(from, 0, dir, ua::numericNodeId(0, 31));
    for (const auto& ref : r.references)
        if (ua::equal(ref.nodeId.node_id, to)) return true;
    return false;
}

std::vector<std::pair<std::uint64_t, ua::StatusCode>> heardValues;
void onValue(void*, std::uint64_t handle, const ua::DataValue& dv) {
    heardValues.emplace_back(handle, (dv.mask & UAPLEX_DATAVALUE_STATUS) ? dv.status : 0u);
}

std::size_t modelChanges = 0;
void onEvent(void*, std::span<const std::uint64_t>, const subscription::EventView& view) {
    if (view.eventType.namespace_index == 0 && view.eventType.identifier.numeric == 2133)
        ++modelChanges;
}

}  // namespace

TEST_CASE(
    "node management: AddNodes adds Objects and Variables that Browse, Read and Write "
    "reach, DeleteNodes removes them") {
    test::Server s("", "");
    s.services->setEventRaised(&onEvent, nullptr);
    modelChanges = 0;
    const ua::NodeId objects = ua::numericNodeId(0, kObjects);
    const ua::NodeId folder = ua::stringNodeId(1, "Client.Folder");
    Items items{s, {}};
    items.object(objects, kOrganizes, folder, "Folder").typeDefinition =
        expanded(ua::numericNodeId(0, kFolderType));
    // Server-assigned: ns=1;i=<n>; a Variable below the folder added in the same request.
    items.variable(folder, ua::NodeId{}, "Level", ua::variantInt32(7));
    Added a = addNodes(s, items.list);
    items.list.clear();
    REQUIRE(a.service == UAPLEX_Good);
    REQUIRE(a.status == std::vector<uaplex_status>{UAPLEX_Good, UAPLEX_Good});
    CHECK(ua::equal(a.ids[0], folder));
    const ua::NodeId level = a.ids[1];
    CHECK(level.namespace_index == 1);
    CHECK(level.identifier_type == UAPLEX_ID_NUMERIC);
    CHECK(modelChanges == 1);  // one request, one GeneralModelChangeEvent

    CHECK(browses(s, objects, folder));
    CHECK(browses(s, folder, level));
    CHECK(s.browse(folder).references.size() == 1);
    ua::DataValue dv = s.read(folder, 4);  // DisplayName as given
    CHECK(ua::view(static_cast<const ua::LocalizedText*>(dv.value.value.pointer)->text) ==
          "Folder");
    dv = s.read(folder, 5);
    CHECK(ua::view(static_cast<const ua::LocalizedText*>(dv.value.value.pointer)->text) ==
          "added by a client");
    CHECK(s.read(level).value.value.int32 == 7);
    CHECK(s.write(level, ua::variantInt32(9)) == UAPLEX_Good);
    CHECK(s.read(level).value.value.int32 == 9);
    // The type definition given, and DataType as given (Int32).
    ua::BrowseResult td =
        s.browse(folder, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 40), false);
    REQUIRE(td.references.size() == 1);
    CHECK(td.references[0].nodeId.node_id.identifier.numeric == kFolderType);
    CHECK(s.read(level, 14).value.value.pointer != nullptr);
    CHECK(
        static_cast<const ua::NodeId*>(s.read(level, 14).value.value.pointer)->identifier.numeric ==
        6);
    // The next server-assigned NodeId is another.
    items.variable(folder, ua::NodeId{}, "Level2", ua::variantInt32(1));
    Added b = addNodes(s, items.list);
    REQUIRE(b.status.at(0) == UAPLEX_Good);
    CHECK(!ua::equal(b.ids[0], level));
    items.list.clear();

    // A monitored item's handle of the Variable's Value hears of its deletion.
    s.services->setValueChanged(&onValue, nullptr);
    ua::ReadValueId rv{};
    rv.nodeId = level;
    rv.attributeId = 13;
    rv.indexRange = ua::nullString();
    std::uint64_t handle = 0;
    REQUIRE(s.services->valueSource().resolve(rv, &handle) == UAPLEX_Good);
    heardValues.clear();

    modelChanges = 0;
    CHECK(deleteNodes(s, {level, b.ids[0], folder}) ==
          std::vector<uaplex_status>{UAPLEX_Good, UAPLEX_Good, UAPLEX_Good});
    CHECK(modelChanges == 1);
    bool told = false;
    for (const auto& [h, status] : heardValues)
        told = told || (h == handle && status == UAPLEX_BadNodeIdUnknown);
    CHECK(told);
    s.services->setValueChanged(nullptr, nullptr);
    CHECK(s.read(level).status == UAPLEX_BadNodeIdUnknown);
    CHECK(s.read(folder, 1).status == UAPLEX_BadNodeIdUnknown);
    CHECK(!browses(s, objects, folder));  // deleteTargetReferences: Objects' reference too
    CHECK(deleteNodes(s, {folder}) == std::vector<uaplex_status>{UAPLEX_BadNodeIdUnknown});
}

TEST_CASE("node management: AddNodes answers each refusal with its Part 4 status") {
    test::Server s("", kProbe);
    const ua::NodeId objects = ua::numericNodeId(0, kObjects);
    const std::uint16_t owned = s.namespaceIndex("urn:uaplex:probe-owned");
    REQUIRE(owned != 0xFFFF);
    Items items{s, {}};
    const ua::NodeId a = ua::stringNodeId(1, "A");
    items.object(objects, kOrganizes, a, "A");
    REQUIRE(addOne(s, items) == UAPLEX_Good);

    SECTION("parent") {
        items.object(ua::stringNodeId(1, "NoSuchParent"), kOrganizes, ua::NodeId{}, "X");
        CHECK(addOne(s, items) == UAPLEX_BadParentNodeIdInvalid);
        items.object(objects, kOrganizes, ua::NodeId{}, "X").parentNodeId.server_index = 2;
        CHECK(addOne(s, items) == UAPLEX_BadParentNodeIdInvalid);
        // A type's parent is its supertype, of its own NodeClass.
        items.objectType(objects, ua::NodeId{}, "T");
        CHECK(addOne(s, items) == UAPLEX_BadParentNodeIdInvalid);
    }
    SECTION("reference type") {
        items.object(objects, kObjects, ua::NodeId{}, "X");  // Objects is no ReferenceType
        CHECK(addOne(s, items) == UAPLEX_BadReferenceTypeIdInvalid);
        items.object(objects, 999999, ua::NodeId{}, "X");
        CHECK(addOne(s, items) == UAPLEX_BadReferenceTypeIdInvalid);
        items.object(objects, kHierarchical, ua::NodeId{}, "X");  // abstract
        CHECK(addOne(s, items) == UAPLEX_BadReferenceNotAllowed);
        items.object(objects, kHasSubtype, ua::NodeId{}, "X");  // an Object has no supertype
        CHECK(addOne(s, items) == UAPLEX_BadReferenceNotAllowed);
        items.object(objects, 40, ua::NodeId{}, "X");  // HasTypeDefinition: not hierarchical
        CHECK(addOne(s, items) == UAPLEX_BadReferenceNotAllowed);
        items.object(objects, kHasProperty, ua::NodeId{}, "X");  // properties are Variables
        CHECK(addOne(s, items) == UAPLEX_BadReferenceNotAllowed);
    }
    SECTION("NodeId") {
        items.object(objects, kOrganizes, ua::numericNodeId(0, 99999), "X");
        CHECK(addOne(s, items) == UAPLEX_BadNodeIdRejected);  // namespace 0
        items.object(objects, kOrganizes, ua::stringNodeId(owned, "X"), "X");
        CHECK(addOne(s, items) == UAPLEX_BadNodeIdRejected);  // a node manager's namespace
        items.object(objects, kOrganizes, ua::numericNodeId(200, 1), "X");
        CHECK(addOne(s, items) == UAPLEX_BadNodeIdRejected);  // no such namespace
        items.object(objects, kOrganizes, ua::NodeId{}, "X").requestedNewNodeId.server_index = 1;
        CHECK(addOne(s, items) == UAPLEX_BadNodeIdRejected);
        ua::NodeId session{};  // a SessionId's shape: the session diagnostics objects'
        session.namespace_index = 1;
        session.identifier_type = UAPLEX_ID_GUID;
        session.identifier.guid.data1 = 42;
        items.object(objects, kOrganizes, session, "X");
        CHECK(addOne(s, items) == UAPLEX_BadNodeIdRejected);
        items.object(objects, kOrganizes, a, "Other");
        CHECK(addOne(s, items) == UAPLEX_BadNodeIdExists);
        items.object(objects, kOrganizes, ua::numericNodeId(0, kServer), "X")
            .requestedNewNodeId.node_id.namespace_index = 1;
        CHECK(addOne(s, items) == UAPLEX_Good);  // ns=1;i=2253 is free
        // Resolved through its namespace URI.
        ua::AddNodesItem& byUri = items.object(objects, kOrganizes, ua::numericNodeId(0, 5), "U");
        byUri.requestedNewNodeId.mask = UAPLEX_EXPANDEDNODEID_NAMESPACEURI;
        byUri.requestedNewNodeId.namespace_uri = ua::makeString("urn:test:uaplex");
        Added u = addNodes(s, items.list);
        REQUIRE(u.status.at(0) == UAPLEX_Good);
        CHECK(ua::equal(u.ids[0], ua::numericNodeId(1, 5)));
        items.list.clear();
        items.object(objects, kOrganizes, ua::numericNodeId(0, 6), "V").requestedNewNodeId.mask =
            UAPLEX_EXPANDEDNODEID_NAMESPACEURI;
        items.list.back().requestedNewNodeId.namespace_uri = ua::makeString("urn:nowhere");
        CHECK(addOne(s, items) == UAPLEX_BadNodeIdRejected);
    }
    SECTION("NodeClass") {
        items.object(objects, kOrganizes, ua::NodeId{}, "X").nodeClass = ua::NodeClass(3);
        CHECK(addOne(s, items) == UAPLEX_BadNodeClassInvalid);
        items.object(objects, kOrganizes, ua::NodeId{}, "X").nodeClass = ua::NodeClass::View;
        CHECK(addOne(s, items) == UAPLEX_BadNodeClassInvalid);
    }
    SECTION("BrowseName") {
        items.object(objects, kOrganizes, ua::NodeId{}, "");
        CHECK(addOne(s, items) == UAPLEX_BadBrowseNameInvalid);
        items.object(objects, kOrganizes, ua::NodeId{}, "A");  // a sibling is called A
        CHECK(addOne(s, items) == UAPLEX_BadBrowseNameDuplicated);
        items.object(objects, kHasComponent, ua::NodeId{}, "A");  // not by HasComponent
        CHECK(addOne(s, items) == UAPLEX_Good);
        items.object(objects, kOrganizes, ua::NodeId{}, "X").browseName.namespace_index = 300;
        CHECK(addOne(s, items) == UAPLEX_BadBrowseNameInvalid);
    }
    SECTION("attributes") {
        // Another class's attributes, none, or a body the server did not decode.
        auto* oa = s.arena.allocateArray<ua::ObjectAttributes>(1);
        items.variable(objects, ua::NodeId{}, "X", ua::variantInt32(1)).nodeAttributes =
            attributes(oa);
        CHECK(addOne(s, items) == UAPLEX_BadNodeAttributesInvalid);
        items.object(objects, kOrganizes, ua::NodeId{}, "X").nodeAttributes = ua::ExtensionObject{};
        CHECK(addOne(s, items) == UAPLEX_BadNodeAttributesInvalid);
        static const std::uint8_t junk[3] = {1, 2, 3};
        ua::ExtensionObject raw{};
        raw.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        raw.type_id = ua::numericNodeId(0, 354);
        raw.body = ua::ByteString{3, junk};
        items.object(objects, kOrganizes, ua::NodeId{}, "X").nodeAttributes = raw;
        CHECK(addOne(s, items) == UAPLEX_BadNodeAttributesInvalid);
        // A Value that is not of the DataType, a DataType that is none.
        items.variable(objects, ua::NodeId{}, "X", ua::variantString("seven"));
        CHECK(addOne(s, items) == UAPLEX_BadNodeAttributesInvalid);
        items.variable(objects, ua::NodeId{}, "X", ua::variantInt32(1), kObjects);
        CHECK(addOne(s, items) == UAPLEX_BadNodeAttributesInvalid);
        // ArrayDimensions that the ValueRank does not have.
        ua::AddNodesItem& dims = items.variable(objects, ua::NodeId{}, "X", ua::variantInt32(1));
        auto* va = static_cast<ua::VariableAttributes*>(dims.nodeAttributes.object);
        static std::uint32_t two[2] = {2, 2};
        va->specifiedAttributes |= 2;
        va->arrayDimensions = {2, two};
        CHECK(addOne(s, items) == UAPLEX_BadNodeAttributesInvalid);
        // Historizing (the recorded nodes are fixed at start), a NaN sampling interval.
        ua::AddNodesItem& h = items.variable(objects, ua::NodeId{}, "X", ua::variantInt32(1));
        static_cast<ua::VariableAttributes*>(h.nodeAttributes.object)->specifiedAttributes |= 1u
                                                                                              << 9;
        static_cast<ua::VariableAttributes*>(h.nodeAttributes.object)->historizing = true;
        CHECK(addOne(s, items) == UAPLEX_BadNodeAttributesInvalid);
        ua::AddNodesItem& m = items.variable(objects, ua::NodeId{}, "X", ua::variantInt32(1));
        static_cast<ua::VariableAttributes*>(m.nodeAttributes.object)->specifiedAttributes |= 1u
                                                                                              << 12;
        static_cast<ua::VariableAttributes*>(m.nodeAttributes.object)->minimumSamplingInterval =
            std::numeric_limits<double>::quiet_NaN();
        CHECK(addOne(s, items) == UAPLEX_BadNodeAttributesInvalid);
        // SpecifiedAttributes: a DisplayName not specified is the BrowseName.
        ua::AddNodesItem& plain = items.object(objects, kOrganizes, ua::NodeId{}, "Plain");
        static_cast<ua::ObjectAttributes*>(plain.nodeAttributes.object)->specifiedAttributes = 0;
        Added p = addNodes(s, items.list);
        REQUIRE(p.status.at(0) == UAPLEX_Good);
        ua::DataValue dv = s.read(p.ids[0], 4);
        CHECK(ua::view(static_cast<const ua::LocalizedText*>(dv.value.value.pointer)->text) ==
              "Plain");
        ua::DataValue none = s.read(p.ids[0], 5);  // no Description
        CHECK((none.value.encoding == 0 ||
               ua::view(static_cast<const ua::LocalizedText*>(none.value.value.pointer)->text)
                   .empty()));
    }
    SECTION("type definition") {
        items.object(objects, kOrganizes, ua::NodeId{}, "X").typeDefinition =
            expanded(objects);  // an Object
        CHECK(addOne(s, items) == UAPLEX_BadTypeDefinitionInvalid);
        items.object(objects, kOrganizes, ua::NodeId{}, "X").typeDefinition =
            expanded(ua::numericNodeId(0, kBaseEventType));  // abstract
        CHECK(addOne(s, items) == UAPLEX_BadTypeDefinitionInvalid);
        items.object(objects, kOrganizes, ua::NodeId{}, "X").typeDefinition =
            expanded(ua::numericNodeId(0, 63));  // a VariableType for an Object
        CHECK(addOne(s, items) == UAPLEX_BadTypeDefinitionInvalid);
        items.objectType(ua::numericNodeId(0, kBaseObjectType), ua::NodeId{}, "T").typeDefinition =
            expanded(ua::numericNodeId(0, kBaseObjectType));
        CHECK(addOne(s, items) == UAPLEX_BadTypeDefinitionInvalid);  // types have none
    }
}

TEST_CASE("node management: a client's ObjectType is a subtype, and its instances use it") {
    test::Server s("", "");
    Items items{s, {}};
    const ua::NodeId type = ua::stringNodeId(1, "PumpType");
    items.objectType(ua::numericNodeId(0, kBaseObjectType), type, "PumpType");
    REQUIRE(addOne(s, items) == UAPLEX_Good);
    items.object(ua::numericNodeId(0, kObjects), kOrganizes, ua::stringNodeId(1, "Pump1"), "Pump1")
        .typeDefinition = expanded(type);
    REQUIRE(addOne(s, items) == UAPLEX_Good);
    CHECK(browses(s, ua::numericNodeId(0, kBaseObjectType), type));
    CHECK(s.read(type, 2).value.value.int32 == 8);  // NodeClass ObjectType
    const ua::NodeId sub = ua::stringNodeId(1, "BigPumpType");
    items.objectType(type, sub, "BigPumpType");
    REQUIRE(addOne(s, items) == UAPLEX_Good);
    // PumpType without its supertype: BigPumpType above it would be a cycle.
    CHECK(deleteReference(s, ua::numericNodeId(0, kBaseObjectType), kHasSubtype, true, type) ==
          UAPLEX_Good);
    CHECK(!browses(s, ua::numericNodeId(0, kBaseObjectType), type));
    CHECK(addReference(s, referenceItem(sub, kHasSubtype, true, type)) ==
          UAPLEX_BadReferenceNotAllowed);
    CHECK(addReference(s, referenceItem(type, kHasSubtype, false, sub)) ==
          UAPLEX_BadReferenceNotAllowed);  // the same, from the other end
    // A type without a supertype may get one, a type with one may not get another.
    CHECK(addReference(s, referenceItem(ua::numericNodeId(0, kFolderType), kHasSubtype, true,
                                        type)) == UAPLEX_Good);
    CHECK(addReference(s, referenceItem(ua::numericNodeId(0, kBaseObjectType), kHasSubtype, true,
                                        sub)) == UAPLEX_BadReferenceNotAllowed);
    // Only types of one NodeClass, and only a client's type as the subtype.
    CHECK(addReference(s, referenceItem(type, kHasSubtype, true, ua::numericNodeId(1, 424242))) ==
          UAPLEX_BadTargetNodeIdInvalid);
    CHECK(addReference(s, referenceItem(type, kHasSubtype, true, ua::numericNodeId(0, 63))) ==
          UAPLEX_BadReferenceNotAllowed);
}

TEST_CASE("node management: AddReferences and DeleteReferences, with their refusals") {
    test::Server s("", kProbe);
    const std::uint16_t owned = s.namespaceIndex("urn:uaplex:probe-owned");
    const std::uint16_t probe = s.namespaceIndex("urn:uaplex:probe");
    const ua::NodeId objects = ua::numericNodeId(0, kObjects);
    const ua::NodeId server = ua::numericNodeId(0, kServer);
    Items items{s, {}};
    const ua::NodeId a = ua::stringNodeId(1, "A"), b = ua::stringNodeId(1, "B");
    items.object(objects, kOrganizes, a, "A");
    items.object(objects, kOrganizes, b, "B");
    const ua::NodeId v = ua::stringNodeId(1, "V");
    items.variable(a, v, "V", ua::variantInt32(1));
    REQUIRE(addNodes(s, items.list).status ==
            std::vector<uaplex_status>{UAPLEX_Good, UAPLEX_Good, UAPLEX_Good});
    items.list.clear();

    CHECK(addReference(s, referenceItem(a, kOrganizes, true, b)) == UAPLEX_Good);
    CHECK(browses(s, a, b));
    CHECK(browses(s, b, a, ua::BrowseDirection::Inverse));  // both ends
    CHECK(addReference(s, referenceItem(a, kOrganizes, true, b)) ==
          UAPLEX_BadDuplicateReferenceNotAllowed);
    // Inverse: from the Server object to B (B is the source in the forward direction).
    CHECK(addReference(s, referenceItem(server, kOrganizes, false, b)) == UAPLEX_Good);
    CHECK(browses(s, b, server));

    CHECK(addReference(s, referenceItem(ua::stringNodeId(1, "Nope"), kOrganizes, true, b)) ==
          UAPLEX_BadSourceNodeIdInvalid);
    CHECK(addReference(s, referenceItem(a, kObjects, true, b)) == UAPLEX_BadReferenceTypeIdInvalid);
    CHECK(addReference(s, referenceItem(a, kHierarchical, true, b)) ==
          UAPLEX_BadReferenceNotAllowed);  // abstract
    CHECK(addReference(s, referenceItem(a, kOrganizes, true, ua::stringNodeId(1, "Nope"))) ==
          UAPLEX_BadTargetNodeIdInvalid);
    CHECK(addReference(s, referenceItem(a, kOrganizes, true, a)) == UAPLEX_BadInvalidSelfReference);
    ua::AddReferencesItem klass = referenceItem(a, kHasComponent, true, b);
    klass.targetNodeClass = ua::NodeClass::Variable;
    CHECK(addReference(s, klass) == UAPLEX_BadNodeClassInvalid);
    ua::AddReferencesItem remote = referenceItem(a, kOrganizes, true, b);
    remote.targetServerUri = ua::makeString("urn:elsewhere");
    CHECK(addReference(s, remote) == UAPLEX_BadServerUriInvalid);
    CHECK(addReference(s, referenceItem(a, kHasProperty, true, b)) ==
          UAPLEX_BadReferenceNotAllowed);  // a property is a Variable
    CHECK(addReference(s, referenceItem(a, 40, true, ua::numericNodeId(0, kFolderType))) ==
          UAPLEX_BadReferenceNotAllowed);  // A has its HasTypeDefinition
    // Neither end a client's node: namespace 0, a node manager's store nodes and namespace.
    CHECK(addReference(s, referenceItem(objects, kOrganizes, true, server)) ==
          UAPLEX_BadUserAccessDenied);
    CHECK(addReference(s, referenceItem(ua::stringNodeId(probe, "Probe"), kOrganizes, true,
                                        server)) == UAPLEX_BadUserAccessDenied);
    CHECK(addReference(s, referenceItem(ua::stringNodeId(owned, "Owned"), kOrganizes, true, a)) ==
          UAPLEX_BadUserAccessDenied);

    CHECK(deleteReference(s, a, kOrganizes, true, b) == UAPLEX_Good);
    CHECK(!browses(s, a, b));
    CHECK(!browses(s, b, a, ua::BrowseDirection::Inverse));  // bidirectional
    CHECK(deleteReference(s, a, kOrganizes, true, b) == UAPLEX_BadNotFound);
    CHECK(deleteReference(s, ua::stringNodeId(1, "Nope"), kOrganizes, true, b) ==
          UAPLEX_BadSourceNodeIdInvalid);
    CHECK(deleteReference(s, a, kObjects, true, b) == UAPLEX_BadReferenceTypeIdInvalid);
    CHECK(deleteReference(s, objects, kOrganizes, true, server) == UAPLEX_BadUserAccessDenied);
    // One direction only: the other end keeps its entry.
    CHECK(deleteReference(s, objects, kOrganizes, true, b, false) == UAPLEX_Good);
    CHECK(!browses(s, objects, b));
    CHECK(browses(s, b, objects, ua::BrowseDirection::Inverse));
}

TEST_CASE("node management: DeleteNodes deletes the nodes clients added, nothing else") {
    test::Server s("", kProbe);
    const std::uint16_t owned = s.namespaceIndex("urn:uaplex:probe-owned");
    const std::uint16_t probe = s.namespaceIndex("urn:uaplex:probe");
    const ua::NodeId objects = ua::numericNodeId(0, kObjects);
    Items items{s, {}};
    const ua::NodeId a = ua::stringNodeId(1, "A"), b = ua::stringNodeId(1, "B");
    items.object(objects, kOrganizes, a, "A");
    items.object(objects, kOrganizes, b, "B");
    REQUIRE(addNodes(s, items.list).status == std::vector<uaplex_status>{UAPLEX_Good, UAPLEX_Good});
    REQUIRE(addReference(s, referenceItem(b, kOrganizes, true, a)) == UAPLEX_Good);

    CHECK(deleteNodes(s, {objects, ua::stringNodeId(probe, "Probe"),
                          ua::stringNodeId(owned, "Owned"), ua::stringNodeId(1, "Nope")}) ==
          std::vector<uaplex_status>{UAPLEX_BadUserAccessDenied, UAPLEX_BadUserAccessDenied,
                                     UAPLEX_BadUserAccessDenied, UAPLEX_BadNodeIdUnknown});
    CHECK(s.read(ua::stringNodeId(probe, "Probe"), 1).status == UAPLEX_Good);
    // Named twice: the second is already gone. Without deleteTargetReferences B keeps its
    // forward reference to A (it is the source).
    CHECK(deleteNodes(s, {a, a}, false) ==
          std::vector<uaplex_status>{UAPLEX_Good, UAPLEX_BadNodeIdUnknown});
    CHECK(browses(s, b, a));
    // Nor may a node manager delete a client's node (host API nodes_delete).
    const uaplex_host_api* api = host::hostApiTable();
    uaplex_plugin_ctx ctx;
    ctx.name = "probe";
    ctx.services = &s.host.services();
    uaplex_status result = UAPLEX_Good;
    REQUIRE(api->nodes_delete(&ctx, &b, 1, 1, &result) == UAPLEX_Good);
    CHECK(result == UAPLEX_BadUserAccessDenied);
    CHECK(deleteNodes(s, {b}) == std::vector<uaplex_status>{UAPLEX_Good});
    CHECK(!browses(s, objects, b));
}

TEST_CASE(
    "node management: only node_management_roles change the model, within the node's "
    "permissions") {
    const std::string rules =
        kProbe +
        "[access]\n"
        "[[access.rules]]\nroles = [\"ConfigureAdmin\"]\nnamespace = \"urn:uaplex:probe\"\n"
        "permissions = [\"Browse\", \"Read\"]\n";
    test::Server s("", rules);
    const std::uint16_t probe = s.namespaceIndex("urn:uaplex:probe");
    session::AccessPolicy policy(s.cfg.access, s.services->namespaceUris());
    auto anonymous = policy.view(session::kAnonymousRole);
    auto operatorView = policy.view(session::roleMask({"AuthenticatedUser", "Operator"}));
    auto admin = policy.view(session::roleMask({"AuthenticatedUser", "ConfigureAdmin"}));
    const ua::NodeId objects = ua::numericNodeId(0, kObjects);
    const ua::NodeId a = ua::stringNodeId(1, "A");
    Items items{s, {}};

    for (const session::AccessView* refused : {anonymous.get(), operatorView.get()}) {
        s.access = refused;
        items.object(objects, kOrganizes, a, "A");
        CHECK(addOne(s, items) == UAPLEX_BadUserAccessDenied);
        CHECK(s.read(a, 1).status == UAPLEX_BadNodeIdUnknown);
    }
    s.access = admin.get();
    items.object(objects, kOrganizes, a, "A");
    CHECK(addOne(s, items) == UAPLEX_Good);
    // The rule leaves the admins no AddNode in the probe's store namespace.
    items.object(objects, kOrganizes, ua::stringNodeId(probe, "Mine"), "Mine");
    CHECK(addOne(s, items) == UAPLEX_BadUserAccessDenied);

    for (const session::AccessView* refused : {anonymous.get(), operatorView.get()}) {
        s.access = refused;
        CHECK(addReference(s, referenceItem(a, kOrganizes, true, ua::numericNodeId(0, kServer))) ==
              UAPLEX_BadUserAccessDenied);
        CHECK(deleteReference(s, objects, kOrganizes, true, a) == UAPLEX_BadUserAccessDenied);
        CHECK(deleteNodes(s, {a}) == std::vector<uaplex_status>{UAPLEX_BadUserAccessDenied});
    }
    s.access = admin.get();
    CHECK(deleteNodes(s, {a}) == std::vector<uaplex_status>{UAPLEX_Good});
}

TEST_CASE("node management: [server] node_management = false, empty and oversized lists") {
    SECTION("off") {
        test::Server s("", "", "node_management = false");
        Items items{s, {}};
        items.object(ua::numericNodeId(0, kObjects), kOrganizes, ua::NodeId{}, "A");
        CHECK(addNodes(s, items.list).service == UAPLEX_BadServiceUnsupported);
        ua::DeleteNodesItem d{ua::stringNodeId(1, "A"), true};
        ua::DeleteNodesRequest dr{};
        dr.nodesToDelete = {1, &d};
        ua::DeleteNodesResponse* dresp = nullptr;
        CHECK(s.call(dr, dresp) == UAPLEX_BadServiceUnsupported);
        ua::AddReferencesRequest ar{};
        ua::AddReferencesResponse* aresp = nullptr;
        CHECK(s.call(ar, aresp) == UAPLEX_BadServiceUnsupported);
        ua::DeleteReferencesRequest drr{};
        ua::DeleteReferencesResponse* drresp = nullptr;
        CHECK(s.call(drr, drresp) == UAPLEX_BadServiceUnsupported);
    }
    SECTION("limits") {
        test::Server s("max_nodes_per_node_management = 3\nmax_store_nodes = 4", "");
        Items items{s, {}};
        CHECK(addNodes(s, items.list).service == UAPLEX_BadNothingToDo);
        ua::AddReferencesRequest ar{};
        ua::AddReferencesResponse* aresp = nullptr;
        CHECK(s.call(ar, aresp) == UAPLEX_BadNothingToDo);
        ua::DeleteNodesRequest dr{};
        ua::DeleteNodesResponse* dresp = nullptr;
        CHECK(s.call(dr, dresp) == UAPLEX_BadNothingToDo);
        ua::DeleteReferencesRequest drr{};
        ua::DeleteReferencesResponse* drresp = nullptr;
        CHECK(s.call(drr, drresp) == UAPLEX_BadNothingToDo);
        for (int i = 0; i < 4; ++i)
            items.object(ua::numericNodeId(0, kObjects), kOrganizes, ua::NodeId{},
                         "N" + std::to_string(i));
        CHECK(addNodes(s, items.list).service == UAPLEX_BadTooManyOperations);
        CHECK(s.read(ua::numericNodeId(1, 1), 1).status == UAPLEX_BadNodeIdUnknown);
        std::vector<ua::AddReferencesItem> refs(
            4, referenceItem(ua::numericNodeId(1, 1), kOrganizes, true, ua::numericNodeId(1, 2)));
        ar.referencesToAdd = {4, refs.data()};
        CHECK(s.call(ar, aresp) == UAPLEX_BadTooManyOperations);
        std::vector<ua::DeleteNodesItem> dels(4, ua::DeleteNodesItem{ua::numericNodeId(1, 1), 1});
        dr.nodesToDelete = {4, dels.data()};
        CHECK(s.call(dr, dresp) == UAPLEX_BadTooManyOperations);
        // max_store_nodes holds for clients too (the kernel's own store nodes count).
        items.list.clear();
        uaplex_status last = UAPLEX_Good;
        int added = 0;
        for (int i = 0; i < 6 && last == UAPLEX_Good; ++i) {
            items.object(ua::numericNodeId(0, kObjects), kOrganizes, ua::NodeId{},
                         "M" + std::to_string(i));
            last = addOne(s, items);
            added += last == UAPLEX_Good;
        }
        CHECK(added <= 4);
        CHECK(last == UAPLEX_BadResourceUnavailable);
    }
}
