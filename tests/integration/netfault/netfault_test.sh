#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# netfault_test.sh UAPLEX PLUGIN_DIR: uaplex and node-opcua's client over an impaired link.
# Three network namespaces of its own, never the host's: the client's (c0 10.77.0.2), the
# server's (s0 10.77.0.1, uaplex on port 4840 there) and a middle one joining them, where the
# impairment sits: tc netem on a bridge when the kernel has sch_netem, otherwise impair.py (a
# user-space netem on AF_PACKET). netfault.js runs the cases (latency, loss and reordering,
# a link down and back, resets mid-message, session timeout, channel lifetime, TimeoutHint).
# Exit 77 (skipped) only when a network namespace cannot be created (not root, no
# CAP_SYS_ADMIN); everything is removed on exit, also after a failure.
set -euo pipefail
uaplex=$(realpath "$1") plugins=$(realpath "$2")
shift 2
only=("$@")  # case name substrings for netfault.js
here=$(cd "$(dirname "$0")" && pwd)
client_dir=$(cd "$here/../../interop/client" && pwd)
ns=uplxnf$$
C=${ns}c M=${ns}m S=${ns}s
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for n in "$C" "$M" "$S"; do ip netns del "$n" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

if [ ! -f "$client_dir/node_modules/.package-lock.json" ] ||
   [ "$client_dir/package-lock.json" -nt "$client_dir/node_modules/.package-lock.json" ]; then
  (cd "$client_dir" && npm ci --silent --no-audit --no-fund)
fi

if ! ip netns add "$C" 2>"$work/netns.err"; then
  echo "SKIPPED: cannot create a network namespace (ip netns add: $(cat "$work/netns.err")); needs root"
  exit 77
fi
ip netns add "$M"
ip netns add "$S"
for n in "$C" "$M" "$S"; do ip -n "$n" link set lo up; done
ip link add c0 netns "$C" type veth peer name m0 netns "$M"
ip link add s0 netns "$S" type veth peer name m1 netns "$M"
ip -n "$C" addr add 10.77.0.2/24 dev c0
ip -n "$S" addr add 10.77.0.1/24 dev s0

mode=user
if ip netns exec "$M" tc qdisc add dev m0 root netem delay 1ms 2>/dev/null; then
  ip netns exec "$M" tc qdisc del dev m0 root
  mode=netem
  ip -n "$M" link add br0 type bridge
  ip -n "$M" link set m0 master br0
  ip -n "$M" link set m1 master br0
  ip -n "$M" link set br0 up
else
  # frames no larger than the MTU, with their checksums, for the AF_PACKET forwarder
  command -v ethtool >/dev/null || { echo "FAILED: no sch_netem in this kernel and no ethtool"; exit 1; }
  for x in "$C c0" "$M m0" "$M m1" "$S s0"; do
    set -- $x
    ip netns exec "$1" ethtool -K "$2" tso off gso off gro off tx off rx off >/dev/null 2>&1 || true
  done
  ip -n "$M" link set m0 promisc on
  ip -n "$M" link set m1 promisc on
fi
for x in "$C c0" "$M m0" "$M m1" "$S s0"; do
  set -- $x
  ip -n "$1" link set "$2" up
done
echo "netfault: impairment by ${mode/user/impair.py (no sch_netem in this kernel)}"
echo '{}' >"$work/impair.json"
if [ $mode = user ]; then
  ip netns exec "$M" python3 "$here/impair.py" m0 m1 "$work/impair.json" >"$work/impair.out" \
    2>"$work/impair.err" &
  pids+=($!)
fi

# The server: short timeouts so the cases fit in seconds, a user for TransferSubscriptions.
"$uaplex" users add operator --roles Operator --password op-secret --iterations 1000 \
  --file "$work/users.toml" >/dev/null
cat >"$work/server.toml" <<TOML
[log]
level = "info"
sink = "file"
file = "$work/uaplex.log"
[host]
plugin_dirs = ["$plugins"]
[server]
endpoints = ["opc.tcp://10.77.0.1:4840"]
security = [{policy = "None"}]
pki_dir = "$work/pki"
[server.limits]
min_session_timeout_ms = 1000
min_token_lifetime_ms = 1000
idle_channel_timeout_ms = 3000
[slots]
request_queue = "fifo"
monitored_item_queue = "mi-default"
[plugins.fifo]
[plugins.transport-tcp]
[plugins.mi-default]
[plugins.demo]
update_interval_ms = 100
[plugins.benchmark]
[access]
anonymous_permissions = ["All"]
users_file = "$work/users.toml"
TOML
ip netns exec "$S" "$uaplex" --config "$work/server.toml" >"$work/server.out" 2>&1 &
server=$!
pids+=($server)
for _ in $(seq 100); do
  ip netns exec "$S" bash -c 'exec 3<>/dev/tcp/10.77.0.1/4840' 2>/dev/null && break
  kill -0 $server 2>/dev/null || { echo "FAILED: the server exited"; cat "$work/server.out"; exit 1; }
  sleep 0.1
done
# the server's own pid: ip netns exec execs it, so $server is uaplex itself
export NF_MODE=$mode NF_C=$C NF_M=$M NF_S=$S NF_CONTROL="$work/impair.json" NF_SERVER_PID=$server
export NF_ENDPOINT="opc.tcp://10.77.0.1:4840" NF_CLIENT_DIR="$client_dir" NF_HERE="$here"
status=0
ip netns exec "$C" timeout 400 node "$here/netfault.js" "${only[@]}" || status=$?
if [ $status -ne 0 ]; then
  echo "--- server log"; tail -n 200 "$work/uaplex.log" || true
  [ $mode = user ] && { echo "--- impair.py"; cat "$work/impair.err" || true; }
fi
kill -0 $server 2>/dev/null || { echo "FAILED: the server died"; status=1; }
exit $status
