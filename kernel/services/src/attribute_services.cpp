// SPDX-License-Identifier: Apache-2.0
// Read and Write (Part 4 5.10), IndexRange (Part 4 7.27) and the value type checks.
#include <uaplex/encoding/generated/ns0.hpp>

#include <cstring>

#include "async_operations.hpp"
#include "persistence.hpp"

namespace uaplex::services {

namespace {

using addressspace::kCurrentRead;
using addressspace::kCurrentWrite;
using addressspace::kStatusWrite;
using addressspace::kTimestampWrite;

constexpr std::uint32_t kStructure = 22;
constexpr std::uint32_t kBaseDataType = 24;
constexpr std::uint32_t kEnumeration = 29;

// Which attributes each NodeClass has (Part 3 5.9 and Table 4ff), as a bit per attribute id.
std::uint32_t attributesOf(std::uint8_t nodeClass) noexcept {
    auto bit = [](std::uint32_t a) { return 1u << a; };
    std::uint32_t common = bit(kAttrNodeId) | bit(kAttrNodeClass) | bit(kAttrBrowseName) |
                           bit(kAttrDisplayName) | bit(kAttrDescription) | bit(kAttrWriteMask) |
                           bit(kAttrUserWriteMask) | bit(kAttrRolePermissions) |
                           bit(kAttrUserRolePermissions) | bit(kAttrAccessRestrictions);
    switch (nodeClass) {
        case addressspace::kObject:
            return common | bit(kAttrEventNotifier);
        case addressspace::kVariable:
            return common | bit(kAttrValue) | bit(kAttrDataType) | bit(kAttrValueRank) |
                   bit(kAttrArrayDimensions) | bit(kAttrAccessLevel) | bit(kAttrUserAccessLevel) |
                   bit(kAttrMinimumSamplingInterval) | bit(kAttrHistorizing) |
                   bit(kAttrAccessLevelEx);
        case addressspace::kMethod:
            return common | bit(kAttrExecutable) | bit(kAttrUserExecutable);
        case addressspace::kObjectType:
            return common | bit(kAttrIsAbstract);
        case addressspace::kVariableType:
            return common | bit(kAttrValue) | bit(kAttrDataType) | bit(kAttrValueRank) |
                   bit(kAttrArrayDimensions) | bit(kAttrIsAbstract);
        case addressspace::kReferenceType:
            return common | bit(kAttrIsAbstract) | bit(kAttrSymmetric) | bit(kAttrInverseName);
        case addressspace::kDataType:
            return common | bit(kAttrIsAbstract) | bit(kAttrDataTypeDefinition);
        case addressspace::kView:
            return common | bit(kAttrContainsNoLoops) | bit(kAttrEventNotifier);
        default:
            return 0;
    }
}

// The WriteMask bit of each attribute id (Part 3 8.60), -1 for the ones without one.
constexpr std::int8_t kWriteMaskBit[] = {-1, 14, 13, 2, 6,  5,  20, 18, 11, 15, 10, 3,  7,  21,
                                         4,  19, 1,  0, 16, 12, 9,  8,  17, 22, 23, -1, 24, 25};
constexpr std::uint32_t kWriteMaskDefined = (1u << 26) - 1;
constexpr std::uint32_t kBitValueForVariableType = 1u << 21;
constexpr std::uint32_t kBitRolePermissions = 1u << 23;
// WriteRolePermissions (Part 3 8.55): not among the permissions [access] grants today.
constexpr std::uint32_t kPermWriteRolePermissions = 1u << 3;

std::int32_t writeMaskBit(std::uint32_t attr) noexcept {
    return attr < sizeof(kWriteMaskBit) ? kWriteMaskBit[attr] : -1;
}

// The permission a write of `attr` needs: Write for values, WriteRolePermissions for
// RolePermissions, WriteAttribute for the others.
std::uint32_t writePermission(std::uint32_t attr) noexcept {
    if (attr == kAttrValue) return session::kPermWrite;
    if (attr == kAttrRolePermissions) return kPermWriteRolePermissions;
    return session::kPermWriteAttribute;
}

// The built-in type and array-ness a written attribute must have (Part 3 5.9).
bool attributeTypeMatches(std::uint32_t attr, const ua::Variant& v) noexcept {
    std::uint8_t t = v.encoding & UAPLEX_VARIANT_TYPE_MASK;
    bool array = ua::isArray(v);
    switch (attr) {
        case kAttrNodeId:
        case kAttrDataType:
            return t == UAPLEX_TYPE_NODEID && !array;
        case kAttrNodeClass:
        case kAttrValueRank:
            return t == UAPLEX_TYPE_INT32 && !array;
        case kAttrBrowseName:
            return t == UAPLEX_TYPE_QUALIFIEDNAME && !array;
        case kAttrDisplayName:
        case kAttrDescription:
        case kAttrInverseName:
            return t == UAPLEX_TYPE_LOCALIZEDTEXT && !array;
        case kAttrWriteMask:
        case kAttrUserWriteMask:
        case kAttrAccessLevelEx:
            return t == UAPLEX_TYPE_UINT32 && !array;
        case kAttrIsAbstract:
        case kAttrSymmetric:
        case kAttrContainsNoLoops:
        case kAttrHistorizing:
        case kAttrExecutable:
        case kAttrUserExecutable:
            return t == UAPLEX_TYPE_BOOLEAN && !array;
        case kAttrEventNotifier:
        case kAttrAccessLevel:
        case kAttrUserAccessLevel:
            return t == UAPLEX_TYPE_BYTE && !array;
        case kAttrArrayDimensions:
            return t == UAPLEX_TYPE_UINT32 && array && v.dimensions_length <= 1;
        case kAttrMinimumSamplingInterval:
            return t == UAPLEX_TYPE_DOUBLE && !array;
        case kAttrDataTypeDefinition:
            return t == UAPLEX_TYPE_EXTENSIONOBJECT && !array;
        case kAttrRolePermissions:
            return t == UAPLEX_TYPE_EXTENSIONOBJECT && array;
        case kAttrAccessRestrictions:
            return t == UAPLEX_TYPE_UINT16 && !array;
        default:
            return false;
    }
}

// The checks every write of an attribute other than Value passes, in the store and before a
// plugin's write: the node's WriteMask bit, then what the Write carries.
uaplex_status checkAttributeWrite(std::uint32_t writeMask, const ua::WriteValue& wv) noexcept {
    std::int32_t bit = writeMaskBit(wv.attributeId);
    if (bit < 0 || !(writeMask & (1u << bit))) return UAPLEX_BadNotWritable;
    // No IndexRange, status or timestamps for attributes (Part 4 5.10.4: BadWriteNotSupported).
    if (wv.indexRange.length > 0) return UAPLEX_BadWriteNotSupported;
    const ua::DataValue& dv = wv.value;
    if ((dv.mask & UAPLEX_DATAVALUE_STATUS) && dv.status != 0) return UAPLEX_BadWriteNotSupported;
    if (((dv.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) && dv.source_timestamp != 0) ||
        ((dv.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) && dv.server_timestamp != 0))
        return UAPLEX_BadWriteNotSupported;
    if (!(dv.mask & UAPLEX_DATAVALUE_VALUE) || !attributeTypeMatches(wv.attributeId, dv.value))
        return UAPLEX_BadTypeMismatch;
    return UAPLEX_Good;
}

// The UserWriteMask: the WriteMask less what the session's permissions do not allow.
std::uint32_t userWriteMask(std::uint32_t writeMask, std::uint32_t perms) noexcept {
    std::uint32_t allowed = 0;
    if (perms & session::kPermWriteAttribute)
        allowed |= kWriteMaskDefined & ~(kBitValueForVariableType | kBitRolePermissions);
    if (perms & session::kPermWrite) allowed |= kBitValueForVariableType;
    if (perms & kPermWriteRolePermissions) allowed |= kBitRolePermissions;
    return writeMask & allowed;
}

template <class T>
void setScalar(ua::Variant& v, ua::BuiltinType type, const T& value) noexcept {
    v = ua::makeVariant(type);
    std::memcpy(&v.value, &value, sizeof(T));
}

// Boxed scalars (NodeId, QualifiedName, LocalizedText, ...) live in the arena.
template <class T>
bool setBoxed(enc::Arena& arena, ua::Variant& v, ua::BuiltinType type, const T& value) noexcept {
    T* p = arenaNew(arena, value);
    if (p == nullptr) return false;
    v = ua::makeVariant(type);
    v.value.pointer = p;
    return true;
}

uaplex_status decodeBlob(enc::Arena& arena, std::span<const std::uint8_t> blob,
                         const enc::DataType& type, void** out) noexcept {
    return enc::decodeValue(blob, arena, enc::DecodeLimits{}, type, out);
}

// Applies one dimension of a range to a String/ByteString scalar (a substring).
uaplex_status sliceBytes(const IndexRange::Dim& d, std::int32_t& length, const void*& data,
                         std::size_t unit) noexcept {
    if (length <= 0 || d.first >= std::uint32_t(length)) return UAPLEX_BadIndexRangeNoData;
    std::uint32_t last = std::min<std::uint32_t>(d.last, std::uint32_t(length) - 1);
    data = static_cast<const std::uint8_t*>(data) + std::size_t(d.first) * unit;
    length = std::int32_t(last - d.first + 1);
    return UAPLEX_Good;
}

// The shape of an array Variant: its ArrayDimensions for a matrix, else its length. False
// when the dimensions are more than a range can address or disagree with the length.
bool shapeOf(const ua::Variant& v, std::uint32_t (&dims)[4], std::uint32_t& rank) noexcept {
    std::uint32_t length = std::uint32_t(std::max(0, v.array_length));
    if (v.dimensions_length <= 1 || v.dimensions == nullptr) {
        rank = 1;
        dims[0] = length;
        return true;
    }
    if (v.dimensions_length > 4) return false;
    rank = std::uint32_t(v.dimensions_length);
    std::uint64_t total = 1;
    for (std::uint32_t i = 0; i < rank; ++i) {
        if (v.dimensions[i] < 0) return false;
        dims[i] = std::uint32_t(v.dimensions[i]);
        total *= dims[i];
    }
    return total == length;
}

// The first `rank` dimensions of `range` cut to `dims`. A lower bound outside gives
// BadIndexRangeNoData; an upper bound outside is cut (Read), or is BadIndexRangeNoData
// when `exact` (Write replaces exactly what the range names).
uaplex_status selectDims(const IndexRange& range, const std::uint32_t* dims, std::uint32_t rank,
                         bool exact, IndexRange::Dim* sel) noexcept {
    for (std::uint32_t i = 0; i < rank; ++i) {
        const IndexRange::Dim& d = range.dims[i];
        if (d.first >= dims[i]) return UAPLEX_BadIndexRangeNoData;
        if (exact && d.last >= dims[i]) return UAPLEX_BadIndexRangeNoData;
        sel[i] = {d.first, std::min(d.last, dims[i] - 1)};
    }
    return UAPLEX_Good;
}

// Calls f(flat index in the source, position in the selection) for every selected element,
// in the encoding's order (the last dimension varies fastest, Part 6 5.2.2.16).
template <class F>
void forEachSelected(const std::uint32_t* dims, std::uint32_t rank, const IndexRange::Dim* sel,
                     F f) noexcept {
    std::uint32_t at[4];
    for (std::uint32_t i = 0; i < rank; ++i) at[i] = sel[i].first;
    for (std::size_t n = 0;; ++n) {
        std::size_t flat = 0;
        for (std::uint32_t i = 0; i < rank; ++i) flat = flat * dims[i] + at[i];
        f(flat, n);
        std::uint32_t i = rank;
        while (i > 0) {
            --i;
            if (at[i] < sel[i].last) {
                ++at[i];
                break;
            }
            at[i] = sel[i].first;
            if (i == 0) return;
        }
    }
}

std::size_t selectedCount(const IndexRange::Dim* sel, std::uint32_t rank) noexcept {
    std::size_t n = 1;
    for (std::uint32_t i = 0; i < rank; ++i) n *= sel[i].last - sel[i].first + 1;
    return n;
}

bool isBytes(std::uint8_t t) noexcept {
    return t == UAPLEX_TYPE_STRING || t == UAPLEX_TYPE_BYTESTRING;
}

}  // namespace

uaplex_status readIndexRange(enc::Arena& arena, const IndexRange& range, ua::Variant& v) noexcept {
    std::uint8_t t = v.encoding & UAPLEX_VARIANT_TYPE_MASK;
    if (!ua::isArray(v)) {
        if (range.count != 1) return UAPLEX_BadIndexRangeNoData;
        if (t == UAPLEX_TYPE_STRING || t == UAPLEX_TYPE_XMLELEMENT) {
            const void* d = v.value.string.data;
            uaplex_status st = sliceBytes(range.dims[0], v.value.string.length, d, 1);
            v.value.string.data = static_cast<const char*>(d);
            return st;
        }
        if (t == UAPLEX_TYPE_BYTESTRING) {
            const void* d = v.value.bytestring.data;
            uaplex_status st = sliceBytes(range.dims[0], v.value.bytestring.length, d, 1);
            v.value.bytestring.data = static_cast<const std::uint8_t*>(d);
            return st;
        }
        return UAPLEX_BadIndexRangeNoData;
    }
    std::uint32_t dims[4], rank = 0;
    if (!shapeOf(v, dims, rank)) return UAPLEX_BadIndexRangeNoData;
    // One range dimension per array dimension, and one more into String/ByteString elements.
    bool intoElements = range.count == rank + 1;
    if (range.count < rank || range.count > rank + 1 || (intoElements && !isBytes(t)))
        return UAPLEX_BadIndexRangeNoData;
    IndexRange::Dim sel[4];
    if (uaplex_status st = selectDims(range, dims, rank, false, sel); st != UAPLEX_Good) return st;
    std::size_t es = elementSize(t);
    std::size_t n = selectedCount(sel, rank);
    if (rank == 1 && !intoElements) {
        // A contiguous run: a view, no copy.
        v.value.pointer = static_cast<std::uint8_t*>(v.value.pointer) + es * sel[0].first;
        v.array_length = std::int32_t(n);
        if (v.dimensions_length == 1) {
            auto* d = arena.allocateArray<std::int32_t>(1);
            if (d == nullptr) return UAPLEX_BadOutOfMemory;
            d[0] = std::int32_t(n);
            v.dimensions = d;
        }
        return UAPLEX_Good;
    }
    auto* out = static_cast<std::uint8_t*>(arena.allocate(es * n, 8));
    if (out == nullptr && n != 0) return UAPLEX_BadOutOfMemory;
    const auto* in = static_cast<const std::uint8_t*>(v.value.pointer);
    forEachSelected(dims, rank, sel, [&](std::size_t from, std::size_t to) {
        std::memcpy(out + es * to, in + es * from, es);
    });
    if (intoElements) {
        // Elements too short for the last dimension become empty (Part 4 7.27).
        auto* strings = reinterpret_cast<ua::String*>(out);
        for (std::size_t i = 0; i < n; ++i) {
            const void* d = strings[i].data;
            if (sliceBytes(range.dims[rank], strings[i].length, d, 1) != UAPLEX_Good)
                strings[i] = ua::String{0, ""};
            else
                strings[i].data = static_cast<const char*>(d);
        }
    }
    v.value.pointer = out;
    v.array_length = std::int32_t(n);
    if (v.dimensions_length > 1) {
        auto* d = arena.allocateArray<std::int32_t>(rank);
        if (d == nullptr) return UAPLEX_BadOutOfMemory;
        for (std::uint32_t i = 0; i < rank; ++i)
            d[i] = std::int32_t(sel[i].last - sel[i].first + 1);
        v.dimensions = d;
    }
    return UAPLEX_Good;
}

uaplex_status writeIndexRange(enc::Arena& arena, const IndexRange& range, ua::Variant& cur,
                              const ua::Variant& in) noexcept {
    std::uint8_t t = cur.encoding & UAPLEX_VARIANT_TYPE_MASK;
    if ((in.encoding & UAPLEX_VARIANT_TYPE_MASK) != t) return UAPLEX_BadTypeMismatch;
    if (!ua::isArray(cur)) {
        // A substring of a String/ByteString scalar.
        if (!isBytes(t)) return UAPLEX_BadIndexRangeNoData;
        if (ua::isArray(in)) return UAPLEX_BadTypeMismatch;
        if (range.count != 1) return UAPLEX_BadIndexRangeNoData;
        const IndexRange::Dim& d = range.dims[0];
        std::int32_t len = cur.value.string.length;
        std::int32_t inLen = in.value.string.length;
        if (len <= 0 || d.last >= std::uint32_t(len)) return UAPLEX_BadIndexRangeNoData;
        if (inLen < 0 || std::uint32_t(inLen) != d.last - d.first + 1)
            return UAPLEX_BadIndexRangeInvalid;
        auto* copy = static_cast<char*>(arena.allocate(std::size_t(len), 1));
        if (copy == nullptr) return UAPLEX_BadOutOfMemory;
        std::memcpy(copy, cur.value.string.data, std::size_t(len));
        std::memcpy(copy + d.first, in.value.string.data, std::size_t(inLen));
        cur.value.string.data = copy;
        return UAPLEX_Good;
    }
    if (!ua::isArray(in)) return UAPLEX_BadTypeMismatch;
    std::uint32_t dims[4], rank = 0;
    if (!shapeOf(cur, dims, rank)) return UAPLEX_BadIndexRangeNoData;
    bool intoElements = range.count == rank + 1;
    if (range.count < rank || range.count > rank + 1 || (intoElements && !isBytes(t)))
        return UAPLEX_BadIndexRangeNoData;
    IndexRange::Dim sel[4];
    if (uaplex_status st = selectDims(range, dims, rank, true, sel); st != UAPLEX_Good) return st;
    // The written value has exactly the shape of the range: its length for one dimension,
    // its ArrayDimensions for a matrix.
    std::size_t n = selectedCount(sel, rank);
    if (std::size_t(std::max(0, in.array_length)) != n) return UAPLEX_BadIndexRangeInvalid;
    if (rank > 1) {
        if (in.dimensions_length != std::int32_t(rank) || in.dimensions == nullptr)
            return UAPLEX_BadIndexRangeInvalid;
        for (std::uint32_t i = 0; i < rank; ++i)
            if (in.dimensions[i] != std::int32_t(sel[i].last - sel[i].first + 1))
                return UAPLEX_BadIndexRangeInvalid;
    }
    std::size_t es = elementSize(t);
    std::size_t total = std::size_t(std::max(0, cur.array_length));
    auto* copy = static_cast<std::uint8_t*>(arena.allocate(es * total, 8));
    if (copy == nullptr) return UAPLEX_BadOutOfMemory;
    std::memcpy(copy, cur.value.pointer, es * total);
    const auto* src = static_cast<const std::uint8_t*>(in.value.pointer);
    uaplex_status st = UAPLEX_Good;
    forEachSelected(dims, rank, sel, [&](std::size_t to, std::size_t from) {
        if (!intoElements) {
            std::memcpy(copy + es * to, src + es * from, es);
            return;
        }
        // Replace bytes inside the element: both sides must cover the last dimension.
        const IndexRange::Dim& d = range.dims[rank];
        auto& target = reinterpret_cast<ua::String*>(copy)[to];
        const auto& part = reinterpret_cast<const ua::String*>(src)[from];
        if (target.length <= 0 || d.last >= std::uint32_t(target.length)) {
            st = UAPLEX_BadIndexRangeNoData;
            return;
        }
        if (part.length < 0 || std::uint32_t(part.length) != d.last - d.first + 1) {
            if (st == UAPLEX_Good) st = UAPLEX_BadIndexRangeInvalid;
            return;
        }
        auto* bytes = static_cast<char*>(arena.allocate(std::size_t(target.length), 1));
        if (bytes == nullptr) {
            st = UAPLEX_BadOutOfMemory;
            return;
        }
        std::memcpy(bytes, target.data, std::size_t(target.length));
        std::memcpy(bytes + d.first, part.data, std::size_t(part.length));
        target.data = bytes;
    });
    if (st != UAPLEX_Good) return st;
    cur.value.pointer = copy;
    return UAPLEX_Good;
}

uaplex_status parseIndexRange(const ua::String& text, IndexRange& out) noexcept {
    out.count = 0;
    if (text.length <= 0) return UAPLEX_Good;
    std::string_view s = ua::view(text);
    std::size_t pos = 0;
    auto number = [&](std::uint32_t& n) {
        std::size_t start = pos;
        std::uint64_t v = 0;
        while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
            v = v * 10 + std::uint64_t(s[pos] - '0');
            if (v > 0xFFFFFFFFu) return false;
            ++pos;
        }
        n = std::uint32_t(v);
        return pos > start;
    };
    while (true) {
        if (out.count == 4) return UAPLEX_BadIndexRangeInvalid;
        IndexRange::Dim d{};
        if (!number(d.first)) return UAPLEX_BadIndexRangeInvalid;
        d.last = d.first;
        if (pos < s.size() && s[pos] == ':') {
            ++pos;
            if (!number(d.last) || d.last <= d.first) return UAPLEX_BadIndexRangeInvalid;
        }
        out.dims[out.count++] = d;
        if (pos == s.size()) return UAPLEX_Good;
        if (s[pos] != ',') return UAPLEX_BadIndexRangeInvalid;
        ++pos;
    }
}

