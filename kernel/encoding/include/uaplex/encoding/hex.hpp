// SPDX-License-Identifier: Apache-2.0
// Bytes as hexadecimal text: the one encoder behind thumbprints, password hashes, session
// keys and temporary file names, so they cannot drift apart in case or digit order; and the
// one digit decoder behind password hashes, JSON \u escapes and Guid strings.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace uaplex::enc {

enum class HexCase : std::uint8_t { Lower, Upper };

// The digit of the nibble `v` (0-15).
constexpr char hexDigit(unsigned v, HexCase c = HexCase::Lower) noexcept {
    return (c == HexCase::Upper ? "0123456789ABCDEF" : "0123456789abcdef")[v & 15];
}

// Appends two digits per byte, high nibble first.
inline void appendHex(std::string& out, std::span<const std::uint8_t> bytes,
                      HexCase c = HexCase::Lower) {
    out.reserve(out.size() + 2 * bytes.size());
    for (std::uint8_t b : bytes) {
        out += hexDigit(b >> 4, c);
        out += hexDigit(b, c);
    }
}

// The value of the hex digit `c` (either case), or -1.
constexpr int hexValue(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Exactly 2 x out.size() digits of `text` into `out`, high nibble first; false otherwise.
inline bool fromHex(std::string_view text, std::span<std::uint8_t> out) noexcept {
    if (text.size() != 2 * out.size()) return false;
    for (std::size_t i = 0; i < out.size(); ++i) {
        int hi = hexValue(text[2 * i]), lo = hexValue(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = std::uint8_t(hi << 4 | lo);
    }
    return true;
}

inline std::string toHex(std::span<const std::uint8_t> bytes, HexCase c = HexCase::Lower) {
    std::string out;
    appendHex(out, bytes, c);
    return out;
}

}  // namespace uaplex::enc
