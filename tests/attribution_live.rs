//! Live tests of what the process rows claim, against real workloads: IO%
//! only with delay accounting (and then for a direct-I/O reader of a loop
//! device), the page-cache share only for readers of files, cancelled
//! writes of a file deleted before writeback on ext4 over a loop device,
//! and the `D` key turning accounting on and iolens putting it back.
//!
//! Each test runs `iolens --json` (the real binary) beside its workload,
//! as root and, where it says so, both as uid 65534 (setpriv). Whatever
//! cannot run here (not root, no losetup, mkfs.ext4, setpriv, tmux) is
//! skipped with a printed reason. Everything created is undone on drop:
//! loop devices, mounts, the sysctl, child processes.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

#[path = "common/live.rs"]
mod live;
use live::tools::{have, is_root};
use live::{Attach, Loop};

const BIN: &str = env!("CARGO_BIN_EXE_iolens");
const SYSCTL: &str = "/proc/sys/kernel/task_delayacct";

/// The tests of this file run one at a time: two of them set the
/// machine-wide sysctl, and the others measure rates that a neighbour's
/// load would disturb.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

fn skip(reason: &str) {
    eprintln!("skipped: {reason}");
}

/// `cmd args` as uid/gid 65534 without groups when `nobody`, else as is.
fn command(nobody: bool, cmd: &str, args: &[&str]) -> Command {
    if nobody {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", cmd])
            .args(args);
        c
    } else {
        let mut c = Command::new(cmd);
        c.args(args);
        c
    }
}

/// Why uid 65534 cannot run the binary and the workloads, if it cannot.
fn nobody_unavailable() -> Option<String> {
    if !is_root() {
        return Some("needs root to switch to uid 65534".into());
    }
    if !have("setpriv") {
        return Some("setpriv is not installed".into());
    }
    let ok = command(true, "test", &["-x", BIN]).status().is_ok_and(|s| s.success());
    (!ok).then(|| format!("uid 65534 cannot execute {BIN}"))
}

/// A child process (and its process group) killed on drop.
struct Kid(Child);

impl Kid {
    fn spawn(mut c: Command) -> Kid {
        use std::os::unix::process::CommandExt;
        c.process_group(0).stdin(Stdio::null()).stdout(Stdio::null());
        Kid(c.spawn().expect("spawning a workload"))
    }

    fn pid(&self) -> i64 {
        i64::from(self.0.id())
    }
}

impl Drop for Kid {
    fn drop(&mut self) {
        // SAFETY: signalling the process group this test created.
        unsafe { libc::kill(-(self.0.id() as i32), libc::SIGKILL) };
        let _ = self.0.wait();
    }
}

/// `kernel.task_delayacct` set for the test, the old value written back on
/// drop (also when the test panics).
struct Sysctl(String);

impl Sysctl {
    fn set(v: &str) -> Result<Sysctl, String> {
        let old = std::fs::read_to_string(SYSCTL).map_err(|e| format!("no {SYSCTL}: {e}"))?;
        std::fs::write(SYSCTL, v).map_err(|e| format!("writing {SYSCTL}: {e}"))?;
        Ok(Sysctl(old.trim().to_string()))
    }
}

impl Drop for Sysctl {
    fn drop(&mut self) {
        let _ = std::fs::write(SYSCTL, &self.0);
    }
}

fn sysctl_now() -> String {
    std::fs::read_to_string(SYSCTL).unwrap_or_default().trim().to_string()
}

/// A writable loop device with direct I/O over `mib` MiB of written
/// (non-zero) data, or sparse.
fn attach(mib: usize, written: bool) -> Result<Loop, String> {
    let fill = |file: &tempfile::NamedTempFile| {
        if !written {
            return file.as_file().set_len((mib as u64) << 20);
        }
        let chunk = vec![0xa5u8; 1 << 20];
        for _ in 0..mib {
            file.as_file().write_all(&chunk)?;
        }
        file.as_file().sync_all()
    };
    Loop::over_new_file(fill, Attach::DIRECT)
}

