#!/usr/bin/env bash
# Client-side latency of `gpupack serve` as kube-scheduler sees it: the Go
# extender client of tests/e2e/scheduler (net/http, keep-alive, one call at a
# time) posts filter then prioritize for one pending 1-GPU pod against an
# empty cluster of N 8-GPU nodes, in snapshot mode, with NodeNames
# (nodeCacheCapable: true) and with full Node objects (false). Prints one
# JSON line per run: p50/p99 of each verb in ms, the filter's phases as the
# client sees them (request written, first reply byte, last reply byte), how
# many prioritize replies had a unique top node, and the server-side mean of
# the run's filter calls (warm-up included).
# Usage: bench/extender_client.sh <gpupack-binary> [nodes=5000] [calls=300] [runs=3] [policy=fgd]
# PIN=1 in the environment runs the server on CPU 1 and the client on CPU 0
# (taskset), as a kube-scheduler on its own cores would be; default: both
# processes share every core. QUIET_GC=1 makes the client collect its
# garbage between calls, outside the timed window (bench -quiet-gc).
# SUBSET=N sends N nodes a call, a window moving on by N each call, as
# kube-scheduler does with percentageOfNodesToScore on a large cluster.
# MODES="names" (or "full") runs one body form only.
# FLOOR=1 runs the same client against `scheduler floor`, an extender that
# does no work (the first answer of each verb, repeated): the floor of the
# figures on this machine (the binary argument is then unused; server means 0).
set -euo pipefail
gpupack="${1:?usage: extender_client.sh <gpupack-binary> [nodes] [calls] [runs] [policy]}"
nodes="${2:-5000}"
calls="${3:-300}"
runs="${4:-3}"
policy="${5:-fgd}"
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT

. "$here/../tests/e2e/lib.sh"
"$here/../tests/e2e/build_scheduler.sh" "$work" >/dev/null
"$work/scheduler" synth -nodes "$nodes" -out "$work"
echo '{"kind":"List","items":[]}' > "$work/none.json"
server_cpu=() client_cpu=() extra=""
[ "${QUIET_GC:-0}" = 1 ] && extra="-quiet-gc"
[ -n "${SUBSET:-}" ] && extra="$extra -subset $SUBSET"
if [ "${PIN:-0}" = 1 ]; then server_cpu=(taskset -c 1) client_cpu=(taskset -c 0); fi
if [ "${FLOOR:-0}" = 1 ]; then
  "${server_cpu[@]}" "$work/scheduler" floor -listen 127.0.0.1:0 -port-file "$work/port" 2>"$work/serve.log" &
else
  "${server_cpu[@]}" "$gpupack" serve --nodes "$work/nodes.json" --pods "$work/none.json" --policy "$policy" \
    --assume off --listen 127.0.0.1:0 --port-file "$work/port" 2>"$work/serve.log" &
fi
pid=$!
wait_for "$work/port" "$work/serve.log"
url="http://127.0.0.1:$(cat "$work/port")"
# Server-side mean ms of a verb so far (gpupack_decision_duration_seconds:
# from the complete body to the serialised reply).
server_sums() {
  curl -s "$url/metrics" | awk -v verb="$1" '
    $1 ~ "^gpupack_decision_duration_seconds_sum\\{verb=\"" verb "\"\\}$" { s = $2 }
    $1 ~ "^gpupack_decision_duration_seconds_count\\{verb=\"" verb "\"\\}$" { c = $2 }
    END { printf "%s %s", (s == "" ? 0 : s), (c == "" ? 0 : c) }'
}
for run in $(seq 1 "$runs"); do
  for mode in ${MODES:-names full}; do
    flag=""
    [ "$mode" = full ] && flag="-full-nodes"
    read -r s0 c0 <<<"$(server_sums filter)"
    stats=$("${client_cpu[@]}" "$work/scheduler" bench -extender "$url" \
      -nodes "$work/nodes.json" -pods "$work/pods.json" -calls "$calls" $flag $extra)
    read -r s1 c1 <<<"$(server_sums filter)"
    server=$(awk -v s0="$s0" -v c0="$c0" -v s1="$s1" -v c1="$c1" \
      'BEGIN { printf "%.3f", (c1 > c0 ? 1000 * (s1 - s0) / (c1 - c0) : 0) }')
    echo "{\"run\":$run,\"mode\":\"$mode\",\"nodes\":$nodes,\"server_filter_mean_ms\":$server,\"stats\":$stats}"
  done
done
