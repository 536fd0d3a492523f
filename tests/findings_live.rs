//! `iolens why` on conditions produced for real (root; run serialized with
//! the other live tests: `flock /tmp/iolens-live.lock cargo test --test
//! findings_live`):
//!
//! - slow device: a loop device (`losetup -r --direct-io=on`) over a file
//!   on a python3-fusepy filesystem whose reads sleep 20 ms
//!   (`tests/helpers/slowfs.py`), fio 4 KiB random reads at QD 1: `why`
//!   exits 1 with a slow_device finding naming the loop device, and the
//!   test measured the latency it produced (await from the device's stat
//!   over the run).
//! - tiny syscalls: `dd bs=512` names dd; `dd bs=1M` does not.
//! - idle control: `why` with nothing produced exits 0 (or names only
//!   conditions the test did not make, printed).
//! - sync-heavy: fio `fsync=1` on ext4 over a loop device (backed by
//!   tmpfs: a loop flush is an fsync of the backing file): the test
//!   measures the flushes/s it made (sysfs stat), `why` names fio.
//! - hung mount: `stat` on a FUSE mount whose getattr never answers
//!   (`tests/helpers/hangfs.py`): `why` names the mount and the stat.
//! - queue-bound: the slow device with `nr_requests` 4 under `none`, fio
//!   QD 32 (32 threads of psync reads, whose bios wait while the 4 tags
//!   are taken): `why` names the device and fio, its traced wait (bio queued
//!   → issue) above the device time; the test measured aqu-sz ≈ 4 and
//!   await from the device's stat.
//! - capped: `dd iflag=direct bs=64k` reading a loop device, then its
//!   v1 blkio cgroup throttled to 20 MB/s of reads (the throttle and the
//!   cgroup are removed at the end; never on vda): `why -i 0.5` names the
//!   loop device capped at about 20 MB/s (diskstats measured) with dd
//!   waiting, and cgroup_at_limit on the cgroup at that rate.
//! - maintenance job: `dd if=/dev/loopN bs=1M iflag=direct` on the slow
//!   device beside a fio QD 1 reader: `why` names dd (best-effort class)
//!   with fio waiting.
//!
//! - dirty throttling: a loop device (buffered) over the slow filesystem
//!   made writable (writes sleep 20 ms, reads 5 ms), its bdi held to
//!   4 MiB of dirty pages (`strict_limit`, `max_bytes`; put back at the
//!   end, no vm.dirty_* sysctl touched), `dd bs=1M` writing to it through
//!   the page cache: alone, dd is paused in balance_dirty_pages (its wchan,
//!   sampled) and `why` finds no dirty_throttled; with a fio QD 1 reader
//!   beside it, `why` names dd on the loop device with fio waiting, and
//!   the test measured the reader's await with and without dd.
//!
//! Without root, /dev/fuse, fusermount3, fusepy or fio the tests print
//! "skipped: <reason>" and pass. Every loop device, mount and process is
//! released however a test ends.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/live.rs"]
mod live;
use live::tools::{have, is_root};
use live::{Attach, Bg, Loop};

#[path = "common/blkio.rs"]
mod blkio;
use blkio::Cgroup;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");
const SLOWFS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/helpers/slowfs.py");
const PY: &str = "/usr/bin/python3";

