#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Slow asynchronous node reads beside fast ones (docs/performance.md, "Slow node reads").

Starts uaplex with two workers, the benchmark node manager and test-asyncread, whose
ns=2;s=Delayed completes each read 20 ms later from the plugin's own thread (read_async).
Runs `read 10x100` over the benchmark nodes alone, then again while 10 more connections keep
100 Reads each of the slow node outstanding (1,000 pending operations), and prints the fast
reads' p99 both ways, their ratio (the bar: within 1.5x) and the slow reads per second (at
most 1,000 / 20 ms = 50,000/s when no worker is held: two workers blocking 20 ms each would
give 100/s).

Usage: async_bench.py [--build build/release] [--duration 5] [--delay-ms 20]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PORT = 4852


def config(build, delay_ms):
    return f"""[log]
level = "warn"
sink = "stderr"
[host]
plugin_dirs = ["{build}/plugins"]
[server]
endpoints = ["opc.tcp://127.0.0.1:{PORT}"]
request_threads = 2
[server.limits]
max_async_operations = 2000
[slots]
request_queue = "fifo"
[plugins.fifo]
[plugins.transport-tcp]
[plugins.benchmark]
[plugins.test-asyncread]
library = "{build}/tests/plugins/asyncread/uaplex-test-asyncread.so"
delay_ms = {delay_ms}
[access]
anonymous_permissions = ["All"]
"""


def loadgen(build, args, duration):
    return subprocess.Popen(
        [os.path.join(build, "bin", "uaplex-bench"), "--url", f"opc.tcp://127.0.0.1:{PORT}",
         "--json", "--quiet", "--warmup", "1", "--duration", str(duration)] + args,
        stdout=subprocess.PIPE, text=True)


def result(p):
    out, _ = p.communicate(timeout=120)
    if p.returncode != 0:
        sys.exit(f"uaplex-bench exited {p.returncode}: {out.strip()}")
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--duration", type=float, default=5)
    ap.add_argument("--delay-ms", type=int, default=20)
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    with tempfile.TemporaryDirectory(prefix="uaplex-async-bench-") as d:
        path = os.path.join(d, "uaplex.toml")
        with open(path, "w") as f:
            f.write(config(build, a.delay_ms))
        server = subprocess.Popen([os.path.join(build, "bin", "uaplex"), "--config", path],
                                  start_new_session=True)
        try:
            for _ in range(100):
                r = subprocess.run([os.path.join(build, "bin", "uaplex-bench"), "--url",
                                    f"opc.tcp://127.0.0.1:{PORT}", "--scenario", "probe"],
                                   capture_output=True)
                if r.returncode == 0:
                    break
                time.sleep(0.1)
            fast_args = ["--scenario", "read", "-c", "10", "-m", "100"]
            alone = result(loadgen(build, fast_args, a.duration))
            slow = loadgen(build, ["--scenario", "read", "--read-node", "2:Delayed", "-c", "10",
                                   "-m", "100", "--timestamps", "neither"], a.duration + 2)
            time.sleep(1)  # the slow reads are outstanding before the window opens
            beside = result(loadgen(build, fast_args, a.duration))
            slowr = result(slow)
        finally:
            server.terminate()
            server.wait(timeout=30)
    for name, r in (("fast alone", alone), ("fast beside slow", beside), ("slow", slowr)):
        if r.get("errors", 0):
            sys.exit(f"{name}: {r['errors']} failed responses")
    ratio = beside["p99_us"] / alone["p99_us"] if alone["p99_us"] else float("inf")
    print("| run | req/s | p50 us | p99 us |")
    print("|---|---|---|---|")
    print(f"| read 10x100 alone | {alone['req_per_s']:.0f} | {alone['p50_us']:.0f} | "
          f"{alone['p99_us']:.0f} |")
    print(f"| read 10x100 beside 1,000 pending {a.delay_ms} ms reads | {beside['req_per_s']:.0f} | "
          f"{beside['p50_us']:.0f} | {beside['p99_us']:.0f} |")
    print(f"| the {a.delay_ms} ms reads (10x100) | {slowr['req_per_s']:.0f} | {slowr['p50_us']:.0f} | "
          f"{slowr['p99_us']:.0f} |")
    print(f"\nfast p99 beside the slow reads / alone: {ratio:.2f} (bar: 1.5)")


if __name__ == "__main__":
    main()
