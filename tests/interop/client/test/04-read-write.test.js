// SPDX-License-Identifier: Apache-2.0
// Read and write every demo variable; type checks, access levels, attributes, IndexRange.
"use strict";

const { test, before, after } = require("node:test");
const {
    ua, assert, PEER, T_SHORT, sharedSession, assertGood, assertStatus, isStatus, canon, statusName, sleep,
} = require("../lib/ua");
const { DEMO_TYPES } = require("../lib/layout");
const { AttributeIds, DataType, VariantArrayType, StatusCodes, NodeClass, Variant } = ua;
const { Range } = require("node-opcua-types");
const { NUMERIC, STRING } = ua.NodeId.NodeIdType;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

// A value for each type that differs from the demo's initial one (scalar, then 3 elements).
function newValues(name) {
    switch (name) {
        case "Boolean": return [false, [false, true, false]];
        case "SByte": return [-100, [-128, 0, 127]];
        case "Byte": return [200, [0, 128, 255]];
        case "Int16": return [-12345, [-32768, 1, 32767]];
        case "UInt16": return [54321, [0, 1, 65535]];
        case "Int32": return [-1234567, [-2147483648, 7, 2147483647]];
        case "UInt32": return [4000000000, [0, 8, 4294967295]];
        case "Int64": return [[0x7fffffff, 0xfffffffe], [[0, 1], [0xffffffff, 0xffffffff], [0x12345678, 0x9abcdef0]]];
        case "UInt64": return [[0xfedcba98, 0x76543210], [[0, 0], [0, 2], [0xffffffff, 0xffffffff]]];
        case "Float": return [3.25, [-0.5, 0, 1024.75]];
        case "Double": return [Math.PI, [-1e300, 0, 6.02214076e23]];
        case "String": return ["héllo uaplex ✓", ["", "x", "ünï"]];
        case "DateTime": return [new Date(Date.UTC(2030, 5, 15, 12, 0, 0, 123)),
            [new Date(Date.UTC(2001, 0, 1)), new Date(Date.UTC(2020, 1, 29, 23, 59, 59)), new Date(Date.UTC(2099, 11, 31))]];
        case "Guid": return ["0A1B2C3D-4E5F-4061-8293-A4B5C6D7E8F9",
            ["00000001-0002-0003-0405-060708090A0B", "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "12345678-9ABC-DEF0-1234-56789ABCDEF0"]];
        case "ByteString": return [Buffer.from([9, 8, 7, 6, 0, 255]), [Buffer.from([0]), Buffer.from("abc"), Buffer.alloc(300, 7)]];
        case "XmlElement": return ["<x a=\"1\">t</x>", ["<a/>", "<b>1</b>", "<c/>"]];
        case "NodeId": return [ua.coerceNodeId("ns=1;s=hello"),
            [ua.coerceNodeId("i=2253"), ua.coerceNodeId("ns=1;i=1001"), ua.coerceNodeId("ns=1;g=72962B91-FA75-4AE6-8D28-B404DC7DAF63")]];
        case "ExpandedNodeId": return [new ua.ExpandedNodeId(NUMERIC, 42, 1),
            [new ua.ExpandedNodeId(NUMERIC, 85, 0), new ua.ExpandedNodeId(STRING, "x", 1),
                new ua.ExpandedNodeId(NUMERIC, 7, 0, "urn:uaplex:elsewhere")]];
        case "StatusCode": return [StatusCodes.BadOutOfRange, [StatusCodes.Good, StatusCodes.UncertainInitialValue, StatusCodes.BadNodeIdUnknown]];
        case "QualifiedName": return [new ua.QualifiedName({ namespaceIndex: 1, name: "qq" }),
            [new ua.QualifiedName({ name: "a" }), new ua.QualifiedName({ namespaceIndex: 2, name: "b" }), new ua.QualifiedName({ name: "c" })]];
        case "LocalizedText": return [new ua.LocalizedText({ locale: "de", text: "Hallo" }),
            [new ua.LocalizedText({ locale: "en", text: "one" }), new ua.LocalizedText({ text: "two" }), new ua.LocalizedText({ locale: "fr", text: "trois" })]];
        case "Structure": return [new Range({ low: -5, high: 5 }),
            [new Range({ low: 1, high: 2 }), new Range({ low: 3, high: 4 }), new Range({ low: 5, high: 6 })]];
        case "DataValue": return [new ua.DataValue({ value: { dataType: DataType.Double, value: 1.5 }, statusCode: StatusCodes.Good }),
            [new ua.DataValue({ value: { dataType: DataType.String, value: "a" } }),
                new ua.DataValue({ value: { dataType: DataType.Boolean, value: true } }),
                new ua.DataValue({ statusCode: StatusCodes.BadWaitingForInitialData })]];
        case "BaseDataType": return ["any value", [
            new Variant({ dataType: DataType.String, value: "s" }), new Variant({ dataType: DataType.Double, value: 2.5 }),
            new Variant({ dataType: DataType.Boolean, value: false })]];
        case "DiagnosticInfo": return [new ua.DiagnosticInfo({ symbolicId: 3, additionalInfo: "extra" }),
            [new ua.DiagnosticInfo({ symbolicId: 1 }), new ua.DiagnosticInfo({ additionalInfo: "i" }), new ua.DiagnosticInfo({ locale: 2 })]];
        default: throw new Error(name);
    }
}

function scalarVariant(t, value) {
    // A BaseDataType scalar carries the value's own type (a Variant cannot nest a Variant scalar).
    const dataType = t.name === "BaseDataType" ? DataType.String : t.vt;
    return new Variant({ dataType, arrayType: VariantArrayType.Scalar, value });
}

function arrayVariant(t, value) {
    return new Variant({ dataType: t.vt, arrayType: VariantArrayType.Array, value });
}

const id = (kind, name) => `ns=${S.demo};s=Demo.${kind}.${name}`;

for (const t of DEMO_TYPES) {
    test(`scalar ${t.name}: read, write a new value, read it back`, { timeout: T_SHORT }, async () => {
        const s = S.session;
        const nodeId = id("Scalars", t.name);
        const before = await s.read({ nodeId });
        assertGood(before.statusCode, `read ${t.name}`);
        assert.equal(before.value.arrayType, VariantArrayType.Scalar, "not a scalar");
        if (t.name !== "BaseDataType") assert.equal(before.value.dataType, t.vt, `Variant type of ${t.name}`);

        const [value] = newValues(t.name);
        const variant = scalarVariant(t, value);
        const sc = await s.write({ nodeId, attributeId: AttributeIds.Value, value: { value: variant } });
        assertGood(sc, `write ${t.name}`);
        const after = await s.read({ nodeId });
        assertGood(after.statusCode, `read back ${t.name}`);
        assert.equal(after.value.dataType, variant.dataType, "Variant type after write");
        assert.deepEqual(canon(after.value.value), canon(variant.value), `${t.name} read back differs`);
    });

    test(`array ${t.name}: read 3 elements, write new ones, read them back`, { timeout: T_SHORT }, async () => {
        const s = S.session;
        const nodeId = id("Arrays", t.name);
        const before = await s.read({ nodeId });
        assertGood(before.statusCode, `read ${t.name}[]`);
        assert.equal(before.value.arrayType, VariantArrayType.Array, "not an array");
        assert.equal(before.value.dataType, t.vt, `Variant type of ${t.name}[]`);
        assert.equal(before.value.value.length, 3, "the demo arrays have 3 elements");

        const [, elements] = newValues(t.name);
        const variant = arrayVariant(t, elements);
        const sc = await s.write({ nodeId, attributeId: AttributeIds.Value, value: { value: variant } });
        assertGood(sc, `write ${t.name}[]`);
        const after = await s.read({ nodeId });
        assertGood(after.statusCode, `read back ${t.name}[]`);
        assert.equal(after.value.dataType, t.vt);
        assert.deepEqual(canon(after.value.value), canon(variant.value), `${t.name}[] read back differs`);
    });
}

test("a write of the wrong type gives BadTypeMismatch", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const cases = [
        [id("Scalars", "Int32"), new Variant({ dataType: DataType.String, value: "12" }), "String to Int32"],
        [id("Scalars", "Boolean"), new Variant({ dataType: DataType.Int32, value: 1 }), "Int32 to Boolean"],
        [id("Scalars", "Double"), new Variant({ dataType: DataType.String, value: "1.0" }), "String to Double"],
        [id("Scalars", "String"), new Variant({ dataType: DataType.ByteString, value: Buffer.from("x") }), "ByteString to String"],
        [id("Scalars", "Int32"), new Variant({ dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: [1, 2] }), "Int32[] to scalar Int32"],
        [id("Arrays", "Int32"), new Variant({ dataType: DataType.Int32, value: 1 }), "scalar Int32 to Int32[]"],
        [id("Arrays", "Double"), new Variant({ dataType: DataType.String, arrayType: VariantArrayType.Array, value: ["a"] }), "String[] to Double[]"],
        ["ns=1;i=1001", new Variant({ dataType: DataType.Double, value: 1.5 }), "Double to benchmark Int32"],
    ];
    const results = await s.write(cases.map(([nodeId, v]) => ({ nodeId, attributeId: AttributeIds.Value, value: { value: v } })));
    const wrong = [];
    results.forEach((sc, i) => {
        if (!isStatus(sc, StatusCodes.BadTypeMismatch)) wrong.push(`${cases[i][2]}: ${statusName(sc)}`);
    });
    // PEER: node-opcua 2.182 checks the type but not the ValueRank: it accepts an Int32[]
    // written to a scalar Int32 variable and an Int32 scalar written to an Int32[] one.
    // Part 4 §5.10.4 (and docs/nodemanagers.md) want BadTypeMismatch for both.
    const rankCases = ["Int32[] to scalar Int32", "scalar Int32 to Int32[]"];
    const tolerated = PEER ? wrong.filter((w) => !rankCases.some((c) => w.startsWith(c))) : wrong;
    try {
        assert.deepEqual(tolerated, [], "writes not refused with BadTypeMismatch");
    } finally {
        // Put back well-typed values in case the server took a wrong one.
        await s.write([
            { nodeId: id("Scalars", "Int32"), attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 5 } } },
            { nodeId: id("Arrays", "Int32"), attributeId: AttributeIds.Value,
                value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: [5, 6, 7] } } },
        ]);
    }
    // The rejected writes left the values alone.
    const dv = await s.read({ nodeId: id("Scalars", "Int32") });
    assert.equal(dv.value.dataType, DataType.Int32);
});

