// SPDX-License-Identifier: Apache-2.0
// The out-of-tree example node manager (examples/vendor-plugin), built against an installed
// SDK and loaded by the installed server (tests/sdk/install_example_test.sh): its device
// browses under Objects, its registers read, its Setpoint writes, and the register changes
// its own thread reports through the host API arrive at a node-opcua subscription, and its
// SetSetpoint method checks its argument; Temperature is an analog item with a range and a
// unit, and a new setpoint raises an event from the device. Energy answers after the bus's
// slow_read_ms (500 here) without holding the server's only worker (request_threads = 1).
// Its Overtemperature alarm (ABI 1.13) is raised when the temperature passes 100, a client
// acknowledges it with the event's EventId, and it is cleared again below 95. A probe plugged
// into the device at run time (ABI 1.12) gets nodes of its own, reported by
// GeneralModelChangeEvents, and loses them again when pulled out.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_LONG, T_SHORT, connect, disconnect, readNamespaceArray, assertGood, assertStatus, until } =
    require("../lib/ua");
const { AttributeIds, DataType, ClientSubscription, TimestampsToReturn, BrowseDirection } = ua;
const { constructEventFilter, DataChangeFilter, DataChangeTrigger, DeadbandType } = ua;

const VENDOR_URI = "urn:vendor:device";
const S = { client: null, session: null, ns: -1 };

before(async () => {
    S.client = await connect();
    S.session = await S.client.createSession();
    const namespaces = await readNamespaceArray(S.session);
    S.ns = namespaces.indexOf(VENDOR_URI);
    assert.ok(S.ns > 1, `${VENDOR_URI} missing from NamespaceArray ${JSON.stringify(namespaces)}`);
}, { timeout: T_SHORT });
after(async () => {
    if (S.session) await S.session.close().catch(() => {});
    if (S.client) await disconnect(S.client);
}, { timeout: T_SHORT });

const id = (s) => `ns=${S.ns};s=${s}`;

test("the device browses under Objects with its four registers and its method", { timeout: T_SHORT }, async () => {
    const objects = await S.session.browse({
        nodeId: "i=85", browseDirection: BrowseDirection.Forward, resultMask: 0x3f,
        referenceTypeId: "i=33", includeSubtypes: true,
    });
    assertGood(objects.statusCode, "browse Objects");
    const device = objects.references.find((r) => r.browseName.name === "Pump7");
    assert.ok(device, "Pump7 not organized by Objects");
    assert.equal(device.nodeId.toString(), id("Pump7"));

    const regs = await S.session.browse({
        nodeId: id("Pump7"), browseDirection: BrowseDirection.Forward, resultMask: 0x3f,
        referenceTypeId: "i=47", includeSubtypes: true,
    });
    assertGood(regs.statusCode, "browse Pump7");
    assert.deepEqual(regs.references.map((r) => r.browseName.name).sort(),
        ["Cycles", "Energy", "Overtemperature", "SetProbeConnected", "SetSetpoint", "Setpoint", "Status",
            "Temperature"]);
});

test("SetSetpoint: the kernel checks the arguments, the plugin says which one is wrong", { timeout: T_SHORT }, async () => {
    const call = (inputArguments) => S.session.call({ objectId: id("Pump7"), methodId: id("Pump7.SetSetpoint"), inputArguments });
    const ok = await call([{ dataType: DataType.Double, value: 42 }]);
    assertGood(ok.statusCode, "SetSetpoint(42)");
    assert.equal(ok.outputArguments.length, 1);
    assert.equal(ok.outputArguments[0].dataType, DataType.Double);
    const back = await S.session.read({ nodeId: id("Pump7.Setpoint"), attributeId: AttributeIds.Value });
    assert.equal(back.value.value, 42);
    const again = await call([{ dataType: DataType.Double, value: 43 }]);
    assert.equal(again.outputArguments[0].value, 42);

    const range = await call([{ dataType: DataType.Double, value: 1000 }]);
    assertStatus(range.statusCode, ua.StatusCodes.BadInvalidArgument, "SetSetpoint(1000)");
    assert.equal(range.inputArgumentResults.length, 1);
    assertStatus(range.inputArgumentResults[0], ua.StatusCodes.BadOutOfRange, "the value's result");
    const type = await call([{ dataType: DataType.String, value: "hot" }]);
    assertStatus(type.statusCode, ua.StatusCodes.BadInvalidArgument, "SetSetpoint(\"hot\")");
    assertStatus(type.inputArgumentResults[0], ua.StatusCodes.BadTypeMismatch, "the value's result");
    assertStatus((await call([])).statusCode, ua.StatusCodes.BadArgumentsMissing, "SetSetpoint()");
    assertStatus((await call([{ dataType: DataType.Double, value: 1 }, { dataType: DataType.Double, value: 2 }])).statusCode,
        ua.StatusCodes.BadTooManyArguments, "SetSetpoint(1, 2)");
});

