#!/usr/bin/env bash
# The server's soak under attack on a GPU machine (scripts/soak_sessions.py with the cuda backend: four MRD
# clients of gridding, cg-sense and nlinv at 256^2 x 8 coils, a ZeroMQ stream, an attacker a second), run
# with the carried binaries (scripts/gpu_run.sh's set-up). The soak outlasts one command there, so it runs
# detached and is collected by a later command of the same lease:
#   OUT=... bash scripts/gpu_soak.sh start SECONDS   # starts it detached (setsid), returns at once
#   OUT=... bash scripts/gpu_soak.sh wait SECONDS    # waits until it ends or SECONDS pass
#   OUT=... bash scripts/gpu_soak.sh collect         # copies its JSON, plot, metrics and logs to $OUT
set -uo pipefail
OUT=${OUT:-out}
mkdir -p "$OUT"
dir=/tmp/radstream-soak
case "${1:?start|wait|collect}" in
  start)
    source "$(dirname "$0")/gpu_env.sh" > /dev/null
    mkdir -p "$dir"
    # One wrapper with the library paths resolved once (gpu_env.sh searches the disk).
    {
      echo '#!/usr/bin/env bash'
      echo "$(declare -f run_exec)"
      echo "lp='$lp'"
      echo "run_exec $PWD/.devcarry/radstream \"\$@\""
    } > .devcarry/rs
    chmod +x .devcarry/rs
    .devcarry/rs --version | head -1
    setsid nohup python3 scripts/soak_sessions.py "${2:?seconds}" "$dir" --backend cuda --bin .devcarry/rs \
      --matrix 256 --coils 8 --configs gridding,cg-sense,nlinv,gridding --session-spokes 4000 --rate 400 \
      --memory-limit-total 8G > "$dir/driver.log" 2>&1 < /dev/null &
    sleep 20
    tail -3 "$dir/driver.log"
    ;;
  wait)
    for ((i = 0; i < ${2:?seconds}; i += 10)); do
      [[ -f $dir/soak-sessions-cuda.json ]] && break
      sleep 10
    done
    tail -4 "$dir/driver.log"
    ;;
  collect)
    cp "$dir"/soak-sessions-cuda.json "$dir"/soak-sessions-cuda.svg "$dir"/soak-sessions-cuda-metrics.json "$OUT"/ 2> /dev/null
    gzip -c "$dir/soak-sessions-cuda-run.log" > "$OUT/soak-sessions-cuda-run.log.gz"
    cp "$dir/driver.log" "$OUT/soak-sessions-cuda-driver.log"
    ls -la "$OUT"
    ;;
esac
