#!/usr/bin/env bash
# NLINV's device loops on a GPU machine (binaries carried in .devcarry/): the NLINV GPU tests, N1 and
# N1-grid15 beside their host-stepped twins (N1-stepped, N1-grid15-stepped) and R8, two rounds each with and
# without programmatic dependent launch (RADSTREAM_DEPENDENT_LAUNCH=0), then N2 (live, 8 ms
# deadline) with the device loops and host-stepped (N2-stepped), N2_S seconds each (default 150). Writes the
# logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests --gtest_filter="${TESTS:-NlinvCuda.*:CudaGraph.*}" \
  > "$OUT/gpu_tests.log" 2>&1
grep -E '^\[  (PASSED|FAILED)|device loops|host-stepped|deadline' "$OUT/gpu_tests.log" | tail -40
cases_n1=${CASES:-N1 N1-stepped N1-grid15 N1-grid15-stepped R8}
for round in 1 2; do
  run .devcarry/radstream bench --case $cases_n1 --frames ${FRAMES:-200} --warmup 20 \
    --out "$OUT/bench_$round.json" >> "$OUT/bench.log" 2>&1
  # the same without programmatic dependent launch (gpu/dependent_launch.cuh), to measure what it saves
  RADSTREAM_DEPENDENT_LAUNCH=0 run .devcarry/radstream bench --case $cases_n1 --frames ${FRAMES:-200} \
    --warmup 20 --out "$OUT/bench_serial_launch_$round.json" >> "$OUT/bench.log" 2>&1
done
cases=$(mktemp -d)
sed "s/duration_s: 600/duration_s: ${N2_S:-150}/" config/bench/N2.yaml > "$cases/N2.yaml"
sed -e "s/name: N2$/name: N2-stepped/" -e '$a\  nlinv_device_loops: false' "$cases/N2.yaml" > "$cases/N2-stepped.yaml"
run .devcarry/radstream bench --cases-dir "$cases" --case N2 N2-stepped --out "$OUT/n2.json" >> "$OUT/bench.log" 2>&1
grep -E '^(N1|N2)|targets' "$OUT/bench.log"
