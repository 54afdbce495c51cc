// SPDX-License-Identifier: Apache-2.0
// Generated structures: hand-laid-out service messages and a round trip over every type.
#include "fill.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

using namespace uaplex;
using namespace uaplex::ua;
using uaplex::test::append;
using uaplex::test::Bytes;

namespace {

// A ReadRequest for `n` Value attributes of ns=2;i=1000+k, laid out field by field from
// Part 4 5.10.2 / Part 6 (RequestHeader, maxAge, timestampsToReturn, nodesToRead).
Bytes readRequestBytes(int n) {
    Bytes b;
    append(b, {0x01, 0x00, 0x77, 0x02});                          // NodeId i=631 (four-byte form)
    append(b, {0x05, 0x00, 0x00, 0x04, 0, 0, 0, 1, 2, 3, 4});     // authToken: ByteString ns=0
    append(b, {0x00, 0x80, 0x3E, 0xD5, 0xDE, 0xB1, 0x9D, 0x01});  // timestamp
    append(b, {0x2A, 0, 0, 0});                                   // requestHandle 42
    append(b, {0, 0, 0, 0});                                      // returnDiagnostics
    append(b, {0xFF, 0xFF, 0xFF, 0xFF});                          // auditEntryId null
    append(b, {0x10, 0x27, 0, 0});                                // timeoutHint 10000
    append(b, {0x00, 0x00, 0x00});                                // additionalHeader: no body
    append(b, {0, 0, 0, 0, 0, 0, 0, 0});                          // maxAge 0.0
    append(b, {0x02, 0, 0, 0});                                   // timestampsToReturn Both
    append(b, {n & 0xFF, (n >> 8) & 0xFF, 0, 0});                 // nodesToRead count
    for (int k = 0; k < n; ++k) {
        int id = 1000 + k;
        append(b, {0x01, 0x02, id & 0xFF, id >> 8});      // NodeId ns=2 (four-byte form)
        append(b, {0x0D, 0, 0, 0});                       // attributeId Value (13)
        append(b, {0xFF, 0xFF, 0xFF, 0xFF});              // indexRange null
        append(b, {0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF});  // dataEncoding: ns 0, null name
    }
    return b;
}

}  // namespace

TEST_CASE("ReadRequest decodes from a hand-laid-out message", "[generated]") {
    enc::Arena arena;
    Bytes in = readRequestBytes(3);
    enc::DecodedMessage m = enc::decodeMessage(in, arena, enc::DecodeLimits{});
    REQUIRE(m.status == UAPLEX_Good);
    REQUIRE(m.type == enc::findDataType("ReadRequest"));
    CHECK(m.type->binaryEncodingId == ns0::ReadRequest_Encoding_DefaultBinary);
    CHECK(m.type->typeId == ns0::ReadRequest);
    auto& req = *static_cast<ReadRequest*>(m.object);
    CHECK(req.requestHeader.requestHandle == 42u);
    CHECK(req.requestHeader.timeoutHint == 10000u);
    CHECK(req.requestHeader.authenticationToken.identifier_type == UAPLEX_ID_BYTESTRING);
    CHECK(req.timestampsToReturn == TimestampsToReturn::Both);
    REQUIRE(req.nodesToRead.length == 3);
    CHECK(req.nodesToRead[2].nodeId.namespace_index == 2);
    CHECK(req.nodesToRead[2].nodeId.identifier.numeric == 1002u);
    CHECK(req.nodesToRead[1].attributeId == 13u);
    CHECK(req.nodesToRead[0].indexRange.length == -1);

    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    REQUIRE(enc::encodeMessage(w, req) == UAPLEX_Good);
    CHECK(buf.toVector() == in);

    // Qualified calls reach the generated codecs too.
    enc::ByteBuffer body;
    enc::BinaryWriter bw(body);
    enc::encode(bw, req);
    CHECK(body.toVector() == Bytes(in.begin() + 4, in.end()));
    ReadRequest again{};
    enc::BinaryReader r(body.span(), arena, enc::DecodeLimits{});
    enc::decode(r, again);
    CHECK(r.ok());
    CHECK(again.nodesToRead.length == 3);
    enc::ByteBuffer viaDescriptor;
    CHECK(enc::encodeValue(viaDescriptor, *enc::findDataType("ReadRequest"), &req) == UAPLEX_Good);
    CHECK(viaDescriptor.toVector() == body.toVector());
}