bool ServiceSet::Impl::ownedAttribute(enc::Arena& arena, const ua::NodeId& id,
                                      std::uint32_t attributeId, ua::Variant& out) noexcept {
    if (space.find(id)) return false;
    if (SessionNodeRef ref; !isSessionNode(id, ref) && ownerOf(id.namespace_index) == nullptr)
        return false;
    ua::DataValue dv{};
    readAttribute(arena, id, attributeId, ua::nullString(), 3, dv);
    if (dv.status != UAPLEX_Good) return false;
    out = dv.value;
    return true;
}

uaplex_status ServiceSet::Impl::readValue(enc::Arena& arena, const NodeRef& node,
                                          ua::DataValue& out) noexcept {
    out = ua::DataValue{};
    if (node.rec) {
        out.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        out.source_timestamp = startTime;
        if (const auto* fn = space.computedValue(node.rec->id)) {
            out.source_timestamp = now();
            (*fn)(arena, out.value);
            return UAPLEX_Good;
        }
        if (node.rec->value.length == 0) return UAPLEX_Good;  // null Variant
        void* v = nullptr;
        uaplex_status st =
            decodeBlob(arena, space.imageBlob(node.rec->value), addressspace::variantType(), &v);
        if (st != UAPLEX_Good) return st;
        out.value = *static_cast<ua::Variant*>(v);
        return UAPLEX_Good;
    }
    const Node& n = *node.dyn;
    // Only an asynchronous read and no request to answer later (sampling).
    if (n.callbacks.read == nullptr && n.callbacks.readAsync != nullptr)
        return UAPLEX_BadNotSupported;
    if (n.callbacks.read != nullptr) {
        uaplex_value_alloc alloc = arenaAlloc(arena);
        uaplex_status st = storeCallback(
            "read", [&] { return n.callbacks.read(n.callbacks.user, &n.id, &alloc, &out); });
        if (!pluginStatusOk(st) || (st == UAPLEX_Good && !pluginDataValueOk(out))) {
            out = ua::DataValue{};
            st = UAPLEX_BadInternalError;
        }
        if (st == UAPLEX_Good && !(out.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)) {
            out.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            out.source_timestamp = now();
        }
        out.mask |= UAPLEX_DATAVALUE_VALUE;
        return st;
    }
    return n.value.read(arena, out);
}

