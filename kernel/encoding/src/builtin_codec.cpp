// SPDX-License-Identifier: Apache-2.0
// Codecs of the structured built-in types (Part 6 5.2.2.7-5.2.2.17).
#include <uaplex/encoding/datatype.hpp>

#include <array>
#include <cstring>

namespace uaplex::enc {

namespace {

// NodeId encoding byte (Part 6 Table 8); the high bits are ExpandedNodeId flags.
constexpr std::uint8_t kTwoByte = 0x00;
constexpr std::uint8_t kFourByte = 0x01;
constexpr std::uint8_t kNumeric = 0x02;
constexpr std::uint8_t kString = 0x03;
constexpr std::uint8_t kGuid = 0x04;
constexpr std::uint8_t kByteString = 0x05;

// Decodes a NodeId whose encoding byte was already read (ExpandedNodeId shares it).
void decodeNodeIdBody(BinaryReader& r, NodeId& v, std::uint8_t form) noexcept {
    v = NodeId{};
    switch (form) {
        case kTwoByte:
            v.identifier.numeric = r.readRaw<std::uint8_t>();
            break;
        case kFourByte:
            v.namespace_index = r.readRaw<std::uint8_t>();
            v.identifier.numeric = r.readRaw<std::uint16_t>();
            break;
        case kNumeric:
            v.namespace_index = r.readRaw<std::uint16_t>();
            v.identifier.numeric = r.readRaw<std::uint32_t>();
            break;
        case kString:
            v.namespace_index = r.readRaw<std::uint16_t>();
            v.identifier_type = UAPLEX_ID_STRING;
            decode(r, v.identifier.string);
            break;
        case kGuid:
            v.namespace_index = r.readRaw<std::uint16_t>();
            v.identifier_type = UAPLEX_ID_GUID;
            decode(r, v.identifier.guid);
            break;
        case kByteString:
            v.namespace_index = r.readRaw<std::uint16_t>();
            v.identifier_type = UAPLEX_ID_BYTESTRING;
            decode(r, v.identifier.bytestring);
            break;
        default:
            r.fail(UAPLEX_BadDecodingError);
            break;
    }
}

// Encodes a NodeId in the most compact form, OR-ing `flags` (ExpandedNodeId) into the byte.
void encodeNodeId(BinaryWriter& w, const NodeId& v, std::uint8_t flags) noexcept {
    switch (v.identifier_type) {
        case UAPLEX_ID_NUMERIC: {
            std::uint32_t id = v.identifier.numeric;
            if (v.namespace_index == 0 && id <= 0xFF) {
                if (std::uint8_t* p = w.reserve(2)) {
                    p[0] = kTwoByte | flags;
                    p[1] = std::uint8_t(id);
                }
            } else if (v.namespace_index <= 0xFF && id <= 0xFFFF) {
                if (std::uint8_t* p = w.reserve(4)) {
                    p[0] = kFourByte | flags;
                    p[1] = std::uint8_t(v.namespace_index);
                    std::uint16_t id16 = std::uint16_t(id);
                    std::memcpy(p + 2, &id16, 2);
                }
            } else if (std::uint8_t* p = w.reserve(7)) {
                p[0] = kNumeric | flags;
                std::memcpy(p + 1, &v.namespace_index, 2);
                std::memcpy(p + 3, &id, 4);
            }
            break;
        }
        case UAPLEX_ID_STRING:
            w.writeRaw<std::uint8_t>(kString | flags);
            w.writeRaw(v.namespace_index);
            encode(w, v.identifier.string);
            break;
        case UAPLEX_ID_GUID:
            w.writeRaw<std::uint8_t>(kGuid | flags);
            w.writeRaw(v.namespace_index);
            encode(w, v.identifier.guid);
            break;
        case UAPLEX_ID_BYTESTRING:
            w.writeRaw<std::uint8_t>(kByteString | flags);
            w.writeRaw(v.namespace_index);
            encode(w, v.identifier.bytestring);
            break;
        default:
            w.fail(UAPLEX_BadEncodingError);
            break;
    }
}

}  // namespace

void decode(BinaryReader& r, ByteString& v) noexcept {
    std::int32_t n = r.readRaw<std::int32_t>();
    if (n < 0) {
        v = ByteString{-1, nullptr};
        return;
    }
    if (n > r.limits().maxByteStringLength) {
        r.fail(UAPLEX_BadEncodingLimitsExceeded);
        v = ByteString{-1, nullptr};
        return;
    }
    const std::uint8_t* p = r.take(std::size_t(n));
    v = p ? ByteString{n, p} : ByteString{-1, nullptr};
}
void encode(BinaryWriter& w, const ByteString& v) noexcept {
    std::int32_t n = v.length < 0 ? -1 : v.length;
    w.writeRaw(n);
    if (n > 0) w.writeBytes(v.data, std::size_t(n));
}

void decode(BinaryReader& r, NodeId& v) noexcept {
    std::uint8_t form = r.readRaw<std::uint8_t>();
    decodeNodeIdBody(r, v, form);
}
void encode(BinaryWriter& w, const NodeId& v) noexcept {
    encodeNodeId(w, v, 0);
}

void decode(BinaryReader& r, ExpandedNodeId& v) noexcept {
    std::uint8_t b = r.readRaw<std::uint8_t>();
    v.mask = b & (UAPLEX_EXPANDEDNODEID_NAMESPACEURI | UAPLEX_EXPANDEDNODEID_SERVERINDEX);
    decodeNodeIdBody(r, v.node_id, b & 0x3F);
    v.namespace_uri = String{-1, nullptr};
    v.server_index = 0;
    if (v.mask & UAPLEX_EXPANDEDNODEID_NAMESPACEURI) decode(r, v.namespace_uri);
    if (v.mask & UAPLEX_EXPANDEDNODEID_SERVERINDEX) v.server_index = r.readRaw<std::uint32_t>();
}
void encode(BinaryWriter& w, const ExpandedNodeId& v) noexcept {
    std::uint8_t flags =
        v.mask & (UAPLEX_EXPANDEDNODEID_NAMESPACEURI | UAPLEX_EXPANDEDNODEID_SERVERINDEX);
    encodeNodeId(w, v.node_id, flags);
    if (flags & UAPLEX_EXPANDEDNODEID_NAMESPACEURI) encode(w, v.namespace_uri);
    if (flags & UAPLEX_EXPANDEDNODEID_SERVERINDEX) w.writeRaw(v.server_index);
}

void decode(BinaryReader& r, QualifiedName& v) noexcept {
    v.namespace_index = r.readRaw<std::uint16_t>();
    decode(r, v.name);
}
void encode(BinaryWriter& w, const QualifiedName& v) noexcept {
    w.writeRaw(v.namespace_index);
    encode(w, v.name);
}

void decode(BinaryReader& r, LocalizedText& v) noexcept {
    v.mask = r.readRaw<std::uint8_t>();
    v.locale = String{-1, nullptr};
    v.text = String{-1, nullptr};
    if (v.mask & UAPLEX_LOCALIZEDTEXT_LOCALE) decode(r, v.locale);
    if (v.mask & UAPLEX_LOCALIZEDTEXT_TEXT) decode(r, v.text);
}
void encode(BinaryWriter& w, const LocalizedText& v) noexcept {
    w.writeRaw(v.mask);
    if (v.mask & UAPLEX_LOCALIZEDTEXT_LOCALE) encode(w, v.locale);
    if (v.mask & UAPLEX_LOCALIZEDTEXT_TEXT) encode(w, v.text);
}

// ---- Variant ----

namespace {

constexpr std::uint8_t kMinSize[26] = {0, 1,  1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 4,
                                       8, 16, 4, 4, 2, 2, 4, 6, 1, 3, 1, 1, 1};
constexpr std::uint8_t kElemSize[26] = {0,
                                        sizeof(bool),
                                        1,
                                        1,
                                        2,
                                        2,
                                        4,
                                        4,
                                        8,
                                        8,
                                        4,
                                        8,
                                        sizeof(String),
                                        sizeof(DateTime),
                                        sizeof(Guid),
                                        sizeof(ByteString),
                                        sizeof(XmlElement),
                                        sizeof(NodeId),
                                        sizeof(ExpandedNodeId),
                                        sizeof(StatusCode),
                                        sizeof(QualifiedName),
                                        sizeof(LocalizedText),
                                        sizeof(ExtensionObject),
                                        sizeof(DataValue),
                                        sizeof(Variant),
                                        sizeof(DiagnosticInfo)};

template <class T>
void decodeArrayInto(BinaryReader& r, std::int32_t n, void*& out) noexcept {
    T* data = r.allocateElements<T>(n, minEncodedSize<T>());
    if (data == nullptr) return;
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        const std::uint8_t* p = r.take(std::size_t(n) * sizeof(T));
        if (p != nullptr && n != 0) std::memcpy(data, p, std::size_t(n) * sizeof(T));
    } else {
        for (std::int32_t i = 0; i < n && r.ok(); ++i) decode(r, data[i]);
    }
    out = data;
}

template <class T>
void encodeElements(BinaryWriter& w, std::int32_t n, const void* p) noexcept {
    const T* data = static_cast<const T*>(p);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
        if (n > 0) w.writeBytes(data, std::size_t(n) * sizeof(T));
    } else {
        for (std::int32_t i = 0; i < n && w.ok(); ++i) encode(w, data[i]);
    }
}

