// SPDX-License-Identifier: Apache-2.0
// JSON encoding (Part 6 1.04 5.4, reversible form): the spec's value forms written by hand,
// round trips of every built-in type and every generated structure, and hostile input.
#include "fill.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

using namespace uaplex;

namespace {

std::span<const std::uint8_t> bytesOf(std::string_view s) {
    return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

template <class T>
std::string toJson(const T& v, const char* typeName) {
    enc::ByteBuffer out;
    const enc::DataType* t = enc::findDataType(typeName);
    REQUIRE(t != nullptr);
    REQUIRE(enc::encodeJson(out, *t, &v) == UAPLEX_Good);
    return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

// Decodes `json` as typeName and returns it re-encoded as JSON ("" on failure).
std::string reencode(std::string_view json, const char* typeName, uaplex_status* status = nullptr,
                     const enc::DecodeLimits& limits = {}) {
    enc::Arena arena;
    const enc::DataType* t = enc::findDataType(typeName);
    REQUIRE(t != nullptr);
    void* v = nullptr;
    uaplex_status s = enc::decodeJson(bytesOf(json), arena, limits, *t, &v);
    if (status) *status = s;
    if (s != UAPLEX_Good) return "";
    enc::ByteBuffer out;
    REQUIRE(enc::encodeJson(out, *t, v) == UAPLEX_Good);
    return std::string(reinterpret_cast<const char*>(out.data()), out.size());
}

uaplex_status decodeStatus(std::string_view json, const char* typeName,
                           const enc::DecodeLimits& limits = {}) {
    uaplex_status s = UAPLEX_Good;
    reencode(json, typeName, &s, limits);
    return s;
}

}  // namespace

TEST_CASE("JSON: built-in values in the spec's forms", "[json]") {
    CHECK(toJson(std::int64_t(-5), "Int64") == "\"-5\"");
    CHECK(toJson(std::uint64_t(18446744073709551615ull), "UInt64") == "\"18446744073709551615\"");
    CHECK(toJson(std::int32_t(-7), "Int32") == "-7");
    CHECK(toJson(true, "Boolean") == "true");
    CHECK(toJson(std::nan(""), "Double") == "\"NaN\"");
    CHECK(toJson(-std::numeric_limits<double>::infinity(), "Double") == "\"-Infinity\"");
    CHECK(toJson(std::numeric_limits<float>::infinity(), "Float") == "\"Infinity\"");
    CHECK(toJson(0.1, "Double") == "0.1");
    CHECK(toJson(ua::makeString("a\"b\\c\n\x01"), "String") == "\"a\\\"b\\\\c\\n\\u0001\"");
    CHECK(toJson(ua::nullString(), "String") == "null");
    static const std::uint8_t raw[] = {0x01, 0x02, 0x03, 0xFF};
    CHECK(toJson(ua::makeByteString(raw), "ByteString") == "\"AQID/w==\"");
    // 2018-01-02T03:04:05.1234567Z in 100 ns ticks since 1601.
    CHECK(toJson(std::int64_t(131593358451234567), "DateTime") ==
          "\"2018-01-02T03:04:05.1234567Z\"");
    CHECK(toJson(std::int64_t(0), "DateTime") == "\"1601-01-01T00:00:00Z\"");
    CHECK(toJson(INT64_MAX, "DateTime") == "\"9999-12-31T23:59:59Z\"");
    CHECK(toJson(INT64_MIN, "DateTime") == "\"0001-01-01T00:00:00Z\"");
    ua::Guid g{0x72962B91, 0xFA75, 0x4AE6, {0x8D, 0x28, 0xB4, 0x04, 0xDC, 0x7D, 0xAF, 0x63}};
    CHECK(toJson(g, "Guid") == "\"72962B91-FA75-4AE6-8D28-B404DC7DAF63\"");
    CHECK(toJson(std::uint32_t(0x80340000), "StatusCode") == "2150891520");

    CHECK(toJson(ua::numericNodeId(0, 2253), "NodeId") == R"({"Id":2253})");
    CHECK(toJson(ua::stringNodeId(2, "Demo.Static"), "NodeId") ==
          R"({"IdType":1,"Id":"Demo.Static","Namespace":2})");
    ua::NodeId gid{};
    gid.namespace_index = 1;
    gid.identifier_type = UAPLEX_ID_GUID;
    gid.identifier.guid = g;
    CHECK(toJson(gid, "NodeId") ==
          R"({"IdType":2,"Id":"72962B91-FA75-4AE6-8D28-B404DC7DAF63","Namespace":1})");
    ua::ExpandedNodeId x{};
    x.node_id = ua::numericNodeId(0, 5);
    x.mask = UAPLEX_EXPANDEDNODEID_NAMESPACEURI | UAPLEX_EXPANDEDNODEID_SERVERINDEX;
    x.namespace_uri = ua::makeString("urn:a");
    x.server_index = 3;
    CHECK(toJson(x, "ExpandedNodeId") == R"({"Id":5,"Namespace":"urn:a","ServerUri":3})");

    ua::QualifiedName q{2, ua::makeString("Temperature")};
    CHECK(toJson(q, "QualifiedName") == R"({"Name":"Temperature","Uri":2})");
    CHECK(toJson(ua::makeLocalizedText("en-US", "Hello"), "LocalizedText") ==
          R"({"Locale":"en-US","Text":"Hello"})");

    CHECK(toJson(ua::variantDouble(2.5), "Variant") == R"({"Type":11,"Body":2.5})");
    CHECK(toJson(ua::Variant{}, "Variant") == "null");
    std::int16_t m[4] = {1, -2, 3, -4};
    std::int32_t dims[2] = {2, 2};
    ua::Variant mv = ua::variantArray(ua::BuiltinType::Int16, 4, m);
    mv.encoding |= UAPLEX_VARIANT_ARRAY_DIMENSIONS;
    mv.dimensions_length = 2;
    mv.dimensions = dims;
    CHECK(toJson(mv, "Variant") == R"({"Type":4,"Body":[1,-2,3,-4],"Dimensions":[2,2]})");

    ua::DataValue dv{};
    dv.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    dv.value = ua::variantInt32(42);
    dv.status = 0x40000000u;
    dv.source_timestamp = 131593358450000000;
    CHECK(
        toJson(dv, "DataValue") ==
        R"({"Value":{"Type":6,"Body":42},"Status":1073741824,"SourceTimestamp":"2018-01-02T03:04:05Z"})");

    ua::DiagnosticInfo inner{};
    inner.mask = UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE;
    inner.inner_status_code = 0x80000000u;
    ua::DiagnosticInfo di{};
    di.mask = UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID | UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO;
    di.symbolic_id = 4;
    di.inner_diagnostic_info = &inner;
    CHECK(toJson(di, "DiagnosticInfo") ==
          R"({"SymbolicId":4,"InnerDiagnosticInfo":{"InnerStatusCode":2147483648}})");
}

TEST_CASE("JSON: structures use schema names and omit defaults", "[json]") {
    ua::ReadValueId ids[1]{};
    ids[0].nodeId = ua::numericNodeId(0, 2258);
    ids[0].attributeId = 13;
    ids[0].indexRange = ua::nullString();
    ids[0].dataEncoding = ua::QualifiedName{0, ua::nullString()};
    ua::ReadRequest req{};
    req.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    req.requestHeader.requestHandle = 7;
    req.requestHeader.auditEntryId = ua::nullString();
    req.requestHeader.timeoutHint = 1000;
    req.maxAge = 0;
    req.timestampsToReturn = ua::TimestampsToReturn::Both;
    req.nodesToRead = ua::Array<ua::ReadValueId>{1, ids};
    CHECK(toJson(req, "ReadRequest") ==
          R"({"RequestHeader":{"RequestHandle":7,"TimeoutHint":1000},"TimestampsToReturn":2,)"
          R"("NodesToRead":[{"NodeId":{"Id":2258},"AttributeId":13}]})");

    enc::ByteBuffer out;
    REQUIRE(enc::encodeJsonMessage(out, *enc::dataTypeOf<ua::ReadRequest>(), &req) == UAPLEX_Good);
    std::string msg(reinterpret_cast<const char*>(out.data()), out.size());
    CHECK(msg.rfind(R"({"TypeId":{"Id":629},"Body":{"RequestHeader":)", 0) == 0);

    // Members in any order, unknown members ignored, TypeId as the binary encoding id.
    std::string_view in =
        R"({ "Body": {"NodesToRead": [{"AttributeId": 13, "NodeId": {"Namespace": 2, "IdType": 1,
           "Id": "Demo.Static.Scalar.Double"}}], "x-extra": [1, {"a": null}],
           "RequestHeader": {"TimeoutHint": 5000}}, "TypeId": {"Id": 631} })";
    enc::Arena arena;
    enc::DecodedMessage m = enc::decodeJsonMessage(bytesOf(in), arena, enc::DecodeLimits{});
    REQUIRE(m.status == UAPLEX_Good);
    REQUIRE(m.type == enc::dataTypeOf<ua::ReadRequest>());
    auto& r = *static_cast<ua::ReadRequest*>(m.object);
    CHECK(r.requestHeader.timeoutHint == 5000);
    CHECK(r.requestHeader.auditEntryId.length == -1);
    REQUIRE(r.nodesToRead.length == 1);
    CHECK(r.nodesToRead[0].attributeId == 13);
    CHECK(ua::equal(r.nodesToRead[0].nodeId, ua::stringNodeId(2, "Demo.Static.Scalar.Double")));
    CHECK(r.nodesToRead[0].indexRange.length == -1);

    // The DefaultJson encoding NodeId (Part 6 1.04 names a DataTypeEncoding) works as well.
    m = enc::decodeJsonMessage(bytesOf(R"({"TypeId":{"Id":15257},"Body":{}})"), arena, {});
    CHECK(m.status == UAPLEX_Good);
    CHECK(m.type == enc::dataTypeOf<ua::ReadRequest>());
    CHECK(enc::dataTypeOf<ua::ReadRequest>()->jsonEncodingId == 15257);
}

