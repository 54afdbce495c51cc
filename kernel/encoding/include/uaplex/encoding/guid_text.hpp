// SPDX-License-Identifier: Apache-2.0
// A Guid as text (Part 6 5.1.3: "XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX"): the one formatter
// behind JSON, event-filter operands, audit records and the session listings.
#pragma once

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include <uaplex/encoding/builtin.hpp>
#include <uaplex/encoding/hex.hpp>

namespace uaplex::enc {

inline constexpr std::size_t kGuidTextSize = 36;

// Writes the 36 characters into `out` (no terminator), without allocating.
inline void formatGuid(const ua::Guid& g, std::span<char, kGuidTextSize> out,
                       HexCase c = HexCase::Upper) noexcept {
    std::size_t i = 0;
    auto put = [&](std::uint64_t v, int digits) {
        for (int d = digits - 1; d >= 0; --d) out[i++] = hexDigit(unsigned(v >> (4 * d)), c);
    };
    put(g.data1, 8);
    out[i++] = '-';
    put(g.data2, 4);
    out[i++] = '-';
    put(g.data3, 4);
    out[i++] = '-';
    put(g.data4[0], 2);
    put(g.data4[1], 2);
    out[i++] = '-';
    for (int k = 2; k < 8; ++k) put(g.data4[k], 2);
}

inline std::string guidText(const ua::Guid& g, HexCase c = HexCase::Upper) {
    std::array<char, kGuidTextSize> buf;
    formatGuid(g, buf, c);
    return std::string(buf.data(), buf.size());
}

}  // namespace uaplex::enc
