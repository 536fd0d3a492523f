//! Live per-cgroup I/O as root, on loop devices, with the real binary
//! (`iolens --json`): a v1 blkio cgroup throttled to 20,000,000 B/s of
//! reads is measured at its limit and marked so; a cgroup reading a loop
//! device that never had a limit is listed from the processes' own I/O.
//! The throttled cgroup is also checked in the dashboard (tmux): the
//! cgroups pane marks it at its limit and Enter shows the device split.
//! Skipped with a printed reason without root, without the v1 blkio
//! hierarchy or without losetup/dd/python3. Every cgroup, loop device and
//! process created is removed on every path (Drop guards).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::Duration;

#[path = "common/live.rs"]
mod live;
use live::tools::{self, need};
use live::{Attach, Cgroup, Loop};

#[path = "common/tmux.rs"]
mod tmux;

use live::BLKIO;
const LIMIT: u64 = 20_000_000;
const HELPER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/helpers/ioload.py");

/// The two tests share the blkio hierarchy's state: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Root, the v1 blkio hierarchy, and the tools; else the reason is printed.
fn ready() -> bool {
    if !tools::is_root() {
        eprintln!("skipped: creating cgroups and loop devices needs root");
        return false;
    }
    if !Path::new(BLKIO).join("blkio.throttle.read_bps_device").exists() {
        eprintln!("skipped: no cgroup v1 blkio hierarchy at {BLKIO} (v2 io tests not written)");
        return false;
    }
    need("losetup") && need("dd") && need("python3")
}

fn make_cgroup(tag: &str) -> Option<Cgroup> {
    let p = Path::new(BLKIO).join(format!("iolens-test-{}-{tag}", std::process::id()));
    match std::fs::create_dir(&p) {
        Ok(()) => Some(Cgroup(p)),
        Err(e) => {
            eprintln!("skipped: cannot create cgroup {}: {e}", p.display());
            None
        }
    }
}

fn attach(file: &Path) -> Option<Loop> {
    Loop::over_file(file, Attach::DIRECT)
        .map_err(|e| eprintln!("skipped: {e}"))
        .ok()
}

fn sparse_file(dir: &Path, size: u64) -> PathBuf {
    let p = dir.join("data");
    let f = std::fs::File::create(&p).unwrap();
    f.set_len(size).unwrap();
    p
}

fn majmin(l: &Loop) -> String {
    let (major, minor) = l.numbers().expect("the loop device in sysfs");
    format!("{major}:{minor}")
}

/// True when the device has lines in the root's throttle counters: a limit
/// was set on it at some time since it was created.
fn throttle_active(dev: &str) -> bool {
    std::fs::read_to_string(Path::new(BLKIO).join("blkio.throttle.io_service_bytes"))
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().next() == Some(dev))
}

/// Start `cmd` (a shell command) inside the cgroup.
fn spawn_in(cg: &Cgroup, cmd: &str) -> Kid {
    let procs = cg.0.join("cgroup.procs");
    let script = format!("echo $$ > {} && exec {cmd}", procs.display());
    Kid(Command::new("sh")
        .args(["-c", &script])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap())
}

/// Read bytes of a device in /proc/diskstats (sectors × 512).
fn diskstats_read_bytes(dev: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/diskstats").unwrap();
    let l = s.lines().find(|l| l.split_whitespace().nth(2) == Some(dev)).unwrap();
    l.split_whitespace().nth(5).unwrap().parse::<u64>().unwrap() * 512
}

/// The `iolens --json` report over `secs` seconds (the second one: the
/// first covers the short first interval), with the diskstats rate of
/// `dev` over the same run as ground truth.
fn iolens_json(secs: u32, dev: &str) -> (serde_json::Value, f64) {
    let b0 = diskstats_read_bytes(dev);
    let t0 = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_iolens"))
        .args(["--json", "--interval", &secs.to_string(), "--count", "2", "--top", "50"])
        .output()
        .unwrap();
    let truth = (diskstats_read_bytes(dev) - b0) as f64 / t0.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let last = text.lines().last().unwrap_or_default();
    (serde_json::from_str(last).unwrap(), truth)
}

fn row<'a>(v: &'a serde_json::Value, cg: &Cgroup) -> &'a serde_json::Value {
    let path = format!("/{}", cg.0.file_name().unwrap().to_str().unwrap());
    v["cgroups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["path"] == path.as_str())
        .unwrap_or_else(|| panic!("cgroup {path} not listed: {}", v["cgroups"]))
}

fn within(v: f64, want: f64, share: f64) -> bool {
    (v - want).abs() <= want * share
}

