// SPDX-License-Identifier: Apache-2.0
// Encodes values with our encoder for node-opcua to decode (check_reverse.js):
//
//   interop_reverse_writer <outDir>
//
// writes
//   <outDir>/struct/<Type>.bin   every generated structure, filled through its descriptor by
//                                the rule check_reverse.js re-derives independently
//   <outDir>/structmsg/<Type>.bin  the same for every service request and response, framed
//                                by encodeMessage (encoding NodeId + body)
//   <outDir>/message/<Name>.bin  service messages built from the typed structs, with the
//                                encoding NodeId in front (encodeMessage)
//   <outDir>/builtin/<Name>.bin  single built-in values, built by hand
//   <outDir>/custom/<Name>.bin   optional-field and union structures of
//                                schema/Interop.Optional.bsd, built by hand
//   <outDir>/mismatch/...        files whose values deliberately break the rule/expectations
#include <uaplex/encoding/encoding.hpp>
#include <uaplex/encoding/generated/interop_types.hpp>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace uaplex;
using namespace uaplex::ua;
namespace fs = std::filesystem;

namespace {

// 2021-04-19T10:26:40Z in OPC UA ticks; on a whole millisecond so node-opcua's Date holds it.
constexpr std::int64_t kBaseTicks = 132633016000000000;
constexpr std::uint32_t kBadNodeIdUnknown = 0x80340000u;
constexpr std::uint32_t kUncertainInitialValue = 0x40920000u;

void writeFile(const fs::path& path, std::span<const std::uint8_t> bytes) {
    fs::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path.string());
}

template <class T>
void* arenaCopy(enc::Arena& arena, const T& value) {
    auto* p = static_cast<T*>(arena.allocate(sizeof(T), alignof(T)));
    if (p == nullptr) throw std::bad_alloc();
    std::memcpy(static_cast<void*>(p), &value, sizeof(T));
    return p;
}

String arenaString(enc::Arena& arena, std::string_view s) {
    auto* p = static_cast<char*>(arena.allocate(s.size() + 1, 1));
    if (p == nullptr) throw std::bad_alloc();
    std::memcpy(p, s.data(), s.size());
    return String{static_cast<std::int32_t>(s.size()), p};
}

// ---------------------------------------------------------------------------------------
// The fill rule (mirrored by expectedValue() in check_reverse.js). Field number s (1-based
// position in the structure, base type fields first) gets a value derived from s and the
// field name; arrays hold 2 elements at the top level, 1 one level down, none below.
// Structures with optional fields get all of them; unions their first member.

Guid ruleGuid(std::uint32_t s) {
    return Guid{s, 0xBEEF, 0x1234, {0x80, 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87}};
}

NodeId ruleNodeId(enc::Arena& arena, std::uint32_t s, std::string_view name) {
    NodeId n{};
    n.namespace_index = static_cast<std::uint16_t>(s % 4 == 0 ? 0 : s);
    switch (s % 4) {
        case 0:
        case 1:
            n.identifier_type = UAPLEX_ID_NUMERIC;
            n.identifier.numeric = s * 1000;
            break;
        case 2:
            n.identifier_type = UAPLEX_ID_STRING;
            n.identifier.string = arenaString(arena, name);
            break;
        case 3:
            n.identifier_type = UAPLEX_ID_GUID;
            n.identifier.guid = ruleGuid(s);
            break;
    }
    return n;
}

void fillStruct(enc::Arena& arena, const enc::DataType& type, void* object, int depth);

std::size_t elementSize(const enc::FieldDescriptor& f) {
    if (f.kind == enc::FieldKind::Structure || f.kind == enc::FieldKind::Enumeration)
        return f.type->size;
    return enc::builtinElementSize(static_cast<std::uint8_t>(f.kind));
}

