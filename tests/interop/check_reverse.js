#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
"use strict";
// Decodes with node-opcua what interop_reverse_writer encoded, and checks every value
// against expectations written here, independently of our encoder:
//
//   node check_reverse.js <dir>                     every file must match; exit 1 otherwise
//   node check_reverse.js --expect-mismatch <dir>   every file must decode but mismatch
//
// <dir>/struct/<Type>.bin follow the fill rule of reverse_writer.cpp (re-derived below from
// node-opcua's own schema of <Type>); builtin/ and message/ files have hand-written
// expectations in BUILTINS and MESSAGES.

const fs = require("fs");
const path = require("path");
const assert = require("assert");
const { BinaryStream } = require("node-opcua-binary-stream");
const basic = require("node-opcua-basic-types");
const { decodeVariant, DataType, VariantArrayType } = require("node-opcua-variant");
const { decodeDataValue } = require("node-opcua-data-value");
const { decodeExtensionObject } = require("node-opcua-extension-object");
const {
    decodeLocalizedText,
    decodeQualifiedName,
    decodeDiagnosticInfo,
} = require("node-opcua-data-model");
const { NodeIdType } = require("node-opcua-nodeid");
const types = require("node-opcua-types");
const { loadCustomTypes } = require("./custom_types");

const BASE_TICKS = 132633016000000000n; // 2021-04-19T10:26:40Z
const EPOCH_DELTA_MS = 11644473600000n;
const BAD_NODEID_UNKNOWN = 0x80340000;
const UNCERTAIN_INITIAL_VALUE = 0x40920000;

function msOfTicks(ticks) {
    return Number(ticks / 10000n - EPOCH_DELTA_MS);
}

function int64(parts, signed) {
    const u = (BigInt(parts[0] >>> 0) << 32n) | BigInt(parts[1] >>> 0);
    return signed ? BigInt.asIntN(64, u) : u;
}

// ---------------------------------------------------------------------------------------
// Mismatch collection: a check records what differs instead of stopping at the first one.

class Checker {
    constructor(file) {
        this.file = file;
        this.problems = [];
    }
    eq(where, actual, expected) {
        try {
            assert.deepStrictEqual(actual, expected);
        } catch {
            this.problems.push(`${where}: got ${show(actual)}, expected ${show(expected)}`);
        }
    }
    ok(where, cond, what) {
        if (!cond) this.problems.push(`${where}: ${what}`);
    }
}

function show(v) {
    if (Buffer.isBuffer(v)) return "0x" + v.toString("hex");
    if (typeof v === "bigint") return v.toString() + "n";
    try {
        return JSON.stringify(v, (k, x) => (typeof x === "bigint" ? x.toString() : x));
    } catch {
        return String(v);
    }
}

function checkNodeId(c, where, n, ns, kind, id) {
    c.ok(where, n && n.namespace !== undefined, "not a NodeId");
    if (!n) return;
    c.eq(where + ".namespace", n.namespace, ns);
    c.eq(where + ".identifierType", n.identifierType, kind);
    if (kind === NodeIdType.BYTESTRING) c.eq(where + ".value", Buffer.from(n.value), id);
    else if (kind === NodeIdType.GUID) c.eq(where + ".value", n.value.toUpperCase(), id);
    else c.eq(where + ".value", n.value, id);
}

// ---------------------------------------------------------------------------------------
// The fill rule of reverse_writer.cpp, per field number s (1-based) and field name.

function ruleGuid(s) {
    return s.toString(16).toUpperCase().padStart(8, "0") + "-BEEF-1234-8081-828384858687";
}

function checkRuleNodeId(c, where, n, s, name) {
    const ns = s % 4 === 0 ? 0 : s % 65536;
    switch (s % 4) {
        case 0:
        case 1:
            return checkNodeId(c, where, n, ns, NodeIdType.NUMERIC, s * 1000);
        case 2:
            return checkNodeId(c, where, n, ns, NodeIdType.STRING, name);
        default:
            return checkNodeId(c, where, n, ns, NodeIdType.GUID, ruleGuid(s));
    }
}

