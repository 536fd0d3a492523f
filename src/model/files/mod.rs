//! Per-file disk reads and dirtying from the page-cache tracepoints (pure:
//! no I/O, no clock). The tracer thread feeds [`FileEvent`]s to a
//! [`FileTracker`]; each sample takes the interval's [`FilesInterval`], and
//! the tracker keeps the totals since start.
//!
//! - **Read from storage**: `4096 << order` bytes per folio added to a
//!   file's cache, less the folios a buffered write created: an add
//!   followed by a dirty of the same inode and index by the same task, with
//!   no other add by that task in between (the write's `write_begin` then
//!   `write_end`). Exact for reads through the cache (readahead and faults
//!   included); a read-modify-write of a partial page counts as created,
//!   not read. Direct I/O bypasses the cache and is not seen here.
//! - **Dirtied**: folios marked dirty, counted in folios (the event has no
//!   size).
//! - **Who**: the process (thread group) the event ran in. Kernel threads
//!   (the flusher, a loop device's worker, khugepaged) are counted on the
//!   file but not charged to any process.
//! - **Loop backing files**: a loop device over a file reads its backing
//!   file through that file's cache in a kernel worker; the bytes are
//!   already counted on the files of the filesystem on the loop device, so
//!   the backing file's reads and dirties are kept apart
//!   ([`FileIo::backing_read`], [`FileIo::backing_dirtied`]) and left out
//!   of the totals and the ranking. The backing files are named by
//!   (device, inode) from sysfs `loop/backing_file` (see
//!   `collect::sysblock::backing_inode`).
//! - **Where**: adds name the superblock's device (`st_dev`); dirties name
//!   the backing device (bdi), which is the whole disk for a partition: a
//!   [`BdiMap`] (from mountinfo) turns a bdi name into the filesystems on it.

#[cfg(any(test, feature = "test-support"))]
pub mod example;
pub mod names;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::Arc;

use foldhash::HashMap;
use serde::{Deserialize, Serialize};

use crate::collect::blocked::FileWait;
use crate::collect::trace::block::Dev;
use crate::collect::trace::file::{FileEvent, FileKind, Where};
use crate::model::trace::window::{Share, scale_files};

/// Files kept in the totals; past this the least busy are summed into
/// [`FilesInterval::other`].
pub const MAX_FILES: usize = 4096;
/// An add this recent at an interval's close is left for the next.
pub const PENDING_HOLD_NS: u64 = 20_000_000;
/// Processes kept per file; past this the rest are summed into one row
/// with pid 0.
pub const MAX_PROCS_PER_FILE: usize = 16;

/// A file: the device of its filesystem (`st_dev`) and its inode number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct FileKey {
    pub dev: Dev,
    pub ino: u64,
}

/// What happened to a file's cache, by whoever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileIo {
    /// Bytes read from storage into the cache.
    pub read: u64,
    /// Folios dirtied.
    pub dirtied: u64,
    /// Bytes of folios buffered writes created (not read).
    pub created: u64,
    /// Bytes read into a loop device's backing file (counted on the loop
    /// device's files instead).
    pub backing_read: u64,
    /// Folios of a loop device's backing file dirtied (the loop device's
    /// writes: counted on its files instead).
    pub backing_dirtied: u64,
    /// Time threads spent blocked (state D) in calls on this file, ns: an
    /// estimate, sampled (each thread seen in D in such a call at a sample
    /// counts the whole interval; see [`FilesView::add_waits`]).
    pub blocked_ns: u64,
}

impl FileIo {
    fn add(&mut self, o: &FileIo) {
        self.read += o.read;
        self.dirtied += o.dirtied;
        self.created += o.created;
        self.backing_read += o.backing_read;
        self.backing_dirtied += o.backing_dirtied;
        self.blocked_ns += o.blocked_ns;
    }

    /// For ordering only: bytes read plus folios dirtied as 4 KiB each.
    pub fn busy(&self) -> u64 {
        self.read.saturating_add(self.dirtied.saturating_mul(4096))
    }

    pub fn is_empty(&self) -> bool {
        *self == FileIo::default()
    }
}

/// One file over an interval or since start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileRow {
    pub io: FileIo,
    /// The part of `io` kernel threads did.
    pub kernel: FileIo,
    /// Per process (thread group id; pid 0: the processes past
    /// [`MAX_PROCS_PER_FILE`]).
    pub procs: BTreeMap<i32, FileIo>,
}

