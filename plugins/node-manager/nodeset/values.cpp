// SPDX-License-Identifier: Apache-2.0
#include "values.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace uaplex::nodeset {

namespace {

constexpr int kMaxDepth = 32;
constexpr uint32_t kStructureType = 22;  // ns=0;i=22, the Structure DataType

[[noreturn]] void fail(const XmlElement* e, const std::string& what) {
    throw ValueError(e ? e->line : 0, what);
}

std::string_view trim(std::string_view s) {
    while (!s.empty() &&
           (s.front() == ' ' || s.front() == '\n' || s.front() == '\r' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() &&
           (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

template <class T>
T parse_int(const XmlElement* e, std::string_view s) {
    s = trim(s);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    T v{};
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size())
        fail(e,
             "'" + std::string(s) + "' is not a valid " + (e ? e->name : std::string("integer")));
    return v;
}

double parse_double(const XmlElement* e, std::string_view s) {
    s = trim(s);
    if (s == "INF") return std::numeric_limits<double>::infinity();
    if (s == "-INF") return -std::numeric_limits<double>::infinity();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    std::string copy(s);
    char* end = nullptr;
    double v = std::strtod(copy.c_str(), &end);
    if (copy.empty() || end != copy.c_str() + copy.size())
        fail(e, "'" + copy + "' is not a valid number");
    return v;
}

bool parse_bool(const XmlElement* e, std::string_view s) {
    s = trim(s);
    if (s == "true" || s == "1") return true;
    if (s == "false" || s == "0") return false;
    fail(e, "'" + std::string(s) + "' is not a Boolean");
}

// xs:dateTime -> OPC UA DateTime (100 ns since 1601-01-01 UTC).
int64_t parse_datetime(const XmlElement* e, std::string_view s) {
    s = trim(s);
    auto num = [&](std::size_t at, std::size_t n) {
        if (at + n > s.size()) fail(e, "'" + std::string(s) + "' is not a valid DateTime");
        return parse_int<int>(e, s.substr(at, n));
    };
    if (s.size() < 19 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':')
        fail(e, "'" + std::string(s) + "' is not a valid DateTime");
    int y = num(0, 4), mo = num(5, 2), d = num(8, 2), h = num(11, 2), mi = num(14, 2),
        sec = num(17, 2);
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        fail(e, "'" + std::string(s) + "' is not a valid DateTime");
    std::size_t at = 19;
    int64_t frac = 0;
    if (at < s.size() && s[at] == '.') {
        int64_t scale = 1000000;
        for (++at; at < s.size() && s[at] >= '0' && s[at] <= '9'; ++at) {
            frac += (s[at] - '0') * scale;
            scale /= 10;
        }
    }
    int64_t offset = 0;
    if (at < s.size() && s[at] == 'Z') {
        ++at;
    } else if (at < s.size() && (s[at] == '+' || s[at] == '-')) {
        int oh = num(at + 1, 2), om = num(at + 4, 2);
        offset = (s[at] == '+' ? 1 : -1) * (oh * 3600 + om * 60);
        at += 6;
    }
    if (at != s.size()) fail(e, "'" + std::string(s) + "' is not a valid DateTime");
    // Days from civil (proleptic Gregorian).
    y -= mo <= 2;
    const int era = (y >= 0 ? y : y - 399) / 400;
    const unsigned yoe = unsigned(y - era * 400);
    const unsigned doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = int64_t(era) * 146097 + int64_t(doe) - 719468;
    int64_t unix_s = days * 86400 + h * 3600 + mi * 60 + sec - offset;
    return UAPLEX_DATETIME_UNIX_EPOCH + unix_s * UAPLEX_DATETIME_TICKS_PER_SECOND + frac;
}

uaplex_guid parse_guid(const XmlElement* e, std::string_view s) {
    s = trim(s);
    if (s.size() == 38 && s.front() == '{') s = s.substr(1, 36);
    if (s.size() != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')
        fail(e, "'" + std::string(s) + "' is not a Guid");
    auto hex = [&](std::size_t at, std::size_t n) {
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(s.data() + at, s.data() + at + n, v, 16);
        if (ec != std::errc() || p != s.data() + at + n)
            fail(e, "'" + std::string(s) + "' is not a Guid");
        return v;
    };
    uaplex_guid g{};
    g.data1 = uint32_t(hex(0, 8));
    g.data2 = uint16_t(hex(9, 4));
    g.data3 = uint16_t(hex(14, 4));
    g.data4[0] = uint8_t(hex(19, 2));
    g.data4[1] = uint8_t(hex(21, 2));
    for (int i = 0; i < 6; ++i) g.data4[2 + i] = uint8_t(hex(24 + 2 * i, 2));
    return g;
}

std::string base64(const XmlElement* e, std::string_view s) {
    std::string out;
    uint32_t acc = 0;
    int bits = 0, pad = 0;
    for (char c : s) {
        int v;
        if (c >= 'A' && c <= 'Z')
            v = c - 'A';
        else if (c >= 'a' && c <= 'z')
            v = c - 'a' + 26;
        else if (c >= '0' && c <= '9')
            v = c - '0' + 52;
        else if (c == '+')
            v = 62;
        else if (c == '/')
            v = 63;
        else if (c == '=') {
            ++pad;
            continue;
        } else if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            continue;
        else
            fail(e, "invalid base64 in ByteString");
        if (pad) fail(e, "invalid base64 in ByteString");
        acc = (acc << 6) | uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out += char((acc >> bits) & 0xFF);
        }
    }
    return out;
}

// The built-in type named `n` (a NodeSet value element such as <Int32>), or -1.
int builtin_by_name(std::string_view n) {
    for (uint32_t type = UAPLEX_TYPE_BOOLEAN; type <= UAPLEX_TYPE_MAX; ++type)
        if (n == uaplex_builtin_name(type)) return int(type);
    return -1;
}

// Types whose Variant scalars are held through value.pointer (see uaplex_variant).
bool boxed(int type) {
    return type > 0 && uaplex_builtin_boxed(uint32_t(type));
}

// The first byte of an encoded NodeId: its form (Part 6 5.2.2.9), in the low six bits.
enum NodeIdEncoding : uint8_t {
    kTwoByte = 0x00,
    kFourByte = 0x01,
    kNumeric = 0x02,
    kStringId = 0x03,
    kGuidId = 0x04,
    kByteStringId = 0x05,
};
constexpr uint8_t kNodeIdEncodingMask = 0x3F;

uaplex_string keep_string(ValueContext& ctx, std::string s) {
    const std::string& k = ctx.store.keep(std::move(s));
    return {int32_t(k.size()), k.data()};
}

// --- binary writer ---------------------------------------------------------------------

struct Writer {
    std::string& o;
    void raw(const void* p, std::size_t n) { o.append(static_cast<const char*>(p), n); }
    template <class T>
    void put(T v) {
        raw(&v, sizeof v);
    }  // little-endian hosts, as the wire format
    void string(const uaplex_string& s) {
        put<int32_t>(s.length < 0 ? -1 : s.length);
        if (s.length > 0) raw(s.data, std::size_t(s.length));
    }
    void string(std::string_view s) {
        put<int32_t>(int32_t(s.size()));
        raw(s.data(), s.size());
    }
    void node_id(const uaplex_nodeid& n, uint8_t flags = 0) {
        switch (n.identifier_type) {
            case UAPLEX_ID_NUMERIC:
                if (n.namespace_index == 0 && n.identifier.numeric <= 0xFF) {
                    put<uint8_t>(kTwoByte | flags);
                    put<uint8_t>(uint8_t(n.identifier.numeric));
                } else if (n.namespace_index <= 0xFF && n.identifier.numeric <= 0xFFFF) {
                    put<uint8_t>(kFourByte | flags);
                    put<uint8_t>(uint8_t(n.namespace_index));
                    put<uint16_t>(uint16_t(n.identifier.numeric));
                } else {
                    put<uint8_t>(kNumeric | flags);
                    put<uint16_t>(n.namespace_index);
                    put<uint32_t>(n.identifier.numeric);
                }
                break;
            case UAPLEX_ID_STRING:
                put<uint8_t>(kStringId | flags);
                put<uint16_t>(n.namespace_index);
                string(n.identifier.string);
                break;
            case UAPLEX_ID_GUID:
                put<uint8_t>(kGuidId | flags);
                put<uint16_t>(n.namespace_index);
                guid(n.identifier.guid);
                break;
            default:
                put<uint8_t>(kByteStringId | flags);
                put<uint16_t>(n.namespace_index);
                string(uaplex_string{n.identifier.bytestring.length,
                                     reinterpret_cast<const char*>(n.identifier.bytestring.data)});
        }
    }
    void guid(const uaplex_guid& g) {
        put(g.data1);
        put(g.data2);
        put(g.data3);
        raw(g.data4, 8);
    }
    void localized_text(const uaplex_localizedtext& t) {
        uint8_t mask = 0;
        if (t.locale.length >= 0 && (t.mask & UAPLEX_LOCALIZEDTEXT_LOCALE))
            mask |= UAPLEX_LOCALIZEDTEXT_LOCALE;
        if (t.text.length >= 0 && (t.mask & UAPLEX_LOCALIZEDTEXT_TEXT))
            mask |= UAPLEX_LOCALIZEDTEXT_TEXT;
        put(mask);
        if (mask & UAPLEX_LOCALIZEDTEXT_LOCALE) string(t.locale);
        if (mask & UAPLEX_LOCALIZEDTEXT_TEXT) string(t.text);
    }
};

void encode_builtin(int type, const void* value, Writer& w, int depth);

void encode_variant(const uaplex_variant& v, Writer& w, int depth) {
    if (depth > kMaxDepth) throw ValueError(0, "values nested too deeply");
    int type = v.encoding & UAPLEX_VARIANT_TYPE_MASK;
    w.put<uint8_t>(uint8_t(v.encoding & (UAPLEX_VARIANT_TYPE_MASK | UAPLEX_VARIANT_ARRAY)));
    if (type == UAPLEX_TYPE_NULL) return;
    if (v.encoding & UAPLEX_VARIANT_ARRAY) {
        w.put<int32_t>(v.array_length);
        const auto* p = static_cast<const uint8_t*>(v.value.pointer);
        for (int32_t i = 0; i < v.array_length; ++i)
            encode_builtin(type, p + i * uaplex_builtin_size(type), w, depth + 1);
    } else {
        encode_builtin(type, boxed(type) ? v.value.pointer : static_cast<const void*>(&v.value), w,
                       depth + 1);
    }
}

void encode_builtin(int type, const void* value, Writer& w, int depth) {
    switch (type) {
        case UAPLEX_TYPE_BOOLEAN:
            w.put<uint8_t>(*static_cast<const bool*>(value) ? 1 : 0);
            break;
        case UAPLEX_TYPE_SBYTE:
        case UAPLEX_TYPE_BYTE:
            w.raw(value, 1);
            break;
        case UAPLEX_TYPE_INT16:
        case UAPLEX_TYPE_UINT16:
            w.raw(value, 2);
            break;
        case UAPLEX_TYPE_INT32:
        case UAPLEX_TYPE_UINT32:
        case UAPLEX_TYPE_FLOAT:
        case UAPLEX_TYPE_STATUSCODE:
            w.raw(value, 4);
            break;
        case UAPLEX_TYPE_INT64:
        case UAPLEX_TYPE_UINT64:
        case UAPLEX_TYPE_DOUBLE:
        case UAPLEX_TYPE_DATETIME:
            w.raw(value, 8);
            break;
        case UAPLEX_TYPE_STRING:
        case UAPLEX_TYPE_XMLELEMENT:
            w.string(*static_cast<const uaplex_string*>(value));
            break;
        case UAPLEX_TYPE_GUID:
            w.guid(*static_cast<const uaplex_guid*>(value));
            break;
        case UAPLEX_TYPE_BYTESTRING: {
            const auto& s = *static_cast<const uaplex_bytestring*>(value);
            w.string(uaplex_string{s.length, reinterpret_cast<const char*>(s.data)});
            break;
        }
        case UAPLEX_TYPE_NODEID:
            w.node_id(*static_cast<const uaplex_nodeid*>(value));
            break;
        case UAPLEX_TYPE_EXPANDEDNODEID: {
            const auto& x = *static_cast<const uaplex_expandednodeid*>(value);
            w.node_id(x.node_id, x.mask);
            if (x.mask & UAPLEX_EXPANDEDNODEID_NAMESPACEURI) w.string(x.namespace_uri);
            if (x.mask & UAPLEX_EXPANDEDNODEID_SERVERINDEX) w.put(x.server_index);
            break;
        }
        case UAPLEX_TYPE_QUALIFIEDNAME: {
            const auto& q = *static_cast<const uaplex_qualifiedname*>(value);
            w.put(q.namespace_index);
            w.string(q.name);
            break;
        }
        case UAPLEX_TYPE_LOCALIZEDTEXT:
            w.localized_text(*static_cast<const uaplex_localizedtext*>(value));
            break;
        case UAPLEX_TYPE_EXTENSIONOBJECT: {
            const auto& eo = *static_cast<const uaplex_extensionobject*>(value);
            w.node_id(eo.type_id);
            w.put<uint8_t>(eo.encoding);
            if (eo.encoding != 0)
                w.string(
                    uaplex_string{eo.body.length, reinterpret_cast<const char*>(eo.body.data)});
            break;
        }
        case UAPLEX_TYPE_DATAVALUE: {
            const auto& dv = *static_cast<const uaplex_datavalue*>(value);
            w.put<uint8_t>(dv.mask & UAPLEX_DATAVALUE_VALUE);
            if (dv.mask & UAPLEX_DATAVALUE_VALUE) encode_variant(dv.value, w, depth + 1);
            break;
        }
        case UAPLEX_TYPE_VARIANT:
            encode_variant(*static_cast<const uaplex_variant*>(value), w, depth + 1);
            break;
        case UAPLEX_TYPE_DIAGNOSTICINFO:
            w.put<uint8_t>(0);
            break;  // only empty DiagnosticInfos come from files
    }
}

// --- XML -> C ---------------------------------------------------------------------------

const XmlElement* only_child(const XmlElement& e) {
    if (e.children.size() != 1) fail(&e, "<" + e.name + "> must hold exactly one element");
    return &e.children[0];
}

std::string encode_value(const NodeIdV& type, const XmlElement* e, ValueContext& ctx, int depth);

void xml_to_builtin(int type, const XmlElement* e, void* dst, ValueContext& ctx, int depth) {
    if (depth > kMaxDepth) fail(e, "values nested too deeply");
    std::memset(dst, 0, uaplex_builtin_size(type));
    const std::string_view text = e ? std::string_view(e->text) : std::string_view();
    switch (type) {
        case UAPLEX_TYPE_BOOLEAN:
            *static_cast<bool*>(dst) = e ? parse_bool(e, text) : false;
            break;
        case UAPLEX_TYPE_SBYTE:
            *static_cast<int8_t*>(dst) = e ? parse_int<int8_t>(e, text) : 0;
            break;
        case UAPLEX_TYPE_BYTE:
            *static_cast<uint8_t*>(dst) = e ? parse_int<uint8_t>(e, text) : 0;
            break;
        case UAPLEX_TYPE_INT16:
            *static_cast<int16_t*>(dst) = e ? parse_int<int16_t>(e, text) : 0;
            break;
        case UAPLEX_TYPE_UINT16:
            *static_cast<uint16_t*>(dst) = e ? parse_int<uint16_t>(e, text) : 0;
            break;
        case UAPLEX_TYPE_INT32:
            *static_cast<int32_t*>(dst) = e ? parse_int<int32_t>(e, text) : 0;
            break;
        case UAPLEX_TYPE_UINT32:
            *static_cast<uint32_t*>(dst) = e ? parse_int<uint32_t>(e, text) : 0;
            break;
        case UAPLEX_TYPE_INT64:
            *static_cast<int64_t*>(dst) = e ? parse_int<int64_t>(e, text) : 0;
            break;
        case UAPLEX_TYPE_UINT64:
            *static_cast<uint64_t*>(dst) = e ? parse_int<uint64_t>(e, text) : 0;
            break;
        case UAPLEX_TYPE_FLOAT:
            *static_cast<float*>(dst) = e ? float(parse_double(e, text)) : 0.0f;
            break;
        case UAPLEX_TYPE_DOUBLE:
            *static_cast<double*>(dst) = e ? parse_double(e, text) : 0.0;
            break;
        case UAPLEX_TYPE_STRING:
            *static_cast<uaplex_string*>(dst) =
                e ? keep_string(ctx, std::string(text)) : uaplex_string{-1, nullptr};
            break;
        case UAPLEX_TYPE_DATETIME:
            *static_cast<int64_t*>(dst) = e ? parse_datetime(e, text) : 0;
            break;
        case UAPLEX_TYPE_GUID:
            if (e) {
                const XmlElement* s = e->child("String");
                *static_cast<uaplex_guid*>(dst) = parse_guid(e, s ? s->text : text);
            }
            break;
        case UAPLEX_TYPE_BYTESTRING: {
            auto& bs = *static_cast<uaplex_bytestring*>(dst);
            bs = {-1, nullptr};
            if (e) {
                uaplex_string s = keep_string(ctx, base64(e, text));
                bs = {s.length, reinterpret_cast<const uint8_t*>(s.data)};
            }
            break;
        }
        case UAPLEX_TYPE_XMLELEMENT:
            if (e) fail(e, "XmlElement values are not supported");
            *static_cast<uaplex_string*>(dst) = {-1, nullptr};
            break;
        case UAPLEX_TYPE_NODEID:
        case UAPLEX_TYPE_EXPANDEDNODEID: {
            uaplex_nodeid* n = type == UAPLEX_TYPE_NODEID
                                   ? static_cast<uaplex_nodeid*>(dst)
                                   : &static_cast<uaplex_expandednodeid*>(dst)->node_id;
            if (type == UAPLEX_TYPE_EXPANDEDNODEID)
                static_cast<uaplex_expandednodeid*>(dst)->namespace_uri = {-1, nullptr};
            const XmlElement* id = e ? e->child("Identifier") : nullptr;
            if (id) {
                NodeIdV v;
                try {
                    v = parse_node_id(trim(id->text), ctx.remap, ctx.uri_index);
                } catch (const std::exception& x) {
                    fail(id, x.what());
                }
                *n = v.raw();
                if (v.kind == UAPLEX_ID_STRING || v.kind == UAPLEX_ID_BYTESTRING) {
                    uaplex_string s = keep_string(ctx, v.text);
                    if (v.kind == UAPLEX_ID_STRING)
                        n->identifier.string = s;
                    else
                        n->identifier.bytestring = {s.length,
                                                    reinterpret_cast<const uint8_t*>(s.data)};
                }
            }
            break;
        }
        case UAPLEX_TYPE_STATUSCODE: {
            const XmlElement* code = e ? e->child("Code") : nullptr;
            *static_cast<uint32_t*>(dst) = code ? parse_int<uint32_t>(code, code->text) : 0;
            break;
        }
        case UAPLEX_TYPE_QUALIFIEDNAME: {
            auto& q = *static_cast<uaplex_qualifiedname*>(dst);
            q.name = {-1, nullptr};
            if (!e) break;
            const XmlElement* ns = e->child("NamespaceIndex");
            const XmlElement* name = e->child("Name");
            q.namespace_index = ns ? ctx.remap(parse_int<uint16_t>(ns, ns->text)) : 0;
            if (name) q.name = keep_string(ctx, name->text);
            break;
        }
        case UAPLEX_TYPE_LOCALIZEDTEXT: {
            auto& t = *static_cast<uaplex_localizedtext*>(dst);
            t.locale = t.text = {-1, nullptr};
            if (!e) break;
            if (const XmlElement* l = e->child("Locale"); l && !l->text.empty()) {
                t.mask |= UAPLEX_LOCALIZEDTEXT_LOCALE;
                t.locale = keep_string(ctx, l->text);
            }
            if (const XmlElement* x = e->child("Text")) {
                t.mask |= UAPLEX_LOCALIZEDTEXT_TEXT;
                t.text = keep_string(ctx, x->text);
            }
            break;
        }
        case UAPLEX_TYPE_EXTENSIONOBJECT: {
            auto& eo = *static_cast<uaplex_extensionobject*>(dst);
            if (!e) break;
            const XmlElement* tid = e->child("TypeId");
            const XmlElement* id = tid ? tid->child("Identifier") : nullptr;
            const XmlElement* body = e->child("Body");
            if (!id || !body) {
                if (!id && !body) break;  // a null ExtensionObject
                fail(e, "ExtensionObject needs <TypeId><Identifier> and <Body>");
            }
            NodeIdV type;
            try {
                type = parse_node_id(trim(id->text), ctx.remap, ctx.uri_index);
            } catch (const std::exception& x) {
                fail(id, x.what());
            }
            const TypeDef* t = ctx.types.by_encoding(type);
            if (!t) t = ctx.types.find(type);
            if (!t || t->kind != TypeDef::Structure || t->binary_encoding.null())
                fail(id, "ExtensionObject of unknown structure " + type.key());
            std::string bytes = encode_structure(*t, *only_child(*body), ctx, depth + 1);
            uaplex_string kept = keep_string(ctx, std::move(bytes));
            eo.type_id = t->binary_encoding.raw();
            eo.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
            eo.body = {kept.length, reinterpret_cast<const uint8_t*>(kept.data)};
            break;
        }
        case UAPLEX_TYPE_DATAVALUE:
            if (e) fail(e, "DataValue values are not supported");
            break;
        case UAPLEX_TYPE_VARIANT: {
            auto& v = *static_cast<uaplex_variant*>(dst);
            v.array_length = -1;
            const XmlElement* inner = e ? e->child("Value") : nullptr;
            if (inner && !inner->children.empty()) v = xml_to_variant(*only_child(*inner), ctx);
            break;
        }
        case UAPLEX_TYPE_DIAGNOSTICINFO:
            if (e && !e->children.empty()) fail(e, "DiagnosticInfo values are not supported");
            break;
        default:
            fail(e, "unsupported built-in type");
    }
}

const TypeDef& resolve(const NodeIdV& type, const XmlElement* e, const TypeRegistry& types) {
    const TypeDef* t = types.find(type);
    if (!t) fail(e, "DataType " + type.key() + " is unknown to the loader (no definition)");
    return *t;
}

int64_t enum_value(const XmlElement* e) {
    std::string_view s = trim(e->text);
    std::size_t us = s.rfind('_');
    return parse_int<int64_t>(e, us == std::string_view::npos ? s : s.substr(us + 1));
}

// One value of `type` (scalar) from the element `e` (NULL: absent, the default value).
std::string encode_value(const NodeIdV& type, const XmlElement* e, ValueContext& ctx, int depth) {
    if (depth > kMaxDepth) fail(e, "values nested too deeply");
    const TypeDef& t = resolve(type, e, ctx.types);
    std::string out;
    Writer w{out};
    if (t.kind == TypeDef::Enumeration) {
        w.put<int32_t>(e ? int32_t(enum_value(e)) : 0);
    } else if (t.kind == TypeDef::Structure) {
        XmlElement empty;
        out = encode_structure(t, e ? *e : empty, ctx, depth + 1);
    } else {
        // Any built-in value fits; the largest is a DataValue.
        alignas(16) unsigned char scratch[sizeof(uaplex_datavalue) + 16];
        xml_to_builtin(t.builtin, e, scratch, ctx, depth + 1);
        encode_builtin(t.builtin, scratch, w, depth + 1);
    }
    return out;
}

// --- binary reader for validation --------------------------------------------------------

struct Reader {
    const uint8_t* p;
    const uint8_t* end;
    bool need(std::size_t n) const { return std::size_t(end - p) >= n; }
    bool skip(std::size_t n) {
        if (!need(n)) return false;
        p += n;
        return true;
    }
    template <class T>
    bool get(T& v) {
        if (!need(sizeof v)) return false;
        std::memcpy(&v, p, sizeof v);
        p += sizeof v;
        return true;
    }
    bool string() {
        int32_t n;
        if (!get(n)) return false;
        return n < 0 ? n == -1 : skip(std::size_t(n));
    }
    bool node_id(uint8_t* flags_out = nullptr) {
        uint8_t f;
        if (!get(f)) return false;
        if (flags_out) *flags_out = f;
        switch (f & kNodeIdEncodingMask) {
            case kTwoByte:
                return skip(1);
            case kFourByte:
                return skip(3);
            case kNumeric:
                return skip(6);
            case kStringId:
            case kByteStringId:
                return skip(2) && string();
            case kGuidId:
                return skip(18);
        }
        return false;
    }
};

bool skip_builtin(int b, Reader& r, int depth);

bool skip_variant(Reader& r, int depth) {
    uint8_t enc;
    if (!r.get(enc)) return false;
    int type = enc & UAPLEX_VARIANT_TYPE_MASK;
    if (type > UAPLEX_TYPE_MAX) return false;
    if (type == UAPLEX_TYPE_NULL) return true;
    if (enc & UAPLEX_VARIANT_ARRAY) {
        int32_t n;
        if (!r.get(n) || n < -1 || (n > 0 && !r.need(std::size_t(n) / 8))) return false;
        for (int32_t i = 0; i < n; ++i)
            if (!skip_builtin(type, r, depth + 1)) return false;
        if (enc & UAPLEX_VARIANT_ARRAY_DIMENSIONS) {
            int32_t m;
            if (!r.get(m) || m < 0 || !r.skip(std::size_t(m) * 4)) return false;
        }
        return true;
    }
    return skip_builtin(type, r, depth + 1);
}

bool skip_builtin(int type, Reader& r, int depth) {
    if (depth > kMaxDepth) return false;
    switch (type) {
        case UAPLEX_TYPE_BOOLEAN:
        case UAPLEX_TYPE_SBYTE:
        case UAPLEX_TYPE_BYTE:
            return r.skip(1);
        case UAPLEX_TYPE_INT16:
        case UAPLEX_TYPE_UINT16:
            return r.skip(2);
        case UAPLEX_TYPE_INT32:
        case UAPLEX_TYPE_UINT32:
        case UAPLEX_TYPE_FLOAT:
        case UAPLEX_TYPE_STATUSCODE:
            return r.skip(4);
        case UAPLEX_TYPE_INT64:
        case UAPLEX_TYPE_UINT64:
        case UAPLEX_TYPE_DOUBLE:
        case UAPLEX_TYPE_DATETIME:
            return r.skip(8);
        case UAPLEX_TYPE_STRING:
        case UAPLEX_TYPE_BYTESTRING:
        case UAPLEX_TYPE_XMLELEMENT:
            return r.string();
        case UAPLEX_TYPE_GUID:
            return r.skip(16);
        case UAPLEX_TYPE_NODEID:
            return r.node_id();
        case UAPLEX_TYPE_EXPANDEDNODEID: {
            uint8_t f = 0;
            if (!r.node_id(&f)) return false;
            if ((f & UAPLEX_EXPANDEDNODEID_NAMESPACEURI) && !r.string()) return false;
            return !(f & UAPLEX_EXPANDEDNODEID_SERVERINDEX) || r.skip(4);
        }
        case UAPLEX_TYPE_QUALIFIEDNAME:
            return r.skip(2) && r.string();
        case UAPLEX_TYPE_LOCALIZEDTEXT: {
            uint8_t m;
            if (!r.get(m)) return false;
            return (!(m & UAPLEX_LOCALIZEDTEXT_LOCALE) || r.string()) &&
                   (!(m & UAPLEX_LOCALIZEDTEXT_TEXT) || r.string());
        }
        case UAPLEX_TYPE_EXTENSIONOBJECT: {
            uint8_t enc;
            if (!r.node_id() || !r.get(enc)) return false;
            return enc == 0 || r.string();
        }
        case UAPLEX_TYPE_DATAVALUE: {
            uint8_t m;
            if (!r.get(m)) return false;
            if ((m & UAPLEX_DATAVALUE_VALUE) && !skip_variant(r, depth + 1)) return false;
            return (!(m & UAPLEX_DATAVALUE_STATUS) || r.skip(4)) &&
                   (!(m & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) || r.skip(8)) &&
                   (!(m & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS) || r.skip(2)) &&
                   (!(m & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) || r.skip(8)) &&
                   (!(m & UAPLEX_DATAVALUE_SERVER_PICOSECONDS) || r.skip(2));
        }
        case UAPLEX_TYPE_VARIANT:
            return skip_variant(r, depth + 1);
        case UAPLEX_TYPE_DIAGNOSTICINFO: {
            uint8_t m;
            if (!r.get(m)) return false;
            if ((m & UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID) && !r.skip(4)) return false;
            if ((m & UAPLEX_DIAGNOSTICINFO_NAMESPACE_URI) && !r.skip(4)) return false;
            if ((m & UAPLEX_DIAGNOSTICINFO_LOCALE) && !r.skip(4)) return false;
            if ((m & UAPLEX_DIAGNOSTICINFO_LOCALIZED_TEXT) && !r.skip(4)) return false;
            if ((m & UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO) && !r.string()) return false;
            if ((m & UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE) && !r.skip(4)) return false;
            return !(m & UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO) ||
                   skip_builtin(UAPLEX_TYPE_DIAGNOSTICINFO, r, depth + 1);
        }
    }
    return false;
}

bool skip_value(const NodeIdV& type, Reader& r, const TypeRegistry& types, int depth,
                std::string& why);

bool skip_structure(const TypeDef& t, Reader& r, const TypeRegistry& types, int depth,
                    std::string& why) {
    if (depth > kMaxDepth) {
        why = "nested too deeply";
        return false;
    }
    auto field = [&](const FieldDef& f) {
        if (f.value_rank >= 1) {
            int32_t n;
            if (!r.get(n) || n < -1) return false;
            for (int32_t i = 0; i < n; ++i)
                if (!skip_value(f.data_type, r, types, depth + 1, why)) return false;
            return true;
        }
        return skip_value(f.data_type, r, types, depth + 1, why);
    };
    if (t.structure_type == TypeDef::Union) {
        uint32_t sw;
        if (!r.get(sw) || sw > t.fields.size()) {
            why = "bad union switch in " + t.name;
            return false;
        }
        return sw == 0 || field(t.fields[sw - 1]);
    }
    uint32_t mask = 0;
    if (t.structure_type == TypeDef::WithOptionalFields && !r.get(mask)) return false;
    int optional = 0;
    for (const FieldDef& f : t.fields) {
        if (f.optional && !(mask & (1u << optional++))) continue;
        if (!field(f)) {
            if (why.empty()) why = "field " + t.name + "." + f.name + " does not decode";
            return false;
        }
    }
    return true;
}

bool skip_value(const NodeIdV& type, Reader& r, const TypeRegistry& types, int depth,
                std::string& why) {
    const TypeDef* t = types.find(type);
    if (!t) {
        why = "unknown DataType " + type.key();
        return false;
    }
    if (t->kind == TypeDef::Enumeration) return r.skip(4);
    if (t->kind == TypeDef::Structure) return skip_structure(*t, r, types, depth + 1, why);
    return skip_builtin(t->builtin, r, depth + 1);
}

}  // namespace

// --- NodeId ------------------------------------------------------------------------------

std::string NodeIdV::key() const {
    std::string k = (ns ? "ns=" + std::to_string(ns) + ";" : std::string());
    switch (kind) {
        case UAPLEX_ID_NUMERIC:
            return k + "i=" + std::to_string(num);
        case UAPLEX_ID_STRING:
            return k + "s=" + text;
        case UAPLEX_ID_GUID: {
            char b[40];
            std::snprintf(b, sizeof b, "%08x-%04x-%04x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                          guid.data1, guid.data2, guid.data3, guid.data4[0], guid.data4[1],
                          guid.data4[2], guid.data4[3], guid.data4[4], guid.data4[5], guid.data4[6],
                          guid.data4[7]);
            return k + "g=" + b;
        }
        default:
            return k + "b=" + text;
    }
}

uaplex_nodeid NodeIdV::raw() const noexcept {
    uaplex_nodeid n{};
    n.namespace_index = ns;
    n.identifier_type = kind;
    switch (kind) {
        case UAPLEX_ID_NUMERIC:
            n.identifier.numeric = num;
            break;
        case UAPLEX_ID_STRING:
            n.identifier.string = {int32_t(text.size()), text.data()};
            break;
        case UAPLEX_ID_GUID:
            n.identifier.guid = guid;
            break;
        default:
            n.identifier.bytestring = {int32_t(text.size()),
                                       reinterpret_cast<const uint8_t*>(text.data())};
    }
    return n;
}

NodeIdV parse_node_id(std::string_view s, const std::function<uint16_t(uint32_t)>& remap,
                      const std::function<uint16_t(std::string_view)>& uri_index) {
    NodeIdV n;
    if (s.substr(0, 3) == "ns=") {
        std::size_t semi = s.find(';');
        if (semi == std::string_view::npos)
            throw std::invalid_argument("bad NodeId '" + std::string(s) + "'");
        uint32_t file_ns = 0;
        auto [p, ec] = std::from_chars(s.data() + 3, s.data() + semi, file_ns);
        if (ec != std::errc() || p != s.data() + semi || file_ns > 0xFFFF)
            throw std::invalid_argument("bad namespace index in NodeId '" + std::string(s) + "'");
        n.ns = remap(file_ns);
        s.remove_prefix(semi + 1);
    } else if (s.substr(0, 4) == "nsu=") {
        std::size_t semi = s.find(';');
        if (semi == std::string_view::npos)
            throw std::invalid_argument("bad NodeId '" + std::string(s) + "'");
        n.ns = uri_index(s.substr(4, semi - 4));
        s.remove_prefix(semi + 1);
    }
    if (s.size() < 2 || s[1] != '=')
        throw std::invalid_argument("bad NodeId '" + std::string(s) + "'");
    std::string_view id = s.substr(2);
    switch (s[0]) {
        case 'i': {
            auto [p, ec] = std::from_chars(id.data(), id.data() + id.size(), n.num);
            if (ec != std::errc() || p != id.data() + id.size())
                throw std::invalid_argument("bad numeric NodeId '" + std::string(s) + "'");
            break;
        }
        case 's':
            n.kind = UAPLEX_ID_STRING;
            n.text = std::string(id);
            break;
        case 'g':
            n.kind = UAPLEX_ID_GUID;
            try {
                n.guid = parse_guid(nullptr, id);
            } catch (const ValueError&) {
                throw std::invalid_argument("bad Guid NodeId '" + std::string(s) + "'");
            }
            break;
        case 'b':
            n.kind = UAPLEX_ID_BYTESTRING;
            try {
                n.text = base64(nullptr, id);
            } catch (const ValueError&) {
                throw std::invalid_argument("bad ByteString NodeId '" + std::string(s) + "'");
            }
            break;
        default:
            throw std::invalid_argument("bad NodeId '" + std::string(s) + "'");
    }
    return n;
}

// --- registry ----------------------------------------------------------------------------

TypeRegistry::TypeRegistry() {
    // A built-in type's DataType node is ns=0;i=<its type id>; the other namespace-0 DataType
    // and encoding ids the registry knows (NodeIds.csv).
    enum Ns0 : uint32_t {
        kNumber = 26,
        kInteger = 27,
        kUInteger = 28,
        kEnumeration = 29,
        kImage = 30,
        kIntegerId = 288,
        kCounter = 289,
        kDuration = 290,
        kNumericRange = 291,
        kTime = 292,
        kDate = 293,
        kUtcTime = 294,
        kLocaleId = 295,
        kArgument = 296,
        kArgumentXml = 297,
        kArgumentBinary = 298,
        kApplicationInstanceCertificate = 311,
        kRange = 884,
        kRangeXml = 885,
        kRangeBinary = 886,
        kEUInformation = 887,
        kEUInformationXml = 888,
        kEUInformationBinary = 889,
        kImageBMP = 2000,
        kImageGIF = 2001,
        kImageJPG = 2002,
        kImagePNG = 2003,
        kEnumValueType = 7594,
        kEnumValueTypeXml = 7616,
        kEnumValueTypeBinary = 8251,
        kIndex = 17588,
        kVersionTime = 20998,
        kUriString = 23751,
        kSemanticVersionString = 24263,
    };
    auto builtin = [&](uint32_t id, uint8_t type, std::string name) {
        TypeDef t;
        t.kind = TypeDef::Builtin;
        t.builtin = type;
        t.name = std::move(name);
        t.id = NodeIdV::numeric(0, id);
        add(std::move(t));
    };
    for (uint32_t type = UAPLEX_TYPE_BOOLEAN; type <= UAPLEX_TYPE_MAX; ++type)
        builtin(type, uint8_t(type), uaplex_builtin_name(type));
    // Abstract number types are encoded as Variants in structures (Part 6 5.2.9).
    builtin(kNumber, UAPLEX_TYPE_VARIANT, "Number");
    builtin(kInteger, UAPLEX_TYPE_VARIANT, "Integer");
    builtin(kUInteger, UAPLEX_TYPE_VARIANT, "UInteger");
    // Subtypes of built-in types: encoded as their base.
    const std::pair<uint32_t, uint8_t> subtypes[] = {
        {kDuration, UAPLEX_TYPE_DOUBLE},
        {kUtcTime, UAPLEX_TYPE_DATETIME},
        {kLocaleId, UAPLEX_TYPE_STRING},
        {kIntegerId, UAPLEX_TYPE_UINT32},
        {kCounter, UAPLEX_TYPE_UINT32},
        {kNumericRange, UAPLEX_TYPE_STRING},
        {kTime, UAPLEX_TYPE_STRING},
        {kDate, UAPLEX_TYPE_DATETIME},
        {kImage, UAPLEX_TYPE_BYTESTRING},
        {kImageBMP, UAPLEX_TYPE_BYTESTRING},
        {kImageGIF, UAPLEX_TYPE_BYTESTRING},
        {kImageJPG, UAPLEX_TYPE_BYTESTRING},
        {kImagePNG, UAPLEX_TYPE_BYTESTRING},
        {kApplicationInstanceCertificate, UAPLEX_TYPE_BYTESTRING},
        {kIndex, UAPLEX_TYPE_UINT32},
        {kVersionTime, UAPLEX_TYPE_UINT32},
        {kSemanticVersionString, UAPLEX_TYPE_STRING},
        {kUriString, UAPLEX_TYPE_STRING}};
    for (auto [id, type] : subtypes) builtin(id, type, "i=" + std::to_string(id));
    {
        TypeDef t;
        t.kind = TypeDef::Enumeration;
        t.name = "Enumeration";
        t.id = NodeIdV::numeric(0, kEnumeration);
        add(std::move(t));
    }
    auto field = [](std::string name, uint32_t type, int32_t rank = -1) {
        FieldDef f;
        f.name = std::move(name);
        f.data_type = NodeIdV::numeric(0, type);
        f.value_rank = rank;
        return f;
    };
    auto structure = [&](uint32_t id, uint32_t xml, uint32_t bin, std::string name,
                         std::vector<FieldDef> fields) {
        TypeDef t;
        t.kind = TypeDef::Structure;
        t.name = std::move(name);
        t.id = NodeIdV::numeric(0, id);
        t.base = NodeIdV::numeric(0, kStructureType);
        t.xml_encoding = NodeIdV::numeric(0, xml);
        t.binary_encoding = NodeIdV::numeric(0, bin);
        t.fields = std::move(fields);
        add(std::move(t));
    };
    constexpr int32_t kOneDimension = 1;  // ValueRank
    structure(kArgument, kArgumentXml, kArgumentBinary, "Argument",
              {field("Name", UAPLEX_TYPE_STRING), field("DataType", UAPLEX_TYPE_NODEID),
               field("ValueRank", UAPLEX_TYPE_INT32),
               field("ArrayDimensions", UAPLEX_TYPE_UINT32, kOneDimension),
               field("Description", UAPLEX_TYPE_LOCALIZEDTEXT)});
    structure(kEnumValueType, kEnumValueTypeXml, kEnumValueTypeBinary, "EnumValueType",
              {field("Value", UAPLEX_TYPE_INT64), field("DisplayName", UAPLEX_TYPE_LOCALIZEDTEXT),
               field("Description", UAPLEX_TYPE_LOCALIZEDTEXT)});
    structure(kRange, kRangeXml, kRangeBinary, "Range",
              {field("Low", UAPLEX_TYPE_DOUBLE), field("High", UAPLEX_TYPE_DOUBLE)});
    structure(kEUInformation, kEUInformationXml, kEUInformationBinary, "EUInformation",
              {field("NamespaceUri", UAPLEX_TYPE_STRING), field("UnitId", UAPLEX_TYPE_INT32),
               field("DisplayName", UAPLEX_TYPE_LOCALIZEDTEXT),
               field("Description", UAPLEX_TYPE_LOCALIZEDTEXT)});
}

void TypeRegistry::add(TypeDef t) {
    std::string k = t.id.key();
    if (!t.binary_encoding.null()) encodings_[t.binary_encoding.key()] = k;
    if (!t.xml_encoding.null()) encodings_[t.xml_encoding.key()] = k;
    types_[k] = std::move(t);
}

const TypeDef* TypeRegistry::find(const NodeIdV& id) const {
    auto it = types_.find(id.key());
    return it == types_.end() ? nullptr : &it->second;
}

const TypeDef* TypeRegistry::by_encoding(const NodeIdV& id) const {
    auto it = encodings_.find(id.key());
    return it == encodings_.end() ? nullptr : find_key(it->second);
}

// --- public conversions -------------------------------------------------------------------

uaplex_variant xml_to_variant(const XmlElement& typed, ValueContext& ctx) {
    uaplex_variant v{};
    v.array_length = -1;
    std::string_view name = typed.name;
    bool list = name.substr(0, 6) == "ListOf";
    int type = builtin_by_name(list ? name.substr(6) : name);
    if (type < 0) fail(&typed, "unsupported value element <" + typed.name + ">");
    v.encoding = uint8_t(type);
    if (!list) {
        if (boxed(type)) {
            void* p = ctx.store.alloc(uaplex_builtin_size(type));
            xml_to_builtin(type, &typed, p, ctx, 0);
            v.value.pointer = p;
        } else {
            alignas(16) unsigned char scratch[sizeof(v.value)];  // an inline scalar
            xml_to_builtin(type, &typed, scratch, ctx, 0);
            std::memcpy(&v.value, scratch, uaplex_builtin_size(type));
        }
        return v;
    }
    v.encoding |= UAPLEX_VARIANT_ARRAY;
    v.array_length = int32_t(typed.children.size());
    auto* p = static_cast<uint8_t*>(
        ctx.store.alloc(uaplex_builtin_size(type) * (typed.children.size() + 1)));
    for (std::size_t i = 0; i < typed.children.size(); ++i) {
        if (typed.children[i].name != uaplex_builtin_name(uint32_t(type)))
            fail(&typed.children[i],
                 "<" + typed.children[i].name + "> inside <" + typed.name + ">");
        xml_to_builtin(type, &typed.children[i], p + i * uaplex_builtin_size(type), ctx, 0);
    }
    v.value.pointer = p;
    return v;
}

std::string encode_structure(const TypeDef& t, const XmlElement& body, ValueContext& ctx,
                             int depth) {
    if (depth > kMaxDepth) fail(&body, "structures nested too deeply");
    std::string out;
    Writer w{out};
    auto field = [&](const FieldDef& f, const XmlElement* e) {
        if (f.value_rank >= 1) {
            if (!e) {
                w.put<int32_t>(-1);
                return;
            }
            w.put<int32_t>(int32_t(e->children.size()));
            for (const XmlElement& item : e->children)
                out += encode_value(f.data_type, &item, ctx, depth + 1);
            return;
        }
        out += encode_value(f.data_type, e, ctx, depth + 1);
    };
    if (t.structure_type == TypeDef::Union) {
        for (std::size_t i = 0; i < t.fields.size(); ++i) {
            if (const XmlElement* e = body.child(t.fields[i].name)) {
                w.put<uint32_t>(uint32_t(i + 1));
                field(t.fields[i], e);
                return out;
            }
        }
        w.put<uint32_t>(0);
        return out;
    }
    if (t.structure_type == TypeDef::WithOptionalFields) {
        uint32_t mask = 0;
        int bit = 0;
        for (const FieldDef& f : t.fields)
            if (f.optional && body.child(f.name) && bit < 32)
                mask |= 1u << bit++;
            else if (f.optional)
                ++bit;
        w.put(mask);
    }
    for (const FieldDef& f : t.fields) {
        const XmlElement* e = body.child(f.name);
        if (f.optional && !e) continue;
        field(f, e);
    }
    return out;
}

bool validate_structure(const TypeDef& t, const uint8_t* data, std::size_t size,
                        const TypeRegistry& types, std::string& why) {
    Reader r{data, data + size};
    if (!skip_structure(t, r, types, 0, why)) {
        if (why.empty()) why = "body of " + t.name + " does not decode";
        return false;
    }
    if (r.p != r.end) {
        why = std::to_string(r.end - r.p) + " bytes after the end of " + t.name;
        return false;
    }
    return true;
}

std::string structure_definition_body(const TypeDef& t) {
    std::string out;
    Writer w{out};
    w.node_id(t.binary_encoding.raw());
    w.node_id(t.base.null() ? NodeIdV::numeric(0, kStructureType).raw() : t.base.raw());
    w.put<int32_t>(t.structure_type);
    w.put<int32_t>(int32_t(t.fields.size()));
    for (const FieldDef& f : t.fields) {
        w.string(f.name);
        uaplex_localizedtext d{};
        d.mask = f.description.empty() ? 0 : UAPLEX_LOCALIZEDTEXT_TEXT;
        d.text = {int32_t(f.description.size()), f.description.data()};
        if (!f.description_locale.empty()) {
            d.mask |= UAPLEX_LOCALIZEDTEXT_LOCALE;
            d.locale = {int32_t(f.description_locale.size()), f.description_locale.data()};
        }
        w.localized_text(d);
        w.node_id(f.data_type.raw());
        w.put<int32_t>(f.value_rank);
        if (f.array_dimensions.empty()) {
            w.put<int32_t>(-1);
        } else {
            w.put<int32_t>(int32_t(f.array_dimensions.size()));
            for (uint32_t d2 : f.array_dimensions) w.put(d2);
        }
        w.put<uint32_t>(f.max_string_length);
        w.put<uint8_t>(f.optional ? 1 : 0);
    }
    return out;
}

std::string enum_definition_body(const TypeDef& t) {
    std::string out;
    Writer w{out};
    w.put<int32_t>(int32_t(t.fields.size()));
    for (const FieldDef& f : t.fields) {
        w.put<int64_t>(f.value);
        const std::string& dn = f.display_name.empty() ? f.name : f.display_name;
        uaplex_localizedtext d{};
        d.mask = UAPLEX_LOCALIZEDTEXT_TEXT;
        d.text = {int32_t(dn.size()), dn.data()};
        w.localized_text(d);
        uaplex_localizedtext desc{};
        desc.mask = f.description.empty() ? 0 : UAPLEX_LOCALIZEDTEXT_TEXT;
        desc.text = {int32_t(f.description.size()), f.description.data()};
        w.localized_text(desc);
        w.string(f.name);
    }
    return out;
}

}  // namespace uaplex::nodeset
