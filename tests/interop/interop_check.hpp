// SPDX-License-Identifier: Apache-2.0
// Compares decoded built-in values with the JSON descriptions written by values.js.
#pragma once

#include "interop_json.hpp"

#include <uaplex/encoding/binary.hpp>
#include <uaplex/encoding/datatype.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <string>

namespace uaplex::interop {

using namespace uaplex::ua;

inline std::string toHex(std::span<const std::uint8_t> b) {
    static const char* digits = "0123456789abcdef";
    std::string s;
    s.reserve(b.size() * 2);
    for (std::uint8_t c : b) {
        s += digits[c >> 4];
        s += digits[c & 15];
    }
    return s;
}

inline std::vector<std::uint8_t> fromHex(const std::string& h) {
    std::vector<std::uint8_t> out(h.size() / 2);
    for (std::size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<std::uint8_t>(std::stoul(h.substr(2 * i, 2), nullptr, 16));
    return out;
}

inline std::string guidText(const Guid& g) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%08X-%04X-%04X-%02X%02X-%02X%02X%02X%02X%02X%02X", g.data1,
                  g.data2, g.data3, g.data4[0], g.data4[1], g.data4[2], g.data4[3], g.data4[4],
                  g.data4[5], g.data4[6], g.data4[7]);
    return buf;
}

// A String expectation: JSON null for a null string, else the text.
inline void checkString(const String& s, const Json& e) {
    if (e.isNull()) {
        CHECK(s.length == -1);
    } else {
        CHECK(std::string(view(s)) == e.str());
        CHECK(s.length == static_cast<std::int32_t>(e.str().size()));
    }
}

inline void checkByteString(const ByteString& b, const Json& e) {
    if (e.isNull()) {
        CHECK(b.length == -1);
    } else {
        CHECK(toHex(view(b)) == e.str());
        CHECK(b.length == static_cast<std::int32_t>(e.str().size() / 2));
    }
}

template <class F>
inline void checkFloat(F v, const Json& e) {
    if (e.isString()) {
        const std::string& s = e.str();
        if (s == "NaN")
            CHECK(std::isnan(v));
        else if (s == "Infinity")
            CHECK((std::isinf(v) && v > 0));
        else if (s == "-Infinity")
            CHECK((std::isinf(v) && v < 0));
        else if (s == "-0")
            CHECK((v == 0 && std::signbit(v)));
        else
            FAIL("unexpected float expectation " << s);
    } else {
        CHECK(v == static_cast<F>(e.asNumber()));
    }
}

inline void checkNodeId(const NodeId& n, const Json& e) {
    CHECK(n.namespace_index == e["ns"].asInt());
    const std::string& kind = e["kind"].str();
    if (kind == "numeric") {
        REQUIRE(n.identifier_type == UAPLEX_ID_NUMERIC);
        CHECK(n.identifier.numeric == e["id"].asUInt());
    } else if (kind == "string") {
        REQUIRE(n.identifier_type == UAPLEX_ID_STRING);
        checkString(n.identifier.string, e["id"]);
    } else if (kind == "guid") {
        REQUIRE(n.identifier_type == UAPLEX_ID_GUID);
        CHECK(guidText(n.identifier.guid) == e["id"].str());
    } else if (kind == "bytestring") {
        REQUIRE(n.identifier_type == UAPLEX_ID_BYTESTRING);
        checkByteString(n.identifier.bytestring, e["id"]);
    } else {
        FAIL("unknown NodeId kind " << kind);
    }
}

inline void checkExpandedNodeId(const ExpandedNodeId& x, const Json& e) {
    checkNodeId(x.node_id, e);
    if (e["uri"].isNull()) {
        CHECK((x.mask & UAPLEX_EXPANDEDNODEID_NAMESPACEURI) == 0);
    } else {
        CHECK((x.mask & UAPLEX_EXPANDEDNODEID_NAMESPACEURI) != 0);
        checkString(x.namespace_uri, e["uri"]);
    }
    std::uint64_t server = e["serverIndex"].asUInt();
    CHECK(((x.mask & UAPLEX_EXPANDEDNODEID_SERVERINDEX) != 0) == (server != 0));
    if (server != 0) CHECK(x.server_index == server);
}

inline void checkLocalizedText(const LocalizedText& t, const Json& e) {
    CHECK(((t.mask & UAPLEX_LOCALIZEDTEXT_LOCALE) != 0) == !e["locale"].isNull());
    CHECK(((t.mask & UAPLEX_LOCALIZEDTEXT_TEXT) != 0) == !e["text"].isNull());
    if (!e["locale"].isNull()) checkString(t.locale, e["locale"]);
    if (!e["text"].isNull()) checkString(t.text, e["text"]);
}

