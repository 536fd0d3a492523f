#!/usr/bin/env bash
# No false alarms: iolens's findings over four ordinary loads that are not
# a problem, each watched by a fresh `iolens --json` (release build, as
# root: block tracing and the dirty-throttle tracepoint on) for DURATION
# seconds. Each scenario must produce zero findings (of any severity).
#
#   bash benches/no_false_alarm.sh                  # 4 x 150 s (10 minutes)
#   DURATION=20 bash benches/no_false_alarm.sh      # a quick try
#   SCENARIOS="idle fio" bash benches/no_false_alarm.sh
#   IOLENS_BIN=path bash benches/no_false_alarm.sh  # skip the build
#   KEEP=1 ...                                      # keep the JSON lines (the path is printed)
#
# Scenarios (loop devices over sparse files in a temporary directory under
# /var/tmp, created here and removed on exit):
#   idle   nothing started;
#   build  a CPU-bound build: the C files of a generated project compiled
#          with `cc -O2` by one job per CPU, again and again, sources and
#          objects on ext4 on a loop device (no fsync, as make);
#   copy   a full-speed sequential copy between two otherwise idle loop
#          devices: dd bs=1M, buffered, the whole source again and again;
#   fio    4 KiB random reads at QD 1 (psync, O_DIRECT) on a loop device:
#          %util near 100% with no queue.
# Per scenario it prints the samples, those with findings, each distinct
# finding (rule, severity, subject) with the samples it held in, and what
# the load did (the scenario device's highest %util and MB/s, whether
# tracing ran), so that a quiet result can be told from a load that did
# not run. Exit status: 0 with no finding, 1 with any, 2 on a set-up error.
#
# Live (loop devices, fio): run it under the machine's live-test lock,
#   flock /tmp/iolens-live.lock bash benches/no_false_alarm.sh
# A saved probe result is a basis for some rules: iolens runs with an
# empty XDG_STATE_HOME, as on a box that never probed. Not part of CI.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-150}
INTERVAL=${INTERVAL:-1}
SCENARIOS=${SCENARIOS:-"idle build copy fio"}
SIZE_MB=${SIZE_MB:-1024}
WARM=${WARM:-3}

[ "$(id -u)" = 0 ] || { echo "no_false_alarm: needs root (loop devices, tracing)" >&2; exit 2; }
for t in fio cc mkfs.ext4 losetup python3; do
    command -v "$t" >/dev/null || { echo "no_false_alarm: needs $t" >&2; exit 2; }
done
if [ -z "${IOLENS_BIN:-}" ]; then
    cargo build --release --quiet --bin iolens
    IOLENS_BIN=target/release/iolens
fi

