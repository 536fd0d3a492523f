#!/usr/bin/env bash
# Benchmark: what `iolens record` costs per sample, with ~100 and ~2,000
# processes on the machine: CPU of the recorder process (user + system, all
# threads) per sample, the part of it that is collecting and the model
# (`iolens bench-sample`), so the rest is encoding, compressing and
# writing, and bytes per sample in the file.
#
#   bash benches/record_cost.sh [SAMPLES]          # default 40 samples per run
#   IOLENS_BIN=/path/to/iolens bash benches/record_cost.sh
#
# Spawns sleeping children with 8 open files each (killed at the end),
# records to a temp directory (removed at the end).
set -euo pipefail
cd "$(dirname "$0")/.."

samples=${1:-40}
if [ -z "${IOLENS_BIN:-}" ]; then
  cargo build --release --quiet
  IOLENS_BIN="${CARGO_TARGET_DIR:-target}/release/iolens"
fi

tmp=$(mktemp -d /tmp/iolens-record-bench.XXXXXX)
pids=()
cleanup() {
  if [ ${#pids[@]} -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
for i in 1 2 3 4 5 6 7 8; do echo "file $i" >"$tmp/f$i"; done

spawn_to() {
  local want=$1
  while [ "$(ls -d /proc/[0-9]* 2>/dev/null | wc -l)" -lt "$want" ]; do
    sleep 3600 3<"$tmp/f1" 4<"$tmp/f2" 5<"$tmp/f3" 6<"$tmp/f4" \
      7<"$tmp/f5" 8<"$tmp/f6" 9<"$tmp/f7" 10<"$tmp/f8" &
    pids+=($!)
  done
  sleep 1
}

# CPU seconds (user + system) of a finished child, from bash's `time`.
run_cpu() {
  local TIMEFORMAT='%U %S'
  { time "$@" >/dev/null 2>"$tmp/err"; } 2>&1 | awk '{print $1 + $2}'
}

measure() {
  local label=$1 procs
  procs=$(ls -d /proc/[0-9]* 2>/dev/null | wc -l)
  rm -f "$tmp/r.rec"
  local cpu
  cpu=$(run_cpu "$IOLENS_BIN" record "$tmp/r.rec" --interval 0.25 --count "$samples")
  local bytes
  bytes=$(stat -c %s "$tmp/r.rec")
  local n=$((samples + 1))
  local collect
  collect=$("$IOLENS_BIN" bench-sample --samples "$samples" --cgroups | awk '
    /collect per sample/ {c = $4} /model per sample/ {m = $4} END {print c + m}')
  awk -v l="$label" -v p="$procs" -v cpu="$cpu" -v n="$n" -v b="$bytes" -v c="$collect" 'BEGIN {
    per = cpu / n * 1e6
    printf "%-14s %5d processes: recorder %6.0f µs CPU per sample (collect + model %6.0f µs, encode + compress + write %6.0f µs), %7.0f bytes per sample (%d samples, %d bytes)\n",
      l, p, per, c, per - c, b / n, n, b
  }'
}

measure "as found" 
spawn_to 100
measure "~100" 
spawn_to 2000
measure "~2,000"