/// A mounted filesystem; unmounted on drop (before its loop device is
/// detached: declare the `Loop` first).
struct Mount(tempfile::TempDir);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// Run `iolens --json` for `count` intervals of `interval` seconds.
fn iolens_json(nobody: bool, count: u32, interval: &str) -> Vec<Value> {
    let out = command(
        nobody,
        BIN,
        &[
            "--json",
            "--count",
            &count.to_string(),
            "--interval",
            interval,
            "--top",
            "100000",
        ],
    )
    .output()
    .expect("running iolens");
    assert!(out.status.success(), "{out:?}");
    // A sample late on a loaded machine prints a stall line in place of a
    // report: not a report, left out (and said).
    let (reports, stalls): (Vec<Value>, Vec<Value>) = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .partition(|v| v.get("stall").is_none());
    for s in &stalls {
        println!("left out, not a report: {s}");
    }
    reports
}

fn row(report: &Value, pid: i64) -> Option<&Value> {
    report["processes"].as_array()?.iter().find(|p| p["pid"] == pid)
}

/// The system's python3 (a user's pyenv shim may not be reachable by uid
/// 65534).
fn python3() -> &'static str {
    if Path::new("/usr/bin/python3").exists() {
        "/usr/bin/python3"
    } else {
        "python3"
    }
}

/// A python3 workload (the script gets its arguments after `-c`).
fn python(nobody: bool, script: &str, args: &[&str]) -> Kid {
    let mut a = vec!["-c", script];
    a.extend_from_slice(args);
    Kid::spawn(command(nobody, python3(), &a))
}

/// Reads a pipe fed by its child, 1 MiB every 20 ms.
const PIPE_READER: &str = "
import os, time
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    buf = b'x' * (1 << 20)
    while True:
        os.write(w, buf)
        time.sleep(0.02)
os.close(w)
while os.read(r, 1 << 20):
    pass
";

/// Reads /dev/zero, 1 MiB every 20 ms.
const ZERO_READER: &str = "
import time
f = open('/dev/zero', 'rb', buffering=0)
while True:
    f.read(1 << 20)
    time.sleep(0.02)
";

/// Reads the file argv[1] again and again (from the page cache), 1 MiB
/// every 20 ms.
const FILE_READER: &str = "
import sys, time
f = open(sys.argv[1], 'rb', buffering=0)
while True:
    if not f.read(1 << 20):
        f.seek(0)
    time.sleep(0.02)
";

fn cache_shares_of(reports: &[Value], pid: i64) -> Vec<Value> {
    reports
        .iter()
        .filter_map(|r| row(r, pid))
        .filter(|p| p["rates"]["rchar_bps"].as_f64().unwrap_or(0.0) >= 65536.0)
        .map(|p| p["rates"]["cache_share"].clone())
        .collect()
}

fn check_cache_share(nobody: bool) {
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 8 << 20]).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = data.to_str().unwrap();
    let pipe = python(nobody, PIPE_READER, &[]);
    let zero = python(nobody, ZERO_READER, &[]);
    let file = python(nobody, FILE_READER, &[data]);
    std::thread::sleep(Duration::from_millis(500));
    let reports = iolens_json(nobody, 3, "1");
    let (p, z, f) = (
        cache_shares_of(&reports, pipe.pid()),
        cache_shares_of(&reports, zero.pid()),
        cache_shares_of(&reports, file.pid()),
    );
    println!("nobody={nobody} cache_share: pipe reader {p:?}, /dev/zero reader {z:?}, file reader {f:?}");
    assert!(p.len() >= 2 && z.len() >= 2 && f.len() >= 2, "readers not seen reading");
    assert!(
        p.iter().chain(&z).all(Value::is_null),
        "a cache share claimed without files"
    );
    // The control: a file reader does get one (all from the page cache).
    assert!(f.iter().all(|c| c.as_f64().is_some_and(|c| c > 0.9)), "{f:?}");
}

#[test]
fn cache_share_only_for_processes_reading_files() {
    let _serial = serial();
    if !have("python3") {
        return skip("python3 is not installed");
    }
    check_cache_share(false);
    match nobody_unavailable() {
        Some(why) => skip(&format!("the uid 65534 variant: {why}")),
        None => check_cache_share(true),
    }
}

