// Shared checks of the libFuzzer targets: what decoded must re-encode, decode again and
// re-encode to the same bytes; any violation aborts, which libFuzzer reports as a crash.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace uaplex::fuzz {

[[noreturn]] inline void violated(const char* what, std::uint32_t status = 0) {
    std::fprintf(stderr, "uaplex fuzz check failed: %s (status 0x%08X)\n", what, status);
    std::abort();
}

inline bool sameBytes(const enc::ByteBuffer& a, const enc::ByteBuffer& b) {
    return a.size() == b.size() &&
           (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

// The arena may hold what the input can justify, not more: a generous bound that only an
// amplification bug (a few bytes turning into megabytes) exceeds.
inline void checkArenaBound(const enc::Arena& arena, std::size_t inputSize) {
    if (arena.used() > inputSize * 1024 + (1u << 20))
        violated("arena use out of proportion to input");
}

}  // namespace uaplex::fuzz
