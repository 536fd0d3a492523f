#!/usr/bin/env bash
# Cost of scanning fds: Xfennec/progress vs iolens.
#
# Spawns N processes (default 2000), each holding 8 open files (a copy of
# sleep(1) named "fdhold", started with fds 3..10 redirected from 8 files),
# plus K (default 3) processes reading a file at 1 MiB/s with pv (the "few
# that do I/O"). Then measures:
#   1. `progress -q -a fdhold`: CPU (user+sys) of one scan, R runs;
#   2. `iolens progress --name fdhold --bench S`: CPU of the first (full)
#      fd scan of the same set and of the following samples;
#   3. `iolens progress --bench S` (no filter): first pass = full scan of every
#      process, then the steady per-sample cost when only the pv readers do I/O.
# Everything it starts is killed and its temp dir removed on exit.
#
# usage: benches/fdscan.sh [N] [K]   (IOLENS=path/to/iolens, default target/release/iolens)
set -euo pipefail
N=${1:-2000}
K=${2:-3}
R=${RUNS:-5}
S=${SAMPLES:-10}
HERE=$(cd "$(dirname "$0")/.." && pwd)
IOLENS=${IOLENS:-$HERE/target/release/iolens}
[ -x "$IOLENS" ] || { echo "build first: cargo build --release (or set IOLENS=)"; exit 2; }
command -v progress >/dev/null || { echo "skipped: progress is not installed"; exit 0; }
command -v pv >/dev/null || { echo "skipped: pv is not installed"; exit 0; }

D=$(mktemp -d /tmp/fdscan.XXXXXX)
PIDS=()
cleanup() {
    # Only what this script started, by pid.
    if [ ${#PIDS[@]} -gt 0 ]; then kill "${PIDS[@]}" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$D"
}
trap cleanup EXIT INT TERM

cp "$(command -v sleep)" "$D/fdhold"
for i in 1 2 3 4 5 6 7 8; do head -c 1048576 /dev/zero > "$D/f$i"; done
ulimit -n 4096 || true
for ((i = 0; i < N; i++)); do
    "$D/fdhold" 100000 3<"$D/f1" 4<"$D/f2" 5<"$D/f3" 6<"$D/f4" 7<"$D/f5" 8<"$D/f6" 9<"$D/f7" 10<"$D/f8" &
    PIDS+=($!)
done
truncate -s 10G "$D/big"
for ((i = 0; i < K; i++)); do
    pv -q -L 1m "$D/big" > /dev/null &
    PIDS+=($!)
done
sleep 2
echo "spawned $N fdhold processes x 8 files, $K pv readers at 1 MiB/s; $(ls /proc | grep -c '^[0-9]') processes in total"

echo
echo "== progress -q -a fdhold (CPU ms per run; 10 ms resolution)"
for ((r = 0; r < R; r++)); do
    /usr/bin/time -f "  %U user + %S sys s  (%e s wall)" progress -q -a fdhold > /dev/null
done
echo
echo "== iolens progress --name fdhold --bench $S"
"$IOLENS" progress --name fdhold --bench "$S"
echo
echo "== iolens progress --bench $S (no filter: full scan first, then only processes doing I/O)"
"$IOLENS" progress --bench "$S"
