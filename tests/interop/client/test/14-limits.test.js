// SPDX-License-Identifier: Apache-2.0
// [server.limits] end to end, against the server run_suite.sh starts with small limits
// (UAPLEX_LIMITS_ENDPOINT, configured by UAPLEX_LIMITS_TOML): ServerCapabilities advertise
// exactly the configured values, every limit is enforced with its Part 4 / Part 6 status, and
// a place freed (deleted subscription or item, closed session or connection) can be taken again.
"use strict";

const fs = require("node:fs");
const { test } = require("node:test");
const { ua, assert, T_SHORT, T_LONG, makeClient, disconnect, assertGood, assertStatus, statusName, sleep } =
    require("../lib/ua");
const { AttributeIds, DataType, StatusCodes, TimestampsToReturn, MonitoringMode, Variant, VariantArrayType } = ua;
const { RegisterNodesRequest, UnregisterNodesRequest } = require("node-opcua-types");
const { VariableIds } = require("node-opcua-constants");
const { hello, exchange, openSocket, parse } = require("../lib/rawtcp");

const ENDPOINT = process.env.UAPLEX_LIMITS_ENDPOINT;
const TOML = process.env.UAPLEX_LIMITS_TOML;
const skip = !ENDPOINT || !TOML ? "no limits server (run through run_suite.sh)" : false;

// The [server.limits] table of the limits server: `key = integer` lines.
function configured() {
    const out = {};
    let inLimits = false;
    for (const line of fs.readFileSync(TOML, "utf8").split("\n")) {
        const t = line.trim();
        if (t.startsWith("[")) {
            inLimits = t === "[server.limits]";
            continue;
        }
        const m = inLimits && /^(\w+)\s*=\s*(\d+)$/.exec(t);
        if (m) out[m[1]] = Number(m[2]);
    }
    return out;
}
const L = skip ? {} : configured();

async function connect(extra) {
    const client = makeClient(extra);
    try {
        await client.connect(ENDPOINT);
    } catch (err) {
        await disconnect(client);
        throw err;
    }
    return client;
}

// A freed place (closed connection, session) may take the server a moment to see: retried,
// bounded; the refusals themselves are asserted without any wait.
async function eventually(what, fn, tries = 50) {
    for (let i = 1; ; i++) {
        try {
            return await fn();
        } catch (err) {
            if (i >= tries) throw new Error(`${what}: ${err.message}`);
            await sleep(100);
        }
    }
}

// One client, `n` sessions (of `identity`, anonymous by default); fn(sessions, client);
// everything closed afterwards.
async function withSessions(n, fn, extra, identity) {
    const client = await eventually("connect", () => connect(extra));
    const sessions = [];
    try {
        for (let i = 0; i < n; i++) sessions.push(await client.createSession(identity));
        return await fn(sessions, client);
    } finally {
        for (const s of sessions) {
            try {
                await s.close(true);
            } catch {
                /* already closed */
            }
        }
        await disconnect(client);
    }
}

// A raw service call: { status, response }; a ServiceFault gives its serviceResult.
function transact(session, request) {
    return new Promise((resolve, reject) => {
        session.performMessageTransaction(request, (err, response) => {
            const r = response || (err && err.response);
            if (r && r.responseHeader) resolve({ status: r.responseHeader.serviceResult, response: r });
            else reject(err || new Error("no response"));
        });
    });
}

async function demoNs(session) {
    const dv = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
    const ns = dv.value.value.indexOf("urn:uaplex:demo");
    assert.ok(ns > 1, "demo namespace missing");
    return ns;
}

async function subscribe(session, publishingInterval = 60000) {
    const r = await session.createSubscription({
        requestedPublishingInterval: publishingInterval,
        requestedLifetimeCount: 30,
        requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 0,
        publishingEnabled: true,
        priority: 0,
    });
    return r.subscriptionId;
}

const itemOn = (nodeId, clientHandle, extra = {}) => ({
    itemToMonitor: { nodeId, attributeId: AttributeIds.Value, ...(extra.item || {}) },
    monitoringMode: MonitoringMode.Reporting,
    requestedParameters: { clientHandle, samplingInterval: 1000, queueSize: 1, discardOldest: true, ...(extra.params || {}) },
});