function smallestPositiveEnum(schema) {
    let best = 0;
    for (const [k, name] of Object.entries(schema.enumValues)) {
        if (!/^\d+$/.test(k) || name === "Invalid") continue;
        const v = Number(k);
        if (v > 0 && (best === 0 || v < best)) best = v;
    }
    return best;
}

function checkRuleBasic(c, where, type, v, s, name) {
    switch (type) {
        case "Boolean":
            return c.eq(where, v, s % 2 === 1);
        case "SByte":
            return c.eq(where, v, ((-s + 128) & 0xff) - 128);
        case "Byte":
            return c.eq(where, v, s & 0xff);
        case "Int16":
            return c.eq(where, v, ((-100 * s + 32768) & 0xffff) - 32768);
        case "UInt16":
            return c.eq(where, v, (100 * s) & 0xffff);
        case "Int32":
            return c.eq(where, v, -100000 * s);
        case "UInt32":
            return c.eq(where, v, 100000 * s + 7);
        case "Int64":
            return c.eq(where, int64(v, true), -1000000000000n * BigInt(s));
        case "UInt64":
            return c.eq(where, int64(v, false), 1000000000000n * BigInt(s) + 3n);
        case "Float":
            return c.eq(where, v, s + 0.5);
        case "Double":
            return c.eq(where, v, s + 0.25);
        case "String":
            return c.eq(where, v, name);
        case "NumericRange":
            // Our schema types these fields (all named indexRange) as String.
            return c.eq(where, v === null || v === undefined ? v : v.toString(), `${s}:${s + 1}`);
        case "DateTime":
            return c.eq(where, v instanceof Date ? v.getTime() : v, msOfTicks(BASE_TICKS) + s);
        case "Guid":
            return c.eq(where, v, ruleGuid(s));
        case "ByteString":
            return c.eq(where, v, Buffer.from([s & 0xff, (s + 1) & 0xff, (s + 2) & 0xff]));
        case "XmlElement":
            return c.eq(where, v, "<x/>");
        case "NodeId":
            return checkRuleNodeId(c, where, v, s, name);
        case "ExpandedNodeId":
            checkRuleNodeId(c, where, v, s, name);
            c.eq(where + ".serverIndex", v.serverIndex || 0, s % 2 === 1 ? s : 0);
            c.eq(
                where + ".namespaceUri",
                v.namespaceUri || null,
                s % 3 === 0 ? "urn:uaplex:interop" : null,
            );
            return;
        case "StatusCode":
            return c.eq(where, v.value >>> 0, BAD_NODEID_UNKNOWN);
        case "QualifiedName":
            c.eq(where + ".namespaceIndex", v.namespaceIndex, s & 0xffff);
            return c.eq(where + ".name", v.name, name);
        case "LocalizedText":
            c.eq(where + ".locale", v.locale, "en");
            return c.eq(where + ".text", v.text, name);
        case "ExtensionObject":
            c.ok(where, v instanceof types.Range, "expected a decoded Range body, got " + show(v));
            if (v instanceof types.Range) {
                c.eq(where + ".low", v.low, -s);
                c.eq(where + ".high", v.high, s);
            }
            return;
        case "DataValue":
            c.eq(where + ".value.dataType", v.value.dataType, DataType.Int32);
            c.eq(where + ".value.value", v.value.value, s);
            c.eq(where + ".statusCode", v.statusCode.value >>> 0, UNCERTAIN_INITIAL_VALUE);
            c.eq(
                where + ".sourceTimestamp",
                v.sourceTimestamp && v.sourceTimestamp.getTime(),
                msOfTicks(BASE_TICKS) + s,
            );
            c.eq(where + ".serverTimestamp", v.serverTimestamp, null);
            return;
        case "Variant":
            c.eq(where + ".dataType", v.dataType, DataType.Int32);
            c.eq(where + ".arrayType", v.arrayType, VariantArrayType.Array);
            c.eq(where + ".value", Array.from(v.value || []), [s, -s]);
            return;
        case "DiagnosticInfo":
            c.eq(where + ".symbolicId", v.symbolicId, s);
            c.eq(where + ".additionalInfo", v.additionalInfo, name);
            c.eq(where + ".namespaceURI", v.namespaceURI, -1);
            return;
        default:
            c.problems.push(`${where}: no rule for type ${type}`);
    }
}

