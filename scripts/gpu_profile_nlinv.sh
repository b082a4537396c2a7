#!/usr/bin/env bash
# One N1 frame's kernels on a GPU machine with Nsight Compute (the hardware counters; the clocks left alone),
# beside the bench of N1 and N1-grid15: where a frame's time goes, kernel by kernel. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
bin=${BIN:-.devcarry/radstream}
run "$bin" bench --case ${CASES:-N1 N1-grid15} --frames ${FRAMES:-200} --warmup 20 --out "$OUT/bench.json" \
  > "$OUT/bench.log" 2>&1
tail -5 "$OUT/bench.log"
ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $ncu"
# bench runs 2 warm-up frames, then frames; the kernels after the first ${SKIP:-2500} launches are one or two
# frames in the steady state.
LD_LIBRARY_PATH="$lp" timeout 400 "$ncu" --clock-control none --launch-skip ${SKIP:-2500} \
  --launch-count ${COUNT:-1400} --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  --csv --page raw "$bin" bench --case N1 --frames 6 --warmup 2 --out /tmp/ncu_bench.json \
  > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
echo "ncu rc $?"; tail -3 "$OUT/ncu.err"; wc -l "$OUT/ncu.csv"