TEST_CASE("JSON: decoder accepts the alternative forms", "[json]") {
    CHECK(reencode("42", "Int64") == "\"42\"");
    CHECK(reencode(" \"-9223372036854775808\" ", "Int64") == "\"-9223372036854775808\"");
    CHECK(reencode("\"Infinity\"", "Float") == "\"Infinity\"");
    CHECK(reencode("1e2", "Double") == "100");
    CHECK(reencode("\"2018-01-02T05:04:05.5+02:00\"", "DateTime") == "\"2018-01-02T03:04:05.5Z\"");
    CHECK(reencode("\"72962b91-fa75-4ae6-8d28-b404dc7daf63\"", "Guid") ==
          "\"72962B91-FA75-4AE6-8D28-B404DC7DAF63\"");
    CHECK(reencode(R"("\u00e4\ud83d\ude00\/")", "String") == "\"\xC3\xA4\xF0\x9F\x98\x80/\"");
    CHECK(reencode(R"({"Body":[true,false],"Type":1})", "Variant") ==
          R"({"Type":1,"Body":[true,false]})");
    CHECK(reencode(R"({"Type":12,"Body":null})", "Variant") == R"({"Type":12,"Body":null})");
    CHECK(reencode(R"({"TypeId":{"Id":5,"Namespace":3},"Encoding":1,"Body":"AAE="})",
                   "ExtensionObject") ==
          R"({"TypeId":{"Id":5,"Namespace":3},"Encoding":1,"Body":"AAE="})");
    CHECK(reencode("null", "LocalizedText") == "{}");
}