// A scalar of the larger types lives in the arena, pointed to by value.pointer.
template <class T>
void decodeBoxed(BinaryReader& r, Variant& v) noexcept {
    T* p = r.allocate<T>();
    if (p == nullptr) return;
    decode(r, *p);
    v.value.pointer = p;
}
template <class T>
void encodeBoxed(BinaryWriter& w, const Variant& v) noexcept {
    if (v.value.pointer == nullptr) {
        w.fail(UAPLEX_BadEncodingError);
        return;
    }
    encode(w, *static_cast<const T*>(v.value.pointer));
}

// Arrays hold the type's C representation (UAPLEX_BUILTIN_TYPES): a case per row.
void decodeVariantArray(BinaryReader& r, std::uint8_t type, std::int32_t n, void*& out) noexcept {
    switch (type) {
#define UAPLEX_DECODE_ARRAY_CASE_(id, name, c_type) \
    case id:                                        \
        decodeArrayInto<c_type>(r, n, out);         \
        break;
        UAPLEX_BUILTIN_TYPES(UAPLEX_DECODE_ARRAY_CASE_)
#undef UAPLEX_DECODE_ARRAY_CASE_
        default:
            r.fail(UAPLEX_BadDecodingError);
            break;
    }
}

void encodeVariantArray(BinaryWriter& w, std::uint8_t type, std::int32_t n,
                        const void* p) noexcept {
    if (n > 0 && p == nullptr) {
        w.fail(UAPLEX_BadEncodingError);
        return;
    }
    switch (type) {
#define UAPLEX_ENCODE_ARRAY_CASE_(id, name, c_type) \
    case id:                                        \
        encodeElements<c_type>(w, n, p);            \
        break;
        UAPLEX_BUILTIN_TYPES(UAPLEX_ENCODE_ARRAY_CASE_)
#undef UAPLEX_ENCODE_ARRAY_CASE_
        default:
            w.fail(UAPLEX_BadEncodingError);
            break;
    }
}

}  // namespace

