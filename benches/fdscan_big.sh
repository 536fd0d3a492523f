#!/usr/bin/env bash
# Cost of the fd scan's budget: one process holding N open files (default
# 19,900: near this VM's hard limit of 20,000) that does a small pread,
# pwrite and fdatasync every 50 ms, so it is "active" at every sample.
# Prints iolens's fd-scan CPU per sample (`iolens progress --pid P --bench S`)
# and, for `iolens --batch --interval 1`, its CPU per sample, its peak RSS
# and whether any report was late, against the same run without the holder.
#
# usage: benches/fdscan_big.sh [N]   (IOLENS=path/to/iolens, default target/release/iolens)
set -euo pipefail
N=${1:-19900}
S=${SAMPLES:-10}
HERE=$(cd "$(dirname "$0")/.." && pwd)
IOLENS=${IOLENS:-$HERE/target/release/iolens}
[ -x "$IOLENS" ] || { echo "build first: cargo build --release (or set IOLENS=)"; exit 2; }
command -v python3 >/dev/null || { echo "skipped: python3 is not installed"; exit 0; }
[ -x /usr/bin/time ] || { echo "skipped: /usr/bin/time is not installed"; exit 0; }
D=$(mktemp -d /tmp/fdscan_big.XXXXXX)
HOLDER=
cleanup() {
    [ -n "$HOLDER" ] && kill "$HOLDER" 2>/dev/null || true
    wait 2>/dev/null || true
    rm -rf "$D"
}
trap cleanup EXIT INT TERM

batch() {
    /usr/bin/time -f "  $1: %U user + %S sys s over $S samples, peak RSS %M KiB" \
        "$IOLENS" --batch --interval 1 --count "$S" > "$D/out.txt" 2> "$D/err.txt" || true
    tail -1 "$D/err.txt"
    if grep -q "no sample for" "$D/out.txt" "$D/err.txt"; then echo "  LATE: $(grep -h -m1 'no sample for' "$D/out.txt" "$D/err.txt")"; fi
}

echo "== without the holder"
batch "iolens --batch"
head -c 1048576 /dev/urandom > "$D/data"
python3 - "$N" "$D/data" <<'PY' &
import os, sys, time, resource
n, path = int(sys.argv[1]), sys.argv[2]
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, n + 64), hard))
fds = [os.open(path, os.O_RDWR) for _ in range(n)]
i = 0
while True:
    fd = fds[i % n]
    os.pread(fd, 512, 4096); os.pwrite(fd, b"x" * 512, 8192); os.fdatasync(fd)
    i += 1
    time.sleep(0.05)
PY
HOLDER=$!
until [ "$(ls /proc/$HOLDER/fd 2>/dev/null | wc -l)" -ge "$N" ]; do sleep 0.2; done
echo "== with a process holding $N open files (pid $HOLDER), synced writes every 50 ms"
batch "iolens --batch"
echo "== iolens progress --pid $HOLDER --bench $S (fd scan CPU per sample)"
"$IOLENS" progress --pid "$HOLDER" --bench "$S" | tail -2
