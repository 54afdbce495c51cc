// SPDX-License-Identifier: Apache-2.0
// The NodeSet2 loader (plugins/node-manager/nodeset) with the OPC Foundation's DI and
// Machinery companion specifications plus tests/sdk/data/Uaplex.Test.NodeSet2.xml, seen
// through node-opcua's client (tests/sdk/nodeset_test.sh starts the server): namespaces,
// DI's DeviceSet and DeviceType, Machinery's Machines folder, values from the files,
// DataTypeDefinitions, and a structure of the test model decoded by its definition.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_LONG, T_SHORT, connect, disconnect, readNamespaceArray, assertGood, assertStatus } =
    require("../lib/ua");
const { AttributeIds, BrowseDirection, NodeClass, DataType } = ua;

const DI = "http://opcfoundation.org/UA/DI/";
const MACHINERY = "http://opcfoundation.org/UA/Machinery/";
const TEST = "urn:uaplex:test:nodeset";
const S = { client: null, session: null, di: -1, mach: -1, test: -1 };

before(async () => {
    S.client = await connect();
    S.session = await S.client.createSession();
    const ns = await readNamespaceArray(S.session);
    S.di = ns.indexOf(DI);
    S.mach = ns.indexOf(MACHINERY);
    S.test = ns.indexOf(TEST);
    assert.ok(S.di > 1 && S.mach > 1 && S.test > 1, `namespaces missing: ${JSON.stringify(ns)}`);
}, { timeout: T_SHORT });
after(async () => {
    if (S.session) await S.session.close().catch(() => {});
    if (S.client) await disconnect(S.client);
}, { timeout: T_SHORT });

async function browse(nodeId, referenceTypeId = "i=33", browseDirection = BrowseDirection.Forward) {
    const r = await S.session.browse({ nodeId, browseDirection, referenceTypeId, includeSubtypes: true, resultMask: 0x3f });
    assertGood(r.statusCode, `browse ${nodeId}`);
    return r.references;
}
const byName = (refs, name) => refs.find((r) => r.browseName.name === name);

test("Objects organizes DI's DeviceSet and Machinery's Machines", { timeout: T_SHORT }, async () => {
    const objects = await browse("i=85");
    const deviceSet = byName(objects, "DeviceSet");
    assert.ok(deviceSet, "DeviceSet missing under Objects");
    assert.equal(deviceSet.nodeId.toString(), `ns=${S.di};i=5001`);
    assert.equal(deviceSet.browseName.namespaceIndex, S.di);
    const machines = byName(objects, "Machines");
    assert.ok(machines, "Machines missing under Objects");
    assert.equal(machines.nodeId.toString(), `ns=${S.mach};i=1001`);
    assert.equal(machines.nodeClass, NodeClass.Object);
    // Machines is a FolderType with its inverse reference back to Objects.
    assert.equal(machines.typeDefinition.toString(), "ns=0;i=61");
    const back = await browse(`ns=${S.mach};i=1001`, "i=35", BrowseDirection.Inverse);
    assert.ok(back.some((r) => r.nodeId.toString() === "ns=0;i=85"));
});

test("DeviceType is an abstract ObjectType below ComponentType with its components", { timeout: T_SHORT }, async () => {
    const id = `ns=${S.di};i=1002`;
    const [nc, abs, bn] = await S.session.read([
        { nodeId: id, attributeId: AttributeIds.NodeClass },
        { nodeId: id, attributeId: AttributeIds.IsAbstract },
        { nodeId: id, attributeId: AttributeIds.BrowseName },
    ]);
    assert.equal(nc.value.value, NodeClass.ObjectType);
    assert.equal(abs.value.value, true);
    assert.equal(bn.value.value.name, "DeviceType");
    const supers = await browse(id, "i=45", BrowseDirection.Inverse);
    assert.deepEqual(supers.map((r) => r.nodeId.toString()), [`ns=${S.di};i=15063`]);
    const props = await browse(id, "i=46");
    for (const name of ["SerialNumber", "RevisionCounter", "Manufacturer", "Model"])
        assert.ok(byName(props, name), `DeviceType lacks ${name}`);
    // The HasSubtype from namespace 0 is stored at both ends: BaseObjectType's subtypes
    // include DI's TopologyElementType.
    const subs = await browse("i=58", "i=45");
    assert.ok(subs.some((r) => r.nodeId.toString() === `ns=${S.di};i=1001`), "TopologyElementType not below BaseObjectType");
});

