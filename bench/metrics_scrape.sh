#!/usr/bin/env bash
# /metrics as Prometheus sees it: `gpupack serve` on a snapshot of N 8-GPU
# nodes whose GPUs hold shared pods of S distinct sizes (about 1.6 pods per
# GPU, placed at random, each GPU at most full), scraped by curl from another
# process. Prints, per run, the first scrape after the start (the repack
# bound's LP solved, docs/SERVE.md "The repack bound") and the median of the
# next K scrapes (the pods unchanged: the LP's result reused), in ms, and the
# repack series of the last scrape.
# Usage: bench/metrics_scrape.sh <gpupack-binary> [nodes=1000] [sizes=20] [scrapes=20] [runs=3]
set -euo pipefail
gpupack="${1:?usage: metrics_scrape.sh <gpupack-binary> [nodes] [sizes] [scrapes] [runs]}"
nodes="${2:-1000}"
sizes="${3:-20}"
scrapes="${4:-20}"
runs="${5:-3}"
work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT

python3 - "$work" "$nodes" "$sizes" <<'EOF'
import json, random, sys
work, n_nodes, n_sizes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(5)
sizes = sorted({1 + i * 998 // max(1, n_sizes - 1) for i in range(n_sizes)})
nodes, pods = [], []
for n in range(n_nodes):
    name = f"node-{n:05d}"
    alloc = {"cpu": "256", "memory": "2048Gi", "pods": "250", "nvidia.com/gpu": "8"}
    nodes.append({"apiVersion": "v1", "kind": "Node",
                  "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}},
                  "spec": {}, "status": {"capacity": alloc, "allocatable": alloc,
                                         "conditions": [{"type": "Ready", "status": "True"}]}})
    for g in range(8):
        free = 1000
        for _ in range(3):
            fits = [s for s in sizes if s <= free]
            if not fits or rng.random() < 0.3:
                break
            s = rng.choice(fits)
            free -= s
            pname = f"p-{len(pods):06d}"
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": pname, "namespace": "ml", "uid": "uid-" + pname,
                                      "annotations": {"gpupack.io/gpu-milli": str(s),
                                                      "gpupack.io/assigned-gpus": f"{name}:{g}@{s}"}},
                         "spec": {"schedulerName": "gpupack-scheduler", "nodeName": name,
                                  "containers": [{"name": "main", "image": "x",
                                                  "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                                                                "requests": {"cpu": "1", "memory": "1Gi"}}}]},
                         "status": {"phase": "Running"}})
json.dump({"apiVersion": "v1", "kind": "List", "items": nodes}, open(f"{work}/nodes.json", "w"))
json.dump({"apiVersion": "v1", "kind": "List", "items": pods}, open(f"{work}/pods.json", "w"))
print(f"# {n_nodes} nodes, {len(pods)} pods, {len(sizes)} distinct sizes", file=sys.stderr)
EOF

ms() { curl -s -o "$work/scrape.txt" -w '%{time_total}' "http://127.0.0.1:$port/metrics" | awk '{printf "%.2f", $1 * 1000}'; }
for r in $(seq 1 "$runs"); do
  "$gpupack" serve --nodes "$work/nodes.json" --pods "$work/pods.json" --listen 127.0.0.1:0 \
    --log-level info 2> "$work/log" &
  pid=$!
  port=""
  for _ in $(seq 1 600); do
    port=$(grep -o 'listen=127.0.0.1:[0-9]*' "$work/log" | head -1 | cut -d: -f2 || true)
    [ -n "$port" ] && curl -sf "http://127.0.0.1:$port/readyz" > /dev/null && break
    sleep 0.1
  done
  first=$(ms)
  rest=$(for _ in $(seq 1 "$scrapes"); do ms; echo; done | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  series=$(grep -E '^gpupack_(repack_freeable|size_waste)_gpus ' "$work/scrape.txt" | tr '\n' ' ')
  echo "{\"run\": $r, \"first_scrape_ms\": $first, \"median_next_ms\": $rest, \"series\": \"$series\"}"
  kill "$pid"
  wait "$pid" 2>/dev/null || true
  pid=""
done
