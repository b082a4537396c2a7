#!/usr/bin/env bash
# The exact path on a GPU machine: its GPU tests (RADSTREAM_REQUIRE_GPU=1, the IMPATIENT data from
# $RADSTREAM_IMPATIENT_DIR) and bench-exact (S1, S2, S3). Writes logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests --gtest_filter="${TESTS:-ExactCuda.*:Exact.*:ExactField.ForwardIsEquation44:ExactField.Seed001CaseOnItsOwnData}" \
  > "$OUT/exact_tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|Failure|NRMSE|Expected|actual' "$OUT/exact_tests.log"
run .devcarry/radstream bench-exact --impatient "$RADSTREAM_IMPATIENT_DIR/64x64x1" --out "$OUT/bench_exact.json" \
  ${BENCH_ARGS:-} > "$OUT/bench_exact.log" 2>&1
grep -vE '^\s*$' "$OUT/bench_exact.log" | tail -20
