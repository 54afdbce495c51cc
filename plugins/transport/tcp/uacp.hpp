// SPDX-License-Identifier: Apache-2.0
// UACP (Part 6 7.1): message headers, Hello parsing and negotiation, Acknowledge, Error and
// ReverseHello encoding. Pure functions over bytes, so the unit tests drive them without
// sockets.
#pragma once

#include <uaplex/statuscodes.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace uaplex::tcp {

constexpr std::size_t kHeaderSize = 8;
// Part 6 7.1.2.3: buffers below 8192 bytes are invalid; EndpointUrl is at most 4096 bytes.
constexpr std::uint32_t kMinBufferSize = 8192;
constexpr std::size_t kMaxEndpointUrlLength = 4096;
// Before Hello only a Hello is read, and no Hello legitimately needs more than this (header,
// five UInt32 fields and the URL): a larger claim is refused before anything is allocated.
constexpr std::uint32_t kMaxHelloSize = 8192;
constexpr std::uint32_t kProtocolVersion = 0;

enum class MessageType : std::uint8_t {
    Invalid,
    Hello,
    Acknowledge,
    Error,
    ReverseHello,
    Open,
    Message,
    Close
};

struct Header {
    MessageType type = MessageType::Invalid;
    char chunk = 0;  // 'F', 'C' or 'A'
    std::uint32_t size = 0;
};

inline std::uint32_t readU32(const std::uint8_t* p) noexcept {
    std::uint32_t v;
    std::memcpy(&v, p, 4);
    return v;  // little-endian hosts only, as the encoder
}
inline void writeU32(std::uint8_t* p, std::uint32_t v) noexcept {
    std::memcpy(p, &v, 4);
}

inline Header parseHeader(const std::uint8_t* p) noexcept {
    Header h;
    std::string_view t(reinterpret_cast<const char*>(p), 3);
    if (t == "HEL")
        h.type = MessageType::Hello;
    else if (t == "ACK")
        h.type = MessageType::Acknowledge;
    else if (t == "ERR")
        h.type = MessageType::Error;
    else if (t == "RHE")
        h.type = MessageType::ReverseHello;
    else if (t == "OPN")
        h.type = MessageType::Open;
    else if (t == "MSG")
        h.type = MessageType::Message;
    else if (t == "CLO")
        h.type = MessageType::Close;
    h.chunk = static_cast<char>(p[3]);
    h.size = readU32(p + 4);
    return h;
}

// What the server does with a header, given the connection's state. `limit` is the
// negotiated ReceiveBufferSize once a Hello was acknowledged.
struct HeaderCheck {
    uaplex_status status = UAPLEX_Good;  // Bad: send ERR with it and close
};

inline uaplex_status checkHeader(const Header& h, bool helloDone, std::uint32_t limit) noexcept {
    if (h.size < kHeaderSize) return UAPLEX_BadTcpMessageTypeInvalid;
    if (!helloDone) {
        if (h.type != MessageType::Hello) return UAPLEX_BadTcpMessageTypeInvalid;
        if (h.chunk != 'F') return UAPLEX_BadTcpMessageTypeInvalid;
        if (h.size > kMaxHelloSize) return UAPLEX_BadTcpMessageTooLarge;
        return UAPLEX_Good;
    }
    switch (h.type) {
        case MessageType::Open:
        case MessageType::Close:
            if (h.chunk != 'F') return UAPLEX_BadTcpMessageTypeInvalid;
            break;
        case MessageType::Message:
            if (h.chunk != 'F' && h.chunk != 'C' && h.chunk != 'A')
                return UAPLEX_BadTcpMessageTypeInvalid;
            break;
        default:
            return UAPLEX_BadTcpMessageTypeInvalid;
    }
    if (h.size > limit) return UAPLEX_BadTcpMessageTooLarge;
    return UAPLEX_Good;
}

struct Hello {
    std::uint32_t protocolVersion = 0;
    std::uint32_t receiveBufferSize = 0;
    std::uint32_t sendBufferSize = 0;
    std::uint32_t maxMessageSize = 0;
    std::uint32_t maxChunkCount = 0;
    std::string_view endpointUrl;
};

// Parses a whole Hello message (header included).
inline uaplex_status parseHello(std::span<const std::uint8_t> msg, Hello& out) noexcept {
    if (msg.size() < kHeaderSize + 24) return UAPLEX_BadTcpMessageTypeInvalid;
    const std::uint8_t* p = msg.data() + kHeaderSize;
    out.protocolVersion = readU32(p);
    out.receiveBufferSize = readU32(p + 4);
    out.sendBufferSize = readU32(p + 8);
    out.maxMessageSize = readU32(p + 12);
    out.maxChunkCount = readU32(p + 16);
    auto urlLength = static_cast<std::int32_t>(readU32(p + 20));
    std::size_t rest = msg.size() - kHeaderSize - 24;
    if (urlLength < 0) urlLength = 0;  // a null string
    if (std::size_t(urlLength) > kMaxEndpointUrlLength) return UAPLEX_BadTcpEndpointUrlInvalid;
    if (std::size_t(urlLength) != rest) return UAPLEX_BadTcpMessageTypeInvalid;
    out.endpointUrl = {reinterpret_cast<const char*>(p + 24), std::size_t(urlLength)};
    return UAPLEX_Good;
}

