#!/usr/bin/env bash
# Several scanners on one GPU server (issue 52): the MRD session tests with a GPU present, then the bench cases
# S1 (8 NLINV sessions at once), S1-grid (8 gridding sessions), S2 (4 sessions, one killed halfway) and MRD2
# (the MRD path against the ZeroMQ path). Run on the GPU machine with the carried binaries (scripts/gpu_run.sh's
# set-up); writes logs and the JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests \
  --gtest_filter="${TESTS:-MrdSessions.*:MrdServer.RoundTrip*:GpuStream.*}" >"$OUT/gpu_tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |of 7 frames|images of' "$OUT/gpu_tests.log"
run .devcarry/radstream bench --case ${CASES:-S1 S1-grid S2 MRD2} --out "$OUT/bench.json" >"$OUT/bench.log" 2>&1
grep -E 'bench (S|MRD)|targets|FAIL|PASS' "$OUT/bench.log" | grep -v '\] \[info\] \(run\|mrd\|ingest\)' | tail -20
