//! Progress tracking against real processes started by the tests: pv and a
//! small Python helper (tests/helpers/ioload.py) reading or writing at a
//! fixed rate. A test whose tool is missing prints "skipped: <reason>" and
//! returns.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use iolens::collect::fdinfo::{FdScanner, FdSnapshot, FdTarget, ProcLister, ScanProc, Watch, parse_fdinfo};
use iolens::collect::{Reader, monotonic_ns};
use iolens::model::progress::{Job, Label, TransferTracker};

#[path = "common/live.rs"]
mod live;
use live::tools::need;
use live::{Attach, Loop};

const HELPER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/helpers/ioload.py");
const MIB: f64 = 1024.0 * 1024.0;

/// A child process killed and reaped when dropped.
struct Kid(std::process::Child);

impl Kid {
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(prog: &str, args: &[&str], stdout: Stdio) -> Kid {
    Kid(Command::new(prog)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .unwrap())
}

fn helper(args: &[&str]) -> Option<Kid> {
    if !need("python3") {
        return None;
    }
    let mut a = vec![HELPER];
    a.extend_from_slice(args);
    Some(spawn("python3", &a, Stdio::null()))
}

/// A file of `size` bytes (sparse: reading it costs no disk).
fn data_file(dir: &Path, name: &str, size: u64) -> PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p).unwrap().set_len(size).unwrap();
    p
}

