// SPDX-License-Identifier: Apache-2.0
// Browse, BrowseNext, TranslateBrowsePathsToNodeIds, RegisterNodes, Call, and the layouts of
// docs/nodemanagers.md seen from Objects.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "support/services_fixture.hpp"

using namespace uaplex;
using uaplex::test::qn;
using uaplex::test::Server;

namespace {

ua::NodeId n0(std::uint32_t id) {
    return ua::numericNodeId(0, id);
}

std::string key(const ua::ReferenceDescription& r) {
    const ua::NodeId& n = r.nodeId.node_id;
    std::string id = n.identifier_type == UAPLEX_ID_STRING
                         ? std::string(ua::view(n.identifier.string))
                         : std::to_string(n.identifier.numeric);
    return std::to_string(r.referenceTypeId.identifier.numeric) + (r.isForward ? ">" : "<") +
           std::to_string(n.namespace_index) + ":" + id;
}

std::vector<std::string> keys(const ua::BrowseResult& r) {
    std::vector<std::string> out;
    for (const auto& ref : r.references) out.push_back(key(ref));
    return out;
}

// Browses `id` with `max` references per call, following continuation points.
std::vector<std::string> browseAll(Server& s, const ua::NodeId& id, std::uint32_t max,
                                   ua::BrowseDirection dir) {
    ua::BrowseResult r = s.browse(id, max, dir, ua::NodeId{}, false);
    REQUIRE(r.statusCode == UAPLEX_Good);
    std::vector<std::string> out = keys(r);
    while (r.continuationPoint.length > 0) {
        CHECK(r.references.size() == max);
        r = s.browseNext(r.continuationPoint);
        REQUIRE(r.statusCode == UAPLEX_Good);
        for (auto& k : keys(r)) out.push_back(k);
    }
    return out;
}

ua::BrowsePathResult translate(Server& s, const ua::NodeId& start,
                               std::vector<ua::RelativePathElement> elements) {
    auto* e = s.arena.allocateArray<ua::RelativePathElement>(elements.size());
    for (std::size_t i = 0; i < elements.size(); ++i) e[i] = elements[i];
    ua::BrowsePath path{};
    path.startingNode = start;
    path.relativePath.elements = {std::int32_t(elements.size()), e};
    ua::TranslateBrowsePathsToNodeIdsRequest req{};
    req.browsePaths = {1, &path};
    ua::TranslateBrowsePathsToNodeIdsResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    return resp->results[0];
}

ua::RelativePathElement step(std::uint16_t ns, std::string_view name, std::uint32_t type = 33,
                             bool inverse = false) {
    ua::RelativePathElement e{};
    e.referenceTypeId = n0(type);
    e.includeSubtypes = true;
    e.isInverse = inverse;
    e.targetName = qn(ns, name);
    return e;
}

ua::CallMethodResult callMethod(Server& s, const ua::NodeId& object, const ua::NodeId& method,
                                std::vector<ua::Variant> inputs) {
    auto* in = s.arena.allocateArray<ua::Variant>(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) in[i] = inputs[i];
    ua::CallMethodRequest m{};
    m.objectId = object;
    m.methodId = method;
    m.inputArguments = {std::int32_t(inputs.size()), in};
    ua::CallRequest req{};
    req.methodsToCall = {1, &m};
    ua::CallResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    return resp->results[0];
}

}  // namespace

