// SPDX-License-Identifier: Apache-2.0
// Node-manager conformance: what every node-manager plugin must do, seen through the services
// a client uses. The plugin (UAPLEX_NM_PLUGIN, named UAPLEX_NM_NAME) is the only one loaded;
// its nodes are those reachable from Objects outside namespace 0. Every node browses both
// ways, pages like an unbounded browse, answers its mandatory attributes, and every writable
// Variable takes back the value it returned.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <string>

#include "support/services_fixture.hpp"

using namespace uaplex;

namespace {

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

std::string plugins() {
    std::string path = env("UAPLEX_NM_PLUGIN"), name = env("UAPLEX_NM_NAME");
    REQUIRE_FALSE(path.empty());
    REQUIRE_FALSE(name.empty());
    // UAPLEX_NM_KEYS: further lines of the plugin's table (a loader's files, ...).
    return "[plugins." + name + "]\nlibrary = \"" + path + "\"\n" + env("UAPLEX_NM_KEYS") + "\n";
}

// A NodeId's text, which also keeps its identifier alive (the arena is reset per test).
struct Found {
    std::uint16_t ns;
    bool numeric;
    std::uint32_t number;
    std::string text;
    std::uint8_t nodeClass;
    std::string browseName;
    ua::NodeId id() const {
        return numeric ? ua::numericNodeId(ns, number) : ua::stringNodeId(ns, text);
    }
    std::string key() const {
        return std::to_string(ns) + (numeric ? ";i=" + std::to_string(number) : ";s=" + text);
    }
};

// Walks forward hierarchical references from Objects; keeps nodes outside namespace 0.
std::map<std::string, Found> walk(test::Server& s) {
    std::map<std::string, Found> found;
    std::deque<ua::NodeId> queue{ua::numericNodeId(0, 85)};
    std::deque<Found> keep;
    std::size_t guard = 0;
    while (!queue.empty() && ++guard < 100000) {
        ua::NodeId from = queue.front();
        queue.pop_front();
        ua::BrowseResult r = s.browse(from);
        REQUIRE(r.statusCode == UAPLEX_Good);
        for (const auto& ref : r.references) {
            const ua::NodeId& t = ref.nodeId.node_id;
            if (t.namespace_index == 0) continue;
            Found f{t.namespace_index,
                    t.identifier_type == UAPLEX_ID_NUMERIC,
                    t.identifier_type == UAPLEX_ID_NUMERIC ? t.identifier.numeric : 0,
                    t.identifier_type == UAPLEX_ID_STRING
                        ? std::string(ua::view(t.identifier.string))
                        : "",
                    std::uint8_t(ref.nodeClass),
                    std::string(ua::view(ref.browseName.name))};
            REQUIRE(
                (t.identifier_type == UAPLEX_ID_NUMERIC || t.identifier_type == UAPLEX_ID_STRING));
            if (found.emplace(f.key(), f).second) {
                keep.push_back(f);
                queue.push_back(keep.back().id());
            }
        }
    }
    return found;
}

std::vector<std::uint8_t> encoded(const ua::Variant& v) {
    enc::ByteBuffer b;
    REQUIRE(enc::encodeValue(b, *enc::findDataType("Variant"), &v) == UAPLEX_Good);
    return b.toVector();
}

}  // namespace

TEST_CASE("the plugin loads, starts and adds nodes reachable from Objects") {
    test::Server s("max_browse_continuation_points = 100", plugins());
    bool instantiated = false;
    for (const auto& p : s.host.plugins())
        instantiated = instantiated || (p.name == env("UAPLEX_NM_NAME") && p.instantiated);
    CHECK(instantiated);
    auto nodes = walk(s);
    CHECK_FALSE(nodes.empty());
}

