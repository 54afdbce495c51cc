// SPDX-License-Identifier: Apache-2.0
// The UADP message mapping (Part 14 7.2.4) against byte vectors written out by hand from the
// spec's tables: NetworkMessage header (7.2.4.4.2), GroupHeader, PayloadHeader, extended
// header, DataSetMessage header (7.2.4.5.4), key and delta frame data (7.2.4.5.5-7), and the
// decoder on the same bytes and on hostile ones.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include <uaplex/encoding/uadp.hpp>

using namespace uaplex;
namespace uadp = uaplex::enc::uadp;

namespace {

std::vector<std::uint8_t> bytesOf(const enc::ByteBuffer& b) {
    return b.toVector();
}

constexpr std::int64_t kT = 0x0102030405060708;

// One field of Part 14's tables per line.
// clang-format off
// A key frame, Variant fields, every header the default masks name.
const std::vector<std::uint8_t> kKeyFrame = {
    0xF1,  // UADPVersion 1 | PublisherId | GroupHeader | PayloadHeader | ExtendedFlags1
    0x04,  // ExtendedFlags1: PublisherId type String (4)
    0x02, 0x00, 0x00, 0x00, 'P', '1',  // PublisherId: String "P1"
    0x0F,        // GroupFlags: WriterGroupId | GroupVersion | NetworkMessageNumber | SequenceNumber
    0x01, 0x00,  // WriterGroupId 1
    0x44, 0x33, 0x22, 0x11,  // GroupVersion 0x11223344
    0x01, 0x00,              // NetworkMessageNumber 1
    0x05, 0x00,              // SequenceNumber 5
    0x01,                    // PayloadHeader Count 1
    0x07, 0x00,              // DataSetWriterIds[0] 7
    // DataSetMessage header
    0xF9,        // DataSetFlags1: valid | Variant (00) | SequenceNumber | Status | MajorVersion |
                 // MinorVersion | DataSetFlags2
    0x10,        // DataSetFlags2: Data Key Frame (0000) | Timestamp
    0x2A, 0x00,  // DataSetMessageSequenceNumber 42
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // Timestamp
    0x00, 0x00,                                      // Status (Good)
    0xD0, 0xC0, 0xB0, 0xA0,                          // ConfigurationVersion MajorVersion
    0x04, 0x03, 0x02, 0x01,                          // ConfigurationVersion MinorVersion
    // Key frame data
    0x02, 0x00,                                            // FieldCount 2
    0x06, 0x05, 0x00, 0x00, 0x00,                          // Variant Int32 5
    0x0B, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x40,  // Variant Double 2.5
};

// A delta frame, DataValue fields (StatusCode | SourceTimestamp), no GroupHeader, a
// NetworkMessage Timestamp.
const std::vector<std::uint8_t> kDeltaFrame = {
    0xD1,  // UADPVersion 1 | PublisherId | PayloadHeader | ExtendedFlags1
    0x24,  // ExtendedFlags1: PublisherId type String (4) | Timestamp
    0x02, 0x00, 0x00, 0x00, 'P', '1',                // PublisherId: String "P1"
    0x01,                                            // PayloadHeader Count 1
    0x07, 0x00,                                      // DataSetWriterIds[0] 7
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // extended header: Timestamp
    // DataSetMessage header
    0x8D,        // DataSetFlags1: valid | DataValue (10) | SequenceNumber | DataSetFlags2
    0x01,        // DataSetFlags2: Data Delta Frame (0001)
    0x03, 0x00,  // DataSetMessageSequenceNumber 3
    // Delta frame data
    0x01, 0x00,                    // FieldCount 1
    0x01, 0x00,                    // FieldIndex 1
    0x07,                          // DataValue mask: Value | StatusCode | SourceTimestamp
    0x06, 0xFF, 0xFF, 0xFF, 0xFF,  // Value: Variant Int32 -1
    0x00, 0x00, 0x00, 0x40,        // StatusCode Uncertain (0x40000000)
    0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,  // SourceTimestamp
};

// clang-format on

ua::DataValue good(const ua::Variant& v) {
    ua::DataValue d{};
    d.mask = UAPLEX_DATAVALUE_VALUE;
    d.value = v;
    return d;
}

}  // namespace

