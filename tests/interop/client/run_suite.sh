#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run_suite.sh UAPLEX PLUGIN_DIR PORT [ONLY...]: starts uaplex on 127.0.0.1:PORT with a test
# configuration (and on PORT+1, PORT+2 with [access] settings for 12- and 13-, on PORT+3 with
# small [server.limits] for 14-, on PORT+4 with [pubsub] and a Mosquitto broker on PORT+5 for
# 18-, when mosquitto and the mqtt plugin are there; PostgreSQL on PORT+6 with
# UAPLEX_INTEROP_HISTORY=postgres), installs the pinned client (npm ci, only when node_modules is
# stale), runs the suite (only the files matching ONLY, if given) and stops the server.
set -euo pipefail
uaplex=$1 plugins=$2 port=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null && command -v npm >/dev/null || { echo "node/npm missing: skipped"; exit 77; }

work=$(mktemp -d)
server_pid="" pgdir=""
cleanup() {
  for pid in $server_pid; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
  rm -rf "$work" ${pgdir:+"$pgdir"}
}
trap cleanup EXIT

cat >"$work/interop.toml" <<TOML
[log]
level = "warn"
sink = "file"
file = "$work/uaplex.log"
[host]
plugin_dirs = ["$plugins"]
[server]
endpoints = ["opc.tcp://127.0.0.1:$port"]
application_uri = "urn:uaplex:interop:server"
pki_dir = "$work/pki"
security = [{policy = "None"},
            {policy = "Basic256Sha256", modes = ["Sign", "SignAndEncrypt"]},
            {policy = "Aes128_Sha256_RsaOaep", modes = ["Sign", "SignAndEncrypt"]},
            {policy = "Aes256_Sha256_RsaPss", modes = ["Sign", "SignAndEncrypt"]}]
[server.limits]
handshake_timeout_ms = 2000
[slots]
request_queue = "fifo"
[plugins.fifo]
[plugins.transport-tcp]
TOML
# Event items and queues above size 1 (deadband, SetMonitoringMode) need a monitored-item
# queue factory.
if [ -e "$plugins/uaplex-mi-default.so" ]; then
  sed -i 's/^request_queue = "fifo"$/&\nmonitored_item_queue = "mi-default"/' "$work/interop.toml"
  printf '[plugins.mi-default]\n' >>"$work/interop.toml"
fi
for nm in demo benchmark; do
  [ -e "$plugins/uaplex-$nm.so" ] && printf '[plugins.%s]\n' "$nm" >>"$work/interop.toml"
done
# 16-alarms: a configured level alarm with branches on the demo's Float,
if [ -e "$plugins/uaplex-demo.so" ]; then
  printf '[[alarms]]\nname = "Branchy"\ntype = "exclusive_level"\nsource = "nsu=urn:uaplex:demo;s=Demo.Scalars.Float"\nhigh = 80\nbranches = true\n' >>"$work/interop.toml"
  # and a deviation alarm: UInt32 minus the UInt16 setpoint.
  printf '[[alarms]]\nname = "Deviation"\ntype = "exclusive_deviation"\nsource = "nsu=urn:uaplex:demo;s=Demo.Scalars.UInt32"\nsetpoint = "nsu=urn:uaplex:demo;s=Demo.Scalars.UInt16"\nhigh = 10\nlow = -10\ndeadband = 2\n' >>"$work/interop.toml"
fi
# The servers share one PKI: its certificate is made once, before they start.
"$uaplex" pki --pki "$work/pki" create-cert --uri urn:uaplex:interop:server >/dev/null

