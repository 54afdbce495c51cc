// SPDX-License-Identifier: Apache-2.0
// OPC UA JSON encoding, reversible form (Part 6 1.04 5.4), driven by the type descriptors.
//
// Reader: a pull parser over the input with a sticky status (like BinaryReader). Objects may
// list their members in any order, so members whose meaning depends on another member
// (Variant "Body" on "Type", union "Value" on "SwitchField", NodeId "Id" on "IdType",
// ExtensionObject "Body" on "TypeId") are skipped first and decoded once the deciding member
// is known. Every '{' and '[' counts against maxNestingDepth, so recursion is bounded.
//
// One structural pass first checks the syntax of the whole text and records, for every
// object and array of kIndexedBytes or more, where it ends and (arrays) how many elements it
// has. Skipping such a value is then a jump and an array is allocated from its recorded
// count, so the decoding pass reads the text once: nested content is not re-scanned once per
// level (a skip to count, a skip past a deferred member, then the decode). Only values
// shorter than kIndexedBytes are scanned again, which bounds the rescans per byte.
#include <uaplex/encoding/guid_text.hpp>
#include <uaplex/encoding/hex.hpp>
#include <uaplex/encoding/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

namespace uaplex::enc {

namespace {

using K = FieldKind;

// ---------------------------------------------------------------------------------------
// Shared helpers

std::size_t sizeOfKind(K k, const DataType* t) noexcept {
    if (k == K::Structure || k == K::Enumeration) return t->size;
    return builtinElementSize(std::uint8_t(k));
}
std::size_t alignOfKind(K k, const DataType* t) noexcept {
    if (k == K::Structure || k == K::Enumeration) return t->alignment;
    return std::min<std::size_t>(builtinElementSize(std::uint8_t(k)), alignof(std::max_align_t));
}
bool isBoxedInVariant(std::uint8_t type) noexcept {
    return type == 17 || type == 18 || (type >= 20 && type <= 25);
}

// The JSON member name of a field: the schema name, i.e. the descriptor name with the first
// letter upper-cased and the suffix that avoids C++ keywords removed.
bool fieldNameIs(std::string_view descriptorName, std::string_view key) noexcept {
    std::string_view n = descriptorName;
    if (!n.empty() && n.back() == '_') n.remove_suffix(1);
    if (n.size() != key.size() || n.empty()) return false;
    char first = (n[0] >= 'a' && n[0] <= 'z') ? char(n[0] - 'a' + 'A') : n[0];
    return first == key[0] && n.substr(1) == key.substr(1);
}

constexpr std::int64_t kTicksPerSecond = 10'000'000;
constexpr std::int64_t kTicksPerDay = 86'400 * kTicksPerSecond;
constexpr std::int64_t kDays1601To1970 = 134'774;

// Days since 1970-01-01 of a proleptic Gregorian date, and back.
std::int64_t daysFromCivil(std::int64_t y, unsigned m, unsigned d) noexcept {
    y -= m <= 2;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = unsigned(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + std::int64_t(doe) - 719468;
}
void civilFromDays(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) noexcept {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const unsigned doe = unsigned(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = std::int64_t(yoe) + era * 400 + (m <= 2);
}
std::int64_t ticksOf(std::int64_t y, unsigned mo, unsigned d) noexcept {
    return (daysFromCivil(y, mo, d) + kDays1601To1970) * kTicksPerDay;
}
// Part 6 5.4.2.6: values outside 0001-01-01 .. 9999-12-31 are written as those bounds.
const std::int64_t kMinTicks = ticksOf(1, 1, 1);
const std::int64_t kMaxTicks = ticksOf(9999, 12, 31) + kTicksPerDay - 1;

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// ---------------------------------------------------------------------------------------
// Writer

class JsonWriter {
  public:
    JsonWriter(ByteBuffer& b, std::size_t maxSize) noexcept : w_(b, maxSize) {}
    bool ok() const noexcept { return w_.ok(); }
    uaplex_status status() const noexcept { return w_.status(); }
    void fail(uaplex_status s) noexcept { w_.fail(s); }
    void raw(std::string_view s) noexcept { w_.writeBytes(s.data(), s.size()); }
    void ch(char c) noexcept { w_.writeRaw<char>(c); }

    template <class I>
    void integer(I v) noexcept {
        char buf[24];
        auto res = std::to_chars(buf, buf + sizeof buf, v);
        raw(std::string_view(buf, std::size_t(res.ptr - buf)));
    }
    template <class F>
    void real(F v) noexcept {
        if (std::isnan(v)) return raw("\"NaN\"");
        if (std::isinf(v)) return raw(v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        char buf[40];
        auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest that reads back exactly
        raw(std::string_view(buf, std::size_t(res.ptr - buf)));
    }
    void string(const char* data, std::int32_t length) noexcept {
        if (length < 0) return raw("null");
        ch('"');
        const char* run = data;
        const char* end = data + length;
        for (const char* p = data; p != end; ++p) {
            unsigned char c = static_cast<unsigned char>(*p);
            if (c >= 0x20 && c != '"' && c != '\\') continue;
            raw(std::string_view(run, std::size_t(p - run)));
            run = p + 1;
            switch (c) {
                case '"':
                    raw("\\\"");
                    break;
                case '\\':
                    raw("\\\\");
                    break;
                case '\n':
                    raw("\\n");
                    break;
                case '\r':
                    raw("\\r");
                    break;
                case '\t':
                    raw("\\t");
                    break;
                case '\b':
                    raw("\\b");
                    break;
                case '\f':
                    raw("\\f");
                    break;
                default: {
                    constexpr auto up = HexCase::Upper;
                    char u[6] = {'\\', 'u', '0', '0', hexDigit(c >> 4, up), hexDigit(c, up)};
                    raw(std::string_view(u, 6));
                }
            }
        }
        raw(std::string_view(run, std::size_t(end - run)));
        ch('"');
    }
    void string(const String& s) noexcept { string(s.data, s.length); }
    void base64(const std::uint8_t* data, std::int32_t length) noexcept {
        if (length < 0) return raw("null");
        ch('"');
        std::int32_t i = 0;
        for (; i + 3 <= length; i += 3) {
            std::uint32_t v = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
            char q[4] = {kBase64[v >> 18], kBase64[(v >> 12) & 63], kBase64[(v >> 6) & 63],
                         kBase64[v & 63]};
            raw(std::string_view(q, 4));
        }
        if (length - i == 1) {
            std::uint32_t v = data[i] << 16;
            char q[4] = {kBase64[v >> 18], kBase64[(v >> 12) & 63], '=', '='};
            raw(std::string_view(q, 4));
        } else if (length - i == 2) {
            std::uint32_t v = (data[i] << 16) | (data[i + 1] << 8);
            char q[4] = {kBase64[v >> 18], kBase64[(v >> 12) & 63], kBase64[(v >> 6) & 63], '='};
            raw(std::string_view(q, 4));
        }
        ch('"');
    }

  private:
    BinaryWriter w_;
};

// Emits the members of one object with their separating commas.
class ObjectOut {
  public:
    explicit ObjectOut(JsonWriter& w) noexcept : w_(w) { w_.ch('{'); }
    ~ObjectOut() { w_.ch('}'); }
    JsonWriter& key(std::string_view k) noexcept {
        if (!first_) w_.ch(',');
        first_ = false;
        w_.ch('"');
        w_.raw(k);
        w_.raw("\":");
        return w_;
    }
    // A descriptor field name as its schema name.
    JsonWriter& fieldKey(std::string_view descriptorName) noexcept {
        if (!first_) w_.ch(',');
        first_ = false;
        std::string_view n = descriptorName;
        if (!n.empty() && n.back() == '_') n.remove_suffix(1);
        w_.ch('"');
        if (!n.empty()) {
            w_.ch((n[0] >= 'a' && n[0] <= 'z') ? char(n[0] - 'a' + 'A') : n[0]);
            w_.raw(n.substr(1));
        }
        w_.raw("\":");
        return w_;
    }

  private:
    JsonWriter& w_;
    bool first_ = true;
};

void encodeScalar(JsonWriter& w, K k, const DataType* t, const void* p) noexcept;
void encodeStructure(JsonWriter& w, const DataType& t, const void* p) noexcept;

void encodeDateTime(JsonWriter& w, std::int64_t ticks) noexcept {
    if (ticks <= kMinTicks) return w.raw("\"0001-01-01T00:00:00Z\"");
    if (ticks > kMaxTicks) return w.raw("\"9999-12-31T23:59:59Z\"");
    std::int64_t days = ticks / kTicksPerDay;
    std::int64_t rem = ticks % kTicksPerDay;
    if (rem < 0) rem += kTicksPerDay, --days;
    std::int64_t y;
    unsigned m, d;
    civilFromDays(days - kDays1601To1970, y, m, d);
    std::int64_t secs = rem / kTicksPerSecond;
    std::int64_t frac = rem % kTicksPerSecond;
    char buf[40];
    int n = std::snprintf(buf, sizeof buf, "\"%04d-%02u-%02uT%02d:%02d:%02d", int(y), m, d,
                          int(secs / 3600), int(secs / 60 % 60), int(secs % 60));
    if (frac != 0) {
        char f[8];
        std::snprintf(f, sizeof f, "%07d", int(frac));
        int len = 7;
        while (f[len - 1] == '0') --len;
        buf[n++] = '.';
        std::memcpy(buf + n, f, std::size_t(len));
        n += len;
    }
    buf[n++] = 'Z';
    buf[n++] = '"';
    w.raw(std::string_view(buf, std::size_t(n)));
}

void encodeGuid(JsonWriter& w, const Guid& g) noexcept {
    std::array<char, kGuidTextSize + 2> buf;
    buf.front() = buf.back() = '"';
    formatGuid(g, std::span<char, kGuidTextSize>(buf.data() + 1, kGuidTextSize));
    w.raw(std::string_view(buf.data(), buf.size()));
}

// NodeId (Part 6 1.04 5.4.2.10) and ExpandedNodeId (5.4.2.11) in the object form.
void encodeNodeId(JsonWriter& w, const NodeId& n, const ExpandedNodeId* x) noexcept {
    ObjectOut o(w);
    switch (n.identifier_type) {
        case UAPLEX_ID_NUMERIC:
            o.key("Id").integer(n.identifier.numeric);
            break;
        case UAPLEX_ID_STRING:
            o.key("IdType").integer(1);
            o.key("Id").string(n.identifier.string);
            break;
        case UAPLEX_ID_GUID:
            o.key("IdType").integer(2);
            encodeGuid(o.key("Id"), n.identifier.guid);
            break;
        case UAPLEX_ID_BYTESTRING:
            o.key("IdType").integer(3);
            o.key("Id").base64(n.identifier.bytestring.data, n.identifier.bytestring.length);
            break;
        default:
            w.fail(UAPLEX_BadEncodingError);
            return;
    }
    if (x != nullptr && (x->mask & UAPLEX_EXPANDEDNODEID_NAMESPACEURI))
        o.key("Namespace").string(x->namespace_uri);
    else if (n.namespace_index != 0)
        o.key("Namespace").integer(n.namespace_index);
    if (x != nullptr && (x->mask & UAPLEX_EXPANDEDNODEID_SERVERINDEX))
        o.key("ServerUri").integer(x->server_index);
}

void encodeVariant(JsonWriter& w, const Variant& v) noexcept {
    std::uint8_t type = v.encoding & UAPLEX_VARIANT_TYPE_MASK;
    if (type == 0) return w.raw("null");
    if (type > 25) return w.fail(UAPLEX_BadEncodingError);
    ObjectOut o(w);
    o.key("Type").integer(type);
    JsonWriter& body = o.key("Body");
    if (v.encoding & UAPLEX_VARIANT_ARRAY) {
        if (v.array_length < 0) {
            body.raw("null");
        } else {
            if (v.array_length > 0 && v.value.pointer == nullptr)
                return w.fail(UAPLEX_BadEncodingError);
            std::size_t size = builtinElementSize(type);
            const auto* base = static_cast<const std::uint8_t*>(v.value.pointer);
            body.ch('[');
            for (std::int32_t i = 0; i < v.array_length && w.ok(); ++i) {
                if (i) body.ch(',');
                encodeScalar(body, K(type), nullptr, base + std::size_t(i) * size);
            }
            body.ch(']');
        }
        if (v.encoding & UAPLEX_VARIANT_ARRAY_DIMENSIONS) {
            JsonWriter& d = o.key("Dimensions");
            if (v.dimensions_length < 0) {
                d.raw("null");
            } else {
                d.ch('[');
                for (std::int32_t i = 0; i < v.dimensions_length; ++i) {
                    if (i) d.ch(',');
                    d.integer(v.dimensions[i]);
                }
                d.ch(']');
            }
        }
        return;
    }
    if (isBoxedInVariant(type)) {
        if (v.value.pointer == nullptr) return w.fail(UAPLEX_BadEncodingError);
        encodeScalar(body, K(type), nullptr, v.value.pointer);
    } else {
        encodeScalar(body, K(type), nullptr, &v.value);
    }
}

void encodeExtensionObject(JsonWriter& w, const ExtensionObject& e) noexcept {
    if (e.object != nullptr && e.data_type != nullptr) {
        const auto* t = static_cast<const DataType*>(e.data_type);
        ObjectOut o(w);
        NodeId id = t->typeId != 0 ? numericNodeId(0, t->typeId) : e.type_id;
        encodeNodeId(o.key("TypeId"), id, nullptr);
        encodeStructure(o.key("Body"), *t, e.object);
        return;
    }
    bool nullId = e.type_id.identifier_type == UAPLEX_ID_NUMERIC &&
                  e.type_id.namespace_index == 0 && e.type_id.identifier.numeric == 0;
    if (e.encoding == UAPLEX_EXTENSIONOBJECT_NOBODY && nullId) return w.raw("null");
    ObjectOut o(w);
    encodeNodeId(o.key("TypeId"), e.type_id, nullptr);
    if (e.encoding == UAPLEX_EXTENSIONOBJECT_BINARY) {
        o.key("Encoding").integer(1);
        o.key("Body").base64(e.body.data, e.body.length);
    } else if (e.encoding == UAPLEX_EXTENSIONOBJECT_XML) {
        o.key("Encoding").integer(2);
        o.key("Body").string(reinterpret_cast<const char*>(e.body.data), e.body.length);
    } else if (e.encoding != UAPLEX_EXTENSIONOBJECT_NOBODY) {
        w.fail(UAPLEX_BadEncodingError);
    }
}

void encodeDiagnosticInfo(JsonWriter& w, const DiagnosticInfo& d) noexcept {
    ObjectOut o(w);
    if (d.mask & UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID) o.key("SymbolicId").integer(d.symbolic_id);
    if (d.mask & UAPLEX_DIAGNOSTICINFO_NAMESPACE_URI)
        o.key("NamespaceUri").integer(d.namespace_uri);
    if (d.mask & UAPLEX_DIAGNOSTICINFO_LOCALE) o.key("Locale").integer(d.locale);
    if (d.mask & UAPLEX_DIAGNOSTICINFO_LOCALIZED_TEXT)
        o.key("LocalizedText").integer(d.localized_text);
    if (d.mask & UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO)
        o.key("AdditionalInfo").string(d.additional_info);
    if (d.mask & UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE)
        o.key("InnerStatusCode").integer(d.inner_status_code);
    if (d.mask & UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO) {
        if (d.inner_diagnostic_info == nullptr) return w.fail(UAPLEX_BadEncodingError);
        encodeDiagnosticInfo(o.key("InnerDiagnosticInfo"), *d.inner_diagnostic_info);
    }
}

std::int64_t readEnum(const DataType& t, const void* p) noexcept {
    switch (t.builtinId) {
        case 1:
            return *static_cast<const std::uint8_t*>(p);
        case 2:
            return *static_cast<const std::uint16_t*>(p);
        case 8: {
            std::int64_t v;
            std::memcpy(&v, p, 8);
            return v;
        }
        default: {
            std::int32_t v;
            std::memcpy(&v, p, 4);
            return v;
        }
    }
}

void encodeScalar(JsonWriter& w, K k, const DataType* t, const void* p) noexcept {
    switch (k) {
        case K::Boolean:
            return w.raw(*static_cast<const bool*>(p) ? "true" : "false");
        case K::SByte:
            return w.integer(int(*static_cast<const std::int8_t*>(p)));
        case K::Byte:
            return w.integer(unsigned(*static_cast<const std::uint8_t*>(p)));
        case K::Int16:
            return w.integer(*static_cast<const std::int16_t*>(p));
        case K::UInt16:
            return w.integer(*static_cast<const std::uint16_t*>(p));
        case K::Int32:
            return w.integer(*static_cast<const std::int32_t*>(p));
        case K::UInt32:
        case K::StatusCode:
            return w.integer(*static_cast<const std::uint32_t*>(p));
        // 64-bit integers are strings: JavaScript numbers hold 53 bits (Part 6 5.4.2.3).
        case K::Int64:
            w.ch('"');
            w.integer(*static_cast<const std::int64_t*>(p));
            return w.ch('"');
        case K::UInt64:
            w.ch('"');
            w.integer(*static_cast<const std::uint64_t*>(p));
            return w.ch('"');
        case K::Float:
            return w.real(*static_cast<const float*>(p));
        case K::Double:
            return w.real(*static_cast<const double*>(p));
        case K::String:
        case K::XmlElement:
            return w.string(*static_cast<const String*>(p));
        case K::DateTime:
            return encodeDateTime(w, *static_cast<const std::int64_t*>(p));
        case K::Guid:
            return encodeGuid(w, *static_cast<const Guid*>(p));
        case K::ByteString: {
            const auto& b = *static_cast<const ByteString*>(p);
            return w.base64(b.data, b.length);
        }
        case K::NodeId:
            return encodeNodeId(w, *static_cast<const NodeId*>(p), nullptr);
        case K::ExpandedNodeId: {
            const auto& x = *static_cast<const ExpandedNodeId*>(p);
            return encodeNodeId(w, x.node_id, &x);
        }
        case K::QualifiedName: {
            const auto& q = *static_cast<const QualifiedName*>(p);
            ObjectOut o(w);
            o.key("Name").string(q.name);
            if (q.namespace_index != 0) o.key("Uri").integer(q.namespace_index);
            return;
        }
        case K::LocalizedText: {
            const auto& l = *static_cast<const LocalizedText*>(p);
            ObjectOut o(w);
            if (l.mask & UAPLEX_LOCALIZEDTEXT_LOCALE) o.key("Locale").string(l.locale);
            if (l.mask & UAPLEX_LOCALIZEDTEXT_TEXT) o.key("Text").string(l.text);
            return;
        }
        case K::ExtensionObject:
            return encodeExtensionObject(w, *static_cast<const ExtensionObject*>(p));
        case K::DataValue: {
            const auto& d = *static_cast<const DataValue*>(p);
            ObjectOut o(w);
            if (d.mask & UAPLEX_DATAVALUE_VALUE) encodeVariant(o.key("Value"), d.value);
            if (d.mask & UAPLEX_DATAVALUE_STATUS) o.key("Status").integer(d.status);
            if (d.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP)
                encodeDateTime(o.key("SourceTimestamp"), d.source_timestamp);
            if (d.mask & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS)
                o.key("SourcePicoseconds").integer(d.source_picoseconds);
            if (d.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP)
                encodeDateTime(o.key("ServerTimestamp"), d.server_timestamp);
            if (d.mask & UAPLEX_DATAVALUE_SERVER_PICOSECONDS)
                o.key("ServerPicoseconds").integer(d.server_picoseconds);
            return;
        }
        case K::Variant:
            return encodeVariant(w, *static_cast<const Variant*>(p));
        case K::DiagnosticInfo:
            return encodeDiagnosticInfo(w, *static_cast<const DiagnosticInfo*>(p));
        case K::Enumeration:
            return w.integer(readEnum(*t, p));
        case K::Structure:
            return encodeStructure(w, *t, p);
    }
    w.fail(UAPLEX_BadEncodingError);
}

// Default values are omitted from structures (Part 6 5.4.1); the decoder restores them.
bool isDefault(K k, const void* p) noexcept {
    switch (k) {
        case K::Boolean:
            return !*static_cast<const bool*>(p);
        case K::SByte:
        case K::Byte:
            return *static_cast<const std::uint8_t*>(p) == 0;
        case K::Int16:
        case K::UInt16:
            return *static_cast<const std::uint16_t*>(p) == 0;
        case K::Int32:
        case K::UInt32:
        case K::StatusCode:
            return *static_cast<const std::uint32_t*>(p) == 0;
        case K::Float: {
            std::uint32_t bits;
            std::memcpy(&bits, p, 4);
            return bits == 0;
        }
        case K::Int64:
        case K::UInt64:
        case K::DateTime:
        case K::Double: {
            std::uint64_t bits;
            std::memcpy(&bits, p, 8);
            return bits == 0;
        }
        case K::String:
        case K::XmlElement:
        case K::ByteString:
            return static_cast<const String*>(p)->length < 0;
        case K::Guid: {
            static const Guid zero{};
            return std::memcmp(p, &zero, sizeof(Guid)) == 0;
        }
        case K::NodeId: {
            const auto& n = *static_cast<const NodeId*>(p);
            return n.identifier_type == UAPLEX_ID_NUMERIC && n.namespace_index == 0 &&
                   n.identifier.numeric == 0;
        }
        case K::ExpandedNodeId: {
            const auto& x = *static_cast<const ExpandedNodeId*>(p);
            return x.mask == 0 && isDefault(K::NodeId, &x.node_id);
        }
        case K::QualifiedName: {
            const auto& q = *static_cast<const QualifiedName*>(p);
            return q.namespace_index == 0 && q.name.length < 0;
        }
        case K::LocalizedText:
            return (static_cast<const LocalizedText*>(p)->mask & 3) == 0;
        case K::ExtensionObject: {
            const auto& e = *static_cast<const ExtensionObject*>(p);
            return e.object == nullptr && e.encoding == UAPLEX_EXTENSIONOBJECT_NOBODY &&
                   isDefault(K::NodeId, &e.type_id);
        }
        case K::DataValue:
            return (static_cast<const DataValue*>(p)->mask & 0x3F) == 0;
        case K::Variant:
            return (static_cast<const Variant*>(p)->encoding & UAPLEX_VARIANT_TYPE_MASK) == 0;
        case K::DiagnosticInfo:
            return (static_cast<const DiagnosticInfo*>(p)->mask & 0x7F) == 0;
        case K::Enumeration:
        case K::Structure:
            return false;
    }
    return false;
}

void encodeArray(JsonWriter& w, K k, const DataType* t, const void* p) noexcept {
    const auto& a = *static_cast<const Array<std::uint8_t>*>(p);
    if (a.length < 0) return w.raw("null");
    if (a.length > 0 && a.data == nullptr) return w.fail(UAPLEX_BadEncodingError);
    std::size_t size = sizeOfKind(k, t);
    w.ch('[');
    for (std::int32_t i = 0; i < a.length && w.ok(); ++i) {
        if (i) w.ch(',');
        encodeScalar(w, k, t, a.data + std::size_t(i) * size);
    }
    w.ch(']');
}

void encodeStructure(JsonWriter& w, const DataType& t, const void* p) noexcept {
    const auto* base = static_cast<const std::uint8_t*>(p);
    ObjectOut o(w);
    std::uint32_t selector = 0;
    if (t.kind == TypeKind::StructureWithOptionalFields || t.kind == TypeKind::Union)
        std::memcpy(&selector, base + t.selectorOffset, 4);
    if (t.kind == TypeKind::Union) {
        // Union (Part 6 1.04 5.4.6): {"SwitchField": n, "Value": member}.
        if (selector == 0) return;
        for (const FieldDescriptor& f : t.fieldSpan()) {
            if (f.switchValue != selector) continue;
            o.key("SwitchField").integer(selector);
            JsonWriter& v = o.key("Value");
            if (f.isArray)
                encodeArray(v, f.kind, f.type, base + f.offset);
            else
                encodeScalar(v, f.kind, f.type, base + f.offset);
            return;
        }
        return w.fail(UAPLEX_BadEncodingError);
    }
    for (const FieldDescriptor& f : t.fieldSpan()) {
        const void* fp = base + f.offset;
        if (f.optionalBit >= 0) {
            // Present optional fields are written even when default: presence is the mask.
            if (!(selector & (1u << f.optionalBit))) continue;
        } else if (f.isArray ? static_cast<const Array<std::uint8_t>*>(fp)->length < 0
                             : isDefault(f.kind, fp)) {
            continue;
        }
        JsonWriter& v = o.fieldKey(f.name);
        if (f.isArray)
            encodeArray(v, f.kind, f.type, fp);
        else
            encodeScalar(v, f.kind, f.type, fp);
        if (!w.ok()) return;
    }
}

// ---------------------------------------------------------------------------------------
// Reader

// Objects and arrays at least this long are recorded by the structural pass.
constexpr std::size_t kIndexedBytes = 64;

class JsonReader {
  public:
    JsonReader(std::span<const std::uint8_t> in, Arena& arena, const DecodeLimits& limits) noexcept
        : begin_(in.data()),
          p_(in.data()),
          end_(in.data() + in.size()),
          arena_(arena),
          limits_(limits) {
        if (in.size() > limits.maxMessageSize) fail(UAPLEX_BadEncodingLimitsExceeded);
    }

    // The structural pass over the whole input: one value and nothing but whitespace after
    // it. Returns false (with the status set) on a syntax error or a limit.
    bool index() noexcept {
        if (!ok()) return false;
        if (std::size_t(end_ - begin_) >= std::numeric_limits<std::uint32_t>::max())
            return fail(UAPLEX_BadEncodingLimitsExceeded), false;
        recording_ = true;
        try {
            skipValue();
        } catch (...) {  // the index's storage
            fail(UAPLEX_BadOutOfMemory);
        }
        recording_ = false;
        if (ok() && !atEnd()) fail();
        scanned_ += std::uint64_t(p_ - begin_);
        if (!ok()) return false;
        p_ = begin_;
        depth_ = 0;
        indexed_ = true;
        return true;
    }
    // Bytes read so far (structural pass and decoding pass; jumps over indexed values are
    // not reads, going back to a deferred member is).
    std::uint64_t scannedBytes() const noexcept {
        return scanned_ + std::uint64_t(p_ - begin_) + rewound_ - jumped_;
    }

    bool ok() const noexcept { return status_ == UAPLEX_Good; }
    uaplex_status status() const noexcept { return status_; }
    const DecodeLimits& limits() const noexcept { return limits_; }
    void fail(uaplex_status s = UAPLEX_BadDecodingError) noexcept {
        if (status_ == UAPLEX_Good) status_ = s;
        p_ = end_;
    }
    const std::uint8_t* pos() const noexcept { return p_; }
    void seek(const std::uint8_t* p) noexcept {
        if (!ok()) return;
        if (p < p_)
            rewound_ += std::uint64_t(p_ - p);
        else
            jumped_ += std::uint64_t(p - p_);
        p_ = p;
    }

    // The recorded object or array starting at the current position, or nullptr.
    struct Span {
        std::uint32_t open, close, count;  // offsets of '[' / '{' and its match; elements
    };
    const Span* indexedHere() const noexcept {
        if (!indexed_ || p_ == end_) return nullptr;
        const auto at = std::uint32_t(p_ - begin_);
        auto it = std::lower_bound(index_.begin(), index_.end(), at,
                                   [](const Span& s, std::uint32_t v) { return s.open < v; });
        return it != index_.end() && it->open == at ? &*it : nullptr;
    }
    // Past the recorded value at the current position (no rescan).
    void jumpPast(const Span& s) noexcept { seek(begin_ + s.close + 1); }

    void ws() noexcept {
        while (p_ != end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
    }
    int peek() noexcept {
        ws();
        return p_ != end_ ? *p_ : -1;
    }
    bool take(char c) noexcept {
        if (peek() != c) return false;
        ++p_;
        return true;
    }
    bool expect(char c) noexcept {
        if (take(c)) return true;
        fail();
        return false;
    }
    bool keyword(std::string_view k) noexcept {
        if (std::size_t(end_ - p_) >= k.size() && std::memcmp(p_, k.data(), k.size()) == 0) {
            p_ += k.size();
            return true;
        }
        return false;
    }
    // Consumes a JSON null if one is next.
    bool takeNull() noexcept { return peek() == 'n' && keyword("null"); }
    bool atEnd() noexcept { return peek() == -1; }

    bool enter() noexcept {
        if (++depth_ <= limits_.maxNestingDepth) return true;
        fail(UAPLEX_BadEncodingLimitsExceeded);
        return false;
    }
    void leave() noexcept { --depth_; }

    // Arena storage under maxArenaBytes.
    void* allocate(std::size_t size, std::size_t align) noexcept {
        if (!ok()) return nullptr;
        if (size > limits_.maxArenaBytes - std::min(arena_.used(), limits_.maxArenaBytes)) {
            fail(UAPLEX_BadEncodingLimitsExceeded);
            return nullptr;
        }
        void* p = arena_.allocate(size == 0 ? 1 : size, align);
        if (p == nullptr) fail(UAPLEX_BadEncodingLimitsExceeded);
        return p;
    }

    // The raw content of the next string (between the quotes) and whether it has escapes.
    bool stringToken(const std::uint8_t*& b, const std::uint8_t*& e, bool& escaped) noexcept {
        if (!expect('"')) return false;
        b = p_;
        escaped = false;
        while (p_ != end_) {
            std::uint8_t c = *p_;
            if (c == '"') {
                e = p_++;
                return true;
            }
            if (c < 0x20) break;  // control characters must be escaped
            if (c == '\\') {
                escaped = true;
                if (++p_ == end_) break;
            }
            ++p_;
        }
        fail();
        return false;
    }

    // A JSON string as UTF-8 text of at most `maxLength` bytes.
    bool readString(String& out, std::int32_t maxLength) noexcept {
        out = String{-1, nullptr};
        const std::uint8_t *b, *e;
        bool escaped;
        if (!stringToken(b, e, escaped)) return false;
        std::size_t raw = std::size_t(e - b);
        if (!escaped) {
            if (raw > std::size_t(maxLength)) return fail(UAPLEX_BadEncodingLimitsExceeded), false;
            out = String{std::int32_t(raw), reinterpret_cast<const char*>(b)};
            return true;
        }
        // An escape is at most 6 input bytes per output byte: refuse before allocating.
        if (raw / 6 > std::size_t(maxLength)) return fail(UAPLEX_BadEncodingLimitsExceeded), false;
        auto* dst = static_cast<char*>(allocate(raw, 1));
        if (dst == nullptr) return false;
        std::size_t n = 0;
        for (const std::uint8_t* q = b; q != e;) {
            if (*q != '\\') {
                dst[n++] = char(*q++);
                continue;
            }
            ++q;
            switch (*q++) {
                case '"':
                    dst[n++] = '"';
                    break;
                case '\\':
                    dst[n++] = '\\';
                    break;
                case '/':
                    dst[n++] = '/';
                    break;
                case 'b':
                    dst[n++] = '\b';
                    break;
                case 'f':
                    dst[n++] = '\f';
                    break;
                case 'n':
                    dst[n++] = '\n';
                    break;
                case 'r':
                    dst[n++] = '\r';
                    break;
                case 't':
                    dst[n++] = '\t';
                    break;
                case 'u': {
                    std::uint32_t cp;
                    if (!hex4(q, e, cp)) return fail(), false;
                    if (cp >= 0xD800 && cp <= 0xDBFF) {  // high surrogate: a low one must follow
                        std::uint32_t lo;
                        if (e - q < 6 || q[0] != '\\' || q[1] != 'u') return fail(), false;
                        q += 2;
                        if (!hex4(q, e, lo) || lo < 0xDC00 || lo > 0xDFFF) return fail(), false;
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                        return fail(), false;
                    }
                    n += utf8(cp, dst + n);
                    break;
                }
                default:
                    return fail(), false;
            }
        }
        if (n > std::size_t(maxLength)) return fail(UAPLEX_BadEncodingLimitsExceeded), false;
        out = String{std::int32_t(n), dst};
        return true;
    }

    // A JSON number token; `integral` when it has neither fraction nor exponent.
    bool numberToken(std::string_view& tok, bool& integral) noexcept {
        ws();
        const std::uint8_t* b = p_;
        const std::uint8_t* q = p_;
        integral = true;
        if (q != end_ && *q == '-') ++q;
        if (q == end_ || !digit(*q)) return fail(), false;
        if (*q == '0') {
            ++q;
        } else {
            while (q != end_ && digit(*q)) ++q;
        }
        if (q != end_ && *q == '.') {
            integral = false;
            ++q;
            if (q == end_ || !digit(*q)) return fail(), false;
            while (q != end_ && digit(*q)) ++q;
        }
        if (q != end_ && (*q == 'e' || *q == 'E')) {
            integral = false;
            ++q;
            if (q != end_ && (*q == '+' || *q == '-')) ++q;
            if (q == end_ || !digit(*q)) return fail(), false;
            while (q != end_ && digit(*q)) ++q;
        }
        if (q - b > 400) return fail(), false;  // no meaningful number is this long
        p_ = q;
        tok = std::string_view(reinterpret_cast<const char*>(b), std::size_t(q - b));
        return true;
    }

    // Skips one value of any kind, checking its syntax. An indexed object or array is jumped
    // over; during the structural pass, objects and arrays are recorded.
    void skipValue() noexcept {
        switch (peek()) {
            case '{': {
                if (const Span* s = indexedHere()) return jumpPast(*s);
                std::size_t slot = open();
                if (!ok()) return;
                ++p_;
                if (!enter()) return;
                if (!take('}')) {
                    do {
                        const std::uint8_t *b, *e;
                        bool esc;
                        if (!stringToken(b, e, esc) || !expect(':')) return;
                        skipValue();
                    } while (ok() && take(','));
                    if (!expect('}')) return;
                }
                leave();
                close(slot, 0);
                return;
            }
            case '[': {
                if (const Span* s = indexedHere()) return jumpPast(*s);
                std::size_t slot = open();
                if (!ok()) return;
                ++p_;
                if (!enter()) return;
                std::uint32_t n = 0;
                if (!take(']')) {
                    do {
                        skipValue();
                        ++n;
                    } while (ok() && take(','));
                    if (!expect(']')) return;
                }
                leave();
                close(slot, n);
                return;
            }
            case '"': {
                const std::uint8_t *b, *e;
                bool esc;
                stringToken(b, e, esc);
                return;
            }
            case 't':
                if (!keyword("true")) fail();
                return;
            case 'f':
                if (!keyword("false")) fail();
                return;
            case 'n':
                if (!keyword("null")) fail();
                return;
            default: {
                std::string_view tok;
                bool integral;
                numberToken(tok, integral);
            }
        }
    }

  private:
    // Structural pass: a slot for the object or array opening here (kept in order of their
    // openings), filled at its end, dropped when the value is short (it is then the last
    // slot: everything inside it was shorter still).
    std::size_t open() {
        if (!recording_) return 0;
        index_.push_back(Span{std::uint32_t(p_ - begin_), 0, 0});
        // The index is bounded like the arena: a quarter of maxArenaBytes.
        if (index_.size() * sizeof(Span) > limits_.maxArenaBytes / 4)
            fail(UAPLEX_BadEncodingLimitsExceeded);
        return index_.size() - 1;
    }
    void close(std::size_t slot, std::uint32_t count) noexcept {
        if (!recording_) return;
        Span& s = index_[slot];
        s.close = std::uint32_t(p_ - 1 - begin_);
        s.count = count;
        if (s.close + 1 - s.open < kIndexedBytes && slot + 1 == index_.size()) index_.pop_back();
    }

    static bool digit(std::uint8_t c) noexcept { return c >= '0' && c <= '9'; }
    static bool hex4(const std::uint8_t*& q, const std::uint8_t* e, std::uint32_t& v) noexcept {
        if (e - q < 4) return false;
        v = 0;
        for (int i = 0; i < 4; ++i) {
            int d = hexValue(char(*q++));
            if (d < 0) return false;
            v = v * 16 + std::uint32_t(d);
        }
        return true;
    }
    static std::size_t utf8(std::uint32_t cp, char* out) noexcept {
        if (cp < 0x80) return out[0] = char(cp), 1;
        if (cp < 0x800) {
            out[0] = char(0xC0 | (cp >> 6));
            out[1] = char(0x80 | (cp & 0x3F));
            return 2;
        }
        if (cp < 0x10000) {
            out[0] = char(0xE0 | (cp >> 12));
            out[1] = char(0x80 | ((cp >> 6) & 0x3F));
            out[2] = char(0x80 | (cp & 0x3F));
            return 3;
        }
        out[0] = char(0xF0 | (cp >> 18));
        out[1] = char(0x80 | ((cp >> 12) & 0x3F));
        out[2] = char(0x80 | ((cp >> 6) & 0x3F));
        out[3] = char(0x80 | (cp & 0x3F));
        return 4;
    }

    const std::uint8_t* begin_;
    const std::uint8_t* p_;
    const std::uint8_t* end_;
    Arena& arena_;
    DecodeLimits limits_;
    uaplex_status status_ = UAPLEX_Good;
    std::uint32_t depth_ = 0;
    bool recording_ = false;  // the structural pass is running
    bool indexed_ = false;    // it has run: index_ holds every long object and array
    std::vector<Span> index_;
    std::uint64_t scanned_ = 0, rewound_ = 0, jumped_ = 0;
};

// Calls f(key) for each member of an object; f consumes the member's value.
template <class F>
void forEachMember(JsonReader& r, F&& f) noexcept {
    if (!r.expect('{') || !r.enter()) return;
    if (!r.take('}')) {
        do {
            String key;
            if (!r.readString(key, 256) || !r.expect(':')) return;
            f(view(key));
            if (!r.ok()) return;
        } while (r.take(','));
        r.expect('}');
    }
    r.leave();
}

// Tracks members already seen: a repeated member is a decoding error (Part 6 5.4.2.16).
class Seen {
  public:
    bool first(JsonReader& r, std::uint32_t i) noexcept {
        if (i >= 256) return true;
        std::uint64_t bit = 1ull << (i % 64);
        if (bits_[i / 64] & bit) return r.fail(), false;
        bits_[i / 64] |= bit;
        return true;
    }
    bool has(std::uint32_t i) const noexcept { return i < 256 && (bits_[i / 64] >> (i % 64)) & 1; }

  private:
    std::uint64_t bits_[4] = {};
};

// A member whose decoding waits for another one: where its value starts.
struct Deferred {
    const std::uint8_t* at = nullptr;
    void mark(JsonReader& r) noexcept {
        r.ws();
        at = r.pos();
        r.skipValue();
    }
};

void decodeScalar(JsonReader& r, K k, const DataType* t, void* p) noexcept;
void decodeStructure(JsonReader& r, const DataType& t, void* p) noexcept;

void setDefault(K k, const DataType* t, void* p) noexcept;

void setStructureDefaults(const DataType& t, void* p) noexcept {
    auto* base = static_cast<std::uint8_t*>(p);
    std::memset(p, 0, t.size);
    for (const FieldDescriptor& f : t.fieldSpan()) {
        if (f.isArray)
            reinterpret_cast<Array<std::uint8_t>*>(base + f.offset)->length = -1;
        else
            setDefault(f.kind, f.type, base + f.offset);
    }
}

void setDefault(K k, const DataType* t, void* p) noexcept {
    if (k == K::Structure) return setStructureDefaults(*t, p);
    std::memset(p, 0, sizeOfKind(k, t));
    switch (k) {
        case K::String:
        case K::XmlElement:
        case K::ByteString:
            static_cast<String*>(p)->length = -1;
            break;
        case K::ExpandedNodeId:
            static_cast<ExpandedNodeId*>(p)->namespace_uri.length = -1;
            break;
        case K::QualifiedName:
            static_cast<QualifiedName*>(p)->name.length = -1;
            break;
        case K::LocalizedText:
            static_cast<LocalizedText*>(p)->locale.length = -1;
            static_cast<LocalizedText*>(p)->text.length = -1;
            break;
        case K::ExtensionObject:
            static_cast<ExtensionObject*>(p)->body.length = -1;
            break;
        case K::DiagnosticInfo:
            static_cast<DiagnosticInfo*>(p)->additional_info.length = -1;
            break;
        case K::Variant:
            static_cast<Variant*>(p)->dimensions_length = -1;
            break;
        case K::DataValue:
            static_cast<DataValue*>(p)->value.dimensions_length = -1;
            break;
        default:
            break;
    }
}

// An integer in [lo, hi]; `quoted` also accepts it as a JSON string (Int64/UInt64).
template <class T>
bool readInteger(JsonReader& r, T& out, bool quoted) noexcept {
    std::string_view tok;
    bool integral = false;
    if (r.peek() == '"') {
        if (!quoted) return r.fail(), false;
        String s;
        if (!r.readString(s, 32)) return false;
        // The content must itself be a JSON integer.
        std::span<const std::uint8_t> in(reinterpret_cast<const std::uint8_t*>(s.data),
                                         std::size_t(std::max(s.length, 0)));
        Arena scratch(0);
        JsonReader inner(in, scratch, r.limits());
        if (!inner.numberToken(tok, integral) || !inner.atEnd()) return r.fail(), false;
    } else if (!r.numberToken(tok, integral)) {
        return false;
    }
    if (!integral) return r.fail(), false;
    auto res = std::from_chars(tok.data(), tok.data() + tok.size(), out);
    if (res.ec != std::errc() || res.ptr != tok.data() + tok.size()) return r.fail(), false;
    return true;
}

template <class F>
void readReal(JsonReader& r, F& out) noexcept {
    if (r.peek() == '"') {
        String s;
        if (!r.readString(s, 16)) return;
        std::string_view v = view(s);
        if (v == "NaN")
            out = std::numeric_limits<F>::quiet_NaN();
        else if (v == "Infinity")
            out = std::numeric_limits<F>::infinity();
        else if (v == "-Infinity")
            out = -std::numeric_limits<F>::infinity();
        else
            r.fail();
        return;
    }
    std::string_view tok;
    bool integral;
    if (!r.numberToken(tok, integral)) return;
    auto res = std::from_chars(tok.data(), tok.data() + tok.size(), out);
    if (res.ec != std::errc() || res.ptr != tok.data() + tok.size()) r.fail();
}

template <class T>
T readNarrow(JsonReader& r) noexcept {
    std::int64_t v = 0;
    if (!readInteger(r, v, false)) return 0;
    if (v < std::int64_t(std::numeric_limits<T>::min()) ||
        v > std::int64_t(std::numeric_limits<T>::max())) {
        r.fail();
        return 0;
    }
    return T(v);
}

int digitsAt(const char* s, int n) noexcept {
    int v = 0;
    for (int i = 0; i < n; ++i) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

// ISO 8601 / RFC 3339: YYYY-MM-DDThh:mm:ss[.f{1,9}](Z|+hh:mm|-hh:mm).
void readDateTime(JsonReader& r, std::int64_t& out) noexcept {
    String s;
    if (!r.readString(s, 64)) return;
    const char* c = s.data;
    std::size_t n = std::size_t(s.length);
    if (n < 20 || c[4] != '-' || c[7] != '-' || (c[10] != 'T' && c[10] != 't') || c[13] != ':' ||
        c[16] != ':')
        return r.fail();
    int y = digitsAt(c, 4), mo = digitsAt(c + 5, 2), d = digitsAt(c + 8, 2);
    int h = digitsAt(c + 11, 2), mi = digitsAt(c + 14, 2), se = digitsAt(c + 17, 2);
    static constexpr int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > kDays[mo - 1] || h < 0 || h > 23 || mi < 0 ||
        mi > 59 || se < 0 || se > 59)
        return r.fail();
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (mo == 2 && d == 29 && !leap) return r.fail();
    std::size_t i = 19;
    std::int64_t frac = 0;
    if (c[i] == '.') {
        ++i;
        std::size_t start = i;
        std::int64_t scale = kTicksPerSecond;
        while (i < n && c[i] >= '0' && c[i] <= '9') {
            if (scale > 1) scale /= 10, frac += (c[i] - '0') * scale;
            ++i;
        }
        if (i == start || i - start > 9) return r.fail();
    }
    std::int64_t offset = 0;
    if (i < n && (c[i] == 'Z' || c[i] == 'z')) {
        ++i;
    } else if (i + 6 == n && (c[i] == '+' || c[i] == '-') && c[i + 3] == ':') {
        int oh = digitsAt(c + i + 1, 2), om = digitsAt(c + i + 4, 2);
        if (oh < 0 || oh > 23 || om < 0 || om > 59) return r.fail();
        offset = (std::int64_t(oh) * 3600 + om * 60) * kTicksPerSecond;
        if (c[i] == '-') offset = -offset;
        i += 6;
    } else {
        return r.fail();
    }
    if (i != n) return r.fail();
    out = ticksOf(y, unsigned(mo), unsigned(d)) +
          (std::int64_t(h) * 3600 + mi * 60 + se) * kTicksPerSecond + frac - offset;
}

void readGuid(JsonReader& r, Guid& g) noexcept {
    String s;
    if (!r.readString(s, 64)) return;
    if (s.length != 36) return r.fail();
    const char* c = s.data;
    std::uint8_t b[16];
    int k = 0;
    for (int i = 0; i < 36;) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (c[i] != '-') return r.fail();
            ++i;
            continue;
        }
        int v = 0;
        for (int j = 0; j < 2; ++j) {
            int dgt = hexValue(c[i + j]);
            if (dgt < 0) return r.fail();
            v = v * 16 + dgt;
        }
        b[k++] = std::uint8_t(v);
        i += 2;
    }
    g.data1 =
        std::uint32_t(b[0]) << 24 | std::uint32_t(b[1]) << 16 | std::uint32_t(b[2]) << 8 | b[3];
    g.data2 = std::uint16_t(b[4] << 8 | b[5]);
    g.data3 = std::uint16_t(b[6] << 8 | b[7]);
    std::memcpy(g.data4, b + 8, 8);
}

void readBase64(JsonReader& r, ByteString& out) noexcept {
    out = ByteString{-1, nullptr};
    if (r.takeNull()) return;
    const std::uint8_t *b, *e;
    bool escaped;
    if (!r.stringToken(b, e, escaped)) return;
    if (escaped) return r.fail();
    std::size_t n = std::size_t(e - b);
    while (n > 0 && b[n - 1] == '=' && (e - b) - std::ptrdiff_t(n) < 2) --n;
    if (n % 4 == 1) return r.fail();
    std::size_t bytes = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0);
    if (bytes > std::size_t(r.limits().maxByteStringLength))
        return r.fail(UAPLEX_BadEncodingLimitsExceeded);
    auto* dst = static_cast<std::uint8_t*>(r.allocate(bytes, 1));
    if (dst == nullptr) return;
    std::uint32_t acc = 0;
    int bits = 0;
    std::size_t o = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::uint8_t c = b[i];
        int v = (c >= 'A' && c <= 'Z')   ? c - 'A'
                : (c >= 'a' && c <= 'z') ? c - 'a' + 26
                : (c >= '0' && c <= '9') ? c - '0' + 52
                : (c == '+' || c == '-') ? 62
                : (c == '/' || c == '_') ? 63
                                         : -1;
        if (v < 0) return r.fail();
        acc = (acc << 6) | std::uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            dst[o++] = std::uint8_t(acc >> bits);
        }
    }
    out = ByteString{std::int32_t(o), dst};
}

void readStringValue(JsonReader& r, String& out, std::int32_t maxLength) noexcept {
    if (r.takeNull()) {
        out = String{-1, nullptr};
        return;
    }
    r.readString(out, maxLength);
}

// NodeId / ExpandedNodeId object form; `x` is set for an ExpandedNodeId.
void readNodeId(JsonReader& r, NodeId& n, ExpandedNodeId* x) noexcept {
    Seen seen;
    std::uint32_t idType = 0;
    Deferred id;
    forEachMember(r, [&](std::string_view key) {
        if (key == "IdType") {
            if (seen.first(r, 0)) idType = readNarrow<std::uint8_t>(r);
        } else if (key == "Id") {
            if (seen.first(r, 1)) id.mark(r);
        } else if (key == "Namespace") {
            if (!seen.first(r, 2)) return;
            if (x != nullptr && (r.peek() == '"' || r.peek() == 'n')) {
                x->mask |= UAPLEX_EXPANDEDNODEID_NAMESPACEURI;
                readStringValue(r, x->namespace_uri, r.limits().maxStringLength);
            } else {
                n.namespace_index = readNarrow<std::uint16_t>(r);
            }
        } else if (key == "ServerUri" && x != nullptr) {
            if (!seen.first(r, 3)) return;
            x->mask |= UAPLEX_EXPANDEDNODEID_SERVERINDEX;
            x->server_index = readNarrow<std::uint32_t>(r);
        } else {
            r.skipValue();
        }
    });
    if (!r.ok()) return;
    if (idType > 3 || (id.at == nullptr && idType != 0)) return r.fail();
    n.identifier_type = std::uint8_t(idType);
    if (id.at == nullptr) return;  // numeric 0
    const std::uint8_t* after = r.pos();
    r.seek(id.at);
    switch (idType) {
        case UAPLEX_ID_NUMERIC:
            n.identifier.numeric = readNarrow<std::uint32_t>(r);
            break;
        case UAPLEX_ID_STRING:
            readStringValue(r, n.identifier.string, r.limits().maxStringLength);
            break;
        case UAPLEX_ID_GUID:
            readGuid(r, n.identifier.guid);
            break;
        case UAPLEX_ID_BYTESTRING:
            readBase64(r, n.identifier.bytestring);
            break;
    }
    r.seek(after);
}

// Decodes an array of `k` into `a`: allocates once for its element count, then decodes the
// elements. The count of an indexed array is recorded; a short one is counted by a scan.
void readArray(JsonReader& r, K k, const DataType* t, Array<std::uint8_t>& a) noexcept {
    a = Array<std::uint8_t>{-1, nullptr};
    if (r.takeNull()) return;
    if (r.peek() != '[') return r.fail();
    const std::uint8_t* start = r.pos();
    std::int64_t n = 0;
    if (const JsonReader::Span* s = r.indexedHere()) {
        n = s->count;
        if (n > r.limits().maxArrayLength) return r.fail(UAPLEX_BadEncodingLimitsExceeded);
    } else {
        r.take('[');
        if (!r.enter()) return;
        if (!r.take(']')) {
            do {
                r.skipValue();
                if (++n > r.limits().maxArrayLength)
                    return r.fail(UAPLEX_BadEncodingLimitsExceeded);
            } while (r.ok() && r.take(','));
            r.expect(']');
        }
        r.leave();
        if (!r.ok()) return;
        r.seek(start);
    }
    std::size_t size = sizeOfKind(k, t);
    auto* data = static_cast<std::uint8_t*>(r.allocate(size * std::size_t(n), alignOfKind(k, t)));
    if (data == nullptr) return;
    r.take('[');
    if (!r.enter()) return;
    for (std::int64_t i = 0; i < n && r.ok(); ++i) {
        if (i) r.expect(',');
        decodeScalar(r, k, t, data + std::size_t(i) * size);
    }
    r.expect(']');
    r.leave();
    if (r.ok()) a = Array<std::uint8_t>{std::int32_t(n), data};
}

void readVariant(JsonReader& r, Variant& v) noexcept {
    Seen seen;
    std::int64_t type = -1;
    Deferred body, dims;
    forEachMember(r, [&](std::string_view key) {
        if (key == "Type") {
            if (seen.first(r, 0)) readInteger(r, type, false);
        } else if (key == "Body") {
            if (seen.first(r, 1)) body.mark(r);
        } else if (key == "Dimensions") {
            if (seen.first(r, 2)) dims.mark(r);
        } else {
            r.skipValue();
        }
    });
    if (!r.ok()) return;
    if (type < 0) {
        if (body.at != nullptr || dims.at != nullptr) r.fail();
        return;  // {} is the null Variant
    }
    if (type > 25) return r.fail();
    if (type == 0) {
        if (dims.at != nullptr) r.fail();
        return;
    }
    const std::uint8_t* after = r.pos();
    std::uint8_t t = std::uint8_t(type);
    v.encoding = t;
    if (body.at != nullptr) r.seek(body.at);
    if (body.at != nullptr && r.peek() == '[') {
        v.encoding |= UAPLEX_VARIANT_ARRAY;
        Array<std::uint8_t> elems;
        readArray(r, K(t), nullptr, elems);
        v.array_length = elems.length;
        v.value.pointer = elems.data;
        if (dims.at != nullptr && r.ok()) {
            r.seek(dims.at);
            Array<std::uint8_t> d;
            readArray(r, K::Int32, nullptr, d);
            if (!r.ok()) return;
            const auto* dd = reinterpret_cast<const std::int32_t*>(d.data);
            std::int64_t product = d.length > 0 ? 1 : 0;
            for (std::int32_t i = 0; i < d.length && product >= 0; ++i) {
                product = dd[i] < 0 ? -1 : product * dd[i];
                if (product > INT32_MAX) product = -1;
            }
            if (d.length < 1 || product != v.array_length) return r.fail();
            v.encoding |= UAPLEX_VARIANT_ARRAY_DIMENSIONS;
            v.dimensions_length = d.length;
            v.dimensions = dd;
        }
    } else {
        if (dims.at != nullptr) return r.fail();
        void* target = &v.value;
        if (isBoxedInVariant(t)) {
            target = r.allocate(builtinElementSize(t), alignOfKind(K(t), nullptr));
            if (target == nullptr) return;
            v.value.pointer = target;
        }
        if (body.at != nullptr)
            decodeScalar(r, K(t), nullptr, target);
        else
            setDefault(K(t), nullptr, target);
    }
    r.seek(after);
}

void readExtensionObject(JsonReader& r, ExtensionObject& e) noexcept {
    Seen seen;
    std::int64_t encoding = 0;
    Deferred body;
    forEachMember(r, [&](std::string_view key) {
        if (key == "TypeId") {
            if (seen.first(r, 0)) readNodeId(r, e.type_id, nullptr);
        } else if (key == "Encoding") {
            if (seen.first(r, 1)) readInteger(r, encoding, false);
        } else if (key == "Body") {
            if (seen.first(r, 2)) body.mark(r);
        } else {
            r.skipValue();
        }
    });
    if (!r.ok()) return;
    if (encoding < 0 || encoding > 2) return r.fail();
    if (body.at == nullptr) {
        if (encoding != 0) r.fail();
        return;  // no body: a null ExtensionObject or one with only a TypeId
    }
    if (!seen.has(0)) return r.fail();
    const std::uint8_t* after = r.pos();
    r.seek(body.at);
    if (encoding == 1) {
        e.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        readBase64(r, e.body);
    } else if (encoding == 2) {
        e.encoding = UAPLEX_EXTENSIONOBJECT_XML;
        String xml;
        readStringValue(r, xml, r.limits().maxByteStringLength);
        e.body = ByteString{xml.length, reinterpret_cast<const std::uint8_t*>(xml.data)};
    } else {
        // A JSON body: the TypeId names the DataType (or its binary encoding) of ns0.
        const DataType* t = nullptr;
        if (e.type_id.identifier_type == UAPLEX_ID_NUMERIC && e.type_id.namespace_index == 0) {
            t = findDataTypeByTypeId(e.type_id.identifier.numeric);
            if (t == nullptr) t = findDataTypeByEncodingId(e.type_id.identifier.numeric);
            if (t == nullptr) t = findDataTypeByJsonEncodingId(e.type_id.identifier.numeric);
        }
        if (t == nullptr || t->binaryEncodingId == 0 ||
            (t->kind != TypeKind::Structure && t->kind != TypeKind::StructureWithOptionalFields &&
             t->kind != TypeKind::Union))
            return r.fail();
        void* obj = r.allocate(t->size, t->alignment);
        if (obj == nullptr) return;
        decodeStructure(r, *t, obj);
        e.type_id = numericNodeId(0, t->binaryEncodingId);
        e.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        e.data_type = t;
        e.object = obj;
    }
    r.seek(after);
}

void readDiagnosticInfo(JsonReader& r, DiagnosticInfo& d) noexcept {
    Seen seen;
    forEachMember(r, [&](std::string_view key) {
        static constexpr std::string_view kKeys[] = {
            "SymbolicId",      "NamespaceUri",       "Locale", "LocalizedText", "AdditionalInfo",
            "InnerStatusCode", "InnerDiagnosticInfo"};
        static constexpr std::uint8_t kBits[] = {UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID,
                                                 UAPLEX_DIAGNOSTICINFO_NAMESPACE_URI,
                                                 UAPLEX_DIAGNOSTICINFO_LOCALE,
                                                 UAPLEX_DIAGNOSTICINFO_LOCALIZED_TEXT,
                                                 UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO,
                                                 UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE,
                                                 UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO};
        std::uint32_t i = 0;
        while (i < 7 && kKeys[i] != key) ++i;
        if (i == 7) return r.skipValue();
        if (!seen.first(r, i)) return;
        d.mask |= kBits[i];
        switch (i) {
            case 0:
                d.symbolic_id = readNarrow<std::int32_t>(r);
                break;
            case 1:
                d.namespace_uri = readNarrow<std::int32_t>(r);
                break;
            case 2:
                d.locale = readNarrow<std::int32_t>(r);
                break;
            case 3:
                d.localized_text = readNarrow<std::int32_t>(r);
                break;
            case 4:
                readStringValue(r, d.additional_info, r.limits().maxStringLength);
                break;
            case 5:
                d.inner_status_code = readNarrow<std::uint32_t>(r);
                break;
            case 6: {
                auto* inner = static_cast<DiagnosticInfo*>(
                    r.allocate(sizeof(DiagnosticInfo), alignof(DiagnosticInfo)));
                if (inner == nullptr) return;
                decodeScalar(r, K::DiagnosticInfo, nullptr, inner);
                d.inner_diagnostic_info = inner;
                break;
            }
        }
    });
}

void readDataValue(JsonReader& r, DataValue& d) noexcept {
    Seen seen;
    forEachMember(r, [&](std::string_view key) {
        static constexpr std::string_view kKeys[] = {"Value",           "Status",
                                                     "SourceTimestamp", "SourcePicoseconds",
                                                     "ServerTimestamp", "ServerPicoseconds"};
        static constexpr std::uint8_t kBits[] = {UAPLEX_DATAVALUE_VALUE,
                                                 UAPLEX_DATAVALUE_STATUS,
                                                 UAPLEX_DATAVALUE_SOURCE_TIMESTAMP,
                                                 UAPLEX_DATAVALUE_SOURCE_PICOSECONDS,
                                                 UAPLEX_DATAVALUE_SERVER_TIMESTAMP,
                                                 UAPLEX_DATAVALUE_SERVER_PICOSECONDS};
        std::uint32_t i = 0;
        while (i < 6 && kKeys[i] != key) ++i;
        if (i == 6) return r.skipValue();
        if (!seen.first(r, i)) return;
        d.mask |= kBits[i];
        switch (i) {
            case 0:
                decodeScalar(r, K::Variant, nullptr, &d.value);
                break;
            case 1:
                d.status = readNarrow<std::uint32_t>(r);
                break;
            case 2:
                decodeScalar(r, K::DateTime, nullptr, &d.source_timestamp);
                break;
            case 3:
                d.source_picoseconds = readNarrow<std::uint16_t>(r);
                break;
            case 4:
                decodeScalar(r, K::DateTime, nullptr, &d.server_timestamp);
                break;
            case 5:
                d.server_picoseconds = readNarrow<std::uint16_t>(r);
                break;
        }
    });
}

void decodeScalar(JsonReader& r, K k, const DataType* t, void* p) noexcept {
    setDefault(k, t, p);
    if (r.takeNull()) return;  // null is the default value of any type
    if (!r.ok()) return;
    switch (k) {
        case K::Boolean: {
            int c = r.peek();
            if (c == 't' && r.keyword("true"))
                *static_cast<bool*>(p) = true;
            else if (!(c == 'f' && r.keyword("false")))
                r.fail();
            return;
        }
        case K::SByte:
            *static_cast<std::int8_t*>(p) = readNarrow<std::int8_t>(r);
            return;
        case K::Byte:
            *static_cast<std::uint8_t*>(p) = readNarrow<std::uint8_t>(r);
            return;
        case K::Int16:
            *static_cast<std::int16_t*>(p) = readNarrow<std::int16_t>(r);
            return;
        case K::UInt16:
            *static_cast<std::uint16_t*>(p) = readNarrow<std::uint16_t>(r);
            return;
        case K::Int32:
            *static_cast<std::int32_t*>(p) = readNarrow<std::int32_t>(r);
            return;
        case K::UInt32:
        case K::StatusCode:
            *static_cast<std::uint32_t*>(p) = readNarrow<std::uint32_t>(r);
            return;
        case K::Int64:
            readInteger(r, *static_cast<std::int64_t*>(p), true);
            return;
        case K::UInt64:
            readInteger(r, *static_cast<std::uint64_t*>(p), true);
            return;
        case K::Float:
            readReal(r, *static_cast<float*>(p));
            return;
        case K::Double:
            readReal(r, *static_cast<double*>(p));
            return;
        case K::String:
        case K::XmlElement:
            r.readString(*static_cast<String*>(p), r.limits().maxStringLength);
            return;
        case K::DateTime:
            readDateTime(r, *static_cast<std::int64_t*>(p));
            return;
        case K::Guid:
            readGuid(r, *static_cast<Guid*>(p));
            return;
        case K::ByteString:
            readBase64(r, *static_cast<ByteString*>(p));
            return;
        case K::NodeId:
            readNodeId(r, *static_cast<NodeId*>(p), nullptr);
            return;
        case K::ExpandedNodeId: {
            auto& x = *static_cast<ExpandedNodeId*>(p);
            readNodeId(r, x.node_id, &x);
            return;
        }
        case K::QualifiedName: {
            auto& q = *static_cast<QualifiedName*>(p);
            Seen seen;
            forEachMember(r, [&](std::string_view key) {
                if (key == "Name") {
                    if (seen.first(r, 0)) readStringValue(r, q.name, r.limits().maxStringLength);
                } else if (key == "Uri") {
                    if (seen.first(r, 1)) q.namespace_index = readNarrow<std::uint16_t>(r);
                } else {
                    r.skipValue();
                }
            });
            return;
        }
        case K::LocalizedText: {
            auto& l = *static_cast<LocalizedText*>(p);
            Seen seen;
            forEachMember(r, [&](std::string_view key) {
                if (key == "Locale") {
                    if (!seen.first(r, 0)) return;
                    l.mask |= UAPLEX_LOCALIZEDTEXT_LOCALE;
                    readStringValue(r, l.locale, r.limits().maxStringLength);
                } else if (key == "Text") {
                    if (!seen.first(r, 1)) return;
                    l.mask |= UAPLEX_LOCALIZEDTEXT_TEXT;
                    readStringValue(r, l.text, r.limits().maxStringLength);
                } else {
                    r.skipValue();
                }
            });
            return;
        }
        case K::ExtensionObject:
            readExtensionObject(r, *static_cast<ExtensionObject*>(p));
            return;
        case K::DataValue:
            readDataValue(r, *static_cast<DataValue*>(p));
            return;
        case K::Variant:
            readVariant(r, *static_cast<Variant*>(p));
            return;
        case K::DiagnosticInfo:
            readDiagnosticInfo(r, *static_cast<DiagnosticInfo*>(p));
            return;
        case K::Enumeration: {
            std::int64_t v = 0;
            if (!readInteger(r, v, t->builtinId == 8)) return;
            std::int64_t lo = t->builtinId == 1 ? -128 : t->builtinId == 2 ? -32768 : INT32_MIN;
            std::int64_t hi = t->builtinId == 1 ? 255 : t->builtinId == 2 ? 65535 : UINT32_MAX;
            if (t->builtinId != 8 && (v < lo || v > hi)) return r.fail();
            std::memcpy(p, &v, t->builtinId);  // little-endian: the low bytes
            return;
        }
        case K::Structure:
            decodeStructure(r, *t, p);
            return;
    }
    r.fail();
}

void decodeField(JsonReader& r, const FieldDescriptor& f, std::uint8_t* base) noexcept {
    if (f.isArray)
        readArray(r, f.kind, f.type, *reinterpret_cast<Array<std::uint8_t>*>(base + f.offset));
    else
        decodeScalar(r, f.kind, f.type, base + f.offset);
}

void decodeStructure(JsonReader& r, const DataType& t, void* p) noexcept {
    setStructureDefaults(t, p);
    if (r.takeNull()) return;
    auto* base = static_cast<std::uint8_t*>(p);
    Seen seen;
    if (t.kind == TypeKind::Union) {
        std::uint32_t selector = 0;
        Deferred value;
        forEachMember(r, [&](std::string_view key) {
            if (key == "SwitchField") {
                if (seen.first(r, 0)) selector = readNarrow<std::uint32_t>(r);
            } else if (key == "Value") {
                if (seen.first(r, 1)) value.mark(r);
            } else {
                r.skipValue();
            }
        });
        if (!r.ok() || selector == 0) return;
        for (const FieldDescriptor& f : t.fieldSpan()) {
            if (f.switchValue != selector) continue;
            std::memcpy(base + t.selectorOffset, &selector, 4);
            if (value.at == nullptr) return;
            const std::uint8_t* after = r.pos();
            r.seek(value.at);
            decodeField(r, f, base);
            r.seek(after);
            return;
        }
        return r.fail();
    }
    std::uint32_t mask = 0;
    forEachMember(r, [&](std::string_view key) {
        for (std::uint32_t i = 0; i < t.fieldCount; ++i) {
            const FieldDescriptor& f = t.fields[i];
            if (!fieldNameIs(f.name, key)) continue;
            if (!seen.first(r, i)) return;
            if (f.optionalBit >= 0) mask |= 1u << f.optionalBit;
            decodeField(r, f, base);
            return;
        }
        r.skipValue();  // members this version does not know are ignored
    });
    if (t.kind == TypeKind::StructureWithOptionalFields)
        std::memcpy(base + t.selectorOffset, &mask, 4);
}

K kindOf(const DataType& t) noexcept {
    if (t.kind == TypeKind::BuiltIn) return K(t.builtinId);
    if (t.kind == TypeKind::Enumeration) return K::Enumeration;
    return K::Structure;
}

}  // namespace