TEST_CASE("UADP: a key frame with Variant fields, byte by byte") {
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    uadp::NetworkHeader nh;
    nh.contentMask = 0x7F;  // PublisherId .. PayloadHeader
    nh.publisherId = "P1";
    nh.writerGroupId = 1;
    nh.groupVersion = 0x11223344;
    nh.networkMessageNumber = 1;
    nh.sequenceNumber = 5;
    uadp::writeNetworkHeader(w, nh, 7);
    uadp::DataSetHeader dh;
    dh.contentMask = 0x3D;  // Timestamp | Status | MajorVersion | MinorVersion | SequenceNumber
    dh.sequenceNumber = 42;
    dh.timestamp = kT;
    dh.majorVersion = 0xA0B0C0D0;
    dh.minorVersion = 0x01020304;
    const std::size_t at = uadp::writeDataSetHeader(w, dh);
    uadp::writeField(w, 0, good(ua::variantInt32(5)));
    uadp::writeField(w, 0, good(ua::variantDouble(2.5)));
    uadp::patchFieldCount(w, at, 2);
    REQUIRE(w.ok());
    CHECK(bytesOf(buf) == kKeyFrame);
}

TEST_CASE("UADP: a delta frame with DataValue fields, byte by byte") {
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    uadp::NetworkHeader nh;
    nh.contentMask = uadp::kNmPublisherId | uadp::kNmPayloadHeader | uadp::kNmTimestamp;
    nh.publisherId = "P1";
    nh.timestamp = kT;
    uadp::writeNetworkHeader(w, nh, 7);
    uadp::DataSetHeader dh;
    dh.contentMask = uadp::kDsSequenceNumber;
    dh.fieldContentMask = uadp::kFieldStatusCode | uadp::kFieldSourceTimestamp;
    dh.type = uadp::MessageType::DeltaFrame;
    dh.sequenceNumber = 3;
    const std::size_t at = uadp::writeDataSetHeader(w, dh);
    encode(w, std::uint16_t(1));  // FieldIndex
    ua::DataValue v = good(ua::variantInt32(-1));
    v.mask |= UAPLEX_DATAVALUE_STATUS | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP |
              UAPLEX_DATAVALUE_SERVER_TIMESTAMP;  // the server timestamp is not asked for
    v.status = 0x40000000u;
    v.source_timestamp = kT;
    v.server_timestamp = 99;
    uadp::writeField(w, dh.fieldContentMask, v);
    uadp::patchFieldCount(w, at, 1);
    REQUIRE(w.ok());
    CHECK(bytesOf(buf) == kDeltaFrame);
}

TEST_CASE("UADP: a Bad value in the Variant field encoding is its StatusCode") {
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    ua::DataValue v = good(ua::variantInt32(5));
    v.mask |= UAPLEX_DATAVALUE_STATUS;
    v.status = UAPLEX_BadNoCommunication;  // 0x80310000
    uadp::writeField(w, 0, v);
    // Variant of type StatusCode (19), then the code.
    const std::vector<std::uint8_t> want = {0x13, 0x00, 0x00, 0x31, 0x80};
    CHECK(bytesOf(buf) == want);
}

TEST_CASE("UADP: the decoder reads the hand-written messages back") {
    enc::Arena arena;
    enc::DecodeLimits limits;
    uadp::NetworkMessage nm;
    REQUIRE(uadp::decodeNetworkMessage(kKeyFrame, arena, limits, nm) == UAPLEX_Good);
    CHECK(nm.publisherIdType == 4);
    CHECK(nm.publisherIdString == "P1");
    CHECK(nm.writerGroupId == 1);
    CHECK(nm.groupVersion == 0x11223344);
    CHECK(nm.networkMessageNumber == 1);
    CHECK(nm.sequenceNumber == 5);
    REQUIRE(nm.count == 1);
    const uadp::DataSetMessage& m = nm.messages[0];
    CHECK(m.dataSetWriterId == 7);
    CHECK(m.type == uadp::MessageType::KeyFrame);
    CHECK(m.sequenceNumber == 42);
    CHECK(m.timestamp == kT);
    CHECK(m.majorVersion == 0xA0B0C0D0);
    CHECK(m.minorVersion == 0x01020304);
    REQUIRE(m.fieldCount == 2);
    CHECK(m.values[0].value.value.int32 == 5);
    CHECK(m.values[1].value.value.double_ == 2.5);

    arena.reset();
    REQUIRE(uadp::decodeNetworkMessage(kDeltaFrame, arena, limits, nm) == UAPLEX_Good);
    CHECK_FALSE(nm.hasGroupHeader);
    CHECK(nm.timestamp == kT);
    REQUIRE(nm.count == 1);
    const uadp::DataSetMessage& d = nm.messages[0];
    CHECK(d.type == uadp::MessageType::DeltaFrame);
    CHECK(d.encoding == uadp::FieldEncoding::DataValue);
    REQUIRE(d.fieldCount == 1);
    CHECK(d.fieldIndexes[0] == 1);
    CHECK(d.values[0].value.value.int32 == -1);
    CHECK(d.values[0].status == 0x40000000u);
    CHECK(d.values[0].source_timestamp == kT);
}

