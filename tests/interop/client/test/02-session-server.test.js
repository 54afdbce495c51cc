// SPDX-License-Identifier: Apache-2.0
// Sessions and the Server object: ServerStatus, NamespaceArray, ServerArray, OperationLimits,
// the diagnostics arrays.
"use strict";

const { test, before, after } = require("node:test");
const {
    ua, assert, T_SHORT, OPCUA_URI, DEMO_URI, withSession, sharedSession, assertGood, sleep,
} = require("../lib/ua");
const { AttributeIds, DataType, NodeClass, BrowseDirection } = ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

test("CreateSession and ActivateSession anonymously", { timeout: T_SHORT }, async () => {
    await withSession(async (session) => {
        assert.ok(session.sessionId, "no sessionId");
        assert.ok(!session.sessionId.isEmpty(), "empty sessionId");
        const dv = await session.read({ nodeId: "i=2259", attributeId: AttributeIds.Value });
        assertGood(dv.statusCode, "read ServerStatus.State in a fresh session");
    });
});

test("two sessions on two channels are independent", { timeout: T_SHORT }, async () => {
    await withSession(async (a) => {
        await withSession(async (b) => {
            assert.notEqual(a.sessionId.toString(), b.sessionId.toString());
            const [ra, rb] = await Promise.all([a.read({ nodeId: "i=2259" }), b.read({ nodeId: "i=2259" })]);
            assertGood(ra.statusCode, "session a");
            assertGood(rb.statusCode, "session b");
        });
    });
});

test("ServerStatus: State Running, CurrentTime advancing, BuildInfo present", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const state = await s.read({ nodeId: "i=2259" });
    assertGood(state.statusCode, "State");
    assert.equal(state.value.value, 0, "ServerState is not Running (0)");

    const t1 = await s.read({ nodeId: "i=2258" });
    assertGood(t1.statusCode, "CurrentTime");
    assert.equal(t1.value.dataType, DataType.DateTime);
    await sleep(1100);
    const t2 = await s.read({ nodeId: "i=2258" });
    assert.ok(t2.value.value.getTime() > t1.value.value.getTime(), "CurrentTime did not advance");
    // The server clock is this machine's clock: within a minute of ours.
    assert.ok(Math.abs(t2.value.value.getTime() - Date.now()) < 60000, "CurrentTime is far from now");

    const start = await s.read({ nodeId: "i=2257" });
    assertGood(start.statusCode, "StartTime");
    assert.ok(start.value.value.getTime() <= t2.value.value.getTime(), "StartTime after CurrentTime");

    const whole = await s.read({ nodeId: "i=2256" });
    assertGood(whole.statusCode, "ServerStatus");
    const st = whole.value.value;
    assert.equal(st.state, 0);
    assert.ok(st.buildInfo, "ServerStatus without BuildInfo");

    const bi = await s.read({ nodeId: "i=2260" });
    assertGood(bi.statusCode, "BuildInfo");
    const info = bi.value.value;
    assert.ok(info.productName, "BuildInfo.ProductName empty");
    assert.ok(info.productUri, "BuildInfo.ProductUri empty");
    assert.ok(info.manufacturerName, "BuildInfo.ManufacturerName empty");
    assert.ok(info.softwareVersion, "BuildInfo.SoftwareVersion empty");
    assert.ok(info.buildDate instanceof Date, "BuildInfo.BuildDate not a DateTime");
    for (const [id, field] of [[2261, "productName"], [2262, "productUri"], [2263, "manufacturerName"], [2264, "softwareVersion"]]) {
        const dv = await s.read({ nodeId: `i=${id}` });
        assertGood(dv.statusCode, `BuildInfo.${field}`);
        assert.equal(dv.value.value, info[field], `BuildInfo.${field} differs from the structure`);
    }
});

