//! Which cgroup each process is in, from `/proc/<pid>/cgroup`, kept between
//! samples.
//!
//! Reading that file for every process every sample was a third of a
//! sample's cost (an open, a read and a close per process). A process's
//! cgroup changes only when something moves it (systemd, a container
//! runtime, a user writing `cgroup.procs`), so the paths are kept per
//! process (pid and start time: a reused pid is a new process) and read
//! again when:
//! - the process is new,
//! - its I/O counters moved since they were last read (the rates it adds
//!   to its cgroup are then placed with a fresh read), or
//! - every [`RECHECK_SAMPLES`] samples (spread over the pids, so each sample
//!   re-reads about a thirtieth of the processes).
//!
//! So an idle process that is moved shows in its new cgroup within
//! [`RECHECK_SAMPLES`] samples, and one doing I/O at once.

use std::sync::Arc;

use super::parse;
use crate::collect::Reader;
use crate::collect::process::{PidMap, ProcIo, ProcKey, ProcSnapshot};

/// An idle process's cgroup is read again at least this often (in samples).
pub const RECHECK_SAMPLES: u64 = 30;

/// The processes of one cgroup of the row hierarchy, and what their
/// paths in the other hierarchies have in common.
#[derive(Debug, Default)]
pub struct Group {
    /// In the order of the process snapshot.
    pub pids: Vec<i32>,
    /// Every member is in the v2 cgroup of the same path.
    pub v2_same_path: bool,
    /// The `name=systemd` path every member is in, if they share one.
    pub systemd: Option<Arc<str>>,
}

impl Group {
    fn add(&mut self, pid: i32, path: &str, p: &Paths) {
        let v2_same = p.unified.as_deref() == Some(path);
        if self.pids.is_empty() {
            self.v2_same_path = v2_same;
            self.systemd = p.systemd.clone();
        } else {
            self.v2_same_path &= v2_same;
            if self.systemd != p.systemd {
                self.systemd = None;
            }
        }
        self.pids.push(pid);
    }
}

/// The processes of each cgroup in one sample.
#[derive(Debug, Default)]
pub struct Members {
    /// Row-hierarchy path → its processes.
    pub by_path: foldhash::HashMap<Arc<str>, Group>,
}

/// A process's paths in the hierarchies iolens reads.
#[derive(Debug)]
struct Paths {
    blkio: Option<Arc<str>>,
    unified: Option<Arc<str>>,
    systemd: Option<Arc<str>>,
}

/// A process's paths as last read.
#[derive(Debug)]
struct Placed {
    /// Shared by every process in the same cgroups.
    paths: Arc<Paths>,
    /// [`ProcIo::mark`] of the counters when the file was read.
    io: Option<u64>,
    seen: u64,
}

/// The kept paths, and the maps of the last sample (their room reused).
#[derive(Debug, Default)]
pub struct MemberCache {
    procs: PidMap<ProcKey, Placed>,
    generation: u64,
    /// The paths seen, by the three paths' bytes (see `paths_key`).
    paths: foldhash::HashMap<Vec<u8>, Arc<Paths>>,
    /// The key of the last file read (its room reused).
    key: Vec<u8>,
    /// `/proc/<pid>/cgroup` reads in the last sample (for tests and benchmarks).
    pub reads: usize,
}

impl MemberCache {
    /// Place every process of `procs`; `v1` picks the blkio line for the
    /// rows, else the v2 one. `out` is cleared and filled.
    pub fn place(
        &mut self,
        r: &mut Reader,
        procs: &ProcSnapshot,
        v1: bool,
        out: &mut Members,
        notes: &mut Vec<String>,
    ) {
        self.generation += 1;
        let generation = self.generation;
        out.by_path.values_mut().for_each(|g| g.pids.clear());
        self.reads = 0;
        let mut failed = 0usize;
        for p in &procs.procs {
            let pid = p.key.pid;
            let io = p.io.as_ref().ok().map(ProcIo::mark);
            let due = (u64::from(pid.unsigned_abs()) + generation).is_multiple_of(RECHECK_SAMPLES);
            if self.procs.get(&p.key).is_none_or(|c| c.io != io || due) {
                self.reads += 1;
                let Ok(buf) = r.read_pid_file(pid, "cgroup") else {
                    self.procs.remove(&p.key);
                    failed += 1;
                    continue;
                };
                let c = parse::parse_proc_cgroup(buf);
                paths_key(&c, &mut self.key);
                let paths = match self.paths.get(&self.key) {
                    Some(a) => a.clone(),
                    None => {
                        let text = |b: Option<&[u8]>| b.map(|b| Arc::from(String::from_utf8_lossy(b)));
                        let a = Arc::new(Paths {
                            blkio: text(c.blkio),
                            unified: text(c.unified),
                            systemd: text(c.systemd),
                        });
                        self.paths.insert(self.key.clone(), a.clone());
                        a
                    }
                };
                let placed = Placed {
                    paths,
                    io,
                    seen: generation,
                };
                self.procs.insert(p.key, placed);
            }
            let Some(fresh) = self.procs.get_mut(&p.key) else {
                continue;
            };
            fresh.seen = generation;
            let paths = &*fresh.paths;
            let row = if v1 { &paths.blkio } else { &paths.unified };
            if let Some(path) = row {
                match out.by_path.get_mut(path) {
                    Some(g) => g.add(pid, path, paths),
                    None => {
                        let mut g = Group::default();
                        g.add(pid, path, paths);
                        out.by_path.insert(path.clone(), g);
                    }
                }
            }
        }
        out.by_path.retain(|_, g| !g.pids.is_empty());
        self.procs.retain(|_, c| c.seen == generation);
        // Paths no process is in any more (the map holds one reference).
        self.paths.retain(|_, a| Arc::strong_count(a) > 1);
        if failed > 0 {
            notes.push(format!(
                "{failed} processes: /proc/<pid>/cgroup unreadable (ended or hidden)"
            ));
        }
    }
}

