#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Instructions per request of one traffic pattern: the server under callgrind, uaplex-bench
# against it (default: a lone Read, 1 connection x 1 in flight), counters zeroed after a
# warm-up and dumped 10 s later; Ir / calls of Dispatcher::handle = instructions per request.
# Instruction counts do not depend on what else the machine runs.
#   tools/bench/callgrind_request.sh [build dir] [port] [scenario] [C] [M] [out prefix] [bench]
set -e
B=${1:-build/release}
PORT=${2:-4862}
SCENARIO=${3:-read}
C=${4:-1}
M=${5:-1}
OUT=${6:-$B/bench/callgrind-$SCENARIO-${C}x$M}
BENCH=${7:-$B/bin/uaplex-bench}
mkdir -p "$(dirname "$OUT")"
source "$(dirname "$0")/callgrind_lib.sh"
callgrind_server "$B" "$PORT" "$OUT"
trap 'kill $VPID 2>/dev/null || true' EXIT
"$BENCH" --url "opc.tcp://127.0.0.1:$PORT" --scenario "$SCENARIO" -c "$C" -m "$M" \
    --warmup 6 --duration 10 --connect-timeout 60 --json >"$OUT.gen.json" &
GPID=$!
callgrind_window $GPID
python3 - "$OUT" <<'PY'
import glob, re, sys
out = sys.argv[1]
# The requests are the calls of Dispatcher::handle in the dump (exact, unlike the rate).
ir = 0
calls = 0
for f in glob.glob(out + ".cg.*"):
    names, cur = {}, None
    for line in open(f, errors="replace"):
        if line.startswith("summary:"):
            ir = max(ir, int(line.split()[1]))
        elif line.startswith(("fn=", "cfn=")):
            m = re.match(r"c?fn=\((\d+)\)(?: (.*))?", line.strip())
            if m and m.group(2):
                names[m.group(1)] = m.group(2)
            cur = names.get(m.group(1), "") if m and line.startswith("cfn=") else None
        elif line.startswith("calls=") and cur is not None:
            if "Dispatcher::handle(" in cur:
                calls += int(line.split("=")[1].split()[0])
            cur = None
print(f"{ir} Ir, {calls} requests: {ir / max(calls, 1):.0f} Ir per request")
PY
