// SPDX-License-Identifier: Apache-2.0
// Built-in types against byte layouts written out by hand from OPC UA Part 6 5.2.
#include "test_util.hpp"

#include <catch2/catch.hpp>
#include <uaplex/encoding/hex.hpp>

#include <cstring>

using namespace uaplex;
using namespace uaplex::ua;
using uaplex::test::Bytes;
using uaplex::test::bytes;
using uaplex::test::decodeAll;
using uaplex::test::encodeToBytes;

namespace {

// Decodes `in` as T, checks it re-encodes to exactly `in`, and returns the value.
template <class T>
T roundTrip(const Bytes& input, enc::Arena& arena) {
    // Decoded strings borrow from the input: keep a copy alive in the arena.
    auto* copy = static_cast<std::uint8_t*>(arena.allocate(input.size() + 1, 1));
    std::memcpy(copy, input.data(), input.size());
    Bytes in = input;
    T v{};
    {
        enc::BinaryReader r(std::span<const std::uint8_t>(copy, input.size()), arena,
                            enc::DecodeLimits{});
        decode(r, v);
        REQUIRE(r.ok());
        REQUIRE(r.remaining() == 0);
    }
    CHECK(encodeToBytes(v) == in);
    return v;
}

}  // namespace

TEST_CASE("primitives are little-endian", "[builtin]") {
    enc::Arena arena;
    CHECK(roundTrip<std::int32_t>(bytes({0x78, 0x56, 0x34, 0x12}), arena) == 0x12345678);
    CHECK(roundTrip<std::uint16_t>(bytes({0x01, 0x80}), arena) == 0x8001);
    CHECK(roundTrip<std::int64_t>(bytes({0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}), arena) ==
          -1);
    // IEEE 754 1.0 = 0x3FF0000000000000
    CHECK(roundTrip<double>(bytes({0, 0, 0, 0, 0, 0, 0xF0, 0x3F}), arena) == 1.0);
    CHECK(roundTrip<float>(bytes({0, 0, 0x80, 0xBF}), arena) == -1.0f);
    bool b = false;
    REQUIRE(decodeAll(bytes({0x07}), b, arena) == UAPLEX_Good);  // any non-zero is true
    CHECK(b);
    CHECK(encodeToBytes(b) == bytes({0x01}));
}

TEST_CASE("String: null, empty and text", "[builtin]") {
    enc::Arena arena;
    String s = roundTrip<String>(bytes({0xFF, 0xFF, 0xFF, 0xFF}), arena);
    CHECK(s.length == -1);
    s = roundTrip<String>(bytes({0, 0, 0, 0}), arena);
    CHECK(s.length == 0);
    Bytes in = bytes({3, 0, 0, 0, 'a', 'b', 'c'});
    s = roundTrip<String>(in, arena);
    CHECK(view(s) == "abc");
    String borrowed{};
    REQUIRE(decodeAll(in, borrowed, arena) == UAPLEX_Good);
    CHECK(reinterpret_cast<const std::uint8_t*>(borrowed.data) == in.data() + 4);  // zero-copy
    ByteString bs = roundTrip<ByteString>(bytes({2, 0, 0, 0, 0xDE, 0xAD}), arena);
    CHECK(bs.length == 2);
    CHECK(bs.data[1] == 0xAD);
}

TEST_CASE("Guid uses the mixed-endian layout of Part 6 5.2.2.6", "[builtin]") {
    enc::Arena arena;
    // 72962B91-FA75-4AE6-8D28-B404DC7DAF63
    Bytes in = bytes({0x91, 0x2B, 0x96, 0x72, 0x75, 0xFA, 0xE6, 0x4A, 0x8D, 0x28, 0xB4, 0x04, 0xDC,
                      0x7D, 0xAF, 0x63});
    Guid g = roundTrip<Guid>(in, arena);
    CHECK(g.data1 == 0x72962B91u);
    CHECK(g.data2 == 0xFA75);
    CHECK(g.data3 == 0x4AE6);
    CHECK(g.data4[0] == 0x8D);
    CHECK(g.data4[7] == 0x63);
}

