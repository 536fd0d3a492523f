#!/usr/bin/env bash
# Cost of the per-cgroup part of a sample with N cgroups (default 1000).
#
#   bash benches/cgroup.sh [N] [SAMPLES]
#
# Generates a v2 tree under a temporary root (io controller on; each cgroup
# with io.stat on 3 devices, io.pressure, io.max, io.weight and 2 sleeping
# processes in /proc, plus N/2 cgroups with no process and zero counters,
# which are skipped), then runs `iolens --root TREE bench-sample --cgroups`:
# CPU µs of the cgroup read per sample and of the whole model update. As
# root with the v1 blkio hierarchy it then also creates N empty real v1
# blkio cgroups (removed at the end) and measures the live sample with and
# without them.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000}
SAMPLES=${2:-20}
cargo build --release --quiet
bin=target/release/iolens
tree=$(mktemp -d /tmp/iolens-cgbench.XXXXXX)
live=""
cleanup() {
  rm -rf "$tree"
  if [ -n "$live" ] && [ -d "$live" ]; then
    find "$live" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true
    rmdir "$live" 2>/dev/null || true
  fi
}
trap cleanup EXIT

python3 - "$tree" "$N" <<'PY'
import os, sys
root, n = sys.argv[1], int(sys.argv[2])
def w(p, s):
    p = os.path.join(root, p)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write(s)
w("proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
w("proc/diskstats", "".join(f"   8 {16*i} sd{c} 1 0 8 1 1 0 8 1 0 1 2 0 0 0 0 0 0\n" for i, c in enumerate("abc")))
for c in "abc":
    w(f"sys/block/sd{c}/size", "2097152\n")
w("sys/fs/cgroup/cgroup.controllers", "cpu io memory pids\n")
psi = "some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=6789\n"
pid = 1000
for i in range(n):
    slice_ = f"sys/fs/cgroup/bench.slice/svc{i}.service"
    w(f"{slice_}/io.stat", "".join(f"8:{16*d} rbytes={i*4096} wbytes={i*8192} rios={i} wios={2*i} dbytes=0 dios=0\n" for d in range(3)))
    w(f"{slice_}/io.pressure", psi)
    w(f"{slice_}/io.max", "8:0 rbps=20000000 wbps=max riops=max wiops=max\n")
    w(f"{slice_}/io.weight", "default 100\n")
    for _ in range(2):
        pid += 1
        w(f"proc/{pid}/stat", f"{pid} (sleep) S 1 {pid} {pid} 0 -1 4194304 1 0 0 0 1 1 0 0 20 0 1 0 {pid} 5472256 240 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
        w(f"proc/{pid}/io", "rchar: 1\nwchar: 1\nsyscr: 1\nsyscw: 1\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
        w(f"proc/{pid}/cmdline", "sleep\0")
        w(f"proc/{pid}/cgroup", f"0::/bench.slice/svc{i}.service\n")
for i in range(n // 2):
    d = f"sys/fs/cgroup/idle.slice/idle{i}.scope"
    w(f"{d}/io.stat", "8:0 rbytes=0 wbytes=0 rios=0 wios=0 dbytes=0 dios=0\n")
    w(f"{d}/io.pressure", psi)
PY

echo "== generated v2 tree: $N cgroups with 2 processes each, $((N/2)) idle ones"
"$bin" --root "$tree" bench-sample --samples "$SAMPLES" --cgroups
echo "== the same tree without cgroups"
"$bin" --root "$tree" bench-sample --samples "$SAMPLES"

if [ "$(id -u)" = 0 ] && [ -d /sys/fs/cgroup/blkio ]; then
  live=/sys/fs/cgroup/blkio/iolens-bench-$$
  mkdir "$live"
  for i in $(seq 1 "$N"); do mkdir "$live/c$i"; done
  echo "== live system with $N extra empty v1 blkio cgroups"
  "$bin" bench-sample --samples "$SAMPLES" --cgroups
fi
