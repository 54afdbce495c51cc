#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The uaplex executable: error exits with one clear line, start and clean stop on SIGINT,
# SIGHUP reload swapping the request queue, and a bad reload that keeps the old setup;
# `uaplex users` editing a users file (hashes only); --version is the project's version.
set -u
uaplex="$1"
plugin_root="$(cd "$2" && pwd)"
project_version="$3"
plugin_dir="$(cd "$(dirname "$uaplex")/../plugins" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

check() {  # check <description> <command...>
    local what="$1"; shift
    if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; failures=$((failures + 1)); fi
}

# The version is PROJECT_VERSION of the top CMakeLists.txt, not a second copy.
"$uaplex" --version > "$work/out" 2>&1
check "--version prints the project version" grep -q "^uaplex $project_version (plugin ABI " "$work/out"

# Bad TOML: exit 1, one line with line:column.
printf '[log]\nlevel = \n' > "$work/bad.toml"
"$uaplex" --config "$work/bad.toml" > "$work/out" 2> "$work/err"
rc=$?
check "bad TOML exits 1" test "$rc" -eq 1
check "bad TOML names line:column" grep -q "^uaplex: error: .*bad.toml:2:[0-9]*: " "$work/err"
check "bad TOML is one line" test "$(wc -l < "$work/err")" -eq 1

# Unknown plugin: exit 1, one line.
printf '[host]\nplugin_dirs = ["%s"]\n[plugins.nosuch]\n' "$plugin_dir" > "$work/unknown.toml"
"$uaplex" --config "$work/unknown.toml" > "$work/out" 2>&1
rc=$?
check "unknown plugin exits 1" test "$rc" -eq 1
check "unknown plugin message" grep -q "error unknown plugin 'nosuch'" "$work/out"

