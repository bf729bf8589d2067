#!/usr/bin/env bash
# Installs the Debian packages gpupack needs to build, test and benchmark.
# Only packages that are missing are installed; running it twice is a no-op.
set -euo pipefail

PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libyaml-cpp-dev libcpp-httplib-dev libcli11-dev libfmt-dev
  clang libclang-rt-14-dev prometheus libcurl4-openssl-dev libglpk-dev
  libsimdjson-dev libssl-dev
  ccache clang-format clang-tidy golang-go
)

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
