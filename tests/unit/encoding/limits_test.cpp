// SPDX-License-Identifier: Apache-2.0
// Decoding hostile input: limits, truncation, huge claimed lengths, deep nesting.
#include "support/encoding_messages.hpp"
#include "test_util.hpp"

#include <catch2/catch.hpp>

using namespace uaplex;
using namespace uaplex::ua;
using uaplex::test::append;
using uaplex::test::Bytes;
using uaplex::test::bytes;
using uaplex::test::decodeAll;

namespace {

Bytes readRequest(int n) {
    Bytes b = bytes(
        {0x01, 0x00, 0x77, 0x02,  // ReadRequest_Encoding_DefaultBinary
         0x00, 0x00, 0,    0,    0,    0,    0,    0, 0,    0, 1, 0,    0,    0,    0,
         0,    0,    0,    0xFF, 0xFF, 0xFF, 0xFF, 0, 0,    0, 0, 0x00, 0x00, 0x00,  // RequestHeader
         0,    0,    0,    0,    0,    0,    0,    0, 0x01, 0, 0, 0});  // maxAge, Server
    append(b, {n & 0xFF, (n >> 8) & 0xFF, 0, 0});
    for (int k = 0; k < n; ++k)
        append(b, {0x01, 0x02, k & 0xFF, (k >> 8) & 0xFF, 0x0D, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0,
                   0, 0xFF, 0xFF, 0xFF, 0xFF});
    return b;
}

// `depth` Variants each holding the next one, ending in an Int32.
Bytes nestedVariants(int depth) {
    Bytes b;
    for (int i = 0; i < depth; ++i) b.push_back(0x18);
    append(b, {0x06, 1, 0, 0, 0});
    return b;
}

}  // namespace

TEST_CASE("a valid message decodes and limits are not hit", "[limits]") {
    enc::Arena arena;
    CHECK(enc::decodeMessage(readRequest(10), arena, enc::DecodeLimits{}).status == UAPLEX_Good);
}

TEST_CASE("message size limit", "[limits]") {
    enc::Arena arena;
    enc::DecodeLimits limits;
    Bytes in = readRequest(10);
    limits.maxMessageSize = in.size() - 1;
    CHECK(enc::decodeMessage(in, arena, limits).status == UAPLEX_BadEncodingLimitsExceeded);
}

TEST_CASE("string and bytestring length limits", "[limits]") {
    enc::Arena arena;
    enc::DecodeLimits limits;
    limits.maxStringLength = 4;
    limits.maxByteStringLength = 2;
    String s{};
    CHECK(decodeAll(bytes({4, 0, 0, 0, 'a', 'b', 'c', 'd'}), s, arena, limits) == UAPLEX_Good);
    CHECK(decodeAll(bytes({5, 0, 0, 0, 'a', 'b', 'c', 'd', 'e'}), s, arena, limits) ==
          UAPLEX_BadEncodingLimitsExceeded);
    ByteString b{};
    CHECK(decodeAll(bytes({3, 0, 0, 0, 1, 2, 3}), b, arena, limits) ==
          UAPLEX_BadEncodingLimitsExceeded);
    // A length beyond the input is malformed, not a limit violation.
    CHECK(decodeAll(bytes({3, 0, 0, 0, 'a'}), s, arena) == UAPLEX_BadDecodingError);
}

TEST_CASE("array length limit", "[limits]") {
    enc::Arena arena;
    enc::DecodeLimits limits;
    limits.maxArrayLength = 5;
    CHECK(enc::decodeMessage(readRequest(5), arena, limits).status == UAPLEX_Good);
    CHECK(enc::decodeMessage(readRequest(6), arena, limits).status ==
          UAPLEX_BadEncodingLimitsExceeded);
    Variant v{};
    CHECK(decodeAll(bytes({0x86, 6, 0, 0, 0}), v, arena, limits) ==
          UAPLEX_BadEncodingLimitsExceeded);
}

TEST_CASE("decoding stops at the arena byte limit", "[limits]") {
    enc::Arena arena;
    enc::DecodeLimits limits;
    limits.maxArenaBytes = 1000;
    CHECK(enc::decodeMessage(readRequest(100), arena, limits).status ==
          UAPLEX_BadEncodingLimitsExceeded);
    arena.reset();
    enc::Arena bounded(1000);
    CHECK(enc::decodeMessage(readRequest(100), bounded, enc::DecodeLimits{}).status ==
          UAPLEX_BadEncodingLimitsExceeded);
}

