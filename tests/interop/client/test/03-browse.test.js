// SPDX-License-Identifier: Apache-2.0
// Browse the whole tree under Objects (i=85) with hierarchical references and a small
// requestedMaxReferencesPerNode, so that BrowseNext and continuation points carry most of
// the walk; then check every node of docs/nodemanagers.md was found.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_SHORT, T_LONG, sharedSession, assertGood, assertStatus } = require("../lib/ua");
const { BrowseDirection, NodeClass, StatusCodes } = ua;
const { DEMO_TYPES } = require("../lib/layout");

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

const HIERARCHICAL = "i=33";
const MAX_REFS = 7; // small on purpose: most nodes need BrowseNext
const BATCH = 20; // nodes per Browse request
const MAX_NODES = 20000; // bound on the walk: a looping server cannot blow it up

function description(nodeId) {
    return {
        nodeId,
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: HIERARCHICAL,
        includeSubtypes: true,
        nodeClassMask: 0,
        resultMask: 63,
    };
}

// Walks the tree; returns Map nodeId -> {browseName, nodeClass, parents} and counters.
async function walk(session) {
    session.requestedMaxReferencesPerNode = MAX_REFS;
    const seen = new Map([["ns=0;i=85", { browseName: "0:Objects", nodeClass: NodeClass.Object, parents: 0 }]]);
    const queue = ["ns=0;i=85"];
    const stats = { browse: 0, browseNext: 0, references: 0, maxPerResult: 0 };
    while (queue.length > 0) {
        const batch = queue.splice(0, BATCH);
        stats.browse++;
        let results = await session.browse(batch.map(description));
        let pending = results.map((r, i) => ({ r, from: batch[i] }));
        while (pending.length > 0) {
            const next = [];
            for (const { r, from } of pending) {
                assertGood(r.statusCode, `browse ${from}`);
                const refs = r.references || [];
                stats.maxPerResult = Math.max(stats.maxPerResult, refs.length);
                assert.ok(refs.length <= MAX_REFS, `${from}: ${refs.length} references > requested ${MAX_REFS}`);
                for (const ref of refs) {
                    stats.references++;
                    assert.ok(ref.isForward, `${from}: inverse reference in a Forward browse`);
                    if (ref.nodeId.serverIndex) continue; // another server's node
                    const id = ref.nodeId.toString();
                    const known = seen.get(id);
                    if (known) {
                        known.parents++;
                        continue;
                    }
                    assert.ok(seen.size < MAX_NODES, `more than ${MAX_NODES} nodes under Objects: looping?`);
                    seen.set(id, { browseName: ref.browseName.toString(), nodeClass: ref.nodeClass, parents: 1 });
                    queue.push(id);
                }
                if (r.continuationPoint && r.continuationPoint.length > 0) next.push({ cp: r.continuationPoint, from });
            }
            if (next.length === 0) break;
            stats.browseNext++;
            const nr = await session.browseNext(next.map((n) => n.cp), false);
            const list = Array.isArray(nr) ? nr : [nr];
            assert.equal(list.length, next.length, "BrowseNext result count");
            pending = list.map((r, i) => ({ r, from: next[i].from }));
        }
    }
    return { seen, stats };
}

let tree;

test("browse everything under Objects with BrowseNext", { timeout: T_LONG }, async (t) => {
    tree = await walk(S.session);
    const { seen, stats } = tree;
    t.diagnostic(`${seen.size} nodes, ${stats.references} references, ${stats.browse} Browse + ${stats.browseNext} BrowseNext calls`);
    assert.ok(stats.browseNext > 0, "no continuation point was ever returned: BrowseNext not exercised");
    assert.ok(seen.size > 300, `only ${seen.size} nodes under Objects`);
    assert.ok(seen.has("ns=0;i=2253"), "Server object not found under Objects");
});

test("every benchmark node is found with its BrowseName and NodeClass", { timeout: T_SHORT }, async () => {
    assert.ok(tree, "the walk did not run");
    const { seen } = tree;
    const folder = seen.get("ns=1;i=1000");
    assert.ok(folder, "ns=1;i=1000 not found");
    assert.equal(folder.browseName, "1:Benchmark");
    assert.equal(folder.nodeClass, NodeClass.Object);
    for (let i = 1001; i <= 1100; i++) {
        const n = seen.get(`ns=1;i=${i}`);
        assert.ok(n, `ns=1;i=${i} not found`);
        assert.equal(n.browseName, `1:Int32_${i}`);
        assert.equal(n.nodeClass, NodeClass.Variable);
    }
    for (let i = 2001; i <= 2100; i++) {
        const n = seen.get(`ns=1;i=${i}`);
        assert.ok(n, `ns=1;i=${i} not found`);
        assert.equal(n.browseName, `1:Int32Array_${i}`);
        assert.equal(n.nodeClass, NodeClass.Variable);
    }
});

test("the benchmark folder holds exactly the 200 variables, by HasComponent", { timeout: T_SHORT }, async () => {
    const s = S.session;
    s.requestedMaxReferencesPerNode = 0;
    const r = await s.browse({
        nodeId: "ns=1;i=1000",
        browseDirection: BrowseDirection.Forward,
        referenceTypeId: "i=47",
        includeSubtypes: false,
        nodeClassMask: NodeClass.Variable,
        resultMask: 63,
    });
    assertGood(r.statusCode, "browse Benchmark");
    let refs = r.references;
    let cp = r.continuationPoint;
    while (cp && cp.length) {
        const n = await s.browseNext([cp], false);
        refs = refs.concat(n[0].references);
        cp = n[0].continuationPoint;
    }
    const ids = refs.map((x) => x.nodeId.toString()).filter((id) => id.startsWith("ns=1;"));
    assert.equal(ids.length, 200);
    assert.equal(new Set(ids).size, 200, "duplicate references");
});

