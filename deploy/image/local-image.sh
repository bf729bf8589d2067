#!/usr/bin/env bash
# Builds a gpupack image from this machine's own files, without a registry:
# the gpupack binary and the shared libraries it loads (ldd), on an empty
# base, run as the numeric non-root user 65532 with gpupack as entrypoint,
# the same contract as Containerfile's runtime stage. For machines that
# cannot pull debian:bookworm (`make image` builds Containerfile where they
# can). Uses buildah (Debian package buildah).
# Usage: local-image.sh BINARY TAG [buildah global flags...]
# Prints the image id.
set -euo pipefail
bin="${1:?usage: local-image.sh BINARY TAG [buildah flags...]}"
tag="${2:?image tag, e.g. localhost/gpupack:0.1.0}"
shift 2
command -v buildah >/dev/null || { echo "buildah not found (Debian package buildah)" >&2; exit 1; }
root="$(mktemp -d)"
ctr=""
cleanup() {
  [ -z "$ctr" ] || buildah "$@" rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$root"
}
trap 'cleanup "$@"' EXIT
chmod 0755 "$root"  # the image root: readable by the non-root user
install -D -m 0755 "$bin" "$root/usr/local/bin/gpupack"
# The loader and every library, at the paths the binary asks for.
for lib in $(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
  install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
done
ctr="$(buildah "$@" from scratch)"
buildah "$@" copy "$ctr" "$root/" / >/dev/null
buildah "$@" config --entrypoint '["/usr/local/bin/gpupack"]' --cmd '--help' --user 65532:65532 \
  --port 8888 --port 9464 --label org.opencontainers.image.title=gpupack "$ctr"
buildah "$@" commit --quiet "$ctr" "$tag"
