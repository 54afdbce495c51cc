// SPDX-License-Identifier: Apache-2.0
// Historical access (Part 11): run_suite.sh records Demo.Scalars.Double into history-sqlite
// ([history]); values written to it come back from HistoryRead (ReadRawModifiedDetails) in
// pages with continuation points, in both directions, with the status codes of Part 11; the
// Server object's events come back from ReadEventDetails, and are inserted, replaced and
// deleted with UpdateEventDetails and DeleteEventDetails.
// Skipped when the server under test records nothing (UAPLEX_HISTORY unset).
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_SHORT, T_LONG, sharedSession, assertGood, assertStatus } = require("../lib/ua");
const { AttributeIds, DataType, StatusCodes, TimestampsToReturn } = ua;
const {
    HistoryReadRequest, ReadRawModifiedDetails, ReadProcessedDetails, ReadAtTimeDetails,
    ReadEventDetails, HistoryData,
} = require("node-opcua-service-history");

const skip = process.env.UAPLEX_HISTORY !== "1" && "the server under test records no history";
const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

const recorded = () => `ns=${S.demo};s=Demo.Scalars.Double`;
const unrecorded = () => `ns=${S.demo};s=Demo.Scalars.Int32`;

function historyRead(session, details, nodes, extra = {}) {
    const request = new HistoryReadRequest({
        historyReadDetails: details,
        timestampsToReturn: TimestampsToReturn.Both,
        releaseContinuationPoints: false,
        nodesToRead: nodes,
        ...extra,
    });
    return new Promise((resolve, reject) =>
        session.historyRead(request, (err, response) => (err ? reject(err) : resolve(response))));
}

function raw(start, end, numValuesPerNode, returnBounds = false) {
    return new ReadRawModifiedDetails({
        isReadModified: false, startTime: start, endTime: end, numValuesPerNode, returnBounds,
    });
}

// Every page of a raw read of `nodeId`, `n` values each; the pages' values and count.
async function readAll(nodeId, details) {
    const values = [];
    let cp = null;
    let pages = 0;
    do {
        const resp = await historyRead(S.session, details, [{ nodeId, continuationPoint: cp }]);
        assert.equal(resp.results.length, 1);
        const r = resp.results[0];
        assert.ok(r.statusCode.isGood(), `page ${pages}: ${r.statusCode.toString()}`);
        assert.ok(r.historyData instanceof HistoryData);
        values.push(...(r.historyData.dataValues || []));
        cp = r.continuationPoint && r.continuationPoint.length ? r.continuationPoint : null;
        pages++;
        assert.ok(pages < 100, "too many pages");
    } while (cp);
    return { values, pages };
}

test("the recorded node says so: AccessLevel HistoryRead and Historizing", { timeout: T_SHORT, skip }, async () => {
    const [al, ual, hist, other] = await S.session.read([
        { nodeId: recorded(), attributeId: AttributeIds.AccessLevel },
        { nodeId: recorded(), attributeId: AttributeIds.UserAccessLevel },
        { nodeId: recorded(), attributeId: AttributeIds.Historizing },
        { nodeId: unrecorded(), attributeId: AttributeIds.Historizing },
    ]);
    assert.ok(al.value.value & 4, `AccessLevel ${al.value.value}`);
    assert.ok(ual.value.value & 4, `UserAccessLevel ${ual.value.value}`);
    assert.equal(hist.value.value, true);
    assert.equal(other.value.value, false);
});

test("written values come back raw, page by page, forward and backward", { timeout: T_LONG, skip }, async () => {
    const before = new Date(Date.now() - 1000);
    const written = [1.5, 2.5, 3.5, 4.5, 5.5];
    for (const v of written) {
        const st = await S.session.write({
            nodeId: recorded(), attributeId: AttributeIds.Value,
            value: { value: { dataType: DataType.Double, value: v } },
        });
        assertGood(st, `write ${v}`);
    }
    const after = new Date(Date.now() + 60000);
    // Forward, two per page: five values in three pages, oldest first.
    const fwd = await readAll(recorded(), raw(before, after, 2));
    const got = fwd.values.map((dv) => dv.value.value).slice(-written.length);
    assert.deepEqual(got, written);
    assert.ok(fwd.pages >= 3, `pages ${fwd.pages}`);
    for (const dv of fwd.values) {
        assert.ok(dv.statusCode.isGood());
        assert.ok(dv.sourceTimestamp instanceof Date);
        assert.ok(dv.serverTimestamp instanceof Date);
    }
    for (let i = 1; i < fwd.values.length; i++)
        assert.ok(fwd.values[i - 1].sourceTimestamp <= fwd.values[i].sourceTimestamp);
    // Backward (endTime before startTime): newest first.
    const back = await readAll(recorded(), raw(after, before, 3));
    assert.deepEqual(back.values.map((dv) => dv.value.value).slice(0, written.length),
        [...written].reverse());
    // Only endTime and numValuesPerNode: the newest values, newest first.
    const last = await historyRead(S.session, raw(null, after, 1), [{ nodeId: recorded() }]);
    assert.deepEqual(last.results[0].historyData.dataValues.map((dv) => dv.value.value), [5.5]);
    // One time and numValuesPerNode ask for that many values: no continuation point.
    assert.ok(!last.results[0].continuationPoint || last.results[0].continuationPoint.length === 0);
    // TimestampsToReturn Source: no server timestamps.
    const src = await historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded() }],
        { timestampsToReturn: TimestampsToReturn.Source });
    const dv = src.results[0].historyData.dataValues[0];
    assert.ok(dv.sourceTimestamp instanceof Date);
    assert.equal(dv.serverTimestamp, null);
    // A time range without values: GoodNoData.
    const none = await historyRead(S.session,
        raw(new Date(Date.UTC(2001, 0, 1)), new Date(Date.UTC(2001, 0, 2)), 0), [{ nodeId: recorded() }]);
    assertStatus(none.results[0].statusCode, StatusCodes.GoodNoData, "empty range");
});