inline void checkDiagnosticInfo(const DiagnosticInfo& d, const Json& e, int depth = 0) {
    INFO("DiagnosticInfo depth " << depth);
    auto field = [&](std::uint8_t bit, std::int32_t actual, const char* key) {
        std::int64_t want = e[key].asInt();
        CHECK(((d.mask & bit) != 0) == (want != -1));
        if (want != -1) CHECK(actual == want);
    };
    field(UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID, d.symbolic_id, "symbolicId");
    field(UAPLEX_DIAGNOSTICINFO_NAMESPACE_URI, d.namespace_uri, "namespaceUri");
    field(UAPLEX_DIAGNOSTICINFO_LOCALE, d.locale, "locale");
    field(UAPLEX_DIAGNOSTICINFO_LOCALIZED_TEXT, d.localized_text, "localizedText");
    CHECK(((d.mask & UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO) != 0) == !e["additionalInfo"].isNull());
    if (!e["additionalInfo"].isNull()) checkString(d.additional_info, e["additionalInfo"]);
    std::uint64_t inner = e["innerStatusCode"].asUInt();
    CHECK(((d.mask & UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE) != 0) == (inner != 0));
    if (inner != 0) CHECK(d.inner_status_code == inner);
    bool hasInner = !e["inner"].isNull();
    CHECK(((d.mask & UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO) != 0) == hasInner);
    if (hasInner) {
        REQUIRE(d.inner_diagnostic_info != nullptr);
        checkDiagnosticInfo(*d.inner_diagnostic_info, e["inner"], depth + 1);
    }
}

inline void checkExtensionObject(const ExtensionObject& x, const Json& e) {
    CHECK(x.encoding == e["encoding"].asInt());
    if (e["typeId"].isNull()) {
        CHECK(x.type_id.identifier_type == UAPLEX_ID_NUMERIC);
        CHECK(x.type_id.identifier.numeric == 0);
        return;
    }
    checkNodeId(x.type_id, e["typeId"]);
    if (e.has("body")) {
        // A type the encoding does not know: the body is kept as bytes.
        CHECK(x.object == nullptr);
        checkByteString(x.body, e["body"]);
    } else {
        // A standard structure: decoded through its descriptor.
        CHECK(x.object != nullptr);
        REQUIRE(x.data_type != nullptr);
        CHECK(static_cast<const enc::DataType*>(x.data_type)->name == e["type"].str());
    }
}

void checkVariant(const Variant& v, const Json& e);
void checkDataValue(const DataValue& d, const Json& e);

// Checks one value of built-in type `type` held in its C representation at `p`.
inline void checkBuiltin(std::uint8_t type, const void* p, const Json& e) {
    switch (static_cast<BuiltinType>(type)) {
        case BuiltinType::Boolean:
            CHECK(*static_cast<const bool*>(p) == e.asBool());
            break;
        case BuiltinType::SByte:
            CHECK(*static_cast<const std::int8_t*>(p) == e.asInt());
            break;
        case BuiltinType::Byte:
            CHECK(*static_cast<const std::uint8_t*>(p) == e.asInt());
            break;
        case BuiltinType::Int16:
            CHECK(*static_cast<const std::int16_t*>(p) == e.asInt());
            break;
        case BuiltinType::UInt16:
            CHECK(*static_cast<const std::uint16_t*>(p) == e.asInt());
            break;
        case BuiltinType::Int32:
            CHECK(*static_cast<const std::int32_t*>(p) == e.asInt());
            break;
        case BuiltinType::UInt32:
            CHECK(*static_cast<const std::uint32_t*>(p) == e.asUInt());
            break;
        case BuiltinType::Int64:
            CHECK(*static_cast<const std::int64_t*>(p) == e.asInt());
            break;
        case BuiltinType::UInt64:
            CHECK(*static_cast<const std::uint64_t*>(p) == e.asUInt());
            break;
        case BuiltinType::Float:
            checkFloat(*static_cast<const float*>(p), e);
            break;
        case BuiltinType::Double:
            checkFloat(*static_cast<const double*>(p), e);
            break;
        case BuiltinType::String:
        case BuiltinType::XmlElement:
            checkString(*static_cast<const String*>(p), e);
            break;
        case BuiltinType::DateTime:
            CHECK(*static_cast<const std::int64_t*>(p) == e.asInt());
            break;
        case BuiltinType::Guid:
            CHECK(guidText(*static_cast<const Guid*>(p)) == e.str());
            break;
        case BuiltinType::ByteString:
            checkByteString(*static_cast<const ByteString*>(p), e);
            break;
        case BuiltinType::NodeId:
            checkNodeId(*static_cast<const NodeId*>(p), e);
            break;
        case BuiltinType::ExpandedNodeId:
            checkExpandedNodeId(*static_cast<const ExpandedNodeId*>(p), e);
            break;
        case BuiltinType::StatusCode:
            CHECK(*static_cast<const std::uint32_t*>(p) == e.asUInt());
            break;
        case BuiltinType::QualifiedName: {
            auto& q = *static_cast<const QualifiedName*>(p);
            CHECK(q.namespace_index == e["ns"].asInt());
            checkString(q.name, e["name"]);
            break;
        }
        case BuiltinType::LocalizedText:
            checkLocalizedText(*static_cast<const LocalizedText*>(p), e);
            break;
        case BuiltinType::ExtensionObject:
            checkExtensionObject(*static_cast<const ExtensionObject*>(p), e);
            break;
        case BuiltinType::DataValue:
            checkDataValue(*static_cast<const DataValue*>(p), e);
            break;
        case BuiltinType::Variant:
            checkVariant(*static_cast<const Variant*>(p), e);
            break;
        case BuiltinType::DiagnosticInfo:
            checkDiagnosticInfo(*static_cast<const DiagnosticInfo*>(p), e);
            break;
        default:
            FAIL("unexpected built-in type " << int(type));
    }
}

