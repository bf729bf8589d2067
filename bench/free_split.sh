#!/usr/bin/env bash
# Where a policy's free GPU capacity lies after the openb arrivals (tune 1.3),
# per trace, as the mean over seeds of % of the cluster's GPU milli:
# allocation; free milli on GPUs that hold an 810-milli pod; residue under
# 100 milli on other partly used GPUs; larger gaps on nodes with 2 or more
# cores free; gaps on nodes with under 2 cores free; whole free GPUs.
# (bench/RESULTS.md, "Where the rest of the free capacity lies".)
#
# Usage: bench/free_split.sh [GPUPACK] [POLICY] [SEEDS] [TRACES]
#   GPUPACK  the binary (default build/gpupack)
#   POLICY   default dualfrag
#   SEEDS    e.g. "42 43" (default 42-51)
#   TRACES   default "default gpushare100 multigpu50 gpuspec33"
# Needs ../shared/traces/openb (or OPENB=DIR) and python3.
set -euo pipefail
BIN=${1:-build/gpupack}
POLICY=${2:-dualfrag}
SEEDS=${3:-"42 43 44 45 46 47 48 49 50 51"}
TRACES=${4:-"default gpushare100 multigpu50 gpuspec33"}
. "$(dirname "$0")/openb_state.sh"
echo "| trace | allocation | beside an 810 | residue < 100 | gap >= 100, CPU free | gap, CPU < 2 cores | whole free |"
echo "|---|---|---|---|---|---|---|"
for trace in $TRACES; do
  states=()
  for seed in $SEEDS; do
    openb_state "$seed" "$work/$trace-$seed.json" "$POLICY" "$trace"
    states+=("$work/$trace-$seed.json")
  done
  python3 - "$trace" "${states[@]}" <<'PY'
import collections, json, sys
parts = ["alloc", "beside810", "residue", "gap", "gap_cpu_bound", "whole"]
sums = collections.Counter()
for path in sys.argv[2:]:
    state = json.load(open(path))
    used = collections.Counter()  # (node, gpu) -> milli
    holds_810 = set()
    cpu_used = collections.Counter()
    for pod in state["pods"]:
        cpu_used[pod["node"]] += pod["cpu_milli"]
        for g in pod["gpus"]:
            used[(pod["node"], g)] += pod["gpu_milli"]
            if pod["gpu_milli"] == 810:
                holds_810.add((pod["node"], g))
    cap = 1000 * sum(n["gpus"] for n in state["nodes"])
    sums["alloc"] += sum(used.values()) / cap
    for n in state["nodes"]:
        cpu_free = n["cpu_milli"] - cpu_used[n["name"]]
        for g in range(n["gpus"]):
            free = 1000 - used[(n["name"], g)]
            if free == 0:
                continue
            if free == 1000:
                part = "whole"
            elif (n["name"], g) in holds_810:
                part = "beside810"
            elif free < 100:
                part = "residue"
            elif cpu_free < 2000:
                part = "gap_cpu_bound"
            else:
                part = "gap"
            sums[part] += free / cap
runs = len(sys.argv) - 2
print("| " + sys.argv[1] + " | " + " | ".join(f"{100 * sums[p] / runs:.2f}" for p in parts) + " |")
PY
done
