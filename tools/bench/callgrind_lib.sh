# SPDX-License-Identifier: Apache-2.0
# Shared by the callgrind_*.sh scripts (sourced): the server on the default configuration
# under callgrind, and a measured window of its counters.

# callgrind_server BUILD PORT OUT: writes OUT.toml (etc/uaplex.toml on 127.0.0.1:PORT, log
# level warn), starts the server under callgrind into OUT.cg*, sets VPID, waits for it.
callgrind_server() {
    local build=$1 port=$2 out=$3
    python3 - "$port" "$out.toml" <<'PY'
import re, sys
port, out = sys.argv[1:]
text = open("etc/uaplex.toml").read()
text = re.sub(r'(?m)^endpoints\s*=.*$', f'endpoints = ["opc.tcp://127.0.0.1:{port}"]', text)
text = re.sub(r'(?m)^level\s*=\s*"[a-z]+"', 'level = "warn"', text)
text = re.sub(r'(?m)^listen\s*=.*$', 'listen = "127.0.0.1:0"', text)  # [admin]
# The write and subscribe scenarios write as Anonymous, which the default refuses outside
# namespace 0 (docs/configuration.md, anonymous_permissions).
if not re.search(r'(?m)^\[access\]', text):
    text += '\n[access]\nanonymous_permissions = ["All"]\n'
open(out, "w").write(text)
PY
    rm -f "$out".cg*
    valgrind --tool=callgrind --callgrind-out-file="$out.cg" "$build/bin/uaplex" \
        --config "$out.toml" >"$out.server.log" 2>&1 &
    VPID=$!
    sleep 12
}

# callgrind_window GPID: zeroes the counters 8 s into the generator GPID's run, dumps them
# 10 s later, waits for the generator and stops the server.
callgrind_window() {
    local gpid=$1
    sleep 8
    callgrind_control -z "$VPID" >/dev/null
    sleep 10
    callgrind_control -d "$VPID" >/dev/null
    wait "$gpid" || true
    kill "$VPID"
    wait "$VPID" || true
}