#[test]
fn io_wait_is_na_with_delay_accounting_off_and_measured_with_it_on() {
    let _serial = serial();
    if !have("python3") {
        return skip("python3 is not installed");
    }
    if !Path::new(SYSCTL).exists() {
        return skip("no kernel.task_delayacct on this kernel");
    }
    if !is_root() && sysctl_now() != "0" {
        return skip("delay accounting is on and only root can turn it off for this test");
    }
    // Off: n/a on every row, as root and as uid 65534, while a process reads.
    let guard = if is_root() {
        Some(Sysctl::set("0").unwrap())
    } else {
        None
    };
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 8 << 20]).unwrap();
    let reader = python(false, FILE_READER, &[data.to_str().unwrap()]);
    let mut runs = vec![false];
    match nobody_unavailable() {
        Some(why) => skip(&format!("the uid 65534 variant: {why}")),
        None => runs.push(true),
    }
    for nobody in runs {
        let reports = iolens_json(nobody, 2, "0.5");
        let mut rows = 0;
        for r in &reports {
            assert_eq!(r["delay_accounting"], false);
            for p in r["processes"].as_array().unwrap() {
                assert!(p["rates"]["io_wait_pct"].is_null(), "IO% claimed while off: {p}");
                rows += 1;
            }
        }
        assert!(rows >= 2, "no process rows");
        println!("delay accounting off, nobody={nobody}: io_wait_pct null on all {rows} rows");
    }
    drop(reader);
    drop(guard);

    // On: a dd reading a loop device with direct I/O in 1 MiB requests
    // waits for much of each interval (about 40% on the 2-vCPU development
    // VM while other builds ran; its 1.5 GiB last 3-6 s there).
    let lo = match attach(1536, true) {
        Ok(l) => l,
        Err(e) => return skip(&format!("the delay-accounting-on part: {e}")),
    };
    let _on = Sysctl::set("1").unwrap();
    let mut dd = Command::new("dd");
    dd.args([&format!("if={}", lo.dev), "of=/dev/null", "bs=1M", "iflag=direct"])
        .stderr(Stdio::null());
    let dd = Kid::spawn(dd);
    // A process whose main thread only waits while a second thread reads:
    // field 42 of its stat (the main thread's) stays 0, IO% must not.
    let threaded = python(false, THREAD_READER, &[&lo.dev]);
    std::thread::sleep(Duration::from_millis(100));
    let reports = iolens_json(false, 3, "1");
    let tpct: Vec<Option<f64>> = reports
        .iter()
        .map(|r| row(r, threaded.pid()).and_then(|p| p["rates"]["io_wait_pct"].as_f64()))
        .collect();
    println!("delay accounting on: a reading worker thread's process IO% per interval {tpct:?}");
    assert!(tpct.iter().flatten().all(|p| *p <= 200.0), "{tpct:?}");
    assert!(tpct.iter().flatten().filter(|p| **p >= 10.0).count() >= 2, "{tpct:?}");
    let pct: Vec<Option<f64>> = reports
        .iter()
        .map(|r| row(r, dd.pid()).and_then(|p| p["rates"]["io_wait_pct"].as_f64()))
        .collect();
    println!(
        "delay accounting on: dd iflag=direct from {} IO% per interval {pct:?}",
        lo.dev
    );
    assert!(reports.iter().all(|r| r["delay_accounting"] == true));
    // The header total: the disk reads are dd's, once (the loop worker
    // reading the backing file is charged the same bytes and left out).
    let shares: Vec<Option<f64>> = reports.iter().map(|r| r["io_totals"]["read_share"].as_f64()).collect();
    let workers: Vec<String> = reports
        .iter()
        .flat_map(|r| r["processes"].as_array().into_iter().flatten())
        .filter_map(|p| p["worker"].as_str().map(str::to_string))
        .collect();
    println!("share of disk reads on process rows {shares:?}; worker rows {workers:?}");
    let loop_name = lo.dev.trim_start_matches("/dev/");
    assert!(
        workers.iter().any(|w| *w == format!("{loop_name} backing I/O")),
        "{workers:?}"
    );
    assert!(
        shares.iter().flatten().filter(|s| (0.7..1.5).contains(*s)).count() >= 2,
        "{shares:?}"
    );
    assert!(pct.iter().flatten().all(|p| *p <= 100.0), "{pct:?}");
    assert!(pct.iter().flatten().filter(|p| **p >= 10.0).count() >= 2, "{pct:?}");
}