# Start, reload to another queue, a bad reload, stop.
conf="$work/run.toml"
# The server listens on a free loopback port (the default 4840 may be taken).
# A free port below the kernel's ephemeral range, where no client socket can take it.
port=$(python3 -c '
import random, socket
for _ in range(200):
    p = random.randrange(20000, 28000)
    try:
        socket.socket().bind(("127.0.0.1", p)); print(p); break
    except OSError:
        pass')
write_conf() {
    printf '[host]\nplugin_dirs = ["%s", "%s/swap"]\n[server]\nendpoints = ["opc.tcp://127.0.0.1:%s"]\n[slots]\nrequest_queue = "%s"\n[plugins.fifo]\n[plugins.test-swap-a]\n[plugins.transport-tcp]\n' \
        "$plugin_dir" "$plugin_root" "$port" "$1" > "$conf"
}
write_conf fifo
"$uaplex" --config "$conf" > "$work/log" 2>&1 &
pid=$!
wait_for() {  # wait_for <pattern>: up to 10 s
    for _ in $(seq 100); do grep -q "$1" "$work/log" && return 0; sleep 0.1; done
    return 1
}
check "starts and logs the loaded plugin" wait_for "loaded plugin 'fifo' (request_queue"
check "reports running" wait_for "running; send SIGINT"
write_conf test-swap-a
kill -HUP "$pid"
check "SIGHUP swaps the request queue" wait_for "request_queue slot: 'fifo' -> 'test-swap-a'"
check "old plugin stopped on swap" wait_for "configuration reloaded"
printf '[slots\n' > "$conf"
kill -HUP "$pid"
check "bad reload is reported and ignored" wait_for "reload failed, keeping the running configuration: .*run.toml:1:"
kill -INT "$pid"
wait "$pid"
rc=$?
check "SIGINT exits 0" test "$rc" -eq 0
check "stops cleanly" grep -q "info  stopped" "$work/log"
check "no crash output" bash -c "! grep -qiE 'segmentation|abort|terminate' '$work/log'"

# uaplex users: add (password from stdin or --password), list, remove; bad input exits non-zero.
users="$work/users.toml"
printf '[access]\nusers_file = "users.toml"\n' > "$work/access.toml"
echo 's3cret-one' | "$uaplex" users add alice --roles Operator,Observer --iterations 1000 \
    --config "$work/access.toml" > "$work/out" 2>&1
check "users add exits 0" grep -q "added alice" "$work/out"
"$uaplex" users add bob --password s3cret-two --iterations 1000 --file "$users" > /dev/null 2>&1
"$uaplex" users list --file "$users" > "$work/out" 2>&1
check "users list shows names and roles" grep -qx "alice	Operator,Observer" "$work/out"
check "users list shows bob" grep -qx "bob	" "$work/out"
check "no password in the users file" bash -c "! grep -q 's3cret' '$users'"
check "hashes are PBKDF2 with their iterations" grep -q 'pbkdf2-sha256\$1000\$' "$users"
check "users file is private" test "$(stat -c %a "$users")" = 600
"$uaplex" users add carol --roles Root --password x --file "$users" > /dev/null 2> "$work/err"
check "an unknown role is refused" grep -q "'Root' is not a well-known role" "$work/err"
"$uaplex" users remove bob --file "$users" > /dev/null 2>&1
"$uaplex" users list --file "$users" > "$work/out" 2>&1
check "users remove takes the user out" bash -c "! grep -q '^bob' '$work/out'"
"$uaplex" users remove nobody --file "$users" > /dev/null 2>&1
check "removing an unknown user exits 1" test $? -eq 1
# The users file holds password hashes: written through a fresh exclusive temporary file,
# read without following a symlink, refused when the group or others may read it.
users2="$work/users2.toml"
echo victim > "$work/victim.txt"
chmod 644 "$work/victim.txt"
ln -s "$work/victim.txt" "$users2.tmp"  # the temporary name the writer once used
"$uaplex" users add eve --password pw-eve --iterations 1000 --file "$users2" > /dev/null 2> "$work/err"
check "--password warns that ps and the history see it" grep -q "warning: --password shows the password" "$work/err"
check "a symlink at <users>.tmp is not followed" test "$(cat "$work/victim.txt")" = victim
echo 'pw-frank' | "$uaplex" users add frank --password-stdin --iterations 1000 --file "$users2" > "$work/out" 2> "$work/err"
check "--password-stdin reads one line of stdin" grep -q "added frank" "$work/out"
check "--password-stdin neither warns nor prompts" test ! -s "$work/err"
"$uaplex" users add "$(printf 'bad\001name')" --password-stdin --iterations 1000 --file "$users2" <<< pw > /dev/null 2> "$work/err"
rc=$?
check "a name with a control character is refused (exit 1)" test "$rc" -eq 1
check "a name with a control character is refused (message)" grep -q "without control characters" "$work/err"
"$uaplex" users list --file "$users2" > "$work/out" 2>&1
check "the users file still loads after the refused name" grep -qx "frank	" "$work/out"
chmod 644 "$users2"
"$uaplex" users list --file "$users2" > /dev/null 2> "$work/err"
rc=$?
check "a world-readable users file is refused" bash -c "test $rc -eq 1 && grep -q 'mode 0644 lets the group or others read the password hashes' '$work/err'"
chmod 600 "$users2"
ln -s users2.toml "$work/users-link.toml"
"$uaplex" users add gina --password-stdin --iterations 1000 --file "$work/users-link.toml" <<< pw > /dev/null 2> "$work/err"
check "a symlinked users file is refused" grep -q "is a symbolic link" "$work/err"
ln -s "$work/victim.txt" "$work/users-victim.toml"
"$uaplex" users add gina --password-stdin --iterations 1000 --file "$work/users-victim.toml" <<< pw > /dev/null 2>&1
check "a users file symlinked to a victim leaves the victim alone" test "$(cat "$work/victim.txt")" = victim
# The prompt on a terminal does not echo, and asks twice.
prompt_test() {  # prompt_test <first> <second>: the terminal's output, then the exit code
    python3 - "$uaplex" "$users2" "$1" "$2" <<'PY'
import os, pty, select, sys, time
exe, users, first, second = sys.argv[1:5]
pid, fd = pty.fork()
if pid == 0:
    os.execv(exe, [exe, "users", "add", "dave", "--iterations", "1000", "--file", users])
out = b""
def until(pattern, seconds=20):
    global out
    end = time.time() + seconds
    while pattern not in out and time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 1024)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    return pattern in out
if until(b"password for dave: "):
    os.write(fd, first.encode() + b"\n")
    if until(b"again: "):
        os.write(fd, second.encode() + b"\n")
until(b"\0", 20)  # the rest, up to the end
for _ in range(100):
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        break
    time.sleep(0.1)
else:
    os.kill(pid, 9)
    _, status = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace"))
sys.stdout.write("\nexit=%d\n" % os.waitstatus_to_exitcode(status))
PY
}
prompt_test typed-secret typed-secret > "$work/tty" 2>&1
check "the prompt asks for the password twice" bash -c "grep -q 'password for dave: ' '$work/tty' && grep -q 'again: ' '$work/tty'"
check "the typed password is not echoed" bash -c "! grep -q typed-secret '$work/tty'"
check "the prompted user is added" bash -c "grep -q 'added dave' '$work/tty' && grep -q 'exit=0' '$work/tty'"
prompt_test one-secret other-secret > "$work/tty" 2>&1
check "two different passwords are refused" bash -c "grep -q 'the passwords differ' '$work/tty' && grep -q 'exit=1' '$work/tty'"
# The server refuses a users file the group or others may read: no start, and a reload keeps
# the users it has.
write_conf fifo
printf '[access]\nusers_file = "%s"\n' "$users2" >> "$conf"
chmod 640 "$users2"
timeout 20 "$uaplex" --config "$conf" > "$work/log" 2>&1
rc=$?
check "a group-readable users file stops the start (exit 1)" test "$rc" -eq 1
check "a group-readable users file stops the start (message)" grep -q "users2.toml: mode 0640 lets the group or others read" "$work/log"
chmod 600 "$users2"
"$uaplex" --config "$conf" > "$work/log" 2>&1 &
pid=$!
check "starts with a private users file" wait_for "running; send SIGINT"
chmod 644 "$users2"
kill -HUP "$pid"
check "a reload of a world-readable users file keeps the users" wait_for "users file not reloaded, keeping the users: .*mode 0644"
chmod 600 "$users2"
kill -INT "$pid"
wait "$pid"
check "still stops cleanly after the refused reload" test $? -eq 0
# Security: the first start with a secured policy creates the application instance
# certificate; `uaplex pki` creates, lists, trusts and rejects certificates.
pki="$work/pki"
cat > "$work/secure.toml" <<TOML
[host]
plugin_dirs = ["$plugin_dir"]
[server]
endpoints = ["opc.tcp://127.0.0.1:$port"]
application_uri = "urn:cli-test:server"
pki_dir = "pki"
security = [{policy = "Basic256Sha256", modes = ["SignAndEncrypt"]}]
[slots]
request_queue = "fifo"
[plugins.fifo]
[plugins.transport-tcp]
TOML
"$uaplex" --config "$work/secure.toml" > "$work/log" 2>&1 &
pid=$!
check "first start creates the certificate" wait_for "pki: created the application instance certificate"
kill -INT "$pid"; wait "$pid"
check "own certificate in pki_dir next to the config" test -s "$pki/own/certs/uaplex.der"
check "private key is owner-only" test "$(stat -c %a "$pki/own/private/uaplex.pem")" = 600
if command -v openssl >/dev/null; then
    text=$(openssl x509 -inform DER -in "$pki/own/certs/uaplex.der" -noout -text)
    check "certificate names the ApplicationUri" grep -q "URI:urn:cli-test:server" <<<"$text"
    check "certificate is RSA 2048 / SHA-256" grep -q "sha256WithRSAEncryption" <<<"$text"
    check "certificate key usage" grep -q "Digital Signature, Non Repudiation, Key Encipherment, Data Encipherment, Certificate Sign" <<<"$text"
    check "certificate extended key usage" grep -q "TLS Web Server Authentication, TLS Web Client Authentication" <<<"$text"
