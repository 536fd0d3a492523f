//! A job's files done, counted from the source files its processes read.
//! Pure: the reads come from the jobs' trace
//! ([`crate::collect::trace::reads`]), the sources' identities and facts
//! from the walk ([`crate::collect::walk`]).
//!
//! - **exact** = the distinct source files (device, inode) the job's
//!   processes read, where every read of theirs was traced: the root
//!   started after the trace was on (compared at whole clock ticks, the
//!   granularity of a process's start time), no trace event was lost, and
//!   every source file shows a read (none empty, several-linked or sparse;
//!   all on a filesystem whose reads go through the page cache with the
//!   device and inode the walk sees);
//! - otherwise the estimate from the bytes ([`super::track`]), with the
//!   reason ([`estimate_why`]).

use std::collections::HashSet;
use std::sync::Arc;

use super::Tool;
use crate::collect::walk::{Counts, FileId};

/// The most distinct files kept per job.
pub const MAX_SEEN: usize = 1 << 20;

/// Filesystems whose reads show in the trace with the device and inode
/// `stat` gives (btrfs and overlayfs name other devices; tmpfs and network
/// filesystems read without these tracepoints).
pub const TRACED_FS: &[&str] = &["ext2", "ext3", "ext4", "xfs", "vfat", "msdos", "exfat", "f2fs", "jfs"];

/// The distinct files a job read, and how many of them are its sources.
#[derive(Debug, Clone, Default)]
pub struct ReadFiles {
    seen: HashSet<FileId>,
    /// More than [`MAX_SEEN`] distinct files: no longer counted.
    pub over: bool,
    sources: Option<Arc<Vec<FileId>>>,
    done: u64,
}

impl ReadFiles {
    /// A file read by one of the job's processes.
    pub fn add(&mut self, id: FileId) {
        if self.seen.contains(&id) {
            return;
        }
        if self.seen.len() >= MAX_SEEN {
            self.over = true;
            return;
        }
        self.seen.insert(id);
        if self.sources.as_ref().is_some_and(|s| s.binary_search(&id).is_ok()) {
            self.done += 1;
        }
    }

    /// The sources as walked (sorted): the files read so far are counted
    /// against them once, the later ones as they come.
    pub fn set_sources(&mut self, sources: Arc<Vec<FileId>>) {
        self.done = self.seen.iter().filter(|id| sources.binary_search(id).is_ok()).count() as u64;
        self.sources = Some(sources);
    }

    pub fn has_sources(&self) -> bool {
        self.sources.is_some()
    }

    /// Source files read, once the sources are known.
    pub fn done(&self) -> Option<u64> {
        self.sources.as_ref().map(|_| self.done)
    }

    /// The distinct files read.
    pub fn ids(&self) -> impl Iterator<Item = FileId> + '_ {
        self.seen.iter().copied()
    }

    /// Distinct files read (sources or not).
    pub fn seen(&self) -> usize {
        self.seen.len()
    }
}

/// What decides whether a job's traced count is exact.
#[derive(Debug, Clone, Default)]
pub struct Facts<'a> {
    /// The first clock tick (after boot) at which the trace was surely on.
    pub traced_from_tick: u64,
    /// The root's start time, clock ticks after boot.
    pub root_start_tick: u64,
    /// Trace events lost since tracing started.
    pub lost: u64,
    /// The walk's counts.
    pub walk: Counts,
    /// More source files than the walk lists.
    pub ids_over: bool,
    /// More distinct files read than counted.
    pub seen_over: bool,
    /// The filesystem types of the sources' devices.
    pub fs_types: &'a [String],
}