TEST_CASE("NodeId: every form, compact re-encoding", "[builtin]") {
    enc::Arena arena;
    NodeId n = roundTrip<NodeId>(bytes({0x00, 0x48}), arena);  // two-byte i=72
    CHECK((n.namespace_index == 0 && n.identifier.numeric == 72));
    n = roundTrip<NodeId>(bytes({0x01, 0x05, 0x01, 0x04}), arena);  // four-byte ns=5;i=1025
    CHECK((n.namespace_index == 5 && n.identifier.numeric == 1025));
    n = roundTrip<NodeId>(bytes({0x02, 0x00, 0x01, 0x40, 0x42, 0x0F, 0x00}),
                          arena);  // ns=256;i=1000000
    CHECK((n.namespace_index == 256 && n.identifier.numeric == 1000000));
    n = roundTrip<NodeId>(bytes({0x03, 0x01, 0x00, 0x03, 0, 0, 0, 'H', 'o', 't'}), arena);
    CHECK((n.identifier_type == UAPLEX_ID_STRING && view(n.identifier.string) == "Hot"));
    Bytes guid = bytes({0x04, 0x02, 0x00});
    for (int i = 0; i < 16; ++i) guid.push_back(std::uint8_t(i));
    n = roundTrip<NodeId>(guid, arena);
    CHECK((n.identifier_type == UAPLEX_ID_GUID && n.identifier.guid.data4[7] == 15));
    n = roundTrip<NodeId>(bytes({0x05, 0x00, 0x00, 0x02, 0, 0, 0, 0xCA, 0xFE}), arena);
    CHECK((n.identifier_type == UAPLEX_ID_BYTESTRING && n.identifier.bytestring.length == 2));

    // A numeric form that could be smaller re-encodes in the compact form.
    NodeId wide{};
    REQUIRE(decodeAll(bytes({0x02, 0x00, 0x00, 0x48, 0x00, 0x00, 0x00}), wide, arena) ==
            UAPLEX_Good);
    CHECK(encodeToBytes(wide) == bytes({0x00, 0x48}));
    CHECK(encodeToBytes(numericNodeId(0, 256)) == bytes({0x01, 0x00, 0x00, 0x01}));
    CHECK(encodeToBytes(numericNodeId(255, 65535)) == bytes({0x01, 0xFF, 0xFF, 0xFF}));
    CHECK(encodeToBytes(numericNodeId(0, 65536)) == bytes({0x02, 0, 0, 0, 0, 1, 0}));

    NodeId bad{};
    CHECK(decodeAll(bytes({0x06, 0x00}), bad, arena) == UAPLEX_BadDecodingError);
}

TEST_CASE("ExpandedNodeId with namespace URI and server index", "[builtin]") {
    enc::Arena arena;
    Bytes in = bytes({0xC1, 0x07, 0x2A, 0x00, 0x02, 0, 0, 0, 'u', 'r', 0x03, 0, 0, 0});
    ExpandedNodeId x = roundTrip<ExpandedNodeId>(in, arena);
    CHECK(x.mask == 0xC0);
    CHECK(x.node_id.namespace_index == 7);
    CHECK(x.node_id.identifier.numeric == 42);
    CHECK(view(x.namespace_uri) == "ur");
    CHECK(x.server_index == 3);
    x = roundTrip<ExpandedNodeId>(bytes({0x40, 0x01, 0x09, 0, 0, 0}), arena);
    CHECK((x.mask == 0x40 && x.server_index == 9 && x.namespace_uri.length == -1));
}

TEST_CASE("QualifiedName and LocalizedText masks", "[builtin]") {
    enc::Arena arena;
    QualifiedName q = roundTrip<QualifiedName>(bytes({0x02, 0x00, 0x01, 0, 0, 0, 'X'}), arena);
    CHECK((q.namespace_index == 2 && view(q.name) == "X"));
    LocalizedText t = roundTrip<LocalizedText>(bytes({0x00}), arena);
    CHECK(t.mask == 0);
    t = roundTrip<LocalizedText>(bytes({0x01, 0x02, 0, 0, 0, 'e', 'n'}), arena);
    CHECK((view(t.locale) == "en" && t.text.length == -1));
    t = roundTrip<LocalizedText>(bytes({0x02, 0x01, 0, 0, 0, 'T'}), arena);
    CHECK((t.locale.length == -1 && view(t.text) == "T"));
    t = roundTrip<LocalizedText>(bytes({0x03, 0x02, 0, 0, 0, 'd', 'e', 0x01, 0, 0, 0, 'T'}), arena);
    CHECK((view(t.locale) == "de" && view(t.text) == "T"));
}