/// The tests run one at a time: each makes (or must not see) load on the
/// whole machine, and `cargo test` runs a file's tests in parallel (the
/// idle control saw the slow-device test's fio).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn unavailable(tools: &[&str]) -> Option<String> {
    if !is_root() {
        return Some("not root (losetup, FUSE)".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    for t in tools {
        if !have(t) {
            return Some(format!("{t} not installed"));
        }
    }
    let fusepy = Command::new(PY)
        .args(["-c", "try:\n import fuse\nexcept ImportError:\n import fusepy"])
        .stderr(Stdio::null())
        .status();
    if !fusepy.is_ok_and(|s| s.success()) {
        return Some("python3-fusepy not installed".into());
    }
    None
}

fn mounted(mnt: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo")
        .is_ok_and(|m| m.lines().any(|l| l.split(' ').nth(4) == mnt.to_str()))
}

/// The slow filesystem; killed and unmounted on drop.
struct SlowMount {
    dir: tempfile::TempDir,
    daemon: Child,
}

impl SlowMount {
    fn start(delay_ms: u32) -> SlowMount {
        SlowMount::start_with(&[delay_ms])
    }

    /// Writable: reads sleep `read_ms`, writes `write_ms` (and are dropped).
    fn start_rw(read_ms: u32, write_ms: u32) -> SlowMount {
        SlowMount::start_with(&[read_ms, write_ms])
    }

    fn start_with(delays: &[u32]) -> SlowMount {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let daemon = Command::new(PY)
            .arg(SLOWFS)
            .arg(&mnt)
            .args(delays.iter().map(u32::to_string))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let m = SlowMount { dir, daemon };
        let end = Instant::now() + Duration::from_secs(15);
        while !mounted(&m.mnt()) {
            assert!(Instant::now() < end, "slowfs did not mount");
            std::thread::sleep(Duration::from_millis(50));
        }
        m
    }

    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for SlowMount {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let _ = Command::new("fusermount3").arg("-uz").arg(self.mnt()).status();
    }
}

/// (completed reads, read ticks ms) of a block device from sysfs.
fn read_stat(dev: &str) -> (u64, u64) {
    let t = std::fs::read_to_string(format!("/sys/block/{dev}/stat")).unwrap();
    let f: Vec<u64> = t.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    (f[0], f[3])
}

/// `iolens why --json` for `secs`: (exit code, the JSON).
fn why(secs: &str) -> (i32, serde_json::Value) {
    // No saved probe results (a basis of their own for some rules): an
    // empty state directory.
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["--config", "/dev/null", "why", "--json", "-d", secs])
        .env("XDG_STATE_HOME", state.path())
        .output()
        .unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "why failed ({code}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = serde_json::from_slice(&out.stdout).unwrap();
    (code, v)
}

fn findings<'a>(v: &'a serde_json::Value, rule: &str) -> Vec<&'a serde_json::Value> {
    v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .collect()
}

/// The evidence named `name` of finding `f`.
fn evidence<'a>(f: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    f["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no evidence {name}: {f}"))
}

/// fio 4 KiB random direct reads at QD 1 on `dev` (read-only, up to a
/// minute; killed on drop).
fn qd1_reader(name: &str, dev: &str) -> Bg {
    Bg::spawn(Command::new("fio").args([
        &format!("--name={name}"),
        &format!("--filename={dev}"),
        "--rw=randread",
        "--bs=4k",
        "--iodepth=1",
        "--direct=1",
        "--readonly",
        "--time_based",
        "--runtime=60",
    ]))
}

