// SPDX-License-Identifier: Apache-2.0
// Shared helpers for the interop suite: the endpoint under test, client/session set-up,
// namespace resolution and value comparison. run.js passes the endpoint and the --peer
// flag through the environment (UAPLEX_ENDPOINT, UAPLEX_PEER).
"use strict";

const assert = require("node:assert/strict");

// node-opcua prints warnings at load time; keep the test output clean unless asked.
const debug = require("node-opcua-debug");
if (!process.env.UAPLEX_VERBOSE) debug.setLogLevel(debug.LogLevel.Error);

const ua = require("node-opcua-client");
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds } = ua;

const ENDPOINT = process.env.UAPLEX_ENDPOINT || "opc.tcp://127.0.0.1:4840";
// --peer: relax the few assertions where node-opcua's server legitimately differs from
// what OPC UA Part 4/6 demands of uaplex. Every use is commented at the assertion.
const PEER = process.env.UAPLEX_PEER === "1";
const DEMO_URI = "urn:uaplex:demo";
const OPCUA_URI = "http://opcfoundation.org/UA/";

const endpointUrl = new URL(ENDPOINT.replace(/^opc\.tcp:/, "http:"));
const HOST = endpointUrl.hostname.replace(/^\[|\]$/g, "");
const PORT = Number(endpointUrl.port || 4840);

// Per-test time budgets (ms). The whole suite stays well under two minutes.
const T_SHORT = 8000;
const T_LONG = 20000;

function makeClient(extra = {}) {
    return OPCUAClient.create({
        applicationName: "uaplex-interop-client",
        applicationUri: "urn:uaplex:interop:client",
        endpointMustExist: false,
        securityMode: MessageSecurityMode.None,
        securityPolicy: SecurityPolicy.None,
        connectionStrategy: { maxRetry: 0, initialDelay: 100, maxDelay: 200 },
        transportTimeout: 5000,
        defaultTransactionTimeout: 5000,
        requestedSessionTimeout: 30000,
        keepSessionAlive: false,
        ...extra,
    });
}

async function connect(extra) {
    const client = makeClient(extra);
    await client.connect(ENDPOINT);
    return client;
}

async function disconnect(client) {
    try {
        await client.disconnect();
    } catch {
        /* already gone */
    }
}

// Runs fn(session, client) in a fresh anonymous session, always closing it.
async function withSession(fn) {
    const client = await connect();
    let session;
    try {
        session = await client.createSession();
        return await fn(session, client);
    } finally {
        if (session) {
            try {
                await session.close();
            } catch {
                /* ignore */
            }
        }
        await disconnect(client);
    }
}

// One test-file-wide session: open in before(), close in after().
function sharedSession() {
    const state = { client: null, session: null, ns: null, demo: -1 };
    state.open = async () => {
        state.client = await connect();
        state.session = await state.client.createSession();
        state.ns = await readNamespaceArray(state.session);
        state.demo = state.ns.indexOf(DEMO_URI);
        assert.ok(state.demo > 1, `${DEMO_URI} missing from NamespaceArray ${JSON.stringify(state.ns)}`);
    };
    state.close = async () => {
        if (state.session) {
            try {
                await state.session.close();
            } catch {
                /* ignore */
            }
        }
        if (state.client) await disconnect(state.client);
    };
    return state;
}

async function readNamespaceArray(session) {
    const dv = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
    assertGood(dv.statusCode, "read NamespaceArray");
    return dv.value.value;
}

function statusName(sc) {
    if (sc == null) return String(sc);
    if (typeof sc === "number") return `0x${(sc >>> 0).toString(16).padStart(8, "0")}`;
    return `${sc.name} (0x${(sc.value >>> 0).toString(16).padStart(8, "0")})`;
}

// Compare on the code part only (upper 16 bits); info bits are not part of the code.
function codeOf(sc) {
    const v = typeof sc === "number" ? sc : sc.value;
    return (v >>> 16) & 0xffff;
}

function isStatus(sc, expected) {
    return codeOf(sc) === codeOf(expected);
}

function assertStatus(sc, expected, what) {
    const list = Array.isArray(expected) ? expected : [expected];
    assert.ok(
        list.some((e) => isStatus(sc, e)),
        `${what}: got ${statusName(sc)}, expected ${list.map(statusName).join(" or ")}`,
    );
}

function assertGood(sc, what) {
    assert.ok(codeOf(sc) === 0, `${what}: got ${statusName(sc)}, expected Good`);
}

// Canonical, comparable form of a decoded value (scalars and arrays).
function canon(v) {
    if (v === null || v === undefined) return null;
    if (Array.isArray(v) || ArrayBuffer.isView(v)) {
        if (Buffer.isBuffer(v)) return `buf:${v.toString("hex")}`;
        return Array.from(v, canon);
    }
    if (v instanceof Date) return `date:${v.getTime()}`;
    if (typeof v === "bigint") return `big:${v}`;
    if (typeof v !== "object") return v;
    if (v instanceof ua.Variant) return { dataType: v.dataType, arrayType: v.arrayType, value: canon(v.value) };
    if (v instanceof ua.DataValue) return { value: canon(v.value), status: v.statusCode ? v.statusCode.value : 0 };
    if (v instanceof ua.DiagnosticInfo) {
        return {
            symbolicId: v.symbolicId,
            namespaceUri: v.namespaceUri,
            locale: v.locale,
            localizedText: v.localizedText,
            additionalInfo: v.additionalInfo,
            inner: v.innerStatusCode ? v.innerStatusCode.value : 0,
        };
    }
    if (v instanceof ua.NodeId || v instanceof ua.ExpandedNodeId) return `nodeid:${v.toString()}`;
    if (v instanceof ua.QualifiedName) return `qn:${v.namespaceIndex}:${v.name}`;
    if (v instanceof ua.LocalizedText) return `lt:${v.locale || ""}|${v.text || ""}`;
    if (typeof v.value === "number" && typeof v.name === "string" && typeof v.description === "string") {
        return `status:${v.value >>> 0}`; // a StatusCode
    }
    // An ExtensionObject: compare its own enumerable fields.
    const out = { type: v.constructor && v.constructor.name };
    for (const k of Object.keys(v)) {
        if (k.startsWith("_")) continue;
        out[k] = canon(v[k]);
    }
    return out;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits up to `ms` for `fn()` to hold, looking every 20 ms; fails naming `what`. */
async function until(what, ms, fn) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (fn()) return;
        await sleep(20);
    }
    assert.fail(`timed out waiting for ${what}`);
}

module.exports = {
    ua,
    assert,
    ENDPOINT,
    HOST,
    PORT,
    PEER,
    DEMO_URI,
    OPCUA_URI,
    T_SHORT,
    T_LONG,
    makeClient,
    connect,
    disconnect,
    withSession,
    sharedSession,
    readNamespaceArray,
    statusName,
    isStatus,
    assertStatus,
    assertGood,
    canon,
    sleep,
    until,
};
