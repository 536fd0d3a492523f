#!/usr/bin/env bash
# Cost of block-request tracing, measured with fio on a loop device (not run
# by CI). Attaches a read-only loop device with direct I/O on a temp file of
# random data, then:
#
# 1. Fixed load: fio 4 KiB randread, psync QD1, rate_iops=10000, for SECS s,
#    ROUNDS times alternating: fio alone (off) / fio while `iolens --json -i 1`
#    traces (on). Reports fio's clat p50 (median over rounds) off vs on
#    (target: ≤ 5% higher with the tracer) and iolens's CPU time over the run
#    in % of one core (utime+stime from /proc/<pid>/stat; target ≤ 5%), also
#    for `iolens --json -i 1 --no-trace` to show what the sampling alone costs.
# 2. Highest IOPS: fio 4 KiB randread, libaio QD32, no rate limit, ROUNDS
#    times alternating off / on; the median IOPS on against off (target: at
#    most 8% fewer).
#
# Needs root, fio, losetup, python3. Environment:
#   SIZE_MB (default 1024)  ROUNDS (default 3)  SECS (default 8)
#   DIR (default /var/tmp)  IOLENS (default: target/release/iolens, built if missing)
#   RT (default "chrt -f 10"): fio runs at real-time priority, so that other
#   work on a busy box (compilers) does not put milliseconds of run-queue
#   wait into its latency; iolens runs at normal priority. RT="" disables.
#   PIN (default "taskset -c <last CPU>"): fio stays on one CPU. Unpinned,
#   its QD1 p50 on the 2-vCPU development VM flipped between two modes
#   from one run to the next (about 74 and 83 µs, with nothing else
#   running: where it ran against the loop device's worker), which hid a
#   5 % difference; pinned, 6 runs gave 71-74 µs. PIN="" disables.
# Cleans up the loop device, the file and any iolens it started on exit.
set -euo pipefail
# iolens holds its tracer to 2 % of a core by default: this bench measures
# whole tracing unless IOLENS_TRACE_BUDGET says otherwise (a flag wins).
export IOLENS_TRACE_BUDGET=${IOLENS_TRACE_BUDGET:-off}

SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-8}
DIR=${DIR:-/var/tmp}
cd "$(dirname "$0")/.."
IOLENS=${IOLENS:-target/release/iolens}
RT=${RT-chrt -f 10}
PIN=${PIN-taskset -c $(( $(nproc) - 1 ))}

for tool in fio losetup python3; do
    command -v "$tool" >/dev/null || { echo "trace_cost: $tool is not installed" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "trace_cost: needs root (losetup, tracefs)" >&2; exit 2; }
[ -x "$IOLENS" ] || cargo build --release --quiet

