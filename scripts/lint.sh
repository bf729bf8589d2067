#!/usr/bin/env bash
# Formatting and static checks of gpupack's own sources.
#   lint.sh format              apply .clang-format to src/, tests/, bench/
#   lint.sh format-check        fail, listing files, if any is not formatted
#   lint.sh tidy [build-dir]    clang-tidy (.clang-tidy) over src/*.cc with the
#                               compile commands of build-dir (configured
#                               with clang++ if it has none yet)
set -euo pipefail
cd "$(dirname "$0")/.."

files() { find src tests bench -name '*.cc' -o -name '*.h' | grep -v '/corpus/' | sort; }

case "${1:-}" in
  format)
    files | xargs clang-format -i
    ;;
  format-check)
    bad=()
    while IFS= read -r f; do
      if ! clang-format --dry-run --Werror "$f" > /dev/null 2>&1; then bad+=("$f"); fi
    done < <(files)
    if [ ${#bad[@]} -gt 0 ]; then
      echo "lint: not formatted (run 'make format'): ${bad[*]}" >&2
      exit 1
    fi
    echo "lint: formatting ok ($(files | wc -l) files)"
    ;;
  tidy)
    dir="${2:-build-asan}"
    if [ ! -f "$dir/compile_commands.json" ]; then
      CXX=clang++ cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O1 \
        -DGPUPACK_BUILD_BENCH=OFF > /dev/null
    fi
    # The build's commands without its precompiled headers: given one,
    # clang-tidy's matchers walk every declaration in it (a third slower).
    db="$(mktemp -d)"
    sed -E 's# -Xclang -include-pch -Xclang [^ ]+ -Xclang -include -Xclang [^ ]+##g' \
      "$dir/compile_commands.json" > "$db/compile_commands.json"
    # The units the build compiles for src/: a unity batch (GPUPACK_UNITY,
    # 8 files that share one parse of the third-party headers) or a file of
    # its own; every src/*.cc must be in one of them.
    units="$db/units"
    grep -oE '"file": *"[^"]+"' "$db/compile_commands.json" | sed -E 's/^"file": *"//; s/"$//' |
      grep -E "^$PWD/src/.*\.cc$|/src/CMakeFiles/[^/]+\.dir/Unity/unity_[0-9]+_cxx\.cxx$" | sort -u > "$units"
    covered="$db/covered"
    { grep -E '\.cc$' "$units" | sed "s#^$PWD/##"
      grep -E '\.cxx$' "$units" | xargs -r cat | sed -nE "s#^\#include \"$PWD/(src/.*\.cc)\"#\1#p"; } |
      sort -u > "$covered"
    missing="$(find src -name '*.cc' | sort | comm -23 - "$covered")"
    if [ -n "$missing" ]; then
      echo "lint: no compile command in $dir for: $missing (reconfigure $dir)" >&2
      exit 1
    fi
    log="$(mktemp)"
    if ! xargs -P "$(nproc)" -n 1 clang-tidy -p "$db" --quiet < "$units" > "$log" 2>&1; then
      grep -E "error:|warning:" -A 3 "$log" | head -100 >&2
      echo "lint: clang-tidy found problems (full log: $log)" >&2
      exit 1
    fi
    echo "lint: clang-tidy ok ($(wc -l < "$covered") files in $(wc -l < "$units") units)"
    rm -rf "$log" "$db"
    ;;
  *)
    echo "usage: lint.sh format | format-check | tidy [build-dir]" >&2
    exit 2
    ;;
esac
