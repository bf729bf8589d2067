#!/usr/bin/env bash
# Builds tests/e2e/scheduler (Go's standard library only) offline with
# Debian's golang-go, its build cache in <work-dir>. Prints the binary's path.
# Usage: build_scheduler.sh <work-dir>
set -euo pipefail
work="${1:?usage: build_scheduler.sh <work-dir>}"
command -v go >/dev/null || { echo "go not found: run scripts/install-deps.sh (golang-go)" >&2; exit 1; }
mkdir -p "$work"
cd "$(dirname "$0")/scheduler"
GOCACHE="$work/gocache" GOPATH="$work/gopath" GOPROXY=off GOFLAGS=-mod=mod go build -o "$work/scheduler" .
echo "$work/scheduler"