TEST_CASE("JSON: malformed input is BadDecodingError", "[json]") {
    const char* const bad[][2] = {
        {"", "Int32"},
        {"01", "Int32"},
        {"1.5", "Int32"},
        {"2147483648", "Int32"},
        {"-1", "UInt32"},
        {"\"12\"", "Int32"},
        {"\"1x\"", "Int64"},
        {"\"18446744073709551616\"", "UInt64"},
        {"1e999", "Double"},
        {"\"nan\"", "Double"},
        {"tru", "Boolean"},
        {"\"abc", "String"},
        {"\"a\\x\"", "String"},
        {"\"\\ud800\"", "String"},
        {"\"a\x01\"", "String"},
        {"\"2018-02-30T00:00:00Z\"", "DateTime"},
        {"\"2018-01-01 00:00:00Z\"", "DateTime"},
        {"\"2018-01-01T00:00:00\"", "DateTime"},
        {"\"72962B91FA754AE68D28B404DC7DAF63\"", "Guid"},
        {"\"A===\"", "ByteString"},
        {"\"A$==\"", "ByteString"},
        {"{\"IdType\":4,\"Id\":1}", "NodeId"},
        {"{\"IdType\":1}", "NodeId"},
        {"{\"Id\":1,\"Id\":2}", "NodeId"},
        {"{\"Id\":1,}", "NodeId"},
        {"{\"Id\" 1}", "NodeId"},
        {"{\"Type\":26,\"Body\":1}", "Variant"},
        {"{\"Type\":6,\"Body\":[1,2],\"Dimensions\":[3]}", "Variant"},
        {"{\"Type\":6,\"Body\":1,\"Dimensions\":[1]}", "Variant"},
        {"{\"Body\":1}", "Variant"},
        {"{\"Type\":6,\"Body\":[1,]}", "Variant"},
        {"{\"TypeId\":{\"Id\":999999},\"Body\":{}}", "ExtensionObject"},
        {"{\"Body\":{}}", "ExtensionObject"},
        {"{\"TypeId\":{\"Id\":1},\"Encoding\":3,\"Body\":\"\"}", "ExtensionObject"},
        {"[1]", "ReadRequest"},
        {"{\"NodesToRead\":{}}", "ReadRequest"},
        {"{\"MaxAge\":1} x", "ReadRequest"},
        {"{\"TimestampsToReturn\":4294967296}", "ReadRequest"},
    };
    for (const auto& b : bad) {
        INFO(b[1] << ": " << b[0]);
        CHECK(decodeStatus(b[0], b[1]) == UAPLEX_BadDecodingError);
    }
    enc::Arena arena;
    CHECK(enc::decodeJsonMessage(bytesOf(R"({"TypeId":{"Id":1},"Body":1})"), arena, {}).status ==
          UAPLEX_BadDecodingError);
    CHECK(enc::decodeJsonMessage(bytesOf("{}"), arena, {}).status == UAPLEX_BadDecodingError);
    CHECK(enc::decodeJsonMessage(bytesOf("{"), arena, {}).status == UAPLEX_BadDecodingError);
}

