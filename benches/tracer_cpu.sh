# Sourced by the benches that measure the tracer (not run by itself).

# CPU ns of the tracer thread (`iolens-trace`) of iolens $1, from its
# schedstat (0 when it has none).
tracer_ns() {
    local t
    for t in /proc/"$1"/task/*; do
        if [ "$(cat "$t/comm" 2>/dev/null)" = iolens-trace ]; then
            awk '{print $1}' "$t/schedstat"
            return
        fi
    done
    echo 0
}

# iolens's own count of its tracer's CPU (JSON `tracer_cpu_pct`, what the
# budget holds: the thread and the samples' reads of the buffers), the
# mean over the reports in file $1 after the first $2, in % of one core;
# "-" when none carries it.
counted_pct() {
    python3 - "$1" "$2" <<'PY'
import re, statistics, sys
v = [float(x) for x in re.findall(r'"tracer_cpu_pct":([0-9.eE+-]+)', open(sys.argv[1]).read())][int(sys.argv[2]):]
print(f"{statistics.fmean(v):.2f}" if v else "-")
PY
}