std::uint32_t readPermission(std::uint32_t attr) noexcept {
    if (attr == kAttrValue) return session::kPermRead;
    if (attr == kAttrRolePermissions) return session::kPermReadRolePermissions;
    return session::kPermBrowse;
}

std::uint8_t userAccessLevel(std::uint8_t level, std::uint32_t perms) noexcept {
    constexpr std::uint8_t kHistoryRead = 4, kHistoryWrite = 8;
    if (!(perms & session::kPermRead)) level &= std::uint8_t(~kCurrentRead);
    if (!(perms & session::kPermWrite))
        level &= std::uint8_t(~(kCurrentWrite | kStatusWrite | kTimestampWrite));
    if (!(perms & session::kPermReadHistory)) level &= std::uint8_t(~kHistoryRead);
    if (!(perms & (session::kPermInsertHistory | session::kPermModifyHistory |
                   session::kPermDeleteHistory)))
        level &= std::uint8_t(~kHistoryWrite);
    return level;
}

bool ServiceSet::Impl::rolePermissionsOf(enc::Arena& arena, const ua::NodeId& id,
                                         session::RoleMask only, ua::Variant& v) noexcept {
    const session::AccessPolicy* policy = accessPolicy.load(std::memory_order_acquire);
    session::RolePermissionTable table;
    if (!policy || !policy->rolePermissions(id, table)) return false;
    std::size_t n = 0;
    for (std::size_t i = 0; i < config::kRoleCount; ++i) n += table[i] && (only & (1u << i));
    auto* eos = arena.allocateArray<ua::ExtensionObject>(n);
    auto* rps = arena.allocateArray<ua::RolePermissionType>(n);
    if (n && (!eos || !rps)) return false;
    std::size_t k = 0;
    for (std::size_t i = 0; i < config::kRoleCount; ++i) {
        if (!table[i] || !(only & (1u << i))) continue;
        rps[k].roleId = ua::numericNodeId(0, config::kWellKnownRoles[i].nodeId);
        rps[k].permissions = static_cast<ua::PermissionType>(table[i]);
        eos[k] = ua::ExtensionObject{};
        eos[k].encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        eos[k].type_id =
            ua::numericNodeId(0, enc::dataTypeOf<ua::RolePermissionType>()->binaryEncodingId);
        eos[k].data_type = enc::dataTypeOf<ua::RolePermissionType>();
        eos[k].object = &rps[k];
        ++k;
    }
    v = ua::variantArray(ua::BuiltinType::ExtensionObject, std::int32_t(n), eos);
    return true;
}

