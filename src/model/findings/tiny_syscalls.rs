//! Tiny syscalls: a process making many read/write syscalls of a few KiB
//! or less each (`dd` with its default 512-byte block): the CPU time per
//! byte goes to the calls. From `/proc/<pid>/io`: calls are
//! Δsyscr + Δsyscw, bytes Δrchar + Δwchar (cache hits, pipes and sockets
//! included: what the calls moved).
//!
//! Not when the device sets the pace: a process whose calls are device
//! requests (traced requests ≥ `max_requests_pct` of its calls: O_DIRECT
//! or uncached reads of a few KiB, fio at QD 1) or that waits on block I/O
//! (IO% ≥ `max_io_wait_pct`) is bound by the device, not by its calls.

use serde::{Deserialize, Serialize};

use super::cfg::ON_S;
use super::{Candidate, Culprit, Evidence, Severity, Subject};
use crate::model::Model;

pub const ID: &str = "tiny_syscalls";

/// Read + write syscalls per second at or above which a process is judged.
pub const MIN_CALLS_PER_S: f64 = 10_000.0;
/// Average bytes per call at or below which the calls are tiny.
pub const MAX_AVG_BYTES: f64 = 4096.0;
/// Traced device requests per call, %, at or above which the calls are
/// the device's requests (the device sets the pace): not judged.
pub const MAX_REQUESTS_PCT: f64 = 50.0;
/// IO% (delay accounting) at or above which the process waits on the
/// device more than on its calls: not judged.
pub const MAX_IO_WAIT_PCT: f64 = 50.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TinySyscallsCfg {
    pub on_s: f64,
    pub min_calls_per_s: f64,
    pub max_avg_bytes: f64,
    pub max_requests_pct: f64,
    pub max_io_wait_pct: f64,
}

impl Default for TinySyscallsCfg {
    fn default() -> Self {
        TinySyscallsCfg {
            on_s: ON_S,
            min_calls_per_s: MIN_CALLS_PER_S,
            max_avg_bytes: MAX_AVG_BYTES,
            max_requests_pct: MAX_REQUESTS_PCT,
            max_io_wait_pct: MAX_IO_WAIT_PCT,
        }
    }
}

/// The device sets the pace: the calls are its requests (traced), or the
/// process waits on block I/O (IO%).
fn device_paced(m: &Model, pid: i32, r: &crate::model::process::ProcRates, calls: f64, c: &TinySyscallsCfg) -> bool {
    if r.io_wait_pct.is_some_and(|w| w >= c.max_io_wait_pct) {
        return true;
    }
    let Some(dt) = m.interval_s.filter(|d| *d > 0.0) else {
        return false;
    };
    let requests: u64 = m.trace.proc_rows(pid).map(|(_, t)| t.issued).sum();
    m.trace.active && requests as f64 / dt >= calls * c.max_requests_pct / 100.0
}

pub fn eval(m: &Model, ignore_pid: Option<i32>, c: &TinySyscallsCfg, out: &mut Vec<Candidate>) {
    for p in &m.procs {
        let Some(r) = p.rates.as_deref() else { continue };
        let calls = r.syscr_per_s + r.syscw_per_s;
        if calls < c.min_calls_per_s || p.worker.is_some() || p.exited || Some(p.raw.key.pid) == ignore_pid {
            continue;
        }
        let bytes = r.rchar_bps + r.wchar_bps;
        let avg = bytes / calls;
        if avg > c.max_avg_bytes || device_paced(m, p.raw.key.pid, r, calls, c) {
            continue;
        }
        let comm = p.raw.comm.to_string();
        out.push(Candidate {
            rule: ID,
            severity: Severity::Warning,
            subject: Subject::Process {
                pid: p.raw.key.pid,
                comm: comm.clone(),
            },
            evidence: vec![
                Evidence::new("syscalls", Some(calls), "1/s", "/proc/<pid>/io syscr + syscw"),
                Evidence::new("bytes per call", Some(avg), "B", "/proc/<pid>/io (rchar + wchar) / (syscr + syscw)"),
                Evidence::new("bytes", Some(bytes), "B/s", "/proc/<pid>/io rchar + wchar"),
            ],
            culprits: vec![Culprit {
                pid: p.raw.key.pid,
                comm: comm.clone(),
                value: calls,
                unit: "syscalls/s",
            }],
            text: format!(
                "{comm} (PID {}) makes {:.0} read/write syscalls per second of {:.0} bytes each on average: the calls, not the disk, set its speed.",
                p.raw.key.pid, calls, avg
            ),
            next: format!(
                "use larger reads and writes (dd bs=1M, a buffered writer); strace -c -p {} shows the calls",
                p.raw.key.pid
            ),
        });
    }
}