TEST_CASE("every node browses both ways, and paging matches an unbounded browse") {
    test::Server s("max_browse_continuation_points = 100", plugins());
    for (const auto& [key, f] : walk(s)) {
        INFO(key);
        ua::NodeId id = f.id();
        ua::BrowseResult inverse = s.browse(id, 0, ua::BrowseDirection::Inverse);
        REQUIRE(inverse.statusCode == UAPLEX_Good);
        CHECK(inverse.references.size() >= 1);  // its parent
        ua::BrowseResult all = s.browse(id, 0, ua::BrowseDirection::Both, ua::NodeId{}, false);
        REQUIRE(all.statusCode == UAPLEX_Good);
        std::size_t paged = 0;
        ua::BrowseResult r = s.browse(id, 2, ua::BrowseDirection::Both, ua::NodeId{}, false);
        while (true) {
            REQUIRE(r.statusCode == UAPLEX_Good);
            for (const auto& ref : r.references) {
                REQUIRE(paged < all.references.size());
                CHECK(ua::equal(ref.nodeId.node_id, all.references[paged].nodeId.node_id));
                ++paged;
            }
            if (r.continuationPoint.length <= 0) break;
            r = s.browseNext(r.continuationPoint);
        }
        CHECK(paged == all.references.size());
        std::set<std::string> unique;
        for (const auto& ref : all.references) {
            enc::ByteBuffer b;
            enc::BinaryWriter w(b);
            enc::encode(w, ref.nodeId.node_id);
            std::string k = std::to_string(ref.referenceTypeId.identifier.numeric) +
                            (ref.isForward ? ">" : "<") +
                            std::string(reinterpret_cast<const char*>(b.data()), b.size());
            CHECK(unique.insert(k).second);  // no reference listed twice
            if (ref.nodeId.node_id.namespace_index == 0) continue;
            CHECK(s.read(ref.nodeId.node_id, 1).status == UAPLEX_Good);  // targets exist
        }
    }
}

TEST_CASE("every node answers its mandatory attributes") {
    test::Server s("max_browse_continuation_points = 100", plugins());
    for (const auto& [key, f] : walk(s)) {
        INFO(key);
        ua::NodeId id = f.id();
        ua::DataValue nid = s.read(id, 1);
        REQUIRE(nid.status == UAPLEX_Good);
        CHECK(ua::equal(*static_cast<ua::NodeId*>(nid.value.value.pointer), id));
        CHECK(s.read(id, 2).value.value.int32 == f.nodeClass);
        ua::DataValue bn = s.read(id, 3);
        REQUIRE(bn.status == UAPLEX_Good);
        CHECK(ua::view(static_cast<ua::QualifiedName*>(bn.value.value.pointer)->name) ==
              f.browseName);
        CHECK(s.read(id, 4).status == UAPLEX_Good);
        CHECK(s.read(id, 5).status == UAPLEX_Good);
        CHECK(s.read(id, 6).status == UAPLEX_Good);
        if (f.nodeClass == 2) {
            for (std::uint32_t a : {13u, 14u, 15u, 16u, 17u, 18u, 19u, 20u}) {
                INFO("attribute " << a);
                CHECK(s.read(id, a).status == UAPLEX_Good);
            }
        } else if (f.nodeClass == 4) {
            CHECK(s.read(id, 21).status == UAPLEX_Good);
        } else if (f.nodeClass == 1) {
            CHECK(s.read(id, 12).status == UAPLEX_Good);
            CHECK(s.read(id, 13).status == UAPLEX_BadAttributeIdInvalid);
        }
    }
}

TEST_CASE("every writable Variable takes back the value it returned; others refuse") {
    test::Server s("max_browse_continuation_points = 100", plugins());
    std::size_t writable = 0;
    for (const auto& [key, f] : walk(s)) {
        if (f.nodeClass != 2) continue;
        INFO(key);
        ua::NodeId id = f.id();
        std::uint8_t access = s.read(id, 17).value.value.byte;
        std::uint8_t user = s.read(id, 18).value.value.byte;
        ua::DataValue before = s.read(id);
        REQUIRE(before.status == UAPLEX_Good);
        uaplex_status st = s.write(id, before.value);
        if ((access & 2) && (user & 2)) {
            CHECK(st == UAPLEX_Good);
            CHECK(encoded(s.read(id).value) == encoded(before.value));
            ++writable;
        } else {
            CHECK((st == UAPLEX_BadNotWritable || st == UAPLEX_BadUserAccessDenied));
        }
    }
    INFO(writable << " writable variables");
    SUCCEED();
}
