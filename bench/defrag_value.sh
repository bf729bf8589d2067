#!/usr/bin/env bash
# The defrag planner under a cost-to-value rule (--max-moves-per-gpu,
# defrag/refine.h trim_to_value), per seed, move cap and limit, on the openb
# default trace (FGD, tune 1.3).
#
# Usage: bench/defrag_value.sh [GPUPACK] [SEEDS] [CAPS] [LIMITS]
#   GPUPACK  the binary (default build/gpupack)
#   SEEDS    e.g. "42 43" (default 42-51)
#   CAPS     move caps in % of running pods (default "5")
#   LIMITS   moves per GPU admitted (default "-1 8 4 2 1"; -1 = no rule)
# Needs ../shared/traces/openb (or OPENB=DIR) and python3. Prints one row per
# seed, cap and limit (GPU milli admitted, moves, moves per GPU, seconds),
# then the means per cap and limit.
set -euo pipefail
BIN=${1:-build/gpupack}
SEEDS=${2:-"42 43 44 45 46 47 48 49 50 51"}
CAPS=${3:-"5"}
LIMITS=${4:-"-1 8 4 2 1"}
. "$(dirname "$0")/openb_state.sh"
echo "| seed | cap | moves per GPU at most | admitted milli | moves | moves per GPU | s | algorithm |"
echo "|---|---|---|---|---|---|---|---|"
for seed in $SEEDS; do
  openb_state "$seed" "$work/state.json"
  for cap in $CAPS; do
    for limit in $LIMITS; do
      "$BIN" defrag --state "$work/state.json" --max-moves-pct "$cap" --max-moves-per-gpu "$limit" --format json \
        -o "$work/p.json"
      python3 - "$work/p.json" "$seed" "$cap" "$limit" >> "$work/rows" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
per = p["moves_per_gpu_admitted"]
print(f"| {sys.argv[2]} | {sys.argv[3]}% | {sys.argv[4]} | {p['after']['admitted_gpu_milli']} | {p['moves']} | "
      f"{'-' if per is None else f'{per:.1f}'} | {p['plan_seconds']:.2f} | {p['algorithm']} |")
PY
      tail -1 "$work/rows"
    done
  done
done
python3 - "$work/rows" <<'PY'
import sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.strip().strip("|").split("|")]
    rows[(f[1], f[2])].append((float(f[3]), float(f[4]), float(f[6])))
print("\n| cap | moves per GPU at most | mean admitted milli | mean moves | moves per GPU (means) | longest s |")
print("|---|---|---|---|---|---|")
for (cap, limit), r in rows.items():
    n = len(r)
    a = sum(x[0] for x in r) / n
    m = sum(x[1] for x in r) / n
    print(f"| {cap} | {limit} | {a:.0f} | {m:.1f} | {m / (a / 1000) if a else 0:.1f} | {max(x[2] for x in r):.2f} |")
PY
