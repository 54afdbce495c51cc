// SPDX-License-Identifier: Apache-2.0
// Data-change subscriptions through node-opcua's ClientSubscription: the demo Counter (pushed
// by its node manager), a benchmark scalar changed by Write, keep-alive, delete.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_LONG, T_SHORT, sharedSession, assertGood, until } = require("../lib/ua");
const { AttributeIds, DataType, ClientSubscription, ClientMonitoredItem, TimestampsToReturn } = ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

function subscribe(keepAlive = 10) {
    return ClientSubscription.create(S.session, {
        requestedPublishingInterval: 100,
        requestedLifetimeCount: 100,
        requestedMaxKeepAliveCount: keepAlive,
        maxNotificationsPerPublish: 100,
        publishingEnabled: true,
        priority: 1,
    });
}

async function started(sub) {
    await new Promise((resolve, reject) => {
        sub.once("started", resolve);
        sub.once("internal_error", reject);
    });
    return sub;
}

async function monitor(sub, nodeId) {
    const values = [];
    const item = await sub.monitor(
        { nodeId, attributeId: AttributeIds.Value },
        { samplingInterval: 0, discardOldest: true, queueSize: 1 },
        TimestampsToReturn.Both,
    );
    item.on("changed", (dv) => values.push(dv));
    return { item, values };
}

test("the demo Counter reports its changes", { timeout: T_LONG }, async () => {
    const sub = await started(subscribe());
    assert.ok(sub.subscriptionId > 0);
    const { values } = await monitor(sub, `ns=${S.demo};s=Demo.Counter`);
    await until("three Counter changes", 5000, () => values.length >= 3);
    const n = values.map((dv) => Number(dv.value.value));
    for (let i = 1; i < n.length; i++) assert.ok(n[i] > n[i - 1], `Counter went ${n[i - 1]} -> ${n[i]}`);
    await sub.terminate();
});

test("a Write to a benchmark scalar arrives as a change; keep-alive when idle; delete", { timeout: T_LONG }, async () => {
    const sub = await started(subscribe(3));
    const nodeId = "ns=1;i=1001";
    const { values } = await monitor(sub, nodeId);
    await until("the initial value", 3000, () => values.length >= 1);

    const written = 4242 + (Date.now() % 1000);
    const st = await S.session.write({
        nodeId,
        attributeId: AttributeIds.Value,
        value: { value: { dataType: DataType.Int32, value: written } },
    });
    assertGood(st, "write");
    await until("the written value", 3000, () => values.some((dv) => dv.value.value === written));
    assertGood(values[values.length - 1].statusCode, "notified status");

    let keepAlives = 0;
    sub.on("keepalive", () => keepAlives++);
    await until("a keep-alive", 3000, () => keepAlives >= 1);

    await sub.terminate();
    // Deleted on the server: deleting it again names an unknown subscription.
    const resp = await S.session.deleteSubscriptions({ subscriptionIds: [sub.subscriptionId] });
    assert.equal(resp.results[0].name, "BadSubscriptionIdInvalid");
});
