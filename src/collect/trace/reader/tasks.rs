//! The process (tgid) and kernel-thread flag of the traced tasks: looked
//! up at first sight of a task and cached. A lookup costs far more than an
//! event (`/proc/<pid>/status`, and for a task already gone its exit
//! record or a stream of tracefs's `saved_tgids`: 4.6–7.2 ms of CPU for
//! one exited `dd` on the development VM, whose `saved_tgids` has ~30,000
//! lines), and it is paid per new task, not per event: its CPU is kept
//! apart ([`Tasks::lookup_ns`]) so that the budget does not window the
//! tracing for it (windows would not make it smaller).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use super::super::Side;
use super::super::block::{BlockEvent, Kind};
use super::super::read_small;
use crate::collect::taskstats::ExitTgids;
use crate::collect::thread_cpu_ns;

/// Tasks resolved to (tgid, kernel thread) are forgotten after this many
/// entries (a pid may be reused; the cache stays bounded).
const TASK_CACHE: usize = 8192;

/// The task cache and what its lookups cost.
#[derive(Default)]
pub struct Tasks {
    cache: foldhash::HashMap<i32, (i32, bool)>,
    /// CPU time of the lookups so far (cache misses), ns.
    pub lookup_ns: u64,
}

impl Tasks {
    /// Fill in the process (tgid) and kernel-thread flag of the start
    /// events of `batch` and of the events of `side`, from
    /// `/proc/<pid>/status` at first sight of a task, or, for a task
    /// already gone, from its exit record (`exits`) or else from the tgids
    /// tracefs recorded (`record-tgid`, `saved_tgids` of `tracefs`).
    pub fn resolve(&mut self, batch: &mut [BlockEvent], side: &mut Side, exits: Option<&ExitTgids>, tracefs: &Path) {
        if self.cache.len() > TASK_CACHE {
            self.cache.clear();
        }
        let mut gone = HashSet::new();
        let mut spent = 0;
        let cache = &mut self.cache;
        let mut info_of = |pid: i32| {
            *cache.entry(pid).or_insert_with(|| {
                let t0 = thread_cpu_ns();
                let i = task_info(pid);
                if i.0 == 0 && pid > 0 {
                    gone.insert(pid);
                }
                spent += thread_cpu_ns().saturating_sub(t0);
                i
            })
        };
        for e in batch.iter_mut().filter(|e| e.kind == Kind::Start) {
            (e.tgid, e.kernel) = info_of(e.pid);
        }
        for e in &mut side.files {
            (e.tgid, e.kernel) = info_of(e.pid);
        }
        for e in &mut side.pauses {
            (e.tgid, e.kernel) = info_of(e.pid);
        }
        self.lookup_ns += spent;
        if gone.is_empty() {
            return;
        }
        let t0 = thread_cpu_ns();
        self.resolve_gone(&gone, exits, tracefs);
        for e in batch
            .iter_mut()
            .filter(|e| e.kind == Kind::Start && gone.contains(&e.pid))
        {
            if let Some(&info) = self.cache.get(&e.pid) {
                (e.tgid, e.kernel) = info;
            }
        }
        for e in side.files.iter_mut().filter(|e| gone.contains(&e.pid)) {
            if let Some(&info) = self.cache.get(&e.pid) {
                (e.tgid, e.kernel) = info;
            }
        }
        for e in side.pauses.iter_mut().filter(|e| gone.contains(&e.pid)) {
            if let Some(&info) = self.cache.get(&e.pid) {
                (e.tgid, e.kernel) = info;
            }
        }
        self.lookup_ns += thread_cpu_ns().saturating_sub(t0);
    }

