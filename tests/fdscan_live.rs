//! A process holding ~20,000 open files and doing small synced writes
//! (anyone can make one) must not hold iolens's samples back: its table is
//! read within the fd scan's budget, in parts across samples. Every report
//! of `--json --interval 1` comes on time, nothing says "no sample for",
//! and iolens's peak RSS grows by no more than the README's bound.
//!

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/live.rs"]
mod live;
use live::Bg;
use live::tools::need;

const BIN: &str = env!("CARGO_BIN_EXE_iolens");
/// The README's bound on what such a process adds to iolens's peak RSS.
const RSS_BOUND_KIB: i64 = 6 * 1024;
const REPORTS: usize = 12;

/// Wait for `child`: whether it exited 0, and its peak RSS in KiB.
fn wait_with_maxrss(child: &std::process::Child) -> (bool, i64) {
    let mut status = 0;
    // SAFETY: wait4 fills the status and the rusage it is given; the
    // child is ours and not waited for elsewhere.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut u) };
    assert_eq!(pid, child.id() as i32, "wait4");
    (libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, u.ru_maxrss)
}

/// Run iolens for [`REPORTS`] reports at 1 s; the arrival time of each
/// report, its `mono_ns`, what it printed on stderr and its peak RSS (KiB).
#[allow(clippy::zombie_processes)] // waited for with wait4, for its rusage
fn run_iolens() -> (Vec<Instant>, Vec<u64>, String, i64) {
    let mut child = Command::new(BIN)
        .args(["--json", "--interval", "1", "--count", &REPORTS.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut arrived = Vec::new();
    let mut mono = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        arrived.push(Instant::now());
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        mono.push(v["mono_ns"].as_u64().unwrap());
    }
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    let (ok, rss) = wait_with_maxrss(&child);
    assert!(ok, "{err}");
    (arrived, mono, err, rss)
}

#[test]
fn a_process_with_20000_open_files_never_holds_a_sample_back() {
    if !need("python3") {
        return;
    }
    let (soft, hard) = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .zip(rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum)
        .unwrap_or((1024, 1024));
    let n = hard.min(20_000).saturating_sub(100);
    if n < 10_000 {
        eprintln!("skipped: the open-files limit ({soft}/{hard}) allows fewer than 10,000 fds");
        return;
    }
    // The baseline: the same run without the holder.
    let (_, _, err, base) = run_iolens();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::write(&data, vec![7u8; 1 << 20]).unwrap();
    let code = format!(
        "import os,resource,time\n\
         resource.setrlimit(resource.RLIMIT_NOFILE,({n}+64,{n}+64))\n\
         fds=[os.open({data:?},os.O_RDWR) for _ in range({n})]\n\
         print(flush=True)\n\
         i=0\n\
         while True:\n\
         \x20   fd=fds[i%{n}]; os.pread(fd,512,4096); os.pwrite(fd,b'x'*512,8192); os.fdatasync(fd); i+=1; time.sleep(0.05)\n"
    );
    let mut c = Command::new("python3");
    c.args(["-c", &code]);
    let holder = Bg::spawn(c.stdout(Stdio::piped()));
    let fd_dir = format!("/proc/{}/fd", holder.pid());
    let t0 = Instant::now();
    while std::fs::read_dir(&fd_dir).map_or(0, |d| d.count()) < n as usize {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "the holder did not open {n} files"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!err.contains("no sample for"), "baseline: {err}");
    let (arrived, mono, err, peak) = run_iolens();
    drop(holder);
    assert_eq!(arrived.len(), REPORTS, "{err}");
    assert!(!err.contains("no sample for"), "{err}");
    // On time: every sample 1 s after the one before (the first report
    // comes after the first interval), and printed as soon as it is taken.
    for (i, w) in mono.windows(2).enumerate() {
        let gap = (w[1] - w[0]) as f64 / 1e9;
        assert!(
            (0.9..=1.25).contains(&gap),
            "sample {} came {gap:.3} s after the one before",
            i + 1
        );
    }
    for (i, w) in arrived.windows(2).enumerate() {
        let gap = (w[1] - w[0]).as_secs_f64();
        assert!(
            (0.75..=1.25).contains(&gap),
            "report {} printed {gap:.3} s after the one before",
            i + 1
        );
    }
    let grew = peak - base;
    println!("{n} open files: peak RSS {peak} KiB against {base} KiB without them (+{grew} KiB)");
    assert!(grew <= RSS_BOUND_KIB, "+{grew} KiB over the {RSS_BOUND_KIB} KiB bound");
}