void fillEnum(const enc::DataType& type, void* p) {
    std::int64_t v = 0;
    for (const enc::EnumValue& e : type.enumSpan())
        if (e.value > 0 && (v == 0 || e.value < v)) v = e.value;
    switch (type.builtinId) {
        case 1:
            *static_cast<std::uint8_t*>(p) = static_cast<std::uint8_t>(v);
            break;
        case 2:
            *static_cast<std::uint16_t*>(p) = static_cast<std::uint16_t>(v);
            break;
        case 8:
            *static_cast<std::uint64_t*>(p) = static_cast<std::uint64_t>(v);
            break;
        default:
            *static_cast<std::int32_t*>(p) = static_cast<std::int32_t>(v);
            break;
    }
}

void fillOne(enc::Arena& arena, const enc::FieldDescriptor& f, void* p, std::uint32_t s,
             int depth) {
    const std::string_view name = f.name;
    switch (f.kind) {
        case enc::FieldKind::Boolean:
            *static_cast<bool*>(p) = (s % 2) == 1;
            break;
        case enc::FieldKind::SByte:
            *static_cast<std::int8_t*>(p) = std::int8_t(-std::int32_t(s));
            break;
        case enc::FieldKind::Byte:
            *static_cast<std::uint8_t*>(p) = std::uint8_t(s);
            break;
        case enc::FieldKind::Int16:
            *static_cast<std::int16_t*>(p) = std::int16_t(-100 * std::int32_t(s));
            break;
        case enc::FieldKind::UInt16:
            *static_cast<std::uint16_t*>(p) = std::uint16_t(100 * s);
            break;
        case enc::FieldKind::Int32:
            *static_cast<std::int32_t*>(p) = -100000 * std::int32_t(s);
            break;
        case enc::FieldKind::UInt32:
            *static_cast<std::uint32_t*>(p) = 100000 * s + 7;
            break;
        case enc::FieldKind::Int64:
            *static_cast<std::int64_t*>(p) = -1000000000000LL * s;
            break;
        case enc::FieldKind::UInt64:
            *static_cast<std::uint64_t*>(p) = 1000000000000ULL * s + 3;
            break;
        case enc::FieldKind::Float:
            *static_cast<float*>(p) = float(s) + 0.5f;
            break;
        case enc::FieldKind::Double:
            *static_cast<double*>(p) = double(s) + 0.25;
            break;
        case enc::FieldKind::String:
            // indexRange fields are NumericRanges: node-opcua parses them, so keep them valid.
            *static_cast<String*>(p) = arenaString(
                arena,
                name == "indexRange" ? std::to_string(s) + ":" + std::to_string(s + 1) : name);
            break;
        case enc::FieldKind::DateTime:
            *static_cast<std::int64_t*>(p) = kBaseTicks + 10000LL * s;
            break;
        case enc::FieldKind::Guid:
            *static_cast<Guid*>(p) = ruleGuid(s);
            break;
        case enc::FieldKind::ByteString: {
            auto* b = static_cast<std::uint8_t*>(arena.allocate(3, 1));
            b[0] = std::uint8_t(s);
            b[1] = std::uint8_t(s + 1);
            b[2] = std::uint8_t(s + 2);
            *static_cast<ByteString*>(p) = ByteString{3, b};
            break;
        }
        case enc::FieldKind::XmlElement:
            *static_cast<String*>(p) = arenaString(arena, "<x/>");
            break;
        case enc::FieldKind::NodeId:
            *static_cast<NodeId*>(p) = ruleNodeId(arena, s, name);
            break;
        case enc::FieldKind::ExpandedNodeId: {
            ExpandedNodeId x{};
            x.node_id = ruleNodeId(arena, s, name);
            if (s % 2 == 1) {
                x.mask |= UAPLEX_EXPANDEDNODEID_SERVERINDEX;
                x.server_index = s;
            }
            if (s % 3 == 0) {
                x.mask |= UAPLEX_EXPANDEDNODEID_NAMESPACEURI;
                x.namespace_uri = arenaString(arena, "urn:uaplex:interop");
            }
            *static_cast<ExpandedNodeId*>(p) = x;
            break;
        }
        case enc::FieldKind::StatusCode:
            *static_cast<std::uint32_t*>(p) = kBadNodeIdUnknown;
            break;
        case enc::FieldKind::QualifiedName:
            *static_cast<QualifiedName*>(p) =
                QualifiedName{static_cast<std::uint16_t>(s), arenaString(arena, name)};
            break;
        case enc::FieldKind::LocalizedText: {
            LocalizedText t{};
            t.mask = UAPLEX_LOCALIZEDTEXT_LOCALE | UAPLEX_LOCALIZEDTEXT_TEXT;
            t.locale = arenaString(arena, "en");
            t.text = arenaString(arena, name);
            *static_cast<LocalizedText*>(p) = t;
            break;
        }
        case enc::FieldKind::ExtensionObject: {
            // A known body: Range{low = -s, high = s}.
            const enc::DataType* range = enc::findDataType("Range");
            if (range == nullptr) throw std::runtime_error("no Range descriptor");
            void* obj = arena.allocate(range->size, range->alignment);
            std::memset(obj, 0, range->size);
            *static_cast<double*>(static_cast<void*>(static_cast<std::uint8_t*>(obj) +
                                                     range->field("low")->offset)) = -double(s);
            *static_cast<double*>(static_cast<void*>(static_cast<std::uint8_t*>(obj) +
                                                     range->field("high")->offset)) = double(s);
            ExtensionObject x{};
            x.type_id = numericNodeId(0, range->binaryEncodingId);
            x.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
            x.data_type = range;
            x.object = obj;
            *static_cast<ExtensionObject*>(p) = x;
            break;
        }
        case enc::FieldKind::DataValue: {
            DataValue d{};
            d.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_STATUS |
                     UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
            d.value = variantInt32(std::int32_t(s));
            d.status = kUncertainInitialValue;
            d.source_timestamp = kBaseTicks + 10000LL * s;
            *static_cast<DataValue*>(p) = d;
            break;
        }
        case enc::FieldKind::Variant: {
            auto* items = static_cast<std::int32_t*>(arena.allocate(2 * sizeof(std::int32_t), 4));
            items[0] = std::int32_t(s);
            items[1] = -std::int32_t(s);
            *static_cast<Variant*>(p) = variantArray(BuiltinType::Int32, 2, items);
            break;
        }
        case enc::FieldKind::DiagnosticInfo: {
            DiagnosticInfo d{};
            d.mask = UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID | UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO;
            d.symbolic_id = std::int32_t(s);
            d.additional_info = arenaString(arena, name);
            *static_cast<DiagnosticInfo*>(p) = d;
            break;
        }
        case enc::FieldKind::Enumeration:
            fillEnum(*f.type, p);
            break;
        case enc::FieldKind::Structure:
            fillStruct(arena, *f.type, p, depth + 1);
            break;
    }
}

