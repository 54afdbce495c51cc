#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Peer server for uaplex side-by-side benchmarks and for validating the interop suite.
//
// A node-opcua server exposing the address-space layout of docs/nodemanagers.md:
//   - benchmark: namespace index 1 (the server's own namespace, NamespaceArray[1] =
//     ApplicationUri): ns=1;i=1000 folder, ns=1;i=1001..1100 Int32 scalars,
//     ns=1;i=2001..2100 Int32[100] arrays;
//   - demo: namespace urn:uaplex:demo with every built-in type as scalar and 3-element
//     array, AnalogItem, Dynamic, Counter, Multiply and Reset.
//
// Usage: node node-opcua-server.js [--port 4845] [--host 127.0.0.1] [--pki DIR] [--verbose]
//                                  [--scale]
// --scale raises the limits the scale benchmarks need (11,000 sessions, connections and
// subscriptions, 1,000,000 monitored items per subscription).
// SecurityPolicy None only, anonymous only. Prints "ready opc.tcp://<host>:<port>" once
// listening; stops on SIGINT/SIGTERM. Nothing is logged per request.
"use strict";

const os = require("node:os");
const path = require("node:path");

// ---------------------------------------------------------------- command line
function parseArgs(argv) {
    const opts = { port: 4845, host: "127.0.0.1", pki: null, verbose: false, scale: false };
    for (let i = 0; i < argv.length; i++) {
        const a = argv[i];
        const next = () => {
            if (i + 1 >= argv.length) usage(`missing value after ${a}`);
            return argv[++i];
        };
        if (a === "--port") opts.port = Number(next());
        else if (a.startsWith("--port=")) opts.port = Number(a.slice(7));
        else if (a === "--host") opts.host = next();
        else if (a.startsWith("--host=")) opts.host = a.slice(7);
        else if (a === "--pki") opts.pki = next();
        else if (a.startsWith("--pki=")) opts.pki = a.slice(6);
        else if (a === "--verbose" || a === "-v") opts.verbose = true;
        else if (a === "--scale") opts.scale = true;
        else if (a === "--help" || a === "-h") usage(null);
        else usage(`unknown argument ${a}`);
    }
    if (!Number.isInteger(opts.port) || opts.port < 1 || opts.port > 65535) usage("bad --port");
    return opts;
}

function usage(err) {
    const text =
        "usage: node node-opcua-server.js [--port N] [--host ADDR] [--pki DIR] [--verbose]\n" +
        "  --port N     TCP port (default 4845)\n" +
        "  --host ADDR  address to listen on and to advertise (default 127.0.0.1)\n" +
        "  --pki DIR    certificate store (default $TMPDIR/uaplex-peer-pki)\n" +
        "  --verbose    keep node-opcua's warnings\n" +
        "  --scale      limits for the scale benchmarks (sessions, items per subscription)\n";
    if (err) {
        process.stderr.write(`node-opcua-server.js: ${err}\n${text}`);
        process.exit(2);
    }
    process.stdout.write(text);
    process.exit(0);
}

const opts = parseArgs(process.argv.slice(2));

// Quiet by default: node-opcua prints warnings at load time and on odd client behaviour.
// Its log level must be set before the rest of the stack is loaded.
const debug = require("node-opcua-debug");
if (!opts.verbose) debug.setLogLevel(debug.LogLevel.Error);

const { OPCUAServer } = require("node-opcua-server");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const { NamespaceOptions } = require("node-opcua-address-space");
const { nodesets } = require("node-opcua-nodesets");
const { Variant, DataType, VariantArrayType } = require("node-opcua-variant");
const { StatusCodes } = require("node-opcua-status-code");
const { standardUnits } = require("node-opcua-data-access");
const { DataValue } = require("node-opcua-data-value");
const { NodeId, ExpandedNodeId } = require("node-opcua-nodeid");
const { QualifiedName, LocalizedText, DiagnosticInfo } = require("node-opcua-data-model");
const { Range } = require("node-opcua-types");

// Children of string-identified nodes get "<parent>.<BrowseName>" identifiers, so the
// AnalogItem properties are ns=d;s=Demo.AnalogItem.EURange / .EngineeringUnits as in the
// layout document.
NamespaceOptions.nodeIdNameSeparator = ".";

