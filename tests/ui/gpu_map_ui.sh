#!/usr/bin/env bash
# The GPU map in a real browser (Debian's headless Chromium, no network):
#  1. `gpupack serve` /ui on a small cluster with a planted stranded GPU
#     (gpu-a GPU 7 half used while every pending pod needs whole GPUs) and a
#     MIG node: after the page's first refresh the DOM has one GPU cell per
#     GPU of the cluster, the planted GPU (and only it) is marked stranded,
#     the MIG node's devices show how many are in use; a screenshot is taken
#     and must not be blank.
#  2. `gpupack analyze --format html` on the same files: the same checks.
#  3. `gpupack simulate --out` report.html: one GPU cell per cluster GPU, the
#     curves of every policy, and a policy selector.
# Usage: gpu_map_ui.sh <gpupack-binary> [screenshot-out.png]
# Exits 77 (skipped) when chromium is not installed.
set -euo pipefail
gpupack="${1:?usage: gpu_map_ui.sh <gpupack-binary> [screenshot.png]}"
shot_out="${2:-}"
chromium="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$chromium" ]; then
  echo "skipped: chromium not found (scripts/install-deps.sh installs Debian's chromium)" >&2
  exit 77
fi
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

browser() {  # url extra-flags...: headless, no network, a fresh profile
  local url="$1"
  shift
  timeout 90 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync --disable-extensions \
    --user-data-dir="$work/profile-$RANDOM" --virtual-time-budget=4000 "$@" "$url" 2>/dev/null
}
fail() { echo "FAIL $*" >&2; exit 1; }

node() {  # name gpus [mig]
  local alloc="\"nvidia.com/gpu\":\"$2\""
  local labels="\"nvidia.com/gpu.product\":\"NVIDIA-A100-SXM4-80GB\""
  if [ "${3:-}" = mig ]; then
    alloc="\"nvidia.com/mig-1g.10gb\":\"7\""
    labels="$labels,\"nvidia.com/mig.strategy\":\"mixed\""
  fi
  printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{%s}},"spec":{},"status":{"allocatable":{"cpu":"96","memory":"512Gi",%s}}}' "$1" "$labels" "$alloc"
}
pod() {  # name node resources annotations phase
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"ml","uid":"u-%s","annotations":{%s}},"spec":{"schedulerName":"gpupack-scheduler","nodeName":"%s","containers":[{"name":"c","resources":{"requests":{"cpu":"2","memory":"8Gi",%s},"limits":{%s}}}]},"status":{"phase":"%s"}}' \
    "$1" "$1" "$4" "$2" "$3" "$3" "$5"
}
# gpu-a: GPUs 0-6 whole, GPU 7 half used -> stranded (pending pods ask for
# whole GPUs); gpu-b: empty; mig-a: 7 x 1g.10gb, 2 in use.
pods=(
  "$(pod full gpu-a '"nvidia.com/gpu":"7"' '"gpupack.io/assigned-gpus":"gpu-a:0,1,2,3,4,5,6"' Running)"
  "$(pod half gpu-a '"cpu":"1"' '"gpupack.io/gpu-milli":"500","gpupack.io/assigned-gpus":"gpu-a:7@500"' Running)"
  "$(pod mig0 mig-a '"nvidia.com/mig-1g.10gb":"2"' '' Running)"
  "$(pod wait0 '' '"nvidia.com/gpu":"1"' '' Pending)"
  "$(pod wait1 '' '"nvidia.com/gpu":"2"' '' Pending)"
)
echo "{\"kind\":\"List\",\"items\":[$(node gpu-a 8),$(node gpu-b 8),$(node mig-a 0 mig)]}" >"$work/nodes.json"
( IFS=,; echo "{\"kind\":\"List\",\"items\":[${pods[*]}]}" ) >"$work/pods.json"
expected_gpus=16  # gpu-a, gpu-b (mig-a advertises MIG devices, no whole GPUs)