TEST_CASE("DataValue with every mask bit", "[builtin]") {
    enc::Arena arena;
    Bytes in = bytes({0x3F,                          // all six fields
                      0x06, 0x2A, 0x00, 0x00, 0x00,  // Variant Int32 42
                      0x00, 0x00, 0x35, 0x80,        // status BadNodeIdUnknown 0x80350000
                      1,    2,    3,    4,    5,    6,  7,  8,   // source timestamp
                      0x10, 0x00,                                // source picoseconds
                      9,    10,   11,   12,   13,   14, 15, 16,  // server timestamp
                      0x20, 0x00});                              // server picoseconds
    DataValue d = roundTrip<DataValue>(in, arena);
    CHECK(variantType(d.value) == BuiltinType::Int32);
    CHECK(d.value.value.int32 == 42);
    CHECK(d.status == 0x80350000u);
    CHECK(d.source_timestamp == 0x0807060504030201);
    CHECK(d.source_picoseconds == 16);
    CHECK(d.server_timestamp == 0x100F0E0D0C0B0A09);
    CHECK(d.server_picoseconds == 32);
    d = roundTrip<DataValue>(bytes({0x02, 0x00, 0x00, 0x00, 0x40}), arena);  // status only
    CHECK((d.mask == 0x02 && d.status == 0x40000000u));
    CHECK(roundTrip<DataValue>(bytes({0x00}), arena).mask == 0);
}

TEST_CASE("DataValue of each fixed-size scalar type, with and without timestamps", "[builtin]") {
    enc::Arena arena;
    // Boolean, Int16, UInt32, Int64, Float, Double, DateTime, StatusCode: value then timestamps.
    const Bytes values[] = {
        bytes({0x01, 0x01}),
        bytes({0x04, 0xFE, 0xFF}),
        bytes({0x07, 1, 2, 3, 4}),
        bytes({0x08, 1, 2, 3, 4, 5, 6, 7, 8}),
        bytes({0x0A, 0x00, 0x00, 0x80, 0x3F}),
        bytes({0x0B, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F}),
        bytes({0x0D, 8, 7, 6, 5, 4, 3, 2, 1}),
        bytes({0x13, 0x00, 0x00, 0x35, 0x80}),
    };
    for (const Bytes& v : values) {
        Bytes in = bytes({0x0D});  // value, source and server timestamps
        in.insert(in.end(), v.begin(), v.end());
        for (int i = 0; i < 16; ++i) in.push_back(std::uint8_t(i + 1));
        DataValue d = roundTrip<DataValue>(in, arena);
        CHECK(d.source_timestamp == 0x0807060504030201);
        Bytes plain = bytes({0x01});
        plain.insert(plain.end(), v.begin(), v.end());
        roundTrip<DataValue>(plain, arena);
    }
    // A non-zero Boolean byte decodes as true and encodes as 1.
    DataValue b{};
    REQUIRE(decodeAll(bytes({0x01, 0x01, 0x07}), b, arena) == UAPLEX_Good);
    CHECK(encodeToBytes(b) == bytes({0x01, 0x01, 0x01}));
    // A scalar String goes the general way.
    roundTrip<DataValue>(bytes({0x01, 0x0C, 0x02, 0, 0, 0, 'h', 'i'}), arena);
}

