#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Soak: one uaplex server under a mixed load for --duration seconds (python3 standard
library; the plot needs python3-matplotlib).

Load, all at once against one server on 127.0.0.1:--port:
  read 10x100, write 10x100   uaplex-bench open loop (--read-rate, --write-rate req/s), in
                              segments of --segment s, read and write in turn (each a fresh
                              set of sessions, so every segment gives one p50/p99)
  subscribe                   uaplex-bench subscribe: 2 sessions x 100 data items, a Write
                              every 50 ms (data changes), in segments too
  events                      tools/bench/soak_events.js: node-opcua's client with one event
                              item on Demo.Events (an event every 100 ms), for the whole run,
                              checking that notification sequence numbers have no gap
  session churn               uaplex-bench probe (connect, CreateSession, ActivateSession,
                              CloseSession, close) every --churn s
  hot swap                    every --swap s the request queue flips between fair and fifo
                              (the configuration file rewritten, SIGHUP)

Every 10 s it samples the server's RSS, open descriptors, threads and CPU (/proc) into
soak.csv and at the end plots soak.png (RSS, descriptors, threads, CPU, p99 over time).

It fails (exit 1) on any error response or failed generator/probe/event client, a swap the
server did not log, RSS or descriptor growth after the warm-up (a least-squares slope over
the samples after --warmup, extrapolated over that window, above --rss-growth-kb or
--fd-growth), or a p99 drift (median p99 of the last third of the segments after the
warm-up over the first third above --p99-drift, plus 2 ms of slack for a shared machine).
"""

import argparse
import csv
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def proc_sample(pid):
    """(rss_kb, fds, threads, cpu_ticks) of a live process, or None."""
    try:
        rss = threads = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        ticks = int(fields[11]) + int(fields[12])  # utime + stime
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds, threads, ticks
    except OSError:
        return None


def slope(xs, ys):
    """Least-squares slope of ys over xs (per unit of x)."""
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx


def write_config(path, port, plugins, queue, log_file):
    with open(os.path.join(ROOT, "etc", "uaplex.toml")) as f:
        text = f.read()
    text = re.sub(r'(?m)^endpoints\s*=.*$', f'endpoints = ["opc.tcp://127.0.0.1:{port}"]', text)
    text = re.sub(r'(?m)^sink\s*=.*$', f'sink = "file"\nfile = "{log_file}"', text)
    text = re.sub(r'(?m)^plugin_dirs\s*=.*$', f'plugin_dirs = ["{plugins}"]', text)
    text = re.sub(r'(?m)^listen\s*=.*$', 'listen = "127.0.0.1:0"', text)  # [admin]
    text = re.sub(r'(?m)^request_queue\s*=.*$', f'request_queue = "{queue}"', text)
    text = re.sub(r'(?m)^pki_dir\s*=.*$', f'pki_dir = "{os.path.dirname(path)}/pki"', text)
    text = re.sub(r'(?m)^update_interval_ms\s*=.*$', 'update_interval_ms = 100\nevent_interval_ms = 100',
                  text)
    text = re.sub(r'(?m)^security\s*=\s*\[[^\]]*\]\n', 'security = [{ policy = "None" }]\n', text)
    text += '\n[access]\nanonymous_permissions = ["All"]\n'
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


class Soak:
    def __init__(self, a):
        self.a = a
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.failures = []
        self.segments = {"read": [], "write": [], "subscribe": []}
        self.totals = {"requests": 0, "errors": 0, "notifications": 0, "probes": 0, "swaps": 0,
                       "events": 0}
        self.children = set()

    def fail(self, what):
        with self.lock:
            if len(self.failures) < 50:
                self.failures.append(what)
        log(f"FAIL: {what}")

    def spawn(self, cmd, **kw):
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        with self.lock:
            self.children.add(p)
        return p

    def reap(self, p):
        with self.lock:
            self.children.discard(p)

    def bench(self, plan):
        """Runs generator segments until the end, taking the (name, arguments) of plan in
        turn; one JSON report per segment."""
        a = self.a
        turn = 0
        while not self.stop.is_set():
            name, args = plan[turn % len(plan)]
            turn += 1
            # the last segment runs to the end, so that the last samples are under load
            left = self.end - time.monotonic()
            if left < 3:
                return
            seg = left if left < 1.5 * a.segment else a.segment
            cmd = [a.generator, "--url", self.url, "--warmup", "1", "--duration", f"{seg:.0f}",
                   "--json", "--quiet"] + args
            p = self.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                out, err = p.communicate(timeout=seg + 60)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
            self.reap(p)
            if self.stop.is_set() and p.returncode != 0:
                return
            try:
                r = json.loads(out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                self.fail(f"{name}: uaplex-bench exited {p.returncode} without a report: {err[-500:]}")
                continue
            if p.returncode != 0 or r.get("errors", 0) or r.get("connection_errors", 0):
                self.fail(f"{name}: exit {p.returncode}, {r.get('errors')} error(s) "
                          f"{r.get('errors_by_status')}, {r.get('connection_errors')} connection "
                          f"error(s): {r.get('failure')}")
            with self.lock:
                self.segments[name].append((time.monotonic() - self.start, r))
                self.totals["requests"] += r.get("requests", 0)
                self.totals["errors"] += r.get("errors", 0)
                self.totals["notifications"] += r.get("notifications", 0)

    def churn(self):
        a = self.a
        while not self.stop.wait(a.churn):
            r = subprocess.run([a.generator, "--url", self.url, "--scenario", "probe", "-c", "1",
                                "--connect-timeout", "5", "--hard-timeout", "10", "--quiet"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if self.stop.is_set():
                return
            with self.lock:
                self.totals["probes"] += 1
            if r.returncode != 0:
                self.fail(f"session churn: probe exited {r.returncode}: {r.stderr[-300:]}")

    def swap(self):
        a = self.a
        queue = "fair"
        while not self.stop.wait(a.swap):
            queue = "fifo" if queue == "fair" else "fair"
            write_config(self.config, a.port, self.plugins, queue, self.log_file)
            self.server.send_signal(signal.SIGHUP)
            with self.lock:
                self.totals["swaps"] += 1

    def count_swaps(self):
        try:
            with open(self.log_file, errors="replace") as f:
                return sum(1 for line in f if "request_queue slot: '" in line)
        except OSError:
            return 0

    def events_reader(self, p):
        for line in p.stdout:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            if "events" in r:
                with self.lock:
                    self.events = r

    def run(self):
        a = self.a
        os.makedirs(a.out_dir, exist_ok=True)
        work = tempfile.mkdtemp(prefix="uaplex-soak-")
        self.config = os.path.join(work, "soak.toml")
        self.log_file = os.path.join(work, "uaplex.log")
        self.plugins = os.path.abspath(os.path.join(a.build, "plugins"))
        self.url = f"opc.tcp://127.0.0.1:{a.port}"
        self.events = {}
        write_config(self.config, a.port, self.plugins, "fair", self.log_file)
        exe = os.path.join(a.build, "bin", "uaplex")
        self.server = subprocess.Popen([exe, "--config", self.config], stdout=subprocess.DEVNULL,
                                       stderr=open(os.path.join(work, "stderr.log"), "w"),
                                       start_new_session=True)
        log(f"server pid {self.server.pid}, {self.url}, work dir {work}")
        ok = False
        for _ in range(100):
            if self.server.poll() is not None:
                break
            if subprocess.run([a.generator, "--url", self.url, "--scenario", "probe",
                               "--connect-timeout", "2", "--hard-timeout", "5", "--quiet"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                ok = True
                break
            time.sleep(0.2)
        if not ok:
            self.fail(f"the server did not open a session (log: {self.log_file})")
            self.server.kill()
            return self.finish(work)
        time.sleep(1)
        self.baseline = proc_sample(self.server.pid)  # idle, before any load
        self.start = time.monotonic()
        self.end = self.start + a.duration
        ev = self.spawn(["node", os.path.join(ROOT, "tools", "bench", "soak_events.js"), self.url],
                        stdout=subprocess.PIPE, stderr=open(os.path.join(work, "events.log"), "w"),
                        text=True)
        threading.Thread(target=self.events_reader, args=(ev,), daemon=True).start()
        m = str(a.inflight)
        # Read and Write take turns: 10 x 100 in flight each, so that even a stalled server
        # holds at most 1000 of them (+ the subscriptions'), below MaxQueuedRequestCount (2000)
        rw = [("read", ["--scenario", "read", "-c", "10", "-m", m, "--rate", str(a.read_rate)]),
              ("write", ["--scenario", "write", "-c", "10", "-m", m, "--rate", str(a.write_rate),
                         "--seed", "2"])]
        sub = [("subscribe", ["--scenario", "subscribe", "-c", "2", "-m", "3", "--items", "100",
                              "--change-ms", "50"])]
        threads = [
            threading.Thread(target=self.bench, args=(rw,)),
            threading.Thread(target=self.bench, args=(sub,)),
            threading.Thread(target=self.churn),
            threading.Thread(target=self.swap),
        ]
        for t in threads:
            t.start()
        csv_path = os.path.join(a.out_dir, "soak.csv")
        self.samples = []
        with open(csv_path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", "rss_kb", "fds", "threads", "cpu_pct", "requests", "errors",
                        "notifications", "events", "probes", "swaps", "read_p99_us", "write_p99_us"])
            last = None
            next_t = self.start
            while True:
                s = proc_sample(self.server.pid)
                now = time.monotonic()
                if s is None or self.server.poll() is not None:
                    self.fail(f"the server exited ({self.server.poll()})")
                    break
                cpu = 0.0
                if last is not None:
                    cpu = 100.0 * (s[3] - last[1][3]) / CLK_TCK / (now - last[0])
                last = (now, s)
                with self.lock:
                    tot = dict(self.totals)
                    rp = self.segments["read"][-1][1]["p99_us"] if self.segments["read"] else ""
                    wp = self.segments["write"][-1][1]["p99_us"] if self.segments["write"] else ""
                    evs = self.events.get("events", 0)
                row = [f"{now - self.start:.1f}", s[0], s[1], s[2], f"{cpu:.1f}", tot["requests"],
                       tot["errors"], tot["notifications"], evs, tot["probes"], tot["swaps"], rp, wp]
                w.writerow(row)
                f.flush()
                self.samples.append((now - self.start, s[0], s[1], s[2], cpu))
                if len(self.samples) % 30 == 1:
                    log(f"t={now - self.start:.0f}s rss={s[0]} kB fds={s[1]} threads={s[2]} "
                        f"cpu={cpu:.0f}% requests={tot['requests']} errors={tot['errors']} "
                        f"events={evs} probes={tot['probes']} swaps={tot['swaps']}")
                if now >= self.end or self.stop.is_set():
                    break
                next_t += a.sample
                self.stop.wait(max(0.0, min(next_t, self.end) - time.monotonic()))
        self.stop.set()
        if getattr(self, "interrupted", False):
            self.fail("interrupted")
            with self.lock:
                for p in list(self.children):
                    if p is not ev and p.poll() is None:
                        p.kill()
        for t in threads:
            t.join(timeout=90)
        ev.send_signal(signal.SIGTERM)
        try:
            ev.wait(timeout=20)
        except subprocess.TimeoutExpired:
            ev.kill()
            ev.wait()
        time.sleep(0.5)
        with self.lock:
            e = dict(self.events)
        if ev.returncode != 0:
            self.fail(f"event client exited {ev.returncode}: {e} (log: {work}/events.log)")
        elif e.get("events", 0) == 0:
            self.fail("event client received no event")
        self.totals["events"] = e.get("events", 0)
        self.event_gaps = e.get("gaps", 0)
        # after the load: what the server holds once every client closed its sessions
        time.sleep(2)
        self.final = proc_sample(self.server.pid)
        self.server.send_signal(signal.SIGTERM)
        try:
            self.server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.server.kill()
            self.fail("the server did not stop within 15 s of SIGTERM")
        # the log is flushed once the server stopped: one line per swap it carried out
        if self.count_swaps() != self.totals["swaps"]:
            self.fail(f"hot swap: {self.totals['swaps']} SIGHUP(s), {self.count_swaps()} swap(s) "
                      f"in the server log ({self.log_file})")
        return self.finish(work, csv_path)

    def finish(self, work, csv_path=None):
        a = self.a
        with self.lock:
            for p in list(self.children):
                if p.poll() is None:
                    p.kill()
        summary = {"duration_s": a.duration, "failures": self.failures, **self.totals}
        if csv_path and self.samples:
            post = [s for s in self.samples if s[0] >= a.warmup] or self.samples
            xs = [s[0] for s in post]
            window = (xs[-1] - xs[0]) if len(xs) > 1 else 0.0
            rss_slope = slope(xs, [s[1] for s in post]) * 3600.0  # kB/h
            fd_slope = slope(xs, [s[2] for s in post]) * 3600.0
            summary.update({
                "samples": len(self.samples),
                "rss_kb_start": self.samples[0][1], "rss_kb_warm": post[0][1],
                "rss_kb_end": self.samples[-1][1],
                "fds_start": self.samples[0][2], "fds_end": self.samples[-1][2],
                "threads_start": self.samples[0][3], "threads_end": self.samples[-1][3],
                "rss_slope_kb_per_h": round(rss_slope, 1), "fd_slope_per_h": round(fd_slope, 2),
                "cpu_pct_mean": round(statistics.mean(s[4] for s in self.samples[1:]) if len(self.samples) > 1 else 0, 1),
                "fds_after_close": self.final[1] if getattr(self, "final", None) else None,
                "event_gaps": getattr(self, "event_gaps", None),
                "csv": csv_path,
            })
            rss_growth = rss_slope * window / 3600.0
            fd_growth = fd_slope * window / 3600.0
            if rss_growth > a.rss_growth_kb:
                self.fail(f"RSS grows after the warm-up: {rss_slope:.0f} kB/h fitted, "
                          f"{rss_growth:.0f} kB over {window:.0f} s > {a.rss_growth_kb} kB")
            if fd_growth > a.fd_growth:
                self.fail(f"descriptors grow after the warm-up: {fd_slope:.2f}/h fitted, "
                          f"{fd_growth:.1f} over {window:.0f} s > {a.fd_growth}")
            idle = self.baseline[1]
            summary["fds_idle_before"] = idle
            summary["rss_kb_idle_before"] = self.baseline[0]
            if summary["fds_after_close"] is not None and summary["fds_after_close"] > idle:
                self.fail(f"descriptors after every client closed: {summary['fds_after_close']}, "
                          f"{idle} before the load")
            for name in ("read", "write"):
                segs = [r["p99_us"] for t, r in self.segments[name] if t >= a.warmup]
                if len(segs) >= 3:
                    k = max(1, len(segs) // 3)
                    first, lastp = statistics.median(segs[:k]), statistics.median(segs[-k:])
                    summary[f"{name}_p99_us_first"] = first
                    summary[f"{name}_p99_us_last"] = lastp
                    if lastp > first * a.p99_drift + 2000:
                        self.fail(f"{name} p99 drifts: {first:.0f} us after the warm-up, "
                                  f"{lastp:.0f} us at the end (> x{a.p99_drift} + 2 ms)")
            png = os.path.join(a.out_dir, "soak.png")
            summary["png"] = plot(csv_path, png, a.warmup)
        summary["failures"] = self.failures
        summary["passed"] = not self.failures
        with open(os.path.join(a.out_dir, "soak.json"), "w") as f:
            json.dump(summary, f, indent=1)
        print(json.dumps(summary, indent=1))
        if self.failures and a.keep_logs:
            log(f"logs kept in {work}")
        elif not a.keep_logs:
            subprocess.run(["rm", "-rf", work])
        return 0 if not self.failures else 1


def plot(csv_path, png, warmup):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("python3-matplotlib is not installed: no plot")
        return None
    rows = list(csv.DictReader(open(csv_path)))
    t = [float(r["t_s"]) / 60 for r in rows]
    fig, ax = plt.subplots(5, 1, figsize=(10, 12), sharex=True)
    series = [("rss_kb", "RSS (kB)"), ("fds", "open descriptors"), ("threads", "threads"),
              ("cpu_pct", "server CPU (%)")]
    for i, (key, label) in enumerate(series):
        ax[i].plot(t, [float(r[key]) for r in rows])
        ax[i].set_ylabel(label)
    for key, label in (("read_p99_us", "read p99"), ("write_p99_us", "write p99")):
        pts = [(x, float(r[key]) / 1000) for x, r in zip(t, rows) if r[key]]
        if pts:
            ax[4].plot([p[0] for p in pts], [p[1] for p in pts], label=label)
    ax[4].set_ylabel("p99 (ms)")
    ax[4].legend()
    ax[4].set_xlabel("minutes")
    for a in ax:
        a.axvline(warmup / 60, color="grey", linestyle=":")
        a.grid(True, alpha=0.3)
    fig.suptitle("uaplex soak")
    fig.tight_layout()
    fig.savefig(png, dpi=80)
    return png


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--duration", type=float, default=3600)
    ap.add_argument("--warmup", type=float, default=None,
                    help="seconds excluded from the slopes (default: a sixth of the run, >= 60)")
    ap.add_argument("--port", type=int, default=4870)
    ap.add_argument("--out-dir", default=None, help="soak.csv, soak.png, soak.json (default BUILD/soak)")
    ap.add_argument("--sample", type=float, default=10)
    ap.add_argument("--segment", type=float, default=60)
    ap.add_argument("--churn", type=float, default=3)
    ap.add_argument("--swap", type=float, default=60)
    ap.add_argument("--read-rate", type=int, default=2000)
    ap.add_argument("--write-rate", type=int, default=1000)
    ap.add_argument("--inflight", type=int, default=100)
    ap.add_argument("--rss-growth-kb", type=float, default=4096)
    ap.add_argument("--fd-growth", type=float, default=3)
    ap.add_argument("--p99-drift", type=float, default=2.0)
    ap.add_argument("--keep-logs", action="store_true")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    a.generator = os.path.join(a.build, "bin", "uaplex-bench")
    if a.warmup is None:
        a.warmup = max(60.0, a.duration / 6)
    a.out_dir = os.path.abspath(a.out_dir or os.path.join(a.build, "soak"))
    soak = Soak(a)
    def interrupted(*_):
        soak.interrupted = True
        soak.stop.set()
    soak.interrupted = False
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    sys.exit(soak.run())


if __name__ == "__main__":
    main()
