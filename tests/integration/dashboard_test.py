#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Grafana dashboard (etc/grafana/uaplex-dashboard.json) against the running server: every
metric a panel queries is one the server serves (scraped from the admin listener of the
shipped configuration, with each request queue swapped in once by `uaplex ctl`) and is
described in docs/; the JSON imports (datasource input, unique ids, a query per panel).

usage: dashboard_test.py UAPLEX PLUGIN_DIR SOURCE_DIR
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_port():
    import random
    for _ in range(200):
        port = random.randrange(20000, 28000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port in 20000-27999")


def families(text):
    return {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}


def queried(expr):
    """Metric names and __name__ regexes of one PromQL expression."""
    regexes = re.findall(r'__name__\s*=~\s*"([^"]+)"', expr)
    stripped = re.sub(r'\{[^}]*\}', "", expr)
    names = set(re.findall(r'\buaplex_[a-z0-9_]+', stripped))
    return names, regexes


def family_of(name, served):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and name[: -len(suffix)] in served:
            return name[: -len(suffix)]
    return name


def main():
    exe, plugin_dir, src = sys.argv[1:4]
    with open(os.path.join(src, "etc", "grafana", "uaplex-dashboard.json")) as f:
        dash = json.load(f)

    # The JSON as Grafana imports it.
    check(any(i.get("name") == "DS_PROMETHEUS" and i.get("pluginId") == "prometheus"
              for i in dash.get("__inputs", [])), "a Prometheus datasource input")
    panels = [p for p in dash["panels"] if p["type"] != "row"]
    ids = [p["id"] for p in dash["panels"]]
    check(len(ids) == len(set(ids)), "panel ids are unique")
    check(len(panels) >= 15, "%d panels" % len(panels))
    exprs = []
    for p in panels:
        t = p.get("targets", [])
        check(len(t) > 0 and all(x.get("expr") for x in t), "panel '%s' has queries" % p["title"])
        check(p.get("datasource", {}).get("uid") == "${DS_PROMETHEUS}",
              "panel '%s' uses the datasource input" % p["title"])
        check(bool(p.get("description")), "panel '%s' says what it shows" % p["title"])
        for x in t:
            e = x["expr"]
            check(e.count("(") == e.count(")") and e.count("{") == e.count("}"),
                  "balanced: " + e)
            exprs.append(e)

    with tempfile.TemporaryDirectory() as d:
        tcp, admin = free_port(), free_port()
        with open(os.path.join(src, "etc", "uaplex.toml")) as f:
            cfg = f.read()
        cfg = cfg.replace('plugin_dirs = ["{exe_dir}/../plugins"]', 'plugin_dirs = ["%s"]' % plugin_dir)
        cfg = cfg.replace('endpoints = ["opc.tcp://0.0.0.0:4840"]',
                          'endpoints = ["opc.tcp://127.0.0.1:%d"]' % tcp)
        cfg = cfg.replace('listen = "127.0.0.1:4841"', 'listen = "127.0.0.1:%d"' % admin)
        cfg = re.sub(r'(?m)^pki_dir = .*$', 'pki_dir = "%s/pki"' % d, cfg)
        path = os.path.join(d, "uaplex.toml")
        with open(path, "w") as f:
            f.write(cfg)
        log = open(os.path.join(d, "server.log"), "w+")
        proc = subprocess.Popen([exe, "--config", path], stdout=log, stderr=subprocess.STDOUT)
        served = set()
        try:
            # The admin listener answers from the start; the server's metrics once /ready is 200.
            deadline = time.time() + 20
            while True:
                try:
                    with urllib.request.urlopen("http://127.0.0.1:%d/ready" % admin, timeout=5) as r:
                        if r.status == 200:
                            break
                except OSError:
                    pass
                if time.time() > deadline or proc.poll() is not None:
                    sys.exit("the server did not become ready")
                time.sleep(0.1)

            def scrape():
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % admin, timeout=5) as r:
                    return r.read().decode()
            served |= families(scrape())
            # Each shipped request queue once: their plugin metrics exist while they serve.
            for queue in ("fifo", "fair"):
                r = subprocess.run([exe, "ctl", "--config", path, "swap", "request_queue", queue],
                                   capture_output=True, text=True, timeout=60)
                check(r.returncode == 0, "uaplex ctl swap request_queue %s: %s" % (queue, r.stderr.strip()))
                served |= families(scrape())
        finally:
            proc.terminate()
            proc.wait(20)
            log.seek(0)
            if failures:
                print(log.read())

    with open(os.path.join(src, "docs", "metrics.md")) as f:
        metrics_doc = f.read()
    with open(os.path.join(src, "docs", "configuration.md")) as f:
        config_doc = f.read()
    for e in exprs:
        names, regexes = queried(e)
        for n in sorted(names):
            fam = family_of(n, served)
            check(fam in served, "served: %s" % n)
            if fam.startswith("uaplex_plugin_"):
                # configuration.md names a plugin's metrics "<plugin>.<name>".
                plugin, _, rest = fam[len("uaplex_plugin_"):].partition("_")
                rest = rest[: -len("_total")] if rest.endswith("_total") else rest
                check("`%s.%s`" % (plugin, rest) in config_doc, "documented: %s" % fam)
            else:
                check("`%s`" % fam in metrics_doc, "documented: %s" % fam)
        for rx in regexes:
            matched = [f for f in served if re.fullmatch(rx, f)]
            check(len(matched) > 0, "served: %s matches %d families" % (rx, len(matched)))
    check("etc/grafana/uaplex-dashboard.json" in metrics_doc, "docs/metrics.md shows the dashboard")

    if failures:
        sys.exit("%d checks failed" % len(failures))


if __name__ == "__main__":
    main()