TEST_CASE("UADP: truncated, padded and hostile messages are refused, never read beyond") {
    enc::Arena arena;
    enc::DecodeLimits limits;
    uadp::NetworkMessage nm;
    for (const auto* msg : {&kKeyFrame, &kDeltaFrame}) {
        for (std::size_t n = 0; n < msg->size(); ++n) {
            arena.reset();
            // A copy of exactly n bytes: a sanitizer build sees any read past it.
            std::vector<std::uint8_t> cut(msg->begin(), msg->begin() + std::ptrdiff_t(n));
            INFO("length " << n);
            CHECK(uadp::decodeNetworkMessage(cut, arena, limits, nm) != UAPLEX_Good);
        }
        std::vector<std::uint8_t> padded = *msg;
        padded.push_back(0);
        arena.reset();
        CHECK(uadp::decodeNetworkMessage(padded, arena, limits, nm) == UAPLEX_BadDecodingError);
    }
    // A FieldCount of 65535 with two bytes behind it: refused before allocating.
    std::vector<std::uint8_t> many = {0x01, 0x01, 0xFF, 0xFF, 0x00, 0x00};
    arena.reset();
    CHECK(uadp::decodeNetworkMessage(many, arena, limits, nm) == UAPLEX_BadDecodingError);
    CHECK(arena.used() < 1024);
    // Security enabled, an unknown UADPVersion, a discovery message: not supported.
    arena.reset();
    CHECK(uadp::decodeNetworkMessage(std::vector<std::uint8_t>{0x81, 0x10, 0x01}, arena, limits,
                                     nm) == UAPLEX_BadNotSupported);
    CHECK(uadp::decodeNetworkMessage(std::vector<std::uint8_t>{0x02, 0x01}, arena, limits, nm) ==
          UAPLEX_BadNotSupported);
    CHECK(uadp::decodeNetworkMessage(std::vector<std::uint8_t>{0x81, 0x80, 0x04, 0x01}, arena,
                                     limits, nm) == UAPLEX_BadNotSupported);
    // Reserved Field Encoding 11.
    CHECK(uadp::decodeNetworkMessage(std::vector<std::uint8_t>{0x01, 0x07, 0x00, 0x00}, arena,
                                     limits, nm) == UAPLEX_BadDecodingError);
    // A PayloadHeader Count of 0.
    CHECK(uadp::decodeNetworkMessage(std::vector<std::uint8_t>{0x41, 0x00}, arena, limits, nm) ==
          UAPLEX_BadDecodingError);
    // Two DataSetMessages whose Sizes exceed the input.
    CHECK(uadp::decodeNetworkMessage(std::vector<std::uint8_t>{0x41, 0x02, 0x01, 0x00, 0x02, 0x00,
                                                               0xFF, 0x00, 0xFF, 0x00, 0x01},
                                     arena, limits, nm) == UAPLEX_BadDecodingError);
}

TEST_CASE("UADP: two DataSetMessages with their Sizes") {
    // clang-format off
    // Count 2, writers 1 and 2, Sizes 5 and 3: a key frame with one Byte field, a keep-alive.
    const std::vector<std::uint8_t> two = {
        0x41,              // UADPVersion 1 | PayloadHeader
        0x02,              // Count 2
        0x01, 0x00,        // DataSetWriterIds[0] 1
        0x02, 0x00,        // DataSetWriterIds[1] 2
        0x05, 0x00,        // Sizes[0] 5
        0x03, 0x00,        // Sizes[1] 3
        0x01,              // DataSetFlags1: valid, Variant
        0x01, 0x00,        // FieldCount 1
        0x03, 0x09,        // Variant Byte 9
        0x81,              // DataSetFlags1: valid | DataSetFlags2
        0x03,              // DataSetFlags2: Keep Alive
        0x00,              // (a keep-alive has no fields: one byte too many)
    };
    // clang-format on
    enc::Arena arena;
    enc::DecodeLimits limits;
    uadp::NetworkMessage nm;
    CHECK(uadp::decodeNetworkMessage(two, arena, limits, nm) == UAPLEX_BadDecodingError);
    std::vector<std::uint8_t> fixed = two;
    fixed[8] = 0x02;  // Sizes[1] 2
    fixed.pop_back();
    arena.reset();
    REQUIRE(uadp::decodeNetworkMessage(fixed, arena, limits, nm) == UAPLEX_Good);
    REQUIRE(nm.count == 2);
    CHECK(nm.messages[0].dataSetWriterId == 1);
    CHECK(nm.messages[0].values[0].value.value.byte == 9);
    CHECK(nm.messages[1].dataSetWriterId == 2);
    CHECK(nm.messages[1].type == uadp::MessageType::KeepAlive);
}
