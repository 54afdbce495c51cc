// SPDX-License-Identifier: Apache-2.0
// UACP (Part 6 7.1): header checks before and after Hello, Hello parsing and limits,
// negotiation, Acknowledge/Error/ReverseHello layout, endpoint URL parsing.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "uacp.hpp"

using namespace uaplex::tcp;

namespace {

std::vector<std::uint8_t> hello(std::uint32_t recv, std::uint32_t send, std::string url,
                                std::int32_t urlLength = -2) {
    std::vector<std::uint8_t> m(32 + url.size());
    std::memcpy(m.data(), "HELF", 4);
    writeU32(m.data() + 4, std::uint32_t(m.size()));
    writeU32(m.data() + 8, 0);
    writeU32(m.data() + 12, recv);
    writeU32(m.data() + 16, send);
    writeU32(m.data() + 20, 1 << 20);
    writeU32(m.data() + 24, 64);
    writeU32(m.data() + 28, std::uint32_t(urlLength == -2 ? std::int32_t(url.size()) : urlLength));
    std::memcpy(m.data() + 32, url.data(), url.size());
    return m;
}

Header header(const char* type, std::uint32_t size) {
    std::uint8_t b[8];
    std::memcpy(b, type, 4);
    writeU32(b + 4, size);
    return parseHeader(b);
}

}  // namespace

TEST_CASE("before Hello only a Hello of bounded size is accepted") {
    CHECK(checkHeader(header("HELF", 60), false, 0) == UAPLEX_Good);
    CHECK(checkHeader(header("HELF", 0xFFFFFFF0u), false, 0) == UAPLEX_BadTcpMessageTooLarge);
    CHECK(checkHeader(header("HELF", kMaxHelloSize + 1), false, 0) == UAPLEX_BadTcpMessageTooLarge);
    CHECK(checkHeader(header("MSGF", 60), false, 0) == UAPLEX_BadTcpMessageTypeInvalid);
    CHECK(checkHeader(header("GET ", 60), false, 0) == UAPLEX_BadTcpMessageTypeInvalid);
    CHECK(checkHeader(header("HELF", 4), false, 0) == UAPLEX_BadTcpMessageTypeInvalid);
    CHECK(checkHeader(header("HELC", 60), false, 0) == UAPLEX_BadTcpMessageTypeInvalid);
}

TEST_CASE("after Hello chunks are checked against the negotiated receive buffer size") {
    CHECK(checkHeader(header("OPNF", 100), true, 8192) == UAPLEX_Good);
    CHECK(checkHeader(header("MSGC", 8192), true, 8192) == UAPLEX_Good);
    CHECK(checkHeader(header("MSGA", 100), true, 8192) == UAPLEX_Good);
    CHECK(checkHeader(header("CLOF", 100), true, 8192) == UAPLEX_Good);
    CHECK(checkHeader(header("MSGF", 8193), true, 8192) == UAPLEX_BadTcpMessageTooLarge);
    CHECK(checkHeader(header("OPNF", 0x80000000u), true, 8192) == UAPLEX_BadTcpMessageTooLarge);
    CHECK(checkHeader(header("OPNC", 100), true, 8192) == UAPLEX_BadTcpMessageTypeInvalid);
    CHECK(checkHeader(header("MSGX", 100), true, 8192) == UAPLEX_BadTcpMessageTypeInvalid);
    CHECK(checkHeader(header("HELF", 100), true, 8192) == UAPLEX_BadTcpMessageTypeInvalid);
    CHECK(checkHeader(header("XYZF", 100), true, 8192) == UAPLEX_BadTcpMessageTypeInvalid);
}

TEST_CASE("Hello parsing: URL limits and lengths") {
    Hello h;
    auto ok = hello(65535, 65535, "opc.tcp://localhost:4840");
    REQUIRE(parseHello(ok, h) == UAPLEX_Good);
    CHECK(h.endpointUrl == "opc.tcp://localhost:4840");
    CHECK(h.receiveBufferSize == 65535);
    CHECK(parseHello(hello(65535, 65535, std::string(4097, 'a')), h) ==
          UAPLEX_BadTcpEndpointUrlInvalid);
    CHECK(parseHello(hello(65535, 65535, std::string(4096, 'a')), h) == UAPLEX_Good);
    CHECK(parseHello(hello(65535, 65535, "opc.tcp://x", 0x7fffffff), h) != UAPLEX_Good);
    CHECK(parseHello(hello(65535, 65535, "opc.tcp://x", 5), h) != UAPLEX_Good);
    auto cut = hello(65535, 65535, "");
    cut.resize(20);
    CHECK(parseHello(cut, h) != UAPLEX_Good);
}