WORK=$(mktemp -d "$DIR/iolens-trace-cost.XXXXXX")
DEV=""
IOL=""
cleanup() {
    if [ -n "$IOL" ]; then kill "$IOL" 2>/dev/null || true; wait "$IOL" 2>/dev/null || true; fi
    [ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

echo "trace_cost: writing $SIZE_MB MiB of random data to $WORK/backing.img" >&2
head -c "$((SIZE_MB << 20))" /dev/urandom >"$WORK/backing.img"
sync "$WORK/backing.img"
DEV=$(losetup -f --show -r --direct-io=on "$WORK/backing.img")
echo "trace_cost: $DEV, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# start_iolens [extra flags]: iolens in the background, 1 s to set up.
start_iolens() {
    "$IOLENS" --json -i 1 "$@" >"$WORK/iolens.json" 2>"$WORK/iolens.err" &
    IOL=$!
    sleep 1.5
}
stop_iolens() {
    kill -TERM "$IOL"
    wait "$IOL" 2>/dev/null || true
    IOL=""
}

# run_fio OUT [fio args]
run_fio() {
    local out=$1
    shift
    $PIN $RT fio --name=cost --filename="$DEV" --readonly --rw=randread --bs=4k --direct=1 \
        --randrepeat=0 --norandommap --time_based --runtime="$SECS" \
        --output-format=json "$@" >"$out"
}

fixed=(--ioengine=psync --iodepth=1 --rate_iops=10000)
peak=(--ioengine=libaio --iodepth=32)

# Part 1 and 2: mode in off, on, notrace; each prints "p50_ns iops cpu_pct".
one() {
    local mode=$1 out=$WORK/fio.json cpu=""
    shift
    case $mode in
        off) run_fio "$out" "$@" ;;
        on | notrace)
            if [ "$mode" = on ]; then start_iolens; else start_iolens --no-trace; fi
            local t0 t1 s0 s1
            t0=$(ticks "$IOL")
            s0=$(date +%s.%N)
            run_fio "$out" "$@"
            t1=$(ticks "$IOL")
            s1=$(date +%s.%N)
            cpu=$(python3 -c "import os;print(f'{($t1-$t0)/os.sysconf(\"SC_CLK_TCK\")/($s1-$s0)*100:.2f}')")
            stop_iolens
            if [ "$mode" = on ] && ! grep -q '"active":true' "$WORK/iolens.json"; then
                echo "trace_cost: iolens did not trace: $(tail -c 300 "$WORK/iolens.json") $(cat "$WORK/iolens.err")" >&2
                exit 1
            fi
            if [ "$mode" = on ]; then
                # events decoded and lost over the run (each report's interval)
                python3 - "$WORK/iolens.json" >&2 <<'PY'
import re, sys
t = open(sys.argv[1]).read()
n = lambda k: sum(int(x) for x in re.findall(r'"%s":(\d+)' % k, t))
print(f"  traced: {n('events')} events, {n('lost_events')} lost, {n('missed_pages')} pages flagged with lost events")
PY
            fi
            ;;
    esac
    python3 - "$out" "$cpu" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print(j["clat_ns"]["percentile"]["50.000000"], round(j["iops"]), sys.argv[2] or "-")
PY
}

med() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='-']; print(statistics.median(v) if v else 'n/a')" "$@"; }

declare -A P50 IOPS CPU
for r in $(seq "$ROUNDS"); do
    for mode in off on notrace; do
        read -r p i c < <(one "$mode" "${fixed[@]}")
        P50[$mode]+="$p "; IOPS[$mode]+="$i "; CPU[$mode]+="$c "
        echo "fixed load round $r $mode: clat p50 $((p / 1000)) µs, $i IOPS, iolens CPU ${c}%" >&2
    done
done
declare -A PK
for r in $(seq "$ROUNDS"); do
    for mode in off on; do
        read -r p i c < <(one "$mode" "${peak[@]}")
        PK[$mode]+="$i "
        echo "peak round $r $mode: $i IOPS, iolens CPU ${c}%" >&2
    done
done

echo "trace_cost: load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
p_off=$(med ${P50[off]}); p_on=$(med ${P50[on]})
k_off=$(med ${PK[off]}); k_on=$(med ${PK[on]})
python3 - "$p_off" "$p_on" "$(med ${CPU[on]})" "$(med ${CPU[notrace]})" "$(med ${IOPS[off]})" "$(med ${IOPS[on]})" "$k_off" "$k_on" <<'PY'
import sys
p_off, p_on, cpu_on, cpu_nt, i_off, i_on, k_off, k_on = (float(x) for x in sys.argv[1:])
print(f"fixed load (4 KiB randread QD1, rate_iops=10000): fio clat p50 {p_off/1e3:.1f} µs off, {p_on/1e3:.1f} µs with tracing ({(p_on/p_off-1)*100:+.1f}%; target ≤ +5%); IOPS {i_off:.0f} / {i_on:.0f}")
print(f"iolens CPU at that load: {cpu_on:.2f}% of a core tracing (target ≤ 5%), {cpu_nt:.2f}% with --no-trace")
print(f"highest IOPS (4 KiB randread libaio QD32): {k_off:.0f} off, {k_on:.0f} with tracing ({(k_on/k_off-1)*100:+.1f}%; target ≥ -8%)")
PY
