// SPDX-License-Identifier: Apache-2.0
// Alarms and Conditions (Part 9) with the demo's LevelAlarm (ExclusiveLevelAlarmType on the
// writable Demo.Level, HighLimit 80): events on the Server object with the condition's
// fields, Acknowledge (i=9111) with the event's EventId, Confirm (i=9113), AddComment
// (i=9029), Disable (i=9028) and Enable (i=9027), shelving on its ShelvingState (TimedShelve
// i=2949, OneShotShelve i=2948, Unshelve i=2947), the condition's state variables as nodes,
// and each refusal's status; on the access server the Call permission on the condition and
// ClientUserId from the session's user.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, PEER, DEMO_URI, T_LONG, T_SHORT, makeClient, sharedSession, assertGood, assertStatus, until } = require("../lib/ua");
const { AttributeIds, DataType, ClientSubscription, TimestampsToReturn, constructEventFilter, Variant, resolveNodeId } = ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

const NAMES = [
    "EventId", "EventType", "SourceNode", "SourceName", "ConditionId", "Retain",
    "EnabledState.Id", "ActiveState.Id", "AckedState.Id", "ConfirmedState.Id",
    "AckedState.TransitionTime", "Comment", "ClientUserId", "Severity", "LastSeverity", "Message",
    "BranchId", "Quality", "ConditionName", "AckedState", "HighLimit",
    "ShelvingState.CurrentState.Id", "SuppressedOrShelved", "ShelvingState.UnshelveTime",
];
const F = Object.fromEntries(NAMES.map((n, i) => [n, i]));

const alarmId = () => `ns=${S.demo};s=Demo.Events.LevelAlarm`;
const levelId = () => `ns=${S.demo};s=Demo.Level`;

async function subscribe() {
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 50,
        requestedLifetimeCount: 100,
        requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100,
        publishingEnabled: true,
        priority: 1,
    });
    await new Promise((resolve, reject) => {
        sub.once("started", resolve);
        sub.once("internal_error", reject);
    });
    return sub;
}

async function writeLevel(value) {
    const sc = await S.session.write({
        nodeId: levelId(),
        attributeId: AttributeIds.Value,
        value: { value: new Variant({ dataType: DataType.Double, value }) },
    });
    assertGood(sc, `write Demo.Level ${value}`);
}

// One condition method: (EventId, Comment), no inputs (Enable, Disable, Unshelve,
// OneShotShelve) or a ShelvingTime in milliseconds (TimedShelve).
async function callOn(objectId, method, eventId, comment) {
    const inputArguments =
        eventId === undefined
            ? []
            : typeof eventId === "number"
            ? [new Variant({ dataType: DataType.Double, value: eventId })]
            : [
                  new Variant({ dataType: DataType.ByteString, value: eventId }),
                  new Variant({ dataType: DataType.LocalizedText, value: { locale: "en", text: comment } }),
              ];
    const r = await S.session.call({ objectId: resolveNodeId(objectId), methodId: resolveNodeId(method), inputArguments });
    return r.statusCode;
}

