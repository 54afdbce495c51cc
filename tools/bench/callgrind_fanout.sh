#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per notification of the fan-out path: the server under callgrind, a scaled-down
# fan-out (5 sessions x 1,000 items on 100 nodes, 100 Writes of 10 values/s, sampling and
# publishing 100 ms), counters zeroed 8 s after the generator started and dumped 10 s later.
# Ir / (notif/s x 10 s) = instructions per notification.
#   tools/bench/callgrind_fanout.sh [build dir] [port] [out prefix]
set -e
B=${1:-build/release}
PORT=${2:-4860}
OUT=${3:-$B/bench/callgrind-fanout}
mkdir -p "$B/bench"
python3 - "$B" "$PORT" "$OUT.toml" <<'PY'
import re, sys
build, port, out = sys.argv[1:]
text = open("etc/uaplex.toml").read()
text = re.sub(r'(?m)^endpoints\s*=.*$', f'endpoints = ["opc.tcp://127.0.0.1:{port}"]', text)
text = re.sub(r'(?m)^level\s*=\s*"[a-z]+"', 'level = "warn"', text)
open(out, "w").write(text)
PY
rm -f "$OUT".cg*
valgrind --tool=callgrind --callgrind-out-file="$OUT.cg" "$B/bin/uaplex" --config "$OUT.toml" \
    >"$OUT.server.log" 2>&1 &
VPID=$!
sleep 12
"$B/bin/uaplex-bench" --url "opc.tcp://127.0.0.1:$PORT" --scenario subscribe -c 5 -m 20 \
    --items 1000 --change-ms 10 --change-batch 10 --sampling-ms 100 --publishing-ms 100 \
    --queue-size 1 --warmup 6 --duration 10 --connect-timeout 60 --json >"$OUT.gen.json" &
GPID=$!
sleep 8
callgrind_control -z $VPID >/dev/null
sleep 10
callgrind_control -d $VPID >/dev/null
wait $GPID || true
kill $VPID
wait $VPID || true
python3 - "$OUT" <<'PY'
import glob, json, sys
out = sys.argv[1]
g = json.load(open(out + ".gen.json"))
ir = max(int(l.split()[1]) for f in glob.glob(out + ".cg*") for l in open(f)
         if l.startswith("summary:"))
n = g["notifications_per_s"] * 10
print(f"{ir} Ir, {g['notifications_per_s']:.0f} notif/s: {ir / n:.0f} Ir per notification")
PY
