// SPDX-License-Identifier: Apache-2.0
// Writes of attributes other than Value: the demo AnalogItem's WriteMask opens DisplayName and
// Description; a written DisplayName is what Read, Browse and a subscription return; an
// attribute whose WriteMask bit is clear is BadNotWritable.
"use strict";

const { test, before, after } = require("node:test");
const { ua, assert, T_LONG, T_SHORT, sharedSession, assertGood, assertStatus, until } = require("../lib/ua");
const { AttributeIds, DataType, StatusCodes, ClientSubscription, TimestampsToReturn } = ua;

const S = sharedSession();
before(S.open, { timeout: T_SHORT });
after(S.close, { timeout: T_SHORT });

const DISPLAY_NAME_BIT = 1 << 6, DESCRIPTION_BIT = 1 << 5;

function text(locale, t) {
    return { value: { dataType: DataType.LocalizedText, value: new ua.LocalizedText({ locale, text: t }) } };
}

test("AnalogItem: its DisplayName is written, then read, browsed and reported back", { timeout: T_LONG }, async () => {
    const s = S.session;
    const analog = `ns=${S.demo};s=Demo.AnalogItem`;
    const masks = await s.read([
        { nodeId: analog, attributeId: AttributeIds.WriteMask },
        { nodeId: analog, attributeId: AttributeIds.UserWriteMask },
    ]);
    masks.forEach((dv) => assertGood(dv.statusCode, "read WriteMask"));
    assert.equal(masks[0].value.value, DISPLAY_NAME_BIT | DESCRIPTION_BIT);
    assert.equal(masks[1].value.value, DISPLAY_NAME_BIT | DESCRIPTION_BIT, "Anonymous has All here");

    const sub = await ClientSubscription.create(s, {
        requestedPublishingInterval: 100, requestedLifetimeCount: 100, requestedMaxKeepAliveCount: 10,
        maxNotificationsPerPublish: 100, publishingEnabled: true, priority: 1,
    });
    await new Promise((resolve, reject) => { sub.once("started", resolve); sub.once("internal_error", reject); });
    const seen = [];
    const item = await sub.monitor({ nodeId: analog, attributeId: AttributeIds.DisplayName },
        { samplingInterval: 100, discardOldest: true, queueSize: 1 }, TimestampsToReturn.Neither);
    item.on("changed", (dv) => seen.push(dv.value.value && dv.value.value.text));
    await until("the first DisplayName", 3000, () => seen.includes("AnalogItem"));

    try {
        assertGood(await s.write({ nodeId: analog, attributeId: AttributeIds.DisplayName, value: text("de", "Temperatur") }),
            "write DisplayName");
        const back = await s.read({ nodeId: analog, attributeId: AttributeIds.DisplayName });
        assertGood(back.statusCode, "read DisplayName");
        assert.equal(back.value.value.text, "Temperatur");
        assert.equal(back.value.value.locale, "de");
        const br = await s.browse({ nodeId: `ns=${S.demo};s=Demo`, referenceTypeId: "i=35", browseDirection: ua.BrowseDirection.Forward,
            includeSubtypes: true, nodeClassMask: 0, resultMask: 63 });
        const ref = br.references.find((r) => r.nodeId.toString() === analog);
        assert.ok(ref, "AnalogItem not browsed");
        assert.equal(ref.displayName.text, "Temperatur");
        await until("the written DisplayName in the subscription", 5000, () => seen.includes("Temperatur"));

        assertGood(await s.write({ nodeId: analog, attributeId: AttributeIds.Description, value: text("en", "outside air") }),
            "write Description");
        const d = await s.read({ nodeId: analog, attributeId: AttributeIds.Description });
        assert.equal(d.value.value.text, "outside air");
        // A String is not a LocalizedText.
        assertStatus(await s.write({ nodeId: analog, attributeId: AttributeIds.DisplayName,
            value: { value: { dataType: DataType.String, value: "plain" } } }), StatusCodes.BadTypeMismatch, "String DisplayName");
    } finally {
        await s.write({ nodeId: analog, attributeId: AttributeIds.DisplayName, value: text(null, "AnalogItem") });
        await sub.terminate();
    }
});

test("a write of an attribute whose WriteMask bit is clear is BadNotWritable", { timeout: T_SHORT }, async () => {
    const s = S.session;
    const int32 = `ns=${S.demo};s=Demo.Scalars.Int32`;
    const mask = await s.read({ nodeId: int32, attributeId: AttributeIds.WriteMask });
    assertGood(mask.statusCode, "read WriteMask");
    assert.equal(mask.value.value, 0);
    const r = await s.write([
        { nodeId: int32, attributeId: AttributeIds.DisplayName, value: text("", "renamed") },
        { nodeId: `ns=${S.demo};s=Demo.AnalogItem`, attributeId: AttributeIds.BrowseName,
            value: { value: { dataType: DataType.QualifiedName, value: new ua.QualifiedName({ namespaceIndex: S.demo, name: "x" }) } } },
        { nodeId: "i=85", attributeId: AttributeIds.DisplayName, value: text("", "Things") },
    ]);
    assertStatus(r[0], StatusCodes.BadNotWritable, "DisplayName of Int32");
    assertStatus(r[1], StatusCodes.BadNotWritable, "BrowseName of AnalogItem");
    assertStatus(r[2], StatusCodes.BadNotWritable, "DisplayName of Objects");
    const dn = await s.read({ nodeId: int32, attributeId: AttributeIds.DisplayName });
    assert.equal(dn.value.value.text, "Int32");
});