test("Dynamic and Counter are read-only and change every 100 ms", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const dyn = `ns=${S.demo};s=Demo.Dynamic`;
    const cnt = `ns=${S.demo};s=Demo.Counter`;
    const [d1, c1] = await s.read([{ nodeId: dyn }, { nodeId: cnt }]);
    assertGood(d1.statusCode, "read Dynamic");
    assertGood(c1.statusCode, "read Counter");
    assert.equal(d1.value.dataType, DataType.Double);
    assert.equal(c1.value.dataType, DataType.UInt32);
    assert.ok(Math.abs(d1.value.value) <= 100 + 1e-9, `Dynamic ${d1.value.value} outside [-100, 100]`);
    await sleep(450);
    const [d2, c2] = await s.read([{ nodeId: dyn }, { nodeId: cnt }]);
    const steps = c2.value.value - c1.value.value;
    assert.ok(steps >= 2 && steps <= 7, `Counter advanced by ${steps} in 450 ms`);
    assert.notEqual(d2.value.value, d1.value.value, "Dynamic did not change in 450 ms");

    const results = await s.write([
        { nodeId: dyn, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value: 1 } } },
        { nodeId: cnt, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.UInt32, value: 1 } } },
    ]);
    results.forEach((sc, i) =>
        assertStatus(sc, [StatusCodes.BadNotWritable, StatusCodes.BadUserAccessDenied], `write ${i ? "Counter" : "Dynamic"}`));
    const [al, ual] = await s.read([
        { nodeId: cnt, attributeId: AttributeIds.AccessLevel },
        { nodeId: cnt, attributeId: AttributeIds.UserAccessLevel },
    ]);
    assert.equal(al.value.value & 0x03, 0x01, "Counter AccessLevel is not CurrentRead only");
    assert.equal(ual.value.value & 0x02, 0, "Counter UserAccessLevel allows writes");
});