#[test]
fn slow_device_is_found_and_named() {
    let _serial = serial();
    if let Some(r) = unavailable(&["fio", "losetup", "fusermount3"]) {
        eprintln!("skipped: {r}");
        return;
    }
    let fs = SlowMount::start(20);
    let lo = Loop::over_file(&fs.mnt().join("data"), Attach::READ_ONLY_DIRECT).unwrap();
    let name = lo.name().to_string();
    let _fio = qd1_reader("slow", &lo.dev);
    std::thread::sleep(Duration::from_secs(1));
    let before = read_stat(&name);
    let (code, v) = why("6");
    let after = read_stat(&name);
    let (ios, ticks) = (after.0 - before.0, after.1 - before.1);
    assert!(ios > 0, "fio did no reads on {name}");
    let await_ms = ticks as f64 / ios as f64;
    eprintln!("{name}: {ios} reads, await {await_ms:.1} ms measured over the why run; why exit {code}");
    assert!(await_ms >= 15.0, "the slow filesystem made only {await_ms:.1} ms");
    let slow = findings(&v, "slow_device");
    eprintln!("{}", serde_json::to_string_pretty(&slow).unwrap());
    assert_eq!(code, 1, "why must exit 1: {v}");
    let f = slow
        .iter()
        .find(|f| f["subject"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no slow_device finding on {name}: {v}"));
    let lat = f["evidence"][0]["value"].as_f64().unwrap();
    assert!(lat >= 15.0, "evidence {lat} ms");
    assert!(
        f["culprits"].as_array().unwrap().iter().any(|c| c["comm"] == "fio"),
        "fio not named: {f}"
    );
}

#[test]
fn tiny_syscalls_name_dd_bs512_not_bs1m() {
    let _serial = serial();
    if let Some(r) = unavailable(&["dd"]) {
        eprintln!("skipped: {r}");
        return;
    }
    let small = Bg::spawn(Command::new("dd").args(["if=/dev/zero", "of=/dev/null", "bs=512"]));
    let big = Bg::spawn(Command::new("dd").args(["if=/dev/zero", "of=/dev/null", "bs=1M"]));
    let (code, v) = why("5");
    let tiny = findings(&v, "tiny_syscalls");
    eprintln!("why exit {code}: {}", serde_json::to_string_pretty(&tiny).unwrap());
    let pid = |f: &&serde_json::Value| f["subject"]["pid"].as_i64();
    assert!(
        tiny.iter().any(|f| pid(f) == Some(i64::from(small.pid()))),
        "dd bs=512 not found: {v}"
    );
    assert!(
        !tiny.iter().any(|f| pid(f) == Some(i64::from(big.pid()))),
        "dd bs=1M found: {v}"
    );
    let f = tiny.iter().find(|f| pid(f) == Some(i64::from(small.pid()))).unwrap();
    let per_call = f["evidence"][1]["value"].as_f64().unwrap();
    assert!((per_call - 512.0).abs() < 1.0, "bytes per call {per_call}");
    assert_eq!(code, 1);
}

#[test]
fn idle_control_has_no_findings() {
    let _serial = serial();
    if !is_root() {
        eprintln!("skipped: not root (tracing)");
        return;
    }
    let (code, v) = why("5");
    eprintln!("why exit {code}: {v}");
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(code, 0);
}

/// Root and `tools`, without FUSE.
fn missing(tools: &[&str]) -> Option<String> {
    if !is_root() {
        return Some("not root (losetup, mount, tracing)".into());
    }
    tools.iter().find(|t| !have(t)).map(|t| format!("{t} not installed"))
}

/// A filesystem mounted at a temp dir; unmounted on drop.
struct Mounted(tempfile::TempDir);

impl Drop for Mounted {
    fn drop(&mut self) {
        // fio's job process may still be exiting.
        for _ in 0..50 {
            let ok = Command::new("umount").arg(self.0.path()).stderr(Stdio::null()).status();
            if ok.is_ok_and(|s| s.success()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// Flushes completed by a block device (sysfs stat field 16; 0 on kernels
/// without it).
fn flushes(dev: &str) -> u64 {
    let t = std::fs::read_to_string(format!("/sys/block/{dev}/stat")).unwrap();
    t.split_whitespace().nth(15).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[test]
fn sync_heavy_names_fio_fsync_1_on_ext4_over_loop() {
    let _serial = serial();
    if let Some(r) = missing(&["fio", "losetup", "mkfs.ext4"]) {
        eprintln!("skipped: {r}");
        return;
    }
    // Backed by tmpfs: a flush of the loop device is an fsync of its
    // backing file, which on a busy disk takes seconds.
    let file = tempfile::NamedTempFile::new_in("/dev/shm").unwrap();
    file.as_file().set_len(128 << 20).unwrap();
    let how = Attach {
        direct: false,
        ..Attach::DIRECT
    };
    let lo = Loop::over_file(file.path(), how).unwrap();
    let name = lo.name().to_string();
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", &lo.dev])
        .status()
        .unwrap();
    assert!(mkfs.success(), "mkfs.ext4 {}", lo.dev);
    let mnt = Mounted(tempfile::tempdir().unwrap());
    let ok = Command::new("mount").arg(&lo.dev).arg(mnt.0.path()).status().unwrap();
    assert!(ok.success(), "mount {}", lo.dev);
    // fio ends by itself: killed in the middle of an fsync, its job
    // process waited minutes for the journal in one run.
    let fio = Bg::spawn(Command::new("fio").args([
        "--name=sync",
        &format!("--directory={}", mnt.0.path().display()),
        "--rw=write",
        "--bs=4k",
        "--size=16M",
        "--fsync=1",
        "--time_based",
        "--runtime=8",
    ]));
    std::thread::sleep(Duration::from_secs(1));
    let (f0, t0) = (flushes(&name), Instant::now());
    let (code, v) = why("5");
    let rate = (flushes(&name) - f0) as f64 / t0.elapsed().as_secs_f64();
    eprintln!("{name}: {rate:.0} flushes/s measured over the why run; why exit {code}");
    assert!(rate >= 60.0, "fio fsync=1 made only {rate:.0} flushes/s");
    let f = findings(&v, "sync_heavy");
    eprintln!("{}", serde_json::to_string_pretty(&f).unwrap());
    let f = f
        .iter()
        .find(|f| f["subject"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no sync_heavy finding on {name}: {v}"));
    assert!(f["evidence"][0]["value"].as_f64().unwrap() >= 50.0, "{f}");
    assert!(
        f["culprits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["pid"] == i64::from(fio.pid()) || c["comm"] == "fio"),
        "fio not named: {f}"
    );
    assert_eq!(code, 1);
    let mut fio = fio;
    let end = Instant::now() + Duration::from_secs(15);
    while fio.0.try_wait().ok().flatten().is_none() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(100));
    }
}

const HANGFS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/helpers/hangfs.py");

/// The hanging filesystem (`tests/helpers/hangfs.py`) with its flag set;
/// on drop the daemon is killed first (which frees every waiter), then the
/// mount is detached.
struct Hung {
    dir: tempfile::TempDir,
    daemon: Child,
}

impl Hung {
    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }
}

impl Drop for Hung {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let _ = Command::new("fusermount3").arg("-uz").arg(self.mnt()).status();
    }
}

#[test]
fn hung_mount_names_the_mount_and_the_blocked_stat() {
    let _serial = serial();
    if let Some(r) = unavailable(&["fusermount3", "stat"]) {
        eprintln!("skipped: {r}");
        return;
    }
    // Declared first, dropped last: after the daemon is dead.
    let mut stuck: Option<Bg> = None;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("mnt")).unwrap();
    let daemon = Command::new(PY)
        .arg(HANGFS)
        .arg(dir.path().join("mnt"))
        .arg(dir.path().join("flag"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let h = Hung { dir, daemon };
    let end = Instant::now() + Duration::from_secs(10);
    while !mounted(&h.mnt()) {
        assert!(Instant::now() < end, "hangfs did not mount");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(h.dir.path().join("flag"), b"").unwrap();
    let stat = stuck.insert(Bg::spawn(Command::new("stat").arg(h.mnt().join("data"))));
    let pid = i64::from(stat.pid());
    let (code, v) = why("7");
    let f = findings(&v, "hung_mount");
    eprintln!("why exit {code}: {}", serde_json::to_string_pretty(&f).unwrap());
    let mnt = h.mnt().display().to_string();
    let f = f
        .iter()
        .find(|f| f["subject"]["name"] == mnt.as_str() || f["subject"]["path"] == mnt.as_str())
        .unwrap_or_else(|| panic!("no hung_mount finding on {mnt}: {v}"));
    assert!(
        f["culprits"].as_array().unwrap().iter().any(|c| c["pid"] == pid),
        "the blocked stat (PID {pid}) not named: {f}"
    );
    assert_eq!(code, 1);
    drop(h);
}

#[test]
fn maintenance_dd_at_best_effort_beside_a_waiting_reader() {
    let _serial = serial();
    if let Some(r) = unavailable(&["fio", "losetup", "fusermount3", "dd"]) {
        eprintln!("skipped: {r}");
        return;
    }
    let fs = SlowMount::start(20);
    let lo = Loop::over_file(&fs.mnt().join("data"), Attach::READ_ONLY_DIRECT).unwrap();
    let name = lo.name().to_string();
    // A device copy (maintenance by the job classifier) in 1 MiB direct
    // reads, split into several requests each, beside a QD 1 reader.
    let dd = Bg::spawn(Command::new("dd").args([&format!("if={}", lo.dev), "of=/dev/null", "bs=1M", "iflag=direct"]));
    let _reader = qd1_reader("reader", &lo.dev);
    std::thread::sleep(Duration::from_secs(1));
    let (code, v) = why("6");
    let f = findings(&v, "maintenance_not_idle");
    eprintln!("why exit {code}: {}", serde_json::to_string_pretty(&f).unwrap());
    let f = f
        .iter()
        .find(|f| f["subject"]["pid"] == i64::from(dd.pid()))
        .unwrap_or_else(|| panic!("dd (PID {}) not found: {v}", dd.pid()));
    let c = f["culprits"].as_array().unwrap();
    assert!(
        c.iter().any(|c| c["comm"] == "fio"),
        "the waiting reader not named: {f}"
    );
    assert!(f["text"].as_str().unwrap().contains(&name), "{f}");
    assert_eq!(code, 1);
}

/// A sysfs value of a block device's queue, put back on drop.
struct QueueKnob {
    path: PathBuf,
    old: String,
}

impl QueueKnob {
    fn set(dev: &str, knob: &str, value: &str) -> QueueKnob {
        let path = PathBuf::from(format!("/sys/block/{dev}/queue/{knob}"));
        let old = std::fs::read_to_string(&path).unwrap().trim().to_string();
        std::fs::write(&path, value).unwrap();
        QueueKnob { path, old }
    }
}

impl Drop for QueueKnob {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.path, &self.old);
    }
}

/// (completed reads, read ticks ms, weighted ticks ms) of a block device.
fn queue_stat(dev: &str) -> (u64, u64, u64) {
    let t = std::fs::read_to_string(format!("/sys/block/{dev}/stat")).unwrap();
    let f: Vec<u64> = t.split_whitespace().filter_map(|v| v.parse().ok()).collect();
    (f[0], f[3], f[10])
}

#[test]
fn queue_bound_slow_device_with_4_tags_names_fio() {
    let _serial = serial();
    if let Some(r) = unavailable(&["fio", "losetup", "fusermount3"]) {
        eprintln!("skipped: {r}");
        return;
    }
    let fs = SlowMount::start(20);
    let lo = Loop::over_file(&fs.mnt().join("data"), Attach::READ_ONLY_DIRECT).unwrap();
    let name = lo.name().to_string();
    let _sched = QueueKnob::set(&name, "scheduler", "none");
    let _tags = QueueKnob::set(&name, "nr_requests", "4");
    // QD 32 as 32 threads at QD 1 each: every one of them past the 4
    // tags waits in the tag allocation with its bio queued. (io_uring at
    // --iodepth=32 waits there only through its io-wq workers, 4 per CPU,
    // the rest inside io_uring before any bio exists: its traced wait
    // depends on the machine's CPU count.)
    let fio = Bg::spawn(Command::new("fio").args([
        "--name=deep",
        &format!("--filename={}", lo.dev),
        "--rw=randread",
        "--bs=4k",
        "--ioengine=psync",
        "--numjobs=32",
        "--thread",
        "--direct=1",
        "--readonly",
        "--time_based",
        "--runtime=60",
    ]));
    std::thread::sleep(Duration::from_secs(1));
    let (before, t0) = (queue_stat(&name), Instant::now());
    let (code, v) = why("6");
    let after = queue_stat(&name);
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    let (ios, ticks) = (after.0 - before.0, after.1 - before.1);
    assert!(ios > 0, "fio did no reads on {name}");
    let aqu = (after.2 - before.2) as f64 / ms;
    eprintln!(
        "{name}: {ios} reads, await {:.1} ms, aqu-sz {aqu:.2} measured over the why run; why exit {code}",
        ticks as f64 / ios as f64
    );
    assert!(aqu >= 3.0, "the 4 tags were not kept busy: aqu-sz {aqu:.2}");
    let q = findings(&v, "queue_bound");
    eprintln!("{}", serde_json::to_string_pretty(&q).unwrap());
    let f = q
        .iter()
        .find(|f| f["subject"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no queue_bound finding on {name}: {v}"));
    let (wait, device) = (
        f["evidence"][0]["value"].as_f64().unwrap(),
        f["evidence"][1]["value"].as_f64().unwrap(),
    );
    assert!(
        f["evidence"][0]["source"].as_str().unwrap().contains("block_bio_queue"),
        "{f}"
    );
    assert!(wait >= device && wait >= 20.0, "wait {wait} ms, device {device} ms");
    // fio's jobs are threads of one process, named fio; the process is
    // named by its PID.
    let is_fio = |c: &serde_json::Value| {
        c["comm"] == "fio"
            || c["pid"]
                .as_i64()
                .is_some_and(|p| std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|s| s.trim() == "fio"))
    };
    assert!(
        f["culprits"].as_array().unwrap().iter().any(is_fio),
        "fio (PID {} or its job) not named: {f}",
        fio.pid()
    );
    assert_eq!(code, 1);
}

/// Read bytes of a device in /proc/diskstats (sectors × 512).
fn read_bytes(dev: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/diskstats").unwrap();
    let l = s.lines().find(|l| l.split_whitespace().nth(2) == Some(dev)).unwrap();
    l.split_whitespace().nth(5).unwrap().parse::<u64>().unwrap() * 512
}

/// The throttle the capped cases set, B/s of reads.
const LIMIT: u64 = 20_000_000;

/// The capped cases' device: a loop device over a 64 GiB sparse file
/// (dd never reaches its end, at 1-2 GB/s unthrottled) and a v1 blkio
/// cgroup to throttle it in; `None` (the reason printed) where either is
/// not to be had.
struct CappedRig {
    cg: Cgroup,
    lo: Loop,
    name: String,
    major: u32,
    minor: u32,
    dir: tempfile::TempDir,
}

impl CappedRig {
    fn new(tag: &str) -> Option<CappedRig> {
        if let Some(r) = missing(&["losetup", "dd"]).or_else(Cgroup::unavailable) {
            eprintln!("skipped: {r}");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::File::create(&data).unwrap().set_len(64 << 30).unwrap();
        let lo = Loop::over_file(&data, Attach::DIRECT).unwrap();
        let name = lo.name().to_string();
        let (major, minor) = lo.numbers().unwrap();
        assert_eq!(major, 7, "throttles only a loop device");
        let cg = Cgroup::new(tag).unwrap();
        Some(CappedRig {
            cg,
            lo,
            name,
            major,
            minor,
            dir,
        })
    }

    /// `dd iflag=direct bs=64k` reading the device, in the cgroup.
    fn dd(&self) -> Bg {
        Bg::spawn(Command::new("sh").args([
            "-c",
            &format!(
                "echo $$ > {} && exec dd if={} of=/dev/null iflag=direct bs=64k",
                self.cg.procs().display(),
                self.lo.dev
            ),
        ]))
    }
}

#[test]
fn capped_loop_device_under_a_blkio_throttle_set_while_watched() {
    let _serial = serial();
    let Some(rig) = CappedRig::new("capped") else { return };
    let CappedRig {
        ref name,
        major,
        minor,
        ref cg,
        ..
    } = rig;
    let dd = rig.dd();
    // iolens sees the unthrottled rate first (its highest this session),
    // then the throttle binds from 2 s on. The file is sparse and large
    // enough that dd never reaches its end (1-2 GB/s unthrottled).
    let why = Command::new(BIN)
        .args(["--config", "/dev/null", "-i", "0.5", "why", "--json", "-d", "11"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    cg.throttle_reads(major, minor, LIMIT).unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let (b0, t0) = (read_bytes(name), Instant::now());
    let out = why.wait_with_output().unwrap();
    let truth = (read_bytes(name) - b0) as f64 / t0.elapsed().as_secs_f64();
    // Remove the throttle before anything can fail (the cgroup on drop).
    cg.throttle_reads(major, minor, 0).unwrap();
    drop(dd);
    let code = out.status.code().unwrap_or(-1);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("{name}: {truth:.0} B/s by diskstats under the throttle; why exit {code}");
    assert!(
        (truth - LIMIT as f64).abs() <= LIMIT as f64 * 0.1,
        "throttled rate {truth}"
    );
    let f = findings(&v, "capped_device");
    eprintln!("{}", serde_json::to_string_pretty(&f).unwrap());
    let f = f
        .iter()
        .find(|f| f["subject"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no capped_device finding on {name}: {v}"));
    let level = f["evidence"][0]["value"].as_f64().unwrap();
    let peak = f["evidence"][1]["value"].as_f64().unwrap();
    assert!((level - LIMIT as f64).abs() <= LIMIT as f64 * 0.1, "level {level}");
    assert!(peak >= level / 0.8, "peak {peak}");
    assert!(f["text"].as_str().unwrap().contains("throttle"), "{f}");
    assert!(
        f["culprits"].as_array().unwrap().iter().any(|c| c["comm"] == "dd"),
        "dd not named: {f}"
    );
    // The same throttle seen from the cgroup collector: cgroup_at_limit
    // on the test's cgroup at about the limit, dd named.
    let path = format!("/{}", cg.0.file_name().unwrap().to_string_lossy());
    let at = findings(&v, "cgroup_at_limit");
    let g = at
        .iter()
        .find(|f| f["subject"]["path"] == path.as_str())
        .unwrap_or_else(|| panic!("no cgroup_at_limit finding on {path}: {v}"));
    assert_eq!(evidence(g, "limit")["value"].as_f64(), Some(LIMIT as f64), "{g}");
    let rate = evidence(g, "rate")["value"].as_f64().unwrap();
    assert!(
        (rate - truth).abs() <= truth * 0.1,
        "cgroup rate {rate} vs diskstats {truth}"
    );
    assert!(
        g["culprits"].as_array().unwrap().iter().any(|c| c["comm"] == "dd"),
        "dd not named: {g}"
    );
    assert_eq!(code, 1);
}

/// A bdi held to `max_bytes` of dirty pages with `strict_limit` (so it is
/// throttled however little of the system's dirty memory is used); both
/// put back on drop (the ratio through `max_ratio_fine`: `max_bytes`
/// reads back as a share of the current dirty limit, which cannot always
/// be written back).
struct BdiLimit {
    dir: PathBuf,
    strict: String,
    ratio: String,
}

impl BdiLimit {
    fn set(major: u32, minor: u32, max_bytes: u64) -> Result<BdiLimit, String> {
        let dir = PathBuf::from(format!("/sys/class/bdi/{major}:{minor}"));
        let read = |f: &str| {
            std::fs::read_to_string(dir.join(f))
                .map(|s| s.trim().to_string())
                .map_err(|e| format!("{}/{f}: {e}", dir.display()))
        };
        let (strict, ratio) = (read("strict_limit")?, read("max_ratio_fine")?);
        let l = BdiLimit { dir, strict, ratio };
        std::fs::write(l.dir.join("strict_limit"), "1").map_err(|e| format!("strict_limit: {e}"))?;
        std::fs::write(l.dir.join("max_bytes"), max_bytes.to_string()).map_err(|e| format!("max_bytes: {e}"))?;
        Ok(l)
    }
}

impl Drop for BdiLimit {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("max_ratio_fine"), &self.ratio);
        let _ = std::fs::write(self.dir.join("strict_limit"), &self.strict);
    }
}

/// Samples `/proc/<pid>/wchan` every 100 ms until stopped: (samples in
/// balance_dirty_pages, samples).
struct Wchan {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    join: std::thread::JoinHandle<(u32, u32)>,
}

impl Wchan {
    fn watch(pid: u32) -> Wchan {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let join = std::thread::spawn(move || {
            let (mut hit, mut n) = (0, 0);
            while !s.load(Ordering::Relaxed) {
                if let Ok(w) = std::fs::read_to_string(format!("/proc/{pid}/wchan")) {
                    n += 1;
                    hit += u32::from(w.contains("balance_dirty_pages"));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            (hit, n)
        });
        Wchan { stop, join }
    }

    fn end(self) -> (u32, u32) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.join.join().unwrap()
    }
}

/// The `some` total of `/proc/pressure/io`, µs (0 without PSI).
fn psi_io_some_us() -> u64 {
    let t = std::fs::read_to_string("/proc/pressure/io").unwrap_or_default();
    t.lines()
        .find(|l| l.starts_with("some "))
        .and_then(|l| l.split_whitespace().find_map(|f| f.strip_prefix("total=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Read await (ms) of a device over `f`: (reads, await).
fn read_await(dev: &str, f: impl FnOnce()) -> (u64, f64) {
    let before = read_stat(dev);
    f();
    let after = read_stat(dev);
    let ios = after.0 - before.0;
    (ios, (after.1 - before.1) as f64 / ios.max(1) as f64)
}

#[test]
fn dirty_throttled_dd_beside_a_reader_but_not_alone() {
    let _serial = serial();
    if let Some(r) = unavailable(&["fio", "losetup", "fusermount3", "dd"]) {
        eprintln!("skipped: {r}");
        return;
    }
    let fs = SlowMount::start_rw(5, 20);
    let buffered = Attach {
        direct: false,
        ..Attach::DIRECT
    };
    let lo = Loop::over_file(&fs.mnt().join("data"), buffered).unwrap();
    let name = lo.name().to_string();
    let (major, minor) = lo.numbers().unwrap();
    let _limit = match BdiLimit::set(major, minor, 4 << 20) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("skipped: no per-bdi strict dirty limit ({e})");
            return;
        }
    };
    let dd = Bg::spawn(Command::new("dd").args(["if=/dev/zero", &format!("of={}", lo.dev), "bs=1M"]));
    let dd_pid = i64::from(dd.pid());
    std::thread::sleep(Duration::from_millis(500));
    // Alone: paused by design, nobody else waits.
    let w = Wchan::watch(dd.pid());
    let (some0, t0) = (psi_io_some_us(), Instant::now());
    let (code, v) = why("5");
    let some = (psi_io_some_us() - some0) as f64 / t0.elapsed().as_micros() as f64 * 100.0;
    let (hit, n) = w.end();
    let alone = findings(&v, "dirty_throttled");
    eprintln!(
        "dd alone: in balance_dirty_pages {hit} of {n} samples, PSI io some {some:.0}%; why exit {code}, dirty_throttled {alone:?}"
    );
    assert!(n >= 20 && hit * 2 > n, "dd was not throttled: {hit} of {n}");
    assert!(alone.is_empty(), "a lone throttled writer was found: {v}");
    // With a reader on the device.
    let reader = qd1_reader("reader", &lo.dev);
    std::thread::sleep(Duration::from_millis(300));
    let mut out = None;
    let (ios, with_dd) = read_await(&name, || out = Some(why("5")));
    let (code, v) = out.unwrap();
    let f = findings(&v, "dirty_throttled");
    eprintln!("{}", serde_json::to_string_pretty(&f).unwrap());
    drop(dd);
    let (ios_alone, alone_ms) = read_await(&name, || std::thread::sleep(Duration::from_secs(1)));
    drop(reader);
    eprintln!(
        "{name}: reader await {with_dd:.1} ms ({ios} reads) beside dd, {alone_ms:.1} ms ({ios_alone} reads) alone; why exit {code}"
    );
    assert!(
        with_dd >= 4.0 * alone_ms,
        "the reader did not suffer: {with_dd:.1} vs {alone_ms:.1} ms"
    );
    let f = f
        .iter()
        .find(|f| f["subject"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no dirty_throttled finding on {name}: {v}"));
    let paused = f["evidence"][0]["value"].as_f64().unwrap();
    assert!(paused >= 20.0, "paused {paused}%");
    let culprits = f["culprits"].as_array().unwrap();
    assert_eq!(culprits[0]["pid"], dd_pid, "dd not named first: {f}");
    assert!(
        f["text"].as_str().unwrap().contains("fio"),
        "the waiting reader not named: {f}"
    );
    assert!(
        f["text"].as_str().unwrap().contains(&format!("bdi {major}:{minor}")),
        "{f}"
    );
    assert_eq!(code, 1);
}

/// The throttle binds before iolens starts: the session never sees more
/// than the throttled rate, so only the device's saved probe result (a
/// results file in a temporary XDG_STATE_HOME: 1 GB/s sequential, 20,000
/// IOPS at QD 1) shows what it can do; the finding says it came from
/// there.
#[test]
fn capped_against_a_saved_probe_result_with_the_throttle_from_the_start() {
    let _serial = serial();
    let Some(rig) = CappedRig::new("capped_saved") else {
        return;
    };
    let CappedRig {
        ref dir,
        ref name,
        major,
        minor,
        ref cg,
        ..
    } = rig;
    // The saved result, as `iolens probe` appends it.
    let mut r = iolens::probe::example::result(iolens::probe::Status::Completed);
    r.device.as_mut().unwrap().name = name.clone();
    r.sweep.as_mut().unwrap().median_mb_per_s = Some(1000.0);
    r.random.as_mut().unwrap().iops = Some(20_000.0);
    let state = dir.path().join("state");
    std::fs::create_dir_all(state.join("iolens")).unwrap();
    std::fs::write(
        state.join("iolens/probes.jsonl"),
        iolens::format::json(&r).unwrap() + "\n",
    )
    .unwrap();
    cg.throttle_reads(major, minor, LIMIT).unwrap();
    let dd = rig.dd();
    let out = Command::new(BIN)
        .args(["--config", "/dev/null", "-i", "0.5", "why", "--json", "-d", "9"])
        .env("XDG_STATE_HOME", &state)
        .output()
        .unwrap();
    cg.throttle_reads(major, minor, 0).unwrap();
    drop(dd);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = findings(&v, "capped_device");
    eprintln!("{}", serde_json::to_string_pretty(&f).unwrap());
    let f = f
        .iter()
        .find(|f| f["subject"]["name"] == name.as_str())
        .unwrap_or_else(|| panic!("no capped_device finding on {name}: {v}"));
    let ev = |n| evidence(f, n);
    let level = ev("level")["value"].as_f64().unwrap();
    assert!((level - LIMIT as f64).abs() <= LIMIT as f64 * 0.1, "level {level}");
    assert_eq!(ev("highest shown")["value"].as_f64(), Some(1e9), "{f}");
    assert!(
        ev("highest shown")["source"]
            .as_str()
            .unwrap()
            .starts_with("saved probe result"),
        "{f}"
    );
    assert_eq!(ev("highest IOPS shown")["value"].as_f64(), Some(20_000.0), "{f}");
    assert!(f["text"].as_str().unwrap().contains("in its saved probe result"), "{f}");
    assert_eq!(out.status.code(), Some(1));
}
