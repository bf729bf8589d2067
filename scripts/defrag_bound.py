#!/usr/bin/env python3
"""Upper bounds on the GPU allocation a defrag plan can reach from a saved state.

Usage: scripts/defrag_bound.py STATE.json [--max-moves K]

STATE.json is a gpupack-state/v1 file (`gpupack simulate ... --save-state`).
Printed bounds (all relaxations, so no plan can beat them):

- pending: used + every pending pod's GPU milli.
- slivers (any number of moves, CPU and memory ignored): a shared pod above
  500 milli holds a GPU alone, leaving a sliver of 1000 - m that only pods of
  at most that size can use. The slivers are filled, fractionally, by every
  pod (bound or pending) small enough for them; what stays empty is lost.
- budget (K moves): admissions need GPUs with at least the smallest pending
  request free ("usable" space). One move raises usable space by at most
  the mover's milli plus (smallest pending - 1) when it lands on a sliver,
  and by at most (smallest pending - 1) otherwise.
"""
import argparse
import json


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("state")
    ap.add_argument("--max-moves", type=int, default=None)
    a = ap.parse_args()
    st = json.load(open(a.state))
    nodes = {n["name"]: n for n in st["nodes"]}
    capacity = sum(n["gpus"] for n in st["nodes"]) * 1000
    free = {(n["name"], g): 1000 for n in st["nodes"] for g in range(n["gpus"])}
    used = 0
    for p in st["pods"]:
        for g in p.get("gpus", []):
            free[(p["node"], g)] -= p["gpu_milli"]
        used += p["gpu_count"] * p.get("gpu_milli", 0)
    pending = st.get("pending", [])
    pend_milli = sum(p["gpu_count"] * p.get("gpu_milli", 0) for p in pending)
    gpu_pending = [p for p in pending if p["gpu_count"] > 0]
    smallest = min((p["gpu_milli"] for p in gpu_pending), default=1000)
    k = a.max_moves if a.max_moves is not None else len(st["pods"]) * 5 // 100

    slivers = sorted(1000 - p["gpu_milli"] for p in st["pods"]
                     if p["gpu_count"] == 1 and 500 < p["gpu_milli"] < 1000)
    small = sorted(p["gpu_milli"] for p in st["pods"] + pending
                   if p["gpu_count"] == 1 and p["gpu_milli"] <= 500)
    # Fractional fill: slivers in rising size; any remaining item that fits
    # a sliver fits every later one, so taking them in any order is optimal.
    fill, j, pool = 0, 0, 0
    for c in slivers:
        while j < len(small) and small[j] <= c:
            pool += small[j]
            j += 1
        take = min(pool, c)
        pool -= take
        fill += take
    lost = sum(slivers) - fill
    bound_slivers = min(capacity - lost, used + pend_milli)

    usable = sum(f for f in free.values() if f >= smallest)
    per_move = max(smallest - 1 + smallest - 1, smallest - 1)
    bound_budget = min(bound_slivers, used + usable + k * per_move)

    pct = lambda x: 100.0 * x / capacity
    print(f"capacity {capacity} milli, used {used} ({pct(used):.2f}%), free {capacity - used}")
    print(f"pending pods {len(pending)}, their GPU milli {pend_milli}, smallest shared request {smallest}")
    print(f"slivers beside pods > 500 milli: {len(slivers)} GPUs, {sum(slivers)} milli; "
          f"fillable by small pods {fill}; lost {lost}")
    print(f"bound, any moves, GPU only: {pct(bound_slivers):.2f}% (+{pct(bound_slivers) - pct(used):.2f} pp)")
    print(f"usable free now (GPUs with >= {smallest} free): {usable}")
    print(f"bound, {k} moves: {pct(bound_budget):.2f}% (+{pct(bound_budget) - pct(used):.2f} pp)")
    hist = {}
    for f in free.values():
        b = min(f // 100, 10)
        hist[b] = hist.get(b, 0) + f
    print("free milli by GPU free bucket:", {f"{b*100}-{b*100+99}" if b < 10 else "1000": v
                                           for b, v in sorted(hist.items())})


if __name__ == "__main__":
    main()