test("registers read with their types; the status is a string", { timeout: T_SHORT }, async () => {
    const [t, c, s] = await S.session.read([
        { nodeId: id("Pump7.Temperature"), attributeId: AttributeIds.Value },
        { nodeId: id("Pump7.Cycles"), attributeId: AttributeIds.Value },
        { nodeId: id("Pump7.Status"), attributeId: AttributeIds.Value },
    ]);
    for (const dv of [t, c, s]) assertGood(dv.statusCode, "read register");
    assert.equal(t.value.dataType, DataType.Double);
    assert.equal(c.value.dataType, DataType.UInt32);
    assert.equal(s.value.value, "running");
});

test("Setpoint is writable and typed; Temperature is read-only", { timeout: T_SHORT }, async () => {
    const ok = await S.session.write({
        nodeId: id("Pump7.Setpoint"), attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Double, value: 80 } },
    });
    assertGood(ok, "write Setpoint");
    const back = await S.session.read({ nodeId: id("Pump7.Setpoint"), attributeId: AttributeIds.Value });
    assert.equal(back.value.value, 80);
    const wrongType = await S.session.write({
        nodeId: id("Pump7.Setpoint"), attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.String, value: "hot" } },
    });
    assertStatus(wrongType, ua.StatusCodes.BadTypeMismatch, "write a String to Setpoint");
    const readOnly = await S.session.write({
        nodeId: id("Pump7.Temperature"), attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Double, value: 1 } },
    });
    assertStatus(readOnly, [ua.StatusCodes.BadNotWritable, ua.StatusCodes.BadUserAccessDenied], "write Temperature");
});

test("a subscription receives the changes the device thread reports", { timeout: T_LONG }, async () => {
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 50, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => {
        sub.once("started", resolve);
        sub.once("internal_error", reject);
    });
    const cycles = [];
    const temps = [];
    const watch = async (nodeId, sink) => {
        const item = await sub.monitor({ nodeId, attributeId: AttributeIds.Value },
            { samplingInterval: 0, discardOldest: true, queueSize: 10 }, TimestampsToReturn.Both);
        item.on("changed", (dv) => sink.push(dv));
    };
    await watch(id("Pump7.Cycles"), cycles);
    await watch(id("Pump7.Temperature"), temps);
    await until("five Cycles changes", 10000, () => cycles.length >= 5 && temps.length >= 2);
    const n = cycles.map((dv) => Number(dv.value.value));
    for (let i = 1; i < n.length; i++) assert.ok(n[i] > n[i - 1], `Cycles went ${n[i - 1]} -> ${n[i]}`);
    for (const dv of cycles) assert.ok(dv.sourceTimestamp instanceof Date, "source timestamp from the device");
    await sub.terminate();
});

test("Temperature is an AnalogItem: EURange and EngineeringUnits, a Percent deadband accepted", { timeout: T_SHORT }, async () => {
    const refs = await S.session.browse({
        nodeId: id("Pump7.Temperature"), browseDirection: BrowseDirection.Forward, resultMask: 0x3f,
        referenceTypeId: "i=46", includeSubtypes: true,
    });
    assertGood(refs.statusCode, "browse the properties");
    assert.deepEqual(refs.references.map((r) => r.browseName.name).sort(), ["EURange", "EngineeringUnits"]);
    const type = await S.session.browse({
        nodeId: id("Pump7.Temperature"), browseDirection: BrowseDirection.Forward, resultMask: 0x3f,
        referenceTypeId: "i=40", includeSubtypes: false,
    });
    assert.equal(type.references[0].nodeId.toString(), "ns=0;i=2368", "HasTypeDefinition AnalogItemType");

    const [range, unit] = await S.session.read([
        { nodeId: id("Pump7.Temperature.EURange"), attributeId: AttributeIds.Value },
        { nodeId: id("Pump7.Temperature.EngineeringUnits"), attributeId: AttributeIds.Value },
    ]);
    assertGood(range.statusCode, "read EURange");
    assert.equal(range.value.value.low, -50);
    assert.equal(range.value.value.high, 150);
    assertGood(unit.statusCode, "read EngineeringUnits");
    assert.equal(unit.value.value.namespaceUri, "http://www.opcfoundation.org/UA/units/un/cefact");
    assert.equal(unit.value.value.unitId, 4408652, "UNECE CEL");
    assert.equal(unit.value.value.description.text, "degree Celsius");

    // A Percent deadband needs the EURange: without it the server answers BadMonitoredItemFilterUnsupported.
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 100, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
    const result = await S.session.createMonitoredItems({
        subscriptionId: sub.subscriptionId, timestampsToReturn: TimestampsToReturn.Both,
        itemsToCreate: [{
            itemToMonitor: { nodeId: id("Pump7.Temperature"), attributeId: AttributeIds.Value },
            monitoringMode: ua.MonitoringMode.Reporting,
            requestedParameters: {
                clientHandle: 1, samplingInterval: 100, queueSize: 1, discardOldest: true,
                filter: new DataChangeFilter({ trigger: DataChangeTrigger.StatusValue, deadbandType: DeadbandType.Percent, deadbandValue: 1 }),
            },
        }],
    });
    assertGood(result.results[0].statusCode, "Percent deadband on Temperature");
    await sub.terminate();
});