void fillStruct(enc::Arena& arena, const enc::DataType& type, void* object, int depth) {
    std::memset(object, 0, type.size);
    std::uint32_t s = 0;
    for (const enc::FieldDescriptor& f : type.fieldSpan()) {
        ++s;
        auto* p = static_cast<std::uint8_t*>(object) + f.offset;
        if (f.isArray) {
            std::int32_t n = depth == 0 ? 2 : depth == 1 ? 1 : 0;
            std::size_t size = elementSize(f);
            auto* data =
                static_cast<std::uint8_t*>(arena.allocate(std::max<std::size_t>(n * size, 1), 8));
            std::memset(data, 0, n * size);
            for (std::int32_t i = 0; i < n; ++i) fillOne(arena, f, data + i * size, s, depth);
            *reinterpret_cast<uaplex_array*>(p) = uaplex_array{n, data};
        } else {
            fillOne(arena, f, p, s, depth);
        }
    }
    if (type.kind == enc::TypeKind::StructureWithOptionalFields)
        *reinterpret_cast<std::uint32_t*>(static_cast<std::uint8_t*>(object) +
                                          type.selectorOffset) = ~0u;
    if (type.kind == enc::TypeKind::Union)
        *reinterpret_cast<std::uint32_t*>(static_cast<std::uint8_t*>(object) +
                                          type.selectorOffset) = 1;
}

std::vector<std::uint8_t> encodeValue(const enc::DataType& type, const void* object) {
    enc::ByteBuffer buffer;
    enc::BinaryWriter writer(buffer);
    enc::encode(writer, type, object);
    if (!writer.ok()) throw std::runtime_error("encoding " + std::string(type.name) + " failed");
    return buffer.toVector();
}

