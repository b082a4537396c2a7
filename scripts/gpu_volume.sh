#!/usr/bin/env bash
# Issue 56's volumetric stream on the GPU: the GPU tests of the volume paths (RADSTREAM_REQUIRE_GPU=1), then
# V2 (a live stack of stars, 192^2 x 32 partitions x 32 coils, 20 volumes/s, gridding) for V2_S seconds
# (default 60) and, unless V1=0, V1 offline through `recon` (scripts/make_stack_case.py's random case) for
# gridding and cg-sense. Run on the GPU machine with the carried binaries (scripts/make_devcarry.sh); writes the
# logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
source "$(dirname "$0")/gpu_env.sh"
[ -n "${TESTS-x}" ] && gpu_tests "${TESTS:-VolumeStreamCuda.*:StackOfStarsCuda.*:GpuStream.*}"
cases=$(mktemp -d)
sed "s/duration_s: 60/duration_s: ${V2_S:-60}/" config/bench/V2.yaml > "$cases/V2.yaml"
run .devcarry/radstream bench --cases-dir "$cases" --case V2 --out "$OUT/V2.json" >> "$OUT/bench.log" 2>&1
echo "V2: rc=$?"
grep -E "bench V2|targets|FAIL|PASS" "$OUT/bench.log" | tail -5
if [ "${V1:-1}" = 1 ]; then v1_volume 2>&1 | tee "$OUT/v1.txt"; fi