/// A second thread reads the device argv[1] with O_DIRECT, 1 MiB at a time
/// over its first 256 MiB, for 8 s; the main thread waits for it.
const THREAD_READER: &str = "
import mmap, os, sys, threading, time
def read():
    fd = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECT)
    buf = mmap.mmap(-1, 1 << 20)
    end = time.time() + 8
    off = 0
    while time.time() < end:
        os.preadv(fd, [buf], off)
        off = (off + (1 << 20)) % (256 << 20)
t = threading.Thread(target=read)
t.start()
t.join()
";

/// Writes 64 MiB buffered to argv[1], closes it, waits 1.5 s, deletes it
/// (long before writeback, 30 s by default), then waits.
const WRITE_AND_DELETE: &str = "
import os, sys, time
time.sleep(1.2)
with open(sys.argv[1], 'wb') as f:
    for _ in range(64):
        f.write(b'z' * (1 << 20))
time.sleep(1.5)
os.unlink(sys.argv[1])
time.sleep(30)
";

fn check_cancelled(nobody: bool) -> Result<(), String> {
    if !have("mkfs.ext4") || !have("python3") {
        return Err("needs mkfs.ext4 and python3".into());
    }
    let lo = attach(256, false)?;
    let mkfs = Command::new("mkfs.ext4")
        .args(["-q", "-F", &lo.dev])
        .output()
        .map_err(|e| format!("mkfs.ext4: {e}"))?;
    if !mkfs.status.success() {
        return Err(format!("mkfs.ext4 failed: {}", String::from_utf8_lossy(&mkfs.stderr)));
    }
    let dir = tempfile::tempdir_in("/tmp").map_err(|e| e.to_string())?;
    let ok = Command::new("mount")
        .arg(&lo.dev)
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(format!("cannot mount ext4 on {}", lo.dev));
    }
    let mnt = Mount(dir);
    if nobody {
        std::os::unix::fs::chown(mnt.0.path(), Some(65534), Some(65534)).map_err(|e| e.to_string())?;
    }
    let target = mnt.0.path().join("scratch");
    let writer = python(nobody, WRITE_AND_DELETE, &[target.to_str().unwrap()]);
    let reports = iolens_json(nobody, 6, "1");
    let sum = |field: &str| -> f64 {
        reports
            .iter()
            .filter_map(|r| Some(row(r, writer.pid())?["rates"][field].as_f64()? * r["interval_s"].as_f64()?))
            .sum()
    };
    let (dirtied, cancelled) = (sum("write_bps"), sum("cancelled_write_bps"));
    let header = reports.last().map(|r| r["io_totals"]["cancelled_bytes"].clone());
    println!(
        "nobody={nobody}: writer dirtied {dirtied:.0} B, cancelled {cancelled:.0} B (64 MiB = {}); header cancelled_bytes {header:?}",
        64 << 20
    );
    let mib64 = f64::from(64u32 << 20);
    assert!(
        cancelled >= 0.95 * mib64 && cancelled <= 1.05 * mib64,
        "cancelled {cancelled}"
    );
    assert!(dirtied >= 0.95 * mib64, "dirtied {dirtied}");
    assert!(header.and_then(|h| h.as_f64()).is_some_and(|h| h >= 0.95 * mib64));
    drop(writer);
    drop(mnt);
    drop(lo);
    Ok(())
}

#[test]
fn a_file_deleted_before_writeback_shows_as_cancelled_writes() {
    let _serial = serial();
    if let Err(e) = check_cancelled(false) {
        return skip(&e);
    }
    match nobody_unavailable() {
        Some(why) => skip(&format!("the uid 65534 variant: {why}")),
        None => {
            if let Err(e) = check_cancelled(true) {
                skip(&format!("the uid 65534 variant: {e}"));
            }
        }
    }
}

/// A tmux server running iolens; killed on drop.
struct Tmux(String);