/// The three paths of a `/proc/<pid>/cgroup` as one key: each after a
/// byte saying whether the line is there (a path holds no newline).
fn paths_key(c: &parse::ProcCgroups<'_>, key: &mut Vec<u8>) {
    key.clear();
    for p in [c.blkio, c.unified, c.systemd] {
        match p {
            Some(p) => {
                key.push(b'+');
                key.extend_from_slice(p);
                key.push(b'\n');
            }
            None => key.push(b'-'),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::process::RawProc;

    /// A captured tree with one process in each of two cgroups.
    fn tree(dir: &std::path::Path, a: &str, b: &str) {
        for (pid, path) in [(10, a), (11, b)] {
            let d = dir.join(format!("proc/{pid}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cgroup"), format!("1:name=systemd:/s{pid}\n0::{path}\n")).unwrap();
        }
    }

    #[test]
    fn processes_in_the_same_cgroups_share_their_paths() {
        let dir = tempfile::tempdir().unwrap();
        for (pid, text) in [
            (10, "1:name=systemd:/s\n0::/a\n"),
            (11, "1:name=systemd:/s\n0::/a\n"),
            (12, "0::/a\n"),
        ] {
            let d = dir.path().join(format!("proc/{pid}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("cgroup"), text).unwrap();
        }
        let mut r = Reader::new(dir.path());
        let procs = ProcSnapshot {
            procs: [10, 11, 12].map(|pid| RawProc::example(pid, 5, "a")).into(),
            ..Default::default()
        };
        let mut cache = MemberCache::default();
        let mut m = Members::default();
        cache.place(&mut r, &procs, false, &mut m, &mut Vec::new());
        let paths = |pid| cache.procs[&ProcKey { pid, start_time: 5 }].paths.clone();
        assert!(Arc::ptr_eq(&paths(10), &paths(11)));
        assert!(!Arc::ptr_eq(&paths(10), &paths(12)));
        assert_eq!(cache.paths.len(), 2);
        let a = m.by_path.get("/a").unwrap();
        assert_eq!(a.pids, [10, 11, 12]);
        // 12 has no systemd path: the group shares none.
        assert_eq!(a.systemd, None);
    }

    #[test]
    fn paths_are_kept_and_read_again_when_counters_move_or_in_turn() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path(), "/a.service", "/b.service");
        let mut r = Reader::new(dir.path());
        let mut procs = ProcSnapshot {
            procs: vec![RawProc::example(10, 5, "a"), RawProc::example(11, 6, "b")],
            ..Default::default()
        };
        let mut cache = MemberCache::default();
        let mut m = Members::default();
        let mut notes = Vec::new();
        cache.place(&mut r, &procs, false, &mut m, &mut notes);
        assert_eq!(cache.reads, 2);
        assert_eq!(m.by_path.get("/a.service").map(|g| g.pids.as_slice()), Some(&[10][..]));
        let b = m.by_path.get("/b.service");
        assert_eq!(b.and_then(|g| g.systemd.as_deref()), Some("/s11"));
        assert!(b.is_some_and(|g| g.v2_same_path));
        // Both processes move; neither did I/O: still where they were read.
        tree(dir.path(), "/c.service", "/c.service");
        let mut reads = Vec::new();
        // Process 10 did I/O: read again at once.
        if let Ok(io) = procs.procs[0].io.as_mut() {
            io.rchar += 1;
        }
        for _ in 0..RECHECK_SAMPLES {
            cache.place(&mut r, &procs, false, &mut m, &mut notes);
            reads.push(cache.reads);
            if reads.len() == 1 {
                assert_eq!(
                    m.by_path.get("/c.service").map(|g| g.pids.as_slice()),
                    Some(&[10][..]),
                    "{reads:?}"
                );
                assert_eq!(m.by_path.get("/b.service").map(|g| g.pids.as_slice()), Some(&[11][..]));
            }
        }
        // Within RECHECK_SAMPLES samples each idle process was read once more.
        assert_eq!(
            m.by_path.get("/c.service").map(|g| g.pids.as_slice()),
            Some(&[10, 11][..])
        );
        assert!(!m.by_path.contains_key("/a.service") && !m.by_path.contains_key("/b.service"));
        assert_eq!(reads.iter().sum::<usize>(), 1 + 2, "{reads:?}");
        // A reused pid (other start time) is a new process: read at once.
        procs.procs[1] = RawProc::example(11, 99, "b2");
        cache.place(&mut r, &procs, false, &mut m, &mut notes);
        assert!(cache.reads >= 1);
        assert!(notes.is_empty(), "{notes:?}");
        // An unreadable file is counted in a note, never a guess.
        std::fs::remove_file(dir.path().join("proc/11/cgroup")).unwrap();
        procs.procs[1] = RawProc::example(11, 100, "b3");
        cache.place(&mut r, &procs, false, &mut m, &mut notes);
        assert!(!m.by_path.values().any(|g| g.pids.contains(&11)));
        assert_eq!(notes.len(), 1, "{notes:?}");
    }
}