// The fields of a structure with those of its base types first, as on the wire.
function allFields(schema) {
    const base = schema.baseType && types[schema.baseType];
    const inherited = base && base.schema && base.schema !== schema ? allFields(base.schema) : [];
    return inherited.concat(schema.fields);
}

function checkRuleStruct(c, where, obj, schema, depth) {
    allFields(schema).forEach((f, i) => {
        const s = i + 1;
        const w = `${where}.${f.name}`;
        const one = (v, wi) => {
            if (f.category === "basic") checkRuleBasic(c, wi, f.fieldType, v, s, f.name);
            else if (f.category === "enumeration") c.eq(wi, v, smallestPositiveEnum(f.schema));
            else checkRuleStruct(c, wi, v, f.schema, depth + 1);
        };
        const v = obj[f.name];
        if (f.isArray) {
            const n = depth === 0 ? 2 : depth === 1 ? 1 : 0;
            const items = v ? Array.from(v) : null;
            c.eq(w + ".length", items ? items.length : -1, n);
            (items || []).forEach((x, k) => one(x, `${w}[${k}]`));
        } else {
            one(v, w);
        }
    });
}

function decodeStruct(cls, buffer) {
    const stream = new BinaryStream(buffer);
    const obj = new cls();
    obj.decode(stream);
    if (stream.length !== buffer.length) {
        throw new Error(`${buffer.length - stream.length} bytes left after decoding ${cls.name}`);
    }
    return obj;
}

// structmsg/<Type>.bin: the encoding NodeId must name <Type>, the body follow the rule.
function checkStructMessageFile(file, name) {
    const c = new Checker(file);
    const buffer = fs.readFileSync(file);
    const stream = new BinaryStream(buffer);
    const cls = classByEncodingId(basic.decodeNodeId(stream));
    c.eq("encoding id names", cls && cls.name, name);
    if (!cls || cls.name !== name) return c;
    const obj = new cls();
    obj.decode(stream);
    c.eq("bytes consumed", stream.length, buffer.length);
    checkRuleStruct(c, name, obj, cls.schema, 0);
    return c;
}

function checkStructFile(file, name) {
    const c = new Checker(file);
    const cls = types[name];
    if (typeof cls !== "function" || !cls.schema) {
        return { c, skipped: true };
    }
    const obj = decodeStruct(cls, fs.readFileSync(file));
    checkRuleStruct(c, name, obj, cls.schema, 0);
    return { c, skipped: false };
}

// ---------------------------------------------------------------------------------------
// Hand-written expectations for builtin/<name>.bin: [decoder, check(c, value)].

const GUID = "72962B91-FA75-4AE6-8D28-B404DC7DAF63";
const BYTES = Buffer.from([0x00, 0x01, 0x7f, 0x80, 0xff]);