TEST_CASE("JSON: decode limits apply as in the binary decoder", "[json]") {
    enc::DecodeLimits l;
    l.maxStringLength = 4;
    l.maxByteStringLength = 3;
    l.maxArrayLength = 2;
    l.maxNestingDepth = 8;
    CHECK(decodeStatus("\"abcd\"", "String", l) == UAPLEX_Good);
    CHECK(decodeStatus("\"abcde\"", "String", l) == UAPLEX_BadEncodingLimitsExceeded);
    CHECK(decodeStatus("\"ab\\u0041cd\"", "String", l) == UAPLEX_BadEncodingLimitsExceeded);
    CHECK(decodeStatus("\"AAAA\"", "ByteString", l) == UAPLEX_Good);
    CHECK(decodeStatus("\"AAAAAA==\"", "ByteString", l) == UAPLEX_BadEncodingLimitsExceeded);
    CHECK(decodeStatus(R"({"Type":6,"Body":[1,2]})", "Variant", l) == UAPLEX_Good);
    CHECK(decodeStatus(R"({"Type":6,"Body":[1,2,3]})", "Variant", l) ==
          UAPLEX_BadEncodingLimitsExceeded);
    std::string deep;
    for (int i = 0; i < 20; ++i) deep += R"({"Type":24,"Body":)";
    deep += "null";
    for (int i = 0; i < 20; ++i) deep += "}";
    CHECK(decodeStatus(deep, "Variant", l) == UAPLEX_BadEncodingLimitsExceeded);
    // Deep nesting in an ignored member is bounded too (no unbounded recursion).
    std::string skipped = R"({"x":)" + std::string(100000, '[') + "}";
    CHECK(decodeStatus(skipped, "ReadRequest") == UAPLEX_BadEncodingLimitsExceeded);
    enc::DecodeLimits small;
    small.maxMessageSize = 8;
    CHECK(decodeStatus("\"123456789\"", "String", small) == UAPLEX_BadEncodingLimitsExceeded);
    enc::DecodeLimits arenaCap;
    arenaCap.maxArenaBytes = 1024;
    std::string many = R"({"Type":11,"Body":[)";
    for (int i = 0; i < 1000; ++i) many += i ? ",0" : "0";
    many += "]}";
    CHECK(decodeStatus(many, "Variant", arenaCap) == UAPLEX_BadEncodingLimitsExceeded);
}

