// SPDX-License-Identifier: Apache-2.0
// Address blocks for transport-https's monitoring_peers: "127.0.0.0/8, ::1" parsed into
// prefixes, matched against a peer's address (IPv4 in its IPv4-mapped IPv6 form, so an
// IPv4-mapped IPv6 peer matches its IPv4 block). Header-only, for the unit tests.
#pragma once

#include <utility>  // before Asio: 1.74 uses std::exchange without it under C++20

#include <boost/asio/ip/address.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

namespace uaplex::https {

namespace asio = boost::asio;

// An address block ("127.0.0.0/8", "::1"); IPv4 is matched in its IPv4-mapped IPv6 form.
struct AddressBlock {
    std::array<unsigned char, 16> net{};
    unsigned prefix = 128;
    bool contains(const asio::ip::address& a) const noexcept {
        auto bytes = asV6(a).to_bytes();
        for (unsigned i = 0; i < 16; ++i) {
            unsigned bits = prefix > i * 8 ? std::min(8u, prefix - i * 8) : 0;
            if (bits == 0) break;
            unsigned char mask = static_cast<unsigned char>(0xFF << (8 - bits));
            if ((bytes[i] & mask) != (net[i] & mask)) return false;
        }
        return true;
    }
    static asio::ip::address_v6 asV6(const asio::ip::address& a) {
        if (a.is_v6()) return a.to_v6();
        return asio::ip::make_address_v6(asio::ip::v4_mapped, a.to_v4());
    }
};

// "127.0.0.0/8, ::1": a comma or space separated list; false on a malformed entry.
inline bool parseBlocks(std::string_view text, std::vector<AddressBlock>& out) {
    out.clear();
    while (!text.empty()) {
        auto sep = text.find_first_of(", ");
        std::string_view item = text.substr(0, sep);
        text.remove_prefix(sep == std::string_view::npos ? text.size() : sep + 1);
        if (item.empty()) continue;
        auto slash = item.find('/');
        boost::system::error_code ec;
        auto addr = asio::ip::make_address(std::string(item.substr(0, slash)), ec);
        if (ec) return false;
        AddressBlock b;
        b.net = AddressBlock::asV6(addr).to_bytes();
        unsigned full = addr.is_v4() ? 32 : 128;
        unsigned prefix = full;
        if (slash != std::string_view::npos) {
            std::string_view p = item.substr(slash + 1);
            auto r = std::from_chars(p.data(), p.data() + p.size(), prefix);
            if (r.ec != std::errc() || r.ptr != p.data() + p.size() || prefix > full) return false;
        }
        b.prefix = addr.is_v4() ? prefix + 96 : prefix;
        out.push_back(b);
    }
    return true;
}

}  // namespace uaplex::https
