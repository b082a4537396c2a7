#!/usr/bin/env bash
# Crafted-file fuzz of radstream's MRD readers: N byte-mutated copies of a simulated recording,
# each read by `radstream recon --input` and every tenth also by `radstream replay` (into a sink nobody reads,
# --no-wait). A run must end with exit 0 (the bytes hit only data) or 3 (refused, with a reason); anything else
# (a signal, 124 = a hang past 60 s) is a finding and its file is kept. Writes a JSON summary.
#   scripts/fuzz_mrd_files.sh [N=1000] [OUT=fuzz-out] [BIN=build/radstream]
set -uo pipefail
N=${1:-1000}
OUT=${2:-fuzz-out}
BIN=${3:-build/radstream}
mkdir -p "$OUT/findings"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$BIN" simulate --out "$work/clean.h5" --matrix 32 --coils 4 --spokes 64 > /dev/null 2>&1 || {
  echo "cannot simulate the clean recording" >&2
  exit 1
}
size=$(stat -c %s "$work/clean.h5")
declare -A codes=()
findings=0
# tally WHAT RC FILE K: counts the exit code; anything but 0 or 3 is a finding, kept with its log.
tally() {
  codes["$1_$2"]=$((${codes["$1_$2"]:-0} + 1))
  if [[ $2 != 0 && $2 != 3 ]]; then
    findings=$((findings + 1))
    cp "$3" "$OUT/findings/$1_$4.h5"
    cp "$work/log" "$OUT/findings/$1_$4.log"
  fi
}
replays=0
start=$(date +%s)
for ((k = 0; k < N; ++k)); do
  f="$work/m.h5"
  cp "$work/clean.h5" "$f"
  edits=$((1 + RANDOM % 16))
  # Even runs aim at the first 4 KiB (HDF5 superblock, object headers, the XML), odd ones anywhere.
  span=$((k % 2 ? size : 4096))
  for ((e = 0; e < edits; ++e)); do
    off=$(((RANDOM * 32768 + RANDOM) % span))
    printf "$(printf '\\x%02x' $((RANDOM % 256)))" | dd of="$f" bs=1 seek="$off" conv=notrunc status=none
  done
  timeout 60 "$BIN" recon --backend cpu --input "$f" --out "$work/m.png" > "$work/log" 2>&1
  tally recon $? "$f" $k
  if ((k % 10 == 0)); then
    replays=$((replays + 1))
    timeout 60 "$BIN" replay "$f" --endpoint "ipc://$work/sink" --no-wait --speed max > "$work/log" 2>&1
    tally replay $? "$f" $k
  fi
  ((k % 100 == 99)) && echo "fuzz_mrd_files: $((k + 1)) of $N files, $findings findings" >&2
done
{
  echo "{"
  echo "  \"command\": \"scripts/fuzz_mrd_files.sh $N\","
  echo "  \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\","
  echo "  \"version\": \"$("$BIN" --version 2>/dev/null | head -1)\","
  echo "  \"files\": $N, \"recon_runs\": $N, \"replay_runs\": $replays, \"clean_file_bytes\": $size,"
  echo "  \"seconds\": $(($(date +%s) - start)),"
  echo "  \"exit_codes\": {"
  first=1
  for key in $(printf '%s\n' "${!codes[@]}" | sort); do
    ((first)) || echo ","
    printf '    "%s": %d' "$key" "${codes[$key]}"
    first=0
  done
  echo ""
  echo "  },"
  echo "  \"findings\": $findings"
  echo "}"
} > "$OUT/fuzz_mrd_files.json"
cat "$OUT/fuzz_mrd_files.json"
[[ $findings == 0 ]]
