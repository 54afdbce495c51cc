// SPDX-License-Identifier: Apache-2.0
// Generated structures with optional fields and unions (Part 6 5.2.7, 5.2.8), from
// tests/unit/encoding/schema/Optional.Union.bsd.
#include "fill.hpp"
#include "test_util.hpp"

#include <uaplex/encoding/generated/test_types.hpp>

#include <catch2/catch.hpp>

using namespace uaplex;
using namespace uaplex::testtypes;
using uaplex::test::Bytes;
using uaplex::test::bytes;
using uaplex::test::decodeAll;
using uaplex::test::encodeToBytes;

TEST_CASE("optional fields follow the encoding mask", "[generated][optional]") {
    enc::Arena arena;
    // Mask 0b010 (text only), id 9, text "hi", color Green.
    Bytes in = bytes({0x02, 0, 0, 0, 0x09, 0, 0, 0, 0x02, 0, 0, 0, 'h', 'i', 0x01, 0, 0, 0});
    TestOptional v{};
    REQUIRE(decodeAll(in, v, arena) == UAPLEX_Good);
    CHECK(v.encodingMask == 2u);
    CHECK(v.id == 9u);
    CHECK(view(v.text) == "hi");
    CHECK(v.color == TestColor::Green);
    CHECK(encodeToBytes(v) == in);

    // All optional fields present: number -1, text null, values [0.5].
    in = bytes({0x07, 0, 0, 0, 0x01, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                0x01, 0, 0, 0, 0,    0, 0, 0, 0,    0,    0xE0, 0x3F, 0x00, 0,    0,    0});
    REQUIRE(decodeAll(in, v, arena) == UAPLEX_Good);
    CHECK(v.number == -1);
    CHECK(v.text.length == -1);
    REQUIRE(v.values.length == 1);
    CHECK(v.values[0] == 0.5);
    CHECK(encodeToBytes(v) == in);

    const enc::DataType* t = enc::dataTypeOf<TestOptional>();
    CHECK(t->kind == enc::TypeKind::StructureWithOptionalFields);
    CHECK(t->field("number")->optionalBit == 0);
    CHECK(t->field("values")->optionalBit == 2);
    CHECK(t->field("id")->optionalBit == -1);
}

TEST_CASE("unions encode the switch field and one member", "[generated][union]") {
    enc::Arena arena;
    TestUnion u{};
    Bytes in = bytes({0x02, 0, 0, 0, 0x03, 0, 0, 0, 'a', 'b', 'c'});
    REQUIRE(decodeAll(in, u, arena) == UAPLEX_Good);
    CHECK(u.switchField == 2u);
    CHECK(view(u.text) == "abc");
    CHECK(encodeToBytes(u) == in);

    in = bytes({0x03, 0, 0, 0, 0x02, 0, 0, 0, 0x00, 0x05, 0x01, 0x02, 0x10, 0x00});
    REQUIRE(decodeAll(in, u, arena) == UAPLEX_Good);
    REQUIRE(u.nodes.length == 2);
    CHECK(u.nodes[1].identifier.numeric == 16u);
    CHECK(encodeToBytes(u) == in);

    REQUIRE(decodeAll(bytes({0, 0, 0, 0}), u, arena) == UAPLEX_Good);  // no member
    CHECK(decodeAll(bytes({0x09, 0, 0, 0}), u, arena) == UAPLEX_BadDecodingError);

    u = TestUnion{};
    u.switchField = 9;
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    encode(w, u);
    CHECK(w.status() == UAPLEX_BadEncodingError);

    const enc::DataType* t = enc::dataTypeOf<TestUnion>();
    CHECK(t->kind == enc::TypeKind::Union);
    CHECK(t->field("inner")->switchValue == 4u);
    CHECK(t->selectorOffset == offsetof(TestUnion, switchField));
}

TEST_CASE("optional/union types round-trip through their descriptors", "[generated][union]") {
    enc::Arena arena;
    enc::ByteBuffer first, second;
    for (const enc::DataType* type : {enc::dataTypeOf<TestOptional>(), enc::dataTypeOf<TestUnion>(),
                                      enc::dataTypeOf<TestHolder>()}) {
        for (std::uint64_t seed = 1; seed <= 50; ++seed) {
            arena.reset();
            test::Filler filler(arena, seed * 7919);
            void* obj = arena.allocate(type->size, type->alignment);
            std::memset(obj, 0, type->size);
            filler.fill(*type, obj);
            first.clear();
            enc::BinaryWriter w1(first);
            enc::encode(w1, *type, obj);
            REQUIRE(w1.ok());
            void* back = nullptr;
            INFO(type->name << " seed " << seed);
            REQUIRE(enc::decodeValue(first.span(), arena, enc::DecodeLimits{}, *type, &back) ==
                    UAPLEX_Good);
            second.clear();
            enc::BinaryWriter w2(second);
            enc::encode(w2, *type, back);
            REQUIRE(first.toVector() == second.toVector());
        }
    }
}
