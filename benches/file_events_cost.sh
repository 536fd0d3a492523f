#!/usr/bin/env bash
# Cost of the page-cache events (per-file disk reads and dirtying), measured
# under the fastest buffered read this machine does on a loop device (not
# run by CI). An ext4 filesystem on a loop device (direct I/O to its temp
# backing file, so the loop's own page cache does not serve the reads)
# holds a file of SIZE_MB MiB of random data. Each round, for SECS seconds,
# a reader (1 MiB read calls) reads the file again and again, its cache
# dropped before each pass (POSIX_FADV_DONTNEED), beside `iolens --json -i 1`
# in four configurations, ROUNDS times rotating which goes first:
#
#   on       the file events on, no budget
#   off      `--no-file-events`, no budget
#   budget   the file events on, `--trace-budget BUDGET`
#   notrace  `--no-trace` (no tracer: the baseline of the tracer's cost)
#
# Reported, median over rounds: iolens's CPU in % of one core two ways, the
# whole process (user + system of all its threads, schedstat) and the
# tracer thread alone (`iolens-trace`, schedstat; what the budget's
# controller charges), both from WARM s after the reader starts to its end
# (the budget is chosen once a second from the last second's cost, so the
# first second is traced whole), and the process less the notrace median
# (the tracer's whole cost: its thread and the reads of the buffers each
# sample does in the sampling thread, which the budget charges too, and
# the model's work on the events); the reader's MB/s; the folios added to the
# page cache per second (pgpgin / 4 KiB pages is the upper bound: ext4 adds
# large folios); the budget run's JSON trace_share, and its own count of
# the tracer's CPU (JSON `tracer_cpu_pct`: what the budget holds, the
# tracer thread and the samples' reads of the buffers, per report).
# Target: the budget run's tracer cost ≤ 110% of the budget.
#
# Needs root, losetup, mkfs.ext4, python3. Environment:
#   SIZE_MB (default 1024)  ROUNDS (default 3)  SECS (default 10)  WARM (3)
#   PATTERN (default sequential; random: 4 KiB reads at random pages with
#   POSIX_FADV_RANDOM, one 4 KiB folio per read, the most events per byte:
#   where the budget binds clearly, ext4's large folios making a
#   sequential read light)
#   BUDGET (default $IOLENS_TRACE_BUDGET, else 1; % of one core)
#   DIR (default /var/tmp)  IOLENS (default target/release/iolens, built if missing)
# Cleans up the mount, the loop device, the file and any iolens it started.
set -euo pipefail
SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-10}
WARM=${WARM:-3}
PATTERN=${PATTERN:-sequential}
BUDGET=${BUDGET:-${IOLENS_TRACE_BUDGET:-1}}
# on and off trace whole (iolens holds its tracer to 2 % of a core by
# default) whatever the caller's environment says
export IOLENS_TRACE_BUDGET=off
DIR=${DIR:-/var/tmp}
cd "$(dirname "$0")/.."
# shellcheck source=benches/tracer_cpu.sh
. benches/tracer_cpu.sh
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
import os, random, sys, time
path, secs, pattern = sys.argv[1], float(sys.argv[2]), sys.argv[3]
buf = bytearray(1 << 20)
end = time.monotonic() + secs
n = 0
t0 = time.monotonic()
while time.monotonic() < end:
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    if pattern == "random":
        # 4 KiB reads at random pages, no readahead: one 4 KiB folio added
        # to the cache per read (the most events per byte)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
        pages = os.fstat(fd).st_size >> 12
        while time.monotonic() < end:
            for _ in range(1000):
                n += len(os.pread(fd, 4096, random.randrange(pages) << 12))
    else:
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

