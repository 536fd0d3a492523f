#!/usr/bin/env bash
# Cost of the page-cache events (per-file disk reads and dirtying), measured
# under the fastest buffered read this machine does on a loop device (not
# run by CI). An ext4 filesystem on a loop device (direct I/O to its temp
# backing file, so the loop's own page cache does not serve the reads)
# holds a file of SIZE_MB MiB of random data. Each round, for SECS seconds,
# a reader (1 MiB read calls) reads the file again and again, its cache dropped before each
# pass (POSIX_FADV_DONTNEED), beside `iolens --batch -i 1` with the file
# events (on) and with `--no-file-events` (off), ROUNDS times alternating
# which goes first. Reported: iolens's CPU (user + system of all its
# threads, from schedstat) in % of one core, the reader's MB/s and the folios
# added to the page cache per second (pgpgin / 4 KiB pages is the upper
# bound: ext4 adds large folios), median over rounds, and on/off.
#
# Needs root, losetup, mkfs.ext4, python3. Environment:
#   SIZE_MB (default 1024)  ROUNDS (default 3)  SECS (default 10)
#   DIR (default /var/tmp)  IOLENS (default target/release/iolens, built if missing)
# Cleans up the mount, the loop device, the file and any iolens it started.
set -euo pipefail
# iolens holds its tracer to 2 % of a core by default: this bench measures
# whole tracing unless IOLENS_TRACE_BUDGET says otherwise (a flag wins).
export IOLENS_TRACE_BUDGET=${IOLENS_TRACE_BUDGET:-off}
SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-10}
DIR=${DIR:-/var/tmp}
cd "$(dirname "$0")/.."
IOLENS=${IOLENS:-target/release/iolens}
for tool in losetup mkfs.ext4 python3; do
    command -v "$tool" >/dev/null || { echo "file_events_cost: $tool is not installed" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "file_events_cost: needs root (losetup, mount, tracefs)" >&2; exit 2; }
[ -x "$IOLENS" ] || cargo build --release --quiet --bin iolens

WORK=$(mktemp -d "$DIR/iolens-file-events.XXXXXX")
DEV=""
IOL=""
cleanup() {
    if [ -n "$IOL" ]; then kill "$IOL" 2>/dev/null || true; wait "$IOL" 2>/dev/null || true; fi
    mountpoint -q "$WORK/mnt" 2>/dev/null && umount "$WORK/mnt"
    [ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

truncate -s "$((SIZE_MB + 256))M" "$WORK/backing.img"
mkfs.ext4 -q -F "$WORK/backing.img"
DEV=$(losetup -f --show --direct-io=on "$WORK/backing.img")
mkdir "$WORK/mnt"
mount "$DEV" "$WORK/mnt"
echo "file_events_cost: $DEV, ext4, writing $SIZE_MB MiB; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
head -c "$((SIZE_MB << 20))" /dev/urandom > "$WORK/mnt/data"
sync

cat > "$WORK/reader.py" <<'PY'
import os, sys, time
path, secs = sys.argv[1], float(sys.argv[2])
buf = bytearray(1 << 20)
end = time.monotonic() + secs
n = 0
t0 = time.monotonic()
while time.monotonic() < end:
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    while time.monotonic() < end:
        got = os.readv(fd, [buf])
        if got == 0:
            break
        n += got
    os.close(fd)
print(n / (time.monotonic() - t0) / 1e6)
PY
cpu_ns() { python3 -c "import os,sys;p=sys.argv[1];print(sum(int(open(f'/proc/{p}/task/{t}/schedstat').read().split()[0]) for t in os.listdir(f'/proc/{p}/task')))" "$1"; }
pgpgin() { awk '/^pgpgin /{print $2}' /proc/vmstat; }

declare -A CPU MBS FOL
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="on off"; else order="off on"; fi
    for mode in $order; do
        flag=""; [ "$mode" = off ] && flag="--no-file-events"
        "$IOLENS" --batch -i 1 $flag > /dev/null & IOL=$!
        sleep 2
        c0=$(cpu_ns "$IOL"); p0=$(pgpgin); t0=$(date +%s.%N)
        mbs=$(python3 "$WORK/reader.py" "$WORK/mnt/data" "$SECS")
        c1=$(cpu_ns "$IOL"); p1=$(pgpgin); t1=$(date +%s.%N)
        kill "$IOL"; wait "$IOL" 2>/dev/null || true; IOL=""
        cpu=$(python3 -c "print('%.2f' % (($c1-$c0)/1e7/($t1-$t0)))")
        fol=$(python3 -c "print('%.0f' % (($p1-$p0)/4/($t1-$t0)))")
        echo "  round $r, file events $mode: iolens ${cpu}% of one core; read ${mbs%.*} MB/s; <= $fol folios/s added" >&2
        CPU[$mode]="${CPU[$mode]:-} $cpu"; MBS[$mode]="${MBS[$mode]:-} $mbs"; FOL[$mode]="${FOL[$mode]:-} $fol"
    done
done
median() { python3 -c 'import sys,statistics; print("%.2f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
echo
echo "## Page-cache events: iolens --batch CPU under a cold buffered read of ext4 on $DEV, median of $ROUNDS rounds of ${SECS} s; load $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| file events | iolens CPU, % of one core | read MB/s | folios added/s (at most) |"
echo "|---|---|---|---|"
for mode in on off; do
    echo "| $mode | $(median ${CPU[$mode]}) | $(median ${MBS[$mode]}) | $(median ${FOL[$mode]}) |"
done
echo
python3 -c "import sys; on,off=float(sys.argv[1]),float(sys.argv[2]); print('on - off: %.2f points of a core (%.2fx)' % (on-off, on/max(off,1e-9)))" "$(median ${CPU[on]})" "$(median ${CPU[off]})"