/// Why a job's files done is an estimate, or `None` when the traced count
/// is exact.
pub fn estimate_why(tool: Tool, f: &Facts<'_>) -> Option<String> {
    if f.root_start_tick < f.traced_from_tick {
        return Some("the job started before iolens traced its reads".into());
    }
    if f.lost > 0 {
        return Some(format!("{} trace events were lost", f.lost));
    }
    if f.ids_over || f.seen_over {
        return Some(format!("more than {MAX_SEEN} files: not followed one by one"));
    }
    let w = &f.walk;
    for (n, what) in [
        (w.empty, "empty files show no read"),
        (
            w.linked,
            "files with several links may be read once for all their names",
        ),
        (w.sparse, "sparse files may be read from past their start"),
    ] {
        if n > 0 {
            return Some(format!("{n} {what}"));
        }
    }
    if let Some(fs) = f.fs_types.iter().find(|t| !TRACED_FS.contains(&t.as_str())) {
        return Some(format!("sources on {fs}: its reads are not traced per file"));
    }
    if matches!(tool, Tool::Cp | Tool::Mv) && f.fs_types.iter().any(|t| t == "xfs") {
        return Some("cp and mv may clone files on xfs without reading them".into());
    }
    None
}

/// The first whole clock tick at or after `boot_ns` (CLOCK_BOOTTIME ns):
/// a process whose start time (truncated to ticks) is at least this
/// started after that moment.
pub fn tick_at_or_after(boot_ns: u64, hz: u64) -> u64 {
    (u128::from(boot_ns) * u128::from(hz)).div_ceil(1_000_000_000) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: u64 = 7 << 32;

    #[test]
    fn counts_distinct_source_files() {
        let mut r = ReadFiles::default();
        // Read before the walk was done: two sources, a library, one twice.
        for ino in [10, 11, 10, 99] {
            r.add((D, ino));
        }
        assert_eq!(r.done(), None);
        r.set_sources(Arc::new(vec![(D, 10), (D, 11), (D, 12), (D, 13)]));
        assert_eq!(r.done(), Some(2));
        // Another device's inode 12 is not the source 12.
        r.add((8 << 32, 12));
        r.add((D, 12));
        r.add((D, 12));
        assert_eq!((r.done(), r.seen()), (Some(3), 5));
    }

    #[test]
    fn exact_only_when_everything_was_traced() {
        let ext4 = vec!["ext4".to_string()];
        let ok = Facts {
            traced_from_tick: 100,
            root_start_tick: 100,
            fs_types: &ext4,
            ..Facts::default()
        };
        assert_eq!(estimate_why(Tool::Tar, &ok), None);
        let why = |f: Facts| estimate_why(Tool::Tar, &f).unwrap();
        assert_eq!(
            why(Facts {
                root_start_tick: 99,
                ..ok.clone()
            }),
            "the job started before iolens traced its reads"
        );
        assert_eq!(why(Facts { lost: 3, ..ok.clone() }), "3 trace events were lost");
        let walk = |empty, linked, sparse| Counts {
            files: 9,
            empty,
            linked,
            sparse,
            ..Counts::default()
        };
        assert_eq!(
            why(Facts {
                walk: walk(2, 0, 0),
                ..ok.clone()
            }),
            "2 empty files show no read"
        );
        assert!(
            why(Facts {
                walk: walk(0, 1, 0),
                ..ok.clone()
            })
            .starts_with("1 files with several links")
        );
        assert!(
            why(Facts {
                walk: walk(0, 0, 4),
                ..ok.clone()
            })
            .starts_with("4 sparse files")
        );
        let btrfs = vec!["ext4".to_string(), "btrfs".to_string()];
        assert_eq!(
            why(Facts {
                fs_types: &btrfs,
                ..ok.clone()
            }),
            "sources on btrfs: its reads are not traced per file"
        );
        let xfs = vec!["xfs".to_string()];
        let on_xfs = Facts {
            fs_types: &xfs,
            ..ok.clone()
        };
        assert_eq!(estimate_why(Tool::Tar, &on_xfs), None);
        assert!(estimate_why(Tool::Cp, &on_xfs).unwrap().contains("clone"));
    }

    #[test]
    fn ticks() {
        // 12.345 s after boot at 100 Hz: tick 1235 is the first whole one
        // after it (a process of tick 1234 may have started at 12.340 s).
        assert_eq!(tick_at_or_after(12_345_000_000, 100), 1235);
        assert_eq!(tick_at_or_after(12_340_000_000, 100), 1234);
        assert_eq!(tick_at_or_after(12_340_000_001, 100), 1235);
    }
}