template <class T>
std::vector<std::uint8_t> encodeTyped(const T& value) {
    enc::ByteBuffer buffer;
    enc::BinaryWriter writer(buffer);
    enc::encode(writer, value);
    if (!writer.ok()) throw std::runtime_error("encoding failed");
    return buffer.toVector();
}

template <class T>
std::vector<std::uint8_t> encodeTypedMessage(const T& message) {
    enc::ByteBuffer buffer;
    enc::BinaryWriter writer(buffer);
    if (enc::encodeMessage(writer, message) != UAPLEX_Good)
        throw std::runtime_error("encodeMessage failed");
    return buffer.toVector();
}

int writeStructs(const fs::path& dir) {
    int count = 0;
    for (const enc::DataType& type : enc::allDataTypes()) {
        if (type.kind == enc::TypeKind::BuiltIn || type.kind == enc::TypeKind::Enumeration)
            continue;
        if (type.binaryEncodingId == 0) continue;  // abstract: never on the wire by itself
        enc::Arena arena;
        void* object = arena.allocate(type.size, type.alignment);
        fillStruct(arena, type, object, 0);
        writeFile(dir / (std::string(type.name) + ".bin"), encodeValue(type, object));
        ++count;
        // Service messages also go out framed, through the generic encodeMessage.
        std::string_view name = type.name;
        if (name.ends_with("Request") || name.ends_with("Response")) {
            enc::ByteBuffer buffer;
            enc::BinaryWriter writer(buffer);
            if (enc::encodeMessage(writer, type, object) != UAPLEX_Good)
                throw std::runtime_error("encodeMessage " + std::string(name) + " failed");
            writeFile(dir.parent_path() / "structmsg" / (std::string(name) + ".bin"),
                      buffer.span());
        }
    }
    return count;
}

// ---------------------------------------------------------------------------------------
// Hand-built values: the expectations are spelled out in check_reverse.js.

const std::uint8_t kBytes[] = {0x00, 0x01, 0x7F, 0x80, 0xFF};
const Guid kGuid{0x72962B91, 0xFA75, 0x4AE6, {0x8D, 0x28, 0xB4, 0x04, 0xDC, 0x7D, 0xAF, 0x63}};