test("continuation points: reused, foreign, released", { timeout: T_LONG, skip }, async () => {
    const before = new Date(Date.now() - 3600000), after = new Date(Date.now() + 60000);
    const first = await historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded() }]);
    const cp = first.results[0].continuationPoint;
    assert.ok(cp && cp.length > 0, "a continuation point");
    const next = await historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded(), continuationPoint: cp }]);
    assert.ok(next.results[0].statusCode.isGood());
    // A continuation point is good once.
    const again = await historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded(), continuationPoint: cp }]);
    assertStatus(again.results[0].statusCode, StatusCodes.BadContinuationPointInvalid, "used twice");
    const junk = await historyRead(S.session, raw(before, after, 1),
        [{ nodeId: recorded(), continuationPoint: Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]) }]);
    assertStatus(junk.results[0].statusCode, StatusCodes.BadContinuationPointInvalid, "junk");
    // Released: Good, and gone afterwards.
    const cp2 = next.results[0].continuationPoint;
    assert.ok(cp2 && cp2.length > 0);
    const rel = await historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded(), continuationPoint: cp2 }],
        { releaseContinuationPoints: true });
    assertGood(rel.results[0].statusCode, "release");
    const gone = await historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded(), continuationPoint: cp2 }]);
    assertStatus(gone.results[0].statusCode, StatusCodes.BadContinuationPointInvalid, "released");
});

test("nodes without history, unknown nodes, unserved details", { timeout: T_SHORT, skip }, async () => {
    const before = new Date(Date.now() - 3600000), after = new Date(Date.now() + 60000);
    const r = await historyRead(S.session, raw(before, after, 10), [
        { nodeId: unrecorded() }, { nodeId: `ns=${S.demo};s=Demo.NoSuchNode` }, { nodeId: recorded() },
    ]);
    assertStatus(r.results[0].statusCode, StatusCodes.BadNotReadable, "unrecorded");
    assertStatus(r.results[1].statusCode, StatusCodes.BadNodeIdUnknown, "unknown");
    assert.ok(r.results[2].statusCode.isGood());
    // Event details without a select clause: no field to return.
    const e = await historyRead(S.session, new ReadEventDetails({
        startTime: before, endTime: after, numValuesPerNode: 10,
    }), [{ nodeId: recorded() }]);
    assertStatus(e.results[0].statusCode, StatusCodes.BadEventFilterInvalid, "events");
    // Neither timestamp is not a HistoryRead choice; no time at all is no time domain.
    await assert.rejects(historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded() }],
        { timestampsToReturn: TimestampsToReturn.Neither }), /BadTimestampsToReturnInvalid/);
    const t = await historyRead(S.session, raw(null, null, 0), [{ nodeId: recorded() }]);
    assertStatus(t.results[0].statusCode, StatusCodes.BadInvalidTimestampArgument, "no times");
});

