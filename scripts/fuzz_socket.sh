#!/usr/bin/env bash
# The socket fuzz at scale: the CI test Fuzz.ThroughASocketIntoARunningPipeline (200,000 messages)
# run with N messages (default 1,000,000) into a live pipeline with its reconstruction thread: good spokes
# interleaved with huge trajectory values, forged sequence numbers and times, foreign streams and byte
# mutations. Writes the run's metrics and the share of good spokes kept as JSON.
#   scripts/fuzz_socket.sh [N=1000000] [OUT=fuzz-out] [TESTS=build/radstream_tests]
set -uo pipefail
N=${1:-1000000}
OUT=${2:-fuzz-out}
TESTS=${3:-build/radstream_tests}
mkdir -p "$OUT"
start=$(date +%s)
RADSTREAM_FUZZ_MESSAGES=$N RADSTREAM_FUZZ_JSON="$OUT/fuzz_socket.json" "$TESTS" \
  --gtest_filter=Fuzz.ThroughASocketIntoARunningPipeline > "$OUT/fuzz_socket.log" 2>&1
rc=$?
echo "fuzz_socket: $N messages, test exit $rc, $(($(date +%s) - start)) s" | tee -a "$OUT/fuzz_socket.log"
grep -E "socket fuzz|PASSED|FAILED" "$OUT/fuzz_socket.log"
exit $rc