fi
"$uaplex" pki --pki "$pki" create-cert --uri urn:cli-test:peer --out-dir "$work/peer" > "$work/out" 2>&1
check "create-cert --out-dir writes cert and key" test -s "$work/peer/cert.der" -a -s "$work/peer/key.pem" -a -s "$work/peer/cert.pem"
thumb=$(cut -d' ' -f1 "$work/out")
"$uaplex" pki --pki "$pki" create-cert > "$work/out" 2>&1
check "create-cert refuses to replace own without --force" grep -q "exists (--force replaces it)" "$work/out"
# create-cert --out-dir: nothing planted in the directory is followed or receives the key.
outS="$work/outS"
mkdir -m 700 "$outS"
ln -s "$work/victim.txt" "$outS/key.pem"
ln -s "$work/victim.txt" "$outS/cert.pem"
"$uaplex" pki --pki "$pki" create-cert --uri urn:cli-test:s --out-dir "$outS" > /dev/null 2>&1
check "create-cert: a symlink planted at key.pem is not followed" test "$(cat "$work/victim.txt")" = victim
check "create-cert: the victim keeps its mode" test "$(stat -c %a "$work/victim.txt")" = 644
check "create-cert: key.pem is a new private file" bash -c "test ! -L '$outS/key.pem' && test \"\$(stat -c %a '$outS/key.pem')\" = 600 && grep -q 'BEGIN PRIVATE KEY' '$outS/key.pem'"
check "create-cert: cert.pem is not written through a symlink" bash -c "test ! -L '$outS/cert.pem' && grep -q 'BEGIN CERTIFICATE' '$outS/cert.pem'"
outP="$work/outP"
mkdir -m 700 "$outP"
echo planted > "$outP/key.pem"
chmod 666 "$outP/key.pem"
ln "$outP/key.pem" "$work/planted-link"  # what the planter keeps of its file
[ "$(id -u)" = 0 ] && chown 65534:65534 "$outP/key.pem"
"$uaplex" pki --pki "$pki" create-cert --uri urn:cli-test:p --out-dir "$outP" > /dev/null 2>&1
check "create-cert: a pre-created key.pem does not receive the key" test "$(cat "$work/planted-link")" = planted
check "create-cert: key.pem is the creator's own file, 0600" test "$(stat -c '%u %a %h' "$outP/key.pem")" = "$(id -u) 600 1"
(umask 000; "$uaplex" pki --pki "$pki" create-cert --uri urn:cli-test:f --out-dir "$work/fresh/sub" > /dev/null 2>&1)
check "create-cert: a new --out-dir is 0700" test "$(stat -c %a "$work/fresh/sub")" = 700
check "create-cert: the key is 0600 and the certificates 0644 under umask 000" test "$(stat -c %a "$work/fresh/sub/key.pem") $(stat -c %a "$work/fresh/sub/cert.der") $(stat -c %a "$work/fresh/sub/cert.pem")" = "600 644 644"
mkdir "$work/shared"
chmod 1777 "$work/shared"
"$uaplex" pki --pki "$pki" create-cert --uri urn:cli-test:w --out-dir "$work/shared" > /dev/null 2> "$work/err"
rc=$?
check "create-cert: a world-writable --out-dir is refused" bash -c "test $rc -eq 1 && grep -q 'writable by group or others' '$work/err' && ! test -e '$work/shared/key.pem'"
ln -s "$outS" "$work/out-link"
"$uaplex" pki --pki "$pki" create-cert --uri urn:cli-test:l --out-dir "$work/out-link" > /dev/null 2> "$work/err"
check "create-cert: a symlinked --out-dir is refused" grep -q "is a symbolic link" "$work/err"
ln -sf "$work/victim.txt" "$pki/own/private/uaplex.pem"
"$uaplex" pki --pki "$pki" create-cert --uri urn:cli-test:server --force > /dev/null 2>&1
check "create-cert --force: a symlink at own/private is not followed" bash -c "test \"\$(cat '$work/victim.txt')\" = victim && test ! -L '$pki/own/private/uaplex.pem' && test \"\$(stat -c %a '$pki/own/private/uaplex.pem')\" = 600"
# The key exists 0600 from its creation on: created exclusively, never following, 0600.
if command -v strace > /dev/null && strace -o /dev/null true 2> /dev/null; then
    (umask 000; strace -f -e trace=open,openat,creat -o "$work/strace" \
        "$uaplex" pki --pki "$pki" create-cert --uri urn:cli-test:t --out-dir "$work/traced" > /dev/null 2>&1)
    check "create-cert: the key file is created O_EXCL|O_NOFOLLOW with mode 0600" \
        grep -qE 'traced/key\.pem\.[0-9a-f]{16}\.tmp", O_WRONLY\|O_CREAT\|O_EXCL\|O_NOFOLLOW\|O_CLOEXEC, 0600\) = [0-9]' "$work/strace"
    check "create-cert: key.pem itself is never opened for writing" \
        bash -c "! grep -E 'traced/key\.pem\", O_(WRONLY|RDWR)' '$work/strace'"