int writeBuiltins(const fs::path& dir) {
    int count = 0;
    auto put = [&](const char* name, std::vector<std::uint8_t> bytes) {
        writeFile(dir / (std::string(name) + ".bin"), bytes);
        ++count;
    };
    enc::Arena arena;
    put("Boolean", encodeTyped(true));
    put("SByte", encodeTyped(std::int8_t(-128)));
    put("Byte", encodeTyped(std::uint8_t(200)));
    put("Int16", encodeTyped(std::int16_t(-30000)));
    put("UInt16", encodeTyped(std::uint16_t(65535)));
    put("Int32", encodeTyped(std::int32_t(-2147483647 - 1)));
    put("UInt32", encodeTyped(std::uint32_t(4000000000u)));
    put("Int64", encodeTyped(std::int64_t(-9000000000000000000LL)));
    put("UInt64", encodeTyped(std::uint64_t(18000000000000000000ULL)));
    put("Float", encodeTyped(-1.75f));
    put("Double", encodeTyped(6.02214076e23));
    put("String", encodeTyped(makeString("Grüße, 世界")));
    put("String.null", encodeTyped(nullString()));
    put("DateTime", encodeTyped(std::int64_t(kBaseTicks)));
    put("Guid", encodeTyped(kGuid));
    put("ByteString", encodeTyped(makeByteString(kBytes)));
    put("ByteString.null", encodeTyped(nullByteString()));
    put("NodeId.twoByte", encodeTyped(numericNodeId(0, 85)));
    put("NodeId.fourByte", encodeTyped(numericNodeId(3, 2000)));
    put("NodeId.numeric", encodeTyped(numericNodeId(300, 123456789)));
    put("NodeId.string", encodeTyped(stringNodeId(2, "Boiler/Temperature")));
    {
        NodeId g{};
        g.namespace_index = 4;
        g.identifier_type = UAPLEX_ID_GUID;
        g.identifier.guid = kGuid;
        put("NodeId.guid", encodeTyped(g));
        NodeId b{};
        b.namespace_index = 5;
        b.identifier_type = UAPLEX_ID_BYTESTRING;
        b.identifier.bytestring = makeByteString(kBytes);
        put("NodeId.byteString", encodeTyped(b));
    }
    {
        ExpandedNodeId x{};
        x.node_id = numericNodeId(0, 2253);
        x.mask = UAPLEX_EXPANDEDNODEID_NAMESPACEURI | UAPLEX_EXPANDEDNODEID_SERVERINDEX;
        x.namespace_uri = makeString("urn:uaplex:test");
        x.server_index = 2;
        put("ExpandedNodeId", encodeTyped(x));
    }
    put("StatusCode", encodeTyped(std::uint32_t(kBadNodeIdUnknown)));
    put("QualifiedName", encodeTyped(QualifiedName{7, makeString("Speed")}));
    put("LocalizedText", encodeTyped(makeLocalizedText("de-DE", "Drehzahl")));
    {
        LocalizedText t{};
        t.mask = UAPLEX_LOCALIZEDTEXT_TEXT;
        t.text = makeString("text only");
        put("LocalizedText.textOnly", encodeTyped(t));
    }
    {
        DataValue d{};
        d.mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_STATUS |
                 UAPLEX_DATAVALUE_SOURCE_TIMESTAMP | UAPLEX_DATAVALUE_SERVER_TIMESTAMP |
                 UAPLEX_DATAVALUE_SOURCE_PICOSECONDS | UAPLEX_DATAVALUE_SERVER_PICOSECONDS;
        d.value = variantDouble(21.5);
        d.status = kUncertainInitialValue;
        d.source_timestamp = kBaseTicks;
        d.server_timestamp = kBaseTicks + 10000;
        d.source_picoseconds = 100;
        d.server_picoseconds = 200;
        put("DataValue", encodeTyped(d));
    }
    {
        static std::int32_t dims[] = {2, 3};
        static double m[] = {1, 2, 3, 4, 5, 6};
        Variant v = variantArray(BuiltinType::Double, 6, m);
        v.encoding |= UAPLEX_VARIANT_ARRAY_DIMENSIONS;
        v.dimensions_length = 2;
        v.dimensions = dims;
        put("Variant.matrix", encodeTyped(v));
        static String names[] = {makeString("a"), nullString(), makeString("ccc")};
        put("Variant.stringArray", encodeTyped(variantArray(BuiltinType::String, 3, names)));
        put("Variant.uint32", encodeTyped(variantUInt32(4294967295u)));
        Variant nested = makeVariant(BuiltinType::Variant);
        nested.value.pointer = arenaCopy(arena, variantString("inner"));
        put("Variant.nested", encodeTyped(nested));
        static LocalizedText texts[] = {makeLocalizedText("en", "one"),
                                        makeLocalizedText("", "two")};
        put("Variant.localizedTextArray",
            encodeTyped(variantArray(BuiltinType::LocalizedText, 2, texts)));
    }
    {
        DiagnosticInfo inner{};
        inner.mask = UAPLEX_DIAGNOSTICINFO_LOCALE | UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE;
        inner.locale = 4;
        inner.inner_status_code = kBadNodeIdUnknown;
        DiagnosticInfo outer{};
        outer.mask = UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID | UAPLEX_DIAGNOSTICINFO_NAMESPACE_URI |
                     UAPLEX_DIAGNOSTICINFO_LOCALIZED_TEXT | UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO |
                     UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO;
        outer.symbolic_id = 1;
        outer.namespace_uri = 2;
        outer.localized_text = 3;
        outer.additional_info = makeString("outer");
        outer.inner_diagnostic_info = &inner;
        put("DiagnosticInfo", encodeTyped(outer));
    }
    {
        // An ExtensionObject whose type we do not decode: raw body bytes.
        ExtensionObject x{};
        x.type_id = numericNodeId(3, 4711);
        x.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        x.body = makeByteString(kBytes);
        put("ExtensionObject.opaque", encodeTyped(x));
        // A known type: EUInformation.
        EUInformation eu{};
        eu.namespaceUri = makeString("http://www.opcfoundation.org/UA/units/un/cefact");
        eu.unitId = 4408652;
        eu.displayName = makeLocalizedText("", "°C");
        eu.description = makeLocalizedText("en", "degree Celsius");
        ExtensionObject k{};
        k.type_id = numericNodeId(0, enc::dataTypeOf<EUInformation>()->binaryEncodingId);
        k.encoding = UAPLEX_EXTENSIONOBJECT_BINARY;
        k.data_type = enc::dataTypeOf<EUInformation>();
        k.object = &eu;
        put("ExtensionObject.euInformation", encodeTyped(k));
    }
    return count;
}