if [ ! -f "$here/node_modules/.package-lock.json" ] ||
   [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
  (cd "$here" && npm ci --silent --no-audit --no-fund)
fi

# Two more servers for 12-access: PORT+1 with a users file and access rules on the demo
# namespace, PORT+2 with anonymous switched off.
"$uaplex" users add operator --roles Operator --password op-secret --iterations 1000 \
  --file "$work/users.toml" >/dev/null
# 19-node-management: a user of the role that may change the model (node_management_roles).
"$uaplex" users add admin --roles ConfigureAdmin --password admin-secret --iterations 1000 \
  --file "$work/users.toml" >/dev/null
# 13-identity-matrix: an X509 user certificate mapped to Operator on the access server, one
# the server does not map, and a client application certificate trusted by the servers.
ids="$work/identities"
mapped=$("$uaplex" pki --pki "$ids/unused" create-cert --uri urn:uaplex:interop:user \
  --cn operator-x509 --out-dir "$ids/user" | cut -d' ' -f1)
"$uaplex" pki --pki "$ids/unused" create-cert --uri urn:uaplex:interop:stranger \
  --cn stranger-x509 --out-dir "$ids/stranger" >/dev/null
app=$("$uaplex" pki --pki "$ids/unused" create-cert --uri urn:uaplex:interop:client \
  --cn identity-matrix-client --out-dir "$ids/client" | cut -d' ' -f1)
mkdir -p "$work/pki/trusted/certs"
cp "$ids/client/cert.der" "$work/pki/trusted/certs/$app.der"
access_toml() {  # access_toml PORT NAME [ACCESS LINES]
  sed -e "s|127.0.0.1:$port\"|127.0.0.1:$1\"|" -e "s|$work/uaplex.log|$work/$2.log|" \
    "$work/interop.toml" >"$work/$2.toml"
  printf '[access]\nusers_file = "%s"\n%s\n' "$work/users.toml" "$3" >>"$work/$2.toml"
}
access_toml $((port + 1)) access '[[access.rules]]
namespace = "urn:uaplex:demo"
roles = ["Anonymous", "Observer"]
permissions = ["Browse", "Read"]
[[access.rules]]
namespace = "urn:uaplex:demo"
roles = ["Operator"]
permissions = ["Browse", "Read", "Write", "Call", "ReceiveEvents"]
[[access.certificates]]
thumbprint = "'"$mapped"'"
roles = ["Operator"]'
access_toml $((port + 2)) noanon 'anonymous = false'
# 14-limits: every limit small enough to reach from one client. The test reads this file and
# compares ServerCapabilities with it, so each value is stated once, here. One worker thread
# keeps the requests of a session in arrival order (which Publish request is the oldest).
sed -e "s|127.0.0.1:$port\"|127.0.0.1:$((port + 3))\"|" -e "s|$work/uaplex.log|$work/limits.log|" \
  -e '/^\[server\]$/a request_threads = 1' -e '/^handshake_timeout_ms = /d' \
  -e '/^\[server.limits\]$/r /dev/stdin' "$work/interop.toml" >"$work/limits.toml" <<'LIMITS'
max_channels = 4
max_pending_handshakes = 2
handshake_timeout_ms = 10000
min_token_lifetime_ms = 15000
max_token_lifetime_ms = 40000
max_sessions = 3
min_session_timeout_ms = 5000
max_session_timeout_ms = 20000
max_browse_continuation_points = 2
max_string_length = 4096
max_bytestring_length = 16384
max_array_length = 100
max_nodes_per_read = 5
max_nodes_per_write = 4
max_nodes_per_browse = 6
max_nodes_per_register_nodes = 3
max_nodes_per_translate = 4
max_nodes_per_method_call = 2
max_references_per_node = 3
max_monitored_items_per_call = 4
max_subscriptions = 4
max_subscriptions_per_session = 2
max_monitored_items = 6
max_monitored_items_per_subscription = 4
max_monitored_item_queue_size = 8
max_event_queue_size = 16
max_publish_requests_per_session = 3
min_publishing_interval_ms = 100
max_publishing_interval_ms = 900000
min_sampling_interval_ms = 100
max_sampling_interval_ms = 60000
LIMITS

# 18-pubsub: a server publishing two benchmark variables through the mqtt plugin to a broker
# of its own (loopback only, no persistence), both stopped with the others.
pubsub=""
if [ -x /usr/sbin/mosquitto ] && [ -e "$plugins/uaplex-mqtt.so" ] && [ -e "$plugins/uaplex-benchmark.so" ]; then
  pubsub=1
  printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nuser %s\nlog_dest file %s\n' \
    $((port + 5)) "$(id -un)" "$work/mosquitto.log" >"$work/mosquitto.conf"
  sed -e "s|127.0.0.1:$port\"|127.0.0.1:$((port + 4))\"|" -e "s|$work/uaplex.log|$work/pubsub.log|" \
    "$work/interop.toml" >"$work/pubsub.toml"
  cat >>"$work/pubsub.toml" <<PUBSUB
[plugins.mqtt]
port = $((port + 5))
reconnect_min_ms = 50
reconnect_max_ms = 200
[pubsub]
plugin = "mqtt"
publisher_id = "interop-pub"
[[pubsub.data_sets]]
name = "Boiler"
fields = [{ name = "Temperature", node = "ns=1;i=1001" }, { name = "Pressure", node = "ns=1;i=1002" }]
[[pubsub.writer_groups]]
name = "Fast"
writer_group_id = 3
publishing_interval_ms = 200
[[pubsub.writer_groups.writers]]
name = "Boiler"
data_set_writer_id = 11
data_set = "Boiler"
key_frame_count = 5
PUBSUB
fi

# The main and the limits server's clients write and call as Anonymous (04-, 05-, 14-, ...):
# granted here explicitly, since the built-in defaults give Anonymous no Write or Call. The
# access servers keep their own [access] tables. The users file lets 10- and 14- transfer
# subscriptions between two sessions of user operator (Part 4 5.13.7: the same user; two
# anonymous sessions on None channels may not).
for cfg in interop limits ${pubsub:+pubsub}; do
  printf '[access]\nanonymous_permissions = ["All"]\nusers_file = "%s"\n' "$work/users.toml" \
    >>"$work/$cfg.toml"
done

# 17-history: the main server records Demo.Scalars.Double and Demo.Measured (values written
# with their source timestamps and statuses) and the Server object's events into
# history-sqlite, or with UAPLEX_INTEROP_HISTORY=postgres into history-postgres on a
# throw-away PostgreSQL server on PORT+6 (as nobody when root: initdb refuses root).
history_store=""
if [ "${UAPLEX_INTEROP_HISTORY:-sqlite}" = postgres ]; then
  pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -x "$pgbin/initdb" ] && [ -e "$plugins/uaplex-history-postgres.so" ] ||
    { echo "no PostgreSQL server or history-postgres plugin: skipped"; exit 77; }
  as_pg=()
  [ "$(id -u)" = 0 ] && as_pg=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
  # A directory of its own: nobody cannot enter $work (mode 0700, it holds the PKI).
  pgdir=$(mktemp -d)
  [ "$(id -u)" = 0 ] && chown nobody:nogroup "$pgdir"
  "${as_pg[@]}" "$pgbin/initdb" -D "$pgdir/data" -U postgres -A trust >"$work/pg.log" 2>&1 ||
    { cat "$work/pg.log"; exit 1; }
  "${as_pg[@]}" "$pgbin/postgres" -D "$pgdir/data" -k "$pgdir" -h 127.0.0.1 -p $((port + 6)) \
    -c fsync=off -c synchronous_commit=off -c full_page_writes=off >>"$work/pg.log" 2>&1 &
  pg_pid=$!
  server_pid=$pg_pid
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$((port + 6))") 2>/dev/null && break
    sleep 0.1
  done
  printf '[plugins.history-postgres]\nhost = "127.0.0.1"\nport = %d\nuser = "postgres"\ndbname = "postgres"\n' \
    $((port + 6)) >>"$work/interop.toml"
  history_store=history-postgres
