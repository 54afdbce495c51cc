#!/usr/bin/env bash
# run_suite.sh UAPLEX PLUGIN_DIR PORT [ONLY...]: starts uaplex on 127.0.0.1:PORT with a test
# configuration, installs the pinned client (npm ci, only when node_modules is stale), runs
# the suite (only the files matching ONLY, if given) and stops the server.
set -euo pipefail
uaplex=$1 plugins=$2 port=$3
shift 3
here=$(cd "$(dirname "$0")" && pwd)
command -v node >/dev/null && command -v npm >/dev/null || { echo "node/npm missing: skipped"; exit 77; }

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
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
for nm in demo benchmark; do
  [ -e "$plugins/uaplex-$nm.so" ] && printf '[plugins.%s]\n' "$nm" >>"$work/interop.toml"
done

if [ ! -f "$here/node_modules/.package-lock.json" ] ||
   [ "$here/package-lock.json" -nt "$here/node_modules/.package-lock.json" ]; then
  (cd "$here" && npm ci --silent --no-audit --no-fund)
fi

"$uaplex" --config "$work/interop.toml" &
server_pid=$!
for _ in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
  sleep 0.1
done

only=()
for o in "$@"; do only+=(--only "$o"); done
status=0
# 11-security: the server's PKI (trust lists) and the uaplex binary (pki create-cert).
export UAPLEX_PKI_DIR="$work/pki" UAPLEX_BIN="$uaplex" UAPLEX_WORK="$work"
(cd "$here" && node run.js "opc.tcp://127.0.0.1:$port" --timeout 240 "${only[@]}") || status=$?
if [ $status -ne 0 ]; then echo "--- server log"; cat "$work/uaplex.log" || true; fi
exit $status
