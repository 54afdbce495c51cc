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
source "$(dirname "$0")/callgrind_lib.sh"
callgrind_server "$B" "$PORT" "$OUT"
"$B/bin/uaplex-bench" --url "opc.tcp://127.0.0.1:$PORT" --scenario subscribe -c 5 -m 20 \
    --items 1000 --change-ms 10 --change-batch 10 --sampling-ms 100 --publishing-ms 100 \
    --queue-size 1 --warmup 6 --duration 10 --connect-timeout 60 --json >"$OUT.gen.json" &
GPID=$!
callgrind_window $GPID
python3 - "$OUT" <<'PY'
import glob, json, sys
out = sys.argv[1]
g = json.load(open(out + ".gen.json"))
ir = max(int(l.split()[1]) for f in glob.glob(out + ".cg*") for l in open(f)
         if l.startswith("summary:"))
n = g["notifications_per_s"] * 10
print(f"{ir} Ir, {g['notifications_per_s']:.0f} notif/s: {ir / n:.0f} Ir per notification")
PY
