#!/usr/bin/env bash
# Builds the extender libFuzzer target with clang++ (-fsanitize=fuzzer,address)
# and runs a bounded number of iterations over a seed corpus.
# Usage: tests/fuzz/run.sh <work-dir> [shared-dir] [runs]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
work="${1:?usage: run.sh <work-dir> [shared-dir] [runs]}"
shared="${2:-$root/../shared}"
runs="${3:-20000}"

CXX="${FUZZ_CXX:-clang++}"
if ! command -v "$CXX" >/dev/null 2>&1; then
  echo "run.sh: $CXX not found; scripts/install-deps.sh installs clang and libclang-rt-14-dev" >&2
  exit 1
fi

mkdir -p "$work/corpus"
bin="$work/extender_fuzz"
sources=(
  "$here/extender_fuzz.cc"
  "$root/src/server/extender_wire.cc"
  "$root/src/server/extender_args_fast.cc"
  "$root/src/io/kubectl.cc"
  "$root/src/io/quantity.cc"
  "$root/src/io/dcgm.cc"
  "$root"/src/model/*.cc
  "$root"/src/mig/*.cc
  "$root"/src/util/*.cc
)
newest_src=$(ls -t "${sources[@]}" "$root"/src/server/*.h "$root"/src/io/*.h "$root"/src/model/*.h "$root"/src/util/*.h "$0" | head -1)
if [ ! -x "$bin" ] || [ "$newest_src" -nt "$bin" ]; then
  echo "run.sh: building $bin"
  "$CXX" -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I "$root/src" "${sources[@]}" -lfmt -lsimdjson -lyaml-cpp -o "$bin"
fi

# Seeds: the checked-in bodies, plus the real captures when present.
cp "$here"/corpus/* "$work/corpus/"
if [ -d "$shared/reference/extender-captures" ]; then
  cp "$shared"/reference/extender-captures/*.json "$work/corpus/"
else
  echo "run.sh: $shared/reference/extender-captures not found; fuzzing from checked-in seeds only"
fi

"$bin" -runs="$runs" -max_len=16384 -timeout=10 -rss_limit_mb=2048 -seed=1 "$work/corpus"