/// The fd of `pid` whose link is `path`, waiting up to 10 s for it to appear.
fn wait_fd(pid: i32, path: &Path) -> i32 {
    for _ in 0..200 {
        if let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) {
            for e in rd.flatten() {
                if std::fs::read_link(e.path()).is_ok_and(|l| l == path) {
                    return e.file_name().to_str().unwrap().parse().unwrap();
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("pid {pid} never opened {}", path.display());
}

/// Wait (up to 10 s) until the fd has moved: an fd still at 0 is not a
/// transfer yet, and is not shown until it moves.
fn wait_moving(pid: i32, fd: i32) {
    for _ in 0..200 {
        if true_pos(pid, fd) > 0 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("fd {fd} of pid {pid} never moved");
}

/// fdinfo pos read directly, for comparison.
fn true_pos(pid: i32, fd: i32) -> u64 {
    let b = std::fs::read(format!("/proc/{pid}/fdinfo/{fd}")).unwrap();
    parse_fdinfo(&b).unwrap().pos
}

/// Samples one watched process the way `iolens progress --pid` does.
struct Watcher {
    reader: Reader,
    lister: ProcLister,
    scanner: FdScanner,
    tracker: TransferTracker,
}

impl Watcher {
    fn new(pid: i32) -> Self {
        Watcher {
            reader: Reader::new("/"),
            lister: ProcLister::default(),
            scanner: FdScanner::new(Watch {
                pids: vec![pid],
                names: vec![],
            }),
            tracker: TransferTracker::default(),
        }
    }

    fn sample(&mut self) -> FdSnapshot {
        let procs = self.lister.list(&self.reader, &self.scanner.watch, false).unwrap();
        let snap = self.scanner.scan(&self.reader, &procs);
        self.tracker.update(&snap, monotonic_ns());
        snap
    }

    /// Sample `n + 1` times, half a second apart (`n` intervals).
    fn sample_intervals(&mut self, n: usize) {
        for _ in 0..n {
            self.sample();
            sleep_s(0.5);
        }
        self.sample();
    }

    fn job(&self) -> &Job {
        self.tracker.jobs.iter().find(|j| !j.is_done()).expect("a live job")
    }
}

/// A loop device over a new data file of `size` bytes in `dir`, with `pv`
/// at hand; `None`, with the reason printed, without root or the tools.
fn loop_device(dir: &Path, name: &str, size: u64, read_only: bool) -> Option<Loop> {
    if !live::tools::is_root() {
        eprintln!("skipped: loop devices need root");
        return None;
    }
    if !need("losetup") || !need("pv") {
        return None;
    }
    let how = Attach {
        read_only,
        direct: false,
        ..Attach::DIRECT
    };
    Loop::over_file(&data_file(dir, name, size), how)
        .map_err(|e| eprintln!("skipped: {e}"))
        .ok()
}

fn sleep_s(s: f64) {
    std::thread::sleep(Duration::from_secs_f64(s));
}

/// pv at 2 MiB/s: percent against the true position, rate against the
/// configured rate, ETA against both; then the same percent as `progress`.
#[test]
fn pv_reader_percent_rate_eta_and_progress_tool() {
    if !need("pv") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let size = 40_000_000u64;
    let file = data_file(dir.path(), "src.bin", size);
    let kid = spawn("pv", &["-q", "-L", "2m", file.to_str().unwrap()], Stdio::null());
    let pid = kid.pid();
    let fd = wait_fd(pid, &file);
    wait_moving(pid, fd);
    let mut w = Watcher::new(pid);
    for i in 0..7 {
        if i > 0 {
            sleep_s(1.0);
        }
        w.sample();
        let truth = true_pos(pid, fd) as f64 / size as f64 * 100.0;
        let m = &w.job().main;
        assert_eq!(m.key.fd, fd);
        assert_eq!(m.size, Some(size));
        let pct = m.percent.unwrap();
        assert!((pct - truth).abs() < 1.0, "sample {i}: {pct}% vs true {truth}%");
    }
    let m = w.job().main.clone();
    assert_eq!(m.label, Label::Progress);
    let rate = m.rate_bps.unwrap();
    assert!((rate / (2.0 * MIB) - 1.0).abs() < 0.10, "rate {rate} vs 2 MiB/s");
    let eta = m.eta_s.unwrap();
    let remaining = (size - m.pos) as f64;
    assert!(
        (eta - remaining / rate).abs() < 0.01 * eta,
        "eta {eta} vs {remaining}/{rate}"
    );
    assert!(
        (eta / (remaining / (2.0 * MIB)) - 1.0).abs() < 0.10,
        "eta {eta} vs configured rate"
    );

    // The `progress` tool on the same process: same percent within 1%.
    if !need("progress") {
        return;
    }
    w.sample();
    let ours = w.job().main.percent.unwrap();
    let out = Command::new("progress")
        .args(["-q", "-p", &pid.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let theirs: f64 = text
        .lines()
        .find_map(|l| l.trim().split('%').next().and_then(|p| p.parse().ok()))
        .unwrap_or_else(|| panic!("no percent in progress output: {text:?}"));
    assert!((ours - theirs).abs() < 1.0, "iolens {ours}% vs progress {theirs}%");
}

/// A reader of a loop device the test attaches: the device's size is the job size.
#[test]
fn block_device_reader() {
    let dir = tempfile::tempdir().unwrap();
    let size = 64 * 1024 * 1024u64;
    let Some(dev) = loop_device(dir.path(), "disk.img", size, true) else {
        return;
    };
    let kid = spawn("pv", &["-q", "-L", "4m", &dev.dev], Stdio::null());
    let pid = kid.pid();
    let fd = wait_fd(pid, Path::new(&dev.dev));
    let mut w = Watcher::new(pid);
    w.sample();
    sleep_s(1.0);
    w.sample();
    let m = &w.job().main;
    assert_eq!(m.target, FdTarget::BlockDevice);
    assert_eq!(m.size, Some(size));
    let truth = true_pos(pid, fd) as f64 / size as f64 * 100.0;
    assert!((m.percent.unwrap() - truth).abs() < 1.0);
    assert!(m.rate_bps.unwrap() > 0.0);
    drop(kid);
}

/// pread only: the position stays at 0 while rchar grows.
#[test]
fn pread_reader_is_positional() {
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), "db.bin", 20_000_000);
    let Some(kid) = helper(&["pread", file.to_str().unwrap(), "4000000"]) else {
        return;
    };
    wait_fd(kid.pid(), &file);
    let mut w = Watcher::new(kid.pid());
    w.sample_intervals(3);
    let j = w.job();
    assert_eq!(j.main.label, Label::Positional, "{j:?}");
    assert_eq!(j.main.pos, 0);
    assert_eq!(j.main.percent, None);
    let rate = j.main.rate_bps.unwrap();
    assert!(rate > 1e6 && rate < 8e6, "process read rate {rate}");
}

/// A writer whose file grows with pos: bytes and rate, no percent. A writer
/// into a preallocated file: a percent.
#[test]
fn writers() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.bin");
    let Some(kid) = helper(&["write", out.to_str().unwrap(), "2000000"]) else {
        return;
    };
    wait_fd(kid.pid(), &out);
    let mut w = Watcher::new(kid.pid());
    w.sample_intervals(3);
    let m = &w.job().main;
    assert_eq!(m.label, Label::Growing, "{m:?}");
    assert_eq!(m.percent, None);
    assert!(m.pos > 0);
    assert!(m.rate_bps.unwrap() > 1e6);

    let pre = data_file(dir.path(), "pre.bin", 50_000_000);
    let Some(kid) = helper(&["overwrite", pre.to_str().unwrap(), "2000000"]) else {
        return;
    };
    let fd = wait_fd(kid.pid(), &pre);
    let mut w = Watcher::new(kid.pid());
    w.sample_intervals(3);
    let m = &w.job().main;
    assert_eq!(m.label, Label::Progress, "{m:?}");
    let truth = true_pos(kid.pid(), fd) as f64 / 50e6 * 100.0;
    assert!((m.percent.unwrap() - truth).abs() < 1.0);
}

/// A deleted file still open: its size comes through the fd.
#[test]
fn deleted_but_open_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), "gone.bin", 30_000_000);
    let Some(kid) = helper(&["read", file.to_str().unwrap(), "2000000"]) else {
        return;
    };
    let fd = wait_fd(kid.pid(), &file);
    std::fs::remove_file(&file).unwrap();
    let mut w = Watcher::new(kid.pid());
    w.sample();
    sleep_s(1.0);
    w.sample();
    let m = &w.job().main;
    assert_eq!(m.size, Some(30_000_000));
    assert!(String::from_utf8_lossy(&m.path).ends_with(" (deleted)"), "{:?}", m.path);
    let truth = true_pos(kid.pid(), fd) as f64 / 30e6 * 100.0;
    assert!((m.percent.unwrap() - truth).abs() < 1.0);
    assert!(m.percent.unwrap() > 0.0);
}

