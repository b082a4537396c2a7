#!/usr/bin/env bash
# Runs a benchmark longer than one device command allows (N2: 600 s; R9 over 30,000 frames: ~485 s) on the GPU
# machine, detached from the command that starts it, and brings its results back in a later command:
#   bash scripts/gpu_detached.sh start NAME [radstream bench options]   # returns at once
#   bash scripts/gpu_detached.sh wait NAME [SECONDS]                     # waits for it (default 580 s), then
#                                                                        # copies its JSON and log under $OUT
#   bash scripts/gpu_detached.sh status NAME
# e.g. start N2 --case N2, then a second command: wait N2. The run's files live in /tmp/radstream-detached/NAME
# on the GPU machine, which a command that starts a fresh machine no longer has: start and wait on one held
# machine. Uses the binaries carried in .devcarry/ (scripts/make_devcarry.sh).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
what=${1:-}
name=${2:-}
if [ -z "$what" ] || [ -z "$name" ]; then
  echo "usage: bash scripts/gpu_detached.sh start|wait|status NAME [...]" >&2
  exit 2
fi
dir=/tmp/radstream-detached/$name
case "$what" in
  start)
    shift 2
    if [ -e "$dir/pid" ] && [ ! -e "$dir/rc" ]; then
      echo "gpu_detached: $name is already running (pid $(cat "$dir/pid"))" >&2
      exit 2
    fi
    rm -rf "$dir" && mkdir -p "$dir"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$dir/nvidia_smi.txt" 2>&1
    printf '%q ' "$@" > "$dir/args"
    # shellcheck disable=SC2016
    setsid nohup bash -c 'source scripts/gpu_env.sh > /dev/null; run .devcarry/radstream bench "$@" --out "$0/bench.json" > "$0/bench.log" 2>&1; echo $? > "$0/rc"' \
      "$dir" "$@" > /dev/null 2>&1 < /dev/null &
    echo $! > "$dir/pid"
    echo "gpu_detached: $name started (pid $!): radstream bench $(cat "$dir/args")"
    ;;
  wait)
    limit=${3:-580}
    if [ ! -e "$dir/pid" ]; then
      echo "gpu_detached: nothing named $name was started on this machine" >&2
      exit 2
    fi
    waited=0
    while [ ! -e "$dir/rc" ] && [ "$waited" -lt "$limit" ]; do
      sleep 5
      waited=$((waited + 5))
    done
    out=${OUT:-out}/$name
    mkdir -p "$out"
    cp "$dir"/* "$out"/ 2>/dev/null
    if [ ! -e "$dir/rc" ]; then
      echo "gpu_detached: $name still running after ${waited} s; its log so far is in $out (wait again)"
      tail -3 "$dir/bench.log" 2>/dev/null
      exit 3
    fi
    echo "gpu_detached: $name ended with exit code $(cat "$dir/rc"); its JSON and log are in $out"
    grep -vE '^\[' "$dir/bench.log" | tail -8
    exit "$(cat "$dir/rc")"
    ;;
  status)
    if [ -e "$dir/rc" ]; then
      echo "gpu_detached: $name ended with exit code $(cat "$dir/rc")"
    elif [ -e "$dir/pid" ]; then
      echo "gpu_detached: $name running (pid $(cat "$dir/pid"))"
      tail -1 "$dir/bench.log" 2>/dev/null
    else
      echo "gpu_detached: nothing named $name"
    fi
    ;;
  *)
    echo "usage: bash scripts/gpu_detached.sh start|wait|status NAME [...]" >&2
    exit 2
    ;;
esac