test("LevelAlarm: raised, acknowledged with its EventId, confirmed, commented, disabled", { timeout: T_LONG }, async () => {
    const sub = await subscribe();
    const events = [];
    const item = await sub.monitor(
        { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 100, filter: constructEventFilter(NAMES) },
        TimestampsToReturn.Both,
    );
    item.on("changed", (fields) => events.push(fields));
    const mine = () => events.filter((e) => e[F.ConditionId].value && e[F.ConditionId].value.toString() === alarmId());
    const next = async (what, n) => {
        await until(what, 5000, () => mine().length >= n);
        return mine()[n - 1];
    };
    let seen = mine().length;

    // Raised: active, unacknowledged, unconfirmed, retained.
    await writeLevel(95);
    let e = await next("the alarm's event", ++seen);
    assert.equal(e[F.EventType].value.toString(), "ns=0;i=9482");
    assert.equal(e[F.SourceNode].value.toString(), levelId());
    assert.equal(e[F.SourceName].value, "Level");
    assert.equal(e[F.ConditionName].value, "LevelAlarm");
    assert.equal(e[F["EnabledState.Id"]].value, true);
    assert.equal(e[F["ActiveState.Id"]].value, true);
    assert.equal(e[F["AckedState.Id"]].value, false);
    assert.equal(e[F["ConfirmedState.Id"]].value, false);
    assert.equal(e[F.AckedState].value.text, "Unacknowledged");
    assert.equal(e[F.Retain].value, true);
    assert.equal(e[F.Severity].value, 700);
    assert.equal(e[F.Message].value.text, "Level is above its high limit");
    assert.equal(e[F.HighLimit].value, 80);
    assert.ok(e[F.BranchId].value === null || e[F.BranchId].value.isEmpty(), "BranchId null");
    assert.equal(e[F.Quality].value.value, 0);
    const raisedId = e[F.EventId].value;
    assert.ok(Buffer.isBuffer(raisedId) && raisedId.length === 16, "EventId");

    // Refusals: an EventId the condition never had, an object that is no condition, the type.
    assertStatus(await callOn(alarmId(), "i=9111", Buffer.alloc(16, 7), "x"), ua.StatusCodes.BadEventIdUnknown, "unknown EventId");
    assertStatus(await callOn("i=2253", "i=9111", raisedId, "x"), ua.StatusCodes.BadMethodInvalid, "Acknowledge on the Server object");
    assertStatus(await callOn("i=2881", "i=9111", raisedId, "x"), ua.StatusCodes.BadNodeIdInvalid, "Acknowledge on the type");
    assertStatus(await callOn(levelId(), "i=9111", raisedId, "x"), ua.StatusCodes.BadNodeIdInvalid, "Acknowledge on a Variable");

    // Acknowledge through i=9111 with the event's EventId.
    assertGood(await callOn(alarmId(), "i=9111", raisedId, "seen by the operator"), "Acknowledge");
    e = await next("the acknowledgement's event", ++seen);
    assert.equal(e[F["AckedState.Id"]].value, true);
    assert.equal(e[F.AckedState].value.text, "Acknowledged");
    assert.ok(e[F["AckedState.TransitionTime"]].value instanceof Date, "AckedState/TransitionTime");
    assert.equal(e[F["ActiveState.Id"]].value, true);
    assert.equal(e[F.Comment].value.text, "seen by the operator");
    assert.equal(e[F.ClientUserId].value, "anonymous");
    assert.equal(e[F.Retain].value, true);
    assert.notDeepEqual(e[F.EventId].value, raisedId);
    assertStatus(await callOn(alarmId(), "i=9111", e[F.EventId].value, "again"), ua.StatusCodes.BadConditionBranchAlreadyAcked, "acknowledged twice");
    // A recent EventId names the same state (the last 8 are accepted): already acknowledged.
    assertStatus(await callOn(alarmId(), "i=9111", raisedId, "recent"), ua.StatusCodes.BadConditionBranchAlreadyAcked, "a recent EventId");

    // The state variables are nodes of the condition.
    const dv = await S.session.read({ nodeId: `${alarmId()}.AckedState.Id`, attributeId: AttributeIds.Value });
    assertGood(dv.statusCode, "read AckedState/Id");
    assert.equal(dv.value.value, true);

    // Back to normal: still retained until confirmed.
    await writeLevel(10);
    e = await next("the return to normal", ++seen);
    assert.equal(e[F["ActiveState.Id"]].value, false);
    assert.equal(e[F.Retain].value, true);
    assertGood(await callOn(alarmId(), "i=9113", e[F.EventId].value, "confirmed"), "Confirm");
    e = await next("the confirmation's event", ++seen);
    assert.equal(e[F["ConfirmedState.Id"]].value, true);
    assert.equal(e[F.Retain].value, false);
    assertStatus(await callOn(alarmId(), "i=9113", e[F.EventId].value, "again"), ua.StatusCodes.BadConditionBranchAlreadyConfirmed, "confirmed twice");

    // AddComment (i=9029).
    assertGood(await callOn(alarmId(), "i=9029", e[F.EventId].value, "pump replaced"), "AddComment");
    e = await next("the comment's event", ++seen);
    assert.equal(e[F.Comment].value.text, "pump replaced");

    // Disable and Enable (i=9028, i=9027).
    assertGood(await callOn(alarmId(), "i=9028"), "Disable");
    e = await next("the disable's event", ++seen);
    assert.equal(e[F["EnabledState.Id"]].value, false);
    assert.equal(e[F.Retain].value, false);
    assertStatus(await callOn(alarmId(), "i=9028"), ua.StatusCodes.BadConditionAlreadyDisabled, "disabled twice");
    assertStatus(await callOn(alarmId(), "i=9029", e[F.EventId].value, "x"), ua.StatusCodes.BadConditionDisabled, "comment while disabled");
    assertGood(await callOn(alarmId(), "i=9027"), "Enable");
    e = await next("the enable's event", ++seen);
    assert.equal(e[F["EnabledState.Id"]].value, true);
    assertStatus(await callOn(alarmId(), "i=9027"), ua.StatusCodes.BadConditionAlreadyEnabled, "enabled twice");
    await sub.terminate();
});

