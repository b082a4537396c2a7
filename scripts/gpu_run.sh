#!/usr/bin/env bash
# Runs the GPU tests and the benchmarks on a GPU machine that lacks the Debian libraries: the binaries and their
# libraries are carried in .devcarry/ (built on a Debian 12 machine). Writes logs and JSON under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
cufft=$(find / -name 'libcufft.so.12' -not -path '*/proc/*' 2>/dev/null | head -1)
echo "cufft: $cufft"
lp=".devcarry/lib:$(dirname "$cufft"):/usr/local/nvidia/lib64:/usr/local/cuda/lib64"
glibc=$(ldd --version | head -1 | grep -oE '[0-9]+\.[0-9]+$')
echo "host glibc $glibc"
if [ "$(printf '%s\n' 2.36 "$glibc" | sort -V | head -1)" = "2.36" ]; then
  run() { LD_LIBRARY_PATH="$lp" "$@"; }
else
  run() { .devcarry/glibc/ld-linux-x86-64.so.2 --library-path ".devcarry/glibc:$lp:/usr/lib/x86_64-linux-gnu" "$@"; }
fi
RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests --gtest_filter='CudaParity.*:CustomFft.*:CudaGraph.*:GriddingVsNudft.*:Chain.*' \
  2>&1 | tee "$OUT/gpu_tests.log"
run .devcarry/radstream bench --frames ${FRAMES:-100} --warmup 10 --out "$OUT/bench.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log"