const BUILTINS = {
    Boolean: [basic.decodeBoolean, (c, v) => c.eq("value", v, true)],
    SByte: [basic.decodeSByte, (c, v) => c.eq("value", v, -128)],
    Byte: [basic.decodeByte, (c, v) => c.eq("value", v, 200)],
    Int16: [basic.decodeInt16, (c, v) => c.eq("value", v, -30000)],
    UInt16: [basic.decodeUInt16, (c, v) => c.eq("value", v, 65535)],
    Int32: [basic.decodeInt32, (c, v) => c.eq("value", v, -2147483648)],
    UInt32: [basic.decodeUInt32, (c, v) => c.eq("value", v, 4000000000)],
    Int64: [basic.decodeInt64, (c, v) => c.eq("value", int64(v, true), -9000000000000000000n)],
    UInt64: [basic.decodeUInt64, (c, v) => c.eq("value", int64(v, false), 18000000000000000000n)],
    Float: [basic.decodeFloat, (c, v) => c.eq("value", v, -1.75)],
    Double: [basic.decodeDouble, (c, v) => c.eq("value", v, 6.02214076e23)],
    String: [basic.decodeString, (c, v) => c.eq("value", v, "Grüße, 世界")],
    "String.null": [basic.decodeString, (c, v) => c.eq("value", v, null)],
    DateTime: [
        basic.decodeDateTime,
        (c, v) => c.eq("value", v.getTime(), Date.UTC(2021, 3, 19, 10, 26, 40)),
    ],
    Guid: [basic.decodeGuid, (c, v) => c.eq("value", v.toUpperCase(), GUID)],
    ByteString: [basic.decodeByteString, (c, v) => c.eq("value", v, BYTES)],
    "ByteString.null": [basic.decodeByteString, (c, v) => c.eq("value", v, null)],
    "NodeId.twoByte": [
        basic.decodeNodeId,
        (c, v) => checkNodeId(c, "nodeId", v, 0, NodeIdType.NUMERIC, 85),
    ],
    "NodeId.fourByte": [
        basic.decodeNodeId,
        (c, v) => checkNodeId(c, "nodeId", v, 3, NodeIdType.NUMERIC, 2000),
    ],
    "NodeId.numeric": [
        basic.decodeNodeId,
        (c, v) => checkNodeId(c, "nodeId", v, 300, NodeIdType.NUMERIC, 123456789),
    ],
    "NodeId.string": [
        basic.decodeNodeId,
        (c, v) => checkNodeId(c, "nodeId", v, 2, NodeIdType.STRING, "Boiler/Temperature"),
    ],
    "NodeId.guid": [
        basic.decodeNodeId,
        (c, v) => checkNodeId(c, "nodeId", v, 4, NodeIdType.GUID, GUID),
    ],
    "NodeId.byteString": [
        basic.decodeNodeId,
        (c, v) => checkNodeId(c, "nodeId", v, 5, NodeIdType.BYTESTRING, BYTES),
    ],
    ExpandedNodeId: [
        basic.decodeExpandedNodeId,
        (c, v) => {
            checkNodeId(c, "expandedNodeId", v, 0, NodeIdType.NUMERIC, 2253);
            c.eq("namespaceUri", v.namespaceUri, "urn:uaplex:test");
            c.eq("serverIndex", v.serverIndex, 2);
        },
    ],
    StatusCode: [
        basic.decodeStatusCode,
        (c, v) => c.eq("value", v.value >>> 0, BAD_NODEID_UNKNOWN),
    ],
    QualifiedName: [
        decodeQualifiedName,
        (c, v) => c.eq("value", [v.namespaceIndex, v.name], [7, "Speed"]),
    ],
    LocalizedText: [
        decodeLocalizedText,
        (c, v) => c.eq("value", [v.locale, v.text], ["de-DE", "Drehzahl"]),
    ],
    "LocalizedText.textOnly": [
        decodeLocalizedText,
        (c, v) => c.eq("value", [v.locale, v.text], [null, "text only"]),
    ],
    DataValue: [
        decodeDataValue,
        (c, v) => {
            c.eq("value", [v.value.dataType, v.value.value], [DataType.Double, 21.5]);
            c.eq("statusCode", v.statusCode.value >>> 0, UNCERTAIN_INITIAL_VALUE);
            c.eq("sourceTimestamp", v.sourceTimestamp.getTime(), msOfTicks(BASE_TICKS));
            c.eq("serverTimestamp", v.serverTimestamp.getTime(), msOfTicks(BASE_TICKS) + 1);
            // 100 and 200 units of 10 ps on the wire; node-opcua reports picoseconds.
            c.eq("sourcePicoseconds", v.sourcePicoseconds, 1000);
            c.eq("serverPicoseconds", v.serverPicoseconds, 2000);
        },
    ],
    "Variant.matrix": [
        decodeVariant,
        (c, v) => {
            c.eq("dataType", v.dataType, DataType.Double);
            c.eq("arrayType", v.arrayType, VariantArrayType.Matrix);
            c.eq("dimensions", Array.from(v.dimensions), [2, 3]);
            c.eq("value", Array.from(v.value), [1, 2, 3, 4, 5, 6]);
        },
    ],
    "Variant.stringArray": [
        decodeVariant,
        (c, v) => {
            c.eq("dataType", v.dataType, DataType.String);
            c.eq("arrayType", v.arrayType, VariantArrayType.Array);
            c.eq("value", Array.from(v.value), ["a", null, "ccc"]);
        },
    ],
    "Variant.uint32": [
        decodeVariant,
        (c, v) =>
            c.eq(
                "value",
                [v.dataType, v.arrayType, v.value],
                [DataType.UInt32, VariantArrayType.Scalar, 4294967295],
            ),
    ],
    "Variant.nested": [
        decodeVariant,
        (c, v) => {
            c.eq("dataType", v.dataType, DataType.Variant);
            c.eq("inner", [v.value.dataType, v.value.value], [DataType.String, "inner"]);
        },
    ],
    "Variant.localizedTextArray": [
        decodeVariant,
        (c, v) => {
            c.eq("dataType", v.dataType, DataType.LocalizedText);
            c.eq(
                "value",
                Array.from(v.value).map((t) => [t.locale, t.text]),
                [
                    ["en", "one"],
                    [null, "two"],
                ],
            );
        },
    ],
    DiagnosticInfo: [
        decodeDiagnosticInfo,
        (c, v) => {
            c.eq(
                "outer",
                [v.symbolicId, v.namespaceURI, v.localizedText, v.locale, v.additionalInfo],
                [1, 2, 3, -1, "outer"],
            );
            c.ok("inner", v.innerDiagnosticInfo, "missing inner DiagnosticInfo");
            const i = v.innerDiagnosticInfo || {};
            c.eq(
                "inner",
                [
                    i.symbolicId,
                    i.locale,
                    i.additionalInfo,
                    i.innerStatusCode && i.innerStatusCode.value >>> 0,
                ],
                [-1, 4, null, BAD_NODEID_UNKNOWN],
            );
            c.eq("inner.inner", i.innerDiagnosticInfo, null);
        },
    ],
    "ExtensionObject.opaque": [
        decodeExtensionObject,
        (c, v) => {
            c.ok(
                "opaque",
                v && v.constructor.name === "OpaqueStructure",
                "expected an opaque body, got " + show(v),
            );
            if (!v) return;
            checkNodeId(c, "typeId", v.nodeId, 3, NodeIdType.NUMERIC, 4711);
            c.eq("body", Buffer.from(v.buffer), BYTES);
        },
    ],
    "ExtensionObject.euInformation": [
        decodeExtensionObject,
        (c, v) => {
            c.ok(
                "body",
                v instanceof types.EUInformation,
                "expected EUInformation, got " + show(v),
            );
            if (!(v instanceof types.EUInformation)) return;
            c.eq("namespaceUri", v.namespaceUri, "http://www.opcfoundation.org/UA/units/un/cefact");
            c.eq("unitId", v.unitId, 4408652);
            c.eq("displayName", [v.displayName.locale, v.displayName.text], [null, "°C"]);
            c.eq(
                "description",
                [v.description.locale, v.description.text],
                ["en", "degree Celsius"],
            );
        },
    ],
};

