// SPDX-License-Identifier: Apache-2.0
#include <uaplex/encoding/message.hpp>

#include <cstring>

namespace uaplex::enc {

DecodedMessage decodeMessage(std::span<const std::uint8_t> bytes, Arena& arena,
                             const DecodeLimits& limits) noexcept {
    BinaryReader r(bytes, arena, limits);
    // The type id is an ExpandedNodeId on the wire; service types are numeric ns0 ids.
    ExpandedNodeId id;
    decode(r, id);
    if (!r.ok()) return {r.status(), nullptr, nullptr};
    if (id.mask != 0 || id.node_id.namespace_index != 0 ||
        id.node_id.identifier_type != UAPLEX_ID_NUMERIC)
        return {UAPLEX_BadDecodingError, nullptr, nullptr};
    const DataType* type = findDataTypeByEncodingId(id.node_id.identifier.numeric);
    if (type == nullptr) return {UAPLEX_BadDecodingError, nullptr, nullptr};
    void* obj = arena.allocate(type->size, type->alignment);
    if (obj == nullptr || arena.used() > limits.maxArenaBytes)
        return {UAPLEX_BadEncodingLimitsExceeded, nullptr, nullptr};
    std::memset(obj, 0, type->size);
    type->decodeFn(r, obj);
    if (r.ok() && r.remaining() != 0) r.fail(UAPLEX_BadDecodingError);
    if (!r.ok()) return {r.status(), nullptr, nullptr};
    return {UAPLEX_Good, type, obj};
}

uaplex_status encodeMessage(BinaryWriter& writer, const DataType& type,
                            const void* object) noexcept {
    if (type.binaryEncodingId == 0) {
        writer.fail(UAPLEX_BadEncodingError);
        return writer.status();
    }
    encode(writer, numericNodeId(0, type.binaryEncodingId));
    type.encodeFn(writer, object);
    return writer.status();
}

}  // namespace uaplex::enc
