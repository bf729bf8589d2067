#!/usr/bin/env bash
# Gangs through the extender, end to end: `gpupack serve` in API mode against
# a fake API server, driven member by member by tests/e2e/scheduler as
# kube-scheduler would (filter, prioritize, the top node, bind; a gang
# member's bind in the background as the binding cycle runs it).
#  1. placements: a seeded workload of gangs and single pods on 3 racks of
#     8-GPU nodes: every pod where `gpupack simulate --mode dynamic` (same
#     order, node ranks and racks) places it, for each policy; every gang
#     bound whole or not at all; nothing reserved at the end.
#  2. competing gangs: two gangs of 3 x 4 GPUs on 16 GPUs, members
#     interleaved: one gang bound whole, the other no member and no GPU;
#     pod groups in scheduler-plugins' form with minMember from the API.
#  3. timeout: a gang whose last member never asks to bind: after
#     --gang-timeout its held binds fail, no member is bound, no GPU held.
#  4. kill -9 while a gang's Bindings are being written (slow API): after a
#     restart no gang is bound below its minimum. Several runs.
# Usage: gang_e2e.sh <gpupack-binary> <work-dir> [kill-runs=3] [policies]
set -euo pipefail
gpupack="${1:?usage: gang_e2e.sh <gpupack-binary> <work-dir> [kill-runs] [policies]}"
build="${2:?work dir}"
runs="${3:-3}"
policies="${4:-bestfit fgd}"
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

serve() {  # dir log [flags...]: API mode against dir/kubeconfig; sets ext and serve_pid
  local dir="$1" log="$2"
  shift 2
  rm -f "$dir/serve.port"
  "$gpupack" serve --kubeconfig "$dir/kubeconfig" --assume off --listen 127.0.0.1:0 \
    --port-file "$dir/serve.port" --topology-label gpupack.io/rack "$@" >"$log" 2>&1 &
  serve_pid=$!
  pids+=("$serve_pid")
  wait_for "$dir/serve.port" "$log"
  ext="http://127.0.0.1:$(cat "$dir/serve.port")"
}

metric() { "$sched" metric -extender "$ext" -series "$1"; }

expect_metric() {  # series value what
  local got
  got="$(metric "$1")"
  if [ "$got" != "$2" ]; then
    echo "FAIL $3: $1 is $got, expected $2" >&2
    exit 1
  fi
}

# 1. Placements equal the dynamic simulator's, pod for pod.
d="$work/mixed"
"$sched" gangs -nodes 24 -jobs 80 -seed 7 -out "$d"
pods=$(($(wc -l <"$d/pods.csv") - 1))
for policy in $policies; do
  "$gpupack" simulate --mode dynamic --nodes "$d/nodes.csv" --pods "$d/pods.csv" --node-rank "$d/node_rank.csv" \
    --nodes-per-rack 8 --policy "$policy" --seeds 42 --out "$d/sim-$policy" --quiet >/dev/null
  want="$(awk -F, 'NR > 1 { print $3 "," $4 }' "$d/sim-$policy/placements.csv")"
  start_fake_api "$sched" "$d"
  serve "$d" "$d/serve-$policy.log" --policy "$policy"
  "$sched" schedule -extender "$ext" -nodes "$d/nodes.json" -pods "$d/pods.json" -bind extender -async-gangs \
    -out "$d/got-$policy.csv"
  got="$(tail -n +2 "$d/got-$policy.csv")"
  if [ "$got" != "$want" ]; then
    echo "FAIL $policy: placements differ from simulate --mode dynamic (pod,extender vs pod,simulate):" >&2
    diff <(echo "$got") <(echo "$want") | head -20 >&2
    exit 1
  fi
  "$sched" verify -api "$api" -acked /dev/null -gangs
  expect_metric gpupack_gangs_waiting 0 "$policy"
  expect_metric gpupack_gang_reserved_gpus 0 "$policy"
  placed_gangs="$(metric 'gpupack_gangs_total{outcome="placed"}')"
  [ "$placed_gangs" -gt 0 ] || { echo "FAIL $policy: no gang placed" >&2; exit 1; }
  echo "ok $policy: $(awk -F, 'NR > 1 && $2 != ""' "$d/got-$policy.csv" | wc -l) of $pods pods placed" \
    "($placed_gangs gangs), each where simulate --mode dynamic places it"
  stop_all
done

# 2. Two gangs that cannot both fit.
d="$work/competing"
"$sched" gangs -competing -out "$d"
start_fake_api "$sched" "$d"
serve "$d" "$d/serve.log" --policy bestfit
"$sched" schedule -extender "$ext" -nodes "$d/nodes.json" -pods "$d/pods.json" -bind extender -async-gangs \
  -out "$d/got.csv"