TEST_CASE("negotiation revises down and refuses buffers below 8192") {
    ServerLimits ours{65535, 32768, 1 << 24, 512};
    Hello h;
    Negotiated n{};
    h.receiveBufferSize = 0xFFFFFFFF;
    h.sendBufferSize = 0xFFFFFFFF;
    h.maxMessageSize = 0;
    h.maxChunkCount = 0;
    REQUIRE(negotiate(h, ours, n) == UAPLEX_Good);
    CHECK(n.receiveBufferSize == 65535);
    CHECK(n.sendBufferSize == 32768);
    CHECK(n.maxMessageSize == (1u << 24));
    CHECK(n.maxChunkCount == 512);
    h.receiveBufferSize = 8192;
    h.sendBufferSize = 9000;
    REQUIRE(negotiate(h, ours, n) == UAPLEX_Good);
    CHECK(n.sendBufferSize == 8192);
    CHECK(n.receiveBufferSize == 9000);
    h.receiveBufferSize = 1024;
    CHECK(negotiate(h, ours, n) == UAPLEX_BadTcpInternalError);
    h.receiveBufferSize = 8192;
    h.sendBufferSize = 0;
    CHECK(negotiate(h, ours, n) == UAPLEX_BadTcpInternalError);
}

TEST_CASE("Acknowledge, Error and ReverseHello layouts") {
    std::uint8_t buf[300];
    Negotiated n{8192, 16384, 1000, 7, 0, 0};
    REQUIRE(writeAcknowledge(buf, n) == 28);
    CHECK(std::memcmp(buf, "ACKF", 4) == 0);
    CHECK(readU32(buf + 4) == 28);
    CHECK(readU32(buf + 12) == 8192);
    CHECK(readU32(buf + 16) == 16384);
    CHECK(readU32(buf + 24) == 7);
    std::size_t e = writeError(buf, UAPLEX_BadTcpMessageTooLarge, "too large");
    CHECK(e == 25);
    CHECK(std::memcmp(buf, "ERRF", 4) == 0);
    CHECK(readU32(buf + 8) == UAPLEX_BadTcpMessageTooLarge);
    CHECK(readU32(buf + 12) == 9);
    CHECK(writeError(buf, UAPLEX_BadTcpInternalError, std::string(1000, 'x')) == 16 + 256);
    std::size_t r = writeReverseHello(buf, "urn:a", "opc.tcp://h:1");
    CHECK(r == 8 + 4 + 5 + 4 + 13);
    CHECK(std::memcmp(buf, "RHEF", 4) == 0);
    CHECK(readU32(buf + 8) == 5);
}

TEST_CASE("endpoint URLs: IPv4, IPv6, host names, default port") {
    UrlParts p;
    REQUIRE(parseUrl("opc.tcp://0.0.0.0:4840", "opc.tcp", p));
    CHECK(p.host == "0.0.0.0");
    CHECK(p.port == 4840);
    REQUIRE(parseUrl("opc.tcp://[::]:48400/path", "opc.tcp", p));
    CHECK(p.host == "::");
    CHECK(p.port == 48400);
    REQUIRE(parseUrl("opc.tcp://localhost", "opc.tcp", p));
    CHECK(p.host == "localhost");
    CHECK(p.port == 4840);
    CHECK_FALSE(parseUrl("http://x:1", "opc.tcp", p));
    CHECK_FALSE(parseUrl("opc.tcp://x:99999", "opc.tcp", p));
    CHECK_FALSE(parseUrl("opc.tcp://:1", "opc.tcp", p));
    CHECK_FALSE(parseUrl("opc.tcp://[::1", "opc.tcp", p));
}