function checkRequestHeader(c, h) {
    checkNodeId(
        c,
        "requestHeader.authenticationToken",
        h.authenticationToken,
        0,
        NodeIdType.STRING,
        "session-token",
    );
    c.eq("requestHeader.timestamp", h.timestamp.getTime(), msOfTicks(BASE_TICKS));
    c.eq("requestHeader.requestHandle", h.requestHandle, 42);
    c.eq("requestHeader.returnDiagnostics", h.returnDiagnostics, 0x3ff);
    c.eq("requestHeader.auditEntryId", h.auditEntryId, "audit-1");
    c.eq("requestHeader.timeoutHint", h.timeoutHint, 10000);
    c.eq("requestHeader.additionalHeader", h.additionalHeader, null);
}

// Hand-written expectations for message/<name>.bin: [class, check(c, value)].
const MESSAGES = {
    ReadRequest: [
        types.ReadRequest,
        (c, r) => {
            checkRequestHeader(c, r.requestHeader);
            c.eq("maxAge", r.maxAge, 500);
            c.eq("timestampsToReturn", r.timestampsToReturn, 2);
            c.eq("nodesToRead.length", r.nodesToRead.length, 3);
            const [a, b, d] = r.nodesToRead;
            checkNodeId(c, "nodesToRead[0].nodeId", a.nodeId, 0, NodeIdType.NUMERIC, 2258);
            c.eq(
                "nodesToRead[0]",
                [a.attributeId, String(a.indexRange), a.dataEncoding.name],
                // node-opcua turns a null indexRange into an empty NumericRange.
                [13, "NumericRange:<Empty>", null],
            );
            checkNodeId(
                c,
                "nodesToRead[1].nodeId",
                b.nodeId,
                2,
                NodeIdType.STRING,
                "Boiler/Pressure",
            );
            c.eq("nodesToRead[1].indexRange", b.indexRange.toString(), "0:3");
            checkNodeId(c, "nodesToRead[2].nodeId", d.nodeId, 1, NodeIdType.NUMERIC, 70000);
            c.eq(
                "nodesToRead[2]",
                [d.attributeId, d.dataEncoding.namespaceIndex, d.dataEncoding.name],
                [4, 0, "Default Binary"],
            );
        },
    ],
    ReadResponse: [
        types.ReadResponse,
        (c, r) => {
            c.eq(
                "responseHeader.timestamp",
                r.responseHeader.timestamp.getTime(),
                msOfTicks(BASE_TICKS) + 2,
            );
            c.eq("responseHeader.requestHandle", r.responseHeader.requestHandle, 42);
            c.eq("responseHeader.serviceResult", r.responseHeader.serviceResult.value, 0);
            c.eq("results.length", r.results.length, 2);
            const [x, y] = r.results;
            c.eq("results[0].value", [x.value.dataType, x.value.value], [DataType.Int32, -17]);
            c.eq("results[0].sourceTimestamp", x.sourceTimestamp.getTime(), msOfTicks(BASE_TICKS));
            c.eq("results[0].statusCode", x.statusCode.value, 0);
            c.eq("results[1].value.dataType", y.value.dataType, DataType.Null);
            c.eq("results[1].statusCode", y.statusCode.value >>> 0, BAD_NODEID_UNKNOWN);
            c.eq("diagnosticInfos", r.diagnosticInfos, null);
        },
    ],
    WriteRequest: [
        types.WriteRequest,
        (c, r) => {
            checkRequestHeader(c, r.requestHeader);
            c.eq("nodesToWrite.length", r.nodesToWrite.length, 1);
            const w = r.nodesToWrite[0];
            checkNodeId(
                c,
                "nodesToWrite[0].nodeId",
                w.nodeId,
                2,
                NodeIdType.STRING,
                "Valve/Setpoint",
            );
            c.eq("nodesToWrite[0].attributeId", w.attributeId, 13);
            c.eq(
                "nodesToWrite[0].value",
                [w.value.value.dataType, w.value.value.value],
                [DataType.Double, 3.5],
            );
        },
    ],
};

