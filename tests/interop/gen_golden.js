#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
"use strict";
// Writes golden vectors encoded by node-opcua: `node gen_golden.js <out.json> [corpusDir]`.
//
// Each vector is { name, kind, type, hex, expect } where kind is "builtin" (hex is one value
// of built-in type `type`), "struct" (hex is the body of structure `type`, with
// `encodingId` its DefaultBinary encoding NodeId and `fields` a few key field values) or
// "message" (hex is the encoding NodeId followed by the body, as in a MSG chunk body).
// With corpusDir (tests/fuzz/corpus), also writes the vectors as fuzz seeds: structures and
// messages as encoding NodeId + body into corpusDir/message/, built-in values prefixed with
// their type selector byte (type id - 1) into corpusDir/builtin/.

const fs = require("fs");
const path = require("path");
const { BinaryStream } = require("node-opcua-binary-stream");
const basic = require("node-opcua-basic-types");
const { encodeVariant } = require("node-opcua-variant");
const { encodeDataValue } = require("node-opcua-data-value");
const { encodeExtensionObject, OpaqueStructure } = require("node-opcua-extension-object");
const {
    encodeLocalizedText,
    encodeQualifiedName,
    encodeDiagnosticInfo,
} = require("node-opcua-data-model");
const { StatusCodes } = require("node-opcua-status-code");
const types = require("node-opcua-types");
const V = require("./values");
const { loadCustomTypes } = require("./custom_types");
const { Prng, int64Parts, describe, DataType, VariantArrayType, Variant, DataValue } = V;
const { LocalizedText, QualifiedName, DiagnosticInfo, NodeId, ExpandedNodeId, NodeIdType } = V;

const SCHEMA = path.join(__dirname, "..", "..", "schema", "Opc.Ua.Types.bsd");

function encodeWith(fn, value) {
    const stream = new BinaryStream(1 << 20);
    fn(value, stream);
    return Buffer.from(stream.buffer.subarray(0, stream.length));
}

const ENCODERS = {
    Boolean: basic.encodeBoolean,
    SByte: basic.encodeSByte,
    Byte: basic.encodeByte,
    Int16: basic.encodeInt16,
    UInt16: basic.encodeUInt16,
    Int32: basic.encodeInt32,
    UInt32: basic.encodeUInt32,
    Int64: basic.encodeInt64,
    UInt64: basic.encodeUInt64,
    Float: basic.encodeFloat,
    Double: basic.encodeDouble,
    String: basic.encodeString,
    DateTime: basic.encodeDateTime,
    Guid: basic.encodeGuid,
    ByteString: basic.encodeByteString,
    XmlElement: basic.encodeString,
    NodeId: basic.encodeNodeId,
    ExpandedNodeId: basic.encodeExpandedNodeId,
    StatusCode: basic.encodeStatusCode,
    QualifiedName: encodeQualifiedName,
    LocalizedText: encodeLocalizedText,
    ExtensionObject: encodeExtensionObject,
    DataValue: encodeDataValue,
    Variant: encodeVariant,
    DiagnosticInfo: encodeDiagnosticInfo,
};

const GUID = "72962B91-FA75-4AE6-8D28-B404DC7DAF63";

function nodeIdForms() {
    return {
        twoByte: new NodeId(NodeIdType.NUMERIC, 72, 0),
        fourByte: new NodeId(NodeIdType.NUMERIC, 1025, 5),
        numeric: new NodeId(NodeIdType.NUMERIC, 4294967295, 1),
        numericWideNs: new NodeId(NodeIdType.NUMERIC, 7, 300),
        string: new NodeId(NodeIdType.STRING, "Demo.Static.Scalar.Double", 2),
        stringUtf8: new NodeId(NodeIdType.STRING, "Température→°C", 3),
        stringEmpty: new NodeId(NodeIdType.STRING, "", 4),
        guid: new NodeId(NodeIdType.GUID, GUID, 6),
        byteString: new NodeId(NodeIdType.BYTESTRING, Buffer.from("deadbeef00ff", "hex"), 7),
        null: new NodeId(NodeIdType.NUMERIC, 0, 0),
    };
}

