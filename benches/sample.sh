#!/usr/bin/env bash
# Benchmark: CPU cost of one full iolens sample on the live system with many
# processes. Spawns N sleeping children (default 2000) that each hold 8 open
# files, runs `iolens bench-sample` (release build) and prints µs per sample
# and per process, then kills the children and removes the temp files.
#
#   bash benches/sample.sh [N] [SAMPLES]
#   IOLENS_BIN=/path/to/iolens bash benches/sample.sh     # skip the build
#
# Target (issue 2): a full sample of 2,000 processes under 20 ms of CPU.
set -euo pipefail
cd "$(dirname "$0")/.."

n=${1:-2000}
samples=${2:-20}

if [ -z "${IOLENS_BIN:-}" ]; then
  cargo build --release --quiet
  IOLENS_BIN="${CARGO_TARGET_DIR:-target}/release/iolens"
fi

tmp=$(mktemp -d /tmp/iolens-bench.XXXXXX)
pids=()
cleanup() {
  if [ ${#pids[@]} -gt 0 ]; then
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

for i in 1 2 3 4 5 6 7 8; do
  echo "file $i" >"$tmp/f$i"
done

echo "spawning $n sleeping processes with 8 open files each ..." >&2
for ((i = 0; i < n; i++)); do
  sleep 3600 3<"$tmp/f1" 4<"$tmp/f2" 5<"$tmp/f3" 6<"$tmp/f4" \
    7<"$tmp/f5" 8<"$tmp/f6" 9<"$tmp/f7" 10<"$tmp/f8" &
  pids+=($!)
done
# Let the last children exec sleep before measuring.
sleep 1
echo "processes on the system: $(ls -d /proc/[0-9]* | wc -l)" >&2

"$IOLENS_BIN" bench-sample --samples "$samples"
