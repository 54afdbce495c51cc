// SPDX-License-Identifier: Apache-2.0
// Type descriptors: one per generated structure/enumeration and per built-in type.
// They give generic (by-name, by-field) access for tests, interop tooling, JSON later and
// message dispatch; the hot path calls the typed codecs directly.
#pragma once

#include <uaplex/encoding/binary.hpp>

#include <cstdint>
#include <span>
#include <string_view>

namespace uaplex::enc {

struct DataType;

enum class TypeKind : std::uint8_t {
    BuiltIn,                      // one of the 25 built-in types
    Structure,                    // plain structure
    StructureWithOptionalFields,  // has an encodingMask (UInt32) selecting optional fields
    Union,                        // has a switchField (UInt32) selecting one member
    Enumeration,
};

// What a field holds: a built-in type (its BuiltinType id, so FieldKind(BuiltinType) converts),
// or, past the built-in ids, a described enumeration or structure.
enum class FieldKind : std::uint8_t {
    Enumeration = 30,  // `type` describes it; stored as its underlying integer
    Structure = 31,    // `type` describes it; stored by value
#define UAPLEX_FIELD_KIND_ENUMERATOR_(id, name, c_type) name = id,
    UAPLEX_BUILTIN_TYPES(UAPLEX_FIELD_KIND_ENUMERATOR_)
#undef UAPLEX_FIELD_KIND_ENUMERATOR_
};
static_assert(static_cast<unsigned>(FieldKind::Enumeration) > UAPLEX_TYPE_MAX);

struct FieldDescriptor {
    std::string_view name;  // lowerCamelCase, as the C++ member
    std::uint32_t offset;   // of the member (an Array<T> when isArray)
    FieldKind kind;
    bool isArray;
    std::int8_t optionalBit;    // bit in encodingMask, -1 when not optional
    std::uint32_t switchValue;  // union member selector, 0 when not a union member
    const DataType* type;       // for Structure/Enumeration fields, else nullptr
};

struct EnumValue {
    std::string_view name;
    std::int64_t value;
};

using DecodeFn = void (*)(BinaryReader&, void*) noexcept;
using EncodeFn = void (*)(BinaryWriter&, const void*) noexcept;

struct DataType {
    std::string_view name;
    std::uint32_t typeId;            // ns0 DataType NodeId (0 if unknown)
    std::uint32_t binaryEncodingId;  // ns0 <Name>_Encoding_DefaultBinary (0 if none)
    std::uint32_t size;
    std::uint32_t alignment;
    TypeKind kind;
    std::uint8_t builtinId;  // for BuiltIn: the type id; for Enumeration: byte width
    std::uint32_t minEncodedSize;
    std::uint32_t selectorOffset;  // encodingMask / switchField offset (optional/union)
    const FieldDescriptor* fields;
    std::uint32_t fieldCount;
    const EnumValue* enumValues;
    std::uint32_t enumValueCount;
    DecodeFn decodeFn;
    EncodeFn encodeFn;
    std::uint32_t jsonEncodingId = 0;  // ns0 <Name>_Encoding_DefaultJson (0 if none)

    std::span<const FieldDescriptor> fieldSpan() const noexcept { return {fields, fieldCount}; }
    std::span<const EnumValue> enumSpan() const noexcept { return {enumValues, enumValueCount}; }
    const FieldDescriptor* field(std::string_view fieldName) const noexcept;
};

// The descriptor of a generated structure type T (each has a dataTypeOf(const T*) overload).
template <class T>
const DataType* dataTypeOf() noexcept {
    return dataTypeOf(static_cast<const T*>(nullptr));
}

// Generated structures have their codecs next to them (uaplex::ua), found by argument-
// dependent lookup. These forward qualified calls such as enc::decode(r, request) to them;
// an unqualified call still binds directly to the generated function.
template <class T>
requires(std::is_class_v<T>&& requires(const T* p) { dataTypeOf(p); }) void decode(BinaryReader& r,
                                                                                   T& v) noexcept {
    dataTypeOf(static_cast<const T*>(&v))->decodeFn(r, &v);
}
template <class T>
requires(std::is_class_v<T>&& requires(const T* p) {
    dataTypeOf(p);
}) void encode(BinaryWriter& w, const T& v) noexcept {
    dataTypeOf(&v)->encodeFn(w, &v);
}

// All descriptors: the built-in types first (by type id), then the generated ones.
std::span<const DataType> allDataTypes() noexcept;
const DataType* findDataType(std::string_view name) noexcept;
const DataType* findDataTypeByTypeId(std::uint32_t ns0TypeId) noexcept;
// Structures only: lookup by ns0 "<Name>_Encoding_DefaultBinary" id.
const DataType* findDataTypeByEncodingId(std::uint32_t ns0EncodingId) noexcept;
// Structures only: lookup by ns0 "<Name>_Encoding_DefaultJson" id (the JSON decoder's
// ExtensionObject TypeId; not on a hot path, a linear search).
const DataType* findDataTypeByJsonEncodingId(std::uint32_t ns0EncodingId) noexcept;

// Generic codecs through the descriptor. `out` must point to storage of type.size bytes
// (zero-initialised is not required; every field is written).
inline void decode(BinaryReader& r, const DataType& type, void* out) noexcept {
    type.decodeFn(r, out);
}
inline void encode(BinaryWriter& w, const DataType& type, const void* value) noexcept {
    type.encodeFn(w, value);
}

// Decodes one value of `type` from the whole of `input` into arena storage. Trailing bytes
// are a BadDecodingError. Returns the status; *out receives the object (or nullptr).
uaplex_status decodeValue(std::span<const std::uint8_t> input, Arena& arena,
                          const DecodeLimits& limits, const DataType& type, void** out) noexcept;

// Appends the encoding of one value of `type` to `out`; returns the writer status.
uaplex_status encodeValue(ByteBuffer& out, const DataType& type, const void* value,
                          std::size_t maxSize = 64u << 20) noexcept;

// StatusCode names and descriptions from StatusCode.csv (info bits ignored); "" if unknown.
std::string_view statusName(std::uint32_t code) noexcept;
std::string_view statusDescription(std::uint32_t code) noexcept;

}  // namespace uaplex::enc