test("AnalogItem: Double 42.0 initially writable, EURange and EngineeringUnits", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const base = `ns=${S.demo};s=Demo.AnalogItem`;
    const [v, range, eu, td] = await s.read([
        { nodeId: base },
        { nodeId: `${base}.EURange` },
        { nodeId: `${base}.EngineeringUnits` },
        { nodeId: base, attributeId: AttributeIds.DataType },
    ]);
    assertGood(v.statusCode, "AnalogItem");
    assert.equal(v.value.dataType, DataType.Double);
    assert.equal(td.value.value.toString(), "ns=0;i=11");
    assertGood(range.statusCode, "EURange");
    assert.equal(range.value.value.low, 0);
    assert.equal(range.value.value.high, 100);
    assertGood(eu.statusCode, "EngineeringUnits");
    const info = eu.value.value;
    assert.equal(info.namespaceUri, "http://www.opcfoundation.org/UA/units/un/cefact");
    // UNECE code CEL packed as in Part 8 §5.6.3: ('C'<<16)|('E'<<8)|'L'.
    assert.equal(info.unitId, (0x43 << 16) | (0x45 << 8) | 0x4c, `unitId ${info.unitId}`);
    assert.ok(info.displayName && info.displayName.text, "EngineeringUnits without displayName");

    // TypeDefinition is AnalogItemType (i=2368).
    const br = await s.browse({ nodeId: base, referenceTypeId: "i=40", browseDirection: ua.BrowseDirection.Forward, includeSubtypes: false, nodeClassMask: 0, resultMask: 63 });
    assert.equal(br.references[0].nodeId.toString(), "ns=0;i=2368");

    const sc = await s.write({ nodeId: base, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value: 21.5 } } });
    assertGood(sc, "write AnalogItem");
    const back = await s.read({ nodeId: base });
    assert.equal(back.value.value, 21.5);
});

