// SPDX-License-Identifier: Apache-2.0
// Call (Multiply, Reset), TranslateBrowsePathsToNodeIds, RegisterNodes/UnregisterNodes.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, PEER, T_SHORT, sharedSession, assertGood, assertStatus, sleep } = require("../lib/ua");
const { DataType, StatusCodes, AttributeIds, Variant } = ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

const demo = () => `ns=${S.demo};s=Demo`;
const dbl = (value) => new Variant({ dataType: DataType.Double, value });

function multiply(inputArguments, objectId = demo()) {
    return S.session.call({ objectId, methodId: `${demo()}.Multiply`, inputArguments });
}

test("Multiply declares its arguments: a, b (Double) -> product (Double)", { timeout: T_SHORT }, async () => {
    const tr = await S.session.translateBrowsePath([
        ua.makeBrowsePath(`${demo()}.Multiply`, ".InputArguments"),
        ua.makeBrowsePath(`${demo()}.Multiply`, ".OutputArguments"),
    ]);
    const [inp, out] = await S.session.read(tr.map((r) => {
        assertGood(r.statusCode, "translate InputArguments/OutputArguments");
        return { nodeId: r.targets[0].targetId, attributeId: AttributeIds.Value };
    }));
    assert.deepEqual(inp.value.value.map((a) => [a.name, a.dataType.toString(), a.valueRank]), [["a", "ns=0;i=11", -1], ["b", "ns=0;i=11", -1]]);
    assert.deepEqual(out.value.value.map((a) => [a.name, a.dataType.toString()]), [["product", "ns=0;i=11"]]);
});

test("Call Multiply: 3 x 4 = 12", { timeout: T_SHORT }, async () => {
    const r = await multiply([dbl(3), dbl(4)]);
    assertGood(r.statusCode, "Multiply");
    assert.equal(r.outputArguments.length, 1);
    assert.equal(r.outputArguments[0].dataType, DataType.Double);
    assert.equal(r.outputArguments[0].value, 12);
    const r2 = await multiply([dbl(-2.5), dbl(1e10)]);
    assert.equal(r2.outputArguments[0].value, -2.5e10);
});

test("Call Multiply with missing, extra or mistyped arguments", { timeout: T_SHORT }, async () => {
    const none = await multiply([]);
    assertStatus(none.statusCode, StatusCodes.BadArgumentsMissing, "no argument");
    const one = await multiply([dbl(3)]);
    assertStatus(one.statusCode, StatusCodes.BadArgumentsMissing, "one argument");
    const three = await multiply([dbl(1), dbl(2), dbl(3)]);
    assertStatus(three.statusCode, StatusCodes.BadTooManyArguments, "three arguments");

    // Part 4 §5.11.2: a mistyped argument fails the call with Bad_InvalidArgument and says why
    // per argument in inputArgumentResults (BadTypeMismatch there).
    // PEER: node-opcua 2.182 answers the call itself with BadTypeMismatch.
    const callBad = PEER ? [StatusCodes.BadInvalidArgument, StatusCodes.BadTypeMismatch] : StatusCodes.BadInvalidArgument;
    const typed = await multiply([new Variant({ dataType: DataType.String, value: "3" }), dbl(4)]);
    assertStatus(typed.statusCode, callBad, "String as a");
    assert.equal(typed.inputArgumentResults.length, 2, "one inputArgumentResult per argument");
    assertStatus(typed.inputArgumentResults[0], StatusCodes.BadTypeMismatch, "inputArgumentResults[0]");
    assertGood(typed.inputArgumentResults[1], "inputArgumentResults[1]");
    assert.equal((typed.outputArguments || []).length, 0, "outputs despite bad input");

    const both = await multiply([dbl(3), new Variant({ dataType: DataType.Int32, value: 4 })]);
    assertStatus(both.statusCode, callBad, "Int32 as b");
    assertStatus(both.inputArgumentResults[1], StatusCodes.BadTypeMismatch, "inputArgumentResults[1]");
});

test("Call on a wrong object or an unknown method", { timeout: T_SHORT }, async () => {
    // Part 4 §5.11.2: Bad_MethodInvalid when the method is not a component of the object.
    // PEER: node-opcua 2.182 runs Multiply on any object (answers Good).
    const wrongObject = await multiply([dbl(3), dbl(4)], "ns=0;i=85");
    if (!PEER) assertStatus(wrongObject.statusCode, [StatusCodes.BadMethodInvalid, StatusCodes.BadNodeIdInvalid], "Multiply on Objects");
    const unknown = await S.session.call({ objectId: demo(), methodId: `${demo()}.NoSuchMethod`, inputArguments: [] });
    assertStatus(unknown.statusCode, [StatusCodes.BadMethodInvalid, StatusCodes.BadNodeIdUnknown], "unknown method");
    const unknownObject = await S.session.call({ objectId: `${demo()}.NoSuchObject`, methodId: `${demo()}.Reset`, inputArguments: [] });
    assertStatus(unknownObject.statusCode, [StatusCodes.BadNodeIdUnknown, StatusCodes.BadNodeIdInvalid], "unknown object");
});

