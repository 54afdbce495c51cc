#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# crash_files_test.sh UAPLEX PLUGIN_DIR [ROUNDS]: kill -9 at random points while the files
# the server keeps across restarts are written, and check that nothing promised is lost:
#   `uaplex users add` (the users file), `uaplex pki trust|reject` with a file or a
#   thumbprint (the trust lists), and the server's first start (its own certificate and key).
# After every kill the files are intact: the users file parses and holds every user whose
# `users add` exited 0; every certificate file of trusted/ and rejected/ is complete and
# named by its thumbprint, and each certificate sits where its last completed command put it
# (a killed command leaves it where it was or where it was going). Every few rounds the
# server restarts on these files and must serve.
set -euo pipefail
uaplex=$(realpath "$1") plugins=$(realpath "$2") rounds=${3:-60}
work=$(mktemp -d)
server=""
cleanup() {
  [ -n "$server" ] && kill -9 "$server" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
pki="$work/pki" users="$work/users.toml"
# below the ephemeral range, away from the fixed ports of the other suites
port=$((28600 + $$ % 300))
RANDOM=${CRASH_SEED:-$$}

# Peer certificates to trust and reject (generated once, outside the store under test).
certs=()
for k in 1 2 3 4; do
  "$uaplex" pki --pki "$work/gen/unused" create-cert --uri "urn:crash:peer$k" --cn "peer$k" \
    --out-dir "$work/gen/$k" >/dev/null
  certs+=("$work/gen/$k/cert.der")
done
thumb() { openssl x509 -inform DER -in "$1" -noout -fingerprint -sha1 | sed 's/.*=//; s/://g' | tr 'A-F' 'a-f'; }
thumbs=()
for c in "${certs[@]}"; do thumbs+=("$(thumb "$c")"); done
declare -A where  # thumbprint -> trusted | rejected | none, after the last completed command
for t in "${thumbs[@]}"; do where[$t]=none; done
promised=()       # users whose `users add` exited 0

# The command runs in the background and gets SIGKILL after a random delay within its usual
# run time (measured first), so the kill falls before, during or after the write.
runtime_ms() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || true
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000 + 1))
}
killed_run() {  # killed_run SPAN_MS CMD...: exit status of CMD, or 137
  local span=$1
  shift
  "$@" >/dev/null 2>&1 &
  local pid=$!
  local delay=$((RANDOM % (span + 1)))
  sleep "$(printf '0.%03d' "$delay")"
  kill -9 "$pid" 2>/dev/null || true
  local rc=0
  wait "$pid" 2>/dev/null || rc=$?  # (no "Killed" line from bash)
  return $rc
}

state_of() {  # trusted | rejected | both | none
  local t=$1 in_t=0 in_r=0
  [ -f "$pki/trusted/certs/$t.der" ] && in_t=1
  [ -f "$pki/rejected/certs/$t.der" ] && in_r=1
  if [ $in_t = 1 ] && [ $in_r = 1 ]; then echo both
  elif [ $in_t = 1 ]; then echo trusted
  elif [ $in_r = 1 ]; then echo rejected
  else echo none; fi
}