else
    echo "skip: strace is not usable here (the creation-mode check)"
fi
"$uaplex" pki --pki "$pki" trust "$work/peer/cert.pem" > /dev/null
check "trust <file> copies into trusted/certs" test -s "$pki/trusted/certs/$thumb.der"
"$uaplex" pki --pki "$pki" list > "$work/out"
check "list shows own and trusted" bash -c "grep -q 'urn:cli-test:server' '$work/out' && grep -q '$thumb' '$work/out'"
"$uaplex" pki --pki "$pki" reject "$thumb" > /dev/null
check "reject <thumbprint> moves to rejected/certs" bash -c "test -s '$pki/rejected/certs/$thumb.der' && ! test -e '$pki/trusted/certs/$thumb.der'"
"$uaplex" pki --config "$work/secure.toml" trust "$thumb" > /dev/null
check "trust <thumbprint> with --config moves back" bash -c "test -s '$pki/trusted/certs/$thumb.der' && ! test -e '$pki/rejected/certs/$thumb.der'"
"$uaplex" pki --pki "$pki" trust 0000 > "$work/out" 2>&1
check "trust of an unknown thumbprint fails" test $? -ne 0
check "the user trust list is created with the store" test -d "$pki/trusted-users/crl" -a -d "$pki/issuers-users/certs"
"$uaplex" pki --pki "$pki" trust-user "$work/peer/cert.pem" > /dev/null
check "trust-user <file> copies into trusted-users/certs" test -s "$pki/trusted-users/certs/$thumb.der"
"$uaplex" pki --pki "$pki" trust-user "$work/nosuch.pem" > "$work/out" 2>&1
check "trust-user of a missing file fails" test $? -ne 0

if [ "$failures" -ne 0 ]; then
    echo "---- log"; cat "$work/log"
    exit 1
fi
