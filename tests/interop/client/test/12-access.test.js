// SPDX-License-Identifier: Apache-2.0
// User identities and access control against two extra servers that run_suite.sh starts:
// UAPLEX_ACCESS_ENDPOINT (a users file; the demo namespace readable by Anonymous, writable by
// Operator; an X509 user certificate mapped, see 13-identity-matrix) and
// UAPLEX_NOANON_ENDPOINT (anonymous switched off). On the None channel the UserName token
// policy names Basic256Sha256, so node-opcua encrypts the password with the server certificate.
"use strict";

const { test } = require("node:test");
const { ua, assert, PEER, T_SHORT, makeClient, assertGood, assertStatus, DEMO_URI } = require("../lib/ua");
const { AttributeIds, DataType, StatusCodes, UserTokenType } = ua;

const ACCESS = process.env.UAPLEX_ACCESS_ENDPOINT;
const NOANON = process.env.UAPLEX_NOANON_ENDPOINT;
const skip = PEER || !ACCESS || !NOANON ? "needs run_suite.sh's access servers" : false;

async function withSession(endpoint, identity, fn) {
    const client = makeClient();
    await client.connect(endpoint);
    let session;
    try {
        session = await client.createSession(identity);
        return await fn(session);
    } finally {
        if (session) await session.close().catch(() => {});
        await client.disconnect().catch(() => {});
    }
}

async function int32Node(session) {
    const dv = await session.read({ nodeId: "i=2255", attributeId: AttributeIds.Value });
    const demo = dv.value.value.indexOf(DEMO_URI);
    assert.ok(demo > 1, "demo namespace");
    return `ns=${demo};s=Demo.Scalars.Int32`;
}

const write = (session, nodeId, value) =>
    session.write({ nodeId, attributeId: AttributeIds.Value, value: { value: { dataType: DataType.Int32, value } } });

const operator = { type: UserTokenType.UserName, userName: "operator", password: "op-secret" };

// The message of the error createSession fails with (it names the status).
async function refusal(endpoint, identity, prepare) {
    const client = makeClient();
    await client.connect(endpoint);
    try {
        if (prepare) prepare(client);
        let message = null;
        await client.createSession(identity).then(
            (s) => s.close(),
            (err) => { message = String(err && err.message); },
        );
        assert.ok(message !== null, "createSession must fail");
        return message;
    } finally {
        await client.disconnect().catch(() => {});
    }
}

test("GetEndpoints lists the Anonymous, UserName and Certificate token policies", { skip, timeout: T_SHORT }, async () => {
    const client = makeClient();
    await client.connect(ACCESS);
    try {
        const eps = await client.getEndpoints();
        assert.ok(eps.length >= 1);
        const tokens = eps[0].userIdentityTokens.map((t) => [t.policyId, t.tokenType]);
        assert.deepEqual(tokens, [["anonymous", UserTokenType.Anonymous], ["username", UserTokenType.UserName],
            ["certificate", UserTokenType.Certificate]]);
    } finally {
        await client.disconnect();
    }
});

test("anonymous reads, its write is BadUserAccessDenied, UserAccessLevel is CurrentRead", { skip, timeout: T_SHORT }, async () => {
    await withSession(ACCESS, undefined, async (s) => {
        const nodeId = await int32Node(s);
        assertGood((await s.read({ nodeId })).statusCode, "anonymous read");
        assertStatus(await write(s, nodeId, 11), StatusCodes.BadUserAccessDenied, "anonymous write");
        const [level, userLevel] = await s.read([
            { nodeId, attributeId: AttributeIds.AccessLevel },
            { nodeId, attributeId: AttributeIds.UserAccessLevel },
        ]);
        assert.equal(level.value.value, 3);
        assert.equal(userLevel.value.value, 1);
    });
});

test("UserName with the right password may write", { skip, timeout: T_SHORT }, async () => {
    await withSession(ACCESS, operator, async (s) => {
        const nodeId = await int32Node(s);
        assertGood(await write(s, nodeId, 31337), "operator write");
        const dv = await s.read({ nodeId });
        assert.equal(dv.value.value, 31337);
        const userLevel = await s.read({ nodeId, attributeId: AttributeIds.UserAccessLevel });
        assert.equal(userLevel.value.value, 3);
    });
});

test("a wrong password is refused with BadUserAccessDenied", { skip, timeout: T_SHORT }, async () => {
    const msg = await refusal(ACCESS, { ...operator, password: "op-secreT" });
    assert.match(msg, /BadUserAccessDenied/);
});

test("with anonymous switched off an anonymous token is BadIdentityTokenRejected", { skip, timeout: T_SHORT }, async () => {
    // node-opcua will not send an anonymous token the endpoint does not offer: pretend it
    // does, so that the server's own refusal is what is tested.
    const msg = await refusal(NOANON, undefined, (client) => {
        for (const e of client._serverEndpoints || [])
            e.userIdentityTokens = [...(e.userIdentityTokens || []),
                new ua.UserTokenPolicy({ policyId: "anonymous", tokenType: UserTokenType.Anonymous })];
    });
    assert.match(msg, /BadIdentityTokenRejected/);
    // UserName still gets in.
    await withSession(NOANON, operator, async (s) => {
        assertGood((await s.read({ nodeId: "i=2259" })).statusCode, "read ServerState");
    });
});
