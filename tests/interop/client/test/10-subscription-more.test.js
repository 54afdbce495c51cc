// SPDX-License-Identifier: Apache-2.0
// Subscription services driven request by request (no client publish engine): deadband
// filters on the demo AnalogItem (EURange 0..100), SetMonitoringMode, Republish after a
// lost response, TransferSubscriptions between two sessions, Server.GetMonitoredItems.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, PEER, T_LONG, T_SHORT, sharedSession, connect, disconnect, assertGood } = require("../lib/ua");
const { AttributeIds, DataType, TimestampsToReturn, MonitoringMode, DataChangeFilter, DataChangeTrigger, DeadbandType } =
    ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

const analog = () => `ns=${S.demo};s=Demo.AnalogItem`;

async function write(session, v) {
    const st = await session.write({
        nodeId: analog(),
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Double, value: v } },
    });
    assertGood(st, `write ${v}`);
}

async function createSubscription(session) {
    const r = await session.createSubscription({
        requestedPublishingInterval: 100,
        requestedLifetimeCount: 60,
        requestedMaxKeepAliveCount: 3,
        maxNotificationsPerPublish: 0,
        publishingEnabled: true,
        priority: 0,
    });
    assert.ok(r.subscriptionId > 0);
    return r.subscriptionId;
}

async function monitorAnalog(session, subscriptionId, clientHandle, filter = null) {
    const r = await session.createMonitoredItems({
        subscriptionId,
        timestampsToReturn: TimestampsToReturn.Both,
        itemsToCreate: [
            {
                itemToMonitor: { nodeId: analog(), attributeId: AttributeIds.Value },
                monitoringMode: MonitoringMode.Reporting,
                requestedParameters: { clientHandle, samplingInterval: 0, queueSize: 10, discardOldest: true, filter },
            },
        ],
    });
    assertGood(r.results[0].statusCode, "CreateMonitoredItems");
    return r.results[0].monitoredItemId;
}

// Values of the DataChangeNotifications in a NotificationMessage.
function valuesOf(msg) {
    const out = [];
    for (const n of msg.notificationData || [])
        if (n && n.monitoredItems) for (const m of n.monitoredItems) out.push(m.value.value.value);
    return out;
}

// Publishes (acknowledging what arrived) until `done(values)` or `rounds` responses.
async function publishUntil(session, done, rounds = 15) {
    const values = [];
    let acks = [];
    for (let i = 0; i < rounds && !done(values); i++) {
        const r = await session.publish({ subscriptionAcknowledgements: acks });
        acks = [];
        const msg = r.notificationMessage;
        if (msg.notificationData && msg.notificationData.length) {
            values.push(...valuesOf(msg));
            acks.push({ subscriptionId: r.subscriptionId, sequenceNumber: msg.sequenceNumber });
        }
    }
    if (acks.length) await session.publish({ subscriptionAcknowledgements: acks });
    return values;
}

async function drop(session, id) {
    await session.deleteSubscriptions({ subscriptionIds: [id] });
}

test("absolute deadband: only changes larger than 5 are reported", { timeout: T_LONG }, async () => {
    await write(S.session, 0);
    const sub = await createSubscription(S.session);
    const filter = new DataChangeFilter({
        trigger: DataChangeTrigger.StatusValue,
        deadbandType: DeadbandType.Absolute,
        deadbandValue: 5,
    });
    await monitorAnalog(S.session, sub, 1, filter);
    assert.deepEqual(await publishUntil(S.session, (v) => v.length >= 1), [0]);
    for (const v of [2, 7, 9, 20]) await write(S.session, v);
    assert.deepEqual(await publishUntil(S.session, (v) => v.includes(20)), [7, 20]);
    await drop(S.session, sub);
});

test("percent deadband: 10 % of EURange 0..100", { timeout: T_LONG }, async () => {
    await write(S.session, 0);
    const sub = await createSubscription(S.session);
    const filter = new DataChangeFilter({
        trigger: DataChangeTrigger.StatusValue,
        deadbandType: DeadbandType.Percent,
        deadbandValue: 10,
    });
    await monitorAnalog(S.session, sub, 1, filter);
    assert.deepEqual(await publishUntil(S.session, (v) => v.length >= 1), [0]);
    for (const v of [5, 15, 20, 30]) await write(S.session, v);
    assert.deepEqual(await publishUntil(S.session, (v) => v.includes(30)), [15, 30]);
    await drop(S.session, sub);
});

