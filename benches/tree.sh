#!/usr/bin/env bash
# Benchmark: per-sample cost and peak RSS on a generated captured tree with
# many devices, processes and cgroups (default 10,000 of each), through
# `iolens --root DIR bench-sample --cgroups` and a two-report batch. The
# tree is written to a temp directory and removed afterwards. Each cgroup
# (cgroup v2 with the io controller) has io.stat lines for 2 devices,
# io.pressure and io.max, and holds one of the processes.
#
#   bash benches/tree.sh [DEVICES] [PROCESSES] [CGROUPS] [SAMPLES]
#   IOLENS_BIN=/path/to/iolens bash benches/tree.sh     # skip the build
set -euo pipefail
cd "$(dirname "$0")/.."
devs=${1:-10000}
procs=${2:-10000}
cgroups=${3:-10000}
samples=${4:-5}
if [ -z "${IOLENS_BIN:-}" ]; then
  cargo build --release --quiet
  IOLENS_BIN="${CARGO_TARGET_DIR:-target}/release/iolens"
fi
tmp=$(mktemp -d /tmp/iolens-tree.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
python3 - "$tmp" "$devs" "$procs" "$cgroups" <<'PY'
import os, sys
root, devs, procs, cgroups = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
p = os.path.join(root, "proc")
os.makedirs(os.path.join(p, "pressure"))
with open(os.path.join(p, "diskstats"), "w") as f:
    for i in range(devs):
        f.write(f" 259 {i} nvme{i}n1 {i*10} 0 {i*80} 5 {i} 0 {i*8} 3 0 7 8 0 0 0 0 0 0\n")
for i in range(devs):
    d = os.path.join(root, "sys/block", f"nvme{i}n1")
    os.makedirs(os.path.join(d, "queue"))
    for k, v in [("size", "2000000"), ("queue/rotational", "0"), ("queue/logical_block_size", "512"),
                 ("queue/physical_block_size", "4096"), ("queue/max_sectors_kb", "1280"), ("queue/scheduler", "[none]")]:
        open(os.path.join(d, k), "w").write(v + "\n")
open(os.path.join(p, "stat"), "w").write("cpu  100 0 50 1000 10 0 0 0 0 0\nprocs_blocked 0\n")
open(os.path.join(p, "meminfo"), "w").write("MemTotal: 1000 kB\nDirty: 10 kB\nWriteback: 0 kB\n")
open(os.path.join(p, "pressure/io"), "w").write("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
open(os.path.join(p, "mounts"), "w").write("/dev/nvme0n1 / ext4 rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
cg = os.path.join(root, "sys/fs/cgroup")
os.makedirs(cg)
open(os.path.join(cg, "cgroup.controllers"), "w").write("cpu io memory pids\n")
for i in range(cgroups):
    d = os.path.join(cg, "bench.slice", f"svc{i}.service")
    os.makedirs(d)
    open(os.path.join(d, "io.stat"), "w").write("".join(f"259:{m} rbytes={i*4096} wbytes={i*8192} rios={i} wios={2*i} dbytes=0 dios=0\n" for m in (0, 1)))
    open(os.path.join(d, "io.pressure"), "w").write("some avg10=0.00 avg60=0.00 avg300=0.00 total=12345\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=6789\n")
    open(os.path.join(d, "io.max"), "w").write("259:0 rbps=20000000 wbps=max riops=max wiops=max\n")
for pid in range(1000, 1000 + procs):
    d = os.path.join(p, str(pid))
    os.makedirs(d)
    open(os.path.join(d, "stat"), "w").write(f"{pid} (worker{pid % 97}) S 1 {pid} {pid} 0 -1 4194560 100 0 0 0 5 3 0 0 20 0 1 0 {pid * 3} 1000000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 7 0 0\n")
    open(os.path.join(d, "io"), "w").write(f"rchar: {pid}\nwchar: 0\nsyscr: 1\nsyscw: 0\nread_bytes: 0\nwrite_bytes: 0\ncancelled_write_bytes: 0\n")
    open(os.path.join(d, "cmdline"), "wb").write(b"/usr/bin/worker\0--id\0" + str(pid).encode() + b"\0")
    if cgroups:
        open(os.path.join(d, "cgroup"), "w").write(f"0::/bench.slice/svc{pid % cgroups}.service\n")
PY
echo "tree: $devs devices, $procs processes, $cgroups cgroups"
/usr/bin/time -f "peak RSS: %M KiB" "$IOLENS_BIN" --root "$tmp" bench-sample --samples "$samples" --cgroups
/usr/bin/time -f "batch, 2 reports: peak RSS %M KiB, %e s" "$IOLENS_BIN" --root "$tmp" --batch --interval 5 --count 2 >/dev/null
