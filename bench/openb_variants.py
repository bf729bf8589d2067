#!/usr/bin/env python3
"""Fourteen openb-like pod lists for checking a policy beyond the four traces in
../shared/traces/openb (bench/RESULTS.md, "dualfrag: the whole-node reserve").
They stand in for the FGD paper's other traces; they are not those traces.

  cpu50, cpu100, cpu200  default plus copies of its CPU-only pods (drawn with
                         replacement, renamed) adding 50/100/200% of their CPU
  gs30, gs60             default with each pod replaced by its gpushare100 row
                         (same name) with probability 0.3 / 0.6
  mg20, mg35             default plus each multigpu50 pod absent from default
                         with probability 20/50 / 35/50
  gs_keep25/50/75        gpuspec33 with gpu_spec cleared on each constrained pod
                         with probability 1 - K% (bench/RESULTS.md, "poolfrag")
  cpu250                 as cpu50, adding 250% of the CPU-only pods' CPU
  gs20, gs45, gs80       as gs30, with probability 0.2 / 0.45 / 0.8

Usage: bench/openb_variants.py OUTDIR [OPENB]   (OPENB default ../shared/traces/openb)
Writes OUTDIR/openb_pod_list_<name>.csv; deterministic (one random.Random(11)
drawn in the order above for the first seven; a random.Random(7) per gs_keep
trace, one draw per constrained pod in file order; one random.Random(23) for
the last four, in the order above).
"""
import csv
import os
import random
import sys


def load(openb, trace):
    with open(os.path.join(openb, f"openb_pod_list_{trace}.csv"), newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    openb = sys.argv[2] if len(sys.argv) > 2 else "../shared/traces/openb"
    if not os.path.isdir(openb):
        print(f"skipped: {openb} not found")
        return
    os.makedirs(out, exist_ok=True)
    fields, default = load(openb, "default")
    _, gpushare = load(openb, "gpushare100")
    _, multigpu = load(openb, "multigpu50")
    spec_fields, gpuspec = load(openb, "gpuspec33")

    def write(name, rows, columns=None):
        with open(os.path.join(out, f"openb_pod_list_{name}.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=columns or fields)
            w.writeheader()
            w.writerows(rows)

    rng = random.Random(11)
    cpu_only = [r for r in default if r["num_gpu"] == "0"]
    base_cpu = sum(int(r["cpu_milli"]) for r in cpu_only)
    for pct in (50, 100, 200):
        rows, added, i = list(default), 0, 0
        while added < base_cpu * pct / 100:
            r = dict(rng.choice(cpu_only))
            r["name"] = f"cpux-{pct}-{i:05d}"
            i += 1
            rows.append(r)
            added += int(r["cpu_milli"])
        write(f"cpu{pct}", rows)
    shared = {r["name"]: r for r in gpushare}
    for pct in (30, 60):
        write(f"gs{pct}", [shared[r["name"]] if r["name"] in shared and rng.random() < pct / 100 else r
                           for r in default])
    names = {r["name"] for r in default}
    extra = [r for r in multigpu if r["name"] not in names]
    for pct in (20, 35):
        write(f"mg{pct}", list(default) + [r for r in extra if rng.random() < pct / 50])
    for keep in (25, 50, 75):
        keep_rng, rows = random.Random(7), []
        for r in gpuspec:
            r = dict(r)
            if r["gpu_spec"] and keep_rng.random() >= keep / 100:
                r["gpu_spec"] = ""
            rows.append(r)
        write(f"gs_keep{keep}", rows, spec_fields)
    rng = random.Random(23)
    rows, added, i = list(default), 0, 0
    while added < base_cpu * 2.5:
        r = dict(rng.choice(cpu_only))
        r["name"] = f"cpux-250-{i:05d}"
        i += 1
        rows.append(r)
        added += int(r["cpu_milli"])
    write("cpu250", rows)
    for pct in (20, 45, 80):
        write(f"gs{pct}", [shared[r["name"]] if r["name"] in shared and rng.random() < pct / 100 else r
                           for r in default])


if __name__ == "__main__":
    main()