impl FileRow {
    fn charge(&mut self, who: Who, f: impl Fn(&mut FileIo)) {
        f(&mut self.io);
        match who {
            Who::Kernel => f(&mut self.kernel),
            Who::Process(p) => {
                let p = if self.procs.len() >= MAX_PROCS_PER_FILE && !self.procs.contains_key(&p) {
                    0
                } else {
                    p
                };
                f(self.procs.entry(p).or_default());
            }
        }
    }

    fn merge(&mut self, o: &FileRow) {
        self.io.add(&o.io);
        self.kernel.add(&o.kernel);
        for (&p, io) in &o.procs {
            let p = if self.procs.len() >= MAX_PROCS_PER_FILE && !self.procs.contains_key(&p) {
                0
            } else {
                p
            };
            self.procs.entry(p).or_default().add(io);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Kernel,
    Process(i32),
}

fn who(e: &FileEvent) -> Who {
    if e.kernel || e.pid <= 0 {
        Who::Kernel
    } else if e.tgid > 0 {
        Who::Process(e.tgid)
    } else {
        // The task was gone before it could be looked up: its thread id
        // stands for the process.
        Who::Process(e.pid)
    }
}

/// Which filesystems (`st_dev`) a bdi name stands for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BdiMap {
    pub by_name: HashMap<String, Vec<Dev>>,
}

impl BdiMap {
    /// From the device rows: each mounted device (a whole disk, a
    /// partition, a device-mapper or loop device) under its bdi's name,
    /// the "MAJ:MIN" of its whole disk (a partition's is its disk's).
    pub fn from_devices(rows: &[crate::model::DeviceRow]) -> BdiMap {
        let mut map = BdiMap::default();
        for r in rows {
            let Some(info) = r.info.as_ref().filter(|i| !i.mounts.is_empty()) else {
                continue;
            };
            let disk = info
                .parent
                .as_deref()
                .and_then(|p| rows.iter().find(|d| d.name == p))
                .unwrap_or(r);
            let dev = Dev {
                major: r.major,
                minor: r.minor,
            };
            let v = map.by_name.entry(format!("{}:{}", disk.major, disk.minor)).or_default();
            if !v.contains(&dev) {
                v.push(dev);
                v.sort();
            }
        }
        map
    }

    /// The filesystems on `bdi`: those the map lists, else the device the
    /// name spells ("7:0": a filesystem on a whole disk or a loop device,
    /// "0:53": FUSE or NFS, whose bdi is named after `s_dev`).
    pub fn devs(&self, bdi: &str) -> Vec<Dev> {
        if let Some(v) = self.by_name.get(bdi).filter(|v| !v.is_empty()) {
            return v.clone();
        }
        parse_dev(bdi).into_iter().collect()
    }
}

/// "MAJ:MIN" as a device number.
pub fn parse_dev(s: &str) -> Option<Dev> {
    let (a, b) = s.split_once(':')?;
    Some(Dev {
        major: a.parse().ok()?,
        minor: b.parse().ok()?,
    })
}

/// An add not yet known to be a read: the next event of its task says.
#[derive(Debug, Clone, Copy)]
struct Pending {
    key: FileKey,
    index: u64,
    bytes: u64,
    who: Who,
    ts: u64,
}

/// Everything over one interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FilesInterval {
    /// Busiest first.
    pub files: Vec<(FileKey, FileRow)>,
    /// Dirties whose bdi named no known filesystem.
    pub unplaced_dirtied: u64,
    /// Events seen.
    pub events: u64,
}

/// The totals since start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilesTotal {
    /// Busiest first.
    pub files: Vec<(FileKey, FileRow)>,
    /// What the files dropped past [`MAX_FILES`] had done.
    pub other: FileIo,
}

#[derive(Debug, Default)]
pub struct FileTracker {
    cur: HashMap<FileKey, FileRow>,
    total: HashMap<FileKey, FileRow>,
    other: FileIo,
    pending: HashMap<i32, Pending>,
    bdis: BdiMap,
    backing: foldhash::HashSet<FileKey>,
    unplaced: u64,
    events: u64,
}

impl FileTracker {
    pub fn bdis(&self) -> &BdiMap {
        &self.bdis
    }

    pub fn set_bdis(&mut self, map: BdiMap) {
        self.bdis = map;
    }

    /// The backing files of loop devices.
    pub fn set_backing(&mut self, files: impl IntoIterator<Item = FileKey>) {
        self.backing = files.into_iter().collect();
    }