test("values come from the files: strings, dates, arrays of Arguments", { timeout: T_SHORT }, async () => {
    const [uri, version, date, args] = await S.session.read([
        { nodeId: `ns=${S.di};i=15002`, attributeId: AttributeIds.Value },
        { nodeId: `ns=${S.di};i=15003`, attributeId: AttributeIds.Value },
        { nodeId: `ns=${S.di};i=15004`, attributeId: AttributeIds.Value },
        { nodeId: `ns=${S.di};i=6167`, attributeId: AttributeIds.Value },
    ]);
    for (const dv of [uri, version, date, args]) assertGood(dv.statusCode, "read");
    assert.equal(uri.value.value, DI);
    assert.equal(version.value.value, "1.04.0");
    assert.equal(date.value.value.toISOString(), "2022-11-03T00:00:00.000Z");
    assert.equal(args.value.arrayType, ua.VariantArrayType.Array);
    const arg = args.value.value[0];
    assert.equal(arg.name, "Context");
    assert.equal(arg.dataType.toString(), "ns=0;i=12");
    assert.equal(arg.valueRank, -1);
});

test("DataTypeDefinitions of the files: DI structure and enumeration", { timeout: T_SHORT }, async () => {
    const [s, e] = await S.session.read([
        { nodeId: `ns=${S.di};i=15889`, attributeId: AttributeIds.DataTypeDefinition },
        { nodeId: `ns=${S.di};i=6244`, attributeId: AttributeIds.DataTypeDefinition },
    ]);
    assertGood(s.statusCode, "StructureDefinition");
    assert.deepEqual(s.value.value.fields.map((f) => f.name), ["SequenceNumber", "EndOfResults", "ParameterDefs"]);
    assert.equal(s.value.value.fields[2].dataType.toString(), `ns=${S.di};i=6525`);
    assert.equal(s.value.value.fields[2].valueRank, 1);
    assertGood(e.statusCode, "EnumDefinition");
    // Int64 values arrive as [high, low].
    const int64 = (v) => (Array.isArray(v) ? v[0] * 2 ** 32 + v[1] : Number(v));
    assert.deepEqual(e.value.value.fields.map((f) => [f.name, int64(f.value)]),
        [["NORMAL", 0], ["FAILURE", 1], ["CHECK_FUNCTION", 2], ["OFF_SPEC", 3], ["MAINTENANCE_REQUIRED", 4]]);
});

test("a structure of the test model decodes through its definition", { timeout: T_LONG }, async () => {
    const dv = await S.session.read({ nodeId: `ns=${S.test};i=5001`, attributeId: AttributeIds.Value });
    assertGood(dv.statusCode, "read Origin");
    await ua.promoteOpaqueStructure(S.session, [{ value: dv.value }]);
    const p = dv.value.value;
    assert.equal(p.x, 1.5);
    assert.equal(p.y, -2.25);
    assert.equal(p.label, "origin & start");
    assert.equal(p.color, 1);
    assert.deepEqual(Array.from(p.tags), ["a", "b"]);

    const [color, limits] = await S.session.read([
        { nodeId: `ns=${S.test};i=5002`, attributeId: AttributeIds.Value },
        { nodeId: `ns=${S.test};i=5003`, attributeId: AttributeIds.Value },
    ]);
    assert.equal(color.value.value, 2);
    assert.deepEqual(Array.from(limits.value.value), [0, 12.5, 100]);

    // Writing it back round-trips; a body that does not decode by the definition is refused.
    const ok = await S.session.write({ nodeId: `ns=${S.test};i=5001`, attributeId: AttributeIds.Value, value: { value: dv.value } });
    assertGood(ok, "write Origin back");
    const other = new ua.Argument({ name: "x", dataType: "i=6", valueRank: -1 });
    const wrong = await S.session.write({
        nodeId: `ns=${S.test};i=5001`, attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.ExtensionObject, value: other } },
    });
    assertStatus(wrong, [ua.StatusCodes.BadTypeMismatch], "write an Argument to Origin");
});