const APPLICATION_URI = "urn:uaplex:peer:node-opcua";
const DEMO_URI = "urn:uaplex:demo";

// ---------------------------------------------------------------- demo value table
// For each built-in type: the ns0 DataType BrowseName, the Variant DataType, an initial
// scalar value and three initial array elements.
const GUID0 = "72962B91-FA75-4AE6-8D28-B404DC7DAF63";
const DEMO_TYPES = [
    ["Boolean", DataType.Boolean, true, [true, false, true]],
    ["SByte", DataType.SByte, -1, [-1, 0, 1]],
    ["Byte", DataType.Byte, 1, [1, 2, 3]],
    ["Int16", DataType.Int16, -16, [-16, 0, 16]],
    ["UInt16", DataType.UInt16, 16, [16, 17, 18]],
    ["Int32", DataType.Int32, -32, [-32, 0, 32]],
    ["UInt32", DataType.UInt32, 32, [32, 33, 34]],
    ["Int64", DataType.Int64, [0xffffffff, 0xffffffc0], [[0xffffffff, 0xffffffc0], [0, 0], [0, 64]]],
    ["UInt64", DataType.UInt64, [0, 64], [[0, 64], [0, 65], [0, 66]]],
    ["Float", DataType.Float, 1.5, [1.5, 2.5, 3.5]],
    ["Double", DataType.Double, 2.25, [2.25, 3.25, 4.25]],
    ["String", DataType.String, "uaplex", ["a", "b", "c"]],
    ["DateTime", DataType.DateTime, new Date(Date.UTC(2026, 0, 1)), [
        new Date(Date.UTC(2026, 0, 1)), new Date(Date.UTC(2026, 0, 2)), new Date(Date.UTC(2026, 0, 3))]],
    ["Guid", DataType.Guid, GUID0, [GUID0, GUID0, GUID0]],
    ["ByteString", DataType.ByteString, Buffer.from([1, 2, 3]), [
        Buffer.from([1]), Buffer.from([2]), Buffer.from([3])]],
    ["XmlElement", DataType.XmlElement, "<a/>", ["<a/>", "<b/>", "<c/>"]],
    ["NodeId", DataType.NodeId, new NodeId(NodeId.NodeIdType.NUMERIC, 85, 0), [
        new NodeId(NodeId.NodeIdType.NUMERIC, 84, 0), new NodeId(NodeId.NodeIdType.NUMERIC, 85, 0),
        new NodeId(NodeId.NodeIdType.NUMERIC, 86, 0)]],
    ["ExpandedNodeId", DataType.ExpandedNodeId, new ExpandedNodeId(NodeId.NodeIdType.NUMERIC, 85, 0), [
        new ExpandedNodeId(NodeId.NodeIdType.NUMERIC, 84, 0), new ExpandedNodeId(NodeId.NodeIdType.NUMERIC, 85, 0),
        new ExpandedNodeId(NodeId.NodeIdType.NUMERIC, 86, 0)]],
    ["StatusCode", DataType.StatusCode, StatusCodes.Good, [StatusCodes.Good, StatusCodes.Good, StatusCodes.Good]],
    ["QualifiedName", DataType.QualifiedName, new QualifiedName({ name: "q" }), [
        new QualifiedName({ name: "a" }), new QualifiedName({ name: "b" }), new QualifiedName({ name: "c" })]],
    ["LocalizedText", DataType.LocalizedText, new LocalizedText({ locale: "en", text: "t" }), [
        new LocalizedText({ text: "a" }), new LocalizedText({ text: "b" }), new LocalizedText({ text: "c" })]],
    ["Structure", DataType.ExtensionObject, new Range({ low: 0, high: 1 }), [
        new Range({ low: 0, high: 1 }), new Range({ low: 0, high: 1 }), new Range({ low: 0, high: 1 })]],
    ["DataValue", DataType.DataValue, new DataValue({ value: { dataType: DataType.Int32, value: 0 } }), [
        new DataValue({ value: { dataType: DataType.Int32, value: 0 } }),
        new DataValue({ value: { dataType: DataType.Int32, value: 1 } }),
        new DataValue({ value: { dataType: DataType.Int32, value: 2 } })]],
    // A BaseDataType scalar holds the value itself (here an Int32); only arrays of it are
    // arrays of Variants (a Variant scalar cannot nest a Variant, Part 6 §5.2.2.16).
    ["BaseDataType", DataType.Int32, 0, [
        new Variant({ dataType: DataType.Int32, value: 0 }), new Variant({ dataType: DataType.Int32, value: 1 }),
        new Variant({ dataType: DataType.Int32, value: 2 })]],
    ["DiagnosticInfo", DataType.DiagnosticInfo, new DiagnosticInfo({}), [
        new DiagnosticInfo({}), new DiagnosticInfo({}), new DiagnosticInfo({})]],
];