/// The file shrinks under the reader: pos beyond size is said so.
#[test]
fn truncated_under_reader() {
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), "shrinks.bin", 20_000_000);
    let Some(kid) = helper(&["read", file.to_str().unwrap(), "4000000"]) else {
        return;
    };
    let fd = wait_fd(kid.pid(), &file);
    let mut w = Watcher::new(kid.pid());
    w.sample();
    while true_pos(kid.pid(), fd) < 2_000_000 {
        sleep_s(0.1);
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(&file)
        .unwrap()
        .set_len(1_000_000)
        .unwrap();
    w.sample();
    let m = &w.job().main;
    assert_eq!(m.label, Label::Truncated, "{m:?}");
    assert_eq!(m.size, Some(1_000_000));
    assert!(m.pos > 1_000_000);
}

/// The same fd number reopened on another file is a new entry; the first
/// counts as a file done.
#[test]
fn fd_reuse_is_a_new_entry() {
    let dir = tempfile::tempdir().unwrap();
    let a = data_file(dir.path(), "a.bin", 30_000_000);
    let b = data_file(dir.path(), "b.bin", 30_000_000);
    let (ino_a, ino_b) = (
        std::fs::metadata(&a).unwrap().ino(),
        std::fs::metadata(&b).unwrap().ino(),
    );
    let Some(kid) = helper(&["reuse", a.to_str().unwrap(), b.to_str().unwrap(), "2000000"]) else {
        return;
    };
    let fd = wait_fd(kid.pid(), &a);
    let mut w = Watcher::new(kid.pid());
    w.sample();
    sleep_s(0.5);
    w.sample();
    assert_eq!(w.job().main.key.ino, ino_a);
    assert_eq!(w.job().files_seen_closed, 0);
    wait_fd(kid.pid(), &b);
    for _ in 0..2 {
        sleep_s(0.5);
        w.sample();
    }
    let j = w.job();
    assert_eq!((j.main.key.fd, j.main.key.ino), (fd, ino_b));
    assert_eq!(j.main.path.as_ref(), b.to_str().unwrap().as_bytes());
    assert_eq!(j.files_seen_closed, 1);
}