test("hostile: more nodes than max_nodes_per_read, a flood of continuation points", { timeout: T_LONG, skip }, async () => {
    const before = new Date(Date.now() - 3600000), after = new Date(Date.now() + 60000);
    for (const v of [7.5, 8.5]) {
        const st = await S.session.write({
            nodeId: recorded(), attributeId: AttributeIds.Value,
            value: { value: { dataType: DataType.Double, value: v } },
        });
        assertGood(st, "write");
    }
    // [history] max_nodes_per_read is 100 by default: 101 nodes are refused as a whole.
    const many = Array.from({ length: 101 }, () => ({ nodeId: recorded() }));
    await assert.rejects(historyRead(S.session, raw(before, after, 1), many),
        (err) => /BadTooManyOperations/.test(String(err && err.message)), "101 nodes");
    // run_suite.sh sets max_continuation_points = 4: paged reads of one session hold at most
    // four (an earlier case may still hold one); the next gets none of its own.
    const held = [];
    let refused = null;
    for (let i = 0; i < 10 && !refused; i++) {
        const r = await historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded() }]);
        if (r.results[0].statusCode.isGood()) {
            assert.ok(r.results[0].continuationPoint && r.results[0].continuationPoint.length > 0);
            held.push(r.results[0].continuationPoint);
        } else {
            refused = r.results[0].statusCode;
        }
    }
    assert.ok(held.length >= 1 && held.length <= 4, `held ${held.length}`);
    assertStatus(refused, StatusCodes.BadNoContinuationPoints, "over the limit");
    // Released, they make room again.
    const rel = await historyRead(S.session, raw(before, after, 1),
        held.map((cp) => ({ nodeId: recorded(), continuationPoint: cp })), { releaseContinuationPoints: true });
    for (const r of rel.results) assertGood(r.statusCode, "release");
    const again = await historyRead(S.session, raw(before, after, 1), [{ nodeId: recorded() }]);
    assertGood(again.results[0].statusCode, "after the release");
    await historyRead(S.session, raw(before, after, 1),
        [{ nodeId: recorded(), continuationPoint: again.results[0].continuationPoint }], { releaseContinuationPoints: true });
});

// --- HistoryUpdate (Part 11 6.9) and the history information model --------------------------
// The main server grants Anonymous every permission (run_suite.sh), InsertHistory,
// ModifyHistory and DeleteHistory included. The values go into 2001, apart from the values
// the other tests record now.
const { UpdateDataDetails, DeleteRawModifiedDetails, DeleteAtTimeDetails, HistoryUpdateRequest } =
    require("node-opcua-types");
const base = Date.UTC(2001, 0, 1);
const at = (s) => new Date(base + s * 1000);
const Insert = 1, Replace = 2, Update = 3, Remove = 4;

function historyUpdate(details) {
    const request = new HistoryUpdateRequest({ historyUpdateDetails: details });
    return new Promise((resolve, reject) =>
        S.session.performMessageTransaction(request, (err, response) => (err ? reject(err) : resolve(response))));
}
function dataDetails(nodeId, perform, values) {
    return new UpdateDataDetails({
        nodeId, performInsertReplace: perform,
        updateValues: values.map(([s, v]) => ({
            value: { dataType: DataType.Double, value: v }, sourceTimestamp: at(s),
        })),
    });
}
function codes(result) {
    return (result.operationResults || []).map((sc) => sc.name);
}
// The recorded node's values of 2001's first minute as [second, value] pairs.
async function history2001() {
    const resp = await historyRead(S.session, raw(at(0), at(60), 0), [{ nodeId: recorded() }]);
    const r = resp.results[0];
    if (r.statusCode.equals(StatusCodes.GoodNoData)) return [];
    assert.ok(r.statusCode.isGood(), r.statusCode.toString());
    return (r.historyData.dataValues || []).map((dv) =>
        [(dv.sourceTimestamp.getTime() - base) / 1000, dv.value.value]);
}

test("HistoryUpdate: insert, replace, update, delete raw, delete at time, read back", { timeout: T_LONG, skip }, async () => {
    let r = await historyUpdate([dataDetails(recorded(), Insert, [[1, 1], [2, 2]])]);
    assertGood(r.results[0].statusCode, "insert");
    assert.deepEqual(codes(r.results[0]), ["GoodEntryInserted", "GoodEntryInserted"]);
    assert.deepEqual(await history2001(), [[1, 1], [2, 2]]);

    r = await historyUpdate([dataDetails(recorded(), Insert, [[1, 10], [3, 3]])]);
    assert.deepEqual(codes(r.results[0]), ["BadEntryExists", "GoodEntryInserted"]);
    assert.deepEqual(await history2001(), [[1, 1], [2, 2], [3, 3]]);

    r = await historyUpdate([dataDetails(recorded(), Replace, [[2, 20], [4, 4]])]);
    assert.deepEqual(codes(r.results[0]), ["GoodEntryReplaced", "BadNoEntryExists"]);
    r = await historyUpdate([dataDetails(recorded(), Update, [[3, 30], [5, 5]])]);
    assert.deepEqual(codes(r.results[0]), ["GoodEntryReplaced", "GoodEntryInserted"]);
    assert.deepEqual(await history2001(), [[1, 1], [2, 20], [3, 30], [5, 5]]);

    r = await historyUpdate([new DeleteRawModifiedDetails({
        nodeId: recorded(), isDeleteModified: false, startTime: at(1), endTime: at(3),
    })]);
    assertGood(r.results[0].statusCode, "delete raw");
    assert.deepEqual(await history2001(), [[3, 30], [5, 5]]);
    r = await historyUpdate([new DeleteRawModifiedDetails({
        nodeId: recorded(), isDeleteModified: false, startTime: at(1), endTime: at(3),
    })]);
    assertStatus(r.results[0].statusCode, StatusCodes.BadNoData, "delete raw of nothing");

    r = await historyUpdate([new DeleteAtTimeDetails({ nodeId: recorded(), reqTimes: [at(5), at(9)] })]);
    assertGood(r.results[0].statusCode, "delete at time");
    assert.deepEqual(codes(r.results[0]), ["Good", "BadNoEntryExists"]);
    assert.deepEqual(await history2001(), [[3, 30]]);
    // What is left goes, so that a second run starts empty.
    await historyUpdate([new DeleteRawModifiedDetails({
        nodeId: recorded(), isDeleteModified: false, startTime: at(0), endTime: at(60),
    })]);
});

