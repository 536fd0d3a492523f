//! The mounts of iolens's own mount namespace, kept across scans while
//! that namespace's mount table does not change.
//!
//! Every scan used to start with an empty mount table and read the
//! mountinfo of the first process with a file on a mount not in it, and
//! again for each mount found in no mountinfo (pipefs, sockfs,
//! anon_inodefs: every pipe and socket): about three mountinfo reads per
//! scan under a fork storm, ~4% of iolens's CPU. A mount id names one live
//! mount at a time (ids are allocated system-wide), so an id of iolens's
//! own table names the same mount for as long as that mount is there, and
//! any mount or unmount in the namespace is seen: `poll` on an open
//! `/proc/self/mountinfo` reports `POLLPRI` after a change, and then the
//! table is read again. Mounts of other namespaces are still read per
//! scan from their processes' mountinfo (no change of theirs is seen
//! here).
//!
//! The ids found in no mountinfo whose files were kernel objects (a pipe,
//! socket or anonymous inode: see `internal_object`) are kept too, so that
//! the next scan does not read a mountinfo again to not find them. Such an
//! id may be freed and reused by a real mount (a private filesystem
//! mount of a driver, rarely): its files then count as on a mount that
//! may block (never `stat`ed, size unknown) until that id's next fd names
//! a file, or at most [`OWN_MOUNTS_MAX_AGE`] scans.

use std::os::fd::OwnedFd;

use rustix::event::{PollFd, PollFlags, Timespec, poll};

use super::MOUNTINFO_CAP;
use crate::collect::mountinfo::{self, Mount, MountTable};
use crate::collect::procdir::{open_dir, read_at};

/// The own table and the kernel objects' ids are read again at least
/// this often (in scans), even without a change.
pub const OWN_MOUNTS_MAX_AGE: u64 = 60;

/// At most this many ids of kernel objects' mounts are kept.
const INTERNAL_MAX: usize = 64;

/// iolens's own mount table and the ids of kernel objects' mounts.
#[derive(Debug, Default)]
pub(super) struct OwnMounts {
    /// `/proc/self/mountinfo`, kept open to be polled.
    watch: Option<OwnedFd>,
    table: MountTable,
    internal: Vec<u64>,
    /// The scan the table was read at (`None`: not yet, or unreadable).
    read_at: Option<u64>,
    /// Times the table was read (for tests).
    pub(super) reads: u64,
}

impl OwnMounts {
    /// At a scan's start: read the table again when the namespace's
    /// mounts changed since the last read (or it is too old).
    pub(super) fn refresh(&mut self, scan: u64, buf: &mut Vec<u8>) {
        let fresh = self
            .read_at
            .is_some_and(|at| scan.saturating_sub(at) < OWN_MOUNTS_MAX_AGE);
        if fresh && !self.changed() {
            return;
        }
        self.table.clear();
        self.internal.clear();
        self.read_at = None;
        if self.watch.is_none() {
            self.watch = rustix::fs::open(
                "/proc/self/mountinfo",
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .ok();
        }
        // Polled once now, so that only a change after this read shows.
        let _ = self.changed();
        if self.watch.is_none() {
            return;
        }
        let Ok(dir) = open_dir(std::path::Path::new("/proc")) else {
            return;
        };
        if let Ok(text) = read_at(&dir, c"self/mountinfo", buf, false, MOUNTINFO_CAP) {
            self.table.extend(mountinfo::parse(text));
            self.read_at = Some(scan);
            self.reads += 1;
        }
    }

    /// Whether the namespace's mount table changed since the last poll
    /// (or cannot be watched).
    fn changed(&self) -> bool {
        let Some(fd) = &self.watch else {
            return true;
        };
        let mut p = [PollFd::new(fd, PollFlags::PRI)];
        let zero = Timespec { tv_sec: 0, tv_nsec: 0 };
        match poll(&mut p, Some(&zero)) {
            Ok(_) => p[0].revents().intersects(PollFlags::PRI | PollFlags::ERR),
            Err(_) => true,
        }
    }

    /// The mount `id` of iolens's own namespace.
    pub(super) fn get(&self, id: u64) -> Option<&Mount> {
        self.table.get(id)
    }

    /// Whether a file on mount `id` may block when stat'ed (see
    /// [`MountTable::fd_may_block`]): `Some(true)` also for the kept ids
    /// of kernel objects' mounts; `None` when not known here.
    pub(super) fn fd_may_block(&self, id: u64) -> Option<bool> {
        self.table
            .fd_may_block(id)
            .or_else(|| self.internal.contains(&id).then_some(true))
    }

    /// Mount `id`, in no mountinfo, had a kernel object's fd (`internal`)
    /// or a file's: kept, or forgotten.
    pub(super) fn note_unlisted(&mut self, id: u64, internal: bool) {
        let at = self.internal.iter().position(|&i| i == id);
        match (internal, at) {
            (true, None) if self.internal.len() < INTERNAL_MAX => self.internal.push(id),
            (false, Some(i)) => {
                self.internal.swap_remove(i);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The id of the mount at `dir` in this process's mountinfo.
    fn id_of(dir: &std::path::Path) -> Option<u64> {
        let text = std::fs::read("/proc/self/mountinfo").unwrap();
        mountinfo::parse(&text)
            .into_iter()
            .rev()
            .find(|m| std::path::Path::new(&m.mount_point) == dir)
            .map(|m| m.id)
    }

    /// Read once, then only after a mount or an unmount in the namespace:
    /// a new mount is known at the next refresh, a gone one forgotten.
    #[test]
    fn own_table_is_read_again_only_after_a_mount_change() {
        let mut own = OwnMounts::default();
        let mut buf = Vec::new();
        own.refresh(1, &mut buf);
        assert_eq!(own.reads, 1);
        let root = id_of(std::path::Path::new("/")).unwrap();
        assert_eq!(own.fd_may_block(root), Some(false));
        // Other tests and programs on the machine may mount meanwhile:
        // some round of refreshes sees no change and reads nothing.
        let quiet = (0..20).any(|round| {
            let before = own.reads;
            for scan in 0..5 {
                own.refresh(2 + round * 5 + scan, &mut buf);
            }
            own.reads == before
        });
        assert!(quiet, "read again without a change");
        let before = own.reads;
        own.refresh(200 + OWN_MOUNTS_MAX_AGE, &mut buf);
        assert_eq!(own.reads, before + 1, "too old: read again");
        // Kernel objects' ids are kept, and forgotten when a file shows.
        own.note_unlisted(u64::MAX, true);
        assert_eq!(own.fd_may_block(u64::MAX), Some(true));
        own.note_unlisted(u64::MAX, false);
        assert_eq!(own.fd_may_block(u64::MAX), None);
        if !crate::sys::is_root() {
            eprintln!("skipped the mount part: mounting needs root");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let scan = 201 + OWN_MOUNTS_MAX_AGE;
        own.refresh(scan, &mut buf);
        let before = own.reads;
        crate::sys::mount::mount_pseudo("iolens-test", "tmpfs", dir.path()).unwrap();
        let id = id_of(dir.path());
        own.refresh(scan + 1, &mut buf);
        let after_mount = (own.reads > before, id.and_then(|i| own.fd_may_block(i)));
        let before = own.reads;
        crate::sys::mount::unmount(dir.path()).unwrap();
        own.refresh(scan + 2, &mut buf);
        let after_unmount = (own.reads > before, id.and_then(|i| own.get(i)).is_some());
        assert!(id.is_some());
        assert_eq!(after_mount, (true, Some(false)));
        assert_eq!(after_unmount, (true, false));
    }
}
