#!/usr/bin/env bash
# Runs every GPU test (RADSTREAM_REQUIRE_GPU=1) and the benchmark cases that use the GPU on a GPU machine that
# lacks the Debian libraries (binaries and libraries carried in .devcarry/, built on a Debian 12 machine), then
# draws the scaling plots of the result. Writes logs, the JSON and the plots under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests \
  --gtest_filter="${TESTS:-CudaParity.*:CustomFft.*:CudaGraph.*:GpuStream.*:FbpCuda.*:NufftCuda.*:SenseCuda.*:Sense.*:Chain.*:Cg.*:NufftPlan.*}" \
  > "$OUT/gpu_tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran' "$OUT/gpu_tests.log"
# The GPU cases (the CPU cases R4, R5-cpu and R10 are measured against BART on the CPU machine).
cases=${CASES:-$(ls config/bench/*.yaml | xargs -n1 basename | sed 's/\.yaml$//' | grep -vE '^(R4|R5-cpu|R10)$' | tr '\n' ' ')}
run .devcarry/radstream bench --case $cases --frames ${FRAMES:-100} --warmup 10 --out "$OUT/bench.json" \
  ${BENCH_ARGS:-} > "$OUT/bench.log" 2>&1
grep -vE '^\[' "$OUT/bench.log"
run .devcarry/radstream bench --plot "$OUT/bench.json" 2>&1 | tail -3
