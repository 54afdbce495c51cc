// SPDX-License-Identifier: Apache-2.0
// Raw OPC UA TCP (Part 6 §7.1) over node's net module: build Hello messages and hostile
// variants of them, send bytes, and collect what the server answers until it closes the
// socket or a deadline passes.
"use strict";

const net = require("node:net");

const HEADER = 8;

function uaString(s) {
    if (s === null) {
        const b = Buffer.alloc(4);
        b.writeInt32LE(-1, 0);
        return b;
    }
    const body = Buffer.from(s, "utf8");
    const len = Buffer.alloc(4);
    len.writeInt32LE(body.length, 0);
    return Buffer.concat([len, body]);
}

function message(type, body, declaredSize) {
    const h = Buffer.alloc(HEADER);
    h.write(type, 0, "ascii"); // e.g. "HELF"
    h.writeUInt32LE(declaredSize === undefined ? HEADER + body.length : declaredSize >>> 0, 4);
    return Buffer.concat([h, body]);
}

// A Hello; any field can be overridden, and the header's size can lie (declaredSize),
// and the URL's length prefix can lie (urlLength).
function hello(opts = {}) {
    const o = {
        protocolVersion: 0,
        receiveBufferSize: 65536,
        sendBufferSize: 65536,
        maxMessageSize: 0,
        maxChunkCount: 0,
        endpointUrl: "opc.tcp://127.0.0.1:4840",
        ...opts,
    };
    const fixed = Buffer.alloc(20);
    fixed.writeUInt32LE(o.protocolVersion >>> 0, 0);
    fixed.writeUInt32LE(o.receiveBufferSize >>> 0, 4);
    fixed.writeUInt32LE(o.sendBufferSize >>> 0, 8);
    fixed.writeUInt32LE(o.maxMessageSize >>> 0, 12);
    fixed.writeUInt32LE(o.maxChunkCount >>> 0, 16);
    let url = uaString(o.endpointUrl);
    if (o.urlLength !== undefined) url.writeInt32LE(o.urlLength, 0);
    return message("HELF", Buffer.concat([fixed, url]), o.declaredSize);
}

// Splits received bytes into messages; a trailing partial message is reported as such.
function parse(data) {
    const out = [];
    let off = 0;
    while (data.length - off >= HEADER) {
        const type = data.toString("ascii", off, off + 4);
        const size = data.readUInt32LE(off + 4);
        if (size < HEADER || data.length - off < size) {
            out.push({ type, size, partial: true });
            break;
        }
        const body = data.subarray(off + HEADER, off + size);
        const m = { type, size };
        if (type === "ACKF" && body.length >= 20) {
            m.protocolVersion = body.readUInt32LE(0);
            m.receiveBufferSize = body.readUInt32LE(4);
            m.sendBufferSize = body.readUInt32LE(8);
            m.maxMessageSize = body.readUInt32LE(12);
            m.maxChunkCount = body.readUInt32LE(16);
        } else if (type === "ERRF" && body.length >= 4) {
            m.error = body.readUInt32LE(0);
            if (body.length >= 8) {
                const n = body.readInt32LE(4);
                m.reason = n > 0 ? body.toString("utf8", 8, 8 + Math.min(n, body.length - 8)) : "";
            }
        }
        out.push(m);
        off += size;
    }
    return out;
}

function openSocket(host, port, ms) {
    return new Promise((resolve, reject) => {
        const sock = net.connect({ host, port });
        const timer = setTimeout(() => {
            sock.destroy();
            reject(new Error(`no TCP connection to ${host}:${port} within ${ms} ms`));
        }, ms);
        sock.once("connect", () => {
            clearTimeout(timer);
            resolve(sock);
        });
        sock.once("error", (err) => {
            clearTimeout(timer);
            reject(err);
        });
    });
}

// Connects, writes each chunk of `parts` in turn (awaiting `stepMs` between them), and
// collects the answer. Resolves with {messages, closed, ms} when the server closes the
// socket, or when `waitMs` has passed (closed: false). The socket is always destroyed.
async function exchange(host, port, parts, { waitMs = 2500, stepMs = 20 } = {}) {
    const sock = await openSocket(host, port, 2000);
    const started = Date.now();
    const chunks = [];
    let closed = false;
    let resetByPeer = false;
    const done = new Promise((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        sock.on("data", (d) => chunks.push(d));
        sock.on("error", (err) => {
            // A reset after the server closed on us counts as closed.
            if (err.code === "ECONNRESET" || err.code === "EPIPE") resetByPeer = true;
        });
        sock.on("close", () => {
            closed = true;
            clearTimeout(timer);
            resolve();
        });
    });
    for (const p of parts) {
        if (closed || sock.destroyed) break;
        if (typeof p === "number") {
            await new Promise((r) => setTimeout(r, p));
            continue;
        }
        sock.write(p);
        await new Promise((r) => setTimeout(r, stepMs));
    }
    await done;
    const ms = Date.now() - started;
    sock.destroy();
    const data = Buffer.concat(chunks);
    return { messages: parse(data), bytes: data.length, closed, resetByPeer, ms };
}

module.exports = { hello, message, uaString, parse, exchange, openSocket };