test("Call Reset sets Counter back to 0", { timeout: T_SHORT }, async () => {
    const cnt = `${demo()}.Counter`;
    await sleep(350);
    const before = await S.session.read({ nodeId: cnt });
    assertGood(before.statusCode, "Counter");
    assert.ok(before.value.value >= 3, `Counter ${before.value.value} before Reset`);
    const r = await S.session.call({ objectId: demo(), methodId: `${demo()}.Reset`, inputArguments: [] });
    assertGood(r.statusCode, "Reset");
    assert.equal((r.outputArguments || []).length, 0);
    const afterDv = await S.session.read({ nodeId: cnt });
    assert.ok(afterDv.value.value <= 2, `Counter ${afterDv.value.value} right after Reset`);
    const extra = await S.session.call({ objectId: demo(), methodId: `${demo()}.Reset`, inputArguments: [dbl(1)] });
    assertStatus(extra.statusCode, StatusCodes.BadTooManyArguments, "Reset with an argument");
});

function path(startingNode, names) {
    return {
        startingNode,
        relativePath: {
            elements: names.map((n) => ({
                referenceTypeId: "i=33", // HierarchicalReferences
                isInverse: false,
                includeSubtypes: true,
                targetName: n,
            })),
        },
    };
}

test("TranslateBrowsePathsToNodeIds", { timeout: T_SHORT }, async () => {
    const d = S.demo;
    const results = await S.session.translateBrowsePath([
        path("i=84", [{ namespaceIndex: 0, name: "Objects" }, { namespaceIndex: 0, name: "Server" }, { namespaceIndex: 0, name: "ServerStatus" }, { namespaceIndex: 0, name: "State" }]),
        path("i=84", [{ namespaceIndex: 0, name: "Objects" }, { namespaceIndex: d, name: "Demo" }, { namespaceIndex: d, name: "Scalars" }, { namespaceIndex: d, name: "Int32" }]),
        path("i=85", [{ namespaceIndex: 1, name: "Benchmark" }, { namespaceIndex: 1, name: "Int32_1042" }]),
        path(`ns=${d};s=Demo`, [{ namespaceIndex: d, name: "AnalogItem" }, { namespaceIndex: 0, name: "EURange" }]),
        path("i=85", [{ namespaceIndex: 0, name: "Server" }, { namespaceIndex: 0, name: "NoSuchChild" }]),
        path("i=85", [{ namespaceIndex: 0, name: "Demo" }]), // right name, wrong namespace
        path(`ns=${d};s=Demo.NoSuchNode`, [{ namespaceIndex: 0, name: "Server" }]),
    ]);
    const target = (r) => r.targets.map((t) => t.targetId.toString());
    assertGood(results[0].statusCode, "Objects/Server/ServerStatus/State");
    assert.deepEqual(target(results[0]), ["ns=0;i=2259"]);
    assert.equal(results[0].targets[0].remainingPathIndex, 0xffffffff);
    assertGood(results[1].statusCode, "Objects/Demo/Scalars/Int32");
    assert.deepEqual(target(results[1]), [`ns=${d};s=Demo.Scalars.Int32`]);
    assertGood(results[2].statusCode, "Benchmark/Int32_1042");
    assert.deepEqual(target(results[2]), ["ns=1;i=1042"]);
    assertGood(results[3].statusCode, "AnalogItem/EURange");
    assert.deepEqual(target(results[3]), [`ns=${d};s=Demo.AnalogItem.EURange`]);
    assertStatus(results[4].statusCode, StatusCodes.BadNoMatch, "Server/NoSuchChild");
    assertStatus(results[5].statusCode, StatusCodes.BadNoMatch, "0:Demo");
    assertStatus(results[6].statusCode, StatusCodes.BadNodeIdUnknown, "unknown starting node");

    const empty = await S.session.translateBrowsePath([path("i=85", [])]);
    assertStatus(empty[0].statusCode, StatusCodes.BadNothingToDo, "empty relative path");
});

test("RegisterNodes and UnregisterNodes", { timeout: T_SHORT }, async () => {
    const nodes = [`ns=${S.demo};s=Demo.Scalars.Int32`, "ns=1;i=1001", "i=2259"];
    const registered = await S.session.registerNodes(nodes);
    assert.equal(registered.length, nodes.length, "one registered id per node");
    const dvs = await S.session.read(registered.map((nodeId) => ({ nodeId })));
    dvs.forEach((dv, i) => assertGood(dv.statusCode, `read through registered id of ${nodes[i]}`));
    const direct = await S.session.read(nodes.map((nodeId) => ({ nodeId })));
    assert.equal(dvs[1].value.value, direct[1].value.value, "registered id reads another value");
    const w = await S.session.write({ nodeId: registered[1], attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value: 4242 } } });
    assertGood(w, "write through registered id");
    const back = await S.session.read({ nodeId: "ns=1;i=1001" });
    assert.equal(back.value.value, 4242);
    await S.session.unregisterNodes(registered);
    // The original ids keep working after UnregisterNodes.
    const again = await S.session.read(nodes.map((nodeId) => ({ nodeId })));
    again.forEach((dv, i) => assertGood(dv.statusCode, `read ${nodes[i]} after unregister`));
});

test("RegisterNodes with nothing to do gives BadNothingToDo", { timeout: T_SHORT }, async () => {
    await assert.rejects(S.session.registerNodes([]), /BadNothingToDo/);
});