// Expectations for custom/<name>.bin (schema/Interop.Optional.bsd): [type, check(c, value)].
// Absent optional fields and unselected union members must not appear in the decoded value.
const absent = (v) => v === undefined || v === null;
function checkLimitLabel(c, w, v) {
    c.eq(w + ".id", v.id, 11);
    c.eq(w + ".limit", v.limit, 0.125);
    c.eq(w + ".label", v.label, "abc");
    c.ok(w + ".samples", absent(v.samples), "present although not in the mask");
    c.ok(w + ".node", absent(v.node), "present although not in the mask");
    c.eq(w + ".mode", v.mode, 1);
}
function checkSamplesNode(c, w, v) {
    c.eq(w + ".id", v.id, 12);
    c.ok(w + ".limit", absent(v.limit), "present although not in the mask");
    c.ok(w + ".label", absent(v.label), "present although not in the mask");
    c.eq(w + ".samples", Array.from(v.samples || []), [1, -2, 3]);
    checkNodeId(c, w + ".node", v.node, 2, NodeIdType.STRING, "Pump");
    c.eq(w + ".mode", v.mode, 2);
}
const CUSTOM = {
    "InteropOptional.limitLabel": ["InteropOptional", (c, v) => checkLimitLabel(c, "", v)],
    "InteropOptional.samplesNode": ["InteropOptional", (c, v) => checkSamplesNode(c, "", v)],
    "InteropOptional.none": [
        "InteropOptional",
        (c, v) => {
            c.eq("id", v.id, 13);
            for (const f of ["limit", "label", "samples", "node"]) {
                c.ok(f, absent(v[f]), "present although not in the mask");
            }
            c.eq("mode", v.mode, 0);
        },
    ],
    "InteropUnion.name": [
        "InteropUnion",
        (c, v) => {
            c.eq("switchField", v.switchField, 2);
            c.eq("name", v.name, "ab");
            c.ok("count", absent(v.count), "an unselected member was decoded");
        },
    ],
    "InteropUnion.texts": [
        "InteropUnion",
        (c, v) => {
            c.eq("switchField", v.switchField, 3);
            c.eq(
                "texts",
                (v.texts || []).map((t) => [t.locale, t.text]),
                [["en", "one"]],
            );
        },
    ],
    "InteropUnion.nested": [
        "InteropUnion",
        (c, v) => {
            c.eq("switchField", v.switchField, 4);
            const n = v.nested || {};
            c.eq("nested", [n.id, n.limit, n.mode], [14, 2, 2]);
            c.ok("nested.label", absent(n.label), "present although not in the mask");
        },
    ],
    "InteropUnion.none": ["InteropUnion", (c, v) => c.eq("switchField", v.switchField, 0)],
    InteropContainer: [
        "InteropContainer",
        (c, v) => {
            c.eq("choice.switchField", v.choice.switchField, 1);
            c.eq("choice.count", v.choice.count, 77);
            c.eq("items.length", (v.items || []).length, 2);
            if ((v.items || []).length === 2) {
                checkLimitLabel(c, "items[0]", v.items[0]);
                checkSamplesNode(c, "items[1]", v.items[1]);
            }
        },
    ],
};

