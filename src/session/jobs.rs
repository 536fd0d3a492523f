//! The jobs engine of `iolens progress`: finds the jobs among the listed
//! processes ([`crate::model::jobs`]), reads their processes
//! ([`crate::collect::jobproc`]), starts one walk per job for its total
//! ([`crate::collect::walk`], a child process; at most one outstanding per
//! mount), and folds each sample into [`JobTracker`]. The walk's pipe is
//! read without blocking, so a pass never waits on it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::jobfiles::{FileTracking, Walked};
use crate::collect::jobproc::{self, JobProc, pipe_inode};
use crate::collect::mountinfo::{self, Mount};
use crate::collect::walk::{Request, Walk, WalkState};
use crate::format::{self, escape};
use crate::model::jobs::args::{self, Sources};
use crate::model::jobs::track::{JobInput, JobView, Total};
use crate::model::jobs::{ProcFacts, Tool, group};

/// How long a walk may run.
pub const WALK_LIMIT: Duration = Duration::from_secs(120);

/// Comms that can start a job.
const TOOL_COMMS: &[&str] = &[
    "tar", "gtar", "bsdtar", "rsync", "cp", "mv", "zip", "7z", "7za", "7zr", "7zz", "borg", "restic", "cpio", "dd",
];

/// Whether a comm can be a job's root (cheap: the pass checks every listed
/// process).
pub fn tool_comm(comm: &str) -> bool {
    TOOL_COMMS.contains(&comm)
}

enum TotalSrc {
    Walking { walk: Walk, mount: u64 },
    Fixed(Total),
}

struct Known {
    tool: Tool,
    sources: Sources,
    command: String,
    total: TotalSrc,
    /// The sources as walked, once the walk is done.
    walked: Option<Walked>,
}

/// Jobs across passes.
pub struct Engine {
    known: HashMap<(i32, u64), Known>,
    argv: HashMap<(i32, u64), Vec<Vec<u8>>>,
    pwd: HashMap<(i32, u64), Vec<u8>>,
    /// Walk into FUSE, network and automount filesystems (`--walk-network`).
    pub network: bool,
    /// The jobs' read trace.
    files: Files,
}

/// The jobs' read trace.
enum Files {
    /// Not traced, and why.
    Off(String),
    /// Asked for: it starts at the first pass.
    Wanted,
    On(Box<FileTracking>),
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine").field("jobs", &self.known.len()).finish()
    }
}

impl Engine {
    pub fn new(network: bool) -> Self {
        Engine {
            known: HashMap::new(),
            argv: HashMap::new(),
            pwd: HashMap::new(),
            network,
            files: Files::Off(
                "the files a job reads are traced only by a live session as root, without --no-trace".into(),
            ),
        }
    }

    /// Trace the files the jobs read ([`FileTracking`], root only): their
    /// files done are then counted exactly where they can be. The trace
    /// starts at the first pass ([`Engine::read`]), in the thread that
    /// samples: setting up its instance takes about 20 ms, which the
    /// dashboard's first frame does not wait for.
    pub fn trace_files(&mut self) {
        self.files = Files::Wanted;
    }

