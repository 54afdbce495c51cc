// SPDX-License-Identifier: Apache-2.0
// The host part of a transport's peer address, the key under which the kernel's per-peer
// limits and the admission plugins count one peer. Header-only.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>

namespace uaplex::sdk {

// The longest host kept: an IPv6 address with a zone is shorter, and a key must stay small
// whatever a transport reports.
inline constexpr std::size_t kMaxPeerHost = 64;

// "ip:port", "[v6]:port" or a bare address -> the address in lower case, IPv4-mapped IPv6
// addresses as IPv4, so one peer has one key; at most kMaxPeerHost characters.
inline std::string peer_host(std::string_view address) {
    std::string_view host = address;
    if (!address.empty() && address.front() == '[') {
        std::size_t end = address.find(']');
        host = address.substr(1, end == std::string_view::npos ? address.size() - 1 : end - 1);
    } else if (std::count(address.begin(), address.end(), ':') == 1) {
        host = address.substr(0, address.find(':'));
    }
    std::string h(host.substr(0, kMaxPeerHost));
    std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
    if (h.rfind("::ffff:", 0) == 0 && h.find('.') != std::string::npos) h.erase(0, 7);
    return h;
}

}  // namespace uaplex::sdk