function createItems(session, subscriptionId, items) {
    return transact(session, new ua.CreateMonitoredItemsRequest({
        subscriptionId,
        timestampsToReturn: TimestampsToReturn.Both,
        itemsToCreate: items,
    }));
}

// n items on ns0 variables of the Server object (distinct nodes, all readable).
const SERVER_VARS = ["i=2256", "i=2257", "i=2258", "i=2259", "i=2260", "i=2261", "i=2254", "i=2255"];
const items = (n, base = 1) => Array.from({ length: n }, (_, i) => itemOn(SERVER_VARS[i % SERVER_VARS.length], base + i));

test("ServerCapabilities advertise the configured limits and the Micro Embedded Device 2017 profile", { skip, timeout: T_SHORT }, async () => {
    const V = VariableIds;
    const caps = "Server_ServerCapabilities_";
    const ops = `${caps}OperationLimits_`;
    const expected = [
        [`${caps}MaxSessions`, L.max_sessions],
        [`${caps}MaxSubscriptions`, L.max_subscriptions],
        [`${caps}MaxSubscriptionsPerSession`, L.max_subscriptions_per_session],
        [`${caps}MaxMonitoredItems`, L.max_monitored_items],
        [`${caps}MaxMonitoredItemsPerSubscription`, L.max_monitored_items_per_subscription],
        [`${caps}MaxMonitoredItemsQueueSize`, Math.max(L.max_monitored_item_queue_size, L.max_event_queue_size)],
        [`${caps}MaxBrowseContinuationPoints`, L.max_browse_continuation_points],
        [`${caps}MinSupportedSampleRate`, L.min_sampling_interval_ms],
        [`${caps}MaxArrayLength`, L.max_array_length],
        [`${caps}MaxStringLength`, L.max_string_length],
        [`${caps}MaxByteStringLength`, L.max_bytestring_length],
        [`${ops}MaxNodesPerRead`, L.max_nodes_per_read],
        [`${ops}MaxNodesPerWrite`, L.max_nodes_per_write],
        [`${ops}MaxNodesPerBrowse`, L.max_nodes_per_browse],
        [`${ops}MaxNodesPerMethodCall`, L.max_nodes_per_method_call],
        [`${ops}MaxNodesPerRegisterNodes`, L.max_nodes_per_register_nodes],
        [`${ops}MaxNodesPerTranslateBrowsePathsToNodeIds`, L.max_nodes_per_translate],
        [`${ops}MaxMonitoredItemsPerCall`, L.max_monitored_items_per_call],
        // Services the server does not offer: no limit stated.
        [`${ops}MaxNodesPerNodeManagement`, 0],
        [`${ops}MaxNodesPerHistoryReadData`, 0],
        [`${caps}MaxQueryContinuationPoints`, 0],
        [`${caps}MaxHistoryContinuationPoints`, 0],
    ];
    for (const [name, value] of expected) assert.equal(typeof value, "number", `${name}: not configured in ${TOML}`);
    await withSessions(1, async ([s]) => {
        // In Reads of MaxNodesPerRead nodes: the limit itself is under test below.
        for (let i = 0; i < expected.length; i += L.max_nodes_per_read) {
            const part = expected.slice(i, i + L.max_nodes_per_read);
            const dvs = await s.read(part.map(([name]) => {
                assert.ok(V[name], `no ns0 id for ${name}`);
                return { nodeId: `i=${V[name]}`, attributeId: AttributeIds.Value };
            }));
            dvs.forEach((dv, k) => {
                assertGood(dv.statusCode, part[k][0]);
                assert.equal(Number(dv.value.value), part[k][1], `${part[k][0]} advertises ${dv.value.value}`);
            });
        }
        const profiles = await s.read({ nodeId: `i=${V[`${caps}ServerProfileArray`]}`, attributeId: AttributeIds.Value });
        assert.deepEqual(profiles.value.value, ["http://opcfoundation.org/UA-Profile/Server/MicroEmbeddedDevice2017"]);
    });
});