/// A process that exits between the listing and the fd scan: no error, its
/// job is kept as ended.
#[test]
fn process_exits_mid_sample() {
    let dir = tempfile::tempdir().unwrap();
    let file = data_file(dir.path(), "x.bin", 30_000_000);
    let Some(kid) = helper(&["read", file.to_str().unwrap(), "2000000"]) else {
        return;
    };
    let pid = kid.pid();
    wait_fd(pid, &file);
    let mut w = Watcher::new(pid);
    w.sample();
    sleep_s(0.5);
    w.sample();
    assert!(w.tracker.jobs.iter().any(|j| !j.is_done()));
    let procs: Vec<_> = w
        .lister
        .list(&w.reader, &w.scanner.watch, false)
        .unwrap()
        .into_iter()
        .map(|p| ScanProc {
            comm: p.comm.into_owned().into(),
            ..p
        })
        .collect();
    assert_eq!(procs.len(), 1);
    drop(kid); // killed and reaped: /proc/<pid> is gone
    let snap = w.scanner.scan(&w.reader, &procs);
    assert!(snap.procs.is_empty());
    assert_eq!(snap.exited, vec![procs[0].key]);
    w.tracker.update(&snap, monotonic_ns());
    let j = &w.tracker.jobs[0];
    assert_eq!(j.main.label, Label::Done { complete: false });
    // The next listing does not see it at all.
    let snap = w.sample();
    assert!(snap.procs.is_empty() && snap.exited.is_empty());
}

/// `tar` reading many files in turn, paced by `pv` on its output: the job
/// shows the current file, the files seen closed, and the process's read rate.
#[test]
fn tar_reads_many_files() {
    if !need("tar") || !need("pv") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for i in 0..40 {
        // Real data (not sparse), so tar reads every byte.
        std::fs::write(src.join(format!("f{i:02}")), vec![b'x'; 1_000_000]).unwrap();
    }
    let mut tar = Command::new("tar")
        .args(["cf", "-", "-C", src.to_str().unwrap(), "."])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = tar.stdout.take().unwrap();
    let tar = Kid(tar);
    let _pv = Kid(Command::new("pv")
        .args(["-q", "-L", "4m"])
        .stdin(out)
        .stdout(Stdio::null())
        .spawn()
        .unwrap());
    let mut w = Watcher::new(tar.pid());
    w.sample_intervals(7);
    let j = w.job();
    assert_eq!(j.comm, "tar");
    assert!(String::from_utf8_lossy(&j.main.path).starts_with(src.to_str().unwrap()));
    assert_eq!(j.main.size, Some(1_000_000));
    assert!(j.files_seen_closed >= 4, "files seen closed: {}", j.files_seen_closed);
    let rate = j.read_bps.unwrap();
    assert!((rate / (4.0 * MIB) - 1.0).abs() < 0.3, "tar read rate {rate}");
}

/// Copy of one file into another (`pv a > b`, like `dd if=a of=b`): the read
/// side's size is the job's size; the written file is shown growing.
#[test]
fn copy_job_size_is_the_read_side() {
    if !need("pv") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let a = data_file(dir.path(), "a.bin", 40_000_000);
    let b = dir.path().join("b.bin");
    let out = std::fs::File::create(&b).unwrap();
    let kid = spawn("pv", &["-q", "-L", "2m", a.to_str().unwrap()], Stdio::from(out));
    let fd = wait_fd(kid.pid(), &a);
    let mut w = Watcher::new(kid.pid());
    w.sample_intervals(3);
    let j = w.job();
    assert_eq!((j.main.key.fd, j.main.size), (fd, Some(40_000_000)));
    let truth = true_pos(kid.pid(), fd) as f64 / 40e6 * 100.0;
    assert!((j.main.percent.unwrap() - truth).abs() < 1.0);
    let out = j.others.iter().find(|o| o.key.fd == 1).expect("the output file");
    assert_eq!(out.label, Label::Growing);
    assert_eq!(out.percent, None);
}

/// Writing into a block device (`dd of=/dev/sdX`): the device's size gives a percent.
#[test]
fn block_device_writer_has_percent() {
    let dir = tempfile::tempdir().unwrap();
    let size = 64 * 1024 * 1024u64;
    let Some(dev) = loop_device(dir.path(), "target.img", size, false) else {
        return;
    };
    let out = std::fs::OpenOptions::new().write(true).open(&dev.dev).unwrap();
    let kid = spawn("pv", &["-q", "-L", "4m", "/dev/zero"], Stdio::from(out));
    let mut w = Watcher::new(kid.pid());
    w.sample();
    sleep_s(1.0);
    w.sample();
    let m = &w.job().main;
    assert_eq!((m.target, m.key.fd), (FdTarget::BlockDevice, 1));
    assert_eq!(m.size, Some(size));
    assert_eq!(m.label, Label::Progress);
    let truth = true_pos(kid.pid(), 1) as f64 / size as f64 * 100.0;
    assert!((m.percent.unwrap() - truth).abs() < 1.0);
    drop(kid);
}
