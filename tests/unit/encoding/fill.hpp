// SPDX-License-Identifier: Apache-2.0
// Deterministic pseudo-random values for any described type, written through the
// descriptors only (field offsets and kinds), so every generated structure can be exercised.
#pragma once

#include <uaplex/encoding/encoding.hpp>

#include <cstdint>
#include <cstring>

namespace uaplex::test {

class Filler {
  public:
    Filler(enc::Arena& arena, std::uint64_t seed) : arena_(arena), state_(seed | 1) {}

    // Values the JSON encoding carries exactly (Part 6 5.4): DateTime within years
    // 0001..9999, no NaN payloads, an ExpandedNodeId with a NamespaceUri has index 0.
    void jsonSafe(bool on) { jsonSafe_ = on; }

    void fill(const enc::DataType& type, void* obj, int depth = 0) {
        using enc::TypeKind;
        auto* base = static_cast<std::uint8_t*>(obj);
        if (type.kind == TypeKind::BuiltIn || type.kind == TypeKind::Enumeration) {
            fillField(kindOf(type), &type, obj, depth);
            return;
        }
        std::uint32_t selector = 0;
        if (type.kind == TypeKind::Union) {
            selector = type.fieldCount ? std::uint32_t(next() % (type.fieldCount + 1)) : 0;
            std::uint32_t sw = selector ? type.fields[selector - 1].switchValue : 0;
            std::memcpy(base + type.selectorOffset, &sw, 4);
        }
        std::uint32_t mask = 0;
        for (std::uint32_t i = 0; i < type.fieldCount; ++i) {
            const enc::FieldDescriptor& f = type.fields[i];
            if (type.kind == TypeKind::Union && i + 1 != selector) continue;
            if (f.optionalBit >= 0) {
                if (next() % 2) continue;
                mask |= 1u << f.optionalBit;
            }
            void* p = base + f.offset;
            if (f.isArray) {
                fillArray(f.kind, f.type, p, depth);
            } else {
                fillField(f.kind, f.type, p, depth + 1);
            }
        }
        if (type.kind == TypeKind::StructureWithOptionalFields)
            std::memcpy(base + type.selectorOffset, &mask, 4);
    }

    std::uint64_t next() {
        state_ ^= state_ << 13;
        state_ ^= state_ >> 7;
        state_ ^= state_ << 17;
        return state_;
    }

  private:
    static enc::FieldKind kindOf(const enc::DataType& t) {
        return t.kind == enc::TypeKind::BuiltIn ? enc::FieldKind(t.builtinId)
                                                : enc::FieldKind::Enumeration;
    }

    static std::size_t sizeOf(enc::FieldKind k, const enc::DataType* t) {
        if (k == enc::FieldKind::Structure || k == enc::FieldKind::Enumeration) return t->size;
        return enc::builtinElementSize(std::uint8_t(k));
    }

    void fillArray(enc::FieldKind k, const enc::DataType* t, void* p, int depth) {
        ua::Array<std::uint8_t> a{};
        std::uint64_t r = next() % 5;
        if (r == 0 || depth > 3) {
            a.length = r == 0 ? -1 : 0;
        } else {
            a.length = std::int32_t(r - 1);  // 0..3 elements
            std::size_t size = sizeOf(k, t);
            a.data = static_cast<std::uint8_t*>(arena_.allocate(size * a.length + 1, 8));
            std::memset(a.data, 0, size * a.length);
            for (std::int32_t i = 0; i < a.length; ++i)
                fillField(k, t, a.data + i * size, depth + 1);
        }
        std::memcpy(p, &a, sizeof(a));
    }

    ua::String str() {
        static const char* const kWords[] = {"", "Temperature", "äöü", "ns=2;s=x", "A"};
        std::uint64_t r = next() % 6;
        if (r == 5) return ua::nullString();
        return ua::makeString(kWords[r]);
    }

    ua::ByteString bytes() {
        static const std::uint8_t kBytes[] = {0, 1, 2, 0xFF, 0x80, 7};
        std::uint64_t r = next() % 4;
        if (r == 3) return ua::nullByteString();
        return ua::ByteString{std::int32_t(r * 2), kBytes};
    }

