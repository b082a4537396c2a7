#!/usr/bin/env bash
# Before/after of a volume's reconstruction on one GPU machine: issue 56's V1 case (scripts/make_stack_case.py)
# through `recon --backend cuda --repeat 20` of a baseline binary (.devcarry/radstream_base) and of the current
# one, interleaved (base, new, base, new), for gridding and for cg-sense with the maps the first cg-sense run
# estimated (so that the runs time the same solves); then the stack-of-stars GPU test. Writes $OUT/volume.txt.
set -u
OUT=${OUT:-out}
mkdir -p "$OUT"
tar xJf .dcpack/dc.tar.xz
source scripts/gpu_env.sh > /dev/null
v=/tmp/v1
python3 scripts/make_stack_case.py $v
common="--traj $v/traj --kspace $v/ksp --matrix 192 --backend cuda"
{
  run .devcarry/radstream recon $common --method cg-sense --out $v/m.cfl --sens-out $v/maps.cfl 2>&1 |
    grep -E "coil maps|inverse DFT"
  for round in 1 2; do
    for b in radstream_base radstream; do
      for m in gridding "cg-sense --sens $v/maps.cfl"; do
        echo "$b $m (round $round): $(run .devcarry/$b recon $common --repeat ${REPEAT:-20} --method $m --out $v/o.cfl 2>&1 |
          grep -oE 'a volume median .*')"
      done
    done
  done
  RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests --gtest_filter='StackOfStarsCuda.*' 2>&1 |
    grep -E "cuda vs cpu|OK|FAILED"
} 2>&1 | tee "$OUT/volume.txt"
