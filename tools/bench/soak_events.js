// SPDX-License-Identifier: Apache-2.0
// The soak's event client: node-opcua's client (tests/interop/client/node_modules) with its
// standard reconnection, one subscription with an event item on the demo notifier
// Demo.Events. Every 10 s it prints one JSON line: events and notification messages so far,
// sequence-number gaps, errors. It runs until SIGTERM, then closes its session and exits 0
// when no error was seen.
"use strict";

const path = require("path");
const ua = require(path.join(__dirname, "..", "..", "tests", "interop", "client", "node_modules", "node-opcua-client"));
const { OPCUAClient, MessageSecurityMode, SecurityPolicy, AttributeIds, ClientSubscription, TimestampsToReturn, constructEventFilter } = ua;

const endpoint = process.argv[2] || "opc.tcp://127.0.0.1:4870";
const state = { events: 0, messages: 0, gaps: 0, errors: [], lastSeq: 0, reconnects: 0 };
let client, session, sub, stopping = false;

function report() {
    process.stdout.write(JSON.stringify({ events: state.events, messages: state.messages, gaps: state.gaps,
        reconnects: state.reconnects, errors: state.errors.slice(0, 5), error_count: state.errors.length }) + "\n");
}

function fail(what) {
    state.errors.push(String(what));
}

async function main() {
    client = OPCUAClient.create({
        applicationName: "uaplex-soak-events",
        endpointMustExist: false,
        securityMode: MessageSecurityMode.None,
        securityPolicy: SecurityPolicy.None,
        keepSessionAlive: true,
        requestedSessionTimeout: 60000,
        connectionStrategy: { maxRetry: 1000000, initialDelay: 200, maxDelay: 2000 },
    });
    client.on("connection_lost", () => state.reconnects++);
    await client.connect(endpoint);
    session = await client.createSession();
    const ns = (await session.readNamespaceArray()).indexOf("urn:uaplex:demo");
    if (ns < 2) throw new Error("urn:uaplex:demo missing from NamespaceArray");
    sub = ClientSubscription.create(session, {
        requestedPublishingInterval: 100, requestedLifetimeCount: 600, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 1000, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
    sub.on("internal_error", (e) => fail(`subscription: ${e.message}`));
    sub.on("terminated", () => { if (!stopping) fail("subscription terminated"); });
    // Sequence numbers of notification messages must follow each other (keep-alives carry none).
    sub.on("raw_notification", (msg) => {
        if (!msg.notificationData || msg.notificationData.length === 0) return;
        state.messages++;
        if (state.lastSeq !== 0 && msg.sequenceNumber !== state.lastSeq + 1) state.gaps++;
        state.lastSeq = msg.sequenceNumber;
    });
    const item = await sub.monitor(
        { nodeId: `ns=${ns};s=Demo.Events`, attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 1000,
          filter: constructEventFilter(["EventId", "EventType", "Message", "Severity"]) },
        TimestampsToReturn.Both,
    );
    if (!item.statusCode.isGood || !item.statusCode.isGood()) {
        if (item.statusCode.value !== 0) throw new Error(`event item: ${item.statusCode.toString()}`);
    }
    item.on("changed", () => state.events++);
    item.on("err", (e) => fail(`event item: ${e}`));
    setInterval(report, 10000).unref();
    process.stdout.write(JSON.stringify({ ready: true }) + "\n");
}

async function stop() {
    stopping = true;
    try {
        if (sub) await sub.terminate();
        if (session) await session.close();
        if (client) await client.disconnect();
    } catch (e) {
        fail(`close: ${e.message}`);
    }
    report();
    process.exit(state.errors.length === 0 && state.gaps === 0 ? 0 : 1);
}

process.on("SIGTERM", stop);
process.on("SIGINT", stop);
main().catch((e) => {
    fail(e.message);
    report();
    process.exit(1);
});