TEST_CASE("ReadResponse encodes to the spec layout", "[generated]") {
    ReadResponse resp{};
    resp.responseHeader.timestamp = 0x0102030405060708;
    resp.responseHeader.requestHandle = 7;
    resp.responseHeader.stringTable = {-1, nullptr};
    resp.responseHeader.additionalHeader.type_id = numericNodeId(0, 0);
    DataValue values[2]{};
    values[0].mask = UAPLEX_DATAVALUE_VALUE;
    values[0].value = variantDouble(1.0);
    values[1].mask = UAPLEX_DATAVALUE_STATUS;
    values[1].status = UAPLEX_BadNodeIdUnknown;
    resp.results = {2, values};
    resp.diagnosticInfos = {0, nullptr};

    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    REQUIRE(enc::encodeMessage(w, resp) == UAPLEX_Good);
    Bytes expected;
    append(expected, {0x01, 0x00, 0x7A, 0x02});                    // i=634 ReadResponse binary
    append(expected, {8, 7, 6, 5, 4, 3, 2, 1});                    // timestamp
    append(expected, {7, 0, 0, 0});                                // requestHandle
    append(expected, {0, 0, 0, 0});                                // serviceResult Good
    append(expected, {0x00});                                      // serviceDiagnostics: empty mask
    append(expected, {0xFF, 0xFF, 0xFF, 0xFF});                    // stringTable null
    append(expected, {0x00, 0x00, 0x00});                          // additionalHeader
    append(expected, {2, 0, 0, 0});                                // results
    append(expected, {0x01, 0x0B, 0, 0, 0, 0, 0, 0, 0xF0, 0x3F});  // Value: Double 1.0
    append(expected, {0x02, 0x00, 0x00, 0x34, 0x80});              // Status BadNodeIdUnknown
    append(expected, {0, 0, 0, 0});                                // diagnosticInfos empty
    CHECK(buf.toVector() == expected);
}

TEST_CASE("descriptors: lookups and field access", "[generated]") {
    const enc::DataType* rr = enc::findDataType("ReadRequest");
    REQUIRE(rr != nullptr);
    CHECK(enc::findDataTypeByEncodingId(ns0::ReadRequest_Encoding_DefaultBinary) == rr);
    CHECK(enc::findDataTypeByTypeId(ns0::ReadRequest) == rr);
    CHECK(enc::dataTypeOf<ReadRequest>() == rr);
    REQUIRE(rr->fieldCount == 4);
    const enc::FieldDescriptor* f = rr->field("nodesToRead");
    REQUIRE(f != nullptr);
    CHECK(f->isArray);
    CHECK(f->kind == enc::FieldKind::Structure);
    CHECK(f->type == enc::findDataType("ReadValueId"));
    CHECK(f->offset == offsetof(ReadRequest, nodesToRead));
    CHECK(rr->field("maxAge")->kind == enc::FieldKind::Double);

    // Inherited fields come first (UserNameIdentityToken derives from UserIdentityToken).
    const enc::DataType* un = enc::findDataType("UserNameIdentityToken");
    REQUIRE(un != nullptr);
    CHECK(un->fields[0].name == "policyId");
    const enc::DataType* e = enc::findDataType("MessageSecurityMode");
    REQUIRE(e != nullptr);
    CHECK(e->kind == enc::TypeKind::Enumeration);
    CHECK(e->enumValueCount == 4);
    CHECK(enc::findDataType("Variant")->kind == enc::TypeKind::BuiltIn);
    CHECK(enc::findDataType("NoSuchType") == nullptr);

    std::size_t structures = 0;
    for (const enc::DataType& t : enc::allDataTypes()) {
        CHECK(enc::findDataType(t.name) == &t);
        if (t.kind == enc::TypeKind::Structure) ++structures;
    }
    CHECK(structures > 300);
}

TEST_CASE("every generated type round-trips byte-identically", "[generated]") {
    enc::Arena arena;
    enc::ByteBuffer first, second;
    std::size_t checked = 0;
    for (const enc::DataType& type : enc::allDataTypes()) {
        for (std::uint64_t seed = 1; seed <= 6; ++seed) {
            arena.reset();
            test::Filler filler(arena, seed * 0x9E3779B97F4A7C15ull + type.size);
            void* obj = arena.allocate(type.size, type.alignment);
            std::memset(obj, 0, type.size);
            filler.fill(type, obj);

            first.clear();
            enc::BinaryWriter w1(first);
            enc::encode(w1, type, obj);
            REQUIRE(w1.ok());

            void* back = nullptr;
            uaplex_status s =
                enc::decodeValue(first.span(), arena, enc::DecodeLimits{}, type, &back);
            INFO(type.name << " seed " << seed << ": " << enc::statusName(s));
            REQUIRE(s == UAPLEX_Good);

            second.clear();
            enc::BinaryWriter w2(second);
            enc::encode(w2, type, back);
            REQUIRE(w2.ok());
            REQUIRE(first.toVector() == second.toVector());
            ++checked;
        }
    }
    CHECK(checked == enc::allDataTypes().size() * 6);
}
