//! Delay accounting: whether the kernel accounts block I/O delay, the
//! per-thread delays of multi-threaded processes, and switching accounting
//! on as an explicit root action (restored when iolens exits).
//!
//! Since 5.14 delay accounting is off unless `kernel.task_delayacct` is 1.
//! While it is off the counters freeze (they keep their old values), so
//! whether IO% can be known is decided from the sysctl, never from the
//! values. Field 42 of `/proc/<pid>/stat` is the main thread's delay only;
//! a multi-threaded process needs each `/proc/<pid>/task/<tid>/stat`.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Reader;
use super::process::{ProcKey, RawProc, parse_stat};

/// The sysctl, relative to the reader's root.
pub const SYSCTL: &str = "/proc/sys/kernel/task_delayacct";

/// `kernel.task_delayacct`: `Some(true)` when on, `None` when the kernel has
/// no such sysctl (before 5.14, where accounting is on unless booted with
/// `nodelayacct`) or it could not be read.
pub fn read_state(r: &mut Reader) -> Option<bool> {
    r.read_u64(SYSCTL).map(|v| v != 0)
}

/// A process's threads stay read this many samples after its counters last
/// moved (so an interval always has both ends).
pub const THREADS_KEEP_SAMPLES: u32 = 10;

/// Per-thread block I/O delay of the multi-threaded processes that matter:
/// those whose I/O counters moved, or that are in state D, within the last
/// [`THREADS_KEEP_SAMPLES`] samples. Only used while accounting is on.
#[derive(Debug, Default)]
pub struct ThreadDelays {
    /// Per process: the counters last seen (rchar + wchar + read_bytes +
    /// write_bytes, as one number that moves when any of them does) and
    /// samples since they last moved.
    seen: HashMap<ProcKey, (u64, u32)>,
}

fn io_sum(p: &RawProc) -> Option<u64> {
    let io = p.io.as_ref().ok()?;
    Some(
        io.rchar
            .wrapping_add(io.wchar)
            .wrapping_add(io.read_bytes)
            .wrapping_add(io.write_bytes),
    )
}

impl ThreadDelays {
    /// Fill `thread_blkio` of the processes that matter.
    pub fn read(&mut self, r: &mut Reader, procs: &mut [RawProc]) {
        let mut next = HashMap::with_capacity(self.seen.len());
        for p in procs.iter_mut() {
            let sum = io_sum(p);
            let idle = match (self.seen.get(&p.key), sum) {
                _ if p.state == 'D' => 0,
                (Some((old, idle)), Some(s)) if *old == s => idle.saturating_add(1),
                (Some(_), Some(_)) => 0,
                // First sight: read once (a start for the next interval),
                // then no more unless it moves.
                (None, _) => THREADS_KEEP_SAMPLES - 1,
                (Some((_, idle)), None) => idle.saturating_add(1),
            };
            next.insert(p.key, (sum.unwrap_or(0), idle.min(THREADS_KEEP_SAMPLES)));
            if p.num_threads > 1 && idle < THREADS_KEEP_SAMPLES {
                p.thread_blkio = read_threads(r, p.key.pid).map(Vec::into_boxed_slice);
            }
        }
        self.seen = next;
    }
}

/// (tid, field 42) of every thread of `pid`; `None` when the task directory
/// could not be listed. Threads that end while being read are left out.
fn read_threads(r: &mut Reader, pid: i32) -> Option<Vec<(i32, u64)>> {
    let mut out = Vec::new();
    for tid in r.list_numbers(format!("/proc/{pid}/task")).ok()? {
        let Ok(b) = r.read(format!("/proc/{pid}/task/{tid}/stat")) else {
            continue;
        };
        if let Some(ticks) = parse_stat(b).and_then(|s| s.blkio_ticks) {
            out.push((tid, ticks));
        }
    }
    out.sort_unstable();
    Some(out)
}