TEST_CASE("Browse: paging returns exactly the references of an unbounded browse") {
    Server s("max_browse_continuation_points = 50");
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    for (const ua::NodeId& id : {n0(85), n0(2253), n0(58), ua::numericNodeId(1, 1000),
                                 ua::stringNodeId(d, "Demo.Scalars")}) {
        for (auto dir : {ua::BrowseDirection::Forward, ua::BrowseDirection::Inverse,
                         ua::BrowseDirection::Both}) {
            auto all = browseAll(s, id, 0, dir);
            for (std::uint32_t max : {1u, 3u, 7u}) CHECK(browseAll(s, id, max, dir) == all);
        }
    }
    // Both directions: Objects is organized by Root and organizes the plugin folders.
    auto objects = browseAll(s, n0(85), 0, ua::BrowseDirection::Both);
    CHECK(std::count(objects.begin(), objects.end(), "35<0:84") == 1);
    CHECK(std::count(objects.begin(), objects.end(), "35>1:1000") == 1);
    CHECK(std::count(objects.begin(), objects.end(), "35>" + std::to_string(d) + ":Demo") == 1);
    auto folder = browseAll(s, ua::numericNodeId(1, 1000), 0, ua::BrowseDirection::Inverse);
    CHECK(folder == std::vector<std::string>{"35<0:85"});
}

TEST_CASE("Browse: filters and result mask") {
    Server s;
    // HasComponent only, no subtypes; node class mask.
    ua::BrowseResult r = s.browse(ua::numericNodeId(1, 1000), 0, ua::BrowseDirection::Forward,
                                  n0(47), false, 2 /* Variable */);
    REQUIRE(r.statusCode == UAPLEX_Good);
    CHECK(r.references.size() == 200);
    r = s.browse(ua::numericNodeId(1, 1000), 0, ua::BrowseDirection::Forward, n0(47), false,
                 1 /* Object */);
    CHECK(r.references.size() == 0);
    // Subtypes of HierarchicalReferences include HasComponent; NonHierarchical do not.
    r = s.browse(ua::numericNodeId(1, 1000), 0, ua::BrowseDirection::Forward, n0(32), true);
    CHECK(r.references.size() == 1);  // HasTypeDefinition -> FolderType
    CHECK(r.references[0].nodeId.node_id.identifier.numeric == 61);
    r = s.browse(ua::numericNodeId(1, 1001), 0, ua::BrowseDirection::Inverse, n0(33), true);
    REQUIRE(r.references.size() == 1);
    const ua::ReferenceDescription& ref = r.references[0];
    CHECK(ref.referenceTypeId.identifier.numeric == 47);
    CHECK_FALSE(ref.isForward);
    CHECK(ua::view(ref.browseName.name) == "Benchmark");
    CHECK(ref.nodeClass == ua::NodeClass::Object);
    CHECK(ref.typeDefinition.node_id.identifier.numeric == 61);

    // resultMask 0: only the target NodeId.
    auto* desc = s.arena.allocateArray<ua::BrowseDescription>(1);
    desc->nodeId = ua::numericNodeId(1, 1000);
    desc->browseDirection = ua::BrowseDirection::Forward;
    ua::BrowseRequest req{};
    req.nodesToBrowse = {1, desc};
    ua::BrowseResponse* resp = nullptr;
    REQUIRE(s.call(req, resp) == UAPLEX_Good);
    REQUIRE(resp->results[0].references.size() == 201);
    CHECK(resp->results[0].references[0].browseName.name.length <= 0);
    CHECK(resp->results[0].references[0].referenceTypeId.identifier.numeric == 0);
}

