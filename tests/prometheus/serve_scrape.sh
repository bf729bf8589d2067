#!/usr/bin/env bash
# Starts `gpupack serve` on a small snapshot and a real Prometheus server that
# scrapes it (loopback only), waits (bounded) until Prometheus answers a query
# for a gpupack metric, checks one scrape with `promtool check metrics`, and
# stops both. Usage: serve_scrape.sh <gpupack-binary>
set -euo pipefail
gpupack="${1:?usage: serve_scrape.sh <gpupack-binary>}"
for tool in prometheus promtool; do
  command -v "$tool" >/dev/null 2>&1 || { echo "$tool not found: run scripts/install-deps.sh" >&2; exit 1; }
done
work="$(mktemp -d)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# GET http://127.0.0.1:<port><path> with bash's /dev/tcp; prints the body.
http_get() {
  local port="$1" path="$2"
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$path" >&3
  timeout 5 cat <&3 | sed '1,/^\r*$/d'
  exec 3<&-
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

node() {  # name gpus
  printf '{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s","labels":{"nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB"}},"spec":{},"status":{"allocatable":{"cpu":"96","memory":"512Gi","nvidia.com/gpu":"%s"}}}' "$1" "$2"
}
pod() {  # name node assigned milli
  printf '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s","namespace":"ml","uid":"u-%s","annotations":{"gpupack.io/gpu-milli":"%s"%s}},"spec":{"nodeName":"%s","containers":[{"name":"c","resources":{"requests":{"cpu":"2","memory":"8Gi"}}}]},"status":{"phase":"%s"}}' \
    "$1" "$1" "$4" "${3:+,\"gpupack.io/assigned-gpus\":\"$3\"}" "$2" "$5"
}
mig_node='{"apiVersion":"v1","kind":"Node","metadata":{"name":"mig-a","labels":{"nvidia.com/gpu.product":"NVIDIA-A100-SXM4-80GB","nvidia.com/mig.strategy":"mixed"}},"spec":{},"status":{"allocatable":{"cpu":"96","memory":"512Gi","nvidia.com/mig-1g.10gb":"7"}}}'
echo "{\"kind\":\"List\",\"items\":[$(node gpu-a 8),$(node gpu-b 8),$mig_node]}" > "$work/nodes.json"
echo "{\"kind\":\"List\",\"items\":[$(pod r0 gpu-a gpu-a:0@500 500 Running),$(pod r1 gpu-b gpu-b:3@250 250 Running),$(pod waiting '' '' 700 Pending)]}" > "$work/pods.json"

"$gpupack" serve --nodes "$work/nodes.json" --pods "$work/pods.json" --listen 127.0.0.1:0 \
  --port-file "$work/port" >"$work/serve.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "gpupack serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }
gport="$(cat "$work/port")"

http_get "$gport" /metrics > "$work/scrape.txt"
grep -q '^gpupack_gpu_allocated_ratio{node="gpu-a",Hostname="gpu-a",gpu="0",model="A100-80GB"} 0.5$' "$work/scrape.txt" \
  || { echo "scrape lacks the expected allocation:" >&2; head -40 "$work/scrape.txt" >&2; exit 1; }
promtool check metrics < "$work/scrape.txt"

pport=""
for p in $(seq 19190 19290); do if port_free "$p"; then pport="$p"; break; fi; done
[ -n "$pport" ] || { echo "no free loopback port for prometheus" >&2; exit 1; }
cat > "$work/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpupack
    static_configs:
      - targets: ["127.0.0.1:$gport"]
YML
prometheus --config.file "$work/prometheus.yml" --storage.tsdb.path "$work/tsdb" \
  --web.listen-address "127.0.0.1:$pport" >"$work/prometheus.log" 2>&1 &
pids+=($!)

ok=""
for _ in $(seq 1 60); do
  body="$(http_get "$pport" '/api/v1/query?query=gpupack_node_allocated_gpus%7Bnode%3D%22gpu-a%22%7D' 2>/dev/null || true)"
  if echo "$body" | grep -q '"value":\[[0-9.]*,"0.5"\]'; then ok=1; break; fi
  sleep 0.5
done
if [ -z "$ok" ]; then
  echo "prometheus never returned gpupack_node_allocated_gpus; last answer: $body" >&2
  tail -20 "$work/prometheus.log" >&2
  exit 1
fi
echo "prometheus scraped gpupack: $body"

# Every query of the Grafana dashboard returns data from this Prometheus
# ($__rate_interval as 1m; some extender calls first, so that rates have
# samples to work on).
http_post() {  # port path body
  exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
  printf 'POST %s HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
    "$2" "${#3}" "$3" >&3
  timeout 5 cat <&3 >/dev/null
  exec 3<&-
}
filter_body="{\"Pod\":$(pod probe '' '' 250 Pending),\"NodeNames\":[\"gpu-a\",\"gpu-b\"]}"
for _ in $(seq 1 5); do
  http_post "$gport" /filter "$filter_body"
  sleep 1
done
dashboard="$(dirname "$0")/../../deploy/grafana/gpupack-dashboard.json"
queries=0
while IFS= read -r expr; do
  [ -n "$expr" ] || continue
  result=""
  for _ in $(seq 1 20); do
    result="$(promtool query instant "http://127.0.0.1:$pport" "$expr" 2>&1 || true)"
    grep -q ' => ' <<<"$result" && break
    http_post "$gport" /filter "$filter_body"
    sleep 0.5
  done
  grep -q ' => ' <<<"$result" || { echo "dashboard query returned no data: $expr" >&2; echo "$result" >&2; exit 1; }
  queries=$((queries + 1))
done < <(grep -o '"expr": "[^"]*"' "$dashboard" | sed 's/^"expr": "//; s/"$//; s/\$__rate_interval/1m/g')
[ "$queries" -ge 10 ] || { echo "only $queries dashboard queries found in $dashboard" >&2; exit 1; }
echo "every dashboard query returned data ($queries queries)"

# Every alert rule's expression, its thresholds opened (`> 0.2` as `>= 0`),
# returns data: the series and labels the rules use exist in a real scrape.
rules="$(dirname "$0")/../../deploy/prometheus-rules.yaml"
alerts=0
while IFS= read -r expr; do
  [ -n "$expr" ] || continue
  open_expr="$(echo "$expr" | sed -E 's/> *[0-9.]+/>= 0/g')"
  result="$(promtool query instant "http://127.0.0.1:$pport" "$open_expr" 2>&1 || true)"
  grep -q ' => ' <<<"$result" || { echo "alert expression returned no data: $open_expr" >&2; echo "$result" >&2; exit 1; }
  alerts=$((alerts + 1))
done < <(sed -n 's/^ *expr: //p' "$rules")
[ "$alerts" -ge 3 ] || { echo "only $alerts alert expressions found in $rules" >&2; exit 1; }
echo "every alert expression returned data with its threshold opened ($alerts alerts)"
