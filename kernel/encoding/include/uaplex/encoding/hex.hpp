// SPDX-License-Identifier: Apache-2.0
// Bytes as hexadecimal text: the one encoder behind thumbprints, password hashes, session
// keys and temporary file names, so they cannot drift apart in case or digit order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

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

inline std::string toHex(std::span<const std::uint8_t> bytes, HexCase c = HexCase::Lower) {
    std::string out;
    appendHex(out, bytes, c);
    return out;
}

}  // namespace uaplex::enc