test("NamespaceArray: [0] OPC UA, [1] the server's ApplicationUri, demo namespace present", { timeout: T_SHORT }, async () => {
    const ns = S.ns;
    assert.ok(Array.isArray(ns) && ns.length >= 3, `NamespaceArray ${JSON.stringify(ns)}`);
    assert.equal(ns[0], OPCUA_URI);
    const endpoints = await S.client.getEndpoints();
    assert.equal(ns[1], endpoints[0].server.applicationUri, "NamespaceArray[1] is not the ApplicationUri");
    assert.ok(ns.includes(DEMO_URI));
    assert.equal(new Set(ns).size, ns.length, "duplicate namespace URIs");
    const dv = await S.session.read({ nodeId: "i=2255", attributeId: AttributeIds.DataType });
    assert.equal(dv.value.value.toString(), "ns=0;i=12", "NamespaceArray DataType is not String");
});

test("ServerArray lists the server's ApplicationUri first", { timeout: T_SHORT }, async () => {
    const dv = await S.session.read({ nodeId: "i=2254" });
    assertGood(dv.statusCode, "ServerArray");
    assert.ok(Array.isArray(dv.value.value) && dv.value.value.length >= 1);
    assert.equal(dv.value.value[0], S.ns[1]);
});

test("ServerCapabilities.OperationLimits are readable UInt32 properties", { timeout: T_SHORT }, async () => {
    const br = await S.session.browse({
        nodeId: "i=11704",
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: "i=46", // HasProperty
        includeSubtypes: true,
        nodeClassMask: 0,
        resultMask: 63,
    });
    assertGood(br.statusCode, "browse OperationLimits");
    const names = br.references.map((r) => r.browseName.name);
    for (const n of ["MaxNodesPerRead", "MaxNodesPerWrite", "MaxNodesPerBrowse"]) {
        assert.ok(names.includes(n), `OperationLimits lacks ${n}: ${names}`);
    }
    const dvs = await S.session.read(br.references.map((r) => ({ nodeId: r.nodeId, attributeId: AttributeIds.Value })));
    dvs.forEach((dv, i) => {
        assertGood(dv.statusCode, `read ${names[i]}`);
        assert.equal(dv.value.dataType, DataType.UInt32, `${names[i]} is not UInt32`);
        assert.equal(br.references[i].nodeClass, NodeClass.Variable);
    });
    // The well-known ids resolve too.
    const fixed = await S.session.read([{ nodeId: "i=11705" }, { nodeId: "i=11707" }, { nodeId: "i=11710" }]);
    fixed.forEach((dv) => assertGood(dv.statusCode, "OperationLimits by id"));
    const caps = await S.session.read({ nodeId: "i=2268", attributeId: AttributeIds.BrowseName });
    assert.equal(caps.value.value.name, "ServerCapabilities");
});

// The diagnostics arrays as a generic client reads them: this session's entry and counters,
// its subscription.
test("SessionDiagnosticsArray and SubscriptionDiagnosticsArray show this session as it works", { timeout: T_SHORT }, async () => {
    await withSession(async (session) => {
        const mine = async () => {
            const dv = await session.read({ nodeId: "i=3707", attributeId: AttributeIds.Value });
            assertGood(dv.statusCode, "SessionDiagnosticsArray");
            assert.ok(Array.isArray(dv.value.value), "SessionDiagnosticsArray is no array");
            const entry = dv.value.value.find((d) => d.sessionId.toString() === session.sessionId.toString());
            assert.ok(entry, "this session is not in SessionDiagnosticsArray");
            return entry;
        };
        const before = await mine();
        assert.ok(before.clientConnectionTime instanceof Date, "ClientConnectionTime");
        assert.ok(before.actualSessionTimeout > 0, "ActualSessionTimeout");
        for (let i = 0; i < 5; ++i) await session.read({ nodeId: "i=2259" });
        const after = await mine();
        // Five Reads and the Read of the array before them.
        assert.equal(after.readCount.totalCount, before.readCount.totalCount + 6);
        assert.equal(after.readCount.errorCount, before.readCount.errorCount);
        assert.ok(after.totalRequestCount.totalCount >= after.readCount.totalCount);

        const sub = ua.ClientSubscription.create(session, {
            requestedPublishingInterval: 250, requestedLifetimeCount: 100,
            requestedMaxKeepAliveCount: 10, maxNotificationsPerPublish: 100,
            publishingEnabled: true, priority: 3,
        });
        await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
        try {
            const withSub = await mine();
            assert.equal(withSub.currentSubscriptionsCount, 1);
            assert.equal(withSub.createSubscriptionCount.totalCount, 1);
            const dv = await session.read({ nodeId: "i=2290", attributeId: AttributeIds.Value });
            assertGood(dv.statusCode, "SubscriptionDiagnosticsArray");
            const s = dv.value.value.find((d) => d.subscriptionId === sub.subscriptionId);
            assert.ok(s, "the subscription is not in SubscriptionDiagnosticsArray");
            assert.equal(s.sessionId.toString(), session.sessionId.toString());
            assert.equal(s.priority, 3);
            assert.equal(s.publishingInterval, 250);
        } finally {
            await sub.terminate();
        }
    });
});

