// SPDX-License-Identifier: Apache-2.0
// Secure channels and certificates: every SecurityPolicy x MessageSecurityMode opens a
// session and reads; an untrusted client certificate is refused and lands in rejected/,
// moving it to trusted/ lets the next connect in without a restart; an expired (but trusted)
// certificate is refused. Needs the server's PKI directory (run_suite.sh exports it).
"use strict";

const { test } = require("node:test");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const crypto = require("node:crypto");
const { execFileSync } = require("node:child_process");
const { ua, assert, ENDPOINT, T_LONG, makeClient, disconnect } = require("../lib/ua");
const { OPCUACertificateManager } = require("node-opcua-certificate-manager");
const { MessageSecurityMode, SecurityPolicy, AttributeIds } = ua;

const PKI = process.env.UAPLEX_PKI_DIR;
const BIN = process.env.UAPLEX_BIN;
const skip = PKI ? false : "UAPLEX_PKI_DIR not set (run through run_suite.sh)";
const WORK = fs.mkdtempSync(path.join(process.env.UAPLEX_WORK || os.tmpdir(), "client-"));
const CLIENT_URI = "urn:uaplex:interop:client";

const POLICIES = ["Basic256Sha256", "Aes128_Sha256_RsaOaep", "Aes256_Sha256_RsaPss"];
const MODES = ["Sign", "SignAndEncrypt"];

let certificateManager;
async function manager() {
    if (!certificateManager) {
        certificateManager = new OPCUACertificateManager({
            rootFolder: path.join(WORK, "client-pki"),
            automaticallyAcceptUnknownCertificate: true,
        });
        await certificateManager.initialize();
    }
    return certificateManager;
}

function derOf(pemFile) {
    return new crypto.X509Certificate(fs.readFileSync(pemFile)).raw;
}

function thumbprint(der) {
    return crypto.createHash("sha1").update(der).digest("hex");
}

function filesIn(dir) {
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
}

// One connection attempt with policy/mode; resolves to the Read result or throws.
async function readOnce(policy, mode, extra = {}) {
    const client = makeClient({
        securityPolicy: SecurityPolicy[policy],
        securityMode: MessageSecurityMode[mode],
        applicationUri: CLIENT_URI,
        clientCertificateManager: await manager(),
        ...extra,
    });
    try {
        await client.connect(ENDPOINT);
        const session = await client.createSession();
        try {
            return await session.read({ nodeId: "ns=0;i=2258", attributeId: AttributeIds.Value });
        } finally {
            await session.close();
        }
    } finally {
        await disconnect(client);
    }
}

test("GetEndpoints: one endpoint per policy and mode, with the server certificate", { skip, timeout: T_LONG }, async () => {
    const client = makeClient();
    try {
        await client.connect(ENDPOINT);
        const endpoints = await client.getEndpoints();
        const key = (e) => `${e.securityPolicyUri}|${e.securityMode}`;
        const seen = new Map(endpoints.map((e) => [key(e), e]));
        assert.ok(seen.has(`${SecurityPolicy.None}|${MessageSecurityMode.None}`), "no None endpoint");
        for (const p of POLICIES)
            for (const m of MODES) {
                const e = seen.get(`${SecurityPolicy[p]}|${MessageSecurityMode[m]}`);
                assert.ok(e, `no endpoint ${p} ${m}`);
                assert.ok(e.serverCertificate && e.serverCertificate.length > 0, `${p} ${m}: no serverCertificate`);
                const own = fs.readFileSync(path.join(PKI, "own/certs/uaplex.der"));
                assert.ok(Buffer.compare(e.serverCertificate, own) === 0, "serverCertificate is not own/certs/uaplex.der");
                assert.ok(e.userIdentityTokens.length >= 1, `${p} ${m}: no user token policy`);
            }
        // Encryption ranks above signing, any security above None.
        const level = (p, m) => seen.get(`${SecurityPolicy[p]}|${MessageSecurityMode[m]}`).securityLevel;
        for (const p of POLICIES) {
            assert.ok(level(p, "SignAndEncrypt") > level(p, "Sign"), `${p}: SignAndEncrypt not above Sign`);
            assert.ok(level(p, "Sign") > level("None", "None"), `${p}: Sign not above None`);
        }
    } finally {
        await disconnect(client);
    }
});

