#!/usr/bin/env bash
# Before/after of live cases on one GPU machine: the GPU tests named in TESTS, then each live case of CASES
# (default R9) LIVE_S seconds (default 120) with the baseline binary (.devcarry/radstream_base, an earlier
# commit's) and with the current one, ROUNDS times (default 1), base first. Writes logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
[ -n "${TESTS-x}" ] && gpu_tests "${TESTS:-GpuStream.*:CudaGraph.*:EspiritCuda.*:StreamControl.ACoilMap*}"
cases=$(mktemp -d)
for c in ${CASES:-R9}; do
  sed -E "s/duration_s: [0-9]+/duration_s: ${LIVE_S:-120}/" config/bench/$c.yaml > "$cases/$c.yaml"
done
for round in $(seq 1 "${ROUNDS:-1}"); do
  for who in base new; do
    bin=.devcarry/radstream; [ $who = base ] && bin=.devcarry/radstream_base
    [ -x $bin ] || continue
    run $bin bench --cases-dir "$cases" --case ${CASES:-R9} --out "$OUT/${who}_$round.json" >> "$OUT/bench_$who.log" 2>&1
    echo "$who $round:"; grep -E "^(R|N|S)[0-9A-Za-z-]* +cuda" "$OUT/bench_$who.log" | tail -3
  done
done
