#!/usr/bin/env bash
# Recordings killed with SIGKILL at random moments: N times, `radstream run --record` fed by `radstream
# simulate` is killed 0.3..3 s after it starts; each file is then read back (`radstream convert`). Writes
# OUT/kill_recordings.json: per kill the moment, the spokes the file holds, whether a torn tail was left out,
# and whether the file could be read at all (the target: every file readable, every spoke up to its last
# flush kept).
#   scripts/kill_recordings.sh [N=20] [OUT=kill-out]
# BIN=path/to/radstream (default build/radstream).
set -uo pipefail
N=${1:-20}
OUT=${2:-kill-out}
BIN=${BIN:-build/radstream}
PORT=${PORT:-56995}
mkdir -p "$OUT"
ep="tcp://127.0.0.1:$PORT"
rows=()
for i in $(seq 1 "$N"); do
  rec="$OUT/rec$i.h5"
  rm -f "$rec" "$OUT/rec$i.mrd"
  "$BIN" run --headless --backend cpu --endpoint "$ep" --window 32 --stride 16 --duration 60 --record "$rec" \
    > "$OUT/run$i.log" 2>&1 &
  pid=$!
  sleep 0.2
  "$BIN" simulate --endpoint "$ep" --matrix 64 --coils 8 --rate 4000 --spokes 40000 > /dev/null 2>&1 &
  sim=$!
  t=$(awk -v s="$RANDOM" 'BEGIN { srand(s); printf "%.2f", 0.3 + 2.7 * rand() }')
  sleep "$t"
  kill -KILL $pid
  wait $pid 2> /dev/null
  kill $sim 2> /dev/null
  wait $sim 2> /dev/null
  out=$("$BIN" convert --input "$rec" --out "$OUT/rec$i.mrd" 2>&1)
  rc=$?
  spokes=$(echo "$out" | grep -oE 'convert: [0-9]+ acquisitions' | grep -oE '[0-9]+' || echo 0)
  torn=$(echo "$out" | grep -q 'torn tail' && echo true || echo false)
  echo "kill $i at ${t} s: exit $rc, ${spokes:-0} spokes, torn tail: $torn"
  rows+=("{\"kill_after_s\": $t, \"read_exit\": $rc, \"spokes\": ${spokes:-0}, \"torn_tail_left_out\": $torn}")
  rm -f "$OUT/rec$i.mrd"
done
{
  echo "{\"test\": \"kill_recordings\", \"kills\": $N, \"host\": \"$(hostname)\", \"cpus\": $(nproc),"
  echo " \"command\": \"scripts/kill_recordings.sh $N OUT\", \"runs\": ["
  (IFS=$',\n'; echo "  ${rows[*]}")
  echo "]}"
} > "$OUT/kill_recordings.json"
unreadable=$(grep -o '"read_exit": [1-9]' "$OUT/kill_recordings.json" | wc -l)
echo "kill_recordings: $N kills, $unreadable unreadable"
exit $((unreadable > 0))
