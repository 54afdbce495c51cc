#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Memory after a burst of sessions: does the server's RSS come back once they are closed?

    python3 tools/bench/memory_churn.py [--build build/release] [--sessions 10000] [--items 10]
        [--rounds 1] [--after-timeout] [--port 4860] [--preload LIB] [--env K=V ...]
        [--max-ratio R] [--json]

Starts build/<type>/bin/uaplex on etc/uaplex.toml (loopback endpoint on --port, log level warn,
Anonymous may write, the scale limits of run_bench.py), warms it with one small round
(--warm-sessions), then per round runs `uaplex-bench --scenario subscribe` with --sessions
connections, each a session with one subscription of --items items and 2 Publish requests
queued, which closes every session (CloseSession, deleteSubscriptions) and its channel at the
end. VmRSS of the server is sampled: idle (ready), warm (after the warm-up round), the peak
during the round, 1 s and 5 s after the generator ended, and, with --after-timeout, once the
generator's session timeout (60 s) has passed. The server's own session count
(ServerDiagnosticsSummary.CurrentSessionCount, i=2277, read by a session of its own, which is
not counted) is given beside each figure after the round. One JSON line per round goes to
stdout with --json; the text report otherwise. --max-ratio R (make bench: 1.10) exits 1 when
a round's RSS 5 s after the close is above R times the warm figure.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

LIMITS = {"max_sessions": 11000, "max_channels": 11000, "max_pending_handshakes": 1100,
          "max_subscriptions": 11000, "max_channels_per_peer": 11000,
          "max_unactivated_sessions_per_peer": 11000}