a=$(grep -c '^gang-a-[0-9],node' "$d/got.csv" || true)
b=$(grep -c '^gang-b-[0-9],node' "$d/got.csv" || true)
[ "$a" -eq 3 ] && [ "$b" -eq 0 ] || { echo "FAIL competing: gang-a $a of 3 bound, gang-b $b (expected 0)" >&2; cat "$d/got.csv" >&2; exit 1; }
"$sched" verify -api "$api" -acked /dev/null -gangs
expect_metric gpupack_gang_reserved_gpus 0 competing
expect_metric 'gpupack_gangs_total{outcome="placed"}' 1 competing
echo "ok competing: gang-a bound whole, gang-b holds nothing"
stop_all

# 2b. Pod groups in scheduler-plugins' form, minMember from the API's PodGroups.
d="$work/coscheduling"
"$sched" gangs -coscheduling -out "$d"
start_fake_api "$sched" "$d" -podgroups "$d/podgroups.json"
serve "$d" "$d/serve.log" --policy bestfit
"$sched" schedule -extender "$ext" -nodes "$d/nodes.json" -pods "$d/pods.json" -bind extender -async-gangs \
  -out "$d/got.csv"
short=$(grep -c '^pg-short-[0-9],node' "$d/got.csv" || true)
ok=$(grep -c '^pg-ok-[0-9],node' "$d/got.csv" || true)
[ "$short" -eq 0 ] && [ "$ok" -eq 2 ] ||
  { echo "FAIL coscheduling: pg-short $short bound (minMember 4, 3 pods: expected 0), pg-ok $ok of 2" >&2; exit 1; }
expect_metric gpupack_gang_reserved_gpus 0 coscheduling
echo "ok coscheduling: PodGroup minMember read from the API (3 of 4 members wait, 2 of 2 bind)"
stop_all

# 3. A member that never binds: the gang times out and holds nothing.
d="$work/timeout"
"$sched" gangs -competing -out "$d"
start_fake_api "$sched" "$d"
serve "$d" "$d/serve.log" --policy bestfit --gang-timeout 1
"$sched" schedule -extender "$ext" -nodes "$d/nodes.json" -pods "$d/pods.json" -bind extender -async-gangs \
  -drop gang-a-2 -out "$d/got.csv" 2>"$d/client.log"
bound=$(grep -c ',node-' "$d/got.csv" || true)
[ "$bound" -eq 0 ] || { echo "FAIL timeout: $bound members bound" >&2; cat "$d/got.csv" "$d/client.log" >&2; exit 1; }
grep -q "gang default/gang-a: 2 of the 3 binds" "$d/client.log" ||
  { echo "FAIL timeout: the held binds did not fail with the gang's reason" >&2; cat "$d/client.log" >&2; exit 1; }
"$sched" verify -api "$api" -acked /dev/null -gangs
expect_metric gpupack_gang_reserved_gpus 0 timeout
expect_metric gpupack_gangs_waiting 0 timeout
expect_metric 'gpupack_gangs_total{outcome="timed_out"}' 1 timeout
echo "ok timeout: no member bound, no GPU reserved after the gang's timeout"
stop_all

# 4. kill -9 while a gang's Bindings are written (each Binding takes 100 ms).
d="$work/kill"
"$sched" gangs -nodes 24 -jobs 40 -seed 3 -out "$d"
total_rolled=0
for run in $(seq 1 "$runs"); do
  rm -f "$d/acked.csv"
  start_fake_api "$sched" "$d" -bind-delay 100ms
  serve "$d" "$d/serve1.log" --policy bestfit
  "$sched" schedule -extender "$ext" -nodes "$d/nodes.json" -pods "$d/pods.json" -bind extender -async-gangs \
    -acked "$d/acked.csv" -out /dev/null >"$d/client1.log" 2>&1 &
  client=$!
  sleep "$((RANDOM % 2)).$((RANDOM % 9 + 1))"
  kill -9 "$serve_pid"
  wait "$client" 2>/dev/null || true
  echo "run $run: killed after $(wc -l <"$d/acked.csv" 2>/dev/null || echo 0) acknowledged binds"
  serve "$d" "$d/serve2.log" --policy bestfit
  # The restarted server binds the members a cut-short commit left pending.
  for _ in $(seq 1 100); do
    "$sched" verify -api "$api" -acked "$d/acked.csv" -gangs >"$d/verify.log" 2>&1 && break
    sleep 0.1
  done
  cat "$d/verify.log"
  grep -q "none partly" "$d/verify.log" || { cat "$d/serve2.log" >&2; exit 1; }
  rolled=$(grep -c "gang member bound after a restart" "$d/serve2.log" || true)
  echo "run $run: $rolled members of a cut-short gang commit bound by the restarted server"
  total_rolled=$((total_rolled + rolled))
  "$sched" schedule -extender "$ext" -nodes "$d/nodes.json" -pods "$d/pods.json" -pending-from-api -api "$api" \
    -bind extender -async-gangs -acked "$d/acked.csv" -out /dev/null 2>/dev/null
  "$sched" verify -api "$api" -acked "$d/acked.csv" -gangs
  stop_all
done
echo "kill runs: $total_rolled gang members bound by a restarted server in all"