void ServiceSet::Impl::finishOwnedRead(std::uint32_t attr, std::uint32_t perms,
                                       std::int32_t timestamps, uaplex_status status,
                                       ua::DataValue& out) noexcept {
    if (status == UAPLEX_BadNotSupported) status = UAPLEX_BadNodeIdUnknown;
    if (!pluginStatusOk(status) || (status == UAPLEX_Good && !pluginDataValueOk(out)))
        status = UAPLEX_BadInternalError;
    if (status != UAPLEX_Good) {
        out = ua::DataValue{};
        out.mask = UAPLEX_DATAVALUE_STATUS;
        out.status = status;
        return;
    }
    if (attr == kAttrUserAccessLevel &&
        (out.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_BYTE &&
        !ua::isArray(out.value))
        out.value.value.byte = userAccessLevel(out.value.value.byte, perms);
    if (attr == kAttrUserWriteMask &&
        (out.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_UINT32 &&
        !ua::isArray(out.value))
        out.value.value.uint32 = userWriteMask(out.value.value.uint32, perms);
    if (attr == kAttrUserExecutable && !(perms & session::kPermCall) &&
        (out.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_BOOLEAN)
        out.value.value.boolean = false;
    if (timestamps == 1 || timestamps == 3) out.mask &= ~UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    if (timestamps == 0 || timestamps == 3) out.mask &= ~UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
}

void ServiceSet::Impl::finishValueRead(enc::Arena& arena, uaplex_status st, const IndexRange& range,
                                       std::int32_t timestamps, ua::DataValue& out) noexcept {
    // As readValue and readAttribute do after a synchronous read callback.
    if (!pluginStatusOk(st) || (st == UAPLEX_Good && !pluginDataValueOk(out))) {
        out = ua::DataValue{};
        st = UAPLEX_BadInternalError;
    }
    if (st == UAPLEX_Good && !(out.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)) {
        out.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        out.source_timestamp = now();
    }
    out.mask |= UAPLEX_DATAVALUE_VALUE;
    if (st == UAPLEX_Good && range.count != 0) st = readIndexRange(arena, range, out.value);
    if (st != UAPLEX_Good) {
        out = ua::DataValue{};
        out.mask = UAPLEX_DATAVALUE_STATUS;
        out.status = st;
        return;
    }
    finishRead(kAttrValue, timestamps, out);
}

void ServiceSet::Impl::finishRead(std::uint32_t attr, std::int32_t timestamps,
                                  ua::DataValue& out) noexcept {
    // TimestampsToReturn: Source 0, Server 1, Both 2, Neither 3. Source timestamps only for
    // the Value attribute.
    bool wantSource = attr == kAttrValue && (timestamps == 0 || timestamps == 2);
    bool wantServer = timestamps == 1 || timestamps == 2;
    if (!wantSource)
        out.mask &= ~(UAPLEX_DATAVALUE_SOURCE_TIMESTAMP | UAPLEX_DATAVALUE_SOURCE_PICOSECONDS);
    if (wantServer) {
        out.mask |= UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
        out.server_timestamp = now();
    } else {
        out.mask &= ~(UAPLEX_DATAVALUE_SERVER_TIMESTAMP | UAPLEX_DATAVALUE_SERVER_PICOSECONDS);
    }
    if (out.status == UAPLEX_Good) out.mask &= ~UAPLEX_DATAVALUE_STATUS;
}

void ServiceSet::Impl::readAttribute(enc::Arena& arena, const ua::NodeId& id, std::uint32_t attr,
                                     const ua::String& indexRange, std::int32_t timestamps,
                                     ua::DataValue& out, const session::AccessView* access,
                                     AsyncBatch* batch, std::uint32_t index) noexcept {
    out = ua::DataValue{};
    auto fail = [&](uaplex_status st) {
        out = ua::DataValue{};
        out.mask = UAPLEX_DATAVALUE_STATUS;
        out.status = st;
    };
    // What the session may do with this node: one table index, or a search when node rules
    // exist (no allocation).
    const std::uint32_t perms = access ? access->permissions(id) : config::kAllPermissions;
    const bool permitted = (perms & readPermission(attr)) != 0;
    NodeRef node = space.find(id);
    if (!node) {
        if (SessionNodeRef ref; isSessionNode(id, ref))
            return readSessionNode(arena, id, ref, attr, indexRange, timestamps, out, access);
        const NamespaceOwner* owner = ownerOf(id.namespace_index);
        if (owner == nullptr || (owner->ops->read == nullptr && owner->readAsync == nullptr))
            return fail(UAPLEX_BadNodeIdUnknown);
        // The permission before the owner's read: a read may be device I/O, and a session
        // without Read must not cause it (nor learn whether the node exists).
        if (!permitted) return fail(deniedStatus(perms));
        const bool parks =
            owner->readAsync != nullptr || (owner->blocking && owner->ops->read != nullptr);
        if (parks && batch != nullptr && batch->enabled() &&
            batch->addOwnerRead(*owner, index, attr, perms))
            return;  // filled when the operation completes
        if (owner->ops->read == nullptr) return fail(UAPLEX_BadNotSupported);
        uaplex_read_item item{};
        item.hdr = UAPLEX_HEADER_INIT(uaplex_read_item, UAPLEX_STYPE_NODE_MANAGER_READ_ITEM);
        item.attribute_id = attr;
        item.node_id = &id;
        item.index_range =
            uaplex_str{indexRange.data, indexRange.length > 0 ? size_t(indexRange.length) : 0};
        uaplex_value_alloc alloc = arenaAlloc(arena);
        item.alloc = &alloc;
        ua::DataValue* results[1] = {&out};
        uaplex_status status = UAPLEX_Good;
        uaplex_status st = owner->ops->read(owner->self, 1, &item, results, &status);
        if (st != UAPLEX_Good && status == UAPLEX_Good) status = st;
        finishOwnedRead(attr, perms, timestamps, status, out);
        return;
    }
    // Without Browse the node is unknown to the session: before the attribute checks, whose
    // answers depend on the NodeClass.
    if (!(perms & session::kPermBrowse)) return fail(UAPLEX_BadNodeIdUnknown);
    std::uint8_t nc = node.nodeClass();
    if (attr == 0 || attr > kAttrAccessLevelEx || !(attributesOf(nc) & (1u << attr)))
        return fail(UAPLEX_BadAttributeIdInvalid);
    IndexRange range;
    if (parseIndexRange(indexRange, range) != UAPLEX_Good) return fail(UAPLEX_BadIndexRangeInvalid);
    if (range.count != 0 && attr != kAttrValue) return fail(UAPLEX_BadIndexRangeNoData);
    if (!permitted) return fail(UAPLEX_BadUserAccessDenied);

    const ns0::NodeRecord* rec = node.rec;
    const Node* dyn = node.dyn;
    ua::Variant& v = out.value;
    bool ok = true;
    out.mask = UAPLEX_DATAVALUE_VALUE;
    switch (attr) {
        case kAttrNodeId:
            ok = setBoxed(arena, v, ua::BuiltinType::NodeId, space.nodeIdOf(node));
            break;
        case kAttrNodeClass:
            setScalar<std::int32_t>(v, ua::BuiltinType::Int32, nc);
            break;
        case kAttrBrowseName:
            ok = setBoxed(arena, v, ua::BuiltinType::QualifiedName, space.browseNameOf(node));
            break;
        case kAttrDisplayName: {
            ua::LocalizedText t{};
            ok = space.displayNameOf(node, arena, t) &&
                 setBoxed(arena, v, ua::BuiltinType::LocalizedText, t);
            break;
        }
        case kAttrDescription: {
            ua::LocalizedText t{0, ua::nullString(), ua::nullString()};
            if (dyn)
                ok = dyn->texts.description.read(arena, dyn->description, t);
            else if (rec->description.length != 0xFFFFFFFFu)
                t = ua::makeLocalizedText({}, space.imageString(rec->description));
            ok = ok && setBoxed(arena, v, ua::BuiltinType::LocalizedText, t);
            break;
        }
        case kAttrWriteMask:
            setScalar<std::uint32_t>(v, ua::BuiltinType::UInt32, dyn ? dyn->writeMask.load() : 0);
            break;
        case kAttrUserWriteMask:
            setScalar<std::uint32_t>(v, ua::BuiltinType::UInt32,
                                     userWriteMask(dyn ? dyn->writeMask.load() : 0, perms));
            break;
        case kAttrIsAbstract:
            setScalar<bool>(v, ua::BuiltinType::Boolean,
                            dyn ? dyn->isAbstract.load() : (rec->flags & ns0::kAbstract) != 0);
            break;
        case kAttrSymmetric:
            setScalar<bool>(v, ua::BuiltinType::Boolean,
                            dyn ? dyn->symmetric.load() : (rec->flags & ns0::kSymmetric) != 0);
            break;
        case kAttrInverseName: {
            ua::LocalizedText t{0, ua::nullString(), ua::nullString()};
            if (dyn)
                ok = dyn->texts.inverseName.read(arena, dyn->inverseName, t);
            else if (rec->inverseName.length != 0xFFFFFFFFu)
                t = ua::makeLocalizedText({}, space.imageString(rec->inverseName));
            ok = ok && setBoxed(arena, v, ua::BuiltinType::LocalizedText, t);
            break;
        }
        case kAttrContainsNoLoops:
            setScalar<bool>(v, ua::BuiltinType::Boolean, (rec->flags & ns0::kContainsNoLoops) != 0);
            break;
        case kAttrEventNotifier:
            setScalar<std::uint8_t>(
                v, ua::BuiltinType::Byte,
                dyn ? dyn->eventNotifier.load()
                    : std::uint8_t(rec->eventNotifier | staticNotifierBitsOf(rec->id)));
            break;
        case kAttrValue: {
            const bool parks = dyn != nullptr &&
                               (dyn->callbacks.readAsync != nullptr ||
                                (dyn->callbacks.read != nullptr && offloads(dyn->callbacks.owner)));
            if (parks && batch != nullptr && batch->enabled() &&
                batch->addStoreRead(*const_cast<Node*>(dyn), index, range, timestamps))
                return;  // filled when the operation completes
            uaplex_status st = readValue(arena, node, out);
            if (st == UAPLEX_Good && range.count != 0) st = readIndexRange(arena, range, out.value);
            if (st != UAPLEX_Good) return fail(st);
            break;
        }
        case kAttrDataType:
            ok = setBoxed(arena, v, ua::BuiltinType::NodeId,
                          dyn ? dyn->dataType : ua::numericNodeId(0, rec->dataType));
            break;
        case kAttrValueRank:
            setScalar<std::int32_t>(v, ua::BuiltinType::Int32,
                                    dyn ? dyn->valueRank.load() : rec->valueRank);
            break;
        case kAttrArrayDimensions: {
            if (dyn) {
                if (dyn->arrayDimensions.empty()) {
                    v = ua::makeVariant(ua::BuiltinType::UInt32);
                    v.encoding |= UAPLEX_VARIANT_ARRAY;
                    v.array_length = -1;
                    break;
                }
                auto* dims = arena.allocateArray<std::uint32_t>(dyn->arrayDimensions.size());
                if (!dims) return fail(UAPLEX_BadOutOfMemory);
                std::memcpy(dims, dyn->arrayDimensions.data(), dyn->arrayDimensions.size() * 4);
                v = ua::variantArray(ua::BuiltinType::UInt32,
                                     std::int32_t(dyn->arrayDimensions.size()), dims);
                break;
            }
            auto blob = space.imageBlob(rec->arrayDimensions);
            v = ua::makeVariant(ua::BuiltinType::UInt32);
            v.encoding |= UAPLEX_VARIANT_ARRAY;
            v.array_length = -1;
            if (blob.size() >= 4) {
                std::int32_t n = 0;
                std::memcpy(&n, blob.data(), 4);
                if (n >= 0 && blob.size() >= 4 + 4 * std::size_t(n)) {
                    auto* dims = arena.allocateArray<std::uint32_t>(std::size_t(n));
                    if (n > 0 && !dims) return fail(UAPLEX_BadOutOfMemory);
                    if (n > 0) std::memcpy(dims, blob.data() + 4, 4 * std::size_t(n));
                    v.array_length = n;
                    v.value.pointer = dims;
                }
            }
            break;
        }
        case kAttrAccessLevel:
            setScalar<std::uint8_t>(v, ua::BuiltinType::Byte,
                                    dyn ? dyn->accessLevel.load() : rec->accessLevel);
            break;
        case kAttrUserAccessLevel:
            setScalar<std::uint8_t>(
                v, ua::BuiltinType::Byte,
                userAccessLevel(
                    dyn ? std::uint8_t(dyn->accessLevel & dyn->userAccessLevel) : rec->accessLevel,
                    perms));
            break;
        case kAttrAccessLevelEx:
            setScalar<std::uint32_t>(v, ua::BuiltinType::UInt32,
                                     dyn ? dyn->accessLevel.load() : rec->accessLevel);
            break;
        case kAttrMinimumSamplingInterval:
            setScalar<double>(
                v, ua::BuiltinType::Double,
                dyn ? dyn->minimumSamplingInterval.load() : rec->minimumSamplingInterval);
            break;
        case kAttrHistorizing:
            setScalar<bool>(v, ua::BuiltinType::Boolean,
                            rec ? (rec->flags & ns0::kHistorizing) != 0 : dyn->historizing.load());
            break;
        case kAttrExecutable:
        case kAttrUserExecutable: {
            bool executable = dyn ? dyn->executable.load() : (rec->flags & ns0::kExecutable) != 0;
            // A method a plugin implements by its NodeId (method_bind) can be called.
            if (!executable) executable = space.methodBinding(id) != nullptr;
            if (attr == kAttrUserExecutable && !(perms & session::kPermCall)) executable = false;
            setScalar<bool>(v, ua::BuiltinType::Boolean, executable);
            break;
        }
        case kAttrDataTypeDefinition: {
            if (dyn != nullptr) {
                // Added DataTypes keep the definition's binary body; the encoder writes it as is.
                if (dyn->definitionBody.empty()) return fail(UAPLEX_BadAttributeIdInvalid);
                auto* eo = arena.allocateArray<ua::ExtensionObject>(1);
                if (eo == nullptr) return fail(UAPLEX_BadOutOfMemory);
                *eo = ua::ExtensionObject{};
                eo->type_id = dyn->definitionEncoding;
                eo->encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
                eo->body = ua::ByteString{std::int32_t(dyn->definitionBody.size()),
                                          dyn->definitionBody.data()};
                v = ua::makeVariant(ua::BuiltinType::ExtensionObject);
                v.value.pointer = eo;
                break;
            }
            if (rec == nullptr || rec->dataTypeDefinition.length == 0)
                return fail(UAPLEX_BadAttributeIdInvalid);
            static const enc::DataType* eo = enc::findDataType("ExtensionObject");
            void* p = nullptr;
            uaplex_status st = decodeBlob(arena, space.imageBlob(rec->dataTypeDefinition), *eo, &p);
            if (st != UAPLEX_Good) return fail(st);
            v = ua::makeVariant(ua::BuiltinType::ExtensionObject);
            v.value.pointer = p;
            break;
        }
        case kAttrRolePermissions:
        case kAttrUserRolePermissions: {
            // Rules of [access] first: every role, or only the session's.
            session::RoleMask only =
                attr == kAttrRolePermissions || !access ? ~0u : access->roles();
            if (rolePermissionsOf(arena, id, only, v)) break;
            if (rec == nullptr || rec->rolePermissions.length == 0)
                return fail(UAPLEX_BadAttributeIdInvalid);
            void* p = nullptr;
            uaplex_status st = decodeBlob(arena, space.imageBlob(rec->rolePermissions),
                                          addressspace::variantType(), &p);
            if (st != UAPLEX_Good) return fail(st);
            v = *static_cast<ua::Variant*>(p);
            break;
        }
        case kAttrAccessRestrictions:
            setScalar<std::uint16_t>(v, ua::BuiltinType::UInt16, rec ? rec->accessRestrictions : 0);
            break;
        default:
            return fail(UAPLEX_BadAttributeIdInvalid);
    }
    if (!ok) return fail(UAPLEX_BadOutOfMemory);
    finishRead(attr, timestamps, out);
}

uaplex_status ServiceSet::Impl::read(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::ReadRequest*>(call.request);
    if (req.nodesToRead.size() == 0) return UAPLEX_BadNothingToDo;
    const auto limit = cfg.server.limits.max_nodes_per_read;
    if (limit != 0 && req.nodesToRead.size() > limit) return UAPLEX_BadTooManyOperations;
    if (req.maxAge < 0) return UAPLEX_BadMaxAgeInvalid;
    auto ts = static_cast<std::int32_t>(req.timestampsToReturn);
    if (ts < 0 || ts > 3) return UAPLEX_BadTimestampsToReturnInvalid;

    auto* resp = call.arena.allocateArray<ua::ReadResponse>(1);
    auto* results = call.arena.allocateArray<ua::DataValue>(req.nodesToRead.size());
    if (resp == nullptr || results == nullptr) return UAPLEX_BadOutOfMemory;
    resp->results = {req.nodesToRead.length, results};
    resp->diagnosticInfos = {-1, nullptr};
    AsyncBatch batch(*this, call);
    for (std::size_t i = 0; i < req.nodesToRead.size(); ++i) {
        const ua::ReadValueId& rv = req.nodesToRead[i];
        const ua::QualifiedName& enc = rv.dataEncoding;
        if (enc.name.length > 0 || enc.namespace_index != 0) {
            // Only the default (binary) encoding exists for our values.
            bool binary = enc.namespace_index == 0 && ua::view(enc.name) == "Default Binary";
            if (!binary) {
                results[i].mask = UAPLEX_DATAVALUE_STATUS;
                results[i].status = rv.attributeId == kAttrValue ? UAPLEX_BadDataEncodingUnsupported
                                                                 : UAPLEX_BadDataEncodingInvalid;
                continue;
            }
            if (rv.attributeId != kAttrValue) {
                results[i].mask = UAPLEX_DATAVALUE_STATUS;
                results[i].status = UAPLEX_BadDataEncodingInvalid;
                continue;
            }
        }
        readAttribute(call.arena, rv.nodeId, rv.attributeId, rv.indexRange, ts, results[i],
                      call.access, &batch, std::uint32_t(i));
    }
    if (!batch.empty()) {
        // Some items wait for asynchronous operations: the last one to complete answers.
        uaplex_status st = batch.startRead(resp, results, req, ts);
        if (st != UAPLEX_Good) return st;
    }
    call.responseType = enc::dataTypeOf<ua::ReadResponse>();
    call.response = resp;
    return UAPLEX_Good;
}

// --- Write ----------------------------------------------------------------------------------

bool ServiceSet::Impl::typeMatches(const ua::NodeId& dataType,
                                   const ua::Variant& value) const noexcept {
    std::uint8_t bt = value.encoding & UAPLEX_VARIANT_TYPE_MASK;
    bool ns0 = dataType.namespace_index == 0 && dataType.identifier_type == UAPLEX_ID_NUMERIC;
    std::uint32_t dt = ns0 ? dataType.identifier.numeric : 0;
    if (ns0 && dt == kBaseDataType) return true;
    if (bt == UAPLEX_TYPE_NULL) return false;
    if (bt == UAPLEX_TYPE_EXTENSIONOBJECT) {
        // Every element's structure type must be the DataType or a subtype of it.
        std::size_t n = ua::isArray(value) ? std::size_t(std::max(0, value.array_length)) : 1;
        const auto* eos = static_cast<const ua::ExtensionObject*>(value.value.pointer);
        for (std::size_t i = 0; i < n; ++i) {
            const ua::ExtensionObject& eo = eos[i];
            std::uint32_t typeId = 0;
            if (eo.data_type != nullptr)
                typeId = static_cast<const enc::DataType*>(eo.data_type)->typeId;
            else if (eo.type_id.namespace_index == 0 &&
                     eo.type_id.identifier_type == UAPLEX_ID_NUMERIC)
                if (const auto* d = enc::findDataTypeByEncodingId(eo.type_id.identifier.numeric))
                    typeId = d->typeId;
            if (!ns0) {
                if (typeId != 0) return false;  // a known ns0 structure for a vendor type
                continue;
            }
            if (typeId == 0) {
                if (dt != kStructure) return false;
                continue;
            }
            if (!space.isSubtypeOf(typeId, dt)) return false;
        }
        return true;
    }
    if (!ns0) return false;
    if (space.isSubtypeOf(dt, kEnumeration)) return bt == UAPLEX_TYPE_INT32;
    if (space.isSubtypeOf(bt, dt)) return true;  // e.g. Int32 into Number
    // A built-in value for a DataType derived from it (UtcTime, Duration, LocaleId, ...).
    return bt != UAPLEX_TYPE_VARIANT && dt != kStructure && space.isSubtypeOf(dt, bt);
}

bool ServiceSet::Impl::rankMatches(std::int32_t rank, const ua::Variant& value) noexcept {
    if ((value.encoding & UAPLEX_VARIANT_TYPE_MASK) == 0) return true;
    bool array = ua::isArray(value);
    std::int32_t dims = array ? std::max(1, value.dimensions_length) : 0;
    switch (rank) {
        case -3:
            return dims <= 1;  // ScalarOrOneDimension
        case -2:
            return true;  // Any
        case -1:
            return !array;  // Scalar
        case 0:
            return array;  // OneOrMoreDimensions
        default:
            return dims == rank;
    }
}

uaplex_status ServiceSet::Impl::writeStoreAttribute(Node& n, const ua::WriteValue& wv) noexcept {
    if (uaplex_status st = checkAttributeWrite(n.writeMask, wv); st != UAPLEX_Good) return st;
    const ua::Variant& v = wv.value.value;
    switch (wv.attributeId) {
        case kAttrDisplayName:
        case kAttrDescription:
        case kAttrInverseName: {
            const auto& text = *static_cast<const ua::LocalizedText*>(v.value.pointer);
            addressspace::TextSlot& slot = wv.attributeId == kAttrDisplayName ? n.texts.displayName
                                           : wv.attributeId == kAttrDescription
                                               ? n.texts.description
                                               : n.texts.inverseName;
            return slot.store(text);
        }
        case kAttrWriteMask:
            if (v.value.uint32 & ~kWriteMaskDefined) return UAPLEX_BadOutOfRange;
            n.writeMask = v.value.uint32;
            return UAPLEX_Good;
        case kAttrIsAbstract:
            n.isAbstract = v.value.boolean;
            return UAPLEX_Good;
        case kAttrSymmetric:
            n.symmetric = v.value.boolean;
            return UAPLEX_Good;
        case kAttrExecutable:
            n.executable = v.value.boolean;
            return UAPLEX_Good;
        case kAttrEventNotifier:
            // SubscribeToEvents, HistoryRead, HistoryWrite (Part 3 8.59); the rest is reserved.
            if (v.value.byte & ~0x0Du) return UAPLEX_BadOutOfRange;
            n.eventNotifier = v.value.byte;
            return UAPLEX_Good;
        case kAttrValueRank:
            if (v.value.int32 < -3) return UAPLEX_BadOutOfRange;
            n.valueRank = v.value.int32;
            return UAPLEX_Good;
        case kAttrAccessLevel:
        case kAttrUserAccessLevel:
            if (v.value.byte & 0x80u) return UAPLEX_BadOutOfRange;  // reserved (Part 3 8.57)
            (wv.attributeId == kAttrAccessLevel ? n.accessLevel : n.userAccessLevel) = v.value.byte;
            return UAPLEX_Good;
        case kAttrAccessLevelEx:
            // Only the AccessLevel bits are kept; the extended ones are not implemented.
            if (v.value.uint32 & ~0x7Fu) return UAPLEX_BadOutOfRange;
            n.accessLevel = std::uint8_t(v.value.uint32);
            return UAPLEX_Good;
        case kAttrMinimumSamplingInterval:
            // A Duration: 0 or more, or -1 (indeterminate); NaN is neither.
            if (!(v.value.double_ >= 0) && v.value.double_ != -1) return UAPLEX_BadOutOfRange;
            n.minimumSamplingInterval = v.value.double_;
            return UAPLEX_Good;
        default:
            // NodeId, NodeClass, BrowseName, DataType, ArrayDimensions and type definitions
            // shape what other services read without a lock; UserWriteMask, UserAccessLevel's
            // session part, UserExecutable, RolePermissions follow [access]; no history.
            return UAPLEX_BadWriteNotSupported;
    }
}

uaplex_status ServiceSet::Impl::storeWritten(Node& n, const ua::DataValue& dv,
                                             uaplex_status st) noexcept {
    if (st != UAPLEX_Good || n.callbacks.readsValue()) return st;
    st = n.value.store(dv);
    if (st == UAPLEX_Good) changed(n, dv);
    return st;
}

uaplex_status ServiceSet::Impl::writeOne(enc::Arena& arena, const ua::WriteValue& wv,
                                         const session::AccessView* access, AsyncBatch* batch,
                                         std::uint32_t index) noexcept {
    NodeRef node = space.find(wv.nodeId);
    const std::uint32_t attr = wv.attributeId;
    const std::uint32_t perms = access ? access->permissions(wv.nodeId) : config::kAllPermissions;
    const bool permitted = (perms & writePermission(attr)) != 0;
    if (!node) {
        if (SessionNodeRef ref; isSessionNode(wv.nodeId, ref)) {
            // Diagnostics are read only; a node of another's session is no oracle either.
            if (!(nodePermissions(access, wv.nodeId) & session::kPermBrowse) ||
                !sessionDiagnosed(ref.session, arena, nullptr))
                return UAPLEX_BadNodeIdUnknown;
            return UAPLEX_BadNotWritable;
        }
        // The permission before the owner's write (and WriteMask read) runs.
        const NamespaceOwner* owner = ownerOf(wv.nodeId.namespace_index);
        if (!permitted) return owner ? deniedStatus(perms) : UAPLEX_BadNodeIdUnknown;
        if (owner == nullptr || (owner->ops->write == nullptr && owner->writeAsync == nullptr))
            return UAPLEX_BadNodeIdUnknown;
        if (attr == 0 || attr > kAttrAccessLevelEx) return UAPLEX_BadAttributeIdInvalid;
        if (attr != kAttrValue) {
            // The plugin's WriteMask decides, as it does for store nodes; a plugin that has
            // none for the node has nothing writable but its values.
            ua::DataValue mask{};
            readAttribute(arena, wv.nodeId, kAttrWriteMask, ua::nullString(), 3, mask);
            if ((mask.mask & UAPLEX_DATAVALUE_STATUS) && mask.status == UAPLEX_BadNodeIdUnknown)
                return UAPLEX_BadNodeIdUnknown;
            std::uint32_t m = 0;
            if (!(mask.mask & UAPLEX_DATAVALUE_STATUS) &&
                (mask.value.encoding & UAPLEX_VARIANT_TYPE_MASK) == UAPLEX_TYPE_UINT32 &&
                !ua::isArray(mask.value))
                m = mask.value.value.uint32;
            if (uaplex_status st = checkAttributeWrite(m, wv); st != UAPLEX_Good) return st;
        }
        const bool parks =
            owner->writeAsync != nullptr || (owner->blocking && owner->ops->write != nullptr);
        if (parks && batch != nullptr && batch->enabled() && batch->addOwnerWrite(*owner, index))
            return UAPLEX_Good;  // set when the operation completes
        if (owner->ops->write == nullptr) return UAPLEX_BadNotSupported;
        uaplex_write_item item{};
        item.hdr = UAPLEX_HEADER_INIT(uaplex_write_item, UAPLEX_STYPE_NODE_MANAGER_WRITE_ITEM);
        item.attribute_id = attr;
        item.node_id = &wv.nodeId;
        item.index_range = uaplex_str{wv.indexRange.data,
                                      wv.indexRange.length > 0 ? size_t(wv.indexRange.length) : 0};
        item.value = &wv.value;
        uaplex_status status = UAPLEX_Good;
        uaplex_status st = owner->ops->write(owner->self, 1, &item, &status);
        if (st != UAPLEX_Good && status == UAPLEX_Good) status = st;
        if (!pluginStatusOk(status)) return UAPLEX_BadInternalError;
        return status == UAPLEX_BadNotSupported ? UAPLEX_BadNodeIdUnknown : status;
    }
    if (!(perms & session::kPermBrowse)) return UAPLEX_BadNodeIdUnknown;  // as for Read
    std::uint8_t nc = node.nodeClass();
    if (attr == 0 || attr > kAttrAccessLevelEx || !(attributesOf(nc) & (1u << attr)))
        return UAPLEX_BadAttributeIdInvalid;
    IndexRange range;
    if (parseIndexRange(wv.indexRange, range) != UAPLEX_Good) return UAPLEX_BadIndexRangeInvalid;
    if (!permitted) return UAPLEX_BadUserAccessDenied;
    // Namespace 0 is the constant image: WriteMask 0 everywhere.
    if (attr != kAttrValue)
        return node.dyn ? writeStoreAttribute(*const_cast<Node*>(node.dyn), wv)
                        : UAPLEX_BadNotWritable;
    if (nc == addressspace::kVariableType) {
        // A VariableType's default value: its ValueForVariableType bit, then the type checks.
        if (!node.dyn || !(node.dyn->writeMask & kBitValueForVariableType))
            return UAPLEX_BadNotWritable;
    } else if (nc != addressspace::kVariable) {
        return UAPLEX_BadNotWritable;
    }
    if (node.rec && node.rec->id == ua::ns0::Server_ServerDiagnostics_EnabledFlag) {
        // The one writable Server variable (Part 5 12.2): diagnostics on or off.
        const ua::Variant& v = wv.value.value;
        if (range.count != 0) return UAPLEX_BadIndexRangeInvalid;
        if ((v.encoding & UAPLEX_VARIANT_TYPE_MASK) != UAPLEX_TYPE_BOOLEAN || ua::isArray(v))
            return UAPLEX_BadTypeMismatch;
        counters.diagnosticsEnabled.store(v.value.boolean, std::memory_order_relaxed);
        return UAPLEX_Good;
    }
    if (node.rec) {
        // Namespace-0 values are constants or the Server object's live values.
        return (node.rec->accessLevel & kCurrentWrite) ? UAPLEX_BadWriteNotSupported
                                                       : UAPLEX_BadNotWritable;
    }
    Node& n = *const_cast<Node*>(node.dyn);
    // A VariableType has no AccessLevel: its WriteMask bit stands for CurrentWrite.
    const std::uint8_t level =
        nc == addressspace::kVariableType ? std::uint8_t(kCurrentWrite) : n.accessLevel.load();
    if (!(level & kCurrentWrite)) return UAPLEX_BadNotWritable;
    if (nc == addressspace::kVariable && !(n.userAccessLevel & kCurrentWrite))
        return UAPLEX_BadUserAccessDenied;

    ua::DataValue dv = wv.value;
    if ((dv.mask & UAPLEX_DATAVALUE_STATUS) && dv.status != 0 && !(level & kStatusWrite))
        return UAPLEX_BadWriteNotSupported;
    bool hasTimestamp =
        ((dv.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) && dv.source_timestamp != 0) ||
        ((dv.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) && dv.server_timestamp != 0);
    if (hasTimestamp && !(level & kTimestampWrite)) return UAPLEX_BadWriteNotSupported;
    if (!(dv.mask & UAPLEX_DATAVALUE_VALUE)) return UAPLEX_BadTypeMismatch;
    if (!typeMatches(n.dataType, dv.value)) return UAPLEX_BadTypeMismatch;

    if (range.count != 0) {
        // Replace the selected elements of the current value.
        ua::DataValue current{};
        uaplex_status st = readValue(arena, node, current);
        if (st != UAPLEX_Good) return st;
        st = writeIndexRange(arena, range, current.value, dv.value);
        if (st != UAPLEX_Good) return st;
        ua::Variant& cur = current.value;
        dv.value = cur;
    } else {
        if (!rankMatches(n.valueRank, dv.value)) return UAPLEX_BadTypeMismatch;
        if (ua::isArray(dv.value) && n.arrayDimensions.size() == 1 && n.arrayDimensions[0] != 0 &&
            std::uint32_t(std::max(0, dv.value.array_length)) > n.arrayDimensions[0])
            return UAPLEX_BadTypeMismatch;
    }
    ua::DateTime t = now();
    if (!(dv.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) || dv.source_timestamp == 0) {
        dv.mask |= UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
        dv.source_timestamp = t;
    }
    dv.mask |= UAPLEX_DATAVALUE_SERVER_TIMESTAMP;
    dv.server_timestamp = t;
    const bool parks = n.callbacks.writeAsync != nullptr ||
                       (n.callbacks.write != nullptr && offloads(n.callbacks.owner));
    if (parks && batch != nullptr && batch->enabled() && batch->addStoreWrite(n, index, dv))
        return UAPLEX_Good;  // set when the operation completes
    if (n.callbacks.write != nullptr) {
        uaplex_status st =
            storeCallback("write", [&] { return n.callbacks.write(n.callbacks.user, &n.id, &dv); });
        if (!pluginStatusOk(st)) return UAPLEX_BadInternalError;
        return storeWritten(n, dv, st);
    }
    if (n.callbacks.writeAsync != nullptr) return UAPLEX_BadNotSupported;  // no request to park
    if (n.callbacks.readsValue())
        return UAPLEX_BadNotWritable;  // values come from the plugin and cannot be stored
    if (persistence && persistence->entryOf(&n)) {
        // Answered when committed (or not); stored in memory only then.
        if (batch != nullptr && batch->enabled() && batch->addPersistWrite(n, index, dv))
            return UAPLEX_Good;
        return UAPLEX_BadResourceUnavailable;  // no request to park
    }
    return storeWritten(n, dv, UAPLEX_Good);
}

uaplex_status ServiceSet::Impl::write(ServiceCall& call) noexcept {
    const auto& req = *static_cast<const ua::WriteRequest*>(call.request);
    if (req.nodesToWrite.size() == 0) return UAPLEX_BadNothingToDo;
    const auto limit = cfg.server.limits.max_nodes_per_write;
    if (limit != 0 && req.nodesToWrite.size() > limit) return UAPLEX_BadTooManyOperations;
    auto* resp = call.arena.allocateArray<ua::WriteResponse>(1);
    auto* results = call.arena.allocateArray<ua::StatusCode>(req.nodesToWrite.size());
    if (resp == nullptr || results == nullptr) return UAPLEX_BadOutOfMemory;
    resp->results = {req.nodesToWrite.length, results};
    resp->diagnosticInfos = {-1, nullptr};
    AsyncBatch batch(*this, call);
    for (std::size_t i = 0; i < req.nodesToWrite.size(); ++i)
        results[i] =
            writeOne(call.arena, req.nodesToWrite[i], call.access, &batch, std::uint32_t(i));
    if (!batch.empty()) {
        // Some items wait for asynchronous operations: the last one to complete answers.
        uaplex_status st = batch.startWrite(resp, results, req);
        if (st != UAPLEX_Good) return st;
    }
    call.responseType = enc::dataTypeOf<ua::WriteResponse>();
    call.response = resp;
    return UAPLEX_Good;
}

}  // namespace uaplex::services
