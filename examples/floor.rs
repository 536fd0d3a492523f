//! The floor of a per-process I/O monitor, for `benches/overhead.sh`: what
//! any tool that reports per-process I/O must at least do every sample —
//! list /proc, then open, read and close every `/proc/<pid>/io`. Nothing is
//! parsed, kept or printed but one line per pass.
//!
//!   cargo run --release --example floor -- [INTERVAL_S] [PASSES]
//!
//! Runs PASSES passes (default: until killed), one every INTERVAL_S seconds
//! (default 1), and prints for each pass the processes seen, the files read
//! and the CPU time the pass took (user + system, of this process).

use std::io::{Read, Write};
use std::time::{Duration, Instant};

fn cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// One pass: (processes listed, io files read).
fn pass(buf: &mut Vec<u8>) -> (usize, usize) {
    let (mut listed, mut read) = (0, 0);
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return (0, 0);
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().filter(|s| s.bytes().all(|c| c.is_ascii_digit())) else {
            continue;
        };
        listed += 1;
        if let Ok(mut f) = std::fs::File::open(format!("/proc/{pid}/io")) {
            buf.clear();
            if f.read_to_end(buf).is_ok() {
                read += 1;
            }
        }
    }
    (listed, read)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let every = args
        .next()
        .and_then(|a| a.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(1.0);
    let passes = args.next().and_then(|a| a.parse::<u64>().ok()).unwrap_or(u64::MAX);
    let start = Instant::now();
    let mut buf = Vec::with_capacity(4096);
    let mut out = std::io::stdout().lock();
    for k in 0..passes {
        let t = cpu_ns();
        let (listed, read) = pass(&mut buf);
        let ms = (cpu_ns() - t) as f64 / 1e6;
        if writeln!(out, "pass {k}: {listed} processes, {read} io files, {ms:.3} ms CPU")
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
        let next = start + Duration::from_secs_f64(every * (k + 1) as f64);
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
    }
}
