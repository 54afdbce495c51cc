#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Validates the interop suite against the node-opcua peer server of tools/bench/peers:
# starts the peer on 127.0.0.1:$PORT, runs `node run.js opc.tcp://127.0.0.1:$PORT --peer`,
# stops the peer. Every step is bounded in time. Extra arguments go to run.js.
#
#   tests/interop/client/against-peer.sh [--only NAME] ...
#   PORT=4845 (default)   INSTALL=1 runs `npm ci` in both folders first when node_modules is missing
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
peers="$repo/tools/bench/peers"
port="${PORT:-4845}"
log="$(mktemp -t uaplex-peer.XXXXXX.log)"

for dir in "$here" "$peers"; do
    if [ ! -d "$dir/node_modules" ]; then
        if [ "${INSTALL:-1}" = 1 ]; then
            (cd "$dir" && timeout 300 npm ci --no-audit --no-fund --loglevel=error)
        else
            echo "against-peer.sh: $dir/node_modules is missing (run npm ci there)" >&2
            exit 2
        fi
    fi
done

if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "against-peer.sh: something already listens on 127.0.0.1:$port (set PORT=...)" >&2
    exit 2
fi

node "$peers/node-opcua-server.js" --port "$port" --host 127.0.0.1 >"$log" 2>&1 &
peer=$!
stop_peer() {
    if kill -0 "$peer" 2>/dev/null; then
        kill -TERM "$peer" 2>/dev/null || true
        for _ in $(seq 1 30); do kill -0 "$peer" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$peer" 2>/dev/null || true
    fi
    wait "$peer" 2>/dev/null || true
    rm -f "$log"
}
trap stop_peer EXIT
trap 'exit 130' INT TERM

# Wait (at most 30 s) for the "ready" line.
for _ in $(seq 1 300); do
    grep -q '^ready ' "$log" && break
    if ! kill -0 "$peer" 2>/dev/null; then
        echo "against-peer.sh: the peer server exited:" >&2
        cat "$log" >&2
        exit 1
    fi
    sleep 0.1
done
if ! grep -q '^ready ' "$log"; then
    echo "against-peer.sh: the peer server did not get ready within 30 s" >&2
    cat "$log" >&2
    exit 1
fi
echo "peer: $(grep '^ready ' "$log")"

start=$(date +%s)
status=0
timeout 90 node "$here/run.js" "opc.tcp://127.0.0.1:$port" --peer "$@" || status=$?
echo "suite against the peer: exit $status in $(( $(date +%s) - start )) s"

if ! kill -0 "$peer" 2>/dev/null; then
    echo "against-peer.sh: the peer server died during the run" >&2
    cat "$log" >&2
    status=1
fi
exit "$status"