test("every demo node is found with its BrowseName and NodeClass", { timeout: T_SHORT }, async () => {
    assert.ok(tree, "the walk did not run");
    const { seen } = tree;
    const d = S.demo;
    const expect = [
        ["Demo", "Demo", NodeClass.Object],
        ["Demo.Scalars", "Scalars", NodeClass.Object],
        ["Demo.Arrays", "Arrays", NodeClass.Object],
        ["Demo.AnalogItem", "AnalogItem", NodeClass.Variable],
        ["Demo.Dynamic", "Dynamic", NodeClass.Variable],
        ["Demo.Counter", "Counter", NodeClass.Variable],
        ["Demo.Multiply", "Multiply", NodeClass.Method],
        ["Demo.Reset", "Reset", NodeClass.Method],
    ];
    for (const t of DEMO_TYPES) {
        expect.push([`Demo.Scalars.${t.name}`, t.name, NodeClass.Variable]);
        expect.push([`Demo.Arrays.${t.name}`, t.name, NodeClass.Variable]);
    }
    for (const [id, name, nodeClass] of expect) {
        const n = seen.get(`ns=${d};s=${id}`);
        assert.ok(n, `ns=${d};s=${id} not found`);
        assert.equal(n.browseName, `${d}:${name}`, `BrowseName of ${id}`);
        assert.equal(n.nodeClass, nodeClass, `NodeClass of ${id}`);
    }
    for (const prop of ["EURange", "EngineeringUnits"]) {
        const n = seen.get(`ns=${d};s=Demo.AnalogItem.${prop}`);
        assert.ok(n, `ns=${d};s=Demo.AnalogItem.${prop} not found`);
        assert.equal(n.browseName, prop, `BrowseName of ${prop} (namespace 0)`);
        assert.equal(n.nodeClass, NodeClass.Variable);
    }
});

test("no node lists the same reference twice", { timeout: T_SHORT }, async () => {
    const s = S.session;
    s.requestedMaxReferencesPerNode = 0;
    const d = S.demo;
    const nodes = ["ns=0;i=85", "ns=0;i=2253", `ns=${d};s=Demo`, `ns=${d};s=Demo.Scalars`, "ns=1;i=1000"];
    const results = await s.browse(nodes.map((n) => ({ ...description(n), browseDirection: BrowseDirection.Both, referenceTypeId: null })));
    results.forEach((r, i) => {
        assertGood(r.statusCode, `browse ${nodes[i]}`);
        const keys = r.references.map((x) => `${x.referenceTypeId}|${x.isForward}|${x.nodeId}`);
        assert.equal(new Set(keys).size, keys.length, `${nodes[i]} has duplicate references`);
    });
});

test("BrowseNext with releaseContinuationPoints frees the continuation point", { timeout: T_SHORT }, async () => {
    const s = S.session;
    s.requestedMaxReferencesPerNode = 2;
    const r = await s.browse(description("ns=0;i=2253"));
    assertGood(r.statusCode, "browse Server");
    assert.equal(r.references.length, 2);
    assert.ok(r.continuationPoint && r.continuationPoint.length > 0, "no continuation point");

    const released = await s.browseNext([r.continuationPoint], true);
    assertGood(released[0].statusCode, "release");
    assert.equal((released[0].references || []).length, 0, "a release returned references");

    const again = await s.browseNext([r.continuationPoint], false);
    assertStatus(again[0].statusCode, StatusCodes.BadContinuationPointInvalid, "reuse of a released point");

    const bogus = await s.browseNext([Buffer.from("not-a-continuation-point")], false);
    assertStatus(bogus[0].statusCode, StatusCodes.BadContinuationPointInvalid, "a made-up continuation point");
});

test("BrowseNext continues where Browse stopped: paging yields each reference once", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const node = description(`ns=${S.demo};s=Demo`);
    s.requestedMaxReferencesPerNode = 0;
    const all = await s.browse(node);
    assertGood(all.statusCode, "unbounded browse of Demo");
    assert.ok(!all.continuationPoint || all.continuationPoint.length === 0, "continuation point without a limit");
    const expected = all.references.map((x) => `${x.referenceTypeId}|${x.nodeId}`).sort();

    s.requestedMaxReferencesPerNode = 1;
    const r = await s.browse(node);
    assertGood(r.statusCode, "browse Demo");
    const got = r.references.map((x) => `${x.referenceTypeId}|${x.nodeId}`);
    let cp = r.continuationPoint;
    let rounds = 0;
    while (cp && cp.length) {
        assert.ok(++rounds <= expected.length, "BrowseNext does not terminate");
        const n = await s.browseNext([cp], false);
        assertGood(n[0].statusCode, "BrowseNext");
        assert.equal(n[0].references.length, 1, "BrowseNext ignored requestedMaxReferencesPerNode");
        got.push(...n[0].references.map((x) => `${x.referenceTypeId}|${x.nodeId}`));
        cp = n[0].continuationPoint;
    }
    assert.deepEqual(got.sort(), expected, "paged references differ from the unbounded browse");
});

test("browse of an unknown node gives BadNodeIdUnknown", { timeout: T_SHORT }, async () => {
    const s = S.session;
    s.requestedMaxReferencesPerNode = 0;
    const r = await s.browse(description(`ns=${S.demo};s=Demo.NoSuchNode`));
    assertStatus(r.statusCode, StatusCodes.BadNodeIdUnknown, "browse unknown node");
    const r2 = await s.browse({ ...description("ns=0;i=85"), referenceTypeId: "ns=0;i=85" });
    assertStatus(r2.statusCode, StatusCodes.BadReferenceTypeIdInvalid, "browse with a non-reference-type referenceTypeId");
});
