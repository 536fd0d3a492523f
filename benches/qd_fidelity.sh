#!/usr/bin/env bash
# Queue-depth sweep fidelity: `iolens probe depth` against fio on the same
# loop device (direct I/O on, a temp file of random data).
#
# Each round runs, for each engine and each QD in 1, 4, 16 (QDS), the two
# tools back to back (odd rounds iolens first, even rounds fio first):
#   io_uring: `iolens probe depth DEV --qd QD --qd-time SECS`
#             vs fio ioengine=io_uring iodepth=QD
#   pread:    `iolens probe depth DEV --qd QD --qd-time SECS --pread`
#             vs fio ioengine=psync numjobs=QD (group_reporting)
# all 4 KiB random reads, direct=1, randrepeat=0, norandommap. It prints the
# per-round IOPS ratios iolens/fio and, per engine and depth, the median of
# the per-round ratios, which must lie within ±15% (TOL). Pairing the two
# tools seconds apart makes a busy machine (other builds, other I/O on the
# disk under the loop file) move both alike; both run at real-time priority
# (RT="chrt -f 10"; RT="" disables) so CPU contention does not pose as
# device latency.
#
# Needs root, fio, losetup, python3. Environment:
#   SIZE_MB (1024)  ROUNDS (5)  SECS (2)  QDS (1,4,16)  TOL (0.15)
#   DIR (/var/tmp)  IOLENS (target/release/iolens, built if missing)
# Cleans up the loop device and the file on every exit.
set -euo pipefail

SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-2}
QDS=${QDS:-1,4,16}
TOL=${TOL:-0.15}
DIR=${DIR:-/var/tmp}
cd "$(dirname "$0")/.."
IOLENS=${IOLENS:-target/release/iolens}
RT=${RT-chrt -f 10}

for tool in fio losetup python3; do
    command -v "$tool" >/dev/null || { echo "qd_fidelity: $tool is not installed" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "qd_fidelity: needs root (losetup)" >&2; exit 2; }
[ -x "$IOLENS" ] || cargo build --release --quiet

WORK=$(mktemp -d "$DIR/iolens-qd-fidelity.XXXXXX")
DEV=""
cleanup() {
    [ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

echo "qd_fidelity: writing $SIZE_MB MiB of random data to $WORK/backing.img" >&2
head -c "$((SIZE_MB << 20))" /dev/urandom >"$WORK/backing.img"
sync "$WORK/backing.img"
DEV=$(losetup -f --show -r --direct-io=on "$WORK/backing.img")
echo "qd_fidelity: $DEV, loop dio=$(cat /sys/block/"${DEV#/dev/}"/loop/dio 2>/dev/null || echo '?')" >&2
export XDG_STATE_HOME="$WORK/state"

fio_run() { # engine qd out
    local eng=(--ioengine=io_uring --iodepth="$2")
    [ "$1" = pread ] && eng=(--ioengine=psync --numjobs="$2" --group_reporting)
    $RT fio --name=qd --filename="$DEV" --readonly --rw=randread --bs=4k --direct=1 "${eng[@]}" \
        --randrepeat=0 --norandommap --time_based --runtime="$SECS" --output-format=json >"$3"
}
iolens_run() { # engine qd out
    local extra=()
    [ "$1" = pread ] && extra=(--pread)
    $RT "$IOLENS" probe depth "$DEV" --qd "$2" --qd-time "$SECS" --json "${extra[@]}" >"$3"
}

for r in $(seq 1 "$ROUNDS"); do
    echo "qd_fidelity: round $r/$ROUNDS" >&2
    for eng in uring pread; do
        for qd in ${QDS//,/ }; do
            if [ $((r % 2)) = 1 ]; then iolens_run "$eng" "$qd" "$WORK/iolens-$eng-$qd-$r.json"; fi
            fio_run "$eng" "$qd" "$WORK/fio-$eng-$qd-$r.json"
            if [ $((r % 2)) = 0 ]; then iolens_run "$eng" "$qd" "$WORK/iolens-$eng-$qd-$r.json"; fi
        done
    done
done

python3 - "$WORK" "$ROUNDS" "$QDS" "$TOL" <<'PY'
import json, statistics, sys
work, rounds, qds, tol = sys.argv[1], int(sys.argv[2]), [int(q) for q in sys.argv[3].split(",")], float(sys.argv[4])
def load(p):
    with open(p) as f:
        return json.load(f)
ok = True
for eng, name in (("uring", "io_uring vs fio io_uring"), ("pread", "pread pool vs fio psync numjobs=QD")):
    print(f"{name}:")
    ratios = {q: [] for q in qds}
    for r in range(1, rounds + 1):
        cells = []
        for q in qds:
            pts = {p["queue_depth"]: p for p in load(f"{work}/iolens-{eng}-{q}-{r}.json")["queue_depth_sweep"]["points"]}
            f = load(f"{work}/fio-{eng}-{q}-{r}.json")["jobs"][0]["read"]["iops"]
            i = pts.get(q, {}).get("iops")
            if i is None or f <= 0:
                cells.append(f"QD{q} n/a")
                continue
            ratios[q].append(i / f)
            cells.append(f"QD{q} {i:.0f}/{f:.0f}={i/f:.3f}")
        print(f"  round {r}: " + "  ".join(cells))
    for q in qds:
        if not ratios[q]:
            print(f"  QD{q}: no ratio  FAIL")
            ok = False
            continue
        m = statistics.median(ratios[q])
        good = abs(m - 1) <= tol
        ok &= good
        print(f"  QD{q}: median ratio {m:.3f} over {len(ratios[q])} rounds (target ±{tol*100:.0f}%)  {'PASS' if good else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
