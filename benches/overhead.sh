#!/usr/bin/env bash
# Overhead of iolens next to its peers and the kernel floor, in the same run.
#
#   bash benches/overhead.sh             # full: N = 1,000 2,000 5,000 10,000; 3 runs of 20 samples
#   QUICK=1 bash benches/overhead.sh     # quick: N = 1,000 2,000; 1 run of 6 samples; dashboard 15 s
#   IOLENS_BIN=path bash benches/overhead.sh   # skip the build
#   PROFILE=1 ...                        # also perf-profile iolens --batch at 5,000 and in the active scenario
#   ACTIVE=only ...                      # only the active scenario (fork churn)
#   DASH=only ...                        # only the dashboard (DASH_RUNS pairs with BASE_BIN)
#   BASE_BIN=path ...                    # A/B: also measure another iolens binary (see below)
#
# Needs root (iolens's tracing, exit records and other users' /proc/<pid>/io
# are part of the cost measured). Installs what it compares with (sysstat
# for pidstat, iotop-c, tmux, fio, pv) with apt-get when missing. Not part
# of CI.
#
# Sleeping scenario: N processes (a copy of sleep(1) named "ovhold", each
# holding 8 open files) are added in steps. At each N, four tools run side
# by side at a 1 s interval, each in its normal repeating mode:
#   iolens --batch (as root: block tracing, exit records, cgroups, per-device
#     attribution all on — the batch always reads cgroups),
#   pidstat -d 1, iotop-c -b -d 1, and
#   the floor reader (examples/floor.rs: list /proc, open+read+close every
#     /proc/<pid>/io, nothing else).
# Each tool's CPU (user + system of all its threads, ns from schedstat) is
# taken over a window of SAMPLES reports after a warm-up, and divided by the
# reports it printed in that window (counted in its own output). The median
# of RUNS runs is printed, with iolens's ratio to pidstat and to the floor,
# the slope in ms per 1,000 processes, iolens's peak RSS (VmHWM), its open
# fds, and the slab memory released when it exits (Slab in /proc/meminfo
# just before and 1 s after; system-wide, so noisy).
#
# Dashboard (DASH_RUNS times, default 1; with BASE_BIN alternating which
# binary goes first, and the median of the per-run ratios): at 2,000 processes, `iolens` under tmux at 120x40 with the
# cgroups pane shown (C), at the default 1 s interval: its CPU share of one
# core over DASH_S seconds and the bytes it wrote to the terminal per second
# (tmux pipe-pane), with nothing pressed.
#
# Active scenario: fork churn of short readers (a shell loop running
# `head -c 1M` of a cached file), 3 pv readers at 1 MiB/s and fio at 200
# random 4 KiB direct reads/s on a temp file: iolens --batch's CPU per sample.
#
# A/B (BASE_BIN set): every measurement of iolens is made twice in a row,
# once with IOLENS_BIN and once with BASE_BIN in its place beside the same
# companions, the order alternating from run to run; the dashboard is run
# with each binary. An extra table gives both binaries' medians and the
# median of the per-run ratios.
#
# The machine's 1-minute load average is printed with every table: the tools
# run at the same time, so they share whatever else the machine is doing.
# Everything started is killed by pid and the temp directory removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${QUICK:-}" ]; then
    NS=${NS:-"1000 2000"}; RUNS=${RUNS:-1}; SAMPLES=${SAMPLES:-6}; DASH_S=${DASH_S:-15}
else
    NS=${NS:-"1000 2000 5000 10000"}; RUNS=${RUNS:-3}; SAMPLES=${SAMPLES:-20}; DASH_S=${DASH_S:-60}
fi
WARM=${WARM:-3}