function expandedForms() {
    return {
        plain: new ExpandedNodeId(NodeIdType.NUMERIC, 2253, 0),
        uri: new ExpandedNodeId(NodeIdType.STRING, "Pump1", 0, "urn:uaplex:test:ns"),
        serverIndex: new ExpandedNodeId(NodeIdType.NUMERIC, 70000, 0, null, 3),
        uriAndServer: new ExpandedNodeId(NodeIdType.GUID, GUID, 0, "http://example.org/UA/", 65535),
        byteStringServer: new ExpandedNodeId(
            NodeIdType.BYTESTRING,
            Buffer.from([1, 2, 3]),
            9,
            null,
            1,
        ),
    };
}

function date(ms) {
    return new Date(ms);
}

// Sample scalars for each Variant-capable built-in type (used for Variant scalars, arrays
// and matrices). The first item of each list is used when a single value is wanted.
function samples() {
    const n = nodeIdForms();
    const x = expandedForms();
    return {
        Boolean: [true, false, true],
        SByte: [-128, 127, -1],
        Byte: [0, 255, 42],
        Int16: [-32768, 32767, -2],
        UInt16: [0, 65535, 4840],
        Int32: [-2147483648, 2147483647, -123456],
        UInt32: [0, 4294967295, 3000000000],
        Int64: [
            int64Parts(-9223372036854775808n),
            int64Parts(9223372036854775807n),
            int64Parts(-2n),
        ],
        UInt64: [int64Parts(18446744073709551615n), int64Parts(0n), int64Parts(1234567890123n)],
        Float: [1.5, -0.25, 3.4028234663852886e38],
        Double: [Math.PI, -1e-300, 6.02214076e23],
        String: ["Hello OPC UA", "", "日本語 ✓"],
        DateTime: [
            date(Date.UTC(2024, 1, 29, 12, 34, 56, 789)),
            date(Date.UTC(1601, 0, 1, 0, 0, 0, 1)),
            date(Date.UTC(9999, 11, 31, 23, 59, 59, 0)),
        ],
        Guid: [
            GUID,
            "00000000-0000-0000-0000-000000000000",
            "FFFFFFFF-0001-0002-0304-05060708090A",
        ],
        ByteString: [Buffer.from("0001feff", "hex"), Buffer.alloc(0), Buffer.from("uaplex")],
        XmlElement: ["<a>1</a>", "<b/>", ""],
        NodeId: [n.string, n.twoByte, n.guid, n.byteString, n.numeric],
        ExpandedNodeId: [x.uriAndServer, x.plain, x.serverIndex],
        StatusCode: [
            StatusCodes.BadNodeIdUnknown,
            StatusCodes.Good,
            StatusCodes.UncertainInitialValue,
        ],
        QualifiedName: [
            new QualifiedName({ namespaceIndex: 2, name: "Temperature" }),
            new QualifiedName({ namespaceIndex: 0, name: "" }),
        ],
        LocalizedText: [
            new LocalizedText({ locale: "en-US", text: "Pump" }),
            new LocalizedText({ text: "only text" }),
            new LocalizedText({ locale: "de" }),
        ],
        ExtensionObject: [
            new types.Range({ low: -1.5, high: 99 }),
            new types.EUInformation({
                namespaceUri: "http://www.opcfoundation.org/UA/units/un/cefact",
                unitId: 4408652,
                displayName: { text: "°C" },
                description: { locale: "en", text: "degree Celsius" },
            }),
        ],
        DataValue: [
            new DataValue({
                value: { dataType: DataType.Double, value: 2.5 },
                statusCode: StatusCodes.Good,
                sourceTimestamp: date(Date.UTC(2024, 0, 1)),
            }),
            new DataValue({ statusCode: StatusCodes.BadWaitingForInitialData }),
        ],
        Variant: [
            new Variant({ dataType: DataType.UInt16, value: 7 }),
            new Variant({
                dataType: DataType.String,
                arrayType: VariantArrayType.Array,
                value: ["a", "b"],
            }),
        ],
        DiagnosticInfo: [
            new DiagnosticInfo({ symbolicId: 3, additionalInfo: "detail" }),
            new DiagnosticInfo({ localizedText: 1 }),
        ],
    };
}

