// SPDX-License-Identifier: Apache-2.0
/* The OPC UA built-in types (Part 6 5.1/5.2) as plain C11 structs.
 *
 * These are the in-memory form the kernel decodes into and the plugin ABI passes by
 * pointer. Every struct is standard-layout and trivially copyable: strings and byte
 * strings are views (length + pointer) that usually borrow from the received message
 * buffer, arrays are (length + pointer) into the per-request arena. A length of -1
 * means "null" as on the wire. Nobody frees anything reachable from these structs: the
 * owner of the arena (or of the buffer) releases everything at once.
 */
#ifndef UAPLEX_TYPES_H
#define UAPLEX_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Built-in type ids (Part 6 Table 1); also the low six bits of a Variant's encoding byte, and
 * the numeric NodeId (ns=0;i=id) of the built-in type's DataType node. */
enum uaplex_builtin_type {
    UAPLEX_TYPE_NULL = 0,
    UAPLEX_TYPE_BOOLEAN = 1,
    UAPLEX_TYPE_SBYTE = 2,
    UAPLEX_TYPE_BYTE = 3,
    UAPLEX_TYPE_INT16 = 4,
    UAPLEX_TYPE_UINT16 = 5,
    UAPLEX_TYPE_INT32 = 6,
    UAPLEX_TYPE_UINT32 = 7,
    UAPLEX_TYPE_INT64 = 8,
    UAPLEX_TYPE_UINT64 = 9,
    UAPLEX_TYPE_FLOAT = 10,
    UAPLEX_TYPE_DOUBLE = 11,
    UAPLEX_TYPE_STRING = 12,
    UAPLEX_TYPE_DATETIME = 13,
    UAPLEX_TYPE_GUID = 14,
    UAPLEX_TYPE_BYTESTRING = 15,
    UAPLEX_TYPE_XMLELEMENT = 16,
    UAPLEX_TYPE_NODEID = 17,
    UAPLEX_TYPE_EXPANDEDNODEID = 18,
    UAPLEX_TYPE_STATUSCODE = 19,
    UAPLEX_TYPE_QUALIFIEDNAME = 20,
    UAPLEX_TYPE_LOCALIZEDTEXT = 21,
    UAPLEX_TYPE_EXTENSIONOBJECT = 22,
    UAPLEX_TYPE_DATAVALUE = 23,
    UAPLEX_TYPE_VARIANT = 24,
    UAPLEX_TYPE_DIAGNOSTICINFO = 25
};

/* The highest built-in type id: larger ids are not built-in types.
 * (since 1.6, header only) */
#define UAPLEX_TYPE_MAX UAPLEX_TYPE_DIAGNOSTICINFO

/* The built-in types as one table, a row each: X(id, Name, c_type). Name is the type's name in
 * Part 6 (and in NodeSet XML); c_type is the C representation of one value, which is also the
 * element of an array of the type. Everything the project derives per built-in type (the C++
 * enumeration, element sizes, names) expands this table, so it cannot disagree with the
 * enumeration above. (since 1.6, header only) */
#define UAPLEX_BUILTIN_TYPES(X)                                             \
    X(UAPLEX_TYPE_BOOLEAN, Boolean, bool)                                   \
    X(UAPLEX_TYPE_SBYTE, SByte, int8_t)                                     \
    X(UAPLEX_TYPE_BYTE, Byte, uint8_t)                                      \
    X(UAPLEX_TYPE_INT16, Int16, int16_t)                                    \
    X(UAPLEX_TYPE_UINT16, UInt16, uint16_t)                                 \
    X(UAPLEX_TYPE_INT32, Int32, int32_t)                                    \
    X(UAPLEX_TYPE_UINT32, UInt32, uint32_t)                                 \
    X(UAPLEX_TYPE_INT64, Int64, int64_t)                                    \
    X(UAPLEX_TYPE_UINT64, UInt64, uint64_t)                                 \
    X(UAPLEX_TYPE_FLOAT, Float, float)                                      \
    X(UAPLEX_TYPE_DOUBLE, Double, double)                                   \
    X(UAPLEX_TYPE_STRING, String, uaplex_string)                            \
    X(UAPLEX_TYPE_DATETIME, DateTime, uaplex_datetime)                      \
    X(UAPLEX_TYPE_GUID, Guid, uaplex_guid)                                  \
    X(UAPLEX_TYPE_BYTESTRING, ByteString, uaplex_bytestring)                \
    X(UAPLEX_TYPE_XMLELEMENT, XmlElement, uaplex_xmlelement)                \
    X(UAPLEX_TYPE_NODEID, NodeId, uaplex_nodeid)                            \
    X(UAPLEX_TYPE_EXPANDEDNODEID, ExpandedNodeId, uaplex_expandednodeid)    \
    X(UAPLEX_TYPE_STATUSCODE, StatusCode, uaplex_statuscode)                \
    X(UAPLEX_TYPE_QUALIFIEDNAME, QualifiedName, uaplex_qualifiedname)       \
    X(UAPLEX_TYPE_LOCALIZEDTEXT, LocalizedText, uaplex_localizedtext)       \
    X(UAPLEX_TYPE_EXTENSIONOBJECT, ExtensionObject, uaplex_extensionobject) \
    X(UAPLEX_TYPE_DATAVALUE, DataValue, uaplex_datavalue)                   \
    X(UAPLEX_TYPE_VARIANT, Variant, uaplex_variant)                         \
    X(UAPLEX_TYPE_DIAGNOSTICINFO, DiagnosticInfo, uaplex_diagnosticinfo)