TEST_CASE("Browse: status codes") {
    Server s("max_browse_continuation_points = 2\nmax_nodes_per_browse = 3");
    CHECK(s.browse(ua::numericNodeId(0, 999999)).statusCode == UAPLEX_BadNodeIdUnknown);
    CHECK(s.browse(n0(85), 0, ua::BrowseDirection::Forward, n0(85)).statusCode ==
          UAPLEX_BadReferenceTypeIdInvalid);
    CHECK(s.browse(n0(85), 0, ua::BrowseDirection::Forward, n0(999999)).statusCode ==
          UAPLEX_BadReferenceTypeIdInvalid);
    CHECK(s.browse(n0(85), 0, static_cast<ua::BrowseDirection>(3)).statusCode ==
          UAPLEX_BadBrowseDirectionInvalid);

    // The per-session continuation point limit.
    ua::BrowseResult a = s.browse(n0(2253), 1);
    ua::BrowseResult b = s.browse(n0(2253), 1);
    CHECK(a.continuationPoint.length > 0);
    CHECK(b.continuationPoint.length > 0);
    CHECK(s.browse(n0(2253), 1).statusCode == UAPLEX_BadNoContinuationPoints);
    // Releasing one frees a slot; a released point is invalid afterwards.
    CHECK(s.browseNext(a.continuationPoint, true).statusCode == UAPLEX_Good);
    CHECK(s.browseNext(a.continuationPoint).statusCode == UAPLEX_BadContinuationPointInvalid);
    CHECK(s.browse(n0(2253), 1).statusCode == UAPLEX_Good);
    std::uint8_t junk[5] = {1, 2, 3, 4, 5};
    CHECK(s.browseNext(ua::ByteString{5, junk}).statusCode == UAPLEX_BadContinuationPointInvalid);

    // Service-level checks.
    auto* desc = s.arena.allocateArray<ua::BrowseDescription>(4);
    for (int i = 0; i < 4; ++i) desc[i].nodeId = n0(85);
    ua::BrowseRequest req{};
    ua::BrowseResponse* resp = nullptr;
    req.nodesToBrowse = {4, desc};
    CHECK(s.call(req, resp) == UAPLEX_BadTooManyOperations);
    req.nodesToBrowse = {0, nullptr};
    CHECK(s.call(req, resp) == UAPLEX_BadNothingToDo);
    req.nodesToBrowse = {1, desc};
    req.view.viewId = n0(85);
    CHECK(s.call(req, resp) == UAPLEX_BadViewIdUnknown);
    ua::BrowseNextRequest next{};
    ua::BrowseNextResponse* nextResp = nullptr;
    CHECK(s.call(next, nextResp) == UAPLEX_BadNothingToDo);
}

TEST_CASE("TranslateBrowsePathsToNodeIds") {
    Server s;
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    ua::BrowsePathResult r =
        translate(s, n0(85), {step(0, "Server"), step(0, "ServerStatus"), step(0, "State")});
    REQUIRE(r.statusCode == UAPLEX_Good);
    REQUIRE(r.targets.size() == 1);
    CHECK(r.targets[0].targetId.node_id.identifier.numeric == 2259);
    CHECK(r.targets[0].remainingPathIndex == 0xFFFFFFFFu);

    r = translate(s, n0(85), {step(d, "Demo"), step(d, "Scalars"), step(d, "Int32")});
    REQUIRE(r.statusCode == UAPLEX_Good);
    CHECK(ua::view(r.targets[0].targetId.node_id.identifier.string) == "Demo.Scalars.Int32");
    // Namespace of the target name matters; inverse steps go up.
    CHECK(translate(s, n0(85), {step(0, "Demo")}).statusCode == UAPLEX_BadNoMatch);
    r = translate(s, n0(2253), {step(0, "Objects", 33, true)});
    REQUIRE(r.statusCode == UAPLEX_Good);
    CHECK(r.targets[0].targetId.node_id.identifier.numeric == 85);
    // Exact reference type without subtypes: Server is Organized, not a HasComponent.
    ua::RelativePathElement strict = step(0, "Server", 47);
    strict.includeSubtypes = false;
    CHECK(translate(s, n0(85), {strict}).statusCode == UAPLEX_BadNoMatch);
    CHECK(translate(s, n0(85), {step(0, "Server"), step(0, "NoSuchChild")}).statusCode ==
          UAPLEX_BadNoMatch);
    CHECK(translate(s, n0(999999), {step(0, "Server")}).statusCode == UAPLEX_BadNodeIdUnknown);
    CHECK(translate(s, n0(85), {}).statusCode == UAPLEX_BadNothingToDo);
    CHECK(translate(s, n0(85), {step(0, "")}).statusCode == UAPLEX_BadBrowseNameInvalid);

    ua::TranslateBrowsePathsToNodeIdsRequest req{};
    ua::TranslateBrowsePathsToNodeIdsResponse* resp = nullptr;
    CHECK(s.call(req, resp) == UAPLEX_BadNothingToDo);
}

