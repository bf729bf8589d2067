#!/usr/bin/env bash
# The image, built where no registry is reachable: deploy/image/local-image.sh
# puts the gpupack binary and the libraries it loads on an empty base; the
# image must run `gpupack --version` (its entrypoint, as user 65532) and
# print the binary's version. It runs under podman where this machine allows
# containers, else under buildah's chroot isolation (the image's own files,
# nothing of the host's). Storage is private to the test (vfs driver).
# Usage: image.sh <gpupack-binary>
# Exits 77 (skipped) without buildah.
set -euo pipefail
bin="${1:?usage: image.sh <gpupack-binary>}"
if ! command -v buildah >/dev/null; then
  echo "skipped: buildah not found (scripts/install-deps.sh installs Debian's buildah)" >&2
  exit 77
fi
work="$(mktemp -d)"
store=(--root "$work/storage" --runroot "$work/run" --storage-driver vfs)
cleanup() {
  buildah "${store[@]}" rm -a >/dev/null 2>&1 || true
  buildah "${store[@]}" rmi -a -f >/dev/null 2>&1 || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
want="$("$bin" --version)"
tag=localhost/gpupack:test
"$(dirname "$0")/../../deploy/image/local-image.sh" "$bin" "$tag" "${store[@]}" >/dev/null
config="$(buildah "${store[@]}" inspect --format '{{.OCIv1.Config.User}} {{.OCIv1.Config.Entrypoint}}' "$tag")"
[ "$config" = "65532:65532 [/usr/local/bin/gpupack]" ] || { echo "FAIL image config: $config" >&2; exit 1; }
got=""
how=""
if command -v podman >/dev/null &&
  got="$(podman "${store[@]}" run --rm --network none "$tag" --version 2>"$work/podman.err")"; then
  how="podman run"
else
  [ ! -s "$work/podman.err" ] || echo "podman cannot run containers here ($(tail -1 "$work/podman.err")); using buildah's chroot isolation"
  ctr="$(buildah "${store[@]}" from "$tag")"
  got="$(buildah "${store[@]}" run --isolation chroot --user 65532:65532 "$ctr" -- /usr/local/bin/gpupack --version)"
  how="buildah run --isolation chroot"
fi
[ "$got" = "$want" ] || { echo "FAIL: the image printed '$got', the binary '$want'" >&2; exit 1; }
size="$(du -sm "$work/storage" | cut -f1)"
echo "ok image: $how printed '$got' as user 65532 (storage ${size} MiB)"