/* 100-nanosecond intervals since 1601-01-01 UTC (Part 6 5.2.2.5). */
typedef int64_t uaplex_datetime;

/* DateTime ticks in one second, and the DateTime of the Unix epoch (1970-01-01 00:00 UTC):
 * a DateTime is UAPLEX_DATETIME_UNIX_EPOCH + Unix seconds * UAPLEX_DATETIME_TICKS_PER_SECOND.
 * (since 1.6, header only) */
#define UAPLEX_DATETIME_TICKS_PER_SECOND INT64_C(10000000)
#define UAPLEX_DATETIME_UNIX_EPOCH INT64_C(116444736000000000)

/* A StatusCode value; same representation as uaplex_status in statuscodes.h. */
typedef uint32_t uaplex_statuscode;

/* UTF-8 text, not NUL-terminated. length -1: null string; 0: empty string. */
typedef struct uaplex_string {
    int32_t length;
    const char* data;
} uaplex_string;

/* Opaque bytes. length -1: null. */
typedef struct uaplex_bytestring {
    int32_t length;
    const uint8_t* data;
} uaplex_bytestring;

/* XML text; encoded exactly like a String. */
typedef uaplex_string uaplex_xmlelement;

typedef struct uaplex_guid {
    uint32_t data1;
    uint16_t data2;
    uint16_t data3;
    uint8_t data4[8];
} uaplex_guid;

/* A generic array: element count (-1 null) and elements. Typed views have the same layout. */
typedef struct uaplex_array {
    int32_t length;
    void* data;
} uaplex_array;

enum uaplex_identifier_type {
    UAPLEX_ID_NUMERIC = 0,
    UAPLEX_ID_STRING = 1,
    UAPLEX_ID_GUID = 2,
    UAPLEX_ID_BYTESTRING = 3
};

/* A NodeId. The wire form (two-byte, four-byte, numeric, ...) is not kept: the encoder always
 * picks the most compact form, as Part 6 5.2.2.9 requires. */
typedef struct uaplex_nodeid {
    uint16_t namespace_index;
    uint8_t identifier_type; /* enum uaplex_identifier_type */
    uint8_t reserved;
    union {
        uint32_t numeric;
        uaplex_string string;
        uaplex_guid guid;
        uaplex_bytestring bytestring;
    } identifier;
} uaplex_nodeid;

#define UAPLEX_EXPANDEDNODEID_NAMESPACEURI 0x80u
#define UAPLEX_EXPANDEDNODEID_SERVERINDEX 0x40u

/* An ExpandedNodeId; mask holds the two flags above as on the wire, so a decoded value
 * re-encodes to the same bytes. */
typedef struct uaplex_expandednodeid {
    uaplex_nodeid node_id;
    uint8_t mask;
    uint32_t server_index;
    uaplex_string namespace_uri;
} uaplex_expandednodeid;

typedef struct uaplex_qualifiedname {
    uint16_t namespace_index;
    uaplex_string name;
} uaplex_qualifiedname;

#define UAPLEX_LOCALIZEDTEXT_LOCALE 0x01u
#define UAPLEX_LOCALIZEDTEXT_TEXT 0x02u

typedef struct uaplex_localizedtext {
    uint8_t mask;
    uaplex_string locale;
    uaplex_string text;
} uaplex_localizedtext;

#define UAPLEX_VARIANT_TYPE_MASK 0x3Fu
#define UAPLEX_VARIANT_ARRAY_DIMENSIONS 0x40u
#define UAPLEX_VARIANT_ARRAY 0x80u

/* A Variant. `encoding` is the wire byte: built-in type id | ARRAY | ARRAY_DIMENSIONS.
 *
 * Scalars of Boolean..Double, String, DateTime, Guid, ByteString, XmlElement and StatusCode
 * are held inline in `value`; scalars of the larger types (NodeId, ExpandedNodeId,
 * QualifiedName, LocalizedText, ExtensionObject, DataValue, Variant, DiagnosticInfo) are
 * pointed to by value.pointer. Arrays: value.pointer points to array_length elements of the
 * type's C struct (or C scalar); array_length -1 is a null array. Matrices additionally
 * carry dimensions (dimensions_length entries whose product is array_length). */
typedef struct uaplex_variant {
    uint8_t encoding;
    int32_t array_length;
    int32_t dimensions_length;
    const int32_t* dimensions;
    union {
        bool boolean;
        int8_t sbyte;
        uint8_t byte;
        int16_t int16;
        uint16_t uint16;
        int32_t int32;
        uint32_t uint32;
        int64_t int64;
        uint64_t uint64;
        float float_;
        double double_;
        uaplex_string string;
        uaplex_datetime datetime;
        uaplex_guid guid;
        uaplex_bytestring bytestring;
        uaplex_xmlelement xmlelement;
        uaplex_statuscode statuscode;
        void* pointer;
    } value;
} uaplex_variant;