uaplex_status encodeJson(ByteBuffer& out, const DataType& type, const void* value,
                         std::size_t maxSize) noexcept {
    JsonWriter w(out, maxSize);
    encodeScalar(w, kindOf(type), &type, value);
    return w.status();
}

uaplex_status decodeJson(std::span<const std::uint8_t> input, Arena& arena,
                         const DecodeLimits& limits, const DataType& type, void** out,
                         JsonDecodeStats* stats) noexcept {
    *out = nullptr;
    JsonReader r(input, arena, limits);
    struct Report {
        JsonReader& r;
        JsonDecodeStats* stats;
        ~Report() {
            if (stats) stats->scannedBytes = r.scannedBytes();
        }
    } report{r, stats};
    if (!r.index()) return r.status();
    void* obj = r.allocate(type.size, type.alignment);
    if (obj == nullptr) return r.status();
    decodeScalar(r, kindOf(type), &type, obj);
    if (r.ok() && !r.atEnd()) r.fail();
    if (r.ok()) *out = obj;
    return r.status();
}

DecodedMessage decodeJsonMessage(std::span<const std::uint8_t> input, Arena& arena,
                                 const DecodeLimits& limits, JsonDecodeStats* stats) noexcept {
    JsonReader r(input, arena, limits);
    struct Report {
        JsonReader& r;
        JsonDecodeStats* stats;
        ~Report() {
            if (stats) stats->scannedBytes = r.scannedBytes();
        }
    } report{r, stats};
    if (!r.index()) return {r.status(), nullptr, nullptr};
    ExtensionObject e;
    decodeScalar(r, K::ExtensionObject, nullptr, &e);
    if (r.ok() && !r.atEnd()) r.fail();
    if (!r.ok()) return {r.status(), nullptr, nullptr};
    if (e.object == nullptr) return {UAPLEX_BadDecodingError, nullptr, nullptr};
    return {UAPLEX_Good, static_cast<const DataType*>(e.data_type), e.object};
}

