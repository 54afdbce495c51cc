# SPDX-License-Identifier: Apache-2.0
# Sourced by the SDK tests that serve a configuration and check it with node-opcua's client
# (tests/interop/client). Expects `client` (that folder) and sets `server_pid` for the
# caller's cleanup.

# serve_and_run_client UAPLEX CONFIG PORT LOG TEST: installs the client's modules when its
# lock file is newer, starts UAPLEX with CONFIG, waits until it listens on PORT, then runs
# the client's test file TEST against it. Returns the test's status; prints LOG (the
# server's log file) when the server exits early or the test fails.
serve_and_run_client() {
  local uaplex=$1 cfg=$2 port=$3 log=$4 test=$5
  if [ ! -f "$client/node_modules/.package-lock.json" ] ||
     [ "$client/package-lock.json" -nt "$client/node_modules/.package-lock.json" ]; then
    (cd "$client" && npm ci --silent --no-audit --no-fund)
  fi
  "$uaplex" --config "$cfg" &
  server_pid=$!
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { echo "server exited"; cat "$log"; return 1; }
    sleep 0.1
  done
  local status=0
  (cd "$client" && UAPLEX_ENDPOINT="opc.tcp://127.0.0.1:$port" \
    timeout 120 node --test --test-concurrency=1 --test-reporter=spec "$test") || status=$?
  if [ $status -ne 0 ]; then echo "--- server log"; cat "$log" || true; fi
  return $status
}
