#!/usr/bin/env bash
# A device check of the volumes from a stack of stars and of the stream after the protocol adapters moved to
# src/ingest: the GPU tests of those paths (RADSTREAM_REQUIRE_GPU=1), issue 56's V1 case (192^2 x 32
# partitions, 96 spokes a partition x 384 samples x 32 coils, random data from scripts/make_stack_case.py)
# through `recon --backend cuda` for gridding and cg-sense, then the MRD pipes on CUDA and a short soak of the
# server under attack (scripts/gpu_check_pipes.sh, inputs in $GPUIN; PIPES=0 leaves them out). Binaries from .dcpack/dc.tar.xz
# (scripts/make_devcarry.sh). Writes under $OUT.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
tar xJf .dcpack/dc.tar.xz
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia_smi.txt"
OUT=$OUT TESTS=${TESTS:-'StackOfStarsCuda.*:GpuStream.*:MultiGpuStream.*:NlinvCuda.*'} LIMIT_S=${LIMIT_S:-240} \
  bash scripts/gpu_all_tests.sh
source scripts/gpu_env.sh > /dev/null
v1_volume 2>&1 | tee "$OUT/v1.txt"
[ "${PIPES:-1}" = 1 ] && OUT=$OUT GPUIN=${GPUIN:-.dcpack/gpuin} SOAK_S=${SOAK_S:-90} bash scripts/gpu_check_pipes.sh
