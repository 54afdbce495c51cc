// SPDX-License-Identifier: Apache-2.0
// Discovery without a session: connect with SecurityPolicy None, GetEndpoints, FindServers.
"use strict";

const { test } = require("node:test");
const { ua, assert, PORT, T_SHORT, connect, disconnect } = require("../lib/ua");
const { MessageSecurityMode, SecurityPolicy, UserTokenType } = ua;

const UATCP_PROFILE = "http://opcfoundation.org/UA-Profile/Transport/uatcp-uasc-uabinary";

function noneEndpoints(endpoints) {
    return endpoints.filter(
        (e) => e.securityPolicyUri === SecurityPolicy.None && e.securityMode === MessageSecurityMode.None,
    );
}

test("connect with SecurityPolicy None and GetEndpoints", { timeout: T_SHORT }, async () => {
    const client = await connect();
    try {
        const endpoints = await client.getEndpoints();
        assert.ok(endpoints.length >= 1, "GetEndpoints returned no endpoint");
        const none = noneEndpoints(endpoints);
        assert.ok(none.length >= 1, "no endpoint with SecurityPolicy None / MessageSecurityMode None");
        for (const e of none) {
            assert.match(e.endpointUrl, /^opc\.tcp:\/\//, `endpointUrl ${e.endpointUrl}`);
            const u = new URL(e.endpointUrl.replace(/^opc\.tcp:/, "http:"));
            assert.equal(Number(u.port || 4840), PORT, `endpointUrl ${e.endpointUrl} does not name port ${PORT}`);
            assert.equal(e.transportProfileUri, UATCP_PROFILE);
            const tokens = e.userIdentityTokens || [];
            assert.ok(
                tokens.some((t) => t.tokenType === UserTokenType.Anonymous),
                `no Anonymous user token policy in ${JSON.stringify(tokens.map((t) => t.tokenType))}`,
            );
            for (const t of tokens) assert.ok(t.policyId, "a user token policy without policyId");
            assert.ok(e.server && e.server.applicationUri, "endpoint without server.applicationUri");
            assert.ok(
                [ua.ApplicationType.Server, ua.ApplicationType.ClientAndServer].includes(e.server.applicationType),
                `server.applicationType ${e.server.applicationType}`,
            );
        }
        // All endpoints describe the same server.
        const uris = new Set(endpoints.map((e) => e.server.applicationUri));
        assert.equal(uris.size, 1, `endpoints name several servers: ${[...uris]}`);
    } finally {
        await disconnect(client);
    }
});

test("GetEndpoints with a profile filter that matches nothing returns no endpoint", { timeout: T_SHORT }, async () => {
    const client = await connect();
    try {
        const endpoints = await client.getEndpoints({ profileUris: ["http://example.invalid/no-such-profile"] });
        assert.equal(endpoints.length, 0);
        const tcp = await client.getEndpoints({ profileUris: [UATCP_PROFILE] });
        assert.ok(tcp.length >= 1, "the uatcp profile filter dropped every endpoint");
    } finally {
        await disconnect(client);
    }
});

test("FindServers returns the server's application description", { timeout: T_SHORT }, async () => {
    const client = await connect();
    try {
        const endpoints = await client.getEndpoints();
        const appUri = endpoints[0].server.applicationUri;
        const servers = await client.findServers();
        assert.ok(servers.length >= 1, "FindServers returned nothing");
        const me = servers.find((s) => s.applicationUri === appUri);
        assert.ok(me, `FindServers lacks ${appUri}: ${servers.map((s) => s.applicationUri)}`);
        assert.ok(me.applicationName && me.applicationName.text, "applicationName is empty");
        assert.ok(
            [ua.ApplicationType.Server, ua.ApplicationType.ClientAndServer].includes(me.applicationType),
            `applicationType ${me.applicationType}`,
        );
        assert.ok((me.discoveryUrls || []).length >= 1, "no discoveryUrls");
        assert.ok(me.discoveryUrls.every((u) => /^opc\.tcp:\/\//.test(u) || /^https?:\/\//.test(u)), `${me.discoveryUrls}`);

        // serverUris filter (Part 4 §5.4.2): only the listed servers come back.
        const filtered = await client.findServers({ serverUris: ["urn:example:not-this-server"] });
        assert.equal(filtered.length, 0, "a non-matching serverUris filter still returned servers");
        const mine = await client.findServers({ serverUris: [appUri] });
        assert.equal(mine.length, 1);
        assert.equal(mine[0].applicationUri, appUri);
    } finally {
        await disconnect(client);
    }
});