test("HistoryUpdate refusals: a node not recorded, Remove, modified values", { timeout: T_SHORT, skip }, async () => {
    const r = await historyUpdate([
        dataDetails(unrecorded(), Insert, [[1, 1]]),
        dataDetails(recorded(), Remove, [[1, 1]]),
        new DeleteRawModifiedDetails({ nodeId: recorded(), isDeleteModified: true, startTime: at(0), endTime: at(60) }),
        dataDetails(`ns=${S.demo};s=Demo.NoSuchNode`, Insert, [[1, 1]]),
    ]);
    assert.equal(r.results.length, 4);
    assertStatus(r.results[0].statusCode, StatusCodes.BadHistoryOperationUnsupported, "unrecorded");
    assertStatus(r.results[1].statusCode, StatusCodes.BadHistoryOperationInvalid, "Remove");
    assertStatus(r.results[2].statusCode, StatusCodes.BadHistoryOperationUnsupported, "modified");
    assertStatus(r.results[3].statusCode, StatusCodes.BadNodeIdUnknown, "unknown");
    const [al] = await S.session.read([{ nodeId: recorded(), attributeId: AttributeIds.AccessLevel }]);
    assert.equal(al.value.value & 12, 12, `AccessLevel ${al.value.value}: HistoryRead | HistoryWrite`);
});

test("HistoryServerCapabilities, AggregateFunctions and the HA Configuration", { timeout: T_SHORT, skip }, async () => {
    const ids = { access: 11193, events: 11242, maxValues: 11273, insert: 11196, replace: 11197,
        update: 11198, deleteRaw: 11199, deleteAtTime: 11200, insertEvent: 11281, serverTs: 19091 };
    const dvs = await S.session.read(Object.values(ids).map((i) => ({ nodeId: `i=${i}`, attributeId: AttributeIds.Value })));
    const v = Object.fromEntries(Object.keys(ids).map((k, i) => [k, dvs[i].value.value]));
    assert.deepEqual(v, { access: true, events: true, maxValues: 1000, insert: true, replace: true,
        update: true, deleteRaw: true, deleteAtTime: true, insertEvent: true, serverTs: true });
    const folder = await S.session.browse({ nodeId: "i=11201", referenceTypeId: "i=35", browseDirection: 0, resultMask: 63 });
    assert.equal(folder.references.length, 23, "the aggregates served");
    assert.ok(folder.references.some((ref) => ref.nodeId.value === 2342), "Average");
    const hdc = await S.session.browse({ nodeId: recorded(), referenceTypeId: "i=56", browseDirection: 0, resultMask: 63 });
    assert.equal(hdc.references.length, 1);
    assert.equal(hdc.references[0].browseName.name, "HA Configuration");
    const props = await S.session.browse({ nodeId: hdc.references[0].nodeId, referenceTypeId: "i=46", browseDirection: 0, resultMask: 63 });
    const stepped = props.references.find((ref) => ref.browseName.name === "Stepped");
    assert.ok(stepped, "Stepped");
    const [sv] = await S.session.read([{ nodeId: stepped.nodeId, attributeId: AttributeIds.Value }]);
    assert.equal(sv.value.value, false);
});

// Demo.Measured takes values with their source timestamps and statuses (AccessLevel
// StatusWrite, TimestampWrite): processed and at-time reads over values of 2020-01-01.
const measured = () => `ns=${S.demo};s=Demo.Measured`;
const T0 = Date.UTC(2020, 0, 1);
const at20 = (s) => new Date(T0 + s * 1000);
let filled = false;
async function fill() {
    if (filled) return;
    // Dataset A: 10 @0 s, 30 @15 s, 20 @30 s, 50 @45 s, 40 @60 s (all Good). Dataset B:
    // 10 @100 s, BadSensorFailure @110 s, 20 @130 s, 5 @140 s.
    const values = [[0, 10], [15, 30], [30, 20], [45, 50], [60, 40],
        [100, 10], [110, 0, StatusCodes.BadSensorFailure], [130, 20], [140, 5]];
    for (const [t, v, status] of values) {
        const st = await S.session.write({
            nodeId: measured(), attributeId: AttributeIds.Value,
            value: {
                value: { dataType: DataType.Double, value: v },
                sourceTimestamp: at20(t),
                ...(status ? { statusCode: status } : {}),
            },
        });
        assertGood(st, `write ${v} @${t}`);
    }
    filled = true;
}
function processed(from, to, intervalMs, aggregates, config = { useServerCapabilitiesDefaults: true }) {
    return new ReadProcessedDetails({
        startTime: at20(from), endTime: at20(to), processingInterval: intervalMs,
        aggregateType: aggregates.map((a) => ua.coerceNodeId(`i=${a}`)),
        aggregateConfiguration: config,
    });
}
const code = (dv) => (dv.statusCode.value >>> 0);
const num = (dv) => {
    const x = dv.value.value;
    return typeof x === "object" && x !== null ? (x.value >>> 0) : x;
};

