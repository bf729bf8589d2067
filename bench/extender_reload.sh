#!/usr/bin/env bash
# `gpupack serve` at scale in API mode, reloading while it answers: N empty
# 8-GPU nodes listed and watched from the Go fake API; the Go client
# (tests/e2e/scheduler bench) sends kube-scheduler's rotating SUBSET-node
# NodeNames windows, filter then prioritize, its collector outside the timed
# window, and every BIND_EVERY pairs binds a pod to the chosen node through
# the API. Each Binding is a watch event, and the fake API deletes each bound
# pod a second later and adds a new pending one (two more events): serve
# applies them to its model in place (FULL_RELOADS=1: serve --full-reloads
# rebuilds its whole model for each, outside its lock, as before), while
# requests keep coming. Prints one JSON line per run (p50/p99/max of each
# verb, bindings), then the server's reload and in-place update counts from
# /metrics.
# Usage: bench/extender_reload.sh <gpupack-binary> [nodes=100000] [calls=600] [runs=2] [bind_every=20] [subset=5000]
set -euo pipefail
gpupack="${1:?usage: extender_reload.sh <gpupack-binary> [nodes] [calls] [runs] [bind_every] [subset]}"
nodes="${2:-100000}"
calls="${3:-600}"
runs="${4:-2}"
bind_every="${5:-20}"
subset="${6:-5000}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"' EXIT
. "$here/../tests/e2e/lib.sh"
sched="$("$here/../tests/e2e/build_scheduler.sh" "$work")"
# The first pod is the one scored; the others are bound, BIND_EVERY pairs apart.
"$sched" synth -nodes "$nodes" -pods $((calls * runs / bind_every + 2)) -out "$work"
start_fake_api "$sched" "$work" -churn-after 1s
"$gpupack" serve --kubeconfig "$work/kubeconfig" --policy fgd --assume off --listen 127.0.0.1:0 \
  --port-file "$work/port" ${FULL_RELOADS:+--full-reloads} 2>"$work/serve.log" &
pids+=($!)
wait_for "$work/port" "$work/serve.log" 120  # listing 100,000 nodes takes a while
url="http://127.0.0.1:$(cat "$work/port")"
for run in $(seq 1 "$runs"); do
  echo "{\"run\":$run,\"nodes\":$nodes,\"subset\":$subset,\"stats\":$("$sched" bench -extender "$url" \
    -nodes "$work/nodes.json" -pods "$work/pods.json" -calls "$calls" -subset "$subset" -quiet-gc \
    -api "$api" -bind-every "$bind_every" -bind-from $(((run - 1) * calls / bind_every + 1)))}"
done
curl -s -m 120 "$url/metrics" | grep -E "^gpupack_model_(reload|pod_updates)" || echo "no reload metrics (/metrics did not answer within 120 s)"
