// SPDX-License-Identifier: Apache-2.0
// The cases of netfault_test.sh, run in the client's namespace with node-opcua's client
// (tests/interop/client, pinned 2.182.x) and its standard reconnection. After every case the
// client's sessions are closed (or have timed out) and the server must be back where it was:
// no session, subscription or descriptor more than before the case. Subscriptions must keep
// every NotificationMessage: the sequence numbers of the data messages received (Publish or
// Republish) have no hole. Usage: node netfault.js [case-name-substring ...]
"use strict";

const assert = require("assert/strict");
const { execFileSync, spawn } = require("child_process");
const net = require("net");
const path = require("path");
const readline = require("readline");
const fs = require("fs");
const ua = require(path.join(process.env.NF_CLIENT_DIR, "node_modules", "node-opcua-client"));
const { OPCUAClient, AttributeIds, ClientSubscription, TimestampsToReturn, UserTokenType } = ua;

const E = process.env;
const ENDPOINT = E.NF_ENDPOINT;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Number(process.hrtime.bigint() / 1000000n);
function log(...a) {
    console.log(`[netfault +${((now() - T0) / 1000).toFixed(1)}s]`, ...a);
}
const T0 = now();

// --- the link --------------------------------------------------------------------------
// impair({delay_ms, jitter_ms, loss, reorder, drop}): both directions.
function impair(rules) {
    if (E.NF_MODE === "netem") {
        for (const dev of ["m0", "m1"]) {
            const args = ["-n", E.NF_M, "qdisc", "replace", "dev", dev, "root", "netem"];
            if (rules.drop) args.push("loss", "100%");
            else {
                args.push("delay", `${rules.delay_ms || 0}ms`);
                if (rules.jitter_ms) args.push(`${rules.jitter_ms}ms`);
                if (rules.loss) args.push("loss", `${rules.loss * 100}%`);
                if (rules.reorder) args.push("reorder", `${rules.reorder * 100}%`);
            }
            execFileSync("tc", args);
        }
    } else {
        const tmp = E.NF_CONTROL + ".tmp";
        fs.writeFileSync(tmp, JSON.stringify(rules));
        fs.renameSync(tmp, E.NF_CONTROL);
    }
    log("link:", JSON.stringify(rules));
}
function linkUp(up) {
    execFileSync("ip", ["-n", E.NF_M, "link", "set", "m0", up ? "up" : "down"]);
    log(`link m0 ${up ? "up" : "down"}`);
}
// Aborts TCP connections to the server port, as seen from one side: the kernel sends a RST.
function resetConnections(side) {
    const ns = side === "client" ? E.NF_C : E.NF_S;
    const filter = side === "client" ? ["dport", "=", ":4840"] : ["sport", "=", ":4840", "dst", "10.77.0.2"];
    const out = execFileSync("ip", ["netns", "exec", ns, "ss", "-K", "-t", "-n", ...filter]).toString();
    const n = out.trim().split("\n").length - 1;
    log(`reset ${n} connection(s) from the ${side} side`);
    return n;
}

// --- the observer in the server's namespace ---------------------------------------------
let diagProc, diagLines;
async function startDiag() {
    diagProc = spawn("ip", ["netns", "exec", E.NF_S, "node", path.join(E.NF_HERE, "diag.js")],
        { stdio: ["pipe", "pipe", "inherit"], env: E });
    diagLines = readline.createInterface({ input: diagProc.stdout })[Symbol.asyncIterator]();
    const first = await nextJson();
    assert.ok(first.ready, `observer: ${JSON.stringify(first)}`);
}
// node-opcua's warnings share the observer's stdout: its answers are the lines that are JSON
async function nextJson() {
    for (;;) {
        const { value, done } = await diagLines.next();
        if (done) throw new Error("observer: exited");
        if (value.startsWith("{")) return JSON.parse(value);
    }
}
async function diag() {
    diagProc.stdin.write("read\n");
    const r = await nextJson();
    if (r.error) throw new Error(`observer: ${r.error}`);
    return r;
}
async function until(what, pred, ms) {
    const end = now() + ms;
    let last;
    while (now() < end) {
        last = await diag();
        if (pred(last)) return last;
        await sleep(50);
    }
    throw new Error(`${what}: not within ${ms} ms (last ${JSON.stringify(last)})`);
}