test("CreateSession beyond MaxSessions is BadTooManySessions; a closed session frees its place", { skip, timeout: T_LONG }, async () => {
    await withSessions(L.max_sessions, async (sessions, client) => {
        await assert.rejects(client.createSession(), /BadTooManySessions/);
        const summary = await sessions[0].read({
            nodeId: `i=${VariableIds.Server_ServerDiagnostics_ServerDiagnosticsSummary_CurrentSessionCount}`,
            attributeId: AttributeIds.Value,
        });
        assert.equal(summary.value.value, L.max_sessions, "CurrentSessionCount");
        await sessions.pop().close();
        sessions.push(await client.createSession());
        await assert.rejects(client.createSession(), /BadTooManySessions/);
    });
});

test("the revised session timeout stays within min/max_session_timeout_ms", { skip, timeout: T_SHORT }, async () => {
    await withSessions(1, async ([s]) => assert.equal(s.timeout, L.max_session_timeout_ms), { requestedSessionTimeout: 600000 });
    await withSessions(1, async ([s]) => assert.equal(s.timeout, L.min_session_timeout_ms), { requestedSessionTimeout: 1 });
});

test("the revised SecureChannel token lifetime stays within min/max_token_lifetime_ms", { skip, timeout: T_SHORT }, async () => {
    for (const [requested, revised] of [[1000, L.min_token_lifetime_ms], [3600000, L.max_token_lifetime_ms]]) {
        const client = await eventually("connect", () => connect({ defaultSecureTokenLifetime: requested }));
        try {
            const token = client._secureChannel && client._secureChannel.activeSecurityToken;
            assert.ok(token, "no security token");
            assert.equal(token.revisedLifetime, revised, `requested ${requested}`);
        } finally {
            await disconnect(client);
        }
    }
});

test("CreateSubscription beyond MaxSubscriptionsPerSession and MaxSubscriptions is BadTooManySubscriptions", { skip, timeout: T_LONG }, async () => {
    assert.ok(L.max_subscriptions_per_session < L.max_subscriptions && L.max_subscriptions <= 2 * L.max_subscriptions_per_session);
    await withSessions(3, async ([a, b, c]) => {
        const mine = [];
        for (let i = 0; i < L.max_subscriptions_per_session; i++) mine.push(await subscribe(a));
        // Per session: a is full while the server is not.
        await assert.rejects(subscribe(a), /BadTooManySubscriptions/);
        for (let i = L.max_subscriptions_per_session; i < L.max_subscriptions; i++) await subscribe(b);
        // Server-wide: c has none, the server is full.
        await assert.rejects(subscribe(c), /BadTooManySubscriptions/);
        const del = await a.deleteSubscriptions({ subscriptionIds: [mine[0]] });
        assertGood(del.results[0], "DeleteSubscriptions");
        await subscribe(c);
        await assert.rejects(subscribe(a), /BadTooManySubscriptions/);
    });
    // Closing the sessions deleted their subscriptions: the server takes a full session again.
    await withSessions(1, async ([s]) => {
        for (let i = 0; i < L.max_subscriptions_per_session; i++) await subscribe(s);
    });
});

// Part 4 5.13.7: only the same user may take a subscription over, so both sessions log in as
// run_suite.sh's user operator; two anonymous sessions on a None channel are refused.
const operator = { type: ua.UserTokenType.UserName, userName: "operator", password: "op-secret" };

test("TransferSubscriptions to a session at MaxSubscriptionsPerSession: per-item BadTooManySubscriptions", { skip, timeout: T_LONG }, async () => {
    await withSessions(2, async ([a, b]) => {
        const mine = [];
        for (let i = 0; i < L.max_subscriptions_per_session; i++) mine.push(await subscribe(a));
        const theirs = await subscribe(b);
        const transfer = () => transact(a, new ua.TransferSubscriptionsRequest({ subscriptionIds: [theirs], sendInitialValues: false }));
        let r = await transfer();
        assertGood(r.status, "TransferSubscriptions service result");
        assertStatus(r.response.results[0].statusCode, StatusCodes.BadTooManySubscriptions, "transfer into a full session");
        await a.deleteSubscriptions({ subscriptionIds: [mine[0]] });
        r = await transfer();
        assertGood(r.response.results[0].statusCode, "transfer after a delete");
    }, undefined, operator);
});