#[test]
fn throttled_cgroup_is_at_its_limit() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(lo) = attach(&sparse_file(dir.path(), 1 << 30)) else {
        return;
    };
    let Some(cg) = make_cgroup("thr") else { return };
    let dev = majmin(&lo);
    std::fs::write(cg.0.join("blkio.throttle.read_bps_device"), format!("{dev} {LIMIT}")).unwrap();
    let _dd = spawn_in(&cg, &format!("dd if={} of=/dev/null iflag=direct bs=64k", lo.dev));
    std::thread::sleep(Duration::from_secs(2));
    let (v, truth) = iolens_json(5, lo.name());
    eprintln!("diskstats {}: {truth:.0} B/s", lo.name());
    let r = row(&v, &cg);
    let d = r["devices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["device"] == lo.name())
        .unwrap_or_else(|| panic!("no {} in {r}", lo.name()));
    let rate = d["rates"]["read_bps"].as_f64().unwrap();
    eprintln!(
        "cgroup {}: {rate:.0} B/s on {} (kernel), row {} from {}, at_limit {}",
        r["path"], d["device"], r["rates"]["read_bps"], r["source"], d["at_limit"]
    );
    assert!(within(rate, LIMIT as f64, 0.10), "rate {rate} vs limit {LIMIT}");
    assert!(within(truth, LIMIT as f64, 0.10), "diskstats {truth}");
    assert_eq!(d["effective_limits"]["rbps"], LIMIT);
    assert_eq!(d["at_limit"], true);
    assert_eq!(d["at_limits"][0], "rbps");
    assert_eq!(r["at_limit"], true);
    // The row's own total is the same I/O, from the processes; where a
    // whole disk has v1 throttle counters (a throttle was once set on it
    // since boot) the row is from the kernel's counters over whole disks,
    // which leave the loop device out by design.
    let total = r["rates"]["read_bps"].as_f64().unwrap();
    if r["source"] == "kernel" {
        eprintln!(
            "skipped: the row total (from the kernel over whole disks, {total} B/s: a whole disk has v1 throttle counters)"
        );
    } else {
        assert!(within(total, LIMIT as f64, 0.10), "row total {total}");
    }
    assert_eq!(r["processes"]["count"], 1);
    dashboard_marks_it(&cg, lo.name());
}

/// The dashboard in tmux: `C` opens the cgroups pane, the throttled
/// cgroup's row reaches `AT` with about 20 MB/s, Enter shows the device
/// line at its limit.
fn dashboard_marks_it(cg: &Cgroup, dev: &str) {
    if !tools::have("tmux") {
        eprintln!("skipped: the dashboard part (tmux not installed)");
        return;
    }
    let path = format!("/{}", cg.0.file_name().unwrap().to_str().unwrap());
    let t = tmux::Tmux::start(&format!("TERM=tmux-256color {}", env!("CARGO_BIN_EXE_iolens")));
    t.wait_for("the dashboard", |s| s.contains("Processes"));
    t.keys(&["C"]);
    let s = t.wait_for("the cgroup at its limit", |s| {
        s.lines().any(|l| l.contains(&path) && l.contains(" AT "))
    });
    let line = s.lines().find(|l| l.contains(&path)).unwrap_or_default();
    eprintln!("dashboard: {}", line.trim());
    // READ/s is the first rate on the row: within 10% of the limit.
    let words: Vec<&str> = line.split_whitespace().collect();
    let read = words
        .windows(2)
        .find(|w| w[1] == "MB/s")
        .and_then(|w| w[0].parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no MB/s rate in {line}"));
    assert!(within(read * 1e6, LIMIT as f64, 0.10), "{line}");
    assert!(s.contains("Cgroups") && s.contains("cgroup v1 blkio"), "{s}");
    // Enter opens the selected row (the busiest first); step down until
    // the detail is the throttled cgroup's.
    let mut s = String::new();
    for _ in 0..20 {
        t.keys(&["Enter"]);
        s = t.wait_for("a cgroup detail", |s| s.contains("%LIMIT (3s)"));
        if s.lines().any(|l| l.contains("path") && l.contains(&path)) {
            break;
        }
        t.keys(&["Escape", "Down"]);
    }
    let d = s
        .lines()
        .find(|l| l.contains(&format!("│{dev} ")))
        .unwrap_or_else(|| panic!("no {dev} line in\n{s}"));
    eprintln!("detail: {}", d.trim());
    assert!(d.contains("AT rbps") && d.contains("rbps 20.0 MB/s"), "{d}");
    t.keys(&["Escape", "q"]);
}

#[test]
fn never_limited_device_is_listed_from_processes() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !ready() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = sparse_file(dir.path(), 1 << 30);
    // losetup -f takes the first free device; keep the throttle-active ones
    // attached so that the next attach moves on, up to the existing ones.
    let existing = std::fs::read_dir("/sys/block")
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("loop"))
        })
        .count();
    let mut held = Vec::new();
    let lo = loop {
        let Some(lo) = attach(&file) else { return };
        if !throttle_active(&majmin(&lo)) {
            break lo;
        }
        held.push(lo);
        if held.len() >= existing {
            eprintln!("skipped: every free loop device had a throttle limit set since it was created");
            return;
        }
    };
    let Some(cg) = make_cgroup("free") else { return };
    let _reader = spawn_in(&cg, &format!("python3 {HELPER} read {} 20000000", lo.dev));
    std::thread::sleep(Duration::from_secs(2));
    let (v, truth) = iolens_json(5, lo.name());
    let counted: Vec<String> = v["cgroups_info"]["counted_devices"]
        .as_array()
        .map(|a| a.iter().map(|d| d.as_str().unwrap_or("").to_string()).collect())
        .unwrap_or_default();
    if v["cgroups_info"]["hierarchy"] != "v1_blkio" || counted.iter().any(|d| !d.starts_with("loop")) {
        eprintln!("skipped: a whole disk has v1 throttle counters ({counted:?}): rows are not from processes");
        return;
    }
    assert!(!counted.contains(&lo.name().to_string()), "{counted:?}");
    let r = row(&v, &cg);
    let total = r["rates"]["read_bps"].as_f64().unwrap();
    eprintln!(
        "cgroup {}: {total:.0} B/s from {}; diskstats {truth:.0} B/s",
        r["path"], r["source"]
    );
    assert_eq!(r["source"], "processes");
    assert_eq!(r["rates"]["read_iops"], serde_json::Value::Null);
    assert!(r["devices"].as_array().unwrap().is_empty(), "{r}");
    assert!(truth > 10e6, "the reader did not read: {truth}");
    assert!(within(total, truth, 0.10), "row {total} vs diskstats {truth}");
    assert_eq!(r["at_limit"], false);
}