std::size_t builtinMinEncodedSize(std::uint8_t typeId) noexcept {
    return typeId <= 25 ? kMinSize[typeId] : 0;
}
std::size_t builtinElementSize(std::uint8_t typeId) noexcept {
    return typeId <= 25 ? kElemSize[typeId] : 0;
}

void decode(BinaryReader& r, Variant& v) noexcept {
    v = Variant{};
    std::uint8_t enc = r.readRaw<std::uint8_t>();
    if (!r.ok()) return;
    std::uint8_t type = enc & UAPLEX_VARIANT_TYPE_MASK;
    v.encoding = enc;
    v.dimensions_length = -1;
    if (type == UAPLEX_TYPE_NULL) {
        // The null Variant carries nothing; flags on it have no meaning.
        if (enc != 0) r.fail(UAPLEX_BadDecodingError);
        return;
    }
    if (type > 25 || ((enc & UAPLEX_VARIANT_ARRAY_DIMENSIONS) && !(enc & UAPLEX_VARIANT_ARRAY))) {
        r.fail(UAPLEX_BadDecodingError);
        return;
    }
    if (!r.enter()) return;
    if (enc & UAPLEX_VARIANT_ARRAY) {
        std::int32_t n = r.readRaw<std::int32_t>();
        v.array_length = n < 0 ? -1 : n;
        if (n >= 0) decodeVariantArray(r, type, n, v.value.pointer);
        if (enc & UAPLEX_VARIANT_ARRAY_DIMENSIONS) {
            Array<std::int32_t> dims{};
            decode(r, dims);
            v.dimensions_length = dims.length;
            v.dimensions = dims.data;
            // Dimensions must describe exactly the elements present (Part 6 5.2.2.16).
            if (r.ok()) {
                std::int64_t product = dims.length > 0 ? 1 : 0;
                for (std::int32_t i = 0; i < dims.length; ++i) {
                    if (dims.data[i] < 0) product = -1;
                    if (product < 0) break;
                    product *= dims.data[i];
                    if (product > INT32_MAX) product = -1;
                }
                if (dims.length < 1 ||
                    product != std::int64_t(v.array_length < 0 ? 0 : v.array_length))
                    r.fail(UAPLEX_BadDecodingError);
            }
        }
    } else {
        switch (type) {
            case UAPLEX_TYPE_BOOLEAN:
                decode(r, v.value.boolean);
                break;
            case UAPLEX_TYPE_SBYTE:
                decode(r, v.value.sbyte);
                break;
            case UAPLEX_TYPE_BYTE:
                decode(r, v.value.byte);
                break;
            case UAPLEX_TYPE_INT16:
                decode(r, v.value.int16);
                break;
            case UAPLEX_TYPE_UINT16:
                decode(r, v.value.uint16);
                break;
            case UAPLEX_TYPE_INT32:
                decode(r, v.value.int32);
                break;
            case UAPLEX_TYPE_UINT32:
                decode(r, v.value.uint32);
                break;
            case UAPLEX_TYPE_INT64:
                decode(r, v.value.int64);
                break;
            case UAPLEX_TYPE_UINT64:
                decode(r, v.value.uint64);
                break;
            case UAPLEX_TYPE_FLOAT:
                decode(r, v.value.float_);
                break;
            case UAPLEX_TYPE_DOUBLE:
                decode(r, v.value.double_);
                break;
            case UAPLEX_TYPE_STRING:
                decode(r, v.value.string);
                break;
            case UAPLEX_TYPE_DATETIME:
                decode(r, v.value.datetime);
                break;
            case UAPLEX_TYPE_GUID:
                decode(r, v.value.guid);
                break;
            case UAPLEX_TYPE_BYTESTRING:
                decode(r, v.value.bytestring);
                break;
            case UAPLEX_TYPE_XMLELEMENT:
                decode(r, v.value.xmlelement);
                break;
            case UAPLEX_TYPE_NODEID:
                decodeBoxed<NodeId>(r, v);
                break;
            case UAPLEX_TYPE_EXPANDEDNODEID:
                decodeBoxed<ExpandedNodeId>(r, v);
                break;
            case UAPLEX_TYPE_STATUSCODE:
                decode(r, v.value.statuscode);
                break;
            case UAPLEX_TYPE_QUALIFIEDNAME:
                decodeBoxed<QualifiedName>(r, v);
                break;
            case UAPLEX_TYPE_LOCALIZEDTEXT:
                decodeBoxed<LocalizedText>(r, v);
                break;
            case UAPLEX_TYPE_EXTENSIONOBJECT:
                decodeBoxed<ExtensionObject>(r, v);
                break;
            case UAPLEX_TYPE_DATAVALUE:
                decodeBoxed<DataValue>(r, v);
                break;
            case UAPLEX_TYPE_VARIANT:
                decodeBoxed<Variant>(r, v);
                break;
            case UAPLEX_TYPE_DIAGNOSTICINFO:
                decodeBoxed<DiagnosticInfo>(r, v);
                break;
        }
    }
    r.leave();
}

