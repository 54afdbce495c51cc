#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# abi_compat_break.sh PYTHON CC FROZEN_INCLUDE SDK_INCLUDE GEN_INCLUDE: the compatibility
# check must pass an appended field and fail each kind of break on a copy of the headers.
set -euo pipefail
py=$1 cc=$2 frozen=$3 sdk=$4 gen=$5
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

check() {  # check NAME EXPECTED_STATUS SED_SCRIPT FILE
  local name=$1 expected=$2 script=$3 file=$4
  rm -rf "$work/inc" && mkdir -p "$work/inc" && cp -r "$sdk/uaplex" "$work/inc/"
  sed -i "$script" "$work/inc/uaplex/$file"
  if cmp -s "$sdk/uaplex/$file" "$work/inc/uaplex/$file"; then
    echo "FAIL $name: the edit did not apply"; failures=$((failures + 1)); return
  fi
  local status=0
  "$py" "$here/tools/abi/abi_compat.py" --cc "$cc" --old "$frozen" --new "$work/inc" --new "$gen" \
    >"$work/out" 2>&1 || status=$?
  if [ "$status" -ne "$expected" ]; then
    echo "FAIL $name: exit $status, expected $expected"; cat "$work/out"; failures=$((failures + 1))
  else
    echo "ok   $name: $(head -n 2 "$work/out" | tail -n 1)"
  fi
}

# An entry inserted before the last one moves it; appended after it: compatible.
check insert-before-last 1 '/uaplex_status (\*value_set)/i\    uaplex_status (*appended_probe)(uaplex_plugin_ctx* ctx);' host.h
check append-entry-end 0 's/^} uaplex_host_api;/    uaplex_status (*appended_probe)(uaplex_plugin_ctx* ctx);\n} uaplex_host_api;/' host.h
# A field inserted in the middle moves every later one.
check insert-middle 1 's/^    uint32_t reserved0;$/    uint32_t reserved0;\n    uint64_t inserted;/' host.h
# Two function-table entries swapped.
check reorder-entries 1 '/(\*stop)(void\* self);/{h;d};/(\*destroy)(void\* self);/{G}' node_manager.h
# A field removed.
check remove-field 1 '/int32_t is_forward;/d' node_manager.h
# A field's type narrowed.
check shrink-field 1 's/uint32_t access_level; /uint16_t access_level; /' node_manager.h
# An enumerator renumbered.
check enum-value 1 's/UAPLEX_LOG_WARN = 3/UAPLEX_LOG_WARN = 9/' host.h
# An entry's signature changed without moving it.
check signature 1 's/uaplex_status (\*mem_free)(uaplex_plugin_ctx\* ctx, void\* ptr);/uaplex_status (*mem_free)(uaplex_plugin_ctx* ctx, const void* ptr);/' host.h
exit $failures