test("processed reads of every served aggregate, values worked out by hand", { timeout: T_LONG, skip }, async () => {
    await fill();
    // [0, 30) holds 10, 30 (20 at its end), [30, 60) holds 20, 50 (40 at its end). Sloped lines:
    // areas 675 and 1200 value*s, time averages 22.5 and 40.
    const expect = {
        2341: [10, 20], 2342: [20, 35], 2343: [22.5, 40], 11285: [22.5, 40], 2344: [675, 1200],
        11304: [675, 1200], 2346: [10, 20], 2347: [30, 50], 2348: [10, 20], 2349: [30, 50],
        2350: [20, 30], 11286: [10, 20], 11287: [30, 50], 2352: [2, 2], 2357: [10, 20],
        2358: [30, 50], 2359: [20, 30], 2360: [30000, 30000], 2361: [0, 0], 2362: [100, 100],
        2363: [0, 0], 2364: [0, 0], 11292: [0, 0],
    };
    const ids = Object.keys(expect).map(Number);
    // One aggregate per node: the same node once per aggregate, in one request.
    const r = await historyRead(S.session, processed(0, 60, 30000, ids),
        ids.map(() => ({ nodeId: measured() })));
    assert.equal(r.results.length, ids.length);
    ids.forEach((id, i) => {
        const res = r.results[i];
        assert.ok(res.statusCode.isGood(), `i=${id}: ${res.statusCode.toString()}`);
        const dvs = res.historyData.dataValues;
        assert.equal(dvs.length, 2, `i=${id}`);
        for (let k = 0; k < 2; k++) {
            assert.equal(code(dvs[k]) >>> 30, 0, `i=${id} interval ${k}: severity of ${code(dvs[k]).toString(16)}`);
            assert.ok(Math.abs(num(dvs[k]) - expect[id][k]) < 1e-9, `i=${id} interval ${k}: ${num(dvs[k])}`);
        }
    });
    // Average is Calculated (InfoType DataValue 0x400, bit 0x1); the ActualTime forms carry
    // the raw value's time.
    const avg = r.results[ids.indexOf(2342)].historyData.dataValues;
    assert.equal(code(avg[0]) & 0x41f, 0x401);
    assert.equal(avg[0].sourceTimestamp.getTime(), at20(0).getTime());
    const maxAt = r.results[ids.indexOf(2349)].historyData.dataValues;
    assert.equal(maxAt[0].sourceTimestamp.getTime(), at20(15).getTime());
    assert.equal(maxAt[1].sourceTimestamp.getTime(), at20(45).getTime());
    // Backward: (30, 60] holds 50, 40: 45; (0, 30] holds 30, 20: 25, the later one first.
    const back = await historyRead(S.session, processed(60, 0, 30000, [2342]), [{ nodeId: measured() }]);
    assert.deepEqual(back.results[0].historyData.dataValues.map(num), [45, 25]);
    // Dataset B in one interval [100, 140): Good 20 s, Bad 20 s; Average of 10 and 20 with a
    // third of the values Bad: 15, Uncertain_DataSubNormal.
    const ids2 = [2360, 2361, 2362, 2363, 2364, 2342];
    const b = await historyRead(S.session, processed(100, 140, 0, ids2), ids2.map(() => ({ nodeId: measured() })));
    const one = (k) => b.results[k].historyData.dataValues[0];
    assert.equal(num(one(0)), 20000);
    assert.equal(num(one(1)), 20000);
    assert.equal(num(one(2)), 50);
    assert.equal(num(one(3)), 50);
    assert.equal(num(one(4)), StatusCodes.BadSensorFailure.value);
    assert.equal(num(one(5)), 15);
    assert.equal((code(one(5)) & 0xffff0000) >>> 0, StatusCodes.UncertainDataSubNormal.value);
});