    /// One pass: `candidates` are the listed pids whose comm is a tool's.
    /// The jobs' current files are left to the tracker (from the open-file
    /// scan).
    pub fn read(&mut self, candidates: &[i32]) -> Vec<JobInput> {
        if matches!(self.files, Files::Wanted) {
            self.files = match FileTracking::start(TOOL_COMMS) {
                Ok(f) => Files::On(Box::new(f)),
                Err(e) => Files::Off(format!("the files a job reads are not traced: {e}")),
            };
        }
        // Drained at every pass, jobs or not: a job's first reads wait
        // there until it is listed.
        if let Files::On(f) = &mut self.files {
            f.poll();
        }
        if candidates.is_empty() && self.known.is_empty() {
            return Vec::new();
        }
        let procs = self.family(candidates);
        let facts: Vec<ProcFacts> = procs
            .values()
            .map(|p| ProcFacts {
                pid: p.pid,
                ppid: p.ppid,
                comm: p.comm.clone(),
                argv: self.argv.get(&(p.pid, p.start_time)).cloned().unwrap_or_default(),
                stdin_pipe: p.stdin.as_deref().and_then(pipe_inode),
                stdout_pipe: p.stdout.as_deref().and_then(pipe_inode),
            })
            .collect();
        let mut inputs = Vec::new();
        let mut live = Vec::new();
        for g in group(&facts) {
            let Some(root) = procs.get(&g.root) else { continue };
            let key = (root.pid, root.start_time);
            live.push(key);
            if !self.known.contains_key(&key) {
                // Its sources come from its command line: none read yet,
                // the job waits for the next sample.
                let Some(argv) = self.argv.get(&key).cloned() else {
                    continue;
                };
                let k = self.prepare(g.tool, &argv, root);
                self.known.insert(key, k);
            }
            let Some(k) = self.known.get_mut(&key) else { continue };
            let total = poll_total(k);
            let pids: Vec<i32> = g.pids().collect();
            let (files_done, files_why) = match &mut self.files {
                Files::On(f) => f.job(key, k.tool, &pids, k.walked.as_ref()),
                Files::Off(why) => (None, Some(why.clone())),
                Files::Wanted => (None, None),
            };
            // The root's reads; cp/mv copy with copy_file_range, whose bytes
            // count on both sides once a call returns (a whole file): the
            // tracker adds what the destination holds beyond its position.
            let position = root.io.map(|io| match k.tool {
                Tool::Cp | Tool::Mv => io.rchar.max(io.wchar),
                _ => io.rchar,
            });
            let mut notes: Vec<String> = k.sources.estimate.iter().map(|s| s.to_string()).collect();
            if k.sources.skips_unchanged {
                notes.push("files already up to date are skipped unread: the percent is of the bytes read".into());
            }
            inputs.push(JobInput {
                key,
                tool: k.tool,
                command: k.command.clone(),
                pids,
                position,
                total,
                notes,
                current: None,
                files_done,
                files_why,
                age_ns: age_ns(root.start_time),
                gone: false,
            });
        }
        if let Files::On(f) = &mut self.files {
            for (key, files_done) in f.retain(&live) {
                if let Some(k) = self.known.get(&key) {
                    inputs.push(JobInput {
                        key,
                        tool: k.tool,
                        command: k.command.clone(),
                        pids: Vec::new(),
                        position: None,
                        total: Total::Unknown { why: String::new() },
                        notes: Vec::new(),
                        current: None,
                        files_done,
                        files_why: None,
                        age_ns: None,
                        gone: true,
                    });
                }
            }
        }
        self.known.retain(|k, _| live.contains(k));
        self.argv
            .retain(|k, _| procs.values().any(|p| (p.pid, p.start_time) == *k));
        self.pwd
            .retain(|k, _| procs.values().any(|p| (p.pid, p.start_time) == *k));
        inputs
    }

    fn walking_mounts(&self) -> Vec<u64> {
        self.known
            .values()
            .filter_map(|k| match &k.total {
                TotalSrc::Walking { walk, mount } if matches!(walk.state, WalkState::Counting { .. }) => Some(*mount),
                _ => None,
            })
            .collect()
    }

    /// The candidates, their descendants and their siblings (pipeline
    /// partners), read once each.
    fn family(&mut self, candidates: &[i32]) -> HashMap<i32, JobProc> {
        let mut out: HashMap<i32, JobProc> = HashMap::new();
        let mut todo: Vec<i32> = candidates.to_vec();
        let mut parents = Vec::new();
        while let Some(pid) = todo.pop() {
            if out.contains_key(&pid) || out.len() >= 1024 {
                continue;
            }
            let Some(p) = jobproc::read(pid, false) else { continue };
            let key = (p.pid, p.start_time);
            // An empty command line (read while the process was in exec)
            // is not kept: it is read again next time.
            if !self.argv.contains_key(&key)
                && let Some(full) = jobproc::read(pid, true).filter(|f| !f.argv.is_empty())
            {
                self.argv.insert(key, full.argv);
                if let Some(pwd) = full.pwd {
                    self.pwd.insert(key, pwd);
                }
            }
            todo.extend(jobproc::children(pid));
            if candidates.contains(&pid) {
                parents.push(p.ppid);
            }
            out.insert(pid, p);
        }
        for pp in parents {
            for sib in jobproc::children(pp) {
                if !out.contains_key(&sib)
                    && let Some(p) = jobproc::read(sib, false)
                {
                    out.insert(sib, p);
                }
            }
        }
        out
    }