const vectors = [];
// `reencoded`: our re-encoding when it differs from node-opcua's bytes (see its uses).
function addBuiltin(name, type, value, reencoded) {
    const bytes = encodeWith(ENCODERS[type], value);
    const v = {
        name,
        kind: "builtin",
        type,
        hex: bytes.toString("hex"),
        expect: describe(type, value),
    };
    if (reencoded !== undefined) v.reencoded = reencoded;
    vectors.push(v);
}

function builtinVectors() {
    const s = samples();
    for (const type of Object.keys(ENCODERS)) {
        (s[type] || []).forEach((v, i) => addBuiltin(`${type}#${i}`, type, v));
    }
    // Edge values beyond the samples.
    addBuiltin("Float#nan", "Float", NaN);
    addBuiltin("Float#-inf", "Float", -Infinity);
    addBuiltin("Double#-0", "Double", -0);
    addBuiltin("Double#inf", "Double", Infinity);
    addBuiltin("String#null", "String", null);
    addBuiltin("ByteString#null", "ByteString", null);
    addBuiltin("DateTime#epoch1970", "DateTime", date(0));
    for (const [form, id] of Object.entries(nodeIdForms()))
        addBuiltin(`NodeId#${form}`, "NodeId", id);
    for (const [form, id] of Object.entries(expandedForms()))
        addBuiltin(`ExpandedNodeId#${form}`, "ExpandedNodeId", id);
    // With a namespace URI or server index, node-opcua never uses the two- and four-byte
    // NodeId forms; we always write the most compact form. Both are valid (Part 6 5.2.2.10),
    // so for these the expected re-encoding is spelled out here.
    addBuiltin(
        "ExpandedNodeId#serverIndex.nodeOpcuaForm",
        "ExpandedNodeId",
        new ExpandedNodeId(NodeIdType.NUMERIC, 85, 0, null, 3),
        "40" + "55" + "03000000",
    );
    addBuiltin(
        "ExpandedNodeId#uri.nodeOpcuaForm",
        "ExpandedNodeId",
        new ExpandedNodeId(NodeIdType.NUMERIC, 2000, 3, "urn:x", 0),
        "81" + "03" + "d007" + "05000000" + Buffer.from("urn:x").toString("hex"),
    );
    addBuiltin(
        "QualifiedName#utf8",
        "QualifiedName",
        new QualifiedName({ namespaceIndex: 65535, name: "Ölstand" }),
    );

    // LocalizedText: every combination of its two mask bits.
    addBuiltin("LocalizedText#none", "LocalizedText", new LocalizedText({}));
    addBuiltin(
        "LocalizedText#both",
        "LocalizedText",
        new LocalizedText({ locale: "fr-FR", text: "Pompe à chaleur" }),
    );

    // DataValue: every mask bit alone, and all of them together.
    const ts1 = date(Date.UTC(2023, 5, 15, 8, 0, 0, 123));
    const ts2 = date(Date.UTC(2023, 5, 15, 8, 0, 1, 456));
    const dvs = {
        empty: {},
        value: { value: { dataType: DataType.Int32, value: -5 } },
        status: { statusCode: StatusCodes.UncertainLastUsableValue },
        sourceTimestamp: { sourceTimestamp: ts1 },
        sourcePicoseconds: { sourceTimestamp: ts1, sourcePicoseconds: 999 },
        serverTimestamp: { serverTimestamp: ts2 },
        serverPicoseconds: { serverTimestamp: ts2, serverPicoseconds: 12 },
        all: {
            value: { dataType: DataType.String, value: "x" },
            statusCode: StatusCodes.BadOutOfRange,
            sourceTimestamp: ts1,
            sourcePicoseconds: 5,
            serverTimestamp: ts2,
            serverPicoseconds: 7,
        },
        arrayValue: {
            value: {
                dataType: DataType.Double,
                arrayType: VariantArrayType.Array,
                value: new Float64Array([1, 2, 3]),
            },
            serverTimestamp: ts2,
        },
    };
    for (const [k, o] of Object.entries(dvs))
        addBuiltin(`DataValue#${k}`, "DataValue", new DataValue(o));

    // Variant: null, each type as scalar, as array (also empty) and as 2x2 / 1x3 matrices.
    addBuiltin("Variant#null", "Variant", new Variant({ dataType: DataType.Null }));
    for (const type of Object.keys(s)) {
        if (type === "DiagnosticInfo") continue; // handled below: not allowed as Variant value in node-opcua arrays
        const dt = DataType[type];
        addBuiltin(
            `Variant#scalar.${type}`,
            "Variant",
            new Variant({ dataType: dt, arrayType: VariantArrayType.Scalar, value: s[type][0] }),
        );
        addBuiltin(
            `Variant#array.${type}`,
            "Variant",
            new Variant({
                dataType: dt,
                arrayType: VariantArrayType.Array,
                value: s[type].slice(),
            }),
        );
        const m = [s[type][0], s[type][1], s[type][1], s[type][0]];
        addBuiltin(
            `Variant#matrix.${type}`,
            "Variant",
            new Variant({
                dataType: dt,
                arrayType: VariantArrayType.Matrix,
                dimensions: [2, 2],
                value: m,
            }),
        );
    }
    addBuiltin(
        "Variant#scalar.DiagnosticInfo",
        "Variant",
        new Variant({ dataType: DataType.DiagnosticInfo, value: s.DiagnosticInfo[0] }),
    );
    addBuiltin(
        "Variant#array.empty",
        "Variant",
        new Variant({
            dataType: DataType.Int32,
            arrayType: VariantArrayType.Array,
            value: new Int32Array(0),
        }),
    );
    addBuiltin(
        "Variant#matrix.3d",
        "Variant",
        new Variant({
            dataType: DataType.Byte,
            arrayType: VariantArrayType.Matrix,
            dimensions: [2, 3, 2],
            value: Buffer.from([...Array(12).keys()]),
        }),
    );
    addBuiltin(
        "Variant#matrix.1x3",
        "Variant",
        new Variant({
            dataType: DataType.Float,
            arrayType: VariantArrayType.Matrix,
            dimensions: [1, 3],
            value: new Float32Array([0.5, 1.5, 2.5]),
        }),
    );
    addBuiltin(
        "Variant#nested",
        "Variant",
        new Variant({
            dataType: DataType.Variant,
            arrayType: VariantArrayType.Array,
            value: [
                new Variant({
                    dataType: DataType.Variant,
                    arrayType: VariantArrayType.Array,
                    value: [new Variant({ dataType: DataType.Boolean, value: true })],
                }),
                new Variant({ dataType: DataType.Null }),
            ],
        }),
    );

    // ExtensionObject: no body, known bodies, and an unknown type kept as bytes.
    addBuiltin("ExtensionObject#null", "ExtensionObject", null);
    addBuiltin(
        "ExtensionObject#ReadValueId",
        "ExtensionObject",
        new types.ReadValueId({
            nodeId: nodeIdForms().string,
            attributeId: 13,
            indexRange: "1:2",
            dataEncoding: { name: "Default Binary" },
        }),
    );
    addBuiltin(
        "ExtensionObject#Argument",
        "ExtensionObject",
        new types.Argument({
            name: "speed",
            dataType: new NodeId(NodeIdType.NUMERIC, 11, 0),
            valueRank: 1,
            arrayDimensions: [3],
            description: { text: "m/s" },
        }),
    );
    const opaque = new OpaqueStructure(
        new NodeId(NodeIdType.NUMERIC, 5001, 4),
        Buffer.from("0102030405", "hex"),
    );
    addBuiltin("ExtensionObject#unknown", "ExtensionObject", opaque);
    addBuiltin(
        "Variant#scalar.ExtensionObject.unknown",
        "Variant",
        new Variant({ dataType: DataType.ExtensionObject, value: opaque }),
    );

    // DiagnosticInfo: each mask bit, and nested three deep.
    const dis = {
        empty: {},
        symbolicId: { symbolicId: 7 },
        namespaceUri: { namespaceURI: 1 },
        localizedText: { localizedText: 2 },
        locale: { locale: 3 },
        additionalInfo: { additionalInfo: "stack trace" },
        innerStatusCode: { innerStatusCode: StatusCodes.BadTimeout },
        all: {
            symbolicId: 1,
            namespaceURI: 2,
            locale: 3,
            localizedText: 4,
            additionalInfo: "all",
            innerStatusCode: StatusCodes.BadInternalError,
        },
    };
    for (const [k, o] of Object.entries(dis))
        addBuiltin(`DiagnosticInfo#${k}`, "DiagnosticInfo", new DiagnosticInfo(o));
    const nested = new DiagnosticInfo({
        symbolicId: 1,
        innerDiagnosticInfo: new DiagnosticInfo({
            additionalInfo: "level 2",
            innerStatusCode: StatusCodes.BadUnexpectedError,
            innerDiagnosticInfo: new DiagnosticInfo({ locale: 9 }),
        }),
    });
    addBuiltin("DiagnosticInfo#nested", "DiagnosticInfo", nested);
}