TEST_CASE("huge claimed lengths allocate nothing", "[limits]") {
    enc::Arena arena;
    enc::DecodeLimits limits;
    limits.maxArrayLength = INT32_MAX;
    limits.maxStringLength = INT32_MAX;
    Bytes req = readRequest(0);
    req.resize(req.size() - 4);
    append(req, {0xFF, 0xFF, 0xFF, 0x7F, 0x01, 0x02});  // 2^31-1 ReadValueIds claimed
    CHECK(enc::decodeMessage(req, arena, limits).status == UAPLEX_BadDecodingError);
    CHECK(arena.reservedBytes() < 64 * 1024);

    Variant v{};
    arena.reset();
    CHECK(decodeAll(bytes({0x98, 0xFF, 0xFF, 0xFF, 0x7F, 0x00}), v, arena, limits) ==
          UAPLEX_BadDecodingError);
    CHECK(decodeAll(bytes({0x8C, 0x00, 0x00, 0x00, 0x40, 0x00}), v, arena, limits) ==
          UAPLEX_BadDecodingError);
    String s{};
    CHECK(decodeAll(bytes({0xFF, 0xFF, 0xFF, 0x7F, 'x'}), s, arena, limits) ==
          UAPLEX_BadDecodingError);
    CHECK(arena.reservedBytes() < 64 * 1024);
}

TEST_CASE("nesting depth is bounded", "[limits]") {
    enc::Arena arena;
    enc::DecodeLimits limits;
    limits.maxNestingDepth = 10;
    Variant v{};
    CHECK(decodeAll(nestedVariants(8), v, arena, limits) == UAPLEX_Good);
    CHECK(decodeAll(nestedVariants(11), v, arena, limits) == UAPLEX_BadEncodingLimitsExceeded);
    // Far deeper than any stack could take if recursion were unbounded.
    CHECK(decodeAll(nestedVariants(200000), v, arena) == UAPLEX_BadEncodingLimitsExceeded);

    Bytes diag;
    for (int i = 0; i < 20; ++i) diag.push_back(0x40);
    diag.push_back(0x00);
    DiagnosticInfo d{};
    CHECK(decodeAll(diag, d, arena, limits) == UAPLEX_BadEncodingLimitsExceeded);
    limits.maxNestingDepth = 30;
    CHECK(decodeAll(diag, d, arena, limits) == UAPLEX_Good);

    // ExtensionObject bodies count too: a KeyValuePair whose value is a Variant holding
    // another KeyValuePair ExtensionObject, and so on.
    std::uint32_t kvp = ns0::KeyValuePair_Encoding_DefaultBinary;
    Bytes inner = bytes({0x06, 1, 0, 0, 0});  // innermost Variant: Int32
    for (int i = 0; i < 12; ++i) {
        Bytes body = bytes({0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF});  // QualifiedName key
        body.insert(body.end(), inner.begin(), inner.end());
        Bytes eo = bytes({0x16, 0x01, 0x00, int(kvp & 0xFF), int(kvp >> 8), 0x01});
        std::int32_t len = std::int32_t(body.size());
        append(eo, {len & 0xFF, (len >> 8) & 0xFF, 0, 0});
        eo.insert(eo.end(), body.begin(), body.end());
        inner = eo;
    }
    limits.maxNestingDepth = 64;
    CHECK(decodeAll(inner, v, arena, limits) == UAPLEX_Good);
    limits.maxNestingDepth = 20;
    CHECK(decodeAll(inner, v, arena, limits) == UAPLEX_BadEncodingLimitsExceeded);
}