test("processed reads: continuation points and refusals", { timeout: T_LONG, skip }, async () => {
    await fill();
    // Not served, one aggregate for two nodes, a configuration with a gap, a zero range.
    const r = await historyRead(S.session, processed(0, 60, 30000, [2365]), [{ nodeId: measured() }]);
    assertStatus(r.results[0].statusCode, StatusCodes.BadAggregateNotSupported, "AnnotationCount");
    const m = await historyRead(S.session, processed(0, 60, 30000, [2342]),
        [{ nodeId: measured() }, { nodeId: measured() }]);
    assertStatus(m.results[0].statusCode, StatusCodes.BadAggregateListMismatch, "mismatch");
    const c = await historyRead(S.session, processed(0, 60, 30000, [2342], {
        useServerCapabilitiesDefaults: false, treatUncertainAsBad: true, percentDataBad: 50, percentDataGood: 40,
    }), [{ nodeId: measured() }]);
    assertStatus(c.results[0].statusCode, StatusCodes.BadAggregateConfigurationRejected, "config");
    const z = await historyRead(S.session, processed(10, 10, 1000, [2342]), [{ nodeId: measured() }]);
    assertStatus(z.results[0].statusCode, StatusCodes.BadInvalidArgument, "start == end");
    // A foreign continuation point.
    const j = await historyRead(S.session, processed(0, 60, 30000, [2342]),
        [{ nodeId: measured(), continuationPoint: Buffer.from([1, 2, 3, 4, 5, 6, 7, 8]) }]);
    assertStatus(j.results[0].statusCode, StatusCodes.BadContinuationPointInvalid, "junk");
});

test("at-time reads: raw, interpolated, simple bounds, refusals", { timeout: T_LONG, skip }, async () => {
    await fill();
    const times = [at20(15), at20(7.5), at20(37.5), at20(50), at20(-10)];
    const r = await historyRead(S.session, new ReadAtTimeDetails({ reqTimes: times, useSimpleBounds: false }),
        [{ nodeId: measured() }]);
    assert.ok(r.results[0].statusCode.isGood(), r.results[0].statusCode.toString());
    const dvs = r.results[0].historyData.dataValues;
    assert.equal(dvs.length, 5);
    dvs.forEach((dv, i) => assert.equal(dv.sourceTimestamp.getTime(), times[i].getTime()));
    assert.equal(num(dvs[0]), 30);  // raw: no Interpolated bit
    assert.equal(code(dvs[0]) & 0x2, 0);
    assert.equal(num(dvs[1]), 20);  // halfway from 10 @0 to 30 @15
    assert.equal(code(dvs[1]), 0x402);  // Good, Interpolated
    assert.equal(num(dvs[2]), 35);
    assert.ok(Math.abs(num(dvs[3]) - (50 - 10 / 3)) < 1e-9);
    assert.equal((code(dvs[4]) & 0xffff0000) >>> 0, StatusCodes.BadNoData.value);  // before any value
    // Simple bounds at 115 s: the value before is the Bad one at 110 s: no value; at 105 s,
    // 10 @100 then the Bad one: 10 held, Uncertain.
    const s = await historyRead(S.session, new ReadAtTimeDetails({ reqTimes: [at20(115), at20(105)], useSimpleBounds: true }),
        [{ nodeId: measured() }]);
    const sv = s.results[0].historyData.dataValues;
    assert.ok((code(sv[0]) >>> 31) === 1, code(sv[0]).toString(16));
    assert.equal(num(sv[1]), 10);
    assert.equal((code(sv[1]) & 0xffff0000) >>> 0, StatusCodes.UncertainDataSubNormal.value);
    // No times; more than max_req_times (run_suite.sh: 16).
    const none = await historyRead(S.session, new ReadAtTimeDetails({ reqTimes: [] }), [{ nodeId: measured() }]);
    assertStatus(none.results[0].statusCode, StatusCodes.BadInvalidTimestampArgument, "no reqTimes");
    await assert.rejects(historyRead(S.session,
        new ReadAtTimeDetails({ reqTimes: Array.from({ length: 17 }, (_, i) => at20(i)) }), [{ nodeId: measured() }]),
    /BadTooManyOperations/);
});

// --- Event history (Part 11 6.5.4, 6.9.4, 6.9.7) --------------------------------------------
// run_suite.sh records the Server object's events (event_notifiers = ["server"],
// max_events_per_update = 8). Inserted events go into 2002, apart from the events the server
// raises now.
const { UpdateEventDetails, DeleteEventDetails, HistoryEvent, SimpleAttributeOperand, EventFilter } =
    require("node-opcua-types");
const base2002 = Date.UTC(2002, 0, 1);
const at2002 = (s) => new Date(base2002 + s * 1000);
const serverObject = "i=2253";

