//! Kernel workers that do I/O on behalf of others.
//!
//! A loop device's backing-file I/O is done by a kworker of the loop
//! device's workqueue (`kworker/u8:3-loop0`, `+loop0` while it runs a work
//! item; `loop0` kernel threads before 5.11). The process reading the loop
//! device is charged its bytes too, so a worker's bytes are the same bytes
//! a second time: its row says which loop device it serves, under a name
//! that does not change with the worker's pid or state, and it is left out
//! of process totals. Which kworker runs the work changes over time, and a
//! kworker's comm names only the workqueue it ran last.

use serde::Serialize;

/// What a kernel worker row stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "device")]
pub enum Worker {
    /// Backing-file I/O of this loop device.
    Loop(String),
    /// Another kworker (filesystem or block-layer work done for others).
    Kworker,
}

impl Worker {
    /// The stable label shown instead of the worker's changing comm.
    pub fn label(&self) -> String {
        match self {
            Worker::Loop(dev) => format!("{dev} backing I/O"),
            Worker::Kworker => "kernel worker".to_string(),
        }
    }
}

fn loop_name(s: &str) -> Option<&str> {
    let n = s.strip_prefix("loop")?;
    (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

/// Classify a process by its comm: `kthread` says it is a kernel thread
/// (child of kthreadd, or kthreadd itself).
pub fn classify(comm: &str, kthread: bool) -> Option<Worker> {
    if !kthread {
        return None;
    }
    if let Some(rest) = comm.strip_prefix("kworker/") {
        // "u8:3-loop0", "0:1+events": the workqueue follows the first - or +.
        let wq = rest.find(['-', '+']).map(|i| &rest[i + 1..]);
        return Some(match wq.and_then(loop_name) {
            Some(dev) => Worker::Loop(dev.to_string()),
            None => Worker::Kworker,
        });
    }
    loop_name(comm).map(|d| Worker::Loop(d.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_workers_get_a_stable_label() {
        let a = classify("kworker/u8:3-loop0", true).unwrap();
        let b = classify("kworker/u8:0+loop0", true).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.label(), "loop0 backing I/O");
        assert_eq!(classify("loop12", true), Some(Worker::Loop("loop12".into())));
        assert_eq!(classify("kworker/u8:1-events_unbound", true), Some(Worker::Kworker));
        assert_eq!(classify("kworker/1:1H-kblockd", true), Some(Worker::Kworker));
        assert_eq!(classify("kworker/u8:1-loopback", true), Some(Worker::Kworker));
        assert_eq!(classify("kworker/0:0", true), Some(Worker::Kworker));
        // A user process calling itself so is not a worker.
        assert_eq!(classify("kworker/u8:3-loop0", false), None);
        assert_eq!(classify("loop0", false), None);
        assert_eq!(classify("dd", true), None);
    }
}
