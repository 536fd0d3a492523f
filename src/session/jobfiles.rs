//! The jobs' files done from the read trace ([`ReadTrace`]): each pass
//! drains the trace's buffers without blocking and gives every traced read
//! to the job its process belongs to, or, for a process not in a job yet
//! (a job is listed a pass after it starts), keeps it aside until it is
//! (at most [`PENDING_PIDS`] processes, for [`PENDING_PASSES`] passes).

use std::collections::HashMap;
use std::sync::Arc;

use crate::collect::trace::reads::{FileRead, ReadTrace};
use crate::collect::walk::{Counts, FileId};
use crate::model::jobs::Tool;
use crate::model::jobs::files::{Facts, ReadFiles, estimate_why, tick_at_or_after};

/// Processes not in a job whose reads are kept.
pub const PENDING_PIDS: usize = 1024;
/// Passes a process's reads are kept while it is in no job.
pub const PENDING_PASSES: u64 = 20;
/// Tasks resolved to their process, forgotten past this many.
const TASKS: usize = 4096;

/// What a job's sources are, once walked.
#[derive(Debug, Clone)]
pub struct Walked {
    pub ids: Arc<Vec<FileId>>,
    pub ids_over: bool,
    pub counts: Counts,
    /// The filesystem types of the sources' devices.
    pub fs_types: Vec<String>,
}

/// The jobs' traced reads.
#[derive(Debug)]
pub struct FileTracking {
    trace: ReadTrace,
    traced_from_tick: u64,
    pending: HashMap<i32, (u64, ReadFiles)>,
    /// Reads dropped for want of room among the pending processes.
    dropped: u64,
    jobs: HashMap<(i32, u64), ReadFiles>,
    pid_job: HashMap<i32, (i32, u64)>,
    tasks: HashMap<i32, i32>,
    events: Vec<FileRead>,
    pass: u64,
}

fn hz() -> u64 {
    super::clk_tck() as u64
}

impl FileTracking {
    pub fn start(comms: &[&str]) -> Result<FileTracking, String> {
        let trace = ReadTrace::start(comms)?;
        Ok(FileTracking {
            traced_from_tick: tick_at_or_after(trace.on_boot_ns, hz()),
            trace,
            pending: HashMap::new(),
            dropped: 0,
            jobs: HashMap::new(),
            pid_job: HashMap::new(),
            tasks: HashMap::new(),
            events: Vec::new(),
            pass: 0,
        })
    }

    fn tgid(&mut self, tid: i32) -> i32 {
        if self.pid_job.contains_key(&tid) {
            return tid;
        }
        if self.tasks.len() > TASKS {
            self.tasks.clear();
        }
        *self.tasks.entry(tid).or_insert_with(|| {
            let (tgid, _) = crate::collect::trace::reader::task_info(tid);
            if tgid > 0 { tgid } else { tid }
        })
    }

    /// Drain the trace (at the start of a pass).
    pub fn poll(&mut self) {
        self.pass += 1;
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        self.trace.poll(&mut events);
        for e in &events {
            let tgid = self.tgid(e.pid);
            let id = (e.dev, e.ino);
            if let Some(f) = self.pid_job.get(&tgid).and_then(|k| self.jobs.get_mut(k)) {
                f.add(id);
            } else if let Some((_, f)) = self.pending.get_mut(&tgid) {
                f.add(id);
            } else if self.pending.len() < PENDING_PIDS {
                let mut f = ReadFiles::default();
                f.add(id);
                self.pending.insert(tgid, (self.pass, f));
            } else {
                self.dropped += 1;
            }
        }
        self.events = events;
        let pass = self.pass;
        self.pending.retain(|_, (p, _)| pass - *p < PENDING_PASSES);
    }

    /// The job `key` with its processes `pids` this pass: its files done
    /// (exact) or why there is only an estimate.
    pub fn job(
        &mut self,
        key: (i32, u64),
        tool: Tool,
        pids: &[i32],
        walked: Option<&Walked>,
    ) -> (Option<u64>, Option<String>) {
        let f = self.jobs.entry(key).or_default();
        for pid in pids {
            if let Some((_, p)) = self.pending.remove(pid) {
                // Reads before the job was listed (its own processes).
                for id in p.ids() {
                    f.add(id);
                }
            }
            self.pid_job.insert(*pid, key);
        }
        if tool == Tool::Dd {
            return (None, Some("dd copies one device or file: no files to count".into()));
        }
        let Some(w) = walked else {
            return (None, None);
        };
        if !f.has_sources() {
            f.set_sources(w.ids.clone());
        }
        let facts = Facts {
            traced_from_tick: self.traced_from_tick,
            root_start_tick: key.1,
            lost: self.trace.lost() + self.dropped,
            walk: w.counts,
            ids_over: w.ids_over,
            seen_over: f.over,
            fs_types: &w.fs_types,
        };
        match estimate_why(tool, &facts) {
            None => (f.done(), None),
            Some(why) => (None, Some(why)),
        }
    }

    /// Forget the jobs not in `live`; returns the files done of those
    /// just gone (their last reads were drained this pass).
    pub fn retain(&mut self, live: &[(i32, u64)]) -> Vec<((i32, u64), Option<u64>)> {
        let gone: Vec<_> = self.jobs.keys().filter(|k| !live.contains(k)).copied().collect();
        let mut out = Vec::new();
        for k in gone {
            if let Some(f) = self.jobs.remove(&k) {
                out.push((k, f.done()));
            }
        }
        self.pid_job.retain(|_, k| live.contains(k));
        out
    }
}
