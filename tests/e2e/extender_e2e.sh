#!/usr/bin/env bash
# End to end: `gpupack serve` driven from a separate process that calls it as
# kube-scheduler's HTTPExtender does (tests/e2e/scheduler, Go's standard
# library), on the first 60 openb nodes and 450 pods, pod by pod: filter,
# prioritize, the highest score with ties broken by node name, then bind.
# In each learning mode the placements must equal `gpupack simulate` with the
# same order and node ranks, pod for pod:
#   bind   - snapshot mode, the scheduler calls gpupack's bind verb;
#   assume - snapshot mode, nobody binds: gpupack assumes the pod on its
#            top-scored node at prioritize (full Node objects on the wire);
#   watch  - API mode against a fake API server: the scheduler posts the
#            Binding to the API itself and gpupack learns it from its watch.
# Usage: extender_e2e.sh <gpupack-binary> <work-dir> <shared-dir> [policies]
# Exits 77 (skipped) when the openb trace is not at <shared-dir>/traces/openb.
set -euo pipefail
gpupack="${1:?usage: extender_e2e.sh <gpupack-binary> <work-dir> <shared-dir> [policies]}"
build="${2:?work dir}"
trace="${3:?shared dir}/traces/openb"
policies="${4:-bestfit fgd}"
if [ ! -f "$trace/openb_node_list_gpu_node.csv" ]; then
  echo "skipped: openb trace not found at $trace" >&2
  exit 77
fi
work="$(mktemp -d)"
pids=()
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT

. "$(dirname "$0")/lib.sh"
sched="$("$(dirname "$0")/build_scheduler.sh" "$build")"
"$sched" openb -trace "$trace" -nodes 60 -pods 450 -out "$work"

# pod,node of the simulator's placements for one policy.
expected() {
  "$gpupack" simulate --nodes "$work/nodes.csv" --pods "$work/pods.csv" --order "$work/order.csv" \
    --node-rank "$work/node_rank.csv" --policy "$1" --seeds 42 --out "$work/sim-$1" --quiet >/dev/null
  awk -F, 'NR > 1 { print $3 "," $4 }' "$work/sim-$1/placements.csv"
}

compare() {  # policy mode placements.csv expected
  local got
  got="$(tail -n +2 "$3")"
  if [ "$got" != "$4" ]; then
    echo "FAIL $1 $2: placements differ from gpupack simulate (first differences, pod,extender vs pod,simulate):" >&2
    diff <(echo "$got") <(echo "$4") | head -20 >&2
    return 1
  fi
  local placed
  placed="$(awk -F, 'NR > 1 && $2 != ""' "$3" | wc -l)"
  echo "ok $1 $2: $placed of 450 pods placed, every one where gpupack simulate places it"
}

serve() {  # log port-file args...
  local log="$1" port="$2"
  shift 2
  rm -f "$port"
  "$gpupack" serve --listen 127.0.0.1:0 --port-file "$port" "$@" >"$log" 2>&1 &
  pids+=($!)
  wait_for "$port" "$log"
}

failed=0
for policy in $policies; do
  want="$(expected "$policy")"
  [ "$(echo "$want" | wc -l)" -eq 450 ] || { echo "simulate gave $(echo "$want" | wc -l) placements" >&2; exit 1; }

  serve "$work/bind.log" "$work/bind.port" --nodes "$work/nodes.json" --pods "$work/pods.json" \
    --policy "$policy" --assume off
  "$sched" schedule -extender "http://127.0.0.1:$(cat "$work/bind.port")" -nodes "$work/nodes.json" \
    -pods "$work/pods.json" -bind extender -out "$work/bind.csv" -stats "$work/bind-stats.json"
  stop_all
  compare "$policy" bind "$work/bind.csv" "$want" || failed=1

  serve "$work/assume.log" "$work/assume.port" --nodes "$work/nodes.json" --pods "$work/pods.json" \
    --policy "$policy"
  "$sched" schedule -extender "http://127.0.0.1:$(cat "$work/assume.port")" -nodes "$work/nodes.json" \
    -pods "$work/pods.json" -full-nodes -bind none -out "$work/assume.csv" -stats "$work/assume-stats.json"
  stop_all
  compare "$policy" assume "$work/assume.csv" "$want" || failed=1

  start_fake_api "$sched" "$work"
  serve "$work/watch.log" "$work/watch.port" --kubeconfig "$work/kubeconfig" --policy "$policy" --assume off
  "$sched" schedule -extender "http://127.0.0.1:$(cat "$work/watch.port")" -nodes "$work/nodes.json" \
    -pods "$work/pods.json" -bind api -api "$api" -wait-learned -out "$work/watch.csv" \
    -stats "$work/watch-stats.json"
  stop_all
  compare "$policy" watch "$work/watch.csv" "$want" || failed=1
  echo "client-side figures ($policy, bind mode): $(cat "$work/bind-stats.json")"
done
exit "$failed"
