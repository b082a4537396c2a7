#!/usr/bin/env bash
# The MRD fuzz at full size: 1,000,000 damaged messages through the codec, 20,000 damaged sessions against a
# live server, and 1,000,000 messages of mutated valid sessions parsed by a live server (the CI runs 200,000,
# 2,000 and 200,000). The last one's counts go to OUT/mrd-fuzz-parsed.json.
# Usage: bash scripts/mrd_fuzz.sh [build] [OUT=.]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-.}
mkdir -p "$out"
RADSTREAM_MRD_FUZZ_MESSAGES=1000000 RADSTREAM_MRD_FUZZ_SESSIONS=20000 RADSTREAM_MRD_FUZZ_PARSED=1000000 \
  RADSTREAM_MRD_FUZZ_JSON="$out/mrd-fuzz-parsed.json" \
  "$build/radstream_tests" \
  --gtest_filter='MrdCodec.FuzzedFramingNeverCrashesOrOverreads:MrdServer.SocketFuzz*:MrdFuzz.*'