test("a new setpoint raises an event from the device object", { timeout: T_LONG }, async () => {
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 50, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
    const events = [];
    const item = await sub.monitor({ nodeId: id("Pump7"), attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 100,
          filter: constructEventFilter(["SourceNode", "SourceName", "Severity", "Message"]) },
        TimestampsToReturn.Both);
    item.on("changed", (fields) => events.push(fields));
    const ok = await S.session.write({
        nodeId: id("Pump7.Setpoint"), attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Double, value: 61.5 } },
    });
    assertGood(ok, "write Setpoint");
    await until("the setpoint event", 10000, () => events.some((f) => /61\.5/.test(String(f[3].value && f[3].value.text))));
    const ev = events.find((f) => /61\.5/.test(String(f[3].value && f[3].value.text)));
    assert.equal(ev[0].value.toString(), id("Pump7"));
    assert.equal(ev[1].value, "Pump7");
    assert.equal(ev[2].value, 300);
    await sub.terminate();
});

test("Energy is read from the slow bus without holding the only worker", { timeout: T_LONG }, async () => {
    // One worker: if the slow read held it, the fast reads sent after it could only be
    // answered after it. They are answered first, and Energy still comes with its value.
    const order = [];
    const slow = S.session.read({ nodeId: id("Pump7.Energy"), attributeId: AttributeIds.Value })
        .then((dv) => { order.push("Energy"); return dv; });
    const fast = [];
    for (let i = 0; i < 5; i++) {
        fast.push(S.session.read({ nodeId: id("Pump7.Cycles"), attributeId: AttributeIds.Value })
            .then((dv) => { order.push("Cycles"); assertGood(dv.statusCode, "read Cycles"); }));
    }
    await Promise.all(fast);
    const energy = await slow;
    assertGood(energy.statusCode, "read Energy");
    assert.equal(energy.value.dataType, DataType.Double);
    assert.ok(energy.value.value >= 0);
    assert.deepEqual(order, ["Cycles", "Cycles", "Cycles", "Cycles", "Cycles", "Energy"]);
});

test("a monitored item on Energy is sampled through the asynchronous read", { timeout: T_LONG }, async () => {
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 100, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
    const seen = [];
    const item = await sub.monitor({ nodeId: id("Pump7.Energy"), attributeId: AttributeIds.Value },
        { samplingInterval: 1000, discardOldest: true, queueSize: 10 }, TimestampsToReturn.Both);
    item.on("changed", (dv) => seen.push(dv));
    await until("two Energy samples", 20000, () => seen.length >= 2);
    for (const dv of seen) {
        assertGood(dv.statusCode, "sampled Energy");
        assert.equal(dv.value.dataType, DataType.Double);
    }
    assert.ok(Number(seen[1].value.value) > Number(seen[0].value.value), "the meter counts up");
    await sub.terminate();
});

