// SPDX-License-Identifier: Apache-2.0
// The benchmark namespace (ns=1): 100 Int32 scalars and 100 Int32[100] arrays.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_SHORT, sharedSession, assertGood } = require("../lib/ua");
const { AttributeIds, DataType, VariantArrayType } = ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

const scalars = Array.from({ length: 100 }, (_, i) => `ns=1;i=${1001 + i}`);
const arrays = Array.from({ length: 100 }, (_, i) => `ns=1;i=${2001 + i}`);

test("read the 100 scalars in one Read", { timeout: T_SHORT }, async () => {
    const dvs = await S.session.read(scalars.map((nodeId) => ({ nodeId, attributeId: AttributeIds.Value })));
    assert.equal(dvs.length, 100);
    dvs.forEach((dv, i) => {
        assertGood(dv.statusCode, scalars[i]);
        assert.equal(dv.value.dataType, DataType.Int32, `${scalars[i]} type`);
        assert.equal(dv.value.arrayType, VariantArrayType.Scalar, `${scalars[i]} rank`);
    });
});

test("write the 100 scalars in one Write and read them back", { timeout: T_SHORT }, async () => {
    const stamp = (Date.now() % 100000) * 7;
    const values = scalars.map((_, i) => stamp + i * 13 - 500);
    const results = await S.session.write(scalars.map((nodeId, i) => ({
        nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: values[i] } },
    })));
    assert.equal(results.length, 100);
    results.forEach((sc, i) => assertGood(sc, `write ${scalars[i]}`));
    const dvs = await S.session.read(scalars.map((nodeId) => ({ nodeId })));
    assert.deepEqual(dvs.map((dv) => dv.value.value), values);
});

test("attributes: Int32, ValueRank -1 or 1 with ArrayDimensions [0], CurrentRead|CurrentWrite", { timeout: T_SHORT }, async () => {
    const nodes = [scalars[0], scalars[99], arrays[0], arrays[99]];
    const attrs = [AttributeIds.DataType, AttributeIds.ValueRank, AttributeIds.AccessLevel, AttributeIds.ArrayDimensions];
    const dvs = await S.session.read(nodes.flatMap((nodeId) => attrs.map((attributeId) => ({ nodeId, attributeId }))));
    for (let n = 0; n < nodes.length; n++) {
        const [dt, vr, al, ad] = dvs.slice(n * 4, n * 4 + 4);
        assert.equal(dt.value.value.toString(), "ns=0;i=6", `${nodes[n]} DataType`);
        assert.equal(vr.value.value, n < 2 ? -1 : 1, `${nodes[n]} ValueRank`);
        assert.equal(al.value.value & 0x03, 0x03, `${nodes[n]} AccessLevel`);
        if (n >= 2) {
            assertGood(ad.statusCode, `${nodes[n]} ArrayDimensions`);
            assert.deepEqual(Array.from(ad.value.value), [0], `${nodes[n]} ArrayDimensions`);
        }
    }
});

test("read the 100 arrays: 100 Int32 elements each", { timeout: T_SHORT }, async () => {
    const dvs = await S.session.read(arrays.map((nodeId) => ({ nodeId })));
    assert.equal(dvs.length, 100);
    dvs.forEach((dv, i) => {
        assertGood(dv.statusCode, arrays[i]);
        assert.equal(dv.value.dataType, DataType.Int32);
        assert.equal(dv.value.arrayType, VariantArrayType.Array);
        assert.equal(dv.value.value.length, 100, `${arrays[i]} length`);
    });
});

test("write arrays and read them back", { timeout: T_SHORT }, async () => {
    const some = arrays.slice(50, 60);
    const values = some.map((_, k) => Int32Array.from({ length: 100 }, (_, i) => (k + 1) * 1000 + i - 50000));
    const results = await S.session.write(some.map((nodeId, k) => ({
        nodeId, attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: values[k] } },
    })));
    results.forEach((sc, k) => assertGood(sc, `write ${some[k]}`));
    const dvs = await S.session.read(some.map((nodeId) => ({ nodeId })));
    dvs.forEach((dv, k) => assert.deepEqual(Array.from(dv.value.value), Array.from(values[k]), `${some[k]} read back`));
    // Restore the documented initial state: 100 zeros.
    await S.session.write(some.map((nodeId) => ({
        nodeId, attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, arrayType: VariantArrayType.Array, value: new Int32Array(100) } },
    })));
});

test("nothing else in namespace 1 answers around the layout", { timeout: T_SHORT }, async () => {
    const dvs = await S.session.read(["ns=1;i=1101", "ns=1;i=2101", "ns=1;i=1999"].map((nodeId) => ({ nodeId })));
    dvs.forEach((dv) => assert.equal(dv.statusCode.name, "BadNodeIdUnknown"));
});
