#!/usr/bin/env bash
# Runs the benchmarks and whole-command timings that bench/RESULTS.md records.
# Usage: bench/run.sh [build-dir]. Needs ../shared/traces/openb for the openb cases.
set -euo pipefail
BUILD=${1:-build}
SHARED=${GPUPACK_SHARED:-../shared}
OPENB=$SHARED/traces/openb
REPS=${REPS:-5}

echo "# machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "# date: $(date -u +%Y-%m-%dT%H:%MZ)"

for b in "$BUILD"/bench/*_bench; do
  echo "## $(basename "$b")"
  "$b" --benchmark_repetitions="$REPS" --benchmark_report_aggregates_only=true
done

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

# Whole-process wall time and peak memory, median of $REPS runs.
timed() {
  local label=$1; shift
  local walls=() rss=()
  for _ in $(seq "$REPS"); do
    local out
    out=$( { /usr/bin/time -f "%e %M" "$@" > /dev/null; } 2>&1 | tail -1)
    walls+=("${out% *}"); rss+=("${out#* }")
  done
  printf '%-46s wall %6.2f s (median of %d)   peak RSS %6.1f MB\n' "$label" \
    "$(printf '%s\n' "${walls[@]}" | median)" "$REPS" "$(printf '%s\n' "${rss[@]}" | median | awk '{print $1/1024}')"
}

if [ -f "$OPENB/openb_pod_list_default.csv" ]; then
  echo "## whole commands"
  timed "fgd, openb default, 1 seed" "$BUILD"/gpupack simulate --nodes "$OPENB"/openb_node_list_gpu_node.csv \
    --pods "$OPENB"/openb_pod_list_default.csv --policy fgd --seeds 42 --quiet
  timed "six paper policies x 10 seeds, openb default" "$BUILD"/gpupack simulate \
    --nodes "$OPENB"/openb_node_list_gpu_node.csv --pods "$OPENB"/openb_pod_list_default.csv \
    --policy random,dotprod,gpuclustering,gpupacking,bestfit,fgd --seeds 42-51 --quiet
else
  echo "## whole commands: skipped, $OPENB not found"
fi
REPS=3 timed "fgd, synthetic 12,000 nodes, 1 seed" "$BUILD"/gpupack simulate --synthetic-nodes 12000 \
  --policy fgd --seeds 42 --quiet
