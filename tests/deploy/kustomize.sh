#!/usr/bin/env bash
# `kubectl kustomize` renders the deploy/ kit (whole kit, base alone and the
# opt-in defrag executor) without a cluster, to the expected objects; the
# PrometheusRule is up to date with deploy/prometheus-rules.yaml. Skips
# (exit 77) without kubectl.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if ! command -v kubectl >/dev/null 2>&1; then
  echo "kubectl not found: skipping the kustomize render" >&2
  exit 77
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

kubectl kustomize "$root/deploy" > "$tmp/all.yaml"
kubectl kustomize "$root/deploy/base" > "$tmp/base.yaml"
kubectl kustomize "$root/deploy/defrag" > "$tmp/defrag.yaml"

# kind/namespace/name of every rendered object, sorted.
objects() {
  awk 'BEGIN { ns = "-" }
    /^---/ { if (kind != "") print kind " " ns " " name; kind = ""; ns = "-"; name = ""; inmeta = 0; next }
    /^kind: / { kind = $2 }
    /^metadata:/ { inmeta = 1; next }
    /^[^ ]/ { inmeta = 0 }
    inmeta && /^  name: / { name = $2 }
    inmeta && /^  namespace: / { ns = $2 }
    END { if (kind != "") print kind " " ns " " name }
  ' "$1" | sort
}

base_expected="ClusterRole - gpupack-extender
ClusterRoleBinding - gpupack-extender
ClusterRoleBinding - gpupack-kube-scheduler
ClusterRoleBinding - gpupack-volume-scheduler
ConfigMap gpupack-system gpupack-scheduler-config
Deployment gpupack-system gpupack-extender
Deployment gpupack-system gpupack-scheduler
Namespace - gpupack-system
NetworkPolicy gpupack-system gpupack-extender
NetworkPolicy gpupack-system gpupack-scheduler
Role gpupack-system gpupack-scheduler-leader-election
RoleBinding gpupack-system gpupack-scheduler-leader-election
RoleBinding kube-system gpupack-scheduler-auth-reader
Service gpupack-system gpupack-extender
ServiceAccount gpupack-system gpupack-extender
ServiceAccount gpupack-system gpupack-kube-scheduler"
all_expected="$(printf '%s\n%s\n%s\n%s\n' "$base_expected" \
  "ConfigMap gpupack-system gpupack-grafana-dashboard" \
  "PrometheusRule gpupack-system gpupack" \
  "ServiceMonitor gpupack-system gpupack-extender" | sort)"
defrag_expected="ClusterRole - gpupack-defrag
ClusterRoleBinding - gpupack-defrag
Deployment gpupack-system gpupack-defrag
NetworkPolicy gpupack-system gpupack-defrag
PersistentVolumeClaim gpupack-system gpupack-defrag-journal
ServiceAccount gpupack-system gpupack-defrag"

status=0
if ! diff -u <(printf '%s\n' "$base_expected" | sort) <(objects "$tmp/base.yaml"); then
  echo "kubectl kustomize deploy/base: unexpected objects (diff above)" >&2
  status=1
fi
if ! diff -u <(printf '%s\n' "$all_expected") <(objects "$tmp/all.yaml"); then
  echo "kubectl kustomize deploy/: unexpected objects (diff above)" >&2
  status=1
fi
if ! diff -u <(printf '%s\n' "$defrag_expected" | sort) <(objects "$tmp/defrag.yaml"); then
  echo "kubectl kustomize deploy/defrag: unexpected objects (diff above)" >&2
  status=1
fi
# The dashboard ConfigMap carries the JSON file and the Grafana sidecar label.
grep -q '^  gpupack-dashboard.json: ' "$tmp/all.yaml" || { echo "dashboard ConfigMap lacks gpupack-dashboard.json" >&2; status=1; }
grep -q 'grafana_dashboard: "1"' "$tmp/all.yaml" || { echo "dashboard ConfigMap lacks label grafana_dashboard" >&2; status=1; }
# The image the kit runs is the one the Containerfile's docs build.
grep -q 'image: gpupack:0.1.0$' "$tmp/all.yaml" || { echo "rendered kit does not run gpupack:0.1.0" >&2; status=1; }
[ "$(grep -c 'image: gpupack:0.1.0$' "$tmp/defrag.yaml")" -eq 2 ] || { echo "deploy/defrag does not run gpupack:0.1.0 in both containers" >&2; status=1; }
"$root/deploy/monitoring/gen-prometheus-rule.sh" --check || status=1
[ "$status" -eq 0 ] && echo "deploy/ renders: $(objects "$tmp/all.yaml" | wc -l) objects, deploy/defrag $(objects "$tmp/defrag.yaml" | wc -l)"
exit "$status"
