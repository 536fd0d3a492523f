#!/usr/bin/env bash
# Fidelity benchmark: iolens probe against fio on the same loop device.
#
# Attaches a read-only loop device with direct I/O on a temp file of random
# data, then alternates fio and iolens ROUNDS times:
#   random: fio psync 4k randread direct=1 iodepth=1 randrepeat=0 norandommap
#           vs `iolens probe rand DEV --thorough --duration SECS`
#   seq:    fio psync 1 MiB sequential read direct=1
#           vs `iolens probe sweep DEV` (overall MB/s of the timed zones)
# and prints, per round and as the median over the rounds, the ratios
# iolens/fio for IOPS, p50, p90, p99 and MB/s. Targets: IOPS and p50 within
# ±7%, p90 within ±10%, judged on the median of the per-round ratios: each
# round pairs two runs a few seconds apart, so a busy machine (other
# builds, other I/O on the disk under the loop file) moves both tools alike,
# and many short rounds average that noise out. Cleans up the loop device and the file on exit.
#
# Needs root, fio, losetup, python3. Environment:
#   SIZE_MB (default 1024)  ROUNDS (default 10)  SECS (default 2)
#   DIR (default /var/tmp)  IOLENS (default: target/release/iolens, built if missing)
set -euo pipefail

SIZE_MB=${SIZE_MB:-1024}
ROUNDS=${ROUNDS:-10}
SECS=${SECS:-2}
DIR=${DIR:-/var/tmp}
cd "$(dirname "$0")/.."
IOLENS=${IOLENS:-target/release/iolens}
# Real-time priority for both tools (RT=""  to disable): the box may be busy,
# and CPU contention shows up as latency in whichever tool runs at that moment.
RT=${RT-chrt -f 10}

for tool in fio losetup python3; do
    command -v "$tool" >/dev/null || { echo "fidelity: $tool is not installed" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "fidelity: needs root (losetup)" >&2; exit 2; }
[ -x "$IOLENS" ] || cargo build --release --quiet

WORK=$(mktemp -d "$DIR/iolens-fidelity.XXXXXX")
DEV=""
cleanup() {
    [ -n "$DEV" ] && losetup -d "$DEV" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

echo "fidelity: writing $SIZE_MB MiB of random data to $WORK/backing.img" >&2
head -c "$((SIZE_MB << 20))" /dev/urandom >"$WORK/backing.img"
sync "$WORK/backing.img"
DEV=$(losetup -f --show -r --direct-io=on "$WORK/backing.img")
echo "fidelity: $DEV ($(cat /sys/block/"${DEV#/dev/}"/loop/dio 2>/dev/null | sed 's/1/direct I\/O on/;s/0/direct I\/O OFF/'))" >&2
export XDG_STATE_HOME="$WORK/state"

fio_rand() {
    $RT fio --name=rand --filename="$DEV" --readonly --rw=randread --bs=4k --ioengine=psync \
        --direct=1 --iodepth=1 --randrepeat=0 --norandommap --time_based --runtime="$SECS" \
        --percentile_list=50:90:99 --output-format=json >"$1"
}
fio_seq() {
    $RT fio --name=seq --filename="$DEV" --readonly --rw=read --bs=1M --ioengine=psync \
        --direct=1 --iodepth=1 --size="$((SIZE_MB << 20))" --output-format=json >"$1"
}

for r in $(seq 1 "$ROUNDS"); do
    echo "fidelity: round $r/$ROUNDS" >&2
    fio_rand "$WORK/fio-rand-$r.json"
    $RT "$IOLENS" probe rand "$DEV" --thorough --duration "$SECS" --json >"$WORK/iolens-rand-$r.json"
    fio_seq "$WORK/fio-seq-$r.json"
    $RT "$IOLENS" probe sweep "$DEV" --json >"$WORK/iolens-seq-$r.json"
done

python3 - "$WORK" "$ROUNDS" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
def load(p):
    with open(p) as f:
        return json.load(f)
rows = []
for r in range(1, rounds + 1):
    fr = load(f"{work}/fio-rand-{r}.json")["jobs"][0]["read"]
    fs = load(f"{work}/fio-seq-{r}.json")["jobs"][0]["read"]
    ir = load(f"{work}/iolens-rand-{r}.json")["random"]
    isw = load(f"{work}/iolens-seq-{r}.json")["sweep"]
    pct = fr["clat_ns"]["percentile"]
    fio = {
        "IOPS": fr["iops"],
        "p50": pct["50.000000"] / 1e6,
        "p90": pct["90.000000"] / 1e6,
        "p99": pct["99.000000"] / 1e6,
        "MB/s": fs["bw_bytes"] / 1e6,
    }
    lat = ir["latency"]
    iol = {
        "IOPS": ir["iops"],
        "p50": lat["p50_ms"],
        "p90": lat["p90_ms"],
        "p99": lat["p99_ms"],
        "MB/s": isw["overall_mb_per_s"],
    }
    rows.append((fio, iol))

targets = {"IOPS": 0.07, "p50": 0.07, "p90": 0.10, "p99": None, "MB/s": None}
fmt = lambda k, v: f"{v:.0f}" if k == "IOPS" else (f"{v:.1f}" if k == "MB/s" else f"{v*1000:.1f}µs")
print("per round, iolens/fio:")
for i, (f, l) in enumerate(rows, 1):
    print(f"  round {i}: " + "  ".join(
        f"{k} {fmt(k, l[k])}/{fmt(k, f[k])}={l[k]/f[k]:.3f}" if l[k] is not None else f"{k} n/a" for k in targets))
print()
print(f"{'metric':<7}{'fio (median)':>14}{'iolens (median)':>17}{'ratio (median of rounds)':>26}  target  result")
ok = True
for k, tol in targets.items():
    fm = statistics.median(f[k] for f, _ in rows)
    lm = statistics.median(l[k] for _, l in rows if l[k] is not None)
    ratio = statistics.median(l[k] / f[k] for f, l in rows if l[k] is not None)
    if tol is None:
        verdict, t = "(info)", "  -"
    else:
        good = abs(ratio - 1) <= tol
        ok &= good
        verdict, t = ("PASS" if good else "FAIL"), f"±{tol*100:.0f}%"
    print(f"{k:<7}{fmt(k, fm):>14}{fmt(k, lm):>17}{ratio:26.3f}  {t:<6}  {verdict}")
sys.exit(0 if ok else 1)
EOF