TEST_CASE("RegisterNodes and UnregisterNodes") {
    Server s("max_nodes_per_register_nodes = 2");
    ua::NodeId ids[3] = {ua::numericNodeId(1, 1001), n0(2253), n0(85)};
    ua::RegisterNodesRequest reg{};
    ua::RegisterNodesResponse* regResp = nullptr;
    reg.nodesToRegister = {2, ids};
    REQUIRE(s.call(reg, regResp) == UAPLEX_Good);
    REQUIRE(regResp->registeredNodeIds.size() == 2);
    CHECK(ua::equal(regResp->registeredNodeIds[0], ids[0]));
    CHECK(s.read(regResp->registeredNodeIds[0]).status == UAPLEX_Good);
    reg.nodesToRegister = {3, ids};
    CHECK(s.call(reg, regResp) == UAPLEX_BadTooManyOperations);
    reg.nodesToRegister = {0, nullptr};
    CHECK(s.call(reg, regResp) == UAPLEX_BadNothingToDo);
    ua::UnregisterNodesRequest unreg{};
    ua::UnregisterNodesResponse* unregResp = nullptr;
    CHECK(s.call(unreg, unregResp) == UAPLEX_BadNothingToDo);
    unreg.nodesToUnregister = {2, ids};
    CHECK(s.call(unreg, unregResp) == UAPLEX_Good);
}

TEST_CASE("Call: arguments checked against InputArguments, a result per argument") {
    Server s("max_nodes_per_method_call = 2");
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    ua::NodeId demo = ua::stringNodeId(d, "Demo");
    ua::NodeId multiply = ua::stringNodeId(d, "Demo.Multiply");
    ua::NodeId reset = ua::stringNodeId(d, "Demo.Reset");

    ua::CallMethodResult r =
        callMethod(s, demo, multiply, {ua::variantDouble(3), ua::variantDouble(2.5)});
    REQUIRE(r.statusCode == UAPLEX_Good);
    REQUIRE(r.outputArguments.size() == 1);
    CHECK(r.outputArguments[0].value.double_ == 7.5);
    REQUIRE(r.inputArgumentResults.size() == 2);
    CHECK(r.inputArgumentResults[0] == UAPLEX_Good);

    CHECK(callMethod(s, demo, multiply, {}).statusCode == UAPLEX_BadArgumentsMissing);
    CHECK(callMethod(s, demo, multiply, {ua::variantDouble(1)}).statusCode ==
          UAPLEX_BadArgumentsMissing);
    CHECK(callMethod(s, demo, multiply,
                     {ua::variantDouble(1), ua::variantDouble(1), ua::variantDouble(1)})
              .statusCode == UAPLEX_BadTooManyArguments);
    r = callMethod(s, demo, multiply, {ua::variantString("x"), ua::variantDouble(1)});
    CHECK(r.statusCode == UAPLEX_BadInvalidArgument);
    REQUIRE(r.inputArgumentResults.size() == 2);
    CHECK(r.inputArgumentResults[0] == UAPLEX_BadTypeMismatch);
    CHECK(r.inputArgumentResults[1] == UAPLEX_Good);
    r = callMethod(s, demo, multiply, {ua::variantDouble(1), ua::variantInt32(1)});
    CHECK(r.statusCode == UAPLEX_BadInvalidArgument);
    CHECK(r.inputArgumentResults[1] == UAPLEX_BadTypeMismatch);

    CHECK(callMethod(s, n0(85), multiply, {}).statusCode == UAPLEX_BadMethodInvalid);
    CHECK(callMethod(s, demo, ua::stringNodeId(d, "Demo.Nope"), {}).statusCode ==
          UAPLEX_BadMethodInvalid);
    CHECK(callMethod(s, demo, ua::stringNodeId(d, "Demo.Counter"), {}).statusCode ==
          UAPLEX_BadMethodInvalid);
    CHECK(callMethod(s, ua::stringNodeId(d, "Nope"), multiply, {}).statusCode ==
          UAPLEX_BadNodeIdUnknown);

    CHECK(callMethod(s, demo, reset, {ua::variantInt32(1)}).statusCode ==
          UAPLEX_BadTooManyArguments);
    CHECK(callMethod(s, demo, reset, {}).statusCode == UAPLEX_Good);

    // A namespace-0 method of the Server object: checked, then not implemented.
    CHECK(callMethod(s, n0(2253), n0(11492), {ua::variantUInt32(1)}).statusCode ==
          UAPLEX_BadNotImplemented);
    CHECK(callMethod(s, n0(2253), n0(11492), {}).statusCode == UAPLEX_BadArgumentsMissing);

    ua::CallRequest req{};
    ua::CallResponse* resp = nullptr;
    CHECK(s.call(req, resp) == UAPLEX_BadNothingToDo);
    ua::CallMethodRequest three[3]{};
    req.methodsToCall = {3, three};
    CHECK(s.call(req, resp) == UAPLEX_BadTooManyOperations);
}

