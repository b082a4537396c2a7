#!/usr/bin/env bash
# The whole test suite on a GPU machine (RADSTREAM_REQUIRE_GPU=1), binaries carried in .devcarry/. The tests
# that start the radstream program look for it where the build put it (RADSTREAM_BIN, compiled in), and for
# config files under the build's source folder: both paths are made to lead here (a link from the build's
# source folder to this checkout when that folder does not exist on this machine, and a small launcher at the
# program's path that starts the carried program with the carried libraries). Writes $OUT/all_tests.log.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
repo=$(pwd)
source scripts/gpu_env.sh > /dev/null
bin=$(strings .devcarry/radstream_tests | grep -E '^/.+/build/radstream$' | head -1)
src=${bin%/build/radstream}
if [ -z "$bin" ]; then
  echo "no build path of radstream found in .devcarry/radstream_tests" >&2
  exit 2
fi
if [ "$src" != "$repo" ] && [ ! -e "$src" ]; then
  mkdir -p "$(dirname "$src")" && ln -s "$repo" "$src"
fi
mkdir -p "$src/build"
abs_lp=${lp//.devcarry/$repo/.devcarry}
if [ "$(type -t run)" = function ] && declare -f run | grep -q ld-linux; then
  launch="exec $repo/.devcarry/glibc/ld-linux-x86-64.so.2 --library-path \"$repo/.devcarry/glibc:$abs_lp:/usr/lib/x86_64-linux-gnu\" $repo/.devcarry/radstream \"\$@\""
else
  launch="LD_LIBRARY_PATH=\"$abs_lp\" exec $repo/.devcarry/radstream \"\$@\""
fi
printf '#!/bin/sh\n%s\n' "$launch" > "$src/build/radstream"
chmod +x "$src/build/radstream"
echo "radstream at $bin: $("$bin" --version 2>&1 | head -1)" | tee "$OUT/all_tests.log"
RADSTREAM_REQUIRE_GPU=1 timeout ${LIMIT_S:-540} bash -c "source scripts/gpu_env.sh > /dev/null; run .devcarry/radstream_tests \
  --gtest_filter='${TESTS:-*}'" >> "$OUT/all_tests.log" 2>&1
echo "tests rc=$?" >> "$OUT/all_tests.log"
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|tests rc' "$OUT/all_tests.log" | tail -60