impl Tmux {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.0, "-f", "/dev/null"]).args(args);
        c.stdout(Stdio::piped()).stderr(Stdio::null());
        c
    }

    fn screen(&self) -> String {
        let out = self.cmd(&["capture-pane", "-p", "-t", "main"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) {
        let end = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.screen();
            if ok(&s) {
                return;
            }
            assert!(Instant::now() < end, "timed out waiting for {what}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn key(&self, k: &str) {
        assert!(self.cmd(&["send-keys", "-t", "main", k]).status().unwrap().success());
        std::thread::sleep(Duration::from_millis(100));
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
    }
}

fn wait_sysctl(want: &str) -> bool {
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end {
        if sysctl_now() == want {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

#[test]
fn the_d_key_turns_delay_accounting_on_and_exit_puts_it_back() {
    let _serial = serial();
    if !is_root() || !have("tmux") || !Path::new(SYSCTL).exists() {
        return skip("needs root, tmux and kernel.task_delayacct");
    }
    let _guard = Sysctl::set("0").unwrap();
    // Quit with q, SIGTERM, and the terminal going away (SIGHUP: tmux
    // killed).
    for (i, exit) in ["q", "SIGTERM", "SIGHUP"].into_iter().enumerate() {
        let t = Tmux(format!("iolens-attr-{}-{i}", std::process::id()));
        let ok = t
            .cmd(&["new-session", "-d", "-s", "main", "-x", "120", "-y", "40", BIN])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session");
        t.wait_for("the off note", |s| s.contains("delay accounting off (D turns it on)"));
        t.key("D");
        t.wait_for("the question", |s| s.contains("Turn block I/O delay accounting on"));
        t.key("y");
        assert!(wait_sysctl("1"), "not turned on");
        t.wait_for("the on note", |s| s.contains("delay accounting on (restored at exit)"));
        match exit {
            "q" => t.key("q"),
            "SIGTERM" => {
                let out = t
                    .cmd(&["display-message", "-p", "-t", "main", "#{pane_pid}"])
                    .output()
                    .unwrap();
                let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
                // SAFETY: signalling the iolens this test started in tmux.
                assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
            }
            _ => drop(t),
        }
        assert!(wait_sysctl("0"), "not put back after {exit}");
        println!("D, y: kernel.task_delayacct 0 -> 1; after {exit}: back to 0");
    }
}

/// SIGKILL leaves no chance to put the sysctl back: the next iolens does
/// (from the note in /run/iolens), and says so.
#[test]
fn after_a_sigkill_the_next_iolens_puts_delay_accounting_back() {
    let _serial = serial();
    if !is_root() || !have("tmux") || !Path::new(SYSCTL).exists() {
        return skip("needs root, tmux and kernel.task_delayacct");
    }
    let _guard = Sysctl::set("0").unwrap();
    let t = Tmux(format!("iolens-attr-{}-kill", std::process::id()));
    let ok = t
        .cmd(&["new-session", "-d", "-s", "main", "-x", "120", "-y", "40", BIN])
        .status()
        .unwrap()
        .success();
    assert!(ok, "tmux new-session");
    t.wait_for("the off note", |s| s.contains("delay accounting off (D turns it on)"));
    t.key("D");
    t.wait_for("the question", |s| s.contains("Turn block I/O delay accounting on"));
    t.key("y");
    assert!(wait_sysctl("1"), "not turned on");
    let out = t
        .cmd(&["display-message", "-p", "-t", "main", "#{pane_pid}"])
        .output()
        .unwrap();
    let pid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    // SAFETY: signalling the iolens this test started in tmux.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let end = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(t);
    assert_eq!(sysctl_now(), "1", "a SIGKILLed iolens cannot have put it back");
    let next = Command::new(BIN)
        .args(["--batch", "--interval", "0.1", "--count", "1"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&next.stderr);
    println!("the next iolens said: {said}");
    assert_eq!(sysctl_now(), "0", "the next iolens did not put it back: {said}");
    assert!(
        said.contains(&format!("kernel.task_delayacct was left at 1 by iolens pid {pid}"))
            && said.contains("set back to 0"),
        "{said}"
    );
    assert!(!Path::new("/run/iolens/task_delayacct").exists());
}

/// Reads the file argv[1] once a second from its start, keeping it open.
const SLOW_FILE_READER: &str = "
import sys, time
f = open(sys.argv[1], 'rb', buffering=0)
while True:
    f.seek(0)
    f.read(1 << 20)
    time.sleep(0.2)
";

fn devices_of(reports: &[Value], pid: i64) -> Vec<String> {
    let mut v: Vec<String> = reports
        .iter()
        .filter_map(|r| row(r, pid))
        .flat_map(|p| p["devices"].as_array().cloned().unwrap_or_default())
        .map(|d| {
            assert_eq!(d["source"], "open_files");
            d["name"].as_str().unwrap_or("").to_string()
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

#[test]
fn devices_of_open_files_and_the_processes_of_a_device() {
    let _serial = serial();
    if !is_root() || !have("mkfs.ext4") || !have("python3") {
        return skip("needs root, mkfs.ext4 and python3");
    }
    let lo = match attach(64, false) {
        Ok(l) => l,
        Err(e) => return skip(&e),
    };
    assert!(
        Command::new("mkfs.ext4")
            .args(["-q", "-F", &lo.dev])
            .output()
            .unwrap()
            .status
            .success()
    );
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    assert!(
        Command::new("mount")
            .arg(&lo.dev)
            .arg(dir.path())
            .status()
            .unwrap()
            .success()
    );
    let ext4 = Mount(dir);
    let on_loop = ext4.0.path().join("f");
    std::fs::write(&on_loop, vec![1u8; 1 << 20]).unwrap();
    // An overlay filesystem (anonymous device) over directories on the disk.
    let base = tempfile::tempdir_in("/var/tmp").unwrap();
    for d in ["lower", "upper", "work", "merged"] {
        std::fs::create_dir(base.path().join(d)).unwrap();
    }
    std::fs::write(base.path().join("lower/g"), vec![2u8; 1 << 20]).unwrap();
    let opts = format!(
        "lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work",
        base.path().display()
    );
    let merged = base.path().join("merged");
    let overlay = Command::new("mount")
        .args(["-t", "overlay", "overlay", "-o", &opts])
        .arg(&merged)
        .status()
        .is_ok_and(|s| s.success())
        .then(|| OverlayMount(merged.clone()));
    let disk_file = base.path().join("lower/g");
    let a = python(false, SLOW_FILE_READER, &[on_loop.to_str().unwrap()]);
    let b = python(false, SLOW_FILE_READER, &[disk_file.to_str().unwrap()]);
    let c = overlay
        .as_ref()
        .map(|o| python(false, SLOW_FILE_READER, &[o.0.join("g").to_str().unwrap()]));
    std::thread::sleep(Duration::from_millis(300));
    let reports = iolens_json(false, 2, "1");
    let loop_name = lo.dev.trim_start_matches("/dev/").to_string();
    let (da, db) = (devices_of(&reports, a.pid()), devices_of(&reports, b.pid()));
    println!("devices: reader on ext4 over {loop_name}: {da:?}; reader on the disk: {db:?}");
    assert!(da.contains(&loop_name), "{da:?}");
    assert!(!db.is_empty() && !db.contains(&loop_name), "{db:?}");
    // Partitions fold to their disk: no name here is a partition.
    let disks: Vec<String> = reports[0]["devices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["info"]["kind"] == "partition")
        .map(|d| d["name"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        db.iter().all(|d| !disks.contains(d)),
        "{db:?} has a partition of {disks:?}"
    );
    match &c {
        Some(c) => {
            let dc = devices_of(&reports, c.pid());
            println!("devices: reader on overlay: {dc:?}");
            // (Files a test inherits, such as a lock file, add their disk.)
            assert!(dc.iter().any(|d| d == "overlay") && !dc.contains(&loop_name), "{dc:?}");
        }
        None => skip("the overlay part: cannot mount overlay here"),
    }
    drop((a, b, c));
    drop(overlay);
    drop(ext4);
    drop(lo);
}

/// An overlay mount, unmounted on drop.
struct OverlayMount(std::path::PathBuf);

impl Drop for OverlayMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}