void encode(BinaryWriter& w, const Variant& v) noexcept {
    std::uint8_t enc = v.encoding;
    std::uint8_t type = enc & UAPLEX_VARIANT_TYPE_MASK;
    w.writeRaw(enc);
    if (type == UAPLEX_TYPE_NULL) return;
    if (enc & UAPLEX_VARIANT_ARRAY) {
        std::int32_t n = v.array_length < 0 ? -1 : v.array_length;
        w.writeRaw(n);
        encodeVariantArray(w, type, n, v.value.pointer);
        if (enc & UAPLEX_VARIANT_ARRAY_DIMENSIONS) {
            encode(w, Array<std::int32_t>{v.dimensions_length,
                                          const_cast<std::int32_t*>(v.dimensions)});
        }
        return;
    }
    switch (type) {
        case UAPLEX_TYPE_BOOLEAN:
            encode(w, v.value.boolean);
            break;
        case UAPLEX_TYPE_SBYTE:
            encode(w, v.value.sbyte);
            break;
        case UAPLEX_TYPE_BYTE:
            encode(w, v.value.byte);
            break;
        case UAPLEX_TYPE_INT16:
            encode(w, v.value.int16);
            break;
        case UAPLEX_TYPE_UINT16:
            encode(w, v.value.uint16);
            break;
        case UAPLEX_TYPE_INT32:
            encode(w, v.value.int32);
            break;
        case UAPLEX_TYPE_UINT32:
            encode(w, v.value.uint32);
            break;
        case UAPLEX_TYPE_INT64:
            encode(w, v.value.int64);
            break;
        case UAPLEX_TYPE_UINT64:
            encode(w, v.value.uint64);
            break;
        case UAPLEX_TYPE_FLOAT:
            encode(w, v.value.float_);
            break;
        case UAPLEX_TYPE_DOUBLE:
            encode(w, v.value.double_);
            break;
        case UAPLEX_TYPE_STRING:
            encode(w, v.value.string);
            break;
        case UAPLEX_TYPE_DATETIME:
            encode(w, v.value.datetime);
            break;
        case UAPLEX_TYPE_GUID:
            encode(w, v.value.guid);
            break;
        case UAPLEX_TYPE_BYTESTRING:
            encode(w, v.value.bytestring);
            break;
        case UAPLEX_TYPE_XMLELEMENT:
            encode(w, v.value.xmlelement);
            break;
        case UAPLEX_TYPE_NODEID:
            encodeBoxed<NodeId>(w, v);
            break;
        case UAPLEX_TYPE_EXPANDEDNODEID:
            encodeBoxed<ExpandedNodeId>(w, v);
            break;
        case UAPLEX_TYPE_STATUSCODE:
            encode(w, v.value.statuscode);
            break;
        case UAPLEX_TYPE_QUALIFIEDNAME:
            encodeBoxed<QualifiedName>(w, v);
            break;
        case UAPLEX_TYPE_LOCALIZEDTEXT:
            encodeBoxed<LocalizedText>(w, v);
            break;
        case UAPLEX_TYPE_EXTENSIONOBJECT:
            encodeBoxed<ExtensionObject>(w, v);
            break;
        case UAPLEX_TYPE_DATAVALUE:
            encodeBoxed<DataValue>(w, v);
            break;
        case UAPLEX_TYPE_VARIANT:
            encodeBoxed<Variant>(w, v);
            break;
        case UAPLEX_TYPE_DIAGNOSTICINFO:
            encodeBoxed<DiagnosticInfo>(w, v);
            break;
        default:
            w.fail(UAPLEX_BadEncodingError);
            break;
    }
}

