#!/usr/bin/env bash
# The MRD fuzz at full size: 1,000,000 damaged messages through the codec, and 20,000 damaged sessions against a
# live server (the CI runs 200,000 and 2,000). Usage: bash scripts/mrd_fuzz.sh [build]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
RADSTREAM_MRD_FUZZ_MESSAGES=1000000 RADSTREAM_MRD_FUZZ_SESSIONS=20000 \
  "$build/radstream_tests" --gtest_filter='MrdCodec.FuzzedFramingNeverCrashesOrOverreads:MrdServer.SocketFuzz*'
