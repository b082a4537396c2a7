#!/usr/bin/env bash
# The CG-SENSE round on one GPU machine: every GPU test (RADSTREAM_REQUIRE_GPU=1), the CG-SENSE cases (R8,
# R8-iter5, then R9 live when R9=1), and the before/after of the gridding cases against a baseline binary
# (.devcarry/radstream_base, run on the cases it knows). Logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu_tests.log"
source "$(dirname "$0")/gpu_env.sh"
RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests \
  --gtest_filter="${TESTS:-CudaParity.*:CustomFft.*:CudaGraph.*:GpuStream.*:FbpCuda.*:NufftCuda.*:SenseCuda.*:Sense.*:Chain.*:Cg.*:NufftPlan.*}" \
  2>&1 | tee -a "$OUT/gpu_tests.log" | grep -E '^\[  |FAILED|vs|cg-sense|sense|deadline' | tail -60
run .devcarry/radstream bench --case ${CG_CASES:-R8 R8-iter5} --frames ${FRAMES:-300} --warmup 20 \
  --out "$OUT/bench_cg.json" >> "$OUT/bench.log" 2>&1
tail -8 "$OUT/bench.log"
if [ -x .devcarry/radstream_base ]; then
  old=$(mktemp -d)
  for c in ${CASES:-R1 R1-custom R2 R2-fbp R5}; do cp "config/bench/$c.yaml" "$old/"; done
  for round in 1 2; do
    run .devcarry/radstream_base bench --cases-dir "$old" --frames ${FRAMES:-300} --warmup 20 \
      --out "$OUT/bench_base_$round.json" >> "$OUT/bench.log" 2>&1
    run .devcarry/radstream bench --cases-dir "$old" --frames ${FRAMES:-300} --warmup 20 \
      --out "$OUT/bench_new_$round.json" >> "$OUT/bench.log" 2>&1
  done
  grep -E '^R' "$OUT/bench.log"
fi
if [ "${R9:-0}" = 1 ]; then
  run .devcarry/radstream bench --case R9 --out "$OUT/bench_r9.json" >> "$OUT/bench.log" 2>&1
  tail -4 "$OUT/bench.log"
fi