// The SessionDiagnosticsObject of each session (Part 5 6.3.4) under SessionsDiagnosticsSummary
// (i=3706): found by its SessionId, its SessionDiagnostics counting this session's Reads; gone
// for a second client once the session is closed.
test("SessionsDiagnosticsSummary has this session's object, its Read count grows, it goes at close", { timeout: T_SHORT }, async () => {
    let objectId;
    await withSession(async (session) => {
        const browsed = await session.browse({
            nodeId: "i=3706", browseDirection: BrowseDirection.Forward,
            referenceTypeId: "i=47", includeSubtypes: true, resultMask: 63,
        });
        assertGood(browsed.statusCode, "browse SessionsDiagnosticsSummary");
        const mine = browsed.references.find((r) => r.nodeId.toString() === session.sessionId.toString());
        assert.ok(mine, "no object with this session's SessionId under SessionsDiagnosticsSummary");
        assert.equal(mine.nodeClass, NodeClass.Object);
        assert.equal(mine.typeDefinition.toString(), "ns=0;i=2029");  // SessionDiagnosticsObjectType
        objectId = mine.nodeId;

        const parts = await session.browse({
            nodeId: objectId, browseDirection: BrowseDirection.Forward,
            referenceTypeId: "i=47", includeSubtypes: true, resultMask: 63,
        });
        assertGood(parts.statusCode, "browse the session's object");
        const diag = parts.references.find((r) => r.browseName.name === "SessionDiagnostics");
        assert.ok(diag, "no SessionDiagnostics component");
        const readCount = async () => {
            const dv = await session.read({ nodeId: diag.nodeId, attributeId: AttributeIds.Value });
            assertGood(dv.statusCode, "SessionDiagnostics");
            assert.equal(dv.value.value.sessionId.toString(), session.sessionId.toString());
            return dv.value.value.readCount.totalCount;
        };
        const before = await readCount();
        for (let i = 0; i < 4; ++i) await session.read({ nodeId: "i=2259" });
        // Four Reads and the Read of SessionDiagnostics before them.
        assert.equal(await readCount(), before + 5);
        const name = await session.read({ nodeId: objectId, attributeId: AttributeIds.BrowseName });
        assertGood(name.statusCode, "BrowseName of the object");
    });
    await withSession(async (other) => {
        const dv = await other.read({ nodeId: objectId, attributeId: AttributeIds.NodeClass });
        assert.equal(dv.statusCode.name, "BadNodeIdUnknown", "the closed session's object is still there");
        const browsed = await other.browse({
            nodeId: "i=3706", browseDirection: BrowseDirection.Forward, referenceTypeId: "i=47",
            includeSubtypes: true, resultMask: 63,
        });
        assert.ok(!browsed.references.some((r) => r.nodeId.toString() === objectId.toString()),
            "the closed session's object is still browsed");
    });
});
