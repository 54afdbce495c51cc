// SPDX-License-Identifier: Apache-2.0
"use strict";
// Value builders and canonical descriptions shared by the golden-vector generator and the
// reverse-direction checker. A "description" is the JSON form of a decoded value that the
// C++ side compares its own decoding against (see interop_json.hpp / golden_test.cpp).

const { DataType, VariantArrayType, Variant } = require("node-opcua-variant");
const { DataValue } = require("node-opcua-data-value");
const { LocalizedText, QualifiedName, DiagnosticInfo } = require("node-opcua-data-model");
const { NodeId, ExpandedNodeId, NodeIdType } = require("node-opcua-nodeid");
const { StatusCode } = require("node-opcua-status-code");

// Seconds between 1601-01-01 and 1970-01-01, as OPC UA DateTime counts from 1601.
const EPOCH_DELTA_MS = 11644473600000n;

/** Deterministic pseudo-random numbers, so the vectors are stable from run to run. */
class Prng {
    constructor(seedText) {
        let h = 2166136261;
        for (const ch of seedText) {
            h = Math.imul(h ^ ch.codePointAt(0), 16777619) >>> 0;
        }
        this.state = h || 1;
    }
    next() {
        // xorshift32
        let x = this.state;
        x ^= x << 13;
        x >>>= 0;
        x ^= x >>> 17;
        x ^= x << 5;
        x >>>= 0;
        this.state = x;
        return x;
    }
    below(n) {
        return this.next() % n;
    }
}

function int64Parts(big) {
    const u = BigInt.asUintN(64, big);
    return [Number(u >> 32n), Number(u & 0xffffffffn)];
}

function partsToBigInt(parts, signed) {
    const u = (BigInt(parts[0] >>> 0) << 32n) | BigInt(parts[1] >>> 0);
    return signed ? BigInt.asIntN(64, u) : u;
}

function dateTicks(date) {
    if (date === null || date === undefined) return "0";
    const ms = BigInt(date.getTime());
    const ticks = (ms + EPOCH_DELTA_MS) * 10000n;
    return ticks < 0n ? "0" : ticks.toString();
}

function describeNumber(x) {
    if (Number.isNaN(x)) return "NaN";
    if (x === Infinity) return "Infinity";
    if (x === -Infinity) return "-Infinity";
    if (Object.is(x, -0)) return "-0";
    return x;
}

function describeNodeId(n) {
    const kinds = {
        [NodeIdType.NUMERIC]: "numeric",
        [NodeIdType.STRING]: "string",
        [NodeIdType.GUID]: "guid",
        [NodeIdType.BYTESTRING]: "bytestring",
    };
    const kind = kinds[n.identifierType];
    let id;
    if (kind === "numeric") id = n.value;
    else if (kind === "string") id = n.value;
    else if (kind === "guid") id = n.value.toUpperCase();
    else id = n.value ? Buffer.from(n.value).toString("hex") : null;
    return { ns: n.namespace, kind, id };
}

function describeExpandedNodeId(n) {
    const d = describeNodeId(n);
    d.uri = n.namespaceUri || null;
    d.serverIndex = n.serverIndex || 0;
    return d;
}

/** Describes a value of a built-in type (by DataType name), as the C++ test expects it. */
function describe(typeName, v) {
    switch (typeName) {
        case "Boolean":
            return !!v;
        case "SByte":
        case "Byte":
        case "Int16":
        case "UInt16":
        case "Int32":
        case "UInt32":
            return v;
        case "Int64":
            return partsToBigInt(v, true).toString();
        case "UInt64":
            return partsToBigInt(v, false).toString();
        case "Float":
        case "Double":
            return describeNumber(v);
        case "String":
        case "XmlElement":
        case "NumericRange":
            return v === null || v === undefined ? null : String(v);
        case "DateTime":
            return dateTicks(v);
        case "Guid":
            return v.toUpperCase();
        case "ByteString":
            return v === null || v === undefined ? null : Buffer.from(v).toString("hex");
        case "NodeId":
            return describeNodeId(v);
        case "ExpandedNodeId":
            return describeExpandedNodeId(v);
        case "StatusCode":
            return v.value >>> 0;
        case "QualifiedName":
            return { ns: v.namespaceIndex, name: v.name };
        case "LocalizedText":
            return { locale: v.locale ?? null, text: v.text ?? null };
        case "ExtensionObject":
            return describeExtensionObject(v);
        case "DataValue":
            return describeDataValue(v);
        case "Variant":
            return describeVariant(v);
        case "DiagnosticInfo":
            return describeDiagnosticInfo(v);
        default:
            throw new Error("describe: unknown type " + typeName);
    }
}

