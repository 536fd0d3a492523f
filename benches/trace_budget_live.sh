#!/usr/bin/env bash
# The tracer's CPU budget live, at the highest IOPS this box reaches (not run
# by CI). Attaches a read-only loop device with direct I/O on a temp file of
# random data (as benches/trace_cost.sh), then runs fio 4 KiB randread, libaio
# QD32, direct, no rate limit, for SECS s, ROUNDS times alternating four
# configurations in the same run:
#
#   off      fio alone
#   notrace  fio while `iolens --json -i 1 --no-trace` samples (what iolens
#            costs without the tracer: the baseline of the tracer's share)
#   whole    fio while `iolens --json -i 1` traces every request
#   budget   fio while `iolens --json -i 1 --trace-budget BUDGET` traces
#
# Reports, median of the rounds: fio's IOPS in each (loss against off: the
# tracepoints' kernel cost is the workload's), and iolens's CPU in % of one
# core three ways: the whole process (utime+stime ticks of /proc/<pid>/stat),
# the tracer thread (`iolens-trace`, ns from /proc/<pid>/task/<tid>/schedstat;
# the sample's own read of the buffers once a second runs in the sampling
# thread and is not in it), and the whole process less the notrace median
# (the tracer's marginal cost). Target: the budget run's tracer cost ≤ 110%
# of the budget. Also the JSON's trace_share (the traced share) of the
# budget run's reports, and iolens's own count of its tracer's CPU (JSON
# `tracer_cpu_pct`, what the budget holds: the thread and the samples'
# reads of the buffers; mean of the reports from WARM s on).
#
# Needs root, fio, losetup, python3. Environment:
#   BUDGET (default 1, % of one core)  SIZE_MB (default 1024)  ROUNDS (3)
#   SECS (default 20)  DIR (default /var/tmp)
#   WARM (default 3): iolens's CPU is taken from WARM s after fio starts to
#   its end, the steady state: the budget is chosen once a second from the
#   last second's cost, so the first second of a load is traced whole
#   IOLENS (default target/release/iolens, built if missing)
#   PIN (default "taskset -c <last CPU>") for fio; PIN="" disables.
# Cleans up the loop device, the file and any iolens it started on exit.
set -euo pipefail
# iolens holds its tracer to 2 % of a core by default: this bench measures
# whole tracing unless IOLENS_TRACE_BUDGET says otherwise (a flag wins).
export IOLENS_TRACE_BUDGET=${IOLENS_TRACE_BUDGET:-off}

BUDGET=${BUDGET:-1}
SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-20}
WARM=${WARM:-3}
DIR=${DIR:-/var/tmp}
cd "$(dirname "$0")/.."
# shellcheck source=benches/tracer_cpu.sh
. benches/tracer_cpu.sh
IOLENS=${IOLENS:-target/release/iolens}
PIN=${PIN-taskset -c $(($(nproc) - 1))}

for tool in fio losetup python3; do
    command -v "$tool" >/dev/null || { echo "trace_budget_live: $tool is not installed" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "trace_budget_live: needs root (losetup, tracefs)" >&2; exit 2; }
[ -x "$IOLENS" ] || cargo build --release --quiet

WORK=$(mktemp -d "$DIR/iolens-budget-live.XXXXXX")
DEV=""
IOL=""
cleanup() {
    if [ -n "$IOL" ]; then kill "$IOL" 2>/dev/null || true; wait "$IOL" 2>/dev/null || true; fi
    [ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

echo "trace_budget_live: writing $SIZE_MB MiB of random data to $WORK/backing.img" >&2
head -c "$((SIZE_MB << 20))" /dev/urandom >"$WORK/backing.img"
sync "$WORK/backing.img"
DEV=$(losetup -f --show -r --direct-io=on "$WORK/backing.img")
echo "trace_budget_live: $DEV, $(nproc) CPUs, budget $BUDGET%, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

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

run_fio() {
    $PIN fio --name=budget --filename="$DEV" --readonly --rw=randread --bs=4k --direct=1 \
        --ioengine=libaio --iodepth=32 --randrepeat=0 --norandommap --time_based \
        --runtime="$SECS" --output-format=json >"$1"
}

# one MODE: prints "iops process_pct tracer_pct share counted_pct"
one() {
    local mode=$1 out=$WORK/fio.json
    case $mode in
        off) run_fio "$out"; echo "$(python3 -c "import json;print(round(json.load(open('$out'))['jobs'][0]['read']['iops']))") - - - -"; return ;;
        notrace) start_iolens --no-trace ;;
        whole) start_iolens ;;
        budget) start_iolens --trace-budget "$BUDGET" ;;
    esac
    local t0 t1 s0 s1 n0 n1 fio
    run_fio "$out" &
    fio=$!
    sleep "$WARM"
    t0=$(ticks "$IOL"); n0=$(tracer_ns "$IOL"); s0=$(date +%s.%N)
    wait "$fio"
    t1=$(ticks "$IOL"); n1=$(tracer_ns "$IOL"); s1=$(date +%s.%N)
    stop_iolens
    if [ "$mode" != notrace ] && ! grep -q '"active":true' "$WORK/iolens.json"; then
        echo "trace_budget_live: iolens did not trace: $(tail -c 300 "$WORK/iolens.json") $(cat "$WORK/iolens.err")" >&2
        exit 1
    fi
    local counted
    # from WARM s into fio on
    counted=$(counted_pct "$WORK/iolens.json" "$(awk -v w="$WARM" 'BEGIN { print int(w) + 2 }')")
    python3 - "$out" "$WORK/iolens.json" "$t0" "$t1" "$n0" "$n1" "$s0" "$s1" "$mode" "$counted" <<'PY'