/// The value `kernel.task_delayacct` had before iolens switched it on, to be
/// written back when iolens exits.
static RESTORE: Mutex<Option<u64>> = Mutex::new(None);

/// Switch delay accounting on (root; an explicit user action). Remembers the
/// previous value for [`restore`]; a second call keeps the first previous
/// value. Returns what was done, or why not.
pub fn switch_on(r: &mut Reader) -> Result<String, String> {
    if !r.is_live() {
        return Err("not on a captured /proc and /sys tree (--root)".into());
    }
    let path = r.path(SYSCTL);
    let old = r
        .read_u64(SYSCTL)
        .ok_or_else(|| format!("reading {}: not available on this kernel", path.display()))?;
    if old != 0 {
        return Ok("delay accounting was already on".into());
    }
    std::fs::write(&path, b"1").map_err(|e| format!("writing 1 to {}: {e}", path.display()))?;
    if let Ok(mut g) = RESTORE.lock() {
        g.get_or_insert(old);
    }
    Ok(format!(
        "kernel.task_delayacct set to 1 (was {old}); restored when iolens exits"
    ))
}

/// Write back the value `kernel.task_delayacct` had before [`switch_on`], if
/// it was changed. Safe to call more than once and from any exit path.
pub fn restore() {
    let old = match RESTORE.lock() {
        Ok(mut g) => g.take(),
        Err(p) => p.into_inner().take(),
    };
    if let Some(old) = old {
        let _ = std::fs::write(SYSCTL, old.to_string());
    }
}

/// Whether iolens changed the sysctl (and will restore it).
pub fn changed_by_us() -> bool {
    RESTORE.lock().map(|g| g.is_some()).unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    #[test]
    fn state_from_the_sysctl_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = Reader::new(dir.path());
        assert_eq!(read_state(&mut r), None);
        std::fs::create_dir_all(dir.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(dir.path().join("proc/sys/kernel/task_delayacct"), "0\n").unwrap();
        assert_eq!(read_state(&mut r), Some(false));
        std::fs::write(dir.path().join("proc/sys/kernel/task_delayacct"), "1\n").unwrap();
        assert_eq!(read_state(&mut r), Some(true));
    }

    #[test]
    fn switch_on_refuses_a_captured_tree() {
        let mut r = Reader::new(format!("{FIX}/root-6.8"));
        assert!(switch_on(&mut r).is_err());
        assert!(!changed_by_us());
    }

    #[test]
    fn threads_are_read_while_the_process_moves_and_a_while_after() {
        let mut r = Reader::new("/");
        let me = std::process::id() as i32;
        let t = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(500)));
        let mut p = RawProc {
            num_threads: 2,
            ..RawProc::example(me, 1, "me")
        };
        let mut td = ThreadDelays::default();
        let mut read = Vec::new();
        for i in 0..(THREADS_KEEP_SAMPLES + 3) {
            // Moves in the first two samples only.
            if let Ok(io) = &mut p.io {
                io.rchar = u64::from(i.min(1));
            }
            p.thread_blkio = None;
            td.read(&mut r, std::slice::from_mut(&mut p));
            read.push(p.thread_blkio.is_some());
        }
        t.join().unwrap();
        let n = read.iter().filter(|x| **x).count();
        // First sight, the move, then THREADS_KEEP_SAMPLES - 1 idle samples.
        assert_eq!(n, 1 + THREADS_KEEP_SAMPLES as usize, "{read:?}");
        assert!(!read[read.len() - 1]);
    }

    #[test]
    fn threads_of_a_live_multithreaded_process() {
        // This test binary runs several threads; the stat of each is read.
        let mut r = Reader::new("/");
        let me = std::process::id() as i32;
        let t = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(300)));
        let v = read_threads(&mut r, me).unwrap();
        t.join().unwrap();
        assert!(v.len() >= 2, "{v:?}");
        assert!(v.iter().any(|(tid, _)| *tid == me));
    }
}