test("attributes of a variable, an object and a method", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const v = id("Scalars", "Int32");
    const attrs = [
        AttributeIds.NodeId, AttributeIds.NodeClass, AttributeIds.BrowseName, AttributeIds.DisplayName,
        AttributeIds.DataType, AttributeIds.ValueRank, AttributeIds.AccessLevel, AttributeIds.UserAccessLevel,
        AttributeIds.Historizing, AttributeIds.MinimumSamplingInterval,
    ];
    const r = await s.read(attrs.map((attributeId) => ({ nodeId: v, attributeId })));
    r.forEach((dv, i) => assertGood(dv.statusCode, `attribute ${attrs[i]} of Int32`));
    const [nid, nc, bn, dn, dt, vr, al, ual] = r.map((dv) => dv.value.value);
    assert.equal(nid.toString(), v);
    assert.equal(nc, NodeClass.Variable);
    assert.equal(bn.toString(), `${S.demo}:Int32`);
    assert.equal(dn.text, "Int32");
    assert.equal(dt.toString(), "ns=0;i=6");
    assert.equal(vr, -1);
    assert.equal(al & 0x03, 0x03, "AccessLevel is not CurrentRead|CurrentWrite");
    assert.equal(ual & 0x03, 0x03, "UserAccessLevel is not CurrentRead|CurrentWrite");

    const a = await s.read([
        { nodeId: id("Arrays", "Int32"), attributeId: AttributeIds.ValueRank },
        { nodeId: id("Arrays", "Double"), attributeId: AttributeIds.DataType },
        { nodeId: id("Scalars", "Structure"), attributeId: AttributeIds.DataType },
        { nodeId: id("Scalars", "BaseDataType"), attributeId: AttributeIds.DataType },
        { nodeId: id("Scalars", "DiagnosticInfo"), attributeId: AttributeIds.DataType },
    ]);
    assert.equal(a[0].value.value, 1);
    assert.equal(a[1].value.value.toString(), "ns=0;i=11");
    assert.equal(a[2].value.value.toString(), "ns=0;i=22");
    assert.equal(a[3].value.value.toString(), "ns=0;i=24");
    assert.equal(a[4].value.value.toString(), "ns=0;i=25");

    const o = await s.read([
        { nodeId: `ns=${S.demo};s=Demo`, attributeId: AttributeIds.NodeClass },
        { nodeId: `ns=${S.demo};s=Demo`, attributeId: AttributeIds.EventNotifier },
        { nodeId: `ns=${S.demo};s=Demo.Multiply`, attributeId: AttributeIds.NodeClass },
        { nodeId: `ns=${S.demo};s=Demo.Multiply`, attributeId: AttributeIds.Executable },
        { nodeId: `ns=${S.demo};s=Demo.Multiply`, attributeId: AttributeIds.UserExecutable },
    ]);
    o.forEach((dv, i) => assertGood(dv.statusCode, `object/method attribute ${i}`));
    assert.equal(o[0].value.value, NodeClass.Object);
    assert.equal(o[2].value.value, NodeClass.Method);
    assert.equal(o[3].value.value, true);
    assert.equal(o[4].value.value, true);
});

