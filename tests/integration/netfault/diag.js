// SPDX-License-Identifier: Apache-2.0
// The observer of netfault.js, run in the server's namespace (its link is never impaired):
// one session that reads ServerDiagnosticsSummary for every line on stdin and answers one
// JSON line, with the server's open descriptors (/proc/PID/fd).
"use strict";
const fs = require("fs");
const path = require("path");
const readline = require("readline");
const ua = require(path.join(process.env.NF_CLIENT_DIR, "node_modules", "node-opcua-client"));

const IDS = { sessions: 2277, cumulatedSessions: 2278, sessionTimeouts: 2281, sessionAborts: 2282,
              subscriptions: 2285 };

async function main() {
    const client = ua.OPCUAClient.create({ endpointMustExist: false, keepSessionAlive: true,
        connectionStrategy: { maxRetry: 0 } });
    await client.connect(process.env.NF_ENDPOINT);
    const session = await client.createSession();
    const rl = readline.createInterface({ input: process.stdin });
    process.stdout.write(JSON.stringify({ ready: true }) + "\n");
    for await (const line of rl) {
        if (line.trim() === "quit") break;
        const keys = Object.keys(IDS);
        const dv = await session.read(keys.map((k) => ({ nodeId: `i=${IDS[k]}`, attributeId: ua.AttributeIds.Value })));
        const out = {};
        keys.forEach((k, i) => { out[k] = dv[i].value.value; });
        out.fds = fs.readdirSync(`/proc/${process.env.NF_SERVER_PID}/fd`).length;
        process.stdout.write(JSON.stringify(out) + "\n");
    }
    await session.close();
    await client.disconnect();
}
main().catch((e) => { process.stdout.write(JSON.stringify({ error: e.message }) + "\n"); process.exit(1); });
