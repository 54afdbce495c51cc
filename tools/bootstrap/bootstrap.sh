#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs every Debian package the build and the tests need. Idempotent and silent
# when everything is already there.
set -euo pipefail

pkgs=(
  build-essential cmake make pkg-config python3 git ccache
  libboost-dev libssl-dev openssl libtomlplusplus-dev libspdlog-dev libfmt-dev catch2
  libsqlite3-dev   # [persistence]
  libbenchmark-dev clang libclang-rt-14-dev
  clang-tidy-14   # the tidy test (ctest -L tidy)
  curl   # the opc.https tests drive the server with it
  python3-matplotlib   # make soak plots its samples
  iproute2 ethtool     # the netfault test: namespaces, veth, tc; offloads off for impair.py
  libmosquitto-dev     # plugins/pubsub/mqtt (docs/pubsub.md)
  mosquitto mosquitto-clients nlohmann-json3-dev   # the PubSub tests: broker, JSON checks
  libpq-dev            # plugins/history/postgres
  postgresql           # its tests: initdb and postgres for a throw-away server
)
# Node.js and npm drive the interop tests; keep a newer Node.js when one is installed.
command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
command -v npm >/dev/null 2>&1 || pkgs+=(npm)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "bootstrap: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
