#!/usr/bin/env bash
# Live NLINV planes and the live tails on a GPU machine (binaries carried in .devcarry/): the GPU tests named
# in TESTS, then one plane and three planes with the relative CG rule (N2-relative, N4-relative) and three
# with BART's legacy rule (N4), PLANES_S seconds each (default 90), and live CG-SENSE (R9, R9_S seconds,
# default 120) with its slowest frames in the JSON. Writes the logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
[ -n "${TESTS-x}" ] && gpu_tests "${TESTS:-NlinvCuda.*:CudaParity.*:GpuStream.*:Methods.*:Stream.AMethod*:MrdSessions.AClient*}"
cases=$(mktemp -d)
for c in N2-relative N4-relative N4; do
  sed -E "s/duration_s: [0-9]+/duration_s: ${PLANES_S:-90}/" config/bench/$c.yaml > "$cases/$c.yaml"
done
sed -E "s/duration_s: [0-9]+/duration_s: ${R9_S:-120}/" config/bench/R9.yaml > "$cases/R9.yaml"
for c in ${CASES:-N2-relative N4-relative N4 R9}; do
  run .devcarry/radstream bench --cases-dir "$cases" --case $c --out "$OUT/$c.json" >> "$OUT/bench.log" 2>&1
  grep -E "^$c " "$OUT/bench.log" | tail -1
done
