//! Who did the I/O, through the real binary (`--json`) against real
//! processes reading a loop device with direct I/O: a reaped child's bytes
//! never on its parent's own row, an exited worker thread's bytes on its
//! process once, and short-lived `dd` runs (waited-for and orphaned)
//! accounting for the device's read bytes. Root for the loop device; the
//! non-root variant runs the workload and iolens as nobody (setpriv).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

#[path = "common/live.rs"]
mod live;
use live::tools::{is_root, need};
use live::{Attach, Loop};

const MIB: f64 = 1_048_576.0;

/// A loop device with direct I/O over a sparse file; its node's mode
/// restored on drop (a test lets others read it), then detached.
struct Node {
    lo: Loop,
    mode: u32,
}

impl Node {
    fn dev(&self) -> &str {
        &self.lo.dev
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = std::fs::set_permissions(self.dev(), std::fs::Permissions::from_mode(self.mode));
    }
}

fn loop_device(size: u64) -> Option<Node> {
    if !is_root() {
        eprintln!("skipped: a loop device needs root");
        return None;
    }
    if !need("losetup") || !need("python3") || !need("dd") {
        return None;
    }
    let lo = match Loop::over_new_file(|f| f.as_file().set_len(size), Attach::DIRECT) {
        Ok(lo) => lo,
        Err(e) => {
            eprintln!("skipped: {e}");
            return None;
        }
    };
    let mode = std::fs::metadata(&lo.dev).ok()?.permissions().mode() & 0o7777;
    Some(Node { lo, mode })
}

/// Read sectors of a block device from /proc/diskstats, in bytes.
fn device_read_bytes(dev: &str) -> u64 {
    let name = dev.trim_start_matches("/dev/");
    let stats = std::fs::read_to_string("/proc/diskstats").unwrap();
    stats
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&name)).then(|| f[5].parse::<u64>().unwrap() * 512)
        })
        .unwrap()
}

/// The binary, where nobody can run it.
fn binary_for_nobody(dir: &Path) -> PathBuf {
    let dst = dir.join("iolens");
    std::fs::copy(env!("CARGO_BIN_EXE_iolens"), &dst).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    dst
}

fn as_nobody(prog: &Path) -> Command {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(prog);
    c
}

/// Read `python` with `imports`, and dd, once before a measured run: on a
/// cold page cache a workload's own start-up reads are counted on its rows
/// (the worker test read 78.9 MiB of 64 after the caches were dropped,
/// 64.00 warm; the parent's own row 2.4 MiB in one interval).
fn warm(python: &str, imports: &str) {
    let py = Command::new(python).args(["-c", &format!("import {imports}")]).status();
    assert!(py.is_ok_and(|s| s.success()), "python3 did not start");
    let _ = Command::new("dd").arg("--version").stdout(Stdio::null()).status();
}

struct Kid(Option<Child>);