// ---- DataValue ----

void decode(BinaryReader& r, DataValue& v) noexcept {
    v = DataValue{};
    v.mask = r.readRaw<std::uint8_t>();
    if (v.mask & UAPLEX_DATAVALUE_VALUE) {
        if (!r.enter()) return;
        decode(r, v.value);
        r.leave();
    }
    if (v.mask & UAPLEX_DATAVALUE_STATUS) v.status = r.readRaw<std::uint32_t>();
    if (v.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) v.source_timestamp = r.readRaw<std::int64_t>();
    if (v.mask & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS)
        v.source_picoseconds = r.readRaw<std::uint16_t>();
    if (v.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) v.server_timestamp = r.readRaw<std::int64_t>();
    if (v.mask & UAPLEX_DATAVALUE_SERVER_PICOSECONDS)
        v.server_picoseconds = r.readRaw<std::uint16_t>();
}
namespace {
// Encoded bytes of a scalar of the fixed-size builtin types (0: not fixed-size); Boolean,
// the integers, Float, Double, DateTime and StatusCode.
constexpr auto kFixedScalarSize = [] {
    std::array<std::uint8_t, UAPLEX_TYPE_MAX + 1> size{};
    size[UAPLEX_TYPE_BOOLEAN] = size[UAPLEX_TYPE_SBYTE] = size[UAPLEX_TYPE_BYTE] = 1;
    size[UAPLEX_TYPE_INT16] = size[UAPLEX_TYPE_UINT16] = 2;
    size[UAPLEX_TYPE_INT32] = size[UAPLEX_TYPE_UINT32] = size[UAPLEX_TYPE_FLOAT] = 4;
    size[UAPLEX_TYPE_STATUSCODE] = 4;
    size[UAPLEX_TYPE_INT64] = size[UAPLEX_TYPE_UINT64] = size[UAPLEX_TYPE_DOUBLE] = 8;
    size[UAPLEX_TYPE_DATETIME] = 8;
    return size;
}();
}  // namespace

