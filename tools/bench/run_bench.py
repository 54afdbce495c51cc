#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Side-by-side benchmark of uaplex and the node-opcua peer (python3 standard library only).

Every round starts each server afresh (the two alternate which goes first from one round to
the next), pinned to core 0, waits until it opens a session, runs every scenario against it
with uaplex-bench pinned to core 1, and stops it. Per scenario it collects:

  req/s                    good responses per second in the measured window (subscribe:
                           data-change notifications per second)
  server CPU us/req        utime+stime of the server process (/proc/<pid>/stat) over the
                           window, read by uaplex-bench at the window edges, per request
  allocs/req, bytes/req    uaplex only: LD_PRELOAD allocation counter (allocshim) sampled at
                           the window edges through SIGUSR1
  p50 / p99                request latency
  ctx sw/req               voluntary + involuntary context switches of all the server's
                           threads (/proc/<pid>/task/*/status) over the window, per request
  syscalls/req             the server's system calls per request (perf counting
                           raw_syscalls:sys_enter), from a separate shorter run of the same
                           pattern in the first round: tracing costs the server CPU time, so
                           the other figures come from runs without it
  peak RSS                 VmHWM of the server after the scenario (the scenarios of a round
                           run in table order against one process, so it is the peak so
                           far); idle RSS is VmRSS once the server is ready

and prints one table of medians with min..max over the rounds and the uaplex/peer ratios.
The harness exits non-zero when the generator itself fails (or the peer cannot be measured);
a uaplex that does not serve opc.tcp yet is reported as "not available" and skipped.
"""

import argparse
import json
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name, uaplex-bench arguments, what the bar of issue 5 says about it
SCENARIOS = [
    ("read 10x100", ["--scenario", "read", "-c", "10", "-m", "100"]),
    # --spin: the generator busy-polls, so that its own wake-up is not in the lone latency
    ("read 1x1", ["--scenario", "read", "-c", "1", "-m", "1", "--spin"]),
    ("write 10x100", ["--scenario", "write", "-c", "10", "-m", "100"]),
    ("read100 10x10", ["--scenario", "read100", "-c", "10", "-m", "10"]),
    ("browse 10x10", ["--scenario", "browse", "-c", "10", "-m", "10"]),
    ("subscribe 10x100", ["--scenario", "subscribe", "-c", "10", "-m", "3", "--items", "100"]),
    # Client patterns (tools/bench/README.md): how real clients send, not how fast the
    # generator can. per-send: one send() per request, as a client that writes each request
    # when it issues it; lone: one session, one request at a time, the generator sleeping
    # in epoll like a real client; 100x1: many request-response clients; nagle: per-request
    # sends with TCP_NODELAY off; open loop: requests on a fixed schedule, latency from the
    # scheduled time, at most 100 outstanding per connection.
    ("read 10x100 per-send", ["--scenario", "read", "-c", "10", "-m", "100",
                              "--send-mode", "per-request"]),
    ("read 1x1 lone", ["--scenario", "read", "-c", "1", "-m", "1"]),
    # 16 set up at once: uaplex refuses more than 32 unactivated sessions per peer address
    ("read 100x1", ["--scenario", "read", "-c", "100", "-m", "1", "--connect-window", "16"]),
    ("read 10x100 nagle", ["--scenario", "read", "-c", "10", "-m", "100",
                           "--send-mode", "per-request", "--nodelay", "off"]),
    ("read open-loop 50k/s", ["--scenario", "read", "-c", "10", "-m", "100", "--rate", "50000",
                              "--send-mode", "per-request"]),
]

UAPLEX_PORT = 4850
PEER_PORT = 4851
NULL_PORT = 4852
LABELS = {"uaplex": "uaplex", "peer": "node-opcua", "null": "null peer"}


class HarnessError(Exception):
    pass


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def proc_status(pid, key):
    """A kB figure (VmRSS, VmHWM) from /proc/<pid>/status, or None."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def uaplex_config(build, out_dir, given):
    """The bench configuration: the embedded default with a loopback endpoint and quiet logs."""
    if given:
        return given
    with open(os.path.join(ROOT, "etc", "uaplex.toml")) as f:
        text = f.read()
    text = re.sub(r'(?m)^endpoints\s*=.*$', f'endpoints = ["opc.tcp://127.0.0.1:{UAPLEX_PORT}"]',
                  text)
    text = re.sub(r'(?m)^level\s*=\s*"[a-z]+"', 'level = "warn"', text)
    text = re.sub(r'(?m)^listen\s*=.*$', 'listen = "127.0.0.1:0"', text)  # [admin]
    # The write and subscribe scenarios write as Anonymous, which the default refuses
    # outside namespace 0 (docs/configuration.md, anonymous_permissions).
    if not re.search(r'(?m)^\[access\]', text):
        text += '\n[access]\nanonymous_permissions = ["All"]\n'
    # {exe_dir} keeps plugin_dirs pointing at the build tree wherever this file lives
    path = os.path.join(out_dir, "uaplex-bench.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


class Server:
    def __init__(self, kind, args):
        self.kind = kind  # "uaplex", "peer" or "null"
        self.args = args
        self.proc = None
        self.url = None
        self.shim_out = None
        self.idle_rss_kb = None
        self.log_path = None

    def start(self):
        a = self.args
        env = dict(os.environ)
        logf = tempfile.NamedTemporaryFile(prefix=f"uaplex-bench-{self.kind}-", suffix=".log",
                                           delete=False, dir=a.out_dir)
        self.log_path = logf.name
        if self.kind == "uaplex":
            exe = os.path.join(a.build, "bin", "uaplex")
            if not os.path.exists(exe):
                logf.close()
                return f"{exe} not built"
            cmd = ["taskset", "-c", a.server_core, exe, "--config", a.uaplex_config]
            shim = os.path.join(a.build, "lib", "libuaplex_allocshim.so")
            if os.path.exists(shim) and not a.no_allocshim:
                fd, self.shim_out = tempfile.mkstemp(prefix="allocshim-", dir=a.out_dir)
                os.close(fd)
                env["LD_PRELOAD"] = shim
                env["UAPLEX_ALLOCSHIM_OUT"] = self.shim_out
            self.url = f"opc.tcp://127.0.0.1:{UAPLEX_PORT}"
        elif self.kind == "null":
            cmd = ["taskset", "-c", a.server_core, os.path.join(a.build, "bin",
                   "uaplex-bench-nullpeer"), "--port", str(NULL_PORT)]
            self.url = f"opc.tcp://127.0.0.1:{NULL_PORT}"
        else:
            script = os.path.join(ROOT, "tools", "bench", "peers", "node-opcua-server.js")
            cmd = ["taskset", "-c", a.server_core, "node", script, "--port", str(PEER_PORT)]
            cmd += getattr(self, "peer_args", [])
            self.url = f"opc.tcp://127.0.0.1:{PEER_PORT}"
        self.proc = subprocess.Popen(cmd, stdout=logf, stderr=subprocess.STDOUT, env=env,
                                     cwd=ROOT, start_new_session=True)
        logf.close()
        # ready = a session can be opened (the probe scenario), not merely a listening port
        deadline = time.monotonic() + a.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return f"exited with status {self.proc.returncode} (log: {self.log_path})"
            r = subprocess.run([a.generator, "--url", self.url, "--scenario", "probe",
                                "--connect-timeout", "2", "--hard-timeout", "10", "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if r.returncode == 0:
                time.sleep(0.5)
                self.idle_rss_kb = proc_status(self.proc.pid, "VmRSS")
                return None
            if r.returncode not in (2, 4):
                raise HarnessError(f"uaplex-bench --scenario probe failed with {r.returncode}")
            time.sleep(0.25)
        return f"did not open a session within {a.start_timeout:.0f} s (log: {self.log_path})"

    def shim_counters(self):
        """(allocs, bytes) between the last two SIGUSR1 reports, or None."""
        if not self.shim_out:
            return None
        deadline = time.monotonic() + 2
        while True:
            with open(self.shim_out) as f:
                lines = [l for l in f.read().splitlines() if l.startswith("allocshim ")]
            if len(lines) >= 2 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        if len(lines) < 2:
            return None

        def fields(line):
            return dict(kv.split("=") for kv in line.split()[1:])

        a, b = fields(lines[-2]), fields(lines[-1])
        return int(b["allocs"]) - int(a["allocs"]), int(b["bytes"]) - int(a["bytes"])

    def stop(self):
        if self.proc is None:
            return None
        peak = proc_status(self.proc.pid, "VmHWM")
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for p in (self.shim_out, self.log_path):
            if p and os.path.exists(p) and not self.args.keep_logs:
                os.unlink(p)
        return peak


def run_scenario(args, server, scenario_args, warmup=None, duration=None, timeout=None):
    """One generator run against a running server. Raises HarnessError when the generator
    itself fails."""
    warmup = args.warmup if warmup is None else warmup
    duration = args.duration if duration is None else duration
    res = {"server": server.kind, "idle_rss_kb": server.idle_rss_kb}
    if server.proc.poll() is not None:
        res["failed"] = f"server exited with status {server.proc.returncode}"
        return res
    cmd = ["taskset", "-c", args.generator_core, args.generator, "--url", server.url,
           "--warmup", str(warmup), "--duration", str(duration), "--json",
           "--quiet", "--server-pid", str(server.proc.pid)] + scenario_args
    if server.shim_out:
        cmd.append("--signal-server")
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=timeout or warmup + duration + 60)
    line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    try:
        out = json.loads(line)
    except ValueError:
        raise HarnessError(f"uaplex-bench exited {r.returncode} without a report: "
                           f"{' '.join(cmd)}\n{r.stderr}")
    if r.returncode == 1 or r.returncode < 0:
        raise HarnessError(f"uaplex-bench failed ({r.returncode}): {r.stderr}")
    res["gen"] = out
    if r.returncode == 3:
        res["unsupported"] = out["failure"]
    elif r.returncode != 0:
        res["failed"] = out["failure"] or f"exit {r.returncode}"
    else:
        counters = server.shim_counters()
        done = out["notifications"] if "subscribe" in scenario_args else (
            out["requests"] + out["errors"])
        if counters and done > 0:
            res["allocs_per_req"] = counters[0] / done
            res["bytes_per_req"] = counters[1] / done
    res["peak_rss_kb"] = proc_status(server.proc.pid, "VmHWM")
    return res


def count_syscalls(args, server, sargs, r):
    """The server's system calls per request of one pattern, from a shorter run with the
    tracepoint counter on (it slows the server, so the figures of r come from a run without
    it); sets r["syscalls_per_req"] (None: not counted) and r["syscall_counter"]."""
    s = run_scenario(args, server, sargs + ["--syscalls", "on"], warmup=1,
                     duration=min(2.0, args.duration))
    g = s.get("gen", {})
    per = g.get("server_syscalls_per_req", -1)
    r["syscalls_per_req"] = per if per is not None and per >= 0 and "failed" not in s else None
    r["syscall_counter"] = g.get("syscall_counter") or s.get("failed", "not run")


def run_round(args, kind, rnd, results):
    """Starts one server, runs every scenario against it, stops it. Returns None or the
    reason the server is not available."""
    server = Server(kind, args)
    try:
        why = server.start()
        if why is not None:
            return why
        for name, sargs in SCENARIOS:
            r = run_scenario(args, server, sargs)
            if args.syscalls == "all" or (args.syscalls == "first" and rnd == 0):
                if "gen" in r and not any(k in r for k in ("failed", "unsupported")):
                    count_syscalls(args, server, sargs, r)
            results.setdefault((name, kind), []).append(r)
            g = r.get("gen", {})
            if "unsupported" in r:
                log(f"round {rnd + 1} {name} {kind}: unsupported: {r['unsupported']}")
            elif "failed" in r:
                log(f"round {rnd + 1} {name} {kind}: FAILED: {r['failed']}")
                if kind == "peer":
                    raise HarnessError(f"{name} against the peer failed: {r['failed']}")
            else:
                rate = g["notifications_per_s"] if name.startswith("subscribe") else g["req_per_s"]
                allocs = r.get("allocs_per_req")
                sysc = r.get("syscalls_per_req")
                log(f"round {rnd + 1} {name} {kind}: {rate:.0f}/s, server "
                    f"{g['server_cpu_us_per_req']:.2f} us/req, p50 {g['p50_us']:.0f} us, "
                    f"p99 {g['p99_us']:.0f} us"
                    + (f", {allocs:.2f} allocs/req" if allocs is not None else "")
                    + (f", {g['server_ctx_switches_per_req']:.2f} ctx sw/req"
                       if g.get('server_ctx_switches_per_req', -1) >= 0 else "")
                    + (f", {sysc:.2f} syscalls/req" if sysc is not None else ""))
    finally:
        server.stop()
    return None


def med(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return statistics.median(values), min(values), max(values)


def fmt_range(m, digits=1, scale=1.0):
    if m is None:
        return "n/a"
    f = f"{{:.{digits}f}}"
    mid, lo, hi = (x * scale for x in m)
    return f"{f.format(mid)} ({f.format(lo)}..{f.format(hi)})"


def metrics(results):
    """Per-round figures of one (scenario, server) cell."""
    ok = [r for r in results if "gen" in r and not any(k in r for k in ("failed", "unsupported"))]
    sub = [r["gen"] for r in ok]
    is_sub = bool(sub) and sub[0]["scenario"] == "subscribe"
    return {
        "rate": med([g["notifications_per_s"] if is_sub else g["req_per_s"] for g in sub]),
        "cpu": med([g["server_cpu_us_per_req"] for g in sub if g["server_cpu_us_per_req"] >= 0]),
        "gen_cpu": med([g["generator_cpu_us_per_req"] for g in sub]),
        "allocs": med([r.get("allocs_per_req") for r in ok]),
        "bytes": med([r.get("bytes_per_req") for r in ok]),
        "p50": med([g["p50_us"] for g in sub]) if not is_sub else None,
        "p99": med([g["p99_us"] for g in sub]) if not is_sub else None,
        "peak": med([r.get("peak_rss_kb") for r in ok]),
        "idle": med([r.get("idle_rss_kb") for r in ok]),
        "errors": sum(g["errors"] for g in sub),
        "ctx": med([g.get("server_ctx_switches_per_req") for g in sub
                    if g.get("server_ctx_switches_per_req", -1) >= 0]),
        "sys": med([r.get("syscalls_per_req") for r in ok]),
        "sys_why": next((r["syscall_counter"] for r in ok if "syscall_counter" in r), None),
        "rounds": len(ok),
    }


def table(all_results, args):
    lines = []
    lines.append(f"{args.rounds} rounds per cell, medians (min..max); window {args.duration:g} s "
                 f"after {args.warmup:g} s warm-up; server on core {args.server_core}, "
                 f"generator on core {args.generator_core}.")
    lines.append("")
    lines.append("| scenario | server | req/s | server CPU us/req | allocs/req | bytes/req "
                 "| p50 us | p99 us | peak RSS MB | generator CPU us/req | ctx sw/req "
                 "| syscalls/req |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|---|---|")
    unavailable_sys = set()
    ratios = []
    idle = {}
    for name, sargs in SCENARIOS:
        cells = {}
        for kind in ("uaplex", "peer", "null"):
            rs = all_results.get((name, kind), [])
            label = LABELS[kind]
            if kind not in args.server_list:
                continue
            bad = [r for r in rs if any(k in r for k in ("unavailable", "unsupported", "failed"))]
            m = metrics(rs)
            cells[kind] = m
            if m["idle"] is not None:
                idle.setdefault(kind, []).append(m["idle"][0])
            if m["rounds"] == 0:
                why = "not run"
                if bad:
                    r = bad[0]
                    why = ("not available" if "unavailable" in r else
                           f"unsupported: {r['unsupported']}" if "unsupported" in r else
                           f"failed: {r['failed']}")
                lines.append(f"| {name} | {label} | {why} | | | | | | | | | |")
                continue
            unit = " notif/s" if name.startswith("subscribe") else ""
            err = f", {m['errors']} errors" if m["errors"] else ""
            lines.append(
                f"| {name} | {label} | {fmt_range(m['rate'], 0)}{unit}{err} | {fmt_range(m['cpu'], 2)} "
                f"| {fmt_range(m['allocs'], 2)} | {fmt_range(m['bytes'], 0)} "
                f"| {fmt_range(m['p50'], 0)} | {fmt_range(m['p99'], 0)} "
                f"| {fmt_range(m['peak'], 1, 1 / 1024)} "
                f"| {'spins (--spin)' if '--spin' in sargs else fmt_range(m['gen_cpu'], 2)} "
                f"| {fmt_range(m['ctx'], 2)} | {fmt_range(m['sys'], 2)} |")
            if m["sys"] is None and m["sys_why"] and m["sys_why"] != "off":
                unavailable_sys.add(m["sys_why"])
        u, p = cells.get("uaplex"), cells.get("peer")
        if u and p and u["rounds"] and p["rounds"]:
            def ratio(key):
                if u[key] is None or p[key] is None or p[key][0] == 0:
                    return "n/a"
                return f"{u[key][0] / p[key][0]:.2f}"
            ratios.append(f"| {name} | {ratio('rate')} | {ratio('cpu')} | {ratio('p50')} "
                          f"| {ratio('p99')} | {ratio('peak')} |")
    lines.append("")
    if args.syscalls != "off":
        lines.append("syscalls/req: perf counting raw_syscalls:sys_enter in a separate "
                     f"{min(2.0, args.duration):g} s run of each pattern ("
                     + ("every round" if args.syscalls == "all" else "first round only") + ")"
                     + (f"; not counted: {'; '.join(sorted(unavailable_sys))}"
                        if unavailable_sys else "") + ".")
        lines.append("")
    idle_txt = ", ".join(f"{LABELS[k]} "
                         f"{statistics.median(v) / 1024:.1f} MB" for k, v in idle.items())
    lines.append(f"Idle RSS once ready (median over all starts): {idle_txt or 'n/a'}.")
    lines.append("")
    if ratios:
        lines.append("uaplex / node-opcua (medians; req/s above 1 and the others below 1 "
                     "favour uaplex):")
        lines.append("")
        lines.append("| scenario | req/s | server CPU/req | p50 | p99 | peak RSS |")
        lines.append("|---|---|---|---|---|---|")
        lines.extend(ratios)
    else:
        lines.append("uaplex / node-opcua ratios: not available (uaplex was not measured).")
    return "\n".join(lines)


# Fairness: one greedy session keeps FAIR_GREEDY Reads of 100 values outstanding while one
# light session keeps 1 Read of one value; the light session's latency under each request queue, next to its latency
# on an otherwise idle server. Each session is its own admission owner under leases.
FAIR_GREEDY = 1000
FAIR_QUEUES = [
    ("fifo", 'request_queue = "fifo"\n'),
    ("fair", 'request_queue = "fair"\nadmission = "leases"\nbuffer_pool = "bounded"\n'),
]


def fairness_config(out_dir, name, slot_lines):
    """etc/uaplex.toml with another [slots] table and the pipeline plugins enabled."""
    with open(uaplex_config(None, out_dir, "")) as f:
        text = f.read()
    text = re.sub(r'(?m)^\[slots\]\n(?:[a-z_]+[ \t]*=[^\n]*\n)*', "[slots]\n" + slot_lines, text)
    for plugin in ("fifo", "fair", "leases", "bounded"):
        if f"[plugins.{plugin}]" not in text:
            text += f"\n[plugins.{plugin}]\n"
    path = os.path.join(out_dir, f"uaplex-fairness-{name}.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def fairness(args):
    """Rows of (label, p50 us, p99 us, light req/s, greedy req/s) for the light session."""
    rows = []
    base = args.uaplex_config
    cases = [("idle (fair)", FAIR_QUEUES[1], False)] + [(n, (n, q), True) for n, q in FAIR_QUEUES]
    try:
        for label, (qname, slots), loaded in cases:
            args.uaplex_config = fairness_config(args.out_dir, qname, slots)
            server = Server("uaplex", args)
            greedy = None
            try:
                why = server.start()
                if why is not None:
                    raise HarnessError(f"fairness {label}: uaplex not available: {why}")
                gen = ["taskset", "-c", args.generator_core, args.generator, "--url", server.url,
                       "-c", "1", "--json", "--quiet"]
                if loaded:
                    # Reads of 100 values: the workers, not the transport, are the bottleneck,
                    # so the greedy session's requests really queue in the server.
                    greedy = subprocess.Popen(
                        gen + ["--scenario", "read100", "-m", str(FAIR_GREEDY), "--warmup", "0",
                               "--duration", str(args.warmup + args.duration + 2)],
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    time.sleep(1.0)  # the greedy session is connected and saturating
                r = subprocess.run(gen + ["--scenario", "read", "-m", "1", "--warmup",
                                          str(args.warmup), "--duration", str(args.duration)],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   timeout=args.warmup + args.duration + 60)
                lines = r.stdout.strip().splitlines()
                if r.returncode != 0 or not lines:
                    raise HarnessError(f"fairness {label}: light session failed: {r.stderr}")
                light = json.loads(lines[-1])
                greedy_rate = None
                if greedy:
                    out, _ = greedy.communicate(timeout=60)
                    glines = out.strip().splitlines()
                    greedy_rate = json.loads(glines[-1])["req_per_s"] if glines else None
                rows.append((label, light["p50_us"], light["p99_us"], light["req_per_s"],
                             greedy_rate))
                log(f"fairness {label}: light p50 {light['p50_us']:.0f} us, "
                    f"p99 {light['p99_us']:.0f} us")
            finally:
                if greedy and greedy.poll() is None:
                    greedy.kill()
                    greedy.wait()
                server.stop()
    finally:
        args.uaplex_config = base
    return rows


def fairness_table(rows):
    out = [f"Light session (1 in flight) next to a greedy one ({FAIR_GREEDY} in flight), "
           "uaplex (greedy: Read of 100 values; light: Read of one value):", "",
           "| request queue | light p50 us | light p99 us | light req/s | greedy req/s |",
           "|---|---|---|---|---|"]
    for label, p50, p99, rate, grate in rows:
        g = f"{grate:.0f}" if grate is not None else "-"
        out.append(f"| {label} | {p50:.0f} | {p99:.0f} | {rate:.0f} | {g} |")
    return "\n".join(out)


# Subscriptions (part of `make bench`; --subscriptions off skips them). Each runs on a fresh
# server. Written values carry a counter, so the generator matches every notification to
# the Write that produced it: latency is write-to-notification.
#   sub 5x100: 5 sessions x 100 items (sampling 10 ms, publishing 100 ms, queue 10), all 100
#              scalars written every 10 ms
#   cycle N/20: one subscription of N items of which 20 change (20 scalars written every
#              10 ms; the other items on the 80 scalars nobody writes), sampling and
#              publishing 100 ms: server CPU per publishing cycle must not grow with N
SUB_COMMON = ["--scenario", "subscribe", "-m", "3"]
SUBSCRIPTIONS = [
    ("sub 5x100", ["-c", "5", "--items", "100", "--sampling-ms", "10", "--publishing-ms", "100",
                   "--queue-size", "10", "--change-ms", "10"], 2, 5),
    ("cycle 100/20", ["-c", "1", "--items", "100", "--hot-items", "20", "--change-nodes", "20",
                      "--change-ms", "10", "--sampling-ms", "100", "--publishing-ms", "100",
                      "--queue-size", "1"], 2, 10),
    ("cycle 10000/20", ["-c", "1", "--items", "10000", "--hot-items", "20", "--change-nodes",
                        "20", "--change-ms", "10", "--sampling-ms", "100", "--publishing-ms",
                        "100", "--queue-size", "1"], 2, 10),
]

# Scale (--scale on|only; on by default, --scale off skips them). One fresh server per scenario, every step bounded by
# --scale-timeout (the node-opcua peer may not get through).
#   items 1M: one session, 1,000,000 items (1,000 per CreateMonitoredItems, 100 scalars
#             round-robin), sampling and publishing 100 ms, nothing written: create time,
#             RSS per item, idle cores after the initial values are out, delete time and RSS
#   fan-out 100k: 10 sessions x 10,000 items (1,000 per scalar), 1,000 value writes/s (10
#             scalars per Write every 10 ms), sampling and publishing 100 ms, 20 Publish
#             requests outstanding per session
#   sessions 1000 / sessions 10000: N sessions, each a subscription of 10 items (publishing
#             1 s) and 2 Publish requests queued: time to open (256 handshakes in flight),
#             server CPU, RSS per session with the Publish requests queued. A server that
#             refuses the subscriptions beyond a server-wide limit (BadTooManySubscriptions)
#             is measured again with only the first 100 sessions subscribed.
SCALE = [
    ("items 1M", ["-c", "1", "--items", "1000000", "--change-ms", "0", "--sampling-ms", "100",
                  "--publishing-ms", "100", "--queue-size", "1", "--delete-items"], 20, 10),
    ("fan-out 100k", ["-c", "10", "-m", "20", "--items", "10000", "--change-ms", "10",
                      "--change-batch", "10", "--sampling-ms", "100", "--publishing-ms", "100",
                      "--queue-size", "1"], 5, 10),
    ("sessions 1000", ["-c", "1000", "-m", "2", "--items", "10", "--change-ms", "0",
                       "--sampling-ms", "100", "--publishing-ms", "1000", "--queue-size", "1"],
     1, 5),
    ("sessions 10000", ["-c", "10000", "-m", "2", "--items", "10", "--change-ms", "0",
                        "--sampling-ms", "100", "--publishing-ms", "1000", "--queue-size", "1"],
     2, 5),
]
# The limits a scale test needs raised (both servers): sessions, connections, handshakes in
# parallel, subscriptions, items (the 1M-item scenario is one session with one subscription;
# the defaults stop at 100,000 server-wide and 10,000 per subscription). Each connection is a
# descriptor: the harness raises its open-file limit to the hard limit, and the servers
# inherit it.
SCALE_LIMITS = {"max_sessions": 11000, "max_channels": 11000, "max_pending_handshakes": 1100,
                "max_subscriptions": 11000, "max_channels_per_peer": 11000,
                "max_monitored_items": 2000000, "max_monitored_items_per_session": 1000000,
                "max_monitored_items_per_subscription": 1000000}


def scale_config(out_dir):
    with open(uaplex_config(None, out_dir, "")) as f:
        text = f.read()
    lines = "".join(f"{k} = {v}\n" for k, v in SCALE_LIMITS.items())
    text = re.sub(r'(?m)^\[server\.limits\]\n', "[server.limits]\n" + lines, text)
    path = os.path.join(out_dir, "uaplex-scale.toml")
    with open(path, "w") as f:
        f.write(text)
    return path


def run_fresh(args, kind, name, sargs, warmup, duration, timeout, extra_peer=()):
    """One scenario on a freshly started server; the result dict (see run_scenario) plus the
    server's RSS after the generator closed its sessions."""
    server = Server(kind, args)
    server.peer_args = list(extra_peer)
    try:
        why = server.start()
        if why is not None:
            return {"server": kind, "failed": f"server not available: {why}"}
        try:
            r = run_scenario(args, server, SUB_COMMON + sargs, warmup, duration, timeout)
        except subprocess.TimeoutExpired:
            return {"server": kind, "failed": f"generator still running after {timeout:.0f} s"}
        time.sleep(1.0)
        r["rss_closed_kb"] = proc_status(server.proc.pid, "VmRSS")
        g = r.get("gen", {})
        log(f"{name} {kind}: " + ("FAILED: " + r["failed"] if "failed" in r else
            f"{g.get('notifications_per_s', 0):.0f} notif/s, server {g.get('server_cpu_s', 0):.2f} s"
            f" CPU, write->notif p50 {g.get('p50_us', 0) / 1000:.1f} ms p99 "
            f"{g.get('p99_us', 0) / 1000:.1f} ms, setup {g.get('setup_s', 0):.2f} s"))
        return r
    finally:
        server.stop()


def mb(kb):
    return "n/a" if kb is None or kb < 0 else f"{kb / 1024:.1f}"


def subscription_table(rows):
    out = ["Subscriptions (one fresh server per row; latency = write-to-notification):", "",
           "| scenario | server | notif/s | server CPU us/notif | server CPU per cycle ms "
           "| write->notif p50 ms | p99 ms | Writes (matched notif) |",
           "|---|---|---|---|---|---|---|---|"]
    for name, kind, r in rows:
        label = LABELS[kind]
        g = r.get("gen")
        if "failed" in r or "unsupported" in r or not g:
            out.append(f"| {name} | {label} | {r.get('failed') or r.get('unsupported')} "
                       "| | | | | |")
            continue
        cycles = g["window_s"] / 0.1  # every row publishes every 100 ms
        per_cycle = g["server_cpu_s"] * 1000 / cycles if g["server_cpu_s"] >= 0 else None
        out.append(f"| {name} | {label} | {g['notifications_per_s']:.0f} "
                   f"| {g['server_cpu_us_per_req']:.2f} "
                   f"| {'n/a' if per_cycle is None else f'{per_cycle:.2f}'} "
                   f"| {g['p50_us'] / 1000:.1f} | {g['p99_us'] / 1000:.1f} "
                   f"| {g['changes']} ({g['matched']}) |")
    return "\n".join(out)


def scale_table(rows):
    out = ["Scale (one fresh server per row; RSS = VmRSS of the server):", ""]
    for name, kind, r in rows:
        label = LABELS[kind]
        g = r.get("gen") or {}
        fail = r.get("failed") or r.get("unsupported")
        head = f"- **{name}, {label}**: "
        if not g:
            out.append(head + f"not measured: {fail}")
            continue
        items = g.get("items_created", 0)
        start, ready = g.get("rss_start_kb", -1), g.get("rss_ready_kb", -1)
        cores = g["server_cpu_s"] / g["window_s"] if g.get("window_s") and g["server_cpu_s"] >= 0 else None
        if fail:
            out.append(head + f"FAILED ({fail}) with {items} items created")
            continue
        parts = []
        if name.startswith("items"):
            per = (ready - start) * 1024 / items if items and ready > 0 and start > 0 else None
            parts.append(f"{items} items created in {g['create_s']:.2f} s wall "
                         f"(setup incl. session {g['setup_s']:.2f} s), server CPU "
                         f"{g['setup_server_cpu_s']:.2f} s; RSS {mb(start)} -> {mb(ready)} MB"
                         + (f" = {per:.0f} bytes per item" if per else ""))
            parts.append(f"idle: {cores:.3f} cores over {g['window_s']:.0f} s "
                         f"({g['notifications']} notifications in the window)")
            if g.get("delete_s", -1) >= 0:
                parts.append(f"deleted in {g['delete_s']:.2f} s (server CPU "
                             f"{g['delete_server_cpu_s']:.2f} s), RSS after {mb(g['rss_deleted_kb'])}"
                             f" MB (before the items, session and subscription open: "
                             f"{mb(g.get('rss_before_items_kb'))} MB), after the session closed "
                             f"{mb(r.get('rss_closed_kb'))} MB")
        elif name.startswith("fan-out"):
            parts.append(f"{g['notifications_per_s']:.0f} notifications/s at "
                         f"{cores:.3f} server cores, write->notification p50 "
                         f"{g['p50_us'] / 1000:.1f} ms, p99 {g['p99_us'] / 1000:.1f} ms, "
                         f"{g['changes']} Writes of 10 values in {g['window_s']:.0f} s; "
                         f"RSS {mb(start)} -> {mb(ready)} MB")
        else:
            n = int(name.split()[1])
            queued = g.get("rss_window_kb", -1)
            per = (ready - start) / n if ready > 0 and start > 0 else None
            perq = (queued - start) / n if queued > 0 and start > 0 else None
            parts.append(f"{n} sessions with {items // 10} subscriptions open in "
                         f"{g['setup_s']:.2f} s (server CPU {g['setup_server_cpu_s']:.2f} s, "
                         f"generator CPU {g.get('setup_generator_cpu_s', -1):.2f} s);"
                         f" RSS {mb(start)} -> {mb(ready)} MB"
                         + (f" = {per:.1f} kB per session" if per else "")
                         + (f", {mb(queued)} MB = {perq:.1f} kB per session with 2 Publish "
                            "queued each" if perq else "")
                         + f"; {cores:.3f} cores with them idle")
        out.append(head + "; ".join(parts))
    return "\n".join(out)


def run_section(args, scenarios, config):
    rows = []
    base = args.uaplex_config
    args.uaplex_config = config or base
    try:
        for name, sargs, warmup, duration in scenarios:
            for kind in args.server_list:
                if kind == "null":
                    continue
                timeout = warmup + duration + 2 * args.scale_timeout + 30
                extra = ["--connect-timeout", str(args.scale_timeout)]
                peer = ["--scale"] if config else []
                r = run_fresh(args, kind, name, sargs + extra, warmup, duration, timeout, peer)
                rows.append((name, kind, r))
                if name.startswith("sessions") and "BadTooManySubscriptions" in str(
                        r.get("unsupported", "")):
                    r = run_fresh(args, kind, name, sargs + extra + ["--subscribed-sessions",
                                  "100"], warmup, duration, timeout, peer)
                    rows.append((name + " (100 subscribed)", kind, r))
    finally:
        args.uaplex_config = base
    return rows


def main():
    global SCENARIOS, SCALE
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warmup", type=float, default=2.0)
    p.add_argument("--duration", type=float, default=5.0)
    p.add_argument("--scenarios", default="",
                   help="comma-separated scenario names (default: all): " +
                        ", ".join(n for n, _ in SCENARIOS))
    p.add_argument("--servers", default="uaplex,peer",
                   help="uaplex, peer (node-opcua) and/or null (uaplex-bench-nullpeer, the "
                        "generator's ceiling)")
    p.add_argument("--uaplex-config", default="", help="default: etc/uaplex.toml on 127.0.0.1:4850")
    p.add_argument("--port-base", type=int, default=4850,
                   help="uaplex listens on it, node-opcua on +1, the null peer on +2 (several "
                        "benchmarks on one machine need distinct bases)")
    p.add_argument("--server-core", default="0")
    p.add_argument("--generator-core", default="1")
    p.add_argument("--start-timeout", type=float, default=20.0)
    p.add_argument("--no-allocshim", action="store_true")
    p.add_argument("--keep-logs", action="store_true")
    p.add_argument("--out", default="", help="results JSON (default <build>/bench/results.json)")
    p.add_argument("--subscriptions", choices=["on", "off", "only"], default="on",
                   help="write-to-notification latency and CPU per publishing cycle")
    p.add_argument("--scale", choices=["off", "on", "only"], default="on",
                   help="the scale scenarios (1M items, fan-out, 1,000 and 10,000 sessions); "
                        "part of make bench, --scale off skips them")
    p.add_argument("--scale-scenarios", default="",
                   help="comma-separated scale scenario names (default: all): " +
                        ", ".join(n for n, *_ in SCALE))
    p.add_argument("--scale-timeout", type=float, default=60.0,
                   help="seconds a scale scenario may take to set up (and to delete)")
    p.add_argument("--syscalls", choices=["first", "all", "off"], default="first",
                   help="count the server's system calls per request in an extra short run of "
                        "each pattern with perf tracing: in the first round (default), in "
                        "every round, or not")
    p.add_argument("--fairness", choices=["on", "off", "only"], default="on",
                   help="the greedy/light fairness comparison of fifo and fair (uaplex only)")
    args = p.parse_args()
    global UAPLEX_PORT, PEER_PORT, NULL_PORT
    if args.scale_scenarios:
        wanted_scale = [s.strip() for s in args.scale_scenarios.split(",") if s.strip()]
        unknown = set(wanted_scale) - {n for n, *_ in SCALE}
        if unknown:
            print(f"run_bench: unknown scale scenario(s) {sorted(unknown)}", file=sys.stderr)
            return 1
        SCALE = [s for s in SCALE if s[0] in wanted_scale]
    # 10,000 sessions are 10,000 descriptors in the generator and in the server
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    UAPLEX_PORT, PEER_PORT, NULL_PORT = args.port_base, args.port_base + 1, args.port_base + 2

    args.build = os.path.abspath(args.build)
    args.out_dir = os.path.join(args.build, "bench")
    os.makedirs(args.out_dir, exist_ok=True)
    args.generator = os.path.join(args.build, "bin", "uaplex-bench")
    if not os.path.exists(args.generator):
        print(f"run_bench: {args.generator} is not built (make bench)", file=sys.stderr)
        return 1
    args.server_list = [s.strip() for s in args.servers.split(",") if s.strip()]
    if not args.server_list or set(args.server_list) - set(LABELS):
        print(f"run_bench: --servers takes {', '.join(LABELS)}", file=sys.stderr)
        return 1
    args.uaplex_config = uaplex_config(args.build, args.out_dir, args.uaplex_config)
    wanted = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    if wanted:
        unknown = set(wanted) - {n for n, _ in SCENARIOS}
        if unknown:
            print(f"run_bench: unknown scenario(s) {sorted(unknown)}", file=sys.stderr)
            return 1
        SCENARIOS = [s for s in SCENARIOS if s[0] in wanted]
    if "peer" in args.server_list and not os.path.isdir(
            os.path.join(ROOT, "tools", "bench", "peers", "node_modules")):
        print("run_bench: run `npm ci` in tools/bench/peers first (make bench does)",
              file=sys.stderr)
        return 1

    results = {}
    unavailable = {}
    started = time.monotonic()
    if args.subscriptions == "only" or args.scale == "only":
        sections = []
        if args.subscriptions != "off":
            sections.append(subscription_table(run_section(args, SUBSCRIPTIONS, None)))
        if args.scale != "off":
            sections.append(scale_table(run_section(args, SCALE, scale_config(args.out_dir))))
        text = "\n\n".join(sections)
        with open(os.path.join(args.out_dir, "subscriptions.md"), "w") as f:
            f.write(text + "\n")
        print(text)
        return 0
    if args.fairness == "only":
        try:
            text = fairness_table(fairness(args))
        except HarnessError as e:
            print(f"run_bench: FAILED: {e}", file=sys.stderr)
            return 2
        with open(os.path.join(args.out_dir, "fairness.md"), "w") as f:
            f.write(text + "\n")
        print(text)
        return 0
    try:
        for rnd in range(args.rounds):
            order = list(args.server_list) if rnd % 2 == 0 else list(reversed(args.server_list))
            for kind in order:
                why = unavailable.get(kind) or run_round(args, kind, rnd, results)
                if why is None:
                    continue
                if kind == "peer":
                    raise HarnessError(f"the peer did not start: {why}")
                if kind not in unavailable:
                    log(f"round {rnd + 1} {kind}: not available: {why}")
                unavailable[kind] = why
                for name, _ in SCENARIOS:
                    results.setdefault((name, kind), []).append(
                        {"server": kind, "unavailable": why})
    except HarnessError as e:
        print(f"run_bench: FAILED: {e}", file=sys.stderr)
        return 2
    out = args.out or os.path.join(args.out_dir, "results.json")
    with open(out, "w") as f:
        json.dump([{"scenario": n, "server": k, "runs": rs} for (n, k), rs in results.items()],
                  f, indent=1)
    text = table(results, args)
    if args.subscriptions == "on":
        text += "\n\n" + subscription_table(run_section(args, SUBSCRIPTIONS, None))
    if args.scale == "on":
        text += "\n\n" + scale_table(run_section(args, SCALE, scale_config(args.out_dir)))
    if args.fairness == "on" and "uaplex" not in unavailable and "uaplex" in args.server_list:
        try:
            text += "\n\n" + fairness_table(fairness(args))
        except HarnessError as e:
            print(f"run_bench: FAILED: {e}", file=sys.stderr)
            return 2
    with open(os.path.join(args.out_dir, "table.md"), "w") as f:
        f.write(text + "\n")
    print(text)
    print(f"\n(results: {out}; {time.monotonic() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
