#!/usr/bin/env bash
# A device check: the BART-layout NUFFT plan on CUDA against the CPU, the pipe chain on CUDA for three
# methods, then a short soak of the server under attack (SOAK_S seconds, default 200). Its inputs, made here
# (BART and the program) in gpuin/ beside the carried binaries (scripts/make_devcarry.sh, packed in .dcpack):
#   mkdir gpuin && cd gpuin && bart traj -r -x 128 -y 55 t && bart scale 0.5 t traj && \
#   bart phantom -k -s 8 -t traj ksp && bart phantom -x 64 img && \
#   ../build/radstream simulate --out rec.h5 --spokes 400 --matrix 64 --coils 8 --snr 30
set -u
tar xJf .dcpack/dc.tar.xz
source scripts/gpu_env.sh > /dev/null
R=$PWD/.devcarry/radstream
g=${GPUIN:-gpuin}
mkdir -p "$OUT"
run $R nufft --traj $g/traj --backend cuda -a -d 64:64 $g/ksp $g/adj_cuda 2>&1 | tail -1
run $R nufft --traj $g/traj --backend cpu -a -d 64:64 $g/ksp $g/adj_cpu 2>&1 | tail -1
run $R nufft --traj $g/traj --backend cuda $g/img $g/fwd_cuda 2>&1 | tail -1
run $R nufft --traj $g/traj --backend cpu $g/img $g/fwd_cpu 2>&1 | tail -1
G=$g python3 - <<'PY' | tee "$OUT/nufft-cuda-vs-cpu.txt"
import array, math, os
g = os.environ['G']
def read(b):
    a = array.array('f'); a.frombytes(open(b + '.cfl', 'rb').read()); return a
for what in ('adj', 'fwd'):
    c, p = read(f'{g}/{what}_cuda'), read(f'{g}/{what}_cpu')
    num = math.sqrt(sum((x - y) ** 2 for x, y in zip(c, p))); den = math.sqrt(sum(y * y for y in p))
    print(f'nufft {what} cuda vs cpu: relative difference {num / den:.3g} over {len(p) // 2} values')
PY
for m in gridding cg-sense nlinv; do
  set -o pipefail
  run $R replay $g/rec.h5 --mrd - --config $m --speed max 2> "$OUT/replay-$m.err" |
    run $R run --mrd-stdin --backend cuda --window 64 --stride 16 --no-skip --images '' --mrd-config-dir config \
      > "$g/pipe-$m.mrd" 2> "$OUT/pipe-$m.err"
  echo "pipe $m on cuda: rc=$? $(stat -c %s "$g/pipe-$m.mrd") bytes; $(grep -o 'closed: .*' "$OUT/pipe-$m.err")"
  grep -o "reconstructs with .*" "$OUT/pipe-$m.err"
done 2>&1 | tee "$OUT/pipes-cuda.txt"
OUT=$OUT bash scripts/gpu_soak.sh start ${SOAK_S:-200}
OUT=$OUT bash scripts/gpu_soak.sh wait $(( ${SOAK_S:-200} + 60 ))
OUT=$OUT bash scripts/gpu_soak.sh collect
