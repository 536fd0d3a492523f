//! A hung FUSE mount must never stop iolens: a python3-fusepy filesystem
//! (`tests/helpers/hangfs.py`) whose getattr and statfs sleep while a flag
//! file exists, and a process reading a file on it. With the hang starting
//! before and during the run, `--batch --interval 0.5` prints every report
//! on time, `iolens progress` says the size is unknown instead of hanging,
//! and in the dashboard (tmux) a stuck sample shows in the header within 3 s
//! and `q` gives the shell back within 1 s. A job's walk into the hung
//! mount (`--walk-network`) is given up after 5 s without progress while
//! the reports keep their pace.
//!
//! Every mount is released however a test ends: the daemon is killed with
//! SIGKILL (which aborts the FUSE connection and frees every waiter), then
//! `fusermount3 -uz`. Without root, /dev/fuse, fusermount3, fusepy or tmux
//! the tests print "skipped: <reason>" and pass.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/tmux.rs"]
mod tmux;
use tmux::{PROMPT, Tmux};

#[path = "common/tools.rs"]
mod tools;
use tools::have;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");
const HANGFS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/helpers/hangfs.py");
const IOLOAD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/helpers/ioload.py");
const PY: &str = "/usr/bin/python3";

/// Why the FUSE tests cannot run here, if they cannot.
fn unavailable() -> Option<String> {
    if !tools::is_root() {
        return Some("not root (mounting FUSE and reading others' fds)".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    if !have("fusermount3") {
        return Some("fusermount3 not installed (apt-get install fuse3)".into());
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

fn skip(reason: &str) {
    eprintln!("skipped: {reason}");
}

fn mounted(mnt: &Path) -> bool {
    std::fs::read_to_string("/proc/self/mountinfo").is_ok_and(|m| {
        m.lines()
            .any(|l| l.split(' ').nth(4) == Some(mnt.to_str().unwrap_or("")))
    })
}

/// Whether `pid` has a file "…/mnt/data" open at a position past 0.
fn reading(pid: u32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten().any(|e| {
        std::fs::read_link(e.path()).is_ok_and(|l| l.ends_with("mnt/data"))
            && std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", e.file_name().to_string_lossy())).is_ok_and(
                |t| {
                    t.lines()
                        .next()
                        .is_some_and(|l| l.starts_with("pos:") && l != "pos:\t0")
                },
            )
    })
}

/// The hanging filesystem with a reader on it; released on drop.
struct HungMount {
    dir: tempfile::TempDir,
    daemon: Child,
    /// Processes that may be stuck on the mount: freed when the daemon dies.
    stuck: Vec<Child>,
    reader: u32,
}

impl HungMount {
    fn start() -> HungMount {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir(&mnt).unwrap();
        let daemon = Command::new(PY)
            .arg(HANGFS)
            .arg(&mnt)
            .arg(dir.path().join("flag"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut m = HungMount {
            dir,
            daemon,
            stuck: Vec::new(),
            reader: 0,
        };
        let end = Instant::now() + Duration::from_secs(15);
        while !mounted(&m.mnt()) {
            assert!(Instant::now() < end, "hangfs did not mount");
            std::thread::sleep(Duration::from_millis(50));
        }
        // 2 MB/s through read(2) (direct_io: reads never ask getattr).
        let reader = Command::new(PY)
            .arg(IOLOAD)
            .arg("read")
            .arg(m.mnt().join("data"))
            .arg("2000000")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        m.reader = reader.id();
        m.stuck.push(reader);
        while !reading(m.reader) {
            assert!(Instant::now() < end, "the reader did not start reading");
            std::thread::sleep(Duration::from_millis(50));
        }
        m
    }

    fn mnt(&self) -> PathBuf {
        self.dir.path().join("mnt")
    }

    /// From now on every getattr and statfs of the mount sleeps; checked
    /// with a `stat` that must not come back within a second.
    fn hang(&mut self) {
        std::fs::write(self.dir.path().join("flag"), b"").unwrap();
        let mut st = Command::new("stat")
            .arg(self.mnt().join("data"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_secs(1));
        let done = st.try_wait().unwrap();
        self.stuck.push(st);
        assert!(
            done.is_none(),
            "stat on the hung mount returned: the mount does not hang"
        );
    }
}

impl Drop for HungMount {
    fn drop(&mut self) {
        // SIGKILL the daemon: closing /dev/fuse aborts the connection, so
        // every process waiting on it gets an error and can exit.
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
        let _ = Command::new("fusermount3").arg("-uz").arg(self.mnt()).status();
        for c in &mut self.stuck {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The child's stdout lines, each with when it came (since `start`),
/// read on a thread of their own; the channel closes at end of output.
fn timed_lines(child: &mut std::process::Child, start: Instant) -> std::sync::mpsc::Receiver<(Duration, String)> {
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send((start.elapsed(), line)).is_err() {
                return;
            }
        }
    });
    rx
}

/// Runs `iolens --batch --json --interval 0.5 --count N` and returns, for
/// each line, when it came (since start) and the line. `during` is called
/// once `at` after the start.
fn batch_lines(n: u32, at: Duration, during: &mut dyn FnMut()) -> Vec<(Duration, String)> {
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args(["--batch", "--json", "--interval", "0.5", "--count", &n.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = timed_lines(&mut child, start);
    let mut lines = Vec::new();
    let mut called = false;
    let end = start + Duration::from_secs_f64(0.5 * f64::from(n) + 5.0);
    loop {
        if !called && start.elapsed() >= at {
            during();
            called = true;
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(l) => lines.push(l),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            Err(_) if Instant::now() > end => {
                let _ = child.kill();
                panic!("iolens --batch did not finish in time; lines so far: {}", lines.len());
            }
            Err(_) => {}
        }
    }
    let _ = child.wait();
    lines
}

/// Every report on time (report k by k × 0.5 s + slack for a loaded
/// machine), and none saying that sampling stopped for longer than the
/// stall threshold.
fn assert_on_time(phase: &str, lines: &[(Duration, String)], n: usize) {
    assert_eq!(lines.len(), n, "{phase}: reports printed");
    for (i, (t, line)) in lines.iter().enumerate() {
        let due = 0.5 * (i + 1) as f64;
        let late = t.as_secs_f64() - due;
        eprintln!("{phase}: report {} at {:.3} s ({late:+.3} s)", i + 1, t.as_secs_f64());
        assert!(late < 0.6, "{phase}: report {} came {late:.3} s late", i + 1);
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(stall) = v.get("stall").and_then(|s| s.as_str()) {
            let secs: f64 = stall
                .trim_start_matches("no sample for ")
                .split(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(f64::MAX);
            assert!(secs < 1.5, "{phase}: sampling stopped: {stall}");
        }
    }
}

#[test]
fn batch_reports_on_time_with_a_hung_fuse_mount() {
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    // The hang starts before iolens does.
    let mut m = HungMount::start();
    m.hang();
    let lines = batch_lines(8, Duration::MAX, &mut || {});
    assert_on_time("hang before start", &lines, 8);
    drop(m);
    // The hang starts 1.2 s into the run, while the reader is scanned.
    let mut m = HungMount::start();
    let lines = batch_lines(8, Duration::from_millis(1200), &mut || m.hang());
    assert_on_time("hang during the run", &lines, 8);
}

/// A job whose source is on the hung mount, walked with `--walk-network`:
/// the walk (a child process) sticks in the mount's getattr, the reports
/// of `iolens progress --watch` keep coming every 0.5 s, and once the walk
/// has printed nothing for 5 s the total says so, with no percent.
#[test]
fn a_walk_into_a_hung_fuse_mount_is_given_up_on_time() {
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let mut m = HungMount::start();
    m.hang();
    // tar stats its operand: stuck on the mount too (freed with the daemon).
    let tar = Command::new("tar")
        .arg("cf")
        .arg("/dev/null")
        .arg(m.mnt())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    m.stuck.push(tar);
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .args([
            "progress",
            "--watch",
            "--walk-network",
            "--name",
            "tar",
            "--json",
            "-i",
            "0.5",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = timed_lines(&mut child, start);
    let mut jobs = Vec::new();
    while start.elapsed() < Duration::from_secs(8) {
        if let Ok((t, l)) = rx.recv_timeout(Duration::from_millis(50))
            && l.contains("\"jobs\"")
        {
            let v: serde_json::Value = serde_json::from_str(&l).unwrap();
            jobs.push((t, v["jobs"][0].clone()));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    drop(m);
    let gaps = jobs.windows(2).map(|w| w[1].0 - w[0].0).max().unwrap_or(Duration::MAX);
    let states: Vec<_> = jobs
        .iter()
        .map(|(t, j)| (t.as_secs_f64(), j["total"]["state"].as_str().unwrap_or("?").to_string()))
        .collect();
    eprintln!("{} reports, longest gap {gaps:?}: {states:?}", jobs.len());
    assert!(jobs.len() >= 12, "{} job reports in 8 s", jobs.len());
    assert!(gaps <= Duration::from_millis(1500), "a gap of {gaps:?} between reports");
    assert_eq!(jobs[0].1["total"]["state"], "counting", "{:?}", jobs[0]);
    let (t, last) = jobs.last().unwrap();
    assert_eq!(last["total"]["state"], "unknown", "{last}");
    assert!(
        last["total"]["why"]
            .as_str()
            .unwrap_or("")
            .contains("no progress for 5 s"),
        "{last}"
    );
    assert!(last["percent"].is_null(), "{last}");
    let given_up = jobs.iter().find(|j| j.1["total"]["state"] == "unknown").unwrap().0;
    assert!(
        given_up <= Duration::from_secs(7),
        "given up at {given_up:?} (last report at {t:?})"
    );
}

#[test]
fn progress_says_size_unknown_on_a_hung_fuse_mount() {
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let mut m = HungMount::start();
    m.hang();
    let start = Instant::now();
    let out = Command::new("timeout")
        .args(["-s", "KILL", "20", BIN, "progress", "--pid", &m.reader.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("iolens progress took {:.2} s:\n{text}", start.elapsed().as_secs_f64());
    assert!(out.status.success(), "iolens progress: {:?}", out.status);
    assert!(text.contains("mnt/data"), "{text}");
    assert!(text.contains("size unknown: network or FUSE filesystem"), "{text}");
}

#[test]
fn dashboard_shows_a_stuck_sample_and_quits_at_once() {
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    if !have("tmux") {
        return skip("tmux not installed");
    }
    let mut m = HungMount::start();
    m.hang();
    let t = Tmux::shell();
    // The third sample sleeps 60 s (IOLENS_DEBUG_STALL): a sampler stuck
    // in a read, as far as the dashboard can tell.
    t.type_text(&format!(
        "IOLENS_DEBUG_STALL=60 {BIN} --interval 0.5 --pid {}; echo EXIT=$?",
        m.reader
    ));
    t.keys(&["Enter"]);
    let s = t.wait_for("the reader's transfer", |s| s.contains("mnt/data"));
    let t0 = Instant::now();
    assert!(s.contains("size unknown"), "{s}");
    // Sample 2 is on screen at ~0.5 s, sample 3 is stuck from ~1 s: the
    // stall shows once the last sample is 1.5 s old.
    let s = t.wait_for("the stall in the header", |s| s.contains("no sample for"));
    let shown = t0.elapsed();
    eprintln!("stall shown {:.2} s after the transfer appeared", shown.as_secs_f64());
    let header = s.lines().next().unwrap_or("");
    assert!(
        header.contains("no sample for") && header.contains("IOLENS_DEBUG_STALL"),
        "{s}"
    );
    assert!(shown < Duration::from_secs(3), "stall shown after {shown:?}");
    let q = Instant::now();
    t.keys(&["q"]);
    t.wait_for("the prompt after q", |s| {
        s.contains("EXIT=0") && s.lines().any(|l| l.starts_with(PROMPT.trim_end()))
    });
    let back = q.elapsed();
    eprintln!("shell back {:.2} s after q", back.as_secs_f64());
    assert!(back < Duration::from_secs(1), "q took {back:?}");
}

/// `iolens probe ARGS`: (seconds taken, exit status, stderr), or `None`
/// when it has not ended within 5 s (the child is then left to `m`, which
/// frees and kills it when dropped).
fn probe_run(m: &mut HungMount, args: &[&std::ffi::OsStr]) -> Option<(f64, std::process::ExitStatus, String)> {
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .arg("probe")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while start.elapsed() < Duration::from_secs(5) {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            return Some((start.elapsed().as_secs_f64(), status, err));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    m.stuck.push(child);
    None
}

#[test]
fn probes_refuse_a_hung_fuse_mount_without_touching_it() {
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let mut m = HungMount::start();
    m.hang();
    let file = m.mnt().join("data");
    // A symlink on a local filesystem to the file on the mount.
    let link = m.dir.path().join("link");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let mnt = m.mnt();
    for (what, kind, target) in [
        ("rand on a file there", "rand", file.as_os_str()),
        ("rand through a symlink", "rand", link.as_os_str()),
        ("sync in the directory", "sync", mnt.as_os_str()),
    ] {
        let Some((secs, status, err)) = probe_run(&mut m, &[std::ffi::OsStr::new(kind), target]) else {
            panic!("probe {what}: still running after 5 s (stuck on the mount)");
        };
        eprintln!("probe {what}: {status:?} after {secs:.2} s: {err}");
        assert_eq!(status.code(), Some(2), "{what}: {status:?} {err}");
        assert!(secs < 2.0, "{what}: took {secs:.2} s");
        assert!(err.contains("is on a fuse"), "{what}: {err}");
        assert!(err.contains("touches nothing on a FUSE"), "{what}: {err}");
    }
}

/// A captured tree (`--root`) whose entries link to the hung mount: a
/// device in `sys/block`, a device's `holders`, a process's `task` and the
/// cgroup mount point. None is followed, so `--batch` ends on time (the
/// links were listed and stat'ed through, and iolens hung for good).
#[test]
fn captured_tree_links_to_a_hung_mount_are_not_followed() {
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let mut m = HungMount::start();
    m.hang();
    let base = tempfile::tempdir().unwrap();
    let tree = base.path().join("tree");
    let fix = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/root-6.8");
    assert!(
        Command::new("cp")
            .arg("-a")
            .arg(fix)
            .arg(&tree)
            .status()
            .unwrap()
            .success()
    );
    let link = |at: &str| {
        let p = tree.join(at);
        if p.is_dir() {
            std::fs::remove_dir_all(&p).unwrap();
        }
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(m.mnt(), &p).unwrap();
    };
    for at in [
        "sys/block/evil",
        "sys/block/sdb/holders",
        "proc/4242/task",
        "sys/fs/cgroup",
    ] {
        link(at);
    }
    std::fs::write(tree.join("proc/mounts"), "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n").unwrap();
    // Output to a file, not a pipe: an iolens stuck on the mount would
    // hold a pipe open until the mount is released.
    let log = base.path().join("out");
    let start = Instant::now();
    let mut child = Command::new(BIN)
        .arg("--root")
        .arg(&tree)
        .args(["--batch", "--interval", "0.2", "--count", "3"])
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            m.stuck.push(child);
            panic!("iolens --root still running after 10 s: it followed a link to the hung mount");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = start.elapsed();
    let text = std::fs::read_to_string(&log).unwrap();
    eprintln!("iolens --root took {:.2} s:\n{text}", took.as_secs_f64());
    assert!(status.success(), "iolens --root: {status:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(text.contains("sda"), "{text}");
}
