// SPDX-License-Identifier: Apache-2.0
// OPC UA JSON encoding, reversible form (Part 6 1.04 5.4), for every built-in type and every
// described structure. Driven by the DataType descriptors, so no second code generator: the
// field names are the schema names (the descriptor's lowerCamelCase name, first letter upper).
//
// Decoding takes untrusted text under the same DecodeLimits as the binary decoder (string,
// byte string and array lengths, nesting depth, arena bytes, input size): malformed input is
// BadDecodingError, a limit is BadEncodingLimitsExceeded, never a crash or an unbounded
// allocation. Strings without escapes borrow from the input; everything else is in the arena.
#pragma once

#include <uaplex/encoding/datatype.hpp>
#include <uaplex/encoding/message.hpp>

#include <span>
#include <string_view>

namespace uaplex::enc {

// Appends the JSON text of one value of `type` to `out`; returns the status
// (BadEncodingError for a value that cannot be represented, BadEncodingLimitsExceeded past
// maxSize bytes).
uaplex_status encodeJson(ByteBuffer& out, const DataType& type, const void* value,
                         std::size_t maxSize = 64u << 20) noexcept;

// What a decode cost: the bytes of input it read (a structural pass over the text, then the
// decoding pass; values it skips or comes back to are not read again). Linear in the input
// size whatever the nesting.
struct JsonDecodeStats {
    std::uint64_t scannedBytes = 0;
};

// Decodes one JSON value of `type` from the whole of `input` (surrounding whitespace allowed)
// into arena storage; *out receives the object or nullptr.
uaplex_status decodeJson(std::span<const std::uint8_t> input, Arena& arena,
                         const DecodeLimits& limits, const DataType& type, void** out,
                         JsonDecodeStats* stats = nullptr) noexcept;

// A service message as JSON: an ExtensionObject {"TypeId":{"Id":n},"Body":{...}} whose TypeId
// is the message's DataType NodeId, its DefaultJson or its DefaultBinary encoding NodeId (all
// accepted; the encoder writes the DataType NodeId). Returns the decoded structure like
// decodeMessage.
DecodedMessage decodeJsonMessage(std::span<const std::uint8_t> input, Arena& arena,
                                 const DecodeLimits& limits,
                                 JsonDecodeStats* stats = nullptr) noexcept;
uaplex_status encodeJsonMessage(ByteBuffer& out, const DataType& type, const void* object,
                                std::size_t maxSize = 64u << 20) noexcept;

// A PubSub JSON NetworkMessage (Part 14 7.2.5.3): the header members a DataSetReader matches
// and its DataSetMessages (7.2.5.4) with their Payload fields as Variants (the reversible
// Variant field encoding). Views point into the input and the arena.
struct JsonDataSetMessage {
    bool hasDataSetWriterId = false, hasSequenceNumber = false;
    std::uint16_t dataSetWriterId = 0;
    std::uint32_t sequenceNumber = 0;
    std::string_view messageType;  // "ua-keyframe", "ua-deltaframe", ...; empty when absent
    std::uint32_t fieldCount = 0;
    const String* names = nullptr;  // fieldCount field names
    const Variant* values = nullptr;
};
struct JsonNetworkMessage {
    std::string_view messageType;  // "ua-data" for data
    bool hasPublisherId = false;
    std::string_view publisherId;  // a String PublisherId (7.2.5.3)
    std::uint32_t count = 0;
    const JsonDataSetMessage* messages = nullptr;
};
// Decodes a JSON NetworkMessage with its "Messages" array under `limits` and at most
// `maxMessages` DataSetMessages of at most `maxFields` fields each (beyond either:
// BadEncodingLimitsExceeded). Malformed text, a repeated member, a member of the wrong type or
// a Payload value that is not a Variant: BadDecodingError.
uaplex_status decodeJsonNetworkMessage(std::span<const std::uint8_t> input, Arena& arena,
                                       const DecodeLimits& limits, std::uint32_t maxMessages,
                                       std::uint32_t maxFields, JsonNetworkMessage& out) noexcept;

}  // namespace uaplex::enc
