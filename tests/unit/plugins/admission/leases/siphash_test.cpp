// SPDX-License-Identifier: Apache-2.0
// SipHash-2-4 as the leases provider keys owner hashes: the reference vectors, keying and
// the spread of hashes over similar inputs (peer addresses that differ in one digit).
#include <catch2/catch.hpp>

#include <bit>
#include <cstdint>
#include <set>
#include <string>

#include "siphash.hpp"

using namespace uaplex::leases;

namespace {
SipKey referenceKey() {
    std::uint8_t b[16];
    for (int i = 0; i < 16; ++i) b[i] = std::uint8_t(i);
    return SipKey::fromBytes(b);
}
}  // namespace

TEST_CASE("SipHash-2-4 gives the reference vectors (key 00..0f)") {
    SipKey k = referenceKey();
    CHECK(siphash24(k, "", 0) == 0x726fdb47dd0e0e31ull);
    std::uint8_t msg[64];
    for (int i = 0; i < 64; ++i) msg[i] = std::uint8_t(i);
    CHECK(siphash24(k, msg, 15) == 0xa129ca6149be45e5ull);
    // 128-bit variant, empty message: a3817f04ba25a8e6 6df67214c7550293 as bytes.
    auto e = siphash24_128(k, "", 0);
    CHECK(e[0] == 0xe6a825ba047f81a3ull);
    CHECK(e[1] == 0x930255c71472f66dull);
    // Computed with an independent implementation of the same algorithm.
    CHECK(siphash24(k, "127.0.0.1", 9) == 0x285ca5c64e6446a0ull);
    auto p = siphash24_128(k, "127.0.0.1", 9);
    CHECK(p[0] == 0x78b5884435250b44ull);
    CHECK(p[1] == 0xa1c3b2b0b9b7f208ull);
    auto l = siphash24_128(k, msg, 64);
    CHECK(l[0] == 0x3fcdd4c07d07af1eull);
    CHECK(l[1] == 0x4ba75836384dad8cull);
}

TEST_CASE("SipHash depends on the key and on every byte and the length") {
    SipKey k = referenceKey();
    SipKey other = k;
    other.k1 ^= 1;  // one key bit
    const std::string a = "user:0123456789abcdef";
    CHECK(siphash24(k, a.data(), a.size()) != siphash24(other, a.data(), a.size()));
    CHECK(siphash24_128(k, a.data(), a.size()) != siphash24_128(other, a.data(), a.size()));
    // Trailing zero bytes change the hash (the length is absorbed).
    const std::uint8_t zeros[9] = {};
    std::set<std::uint64_t> byLength;
    for (std::size_t n = 0; n <= 9; ++n) byLength.insert(siphash24(k, zeros, n));
    CHECK(byLength.size() == 10);
    // Flipping any one input bit flips about half of the output bits.
    std::string m = "::ffff:192.168.100.200";
    auto base = siphash24_128(k, m.data(), m.size());
    int total = 0, flips = 0;
    for (std::size_t i = 0; i < m.size(); ++i)
        for (int bit = 0; bit < 8; ++bit) {
            std::string x = m;
            x[i] = char(x[i] ^ (1 << bit));
            auto h = siphash24_128(k, x.data(), x.size());
            int d = std::popcount(h[0] ^ base[0]) + std::popcount(h[1] ^ base[1]);
            CHECK(d > 20);  // never close to the original
            total += d;
            ++flips;
        }
    double mean = double(total) / flips;
    CHECK(mean > 58);
    CHECK(mean < 70);
}

TEST_CASE("SipHash spreads similar keys evenly over buckets") {
    SipKey k = referenceKey();
    constexpr int kBuckets = 64, kKeys = 64 * 200;
    int counts[kBuckets] = {};
    std::set<std::uint64_t> seen;
    for (int i = 0; i < kKeys; ++i) {
        std::string peer = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256);
        std::uint64_t h = siphash24(k, peer.data(), peer.size());
        seen.insert(h);
        ++counts[h % kBuckets];
    }
    CHECK(seen.size() == std::size_t(kKeys));
    // 200 expected per bucket; a chi-square over 63 degrees of freedom stays far below 130.
    double chi = 0;
    for (int c : counts) chi += double(c - 200) * double(c - 200) / 200.0;
    CHECK(chi < 130);
}
