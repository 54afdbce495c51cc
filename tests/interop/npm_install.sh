#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Installs the pinned node-opcua packages into tests/interop/node_modules (git-ignored).
# Quiet, and a no-op when node_modules already matches package-lock.json.
set -eu
cd "$(dirname "$0")"
stamp=node_modules/.uaplex-package-lock
if [ -f "$stamp" ] && cmp -s package-lock.json "$stamp"; then
    exit 0
fi
npm ci --no-audit --no-fund --loglevel=error >/dev/null
cp package-lock.json "$stamp"
