#!/usr/bin/env bash
# The openb traces against the bound their pod sizes set (docs/SIMULATE.md,
# "How far from the best packing"): per trace, the packing bound of the
# workload's mix, and per policy the mean over seeds (tune 1.3) of the
# allocation, the free capacity, the size waste of the pods placed, the rest
# of the free capacity (what the placement left), and the bound of the mix
# held, alloc x 100 / (alloc + size waste): the most a cluster holding pods
# in the proportions this policy ended with could hold. All in % of the
# cluster's GPU milli. (bench/RESULTS.md, "A bound from the sizes".)
#
# Usage: bench/size_bound.sh [GPUPACK] [POLICIES] [SEEDS] [TRACES]
#   GPUPACK   the binary (default build/gpupack)
#   POLICIES  default fgd,bestfit,capfrag,poolfrag,dualfrag
#   SEEDS     default 42-51
#   TRACES    default "default gpushare100 multigpu50 gpuspec33"
# Needs ../shared/traces/openb (or OPENB=DIR) and python3.
set -euo pipefail
BIN=${1:-build/gpupack}
POLICIES=${2:-fgd,bestfit,capfrag,poolfrag,dualfrag}
SEEDS=${3:-42-51}
TRACES=${4:-"default gpushare100 multigpu50 gpuspec33"}
OPENB=${OPENB:-../shared/traces/openb}
[ -d "$OPENB" ] || { echo "skipped: $OPENB not found (set OPENB=DIR)"; exit 0; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| trace | bound of the mix | policy | allocation | free | size waste | left by the placement | bound of the mix held |"
echo "|---|---|---|---|---|---|---|---|"
for trace in $TRACES; do
  "$BIN" simulate --nodes "$OPENB/openb_node_list_gpu_node.csv" --pods "$OPENB/openb_pod_list_$trace.csv" \
    --policy "$POLICIES" --seeds "$SEEDS" --tune 1.3 --quiet --out "$work/$trace" > /dev/null
  python3 - "$trace" "$work/$trace/summary.json" "$POLICIES" <<'PY'
import json, sys
trace, path, policies = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
summary = json.load(open(path))
bound = summary["mix_packing_bound_pct"]
for name in policies:
    p = summary["policies"][name]
    alloc, waste = p["mean_final_alloc_pct"], p["mean_size_waste_pct"]
    rest = 100 - alloc - waste
    print(f"| {trace} | {bound:.2f} | {name} | {alloc:.2f} | {100 - alloc:.2f} | {waste:.2f} | {rest:.2f} | {100 * alloc / (alloc + waste):.2f} |")
PY
done
