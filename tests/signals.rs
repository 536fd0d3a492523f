//! Exits on signals, end to end: the batch output, `iolens progress`, the
//! probe command and the dashboard end on SIGTERM, SIGINT, SIGHUP, SIGUSR1
//! and SIGUSR2 by that signal (re-raised after cleaning up: the shell sees
//! 128 + the number, a parent's wait sees "killed by SIGTERM"), and a signal
//! that comes while a read is stuck says so on stderr.
//!
//! Each child is signalled once its handlers are installed (its `SigCgt`
//! mask in /proc/<pid>/status says so), never after a guessed delay.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

#[path = "common/tmux.rs"]
mod tmux;
use tmux::Tmux;

#[path = "common/tools.rs"]
mod tools;
use tools::have;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

const SIGNALS: [(i32, &str); 5] = [
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGUSR2, "SIGUSR2"),
];

/// Killed on drop if still running.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Wait until `pid` catches `sig` (bit sig-1 of SigCgt).
fn wait_caught(pid: u32, sig: i32) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let mask = status
            .lines()
            .find_map(|l| l.strip_prefix("SigCgt:"))
            .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
            .unwrap_or(0);
        if mask & (1 << (sig - 1)) != 0 {
            return;
        }
        assert!(Instant::now() < end, "pid {pid} never caught signal {sig}: {status}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn kill(pid: u32, sig: i32) {
    // SAFETY: signalling a child this test started.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0);
}

fn wait_within(c: &mut Child, limit: Duration) -> ExitStatus {
    let end = Instant::now() + limit;
    loop {
        if let Some(s) = c.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < end, "still running {limit:?} after the signal");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start `cmd`, signal it with each signal in turn (a fresh child each
/// time) and check it ends by that signal within 3 s.
fn ends_by_each_signal(what: &str, cmd: impl Fn() -> Command) {
    for (sig, name) in SIGNALS {
        let mut kid = Kid(cmd().stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap());
        let pid = kid.0.id();
        wait_caught(pid, sig);
        let t0 = Instant::now();
        kill(pid, sig);
        let st = wait_within(&mut kid.0, Duration::from_secs(3));
        let mut err = String::new();
        let _ = kid.0.stderr.take().unwrap().read_to_string(&mut err);
        println!("{what}: {name} -> {st:?} after {:?}", t0.elapsed());
        assert_eq!(st.signal(), Some(sig), "{what} after {name}: {st:?}; stderr: {err}");
    }
}

#[test]
fn batch_ends_by_the_signal_it_got() {
    ends_by_each_signal("batch", || {
        let mut c = Command::new(BIN);
        c.args(["--batch", "--interval", "0.2", "--count", "10000"]);
        c
    });
}

#[test]
fn progress_ends_by_the_signal_it_got() {
    let sleeper = Kid(Command::new("sleep").arg("120").spawn().unwrap());
    let pid = sleeper.0.id().to_string();
    ends_by_each_signal("progress --watch", || {
        let mut c = Command::new(BIN);
        c.args(["progress", "--watch", "--interval", "0.2", "--pid", &pid]);
        c
    });
}

#[test]
fn probe_sweep_ends_by_the_signal_it_got_after_its_partial_result() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("data.bin");
    std::fs::write(&target, vec![7u8; 64 << 20]).unwrap();
    for (sig, name) in [(libc::SIGTERM, "SIGTERM"), (libc::SIGINT, "SIGINT")] {
        let mut kid = Kid(Command::new(BIN)
            .args(["probe", "sweep", "--thorough", "--duration", "60", "--json"])
            .arg(&target)
            .env("XDG_STATE_HOME", dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap());
        let pid = kid.0.id();
        // At once: a release build sweeps the cached file in well under a
        // second, and the signal must come while the sweep runs.
        wait_caught(pid, sig);
        kill(pid, sig);
        let st = wait_within(&mut kid.0, Duration::from_secs(5));
        let mut out = String::new();
        let _ = kid.0.stdout.take().unwrap().read_to_string(&mut out);
        println!("probe sweep: {name} -> {st:?}");
        assert_eq!(st.signal(), Some(sig), "{name}: {st:?}");
        // The partial result was still reported.
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["status"], "cancelled", "{out}");
    }
}

#[test]
fn a_signal_during_a_stuck_read_says_so() {
    // IOLENS_DEBUG_STALL makes the third sample sleep 30 s in the sampler
    // thread; the signal comes once the batch says no sample came.
    let mut kid = Kid(Command::new(BIN)
        .args(["--batch", "--interval", "0.2", "--count", "10000"])
        .env("IOLENS_DEBUG_STALL", "30")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap());
    let pid = kid.0.id();
    let mut stdout = kid.0.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("no sample for") {
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0, "batch ended: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    std::thread::sleep(Duration::from_millis(1200));
    kill(pid, libc::SIGINT);
    let st = wait_within(&mut kid.0, Duration::from_secs(3));
    let mut err = String::new();
    let _ = kid.0.stderr.take().unwrap().read_to_string(&mut err);
    println!("stuck: {st:?}; stderr: {err}");
    assert_eq!(st.signal(), Some(libc::SIGINT));
    assert!(
        err.contains("a read is stuck in the kernel (IOLENS_DEBUG_STALL for "),
        "stderr: {err}"
    );
}

#[test]
fn dashboard_restores_the_terminal_then_ends_by_the_signal() {
    if !have("tmux") {
        eprintln!("skipped: tmux not installed");
        return;
    }
    let t = Tmux::shell();
    let dir = tempfile::tempdir().unwrap();
    for (sig, name) in SIGNALS {
        let pidfile = dir.path().join(name);
        // The shell reports how the child ended: $? is 128 + the signal
        // only when it was killed by it or exited with that status, so the
        // wait status is also printed by a small python parent.
        t.type_text(&format!(
            "python3 -c 'import subprocess,sys; p=subprocess.Popen([\"sh\",\"-c\",\"echo $$ > {}; exec {BIN}\"]); print(\"RC=%d\" % p.wait())'; echo EXIT=$?",
            pidfile.display()
        ));
        t.keys(&["Enter"]);
        t.wait_for("the dashboard", |s| s.contains("Processes"));
        let pid: u32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
        wait_caught(pid, sig);
        kill(pid, sig);
        // Popen's returncode is -N for "killed by signal N".
        let s = t.assert_restored("0");
        assert!(s.contains(&format!("RC=-{sig}")), "{name}: {s}");
        println!("dashboard: {name} -> terminal restored, killed by {name} (RC=-{sig})");
        t.keys(&["C-l"]);
        t.type_text("clear");
        t.keys(&["Enter"]);
        t.wait_for("a clear screen", |s| !s.contains("RC="));
    }
}