// ---------------------------------------------------------------------------------------
// Structures: every class node-opcua-types generates that the schema also defines, filled
// with non-default values chosen deterministically from the type and field names.

function fillBasic(type, rng, depth) {
    const s = samples();
    switch (type) {
        case "Boolean":
            return true;
        case "SByte":
            return -1 - rng.below(120);
        case "Byte":
            return 1 + rng.below(250);
        case "Int16":
            return -1 - rng.below(30000);
        case "UInt16":
            return 1 + rng.below(65000);
        case "Int32":
            return -1 - rng.below(2000000000);
        case "UInt32":
            return 1 + rng.below(4000000000);
        case "Int64":
            return int64Parts(-BigInt(1 + rng.below(1e9)) * 1000003n);
        case "UInt64":
            return int64Parts(BigInt(1 + rng.below(1e9)) * 4294967311n);
        case "Float":
            return Math.fround((1 + rng.below(100000)) / 64);
        case "Double":
            return (1 + rng.below(1000000)) / 1024;
        case "String":
            return `v${rng.below(1000)}-${["ascii", "ümlaut", "∑"][rng.below(3)]}`;
        case "NumericRange":
            return `${rng.below(5)}:${5 + rng.below(5)}`;
        case "DateTime":
            return date(Date.UTC(2020, 0, 1) + rng.below(1e9) * 1000 + rng.below(1000));
        case "Guid":
            return s.Guid[rng.below(3)];
        case "ByteString":
            return Buffer.from([1 + rng.below(255), rng.below(256), rng.below(256)]);
        case "XmlElement":
            return "<x/>";
        case "NodeId":
            return s.NodeId[rng.below(s.NodeId.length)];
        case "ExpandedNodeId":
            return s.ExpandedNodeId[rng.below(s.ExpandedNodeId.length)];
        case "StatusCode":
            return [
                StatusCodes.BadNodeIdUnknown,
                StatusCodes.UncertainInitialValue,
                StatusCodes.GoodMoreData,
            ][rng.below(3)];
        case "QualifiedName":
            return new QualifiedName({
                namespaceIndex: 1 + rng.below(5),
                name: `Q${rng.below(100)}`,
            });
        case "LocalizedText":
            return new LocalizedText({ locale: "en", text: `T${rng.below(100)}` });
        case "ExtensionObject":
            return depth > 2 ? null : s.ExtensionObject[rng.below(2)];
        case "DataValue":
            return s.DataValue[rng.below(2)];
        case "Variant":
            return s.Variant[rng.below(2)];
        case "DiagnosticInfo":
            return s.DiagnosticInfo[rng.below(2)];
        default:
            throw new Error("fillBasic: " + type);
    }
}