test("a bad attribute gives BadAttributeIdInvalid, an unknown node BadNodeIdUnknown", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const r = await s.read([
        { nodeId: id("Scalars", "Int32"), attributeId: 999 },
        { nodeId: id("Scalars", "Int32"), attributeId: AttributeIds.EventNotifier }, // not a Variable attribute
        { nodeId: `ns=${S.demo};s=Demo`, attributeId: AttributeIds.Value }, // an Object has no Value
        { nodeId: `ns=${S.demo};s=Demo.NoSuchNode`, attributeId: AttributeIds.Value },
        { nodeId: "ns=1;i=999999", attributeId: AttributeIds.DisplayName },
        { nodeId: "ns=77;i=1", attributeId: AttributeIds.Value },
    ]);
    assertStatus(r[0].statusCode, StatusCodes.BadAttributeIdInvalid, "attribute 999");
    assertStatus(r[1].statusCode, StatusCodes.BadAttributeIdInvalid, "EventNotifier of a Variable");
    assertStatus(r[2].statusCode, StatusCodes.BadAttributeIdInvalid, "Value of an Object");
    assertStatus(r[3].statusCode, StatusCodes.BadNodeIdUnknown, "unknown string NodeId");
    assertStatus(r[4].statusCode, StatusCodes.BadNodeIdUnknown, "unknown numeric NodeId");
    assertStatus(r[5].statusCode, StatusCodes.BadNodeIdUnknown, "unknown namespace index");

    const w = await s.write([
        { nodeId: `ns=${S.demo};s=Demo.NoSuchNode`, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 1 } } },
    ]);
    assertStatus(w[0], StatusCodes.BadNodeIdUnknown, "write to an unknown node");
});

