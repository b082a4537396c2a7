#!/usr/bin/env bash
# Runs the GPU tests and the benchmarks on a GPU machine that lacks the Debian libraries: the binaries and their
# libraries are carried in .devcarry/ (built on a Debian 12 machine). Writes logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests --gtest_filter='CudaParity.*:CustomFft.*:CudaGraph.*:GpuStream.*:FbpCuda.*:GriddingVsNudft.*:Chain.*' \
  2>&1 | tee "$OUT/gpu_tests.log"
run .devcarry/radstream bench --frames ${FRAMES:-100} --warmup 10 --out "$OUT/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
