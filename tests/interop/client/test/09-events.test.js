// SPDX-License-Identifier: Apache-2.0
// Event subscriptions: event items on the Server object and on the demo notifier
// Demo.Events with select and where clauses, the demo's periodic event (BaseEventType,
// Severity 500, every second), filter errors, and ConditionRefresh with the demo's retained
// HighAlarm condition.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_LONG, T_SHORT, sharedSession, assertGood, assertStatus, until } = require("../lib/ua");
const {
    AttributeIds,
    DataType,
    ClientSubscription,
    TimestampsToReturn,
    constructEventFilter,
    ContentFilter,
    ContentFilterElement,
    FilterOperator,
    LiteralOperand,
    ElementOperand,
    SimpleAttributeOperand,
    EventFilter,
    Variant,
    NodeId,
    resolveNodeId,
} = ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

const FIELDS = ["EventId", "EventType", "SourceNode", "SourceName", "Time", "ReceiveTime", "Message", "Severity"];
const F = Object.fromEntries(FIELDS.map((n, i) => [n, i]));

function demoEvents() {
    return `ns=${S.demo};s=Demo.Events`;
}

async function subscribe() {
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 100,
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

function severityOperand() {
    return new SimpleAttributeOperand({
        typeDefinitionId: resolveNodeId("i=2041"),
        browsePath: [{ namespaceIndex: 0, name: "Severity" }],
        attributeId: AttributeIds.Value,
    });
}

// OfType(BaseEventType) And Severity >= minSeverity.
function whereSeverityAtLeast(minSeverity) {
    return new ContentFilter({
        elements: [
            new ContentFilterElement({
                filterOperator: FilterOperator.And,
                filterOperands: [new ElementOperand({ index: 1 }), new ElementOperand({ index: 2 })],
            }),
            new ContentFilterElement({
                filterOperator: FilterOperator.OfType,
                filterOperands: [
                    new LiteralOperand({ value: new Variant({ dataType: DataType.NodeId, value: resolveNodeId("i=2041") }) }),
                ],
            }),
            new ContentFilterElement({
                filterOperator: FilterOperator.GreaterThanOrEqual,
                filterOperands: [
                    severityOperand(),
                    new LiteralOperand({ value: new Variant({ dataType: DataType.UInt16, value: minSeverity }) }),
                ],
            }),
        ],
    });
}

async function monitorEvents(sub, nodeId, filter) {
    const events = [];
    const item = await sub.monitor(
        { nodeId, attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 100, filter },
        TimestampsToReturn.Both,
    );
    item.on("changed", (fields) => events.push(fields));
    return { item, events };
}

function isDemoTick(fields) {
    const msg = fields[F.Message] && fields[F.Message].value;
    return msg && typeof msg.text === "string" && msg.text.startsWith("Demo event ");
}

function checkTick(fields, demoNs) {
    assert.equal(fields.length, FIELDS.length);
    assert.ok(Buffer.isBuffer(fields[F.EventId].value) && fields[F.EventId].value.length > 0, "EventId");
    assert.equal(fields[F.EventType].value.toString(), "ns=0;i=2041");
    assert.equal(fields[F.SourceNode].value.toString(), `ns=${demoNs};s=Demo.Events`);
    assert.equal(fields[F.SourceName].value, "Events");
    assert.equal(fields[F.Severity].value, 500);
    assert.ok(fields[F.Time].value instanceof Date, "Time");
    assert.ok(fields[F.ReceiveTime].value instanceof Date, "ReceiveTime");
}

test("the periodic demo event arrives on the Server object and on Demo.Events with the selected fields", { timeout: T_LONG }, async () => {
    const sub = await subscribe();
    const onServer = await monitorEvents(sub, "i=2253", constructEventFilter(FIELDS, whereSeverityAtLeast(400)));
    const onDemo = await monitorEvents(sub, demoEvents(), constructEventFilter(FIELDS, whereSeverityAtLeast(400)));
    await until("a demo event on both items", 5000, () => onServer.events.some(isDemoTick) && onDemo.events.some(isDemoTick));
    checkTick(onServer.events.find(isDemoTick), S.demo);
    checkTick(onDemo.events.find(isDemoTick), S.demo);
    await sub.terminate();
});

test("a where clause that excludes the event delivers nothing", { timeout: T_LONG }, async () => {
    const sub = await subscribe();
    const excluded = await monitorEvents(sub, demoEvents(), constructEventFilter(FIELDS, whereSeverityAtLeast(900)));
    const included = await monitorEvents(sub, demoEvents(), constructEventFilter(FIELDS, whereSeverityAtLeast(100)));
    // Both items were offered the same demo event: the including one has it, the other not.
    await until("a demo event", 6000, () => included.events.filter(isDemoTick).length >= 1);
    assert.equal(excluded.events.filter(isDemoTick).length, 0);
    await sub.terminate();
});

test("bad event filters get their status and per-element results", { timeout: T_LONG }, async () => {
    const sub = await subscribe();
    const bad = new EventFilter({
        selectClauses: [
            new SimpleAttributeOperand({
                typeDefinitionId: resolveNodeId("i=2041"),
                browsePath: [{ namespaceIndex: 0, name: "Severity" }],
                attributeId: AttributeIds.Value,
            }),
            new SimpleAttributeOperand({
                typeDefinitionId: resolveNodeId("i=85"), // Objects: not an event type
                browsePath: [{ namespaceIndex: 0, name: "Severity" }],
                attributeId: AttributeIds.Value,
            }),
        ],
        whereClause: new ContentFilter({
            elements: [
                new ContentFilterElement({
                    filterOperator: FilterOperator.Equals,
                    filterOperands: [severityOperand()], // Equals needs two
                }),
            ],
        }),
    });
    const item = (filter, nodeId = demoEvents()) => ({
        itemToMonitor: { nodeId: resolveNodeId(nodeId), attributeId: AttributeIds.EventNotifier },
        monitoringMode: ua.MonitoringMode.Reporting,
        requestedParameters: { clientHandle: 7, samplingInterval: 0, queueSize: 10, discardOldest: true, filter },
    });
    const resp = await S.session.createMonitoredItems({
        subscriptionId: sub.subscriptionId,
        timestampsToReturn: TimestampsToReturn.Both,
        itemsToCreate: [
            item(bad),
            item(constructEventFilter(["Severity"]), "i=85"), // Objects is no event notifier
        ],
    });
    assertStatus(resp.results[0].statusCode, ua.StatusCodes.BadEventFilterInvalid, "bad filter");
    const fr = resp.results[0].filterResult;
    assert.ok(fr, "an EventFilterResult");
    assertGood(fr.selectClauseResults[0], "select clause 0");
    assertStatus(fr.selectClauseResults[1], ua.StatusCodes.BadTypeDefinitionInvalid, "select clause 1");
    assertStatus(fr.whereClauseResult.elementResults[0].statusCode, ua.StatusCodes.BadFilterOperandCountMismatch, "where element 0");
    assertStatus(resp.results[1].statusCode, ua.StatusCodes.BadAttributeIdInvalid, "not an event notifier");
    await sub.terminate();
});

test("ConditionRefresh sends RefreshStart, the retained HighAlarm, RefreshEnd", { timeout: T_LONG }, async () => {
    const sub = await subscribe();
    const names = ["EventType", "SourceName", "ConditionId", "Retain", "ActiveState.Id"];
    const { events } = await monitorEvents(sub, demoEvents(), constructEventFilter(names));
    // Let the first demo tick (or any event) arrive so that the item is live.
    await until("an event", 5000, () => events.length >= 1);
    const before = events.length;
    const st = await S.session.call({
        objectId: resolveNodeId("i=2782"),
        methodId: resolveNodeId("i=3875"),
        inputArguments: [new Variant({ dataType: DataType.UInt32, value: sub.subscriptionId })],
    });
    assertGood(st.statusCode, "ConditionRefresh");
    const typeOf = (e) => e[0].value && e[0].value.toString();
    await until("RefreshEnd", 5000, () => events.slice(before).some((e) => typeOf(e) === "ns=0;i=2788"));
    // The refresh is queued at once: between its markers come only the retained conditions.
    const after = events.slice(before);
    const start = after.findIndex((e) => typeOf(e) === "ns=0;i=2787");
    const end = after.findIndex((e) => typeOf(e) === "ns=0;i=2788");
    assert.ok(start >= 0 && end > start, "RefreshStart before RefreshEnd");
    const seq = after.slice(start, end + 1).map(typeOf);
    assert.deepEqual(seq, ["ns=0;i=2787", "ns=0;i=2915", "ns=0;i=2788"]);
    const alarm = after[start + 1];
    assert.equal(alarm[1].value, "Dynamic");
    assert.equal(alarm[2].value.toString(), `ns=${S.demo};s=Demo.Events.HighAlarm`);
    assert.equal(alarm[3].value, true);
    assert.equal(typeof alarm[4].value, "boolean");

    // An unknown subscription is refused.
    const badSub = await S.session.call({
        objectId: resolveNodeId("i=2782"),
        methodId: resolveNodeId("i=3875"),
        inputArguments: [new Variant({ dataType: DataType.UInt32, value: 0x7fffffff })],
    });
    assertStatus(badSub.statusCode, ua.StatusCodes.BadSubscriptionIdInvalid, "unknown subscription");
    await sub.terminate();
});