TMP=$(mktemp -d /var/tmp/iolens-nfa.XXXXXX)
LOOPS=()
PIDS=()
MNT=""
cleanup() {
    for p in "${PIDS[@]}"; do kill -- -"$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    [ -n "$MNT" ] && umount "$MNT" 2>/dev/null || true
    for l in "${LOOPS[@]}"; do losetup -d "$l" 2>/dev/null || true; done
    if [ -n "${KEEP:-}" ]; then echo "no_false_alarm: kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT INT TERM

# A loop device over a new sparse file of SIZE_MB, in $LOOP (not echoed:
# a command substitution's subshell would lose it from LOOPS).
LOOP=""
new_loop() {
    local f="$TMP/$1.img"
    truncate -s "${SIZE_MB}M" "$f"
    LOOP=$(losetup --find --show "$f")
    LOOPS+=("$LOOP")
}

# Start a load in the background (its own process group: stopped with
# everything it started), remembering its pid.
start() {
    setsid bash -c "$1" >/dev/null 2>&1 &
    PIDS+=("$!")
}

stop_loads() {
    for p in "${PIDS[@]}"; do kill -- -"$p" 2>/dev/null || true; done
    for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    PIDS=()
}

# A generated project of 48 C files, each a few hundred lines of
# arithmetic the optimiser works on (about 0.3 s of CPU a file at -O2).
make_project() {
    local dir=$1
    mkdir -p "$dir/src" "$dir/obj"
    for i in $(seq 1 48); do
        {
            echo "int f$i(int *a, int n) { int s = 0;"
            for j in $(seq 1 300); do
                echo "  for (int k$j = 0; k$j < n; k$j++) s += a[k$j] * $j ^ (s >> ($j % 7));"
            done
            echo "  return s; }"
        } >"$dir/src/f$i.c"
    done
}

# Count the findings of one scenario's JSON lines; print the summary line.
summarize() {
    python3 - "$1" "$2" "$3" <<'EOF'
import json, sys
path, name, dev = sys.argv[1], sys.argv[2], sys.argv[3].removeprefix("/dev/")
samples = with_findings = stalls = 0
held = {}
first = {}
util = mbs = 0.0
traced = dirty = None
for line in open(path):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if "findings" not in o:
        # A stall notice ("no sample for 0.5 s (...)"), not a report.
        stalls += "stall" in o
        continue
    samples += 1
    f = o["findings"]
    with_findings += bool(f)
    for x in f:
        k = (x["rule"], x["severity"], x["subject"]["name"])
        held[k] = held.get(k, 0) + 1
        first.setdefault(k, x["text"].encode("unicode_escape").decode())
    t = o.get("trace") or {}
    if not t.get("active"):
        traced = f"no ({t.get('reason')})"
    elif traced is None:
        traced = True
    for d in o.get("devices") or []:
        r = d.get("rates") or {}
        if d.get("name") == dev:
            util = max(util, r.get("util_pct") or 0.0)
            rw = sum(((r.get(op) or {}).get("bytes_per_s") or 0.0) for op in ("read", "write"))
            mbs = max(mbs, rw / 1e6)
print(f"{name:6} samples {samples:4}  with findings {with_findings:4}  distinct {len(held):2}  "
      f"(device {dev or '-'}: max %util {util:.0f}, max {mbs:.0f} MB/s; traced {traced}; stall notices {stalls})")
for (rule, sev, subj), n in sorted(held.items()):
    print(f"       {sev:8} {rule} [{subj}] in {n} samples: {first[(rule, sev, subj)]}")
sys.exit(1 if held else 0)
EOF
}

mkdir -p "$TMP/state"
status=0
echo "no_false_alarm: $DURATION s per scenario at -i $INTERVAL ($IOLENS_BIN); load average $(cut -d' ' -f1-3 /proc/loadavg)"
for s in $SCENARIOS; do
    dev=""
    case $s in
        idle) ;;
        build)
            new_loop build
            dev=$LOOP
            mkfs.ext4 -q "$dev"
            MNT="$TMP/build"
            mkdir -p "$MNT"
            mount "$dev" "$MNT"
            make_project "$MNT"
            start "cd '$MNT/obj' && while :; do ls ../src/*.c | xargs -P $(nproc) -n 4 cc -O2 -c; rm -f *.o; done"
            ;;
        copy)
            new_loop copy-src
            src=$LOOP
            new_loop copy-dst
            dev=$LOOP
            start "while :; do dd if='$src' of='$dev' bs=1M status=none; done"
            ;;
        fio)
            new_loop fio
            dev=$LOOP
            start "exec fio --name=qd1 --filename='$dev' --rw=randread --bs=4k --iodepth=1 --direct=1 --ioengine=psync --time_based --runtime=$((DURATION + WARM + 30))"
            ;;
        *) echo "no_false_alarm: unknown scenario $s" >&2; exit 2 ;;
    esac
    sleep "$WARM"
    out="$TMP/$s.jsonl"
    XDG_STATE_HOME="$TMP/state" "$IOLENS_BIN" --json -i "$INTERVAL" -n "$DURATION" >"$out" 2>"$TMP/$s.err" || {
        echo "no_false_alarm: iolens failed in $s:" >&2
        cat "$TMP/$s.err" >&2
        exit 2
    }
    stop_loads
    summarize "$out" "$s" "$dev" || status=1
    if [ -n "$MNT" ]; then
        umount "$MNT"
        MNT=""
    fi
done
exit $status