def rss_kb(pid, key="VmRSS"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def write_config(out_dir, port):
    with open(os.path.join(ROOT, "etc", "uaplex.toml")) as f:
        text = f.read()
    text = re.sub(r'(?m)^endpoints\s*=.*$', f'endpoints = ["opc.tcp://127.0.0.1:{port}"]', text)
    text = re.sub(r'(?m)^level\s*=\s*"[a-z]+"', 'level = "warn"', text)
    text = re.sub(r'(?m)^listen\s*=.*$', 'listen = "127.0.0.1:0"', text)  # [admin]
    lines = "".join(f"{k} = {v}\n" for k, v in LIMITS.items())
    text = re.sub(r'(?m)^\[server\.limits\]\n', "[server.limits]\n" + lines, text)
    if not re.search(r'(?m)^\[access\]', text):
        text += '\n[access]\nanonymous_permissions = ["All"]\n'
    path = os.path.join(out_dir, "uaplex-memory.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


class Bench:
    def __init__(self, args):
        self.exe = os.path.join(args.build, "bin", "uaplex-bench")
        self.url = f"opc.tcp://127.0.0.1:{args.port}"

    def cmd(self, *extra):
        return [self.exe, "--url", self.url, "--json", *extra]

    def sessions(self):
        """The server's CurrentSessionCount less the reading session, or None."""
        r = subprocess.run(self.cmd("--scenario", "read", "-c", "1", "-m", "1", "--read-node",
                                    "0:i=2277", "--warmup", "0", "--duration", "0.1", "--quiet"),
                           capture_output=True, text=True, timeout=30)
        try:
            v = json.loads(r.stdout.strip().splitlines()[-1]).get("last_value", -1)
        except (ValueError, IndexError):
            return None
        return v - 1 if v > 0 else None

    def subscribe(self, n, items, pid):
        return subprocess.Popen(self.cmd(
            "--scenario", "subscribe", "-c", str(n), "-m", "2", "--items", str(items),
            "--change-ms", "0", "--sampling-ms", "100", "--publishing-ms", "1000",
            "--queue-size", "1", "--connect-window", "64", "--warmup", "1", "--duration", "1",
            "--connect-timeout", "120", "--server-pid", str(pid)),
            stdout=subprocess.PIPE, text=True)


def round_(bench, pid, n, items, after_timeout):
    r = {"sessions": n, "items": items}
    gen = bench.subscribe(n, items, pid)
    peak = 0
    while gen.poll() is None:
        peak = max(peak, rss_kb(pid) or 0)
        time.sleep(0.1)
    out = gen.stdout.read()
    try:
        g = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        g = {}
    r["generator_exit"] = gen.returncode
    r["close_refused"] = g.get("close_refused")
    r["setup_s"] = g.get("setup_s")
    r["peak_kb"] = max(peak, g.get("rss_window_kb", 0) or 0)
    end = time.monotonic()
    for label, at in (("1s", 1), ("5s", 5)):
        time.sleep(max(0.0, end + at - time.monotonic()))
        r[f"rss_{label}_kb"] = rss_kb(pid)
        r[f"sessions_{label}"] = bench.sessions()
    if after_timeout:
        time.sleep(max(0.0, end + 66 - time.monotonic()))
        r["rss_timeout_kb"] = rss_kb(pid)
        r["sessions_timeout"] = bench.sessions()
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--items", type=int, default=10)
    ap.add_argument("--warm-sessions", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--after-timeout", action="store_true",
                    help="also wait out the 60 s session timeout after each round")
    ap.add_argument("--port", type=int, default=4860)
    ap.add_argument("--preload", default="", help="LD_PRELOAD for the server (an allocator)")
    ap.add_argument("--env", action="append", default=[], help="K=V for the server")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--max-ratio", type=float, default=0.0,
                    help="exit 1 when a round's RSS 5 s after the close exceeds this x warm")
    args = ap.parse_args()
    over = []

    out_dir = tempfile.mkdtemp(prefix="uaplex-memory-")
    config = write_config(out_dir, args.port)
    env = dict(os.environ)
    if args.preload:
        env["LD_PRELOAD"] = args.preload
    for kv in args.env:
        k, _, v = kv.partition("=")
        env[k] = v
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    log = open(os.path.join(out_dir, "server.log"), "w")
    server = subprocess.Popen([os.path.join(args.build, "bin", "uaplex"), "--config", config],
                              stdout=log, stderr=subprocess.STDOUT, env=env)
    bench = Bench(args)
    try:
        deadline = time.monotonic() + 30
        while bench.sessions() is None:
            if time.monotonic() > deadline or server.poll() is not None:
                sys.exit(f"the server did not open a session (log: {log.name})")
            time.sleep(0.25)
        time.sleep(0.5)
        idle = rss_kb(server.pid)
        warm_round = round_(bench, server.pid, args.warm_sessions, args.items, False)
        warm = rss_kb(server.pid)
        head = {"idle_kb": idle, "warm_kb": warm, "warm_peak_kb": warm_round["peak_kb"],
                "preload": args.preload, "env": args.env}
        if not args.json:
            print(f"server idle {idle} kB, after {args.warm_sessions} warm-up sessions {warm} kB"
                  f" (peak {warm_round['peak_kb']} kB)")
        for i in range(args.rounds):
            r = round_(bench, server.pid, args.sessions, args.items, args.after_timeout)
            r.update(head, round=i + 1)
            r["ratio_5s"] = round(r["rss_5s_kb"] / warm, 3) if warm else None
            if args.max_ratio and (r["ratio_5s"] is None or r["ratio_5s"] > args.max_ratio):
                over.append(i + 1)
            if args.json:
                print(json.dumps(r), flush=True)
                continue
            line = (f"round {i + 1}: {args.sessions} sessions x {args.items} items: peak "
                    f"{r['peak_kb']} kB; after the close {r['rss_1s_kb']} kB at 1 s "
                    f"({r['sessions_1s']} sessions), {r['rss_5s_kb']} kB at 5 s "
                    f"({r['sessions_5s']} sessions)")
            if args.after_timeout:
                line += f", {r['rss_timeout_kb']} kB at 66 s ({r['sessions_timeout']} sessions)"
            line += (f"; {r['ratio_5s']:.2f} x warm; setup {r['setup_s']} s, CloseSession "
                     f"refused {r['close_refused']}, generator exit {r['generator_exit']}")
            print(line, flush=True)
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
    if over:
        sys.exit(f"rounds {over}: RSS 5 s after the close above {args.max_ratio} x warm")


if __name__ == "__main__":
    main()