function checkCustomFile(file, name, customTypes) {
    const c = new Checker(file);
    const entry = CUSTOM[name];
    if (!entry) throw new Error(`no expectation for custom/${name}`);
    const obj = decodeStruct(customTypes[entry[0]], fs.readFileSync(file));
    entry[1](c, obj);
    return c;
}

function classByEncodingId(id) {
    for (const name of Object.keys(types)) {
        const cls = types[name];
        const enc = typeof cls === "function" && cls.encodingDefaultBinary;
        if (enc && enc.namespace === id.namespace && enc.value === id.value) return cls;
    }
    return null;
}

function checkBuiltinFile(file, name) {
    const c = new Checker(file);
    const entry = BUILTINS[name];
    if (!entry) throw new Error(`no expectation for builtin/${name}`);
    const buffer = fs.readFileSync(file);
    const stream = new BinaryStream(buffer);
    const value = entry[0](stream);
    c.eq("bytes consumed", stream.length, buffer.length);
    entry[1](c, value);
    return c;
}

function checkMessageFile(file, name) {
    const c = new Checker(file);
    const entry = MESSAGES[name];
    if (!entry) throw new Error(`no expectation for message/${name}`);
    const buffer = fs.readFileSync(file);
    const stream = new BinaryStream(buffer);
    const id = basic.decodeNodeId(stream);
    const cls = classByEncodingId(id);
    c.eq("encoding id", cls && cls.name, entry[0].name);
    if (cls !== entry[0]) return c;
    const obj = new cls();
    obj.decode(stream);
    c.eq("bytes consumed", stream.length, buffer.length);
    entry[1](c, obj);
    return c;
}

