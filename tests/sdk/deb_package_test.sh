#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# deb_package_test.sh BUILD_DIR: builds the Debian package with CPack and checks that it
# holds the server, the shipped plugins, the SDK headers with the CMake package, and the
# default configuration.
set -euo pipefail
build=$1
command -v dpkg-deb >/dev/null || { echo "dpkg-deb missing: skipped"; exit 77; }
rm -rf "$build/package"
(cd "$build" && cpack -G DEB >"$build/cpack.log" 2>&1) || { cat "$build/cpack.log"; exit 1; }
deb=$(ls "$build"/package/uaplex_*.deb)
dpkg-deb -c "$deb" >"$build/package/contents.txt"
dpkg-deb -f "$deb" Package Version Depends
missing=0
for f in ./opt/uaplex/bin/uaplex ./opt/uaplex/etc/uaplex/uaplex.toml \
         ./opt/uaplex/lib/uaplex/plugins/uaplex-transport-tcp.so \
         ./opt/uaplex/lib/uaplex/plugins/uaplex-fair.so ./opt/uaplex/lib/uaplex/plugins/uaplex-demo.so \
         ./opt/uaplex/include/uaplex/uaplex.h ./opt/uaplex/include/uaplex/host.h \
         ./opt/uaplex/include/uaplex/statuscodes.h ./opt/uaplex/include/uaplex/cpp/kinds.hpp \
         ./opt/uaplex/lib/cmake/uaplex/uaplexConfig.cmake \
         ./opt/uaplex/lib/uaplex/plugins/uaplex-nodeset.so \
         ./opt/uaplex/share/uaplex/nodesets/Opc.Ua.Di.NodeSet2.xml; do
  grep -q " $f\$" "$build/package/contents.txt" || { echo "missing from $deb: $f"; missing=1; }
done
exit $missing
