#!/usr/bin/env bash
# The defrag planner with and without refinement (defrag/refine.h: drop the
# moves the admissions do not need, plan again with the moves saved), per
# seed and move cap, on the openb default trace (FGD, tune 1.3).
#
# Usage: bench/defrag_refine.sh [GPUPACK] [SEEDS] [CAPS]
#   GPUPACK  the binary (default build/gpupack)
#   SEEDS    e.g. "42 43" (default 42-51)
#   CAPS     move caps in % of running pods (default "1 2 5")
# Needs ../shared/traces/openb (or OPENB=DIR) and python3. Prints one row
# per seed and cap: GPU milli admitted, moves and planning seconds of each
# plan, then the means per cap.
set -euo pipefail
BIN=${1:-build/gpupack}
SEEDS=${2:-"42 43 44 45 46 47 48 49 50 51"}
CAPS=${3:-"1 2 5"}
. "$(dirname "$0")/openb_state.sh"
echo "| seed | cap | admitted milli, --no-refine | moves | s | admitted milli, refined | moves | s | gain |"
echo "|---|---|---|---|---|---|---|---|---|"
for seed in $SEEDS; do
  openb_state "$seed" "$work/state.json"
  for cap in $CAPS; do
    "$BIN" defrag --state "$work/state.json" --max-moves-pct "$cap" --no-refine --format json -o "$work/a.json"
    "$BIN" defrag --state "$work/state.json" --max-moves-pct "$cap" --format json -o "$work/b.json"
    python3 - "$work/a.json" "$work/b.json" "$seed" "$cap" >> "$work/rows" <<'PY'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
ma, mb = a["after"]["admitted_gpu_milli"], b["after"]["admitted_gpu_milli"]
gain = f"{100.0 * (mb - ma) / ma:+.1f}%" if ma > 0 else ("+inf" if mb > 0 else "0")
print(f"| {sys.argv[3]} | {sys.argv[4]}% | {ma} | {a['moves']} | {a['plan_seconds']:.2f} | {mb} | {b['moves']} | "
      f"{b['plan_seconds']:.2f} | {gain} |")
PY
    tail -1 "$work/rows"
  done
done
python3 - "$work/rows" <<'PY'
import sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.strip().strip("|").split("|")]
    rows[f[1]].append([float(f[i]) for i in (2, 3, 4, 5, 6, 7)])
print("\n| cap | mean admitted, --no-refine | moves | longest s | mean admitted, refined | moves | longest s |")
print("|---|---|---|---|---|---|---|")
for cap, r in rows.items():
    n = len(r)
    mean = lambda i: sum(x[i] for x in r) / n
    print(f"| {cap} | {mean(0):.0f} | {mean(1):.1f} | {max(x[2] for x in r):.2f} | {mean(3):.0f} | {mean(4):.1f} | "
          f"{max(x[5] for x in r):.2f} |")
PY
