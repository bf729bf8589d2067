# Shell helpers of the end-to-end tests and benchmarks; source it.

# wait_for FILE LOG [SECONDS=10]: waits up to SECONDS for FILE to be written;
# otherwise prints LOG and exits 1.
wait_for() {
  local seconds="${3:-10}"
  for _ in $(seq 1 $((seconds * 20))); do [ -s "$1" ] && return 0; sleep 0.05; done
  echo "$1 not written after $seconds s:" >&2
  cat "$2" >&2
  exit 1
}

# start_fake_api SCHEDULER DIR [fakeapi flags...]: serves DIR/nodes.json and
# DIR/pods.json as a Kubernetes API in the background (its pid appended to
# the caller's `pids`), writes DIR/kubeconfig for it and sets `api` to its URL.
start_fake_api() {
  local sched="$1" dir="$2"
  shift 2
  rm -f "$dir/api.port" "$dir/kubeconfig"
  "$sched" fakeapi -nodes "$dir/nodes.json" -pods "$dir/pods.json" -port-file "$dir/api.port" \
    -kubeconfig "$dir/kubeconfig" "$@" >"$dir/api.log" 2>&1 &
  pids+=($!)
  wait_for "$dir/kubeconfig" "$dir/api.log"
  api="http://127.0.0.1:$(cat "$dir/api.port")"
}
