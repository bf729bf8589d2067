#!/usr/bin/env bash
# Crash test of API mode: a scheduler (tests/e2e/scheduler) binds 1,000
# pods, one by one, through `gpupack serve`, which PATCHes the assignment and
# POSTs the Binding to a fake API; serve is killed with SIGKILL at a random
# moment. Every bind the scheduler saw acknowledged must be in the API, on its
# node, and no GPU may hold more than all of it; then serve restarts from the
# API, the scheduler binds the pods still pending, and the same holds.
# Several runs, each killed at another moment.
# Usage: api_kill.sh <gpupack-binary> <work-dir> [runs=3]
set -euo pipefail
gpupack="${1:?usage: api_kill.sh <gpupack-binary> <work-dir> [runs]}"
build="${2:?work dir}"
runs="${3:-3}"
. "$(dirname "$0")/lib.sh"
sched="$("$(dirname "$0")/build_scheduler.sh" "$build")"
work="$(mktemp -d)"
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT

serve() {  # log port-file
  rm -f "$2"
  "$gpupack" serve --kubeconfig "$work/kubeconfig" --policy bestfit --assume off --listen 127.0.0.1:0 \
    --port-file "$2" >"$1" 2>&1 &
  serve_pid=$!
  pids+=("$serve_pid")
  wait_for "$2" "$1"
}

"$sched" synth -nodes 80 -pods 1000 -out "$work"
for run in $(seq 1 "$runs"); do
  rm -f "$work/acked.csv"
  start_fake_api "$sched" "$work"
  serve "$work/serve1.log" "$work/serve.port"
  "$sched" schedule -extender "http://127.0.0.1:$(cat "$work/serve.port")" -nodes "$work/nodes.json" \
    -pods "$work/pods.json" -bind extender -acked "$work/acked.csv" -out /dev/null >"$work/client1.log" 2>&1 &
  client=$!
  sleep "0.$((RANDOM % 9 + 1))$((RANDOM % 10))"
  kill -9 "$serve_pid"
  wait "$client" 2>/dev/null || true
  acked=$(wc -l <"$work/acked.csv" 2>/dev/null || echo 0)
  [ "$acked" -gt 0 ] || { echo "run $run: killed before the first acknowledged bind" >&2; cat "$work/client1.log" >&2; exit 1; }
  echo "run $run: killed after $acked acknowledged binds"
  "$sched" verify -api "$api" -acked "$work/acked.csv"

  serve "$work/serve2.log" "$work/serve.port"
  "$sched" schedule -extender "http://127.0.0.1:$(cat "$work/serve.port")" -nodes "$work/nodes.json" \
    -pods "$work/pods.json" -pending-from-api -api "$api" -bind extender -acked "$work/acked.csv" -out /dev/null
  "$sched" verify -api "$api" -acked "$work/acked.csv"
  stop_all
done