    /// Parse the command line and start the walk.
    fn prepare(&mut self, tool: Tool, argv: &[Vec<u8>], root: &JobProc) -> Known {
        let mut sources = args::sources(tool, argv.get(1..).unwrap_or_default());
        if tool == Tool::Cpio
            && let Some(inp) = root.stdin.as_deref().filter(|l| l.starts_with(b"/"))
        {
            sources = args::cpio::from_stdin_file(sources, inp);
        }
        let command = argv
            .iter()
            .map(|a| String::from_utf8_lossy(a))
            .collect::<Vec<_>>()
            .join(" ");
        let total = match self.request(&sources, root) {
            Err(why) => TotalSrc::Fixed(Total::Unknown { why }),
            Ok((req, mount)) => {
                if self.walking_mounts().contains(&mount) {
                    TotalSrc::Fixed(Total::Unknown {
                        why: "another walk is counting on the same filesystem".into(),
                    })
                } else {
                    match Walk::start(&req, WALK_LIMIT) {
                        Ok(walk) => TotalSrc::Walking { walk, mount },
                        Err(why) => TotalSrc::Fixed(Total::Unknown { why }),
                    }
                }
            }
        };
        Known {
            tool,
            sources,
            command,
            total,
            walked: None,
        }
    }

    /// The walk request (absolute paths) and the mount it starts on.
    fn request(&self, s: &Sources, root: &JobProc) -> Result<(Request, u64), String> {
        if let Some(u) = s.unknown {
            return Err(u.to_string());
        }
        let cwd = root
            .cwd
            .as_deref()
            .ok_or("the job's working directory is not readable")?;
        let cwd = Path::new(OsStr::from_bytes(cwd));
        let abs = |dir: Option<&[u8]>, p: &[u8]| -> PathBuf {
            let base = match dir {
                Some(d) => cwd.join(OsStr::from_bytes(d)),
                None => cwd.to_path_buf(),
            };
            base.join(OsStr::from_bytes(p))
        };
        // Where a relative operand may be: a tool that changed directory
        // (rsync's sender goes into its source) was started in its PWD or
        // a directory above its cwd.
        let pwd = self
            .pwd
            .get(&(root.pid, root.start_time))
            .map(|p| Path::new(OsStr::from_bytes(p)));
        let alts = |r: &args::Root| -> Vec<PathBuf> {
            let mut v = vec![abs(r.dir.as_deref(), &r.path)];
            if !r.path.starts_with(b"/") && r.dir.is_none() {
                let p = Path::new(OsStr::from_bytes(&r.path));
                v.extend(pwd.filter(|d| *d != cwd).map(|d| d.join(p)));
                v.extend(cwd.ancestors().skip(1).take(3).map(|d| d.join(p)));
            }
            v
        };
        let req = Request {
            roots: s.roots.iter().map(alts).collect(),
            lists: s
                .lists
                .iter()
                .map(|l| (abs(None, &l.path), abs(l.dir.as_deref(), b"")))
                .collect(),
            excludes: s.excludes.clone(),
            recurse: s.recurse,
            one_fs: s.one_fs,
            links_once: s.links_once,
            holes_skipped: s.holes_skipped,
            network: self.network,
        };
        let mounts = std::fs::read("/proc/self/mountinfo")
            .map(|t| mountinfo::parse(&t))
            .map_err(|e| format!("reading /proc/self/mountinfo: {e}"))?;
        let first = req
            .roots
            .first()
            .and_then(|r| r.first())
            .or(req.lists.first().map(|l| &l.0))
            .ok_or("no sources")?;
        let m = mount_of(&mounts, first).ok_or("the sources' filesystem is not in the mount table")?;
        if !self.network && mountinfo::may_block(&m.fs_type) {
            return Err(format!(
                "sources on a {} filesystem are not walked (--walk-network walks them)",
                m.fs_type
            ));
        }
        Ok((req, m.id))
    }
}

