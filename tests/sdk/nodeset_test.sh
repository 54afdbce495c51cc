#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# nodeset_test.sh UAPLEX PLUGIN_DIR SOURCE_DIR PORT COMPANION_PLUGIN: the NodeSet2 loader.
#  1. Broken files: the server refuses to start (exit 1) and names file:line; nothing of
#     the files is served (the server never listens).
#  2. DI, Machinery and the test model load; node-opcua's client browses and reads them
#     (tests/interop/client/sdk/nodeset.test.js); COMPANION_PLUGIN implements methods of
#     the files (tests/sdk/plugins/test_companion.cpp), which the client calls.
set -euo pipefail
source "$(dirname "$0")/node_client.sh"
uaplex=$1 plugins=$2 src=$3 port=$4 companion_plugin=${5:-}
client="$src/tests/interop/client"
companion="$src/schema/companion"
testmodel="$src/tests/sdk/data/Uaplex.Test.NodeSet2.xml"
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

config() {  # config FILE...: a configuration loading the given NodeSet2 files
  local list="" f
  for f in "$@"; do list+="${list:+, }\"$f\""; done
  cat <<TOML
[log]
level = "info"
sink = "file"
file = "$work/uaplex.log"
[host]
plugin_dirs = ["$plugins"]
[server]
endpoints = ["opc.tcp://127.0.0.1:$port"]
[slots]
request_queue = "fifo"
[plugins.fifo]
[plugins.transport-tcp]
[plugins.nodeset]
files = [$list]
[access]
anonymous_permissions = ["All"]   # the client writes as Anonymous
TOML
}

failures=0
expect_refused() {  # expect_refused NAME PATTERN FILE...
  local name=$1 pattern=$2
  shift 2
  config "$@" >"$work/bad.toml"
  rm -f "$work/uaplex.log"
  local status=0
  timeout 20 "$uaplex" --config "$work/bad.toml" >"$work/out" 2>&1 || status=$?
  if [ "$status" -ne 1 ]; then
    echo "FAIL $name: exit $status, expected 1"; failures=$((failures + 1)); return
  fi
  if ! grep -Eq -- "$pattern" "$work/uaplex.log"; then
    echo "FAIL $name: log lacks /$pattern/"; cat "$work/uaplex.log"; failures=$((failures + 1)); return
  fi
  echo "ok   $name: $(grep -Eo -- "$pattern.*" "$work/uaplex.log" | head -n 1)"
}

# Broken copies of the test model, each wrong at a known line.
bad() {  # bad NAME LINE SED_SCRIPT -> path of a copy with line LINE edited
  sed "$2$3" "$testmodel" >"$work/$1.xml"
  cmp -s "$testmodel" "$work/$1.xml" && { echo "edit for $1 did not apply"; exit 1; }
  echo "$work/$1.xml"
}
di="$companion/Opc.Ua.Di.NodeSet2.xml"
mach="$companion/Opc.Ua.Machinery.NodeSet2.xml"
line_of() { grep -n -- "$1" "$testmodel" | head -n 1 | cut -d: -f1; }

l=$(line_of '<Label>origin')
expect_refused mismatched-tag "$work/tag.xml:$l: </Labl> closes <Label>" \
  "$di" "$(bad tag "$l" 's#</Label>#</Labl>#')"
l=$(line_of '<X>1.5</X>')
expect_refused bad-number "$work/number.xml:$l: 'one' is not a valid number" \
  "$di" "$(bad number "$l" 's#<X>1.5</X>#<X>one</X>#')"
l=$(line_of 'Field Name="Color"')
expect_refused unknown-alias "$work/alias.xml:$l: bad NodeId 'NoSuchAlias'" \
  "$di" "$(bad alias "$l" 's#DataType="ns=1;i=3000"#DataType="NoSuchAlias"#')"
l=$(line_of 'ns=1;i=3021</uax:Identifier>')
expect_refused unknown-structure "$work/struct.xml:$l: ExtensionObject of unknown structure" \
  "$di" "$(bad struct "$l" 's#ns=1;i=3021#ns=1;i=3999#')"
l=$(line_of 'RequiredModel ModelUri="http://opcfoundation.org/UA/DI/"')
expect_refused required-model "Machinery.NodeSet2.xml:[0-9]+: requires model http://opcfoundation.org/UA/DI/" "$mach"
expect_refused required-version "$work/version.xml:$l: requires model http://opcfoundation.org/UA/DI/ version 9.0" \
  "$di" "$(bad version "$l" 's#Version="1.04.0"#Version="9.0"#')"
l=$(line_of '<UAVariable NodeId="ns=1;i=5002"')
expect_refused duplicate-node "$work/dup.xml:$l: node ns=[0-9]+;i=5002 is defined twice" \
  "$di" "$(bad dup "$l" 's#ns=1;i=5002#ns=1;i=5001#; s#i=5001"#i=5002"#')"
printf '<?xml version="1.0"?>\n<!DOCTYPE x [<!ENTITY a "aaaa">]>\n<UANodeSet/>\n' >"$work/doctype.xml"
expect_refused doctype "$work/doctype.xml:2: DOCTYPE" "$work/doctype.xml"
expect_refused missing-file "$work/none.xml:0: cannot open" "$work/none.xml"
if [ $failures -ne 0 ]; then exit 1; fi

command -v node >/dev/null && command -v npm >/dev/null || { echo "node/npm missing: skipped"; exit 77; }
config "$di" "$mach" "$testmodel" >"$work/good.toml"
printf '[plugins.test-companion]\nlibrary = "%s"\n' "$companion_plugin" >>"$work/good.toml"
serve_and_run_client "$uaplex" "$work/good.toml" "$port" "$work/uaplex.log" sdk/nodeset.test.js