test("TransferSubscriptions between anonymous sessions on a None channel is BadUserAccessDenied", { skip, timeout: T_LONG }, async () => {
    await withSessions(2, async ([a, b]) => {
        const theirs = await subscribe(b);
        const r = await transact(a, new ua.TransferSubscriptionsRequest({ subscriptionIds: [theirs], sendInitialValues: false }));
        assertGood(r.status, "TransferSubscriptions service result");
        assertStatus(r.response.results[0].statusCode, StatusCodes.BadUserAccessDenied, "anonymous transfer on None");
        // The subscription stayed with its session.
        const del = await b.deleteSubscriptions({ subscriptionIds: [theirs] });
        assertGood(del.results[0], "DeleteSubscriptions by the owner");
    });
});

test("CreateMonitoredItems beyond MaxMonitoredItemsPerSubscription and MaxMonitoredItems: per-item BadTooManyMonitoredItems", { skip, timeout: T_LONG }, async () => {
    const perSub = L.max_monitored_items_per_subscription, total = L.max_monitored_items;
    assert.ok(perSub < total && total < 2 * perSub && perSub <= L.max_monitored_items_per_call);
    await withSessions(1, async ([s]) => {
        const a = await subscribe(s), b = await subscribe(s);
        // Subscription a up to its limit in two calls; the one item beyond fails on its own.
        let r = await createItems(s, a, items(perSub - 1));
        assertGood(r.status, "CreateMonitoredItems");
        r.response.results.forEach((x, i) => assertGood(x.statusCode, `item ${i}`));
        r = await createItems(s, a, items(2, 10));
        assertGood(r.status, "CreateMonitoredItems service result (Part 4 5.13.2: the limit is per item)");
        assertGood(r.response.results[0].statusCode, "the last item within the limit");
        assertStatus(r.response.results[1].statusCode, StatusCodes.BadTooManyMonitoredItems, "beyond MaxMonitoredItemsPerSubscription");
        const inA = r.response.results[0].monitoredItemId;
        // Subscription b has room; the server has not.
        r = await createItems(s, b, items(total - perSub + 1, 20));
        assertGood(r.status, "CreateMonitoredItems");
        const res = r.response.results;
        res.slice(0, -1).forEach((x, i) => assertGood(x.statusCode, `b item ${i}`));
        assertStatus(res[res.length - 1].statusCode, StatusCodes.BadTooManyMonitoredItems, "beyond MaxMonitoredItems");
        // Deleting an item frees its place server-wide.
        const del = await transact(s, new ua.DeleteMonitoredItemsRequest({ subscriptionId: a, monitoredItemIds: [inA] }));
        assertGood(del.response.results[0], "DeleteMonitoredItems");
        r = await createItems(s, b, items(1, 30));
        assertGood(r.response.results[0].statusCode, "after the delete");
        r = await createItems(s, b, items(1, 31));
        assertStatus(r.response.results[0].statusCode, StatusCodes.BadTooManyMonitoredItems, "full again");
        // Deleting the subscription frees all of its items.
        await s.deleteSubscriptions({ subscriptionIds: [a] });
        r = await createItems(s, b, items(1, 32));
        assertGood(r.response.results[0].statusCode, "after DeleteSubscriptions");
    });
});

test("MonitoredItem services with more than MaxMonitoredItemsPerCall items are BadTooManyOperations", { skip, timeout: T_LONG }, async () => {
    const n = L.max_monitored_items_per_call;
    await withSessions(1, async ([s]) => {
        const sub = await subscribe(s);
        const over = await createItems(s, sub, items(n + 1));
        assertStatus(over.status, StatusCodes.BadTooManyOperations, "CreateMonitoredItems");
        const ok = await createItems(s, sub, items(n));
        assertGood(ok.status, "CreateMonitoredItems at the limit");
        const ids = ok.response.results.map((x) => x.monitoredItemId);
        const tooMany = [...ids, 999999];
        const calls = [
            ["ModifyMonitoredItems", new ua.ModifyMonitoredItemsRequest({
                subscriptionId: sub, timestampsToReturn: TimestampsToReturn.Both,
                itemsToModify: tooMany.map((id) => ({ monitoredItemId: id, requestedParameters: { samplingInterval: 500, queueSize: 1 } })),
            })],
            ["SetMonitoringMode", new ua.SetMonitoringModeRequest({ subscriptionId: sub, monitoringMode: MonitoringMode.Sampling, monitoredItemIds: tooMany })],
            ["SetTriggering", new ua.SetTriggeringRequest({ subscriptionId: sub, triggeringItemId: ids[0], linksToAdd: tooMany, linksToRemove: [] })],
            ["DeleteMonitoredItems", new ua.DeleteMonitoredItemsRequest({ subscriptionId: sub, monitoredItemIds: tooMany })],
        ];
        for (const [name, req] of calls) assertStatus((await transact(s, req)).status, StatusCodes.BadTooManyOperations, name);
        const del = await transact(s, new ua.DeleteMonitoredItemsRequest({ subscriptionId: sub, monitoredItemIds: ids }));
        assertGood(del.status, "DeleteMonitoredItems at the limit");
    });
});

