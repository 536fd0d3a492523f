//! Processes with command lines of several MB (what any unprivileged user
//! can start) must not make iolens big or slow: command lines are read up
//! to 4 KiB and cut with a mark, so its peak RSS stays under the bound the
//! README states (16 MiB + 16 KiB per process + 64 KiB per device), and the
//! batch output stays small.
//!
//! The 40 shell loops (each reading a small file 5 times a second, so they
//! are in the batch's top list) get 5 MB of arguments each (40 × 128 KiB, the
//! kernel's limit per argument), which needs a stack limit above the usual
//! 8 MiB for execve to accept them; the test raises its own soft limit and
//! skips with a reason where it cannot.

use std::process::{Child, Command, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_iolens");

/// Each loop reads /proc/self/stat 16 times every 0.2 s (~30 kB/s of
/// logical reads), to rank among the busy processes of a loaded machine.
const LOOP: &str = "while :; do for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16; do read -r l < /proc/self/stat; done; sleep 0.2; done";

/// The documented bound, in bytes.
fn bound(processes: usize, devices: usize) -> u64 {
    (16 << 20) + 16 * 1024 * processes as u64 + 64 * 1024 * devices as u64
}

struct Sleepers(Vec<Child>);

impl Drop for Sleepers {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn count_dir(path: &str, keep: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir(path)
        .map(|d| d.flatten().filter(|e| keep(&e.file_name().to_string_lossy())).count())
        .unwrap_or(0)
}

#[test]
fn multi_megabyte_command_lines_stay_under_the_memory_bound() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let old = getrlimit(Resource::Stack);
    let want = 64u64 << 20;
    if old.maximum.is_some_and(|m| m < want) {
        eprintln!("skipped: the hard stack limit is below 64 MiB (needed to exec 5 MB of arguments)");
        return;
    }
    if let Err(e) = setrlimit(
        Resource::Stack,
        Rlimit {
            current: Some(want),
            maximum: old.maximum,
        },
    ) {
        eprintln!("skipped: raising the stack limit: {e}");
        return;
    }
    let arg = "x".repeat(128 * 1024 - 1);
    let mut sleepers = Sleepers(Vec::new());
    for _ in 0..40 {
        let mut c = Command::new("sh");
        c.args(["-c", LOOP, "sh"])
            .args(std::iter::repeat_n(&arg, 40))
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        match c.spawn() {
            Ok(ch) => sleepers.0.push(ch),
            Err(e) => {
                eprintln!("skipped: starting a process with 5 MB of arguments: {e}");
                return;
            }
        }
    }
    let _ = setrlimit(Resource::Stack, old);
    // Each sleeper really has 5 MB of command line.
    let first = sleepers.0[0].id();
    let len = std::fs::read(format!("/proc/{first}/cmdline")).map_or(0, |b| b.len());
    assert!(len > 5_000_000, "cmdline of {first}: {len} bytes");
    let out = Command::new(BIN)
        .args(["--batch", "--json", "--interval", "0.5", "--count", "4", "--top", "100"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage writes the struct we own.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) }, 0);
    let rss = ru.ru_maxrss as u64 * 1024;
    let procs = count_dir("/proc", |n| n.bytes().all(|b| b.is_ascii_digit()));
    let devices = std::fs::read_to_string("/proc/diskstats").map_or(0, |t| t.lines().count());
    let limit = bound(procs, devices);
    eprintln!(
        "peak RSS {:.1} MiB with {procs} processes (40 with 5 MB command lines) and {devices} devices; bound {:.1} MiB; output {} bytes",
        rss as f64 / 1048576.0,
        limit as f64 / 1048576.0,
        out.stdout.len()
    );
    assert!(rss < limit, "peak RSS {rss} over the bound {limit}");
    // Four reports of at most 100 processes, each command line at most 4 KiB.
    assert!(
        out.stdout.len() < 4 * 100 * 5000 + 1_000_000,
        "output {} bytes",
        out.stdout.len()
    );
    // The loops are in the reports (any of the four: on a loaded machine
    // other processes may outrank them in one), their command lines cut
    // with the mark.
    let reports: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let procs: Vec<&serde_json::Value> = reports
        .iter()
        .flat_map(|v| v["processes"].as_array().into_iter().flatten())
        .collect();
    let cmdlines: Vec<&str> = procs.iter().filter_map(|p| p["cmdline"].as_str()).collect();
    let loops: Vec<&&serde_json::Value> = procs
        .iter()
        .filter(|p| p["cmdline"].as_str().is_some_and(|c| c.contains("while :; do")))
        .collect();
    let pids: std::collections::HashSet<i64> = loops.iter().filter_map(|p| p["pid"].as_i64()).collect();
    let cut = loops
        .iter()
        .filter(|p| p["cmdline"].as_str().is_some_and(|c| c.ends_with(" …[cut at 4 KiB]")))
        .count();
    eprintln!(
        "{} loops listed ({} rows), {cut} rows with the cut mark",
        pids.len(),
        loops.len()
    );
    assert!(
        pids.len() >= 10,
        "expected at least 10 of the 40 loops listed, got {}",
        pids.len()
    );
    assert_eq!(cut, loops.len(), "every listed loop's command line is cut");
    assert!(cmdlines.iter().all(|c| c.len() <= 4096 + 32));
}