test("LevelAlarm shelving: TimedShelve, OneShotShelve and Unshelve on its ShelvingState", { timeout: T_LONG }, async () => {
    const sub = await subscribe();
    const events = [];
    const item = await sub.monitor(
        { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 100, filter: constructEventFilter(NAMES) },
        TimestampsToReturn.Both,
    );
    item.on("changed", (fields) => events.push(fields));
    const mine = () => events.filter((e) => e[F.ConditionId].value && e[F.ConditionId].value.toString() === alarmId());
    const next = async (what, n) => {
        await until(what, 5000, () => mine().length >= n);
        return mine()[n - 1];
    };
    const stateOf = (e) => e[F["ShelvingState.CurrentState.Id"]].value.toString();
    const shelving = () => `${alarmId()}.ShelvingState`;
    let seen = mine().length;

    assertStatus(await callOn(shelving(), "i=2949", 0), ua.StatusCodes.BadShelvingTimeOutOfRange, "ShelvingTime 0");
    assertStatus(await callOn(shelving(), "i=2947"), ua.StatusCodes.BadConditionNotShelved, "Unshelve when unshelved");
    assertStatus(await callOn(alarmId(), "i=2949", 60000), ua.StatusCodes.BadMethodInvalid, "TimedShelve on the alarm");

    assertGood(await callOn(shelving(), "i=2949", 600000), "TimedShelve");
    let e = await next("the TimedShelve's event", ++seen);
    assert.equal(stateOf(e), "ns=0;i=2932");
    assert.equal(e[F.SuppressedOrShelved].value, true);
    const left = e[F["ShelvingState.UnshelveTime"]].value;
    assert.ok(left > 0 && left <= 600000, `UnshelveTime ${left}`);
    const dv = await S.session.read({ nodeId: `${shelving()}.CurrentState.Id`, attributeId: AttributeIds.Value });
    assert.equal(dv.value.value.toString(), "ns=0;i=2932");
    assertStatus(await callOn(shelving(), "i=2949", 600000), ua.StatusCodes.BadConditionAlreadyShelved, "TimedShelve twice");
    assertGood(await callOn(shelving(), "i=2947"), "Unshelve");
    e = await next("the Unshelve's event", ++seen);
    assert.equal(stateOf(e), "ns=0;i=2930");
    assert.equal(e[F.SuppressedOrShelved].value, false);

    // A short TimedShelve ends by itself.
    assertGood(await callOn(shelving(), "i=2949", 200), "TimedShelve 200 ms");
    e = await next("the short TimedShelve's event", ++seen);
    assert.equal(stateOf(e), "ns=0;i=2932");
    e = await next("the end of the TimedShelve", ++seen);
    assert.equal(stateOf(e), "ns=0;i=2930");

    // A OneShotShelve lasts until the alarm returns to normal.
    assertGood(await callOn(shelving(), "i=2948"), "OneShotShelve");
    e = await next("the OneShotShelve's event", ++seen);
    assert.equal(stateOf(e), "ns=0;i=2933");
    assertStatus(await callOn(shelving(), "i=2948"), ua.StatusCodes.BadConditionAlreadyShelved, "OneShotShelve twice");
    await writeLevel(95);
    e = await next("the alarm while shelved", ++seen);
    assert.equal(e[F["ActiveState.Id"]].value, true);
    assert.equal(stateOf(e), "ns=0;i=2933");
    await writeLevel(10);
    e = await next("the return to normal", ++seen);
    assert.equal(stateOf(e), "ns=0;i=2930");
    // Acknowledged and confirmed, the alarm is no longer retained.
    assertGood(await callOn(alarmId(), "i=9111", e[F.EventId].value, "ok"), "Acknowledge");
    e = await next("the acknowledgement", ++seen);
    assertGood(await callOn(alarmId(), "i=9113", e[F.EventId].value, "ok"), "Confirm");
    e = await next("the confirmation", ++seen);
    assert.equal(e[F.Retain].value, false);
    await sub.terminate();
});

