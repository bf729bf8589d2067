#!/usr/bin/env bash
# Installs the Debian packages gpupack needs to build, test and benchmark.
# Only packages that are missing are installed; running it twice is a no-op.
set -euo pipefail

# Usage: install-deps.sh [build]   ("build": only what building gpupack
# needs, for `make demo`; default: also the tools the tests run).
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libyaml-cpp-dev libcpp-httplib-dev libcli11-dev libfmt-dev
  libcurl4-openssl-dev libglpk-dev libsimdjson-dev libssl-dev ccache
)
# Real parts the tests drive: sanitizer builds and lint (clang), Prometheus,
# a Go kube-scheduler stand-in, headless Chromium for the GPU map pages,
# buildah and podman for the image.
TEST_PACKAGES=(
  clang libclang-rt-14-dev clang-format clang-tidy prometheus golang-go chromium buildah podman
)
PACKAGES=("${BUILD_PACKAGES[@]}")
if [ "${1:-all}" != build ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