test("Read, Write, Browse, BrowseNext, Call, RegisterNodes, UnregisterNodes, TranslateBrowsePaths beyond OperationLimits are BadTooManyOperations", { skip, timeout: T_LONG }, async () => {
    await withSessions(1, async ([s]) => {
        const ns = await demoNs(s);
        const demo = `ns=${ns};s=Demo`;
        const dbl = `ns=${ns};s=Demo.Scalars.Double`;
        const rep = (n, f) => Array.from({ length: n }, (_, i) => f(i));
        const cases = [
            ["Read", L.max_nodes_per_read, (n) => new ua.ReadRequest({
                nodesToRead: rep(n, () => ({ nodeId: "i=2258", attributeId: AttributeIds.Value })),
            })],
            ["Write", L.max_nodes_per_write, (n) => new ua.WriteRequest({
                nodesToWrite: rep(n, (i) => ({ nodeId: dbl, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Double, value: i } } })),
            })],
            ["Browse", L.max_nodes_per_browse, (n) => new ua.BrowseRequest({
                requestedMaxReferencesPerNode: 1000,
                nodesToBrowse: rep(n, () => ({ nodeId: "i=85", browseDirection: ua.BrowseDirection.Forward, includeSubtypes: true, resultMask: 63 })),
            })],
            ["BrowseNext", L.max_nodes_per_browse, (n) => new ua.BrowseNextRequest({
                releaseContinuationPoints: true,
                continuationPoints: rep(n, (i) => Buffer.from([i + 1])),
            })],
            ["Call", L.max_nodes_per_method_call, (n) => new ua.CallRequest({
                methodsToCall: rep(n, (i) => ({
                    objectId: demo, methodId: `${demo}.Multiply`,
                    inputArguments: [new Variant({ dataType: DataType.Double, value: i }), new Variant({ dataType: DataType.Double, value: 2 })],
                })),
            })],
            ["RegisterNodes", L.max_nodes_per_register_nodes, (n) => new RegisterNodesRequest({ nodesToRegister: rep(n, () => "i=2258") })],
            ["UnregisterNodes", L.max_nodes_per_register_nodes, (n) => new UnregisterNodesRequest({ nodesToUnregister: rep(n, () => "i=2258") })],
            ["TranslateBrowsePathsToNodeIds", L.max_nodes_per_translate, (n) => new ua.TranslateBrowsePathsToNodeIdsRequest({
                browsePaths: rep(n, () => ua.makeBrowsePath("i=2253", ".ServerStatus")),
            })],
        ];
        for (const [name, limit, make] of cases) {
            assert.ok(limit > 0, `${name}: no limit configured`);
            const at = await transact(s, make(limit));
            assertGood(at.status, `${name} with ${limit} operations (the limit)`);
            const over = await transact(s, make(limit + 1));
            assertStatus(over.status, StatusCodes.BadTooManyOperations, `${name} with ${limit + 1} operations`);
        }
    });
});

