#!/usr/bin/env bash
# Eight NLINV scanners on one GPU (issue 52's S1) as NLINV now runs (device loops), with BART's legacy CG rule
# (S1) and the relative one (S1-relative), S1_S seconds alone and S1_S together (default 60); the gridding
# sessions (S1-grid) and one killed among four (S2), GRID_S seconds each (default 30); then the NLINV cases
# named in CASES. Run on the GPU machine with the carried binaries; writes the logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
[ -n "${TESTS-x}" ] && gpu_tests "${TESTS:-NlinvCuda.*}"
cases=$(mktemp -d)
sed "s/duration_s: 60/duration_s: ${S1_S:-60}/" config/bench/S1.yaml > "$cases/S1.yaml"
sed "s/duration_s: 60/duration_s: ${S1_S:-60}/" config/bench/S1-relative.yaml > "$cases/S1-relative.yaml"
for c in S1-grid S2; do sed "s/duration_s: 30/duration_s: ${GRID_S:-30}/" config/bench/$c.yaml > "$cases/$c.yaml"; done
for c in ${S1_CASES:-S1 S1-relative S1-grid S2}; do
  run .devcarry/radstream bench --cases-dir "$cases" --case $c --out "$OUT/$c.json" >> "$OUT/bench.log" 2>&1
  grep -E "bench $c: (last|[0-9]+ scanner)" "$OUT/bench.log" | tail -3
done
if [ -n "${CASES-N1-moving}" ]; then
  run .devcarry/radstream bench --case ${CASES:-N1-moving N1-grid15-moving N1-relative N4} --frames 300 \
    --warmup 20 --out "$OUT/nlinv.json" >> "$OUT/bench.log" 2>&1
  grep -E '^(N1|N4)|targets' "$OUT/bench.log"
fi