impl Drop for Kid {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Run iolens `--json` for `count` one-second intervals while `workload`
/// runs; the intervals as JSON values, and what the workload printed.
fn run(iolens: Command, mut workload: Command, count: u32) -> (Vec<serde_json::Value>, String) {
    let mut iolens = iolens;
    iolens
        .args([
            "--json",
            "--interval",
            "1",
            "--top",
            "100000",
            "--count",
            &count.to_string(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut io = Kid(Some(iolens.spawn().unwrap()));
    // Read its output while it runs: a full pipe would stall its sampling.
    let mut stdout = io.0.as_mut().unwrap().stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut stdout, &mut text).map(|_| text)
    });
    let w = workload.stdout(Stdio::piped()).output().unwrap();
    assert!(w.status.success(), "workload failed: {w:?}");
    let status = io.0.take().unwrap().wait().unwrap();
    assert!(status.success(), "iolens failed");
    let text = reader.join().unwrap().unwrap();
    let intervals: Vec<serde_json::Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Every interval about a second: iolens was never held up.
    for iv in &intervals {
        let dt = iv["interval_s"].as_f64().unwrap();
        assert!(dt < 2.5, "an interval of {dt} s");
    }
    (intervals, String::from_utf8_lossy(&w.stdout).into_owned())
}

/// Bytes read by rows matching `pick` in one interval (rate × length).
fn read_bytes(iv: &serde_json::Value, pick: impl Fn(&serde_json::Value) -> bool, field: &str) -> f64 {
    let dt = iv["interval_s"].as_f64().unwrap_or(0.0);
    iv["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| pick(p))
        .filter_map(|p| p[field]["read_bps"].as_f64())
        .map(|r| r * dt)
        .sum()
}

/// A parent starts a `dd` reading 100 MiB, lets it exit, reaps it 3 s
/// later, then waits a little.
const PARENT: &str = r#"
import os, subprocess, sys, time
time.sleep(2.5)
c = subprocess.Popen(["dd", "if=" + sys.argv[1], "of=/dev/null", "bs=1M", "count=100", "iflag=direct", "status=none"])
print(os.getpid(), c.pid, flush=True)
os.waitid(os.P_PID, c.pid, os.WEXITED | os.WNOWAIT)
time.sleep(3)
if c.wait() != 0:
    sys.exit("dd failed")
time.sleep(2.5)
"#;

fn parent_and_child(nobody: bool) {
    let Some(lo) = loop_device(128 << 20) else { return };
    if nobody && !need("setpriv") {
        return;
    }
    let bin_dir = tempfile::tempdir().unwrap();
    let (iolens, mut workload) = if nobody {
        // Let nobody read the device (the mode is restored on drop), after
        // udev is done with it (it may set the mode again on its event).
        let _ = Command::new("udevadm").arg("settle").status();
        std::fs::set_permissions(lo.dev(), std::fs::Permissions::from_mode(lo.mode | 0o004)).unwrap();
        let py = PathBuf::from("/usr/bin/python3");
        warm("/usr/bin/python3", "os, subprocess, sys, time");
        (as_nobody(&binary_for_nobody(bin_dir.path())), as_nobody(&py))
    } else {
        warm("python3", "os, subprocess, sys, time");
        (Command::new(env!("CARGO_BIN_EXE_iolens")), Command::new("python3"))
    };
    workload.args(["-c", PARENT, lo.dev()]);
    let (intervals, printed) = run(iolens, workload, 14);
    let ids: Vec<i64> = printed.split_whitespace().map(|s| s.parse().unwrap()).collect();
    let (parent, child) = (ids[0], ids[1]);
    let is = |pid: i64| move |p: &serde_json::Value| p["pid"].as_i64() == Some(pid);
    let total = 100.0 * MIB;
    let mut child_sum = 0.0;
    let mut arrived = Vec::new();
    for iv in &intervals {
        let own = read_bytes(iv, is(parent), "rates");
        assert!(own <= 0.01 * total, "parent's own row read {own} bytes in one interval");
        child_sum += read_bytes(iv, is(child), "rates");
        arrived.push(read_bytes(iv, is(parent), "children_rates"));
        let note = &iv["exit_records"];
        assert_eq!(note["active"].as_bool(), Some(!nobody), "{note}");
    }
    let mode = if nobody { "nobody" } else { "root" };
    for iv in &intervals {
        let rows: Vec<String> = iv["processes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| is(parent)(p) || is(child)(p))
            .map(|p| format!("{} {} {} {}", p["pid"], p["state"], p["rates"], p["children_rates"]))
            .collect();
        eprintln!("interval: {rows:?}");
    }
    eprintln!(
        "measured ({mode}): child's rows {:.1} MiB of 100, arrivals on the parent's ↳ line per interval {:?} MiB",
        child_sum / MIB,
        arrived
            .iter()
            .map(|a| (a / MIB * 10.0).round() / 10.0)
            .collect::<Vec<_>>()
    );
    if nobody {
        // The child's rows show what could be seen of it while it lived
        // (a zombie's counters are not readable without root); all of it
        // arrives once, in the interval of the reaping.
        assert!(child_sum <= 1.01 * total, "child rows: {child_sum}");
        let big: Vec<&f64> = arrived.iter().filter(|a| **a > 0.01 * total).collect();
        assert_eq!(big.len(), 1, "{arrived:?}");
        assert!(*big[0] >= 0.99 * total && *big[0] <= 1.01 * total, "{arrived:?}");
    } else {
        // The child's own rows carry its bytes, once (the reader reads
        // nothing else from storage); nothing is shown apart.
        assert!(
            (0.99 * total..=1.01 * total).contains(&child_sum),
            "child rows: {child_sum}"
        );
        assert!(arrived.iter().all(|a| *a == 0.0), "{arrived:?}");
    }
}

#[test]
fn reaped_child_is_on_its_own_row_not_the_parents_root() {
    parent_and_child(false);
}

#[test]
fn reaped_child_arrives_on_the_children_line_not_root() {
    parent_and_child(true);
}

/// A worker thread reads 64 MiB with direct I/O and exits; the process
/// lives on 3 s.
const WORKER: &str = r#"
import mmap, os, sys, threading, time
time.sleep(2.5)
def work():
    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 1 << 20)
    for i in range(64):
        os.preadv(fd, [buf], i << 20)
    os.close(fd)
t = threading.Thread(target=work)
t.start()
print(os.getpid(), flush=True)
t.join()
time.sleep(3)
"#;

#[test]
fn exited_worker_threads_bytes_stay_on_the_process_once() {
    let Some(lo) = loop_device(128 << 20) else { return };
    warm("python3", "mmap, os, sys, threading, time");
    let mut workload = Command::new("python3");
    workload.args(["-c", WORKER, lo.dev()]);
    let (intervals, printed) = run(Command::new(env!("CARGO_BIN_EXE_iolens")), workload, 9);
    let pid: i64 = printed.trim().parse().unwrap();
    let sum: f64 = intervals
        .iter()
        .map(|iv| read_bytes(iv, |p| p["pid"].as_i64() == Some(pid), "rates"))
        .sum();
    eprintln!(
        "measured (root): worker thread's process rows {:.2} MiB of 64",
        sum / MIB
    );
    // (Rate × interval: a float, so a hair under 64 MiB is exact.)
    assert!((63.99 * MIB..=65.0 * MIB).contains(&sum), "{sum}");
}

/// `dd bs=1M count=4 iflag=direct` about 10 times a second for 10 s,
/// every other one orphaned (its subshell exits, init reaps it).
const DD_LOOP: &str = r#"
dev=$1; end=$(( $(date +%s) + 10 )); i=0
sleep 2.5
while [ "$(date +%s)" -lt "$end" ] || [ $i -lt 20 ]; do
  if [ $((i % 2)) -eq 0 ]; then
    dd if="$dev" of=/dev/null bs=1M count=4 iflag=direct status=none
  else
    ( dd if="$dev" of=/dev/null bs=1M count=4 iflag=direct status=none & )
  fi
  i=$((i + 1)); sleep 0.1
done
sleep 2
echo $i
"#;

#[test]
fn short_lived_dd_runs_account_for_the_devices_reads() {
    let Some(lo) = loop_device(64 << 20) else { return };
    let before = device_read_bytes(lo.dev());
    let mut workload = Command::new("sh");
    workload.args(["-c", DD_LOOP, "sh", lo.dev()]);
    let (intervals, printed) = run(Command::new(env!("CARGO_BIN_EXE_iolens")), workload, 18);
    let device = (device_read_bytes(lo.dev()) - before) as f64;
    let dd: f64 = intervals
        .iter()
        .map(|iv| read_bytes(iv, |p| p["comm"] == "dd", "rates"))
        .sum();
    let exited = intervals
        .iter()
        .flat_map(|iv| iv["processes"].as_array().unwrap().iter())
        .filter(|p| p["comm"] == "dd" && p["exited"] == true)
        .count();
    eprintln!(
        "measured (root): {} dd runs, device read {:.1} MiB, dd rows {:.1} MiB = {:.1}%, {exited} exited dd rows",
        printed.trim(),
        device / MIB,
        dd / MIB,
        dd / device * 100.0
    );
    assert!(device >= 40.0 * 4.0 * MIB, "the loop read only {device} bytes");
    assert!(dd >= 0.95 * device && dd <= 1.01 * device, "dd rows {dd} of {device}");
}