void encode(BinaryWriter& w, const DataValue& v) noexcept {
    // The common DataValue (a fixed-size scalar, status, timestamps) in one reservation:
    // notifications are encoded a million times a second.
    const std::uint8_t m = v.mask, enc = v.value.encoding, type = enc & UAPLEX_VARIANT_TYPE_MASK;
    const std::size_t valueSize = type <= UAPLEX_TYPE_MAX ? kFixedScalarSize[type] : 0;
    if (!(m & UAPLEX_DATAVALUE_VALUE) || (!(enc & UAPLEX_VARIANT_ARRAY) && valueSize)) {
        std::size_t n = 1 + ((m & UAPLEX_DATAVALUE_VALUE) ? 1 + valueSize : 0) +
                        ((m & UAPLEX_DATAVALUE_STATUS) ? 4 : 0) +
                        ((m & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) ? 8 : 0) +
                        ((m & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS) ? 2 : 0) +
                        ((m & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) ? 8 : 0) +
                        ((m & UAPLEX_DATAVALUE_SERVER_PICOSECONDS) ? 2 : 0);
        std::uint8_t* p = w.reserve(n);
        if (!p) return;
        *p++ = m;
        if (m & UAPLEX_DATAVALUE_VALUE) {
            *p++ = enc;
            // Constant sizes, so that each copy is one move rather than a call to memcpy.
            switch (valueSize) {
                case 1:
                    *p = type == UAPLEX_TYPE_BOOLEAN
                             ? (v.value.value.boolean ? 1 : 0)
                             : *reinterpret_cast<const std::uint8_t*>(&v.value.value);
                    break;
                case 2:
                    std::memcpy(p, &v.value.value, 2);
                    break;
                case 4:
                    std::memcpy(p, &v.value.value, 4);
                    break;
                default:
                    std::memcpy(p, &v.value.value, 8);
                    break;
            }
            p += valueSize;
        }
        auto put = [&p](const auto& x) {
            std::memcpy(p, &x, sizeof(x));
            p += sizeof(x);
        };
        if (m & UAPLEX_DATAVALUE_STATUS) put(v.status);
        if (m & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) put(v.source_timestamp);
        if (m & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS) put(v.source_picoseconds);
        if (m & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) put(v.server_timestamp);
        if (m & UAPLEX_DATAVALUE_SERVER_PICOSECONDS) put(v.server_picoseconds);
        return;
    }
    w.writeRaw(v.mask);
    if (v.mask & UAPLEX_DATAVALUE_VALUE) encode(w, v.value);
    if (v.mask & UAPLEX_DATAVALUE_STATUS) w.writeRaw(v.status);
    if (v.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) w.writeRaw(v.source_timestamp);
    if (v.mask & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS) w.writeRaw(v.source_picoseconds);
    if (v.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) w.writeRaw(v.server_timestamp);
    if (v.mask & UAPLEX_DATAVALUE_SERVER_PICOSECONDS) w.writeRaw(v.server_picoseconds);
}

// ---- ExtensionObject ----

