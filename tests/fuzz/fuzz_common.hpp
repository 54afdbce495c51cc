// SPDX-License-Identifier: Apache-2.0
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

// Limits small enough that a short input reaches every one of them.
inline enc::DecodeLimits tightLimits(std::uint32_t maxNestingDepth) {
    enc::DecodeLimits l;
    l.maxStringLength = 64;
    l.maxByteStringLength = 64;
    l.maxArrayLength = 16;
    l.maxNestingDepth = maxNestingDepth;
    l.maxArenaBytes = 64u << 10;
    return l;
}

// The descriptor of built-in type `id` (1..UAPLEX_TYPE_MAX).
inline const enc::DataType& builtinDataType(std::uint32_t id) {
    const enc::DataType* t = enc::findDataType(uaplex_builtin_name(id));
    if (t == nullptr || t->kind != enc::TypeKind::BuiltIn || t->builtinId != id)
        violated("built-in descriptor missing or wrong");
    return *t;
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

// A decoder reports failures only as these two codes (issue: decode limits).
inline void checkFailureStatus(std::uint32_t status) {
    if (status != UAPLEX_Good && status != UAPLEX_BadDecodingError &&
        status != UAPLEX_BadEncodingLimitsExceeded)
        violated("unexpected decode status", status);
}

// An arena whose reused blocks hold garbage: decoding must not depend on zeroed memory.
inline enc::Arena& dirtyArena() {
    static enc::Arena arena;
    arena.reset();
    while (arena.used() + 256 <= arena.reservedBytes()) {
        void* p = arena.allocate(256, 1);
        if (p == nullptr) break;
        std::memset(p, 0xA5, 256);
    }
    arena.reset();
    return arena;
}

}  // namespace uaplex::fuzz