elif [ -e "$plugins/uaplex-history-sqlite.so" ]; then
  printf '[plugins.history-sqlite]\npath = "%s"\n' "$work/history.db" >>"$work/interop.toml"
  history_store=history-sqlite
fi
if [ -n "$history_store" ]; then
  printf '[history]\nplugin = "%s"\nnodes = ["nsu=urn:uaplex:demo;s=Demo.Scalars.Double", "nsu=urn:uaplex:demo;s=Demo.Measured"]\nmax_continuation_points = 4\nmax_req_times = 16\nevent_notifiers = ["server"]\nmax_events_per_update = 8\n' \
    "$history_store" >>"$work/interop.toml"
  export UAPLEX_HISTORY=1
fi

pids=()
ports=($port $((port + 1)) $((port + 2)) $((port + 3)))
if [ -n "$pubsub" ]; then
  /usr/sbin/mosquitto -c "$work/mosquitto.conf" &
  pids+=($!)
  ports+=($((port + 5)) $((port + 4)))
fi
for cfg in interop access noanon limits ${pubsub:+pubsub}; do
  "$uaplex" --config "$work/$cfg.toml" &
  pids+=($!)
done
# PostgreSQL last: a smart shutdown waits for the servers' connections to end.
server_pid="${pids[*]} ${pg_pid:-}"
for p in "${ports[@]}"; do
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break
    sleep 0.1
  done
done
export UAPLEX_ACCESS_ENDPOINT="opc.tcp://127.0.0.1:$((port + 1))"
export UAPLEX_NOANON_ENDPOINT="opc.tcp://127.0.0.1:$((port + 2))"
export UAPLEX_LIMITS_ENDPOINT="opc.tcp://127.0.0.1:$((port + 3))" UAPLEX_LIMITS_TOML="$work/limits.toml"
[ -n "$pubsub" ] && export UAPLEX_PUBSUB_ENDPOINT="opc.tcp://127.0.0.1:$((port + 4))"

only=()
for o in "$@"; do only+=(--only "$o"); done
status=0
# 11-security: the server's PKI (trust lists) and the uaplex binary (pki create-cert).
export UAPLEX_PKI_DIR="$work/pki" UAPLEX_BIN="$uaplex" UAPLEX_WORK="$work"
# 13-identity-matrix: the certificates made above (DER certificate, PEM key).
export UAPLEX_IDENTITIES="$ids"
# The whole-run limit leaves room for a loaded machine (ctest allows 300 s).
(cd "$here" && node run.js "opc.tcp://127.0.0.1:$port" --timeout 240 "${only[@]}") || status=$?
if [ $status -ne 0 ]; then
  for log in uaplex access noanon limits ${pubsub:+pubsub} ${pg_pid:+pg}; do echo "--- $log server log"; cat "$work/$log.log" || true; done
fi
exit $status
