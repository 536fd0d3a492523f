#!/usr/bin/env bash
# Measure what the dashboard costs on this machine:
#  - CPU of the iolens process over $SECS seconds (utime+stime from /proc),
#  - bytes written to the terminal per second at 120x40 (run under script(1)
#    inside a detached tmux session; the typescript grows by what the
#    terminal receives),
#  - time from start to the first full frame (script's timing log: delay
#    until the first chunk of more than 1000 bytes).
# Usage: scripts/dashboard-cost.sh [path/to/iolens]   (SECS=60 by default)
# Set BUSY=/dev/loopN to read that device with O_DIRECT during the run.
set -euo pipefail
BIN=$(realpath "${1:-target/release/iolens}")
SECS=${SECS:-60}
WARMUP=${WARMUP:-5}
command -v tmux >/dev/null && command -v script >/dev/null || { echo "skipped: needs tmux and script" >&2; exit 0; }
dir=$(mktemp -d)
sock="iolens-cost-$$"
busy_pid=""
cleanup() {
    # script(1) outlives its tmux pane, so end iolens (and with it script) first.
    [ -s "$dir/pid" ] && kill -TERM "$(cat "$dir/pid")" 2>/dev/null || true
    sleep 0.5
    tmux -L "$sock" kill-server 2>/dev/null || true
    [ -n "$busy_pid" ] && kill -- -"$busy_pid" 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT
cat > "$dir/run.sh" <<RUN
echo \$\$ > "$dir/pid"
exec "$BIN"
RUN
if [ -n "${BUSY:-}" ]; then
    setsid sh -c "while :; do dd if=$BUSY of=/dev/null bs=64k iflag=direct status=none || exit; done" &
    busy_pid=$!
fi
tmux -L "$sock" -f /dev/null new-session -d -x 120 -y 40 \
    "script -q -f -t 2>'$dir/timing' -c 'sh $dir/run.sh' '$dir/out'"
for _ in $(seq 50); do [ -s "$dir/pid" ] && break; sleep 0.1; done
pid=$(cat "$dir/pid")
sleep "$WARMUP"
ticks() { awk '{ sub(/.*\) /, ""); split($0, f, " "); print f[12] + f[13] }' "/proc/$pid/stat"; }
lastpid() { awk '{ print $5 }' /proc/loadavg; }
t0=$(ticks); b0=$(stat -c %s "$dir/out"); p0=$(lastpid)
# Sleep in steps, noting the most processes seen (sampling cost scales with it).
maxp=0
for _ in $(seq $((SECS / 5))); do
    sleep 5
    n=$(ls /proc | grep -c '^[0-9]')
    [ "$n" -gt "$maxp" ] && maxp=$n
done
t1=$(ticks); b1=$(stat -c %s "$dir/out"); p1=$(lastpid)
hz=$(getconf CLK_TCK)
procs=$(ls /proc | grep -c '^[0-9]')
echo "processes on the machine: $procs at the end, at most $maxp; about $(( (p1 - p0 + 4194304) % 4194304 )) started during the run; load $(cut -d' ' -f1-3 /proc/loadavg)"
awk -v a="$t0" -v b="$t1" -v hz="$hz" -v s="$SECS" 'BEGIN { printf "CPU: %.2f%% of one core over %d s (%d ticks)\n", (b - a) / hz / s * 100, s, b - a }'
awk -v a="$b0" -v b="$b1" -v s="$SECS" 'BEGIN { printf "terminal output: %.0f bytes/s at 120x40\n", (b - a) / s }'
awk '{ t += $1; if ($2 > 1000) { printf "first full frame: %.0f ms after start (%d bytes)\n", t * 1000, $2; exit } }' "$dir/timing"
