// SPDX-License-Identifier: Apache-2.0
// SipHash-2-4 (Aumasson and Bernstein): a keyed hash, fast for short inputs. The leases
// provider hashes owner keys (peer addresses, user ids, certificates) with a key drawn at
// start, so the table holds no key material and its hashes cannot be predicted from outside.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace uaplex::leases {

struct SipKey {
    std::uint64_t k0 = 0, k1 = 0;
    // From 16 bytes, little-endian halves (the reference's byte order).
    static SipKey fromBytes(const std::uint8_t (&b)[16]) noexcept;
};

namespace detail {

constexpr std::uint64_t rotl(std::uint64_t x, int b) noexcept {
    return (x << b) | (x >> (64 - b));
}

inline std::uint64_t load64(const std::uint8_t* p) noexcept {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
    return v;
}

struct SipState {
    std::uint64_t v0, v1, v2, v3;
    void round() noexcept {
        v0 += v1;
        v1 = rotl(v1, 13);
        v1 ^= v0;
        v0 = rotl(v0, 32);
        v2 += v3;
        v3 = rotl(v3, 16);
        v3 ^= v2;
        v0 += v3;
        v3 = rotl(v3, 21);
        v3 ^= v0;
        v2 += v1;
        v1 = rotl(v1, 17);
        v1 ^= v2;
        v2 = rotl(v2, 32);
    }
    void compress(std::uint64_t m) noexcept {
        v3 ^= m;
        round();
        round();
        v0 ^= m;
    }
    std::uint64_t finish() noexcept {
        for (int i = 0; i < 4; ++i) round();
        return v0 ^ v1 ^ v2 ^ v3;
    }
};

// Initialises and absorbs the whole message; `wide` selects the 128-bit variant.
inline SipState absorb(const SipKey& key, const void* data, std::size_t len, bool wide) noexcept {
    SipState s{key.k0 ^ 0x736f6d6570736575ull, key.k1 ^ 0x646f72616e646f6dull,
               key.k0 ^ 0x6c7967656e657261ull, key.k1 ^ 0x7465646279746573ull};
    if (wide) s.v1 ^= 0xee;
    const auto* p = static_cast<const std::uint8_t*>(data);
    const std::size_t whole = len & ~std::size_t{7};
    for (std::size_t i = 0; i < whole; i += 8) s.compress(load64(p + i));
    // The last block: the remaining bytes and the length's low byte on top.
    std::uint64_t last = std::uint64_t(len & 0xff) << 56;
    for (std::size_t i = 0; i < (len & 7); ++i) last |= std::uint64_t(p[whole + i]) << (8 * i);
    s.compress(last);
    return s;
}

}  // namespace detail

inline SipKey SipKey::fromBytes(const std::uint8_t (&b)[16]) noexcept {
    return {detail::load64(b), detail::load64(b + 8)};
}

inline std::uint64_t siphash24(const SipKey& key, const void* data, std::size_t len) noexcept {
    auto s = detail::absorb(key, data, len, false);
    s.v2 ^= 0xff;
    return s.finish();
}

// SipHash-2-4 with a 128-bit result: {first, second} 64-bit words, as the reference emits
// them (each little-endian).
inline std::array<std::uint64_t, 2> siphash24_128(const SipKey& key, const void* data,
                                                  std::size_t len) noexcept {
    auto s = detail::absorb(key, data, len, true);
    s.v2 ^= 0xee;
    std::uint64_t a = s.finish();
    s.v1 ^= 0xdd;
    std::uint64_t b = s.finish();
    return {a, b};
}

}  // namespace uaplex::leases