declare -A CPU TRC MBS FOL ACC
MODES=(on off budget notrace)
for r in $(seq 1 "$ROUNDS"); do
    for i in 0 1 2 3; do
        mode=${MODES[$(((r - 1 + i) % 4))]}
        case $mode in
            on) args=() ;;
            off) args=(--no-file-events) ;;
            budget) args=(--trace-budget "$BUDGET") ;;
            notrace) args=(--no-trace) ;;
        esac
        "$IOLENS" --json -i 1 "${args[@]}" > "$WORK/iolens.json" 2> "$WORK/iolens.err" & IOL=$!
        sleep 2
        python3 "$WORK/reader.py" "$WORK/mnt/data" "$SECS" "$PATTERN" > "$WORK/mbs" & rd=$!
        sleep "$WARM"
        c0=$(cpu_ns "$IOL"); n0=$(tracer_ns "$IOL"); p0=$(pgpgin); t0=$(date +%s.%N)
        wait "$rd"
        c1=$(cpu_ns "$IOL"); n1=$(tracer_ns "$IOL"); p1=$(pgpgin); t1=$(date +%s.%N)
        kill "$IOL"; wait "$IOL" 2>/dev/null || true; IOL=""
        mbs=$(cat "$WORK/mbs")
        if [ "$mode" != notrace ] && ! grep -q '"active":true' "$WORK/iolens.json"; then
            echo "file_events_cost: iolens did not trace: $(tail -c 300 "$WORK/iolens.json") $(cat "$WORK/iolens.err")" >&2
            exit 1
        fi
        read -r cpu trc fol share < <(python3 - "$c0" "$c1" "$n0" "$n1" "$p0" "$p1" "$t0" "$t1" "$WORK/iolens.json" <<'PY'
import re, sys
c0, c1, n0, n1, p0, p1, t0, t1 = (float(x) for x in sys.argv[1:9])
wall = t1 - t0
text = open(sys.argv[9]).read()
shares = [float(x) for x in re.findall(r'"trace_share":([0-9.eE+-]+)', text)]
share = f"{min(shares):.3f}-{max(shares):.3f}" if shares else "-"
print(f"{(c1 - c0) / 1e7 / wall:.2f} {(n1 - n0) / 1e7 / wall:.2f} {(p1 - p0) / 4 / wall:.0f} {share}")
PY
)
        # from the reader's WARM s on
        acc=$(counted_pct "$WORK/iolens.json" "$(awk -v w="$WARM" 'BEGIN { print int(w) + 2 }')")
        echo "  round $r, $mode: iolens ${cpu}% of one core, tracer thread ${trc}%, counted by iolens ${acc}%; read ${mbs%.*} MB/s; <= $fol folios/s added; trace_share $share" >&2
        CPU[$mode]="${CPU[$mode]:-} $cpu"; TRC[$mode]="${TRC[$mode]:-} $trc"
        [ "$acc" != - ] && ACC[$mode]="${ACC[$mode]:-} $acc"
        MBS[$mode]="${MBS[$mode]:-} $mbs"; FOL[$mode]="${FOL[$mode]:-} $fol"
    done
done
median() { python3 -c 'import sys,statistics; print("%.2f" % statistics.median(float(x) for x in sys.argv[1:]))' "$@"; }
echo
echo "## Page-cache events: iolens --json CPU under a cold buffered $PATTERN read of ext4 on $DEV, median of $ROUNDS rounds of ${SECS} s (CPU from ${WARM} s in); load $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| configuration | iolens CPU, % of one core | tracer thread, % of one core | read MB/s | folios added/s (at most) |"
echo "|---|---|---|---|---|"
for mode in on off budget notrace; do
    label=$mode; [ "$mode" = budget ] && label="on, budget $BUDGET%"
    echo "| $label | $(median ${CPU[$mode]}) | $(median ${TRC[$mode]}) | $(median ${MBS[$mode]}) | $(median ${FOL[$mode]}) |"
done
echo
python3 -c "import sys; on,off=float(sys.argv[1]),float(sys.argv[2]); print('on - off: %.2f points of a core (%.2fx)' % (on-off, on/max(off,1e-9)))" "$(median ${CPU[on]})" "$(median ${CPU[off]})"
python3 -c "import sys; b,t,p,n=(float(x) for x in sys.argv[1:5]); print('budget %g%%: tracer thread %.2f%% of a core = %.0f%% of the budget (rounds:%s); process less notrace %.2f%% = %.0f%% of the budget (target <= 110%%); without a budget, on less notrace %.2f%%' % (b, t, t / b * 100, sys.argv[6], p - n, (p - n) / b * 100, float(sys.argv[5]) - n))" "$BUDGET" "$(median ${TRC[budget]})" "$(median ${CPU[budget]})" "$(median ${CPU[notrace]})" "$(median ${CPU[on]})" "${TRC[budget]}"
if [ -n "${ACC[budget]:-}" ]; then
    python3 -c "import sys; b,a=float(sys.argv[1]),float(sys.argv[2]); print('counted by iolens (JSON tracer_cpu_pct, its thread and the samples\' reads; median of the rounds\' means over their reports): %.2f%% of a core = %.0f%% of the budget (rounds:%s)' % (a, a / b * 100, sys.argv[3]))" "$BUDGET" "$(median ${ACC[budget]})" "${ACC[budget]}"
fi
