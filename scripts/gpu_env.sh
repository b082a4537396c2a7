# Sourced by the GPU scripts: defines run() to start a binary carried in .devcarry/ (built on Debian 12) on
# a GPU machine without the Debian packages, with the machine's own driver and cuFFT.
cufft=$(find / -name 'libcufft.so.12' -not -path '/proc/*' 2>/dev/null | head -1)
echo "cufft: $cufft"
# cuSPARSE (and the nvJitLink it loads) from the machine too: both are too large to carry.
cusparse=$(find / -name 'libcusparse.so.12' -not -path '/proc/*' 2>/dev/null | head -1)
jitlink=$(find / -name 'libnvJitLink.so.13' -not -path '/proc/*' 2>/dev/null | head -1)
echo "cusparse: $cusparse; nvJitLink: $jitlink"
lp=".devcarry/lib:$(dirname "$cufft"):${cusparse:+$(dirname "$cusparse"):}${jitlink:+$(dirname "$jitlink"):}/usr/local/nvidia/lib64:/usr/local/cuda/lib64"
glibc=$(ldd --version | head -1 | grep -oE '[0-9]+\.[0-9]+$')
echo "host glibc $glibc"
if [ "$(printf '%s\n' 2.36 "$glibc" | sort -V | head -1)" = "2.36" ]; then
  run() { LD_LIBRARY_PATH="$lp" "$@"; }
  run_exec() { LD_LIBRARY_PATH="$lp" exec "$@"; }
else
  run() { .devcarry/glibc/ld-linux-x86-64.so.2 --library-path ".devcarry/glibc:$lp:/usr/lib/x86_64-linux-gnu" "$@"; }
  run_exec() { exec .devcarry/glibc/ld-linux-x86-64.so.2 --library-path ".devcarry/glibc:$lp:/usr/lib/x86_64-linux-gnu" "$@"; }
fi
# run_exec: the same in place of the calling (sub)shell, so that `run_exec prog &` gives prog's own PID in $!.
# The GPU tests of the carried build that match the filter $1 (RADSTREAM_REQUIRE_GPU=1: a missing GPU fails
# them), logged in $OUT/gpu_tests.log; prints the verdict lines.
gpu_tests() {
  RADSTREAM_REQUIRE_GPU=1 run .devcarry/radstream_tests --gtest_filter="$1" > "$OUT/gpu_tests.log" 2>&1
  grep -E '^\[  (PASSED|FAILED)' "$OUT/gpu_tests.log" | tail -20
}
# Issue 56's V1 offline (192^2 x 32 partitions, 96 spokes a partition x 384 samples x 32 coils, random data from
# scripts/make_stack_case.py) through `recon --backend cuda` for gridding and cg-sense, REPEAT times each;
# prints the timing lines.
v1_volume() {
  local v=/tmp/v1
  python3 scripts/make_stack_case.py $v
  printf 'recon:\n  joint_volume: false\n  batch_partitions: false\n' > $v/per-partition.yaml
  for m in ${V1_ROUTES:-gridding gridding-per-partition gridding-3d cg-sense cg-sense-per-partition}; do
    local method=${m%-per-partition} extra=()
    method=${method%-3d}
    [ "$m" != "${m%-per-partition}" ] && extra=(-c $v/per-partition.yaml)
    [ "$m" = gridding-3d ] && extra=(--stack-3d)
    run .devcarry/radstream recon --traj $v/traj --kspace $v/ksp --matrix 192 --backend cuda --method $method \
      "${extra[@]}" --repeat ${REPEAT:-20} --out $v/$m.cfl > "$v/v1-$m.log" 2>&1
    echo "V1 $m (cuda): rc=$?"
    grep -E "stack of stars|reconstruction:|volume:|3D NUFFT|coil maps|cg-sense" "$v/v1-$m.log"
  done
}
