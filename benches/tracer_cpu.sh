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