test("Browse: max_references_per_node caps a request for all, MaxBrowseContinuationPoints per session is BadNoContinuationPoints", { skip, timeout: T_LONG }, async () => {
    // Server, ServerCapabilities, OperationLimits: each has more references than the cap.
    const nodes = ["i=2253", "i=2268", "i=11704"];
    assert.ok(L.max_browse_continuation_points === nodes.length - 1);
    const browse = (s, nodeIds) => transact(s, new ua.BrowseRequest({
        requestedMaxReferencesPerNode: 0, // "no limit" from the client: the server's cap applies
        nodesToBrowse: nodeIds.map((nodeId) => ({ nodeId, browseDirection: ua.BrowseDirection.Forward, includeSubtypes: true, resultMask: 63 })),
    }));
    await withSessions(2, async ([s, other]) => {
        const r = await browse(s, nodes);
        assertGood(r.status, "Browse");
        const res = r.response.results;
        for (let i = 0; i < nodes.length - 1; i++) {
            assertGood(res[i].statusCode, `Browse ${nodes[i]}`);
            assert.equal(res[i].references.length, L.max_references_per_node, `references of ${nodes[i]}`);
            assert.ok(res[i].continuationPoint && res[i].continuationPoint.length > 0, `no continuation point for ${nodes[i]}`);
        }
        assertStatus(res[nodes.length - 1].statusCode, StatusCodes.BadNoContinuationPoints, "continuation point beyond the limit");
        // Per session: another session has its own.
        const o = await browse(other, nodes.slice(0, 1));
        assertGood(o.response.results[0].statusCode, "another session");
        // Released points free their places.
        const rel = await transact(s, new ua.BrowseNextRequest({ releaseContinuationPoints: true, continuationPoints: [res[0].continuationPoint] }));
        assertGood(rel.status, "BrowseNext release");
        const again = await browse(s, nodes.slice(2));
        assertGood(again.response.results[0].statusCode, "after the release");
        assert.ok(again.response.results[0].continuationPoint.length > 0);
    });
});

test("Publish beyond max_publish_requests_per_session: the oldest queued request gets BadTooManyPublishRequests (Part 4 5.13.5)", { skip, timeout: T_LONG }, async () => {
    const n = L.max_publish_requests_per_session;
    await withSessions(1, async ([s]) => {
        // A publishing interval longer than the test: no keep-alive takes a request meanwhile.
        const sub = await subscribe(s, 600000);
        const publish = () => transact(s, new ua.PublishRequest({
            requestHeader: { timeoutHint: 60000 },
            subscriptionAcknowledgements: [],
        }));
        const pending = [];
        const settled = [];
        for (let i = 0; i <= n; i++) {
            const p = publish();
            pending.push(p);
            p.then((r) => settled.push([i, r.status]), () => settled.push([i, null]));
        }
        const first = await pending[0];
        assertStatus(first.status, StatusCodes.BadTooManyPublishRequests, "the oldest Publish request");
        assert.deepEqual(settled.map(([i]) => i), [0], "only the oldest request was answered");
        // The others stay queued until their subscription goes.
        await s.deleteSubscriptions({ subscriptionIds: [sub] });
        for (let i = 1; i <= n; i++) assertStatus((await pending[i]).status, StatusCodes.BadNoSubscription, `Publish ${i}`);
    });
});

test("revised publishing interval, queue sizes and sampling intervals: the configured bounds, MaxMonitoredItemsQueueSize, MinSupportedSampleRate", { skip, timeout: T_SHORT }, async () => {
    await withSessions(1, async ([s]) => {
        const interval = async (requested) => {
            const r = await transact(s, new ua.CreateSubscriptionRequest({
                requestedPublishingInterval: requested, requestedLifetimeCount: 30, requestedMaxKeepAliveCount: 10, publishingEnabled: true,
            }));
            assertGood(r.status, "CreateSubscription");
            await s.deleteSubscriptions({ subscriptionIds: [r.response.subscriptionId] });
            return r.response.revisedPublishingInterval;
        };
        assert.equal(await interval(1), L.min_publishing_interval_ms, "publishing interval below the minimum");
        assert.equal(await interval(1e9), L.max_publishing_interval_ms, "publishing interval above the maximum");
        const sub = await subscribe(s);
        const slow = await createItems(s, sub, [itemOn("i=2258", 9, { params: { samplingInterval: 1e9 } })]);
        assert.equal(slow.response.results[0].revisedSamplingInterval, L.max_sampling_interval_ms, "sampling interval above the maximum");
        await transact(s, new ua.DeleteMonitoredItemsRequest({ subscriptionId: sub, monitoredItemIds: [slow.response.results[0].monitoredItemId] }));
        const r = await createItems(s, sub, [
            itemOn("i=2258", 1, { params: { queueSize: 100000, samplingInterval: 1 } }),
            itemOn("i=2253", 2, {
                item: { attributeId: AttributeIds.EventNotifier },
                params: { queueSize: 100000, samplingInterval: 0, filter: ua.constructEventFilter(["Severity"]) },
            }),
        ]);
        const [data, event] = r.response.results;
        assertGood(data.statusCode, "data item");
        assertGood(event.statusCode, "event item");
        assert.equal(data.revisedQueueSize, L.max_monitored_item_queue_size, "data item queue size");
        assert.equal(event.revisedQueueSize, L.max_event_queue_size, "event item queue size");
        assert.equal(data.revisedSamplingInterval, L.min_sampling_interval_ms, "sampling interval");
    });
});

