#!/usr/bin/env bash
# Prints, one a line, the Debian packages that provide the shared libraries
# BINARY loads (ldd), libc6 included: the runtime stage of Containerfile
# installs exactly these. Fails when a library belongs to no package (a
# library built by hand would be missing from the image).
set -euo pipefail
bin="${1:?usage: runtime-packages.sh BINARY}"
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}')
for lib in $libs; do
  pkg=""
  # Bookworm ships libraries under /lib or /usr/lib (merged /usr); ask dpkg
  # for the path as loaded, then for the other spelling, then the real file.
  for p in "$lib" "/usr${lib#/usr}" "${lib#/usr}" "$(readlink -f "$lib")" "/usr$(readlink -f "$lib" | sed 's|^/usr||')" \
           "$(readlink -f "$lib" | sed 's|^/usr||')"; do
    if out=$(dpkg -S "$p" 2>/dev/null); then
      pkg=$(printf '%s\n' "$out" | head -n1 | cut -d: -f1)
      break
    fi
  done
  if [ -z "$pkg" ]; then
    echo "runtime-packages.sh: no Debian package provides $lib" >&2
    exit 1
  fi
  echo "$pkg"
done | sort -u