function describeExtensionObject(v) {
    if (v === null || v === undefined) return { encoding: 0, typeId: null };
    if (v.constructor && v.constructor.name === "OpaqueStructure") {
        return {
            encoding: 1,
            typeId: describeNodeId(v.nodeId),
            body: Buffer.from(v.buffer).toString("hex"),
        };
    }
    const cls = v.constructor;
    return {
        encoding: 1,
        typeId: describeNodeId(cls.encodingDefaultBinary),
        type: cls.schema.name,
    };
}

// node-opcua keeps picoseconds; the wire carries 10-picosecond units below 100 ns, and the
// field only when that is non-zero. null: field absent.
function encodedPicoseconds(ps) {
    const rest = ps ? ps % 100000 : 0;
    return rest ? Math.floor(rest / 10) : null;
}

function describeDataValue(dv) {
    const d = {};
    // The mask bits of Part 6 5.2.2.17, as node-opcua chose to encode them.
    const hasValue = dv.value && dv.value.dataType !== DataType.Null;
    d.hasValue = !!hasValue;
    if (hasValue) d.value = describeVariant(dv.value);
    d.status = dv.statusCode ? dv.statusCode.value >>> 0 : 0;
    d.sourceTimestamp = dv.sourceTimestamp ? dateTicks(dv.sourceTimestamp) : null;
    d.sourcePicoseconds = encodedPicoseconds(dv.sourcePicoseconds);
    d.serverTimestamp = dv.serverTimestamp ? dateTicks(dv.serverTimestamp) : null;
    d.serverPicoseconds = encodedPicoseconds(dv.serverPicoseconds);
    return d;
}

function describeVariant(v) {
    const typeName = DataType[v.dataType];
    const d = { type: v.dataType, arrayType: VariantArrayType[v.arrayType] };
    if (v.dataType === DataType.Null) return d;
    if (v.arrayType === VariantArrayType.Scalar) {
        d.value = describe(typeName, v.value);
    } else {
        const items = Array.from(v.value || []);
        d.length = items.length;
        d.values = items.map((x) => describe(typeName, x));
        if (v.arrayType === VariantArrayType.Matrix) d.dimensions = Array.from(v.dimensions);
    }
    return d;
}

function describeDiagnosticInfo(di) {
    if (!di) return null;
    return {
        symbolicId: di.symbolicId,
        namespaceUri: di.namespaceURI,
        locale: di.locale,
        localizedText: di.localizedText,
        additionalInfo: di.additionalInfo,
        innerStatusCode: di.innerStatusCode ? di.innerStatusCode.value >>> 0 : 0,
        inner: describeDiagnosticInfo(di.innerDiagnosticInfo),
    };
}

module.exports = {
    Prng,
    int64Parts,
    partsToBigInt,
    dateTicks,
    describe,
    describeNodeId,
    describeVariant,
    describeDataValue,
    describeDiagnosticInfo,
    describeExtensionObject,
    DataType,
    VariantArrayType,
    Variant,
    DataValue,
    LocalizedText,
    QualifiedName,
    DiagnosticInfo,
    NodeId,
    ExpandedNodeId,
    NodeIdType,
    StatusCode,
};