async function main() {
    const args = process.argv.slice(2);
    const expectMismatch = args[0] === "--expect-mismatch";
    const dir = expectMismatch ? args[1] : args[0];
    if (!dir || !fs.existsSync(dir)) {
        console.error("usage: check_reverse.js [--expect-mismatch] <dir>");
        process.exit(2);
    }
    const results = [];
    const counts = { struct: 0, structmsg: 0, builtin: 0, message: 0, custom: 0, skipped: 0 };
    const customTypes = await loadCustomTypes();
    let errors = 0;
    for (const kind of ["struct", "structmsg", "builtin", "message", "custom"]) {
        const sub = path.join(dir, kind);
        if (!fs.existsSync(sub)) continue;
        for (const entry of fs.readdirSync(sub).sort()) {
            const file = path.join(sub, entry);
            const name = entry.replace(/\.bin$/, "");
            try {
                let c;
                if (kind === "struct") {
                    const r = checkStructFile(file, name);
                    if (r.skipped) {
                        counts.skipped++;
                        continue;
                    }
                    c = r.c;
                } else if (kind === "structmsg") {
                    c = checkStructMessageFile(file, name);
                } else if (kind === "custom") {
                    c = checkCustomFile(file, name, customTypes);
                } else if (kind === "builtin") {
                    c = checkBuiltinFile(file, name);
                } else {
                    c = checkMessageFile(file, name);
                }
                counts[kind]++;
                results.push(c);
            } catch (e) {
                errors++;
                console.error(
                    `ERROR ${kind}/${entry}: node-opcua could not decode it: ${e.message}`,
                );
            }
        }
    }
    const files = results.length + errors;
    if (expectMismatch) {
        const missed = results.filter((c) => c.problems.length === 0);
        for (const c of missed)
            console.error(`NOT DETECTED ${c.file}: matched although it was altered`);
        const good = files > 0 && errors === 0 && missed.length === 0;
        console.log(
            `check_reverse --expect-mismatch: ${files} files, ${results.length - missed.length} mismatches detected, ${errors} errors`,
        );
        process.exit(good ? 0 : 1);
    }
    let bad = 0;
    for (const c of results) {
        if (c.problems.length === 0) continue;
        bad++;
        console.error(`MISMATCH ${c.file}`);
        for (const p of c.problems.slice(0, 20)) console.error("  " + p);
        if (c.problems.length > 20) console.error(`  ... ${c.problems.length - 20} more`);
    }
    console.log(
        `check_reverse: ${counts.struct} structures, ${counts.structmsg} framed service messages, ` +
            `${counts.builtin} built-in values, ${counts.message} hand-built messages, ` +
            `${counts.custom} optional-field/union values checked; ` +
            `${counts.skipped} structures unknown to node-opcua; ${bad} mismatching, ${errors} undecodable`,
    );
    // Every group must be present: an empty run is a failure, not a pass.
    const complete =
        counts.struct >= 300 &&
        counts.structmsg >= 80 &&
        counts.builtin >= 30 &&
        counts.message >= 3;
    if (!complete) console.error("check_reverse: fewer files than expected");
    process.exit(bad === 0 && errors === 0 && complete ? 0 : 1);
}

main().catch((e) => {
    console.error(e);
    process.exit(1);
});