test("the device's Overtemperature alarm: raised, acknowledged, cleared", { timeout: T_LONG }, async () => {
    const { Variant, resolveNodeId } = ua;
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 50, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
    const events = [];
    const names = ["EventId", "ConditionId", "ActiveState.Id", "AckedState.Id", "Comment", "Severity",
        "LimitState.CurrentState.Id"];
    const item = await sub.monitor({ nodeId: id("Pump7"), attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 100, filter: constructEventFilter(names) },
        TimestampsToReturn.Both);
    item.on("changed", (fields) => events.push(fields));
    const alarm = () => events.filter((f) => f[1].value && f[1].value.toString() === id("Pump7.Overtemperature"));
    const setpoint = (value) => S.session.write({
        nodeId: id("Pump7.Setpoint"), attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Double, value } },
    });
    assertGood(await setpoint(140), "write Setpoint 140");
    await until("the alarm raised", 15000, () => alarm().some((f) => f[2].value === true));
    const raised = alarm().find((f) => f[2].value === true);
    assert.equal(raised[3].value, false, "unacknowledged");
    assert.equal(raised[5].value, 700);
    assert.equal(raised[6].value.toString(), "ns=0;i=9331", "LimitState High");
    const ack = await S.session.call({
        objectId: resolveNodeId(id("Pump7.Overtemperature")), methodId: resolveNodeId("i=9111"),
        inputArguments: [
            new Variant({ dataType: DataType.ByteString, value: raised[0].value }),
            new Variant({ dataType: DataType.LocalizedText, value: { locale: "en", text: "checking the pump" } }),
        ],
    });
    assertGood(ack.statusCode, "Acknowledge");
    await until("the acknowledgement", 5000, () => alarm().some((f) => f[3].value === true));
    const acked = alarm().find((f) => f[3].value === true);
    assert.equal(acked[4].value.text, "checking the pump");
    assertGood(await setpoint(20), "write Setpoint 20");
    await until("the alarm cleared", 15000, () => alarm().some((f) => f[2].value === false && f[3].value === true));
    await sub.terminate();
});

test("a probe plugged in at run time: its nodes appear, report values and go again", { timeout: T_LONG }, async () => {
    const { EventFilter, SimpleAttributeOperand, resolveNodeId, StatusCodes } = ua;
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 50, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
    const field = (type, name) => new SimpleAttributeOperand({
        typeDefinitionId: resolveNodeId(type), browsePath: [{ namespaceIndex: 0, name }],
        attributeId: AttributeIds.Value,
    });
    const filter = new EventFilter({ selectClauses: [field("i=2041", "EventType"), field("i=2133", "Changes")] });
    const changes = [];
    const events = await sub.monitor({ nodeId: "i=2253", attributeId: AttributeIds.EventNotifier },
        { samplingInterval: 0, discardOldest: true, queueSize: 100, filter }, TimestampsToReturn.Both);
    events.on("changed", (f) => {
        if (f[0].value && f[0].value.toString() === "ns=0;i=2133") changes.push(f[1].value || []);
    });
    const verbsOf = (node) => changes.flat().filter((c) => c.affected.toString() === node).map((c) => c.verb);
    const plug = (connected) => S.session.call({
        objectId: id("Pump7"), methodId: id("Pump7.SetProbeConnected"),
        inputArguments: [{ dataType: DataType.Boolean, value: connected }],
    });
    const humidity = { nodeId: id("Pump7.Probe.Humidity"), attributeId: AttributeIds.Value };
    const components = async () => (await S.session.browse({
        nodeId: id("Pump7"), browseDirection: BrowseDirection.Forward, resultMask: 0x3f,
        referenceTypeId: "i=47", includeSubtypes: true,
    })).references.map((r) => r.browseName.name);

    assertStatus((await S.session.read(humidity)).statusCode, StatusCodes.BadNodeIdUnknown, "Humidity before");
    assert.ok(!(await components()).includes("Probe"));
    assertGood((await plug(true)).statusCode, "plug the probe in");
    assertStatus((await plug(true)).statusCode, StatusCodes.BadInvalidState, "plugged in twice");
    await until("the NodeAdded change", 10000, () => verbsOf(id("Pump7.Probe")).some((v) => v & 1));
    assert.ok(verbsOf(id("Pump7.Probe.Humidity")).some((v) => v & 1), "Humidity added in the same change");
    assert.ok((await components()).includes("Probe"));

    const seen = [];
    const item = await sub.monitor(humidity, { samplingInterval: 0, discardOldest: true, queueSize: 10 },
        TimestampsToReturn.Both);
    item.on("changed", (dv) => seen.push(dv));
    await until("two Humidity reports", 10000, () => seen.filter((dv) => dv.statusCode.isGood()).length >= 2);
    const good = seen.filter((dv) => dv.statusCode.isGood());
    assert.equal(good[0].value.dataType, DataType.Double);
    assert.notEqual(good[0].value.value, good[good.length - 1].value.value, "the device reports changes");

    assertGood((await plug(false)).statusCode, "pull the probe out");
    await until("the NodeDeleted change", 10000, () => verbsOf(id("Pump7.Probe")).some((v) => v & 2));
    await until("the item told", 10000, () => seen.some((dv) => dv.statusCode.value === StatusCodes.BadNodeIdUnknown.value));
    assertStatus((await S.session.read(humidity)).statusCode, StatusCodes.BadNodeIdUnknown, "Humidity after");
    assert.ok(!(await components()).includes("Probe"));
    assertStatus((await plug(false)).statusCode, StatusCodes.BadInvalidState, "pulled out twice");
    await sub.terminate();
});