function selectClauses(names) {
    return names.map((n) => new SimpleAttributeOperand({
        typeDefinitionId: "i=2041", browsePath: [{ namespaceIndex: 0, name: n }],
        attributeId: AttributeIds.Value,
    }));
}
function eventRead(start, end, names, numValuesPerNode = 0, whereClause = undefined) {
    return new ReadEventDetails({
        startTime: start, endTime: end, numValuesPerNode,
        filter: new EventFilter({ selectClauses: selectClauses(names), whereClause }),
    });
}
// Insert (or replace, update) events of 2002 [second, message, severity, eventId?].
function eventDetails(perform, events, nodeId = serverObject) {
    return new UpdateEventDetails({
        nodeId, performInsertReplace: perform,
        filter: new EventFilter({
            selectClauses: selectClauses(["EventType", "Time", "Message", "Severity", "EventId"]),
        }),
        eventData: events.map(([s, msg, sev, id]) => ({
            eventFields: [
                { dataType: DataType.NodeId, value: ua.coerceNodeId("i=2041") },
                { dataType: DataType.DateTime, value: at2002(s) },
                { dataType: DataType.LocalizedText, value: { text: msg } },
                { dataType: DataType.UInt16, value: sev },
                id ? { dataType: DataType.ByteString, value: id } : { dataType: DataType.Null },
            ],
        })),
    });
}
// The stored events of 2002's first minute: [second, message, eventId] each.
async function events2002() {
    const resp = await historyRead(S.session, eventRead(at2002(0), at2002(60), ["Time", "Message", "EventId"]),
        [{ nodeId: serverObject }]);
    const r = resp.results[0];
    if (r.statusCode.equals(StatusCodes.GoodNoData)) return [];
    assert.ok(r.statusCode.isGood(), r.statusCode.toString());
    assert.ok(r.historyData instanceof HistoryEvent);
    return (r.historyData.events || []).map((e) => [
        (e.eventFields[0].value.getTime() - base2002) / 1000, e.eventFields[1].value.text, e.eventFields[2].value,
    ]);
}

test("event history: the Server object says so, and the capabilities", { timeout: T_SHORT, skip }, async () => {
    const [en] = await S.session.read([{ nodeId: serverObject, attributeId: AttributeIds.EventNotifier }]);
    assert.equal(en.value.value & 13, 13, `EventNotifier ${en.value.value}: SubscribeToEvents | HistoryRead | HistoryWrite`);
    const ids = { events: 11242, insert: 11281, replace: 11282, update: 11283, del: 11502, max: 11274 };
    const dvs = await S.session.read(Object.values(ids).map((i) => ({ nodeId: `i=${i}`, attributeId: AttributeIds.Value })));
    const v = Object.fromEntries(Object.keys(ids).map((k, i) => [k, dvs[i].value.value]));
    assert.deepEqual(v, { events: true, insert: true, replace: true, update: true, del: true, max: 1000 });
});

test("event history: raised events are recorded and read back with a filter", { timeout: T_LONG, skip }, async () => {
    // The Branchy alarm of run_suite.sh on Demo.Scalars.Float raises events from the Server's
    // view (its notifiers end at the Server object).
    const float = `ns=${S.demo};s=Demo.Scalars.Float`;
    const [old] = await S.session.read([{ nodeId: float, attributeId: AttributeIds.Value }]);
    const from = new Date(Date.now() - 1000);
    for (const value of [95, 5]) {
        assertGood(await S.session.write({ nodeId: float, attributeId: AttributeIds.Value,
            value: { value: { dataType: DataType.Float, value } } }), `write ${value}`);
    }
    assertGood(await S.session.write({ nodeId: float, attributeId: AttributeIds.Value,
        value: { value: old.value } }), "restore");
    const to = new Date(Date.now() + 60000);
    let got = [];
    for (let tries = 0; tries < 50 && got.length === 0; tries++) {
        const r = await historyRead(S.session, eventRead(from, to, ["EventType", "SourceName", "Message", "NoSuchField"]),
            [{ nodeId: serverObject }]);
        assert.ok(r.results[0].statusCode.isGood(), r.results[0].statusCode.toString());
        // ExclusiveLevelAlarmType (i=9482): the alarm's own events.
        got = (r.results[0].historyData.events || []).filter((e) => e.eventFields[0].value.value === 9482);
        if (got.length === 0) await new Promise((res) => setTimeout(res, 100));
    }
    assert.ok(got.length >= 1, "the alarm's events");
    assert.equal(got[0].eventFields[3].dataType, DataType.Null, "a field no event has is null");
    // Backward from now, one event, no continuation point.
    const back = await historyRead(S.session, eventRead(null, to, ["Time"], 1), [{ nodeId: serverObject }]);
    assert.equal(back.results[0].historyData.events.length, 1);
    assert.ok(!back.results[0].continuationPoint || back.results[0].continuationPoint.length === 0);
});