void decode(BinaryReader& r, ExtensionObject& v) noexcept {
    v = ExtensionObject{};
    decode(r, v.type_id);
    v.encoding = r.readRaw<std::uint8_t>();
    v.body = ByteString{-1, nullptr};
    if (!r.ok()) return;
    if (v.encoding == UAPLEX_EXTENSIONOBJECT_NOBODY) return;
    if (v.encoding != UAPLEX_EXTENSIONOBJECT_BINARY && v.encoding != UAPLEX_EXTENSIONOBJECT_XML) {
        r.fail(UAPLEX_BadDecodingError);
        return;
    }
    decode(r, v.body);
    if (!r.ok() || v.encoding != UAPLEX_EXTENSIONOBJECT_BINARY || v.body.length < 0) return;
    if (v.type_id.identifier_type != UAPLEX_ID_NUMERIC || v.type_id.namespace_index != 0) return;
    const DataType* type = findDataTypeByEncodingId(v.type_id.identifier.numeric);
    if (type == nullptr) return;  // unknown: keep the raw body
    if (!r.enter()) return;
    // The body is decoded by a reader confined to it, sharing arena, limits and depth budget.
    DecodeLimits inner = r.limits();
    inner.maxNestingDepth = r.limits().maxNestingDepth - r.depth();
    BinaryReader body(std::span<const std::uint8_t>(v.body.data, std::size_t(v.body.length)),
                      r.arena(), inner);
    void* obj = r.arena().allocate(type->size, type->alignment);
    if (obj == nullptr || r.arena().used() > r.limits().maxArenaBytes) {
        r.fail(UAPLEX_BadEncodingLimitsExceeded);
        return;
    }
    std::memset(obj, 0, type->size);
    type->decodeFn(body, obj);
    if (!body.ok()) {
        r.fail(body.status());
    } else if (body.remaining() == 0) {
        v.data_type = type;
        v.object = obj;
    }
    // Trailing bytes after a complete body: keep it raw so re-encoding stays byte-identical.
    r.leave();
}

void encode(BinaryWriter& w, const ExtensionObject& v) noexcept {
    encode(w, v.type_id);
    if (v.object != nullptr && v.data_type != nullptr) {
        const auto* type = static_cast<const DataType*>(v.data_type);
        w.writeRaw<std::uint8_t>(UAPLEX_EXTENSIONOBJECT_BINARY);
        std::size_t lengthAt = w.size();
        w.writeRaw<std::int32_t>(0);
        std::size_t start = w.size();
        type->encodeFn(w, v.object);
        w.patchInt32(lengthAt, std::int32_t(w.size() - start));
        return;
    }
    w.writeRaw(v.encoding);
    if (v.encoding == UAPLEX_EXTENSIONOBJECT_NOBODY) return;
    encode(w, v.body);
}

// ---- DiagnosticInfo ----

void decode(BinaryReader& r, DiagnosticInfo& v) noexcept {
    v = DiagnosticInfo{};
    v.mask = r.readRaw<std::uint8_t>();
    if (v.mask & UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID) v.symbolic_id = r.readRaw<std::int32_t>();
    if (v.mask & UAPLEX_DIAGNOSTICINFO_NAMESPACE_URI) v.namespace_uri = r.readRaw<std::int32_t>();
    if (v.mask & UAPLEX_DIAGNOSTICINFO_LOCALE) v.locale = r.readRaw<std::int32_t>();
    if (v.mask & UAPLEX_DIAGNOSTICINFO_LOCALIZED_TEXT) v.localized_text = r.readRaw<std::int32_t>();
    v.additional_info = String{-1, nullptr};
    if (v.mask & UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO) decode(r, v.additional_info);
    if (v.mask & UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE)
        v.inner_status_code = r.readRaw<std::uint32_t>();
    if (v.mask & UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO) {
        if (!r.enter()) return;
        DiagnosticInfo* inner = r.allocate<DiagnosticInfo>();
        if (inner != nullptr) {
            decode(r, *inner);
            v.inner_diagnostic_info = inner;
        }
        r.leave();
    }
}
void encode(BinaryWriter& w, const DiagnosticInfo& v) noexcept {
    w.writeRaw(v.mask);
    if (v.mask & UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID) w.writeRaw(v.symbolic_id);
    if (v.mask & UAPLEX_DIAGNOSTICINFO_NAMESPACE_URI) w.writeRaw(v.namespace_uri);
    if (v.mask & UAPLEX_DIAGNOSTICINFO_LOCALE) w.writeRaw(v.locale);
    if (v.mask & UAPLEX_DIAGNOSTICINFO_LOCALIZED_TEXT) w.writeRaw(v.localized_text);
    if (v.mask & UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO) encode(w, v.additional_info);
    if (v.mask & UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE) w.writeRaw(v.inner_status_code);
    if (v.mask & UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO) {
        if (v.inner_diagnostic_info == nullptr) {
            w.fail(UAPLEX_BadEncodingError);
            return;
        }
        encode(w, *v.inner_diagnostic_info);
    }
}

}  // namespace uaplex::enc
