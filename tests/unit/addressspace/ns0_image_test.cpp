// SPDX-License-Identifier: Apache-2.0
// The generated namespace-0 image: every encoded blob decodes cleanly with the encoding
// library, references appear at both ends, lookups by numeric id find every node.
#include <catch2/catch.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <uaplex/addressspace/address_space.hpp>

using namespace uaplex;
using namespace uaplex::addressspace;

namespace {

std::span<const std::uint8_t> blob(ns0::Slice s) {
    return {ns0::kImage.blob + s.offset, s.length};
}

// Resident kB of one kind ("RssAnon:" private memory, "RssFile:" mapped files such as the
// image's read-only data).
long rssKiB(const std::string& kind) {
    std::ifstream f("/proc/self/status");
    std::string line;
    while (std::getline(f, line))
        if (line.rfind(kind, 0) == 0) return std::stol(line.substr(kind.size()));
    return -1;
}

}  // namespace

TEST_CASE("every Value, DataTypeDefinition and RolePermissions blob decodes") {
    const ns0::Image& img = ns0::kImage;
    REQUIRE(img.nodeCount == 4956);
    const enc::DataType& variant = *enc::findDataType("Variant");
    const enc::DataType& eo = *enc::findDataType("ExtensionObject");
    std::size_t values = 0, definitions = 0, roles = 0;
    for (std::uint32_t i = 0; i < img.nodeCount; ++i) {
        const ns0::NodeRecord& r = img.nodes[i];
        INFO("ns=0;i=" << r.id);
        enc::Arena arena;
        void* out = nullptr;
        if (r.value.length != 0) {
            REQUIRE(enc::decodeValue(blob(r.value), arena, {}, variant, &out) == UAPLEX_Good);
            // Structures inside values are decoded, not left as raw bodies.
            auto* v = static_cast<ua::Variant*>(out);
            if ((v->encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_EXTENSIONOBJECT) {
                std::size_t n = ua::isArray(*v) ? std::size_t(std::max(0, v->array_length)) : 1;
                auto* e = static_cast<ua::ExtensionObject*>(v->value.pointer);
                for (std::size_t k = 0; k < n; ++k) CHECK(e[k].object != nullptr);
            }
            ++values;
        }
        if (r.dataTypeDefinition.length != 0) {
            REQUIRE(enc::decodeValue(blob(r.dataTypeDefinition), arena, {}, eo, &out) ==
                    UAPLEX_Good);
            CHECK(static_cast<ua::ExtensionObject*>(out)->object != nullptr);
            CHECK(r.nodeClass == kDataType);
            ++definitions;
        }
        if (r.rolePermissions.length != 0) {
            REQUIRE(enc::decodeValue(blob(r.rolePermissions), arena, {}, variant, &out) ==
                    UAPLEX_Good);
            ++roles;
        }
        if (r.arrayDimensions.length != 0) {
            auto b = blob(r.arrayDimensions);
            REQUIRE(b.size() >= 4);
            std::int32_t n = 0;
            std::memcpy(&n, b.data(), 4);
            CHECK(b.size() == 4 + 4 * std::size_t(std::max(0, n)));
        }
        CHECK(r.browseName.offset + r.browseName.length <= img.stringBytes);
    }
    CHECK(values > 1000);
    CHECK(definitions > 100);
    INFO(values << " values, " << definitions << " definitions, " << roles << " role permissions");
    SUCCEED();
}

TEST_CASE("references are sorted per node and present at both ends") {
    const ns0::Image& img = ns0::kImage;
    std::map<std::uint32_t, const ns0::NodeRecord*> byId;
    for (std::uint32_t i = 0; i < img.nodeCount; ++i) {
        if (i > 0) REQUIRE(img.nodes[i - 1].id < img.nodes[i].id);
        byId[img.nodes[i].id] = &img.nodes[i];
    }
    std::multiset<std::tuple<std::uint32_t, std::uint32_t, std::uint32_t, bool>> refs;
    for (std::uint32_t i = 0; i < img.nodeCount; ++i) {
        const ns0::NodeRecord& r = img.nodes[i];
        REQUIRE(r.firstReference + r.referenceCount <= img.referenceCount);
        for (std::uint32_t k = 0; k < r.referenceCount; ++k) {
            const auto& ref = img.references[r.firstReference + k];
            refs.insert({r.id, ref.referenceType, ref.target, ref.isForward != 0});
        }
    }
    CHECK(img.referenceCount == 23718);
    // No node lists the same reference twice (clients check this when browsing).
    for (auto it = refs.begin(); it != refs.end(); it = refs.upper_bound(*it)) {
        INFO(std::get<0>(*it) << " -" << std::get<1>(*it) << "-> " << std::get<2>(*it));
        CHECK(refs.count(*it) == 1);
    }
    for (const auto& [source, type, target, forward] : refs) {
        if (!byId.count(target)) continue;  // a target outside namespace 0's nodes
        INFO(source << " -" << type << "-> " << target);
        CHECK(refs.count({target, type, source, !forward}) >= 1);
    }
}

TEST_CASE("the address space finds every ns0 node by numeric id at a small fixed cost") {
    long anon0 = rssKiB("RssAnon:"), file0 = rssKiB("RssFile:");
    AddressSpace space("urn:test");
    long anon = rssKiB("RssAnon:") - anon0, file = rssKiB("RssFile:") - file0;
    const ns0::Image& img = ns0::kImage;
    for (std::uint32_t i = 0; i < img.nodeCount; ++i) {
        NodeRef n = space.find(ua::numericNodeId(0, img.nodes[i].id));
        REQUIRE(n.rec == &img.nodes[i]);
    }
    CHECK_FALSE(space.find(ua::numericNodeId(0, 999999)));
    CHECK_FALSE(space.find(ua::numericNodeId(1, 85)));
    CHECK(space.isSubtypeOf(47, 33));        // HasComponent is hierarchical
    CHECK_FALSE(space.isSubtypeOf(40, 33));  // HasTypeDefinition is not
    CHECK(space.isSubtypeOf(6, 26));         // Int32 is a Number
    CHECK(space.namespaces().size() == 2);
    // The index over the read-only image: a small, fixed private cost (no per-node heap
    // objects); the image itself is read-only data of the executable, paged in on use.
    std::printf(
        "ns0: %u nodes, %u references; index %ld KiB private, image pages %ld KiB "
        "(%u string + %u blob bytes)\n",
        img.nodeCount, img.referenceCount, anon, file, img.stringBytes, img.blobBytes);
    CHECK(anon < 512);
}