uaplex_status encodeJsonMessage(ByteBuffer& out, const DataType& type, const void* object,
                                std::size_t maxSize) noexcept {
    JsonWriter w(out, maxSize);
    ExtensionObject e{};
    e.type_id = numericNodeId(0, type.binaryEncodingId);
    e.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
    e.data_type = &type;
    e.object = const_cast<void*>(object);
    encodeExtensionObject(w, e);
    return w.status();
}

}  // namespace uaplex::enc

namespace uaplex::enc {

namespace {

// Counts the members of the object at the current position without decoding them.
std::uint32_t countMembers(JsonReader& r) noexcept {
    const std::uint8_t* at = (r.ws(), r.pos());
    std::uint32_t n = 0;
    forEachMember(r, [&](std::string_view) {
        ++n;
        r.skipValue();
    });
    r.seek(at);
    return n;
}

void readDataSetMessage(JsonReader& r, std::uint32_t maxFields, JsonDataSetMessage& m) noexcept {
    Seen seen;
    forEachMember(r, [&](std::string_view key) {
        if (key == "DataSetWriterId") {
            if (!seen.first(r, 0)) return;
            m.hasDataSetWriterId = readInteger(r, m.dataSetWriterId, false);
        } else if (key == "SequenceNumber") {
            if (!seen.first(r, 1)) return;
            m.hasSequenceNumber = readInteger(r, m.sequenceNumber, false);
        } else if (key == "MessageType") {
            if (!seen.first(r, 2)) return;
            String s;
            if (r.readString(s, 64)) m.messageType = view(s);
        } else if (key == "Payload") {
            if (!seen.first(r, 3)) return;
            if (r.peek() != '{') return r.fail();
            const std::uint32_t n = countMembers(r);
            if (!r.ok()) return;
            if (n > maxFields) return r.fail(UAPLEX_BadEncodingLimitsExceeded);
            auto* names = static_cast<String*>(r.allocate(n * sizeof(String), alignof(String)));
            auto* values = static_cast<Variant*>(r.allocate(n * sizeof(Variant), alignof(Variant)));
            if (names == nullptr || values == nullptr) return;
            std::uint32_t i = 0;
            forEachMember(r, [&](std::string_view name) {
                if (i >= n) return r.fail();
                for (std::uint32_t k = 0; k < i; ++k)  // a repeated field name
                    if (view(names[k]) == name) return r.fail();
                names[i] = String{std::int32_t(name.size()), name.data()};
                values[i] = Variant{};
                if (r.peek() != '{') return r.fail();  // the reversible Variant form only
                readVariant(r, values[i]);
                ++i;
            });
            m.fieldCount = i;
            m.names = names;
            m.values = values;
        } else {
            r.skipValue();
        }
    });
}

}  // namespace

uaplex_status decodeJsonNetworkMessage(std::span<const std::uint8_t> input, Arena& arena,
                                       const DecodeLimits& limits, std::uint32_t maxMessages,
                                       std::uint32_t maxFields, JsonNetworkMessage& out) noexcept {
    out = JsonNetworkMessage{};
    JsonReader r(input, arena, limits);
    if (!r.index()) return r.status();
    Seen seen;
    forEachMember(r, [&](std::string_view key) {
        if (key == "MessageType") {
            if (!seen.first(r, 0)) return;
            String s;
            if (r.readString(s, 64)) out.messageType = view(s);
        } else if (key == "PublisherId") {
            if (!seen.first(r, 1)) return;
            String s;
            if (r.readString(s, 1024)) {
                out.hasPublisherId = true;
                out.publisherId = view(s);
            }
        } else if (key == "Messages") {
            if (!seen.first(r, 2)) return;
            if (!r.expect('[') || !r.enter()) return;
            // The elements counted first (a skip), then decoded into storage of that size.
            const std::uint8_t* at = r.pos();
            std::uint32_t n = 0;
            if (!r.take(']')) {
                do {
                    if (++n > maxMessages) return r.fail(UAPLEX_BadEncodingLimitsExceeded);
                    r.skipValue();
                } while (r.ok() && r.take(','));
                if (!r.expect(']')) return;
            }
            r.seek(at);
            auto* msgs = static_cast<JsonDataSetMessage*>(
                r.allocate(n * sizeof(JsonDataSetMessage), alignof(JsonDataSetMessage)));
            if (msgs == nullptr) return;
            for (std::uint32_t i = 0; i < n && r.ok(); ++i) {
                if (i > 0 && !r.expect(',')) return;
                msgs[i] = JsonDataSetMessage{};
                if (r.peek() != '{') return r.fail();
                readDataSetMessage(r, maxFields, msgs[i]);
            }
            if (!r.expect(']')) return;
            r.leave();
            out.count = n;
            out.messages = msgs;
        } else {
            r.skipValue();
        }
    });
    if (r.ok() && !r.atEnd()) r.fail();
    if (!r.ok()) out = JsonNetworkMessage{};
    return r.status();
}

}  // namespace uaplex::enc