    /// Feed events in time order.
    pub fn feed(&mut self, events: &[FileEvent]) {
        self.feed_gated(events, |_| true);
    }

    /// Feed events in time order, traced in windows: `inside(i)` says
    /// whether `events[i]` fell in a window. The events of a drain (after
    /// a window, before `tracing_on` is cleared) are not counted; they only
    /// settle the adds left pending at the window's end (a write's add in
    /// the window, its dirty in the drain: created, not read).
    pub fn feed_gated(&mut self, events: &[FileEvent], inside: impl Fn(usize) -> bool) {
        for (i, e) in events.iter().enumerate() {
            let inside = inside(i);
            self.events += u64::from(inside);
            match (e.kind, e.place) {
                (FileKind::Added { .. }, Where::Sb(dev)) => {
                    if let Some(p) = self.pending.remove(&e.pid) {
                        self.commit_read(p);
                    }
                    if inside {
                        let pending = Pending {
                            key: FileKey { dev, ino: e.ino },
                            index: e.index,
                            bytes: e.bytes().unwrap_or(0),
                            who: who(e),
                            ts: e.ts,
                        };
                        self.pending.insert(e.pid, pending);
                    }
                }
                (FileKind::Dirtied, place) => self.dirtied(e, &place.bdi_name(), inside),
                // An add without a device: not produced by the decoder.
                (FileKind::Added { .. }, Where::Bdi(_)) => {}
            }
        }
    }

    fn dirtied(&mut self, e: &FileEvent, bdi: &str, inside: bool) {
        let devs = self.bdis.devs(bdi);
        let pending = self.pending.remove(&e.pid);
        let key = match pending {
            Some(p) if p.key.ino == e.ino && p.index == e.index && (devs.is_empty() || devs.contains(&p.key.dev)) => {
                self.row(p.key).charge(p.who, |io| io.created += p.bytes);
                Some(p.key)
            }
            other => {
                if let Some(p) = other {
                    self.commit_read(p);
                }
                self.place(&devs, e.ino)
            }
        };
        match key {
            _ if !inside => {}
            Some(k) if self.backing.contains(&k) => self.row(k).charge(who(e), |io| io.backing_dirtied += 1),
            Some(k) => self.row(k).charge(who(e), |io| io.dirtied += 1),
            None => self.unplaced += 1,
        }
    }

    /// The file a dirty names: the only filesystem on the bdi, or the one
    /// on which this inode was already seen, or the first.
    fn place(&self, devs: &[Dev], ino: u64) -> Option<FileKey> {
        let keys = devs.iter().map(|&dev| FileKey { dev, ino });
        let known = keys
            .clone()
            .find(|k| self.cur.contains_key(k) || self.total.contains_key(k));
        known.or_else(|| keys.clone().next())
    }

    fn row(&mut self, key: FileKey) -> &mut FileRow {
        self.cur.entry(key).or_default()
    }

    fn commit_read(&mut self, p: Pending) {
        let backing = self.backing.contains(&p.key);
        self.row(p.key).charge(p.who, |io| {
            if backing {
                io.backing_read += p.bytes;
            } else {
                io.read += p.bytes;
            }
        });
    }

    /// Close the interval: adds whose task did nothing since are reads.
    pub fn take_interval(&mut self) -> FilesInterval {
        self.take_interval_at(u64::MAX, Share::default())
    }

    /// Close the interval at `now` (trace clock), traced at `share`: its
    /// counts scaled to the whole interval ([`scale_files`]) before they
    /// are added to the totals since start. Traced whole, an add of the
    /// last [`PENDING_HOLD_NS`] before `now` stays pending for the next
    /// interval: its task's next event may be the write's dirty, not yet
    /// read from the buffers (a 1 MiB folio's copy takes ~0.1 ms). In
    /// windows every add is settled here (the next interval's share would
    /// scale it wrongly; a window's end is settled by its drain).
    pub fn take_interval_at(&mut self, now: u64, share: Share) -> FilesInterval {
        let held = if share.sampled() {
            u64::MAX
        } else {
            now.saturating_sub(PENDING_HOLD_NS)
        };
        let old: Vec<i32> = self
            .pending
            .iter()
            .filter(|(_, p)| p.ts < held)
            .map(|(&pid, _)| pid)
            .collect();
        for pid in old {
            if let Some(p) = self.pending.remove(&pid) {
                self.commit_read(p);
            }
        }
        let cur = std::mem::take(&mut self.cur);
        let mut out = FilesInterval {
            files: busiest(cur.into_iter().collect()),
            unplaced_dirtied: self.unplaced,
            events: self.events,
        };
        scale_files(&mut out, share);
        for (k, row) in &out.files {
            self.total.entry(*k).or_default().merge(row);
        }
        self.bound_total();
        self.unplaced = 0;
        self.events = 0;
        out
    }