int writeMessages(const fs::path& dir) {
    int count = 0;
    auto put = [&](const char* name, std::vector<std::uint8_t> bytes) {
        writeFile(dir / (std::string(name) + ".bin"), bytes);
        ++count;
    };
    RequestHeader header{};
    header.authenticationToken = stringNodeId(0, "session-token");
    header.timestamp = kBaseTicks;
    header.requestHandle = 42;
    header.returnDiagnostics = 0x3FF;
    header.auditEntryId = makeString("audit-1");
    header.timeoutHint = 10000;

    ReadValueId ids[3]{};
    ids[0].nodeId = numericNodeId(0, 2258);
    ids[0].attributeId = 13;
    ids[1].nodeId = stringNodeId(2, "Boiler/Pressure");
    ids[1].attributeId = 13;
    ids[1].indexRange = makeString("0:3");
    ids[2].nodeId = numericNodeId(1, 70000);
    ids[2].attributeId = 4;
    ids[2].dataEncoding = QualifiedName{0, makeString("Default Binary")};
    for (auto& id : ids) {
        if (id.indexRange.data == nullptr) id.indexRange = nullString();
        if (id.dataEncoding.name.data == nullptr) id.dataEncoding.name = nullString();
    }
    ReadRequest read{};
    read.requestHeader = header;
    read.maxAge = 500;
    read.timestampsToReturn = TimestampsToReturn::Both;
    read.nodesToRead = Array<ReadValueId>{3, ids};
    put("ReadRequest", encodeTypedMessage(read));

    DataValue results[2]{};
    results[0].mask = UAPLEX_DATAVALUE_VALUE | UAPLEX_DATAVALUE_SOURCE_TIMESTAMP;
    results[0].value = variantInt32(-17);
    results[0].source_timestamp = kBaseTicks;
    results[1].mask = UAPLEX_DATAVALUE_STATUS;
    results[1].status = kBadNodeIdUnknown;
    ReadResponse response{};
    response.responseHeader.timestamp = kBaseTicks + 20000;
    response.responseHeader.requestHandle = 42;
    response.responseHeader.serviceResult = 0;
    response.responseHeader.stringTable = Array<String>{-1, nullptr};
    response.results = Array<DataValue>{2, results};
    response.diagnosticInfos = Array<DiagnosticInfo>{-1, nullptr};
    put("ReadResponse", encodeTypedMessage(response));

    WriteValue writes[1]{};
    writes[0].nodeId = stringNodeId(2, "Valve/Setpoint");
    writes[0].attributeId = 13;
    writes[0].indexRange = nullString();
    writes[0].value.mask = UAPLEX_DATAVALUE_VALUE;
    writes[0].value.value = variantDouble(3.5);
    WriteRequest write{};
    write.requestHeader = header;
    write.nodesToWrite = Array<WriteValue>{1, writes};
    put("WriteRequest", encodeTypedMessage(write));
    return count;
}

template <class T>
std::vector<std::uint8_t> encodeCustom(const T& value) {
    using enc::encode;
    enc::ByteBuffer buffer;
    enc::BinaryWriter writer(buffer);
    encode(writer, value);  // the generated codec, found by argument-dependent lookup
    if (!writer.ok()) throw std::runtime_error("encoding failed");
    return buffer.toVector();
}