TEST_CASE("The benchmark layout of docs/nodemanagers.md, browsed from Objects") {
    Server s;
    ua::BrowseResult objects = s.browse(n0(85), 0, ua::BrowseDirection::Forward, n0(35), false);
    const ua::ReferenceDescription* folder = nullptr;
    for (const auto& r : objects.references)
        if (r.nodeId.node_id.namespace_index == 1) folder = &r;
    REQUIRE(folder != nullptr);
    CHECK(folder->nodeId.node_id.identifier.numeric == 1000);
    CHECK(folder->browseName.namespace_index == 1);
    CHECK(ua::view(folder->browseName.name) == "Benchmark");
    CHECK(folder->typeDefinition.node_id.identifier.numeric == 61);

    ua::BrowseResult vars =
        s.browse(ua::numericNodeId(1, 1000), 0, ua::BrowseDirection::Forward, n0(47), false);
    REQUIRE(vars.references.size() == 200);
    std::set<std::uint32_t> seen;
    for (const auto& r : vars.references) {
        std::uint32_t id = r.nodeId.node_id.identifier.numeric;
        seen.insert(id);
        bool scalar = id >= 1001 && id <= 1100;
        REQUIRE((scalar || (id >= 2001 && id <= 2100)));
        CHECK(ua::view(r.browseName.name) ==
              (scalar ? "Int32_" : "Int32Array_") + std::to_string(id));
        CHECK(r.browseName.namespace_index == 1);
        CHECK(r.nodeClass == ua::NodeClass::Variable);
        CHECK(r.typeDefinition.node_id.identifier.numeric == 63);
        ua::NodeId nid = ua::numericNodeId(1, id);
        CHECK(static_cast<ua::NodeId*>(s.read(nid, 14).value.value.pointer)->identifier.numeric ==
              6);
        CHECK(s.read(nid, 15).value.value.int32 == (scalar ? -1 : 1));
        CHECK(s.read(nid, 17).value.value.byte == 3);
        ua::DataValue v = s.read(nid);
        if (scalar) {
            CHECK(v.value.value.int32 == 0);
        } else {
            REQUIRE(v.value.array_length == 100);
            CHECK(static_cast<std::int32_t*>(v.value.value.pointer)[99] == 0);
            ua::DataValue dims = s.read(nid, 16);
            REQUIRE(dims.value.array_length == 1);
            CHECK(static_cast<std::uint32_t*>(dims.value.value.pointer)[0] == 0);
        }
    }
    CHECK(seen.size() == 200);
}