check_map() {  # what dom-file
  local what="$1" dom="$2" cells stranded
  cells=$(grep -o 'class="gpu[ "][^>]*' "$dom" | wc -l)
  [ "$cells" -eq "$expected_gpus" ] || fail "$what: $cells GPU cells, the cluster has $expected_gpus GPUs"
  stranded=$(grep -o 'class="gpu stranded[^>]*' "$dom" || true)
  [ "$(echo "$stranded" | grep -c .)" -eq 1 ] || fail "$what: stranded cells: ${stranded:-none} (expected gpu-a GPU 7 only)"
  echo "$stranded" | grep -q 'data-node="gpu-a" data-gpu="7"' || fail "$what: the stranded cell is not gpu-a GPU 7: $stranded"
  [ "$(grep -o 'class="md busy"' "$dom" | wc -l)" -eq 2 ] && [ "$(grep -o 'class="md"' "$dom" | wc -l)" -eq 5 ] ||
    fail "$what: mig-a's 1g.10gb devices are not drawn as 2 in use of 7"
  echo "ok $what: $cells GPU cells, gpu-a GPU 7 marked stranded, mig-a's MIG devices 2 of 7 in use"
}

# 1. Live /ui.
"$gpupack" serve --nodes "$work/nodes.json" --pods "$work/pods.json" --listen 127.0.0.1:0 \
  --port-file "$work/port" --assume off >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do [ -s "$work/port" ] && break; sleep 0.05; done
[ -s "$work/port" ] || { cat "$work/serve.log" >&2; fail "serve did not start"; }
url="http://127.0.0.1:$(cat "$work/port")/ui"
browser "$url" --dump-dom >"$work/live.html"
grep -q "live, updated" "$work/live.html" || fail "/ui: the page did not load /ui/state.json: $(grep -o 'id="sub"[^<]*' "$work/live.html")"
check_map "/ui" "$work/live.html"
browser "$url" --window-size=1280,900 --screenshot="$work/ui.png" >/dev/null
size=$(stat -c %s "$work/ui.png" 2>/dev/null || echo 0)
[ "$size" -gt 20000 ] || fail "/ui screenshot is $size bytes (blank?)"
echo "ok /ui screenshot: $size bytes"
[ -z "$shot_out" ] || cp "$work/ui.png" "$shot_out"

# 2. analyze --format html.
"$gpupack" analyze --nodes "$work/nodes.json" --pods "$work/pods.json" --format html -o "$work/analyze.html"
browser "file://$work/analyze.html" --dump-dom >"$work/analyze-dom.html"
check_map "analyze report" "$work/analyze-dom.html"
grep -q "<pre>" "$work/analyze-dom.html" || fail "analyze report: no text report"

# 3. simulate report.html (a synthetic cluster of 40 nodes), and on the
#    hardware example: MIG instances drawn in their slots.
line=$("$gpupack" simulate --synthetic-nodes 40 --policy bestfit,fgd --seeds 42 --out "$work/sim" | grep '^cluster:')
gpus=$(echo "$line" | sed -n 's/.*nodes, \([0-9]*\) GPUs).*/\1/p')
[ -n "$gpus" ] || fail "simulate did not print its GPU count: $line"
browser "file://$work/sim/report.html" --dump-dom >"$work/sim-dom.html"
cells=$(grep -o 'class="gpu[ "][^>]*' "$work/sim-dom.html" | wc -l)
[ "$cells" -eq "$gpus" ] || fail "simulate report: $cells GPU cells, the cluster has $gpus GPUs"
for p in bestfit fgd; do
  grep -q "<option>$p</option>" "$work/sim-dom.html" || fail "simulate report: no GPU map for $p"
  grep -q ">$p (" "$work/sim-dom.html" || fail "simulate report: no curve legend for $p"
done
grep -q "Fragmentation vs arrived workload" "$work/sim-dom.html" || fail "simulate report: no fragmentation chart"
echo "ok simulate report: $cells GPU cells for $gpus GPUs, curves and maps of bestfit and fgd"
examples="$(dirname "$0")/../../examples/hardware"
"$gpupack" simulate --cluster "$examples/cluster.yaml" --workload "$examples/workload.csv" --policy fgd --seeds 42 \
  --out "$work/hw" --quiet >/dev/null
browser "file://$work/hw/report.html" --dump-dom >"$work/hw-dom.html"
slots=$(grep -o 'class="s busy"[^>]*' "$work/hw-dom.html" | wc -l)
[ "$slots" -gt 0 ] || fail "hardware report: no MIG instance drawn in a slot"
grep -o 'class="s busy"[^>]*' "$work/hw-dom.html" | head -1 | grep -q 'style="top:[0-9.]*%;height:[0-9.]*%"' ||
  fail "hardware report: a MIG instance without its slot position"
echo "ok hardware report: $slots MIG instances in use drawn at their slot positions"
