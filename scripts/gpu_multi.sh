#!/usr/bin/env bash
# The multi-GPU work on a host with 2 (or 4) GPUs, binaries carried in .devcarry/: the multi-GPU tests
# (RADSTREAM_REQUIRE_GPU=1, RADSTREAM_REQUIRE_MULTI_GPU=1), M3 (bench-split: the coil split of the R8 CG-SENSE
# frame over 1, 2 (, 4) GPUs), M2 (two slices on two GPUs against one slice on one) and M1 (batch replay of
# recorded streams by 1 and by N processes, one GPU each: the Slurm-array path, --shard; and under mpirun
# when the machine has it). Everything lands under $OUT.
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
# At most 8 files come back: the machine and the tests in multigpu_tests.log, one JSON per benchmark, the
# M1 logs together in m1.log.
LOG=$OUT/multigpu_tests.log
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv | tee "$LOG"
nvidia-smi topo -m >> "$LOG" 2>&1
source "$(dirname "$0")/gpu_env.sh"
ngpu=$(nvidia-smi -L | wc -l)
nccl=$(find / -name 'libnccl.so.2*' -not -path '/proc/*' 2>/dev/null | head -1)
echo "GPUs: $ngpu; libnccl: ${nccl:-none}; mpirun: $(command -v mpirun || echo none) $(mpirun --version 2>/dev/null | head -1)" | tee -a "$LOG"
if [ -n "$nccl" ]; then lp_extra=$(dirname "$nccl"); export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$lp_extra"; lp="$lp:$lp_extra"; fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  RADSTREAM_REQUIRE_GPU=1 RADSTREAM_REQUIRE_MULTI_GPU=1 timeout 300 bash -c "source scripts/gpu_env.sh > /dev/null; run .devcarry/radstream_tests \
    --gtest_filter='${TESTS:-CoilSplitCuda.*:MultiGpuStream.*:GpuStream.*:CoilSplit.*:MultiSlice.*}'" >> "$LOG" 2>&1
  echo "tests rc=$?" >> "$LOG"
  grep -E '^\[  (PASSED|FAILED|SKIPPED) |tests ran|coil split|two slices|watchdog|tests rc' "$LOG"
fi
parts="1 2"; [ "$ngpu" -ge 4 ] && parts="1 2 4"
run .devcarry/radstream bench-split --case config/bench/R8.yaml --parts $parts --frames ${FRAMES:-50} --warmup 5 \
  --out "$OUT/m3-bench-split.json" 2>&1 | grep -v '^ ' | tail -6
run .devcarry/radstream bench --cases-dir config/bench-multigpu --frames 10 --warmup 2 --out "$OUT/m2-bench.json" \
  > "$OUT/../m2.log" 2>&1
grep -E 'slice|bench M2' "$OUT/../m2.log" | tail -8
# M1: 4N recordings (N = the GPUs), two parameter sets; one process, then N processes with one GPU each.
if [ "${SKIP_M1:-0}" != 1 ]; then
  rec=$OUT/../m1rec; mkdir -p "$rec"
  nfiles=$((4 * ngpu)); [ "$nfiles" -lt 16 ] && nfiles=16
  seq 1 $nfiles | xargs -P 8 -I{} bash -c "source scripts/gpu_env.sh >/dev/null; run .devcarry/radstream simulate --out $rec/rec{}.h5 --overwrite --spokes ${M1_SPOKES:-1536} --matrix 128 --coils 16 --snr 30 --stream-id {} > /dev/null 2>&1"
  ls "$rec"/*.h5 > "$rec/list.txt"; ls -la "$rec" | head -3
  cat > "$rec/sweep.yaml" <<'YAML'
sets:
  - name: gridding-w128-s2
    frames: {window: 128, stride: 2}
    recon: {method: gridding, backend: cuda}
  - name: cgsense-w128-s8
    frames: {window: 128, stride: 8}
    recon: {method: cg-sense, backend: cuda, iterations: 10}
YAML
  M1LOG=$OUT/m1.log
  run .devcarry/radstream batch --files "$rec/list.txt" --param-sweep "$rec/sweep.yaml" --out "$OUT/../m1-one" \
    --metrics "$OUT/m1-one-metrics.json" > "$M1LOG" 2>&1
  tail -1 "$M1LOG"
  # MPI: rank 0 hands out, one worker rank per GPU (the carried binary gets its libraries through -x).
  if command -v mpirun > /dev/null; then
    mpirun --allow-run-as-root --oversubscribe --bind-to none -np $((ngpu + 1)) -x LD_LIBRARY_PATH="$lp" \
      .devcarry/radstream batch --files "$rec/list.txt" --param-sweep "$rec/sweep.yaml" --out "$OUT/../m1-mpi" \
      --metrics "$OUT/m1-mpi-metrics.json" >> "$M1LOG" 2>&1
    echo "mpirun rc=$?" >> "$M1LOG"; tail -2 "$M1LOG"
  fi
  # Slurm-array style: N processes, one GPU each, whole recordings per shard.
  t1=$(date +%s%N)
  for k in $(seq 0 $((ngpu - 1))); do
    OMP_NUM_THREADS=$(( $(nproc) / ngpu )) CUDA_VISIBLE_DEVICES=$k run .devcarry/radstream batch --files "$rec/list.txt" --param-sweep "$rec/sweep.yaml" \
      --out "$OUT/../m1-shards" --shard $k/$ngpu --metrics "$OUT/../m1-shard-$k-metrics.json" > "$OUT/../m1-shard-$k.log" 2>&1 &
  done
  wait
  t2=$(date +%s%N)
  for k in $(seq 0 $((ngpu - 1))); do tail -1 "$OUT/../m1-shard-$k.log" | tee -a "$M1LOG"; done
  python3 - "$OUT" "$ngpu" "$(( (t2 - t1) / 1000000 ))" <<'PY' | tee -a "$M1LOG"
import json, sys
out, n, wall_ms = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
one = json.load(open(f"{out}/m1-one-metrics.json"))
shards = [json.load(open(f"{out}/../m1-shard-{k}-metrics.json")) for k in range(n)]
frames = sum(s["frames"] for s in shards)
res = {"gpus": n, "one_gpu": {"frames": one["frames"], "wall_s": one["wall_s"], "frames_per_s": one["frames_per_s"]},
       "shards": {"frames": frames, "wall_s": wall_ms / 1000, "frames_per_s": frames / (wall_ms / 1000),
                  "per_shard": [{"frames": s["frames"], "wall_s": s["wall_s"]} for s in shards]}}
try:
    m = json.load(open(f"{out}/m1-mpi-metrics.json"))
    res["mpi"] = {"workers": m["workers"], "frames": m["frames"], "wall_s": m["wall_s"], "frames_per_s": m["frames_per_s"],
                  "per_rank": [{"rank": r["rank"], "device": r["device"], "items": r["items_done"], "frames": r["frames"]} for r in m["ranks"]]}
except Exception as e:
    res["mpi"] = {"error": str(e)}
for k in ("shards", "mpi"):
    if "frames_per_s" in res[k]:
        res[k]["scaling_vs_one_gpu"] = res[k]["frames_per_s"] / res["one_gpu"]["frames_per_s"]
json.dump(res, open(f"{out}/m1-summary.json", "w"), indent=2)
print(json.dumps(res))
PY
fi
