// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: the service message decoder (encoding NodeId + body) with the default
// limits. Whatever decodes must encode, decode again and encode to the same bytes.
#include "fuzz_common.hpp"

using namespace uaplex;
using uaplex::fuzz::violated;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const enc::DecodeLimits limits;
    enc::Arena arena;
    std::span<const std::uint8_t> input(data, size);
    enc::DecodedMessage first = enc::decodeMessage(input, arena, limits);
    fuzz::checkArenaBound(arena, size);
    fuzz::checkFailureStatus(first.status);
    if (first.status != UAPLEX_Good) return 0;
    if (first.type == nullptr || first.object == nullptr) violated("success without an object");

    enc::ByteBuffer once;
    enc::BinaryWriter w1(once);
    uaplex_status st = enc::encodeMessage(w1, *first.type, first.object);
    if (st != UAPLEX_Good) violated("a decoded message does not encode", st);

    // The same input decoded into recycled, garbage-filled arena memory gives the same value.
    enc::Arena& dirty = fuzz::dirtyArena();
    enc::DecodedMessage again = enc::decodeMessage(input, dirty, limits);
    if (again.status != UAPLEX_Good || again.type != first.type)
        violated("decoding depends on the arena's previous contents", again.status);
    enc::ByteBuffer fromDirty;
    enc::BinaryWriter wd(fromDirty);
    if (enc::encodeMessage(wd, *again.type, again.object) != UAPLEX_Good ||
        !fuzz::sameBytes(once, fromDirty))
        violated("decoding into a recycled arena gives another value");

    enc::Arena arena2;
    enc::DecodedMessage second = enc::decodeMessage(once.span(), arena2, limits);
    if (second.status != UAPLEX_Good)
        violated("a re-encoded message does not decode", second.status);
    if (second.type != first.type) violated("a re-encoded message decodes as another type");

    enc::ByteBuffer twice;
    enc::BinaryWriter w2(twice);
    st = enc::encodeMessage(w2, *second.type, second.object);
    if (st != UAPLEX_Good) violated("the second encoding failed", st);
    if (!fuzz::sameBytes(once, twice))
        violated("encode(decode(encode(decode(x)))) != encode(decode(x))");
    return 0;
}
