#!/usr/bin/env bash
# Kernel times of one bench case under Nsight Compute (ncu), on the GPU machine: writes $OUT/profile.csv.
# Usage: CASE=R1 bash scripts/gpu_profile.sh
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
source "$(dirname "$0")/gpu_env.sh"
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
run "$ncu" --metrics gpu__time_duration.sum --csv --launch-skip ${SKIP:-0} --launch-count ${COUNT:-200} \
  .devcarry/radstream bench --case "${CASE:-R1}" --frames 3 --warmup 1 > "$OUT/profile.csv" 2> "$OUT/profile.err"
python3 "$(dirname "$0")/profile_summary.py" "$OUT/profile.csv"