TEST_CASE("The demo layout of docs/nodemanagers.md, browsed from Objects") {
    Server s;
    std::uint16_t d = s.namespaceIndex("urn:uaplex:demo");
    REQUIRE(d == 2);
    auto children = [&](const ua::NodeId& id, std::uint32_t type) {
        std::map<std::string, ua::ReferenceDescription> out;
        ua::BrowseResult r = s.browse(id, 0, ua::BrowseDirection::Forward, n0(type), true);
        REQUIRE(r.statusCode == UAPLEX_Good);
        for (const auto& ref : r.references) out[std::string(ua::view(ref.browseName.name))] = ref;
        return out;
    };
    auto objects = children(n0(85), 35);
    REQUIRE(objects.count("Demo"));
    CHECK(objects["Demo"].browseName.namespace_index == d);
    CHECK(ua::view(objects["Demo"].nodeId.node_id.identifier.string) == "Demo");
    auto demo = children(ua::stringNodeId(d, "Demo"), 33);
    for (const char* name :
         {"Scalars", "Arrays", "AnalogItem", "Dynamic", "Counter", "Multiply", "Reset"})
        CHECK(demo.count(name) == 1);
    CHECK(demo["Multiply"].nodeClass == ua::NodeClass::Method);
    CHECK(demo["Multiply"].referenceTypeId.identifier.numeric == 47);

    const char* types[] = {
        "Boolean",       "SByte",     "Byte",           "Int16",        "UInt16",
        "Int32",         "UInt32",    "Int64",          "UInt64",       "Float",
        "Double",        "String",    "DateTime",       "Guid",         "ByteString",
        "XmlElement",    "NodeId",    "ExpandedNodeId", "StatusCode",   "QualifiedName",
        "LocalizedText", "Structure", "DataValue",      "BaseDataType", "DiagnosticInfo"};
    for (bool arrays : {false, true}) {
        std::string folder = arrays ? "Demo.Arrays" : "Demo.Scalars";
        auto vars = children(ua::stringNodeId(d, folder), 35);
        CHECK(vars.size() == 25);
        for (std::uint32_t i = 0; i < 25; ++i) {
            INFO(folder << " " << types[i]);
            REQUIRE(vars.count(types[i]));
            std::string id = folder + "." + types[i];
            CHECK(ua::view(vars[types[i]].nodeId.node_id.identifier.string) == id);
            ua::NodeId nid = ua::stringNodeId(d, id);
            CHECK(
                static_cast<ua::NodeId*>(s.read(nid, 14).value.value.pointer)->identifier.numeric ==
                i + 1);
            CHECK(s.read(nid, 15).value.value.int32 == (arrays ? 1 : -1));
            ua::DataValue v = s.read(nid);
            REQUIRE(v.status == UAPLEX_Good);
            std::uint8_t vt = v.value.encoding & UAPLEX_VARIANT_TYPE_MASK;
            if (arrays) {
                CHECK(v.value.array_length == 3);
                CHECK(vt == i + 1);
            } else {
                CHECK_FALSE(ua::isArray(v.value));
                CHECK(vt == (i + 1 == 24 ? std::uint32_t(UAPLEX_TYPE_INT32) : i + 1));
            }
            // Every value written back as read is accepted.
            CHECK(s.write(nid, v.value) == UAPLEX_Good);
        }
    }
    // The Structure scalar holds a Range {0, 1}.
    ua::DataValue st = s.read(ua::stringNodeId(d, "Demo.Scalars.Structure"));
    auto* eo = static_cast<ua::ExtensionObject*>(st.value.value.pointer);
    REQUIRE(eo->data_type == enc::dataTypeOf<ua::Range>());
    CHECK(static_cast<ua::Range*>(eo->object)->high == 1.0);

    // AnalogItem with EURange and EngineeringUnits.
    ua::NodeId analog = ua::stringNodeId(d, "Demo.AnalogItem");
    CHECK(s.read(analog).value.value.double_ == 42.0);
    auto props = children(analog, 46);
    REQUIRE(props.count("EURange"));
    REQUIRE(props.count("EngineeringUnits"));
    CHECK(props["EURange"].browseName.namespace_index == 0);
    ua::DataValue range = s.read(props["EURange"].nodeId.node_id);
    auto* rangeEo = static_cast<ua::ExtensionObject*>(range.value.value.pointer);
    REQUIRE(rangeEo->data_type == enc::dataTypeOf<ua::Range>());
    CHECK(static_cast<ua::Range*>(rangeEo->object)->high == 100.0);
    ua::DataValue eu = s.read(props["EngineeringUnits"].nodeId.node_id);
    auto* euEo = static_cast<ua::ExtensionObject*>(eu.value.value.pointer);
    REQUIRE(euEo->data_type == enc::dataTypeOf<ua::EUInformation>());
    auto* info = static_cast<ua::EUInformation*>(euEo->object);
    CHECK(info->unitId == 4408652);  // "CEL"
    CHECK(ua::view(info->description.text) == "degree Celsius");
    ua::BrowseResult typeDef = s.browse(analog, 0, ua::BrowseDirection::Forward, n0(40), false);
    REQUIRE(typeDef.references.size() == 1);
    CHECK(typeDef.references[0].nodeId.node_id.identifier.numeric == 2368);

    // Multiply's arguments.
    auto margs = children(ua::stringNodeId(d, "Demo.Multiply"), 46);
    REQUIRE(margs.count("InputArguments"));
    REQUIRE(margs.count("OutputArguments"));
    ua::DataValue in = s.read(margs["InputArguments"].nodeId.node_id);
    REQUIRE(in.value.array_length == 2);
    auto* a0 = static_cast<ua::ExtensionObject*>(in.value.value.pointer);
    REQUIRE(a0[0].data_type == enc::dataTypeOf<ua::Argument>());
    CHECK(ua::view(static_cast<ua::Argument*>(a0[1].object)->name) == "b");
    // Read-only ones.
    CHECK(s.read(ua::stringNodeId(d, "Demo.Dynamic"), 17).value.value.byte == 1);
    CHECK(s.read(ua::stringNodeId(d, "Demo.Counter"), 17).value.value.byte == 1);
}

