// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the built-in type decoders, Variant, DataValue, ExtensionObject and
// DiagnosticInfo included. Input byte 0 selects the type (low five bits, modulo 25) and,
// with its top bit, tight decode limits; the rest is the encoded value.
#include "fuzz_common.hpp"

using namespace uaplex;
using uaplex::fuzz::violated;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    static const enc::DecodeLimits defaults;
    static const enc::DecodeLimits tight = fuzz::tightLimits(4);
    const std::uint32_t id = (data[0] & 0x1F) % UAPLEX_TYPE_MAX + 1;
    static const enc::DataType* types[UAPLEX_TYPE_MAX + 1] = {};
    if (types[id] == nullptr) types[id] = &fuzz::builtinDataType(id);
    const enc::DataType& type = *types[id];
    const enc::DecodeLimits& limits = (data[0] & 0x80) ? tight : defaults;
    std::span<const std::uint8_t> input(data + 1, size - 1);

    enc::Arena arena;
    void* value = nullptr;
    uaplex_status st = enc::decodeValue(input, arena, limits, type, &value);
    fuzz::checkArenaBound(arena, size);
    if (&limits == &tight && arena.used() > tight.maxArenaBytes + 4096)
        violated("arena use beyond maxArenaBytes");
    fuzz::checkFailureStatus(st);
    if (st != UAPLEX_Good) return 0;
    if (value == nullptr) violated("success without a value");

    enc::ByteBuffer once;
    enc::BinaryWriter w1(once);
    enc::encode(w1, type, value);
    if (!w1.ok()) violated("a decoded value does not encode", w1.status());

    // The same input decoded into recycled, garbage-filled arena memory gives the same value.
    void* fromDirty = nullptr;
    st = enc::decodeValue(input, fuzz::dirtyArena(), limits, type, &fromDirty);
    if (st != UAPLEX_Good) violated("decoding depends on the arena's previous contents", st);
    enc::ByteBuffer dirtyBytes;
    enc::BinaryWriter wd(dirtyBytes);
    enc::encode(wd, type, fromDirty);
    if (!wd.ok() || !fuzz::sameBytes(once, dirtyBytes))
        violated("decoding into a recycled arena gives another value");

    // The canonical re-encoding must decode under the default limits and be stable.
    enc::Arena arena2;
    void* again = nullptr;
    st = enc::decodeValue(once.span(), arena2, defaults, type, &again);
    if (st != UAPLEX_Good) violated("a re-encoded value does not decode", st);
    enc::ByteBuffer twice;
    enc::BinaryWriter w2(twice);
    enc::encode(w2, type, again);
    if (!w2.ok()) violated("the second encoding failed", w2.status());
    if (!fuzz::sameBytes(once, twice))
        violated("encode(decode(encode(decode(x)))) != encode(decode(x))");
    return 0;
}
