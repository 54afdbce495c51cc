#include "values.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace uaplex::nodeset {

namespace {

constexpr int kMaxDepth = 32;

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
    return (unix_s + 11644473600LL) * 10000000LL + frac;
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

constexpr std::string_view kBuiltinNames[] = {
    "Null",          "Boolean",       "SByte",           "Byte",           "Int16",
    "UInt16",        "Int32",         "UInt32",          "Int64",          "UInt64",
    "Float",         "Double",        "String",          "DateTime",       "Guid",
    "ByteString",    "XmlElement",    "NodeId",          "ExpandedNodeId", "StatusCode",
    "QualifiedName", "LocalizedText", "ExtensionObject", "DataValue",      "Variant",
    "DiagnosticInfo"};

int builtin_by_name(std::string_view n) {
    for (int i = 1; i <= 25; ++i)
        if (kBuiltinNames[i] == n) return i;
    return -1;
}

std::size_t c_size(int b) {
    switch (b) {
        case 1:
            return sizeof(bool);
        case 2:
        case 3:
            return 1;
        case 4:
        case 5:
            return 2;
        case 6:
        case 7:
        case 10:
        case 19:
            return 4;
        case 8:
        case 9:
        case 11:
        case 13:
            return 8;
        case 12:
        case 16:
            return sizeof(uaplex_string);
        case 14:
            return sizeof(uaplex_guid);
        case 15:
            return sizeof(uaplex_bytestring);
        case 17:
            return sizeof(uaplex_nodeid);
        case 18:
            return sizeof(uaplex_expandednodeid);
        case 20:
            return sizeof(uaplex_qualifiedname);
        case 21:
            return sizeof(uaplex_localizedtext);
        case 22:
            return sizeof(uaplex_extensionobject);
        case 23:
            return sizeof(uaplex_datavalue);
        case 24:
            return sizeof(uaplex_variant);
        case 25:
            return sizeof(uaplex_diagnosticinfo);
    }
    return 0;
}

bool boxed(int b) {
    return b == 17 || b == 18 || (b >= 20 && b <= 25);
}

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
                    put<uint8_t>(0x00 | flags);
                    put<uint8_t>(uint8_t(n.identifier.numeric));
                } else if (n.namespace_index <= 0xFF && n.identifier.numeric <= 0xFFFF) {
                    put<uint8_t>(0x01 | flags);
                    put<uint8_t>(uint8_t(n.namespace_index));
                    put<uint16_t>(uint16_t(n.identifier.numeric));
                } else {
                    put<uint8_t>(0x02 | flags);
                    put<uint16_t>(n.namespace_index);
                    put<uint32_t>(n.identifier.numeric);
                }
                break;
            case UAPLEX_ID_STRING:
                put<uint8_t>(0x03 | flags);
                put<uint16_t>(n.namespace_index);
                string(n.identifier.string);
                break;
            case UAPLEX_ID_GUID:
                put<uint8_t>(0x04 | flags);
                put<uint16_t>(n.namespace_index);
                guid(n.identifier.guid);
                break;
            default:
                put<uint8_t>(0x05 | flags);
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
        if (t.locale.length >= 0 && (t.mask & UAPLEX_LOCALIZEDTEXT_LOCALE)) mask |= 1;
        if (t.text.length >= 0 && (t.mask & UAPLEX_LOCALIZEDTEXT_TEXT)) mask |= 2;
        put(mask);
        if (mask & 1) string(t.locale);
        if (mask & 2) string(t.text);
    }
};

void encode_c(int b, const void* c, Writer& w, int depth);

void encode_variant(const uaplex_variant& v, Writer& w, int depth) {
    if (depth > kMaxDepth) throw ValueError(0, "values nested too deeply");
    int b = v.encoding & UAPLEX_VARIANT_TYPE_MASK;
    w.put<uint8_t>(uint8_t(v.encoding & (UAPLEX_VARIANT_TYPE_MASK | UAPLEX_VARIANT_ARRAY)));
    if (b == 0) return;
    if (v.encoding & UAPLEX_VARIANT_ARRAY) {
        w.put<int32_t>(v.array_length);
        const auto* p = static_cast<const uint8_t*>(v.value.pointer);
        for (int32_t i = 0; i < v.array_length; ++i) encode_c(b, p + i * c_size(b), w, depth + 1);
    } else {
        encode_c(b, boxed(b) ? v.value.pointer : static_cast<const void*>(&v.value), w, depth + 1);
    }
}

