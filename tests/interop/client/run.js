#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Runs the interop suite (node:test) against one opc.tcp endpoint.
//
//   node run.js [opc.tcp://127.0.0.1:4840] [--peer] [--only NAME] [--timeout SECONDS] [--verbose]
//
// The test files run one after another in child processes (node --test); each case has
// its own timeout and the whole run is killed after --timeout seconds (default 120).
// Exit status: 0 when every case passed, 1 otherwise, 2 on bad usage.
"use strict";

const { spawn } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");

function usage(msg) {
    const text =
        "usage: node run.js [opc.tcp://HOST:PORT] [--peer] [--only NAME] [--timeout SECONDS] [--verbose]\n" +
        "  --peer      relax the assertions where node-opcua's server differs from the spec\n" +
        "  --only      run only the test files whose name contains NAME (repeatable)\n" +
        "  --timeout   kill the whole run after SECONDS (default 120)\n" +
        "  --verbose   keep node-opcua's warnings\n";
    if (msg) {
        process.stderr.write(`run.js: ${msg}\n${text}`);
        process.exit(2);
    }
    process.stdout.write(text);
    process.exit(0);
}

let endpoint = "opc.tcp://127.0.0.1:4840";
let peer = false;
let verbose = false;
let timeoutS = 120;
const only = [];
const args = process.argv.slice(2);
for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--peer") peer = true;
    else if (a === "--verbose") verbose = true;
    else if (a === "--only") only.push(args[++i] || usage("--only needs a value"));
    else if (a === "--timeout") timeoutS = Number(args[++i]);
    else if (a === "-h" || a === "--help") usage();
    else if (a.startsWith("opc.tcp://")) endpoint = a;
    else usage(`unknown argument ${a}`);
}
if (!(timeoutS > 0)) usage("bad --timeout");

const testDir = path.join(__dirname, "test");
const files = fs
    .readdirSync(testDir)
    .filter((f) => f.endsWith(".test.js"))
    .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
    .sort()
    .map((f) => path.join(testDir, f));
if (files.length === 0) usage("no test file matches");

process.stdout.write(`interop suite against ${endpoint}${peer ? " (peer mode)" : ""}\n`);

const env = { ...process.env, UAPLEX_ENDPOINT: endpoint, UAPLEX_PEER: peer ? "1" : "0" };
if (verbose) env.UAPLEX_VERBOSE = "1";

const child = spawn(
    process.execPath,
    ["--test", "--test-concurrency=1", "--test-reporter=spec", ...files],
    { stdio: "inherit", env, detached: true },
);

const killer = setTimeout(() => {
    process.stderr.write(`run.js: suite exceeded ${timeoutS} s, killing it\n`);
    try {
        process.kill(-child.pid, "SIGKILL");
    } catch {
        /* already gone */
    }
}, timeoutS * 1000);

const forward = (sig) => {
    try {
        process.kill(-child.pid, sig);
    } catch {
        /* already gone */
    }
};
process.on("SIGINT", () => forward("SIGINT"));
process.on("SIGTERM", () => forward("SIGTERM"));

child.on("exit", (code, signal) => {
    clearTimeout(killer);
    process.exit(code === 0 && !signal ? 0 : 1);
});
