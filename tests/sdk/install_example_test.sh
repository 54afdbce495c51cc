#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install_example_test.sh CMAKE BUILD_DIR SOURCE_DIR PORT: installs the build into a fresh
# prefix, checks the installed layout, builds examples/vendor-plugin against that prefix
# only (find_package(uaplex)), runs the installed server with the installed default
# configuration plus the example, and lets node-opcua's client browse, read, write and
# subscribe (tests/interop/client/sdk/vendor-device.test.js).
set -euo pipefail
source "$(dirname "$0")/node_client.sh"
cmake=$1 build=$2 src=$3 port=$4
client="$src/tests/interop/client"
work="$build/sdk-install-test"
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT
rm -rf "$work" && mkdir -p "$work"
prefix="$work/prefix"

echo "--- install into $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"
for f in bin/uaplex etc/uaplex/uaplex.toml include/uaplex/uaplex.h include/uaplex/statuscodes.h \
         include/uaplex/cpp/address_space.hpp lib/cmake/uaplex/uaplexConfig.cmake \
         lib/cmake/uaplex/uaplexTargets.cmake lib/uaplex/plugins/uaplex-transport-tcp.so \
         lib/uaplex/plugins/uaplex-fair.so; do
  [ -e "$prefix/$f" ] || { echo "missing in the install: $f"; exit 1; }
done
"$prefix/bin/uaplex" --version

echo "--- build examples/vendor-plugin against the prefix only"
# A copy outside the source tree, so nothing but the prefix can be found.
cp -r "$src/examples/vendor-plugin" "$work/vendor-plugin"
"$cmake" -S "$work/vendor-plugin" -B "$work/vendor-build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/example-configure.log" ||
  { cat "$work/example-configure.log"; exit 1; }
"$cmake" --build "$work/vendor-build" >"$work/example-build.log" 2>&1 ||
  { cat "$work/example-build.log"; exit 1; }
[ -e "$work/vendor-build/uaplex-vendor-device.so" ] || { echo "example plugin not built"; exit 1; }
if grep -q -- "-I$src" "$work/vendor-build/compile_commands.json" 2>/dev/null; then
  echo "the example saw the source tree"; exit 1
fi

echo "--- run the installed server with the installed configuration and the example"
command -v node >/dev/null && command -v npm >/dev/null || { echo "node/npm missing: skipped"; exit 77; }
cfg="$work/uaplex.toml"
sed -e "s#^endpoints = .*#endpoints = [\"opc.tcp://127.0.0.1:$port\"]#" \
    -e "s#^plugin_dirs = \[\(.*\)\]#plugin_dirs = [\1, \"$work/vendor-build\"]#" \
    -e "s#^listen = .*#listen = \"127.0.0.1:0\"#" \
    -e "s#^request_threads = .*#request_threads = 1#" \
    -e "s#^sink = .*#sink = \"file\"\nfile = \"$work/uaplex.log\"#" \
    "$prefix/etc/uaplex/uaplex.toml" >"$cfg"
# The relative paths of the installed file resolve against its directory, as they would there.
printf '\n[plugins.vendor-device]\nperiod_ms = 50\ndevice_name = "Pump7"\nslow_read_ms = 500\n' >>"$cfg"
# The example's client writes the Setpoint as Anonymous: granted explicitly.
printf '\n[access]\nanonymous_permissions = ["All"]\n' >>"$cfg"
grep -q "$work/vendor-build" "$cfg" || { echo "could not add the example's directory"; exit 1; }

serve_and_run_client "$prefix/bin/uaplex" "$cfg" "$port" "$work/uaplex.log" sdk/vendor-device.test.js
