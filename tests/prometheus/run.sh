#!/usr/bin/env bash
# Checks deploy/prometheus-rules.yaml with promtool and runs its unit tests.
# Fails (does not skip) when promtool is missing: scripts/install-deps.sh
# installs the Debian package "prometheus" that provides it.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
if ! command -v promtool >/dev/null 2>&1; then
  echo "promtool not found: run scripts/install-deps.sh (Debian package prometheus)" >&2
  exit 1
fi
promtool check rules "$root/deploy/prometheus-rules.yaml"
promtool test rules "$here/rules_test.yaml"