function fillEnum(schema, rng) {
    const values = Object.keys(schema.enumValues)
        .filter((k) => /^\d+$/.test(k) && schema.enumValues[k] !== "Invalid")
        .map(Number)
        .filter((v) => v !== 0);
    return values.length ? values[rng.below(values.length)] : 0;
}

function fillStruct(schema, rng, depth) {
    const o = {};
    for (const f of schema.fields) {
        const one = () => {
            if (f.category === "basic") return fillBasic(f.fieldType, rng, depth);
            if (f.category === "enumeration") return fillEnum(f.schema, rng);
            if (depth >= 3) return undefined;
            return fillStruct(f.schema, rng, depth + 1);
        };
        if (f.isArray) {
            const n = depth === 0 ? 2 : depth < 3 ? 1 : 0;
            const arr = [];
            for (let i = 0; i < n; i++) arr.push(one());
            o[f.name] = arr.every((x) => x !== undefined) ? arr : [];
        } else {
            const v = one();
            if (v !== undefined) o[f.name] = v;
        }
    }
    return o;
}

function keyFields(obj, schema) {
    const out = [];
    for (const f of schema.fields) {
        const v = obj[f.name];
        if (f.isArray) {
            out.push({ name: f.name, length: v ? v.length : -1 });
        } else if (f.category === "enumeration") {
            out.push({ name: f.name, type: "Int32", value: v });
        } else if (f.category === "basic") {
            const t = f.fieldType === "NumericRange" ? "String" : f.fieldType;
            if (["ExtensionObject", "DataValue", "Variant", "DiagnosticInfo"].includes(t)) continue;
            let value = v;
            if (t === "NumericRange") value = v ? v.toString() : null;
            out.push({ name: f.name, type: t, value: describe(t, value) });
        }
    }
    return out;
}