TEST_CASE("truncation at every offset fails cleanly", "[limits]") {
    enc::Arena arena;
    Bytes full = readRequest(4);
    // Add a DataValue-rich part by also checking a WriteRequest-like Variant payload below.
    for (std::size_t n = 0; n < full.size(); ++n) {
        arena.reset();
        Bytes cut(full.begin(), full.begin() + std::ptrdiff_t(n));
        enc::DecodedMessage m = enc::decodeMessage(cut, arena, enc::DecodeLimits{});
        INFO("length " << n);
        CHECK(m.status == UAPLEX_BadDecodingError);
        CHECK(m.object == nullptr);
    }
    Bytes dv = bytes({0x3F, 0x98, 0x02, 0, 0, 0, 0x06, 0x07, 0, 0, 0, 0x0C, 0x01, 0,
                      0,    0,    'a',  0, 0, 0, 0x80, 1,    2, 3, 4, 5,    6,    7,
                      8,    9,    0,    1, 2, 3, 4,    5,    6, 7, 8, 9,    0});
    for (std::size_t n = 0; n < dv.size(); ++n) {
        DataValue d{};
        CHECK(decodeAll(Bytes(dv.begin(), dv.begin() + std::ptrdiff_t(n)), d, arena) ==
              UAPLEX_BadDecodingError);
    }
    DataValue d{};
    CHECK(decodeAll(dv, d, arena) == UAPLEX_Good);
}

TEST_CASE("framing errors", "[limits]") {
    enc::Arena arena;
    Bytes trailing = readRequest(1);
    trailing.push_back(0);
    CHECK(enc::decodeMessage(trailing, arena, enc::DecodeLimits{}).status ==
          UAPLEX_BadDecodingError);
    CHECK(enc::decodeMessage(bytes({0x01, 0x00, 0xFF, 0xFF}), arena, enc::DecodeLimits{}).status ==
          UAPLEX_BadDecodingError);  // no such encoding id
    CHECK(enc::decodeMessage(bytes({0x01, 0x03, 0x77, 0x02}), arena, enc::DecodeLimits{}).status ==
          UAPLEX_BadDecodingError);  // not namespace 0
    CHECK(enc::decodeMessage(Bytes{}, arena, enc::DecodeLimits{}).status ==
          UAPLEX_BadDecodingError);
}

TEST_CASE("writer size limit", "[limits]") {
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf, 10);
    encode(w, makeString("0123456"));  // 11 bytes
    CHECK(w.status() == UAPLEX_BadEncodingLimitsExceeded);
    enc::ByteBuffer ok;
    enc::BinaryWriter w2(ok, 11);
    encode(w2, makeString("0123456"));
    CHECK(w2.ok());
    CHECK(ok.size() == 11);
}

TEST_CASE("mutated messages decode or fail cleanly, and what decodes re-encodes", "[limits]") {
    std::vector<Bytes> seeds = {
        test::encodeMessageBytes(test::ReadRequestFixture(3).request),
        test::encodeMessageBytes(test::WriteRequestFixture(3).request),
        test::encodeMessageBytes(test::PublishResponseFixture(3).response),
        test::encodeMessageBytes(test::ReadResponseFixture(3).response),
    };
    enc::Arena arena;
    enc::ByteBuffer out;
    std::uint64_t state = 0x243F6A8885A308D3ull;
    auto next = [&state] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    std::size_t decoded = 0;
    for (const Bytes& seed : seeds) {
        for (int round = 0; round < 3000; ++round) {
            Bytes m = seed;
            int flips = 1 + int(next() % 4);
            for (int i = 0; i < flips; ++i) m[next() % m.size()] = std::uint8_t(next());
            arena.reset();
            enc::DecodedMessage d = enc::decodeMessage(m, arena, enc::DecodeLimits{});
            if (d.status != UAPLEX_Good) {
                REQUIRE((d.status == UAPLEX_BadDecodingError ||
                         d.status == UAPLEX_BadEncodingLimitsExceeded));
                continue;
            }
            ++decoded;
            out.clear();
            enc::BinaryWriter w(out);
            REQUIRE(enc::encodeMessage(w, *d.type, d.object) == UAPLEX_Good);
            // What we write is canonical: decoding and writing it again is a fixed point.
            Bytes once = out.toVector();
            enc::DecodedMessage again = enc::decodeMessage(once, arena, enc::DecodeLimits{});
            REQUIRE(again.status == UAPLEX_Good);
            out.clear();
            enc::BinaryWriter w2(out);
            REQUIRE(enc::encodeMessage(w2, *again.type, again.object) == UAPLEX_Good);
            REQUIRE(out.toVector() == once);
        }
    }
    CHECK(decoded > 0);
}
