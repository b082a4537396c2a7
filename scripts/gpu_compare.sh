#!/usr/bin/env bash
# Before/after on one GPU machine: the GPU tests of the current build, then `radstream bench` of a baseline
# binary (.devcarry/radstream_base, built from an earlier commit) and of the current one on the same cases,
# interleaved (base, new, base, new) so that drift hits both alike. Without a baseline binary the current one
# runs twice (cases that compare two settings of one binary, such as N1 and N1-stepped). Writes logs and
# JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests \
  --gtest_filter="${TESTS:-CudaParity.*:CustomFft.*:CudaGraph.*:GpuStream.*:FbpCuda.*:NufftCuda.*:GriddingVsNudft.*:Chain.*:Cg.*:NufftPlan.*}" \
  2>&1 | tee "$OUT/gpu_tests.log" | grep -E '^\[  |OK|FAILED|vs|CG|NUFFT' | tail -60
cases=${CASES:-R1 R1-custom R2 R2-fbp R5}
for round in 1 2; do
  [ -x .devcarry/radstream_base ] && run .devcarry/radstream_base bench --case $cases --frames ${FRAMES:-200} --warmup 20 --out "$OUT/bench_base_$round.json" \
    >> "$OUT/bench.log" 2>&1
  run .devcarry/radstream bench --case $cases --frames ${FRAMES:-200} --warmup 20 --out "$OUT/bench_new_$round.json" \
    >> "$OUT/bench.log" 2>&1
done
tail -40 "$OUT/bench.log"
