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
    if (first.status != UAPLEX_Good) return 0;
    if (first.type == nullptr || first.object == nullptr) violated("success without an object");

    enc::ByteBuffer once;
    enc::BinaryWriter w1(once);
    uaplex_status st = enc::encodeMessage(w1, *first.type, first.object);
    if (st != UAPLEX_Good) violated("a decoded message does not encode", st);

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
