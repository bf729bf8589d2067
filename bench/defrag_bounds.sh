#!/usr/bin/env bash
# Defrag plans against the two bounds on what any plan could admit, per seed
# and move cap, on the openb default trace (FGD, tune 1.3).
#
# Usage: bench/defrag_bounds.sh [GPUPACK] [SEEDS] [CAPS]
#   GPUPACK  the binary (default build/gpupack)
#   SEEDS    e.g. "42 43" (default 42-51)
#   CAPS     move caps in % of running pods (default "1 2 5")
# Needs ../shared/traces/openb (or OPENB=DIR) and python3. Prints one row
# per seed and cap: GPU allocation % before, after the plan, the LP bound,
# the Lagrangian bound (and the last two in GPU milli admitted); moves; the
# plan's share of the Lagrangian's gain; seconds of planning and of each
# bound.
set -euo pipefail
BIN=${1:-build/gpupack}
SEEDS=${2:-"42 43 44 45 46 47 48 49 50 51"}
CAPS=${3:-"1 2 5"}
. "$(dirname "$0")/openb_state.sh"
echo "| seed | cap | before % | plan % | LP bound % | Lagrangian bound % | plan milli | Lagrangian milli | moves | plan / Lagrangian gain | plan s | LP s | Lagrangian s |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for seed in $SEEDS; do
  openb_state "$seed" "$work/state.json"
  for cap in $CAPS; do
    "$BIN" defrag --state "$work/state.json" --max-moves-pct "$cap" --bound --format json -o "$work/plan.json"
    python3 - "$work/plan.json" "$seed" "$cap" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
b = j["bound"]
cap = b["capacity_gpu_milli"]
used = b["used_gpu_milli_before"]
pct = lambda admitted: 100.0 * (used + admitted) / cap
admitted = j["after"]["admitted_gpu_milli"]
lag = b["lagrangian"]["admitted_gpu_milli"]
share = 100.0 * admitted / lag if lag > 0 else 100.0
print(f"| {sys.argv[2]} | {sys.argv[3]}% | {pct(0):.2f} | {pct(admitted):.2f} | {pct(b['admitted_gpu_milli']):.2f} | "
      f"{pct(lag):.2f} | {admitted:,.0f} | {lag:,.0f} | {j['moves']} | {share:.1f}% | {j['plan_seconds']:.2f} | {b['seconds']:.1f} | "
      f"{b['lagrangian']['seconds']:.1f} |")
PY
  done
done