    fn bound_total(&mut self) {
        if self.total.len() <= MAX_FILES {
            return;
        }
        let mut all = busiest(self.total.drain().collect());
        for (_, row) in all.drain(MAX_FILES * 3 / 4..) {
            self.other.add(&row.io);
        }
        self.total = all.into_iter().collect();
    }

    /// The totals since start (of the intervals taken).
    pub fn total(&self) -> FilesTotal {
        FilesTotal {
            files: busiest(self.total.iter().map(|(k, r)| (*k, r.clone())).collect()),
            other: self.other,
        }
    }
}

/// Files threads were seen blocked on first, the longest blocked first
/// (few: at most 64 tasks are sampled; a file that makes processes wait
/// is the one to see, whatever its bytes), then the busiest (then by
/// device and inode, for a stable order).
pub fn busiest(mut v: Vec<(FileKey, FileRow)>) -> Vec<(FileKey, FileRow)> {
    v.sort_by(|a, b| {
        (b.1.io.blocked_ns, b.1.io.busy())
            .cmp(&(a.1.io.blocked_ns, a.1.io.busy()))
            .then(a.0.cmp(&b.0))
    });
    v
}

/// What the views show of the page-cache events.
#[derive(Debug, Clone, Default)]
pub struct FilesView {
    /// The events are traced; otherwise `reason` says why not.
    pub active: bool,
    pub reason: Option<String>,
    /// The last interval (empty before the first, or when off).
    pub interval: FilesInterval,
    /// The names of `interval.files`, in their order (`None`: not open in
    /// any scanned process, and not seen before).
    pub names: Vec<Option<Arc<[u8]>>>,
}

impl FilesView {
    pub fn off(reason: impl Into<String>) -> FilesView {
        FilesView {
            active: false,
            reason: Some(reason.into()),
            ..Default::default()
        }
    }

    /// Add the threads seen blocked in calls on files at the sample that
    /// ends the interval (`dt_s` long): each counts the whole interval on
    /// its file and process. An estimate: a point sample stands for the
    /// interval. Waits on a file of unknown device or inode are left out.
    pub fn add_waits(&mut self, waits: &[FileWait], dt_s: Option<f64>) {
        let Some(dt) = dt_s.filter(|d| self.active && d.is_finite() && *d > 0.0) else {
            return;
        };
        let ns = (dt * 1e9) as u64;
        let mut added = false;
        for w in waits {
            let (Some((major, minor)), Some(ino)) = (w.dev, w.ino) else {
                continue;
            };
            let key = FileKey {
                dev: Dev { major, minor },
                ino,
            };
            let at = match self.interval.files.iter().position(|(k, _)| *k == key) {
                Some(i) => i,
                None => {
                    self.interval.files.push((key, FileRow::default()));
                    self.interval.files.len() - 1
                }
            };
            self.interval.files[at]
                .1
                .charge(Who::Process(w.pid), |io| io.blocked_ns += ns);
            added = true;
        }
        if added {
            // Names already given (a test's, a replay's) move with their files.
            let was: HashMap<FileKey, usize> = self
                .interval
                .files
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (*k, i))
                .collect();
            self.interval.files = busiest(std::mem::take(&mut self.interval.files));
            if !self.names.is_empty() {
                let names = std::mem::take(&mut self.names);
                self.names = self
                    .interval
                    .files
                    .iter()
                    .map(|(k, _)| was.get(k).and_then(|&i| names.get(i).cloned().flatten()))
                    .collect();
            }
        }
    }

    /// Give the interval's files their names.
    /// Names the view already has (a replay's recorded ones) stay where
    /// the open files and the cache know none.
    pub fn name_with(&mut self, names: &mut names::Names) {
        let given = std::mem::take(&mut self.names);
        self.names = self
            .interval
            .files
            .iter()
            .enumerate()
            .map(|(i, (k, r))| {
                let pids: Vec<i32> = r.procs.keys().copied().collect();
                names.name(*k, &pids).or_else(|| given.get(i).cloned().flatten())
            })
            .collect();
    }
}
