// SPDX-License-Identifier: Apache-2.0
// Test helpers: a ChunkOutput that records what a channel sends, and builders for OPN/MSG/CLO
// chunks as a client writes them.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstring>
#include <string>
#include <vector>

#include <uaplex/securechannel/secure_channel.hpp>

namespace uaplex::test {

struct FakeOutput final : securechannel::ChunkOutput {
    std::vector<std::vector<std::uint8_t>> sent;  // every chunk, in order
    uaplex_status failed = UAPLEX_Good;
    bool closed = false;
    bool wasOpened = false;
    int outstanding = 0;

    bool rent(std::uint32_t size, uaplex_buffer& out) noexcept override {
        out = uaplex_buffer{};
        out.data = new std::uint8_t[size];
        out.length = size;
        ++outstanding;
        return true;
    }
    void giveBack(uaplex_buffer& b) noexcept override {
        delete[] b.data;
        b.data = nullptr;
        --outstanding;
    }
    void send(uaplex_buffer* buffers, std::size_t count) noexcept override {
        for (std::size_t i = 0; i < count; ++i) {
            sent.emplace_back(buffers[i].data, buffers[i].data + buffers[i].used);
            giveBack(buffers[i]);
        }
    }
    void fail(uaplex_status status, std::string_view) noexcept override {
        failed = status;
        closed = true;
    }
    void close() noexcept override { closed = true; }
    void opened() noexcept override { wasOpened = true; }
};

inline void put32(std::vector<std::uint8_t>& v, std::size_t at, std::uint32_t x) {
    std::memcpy(v.data() + at, &x, 4);
}
inline std::uint32_t get32(const std::vector<std::uint8_t>& v, std::size_t at) {
    std::uint32_t x;
    std::memcpy(&x, v.data() + at, 4);
    return x;
}

inline std::vector<std::uint8_t> openChunk(
    std::uint32_t channelId, std::uint32_t seq, std::uint32_t requestId,
    ua::SecurityTokenRequestType type, std::uint32_t lifetime,
    std::string_view policy = securechannel::kSecurityPolicyNone,
    ua::MessageSecurityMode mode = ua::MessageSecurityMode::None_) {
    enc::ByteBuffer b;
    enc::BinaryWriter w(b);
    w.writeBytes("OPNF", 4);
    w.writeRaw<std::uint32_t>(0);
    w.writeRaw<std::uint32_t>(channelId);
    enc::encode(w, ua::makeString(policy));
    enc::encode(w, ua::nullByteString());
    enc::encode(w, ua::nullByteString());
    w.writeRaw<std::uint32_t>(seq);
    w.writeRaw<std::uint32_t>(requestId);
    ua::OpenSecureChannelRequest req{};
    req.requestHeader.authenticationToken = ua::numericNodeId(0, 0);
    req.requestHeader.requestHandle = 7;
    req.requestHeader.auditEntryId = ua::nullString();
    req.requestType = type;
    req.securityMode = mode;
    req.clientNonce = ua::nullByteString();
    req.requestedLifetime = lifetime;
    enc::encodeMessage(w, req);
    auto v = b.toVector();
    put32(v, 4, std::uint32_t(v.size()));
    return v;
}

inline std::vector<std::uint8_t> msgChunk(const char* type, std::uint32_t channelId,
                                          std::uint32_t tokenId, std::uint32_t seq,
                                          std::uint32_t requestId,
                                          const std::vector<std::uint8_t>& body) {
    std::vector<std::uint8_t> v(24 + body.size());
    std::memcpy(v.data(), type, 4);
    put32(v, 4, std::uint32_t(v.size()));
    put32(v, 8, channelId);
    put32(v, 12, tokenId);
    put32(v, 16, seq);
    put32(v, 20, requestId);
    if (!body.empty()) std::memcpy(v.data() + 24, body.data(), body.size());
    return v;
}

// The OpenSecureChannelResponse in a sent OPN chunk (policy None: fixed header layout).
inline ua::OpenSecureChannelResponse decodeOpenResponse(const std::vector<std::uint8_t>& chunk,
                                                        enc::Arena& arena) {
    enc::DecodeLimits limits;
    enc::BinaryReader r(std::span<const std::uint8_t>(chunk), arena, limits);
    r.take(12);
    ua::String uri;
    ua::ByteString a, b;
    enc::decode(r, uri);
    enc::decode(r, a);
    enc::decode(r, b);
    r.take(8);
    std::span<const std::uint8_t> rest(chunk.data() + r.position(), r.remaining());
    auto m = enc::decodeMessage(rest, arena, limits);
    ua::OpenSecureChannelResponse out{};
    if (m.status == UAPLEX_Good && m.type == enc::dataTypeOf<ua::OpenSecureChannelResponse>())
        out = *static_cast<ua::OpenSecureChannelResponse*>(m.object);
    return out;
}

}  // namespace uaplex::test