// Types a scalar Variant holds inline in `value` rather than behind value.pointer.
inline bool variantInline(std::uint8_t type) {
    return type <= static_cast<std::uint8_t>(BuiltinType::XmlElement) ||
           type == static_cast<std::uint8_t>(BuiltinType::StatusCode);
}

inline void checkVariant(const Variant& v, const Json& e) {
    std::uint8_t type = v.encoding & UAPLEX_VARIANT_TYPE_MASK;
    REQUIRE(type == e["type"].asInt());
    const std::string& arrayType = e["arrayType"].str();
    if (type == 0) return;
    if (arrayType == "Scalar") {
        CHECK((v.encoding & UAPLEX_VARIANT_ARRAY) == 0);
        const void* p = variantInline(type) ? static_cast<const void*>(&v.value) : v.value.pointer;
        REQUIRE(p != nullptr);
        checkBuiltin(type, p, e["value"]);
        return;
    }
    REQUIRE((v.encoding & UAPLEX_VARIANT_ARRAY) != 0);
    REQUIRE(v.array_length == e["length"].asInt());
    const auto& values = e["values"].arr();
    std::size_t size = enc::builtinElementSize(type);
    const auto* base = static_cast<const std::uint8_t*>(v.value.pointer);
    for (std::size_t i = 0; i < values.size(); ++i) {
        INFO("element " << i);
        checkBuiltin(type, base + i * size, values[i]);
    }
    if (arrayType == "Matrix") {
        REQUIRE((v.encoding & UAPLEX_VARIANT_ARRAY_DIMENSIONS) != 0);
        const auto& dims = e["dimensions"].arr();
        REQUIRE(v.dimensions_length == static_cast<std::int32_t>(dims.size()));
        for (std::size_t i = 0; i < dims.size(); ++i) CHECK(v.dimensions[i] == dims[i].asInt());
    } else {
        CHECK((v.encoding & UAPLEX_VARIANT_ARRAY_DIMENSIONS) == 0);
    }
}

inline void checkDataValue(const DataValue& d, const Json& e) {
    bool hasValue = e["hasValue"].asBool();
    CHECK(((d.mask & UAPLEX_DATAVALUE_VALUE) != 0) == hasValue);
    if (hasValue) checkVariant(d.value, e["value"]);
    std::uint64_t status = e["status"].asUInt();
    CHECK(((d.mask & UAPLEX_DATAVALUE_STATUS) != 0) == (status != 0));
    if (status != 0) CHECK(d.status == status);
    CHECK(((d.mask & UAPLEX_DATAVALUE_SOURCE_TIMESTAMP) != 0) == !e["sourceTimestamp"].isNull());
    if (!e["sourceTimestamp"].isNull()) CHECK(d.source_timestamp == e["sourceTimestamp"].asInt());
    CHECK(((d.mask & UAPLEX_DATAVALUE_SERVER_TIMESTAMP) != 0) == !e["serverTimestamp"].isNull());
    if (!e["serverTimestamp"].isNull()) CHECK(d.server_timestamp == e["serverTimestamp"].asInt());
    CHECK(((d.mask & UAPLEX_DATAVALUE_SOURCE_PICOSECONDS) != 0) ==
          !e["sourcePicoseconds"].isNull());
    if (!e["sourcePicoseconds"].isNull())
        CHECK(d.source_picoseconds == e["sourcePicoseconds"].asInt());
    CHECK(((d.mask & UAPLEX_DATAVALUE_SERVER_PICOSECONDS) != 0) ==
          !e["serverPicoseconds"].isNull());
    if (!e["serverPicoseconds"].isNull())
        CHECK(d.server_picoseconds == e["serverPicoseconds"].asInt());
}

}  // namespace uaplex::interop