// The access server of run_suite.sh: Anonymous may Browse and Read the demo namespace, the
// Operator also Write, Call and ReceiveEvents. The Call permission is the condition's.
const ACCESS = process.env.UAPLEX_ACCESS_ENDPOINT;
const accessSkip = PEER || !ACCESS ? "needs run_suite.sh's access server" : false;

async function onAccessServer(identity, fn) {
    const client = makeClient();
    await client.connect(ACCESS);
    let session;
    try {
        session = await client.createSession(identity);
        const dv = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
        const ns = dv.value.value.indexOf(DEMO_URI);
        assert.ok(ns > 1, "demo namespace");
        return await fn(session, ns);
    } finally {
        if (session) await session.close().catch(() => {});
        await client.disconnect().catch(() => {});
    }
}

const ack = (session, objectId, eventId) =>
    session.call({
        objectId: resolveNodeId(objectId),
        methodId: resolveNodeId("i=9111"),
        inputArguments: [
            new Variant({ dataType: DataType.ByteString, value: eventId }),
            new Variant({ dataType: DataType.LocalizedText, value: { locale: "en", text: "by operator" } }),
        ],
    });

test("Acknowledge needs Call on the condition; ClientUserId is the session's user", { skip: accessSkip, timeout: T_LONG }, async () => {
    await onAccessServer(undefined, async (session, ns) => {
        const r = await ack(session, `ns=${ns};s=Demo.Events.LevelAlarm`, Buffer.alloc(16));
        assertStatus(r.statusCode, ua.StatusCodes.BadUserAccessDenied, "anonymous Acknowledge");
    });
    const operator = { type: ua.UserTokenType.UserName, userName: "operator", password: "op-secret" };
    await onAccessServer(operator, async (session, ns) => {
        const alarm = `ns=${ns};s=Demo.Events.LevelAlarm`;
        const sub = await session.createSubscription2({
            requestedPublishingInterval: 50,
            requestedLifetimeCount: 100,
            requestedMaxKeepAliveCount: 10,
            maxNotificationsPerPublish: 100,
            publishingEnabled: true,
            priority: 1,
        });
        const events = [];
        const item = await sub.monitor(
            { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
            { samplingInterval: 0, discardOldest: true, queueSize: 100, filter: constructEventFilter(NAMES) },
            TimestampsToReturn.Both,
        );
        item.on("changed", (fields) => events.push(fields));
        const mine = () => events.filter((e) => e[F.ConditionId].value && e[F.ConditionId].value.toString() === alarm);
        // Past the permission check: the EventId is checked.
        assertStatus((await ack(session, alarm, Buffer.alloc(16))).statusCode, ua.StatusCodes.BadEventIdUnknown, "operator, unknown EventId");
        const write = (value) =>
            session.write({ nodeId: `ns=${ns};s=Demo.Level`, attributeId: AttributeIds.Value, value: { value: new Variant({ dataType: DataType.Double, value }) } });
        assertGood(await write(95), "write Level");
        await until("the alarm's event", 5000, () => mine().length >= 1);
        assertGood((await ack(session, alarm, mine()[0][F.EventId].value)).statusCode, "operator Acknowledge");
        await until("the acknowledgement", 5000, () => mine().length >= 2);
        assert.equal(mine()[1][F.ClientUserId].value, "operator");
        assert.equal(mine()[1][F.Comment].value.text, "by operator");
        assertGood(await write(10), "write Level back");
        await until("the return to normal", 5000, () => mine().length >= 3);
        const confirm = await session.call({
            objectId: resolveNodeId(alarm),
            methodId: resolveNodeId("i=9113"),
            inputArguments: [
                new Variant({ dataType: DataType.ByteString, value: mine()[2][F.EventId].value }),
                new Variant({ dataType: DataType.LocalizedText, value: { locale: "en", text: "" } }),
            ],
        });
        assertGood(confirm.statusCode, "operator Confirm");
        await until("the confirmation", 5000, () => mine().length >= 4);
        assert.equal(mine()[3][F.Retain].value, false);
        assert.equal(mine()[3][F.Comment].value.text, "by operator");  // an empty comment keeps it
        await sub.terminate();
    });
});

// run_suite.sh's [[alarms]] Branchy (high = 80 on Demo.Scalars.Float, branches = true): a
// return to normal while the alarm is unacknowledged keeps the active state as a branch with
// its own BranchId, which ConditionRefresh delivers next to the trunk, and which is
// acknowledged and confirmed through its own EventId; then it is gone.
test("Branches: an unacknowledged state kept as a branch, refreshed, acknowledged, removed", { timeout: T_LONG }, async () => {
    const branchy = "ns=1;s=Alarms.Branchy";
    const sub = await subscribe();
    const events = [];
    const item = await sub.monitor(
        { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 100, filter: constructEventFilter(NAMES) },
        TimestampsToReturn.Both,
    );
    item.on("changed", (fields) => events.push(fields));
    const mine = () => events.filter((e) => e[F.ConditionId].value && e[F.ConditionId].value.toString() === branchy);
    const isNull = (id) => id === null || id.isEmpty();
    const writeFloat = async (value) => assertGood(await S.session.write({
        nodeId: `ns=${S.demo};s=Demo.Scalars.Float`, attributeId: AttributeIds.Value,
        value: { value: new Variant({ dataType: DataType.Float, value }) },
    }), `write Float ${value}`);

    await writeFloat(90);
    await until("the alarm", 5000, () => mine().length >= 1);
    assert.equal(mine()[0][F["ActiveState.Id"]].value, true);
    assert.ok(isNull(mine()[0][F.BranchId].value), "the trunk's BranchId is null");
    await writeFloat(10);
    await until("the branch and the trunk", 5000, () => mine().length >= 3);
    const branch = mine()[1], trunk = mine()[2];
    assert.ok(!isNull(branch[F.BranchId].value), "the branch has a BranchId");
    assert.equal(branch[F["ActiveState.Id"]].value, true);
    assert.equal(branch[F["AckedState.Id"]].value, false);
    assert.equal(branch[F.Retain].value, true);
    assert.ok(isNull(trunk[F.BranchId].value));
    assert.equal(trunk[F["ActiveState.Id"]].value, false);
    assert.equal(trunk[F.Retain].value, true);
    const branchId = branch[F.BranchId].value.toString();

    // ConditionRefresh delivers both.
    const before = events.length;
    const refresh = await S.session.call({
        objectId: resolveNodeId("i=2782"), methodId: resolveNodeId("i=3875"),
        inputArguments: [new Variant({ dataType: DataType.UInt32, value: sub.subscriptionId })],
    });
    assertGood(refresh.statusCode, "ConditionRefresh");
    const typeOf = (e) => e[F.EventType].value && e[F.EventType].value.toString();
    await until("RefreshEnd", 5000, () => events.slice(before).some((e) => typeOf(e) === "ns=0;i=2788"));
    const refreshed = events.slice(before).filter((e) => e[F.ConditionId].value && e[F.ConditionId].value.toString() === branchy);
    assert.deepEqual(refreshed.map((e) => (isNull(e[F.BranchId].value) ? "trunk" : e[F.BranchId].value.toString())).sort(),
        [branchId, "trunk"].sort());

    // The branch: acknowledged and confirmed through its own EventId, then gone.
    let seen = mine().length;
    assertStatus(await callOn(branchy, "i=9113", branch[F.EventId].value, "early"), ua.StatusCodes.BadInvalidState, "Confirm before Acknowledge");
    assertGood(await callOn(branchy, "i=9111", branch[F.EventId].value, "the earlier one"), "Acknowledge the branch");
    await until("the branch's acknowledgement", 5000, () => mine().length > seen);
    const acked = mine()[seen];
    assert.equal(acked[F.BranchId].value.toString(), branchId);
    assert.equal(acked[F["AckedState.Id"]].value, true);
    assert.equal(acked[F.Comment].value.text, "the earlier one");
    seen = mine().length;
    assertGood(await callOn(branchy, "i=9113", acked[F.EventId].value, "done"), "Confirm the branch");
    await until("the branch's end and the trunk", 5000, () => mine().length >= seen + 2);
    assert.equal(mine()[seen][F.BranchId].value.toString(), branchId);
    assert.equal(mine()[seen][F.Retain].value, false);
    assert.ok(isNull(mine()[seen + 1][F.BranchId].value));
    assert.equal(mine()[seen + 1][F.Retain].value, false);
    assertStatus(await callOn(branchy, "i=9111", branch[F.EventId].value, "again"), ua.StatusCodes.BadEventIdUnknown, "the branch is gone");
    await sub.terminate();
});

// run_suite.sh's [[alarms]] Deviation (ExclusiveDeviationAlarmType: Demo.Scalars.UInt32 minus
// the setpoint Demo.Scalars.UInt16, high 10, low -10, deadband 2): the setpoint's change alone
// raises it, its events have the type as EventType and SetpointNode, Acknowledge works, and the
// source's change inside and then beyond the deadband returns it to normal.
test("Deviation: source minus setpoint, re-evaluated on either, SetpointNode", { timeout: T_LONG }, async () => {
    const deviation = "ns=1;s=Alarms.Deviation";
    const names = ["EventId", "EventType", "ConditionId", "ActiveState.Id", "AckedState.Id", "Severity", "SetpointNode", "HighLimit"];
    const G = Object.fromEntries(names.map((n, i) => [n, i]));
    const sub = await subscribe();
    const events = [];
    const item = await sub.monitor(
        { nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 100, filter: constructEventFilter(names) },
        TimestampsToReturn.Both,
    );
    item.on("changed", (fields) => events.push(fields));
    const mine = () => events.filter((e) => e[G.ConditionId].value && e[G.ConditionId].value.toString() === deviation);
    const write = async (name, dataType, value) => assertGood(await S.session.write({
        nodeId: `ns=${S.demo};s=Demo.Scalars.${name}`, attributeId: AttributeIds.Value,
        value: { value: new Variant({ dataType, value }) },
    }), `write ${name} ${value}`);
    const setpointId = `ns=${S.demo};s=Demo.Scalars.UInt16`;

    // The node: its type and SetpointNode.
    const [typeRef] = (await S.session.browse({ nodeId: deviation, referenceTypeId: "i=40", browseDirection: ua.BrowseDirection.Forward })).references;
    assert.equal(typeRef.nodeId.toString(), "ns=0;i=9764");
    const sp = await S.session.read({ nodeId: `${deviation}.SetpointNode`, attributeId: AttributeIds.Value });
    assertGood(sp.statusCode, "read SetpointNode");
    assert.equal(sp.value.value.toString(), setpointId);

    // Normal first (whatever earlier files wrote), then raised by the setpoint alone.
    await write("UInt32", DataType.UInt32, 100);
    await write("UInt16", DataType.UInt16, 100);
    await new Promise((r) => setTimeout(r, 300));
    let seen = mine().length;
    await write("UInt16", DataType.UInt16, 85);  // 15
    await until("the raise", 5000, () => mine().length > seen);
    let e = mine()[seen];
    assert.equal(e[G.EventType].value.toString(), "ns=0;i=9764");
    assert.equal(e[G["ActiveState.Id"]].value, true);
    assert.equal(e[G.SetpointNode].value.toString(), setpointId);
    assert.equal(e[G.HighLimit].value, 10);
    seen = mine().length;
    assertGood(await callOn(deviation, "i=9111", e[G.EventId].value, "seen"), "Acknowledge");
    await until("the acknowledgement", 5000, () => mine().length > seen);
    assert.equal(mine()[seen][G["AckedState.Id"]].value, true);
    assert.equal(mine()[seen][G.EventType].value.toString(), "ns=0;i=9764");
    seen = mine().length;
    await write("UInt32", DataType.UInt32, 94);  // 9: inside the deadband
    await write("UInt32", DataType.UInt32, 92);  // 7: normal
    await until("the return to normal", 5000, () => mine().length > seen);
    assert.equal(mine().length, seen + 1);
    assert.equal(mine()[seen][G["ActiveState.Id"]].value, false);
    await sub.terminate();
});