test("decoding limits: a String, ByteString or array longer than advertised is BadEncodingLimitsExceeded", { skip, timeout: T_LONG }, async () => {
    await withSessions(1, async ([s]) => {
        const ns = await demoNs(s);
        const write = (name, value) => transact(s, new ua.WriteRequest({
            nodesToWrite: [{ nodeId: `ns=${ns};s=Demo.${name}`, attributeId: AttributeIds.Value, value: { value } }],
        }));
        const cases = [
            ["Scalars.String", L.max_string_length, (n) => new Variant({ dataType: DataType.String, value: "x".repeat(n) })],
            ["Scalars.ByteString", L.max_bytestring_length, (n) => new Variant({ dataType: DataType.ByteString, value: Buffer.alloc(n, 7) })],
            ["Arrays.Double", L.max_array_length, (n) => new Variant({
                dataType: DataType.Double, arrayType: VariantArrayType.Array, value: new Float64Array(n),
            })],
        ];
        for (const [name, limit, make] of cases) {
            const at = await write(name, make(limit));
            assertGood(at.status, `${name} of ${limit} (the limit)`);
            assertGood(at.response.results[0], `${name} of ${limit} written`);
            const over = await write(name, make(limit + 1));
            assertStatus(over.status, StatusCodes.BadEncodingLimitsExceeded, `${name} of ${limit + 1}`);
        }
        // The channel and session survive a refused request.
        const dv = await s.read({ nodeId: "i=2258", attributeId: AttributeIds.Value });
        assertGood(dv.statusCode, "read after the refusals");
    });
});

test("a connection beyond max_channels gets ERR BadTcpServerTooBusy; a closed one frees its place", { skip, timeout: T_LONG }, async () => {
    const clients = [];
    try {
        for (let i = 0; i < L.max_channels; i++) clients.push(await eventually(`connection ${i + 1}`, () => connect()));
        // Part 6 7.1.5: the server answers with ERR Bad_TcpServerTooBusy and closes.
        await assert.rejects(connect(), /BadTcpServerTooBusy/, `connection ${L.max_channels + 1}`);
        await disconnect(clients.pop());
        clients.push(await eventually("a connection after one closed", () => connect()));
    } finally {
        for (const c of clients) await disconnect(c);
    }
});

test("a connection beyond max_pending_handshakes takes the place of the oldest silent one", { skip, timeout: T_LONG }, async () => {
    const url = new URL(ENDPOINT.replace(/^opc\.tcp:/, "http:"));
    const host = url.hostname, port = Number(url.port);
    const silent = [];
    try {
        // Connections that have sent nothing yet hold every handshake place.
        for (let i = 0; i < L.max_pending_handshakes; i++) silent.push(await openSocket(host, port, 2000));
        const oldest = new Promise((resolve) => {
            const chunks = [];
            silent[0].on("data", (d) => chunks.push(d));
            silent[0].on("error", () => {});
            silent[0].on("close", () => resolve(parse(Buffer.concat(chunks))));
        });
        // A new client is not locked out by them: it is acknowledged ...
        const r = await exchange(host, port, [hello({ endpointUrl: ENDPOINT })], { waitMs: 1000 });
        assert.ok(r.messages.length >= 1 && r.messages[0].type === "ACKF", `answer: ${JSON.stringify(r.messages)}`);
        // ... and the oldest silent connection is closed with ERR Bad_TcpServerTooBusy.
        const evicted = await oldest;
        assert.equal(evicted.length, 1, `evicted: ${JSON.stringify(evicted)}`);
        assert.equal(evicted[0].type, "ERRF");
        assertStatus(evicted[0].error, StatusCodes.BadTcpServerTooBusy, "ERR of the evicted connection");
    } finally {
        for (const sock of silent) sock.destroy();
    }
    const client = await eventually("a connection after the silent ones closed", () => connect());
    await disconnect(client);
});