// ---------------------------------------------------------------- address space
function buildBenchmark(addressSpace) {
    const ns = addressSpace.getOwnNamespace(); // index 1
    const folder = ns.addFolder(addressSpace.rootFolder.objects, {
        nodeId: "i=1000",
        browseName: "Benchmark",
    });
    for (let i = 1001; i <= 1100; i++) {
        ns.addVariable({
            componentOf: folder,
            nodeId: `i=${i}`,
            browseName: `Int32_${i}`,
            dataType: "Int32",
            valueRank: -1,
            accessLevel: "CurrentRead | CurrentWrite",
            userAccessLevel: "CurrentRead | CurrentWrite",
            value: new Variant({ dataType: DataType.Int32, value: 0 }),
        });
    }
    for (let i = 2001; i <= 2100; i++) {
        ns.addVariable({
            componentOf: folder,
            nodeId: `i=${i}`,
            browseName: `Int32Array_${i}`,
            dataType: "Int32",
            valueRank: 1,
            arrayDimensions: [0],
            accessLevel: "CurrentRead | CurrentWrite",
            userAccessLevel: "CurrentRead | CurrentWrite",
            value: new Variant({
                dataType: DataType.Int32,
                arrayType: VariantArrayType.Array,
                value: new Int32Array(100),
            }),
        });
    }
}

function buildDemo(addressSpace) {
    const ns = addressSpace.registerNamespace(DEMO_URI);
    const demo = ns.addFolder(addressSpace.rootFolder.objects, { nodeId: "s=Demo", browseName: "Demo" });
    const scalars = ns.addFolder(demo, { nodeId: "s=Demo.Scalars", browseName: "Scalars" });
    const arrays = ns.addFolder(demo, { nodeId: "s=Demo.Arrays", browseName: "Arrays" });

    for (const [name, dataType, scalar, elements] of DEMO_TYPES) {
        ns.addVariable({
            organizedBy: scalars,
            nodeId: `s=Demo.Scalars.${name}`,
            browseName: name,
            dataType: name,
            valueRank: -1,
            accessLevel: "CurrentRead | CurrentWrite",
            userAccessLevel: "CurrentRead | CurrentWrite",
            value: new Variant({ dataType, arrayType: VariantArrayType.Scalar, value: scalar }),
        });
        ns.addVariable({
            organizedBy: arrays,
            nodeId: `s=Demo.Arrays.${name}`,
            browseName: name,
            dataType: name,
            valueRank: 1,
            arrayDimensions: [0],
            accessLevel: "CurrentRead | CurrentWrite",
            userAccessLevel: "CurrentRead | CurrentWrite",
            value: new Variant({
                dataType: name === "BaseDataType" ? DataType.Variant : dataType,
                arrayType: VariantArrayType.Array,
                value: elements,
            }),
        });
    }

    ns.addAnalogDataItem({
        componentOf: demo,
        nodeId: "s=Demo.AnalogItem",
        browseName: "AnalogItem",
        dataType: "Double",
        accessLevel: "CurrentRead | CurrentWrite",
        userAccessLevel: "CurrentRead | CurrentWrite",
        engineeringUnitsRange: { low: 0, high: 100 },
        engineeringUnits: standardUnits.degree_celsius,
        value: new Variant({ dataType: DataType.Double, value: 42.0 }),
    });

    // Dynamic and Counter are computed when read (no timer): both step every 100 ms.
    const STEP_MS = 100;
    let counterEpoch = Date.now();
    ns.addVariable({
        componentOf: demo,
        nodeId: "s=Demo.Dynamic",
        browseName: "Dynamic",
        dataType: "Double",
        valueRank: -1,
        accessLevel: "CurrentRead",
        userAccessLevel: "CurrentRead",
        minimumSamplingInterval: STEP_MS,
        value: {
            get: () => {
                const t = Math.floor(Date.now() / STEP_MS) * STEP_MS;
                return new Variant({ dataType: DataType.Double, value: 100 * Math.sin((2 * Math.PI * (t % 10000)) / 10000) });
            },
        },
    });
    ns.addVariable({
        componentOf: demo,
        nodeId: "s=Demo.Counter",
        browseName: "Counter",
        dataType: "UInt32",
        valueRank: -1,
        accessLevel: "CurrentRead",
        userAccessLevel: "CurrentRead",
        minimumSamplingInterval: STEP_MS,
        value: {
            get: () => new Variant({
                dataType: DataType.UInt32,
                value: Math.floor((Date.now() - counterEpoch) / STEP_MS) >>> 0,
            }),
        },
    });

    // node-opcua checks the call arguments against InputArguments before invoking the
    // handlers (BadArgumentsMissing, BadTooManyArguments, BadInvalidArgument with
    // BadTypeMismatch per argument).
    const multiply = ns.addMethod(demo, {
        nodeId: "s=Demo.Multiply",
        browseName: "Multiply",
        inputArguments: [
            { name: "a", dataType: DataType.Double, valueRank: -1, description: "first factor" },
            { name: "b", dataType: DataType.Double, valueRank: -1, description: "second factor" },
        ],
        outputArguments: [{ name: "product", dataType: DataType.Double, valueRank: -1, description: "a * b" }],
    });
    // bindMethod tells promise handlers by their arity: (inputArguments, context).
    multiply.bindMethod(async (inputArguments, _context) => ({
        statusCode: StatusCodes.Good,
        outputArguments: [new Variant({ dataType: DataType.Double, value: inputArguments[0].value * inputArguments[1].value })],
    }));

    const reset = ns.addMethod(demo, {
        nodeId: "s=Demo.Reset",
        browseName: "Reset",
        inputArguments: [],
        outputArguments: [],
    });
    reset.bindMethod(async (_inputArguments, _context) => {
        counterEpoch = Date.now();
        return { statusCode: StatusCodes.Good, outputArguments: [] };
    });
}