import json, os, re, sys
out, js, t0, t1, n0, n1, s0, s1, mode, counted = sys.argv[1:]
iops = round(json.load(open(out))["jobs"][0]["read"]["iops"])
wall = float(s1) - float(s0)
proc = (int(t1) - int(t0)) / os.sysconf("SC_CLK_TCK") / wall * 100
tracer = (int(n1) - int(n0)) / 1e9 / wall * 100 if mode != "notrace" else "-"
shares = [float(x) for x in re.findall(r'"trace_share":([0-9.eE+-]+)', open(js).read())]
share = f"{min(shares):.3f}-{max(shares):.3f}" if shares else "-"
print(iops, f"{proc:.2f}", tracer if tracer == "-" else f"{tracer:.2f}", share, counted)
PY
}

med() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:] if x!='-']; print(statistics.median(v) if v else 'n/a')" "$@"; }

declare -A IOPS PROC TRACER COUNTED
for r in $(seq "$ROUNDS"); do
    for mode in off notrace whole budget; do
        read -r i p t s c < <(one "$mode")
        IOPS[$mode]+="$i "; PROC[$mode]+="$p "; TRACER[$mode]+="$t "; COUNTED[$mode]+="$c "
        echo "round $r $mode: $i IOPS, iolens process ${p}% of a core, tracer thread ${t}%, counted by iolens ${c}%, trace_share $s" >&2
    done
done
echo "trace_budget_live: load average at the end $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$BUDGET" "$(med ${IOPS[off]})" "$(med ${IOPS[notrace]})" "$(med ${IOPS[whole]})" "$(med ${IOPS[budget]})" \
    "$(med ${PROC[notrace]})" "$(med ${PROC[whole]})" "$(med ${PROC[budget]})" \
    "$(med ${TRACER[whole]})" "$(med ${TRACER[budget]})" "$(med ${COUNTED[budget]})" <<'PY'
import sys
b, i_off, i_nt, i_wh, i_bu, p_nt, p_wh, p_bu, t_wh, t_bu = (float(x) for x in sys.argv[1:11])
c_bu = sys.argv[11]
loss = lambda i: f"{(i / i_off - 1) * 100:+.1f}%"
print(f"fio 4 KiB randread libaio QD32 (median): {i_off:.0f} IOPS off, {i_nt:.0f} with iolens --no-trace ({loss(i_nt)}), "
      f"{i_wh:.0f} traced whole ({loss(i_wh)}), {i_bu:.0f} with a {b:g}% budget ({loss(i_bu)})")
print(f"iolens process CPU: {p_nt:.2f}% of a core --no-trace, {p_wh:.2f}% whole, {p_bu:.2f}% budget "
      f"(less --no-trace: {p_wh - p_nt:.2f}% whole, {p_bu - p_nt:.2f}% budget = {(p_bu - p_nt) / b * 100:.0f}% of the budget)")
print(f"tracer thread CPU: {t_wh:.2f}% whole, {t_bu:.2f}% budget = {t_bu / b * 100:.0f}% of the budget (target ≤ 110%)")
if c_bu != "n/a":
    c = float(c_bu)
    print(f"counted by iolens (JSON tracer_cpu_pct: the thread and the samples' reads): {c:.2f}% budget = {c / b * 100:.0f}% of the budget")
PY