[ "$(id -u)" = 0 ] || { echo "overhead: needs root" >&2; exit 2; }
need=()
for p in pidstat:sysstat iotop-c:iotop-c tmux:tmux fio:fio pv:pv; do
    command -v "${p%%:*}" >/dev/null || need+=("${p#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
    echo "overhead: installing ${need[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ -z "${IOLENS_BIN:-}" ]; then
    cargo build --release --quiet --bin iolens --example floor
    IOLENS_BIN=target/release/iolens
fi
# Beside the iolens binary when it was built in a target directory; else
# built here.
FLOOR_BIN=${FLOOR_BIN:-$(dirname "$IOLENS_BIN")/examples/floor}
if [ ! -x "$FLOOR_BIN" ]; then
    cargo build --release --quiet --example floor
    FLOOR_BIN=target/release/examples/floor
fi

D=$(mktemp -d /tmp/iolens-overhead.XXXXXX)
HOLD=()
OTHER=()
SESSION=""
cleanup() {
    [ -n "$SESSION" ] && tmux kill-session -t "$SESSION" 2>/dev/null
    if [ ${#OTHER[@]} -gt 0 ]; then kill "${OTHER[@]}" 2>/dev/null || true; fi
    if [ ${#HOLD[@]} -gt 0 ]; then kill "${HOLD[@]}" 2>/dev/null || true; fi
    wait 2>/dev/null || true
    rm -rf "$D"
}
trap cleanup EXIT INT TERM

# The bench's own limits: enough pids for the largest N (restored by the trap).
max_n=0
for n in $NS; do [ "$n" -gt "$max_n" ] && max_n=$n; done
old_pid_max=$(cat /proc/sys/kernel/pid_max)
if [ "$old_pid_max" -lt $((max_n * 2 + 4096)) ]; then
    echo $((max_n * 2 + 4096)) > /proc/sys/kernel/pid_max
    trap 'echo "$old_pid_max" > /proc/sys/kernel/pid_max; cleanup' EXIT
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
ulimit -u unlimited 2>/dev/null || true

cp "$(command -v sleep)" "$D/ovhold"
for i in 1 2 3 4 5 6 7 8; do echo "file $i" > "$D/f$i"; done

spawn_to() {
    local want=$1
    while [ ${#HOLD[@]} -lt "$want" ]; do
        "$D/ovhold" 100000 3<"$D/f1" 4<"$D/f2" 5<"$D/f3" 6<"$D/f4" 7<"$D/f5" 8<"$D/f6" 9<"$D/f7" 10<"$D/f8" &
        HOLD+=($!)
    done
    sleep 1
}

# measure.py OUTDIR SAMPLES WARM NAME=MARKER=CMD... : runs the commands side
# by side, prints one line per tool: name ms_per_sample samples rss_kb fds anon_kb slab_kb
# (rss: peak; anon: its anonymous part at the end, the rest being mapped files).
cat > "$D/measure.py" <<'PY'
import atexit, os, re, signal, subprocess, sys, time
out, samples, warm = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
tools = [a.split("=", 2) for a in sys.argv[4:]]
def cpu_ns(pid):
    t = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                t += int(open(f"/proc/{pid}/task/{tid}/schedstat").read().split()[0])
            except OSError:
                pass
    except OSError:
        pass
    return t
def reports(path, marker):
    try:
        with open(path, "rb") as f:
            return len(re.findall(marker.encode(), f.read(), re.M))
    except OSError:
        return 0
def slab_kb():
    for l in open("/proc/meminfo"):
        if l.startswith("Slab:"):
            return int(l.split()[1])
procs = []
def stop_all():
    for n, m, path, p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, 9)
            except OSError:
                pass
atexit.register(stop_all)
signal.signal(signal.SIGTERM, lambda *a: sys.exit(1))
for name, marker, cmd in tools:
    path = os.path.join(out, name + ".out")
    p = subprocess.Popen("exec " + cmd, shell=True, stdout=open(path, "wb"), stderr=subprocess.DEVNULL,
                         env=dict(os.environ, LC_ALL="C", S_TIME_FORMAT="ISO"), start_new_session=True)
    procs.append((name, marker, path, p))
time.sleep(warm)
start = {n: (cpu_ns(p.pid), reports(path, m)) for n, m, path, p in procs}
deadline = time.time() + samples + 120
while time.time() < deadline:
    time.sleep(0.2)
    if all(reports(path, m) - start[n][1] >= samples for n, m, path, p in procs):
        break
res = {}
for n, m, path, p in procs:
    c, r = cpu_ns(p.pid), reports(path, m)
    res[n] = [(c - start[n][0]) / 1e6 / max(r - start[n][1], 1), r - start[n][1]]
    rss = fds = anon = 0
    try:
        status = {l.split(":")[0]: l.split()[1] for l in open(f"/proc/{p.pid}/status") if l.split()[1:]}
        rss, anon = int(status["VmHWM"]), int(status["RssAnon"])
        fds = len(os.listdir(f"/proc/{p.pid}/fd"))
    except (OSError, KeyError, ValueError):
        pass
    res[n] += [rss, fds, anon]
for n, m, path, p in procs:
    before = slab_kb()
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill(); p.wait()
    time.sleep(1)
    res[n].append(before - slab_kb())
for n, m, path, p in procs:
    print(n, "%.3f" % res[n][0], *res[n][1:])
PY

load() { cut -d' ' -f1 /proc/loadavg; }
median() { python3 -c 'import sys,statistics; v=[float(x) for x in sys.argv[1:]]; print("%.3f" % statistics.median(v))' "$@"; }

# The binaries a run measures, in its order: iolens alone, or iolens and
# base alternating which goes first.
whos() { if [ -z "${BASE_BIN:-}" ]; then echo iolens; elif [ $(($1 % 2)) = 1 ]; then echo iolens base; else echo base iolens; fi; }
bin_of() { if [ "$1" = base ]; then echo "$BASE_BIN"; else echo "$IOLENS_BIN"; fi; }
# ratio A B: the median of the per-run ratios of two lists of the same length.
ratio() { python3 -c 'import sys,statistics; a,b=sys.argv[1].split(),sys.argv[2].split(); print("%.3f" % statistics.median(float(x)/max(float(y),1e-9) for x,y in zip(a,b)))' "$1" "$2"; }

declare -A MS RSS ANON FDS SLAB LOADS TOTAL
echo "overhead: N = $NS, $RUNS run(s) of $SAMPLES samples at 1 s, warm-up ${WARM}s; $(nproc) CPUs; kernel $(uname -r)" >&2
DASH_RUNS=${DASH_RUNS:-1}
if [ "${ACTIVE:-}" != only ]; then
if [ "${DASH:-}" != only ]; then
for n in $NS; do
    spawn_to "$n"
    TOTAL[$n]=$(ls /proc | grep -c '^[0-9]')
    for r in $(seq 1 "$RUNS"); do
      for who in $(whos "$r"); do
        l0=$(load)
        python3 "$D/measure.py" "$D" "$SAMPLES" "$WARM" \
            "$who= interval [0-9n]=$(bin_of "$who") --batch --interval 1" \
            "pidstat=kB_rd/s=stdbuf -oL pidstat -d 1" \
            "iotop=Total DISK READ=stdbuf -oL iotop-c -b -d 1" \
            "floor=^pass =$FLOOR_BIN 1" > "$D/run.txt"
        LOADS[$n]="${LOADS[$n]:-} $l0-$(load)"
        while read -r name ms cnt rss fds anon slab; do
            MS[$n,$name]="${MS[$n,$name]:-} $ms"
            [ "$name" = iolens ] && { RSS[$n]="${RSS[$n]:-} $rss"; ANON[$n]="${ANON[$n]:-} $anon"; FDS[$n]=$fds; SLAB[$n]="${SLAB[$n]:-} $slab"; }
            [ "$name" = base ] && RSS[$n,base]="${RSS[$n,base]:-} $rss"
            echo "  N=$n run $r: $name $ms ms/sample over $cnt samples (rss ${rss} KiB, anonymous at end ${anon} KiB, fds $fds, slab freed at exit ${slab} KiB)" >&2
        done < "$D/run.txt"
      done
    done
    echo "  N=$n: ${TOTAL[$n]} processes on the system, load average (1 min) per run:${LOADS[$n]}" >&2
done

echo
echo "## Sleeping processes, 8 open files each; CPU ms per sample, median of $RUNS run(s) of $SAMPLES samples"
echo
echo "| N | processes | iolens --batch | pidstat -d | iotop-c -b | floor | iolens/floor | iolens/pidstat | iolens peak RSS | of it anonymous (at end) | iolens fds | slab freed at exit | load avg |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
prev_n=""
for n in $NS; do
    i=$(median ${MS[$n,iolens]}); p=$(median ${MS[$n,pidstat]}); t=$(median ${MS[$n,iotop]}); f=$(median ${MS[$n,floor]})
    rss=$(median ${RSS[$n]}); anon=$(median ${ANON[$n]}); slab=$(median ${SLAB[$n]})
    printf "| %s | %s | %s | %s | %s | %s | %.2f | %.3f | %.1f MiB | %.1f MiB | %s | %.1f MiB | %s |\n" \
        "$n" "${TOTAL[$n]}" "$i" "$p" "$t" "$f" \
        "$(python3 -c "print($i/max($f,1e-9))")" "$(python3 -c "print($i/max($p,1e-9))")" \
        "$(python3 -c "print($rss/1024)")" "$(python3 -c "print($anon/1024)")" "${FDS[$n]}" "$(python3 -c "print($slab/1024)")" "${LOADS[$n]# }"
    eval "I_$n=$i; F_$n=$f"
done
first=$(echo $NS | cut -d' ' -f1)
echo
for n in $NS; do
    [ "$n" = "$first" ] && continue
    eval "a=\$I_$first; b=\$I_$n; fa=\$F_$first; fb=\$F_$n"
    python3 -c "print('slope %d -> %d processes: iolens %.3f ms, floor %.3f ms per 1,000 processes' % ($first, $n, ($b-$a)/($n-$first)*1000, ($fb-$fa)/($n-$first)*1000))"
done
if [ -n "${BASE_BIN:-}" ]; then
    echo
    echo "## A/B: iolens ($IOLENS_BIN) against base ($BASE_BIN), CPU ms per sample, same runs, alternating"
    echo
    echo "| N | iolens | base | iolens/base (median of per-run ratios) | iolens peak RSS | base peak RSS |"
    echo "|---|---|---|---|---|---|"
    for n in $NS; do
        printf "| %s | %s | %s | %s | %.1f MiB | %.1f MiB |\n" "$n" "$(median ${MS[$n,iolens]})" "$(median ${MS[$n,base]})" \
            "$(ratio "${MS[$n,iolens]}" "${MS[$n,base]}")" \
            "$(python3 -c "print($(median ${RSS[$n]})/1024)")" "$(python3 -c "print($(median ${RSS[$n,base]})/1024)")"
    done
fi

if [ -n "${PROFILE:-}" ] && command -v perf >/dev/null; then
    spawn_to 5000
    echo
    echo "## perf profile of iolens --batch at $(ls /proc | grep -c '^[0-9]') processes (10 s, top symbols)"
    "$IOLENS_BIN" --batch --interval 1 > /dev/null & OTHER+=($!); ip=$!
    sleep 2
    perf record -q -F 999 -g -p "$ip" -o "$D/perf.data" -- sleep 10 >/dev/null 2>&1 || true
    kill "$ip" 2>/dev/null || true
    perf report -q -i "$D/perf.data" --no-children --sort sym --percent-limit 1.5 --stdio -g none 2>/dev/null | head -40
fi

fi # DASH != only
# Dashboard at 2,000 sleeping processes.
if [ ${#HOLD[@]} -gt 2000 ]; then
    kill "${HOLD[@]:2000}" 2>/dev/null || true
    wait "${HOLD[@]:2000}" 2>/dev/null || true
    HOLD=("${HOLD[@]:0:2000}")
fi
spawn_to 2000
# dashboard BIN: its CPU, terminal bytes and peak RSS over DASH_S seconds.
dashboard() {
    local bin=$1 dpid l0 c0 c1 bytes drss
    SESSION=iolens-overhead-$$
    tmux new-session -d -s "$SESSION" -x 120 -y 40 "$bin"
    sleep 2
    tmux send-keys -t "$SESSION" C
    sleep "$WARM"
    dpid=$(tmux list-panes -t "$SESSION" -F '#{pane_pid}')
    tmux pipe-pane -t "$SESSION" -o "cat > $D/tty.bytes"
    l0=$(load)
    c0=$(python3 -c "import os;print(sum(int(open(f'/proc/$dpid/task/{t}/schedstat').read().split()[0]) for t in os.listdir('/proc/$dpid/task')))")
    sleep "$DASH_S"
    c1=$(python3 -c "import os;print(sum(int(open(f'/proc/$dpid/task/{t}/schedstat').read().split()[0]) for t in os.listdir('/proc/$dpid/task')))")
    tmux pipe-pane -t "$SESSION"
    bytes=$(stat -c %s "$D/tty.bytes")
    drss=$(awk '/VmHWM/{print $2}' "/proc/$dpid/status")
    tmux kill-session -t "$SESSION"; SESSION=""
    echo
    echo "## Dashboard ($bin; tmux 120x40, cgroups pane shown, 1 s), $(ls /proc | grep -c '^[0-9]') processes, ${DASH_S} s, load average $l0-$(load)"
    echo
    DCPU=$(python3 -c "print('%.3f' % (($c1-$c0)/1e7/$DASH_S))")
    python3 -c "print('CPU: %.2f%% of one core; terminal output %.0f bytes/s; peak RSS %.1f MiB' % ($DCPU, $bytes/$DASH_S, $drss/1024))"
}
DASH_I=""; DASH_B=""
for r in $(seq 1 "$DASH_RUNS"); do
    for who in $(whos "$r"); do
        dashboard "$(bin_of "$who")"
        if [ "$who" = base ]; then DASH_B="$DASH_B $DCPU"; else DASH_I="$DASH_I $DCPU"; fi
    done
done
if [ -n "${BASE_BIN:-}" ] && [ "$DASH_RUNS" -gt 1 ]; then
    echo
    echo "## A/B dashboard, % of one core over ${DASH_S} s, $DASH_RUNS runs: iolens $(median $DASH_I) (${DASH_I# }), base $(median $DASH_B) (${DASH_B# }); iolens/base $(ratio "$DASH_I" "$DASH_B") (median of per-run ratios)"
fi
[ "${DASH:-}" = only ] && exit 0

fi
# Active scenario.
kill "${HOLD[@]}" 2>/dev/null || true
wait "${HOLD[@]}" 2>/dev/null || true
HOLD=()
head -c 1048576 /dev/urandom > "$D/small"
truncate -s 10G "$D/big"
fio --name=act --filename="$D/fio.img" --size=256M --rw=randread --bs=4k --direct=1 \
    --rate_iops=200 --time_based --runtime=100000 --output=/dev/null >/dev/null 2>&1 & OTHER+=($!)
for i in 1 2 3; do pv -q -L 1m "$D/big" > /dev/null & OTHER+=($!); done
bash -c "while :; do head -c 1048576 $D/small > /dev/null; done" & OTHER+=($!)
sleep 3
forks0=$(awk '/^processes/{print $2}' /proc/stat)
for r in $(seq 1 "$RUNS"); do
  for who in $(whos "$r"); do
    python3 "$D/measure.py" "$D" "$SAMPLES" "$WARM" \
        "$who= interval [0-9n]=$(bin_of "$who") --batch --interval 1" \
        "pidstat=kB_rd/s=stdbuf -oL pidstat -d 1" > "$D/run.txt"
    while read -r name ms cnt rss fds anon slab; do MS[act,$name]="${MS[act,$name]:-} $ms"; done < "$D/run.txt"
  done
done
forks=$(( $(awk '/^processes/{print $2}' /proc/stat) - forks0 ))
echo
echo "## Active scenario: fork churn ($forks forks in the runs), 3 pv readers at 1 MiB/s, fio 200 IOPS; load average $(load)"
echo
echo "iolens --batch: $(median ${MS[act,iolens]}) ms CPU per sample; pidstat -d: $(median ${MS[act,pidstat]}) ms (median of $RUNS run(s): ${MS[act,iolens]# } / ${MS[act,pidstat]# })"
if [ -n "${BASE_BIN:-}" ]; then echo "A/B: base --batch: $(median ${MS[act,base]}) ms (${MS[act,base]# }); iolens/base $(ratio "${MS[act,iolens]}" "${MS[act,base]}") (median of per-run ratios)"; fi
if [ -n "${PROFILE:-}" ] && command -v perf >/dev/null; then
    echo
    echo "## perf profile of iolens --batch, active scenario (10 s, top symbols)"
    "$IOLENS_BIN" --batch --interval 1 > /dev/null & OTHER+=($!); ip=$!
    sleep 2
    perf record -q -F 999 -g -p "$ip" -o "$D/perf.data" -- sleep 10 >/dev/null 2>&1 || true
    kill "$ip" 2>/dev/null || true
    perf report -q -i "$D/perf.data" --no-children --sort sym --percent-limit 1.5 --stdio -g none 2>/dev/null | head -40
fi