    /// The tgids of tasks already gone, into the cache.
    fn resolve_gone(&mut self, gone: &HashSet<i32>, exits: Option<&ExitTgids>, tracefs: &Path) {
        let mut unknown = gone.clone();
        if let Some(exits) = exits {
            for (pid, tgid) in exits.find(gone) {
                if let Some(i) = self.cache.get_mut(&pid) {
                    i.0 = tgid;
                }
                unknown.remove(&pid);
            }
        }
        let path = tracefs.join("saved_tgids");
        if !unknown.is_empty()
            && let Ok(f) = File::open(&path)
        {
            let stream = io::BufReader::with_capacity(64 * 1024, f.take(SAVED_TGIDS_MAX));
            for (pid, tgid) in saved_tgids(stream, &unknown) {
                if let Some(i) = self.cache.get_mut(&pid) {
                    i.0 = tgid;
                }
            }
        }
    }
}

/// Most bytes of `saved_tgids` read: it has a line for every pid that ran
/// since `record-tgid` was set, up to `pid_max` (4,194,304) lines.
const SAVED_TGIDS_MAX: u64 = 64 << 20;

/// The tgids of the `wanted` pids from `saved_tgids` ("pid tgid" a line),
/// read as a stream that stops once all were found: the file holds every
/// pid the system ran, far more than one read (a 64 KiB read of it ended
/// near pid 15,777 on the development VM, so exited processes with higher
/// pids lost their process).
pub fn saved_tgids(text: impl io::BufRead, wanted: &HashSet<i32>) -> HashMap<i32, i32> {
    let mut out = HashMap::new();
    for line in text.lines() {
        let Ok(line) = line else { break };
        let Some((a, b)) = line.trim().split_once(' ') else {
            continue;
        };
        if let (Ok(pid), Ok(tgid)) = (a.parse::<i32>(), b.trim().parse::<i32>())
            && wanted.contains(&pid)
        {
            out.insert(pid, tgid);
            if out.len() == wanted.len() {
                break;
            }
        }
    }
    out
}

/// (tgid, kernel thread) of a task from `/proc/<pid>/status`; (0, false)
/// when it is gone. pid 0 is the idle task (kernel).
pub fn task_info(pid: i32) -> (i32, bool) {
    if pid <= 0 {
        return (0, true);
    }
    match read_small(Path::new(&format!("/proc/{pid}/status"))) {
        Ok(t) => parse_status(&t),
        Err(_) => (0, false),
    }
}

/// `Tgid:` and `Kthread:` of a status file (kernels without `Kthread:`:
/// a task whose parent is kthreadd, pid 2, or kthreadd itself).
pub fn parse_status(text: &str) -> (i32, bool) {
    let mut tgid = 0;
    let mut kthread = None;
    let mut ppid = -1;
    let mut pid = -1;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else { continue };
        let v = v.trim();
        match k {
            "Tgid" => tgid = v.parse().unwrap_or(0),
            "Pid" => pid = v.parse().unwrap_or(-1),
            "PPid" => ppid = v.parse().unwrap_or(-1),
            "Kthread" => kthread = Some(v == "1"),
            _ => {}
        }
    }
    (tgid, kthread.unwrap_or(ppid == 2 || pid == 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_files() {
        let user = "Name:\tfio\nUmask:\t0022\nState:\tR\nTgid:\t4242\nNgid:\t0\nPid:\t4250\nPPid:\t1\nKthread:\t0\n";
        assert_eq!(parse_status(user), (4242, false));
        let kw = "Name:\tkworker/u8:3\nTgid:\t6503\nPid:\t6503\nPPid:\t2\nKthread:\t1\n";
        assert_eq!(parse_status(kw), (6503, true));
        let old = "Name:\tjbd2/vda1-8\nTgid:\t300\nPid:\t300\nPPid:\t2\n";
        assert_eq!(parse_status(old), (300, true));
        // a pid far down a long file is found; pids not asked for are not kept
        let mut text = String::from("bad\n");
        for pid in 1..30_000 {
            text.push_str(&format!("{pid} {}\n", pid - pid % 3));
        }
        let wanted: HashSet<i32> = [29_290, 7, 40_000].into_iter().collect();
        let saved = saved_tgids(text.as_bytes(), &wanted);
        assert_eq!(saved, HashMap::from([(29_290, 29_289), (7, 6)]));
    }
}
