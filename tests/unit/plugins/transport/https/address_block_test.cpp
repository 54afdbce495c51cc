// SPDX-License-Identifier: Apache-2.0
// transport-https's monitoring_peers: address blocks parsed and matched (header-only).
#include <catch2/catch.hpp>

#include "address_block.hpp"

using uaplex::https::AddressBlock;
using uaplex::https::parseBlocks;

namespace {

bool allowed(const std::vector<AddressBlock>& blocks, const char* address) {
    auto a = boost::asio::ip::make_address(address);
    for (const auto& b : blocks)
        if (b.contains(a)) return true;
    return false;
}

}  // namespace

TEST_CASE("monitoring_peers: the default is loopback only") {
    std::vector<AddressBlock> b;
    REQUIRE(parseBlocks("127.0.0.0/8, ::1", b));
    CHECK(b.size() == 2);
    CHECK(allowed(b, "127.0.0.1"));
    CHECK(allowed(b, "127.255.0.2"));
    CHECK(allowed(b, "::1"));
    CHECK(allowed(b, "::ffff:127.0.0.1"));  // IPv4-mapped
    CHECK_FALSE(allowed(b, "128.0.0.1"));
    CHECK_FALSE(allowed(b, "10.0.0.1"));
    CHECK_FALSE(allowed(b, "::2"));
    CHECK_FALSE(allowed(b, "fe80::1"));
}

TEST_CASE("monitoring_peers: prefixes, single addresses, open and empty lists") {
    std::vector<AddressBlock> b;
    REQUIRE(parseBlocks("10.1.2.0/23 192.168.0.7,fd00::/8", b));
    CHECK(allowed(b, "10.1.3.255"));
    CHECK_FALSE(allowed(b, "10.1.4.0"));
    CHECK(allowed(b, "192.168.0.7"));
    CHECK_FALSE(allowed(b, "192.168.0.8"));
    CHECK(allowed(b, "fd12:3456::1"));
    CHECK_FALSE(allowed(b, "fe00::1"));
    REQUIRE(parseBlocks("0.0.0.0/0, ::/0", b));
    CHECK(allowed(b, "8.8.8.8"));
    CHECK(allowed(b, "2001:db8::1"));
    REQUIRE(parseBlocks("", b));
    CHECK(b.empty());
    CHECK_FALSE(allowed(b, "127.0.0.1"));
}

TEST_CASE("monitoring_peers: malformed entries are refused") {
    std::vector<AddressBlock> b;
    CHECK_FALSE(parseBlocks("localhost", b));
    CHECK_FALSE(parseBlocks("10.0.0.0/33", b));
    CHECK_FALSE(parseBlocks("::/129", b));
    CHECK_FALSE(parseBlocks("10.0.0.0/x", b));
    CHECK_FALSE(parseBlocks("10.0.0.0/", b));
    CHECK_FALSE(parseBlocks("127.0.0.1, 300.0.0.1", b));
}
