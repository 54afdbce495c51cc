// SPDX-License-Identifier: Apache-2.0
// A node its node manager pushes (ABI 1.9): the demo's Demo.Pushed is served by a read
// callback, and once an item watches it the kernel calls the demo's monitor, after which each
// change comes through value_changed (Demo.Pushed.Monitored shows the demo was asked).
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_LONG, T_SHORT, sharedSession, assertGood, until } = require("../lib/ua");
const { AttributeIds, ClientSubscription, TimestampsToReturn } = ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

// `until` for a condition that needs a request.
async function untilRead(what, ms, fn) {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (await fn()) return;
        await new Promise((r) => setTimeout(r, 20));
    }
    assert.fail(`timed out waiting for ${what}`);
}

async function monitored() {
    const dv = await S.session.read({
        nodeId: `ns=${S.demo};s=Demo.Pushed.Monitored`,
        attributeId: AttributeIds.Value,
    });
    assertGood(dv.statusCode, "read Monitored");
    return dv.value.value === true;
}

test("a pushed plugin node: monitor on the first item, every change, monitor off after the last", { timeout: T_LONG }, async () => {
    assert.equal(await monitored(), false);
    const sub = ClientSubscription.create(S.session, {
        requestedPublishingInterval: 100,
        requestedLifetimeCount: 100,
        requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100,
        publishingEnabled: true,
        priority: 1,
    });
    await new Promise((resolve, reject) => {
        sub.once("started", resolve);
        sub.once("internal_error", reject);
    });
    const values = [];
    const item = await sub.monitor(
        { nodeId: `ns=${S.demo};s=Demo.Pushed`, attributeId: AttributeIds.Value },
        { samplingInterval: 0, discardOldest: true, queueSize: 10 },
        TimestampsToReturn.Both,
    );
    item.on("changed", (dv) => values.push(dv));
    await untilRead("the demo asked to push", 3000, monitored);
    // Pushed every 100 ms, each one delivered: consecutive counts once pushing started.
    const from = values.length;
    await until("ten pushed changes", 5000, () => values.length >= from + 10);
    const n = values.slice(from).map((dv) => Number(dv.value.value));
    for (let i = 1; i < n.length; i++) assert.equal(n[i], n[i - 1] + 1, `Pushed went ${n[i - 1]} -> ${n[i]}`);
    for (const dv of values) assertGood(dv.statusCode, "notified status");
    await sub.terminate();
    await untilRead("the demo told to stop", 3000, async () => !(await monitored()));
});