function structVectors(schemaNames) {
    const skipped = [];
    let count = 0;
    for (const name of Object.keys(types).sort()) {
        const cls = types[name];
        if (typeof cls !== "function" || !cls.schema || !cls.encodingDefaultBinary) continue;
        if (!schemaNames.has(name)) {
            skipped.push(name);
            continue;
        }
        const rng = new Prng(name);
        const obj = new cls(fillStruct(cls.schema, rng, 0));
        const body = encodeWith((v, s) => v.encode(s), obj);
        const id = cls.encodingDefaultBinary;
        const head = encodeWith(basic.encodeNodeId, id);
        const fields = keyFields(obj, cls.schema);
        vectors.push({
            name,
            kind: "struct",
            type: name,
            encodingId: id.value,
            hex: body.toString("hex"),
            fields,
        });
        if (/(Request|Response)$/.test(name)) {
            vectors.push({
                name: `${name}@message`,
                kind: "message",
                type: name,
                encodingId: id.value,
                hex: Buffer.concat([head, body]).toString("hex"),
                fields,
            });
        }
        // The default-constructed value as well: empty arrays, null strings, zero masks.
        const empty = encodeWith((v, s) => v.encode(s), new cls({}));
        vectors.push({
            name: `${name}@default`,
            kind: "struct",
            type: name,
            encodingId: id.value,
            hex: empty.toString("hex"),
        });
        count++;
    }
    return { count, skipped };
}

