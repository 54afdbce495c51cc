// SPDX-License-Identifier: Apache-2.0
// Service message framing: the encoding NodeId followed by the request/response body, as
// carried in the body of a MSG chunk (Part 6 7.1.2 / 6.7.2).
#pragma once

#include <uaplex/encoding/generated/types.hpp>

namespace uaplex::enc {

struct DecodedMessage {
    uaplex_status status;
    const DataType* type;  // descriptor of the decoded structure (nullptr on failure)
    void* object;          // the structure, in the arena
};

// Reads the binary-encoding NodeId, looks the type up and decodes the body into the arena.
// Unknown encodings and trailing bytes are BadDecodingError.
DecodedMessage decodeMessage(std::span<const std::uint8_t> bytes, Arena& arena,
                             const DecodeLimits& limits) noexcept;

// Writes type's binary-encoding NodeId and then the body.
uaplex_status encodeMessage(BinaryWriter& writer, const DataType& type,
                            const void* object) noexcept;

template <class T>
uaplex_status encodeMessage(BinaryWriter& writer, const T& message) noexcept {
    return encodeMessage(writer, *dataTypeOf<T>(), &message);
}

}  // namespace uaplex::enc