test("SetMonitoringMode: Disabled reports nothing, Sampling queues, Reporting delivers", { timeout: T_LONG }, async () => {
    await write(S.session, 1);
    const sub = await createSubscription(S.session);
    const item = await monitorAnalog(S.session, sub, 1);
    assert.deepEqual(await publishUntil(S.session, (v) => v.length >= 1), [1]);
    const mode = async (m) => {
        const r = await S.session.setMonitoringMode({ subscriptionId: sub, monitoringMode: m, monitoredItemIds: [item] });
        assertGood(r.results[0], `SetMonitoringMode ${m}`);
    };
    await mode(MonitoringMode.Disabled);
    await write(S.session, 50);
    assert.deepEqual(await publishUntil(S.session, () => false, 2), [], "nothing while Disabled");
    await mode(MonitoringMode.Sampling);
    await write(S.session, 60);
    assert.deepEqual(await publishUntil(S.session, () => false, 2), [], "nothing reported while Sampling");
    await mode(MonitoringMode.Reporting);
    const got = await publishUntil(S.session, (v) => v.includes(60));
    assert.ok(got.includes(60), `queued while Sampling, reported now: ${JSON.stringify(got)}`);
    assert.ok(!got.includes(1));
    await drop(S.session, sub);
});

test("Republish returns a message whose Publish response was not acknowledged", { timeout: T_LONG }, async () => {
    await write(S.session, 3);
    const sub = await createSubscription(S.session);
    await monitorAnalog(S.session, sub, 1);
    let r;
    do r = await S.session.publish({ subscriptionAcknowledgements: [] });
    while (!r.notificationMessage.notificationData.length);
    const seq = r.notificationMessage.sequenceNumber;
    assert.ok(r.availableSequenceNumbers.includes(seq));
    const again = await S.session.republish({ subscriptionId: sub, retransmitSequenceNumber: seq });
    assert.equal(again.notificationMessage.sequenceNumber, seq);
    assert.deepEqual(valuesOf(again.notificationMessage), valuesOf(r.notificationMessage));
    await assert.rejects(
        S.session.republish({ subscriptionId: sub, retransmitSequenceNumber: seq + 100 }),
        /BadMessageNotAvailable/,
    );
    await drop(S.session, sub);
});

// Part 4 5.13.7: a transfer needs the same user identity (for Anonymous: the same
// ApplicationUri over a Sign or SignAndEncrypt channel). run_suite.sh gives the server a users
// file with user operator, so the subscription moves between two operator sessions, and the
// anonymous session on a None channel is refused. PEER: node-opcua's server has no such user;
// there both sessions stay anonymous and the refusal is not checked.
const operator = { type: ua.UserTokenType.UserName, userName: "operator", password: "op-secret" };
const transferIdentity = PEER ? undefined : operator;

test("TransferSubscriptions moves a subscription to another session of the same user; GetMonitoredItems", { timeout: T_LONG }, async () => {
    await write(S.session, 4);
    const clientA = await connect();
    const clientB = await connect();
    try {
        const a = await clientA.createSession(transferIdentity);
        const b = await clientB.createSession(transferIdentity);
        const sub = await createSubscription(a);
        const item = await monitorAnalog(a, sub, 77);
        assert.deepEqual(await publishUntil(a, (v) => v.length >= 1), [4]);

        const gm = await a.getMonitoredItems(sub);
        assert.deepEqual(Array.from(gm.serverHandles), [item]);
        assert.deepEqual(Array.from(gm.clientHandles), [77]);
        // Another session may not read them.
        await assert.rejects(S.session.getMonitoredItems(sub), /BadUserAccessDenied/);
        if (!PEER) {
            // An anonymous session on a None channel may not take an operator's subscription.
            const denied = await S.session.transferSubscriptions({ subscriptionIds: [sub], sendInitialValues: true });
            assert.equal(denied.results[0].statusCode.name, "BadUserAccessDenied");
        }

        const t = await b.transferSubscriptions({ subscriptionIds: [sub], sendInitialValues: true });
        assertGood(t.results[0].statusCode, "TransferSubscriptions");
        const bad = await b.transferSubscriptions({ subscriptionIds: [0x7ffffff0], sendInitialValues: false });
        assert.equal(bad.results[0].statusCode.name, "BadSubscriptionIdInvalid");

        // The old session is told; the new one gets the initial value again.
        const old = await a.publish({ subscriptionAcknowledgements: [] });
        const note = old.notificationMessage.notificationData[0];
        assert.equal(note.status.name, "GoodSubscriptionTransferred");
        assert.deepEqual(await publishUntil(b, (v) => v.length >= 1), [4]);
        const mine = await b.getMonitoredItems(sub);
        assert.deepEqual(Array.from(mine.clientHandles), [77]);
        await a.close();
        await drop(b, sub);
        await b.close();
    } finally {
        await disconnect(clientA);
        await disconnect(clientB);
    }
});
