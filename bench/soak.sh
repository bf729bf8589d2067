#!/usr/bin/env bash
# Soak of `gpupack serve` in API mode: 16 schedulers (tests/e2e/scheduler
# soak) take pending pods from a fake API and filter, prioritize and bind
# them through the extender, with /metrics scrapes mixed in; the fake API
# deletes each pod a few seconds after its bind and adds a new pending one,
# so the work never runs out and the model keeps changing (watch events,
# reloads). Prints one JSON line per interval: requests and p50/p99 per verb,
# errors, and the server's RSS.
# Usage: bench/soak.sh <gpupack-binary> [duration=10m] [report=1m] [clients=16] [nodes=1000] [pods=2000]
set -euo pipefail
gpupack="${1:?usage: soak.sh <gpupack-binary> [duration] [report] [clients] [nodes] [pods]}"
duration="${2:-10m}"
report="${3:-1m}"
clients="${4:-16}"
nodes="${5:-1000}"
pods="${6:-2000}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null; rm -rf "$work"' EXIT
. "$here/../tests/e2e/lib.sh"
sched="$("$here/../tests/e2e/build_scheduler.sh" "$work")"
"$sched" synth -nodes "$nodes" -pods "$pods" -out "$work"
start_fake_api "$sched" "$work" -churn-after 3s
"$gpupack" serve --kubeconfig "$work/kubeconfig" --policy fgd --listen 127.0.0.1:0 --port-file "$work/port" \
  2>"$work/serve.log" &
serve_pid=$!
pids+=("$serve_pid")
wait_for "$work/port" "$work/serve.log"
"$sched" soak -extender "http://127.0.0.1:$(cat "$work/port")" -api "$api" -nodes "$work/nodes.json" \
  -clients "$clients" -duration "$duration" -report "$report" -pid "$serve_pid"
