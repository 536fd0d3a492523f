#!/usr/bin/env bash
# What tracking a copy job costs the dashboard per sample (not run by CI).
#
# The same workload twice, alternating which goes first, ROUNDS times:
# `tar cf - -C TREE . | pv -q -L RATE > /dev/null` (a job: classified, its
# sources walked, its reads traced as root, its position and files done
# followed) and the same through a copy of tar's binary named `xtar` (the
# same reads, opens and closes, but no job: iolens does not know the name).
# The dashboard runs in tmux at a 1 s interval; its CPU over SECS seconds
# of the copy is the schedstat run time of all its threads plus the CPU of
# the children it reaped (the walker), in ms per sample.
#
# Needs root (the jobs' read trace), tmux, pv, python3. Environment:
#   FILES (default 2000)  MAX_KB (default 400: sizes 1..MAX_KB KiB)
#   RATE (default 20m)  SECS (default 12)  ROUNDS (default 3)
#   DIR (default /var/tmp)  IOLENS (default: target/release/iolens, built if missing)
set -euo pipefail

FILES=${FILES:-2000}; MAX_KB=${MAX_KB:-400}; RATE=${RATE:-20m}
SECS=${SECS:-12}; ROUNDS=${ROUNDS:-3}; DIR=${DIR:-/var/tmp}
cd "$(dirname "$0")/.."
IOLENS=${IOLENS:-target/release/iolens}
[ -x "$IOLENS" ] || cargo build --release --quiet
IOLENS=$(readlink -f "$IOLENS")
for t in tmux pv python3 tar; do
    command -v "$t" >/dev/null || { echo "needs $t" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || echo "note: not root: the jobs' reads are not traced, so this measures less than a root dashboard pays" >&2

W=$(mktemp -d "$DIR/iolens-jobcost.XXXXXX")
SESSION=""
cleanup() {
    [ -n "$SESSION" ] && tmux kill-session -t "$SESSION" 2>/dev/null
    pkill -f "pv -q -L $RATE" 2>/dev/null || true
    rm -rf "$W"
}
trap cleanup EXIT

python3 - "$W/tree" "$FILES" "$MAX_KB" <<'EOF'
import os, random, sys
root, n, max_kb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
random.seed(7)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 40))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(os.urandom(random.randint(1, max_kb) * 1024))
EOF
cp "$(command -v tar)" "$W/xtar"
TREE_MB=$(du -sm "$W/tree" | cut -f1)

cpu_ns() { # all threads' run time + reaped children's CPU, ns
    python3 - "$1" <<'EOF'
import os, sys
pid = sys.argv[1]
own = sum(int(open(f"/proc/{pid}/task/{t}/schedstat").read().split()[0]) for t in os.listdir(f"/proc/{pid}/task"))
st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
kids = (int(st[13]) + int(st[14])) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
print(own + kids)
EOF
}

# one TOOL: the dashboard's ms of CPU per sample while TOOL copies the tree
run() {
    local tool=$1 dpid c0 c1 job
    SESSION=iolens-jobcost-$$
    tmux new-session -d -s "$SESSION" -x 120 -y 40 "$IOLENS -i 1"
    sleep 3
    dpid=$(tmux list-panes -t "$SESSION" -F '#{pane_pid}')
    ( cd "$W" && exec "$tool" cf - -C tree . 2>/dev/null | pv -q -L "$RATE" > /dev/null ) &
    job=$!
    sleep 3
    c0=$(cpu_ns "$dpid")
    sleep "$SECS"
    c1=$(cpu_ns "$dpid")
    kill "$job" 2>/dev/null || true
    pkill -f "pv -q -L $RATE" 2>/dev/null || true
    wait "$job" 2>/dev/null || true
    tmux kill-session -t "$SESSION"; SESSION=""
    MS=$(python3 -c "print('%.3f' % (($c1 - $c0) / 1e6 / $SECS))")
}

echo "## Job tracking cost: $FILES files, $TREE_MB MiB, copied at $RATE/s; dashboard at 1 s, $SECS s per run, $ROUNDS rounds; $(ls /proc | grep -c '^[0-9]') processes"
JOB=""; NOJOB=""
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="tar xtar"; else order="xtar tar"; fi
    for t in $order; do
        if [ "$t" = tar ]; then run tar; JOB="$JOB $MS"; else run "$W/xtar"; NOJOB="$NOJOB $MS"; fi
        echo "run $r $t: $MS ms per sample"
    done
done
python3 - "$JOB" "$NOJOB" <<'EOF'
import statistics, sys
job = [float(x) for x in sys.argv[1].split()]
no = [float(x) for x in sys.argv[2].split()]
d = [a - b for a, b in zip(job, no)]
print("## tar (a job) %.3f ms, xtar (no job) %.3f ms per sample (medians); job - no job per round: %s; median %+.3f ms"
      % (statistics.median(job), statistics.median(no), " ".join("%+.3f" % x for x in d), statistics.median(d)))
EOF
