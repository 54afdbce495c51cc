#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Adds the inputs of a fuzz run that reach new coverage to the committed corpus.
#   tests/fuzz/merge_corpus.sh <target> <dir-with-new-inputs> [build/fuzz]
# Build the fuzzers first (make fuzz). Review and commit tests/fuzz/corpus/<target>.
set -eu
target=$1
inputs=$2
build=${3:-build/fuzz}
here=$(cd "$(dirname "$0")" && pwd)
exec "$build/bin/fuzz_$target" -merge=1 "$here/corpus/$target" "$inputs"
