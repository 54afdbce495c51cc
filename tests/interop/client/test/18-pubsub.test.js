// SPDX-License-Identifier: Apache-2.0
// The PublishSubscribe model (Part 14 9.1) as a standard client sees it, against the server
// run_suite.sh starts on UAPLEX_PUBSUB_ENDPOINT ([pubsub] publishing two benchmark variables
// to a Mosquitto broker of its own): Server.PublishSubscribe -HasPubSubConnection-> the
// connection -HasWriterGroup-> the WriterGroup -HasDataSetWriter-> the DataSetWriter with its
// properties and Status.State, the PublishedDataSet with its DataSetMetaData, and the model
// read-only. Skipped without that server (no mosquitto or no mqtt plugin).
"use strict";

const { test } = require("node:test");
const { ua, assert, PEER, T_SHORT, T_LONG, makeClient, assertGood, assertStatus } = require("../lib/ua");
const { AttributeIds, BrowseDirection, DataType, NodeClassMask, StatusCodes, Variant } = ua;

const PUBSUB = process.env.UAPLEX_PUBSUB_ENDPOINT;
const skip = PEER || !PUBSUB ? "needs run_suite.sh's PubSub server and broker" : false;

const PUBLISH_SUBSCRIBE = "i=14443";
const HAS_PUBSUB_CONNECTION = "i=14476";
const HAS_WRITER_GROUP = "i=18804";
const HAS_DATASET_WRITER = "i=15296";
const DATASET_TO_WRITER = "i=14936";
const HAS_COMPONENT = "i=47";
const HAS_PROPERTY = "i=46";

async function withSession(fn) {
    const client = makeClient();
    await client.connect(PUBSUB);
    let session;
    try {
        session = await client.createSession();
        return await fn(session);
    } finally {
        if (session) await session.close().catch(() => {});
        await client.disconnect().catch(() => {});
    }
}

// The forward references of `referenceTypeId` (and subtypes) from `nodeId`.
async function children(session, nodeId, referenceTypeId) {
    const r = await session.browse({
        nodeId,
        referenceTypeId,
        browseDirection: BrowseDirection.Forward,
        includeSubtypes: true,
        nodeClassMask: NodeClassMask.Object | NodeClassMask.Variable,
        resultMask: 63,
    });
    assertGood(r.statusCode, `browse ${nodeId}`);
    return r.references;
}

async function child(session, nodeId, referenceTypeId, name) {
    const refs = await children(session, nodeId, referenceTypeId);
    const hit = refs.find((r) => r.browseName.name === name);
    assert.ok(hit, `${nodeId} has no ${referenceTypeId} to ${name}: ${refs.map((r) => r.browseName.name)}`);
    return hit;
}

async function value(session, nodeId) {
    const dv = await session.read({ nodeId, attributeId: AttributeIds.Value });
    assertGood(dv.statusCode, `read ${nodeId}`);
    return dv.value;
}

async function propertyValue(session, nodeId, name) {
    const p = await child(session, nodeId, HAS_PROPERTY, name);
    return value(session, p.nodeId);
}

// The writer the suite's server publishes: mqtt / Fast / Boiler.
async function writerOf(session) {
    const connection = await child(session, PUBLISH_SUBSCRIBE, HAS_PUBSUB_CONNECTION, "mqtt");
    assert.equal(connection.typeDefinition.toString(), "ns=0;i=14209"); // PubSubConnectionType
    const group = await child(session, connection.nodeId, HAS_WRITER_GROUP, "Fast");
    assert.equal(group.typeDefinition.toString(), "ns=0;i=17725"); // WriterGroupType
    const writer = await child(session, group.nodeId, HAS_DATASET_WRITER, "Boiler");
    assert.equal(writer.typeDefinition.toString(), "ns=0;i=15298"); // DataSetWriterType
    return { connection, group, writer };
}

// Polls `fn` (async) until it holds, at most `ms`.
async function eventually(fn, ms, what) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (await fn()) return;
        await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`timed out waiting for ${what}`);
}

async function stateOf(session, nodeId) {
    const status = await child(session, nodeId, HAS_COMPONENT, "Status");
    assert.equal(status.typeDefinition.toString(), "ns=0;i=14643"); // PubSubStatusType
    const state = await child(session, status.nodeId, HAS_COMPONENT, "State");
    const v = await value(session, state.nodeId);
    assert.equal(v.dataType, DataType.Int32);
    return v.value;
}

test("PublishSubscribe: connection, WriterGroup and DataSetWriter with their properties", { skip, timeout: T_SHORT }, () =>
    withSession(async (session) => {
        const { connection, group, writer } = await writerOf(session);
        const publisherId = await propertyValue(session, connection.nodeId, "PublisherId");
        assert.equal(publisherId.value, "interop-pub");
        const groupId = await propertyValue(session, group.nodeId, "WriterGroupId");
        assert.equal(groupId.dataType, DataType.UInt16);
        assert.equal(groupId.value, 3);
        const interval = await propertyValue(session, group.nodeId, "PublishingInterval");
        assert.equal(interval.value, 200);
        const writerId = await propertyValue(session, writer.nodeId, "DataSetWriterId");
        assert.equal(writerId.dataType, DataType.UInt16);
        assert.equal(writerId.value, 11);
        const keyFrames = await propertyValue(session, writer.nodeId, "KeyFrameCount");
        assert.equal(keyFrames.value, 5);
    }));

test("PublishSubscribe: the writer's Status.State is Operational with the broker", { skip, timeout: T_LONG }, () =>
    withSession(async (session) => {
        const { connection, writer } = await writerOf(session);
        await eventually(async () => (await stateOf(session, writer.nodeId)) === 2, 15000, "writer Operational");
        assert.equal(await stateOf(session, connection.nodeId), 2);
        const root = await value(session, "i=17406"); // PublishSubscribe.Status.State
        assert.equal(root.value, 2);
    }));

test("PublishSubscribe: the PublishedDataSet, its DataSetMetaData and DataSetToWriter", { skip, timeout: T_SHORT }, () =>
    withSession(async (session) => {
        const { writer } = await writerOf(session);
        const dataSet = await child(session, "i=17371", HAS_COMPONENT, "Boiler"); // PublishedDataSets
        assert.equal(dataSet.typeDefinition.toString(), "ns=0;i=14534"); // PublishedDataItemsType
        const target = await child(session, dataSet.nodeId, DATASET_TO_WRITER, "Boiler");
        assert.equal(target.nodeId.toString(), writer.nodeId.toString());
        const meta = await propertyValue(session, dataSet.nodeId, "DataSetMetaData");
        assert.equal(meta.dataType, DataType.ExtensionObject);
        assert.equal(meta.value.name, "Boiler");
        assert.deepEqual(meta.value.fields.map((f) => f.name), ["Temperature", "Pressure"]);
        const published = await propertyValue(session, dataSet.nodeId, "PublishedData");
        assert.equal(published.value.length, 2);
        assert.equal(published.value[0].attributeId, AttributeIds.Value);
    }));

test("PublishSubscribe: the model is read-only", { skip, timeout: T_SHORT }, () =>
    withSession(async (session) => {
        const { writer } = await writerOf(session);
        const id = await child(session, writer.nodeId, HAS_PROPERTY, "DataSetWriterId");
        const sc = await session.write({
            nodeId: id.nodeId,
            attributeId: AttributeIds.Value,
            value: { value: new Variant({ dataType: DataType.UInt16, value: 12 }) },
        });
        assertStatus(sc, StatusCodes.BadNotWritable, "write DataSetWriterId");
    }));