    ua::NodeId nodeId() {
        ua::NodeId n{};
        switch (next() % 6) {
            case 0:
                return ua::numericNodeId(0, std::uint32_t(next() % 256));
            case 1:
                return ua::numericNodeId(std::uint16_t(next() % 256),
                                         std::uint32_t(next() % 65536));
            case 2:
                return ua::numericNodeId(std::uint16_t(next()), std::uint32_t(next()));
            case 3:
                n.namespace_index = std::uint16_t(next());
                n.identifier_type = UAPLEX_ID_STRING;
                n.identifier.string = str();
                return n;
            case 4:
                n.namespace_index = 1;
                n.identifier_type = UAPLEX_ID_GUID;
                for (auto& b : n.identifier.guid.data4) b = std::uint8_t(next());
                n.identifier.guid.data1 = std::uint32_t(next());
                return n;
            default:
                n.namespace_index = 3;
                n.identifier_type = UAPLEX_ID_BYTESTRING;
                n.identifier.bytestring = bytes();
                return n;
        }
    }

    template <class T>
    T* box() {
        auto* p = static_cast<T*>(arena_.allocate(sizeof(T), alignof(T)));
        std::memset(p, 0, sizeof(T));
        return p;
    }

    void variant(ua::Variant& v, int depth) {
        v = ua::Variant{};
        std::uint64_t r = next() % 8;
        switch (r) {
            case 0:
                return;  // null
            case 1:
                v = ua::variantInt32(std::int32_t(next()));
                return;
            case 2:
                v = ua::variantDouble(double(next() % 1000) / 8);
                return;
            case 3:
                v.encoding = UAPLEX_TYPE_STRING;
                v.value.string = str();
                return;
            case 4: {
                auto* q = box<ua::QualifiedName>();
                q->namespace_index = 1;
                q->name = str();
                v.encoding = UAPLEX_TYPE_QUALIFIEDNAME;
                v.value.pointer = q;
                return;
            }
            case 5: {
                auto* e = static_cast<std::uint32_t*>(arena_.allocate(12, 4));
                e[0] = 1, e[1] = 2, e[2] = 3;
                v = ua::variantArray(ua::BuiltinType::UInt32, 3, e);
                return;
            }
            case 6: {  // 2x2 matrix of Int16
                auto* e = static_cast<std::int16_t*>(arena_.allocate(8, 2));
                auto* d = static_cast<std::int32_t*>(arena_.allocate(8, 4));
                e[0] = 1, e[1] = -2, e[2] = 3, e[3] = -4;
                d[0] = 2, d[1] = 2;
                v = ua::variantArray(ua::BuiltinType::Int16, 4, e);
                v.encoding |= UAPLEX_VARIANT_ARRAY_DIMENSIONS;
                v.dimensions_length = 2;
                v.dimensions = d;
                return;
            }
            default:
                if (depth > 4) return;
                auto* inner = box<ua::Variant>();
                variant(*inner, depth + 1);
                v.encoding = UAPLEX_TYPE_VARIANT;
                v.value.pointer = inner;
                return;
        }
    }