TEST_CASE("Variant: null, scalars, arrays and a matrix", "[builtin]") {
    enc::Arena arena;
    Variant v = roundTrip<Variant>(bytes({0x00}), arena);
    CHECK(variantType(v) == BuiltinType::Null);
    v = roundTrip<Variant>(bytes({0x01, 0x01}), arena);
    CHECK(v.value.boolean);
    v = roundTrip<Variant>(bytes({0x0C, 0x02, 0, 0, 0, 'h', 'i'}), arena);
    CHECK(view(v.value.string) == "hi");
    v = roundTrip<Variant>(bytes({0x11, 0x01, 0x02, 0x10, 0x00}), arena);  // NodeId ns=2;i=16
    CHECK(static_cast<NodeId*>(v.value.pointer)->identifier.numeric == 16);
    v = roundTrip<Variant>(bytes({0x15, 0x02, 0x01, 0, 0, 0, 'x'}), arena);  // LocalizedText
    CHECK(view(static_cast<LocalizedText*>(v.value.pointer)->text) == "x");

    // Int16 array [1, -1]
    v = roundTrip<Variant>(bytes({0x84, 0x02, 0, 0, 0, 0x01, 0x00, 0xFF, 0xFF}), arena);
    REQUIRE(isArray(v));
    REQUIRE(v.array_length == 2);
    CHECK(static_cast<std::int16_t*>(v.value.pointer)[1] == -1);
    // Null array
    v = roundTrip<Variant>(bytes({0x86, 0xFF, 0xFF, 0xFF, 0xFF}), arena);
    CHECK(v.array_length == -1);
    // 2x3 matrix of Byte, dimensions [2, 3]
    v = roundTrip<Variant>(
        bytes({0xC3, 0x06, 0, 0, 0, 1, 2, 3, 4, 5, 6, 0x02, 0, 0, 0, 0x02, 0, 0, 0, 0x03, 0, 0, 0}),
        arena);
    REQUIRE(v.dimensions_length == 2);
    CHECK(v.dimensions[0] == 2);
    CHECK(v.dimensions[1] == 3);
    CHECK(static_cast<std::uint8_t*>(v.value.pointer)[5] == 6);
    // Array of Variants: [Int32 7, String "a"]
    v = roundTrip<Variant>(
        bytes({0x98, 0x02, 0, 0, 0, 0x06, 0x07, 0, 0, 0, 0x0C, 0x01, 0, 0, 0, 'a'}), arena);
    auto* elems = static_cast<Variant*>(v.value.pointer);
    CHECK(elems[0].value.int32 == 7);
    CHECK(view(elems[1].value.string) == "a");

    Variant bad{};
    // Dimensions that do not multiply to the element count.
    CHECK(decodeAll(bytes({0xC3, 0x02, 0, 0, 0, 1, 2, 0x01, 0, 0, 0, 0x03, 0, 0, 0}), bad, arena) ==
          UAPLEX_BadDecodingError);
    CHECK(decodeAll(bytes({0x1A}), bad, arena) == UAPLEX_BadDecodingError);  // type 26
}

TEST_CASE("ExtensionObject: known body decoded, unknown kept", "[builtin]") {
    enc::Arena arena;
    // TypeId ns=0;i=298 (ReadValueId_Encoding_DefaultBinary is 628). Use a RationalNumber:
    Bytes known;
    std::uint32_t id = ns0::RationalNumber_Encoding_DefaultBinary;
    REQUIRE(id <= 0xFFFF);
    test::append(known, {0x01, 0x00, int(id & 0xFF), int(id >> 8), 0x01, 0x08, 0, 0, 0, 0xFD, 0xFF,
                         0xFF, 0xFF, 0x04, 0, 0, 0});
    ExtensionObject eo = roundTrip<ExtensionObject>(known, arena);
    REQUIRE(eo.object != nullptr);
    CHECK(eo.data_type == enc::findDataType("RationalNumber"));
    auto* rn = static_cast<RationalNumber*>(eo.object);
    CHECK(rn->numerator == -3);
    CHECK(rn->denominator == 4u);

    // Unknown type id in namespace 3: the body stays raw and re-encodes identically.
    eo = roundTrip<ExtensionObject>(
        bytes({0x01, 0x03, 0x10, 0x00, 0x01, 0x03, 0, 0, 0, 0xAA, 0xBB, 0xCC}), arena);
    CHECK(eo.object == nullptr);
    CHECK(eo.body.length == 3);
    // No body, and an XML body.
    eo = roundTrip<ExtensionObject>(bytes({0x00, 0x00, 0x00}), arena);
    CHECK(eo.encoding == 0);
    eo = roundTrip<ExtensionObject>(bytes({0x00, 0x00, 0x02, 0x02, 0, 0, 0, '<', '>'}), arena);
    CHECK((eo.encoding == 2 && eo.body.length == 2));
}