// The server's own limits, from the configuration.
struct ServerLimits {
    std::uint32_t receiveBufferSize = 65535;
    std::uint32_t sendBufferSize = 65535;
    std::uint32_t maxMessageSize = 16u << 20;  // 0 = no limit
    std::uint32_t maxChunkCount = 512;         // 0 = no limit
};

struct Negotiated {
    std::uint32_t receiveBufferSize;  // ACK ReceiveBufferSize: chunks we accept
    std::uint32_t sendBufferSize;     // ACK SendBufferSize: chunks we send
    std::uint32_t maxMessageSize;     // ACK MaxMessageSize: what we accept
    std::uint32_t maxChunkCount;      // ACK MaxChunkCount
    std::uint32_t clientMaxMessageSize;
    std::uint32_t clientMaxChunkCount;
};

// Part 6 7.1.2.3: the server revises the sizes down, never up; buffers below 8192 bytes on
// either side are refused.
inline uaplex_status negotiate(const Hello& hello, const ServerLimits& ours,
                               Negotiated& out) noexcept {
    if (hello.receiveBufferSize < kMinBufferSize || hello.sendBufferSize < kMinBufferSize)
        return UAPLEX_BadTcpInternalError;
    out.receiveBufferSize = std::min(ours.receiveBufferSize, hello.sendBufferSize);
    out.sendBufferSize = std::min(ours.sendBufferSize, hello.receiveBufferSize);
    out.maxMessageSize = ours.maxMessageSize;
    out.maxChunkCount = ours.maxChunkCount;
    out.clientMaxMessageSize = hello.maxMessageSize;
    out.clientMaxChunkCount = hello.maxChunkCount;
    return UAPLEX_Good;
}

// Writes an Acknowledge (28 bytes) into `out`.
inline std::size_t writeAcknowledge(std::uint8_t* out, const Negotiated& n) noexcept {
    std::memcpy(out, "ACKF", 4);
    writeU32(out + 4, 28);
    writeU32(out + 8, kProtocolVersion);
    writeU32(out + 12, n.receiveBufferSize);
    writeU32(out + 16, n.sendBufferSize);
    writeU32(out + 20, n.maxMessageSize);
    writeU32(out + 24, n.maxChunkCount);
    return 28;
}

// Writes an Error (status and a reason of at most 256 bytes) into `out` (>= 272 bytes).
inline std::size_t writeError(std::uint8_t* out, uaplex_status status,
                              std::string_view reason) noexcept {
    reason = reason.substr(0, 256);
    std::uint32_t size = 16 + std::uint32_t(reason.size());
    std::memcpy(out, "ERRF", 4);
    writeU32(out + 4, size);
    writeU32(out + 8, status);
    writeU32(out + 12, std::uint32_t(reason.size()));
    // An empty reason may have no data at all: memcpy's source must not be NULL even for 0.
    if (!reason.empty()) std::memcpy(out + 16, reason.data(), reason.size());
    return size;
}

// Size of a ReverseHello with these strings.
inline std::size_t reverseHelloSize(std::string_view serverUri,
                                    std::string_view endpointUrl) noexcept {
    return kHeaderSize + 8 + serverUri.size() + endpointUrl.size();
}
inline std::size_t writeReverseHello(std::uint8_t* out, std::string_view serverUri,
                                     std::string_view endpointUrl) noexcept {
    std::size_t size = reverseHelloSize(serverUri, endpointUrl);
    std::memcpy(out, "RHEF", 4);
    writeU32(out + 4, std::uint32_t(size));
    std::uint8_t* p = out + 8;
    writeU32(p, std::uint32_t(serverUri.size()));
    if (!serverUri.empty()) std::memcpy(p + 4, serverUri.data(), serverUri.size());
    p += 4 + serverUri.size();
    writeU32(p, std::uint32_t(endpointUrl.size()));
    if (!endpointUrl.empty()) std::memcpy(p + 4, endpointUrl.data(), endpointUrl.size());
    return size;
}

// "opc.tcp://host:port/path" -> host (brackets of IPv6 removed) and port (default 4840).
struct UrlParts {
    std::string_view host;
    std::uint16_t port = 4840;
};
inline bool parseUrl(std::string_view url, std::string_view scheme, UrlParts& out) noexcept {
    if (url.substr(0, scheme.size()) != scheme || url.substr(scheme.size(), 3) != "://")
        return false;
    url.remove_prefix(scheme.size() + 3);
    url = url.substr(0, url.find('/'));
    out.port = 4840;
    std::string_view portText;
    if (!url.empty() && url.front() == '[') {
        auto close = url.find(']');
        if (close == std::string_view::npos) return false;
        out.host = url.substr(1, close - 1);
        auto rest = url.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return false;
            portText = rest.substr(1);
        }
    } else {
        auto colon = url.rfind(':');
        out.host = url.substr(0, colon);
        if (colon != std::string_view::npos) portText = url.substr(colon + 1);
    }
    if (out.host.empty()) return false;
    if (!portText.empty()) {
        std::uint32_t port = 0;
        for (char c : portText) {
            if (c < '0' || c > '9') return false;
            port = port * 10 + std::uint32_t(c - '0');
            if (port > 65535) return false;
        }
        if (port == 0) return false;
        out.port = std::uint16_t(port);
    }
    return true;
}

}  // namespace uaplex::tcp
