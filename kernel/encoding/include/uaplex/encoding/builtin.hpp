// SPDX-License-Identifier: Apache-2.0
// C++ names for the built-in types of sdk/include/uaplex/types.h, plus small helpers.
// The C++ types *are* the C structs, so a decoded value can be handed to a plugin as is.
#pragma once

#include <uaplex/types.h>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <span>
#include <string_view>
#include <type_traits>

namespace uaplex::ua {

using Boolean = bool;
using SByte = std::int8_t;
using Byte = std::uint8_t;
using Int16 = std::int16_t;
using UInt16 = std::uint16_t;
using Int32 = std::int32_t;
using UInt32 = std::uint32_t;
using Int64 = std::int64_t;
using UInt64 = std::uint64_t;
using Float = float;
using Double = double;
using DateTime = uaplex_datetime;
using StatusCode = uaplex_statuscode;
using String = uaplex_string;
using ByteString = uaplex_bytestring;
using XmlElement = uaplex_xmlelement;
using Guid = uaplex_guid;
using NodeId = uaplex_nodeid;
using ExpandedNodeId = uaplex_expandednodeid;
using QualifiedName = uaplex_qualifiedname;
using LocalizedText = uaplex_localizedtext;
using Variant = uaplex_variant;
using DataValue = uaplex_datavalue;
using ExtensionObject = uaplex_extensionobject;
using DiagnosticInfo = uaplex_diagnosticinfo;

// A typed array with the layout of uaplex_array: length (-1 null) and elements in the arena.
template <class T>
struct Array {
    std::int32_t length;
    T* data;

    bool isNull() const noexcept { return length < 0; }
    std::size_t size() const noexcept { return length > 0 ? std::size_t(length) : 0; }
    T* begin() const noexcept { return data; }
    T* end() const noexcept { return data + size(); }
    T& operator[](std::size_t i) const noexcept { return data[i]; }
    std::span<T> span() const noexcept { return {data, size()}; }
};
static_assert(sizeof(Array<int>) == sizeof(uaplex_array));
static_assert(offsetof(Array<int>, data) == offsetof(uaplex_array, data));

static_assert(std::is_standard_layout_v<Variant> && std::is_trivially_copyable_v<Variant>);
static_assert(std::is_standard_layout_v<DataValue> && std::is_trivially_copyable_v<DataValue>);
static_assert(std::is_standard_layout_v<NodeId> && std::is_trivially_copyable_v<NodeId>);
static_assert(std::is_standard_layout_v<ExtensionObject>);
static_assert(std::is_standard_layout_v<DiagnosticInfo>);

// The variant type id of a built-in type (Part 6 Table 1): the scoped C++ name of
// uaplex_builtin_type, one enumerator per row of UAPLEX_BUILTIN_TYPES.
enum class BuiltinType : std::uint8_t {
    Null = UAPLEX_TYPE_NULL,
#define UAPLEX_BUILTIN_ENUMERATOR_(id, name, c_type) name = id,
    UAPLEX_BUILTIN_TYPES(UAPLEX_BUILTIN_ENUMERATOR_)
#undef UAPLEX_BUILTIN_ENUMERATOR_
};

// ---- DateTime (Part 6 5.2.2.5: 100 ns ticks since 1601-01-01 UTC) ----

constexpr DateTime kUnixEpoch = UAPLEX_DATETIME_UNIX_EPOCH;  // 1970-01-01 00:00 UTC
constexpr std::int64_t kTicksPerSecond = UAPLEX_DATETIME_TICKS_PER_SECOND;

constexpr DateTime dateTimeFromUnixSeconds(std::int64_t seconds) noexcept {
    return kUnixEpoch + seconds * kTicksPerSecond;
}
// The system clock as a DateTime; inline, as every request reads it.
inline DateTime utcNow() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return kUnixEpoch + std::int64_t(ts.tv_sec) * kTicksPerSecond + ts.tv_nsec / 100;
}

// ---- helpers: views and constructors (never allocate; strings borrow their text) ----

constexpr String nullString() noexcept {
    return String{-1, nullptr};
}
inline String makeString(std::string_view s) noexcept {
    return String{static_cast<std::int32_t>(s.size()), s.data()};
}
inline std::string_view view(const String& s) noexcept {
    return s.length > 0 ? std::string_view(s.data, std::size_t(s.length)) : std::string_view();
}
constexpr ByteString nullByteString() noexcept {
    return ByteString{-1, nullptr};
}
inline ByteString makeByteString(std::span<const std::uint8_t> b) noexcept {
    return ByteString{static_cast<std::int32_t>(b.size()), b.data()};
}
inline std::span<const std::uint8_t> view(const ByteString& b) noexcept {
    return b.length > 0 ? std::span<const std::uint8_t>(b.data, std::size_t(b.length))
                        : std::span<const std::uint8_t>();
}

constexpr NodeId numericNodeId(std::uint16_t ns, std::uint32_t id) noexcept {
    NodeId n{};
    n.namespace_index = ns;
    n.identifier_type = UAPLEX_ID_NUMERIC;
    n.identifier.numeric = id;
    return n;
}
inline NodeId stringNodeId(std::uint16_t ns, std::string_view id) noexcept {
    NodeId n{};
    n.namespace_index = ns;
    n.identifier_type = UAPLEX_ID_STRING;
    n.identifier.string = makeString(id);
    return n;
}
// Identity comparison (namespace, identifier type and identifier).
bool equal(const NodeId& a, const NodeId& b) noexcept;

inline LocalizedText makeLocalizedText(std::string_view locale, std::string_view text) noexcept {
    LocalizedText t{};
    t.mask = (locale.empty() ? 0 : UAPLEX_LOCALIZEDTEXT_LOCALE) | UAPLEX_LOCALIZEDTEXT_TEXT;
    t.locale = locale.empty() ? nullString() : makeString(locale);
    t.text = makeString(text);
    return t;
}

inline BuiltinType variantType(const Variant& v) noexcept {
    return static_cast<BuiltinType>(v.encoding & UAPLEX_VARIANT_TYPE_MASK);
}
inline bool isArray(const Variant& v) noexcept {
    return (v.encoding & UAPLEX_VARIANT_ARRAY) != 0;
}

// Scalar variants of the types held inline.
inline Variant makeVariant(BuiltinType t) noexcept {
    Variant v{};
    v.encoding = static_cast<std::uint8_t>(t);
    return v;
}
inline Variant variantBoolean(bool x) noexcept {
    auto v = makeVariant(BuiltinType::Boolean);
    v.value.boolean = x;
    return v;
}
inline Variant variantInt32(std::int32_t x) noexcept {
    auto v = makeVariant(BuiltinType::Int32);
    v.value.int32 = x;
    return v;
}
inline Variant variantUInt32(std::uint32_t x) noexcept {
    auto v = makeVariant(BuiltinType::UInt32);
    v.value.uint32 = x;
    return v;
}
inline Variant variantDouble(double x) noexcept {
    auto v = makeVariant(BuiltinType::Double);
    v.value.double_ = x;
    return v;
}
inline Variant variantString(std::string_view s) noexcept {
    auto v = makeVariant(BuiltinType::String);
    v.value.string = makeString(s);
    return v;
}
// A one-dimensional array variant over caller-owned elements of the type's C representation.
inline Variant variantArray(BuiltinType t, std::int32_t length, void* elements) noexcept {
    Variant v{};
    v.encoding = static_cast<std::uint8_t>(t) | UAPLEX_VARIANT_ARRAY;
    v.array_length = length;
    v.value.pointer = elements;
    return v;
}

}  // namespace uaplex::ua