TEST_CASE("JSON: every built-in and generated type round-trips", "[json]") {
    enc::Arena arena;
    enc::ByteBuffer bin1, bin2, json1, json2;
    std::size_t checked = 0;
    for (const enc::DataType& type : enc::allDataTypes()) {
        for (std::uint64_t seed = 1; seed <= 6; ++seed) {
            arena.reset();
            test::Filler filler(arena, seed * 0x9E3779B97F4A7C15ull + type.size);
            filler.jsonSafe(true);
            void* obj = arena.allocate(type.size, type.alignment);
            std::memset(obj, 0, type.size);
            filler.fill(type, obj);

            // Normalise through the binary codec first (as a received value would be).
            bin1.clear();
            REQUIRE(enc::encodeValue(bin1, type, obj) == UAPLEX_Good);
            void* value = nullptr;
            REQUIRE(enc::decodeValue(bin1.span(), arena, {}, type, &value) == UAPLEX_Good);

            json1.clear();
            INFO(type.name << " seed " << seed);
            REQUIRE(enc::encodeJson(json1, type, value) == UAPLEX_Good);
            INFO(std::string(reinterpret_cast<const char*>(json1.data()), json1.size()));
            void* back = nullptr;
            uaplex_status s = enc::decodeJson(json1.span(), arena, {}, type, &back);
            INFO(enc::statusName(s));
            REQUIRE(s == UAPLEX_Good);

            bin2.clear();
            REQUIRE(enc::encodeValue(bin2, type, back) == UAPLEX_Good);
            REQUIRE(bin1.toVector() == bin2.toVector());
            json2.clear();
            REQUIRE(enc::encodeJson(json2, type, back) == UAPLEX_Good);
            REQUIRE(json1.toVector() == json2.toVector());
            ++checked;
        }
    }
    CHECK(checked == enc::allDataTypes().size() * 6);
}

namespace {

// `inner` wrapped in `depth` Variants of Variant: `{"Body":...,"Type":24}` puts the member
// that waits for "Type" first (the decoder must come back to it), `{"Type":24,"Body":[...]}`
// makes each level an array as well.
std::string nestedVariants(const std::string& inner, int depth, bool bodyFirst, bool arrays) {
    std::string out;
    for (int i = 0; i < depth; ++i)
        out += bodyFirst ? (arrays ? R"({"Body":[)" : R"({"Body":)")
                         : (arrays ? R"({"Type":24,"Body":[)" : R"({"Type":24,"Body":)");
    out += inner;
    for (int i = 0; i < depth; ++i)
        out += bodyFirst ? (arrays ? R"(],"Type":24})" : R"(,"Type":24})") : (arrays ? "]}" : "}");
    return out;
}

}  // namespace