int writeCustom(const fs::path& dir) {
    using namespace uaplex::interoptypes;
    int count = 0;
    auto put = [&](const char* name, std::vector<std::uint8_t> bytes) {
        writeFile(dir / (std::string(name) + ".bin"), bytes);
        ++count;
    };
    InteropOptional limitLabel{};
    limitLabel.encodingMask = 0x3;
    limitLabel.id = 11;
    limitLabel.limit = 0.125;
    limitLabel.label = makeString("abc");
    limitLabel.mode = InteropMode::Auto;
    put("InteropOptional.limitLabel", encodeCustom(limitLabel));

    static std::int16_t samples[] = {1, -2, 3};
    InteropOptional samplesNode{};
    samplesNode.encodingMask = 0xC;
    samplesNode.id = 12;
    samplesNode.samples = Array<std::int16_t>{3, samples};
    samplesNode.node = stringNodeId(2, "Pump");
    samplesNode.mode = InteropMode::Manual;
    put("InteropOptional.samplesNode", encodeCustom(samplesNode));

    // Values of fields outside the mask must not be written.
    InteropOptional none{};
    none.encodingMask = 0;
    none.id = 13;
    none.limit = 99;
    none.label = makeString("hidden");
    put("InteropOptional.none", encodeCustom(none));

    InteropUnion name{};
    name.switchField = 2;
    name.count = 5;  // not the selected member: not written
    name.name = makeString("ab");
    put("InteropUnion.name", encodeCustom(name));

    static LocalizedText texts[] = {makeLocalizedText("en", "one")};
    InteropUnion textsUnion{};
    textsUnion.switchField = 3;
    textsUnion.texts = Array<LocalizedText>{1, texts};
    put("InteropUnion.texts", encodeCustom(textsUnion));

    InteropUnion nested{};
    nested.switchField = 4;
    nested.nested.encodingMask = 0x1;
    nested.nested.id = 14;
    nested.nested.limit = 2.0;
    nested.nested.mode = InteropMode::Manual;
    put("InteropUnion.nested", encodeCustom(nested));

    InteropUnion empty{};
    put("InteropUnion.none", encodeCustom(empty));

    static InteropOptional items[2] = {limitLabel, samplesNode};
    InteropContainer container{};
    container.choice.switchField = 1;
    container.choice.count = 77;
    container.items = Array<InteropOptional>{2, items};
    put("InteropContainer", encodeCustom(container));
    return count;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s <outDir>\n", argv[0]);
        return 2;
    }
    try {
        fs::path out = argv[1];
        fs::remove_all(out);
        int structs = writeStructs(out / "struct");
        int builtins = writeBuiltins(out / "builtin");
        int messages = writeMessages(out / "message");
        int custom = writeCustom(out / "custom");

        // Deliberate mismatches: the checker must reject each of these.
        {
            const enc::DataType* type = enc::findDataType("ReadRequest");
            enc::Arena arena;
            void* object = arena.allocate(type->size, type->alignment);
            fillStruct(arena, *type, object, 0);
            *reinterpret_cast<double*>(static_cast<std::uint8_t*>(object) +
                                       type->field("maxAge")->offset) += 1;
            writeFile(out / "mismatch/struct/ReadRequest.bin", encodeValue(*type, object));
            writeFile(out / "mismatch/builtin/Int32.bin", encodeTyped(std::int32_t(-2147483647)));
            // An optional field that should be absent is present.
            uaplex::interoptypes::InteropOptional none{};
            none.encodingMask = 0x1;
            none.id = 13;
            none.limit = 99;
            writeFile(out / "mismatch/custom/InteropOptional.none.bin", encodeCustom(none));
            writeFile(out / "mismatch/builtin/String.bin", encodeTyped(makeString("Grüße, Welt")));
        }
        std::printf(
            "interop_reverse_writer: %d structures, %d built-in values, %d messages, %d "
            "optional-field/union values\n",
            structs, builtins, messages, custom);
        return structs > 0 ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "interop_reverse_writer: %s\n", e.what());
        return 1;
    }
}
