#!/usr/bin/env bash
# Where the kernel's own request clock starts and stops, against the events
# iolens traces (not run by CI). The kernel's busy time per request (the
# device's `stat`, iostat's r_await) runs from the request's allocation to
# the end of its accounting; iolens's total runs from `block_io_start` to
# `block_rq_complete`. This traces, in a tracefs instance of its own, the
# two events on either side as well (`block_getrq`, the allocation, and
# `block_io_done`, the end of the accounting) for a direct-I/O fio psync
# 4 KiB read on a read-only loop device, and prints the mean gap at each end
# over the requests traced (matched by sector), with the kernel's r_await
# and the traced means over the same run.
#
# Needs root, fio, losetup, python3. Environment:
#   RW (default randread)  SECS (default 2)  SIZE_MB (default 512)
#   DIR (default /var/tmp)
# Cleans up the instance, the loop device, the file and a tracefs mount it
# made on exit.
set -euo pipefail

RW=${RW:-randread}
SECS=${SECS:-2}
SIZE_MB=${SIZE_MB:-512}
DIR=${DIR:-/var/tmp}
T=/sys/kernel/tracing

for c in fio losetup python3; do
    command -v "$c" >/dev/null || { echo "needs $c" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }

MOUNTED=0 FILE="" DEV="" INST=""
cleanup() {
    [ -n "$INST" ] && [ -d "$INST" ] && { echo 0 > "$INST/tracing_on"; rmdir "$INST"; }
    [ -n "$DEV" ] && losetup -d "$DEV"
    [ -n "$FILE" ] && rm -f "$FILE"
    [ "$MOUNTED" = 1 ] && umount "$T"
    [ -n "${OUT:-}" ] && rm -rf "$OUT"
}
trap cleanup EXIT
if ! mountpoint -q "$T"; then
    mount -t tracefs trace_endpoints "$T"
    MOUNTED=1
fi
OUT=$(mktemp -d)
FILE=$(mktemp "$DIR/trace_endpoints.XXXX")
dd if=/dev/urandom of="$FILE" bs=1M count="$SIZE_MB" status=none
DEV=$(losetup -f --show -r --direct-io=on "$FILE")
NAME=$(basename "$DEV")
INST="$T/instances/trace_endpoints-$$"
mkdir "$INST"
# Large enough for every request of the run: none is lost.
echo 16384 > "$INST/buffer_size_kb"
echo mono > "$INST/trace_clock"
MAJMIN=$(cat "/sys/block/$NAME/dev")
# The loop device alone (not its backing device): the kernel's dev_t.
KDEV=$(( (${MAJMIN%:*} << 20) | ${MAJMIN#*:} ))
for e in block_getrq block_io_start block_rq_complete block_io_done; do
    echo "dev == $KDEV" > "$INST/events/block/$e/filter"
    echo 1 > "$INST/events/block/$e/enable"
done
read -r -a before < "/sys/block/$NAME/stat"
fio --name=endpoints --filename="$DEV" --rw="$RW" --bs=4k --direct=1 --ioengine=psync \
    --runtime="$SECS" --time_based --output-format=terse --terse-version=3 > "$OUT/fio" 2>&1
read -r -a after < "/sys/block/$NAME/stat"
echo 0 > "$INST/tracing_on"
cat "$INST/trace" > "$OUT/trace"
lost=$(awk '/overrun|dropped/{s+=$2} END{print s+0}' "$INST"/per_cpu/cpu*/stats)
python3 - "$OUT/trace" "$MAJMIN" "$(( after[0] - before[0] ))" "$(( after[3] - before[3] ))" "$lost" <<'PY'
import re, statistics, sys
path, majmin, reads, ticks, lost = sys.argv[1], sys.argv[2].replace(":", ","), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
pat = re.compile(r"\s([\d.]+): (block_\w+): (\d+,\d+) \S+ (?:\d+ )?(?:\(\S*\) )?(\d+) \+ \d+")
last = {}
gaps = {"start": [], "end": []}
totals = {"traced": [], "kernel_like": []}
for line in open(path):
    m = pat.search(line)
    if not m or m.group(3) != majmin:
        continue
    ts, name, sector = float(m.group(1)) * 1e6, m.group(2), m.group(4)
    r = last.setdefault(sector, {})
    r[name] = ts
    if name == "block_io_done":
        if {"block_getrq", "block_io_start", "block_rq_complete"} <= r.keys():
            gaps["start"].append(r["block_io_start"] - r["block_getrq"])
            gaps["end"].append(ts - r["block_rq_complete"])
            totals["traced"].append(r["block_rq_complete"] - r["block_io_start"])
            totals["kernel_like"].append(ts - r["block_getrq"])
        del last[sector]
n = len(gaps["end"])
if n == 0:
    sys.exit("no complete request traced")
mean = statistics.mean
print(f"requests matched: {n} of {reads} the kernel counted; events lost: {lost}")
print(f"block_getrq -> block_io_start:     {mean(gaps['start']):6.2f} us mean")
print(f"block_rq_complete -> block_io_done: {mean(gaps['end']):6.2f} us mean")
print(f"traced total (io_start -> rq_complete): {mean(totals['traced']):7.2f} us mean")
print(f"getrq -> io_done:                       {mean(totals['kernel_like']):7.2f} us mean")
print(f"kernel r_await (device stat):           {ticks * 1000 / max(reads, 1):7.2f} us")
PY
