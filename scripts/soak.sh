#!/usr/bin/env bash
# Soak test: one `radstream run` fed by `radstream simulate` for SECONDS, sampled every 10 s: the
# receiver's resident memory, open file descriptors and threads, and its status line (spokes, frames, frames
# skipped, spokes missing, frame gaps > 100 ms). At the end the run's metrics JSON gives every frame gap with
# its cause (input / reconstruction / scheduling). Writes OUT/soak-<backend>.json (samples, summary, the
# commands) and OUT/soak-<backend>.svg (memory and descriptors over time).
#   scripts/soak.sh SECONDS OUT [cpu|cuda] [RATE=400] [MATRIX=256] [COILS=8]
# FLOOD=1: a hostile peer beside the sender the whole time: from 127.0.0.2 it keeps about 300 silent
# connections to the receiver (past the per-address limit), closing and opening 50 of them a second.
# RECORD=1: the receiver records every spoke (OUT/<tag>-rec.h5); the summary says how many the file holds.
# BIN=path/to/radstream (default build/radstream; .devcarry/radstream on the GPU machine, see gpu_env.sh).
set -uo pipefail
SECONDS_TOTAL=${1:?seconds}
OUT=${2:?out folder}
BACKEND=${3:-cpu}
RATE=${4:-400}
MATRIX=${5:-256}
COILS=${6:-8}
BIN=${BIN:-build/radstream}
PORT=${PORT:-56990}
mkdir -p "$OUT"
run_exec() { exec "$@"; }  # in place of the background subshell: $! is the program's own PID
[[ $BIN == .devcarry/* ]] && source "$(dirname "$0")/gpu_env.sh" > /dev/null
tag="soak-$BACKEND"
ep="tcp://127.0.0.1:$PORT"
[[ ${FLOOD:-0} == 1 ]] && tag="$tag-flood"
[[ ${RECORD:-0} == 1 ]] && tag="$tag-record"
run_cmd="$BIN run --headless --backend $BACKEND --endpoint $ep --duration $((SECONDS_TOTAL + 5)) --metrics-json $OUT/$tag-metrics.json"
[[ ${RECORD:-0} == 1 ]] && run_cmd="$run_cmd --record $OUT/$tag-rec.h5 --overwrite"
sim_cmd="$BIN simulate --endpoint $ep --rate $RATE --matrix $MATRIX --coils $COILS --pool 1024"
run_exec $run_cmd > "$OUT/$tag-run.log" 2>&1 &
rpid=$!
sleep 1
run_exec $sim_cmd > "$OUT/$tag-sim.log" 2>&1 &
spid=$!
fpid=
if [[ ${FLOOD:-0} == 1 ]]; then
  python3 - "$PORT" "$SECONDS_TOTAL" > "$OUT/$tag-flood.log" 2>&1 << 'PY' &
import resource, socket, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
resource.setrlimit(resource.RLIMIT_NOFILE, (4096, max(4096, resource.getrlimit(resource.RLIMIT_NOFILE)[1])))
held, opened, end = [], 0, time.time() + seconds
def one():
    s = socket.socket(); s.setblocking(False); s.bind(("127.0.0.2", 0))
    try: s.connect(("127.0.0.1", port))
    except BlockingIOError: pass
    return s
while time.time() < end:
    while len(held) < 300: held.append(one()); opened += 1
    for s in held[:50]: s.close()
    held = held[50:]
    time.sleep(1)
print(f"flood: {opened} silent connections opened from 127.0.0.2 over {seconds:.0f} s")
PY
  fpid=$!
fi
samples="$OUT/$tag-samples.csv"
echo "t_s,rss_kib,fds,threads,spokes,frames,skipped,missing,frame_gaps" > "$samples"
t0=$(date +%s)
while :; do
  sleep 10
  now=$(($(date +%s) - t0))
  [[ -d /proc/$rpid ]] || break
  rss=$(awk '/^VmRSS/ {print $2}' /proc/$rpid/status)
  thr=$(awk '/^Threads/ {print $2}' /proc/$rpid/status)
  fds=$(ls /proc/$rpid/fd | wc -l)
  line=$(grep -E ' t=[0-9]+s ' "$OUT/$tag-run.log" | tail -1)
  val() { echo "$line" | grep -oE " $1=[0-9]+" | head -1 | cut -d= -f2; }
  echo "$now,$rss,$fds,$thr,$(val spokes),$(val frames),$(val skip),$(val miss),$(val frame_gaps || true)" >> "$samples"
  ((now >= SECONDS_TOTAL)) && break
done
kill -INT $spid 2> /dev/null
wait $spid 2> /dev/null
[[ -n $fpid ]] && { kill $fpid 2> /dev/null; wait $fpid 2> /dev/null; }
wait $rpid
rrc=$?
# The summary: memory growth from the first sample after the first minute (warm-up: rings, plans, pools) to
# the last; descriptors' range; the run's own frame gap report.
awk -F, -v tag="$tag" -v rc="$rrc" -v secs="$SECONDS_TOTAL" -v run_cmd="$run_cmd" -v sim_cmd="$sim_cmd" \
  -v metrics="$OUT/$tag-metrics.json" -v host="$(hostname)" -v cpus="$(nproc)" -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '
  BEGIN { n = 0 }
  NR == 1 { next }
  { t[n] = $1; rss[n] = $2; fd[n] = $3; th[n] = $4; sp[n] = $5; fr[n] = $6; sk[n] = $7; mi[n] = $8; g[n] = ($9 == "" ? 0 : $9); n++ }
  END {
    base = 0; for (i = 0; i < n; i++) if (t[i] >= 60) { base = i; break }
    growth = (n > 0 && rss[base] > 0) ? 100.0 * (rss[n-1] - rss[base]) / rss[base] : 0
    fmin = 1e9; fmax = 0; for (i = 0; i < n; i++) { if (fd[i] < fmin) fmin = fd[i]; if (fd[i] > fmax) fmax = fd[i] }
    printf "{\n  \"test\": \"%s\", \"seconds\": %d, \"host\": \"%s\", \"cpus\": %d, \"load_at_end\": \"%s\",\n", tag, secs, host, cpus, load
    printf "  \"commands\": {\"run\": \"%s\", \"simulate\": \"%s\", \"soak\": \"scripts/soak.sh %d OUT %s\"},\n", run_cmd, sim_cmd, secs, (tag ~ /cuda/ ? "cuda" : "cpu")
    printf "  \"run_exit_code\": %d,\n", rc
    printf "  \"summary\": {\"rss_kib_after_60s\": %d, \"rss_kib_last\": %d, \"rss_growth_percent\": %.2f, \"fds_min\": %d, \"fds_max\": %d, \"spokes\": %d, \"frames\": %d, \"frames_skipped\": %d, \"spokes_missing\": %d, \"frame_gaps_over_100ms\": %d},\n", rss[base], rss[n-1], growth, fmin, fmax, sp[n-1], fr[n-1], sk[n-1], mi[n-1], g[n-1]
    printf "  \"samples\": ["
    for (i = 0; i < n; i++) printf "%s\n    {\"t_s\": %d, \"rss_kib\": %d, \"fds\": %d, \"threads\": %d, \"spokes\": %d, \"frames\": %d, \"skipped\": %d, \"missing\": %d, \"frame_gaps\": %d}", (i ? "," : ""), t[i], rss[i], fd[i], th[i], sp[i], fr[i], sk[i], mi[i], g[i]
    printf "\n  ],\n  \"run_metrics_file\": \"%s\"\n}\n", metrics
  }' "$samples" > "$OUT/$tag.json"
# The plot: resident memory (MiB, left scale) and open descriptors (right scale) against time.
awk -F, -v title="$tag: $RATE spokes/s, ${MATRIX}^2, $COILS coils, $BACKEND" '
  BEGIN { n = 0 }
  NR == 1 { next }
  { t[n] = $1; r[n] = $2 / 1024.0; f[n] = $3; n++; if ($1 > tm) tm = $1; if ($2 / 1024.0 > rm) rm = $2 / 1024.0; if ($3 > fm) fm = $3 }
  END {
    W = 800; H = 400; L = 70; R = 730; T = 40; B = 350
    if (tm == 0) tm = 1; rm = rm * 1.2 + 1; fm = fm * 1.2 + 1
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/><text x=\"%d\" y=\"22\" font-size=\"14\">%s</text>\n", L, title
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, B, R, B, L, T, L, B
    for (k = 0; k <= 4; k++) {
      y = B - k * (B - T) / 4
      printf "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" fill=\"#1f5fbf\">%.0f</text><text x=\"%d\" y=\"%d\" fill=\"#c0392b\">%.0f</text>\n", L - 5, y + 4, rm * k / 4, R + 5, y + 4, fm * k / 4
      printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">%.0f</text>\n", L + k * (R - L) / 4, B + 18, tm * k / 4
    }
    printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (s)</text>\n", (L + R) / 2, B + 38
    printf "<text x=\"10\" y=\"%d\" fill=\"#1f5fbf\">RSS MiB</text><text x=\"%d\" y=\"%d\" fill=\"#c0392b\">fds</text>\n", T - 8, R, T - 8
    printf "<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"2\" points=\""
    for (i = 0; i < n; i++) printf "%.1f,%.1f ", L + t[i] / tm * (R - L), B - r[i] / rm * (B - T)
    printf "\"/>\n<polyline fill=\"none\" stroke=\"#c0392b\" stroke-width=\"2\" points=\""
    for (i = 0; i < n; i++) printf "%.1f,%.1f ", L + t[i] / tm * (R - L), B - f[i] / fm * (B - T)
    printf "\"/>\n</svg>\n"
  }' "$samples" > "$OUT/$tag.svg"
cat "$OUT/$tag.json" | head -8