test("event history: insert, read with a where clause, replace, update, delete", { timeout: T_LONG, skip }, async () => {
    let r = await historyUpdate([eventDetails(Insert, [[1, "one", 100], [2, "two", 700], [3, "three", 900]])]);
    assertGood(r.results[0].statusCode, "insert");
    assert.deepEqual(codes(r.results[0]), ["GoodEntryInserted", "GoodEntryInserted", "GoodEntryInserted"]);
    let all = await events2002();
    assert.deepEqual(all.map((e) => e.slice(0, 2)), [[1, "one"], [2, "two"], [3, "three"]]);

    // Severity > 500, paged one event at a time.
    const where = { elements: [{ filterOperator: 2 /* GreaterThan */, filterOperands: [
        selectClauses(["Severity"])[0],
        new ua.LiteralOperand({ value: { dataType: DataType.UInt16, value: 500 } }),
    ] }] };
    const paged = [];
    let cp = null;
    for (let pages = 0; pages < 5; pages++) {
        const p = await historyRead(S.session, eventRead(at2002(0), at2002(60), ["Message"], 1, where),
            [{ nodeId: serverObject, continuationPoint: cp }]);
        assert.ok(p.results[0].statusCode.isGood(), p.results[0].statusCode.toString());
        paged.push(...(p.results[0].historyData.events || []).map((e) => e.eventFields[0].value.text));
        cp = p.results[0].continuationPoint && p.results[0].continuationPoint.length ? p.results[0].continuationPoint : null;
        if (!cp) break;
    }
    assert.deepEqual(paged, ["two", "three"]);

    // Replace by EventId, an unknown one, an insert of an existing one, an update.
    const unknown = Buffer.alloc(16, 7);
    r = await historyUpdate([eventDetails(Replace, [[5, "five", 1, all[0][2]], [6, "x", 1, unknown]])]);
    assert.deepEqual(codes(r.results[0]), ["GoodEntryReplaced", "BadNoEntryExists"]);
    r = await historyUpdate([eventDetails(Insert, [[7, "again", 1, all[1][2]]])]);
    assert.deepEqual(codes(r.results[0]), ["BadEntryExists"]);
    r = await historyUpdate([eventDetails(Update, [[4, "four", 1, unknown]])]);
    assert.deepEqual(codes(r.results[0]), ["GoodEntryInserted"]);
    all = await events2002();
    assert.deepEqual(all.map((e) => e.slice(0, 2)), [[2, "two"], [3, "three"], [4, "four"], [5, "five"]]);

    // Delete by EventIds: per id Good or BadEventIdUnknown; then everything, for a second run.
    r = await historyUpdate([new DeleteEventDetails({ nodeId: serverObject, eventIds: [all[0][2], Buffer.alloc(8, 1)] })]);
    assertGood(r.results[0].statusCode, "delete");
    assert.deepEqual(codes(r.results[0]), ["Good", "BadEventIdUnknown"]);
    r = await historyUpdate([new DeleteEventDetails({ nodeId: serverObject, eventIds: all.slice(1).map((e) => e[2]) })]);
    assert.deepEqual(codes(r.results[0]), ["Good", "Good", "Good"]);
    assert.deepEqual(await events2002(), []);
});

test("event history refusals: not a notifier, no select clause, limits, missing fields", { timeout: T_SHORT, skip }, async () => {
    const r = await historyRead(S.session, eventRead(at2002(0), at2002(60), ["Message"]),
        [{ nodeId: "i=85" }, { nodeId: recorded() }, { nodeId: "ns=1;s=NoSuchObject" }]);
    assertStatus(r.results[0].statusCode, StatusCodes.BadHistoryOperationUnsupported, "Objects folder");
    assertStatus(r.results[1].statusCode, StatusCodes.BadNotReadable, "a Variable");
    assertStatus(r.results[2].statusCode, StatusCodes.BadNodeIdUnknown, "unknown");
    const none = await historyRead(S.session, eventRead(at2002(0), at2002(60), []), [{ nodeId: serverObject }]);
    assertStatus(none.results[0].statusCode, StatusCodes.BadEventFilterInvalid, "no select clause");
    // More eventData than max_events_per_update (8); Remove; an event without its Time.
    const u = await historyUpdate([
        eventDetails(Insert, Array.from({ length: 9 }, (_, i) => [i, "x", 1])),
        eventDetails(Remove, [[1, "x", 1]]),
        eventDetails(Insert, [[1, "x", 1]], "i=85"),
    ]);
    assertStatus(u.results[0].statusCode, StatusCodes.BadTooManyOperations, "too many");
    assertStatus(u.results[1].statusCode, StatusCodes.BadHistoryOperationInvalid, "Remove");
    assertStatus(u.results[2].statusCode, StatusCodes.BadHistoryOperationUnsupported, "not recorded");
    const noTime = eventDetails(Insert, [[1, "x", 1]]);
    noTime.eventData[0].eventFields[1] = new ua.Variant({ dataType: DataType.Null });
    const m = await historyUpdate([noTime]);
    assert.deepEqual(codes(m.results[0]), ["BadArgumentsMissing"]);
});