test("an untrusted client certificate is refused, rejected/, then trusted without restart", { skip, timeout: T_LONG }, async () => {
    const cm = await manager();
    // The client certificate exists once the manager made it (first secured connect).
    await assert.rejects(readOnce("Basic256Sha256", "SignAndEncrypt"), "an untrusted client got in");
    const certFile = path.join(cm.rootDir, "own/certs/client_certificate.pem");
    const thumb = thumbprint(derOf(certFile));
    const rejected = path.join(PKI, "rejected/certs", `${thumb}.der`);
    assert.ok(fs.existsSync(rejected), `not in rejected/certs: ${filesIn(path.join(PKI, "rejected/certs"))}`);
    fs.renameSync(rejected, path.join(PKI, "trusted/certs", `${thumb}.der`));
    const dv = await readOnce("Basic256Sha256", "SignAndEncrypt");
    assert.equal(dv.statusCode.value, 0, `Read ${dv.statusCode.toString()}`);
});

for (const p of POLICIES)
    for (const m of MODES)
        test(`${p} ${m}: session and Read`, { skip, timeout: T_LONG }, async () => {
            const dv = await readOnce(p, m);
            assert.equal(dv.statusCode.value, 0, `Read ${dv.statusCode.toString()}`);
            assert.ok(dv.value.value instanceof Date, "CurrentTime is not a DateTime");
        });

test("an expired client certificate is refused even when trusted", { skip: skip || (!BIN && "UAPLEX_BIN not set"), timeout: T_LONG }, async () => {
    const dir = path.join(WORK, "expired");
    execFileSync(BIN, ["pki", "--pki", path.join(WORK, "unused-pki"), "create-cert", "--uri", CLIENT_URI,
        "--cn", "expired-client", "--days", "-1", "--out-dir", dir]);
    const der = fs.readFileSync(path.join(dir, "cert.der"));
    fs.copyFileSync(path.join(dir, "cert.der"), path.join(PKI, "trusted/certs", `${thumbprint(der)}.der`));
    await assert.rejects(
        readOnce("Basic256Sha256", "SignAndEncrypt", {
            certificateFile: path.join(dir, "cert.pem"),
            privateKeyFile: path.join(dir, "key.pem"),
            clientCertificateManager: undefined,
        }),
        "a client with an expired certificate got in",
    );
    assert.ok(!fs.existsSync(path.join(PKI, "rejected/certs", `${thumbprint(der)}.der`)),
        "an expired trusted certificate is not 'untrusted'");
});

test("token renewal on a SignAndEncrypt channel keeps the session working", { skip, timeout: T_LONG }, async () => {
    // The server revises the lifetime up to min_token_lifetime_ms (10 s); the client renews at
    // 75 % of it, with new nonces and keys, and goes on with the new token.
    const client = makeClient({
        securityPolicy: SecurityPolicy.Basic256Sha256,
        securityMode: MessageSecurityMode.SignAndEncrypt,
        applicationUri: CLIENT_URI,
        clientCertificateManager: await manager(),
        defaultSecureTokenLifetime: 10000,
    });
    try {
        await client.connect(ENDPOINT);
        const session = await client.createSession();
        let renewals = 0;
        client.on("security_token_renewed", () => renewals++);
        // Read once a second until the client has renewed (at ~7.5 s), then once more.
        for (let i = 0; i < 15 && renewals === 0; i++) {
            await new Promise((r) => setTimeout(r, 1000));
            const dv = await session.read({ nodeId: "ns=0;i=2258", attributeId: AttributeIds.Value });
            assert.equal(dv.statusCode.value, 0, `Read ${dv.statusCode.toString()}`);
        }
        assert.ok(renewals > 0, "the client never renewed its token");
        const dv = await session.read({ nodeId: "ns=0;i=2258", attributeId: AttributeIds.Value });
        assert.equal(dv.statusCode.value, 0, `Read after renewal ${dv.statusCode.toString()}`);
        await session.close();
    } finally {
        await disconnect(client);
    }
});

test("SecurityPolicy None still works next to the secured endpoints", { skip, timeout: T_LONG }, async () => {
    const dv = await readOnce("None", "None");
    assert.equal(dv.statusCode.value, 0);
});
