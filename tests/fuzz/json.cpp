// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the JSON decoder. Input byte 0 selects what is decoded (low five bits
// modulo 26: a built-in type by id - 1, or 25 for a service message as decodeJsonMessage
// reads it) and, with bit 6, tight decode limits; the rest is the JSON text.
#include "fuzz_common.hpp"

using namespace uaplex;
using uaplex::fuzz::violated;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    static const enc::DecodeLimits defaults;
    static const enc::DecodeLimits tight = fuzz::tightLimits(6);
    // Below UAPLEX_TYPE_MAX: the built-in type with id index + 1; UAPLEX_TYPE_MAX: a message.
    const std::uint32_t index = (data[0] & 0x1F) % (UAPLEX_TYPE_MAX + 1);
    const enc::DecodeLimits& limits = (data[0] & 0x40) ? tight : defaults;
    std::span<const std::uint8_t> input(data + 1, size - 1);

    enc::Arena arena;
    const enc::DataType* type = nullptr;
    void* value = nullptr;
    uaplex_status st;
    if (index == UAPLEX_TYPE_MAX) {
        enc::DecodedMessage m = enc::decodeJsonMessage(input, arena, limits);
        st = m.status;
        type = m.type;
        value = m.object;
    } else {
        type = &fuzz::builtinDataType(index + 1);
        st = enc::decodeJson(input, arena, limits, *type, &value);
    }
    fuzz::checkArenaBound(arena, size);
    if (&limits == &tight && arena.used() > tight.maxArenaBytes + 4096)
        violated("arena use beyond maxArenaBytes");
    fuzz::checkFailureStatus(st);
    if (st != UAPLEX_Good) return 0;
    if (value == nullptr || type == nullptr) violated("success without a value");

    // What decoded must encode in both encodings, and JSON must be stable after one pass.
    enc::ByteBuffer binary;
    if (enc::encodeValue(binary, *type, value) != UAPLEX_Good)
        violated("a decoded value does not encode in binary");
    enc::ByteBuffer once;
    uaplex_status es = enc::encodeJson(once, *type, value);
    if (es != UAPLEX_Good) violated("a decoded value does not encode as JSON", es);
    enc::Arena arena2;
    void* again = nullptr;
    st = enc::decodeJson(once.span(), arena2, defaults, *type, &again);
    if (st != UAPLEX_Good) violated("a re-encoded value does not decode", st);
    enc::ByteBuffer twice;
    if (enc::encodeJson(twice, *type, again) != UAPLEX_Good) violated("the second encoding failed");
    if (!fuzz::sameBytes(once, twice))
        violated("encodeJson(decodeJson(encodeJson(decodeJson(x)))) differs");
    return 0;
}