#define UAPLEX_DATAVALUE_VALUE 0x01u
#define UAPLEX_DATAVALUE_STATUS 0x02u
#define UAPLEX_DATAVALUE_SOURCE_TIMESTAMP 0x04u
#define UAPLEX_DATAVALUE_SERVER_TIMESTAMP 0x08u
#define UAPLEX_DATAVALUE_SOURCE_PICOSECONDS 0x10u
#define UAPLEX_DATAVALUE_SERVER_PICOSECONDS 0x20u

/* A DataValue; `mask` says which fields are present (and are encoded). */
typedef struct uaplex_datavalue {
    uint8_t mask;
    uint16_t source_picoseconds;
    uint16_t server_picoseconds;
    uaplex_statuscode status;
    uaplex_datetime source_timestamp;
    uaplex_datetime server_timestamp;
    uaplex_variant value;
} uaplex_datavalue;

#define UAPLEX_EXTENSIONOBJECT_NOBODY 0x00u
#define UAPLEX_EXTENSIONOBJECT_BINARY 0x01u
#define UAPLEX_EXTENSIONOBJECT_XML 0x02u

/* An ExtensionObject. When the kernel knows type_id (a binary-encoding NodeId), the body is
 * decoded: data_type points to the kernel's type descriptor and object to the decoded
 * structure. Otherwise data_type and object are NULL and body holds the raw bytes (also for
 * XML bodies). The encoder writes `object` when set, else `body`. */
typedef struct uaplex_extensionobject {
    uaplex_nodeid type_id;
    uint8_t encoding;
    const void* data_type;
    void* object;
    uaplex_bytestring body;
} uaplex_extensionobject;

#define UAPLEX_DIAGNOSTICINFO_SYMBOLIC_ID 0x01u
#define UAPLEX_DIAGNOSTICINFO_NAMESPACE_URI 0x02u
#define UAPLEX_DIAGNOSTICINFO_LOCALIZED_TEXT 0x04u
#define UAPLEX_DIAGNOSTICINFO_LOCALE 0x08u
#define UAPLEX_DIAGNOSTICINFO_ADDITIONAL_INFO 0x10u
#define UAPLEX_DIAGNOSTICINFO_INNER_STATUS_CODE 0x20u
#define UAPLEX_DIAGNOSTICINFO_INNER_DIAGNOSTIC_INFO 0x40u

typedef struct uaplex_diagnosticinfo {
    uint8_t mask;
    int32_t symbolic_id;
    int32_t namespace_uri;
    int32_t locale;
    int32_t localized_text;
    uaplex_string additional_info;
    uaplex_statuscode inner_status_code;
    struct uaplex_diagnosticinfo* inner_diagnostic_info;
} uaplex_diagnosticinfo;

/* Whether a Variant scalar of built-in type `type` is held through value.pointer (the larger
 * types, see uaplex_variant) rather than inline in `value`. (since 1.9, header only) */
static inline int uaplex_builtin_boxed(uint32_t type) {
    switch (type) {
        case UAPLEX_TYPE_NODEID:
        case UAPLEX_TYPE_EXPANDEDNODEID:
        case UAPLEX_TYPE_QUALIFIEDNAME:
        case UAPLEX_TYPE_LOCALIZEDTEXT:
        case UAPLEX_TYPE_EXTENSIONOBJECT:
        case UAPLEX_TYPE_DATAVALUE:
        case UAPLEX_TYPE_VARIANT:
        case UAPLEX_TYPE_DIAGNOSTICINFO:
            return 1;
        default:
            return 0;
    }
}

/* Bytes of one value of built-in type `type` in its C representation: the stride of an array
 * of the type (uaplex_variant.value.pointer). 0 for Null and for ids that are not built-in
 * types. (since 1.6, header only) */
static inline size_t uaplex_builtin_size(uint32_t type) {
    switch (type) {
#define UAPLEX_BUILTIN_SIZE_CASE_(id, name, c_type) \
    case id:                                        \
        return sizeof(c_type);
        UAPLEX_BUILTIN_TYPES(UAPLEX_BUILTIN_SIZE_CASE_)
#undef UAPLEX_BUILTIN_SIZE_CASE_
        default:
            return 0;
    }
}

/* The Part 6 name of built-in type `type` ("Boolean" ... "DiagnosticInfo"; "Null" for 0), or
 * NULL for ids that are not built-in types. (since 1.6, header only) */
static inline const char* uaplex_builtin_name(uint32_t type) {
    switch (type) {
#define UAPLEX_BUILTIN_NAME_CASE_(id, name, c_type) \
    case id:                                        \
        return #name;
        UAPLEX_BUILTIN_TYPES(UAPLEX_BUILTIN_NAME_CASE_)
#undef UAPLEX_BUILTIN_NAME_CASE_
        case UAPLEX_TYPE_NULL:
            return "Null";
        default:
            return NULL;
    }
}

#ifdef __cplusplus
}
#endif

#endif /* UAPLEX_TYPES_H */