test("a test-model device sits in DI's DeviceSet", { timeout: T_SHORT }, async () => {
    const devices = await browse(`ns=${S.di};i=5001`, "i=35");
    const pump = byName(devices, "Pump");
    assert.ok(pump, "Pump missing from DeviceSet");
    assert.equal(pump.typeDefinition.toString(), `ns=${S.di};i=15063`);
});

// Methods of the files, implemented by another plugin (tests/sdk/plugins/test_companion.cpp)
// through method_bind: by NodeId, and by a DI type's method for all instances of subtypes.
const callOne = async (objectId, methodId, inputArguments) => S.session.call({ objectId, methodId, inputArguments });

test("a method of a NodeSet2 file runs the plugin that implements it, arguments checked", { timeout: T_SHORT }, async () => {
    const valve = `ns=${S.test};i=6100`, scale = `ns=${S.test};i=7001`;
    const exec = await S.session.read({ nodeId: scale, attributeId: AttributeIds.Executable });
    assert.equal(exec.value.value, true);
    const ok = await callOne(valve, scale, [{ dataType: DataType.Double, value: 1.5 }, { dataType: DataType.Int32, value: 4 }]);
    assertGood(ok.statusCode, "Scale(1.5, 4)");
    assert.equal(ok.outputArguments[0].value, 6);
    const neg = await callOne(valve, scale, [{ dataType: DataType.Double, value: 1.5 }, { dataType: DataType.Int32, value: -1 }]);
    assertStatus(neg.statusCode, ua.StatusCodes.BadInvalidArgument, "Scale(1.5, -1)");
    assert.equal(neg.inputArgumentResults.length, 2);
    assertGood(neg.inputArgumentResults[0], "factor");
    assertStatus(neg.inputArgumentResults[1], ua.StatusCodes.BadOutOfRange, "steps");
    const type = await callOne(valve, scale, [{ dataType: DataType.String, value: "x" }, { dataType: DataType.Int32, value: 1 }]);
    assertStatus(type.statusCode, ua.StatusCodes.BadInvalidArgument, "Scale(\"x\", 1)");
    assertStatus(type.inputArgumentResults[0], ua.StatusCodes.BadTypeMismatch, "factor");
    assertStatus((await callOne(valve, scale, [{ dataType: DataType.Double, value: 1 }])).statusCode,
        ua.StatusCodes.BadArgumentsMissing, "Scale(1)");
});

test("DI's InitLock runs on an instance of a subtype of LockingServicesType and on DI's own Lock", { timeout: T_SHORT }, async () => {
    const initLock = `ns=${S.di};i=6393`;
    // Valve is a TestLockingType (test model), a subtype of DI's LockingServicesType.
    const ok = await callOne(`ns=${S.test};i=6100`, initLock, [{ dataType: DataType.String, value: "maintenance" }]);
    assertGood(ok.statusCode, "InitLock on Valve");
    assert.equal(ok.outputArguments[0].value, 0);
    const empty = await callOne(`ns=${S.test};i=6100`, initLock, [{ dataType: DataType.String, value: "" }]);
    assertStatus(empty.statusCode, ua.StatusCodes.BadInvalidArgument, "InitLock(\"\")");
    assertStatus(empty.inputArgumentResults[0], ua.StatusCodes.BadInvalidArgument, "Context");
    // TopologyElementType's Lock (ns=DI;i=6161) is a LockingServicesType with its own copy
    // of InitLock (ns=DI;i=6166): the type's implementation serves it.
    const copy = await callOne(`ns=${S.di};i=6161`, `ns=${S.di};i=6166`, [{ dataType: DataType.String, value: "c" }]);
    assertGood(copy.statusCode, "InitLock copy on DI's Lock");
    // Not a method of the LoaderTest folder.
    const wrong = await callOne(`ns=${S.test};i=5000`, initLock, [{ dataType: DataType.String, value: "c" }]);
    assertStatus(wrong.statusCode, ua.StatusCodes.BadMethodInvalid, "InitLock on a folder");
});