test("Read and Write with IndexRange on an array", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const nodeId = "ns=1;i=2001";
    const full = Int32Array.from({ length: 100 }, (_, i) => i * 3);
    const sc = await s.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: full } } });
    assertGood(sc, "write 100 elements");

    const part = await s.read({ nodeId, attributeId: AttributeIds.Value, indexRange: ("10:12") });
    assertGood(part.statusCode, "read 10:12");
    assert.deepEqual(Array.from(part.value.value), [30, 33, 36]);
    const one = await s.read({ nodeId, attributeId: AttributeIds.Value, indexRange: ("99") });
    assertGood(one.statusCode, "read 99");
    assert.deepEqual(Array.from(one.value.value), [297]);
    // Partly outside: the elements that exist (Part 4 §7.27).
    const tail = await s.read({ nodeId, attributeId: AttributeIds.Value, indexRange: ("98:120") });
    assertGood(tail.statusCode, "read 98:120");
    assert.deepEqual(Array.from(tail.value.value), [294, 297]);
    const none = await s.read({ nodeId, attributeId: AttributeIds.Value, indexRange: ("200:210") });
    assertStatus(none.statusCode, StatusCodes.BadIndexRangeNoData, "read 200:210");

    const w = await s.write({
        nodeId, attributeId: AttributeIds.Value, indexRange: ("5:6"),
        value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: [-5, -6] } },
    });
    assertGood(w, "write 5:6");
    const back = await s.read({ nodeId });
    const expect = Array.from(full);
    expect[5] = -5;
    expect[6] = -6;
    assert.deepEqual(Array.from(back.value.value), expect);

    // A range whose size does not match the value is refused (Part 4 §5.10.4).
    const bad = await s.write({
        nodeId, attributeId: AttributeIds.Value, indexRange: ("0:2"),
        value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: [1] } },
    });
    assertStatus(bad, [StatusCodes.BadIndexRangeInvalid, StatusCodes.BadIndexRangeNoData, StatusCodes.BadTypeMismatch], "write 0:2 with one element");

    // IndexRange on a scalar.
    const sr = await s.read({ nodeId: "ns=1;i=1001", attributeId: AttributeIds.Value, indexRange: ("0:1") });
    // PEER: node-opcua 2.182 ignores the range on a scalar and answers Good with the value;
    // Part 4 §7.27 has no elements to select there, so uaplex must refuse it.
    if (!PEER) assertStatus(sr.statusCode, [StatusCodes.BadIndexRangeNoData, StatusCodes.BadIndexRangeInvalid], "IndexRange on a scalar");

    // A single element of a demo array.
    const sa = await s.read({ nodeId: id("Arrays", "Double"), attributeId: AttributeIds.Value, indexRange: ("1") });
    assertGood(sa.statusCode, "read Double[1]");
    assert.equal(sa.value.value.length, 1);
});

test("Read honours TimestampsToReturn", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const transact = require("node:util").promisify(s.performMessageTransaction.bind(s));
    const read = async (timestampsToReturn) => {
        const response = await transact(new ua.ReadRequest({
            maxAge: 0,
            timestampsToReturn,
            nodesToRead: [{ nodeId: "ns=1;i=1001", attributeId: AttributeIds.Value }],
        }));
        assert.equal(response.results.length, 1);
        assertGood(response.results[0].statusCode, `read with TimestampsToReturn ${timestampsToReturn}`);
        return response.results[0];
    };
    const near = (d) => d instanceof Date && Math.abs(d.getTime() - Date.now()) < 60000;
    const TS = ua.TimestampsToReturn;
    const both = await read(TS.Both);
    assert.ok(near(both.serverTimestamp), "Both: no server timestamp near now");
    assert.ok(both.sourceTimestamp instanceof Date, "Both: no source timestamp");
    const server = await read(TS.Server);
    assert.ok(near(server.serverTimestamp), "Server: no server timestamp");
    assert.equal(server.sourceTimestamp, null, "Server: a source timestamp came back");
    const source = await read(TS.Source);
    assert.ok(source.sourceTimestamp instanceof Date, "Source: no source timestamp");
    assert.equal(source.serverTimestamp, null, "Source: a server timestamp came back");
    const neither = await read(TS.Neither);
    assert.equal(neither.sourceTimestamp, null, "Neither: a source timestamp came back");
    assert.equal(neither.serverTimestamp, null, "Neither: a server timestamp came back");
});