check_files() {
  local what=$1
  if [ -e "$users" ]; then
    "$uaplex" users list --file "$users" >"$work/list" 2>"$work/list.err" ||
      fail "$what: the users file does not parse: $(cat "$work/list.err")"
    for u in "${promised[@]}"; do
      grep -q "^$u	" "$work/list" || fail "$what: user $u was added (exit 0) and is gone"
    done
  elif [ ${#promised[@]} -gt 0 ]; then
    fail "$what: the users file is gone"
  fi
  for d in trusted/certs rejected/certs; do
    [ -d "$pki/$d" ] || continue
    for f in "$pki/$d"/*; do
      [ -e "$f" ] || continue
      case "$f" in *.tmp) continue ;; esac  # an uncommitted replacement, skipped by readers
      openssl x509 -inform DER -in "$f" -noout 2>/dev/null || fail "$what: $f is not a complete certificate"
      [ "$(basename "$f")" = "$(thumb "$f").der" ] || fail "$what: $f is not named by its thumbprint"
    done
  done
}

n_users=0
span_users=$(runtime_ms sh -c "echo pw | '$uaplex' users add probe --password-stdin --iterations 20000 --file '$work/probe.toml'")
span_pki=$(runtime_ms "$uaplex" pki --pki "$work/probe-pki" trust "${certs[0]}")
echo "crash_files: $rounds rounds, users add ~${span_users} ms, pki trust ~${span_pki} ms"
for round in $(seq 1 "$rounds"); do
  op=$((RANDOM % 3))
  if [ $op = 0 ]; then
    n_users=$((n_users + 1))
    u="user$n_users"
    rc=0
    killed_run "$span_users" sh -c "echo secret-$u | exec '$uaplex' users add $u --roles Operator --password-stdin --iterations 20000 --file '$users'" || rc=$?
    [ $rc = 0 ] && promised+=("$u")
    check_files "round $round (users add $u, exit $rc)"
  else
    k=$((RANDOM % ${#certs[@]}))
    t=${thumbs[$k]}
    before=${where[$t]}
    # trust or reject, by file or (when it is in the other list) by thumbprint
    if [ $op = 1 ]; then verb=trust to=trusted from=rejected; else verb=reject to=rejected from=trusted; fi
    arg=${certs[$k]}
    [ "$before" = "$from" ] && [ $((RANDOM % 2)) = 0 ] && arg=$t
    rc=0
    killed_run "$span_pki" "$uaplex" pki --pki "$pki" "$verb" "$arg" || rc=$?
    check_files "round $round ($verb $arg, exit $rc)"
    now=$(state_of "$t")
    if [ $rc = 0 ]; then
      [ "$now" = "$to" ] || fail "round $round: $verb $arg exited 0 but the certificate is $now"
      where[$t]=$to
    else
      # killed: where it was, where it was going, or (a file written to the target before
      # the old copy was removed) in both; the next completed command settles it
      case "$now" in
        "$before" | "$to" | both) ;;
        *) fail "round $round: $verb $arg killed: the certificate is $now (was $before)" ;;
      esac
      where[$t]=$now
    fi
  fi
  if [ $((round % 15)) = 0 ]; then
    # The server on these files: its first start creates its certificate (killed at a random
    # point of that the first time), then it must start and serve.
    cat >"$work/server.toml" <<TOML
[log]
level = "info"
sink = "file"
file = "$work/server.log"
[host]
plugin_dirs = ["$plugins"]
[server]
endpoints = ["opc.tcp://127.0.0.1:$port"]
security = [{policy = "None"}, {policy = "Basic256Sha256", modes = ["SignAndEncrypt"]}]
pki_dir = "$pki"
[slots]
request_queue = "fifo"
[plugins.fifo]
[plugins.transport-tcp]
[access]
users_file = "$users"
TOML
    if [ ! -f "$pki/own/certs/uaplex.der" ]; then
      rc=0
      killed_run 400 "$uaplex" --config "$work/server.toml" 2>/dev/null || rc=$?
    fi
    : >"$work/server.log"
    "$uaplex" --config "$work/server.toml" >"$work/server.out" 2>&1 &
    server=$!
    up=0
    for _ in $(seq 100); do
      (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && { up=1; break; }
      kill -0 $server 2>/dev/null || break
      sleep 0.1
    done
    [ $up = 1 ] ||
      fail "round $round: the server does not start on these files: $(cat "$work/server.out" "$work/server.log")"
    kill -9 $server
    { wait $server; } 2>/dev/null || true
    server=""
    openssl x509 -inform DER -in "$pki/own/certs/uaplex.der" -noout ||
      fail "round $round: the own certificate is not complete"
    [ "$(openssl x509 -inform DER -in "$pki/own/certs/uaplex.der" -noout -pubkey)" = \
      "$(openssl pkey -in "$pki/own/private/uaplex.pem" -pubout)" ] ||
      fail "round $round: the own certificate and key do not match"
    echo "ok: round $round, the server restarted on the files (${#promised[@]} users promised)"
  fi
done
echo "ok: $rounds rounds, ${#promised[@]} of $n_users users added before their kill, every file intact"
