#!/usr/bin/env bash
# What windows keep of whole tracing, over long runs (not run by CI): the
# eight fio workloads of tests/trace_workloads.rs (direct reads on a loop
# device: sequential, random, request sizes, two streams, mixes) for SECS
# seconds each instead of the test's 3. Each run is traced whole, and its
# events are also taken as windows would have taken them (the default 200
# ms cycle at a 30% duty from two starting points, and at 10%: the same
# requests, so the run's own variance is out of the comparison); over a run
# this long the test holds the windows' read p50 and p99 within 10% of
# whole tracing's, besides the sequential share within 0.05 and the scaled
# reads within 10%. Then each workload runs again traced by the kernel in
# windows (`tracing_on`, 30% duty): sequential share, traced share and
# scaled reads against the device's own count.
#
# Needs root, fio, losetup (the test skips, saying why, without them).
# Environment: SECS (default 20). About 7 minutes at 20 s. Prints the
# comparisons and the test's verdict.
set -euo pipefail
cd "$(dirname "$0")/.."

SECS=${SECS:-20}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
IOLENS_WORKLOAD_SECS=$SECS cargo test --profile ci --test trace_workloads -- --nocapture >"$log" 2>&1 || status=$?
grep -E 'in emulated windows|in windows|: whole|skipped|^test |panicked|lost events|running it again' "$log" \
    | sed -E 's/Figures \{ seq: Some\(([0-9.]{5})[0-9]*\), p50: Some\(([0-9]+)\), p99: Some\(([0-9]+)\), reads: ([0-9]+), share: ([0-9.]{5})[0-9]* \}/seq \1, p50 \2 ns, p99 \3 ns, reads \4, share \5/g'
exit $status
