// SPDX-License-Identifier: Apache-2.0
#include "uaplex/pipeline/dispatch.hpp"

namespace uaplex::pipeline {

RequestPrefix peekPrefix(std::span<const std::uint8_t> m) noexcept {
    RequestPrefix p{};
    std::size_t at = 0;
    auto need = [&](std::size_t n) { return m.size() - at >= n; };
    auto u8 = [&] { return m[at++]; };
    auto u16 = [&] {
        std::uint16_t v = std::uint16_t(m[at] | m[at + 1] << 8);
        at += 2;
        return v;
    };
    auto u32 = [&] {
        std::uint32_t v = std::uint32_t(m[at]) | std::uint32_t(m[at + 1]) << 8 |
                          std::uint32_t(m[at + 2]) << 16 | std::uint32_t(m[at + 3]) << 24;
        at += 4;
        return v;
    };
    // A NodeId in binary (Part 6 5.2.2.9); fills `id` for the numeric and ByteString forms.
    auto nodeId = [&](ua::NodeId& id) -> bool {
        if (!need(1)) return false;
        std::uint8_t form = u8();
        id = ua::NodeId{};
        switch (form) {
            case 0x00:
                if (!need(1)) return false;
                id.identifier_type = UAPLEX_ID_NUMERIC;
                id.identifier.numeric = u8();
                return true;
            case 0x01:
                if (!need(3)) return false;
                id.identifier_type = UAPLEX_ID_NUMERIC;
                id.namespace_index = u8();
                id.identifier.numeric = u16();
                return true;
            case 0x02:
                if (!need(6)) return false;
                id.identifier_type = UAPLEX_ID_NUMERIC;
                id.namespace_index = u16();
                id.identifier.numeric = u32();
                return true;
            case 0x03:
            case 0x05: {
                if (!need(6)) return false;
                id.namespace_index = u16();
                std::int32_t n = std::int32_t(u32());
                if (n > 0 && !need(std::size_t(n))) return false;
                if (form == 0x05) {
                    id.identifier_type = UAPLEX_ID_BYTESTRING;
                    id.identifier.bytestring =
                        ua::ByteString{n, n > 0 ? const_cast<std::uint8_t*>(&m[at]) : nullptr};
                } else {
                    id.identifier_type = UAPLEX_ID_STRING;
                }
                if (n > 0) at += std::size_t(n);
                return true;
            }
            case 0x04:
                if (!need(18)) return false;
                id.identifier_type = UAPLEX_ID_GUID;
                at += 18;
                return true;
            default:
                return false;
        }
    };
    ua::NodeId encoding{};
    if (!nodeId(encoding) || !nodeId(p.authenticationToken) || !need(12)) return p;
    if (encoding.identifier_type == UAPLEX_ID_NUMERIC && encoding.namespace_index == 0)
        p.encodingId = encoding.identifier.numeric;
    at += 8;  // timestamp
    p.requestHandle = u32();
    p.ok = true;
    // returnDiagnostics, auditEntryId (String), timeoutHint
    if (!need(8)) return p;
    at += 4;
    std::int32_t auditLength = std::int32_t(u32());
    if (auditLength > 0) {
        if (!need(std::size_t(auditLength))) return p;
        at += std::size_t(auditLength);
    }
    if (need(4)) p.timeoutHint = u32();
    return p;
}

}  // namespace uaplex::pipeline
