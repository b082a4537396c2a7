#!/usr/bin/env bash
# Fails, naming the files, when a tracked C++ or CUDA source is not clang-format clean (.clang-format).
# bash scripts/check_format.sh          # check (CI)
# bash scripts/check_format.sh --fix    # rewrite the files in place
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v clang-format >/dev/null || { echo "check_format: clang-format not found (apt-get install clang-format)" >&2; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h')
if [ "${1:-}" = "--fix" ]; then
  printf '%s\0' "${files[@]}" | xargs -0 -n 32 clang-format -i
  exit 0
fi
bad=$(printf '%s\0' "${files[@]}" | xargs -0 -n 32 clang-format --dry-run 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
if [ -n "$bad" ]; then
  echo "check_format: $(echo "$bad" | wc -l) file(s) not clang-format clean (fix: bash scripts/check_format.sh --fix):" >&2
  echo "$bad" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files clang-format clean ($(clang-format --version | head -1))"
