#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""uaplex-bench's client patterns against uaplex-bench-nullpeer (ctest bench_patterns):
per-request sends are one send() per request where coalesced sends are fewer, TCP_NODELAY
off still completes requests, the open loop stays near its rate, sends each request at its
time and reports its backlog, and --server-pid reads the server's context switches (and
its system calls when perf counting works here, else says why not). Bounds are generous:
the machine may be loaded."""

import json
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(bench, url, pid, *extra):
    cmd = [bench, "--url", url, "--scenario", "read", "--warmup", "0.3", "--duration", "1",
           "--json", "--quiet", "--server-pid", str(pid)] + list(extra)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=60)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr}{r.stdout}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main():
    bench, nullpeer = sys.argv[1], sys.argv[2]
    port = free_port()
    peer = subprocess.Popen([nullpeer, "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"opc.tcp://127.0.0.1:{port}"
    failures = []

    def check(what, ok):
        print(("ok   " if ok else "FAIL ") + what)
        if not ok:
            failures.append(what)

    try:
        deadline = time.monotonic() + 10
        while subprocess.run([bench, "--url", url, "--scenario", "probe", "--quiet",
                              "--connect-timeout", "1"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL).returncode != 0:
            if time.monotonic() > deadline:
                raise AssertionError("the null peer does not open sessions")
            time.sleep(0.1)

        per = run(bench, url, peer.pid, "-c", "2", "--in-flight", "20", "--send-mode",
                  "per-request")
        co = run(bench, url, peer.pid, "-c", "2", "-m", "20")
        done = per["requests"] + per["errors"]
        # sends in the window are requests issued in it: they differ from the responses in it
        # by at most what is in flight at its edges (2 x 20)
        check(f"per-request: {per['client_sends']} sends for {done} requests",
              done > 0 and abs(per["client_sends"] - done) <= 2 * 20)
        check(f"per-request: send_mode {per['send_mode']}", per["send_mode"] == "per-request")
        check(f"coalesce: {co['client_sends_per_req']} sends per request below 1",
              co["requests"] > 0 and co["client_sends_per_req"] < 0.9)

        nagle = run(bench, url, peer.pid, "-c", "1", "-m", "10", "--send-mode", "per-request",
                    "--nodelay", "off")
        check(f"nodelay off: {nagle['requests']} requests, nodelay {nagle['nodelay']}",
              nagle["requests"] > 0 and nagle["nodelay"] is False)

        ol = run(bench, url, peer.pid, "-c", "4", "-m", "8", "--rate", "2000")
        check(f"open loop at 2000/s: {ol['req_per_s']}/s", 1000 <= ol["req_per_s"] <= 2200)
        # at 50/s a request is due every 20 ms: it must leave at its time (one tick, at
        # most 1 ms, later), not one interval late, and its latency counts from that time
        sparse = run(bench, url, peer.pid, "-c", "1", "-m", "4", "--rate", "50")
        check(f"open loop at 50/s: p50 {sparse['p50_us']} us from the scheduled time",
              sparse["requests"] > 0 and sparse["p50_us"] < 10000)
        slow = run(bench, url, peer.pid, "-c", "1", "-m", "1", "--rate", "1000000")
        check(f"open loop above capacity: backlog {slow['max_backlog']} reported, "
              f"{slow['requests']} requests", slow["max_backlog"] > 0 and slow["requests"] > 0)

        check(f"context switches read: {co['server_ctx_switches']}",
              co["server_ctx_switches"] >= 0 and co["server_ctx_switches_per_req"] >= 0)
        check(f"syscalls off by default: {co['syscall_counter']}",
              co["syscall_counter"] == "off" and co["server_syscalls"] == -1)
        sc = run(bench, url, peer.pid, "-c", "1", "-m", "10", "--syscalls", "on")
        if sc["syscall_counter"] == "raw_syscalls:sys_enter":
            check(f"syscalls counted: {sc['server_syscalls_per_req']} per request",
                  sc["server_syscalls"] > 0 and 0 < sc["server_syscalls_per_req"] < 100)
        else:
            check(f"syscalls not counted, says why: {sc['syscall_counter']}",
                  sc["syscall_counter"].startswith("unavailable: ") and
                  sc["server_syscalls"] == -1)
    finally:
        peer.terminate()
        peer.wait(timeout=10)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