// Hand-made inputs around the limits and the recursive types (hex, without selector byte).
const HANDMADE_BUILTIN = {
    // Variant: array of Variants nested 8 deep, each holding the next.
    "Variant.nested8": ["Variant", "9801000000".repeat(8) + "0601000000"],
    // Variant: array length far beyond the input.
    "Variant.hugeArray": ["Variant", "86ffffff7f01000000"],
    // Variant: matrix whose dimensions do not multiply to the length.
    "Variant.badDims": ["Variant", "c603000000010000000200000003000000020000000200000002000000"],
    // Variant: negative dimension count.
    "Variant.negDims": ["Variant", "c60100000001000000ffffffff"],
    // DiagnosticInfo: inner chain of 20.
    "DiagnosticInfo.chain20": ["DiagnosticInfo", "40".repeat(20) + "00"],
    // ExtensionObject: XML body, kept as bytes.
    "ExtensionObject.xml": [
        "ExtensionObject",
        "01000302" + "02" + "04000000" + Buffer.from("<a/>").toString("hex"),
    ],
    // ExtensionObject: known type (ReadValueId binary encoding 628) with a short body.
    "ExtensionObject.shortBody": ["ExtensionObject", "01007402010200000000ff"],
    // ExtensionObject: known type with trailing bytes inside its body.
    "ExtensionObject.longBody": [
        "ExtensionObject",
        "0100740201" +
            "18000000" +
            "0000" +
            "0d000000" +
            "ffffffff" +
            "0000" +
            "ffffffff" +
            "0102030405060708",
    ],
    // ExpandedNodeId with both flags and a string identifier.
    "ExpandedNodeId.flags": ["ExpandedNodeId", "c30100030000006162630300000075726902000000"],
    // NodeId with an unknown encoding byte.
    "NodeId.badForm": ["NodeId", "0f00"],
    // String with negative length other than -1.
    "String.negative": ["String", "feffffff"],
    // DataValue with every mask bit including the reserved ones.
    "DataValue.allBits": [
        "DataValue",
        "ff0101000000000000000000000000000000000000000000000000000000000000",
    ],
    // LocalizedText with reserved mask bits set.
    "LocalizedText.reserved": ["LocalizedText", "fc"],
};

const BUILTIN_IDS = [
    "Boolean",
    "SByte",
    "Byte",
    "Int16",
    "UInt16",
    "Int32",
    "UInt32",
    "Int64",
    "UInt64",
    "Float",
    "Double",
    "String",
    "DateTime",
    "Guid",
    "ByteString",
    "XmlElement",
    "NodeId",
    "ExpandedNodeId",
    "StatusCode",
    "QualifiedName",
    "LocalizedText",
    "ExtensionObject",
    "DataValue",
    "Variant",
    "DiagnosticInfo",
];

function seedName(name) {
    return name.replace(/[^A-Za-z0-9._-]/g, "_");
}

function writeSeeds(corpus) {
    const mdir = path.join(corpus, "message");
    const bdir = path.join(corpus, "builtin");
    fs.mkdirSync(mdir, { recursive: true });
    fs.mkdirSync(bdir, { recursive: true });
    const builtin = (name, type, bytes) => {
        const selector = Buffer.from([BUILTIN_IDS.indexOf(type)]);
        fs.writeFileSync(path.join(bdir, seedName(name)), Buffer.concat([selector, bytes]));
    };
    for (const v of vectors) {
        const bytes = Buffer.from(v.hex, "hex");
        if (v.kind === "custom") {
            continue; // not reachable through decodeMessage or the built-in selector
        } else if (v.kind === "builtin") {
            builtin(v.name, v.type, bytes);
        } else if (v.kind === "struct") {
            const head = encodeWith(
                basic.encodeNodeId,
                new NodeId(NodeIdType.NUMERIC, v.encodingId, 0),
            );
            fs.writeFileSync(path.join(mdir, seedName(v.name)), Buffer.concat([head, bytes]));
        }
    }
    for (const [name, [type, hex]] of Object.entries(HANDMADE_BUILTIN)) {
        builtin(`handmade.${name}`, type, Buffer.from(hex, "hex"));
    }
    // Messages: unknown encoding id, a request with nothing after its id, a header only.
    fs.writeFileSync(path.join(mdir, "handmade.unknownId"), Buffer.from("01003930", "hex"));
    fs.writeFileSync(path.join(mdir, "handmade.idOnly"), Buffer.from("01007702", "hex"));
    fs.writeFileSync(
        path.join(mdir, "handmade.stringId"),
        Buffer.from("030000030000006162630000", "hex"),
    );
}

// ---------------------------------------------------------------------------------------
// Optional fields and unions: schema/Interop.Optional.bsd through node-opcua's parser.
// `fields` lists the selector (encodingMask / switchField) and the scalar fields present.

