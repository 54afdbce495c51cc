// SPDX-License-Identifier: Apache-2.0
// References whose type a NodeSet2 file defines (DI's ConnectsTo and its subtype
// ConnectsToParent; the test model's Feeds, defined after its use) are stored and browsed like
// namespace-0 ones: by type, with subtypes, inverse, in TranslateBrowsePathsToNodeIds, with
// the type's NodeId in the result.
#include <catch2/catch.hpp>

#include <algorithm>

#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

std::string nodesetPlugin() {
    std::string companion = std::string(UAPLEX_SOURCE_DIR) + "/schema/companion/";
    return std::string("[plugins.nodeset]\nlibrary = \"") + UAPLEX_NODESET_PLUGIN +
           "\"\nfiles = [\"" + companion + "Opc.Ua.Di.NodeSet2.xml\", \"" + UAPLEX_SOURCE_DIR +
           "/tests/sdk/data/Uaplex.Test.NodeSet2.xml\"]\n";
}

struct Model {
    test::Server s{"", nodesetPlugin()};
    std::uint16_t di = s.namespaceIndex("http://opcfoundation.org/UA/DI/");
    std::uint16_t t = s.namespaceIndex("urn:uaplex:test:nodeset");
};

std::vector<std::string> refs(const ua::BrowseResult& r) {
    std::vector<std::string> out;
    for (const auto& ref : r.references) {
        const ua::NodeId& type = ref.referenceTypeId;
        out.push_back(std::to_string(type.namespace_index) + ":" +
                      std::to_string(type.identifier.numeric) + (ref.isForward ? ">" : "<") +
                      std::to_string(ref.nodeId.node_id.identifier.numeric));
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace

TEST_CASE("NodeSet2: references of a file's reference types are browsed by type and subtype") {
    Model m;
    REQUIRE(m.di != 0xFFFF);
    REQUIRE(m.t != 0xFFFF);
    const std::string di = std::to_string(m.di);
    ua::NodeId valve = ua::numericNodeId(m.t, 6100), pump = ua::numericNodeId(m.t, 5010);
    ua::NodeId connectsTo = ua::numericNodeId(m.di, 6030);
    ua::NodeId connectsToParent = ua::numericNodeId(m.di, 6467);

    // ConnectsTo with its subtype, and each exactly.
    CHECK(refs(m.s.browse(valve, 0, ua::BrowseDirection::Forward, connectsTo, true)) ==
          std::vector<std::string>{di + ":6030>5010", di + ":6467>5010"});
    CHECK(refs(m.s.browse(valve, 0, ua::BrowseDirection::Forward, connectsTo, false)) ==
          std::vector<std::string>{di + ":6030>5010"});
    CHECK(refs(m.s.browse(valve, 0, ua::BrowseDirection::Forward, connectsToParent, true)) ==
          std::vector<std::string>{di + ":6467>5010"});
    // Both ends are stored: the Pump sees the Valve through the inverse.
    CHECK(refs(m.s.browse(pump, 0, ua::BrowseDirection::Inverse, connectsTo, true)) ==
          std::vector<std::string>{di + ":6030<6100", di + ":6467<6100"});
    // ConnectsTo is a HierarchicalReferences subtype (i=33), not a NonHierarchical one.
    auto hierarchical = refs(m.s.browse(valve, 0, ua::BrowseDirection::Forward));
    CHECK(std::count(hierarchical.begin(), hierarchical.end(), di + ":6030>5010") == 1);
    CHECK(std::count(hierarchical.begin(), hierarchical.end(), di + ":6467>5010") == 1);
    auto other = refs(m.s.browse(valve, 0, ua::BrowseDirection::Forward, ua::numericNodeId(0, 32)));
    CHECK(std::count(other.begin(), other.end(), di + ":6030>5010") == 0);

    // Feeds (NonHierarchicalReferences), defined in the file after the Pump that uses it.
    const std::string t = std::to_string(m.t);
    ua::NodeId feeds = ua::numericNodeId(m.t, 6200);
    CHECK(refs(m.s.browse(pump, 0, ua::BrowseDirection::Forward, feeds, false)) ==
          std::vector<std::string>{t + ":6200>6100"});
    auto fedBy = refs(m.s.browse(valve, 0, ua::BrowseDirection::Inverse, feeds));
    CHECK(fedBy == std::vector<std::string>{t + ":6200<5010"});
    auto pumpHierarchical = refs(m.s.browse(pump, 0, ua::BrowseDirection::Forward));
    CHECK(std::count(pumpHierarchical.begin(), pumpHierarchical.end(), t + ":6200>6100") == 0);
    CHECK(std::count(other.begin(), other.end(), t + ":6200>6100") == 0);

    // TranslateBrowsePathsToNodeIds follows the file's reference type.
    ua::RelativePathElement e{};
    e.referenceTypeId = connectsTo;
    e.includeSubtypes = false;
    e.targetName = ua::QualifiedName{m.t, ua::makeString("Pump")};
    ua::BrowsePath path{};
    path.startingNode = valve;
    path.relativePath.elements = {1, &e};
    ua::TranslateBrowsePathsToNodeIdsRequest req{};
    req.browsePaths = {1, &path};
    ua::TranslateBrowsePathsToNodeIdsResponse* resp = nullptr;
    REQUIRE(m.s.call(req, resp) == UAPLEX_Good);
    REQUIRE(resp->results[0].statusCode == UAPLEX_Good);
    REQUIRE(resp->results[0].targets.size() == 1);
    CHECK(ua::equal(resp->results[0].targets[0].targetId.node_id, pump));
}