TEST_CASE("DiagnosticInfo with nesting", "[builtin]") {
    enc::Arena arena;
    Bytes in = bytes({0x7F,                               // every field
                      0x01, 0,    0,    0,                // symbolic id
                      0x02, 0,    0,    0,                // namespace uri
                      0x03, 0,    0,    0,                // locale
                      0x04, 0,    0,    0,                // localized text
                      0x02, 0,    0,    0,    'a',  'i',  // additional info
                      0x00, 0x00, 0x07, 0x80,             // inner status
                      0x41,                               // inner: symbolic id + inner
                      0x09, 0,    0,    0,    0x20, 0x00,
                      0x00, 0x00, 0x80});  // innermost: inner status only
    DiagnosticInfo d = roundTrip<DiagnosticInfo>(in, arena);
    CHECK(d.symbolic_id == 1);
    CHECK(d.namespace_uri == 2);
    CHECK(d.locale == 3);
    CHECK(d.localized_text == 4);
    CHECK(view(d.additional_info) == "ai");
    CHECK(d.inner_status_code == 0x80070000u);
    REQUIRE(d.inner_diagnostic_info != nullptr);
    CHECK(d.inner_diagnostic_info->symbolic_id == 9);
    REQUIRE(d.inner_diagnostic_info->inner_diagnostic_info != nullptr);
    CHECK(d.inner_diagnostic_info->inner_diagnostic_info->inner_status_code == 0x80000000u);
}

TEST_CASE("status names come from StatusCode.csv", "[builtin]") {
    CHECK(enc::statusName(UAPLEX_BadDecodingError) == "BadDecodingError");
    CHECK(enc::statusName(UAPLEX_BadEncodingLimitsExceeded | 0x0400) ==
          "BadEncodingLimitsExceeded");
    CHECK(enc::statusName(0) == "Good");
    CHECK(!enc::statusDescription(UAPLEX_BadDecodingError).empty());
    CHECK(enc::statusName(0x8FFF0000u).empty());
}

TEST_CASE("the built-in type table agrees with the descriptors and the C++ enumerations",
          "[builtin]") {
    for (std::uint32_t id = UAPLEX_TYPE_BOOLEAN; id <= UAPLEX_TYPE_MAX; ++id) {
        INFO("built-in type " << id);
        const char* name = uaplex_builtin_name(id);
        REQUIRE(name != nullptr);
        const enc::DataType* t = enc::findDataType(name);
        REQUIRE(t != nullptr);
        CHECK(t->kind == enc::TypeKind::BuiltIn);
        CHECK(t->builtinId == id);
        CHECK(uaplex_builtin_size(id) == t->size);
    }
    CHECK(std::string_view(uaplex_builtin_name(UAPLEX_TYPE_NULL)) == "Null");
    CHECK(uaplex_builtin_name(UAPLEX_TYPE_MAX + 1) == nullptr);
    CHECK(uaplex_builtin_size(UAPLEX_TYPE_NULL) == 0);
    CHECK(uaplex_builtin_size(UAPLEX_TYPE_MAX + 1) == 0);
    CHECK(uaplex_builtin_size(UAPLEX_TYPE_BOOLEAN) == sizeof(bool));
    CHECK(uaplex_builtin_size(UAPLEX_TYPE_XMLELEMENT) == sizeof(String));
    CHECK(uaplex_builtin_size(UAPLEX_TYPE_VARIANT) == sizeof(Variant));
    static_assert(static_cast<int>(BuiltinType::DiagnosticInfo) == UAPLEX_TYPE_DIAGNOSTICINFO);
    static_assert(static_cast<int>(enc::FieldKind::ExpandedNodeId) == UAPLEX_TYPE_EXPANDEDNODEID);
}

TEST_CASE("DateTime counts 100 ns ticks from 1601", "[builtin]") {
    CHECK(UAPLEX_DATETIME_UNIX_EPOCH == 11644473600LL * UAPLEX_DATETIME_TICKS_PER_SECOND);
    CHECK(dateTimeFromUnixSeconds(0) == UAPLEX_DATETIME_UNIX_EPOCH);
    // 2026-01-01T00:00:00Z
    CHECK(dateTimeFromUnixSeconds(1767225600) == 134116992000000000LL);
    CHECK(utcNow() > dateTimeFromUnixSeconds(1767225600));
}

TEST_CASE("hex: two digits per byte, high nibble first, in the case asked") {
    const std::uint8_t b[] = {0x00, 0x0f, 0xa5, 0xff};
    CHECK(enc::toHex(b) == "000fa5ff");
    CHECK(enc::toHex(b, enc::HexCase::Upper) == "000FA5FF");
    CHECK(enc::toHex({}).empty());
    std::string s = "x.";
    enc::appendHex(s, std::span<const std::uint8_t>(b, 2));
    CHECK(s == "x.000f");
    CHECK(enc::hexDigit(0x1b) == 'b');  // only the low nibble counts
}