// ---------------------------------------------------------------- main
async function main() {
    const pkiRoot = opts.pki || path.join(os.tmpdir(), "uaplex-peer-pki");
    const serverCertificateManager = new OPCUACertificateManager({
        rootFolder: pkiRoot,
        automaticallyAcceptUnknownCertificate: true,
        keySize: 2048,
    });

    const server = new OPCUAServer({
        port: opts.port,
        host: opts.host,
        hostname: opts.host,
        securityPolicies: ["http://opcfoundation.org/UA/SecurityPolicy#None"],
        securityModes: [1 /* MessageSecurityMode.None */],
        allowAnonymous: true,
        nodeset_filename: [nodesets.standard],
        serverCertificateManager,
        serverInfo: {
            applicationUri: APPLICATION_URI,
            productUri: "urn:uaplex:peer",
            applicationName: { text: "uaplex benchmark peer (node-opcua)", locale: "en" },
        },
        buildInfo: { productName: "uaplex-peer-node-opcua", manufacturerName: "uaplex" },
        serverCapabilities: {
            maxSessions: opts.scale ? 11000 : 200,
            ...(opts.scale ? { maxSubscriptions: 11000, maxMonitoredItems: 2000000, maxMonitoredItemsPerSubscription: 1000000 } : {}),
            operationLimits: { maxNodesPerRead: 10000, maxNodesPerWrite: 10000, maxNodesPerBrowse: 1000 },
        },
        maxConnectionsPerEndpoint: opts.scale ? 11000 : 200,
        disableDiscovery: true,
        isAuditing: false,
    });

    await server.initialize();
    buildBenchmark(server.engine.addressSpace);
    buildDemo(server.engine.addressSpace);
    await server.start();

    process.stdout.write(`ready opc.tcp://${opts.host}:${opts.port}\n`);

    let stopping = false;
    const stop = async () => {
        if (stopping) return;
        stopping = true;
        const hard = setTimeout(() => process.exit(0), 3000);
        hard.unref();
        try {
            await server.shutdown(0);
        } finally {
            process.exit(0);
        }
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
}

main().catch((err) => {
    process.stderr.write(`node-opcua-server.js: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
});