TEST_CASE("etc/uaplex.toml loads without warnings and serves both layouts") {
    config::PathContext paths{std::filesystem::canonical("/proc/self/exe").parent_path()};
    config::ServerConfig cfg = config::loadFile(UAPLEX_SOURCE_DIR "/etc/uaplex.toml", paths);
    CHECK(cfg.warnings.empty());
    host::Host host;
    host.load(cfg);
    auto rssKiB = [](const std::string& kind) {
        std::ifstream f("/proc/self/status");
        std::string line;
        while (std::getline(f, line))
            if (line.rfind(kind, 0) == 0) return std::stol(line.substr(kind.size()));
        return -1L;
    };
    long anon0 = rssKiB("RssAnon:"), file0 = rssKiB("RssFile:");
    {
        services::ServiceSet set(cfg, host);
        // The whole store: ns0 index, Server object, benchmark and demo nodes (for the record).
        std::printf("address space with benchmark and demo: %ld KiB private, %ld KiB image pages\n",
                    rssKiB("RssAnon:") - anon0, rssKiB("RssFile:") - file0);
        enc::Arena arena;
        ua::ReadValueId items[2]{};
        items[0].nodeId = ua::numericNodeId(1, 1001);
        items[1].nodeId = ua::numericNodeId(0, 2255);
        for (auto& i : items) {
            i.attributeId = 13;
            i.indexRange = ua::nullString();
            i.dataEncoding.name = ua::nullString();
        }
        ua::ReadRequest req{};
        req.nodesToRead = {2, items};
        services::ServiceCall c{arena, nullptr, enc::dataTypeOf<ua::ReadRequest>(), &req};
        REQUIRE(set.read(c) == UAPLEX_Good);
        auto* resp = static_cast<ua::ReadResponse*>(c.response);
        CHECK(resp->results[0].status == UAPLEX_Good);
        CHECK(resp->results[1].value.array_length == 3);  // ns0, the application, the demo
    }
    host.shutdown();
}
