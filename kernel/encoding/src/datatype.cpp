// SPDX-License-Identifier: Apache-2.0
// Descriptor lookups, generic value decoding and StatusCode names.
#include <uaplex/encoding/generated/types.hpp>

#include <algorithm>
#include <cstring>

namespace uaplex::generated {
struct StatusCodeInfo {
    std::uint32_t code;
    std::string_view name;
    std::string_view description;
};
extern const StatusCodeInfo kStatusCodes[];
extern const std::size_t kStatusCodeCount;
}  // namespace uaplex::generated

namespace uaplex::ua::detail {
extern const std::uint16_t kIndexByName[];
extern const std::size_t kIndexByNameCount;
extern const std::uint16_t kIndexByTypeId[];
extern const std::size_t kIndexByTypeIdCount;
extern const std::uint16_t kIndexByEncodingId[];
extern const std::size_t kIndexByEncodingIdCount;
}  // namespace uaplex::ua::detail

namespace uaplex::enc {

namespace detail = uaplex::ua::detail;
using detail::kDataTypes;

std::span<const DataType> allDataTypes() noexcept {
    return {kDataTypes, detail::kDataTypeCount};
}

const DataType* findDataType(std::string_view name) noexcept {
    const std::uint16_t* b = detail::kIndexByName;
    const std::uint16_t* e = b + detail::kIndexByNameCount;
    auto it = std::lower_bound(
        b, e, name, [](std::uint16_t i, std::string_view n) { return kDataTypes[i].name < n; });
    return (it != e && kDataTypes[*it].name == name) ? &kDataTypes[*it] : nullptr;
}

const DataType* findDataTypeByTypeId(std::uint32_t id) noexcept {
    const std::uint16_t* b = detail::kIndexByTypeId;
    const std::uint16_t* e = b + detail::kIndexByTypeIdCount;
    auto it = std::lower_bound(
        b, e, id, [](std::uint16_t i, std::uint32_t v) { return kDataTypes[i].typeId < v; });
    return (it != e && kDataTypes[*it].typeId == id) ? &kDataTypes[*it] : nullptr;
}

const DataType* findDataTypeByEncodingId(std::uint32_t id) noexcept {
    const std::uint16_t* b = detail::kIndexByEncodingId;
    const std::uint16_t* e = b + detail::kIndexByEncodingIdCount;
    auto it = std::lower_bound(b, e, id, [](std::uint16_t i, std::uint32_t v) {
        return kDataTypes[i].binaryEncodingId < v;
    });
    return (it != e && kDataTypes[*it].binaryEncodingId == id) ? &kDataTypes[*it] : nullptr;
}

const DataType* findDataTypeByJsonEncodingId(std::uint32_t id) noexcept {
    if (id == 0) return nullptr;
    for (const DataType& t : allDataTypes())
        if (t.jsonEncodingId == id) return &t;
    return nullptr;
}

const FieldDescriptor* DataType::field(std::string_view fieldName) const noexcept {
    for (const FieldDescriptor& f : fieldSpan())
        if (f.name == fieldName) return &f;
    return nullptr;
}

uaplex_status decodeValue(std::span<const std::uint8_t> input, Arena& arena,
                          const DecodeLimits& limits, const DataType& type, void** out) noexcept {
    *out = nullptr;
    BinaryReader r(input, arena, limits);
    void* obj = r.ok() ? arena.allocate(type.size, type.alignment) : nullptr;
    if (obj == nullptr) {
        r.fail(UAPLEX_BadEncodingLimitsExceeded);
        return r.status();
    }
    std::memset(obj, 0, type.size);
    type.decodeFn(r, obj);
    if (r.ok() && r.remaining() != 0) r.fail(UAPLEX_BadDecodingError);
    if (r.ok()) *out = obj;
    return r.status();
}

uaplex_status encodeValue(ByteBuffer& out, const DataType& type, const void* value,
                          std::size_t maxSize) noexcept {
    BinaryWriter w(out, maxSize);
    type.encodeFn(w, value);
    return w.status();
}

namespace {
const generated::StatusCodeInfo* findStatus(std::uint32_t code) noexcept {
    code &= 0xFFFF0000u;  // the low 16 bits are info bits, not part of the code
    const auto* b = generated::kStatusCodes;
    const auto* e = b + generated::kStatusCodeCount;
    auto it = std::lower_bound(
        b, e, code, [](const generated::StatusCodeInfo& s, std::uint32_t c) { return s.code < c; });
    return (it != e && it->code == code) ? it : nullptr;
}
}  // namespace

std::string_view statusName(std::uint32_t code) noexcept {
    if ((code & 0xFFFF0000u) == 0) return "Good";
    const auto* s = findStatus(code);
    return s ? s->name : std::string_view();
}
std::string_view statusDescription(std::uint32_t code) noexcept {
    const auto* s = findStatus(code);
    return s ? s->description : std::string_view();
}

}  // namespace uaplex::enc

namespace uaplex::ua {
bool equal(const NodeId& a, const NodeId& b) noexcept {
    if (a.namespace_index != b.namespace_index || a.identifier_type != b.identifier_type)
        return false;
    switch (a.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            return a.identifier.numeric == b.identifier.numeric;
        case UAPLEX_ID_STRING:
            return a.identifier.string.length == b.identifier.string.length &&
                   view(a.identifier.string) == view(b.identifier.string);
        case UAPLEX_ID_GUID:
            return std::memcmp(&a.identifier.guid, &b.identifier.guid, sizeof(Guid)) == 0;
        case UAPLEX_ID_BYTESTRING: {
            auto x = view(a.identifier.bytestring), y = view(b.identifier.bytestring);
            return a.identifier.bytestring.length == b.identifier.bytestring.length &&
                   std::equal(x.begin(), x.end(), y.begin(), y.end());
        }
        default:
            return false;
    }
}
}  // namespace uaplex::ua