    void fillField(enc::FieldKind k, const enc::DataType* t, void* p, int depth) {
        using K = enc::FieldKind;
        std::uint64_t r = next();
        switch (k) {
            case K::Boolean:
                *static_cast<bool*>(p) = r & 1;
                break;
            case K::SByte:
            case K::Byte:
                std::memcpy(p, &r, 1);
                break;
            case K::Int16:
            case K::UInt16:
                std::memcpy(p, &r, 2);
                break;
            case K::Int32:
            case K::UInt32:
            case K::StatusCode:
            case K::Float:
                std::memcpy(p, &r, 4);
                if (jsonSafe_ && k == K::Float &&
                    *static_cast<float*>(p) != *static_cast<float*>(p))
                    *static_cast<float*>(p) = 0.5f;
                break;
            case K::Int64:
            case K::UInt64:
            case K::DateTime:
            case K::Double:
                if (jsonSafe_ && k == K::DateTime) r %= 2'500'000'000'000'000'000ull;
                std::memcpy(p, &r, 8);
                if (jsonSafe_ && k == K::Double &&
                    *static_cast<double*>(p) != *static_cast<double*>(p))
                    *static_cast<double*>(p) = -0.25;
                break;
            case K::String:
            case K::XmlElement:
                *static_cast<ua::String*>(p) = str();
                break;
            case K::ByteString:
                *static_cast<ua::ByteString*>(p) = bytes();
                break;
            case K::Guid: {
                ua::Guid g{};
                g.data1 = std::uint32_t(r);
                g.data2 = std::uint16_t(r >> 32);
                g.data4[3] = std::uint8_t(r >> 50);
                *static_cast<ua::Guid*>(p) = g;
                break;
            }
            case K::NodeId:
                *static_cast<ua::NodeId*>(p) = nodeId();
                break;
            case K::ExpandedNodeId: {
                ua::ExpandedNodeId x{};
                x.node_id = nodeId();
                x.mask = std::uint8_t(r & 0xC0);
                x.namespace_uri = (x.mask & 0x80) ? str() : ua::nullString();
                x.server_index = (x.mask & 0x40) ? std::uint32_t(r >> 8) : 0;
                if (jsonSafe_ && (x.mask & 0x80)) x.node_id.namespace_index = 0;
                *static_cast<ua::ExpandedNodeId*>(p) = x;
                break;
            }
            case K::QualifiedName: {
                ua::QualifiedName q{std::uint16_t(r), str()};
                *static_cast<ua::QualifiedName*>(p) = q;
                break;
            }
            case K::LocalizedText: {
                ua::LocalizedText t{};
                t.mask = std::uint8_t(r & 3);
                t.locale = (t.mask & 1) ? str() : ua::nullString();
                t.text = (t.mask & 2) ? str() : ua::nullString();
                *static_cast<ua::LocalizedText*>(p) = t;
                break;
            }
            case K::ExtensionObject: {
                ua::ExtensionObject eo{};
                eo.type_id = ua::numericNodeId(0, 0);
                eo.body = ua::nullByteString();
                if (r % 3 == 1) {  // an unknown type: raw body
                    eo.type_id = ua::numericNodeId(5, 77);
                    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
                    eo.body = bytes();
                    if (eo.body.length < 0) eo.body.length = 0;
                } else if (r % 3 == 2 && depth < 4) {  // a known type, decoded
                    const enc::DataType* rn = enc::findDataType("RationalNumber");
                    eo.type_id = ua::numericNodeId(0, rn->binaryEncodingId);
                    eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
                    eo.data_type = rn;
                    eo.object = arena_.allocate(rn->size, rn->alignment);
                    std::memset(eo.object, 0, rn->size);
                    fill(*rn, eo.object, depth + 1);
                }
                *static_cast<ua::ExtensionObject*>(p) = eo;
                break;
            }
            case K::DataValue: {
                ua::DataValue d{};
                d.mask = std::uint8_t(r & 0x3F);
                if (d.mask & 0x01) variant(d.value, depth);
                d.status = std::uint32_t(r >> 8) & 0xFFFF0000u;
                d.source_timestamp = std::int64_t(r >> 3);
                d.server_timestamp = std::int64_t(r >> 5);
                d.source_picoseconds = d.mask & 0x10 ? 10 : 0;
                d.server_picoseconds = d.mask & 0x20 ? 20 : 0;
                if (!(d.mask & 0x04)) d.source_timestamp = 0;
                if (!(d.mask & 0x08)) d.server_timestamp = 0;
                if (!(d.mask & 0x02)) d.status = 0;
                *static_cast<ua::DataValue*>(p) = d;
                break;
            }
            case K::Variant:
                variant(*static_cast<ua::Variant*>(p), depth);
                break;
            case K::DiagnosticInfo: {
                ua::DiagnosticInfo d{};
                d.mask = std::uint8_t(r & (depth < 4 ? 0x7F : 0x3F));
                d.symbolic_id = 1, d.namespace_uri = 2, d.locale = 3, d.localized_text = 4;
                d.additional_info = (d.mask & 0x10) ? str() : ua::nullString();
                d.inner_status_code = 0x80000000u;
                if (d.mask & 0x40) {
                    d.inner_diagnostic_info = box<ua::DiagnosticInfo>();
                    fillField(K::DiagnosticInfo, nullptr, d.inner_diagnostic_info, depth + 1);
                }
                *static_cast<ua::DiagnosticInfo*>(p) = d;
                break;
            }
            case K::Enumeration: {
                std::int64_t v = t->enumValueCount ? t->enumValues[r % t->enumValueCount].value : 0;
                std::memcpy(p, &v, t->builtinId);  // little-endian: low bytes first
                break;
            }
            case K::Structure:
                fill(*t, p, depth);
                break;
        }
    }

    enc::Arena& arena_;
    std::uint64_t state_;
    bool jsonSafe_ = false;
};

}  // namespace uaplex::test