// --- clients --------------------------------------------------------------------------
const operator = { type: UserTokenType.UserName, userName: "operator", password: "op-secret" };

function makeClient(extra = {}) {
    return OPCUAClient.create({
        applicationName: "uaplex-netfault",
        endpointMustExist: false,
        keepSessionAlive: true,
        requestedSessionTimeout: 20000,
        connectionStrategy: { maxRetry: 1000, initialDelay: 200, maxDelay: 1000 },
        transportTimeout: 3000,
        ...extra,
    });
}

// A subscription on Demo.Dynamic (changes every 100 ms): every publishing interval has data.
async function subscribe(session, demoNs) {
    const sub = ClientSubscription.create(session, {
        requestedPublishingInterval: 200, requestedLifetimeCount: 300, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 0, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
    const seqs = new Set();
    sub.on("raw_notification", (msg) => {
        if (msg.notificationData && msg.notificationData.length) seqs.add(msg.sequenceNumber);
    });
    const item = await sub.monitor({ nodeId: `ns=${demoNs};s=Demo.Dynamic`, attributeId: AttributeIds.Value },
        { samplingInterval: 100, queueSize: 10, discardOldest: true }, TimestampsToReturn.Both);
    assert.ok(item.statusCode.value === 0, `monitored item: ${item.statusCode.toString()}`);
    return { sub, seqs };
}
function assertNoHole(seqs, what) {
    const s = [...seqs].sort((a, b) => a - b);
    assert.ok(s.length >= 3, `${what}: only ${s.length} data message(s)`);
    const holes = [];
    for (let i = 1; i < s.length; i++) if (s[i] !== s[i - 1] + 1) holes.push(`${s[i - 1]}..${s[i]}`);
    assert.deepEqual(holes, [], `${what}: sequence numbers lost (${s[0]}..${s[s.length - 1]}, ${s.length} messages)`);
    return s;
}
async function waitMessages(seqs, n, ms, what) {
    const end = now() + ms;
    const start = seqs.size;
    while (seqs.size < start + n) {
        if (now() > end) throw new Error(`${what}: ${seqs.size - start} of ${n} data messages in ${ms} ms`);
        await sleep(50);
    }
}
async function open(extra, identity) {
    const client = makeClient(extra);
    const events = [];
    for (const ev of ["connection_lost", "connection_reestablished", "after_reconnection", "start_reconnection", "close", "abort"])
        client.on(ev, () => { events.push(ev); log(`client: ${ev}`); });
    await client.connect(ENDPOINT);
    const session = await client.createSession(identity);
    const ns = (await session.readNamespaceArray()).indexOf("urn:uaplex:demo");
    assert.ok(ns > 1, "urn:uaplex:demo missing");
    return { client, session, ns, events };
}
async function close(c) {
    try {
        await c.session.close(true);
    } catch (e) {
        log(`close session: ${e.message}`);
    }
    await c.client.disconnect();
}
async function reads(session, n, ms) {
    const end = now() + ms;
    for (let i = 0; i < n; i++) {
        const dv = await session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
        assert.equal(dv.statusCode.value, 0, `read ${i}: ${dv.statusCode.toString()}`);
        if (now() > end) throw new Error(`${n} reads not done within ${ms} ms`);
    }
}
// Reads that may meet a connection break (a lost segment past the client's socket timeout):
// the client's reconnection must restore the session, and the reads go on.
async function readsThroughBreaks(c, n, ms) {
    const end = now() + ms;
    for (let i = 0; i < n; i++) {
        try {
            const dv = await c.session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
            assert.equal(dv.statusCode.value, 0, `read ${i}: ${dv.statusCode.toString()}`);
        } catch (e) {
            if (!c.events.includes("connection_lost")) throw e;
            log(`read ${i}: ${e.message}; waiting for the reconnection`);
            const lost = c.events.lastIndexOf("connection_lost");
            const back = () => c.events.slice(lost).some((ev) => ev === "connection_reestablished" || ev === "after_reconnection");
            while (!back()) {
                if (now() > end) throw new Error(`no reconnection after read ${i} (events ${c.events})`);
                await sleep(100);
            }
        }
        if (now() > end) throw new Error(`${n} reads not done within ${ms} ms`);
    }
}
async function whenReconnected(c, ms) {
    const end = now() + ms;
    while (!c.events.includes("connection_reestablished") && !c.events.includes("after_reconnection")) {
        if (now() > end) throw new Error(`no reconnection within ${ms} ms (events ${c.events})`);
        await sleep(100);
    }
}

// --- cases ----------------------------------------------------------------------------
let baseline;
const cases = [];
const test = (name, ms, fn) => cases.push({ name, ms, fn });

test("latency 80 ms +- 40 ms: reads and the subscription go on, no sequence number lost", 30000, async () => {
    impair({ delay_ms: 80, jitter_ms: 40 });
    const c = await open();
    const { seqs } = await subscribe(c.session, c.ns);
    await reads(c.session, 20, 15000);
    await waitMessages(seqs, 15, 10000, "data messages");
    assertNoHole(seqs, "latency");
    await close(c);
});

test("loss 5 % and reordering 10 %: no sequence number lost", 40000, async () => {
    impair({ delay_ms: 20, jitter_ms: 10, loss: 0.05, reorder: 0.1 });
    const c = await open();
    const { seqs } = await subscribe(c.session, c.ns);
    await readsThroughBreaks(c, 30, 25000);
    await waitMessages(seqs, 15, 15000, "data messages");
    assertNoHole(seqs, "loss and reordering");
    await close(c);
});

test("link down 6 s and back: same session reactivated, Republish fills the gap", 45000, async () => {
    impair({});
    const c = await open();
    const sessionId = c.session.sessionId.toString();
    const { sub, seqs } = await subscribe(c.session, c.ns);
    const subscriptionId = sub.subscriptionId;
    await waitMessages(seqs, 5, 5000, "before");
    linkUp(false);
    await sleep(6000);
    linkUp(true);
    await whenReconnected(c, 20000);
    await waitMessages(seqs, 10, 10000, "after the reconnection");
    assert.equal(c.session.sessionId.toString(), sessionId, "the session was not reactivated");
    assert.equal(sub.subscriptionId, subscriptionId, "the subscription was recreated");
    assertNoHole(seqs, "link down and back");
    await close(c);
});

test("link down past the session timeout: TransferSubscriptions to a new session, no sequence number lost", 60000, async () => {
    impair({});
    const before = await diag();
    const c = await open({ requestedSessionTimeout: 4000 }, operator);
    const sessionId = c.session.sessionId.toString();
    const { sub, seqs } = await subscribe(c.session, c.ns);
    const subscriptionId = sub.subscriptionId;
    await waitMessages(seqs, 5, 5000, "before");
    linkUp(false);
    const down = now();
    const timedOut = await until("the session timing out", (d) => d.sessionTimeouts > before.sessionTimeouts, 10000);
    log(`session timed out ${now() - down} ms after the link went down`);
    log(`server after the timeout: ${JSON.stringify(timedOut)}`);
    linkUp(true);
    await whenReconnected(c, 25000);
    await waitMessages(seqs, 10, 15000, "after the transfer");
    assert.notEqual(c.session.sessionId.toString(), sessionId, "expected a new session");
    assert.equal(sub.subscriptionId, subscriptionId, "the subscription was recreated, not transferred");
    assertNoHole(seqs, "transfer");
    await close(c);
});

test("resets mid-message from either side and a half-sent chunk: reconnection, nothing lost", 60000, async () => {
    impair({ delay_ms: 30, jitter_ms: 10 });
    // large responses keep a message on the wire most of the time: Browse of 200 references
    const browseLoop = (c) => {
        const st = { stop: false, browses: 0, errors: 0 };
        st.done = (async () => {
            while (!st.stop) {
                try {
                    await c.session.browse({ nodeId: "ns=1;i=1000", browseDirection: 0, resultMask: 63 });
                    st.browses++;
                } catch (e) {
                    if (st.errors++ < 3) log(`browse: ${e.message}`);
                    await sleep(100);
                }
            }
        })();
        return st;
    };
    // The server aborts its connection (RST to the client, ECONNRESET): node-opcua reconnects.
    const c = await open();
    const { sub, seqs } = await subscribe(c.session, c.ns);
    const subscriptionId = sub.subscriptionId;
    const load = browseLoop(c);
    await waitMessages(seqs, 3, 5000, "before");
    for (let i = 0; i < 2; i++) {
        await sleep(700);
        const back = c.events.filter((e) => e === "connection_reestablished" || e === "after_reconnection").length;
        assert.ok(resetConnections("server") >= 1, "no connection to reset on the server side");
        const end = now() + 20000;
        while (c.events.filter((e) => e === "connection_reestablished" || e === "after_reconnection").length <= back) {
            if (now() > end) throw new Error(`no reconnection after the server's reset (${c.events})`);
            await sleep(100);
        }
        await waitMessages(seqs, 3, 10000, `after reset ${i + 1}`);
    }
    load.stop = true;
    await load.done;
    log(`${load.browses} browses (${load.errors} failed across the resets)`);
    assert.ok(load.browses > 10);
    assert.equal(sub.subscriptionId, subscriptionId, "the subscription was recreated");
    assertNoHole(seqs, "resets");
    await close(c);
    // The client aborts (RST to the server in the middle of its Browse responses). node-opcua
    // takes a local abort for a close and does not reconnect; its session times out (2 s).
    const d = await open({ requestedSessionTimeout: 2000, keepSessionAlive: false });
    const load2 = browseLoop(d);
    await sleep(1000);
    assert.ok(resetConnections("client") >= 1, "no connection to reset on the client side");
    await sleep(300);
    load2.stop = true;
    await load2.done;
    await d.client.disconnect().catch(() => {});
    // a raw connection that sends Hello and half of an OpenSecureChannel chunk, then a RST
    await new Promise((resolve, reject) => {
        const s = net.connect(4840, "10.77.0.1", () => {
            const url = Buffer.from(ENDPOINT);
            const hel = Buffer.alloc(32 + url.length);
            hel.write("HELF", 0);
            hel.writeUInt32LE(hel.length, 4);
            [0, 65536, 65536, 16777216, 0].forEach((v, i) => hel.writeUInt32LE(v, 8 + 4 * i));
            hel.writeInt32LE(url.length, 28);
            url.copy(hel, 32);
            s.write(hel);
            const opn = Buffer.alloc(60);
            opn.write("OPNF", 0);
            opn.writeUInt32LE(132, 4); // announces 132 bytes, sends 60
            s.write(opn, () => setTimeout(() => { s.resetAndDestroy(); resolve(); }, 200));
        });
        s.on("error", () => {});
        setTimeout(() => reject(new Error("raw connection: no connect")), 5000);
    });
});

test("TimeoutHint, session timeout and channel lifetime fire as configured under 150 ms latency", 60000, async () => {
    impair({ delay_ms: 150 });
    // TimeoutHint: a Publish parked on a subscription with nothing to send for 20 s
    {
        const c = await open({ keepSessionAlive: false, transportTimeout: 30000 });
        const created = await c.session.createSubscription({ requestedPublishingInterval: 10000,
            requestedLifetimeCount: 30, requestedMaxKeepAliveCount: 3, publishingEnabled: true });
        // the first keep-alive is due at the first publishing interval (10 s)
        // node-opcua waits for an answer exactly as long as the TimeoutHint it sends (at least
        // 5 s), shorter than the hint plus the way there and back: it sees the first read of
        // the header's hint (its own timer, 4 s), the encoder every later one (1000 ms).
        const onChannel = (ch) => ch.on("beforePerformTransaction", (_t, req) => {
            if (req.constructor.name !== "PublishRequest") return;
            let set = false;
            Object.defineProperty(req.requestHeader, "timeoutHint", {
                get: () => (set ? 1000 : 4000), set: () => { set = true; }, configurable: true });
        });
        onChannel(c.client._secureChannel);
        const t = now();
        let status;
        try {
            const r = await c.session.publish({ subscriptionAcknowledgements: [] });
            status = r.responseHeader.serviceResult.name;
        } catch (e) {
            status = e.message;
        }
        const took = now() - t;
        log(`Publish with TimeoutHint 1000: ${status} after ${took} ms`);
        assert.match(status, /BadTimeout/);
        // from its arrival (one way, 150 ms) plus the way back; the sweep runs every 20 ms
        assert.ok(took >= 1000 + 250 && took <= 1000 + 300 + 1500, `answered after ${took} ms`);
        await c.session.deleteSubscriptions({ subscriptionIds: [created.subscriptionId] });
        await close(c);
    }
    // Session timeout: 2000 ms from the last request's arrival, with every packet dropped after it
    {
        const before = await diag();
        const c = await open({ keepSessionAlive: false, requestedSessionTimeout: 2000 });
        assert.equal(c.session.timeout, 2000, "revised session timeout");
        await c.session.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
        const answered = now();
        impair({ drop: true });
        const arrived = answered - 150;
        await until("the session timing out", (d) => d.sessionTimeouts > before.sessionTimeouts, 6000);
        const at = now() - arrived;
        log(`session timed out ${at} ms after the last request arrived`);
        assert.ok(at >= 2000 - 100 && at <= 2000 + 1500, `session timeout fired after ${at} ms`);
        impair({ delay_ms: 150 });
        await c.client.disconnect();
    }
    // Channel lifetime: 3000 ms, not renewed (every packet dropped): closed after 1.25 x
    {
        const idle = await until("descriptors at the baseline", (d) => d.fds <= baseline.fds, 20000);
        const c = await open({ keepSessionAlive: false, defaultSecureTokenLifetime: 3000 });
        const token = c.client._secureChannel.activeSecurityToken;
        const lifetime = token.revisedLifetime;
        assert.equal(lifetime, 3000, "revised token lifetime");
        impair({ drop: true });
        const withChannel = await diag();
        assert.equal(withChannel.fds, idle.fds + 1, "the client's connection is open");
        await until("the channel closing", (d) => d.fds <= idle.fds, 3750 + 4000);
        // createdAt is the server's clock, the same as this machine's
        const at = Date.now() - token.createdAt.getTime();
        log(`channel closed ${at} ms after its token was created (lifetime ${lifetime} ms)`);
        assert.ok(at >= 1.25 * lifetime - 100 && at <= 1.25 * lifetime + 2500,
                  `channel closed after ${at} ms, expected lifetime + 25 % = ${1.25 * lifetime} ms`);
        impair({});
        c.client.disconnect().catch(() => {});
        await sleep(200);
    }
});

// --- runner ---------------------------------------------------------------------------
async function main() {
    const only = process.argv.slice(2);
    await startDiag();
    baseline = await diag();
    log("baseline", JSON.stringify(baseline));
    let failed = 0;
    for (const c of cases) {
        if (only.length && !only.some((o) => c.name.includes(o))) continue;
        log(`--- ${c.name}`);
        let timer;
        try {
            await Promise.race([c.fn(), new Promise((_, rej) => { timer = setTimeout(() => rej(new Error(`case timeout ${c.ms} ms`)), c.ms); })]);
            clearTimeout(timer);
            impair({});
            linkUp(true);
            // after the case nothing is left: the observer's session only, no subscription, and
            // the descriptors of before (dead connections closed by their timeouts or RSTs)
            const after = await until("the server back at its baseline",
                (d) => d.sessions <= baseline.sessions && d.subscriptions <= baseline.subscriptions && d.fds <= baseline.fds,
                20000);
            log(`ok (server: ${JSON.stringify(after)})`);
        } catch (e) {
            clearTimeout(timer);
            failed++;
            log(`FAILED: ${e.stack || e.message}`);
            try { impair({}); linkUp(true); } catch (_) { /* next case starts clean or fails */ }
            await sleep(3000);
        }
    }
    diagProc.stdin.write("quit\n");
    log(failed ? `${failed} case(s) failed` : "all cases passed");
    process.exit(failed ? 1 : 0);
}
main().catch((e) => { log(`FAILED: ${e.stack}`); process.exit(1); });
