#!/usr/bin/env bash
# Runs the extender libFuzzer target (built by CMake with GPUPACK_FUZZ=ON:
# clang, -fsanitize=fuzzer,address,undefined) for a bounded number of
# iterations over the checked-in seeds plus the real captures when present.
# Usage: tests/fuzz/run.sh <fuzz-binary> <work-dir> [shared-dir] [runs]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${1:?usage: run.sh <fuzz-binary> <work-dir> [shared-dir] [runs]}"
work="${2:?usage: run.sh <fuzz-binary> <work-dir> [shared-dir] [runs]}"
shared="${3:-$root/../shared}"
runs="${4:-20000}"

mkdir -p "$work/corpus"
cp "$here"/corpus/* "$work/corpus/"
if [ -d "$shared/reference/extender-captures" ]; then
  cp "$shared"/reference/extender-captures/*.json "$work/corpus/"
else
  echo "run.sh: $shared/reference/extender-captures not found; fuzzing from checked-in seeds only"
fi

"$bin" -runs="$runs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -seed=1 "$work/corpus"