void encode_c(int b, const void* c, Writer& w, int depth) {
    switch (b) {
        case 1:
            w.put<uint8_t>(*static_cast<const bool*>(c) ? 1 : 0);
            break;
        case 2:
        case 3:
            w.raw(c, 1);
            break;
        case 4:
        case 5:
            w.raw(c, 2);
            break;
        case 6:
        case 7:
        case 10:
        case 19:
            w.raw(c, 4);
            break;
        case 8:
        case 9:
        case 11:
        case 13:
            w.raw(c, 8);
            break;
        case 12:
        case 16:
            w.string(*static_cast<const uaplex_string*>(c));
            break;
        case 14:
            w.guid(*static_cast<const uaplex_guid*>(c));
            break;
        case 15: {
            const auto& s = *static_cast<const uaplex_bytestring*>(c);
            w.string(uaplex_string{s.length, reinterpret_cast<const char*>(s.data)});
            break;
        }
        case 17:
            w.node_id(*static_cast<const uaplex_nodeid*>(c));
            break;
        case 18: {
            const auto& x = *static_cast<const uaplex_expandednodeid*>(c);
            w.node_id(x.node_id, x.mask);
            if (x.mask & UAPLEX_EXPANDEDNODEID_NAMESPACEURI) w.string(x.namespace_uri);
            if (x.mask & UAPLEX_EXPANDEDNODEID_SERVERINDEX) w.put(x.server_index);
            break;
        }
        case 20: {
            const auto& q = *static_cast<const uaplex_qualifiedname*>(c);
            w.put(q.namespace_index);
            w.string(q.name);
            break;
        }
        case 21:
            w.localized_text(*static_cast<const uaplex_localizedtext*>(c));
            break;
        case 22: {
            const auto& eo = *static_cast<const uaplex_extensionobject*>(c);
            w.node_id(eo.type_id);
            w.put<uint8_t>(eo.encoding);
            if (eo.encoding != 0)
                w.string(
                    uaplex_string{eo.body.length, reinterpret_cast<const char*>(eo.body.data)});
            break;
        }
        case 23: {
            const auto& dv = *static_cast<const uaplex_datavalue*>(c);
            w.put<uint8_t>(dv.mask & UAPLEX_DATAVALUE_VALUE);
            if (dv.mask & UAPLEX_DATAVALUE_VALUE) encode_variant(dv.value, w, depth + 1);
            break;
        }
        case 24:
            encode_variant(*static_cast<const uaplex_variant*>(c), w, depth + 1);
            break;
        case 25:
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

void xml_to_c(int b, const XmlElement* e, void* dst, ValueContext& ctx, int depth) {
    if (depth > kMaxDepth) fail(e, "values nested too deeply");
    std::memset(dst, 0, c_size(b));
    const std::string_view text = e ? std::string_view(e->text) : std::string_view();
    switch (b) {
        case 1:
            *static_cast<bool*>(dst) = e ? parse_bool(e, text) : false;
            break;
        case 2:
            *static_cast<int8_t*>(dst) = e ? parse_int<int8_t>(e, text) : 0;
            break;
        case 3:
            *static_cast<uint8_t*>(dst) = e ? parse_int<uint8_t>(e, text) : 0;
            break;
        case 4:
            *static_cast<int16_t*>(dst) = e ? parse_int<int16_t>(e, text) : 0;
            break;
        case 5:
            *static_cast<uint16_t*>(dst) = e ? parse_int<uint16_t>(e, text) : 0;
            break;
        case 6:
            *static_cast<int32_t*>(dst) = e ? parse_int<int32_t>(e, text) : 0;
            break;
        case 7:
            *static_cast<uint32_t*>(dst) = e ? parse_int<uint32_t>(e, text) : 0;
            break;
        case 8:
            *static_cast<int64_t*>(dst) = e ? parse_int<int64_t>(e, text) : 0;
            break;
        case 9:
            *static_cast<uint64_t*>(dst) = e ? parse_int<uint64_t>(e, text) : 0;
            break;
        case 10:
            *static_cast<float*>(dst) = e ? float(parse_double(e, text)) : 0.0f;
            break;
        case 11:
            *static_cast<double*>(dst) = e ? parse_double(e, text) : 0.0;
            break;
        case 12:
            *static_cast<uaplex_string*>(dst) =
                e ? keep_string(ctx, std::string(text)) : uaplex_string{-1, nullptr};
            break;
        case 13:
            *static_cast<int64_t*>(dst) = e ? parse_datetime(e, text) : 0;
            break;
        case 14:
            if (e) {
                const XmlElement* s = e->child("String");
                *static_cast<uaplex_guid*>(dst) = parse_guid(e, s ? s->text : text);
            }
            break;
        case 15: {
            auto& bs = *static_cast<uaplex_bytestring*>(dst);
            bs = {-1, nullptr};
            if (e) {
                uaplex_string s = keep_string(ctx, base64(e, text));
                bs = {s.length, reinterpret_cast<const uint8_t*>(s.data)};
            }
            break;
        }
        case 16:
            if (e) fail(e, "XmlElement values are not supported");
            *static_cast<uaplex_string*>(dst) = {-1, nullptr};
            break;
        case 17:
        case 18: {
            uaplex_nodeid* n = b == 17 ? static_cast<uaplex_nodeid*>(dst)
                                       : &static_cast<uaplex_expandednodeid*>(dst)->node_id;
            if (b == 18) static_cast<uaplex_expandednodeid*>(dst)->namespace_uri = {-1, nullptr};
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
        case 19: {
            const XmlElement* code = e ? e->child("Code") : nullptr;
            *static_cast<uint32_t*>(dst) = code ? parse_int<uint32_t>(code, code->text) : 0;
            break;
        }
        case 20: {
            auto& q = *static_cast<uaplex_qualifiedname*>(dst);
            q.name = {-1, nullptr};
            if (!e) break;
            const XmlElement* ns = e->child("NamespaceIndex");
            const XmlElement* name = e->child("Name");
            q.namespace_index = ns ? ctx.remap(parse_int<uint16_t>(ns, ns->text)) : 0;
            if (name) q.name = keep_string(ctx, name->text);
            break;
        }
        case 21: {
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
        case 22: {
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
        case 23:
            if (e) fail(e, "DataValue values are not supported");
            break;
        case 24: {
            auto& v = *static_cast<uaplex_variant*>(dst);
            v.array_length = -1;
            const XmlElement* inner = e ? e->child("Value") : nullptr;
            if (inner && !inner->children.empty()) v = xml_to_variant(*only_child(*inner), ctx);
            break;
        }
        case 25:
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
        alignas(16) unsigned char c[sizeof(uaplex_datavalue) + 16];
        xml_to_c(t.builtin, e, c, ctx, depth + 1);
        encode_c(t.builtin, c, w, depth + 1);
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
        switch (f & 0x3F) {
            case 0:
                return skip(1);
            case 1:
                return skip(3);
            case 2:
                return skip(6);
            case 3:
            case 5:
                return skip(2) && string();
            case 4:
                return skip(18);
        }
        return false;
    }
};

bool skip_builtin(int b, Reader& r, int depth);

bool skip_variant(Reader& r, int depth) {
    uint8_t enc;
    if (!r.get(enc)) return false;
    int b = enc & 0x3F;
    if (b > 25) return false;
    if (b == 0) return true;
    if (enc & 0x80) {
        int32_t n;
        if (!r.get(n) || n < -1 || (n > 0 && !r.need(std::size_t(n) / 8))) return false;
        for (int32_t i = 0; i < n; ++i)
            if (!skip_builtin(b, r, depth + 1)) return false;
        if (enc & 0x40) {
            int32_t m;
            if (!r.get(m) || m < 0 || !r.skip(std::size_t(m) * 4)) return false;
        }
        return true;
    }
    return skip_builtin(b, r, depth + 1);
}

bool skip_builtin(int b, Reader& r, int depth) {
    if (depth > kMaxDepth) return false;
    switch (b) {
        case 1:
        case 2:
        case 3:
            return r.skip(1);
        case 4:
        case 5:
            return r.skip(2);
        case 6:
        case 7:
        case 10:
        case 19:
            return r.skip(4);
        case 8:
        case 9:
        case 11:
        case 13:
            return r.skip(8);
        case 12:
        case 15:
        case 16:
            return r.string();
        case 14:
            return r.skip(16);
        case 17:
            return r.node_id();
        case 18: {
            uint8_t f = 0;
            if (!r.node_id(&f)) return false;
            if ((f & 0x80) && !r.string()) return false;
            return !(f & 0x40) || r.skip(4);
        }
        case 20:
            return r.skip(2) && r.string();
        case 21: {
            uint8_t m;
            if (!r.get(m)) return false;
            return (!(m & 1) || r.string()) && (!(m & 2) || r.string());
        }
        case 22: {
            uint8_t enc;
            if (!r.node_id() || !r.get(enc)) return false;
            return enc == 0 || r.string();
        }
        case 23: {
            uint8_t m;
            if (!r.get(m)) return false;
            if ((m & 1) && !skip_variant(r, depth + 1)) return false;
            return (!(m & 2) || r.skip(4)) && (!(m & 4) || r.skip(8)) &&
                   (!(m & 0x10) || r.skip(2)) && (!(m & 8) || r.skip(8)) &&
                   (!(m & 0x20) || r.skip(2));
        }
        case 24:
            return skip_variant(r, depth + 1);
        case 25: {
            uint8_t m;
            if (!r.get(m)) return false;
            if ((m & 0x01) && !r.skip(4)) return false;
            if ((m & 0x02) && !r.skip(4)) return false;
            if ((m & 0x08) && !r.skip(4)) return false;
            if ((m & 0x04) && !r.skip(4)) return false;
            if ((m & 0x10) && !r.string()) return false;
            if ((m & 0x20) && !r.skip(4)) return false;
            return !(m & 0x40) || skip_builtin(25, r, depth + 1);
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
    if (t.structure_type == 2) {
        uint32_t sw;
        if (!r.get(sw) || sw > t.fields.size()) {
            why = "bad union switch in " + t.name;
            return false;
        }
        return sw == 0 || field(t.fields[sw - 1]);
    }
    uint32_t mask = 0;
    if (t.structure_type == 1 && !r.get(mask)) return false;
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
    auto builtin = [&](uint32_t id, uint8_t b, std::string name) {
        TypeDef t;
        t.kind = TypeDef::Builtin;
        t.builtin = b;
        t.name = std::move(name);
        t.id = NodeIdV::numeric(0, id);
        add(std::move(t));
    };
    for (int i = 1; i <= 25; ++i) builtin(uint32_t(i), uint8_t(i), std::string(kBuiltinNames[i]));
    // Abstract number types are encoded as Variants in structures (Part 6 5.2.9).
    builtin(26, 24, "Number");
    builtin(27, 24, "Integer");
    builtin(28, 24, "UInteger");
    // Subtypes of built-in types: encoded as their base.
    const std::pair<uint32_t, uint8_t> subtypes[] = {
        {290, 11},  {294, 13}, {295, 12},  {288, 7},   {289, 7},    {291, 12},
        {292, 12},  {293, 13}, {30, 15},   {2000, 15}, {2001, 15},  {2002, 15},
        {2003, 15}, {311, 15}, {17588, 7}, {20998, 7}, {24263, 12}, {23751, 12}};
    for (auto [id, b] : subtypes) builtin(id, b, "i=" + std::to_string(id));
    {
        TypeDef t;
        t.kind = TypeDef::Enumeration;
        t.name = "Enumeration";
        t.id = NodeIdV::numeric(0, 29);
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
        t.base = NodeIdV::numeric(0, 22);
        t.xml_encoding = NodeIdV::numeric(0, xml);
        t.binary_encoding = NodeIdV::numeric(0, bin);
        t.fields = std::move(fields);
        add(std::move(t));
    };
    structure(296, 297, 298, "Argument",
              {field("Name", 12), field("DataType", 17), field("ValueRank", 6),
               field("ArrayDimensions", 7, 1), field("Description", 21)});
    structure(7594, 7616, 8251, "EnumValueType",
              {field("Value", 8), field("DisplayName", 21), field("Description", 21)});
    structure(884, 885, 886, "Range", {field("Low", 11), field("High", 11)});
    structure(887, 888, 889, "EUInformation",
              {field("NamespaceUri", 12), field("UnitId", 6), field("DisplayName", 21),
               field("Description", 21)});
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
    int b = builtin_by_name(list ? name.substr(6) : name);
    if (b < 0) fail(&typed, "unsupported value element <" + typed.name + ">");
    v.encoding = uint8_t(b);
    if (!list) {
        if (boxed(b)) {
            void* p = ctx.store.alloc(c_size(b));
            xml_to_c(b, &typed, p, ctx, 0);
            v.value.pointer = p;
        } else {
            alignas(16) unsigned char c[32];
            xml_to_c(b, &typed, c, ctx, 0);
            std::memcpy(&v.value, c, c_size(b));
        }
        return v;
    }
    v.encoding |= UAPLEX_VARIANT_ARRAY;
    v.array_length = int32_t(typed.children.size());
    auto* p = static_cast<uint8_t*>(ctx.store.alloc(c_size(b) * (typed.children.size() + 1)));
    for (std::size_t i = 0; i < typed.children.size(); ++i) {
        if (typed.children[i].name != kBuiltinNames[b])
            fail(&typed.children[i],
                 "<" + typed.children[i].name + "> inside <" + typed.name + ">");
        xml_to_c(b, &typed.children[i], p + i * c_size(b), ctx, 0);
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
    if (t.structure_type == 2) {
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
    if (t.structure_type == 1) {
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
    w.node_id(t.base.null() ? NodeIdV::numeric(0, 22).raw() : t.base.raw());
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