async function customVectors() {
    const T = await loadCustomTypes();
    const add = (name, type, options, fields) => {
        const obj = new T[type](options);
        const hex = encodeWith((v, s) => v.encode(s), obj).toString("hex");
        vectors.push({ name, kind: "custom", type, hex, fields });
    };
    const node = new NodeId(NodeIdType.STRING, "Line/4", 2);
    const optionals = {
        none: [{ id: 1, mode: 0 }, 0],
        limit: [{ id: 2, limit: -0.5, mode: 1 }, 1],
        label: [{ id: 3, label: "Füllstand", mode: 2 }, 2],
        emptySamples: [{ id: 4, samples: [], mode: 0 }, 4],
        samples: [{ id: 5, samples: [-32768, 0, 32767], mode: 1 }, 4],
        node: [{ id: 6, node, mode: 2 }, 8],
        all: [{ id: 7, limit: 1e300, label: "", samples: [7], node, mode: 1 }, 15],
    };
    for (const [k, [o, mask]] of Object.entries(optionals)) {
        const fields = [
            { name: "encodingMask", type: "UInt32", value: mask },
            { name: "id", type: "UInt32", value: o.id },
            { name: "mode", type: "Int32", value: o.mode },
        ];
        if (o.limit !== undefined) fields.push({ name: "limit", type: "Double", value: o.limit });
        if (o.label !== undefined) fields.push({ name: "label", type: "String", value: o.label });
        if (o.samples !== undefined) fields.push({ name: "samples", length: o.samples.length });
        if (o.node !== undefined)
            fields.push({ name: "node", type: "NodeId", value: describe("NodeId", o.node) });
        add(`InteropOptional#${k}`, "InteropOptional", o, fields);
    }
    const sw = (v) => ({ name: "switchField", type: "UInt32", value: v });
    add("InteropUnion#none", "InteropUnion", {}, [sw(0)]);
    add("InteropUnion#count", "InteropUnion", { switchField: 1, count: 4000000000 }, [
        sw(1),
        { name: "count", type: "UInt32", value: 4000000000 },
    ]);
    add("InteropUnion#name", "InteropUnion", { switchField: 2, name: "Kessel 2" }, [
        sw(2),
        { name: "name", type: "String", value: "Kessel 2" },
    ]);
    const texts = [
        new LocalizedText({ locale: "en", text: "on" }),
        new LocalizedText({ text: "an" }),
    ];
    add("InteropUnion#texts", "InteropUnion", { switchField: 3, texts }, [
        sw(3),
        { name: "texts", length: 2 },
    ]);
    add(
        "InteropUnion#nested",
        "InteropUnion",
        { switchField: 4, nested: new T.InteropOptional({ id: 8, label: "inner", mode: 2 }) },
        [sw(4)],
    );
    add(
        "InteropContainer#mixed",
        "InteropContainer",
        {
            choice: new T.InteropUnion({ switchField: 2, name: "x" }),
            items: [
                new T.InteropOptional({ id: 1, mode: 0 }),
                new T.InteropOptional({ id: 2, limit: 2.5, node, mode: 1 }),
            ],
        },
        [{ name: "items", length: 2 }],
    );
}

async function main() {
    const out = process.argv[2];
    const corpus = process.argv[3];
    if (!out) {
        console.error("usage: gen_golden.js <out.json> [corpusDir]");
        process.exit(2);
    }
    const bsd = fs.readFileSync(SCHEMA, "utf8");
    const schemaNames = new Set(
        [...bsd.matchAll(/<opc:StructuredType Name="(\w+)"/g)].map((m) => m[1]),
    );
    builtinVectors();
    const { count, skipped } = structVectors(schemaNames);
    await customVectors();
    const doc = {
        generator: "node-opcua-types " + require("node-opcua-types/package.json").version,
        structures: count,
        skippedNotInSchema: skipped,
        vectors,
    };
    fs.writeFileSync(out, JSON.stringify(doc, null, 1) + "\n");
    if (corpus) writeSeeds(corpus);
    const kinds = {};
    for (const v of vectors) kinds[v.kind] = (kinds[v.kind] || 0) + 1;
    console.log(
        `gen_golden: ${vectors.length} vectors (${JSON.stringify(kinds)}), ${count} structure types, ${skipped.length} node-opcua types not in the schema`,
    );
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
