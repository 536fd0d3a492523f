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
    read_threads_of(r, pid, 0)
}

/// [`read_threads`] of a process whose stat, just read, gave
/// `num_threads`. With one thread, that thread is its leader (a process
/// whose leader exited still counts it until the whole group ends, and an
/// exec by another thread makes that one the leader, with the pid), so
/// `task/<pid>/io` is read without listing the task directory: under a
/// fork storm the listing (an open, two getdents64 and a close) was most
/// of this read for the few processes doing I/O. A thread made since the
/// stat read is seen at the next read, from zero (or in its exit record).
pub fn read_threads_of(r: &mut Reader, pid: i32, num_threads: u32) -> Option<Vec<ThreadIo>> {
    if num_threads == 1
        && let Ok(b) = r.read_pid_file(pid, &format!("task/{pid}/io"))
        && let Some(io) = parse_io(b)
    {
        return Some(vec![ThreadIo { tid: pid, io }]);
    }
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

    /// One thread by the stat: its own counters, read without a listing,
    /// equal to what the listing gives; a pid that is gone is `None`.
    #[test]
    fn a_single_threaded_process_is_its_leader() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        let mut r = Reader::new("/");
        let one = read_threads_of(&mut r, pid, 1).unwrap();
        let listed = read_threads(&mut r, pid).unwrap();
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].tid, pid);
        assert_eq!(one, listed);
        assert_eq!(read_threads_of(&mut r, i32::MAX, 1), None);
    }
}
