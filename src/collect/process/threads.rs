//! Per-thread I/O counters: `/proc/<pid>/task/<tid>/io` holds one live
//! thread's own counters, while `/proc/<pid>/io` also holds those of the
//! process's exited threads and reaped children. Read only for processes
//! whose counters moved (and once when a process is first seen), so the
//! cost stays with the processes doing I/O.

use serde::{Deserialize, Serialize};

use super::{ProcIo, parse_io};
use crate::collect::Reader;

/// One live thread's own counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadIo {
    pub tid: i32,
    pub io: ProcIo,
}

/// The threads of `pid` with their counters, sorted by tid. `None` when the
/// task directory cannot be listed (process gone, not allowed, a replayed
/// tree without it). Threads that end while being read are left out.
pub fn read_threads(r: &mut Reader, pid: i32) -> Option<Vec<ThreadIo>> {
    let tids = r.list_numbers(format!("/proc/{pid}/task")).ok()?;
    let mut out = Vec::with_capacity(tids.len());
    for tid in tids {
        let Ok(b) = r.read_pid_file(pid, &format!("task/{tid}/io")) else {
            continue;
        };
        if let Some(io) = parse_io(b) {
            out.push(ThreadIo { tid, io });
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_threads_sum_to_the_process_when_none_exited() {
        let mut r = Reader::new("/");
        let pid = std::process::id() as i32;
        // A thread of our own that reads, then waits.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            let _ = std::fs::read("/proc/self/stat");
            let _ = rx.recv();
        });
        let threads = read_threads(&mut r, pid).unwrap();
        assert!(threads.len() >= 2, "{threads:?}");
        assert!(threads.iter().any(|t| t.tid == pid));
        assert!(threads.windows(2).all(|w| w[0].tid < w[1].tid));
        let _ = tx.send(());
        let _ = h.join();
        assert_eq!(read_threads(&mut r, i32::MAX), None);
    }
}
