// SPDX-License-Identifier: Apache-2.0
// Helpers shared by the encoding tests.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <initializer_list>
#include <vector>

namespace uaplex::test {

using Bytes = std::vector<std::uint8_t>;

inline Bytes bytes(std::initializer_list<int> list) {
    Bytes out;
    for (int b : list) out.push_back(static_cast<std::uint8_t>(b));
    return out;
}

inline void append(Bytes& out, std::initializer_list<int> list) {
    for (int b : list) out.push_back(static_cast<std::uint8_t>(b));
}

// Decodes a whole T from `in`; returns the reader status.
template <class T>
uaplex_status decodeAll(const Bytes& in, T& out, enc::Arena& arena,
                        const enc::DecodeLimits& limits = enc::DecodeLimits{}) {
    enc::BinaryReader r(std::span<const std::uint8_t>(in), arena, limits);
    decode(r, out);
    if (r.ok() && r.remaining() != 0) return UAPLEX_BadDecodingError;
    return r.status();
}

template <class T>
Bytes encodeToBytes(const T& v) {
    enc::ByteBuffer buf;
    enc::BinaryWriter w(buf);
    encode(w, v);
    return buf.toVector();
}

}  // namespace uaplex::test