TEST_CASE("JSON: nested values are read once, not once per level", "[json]") {
    // ~200 kB of leaf content under up to 30 levels (60 with the arrays): the bytes the
    // decoder reads stay a small multiple of the input, whatever the depth.
    std::string leaf = R"({"Type":6,"Body":[)";
    for (int i = 0; i < 40000; ++i) leaf += i ? ",12345" : "12345";
    leaf += "]}";
    for (bool bodyFirst : {false, true}) {
        for (bool arrays : {false, true}) {
            for (int depth : {1, 10, 30}) {
                std::string text = nestedVariants(leaf, depth, bodyFirst, arrays);
                INFO("depth " << depth << (bodyFirst ? ", Body first" : ", Type first")
                              << (arrays ? ", arrays" : ""));
                enc::Arena arena;
                void* v = nullptr;
                enc::JsonDecodeStats stats;
                REQUIRE(enc::decodeJson(bytesOf(text), arena, {}, *enc::findDataType("Variant"), &v,
                                        &stats) == UAPLEX_Good);
                // One structural pass and one decoding pass; before, the leaf was scanned
                // about twice per level (a skip, then the decode, at every level).
                CHECK(stats.scannedBytes >= text.size());
                CHECK(stats.scannedBytes <= 3 * text.size());
                // The innermost array decoded intact.
                const auto* x = static_cast<const enc::Variant*>(v);
                for (int i = 0; i < depth; ++i) {
                    if (arrays) {
                        REQUIRE(x->array_length == 1);
                        x = static_cast<const enc::Variant*>(x->value.pointer);
                    } else {
                        x = static_cast<const enc::Variant*>(x->value.pointer);
                    }
                }
                CHECK(x->array_length == 40000);
            }
        }
    }
    // A service message: a Write of one such value.
    std::string msg = R"({"TypeId":{"Id":671},"Body":{"NodesToWrite":[{"Value":{"Value":)" +
                      nestedVariants(leaf, 25, true, false) +
                      R"(},"NodeId":{"Id":2258},"AttributeId":13}]}})";
    enc::Arena arena;
    enc::JsonDecodeStats stats;
    enc::DecodedMessage m = enc::decodeJsonMessage(bytesOf(msg), arena, {}, &stats);
    CHECK(m.status == UAPLEX_Good);
    CHECK(stats.scannedBytes <= 3 * msg.size());
}

TEST_CASE("JSON: the structural pass keeps syntax and limits of skipped members", "[json]") {
    // Unknown members are skipped by a jump once indexed, but their syntax was checked.
    std::string pad(200, ' ');
    CHECK(decodeStatus(R"({"x":[1,2,)" + pad + "3,]}", "ReadRequest") == UAPLEX_BadDecodingError);
    CHECK(decodeStatus(R"({"x":[1,2,)" + pad + "3],\"MaxAge\":1}", "ReadRequest") == UAPLEX_Good);
    // A long array's recorded count still meets maxArrayLength.
    enc::DecodeLimits l;
    l.maxArrayLength = 100;
    std::string arr = R"({"Type":6,"Body":[)";
    for (int i = 0; i < 101; ++i) arr += i ? ",1" : "1";
    arr += "]}";
    CHECK(decodeStatus(arr, "Variant", l) == UAPLEX_BadEncodingLimitsExceeded);
    l.maxArrayLength = 101;
    CHECK(decodeStatus(arr, "Variant", l) == UAPLEX_Good);
    // The index is bounded: a quarter of maxArenaBytes.
    enc::DecodeLimits tiny;
    tiny.maxArenaBytes = 4096;
    std::string many = R"({"x":[)";
    for (int i = 0; i < 200; ++i) many += std::string(i ? "," : "") + "[" + pad.substr(0, 70) + "]";
    many += "]}";
    CHECK(decodeStatus(many, "ReadRequest", tiny) == UAPLEX_BadEncodingLimitsExceeded);
}