/// How long a process started at `start_ticks` (clock ticks after boot)
/// has run.
fn age_ns(start_ticks: u64) -> Option<u64> {
    let start_ns = start_ticks as f64 * 1e9 / super::clk_tck();
    let now = crate::collect::taskstats::boot_ns() as f64;
    (start_ns.is_finite() && now >= start_ns).then_some((now - start_ns) as u64)
}

/// The mount holding `p` (longest mount point prefix; the last mounted
/// wins among equal ones).
fn mount_of<'a>(mounts: &'a [Mount], p: &Path) -> Option<&'a Mount> {
    mounts
        .iter()
        .filter(|m| p.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.len())
}

fn poll_total(k: &mut Known) -> Total {
    let s = &k.sources;
    let adjust = |bytes: u64| {
        let b = bytes.saturating_sub(s.skip_bytes);
        s.byte_cap.map_or(b, |c| b.min(c))
    };
    match &mut k.total {
        TotalSrc::Fixed(t) => t.clone(),
        TotalSrc::Walking { walk, .. } => {
            walk.poll();
            if k.walked.is_none()
                && let WalkState::Done { total } = &walk.state
            {
                let counts = *total;
                let ids = std::mem::take(&mut walk.ids);
                k.walked = Some(Walked {
                    fs_types: fs_types(&ids),
                    ids: std::sync::Arc::new(ids),
                    ids_over: walk.ids_over,
                    counts,
                });
            }
            match &walk.state {
                WalkState::Counting { so_far } => Total::Counting {
                    files: so_far.files,
                    bytes: so_far.bytes,
                },
                WalkState::Done { total } if total.missing > 0 => Total::Unknown {
                    why: format!("{} source operand(s) not found from the job's directory", total.missing),
                },
                WalkState::Done { total } => Total::Known {
                    files: total.files,
                    bytes: adjust(total.bytes),
                },
                WalkState::Failed { why } => Total::Unknown { why: why.clone() },
            }
        }
    }
}

/// The filesystem types of the devices of `ids` (sorted by device).
fn fs_types(ids: &[crate::collect::walk::FileId]) -> Vec<String> {
    let mut devs: Vec<u64> = ids.iter().map(|i| i.0).collect();
    devs.dedup();
    let mounts = std::fs::read("/proc/self/mountinfo")
        .map(|t| mountinfo::parse(&t))
        .unwrap_or_default();
    let mut out: Vec<String> = devs
        .iter()
        .map(|d| {
            mounts
                .iter()
                .find(|m| (u64::from(m.major) << 32 | u64::from(m.minor)) == *d)
                .map_or_else(|| "an unknown filesystem".to_string(), |m| m.fs_type.clone())
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The text lines of the jobs.
pub fn report(views: &[JobView]) -> String {
    let mut s = String::new();
    for v in views {
        let _ = writeln!(s, "[{}] job: {}", v.pid, escape(&v.command));
        let done = v
            .bytes_done
            .map_or_else(|| format::NA.to_string(), |b| format::decimal(b as f64));
        let rate = v.rate_bps.map_or_else(|| format::NA.to_string(), format::rate);
        let line = match (&v.total, v.percent) {
            (Total::Counting { files, bytes }, _) => format!(
                "counting: {} files, {} so far; read {done}, {rate}",
                format::thousands(*files),
                format::decimal(*bytes as f64)
            ),
            (Total::Known { bytes, files }, Some(p)) => format!(
                "{p:.1}% ({done} / {}) {rate}, eta {}, {}",
                format::decimal(*bytes as f64),
                format::duration(v.eta_s),
                crate::present::transfer::files_text(v, *files)
            ),
            _ => format!(
                "n/a% ({}); read {done}, {rate}",
                escape(v.percent_na.as_deref().unwrap_or("unknown"))
            ),
        };
        let _ = writeln!(s, "\t{} {line}", v.phase);
        if let Some(f) = &v.current_file {
            let _ = writeln!(s, "\tcurrent file: {}", escape(f));
        }
        for n in &v.notes {
            let _ = writeln!(s, "\tnote: {n}");
        }
        if let Some(why) = &v.files_note {
            let _ = writeln!(s, "\tnote: files done estimated from the bytes: {}", escape(why));
        }
    }
    s
}
