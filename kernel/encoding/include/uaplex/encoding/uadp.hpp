// SPDX-License-Identifier: Apache-2.0
// The UADP message mapping of OPC UA PubSub (Part 14 7.2.4): NetworkMessages with their
// header, GroupHeader, PayloadHeader and extended header, and DataSetMessages (key and delta
// frames, keep-alives) whose fields are Variants or DataValues in the binary encoding of
// Part 6 (binary.hpp: the same codecs as the services). Unsecured, unchunked messages with a
// DataSetMessage payload; RawData fields, promoted fields, security and chunks are refused
// by the decoder (BadNotSupported).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include <uaplex/encoding/binary.hpp>

namespace uaplex::enc::uadp {

// UadpNetworkMessageContentMask (Part 14 6.3.1.1.1)
inline constexpr std::uint32_t kNmPublisherId = 1u << 0, kNmGroupHeader = 1u << 1,
                               kNmWriterGroupId = 1u << 2, kNmGroupVersion = 1u << 3,
                               kNmNetworkMessageNumber = 1u << 4, kNmSequenceNumber = 1u << 5,
                               kNmPayloadHeader = 1u << 6, kNmTimestamp = 1u << 7,
                               kNmPicoSeconds = 1u << 8;
// The bits the encoder supports (DataSetClassId and PromotedFields are not).
inline constexpr std::uint32_t kNmSupported = 0x1FFu;
// UadpDataSetMessageContentMask (Part 14 6.3.1.3.2)
inline constexpr std::uint32_t kDsTimestamp = 1u << 0, kDsPicoSeconds = 1u << 1,
                               kDsStatus = 1u << 2, kDsMajorVersion = 1u << 3,
                               kDsMinorVersion = 1u << 4, kDsSequenceNumber = 1u << 5;
inline constexpr std::uint32_t kDsSupported = 0x3Fu;
// DataSetFieldContentMask (Part 14 6.2.4.2): 0 is the Variant field encoding, any of these
// the DataValue field encoding with those members; RawData (bit 5) is not supported.
inline constexpr std::uint32_t kFieldStatusCode = 1u << 0, kFieldSourceTimestamp = 1u << 1,
                               kFieldServerTimestamp = 1u << 2, kFieldSourcePicoSeconds = 1u << 3,
                               kFieldServerPicoSeconds = 1u << 4;
inline constexpr std::uint32_t kFieldSupported = 0x1Fu;

// Field Encoding of DataSetFlags1 bits 1-2.
enum class FieldEncoding : std::uint8_t { Variant = 0, RawData = 1, DataValue = 2 };
// UADP DataSetMessage type of DataSetFlags2 bits 0-3.
enum class MessageType : std::uint8_t { KeyFrame = 0, DeltaFrame = 1, Event = 2, KeepAlive = 3 };

// What the encoder writes into a NetworkMessage header (the contentMask decides which).
struct NetworkHeader {
    std::uint32_t contentMask = 0;  // UadpNetworkMessageContentMask
    std::string_view publisherId;   // a String PublisherId
    std::uint16_t writerGroupId = 0;
    std::uint32_t groupVersion = 0;  // VersionTime
    std::uint16_t networkMessageNumber = 1;
    std::uint16_t sequenceNumber = 0;
    std::int64_t timestamp = 0;  // DateTime
};

struct DataSetHeader {
    std::uint32_t contentMask = 0;       // UadpDataSetMessageContentMask
    std::uint32_t fieldContentMask = 0;  // DataSetFieldContentMask
    MessageType type = MessageType::KeyFrame;
    std::uint16_t sequenceNumber = 0;
    std::int64_t timestamp = 0;
    std::uint16_t status = 0;  // the high 16 bits of the DataSetMessage's StatusCode
    std::uint32_t majorVersion = 0, minorVersion = 0;
};

// Writes the NetworkMessage header, GroupHeader, PayloadHeader (one DataSetWriterId) and the
// extended header (Timestamp, PicoSeconds) of a NetworkMessage that carries one
// DataSetMessage; the DataSetMessage follows (no Sizes: Count is 1).
void writeNetworkHeader(BinaryWriter& w, const NetworkHeader& h, std::uint16_t dataSetWriterId);
// Writes a DataSetMessage header and a FieldCount placeholder; returns the placeholder's
// offset for patchFieldCount once the fields are written.
std::size_t writeDataSetHeader(BinaryWriter& w, const DataSetHeader& h);
void patchFieldCount(BinaryWriter& w, std::size_t offset, std::uint16_t count) noexcept;
// One field as the DataSetFieldContentMask asks: 0: the value as a Variant (a Bad status as
// the StatusCode in the Variant, Part 14 7.2.4.5.6); else a DataValue with the value and the
// members the mask names.
void writeField(BinaryWriter& w, std::uint32_t fieldContentMask, const ua::DataValue& v);

// A decoded DataSetMessage. Values point into the input and the arena.
struct DataSetMessage {
    std::uint16_t dataSetWriterId = 0;  // from the PayloadHeader; 0 without one
    bool valid = false;                 // DataSetFlags1 bit 0
    FieldEncoding encoding = FieldEncoding::Variant;
    MessageType type = MessageType::KeyFrame;
    bool hasSequenceNumber = false, hasTimestamp = false, hasStatus = false;
    bool hasMajorVersion = false, hasMinorVersion = false;
    std::uint16_t sequenceNumber = 0, picoSeconds = 0, status = 0;
    std::int64_t timestamp = 0;
    std::uint32_t majorVersion = 0, minorVersion = 0;
    std::uint16_t fieldCount = 0;
    const std::uint16_t* fieldIndexes = nullptr;  // delta frames: the index of each value
    const ua::DataValue* values = nullptr;        // fieldCount values (Variant fields: value only)
};

struct NetworkMessage {
    std::uint8_t version = 0;
    bool hasPublisherId = false;
    std::uint8_t publisherIdType = 0;  // 0 Byte, 1 UInt16, 2 UInt32, 3 UInt64, 4 String
    std::uint64_t publisherIdNumber = 0;
    std::string_view publisherIdString;
    bool hasGroupHeader = false, hasWriterGroupId = false, hasGroupVersion = false;
    bool hasNetworkMessageNumber = false, hasSequenceNumber = false, hasTimestamp = false;
    std::uint16_t writerGroupId = 0, networkMessageNumber = 0, sequenceNumber = 0;
    std::uint32_t groupVersion = 0;
    std::int64_t timestamp = 0;
    std::uint16_t picoSeconds = 0;
    std::uint8_t count = 0;
    DataSetMessage* messages = nullptr;  // `count` messages, in the arena
};

// Decodes a whole NetworkMessage. BadDecodingError for malformed or truncated input or
// trailing bytes, BadEncodingLimitsExceeded for a limit, BadNotSupported for what the mapping
// allows but this decoder does not (security, chunks, promoted fields, discovery messages,
// RawData fields, an unknown UADPVersion). Never reads beyond `input`.
uaplex_status decodeNetworkMessage(std::span<const std::uint8_t> input, Arena& arena,
                                   const DecodeLimits& limits, NetworkMessage& out) noexcept;

}  // namespace uaplex::enc::uadp
