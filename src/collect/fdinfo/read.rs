//! Reading the fds of one process within the scan's budget: the whole
//! table when it fits, otherwise its hot fds and the next part of a sweep.

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use rustix::fs::{AtFlags, StatxFlags, statx};

use super::raw::{Access, FdTarget, RawFd, is_dir_or_path, parse_fdinfo};
use super::{FdScanner, HOT_FDS, MOUNTINFO_CAP, NotFile, ProcState, SeenFd, Spend, TRACK_IDLE_SAMPLES};
use crate::collect::Reader;
use crate::collect::procdir::{
    CName, block_size, list_fd_numbers, list_fd_numbers_from, open_dir, read_at, read_link_at, read_small,
};

/// What one process's read gave.
#[derive(Debug, Default)]
pub(super) struct ReadOut {
    /// False when the budget was spent before anything of it was read.
    pub reached: bool,
    pub fds: Vec<RawFd>,
    /// Whether any position moved since the previous scan.
    pub moved: bool,
    /// Open fds not read (see [`super::FdProc::unread`]).
    pub unread: u32,
    /// Devices of a table read in parts (see [`super::FdProc::devs`]).
    pub devs: Vec<u64>,
}

/// A listing of a process's fds: sorted numbers, and whether it reached
/// the end of the table.
#[derive(Clone, Copy)]
struct Listed<'a> {
    numbers: &'a [i32],
    end: bool,
}

/// The numbers from `cursor` on.
fn numbers_from(numbers: &[i32], cursor: i32) -> &[i32] {
    &numbers[numbers.partition_point(|&n| n < cursor)..]
}

/// The process's `fd` and `fdinfo` directories.
struct Dirs {
    fd: OwnedFd,
    info: OwnedFd,
}

/// How the link text of an fd is read.
#[derive(Debug, Clone, Copy)]
struct Want {
    /// For any fd that can be a transfer (read into, written, moving),
    /// or, when `active` (its process did I/O), for every fd; otherwise
    /// only for an fd that moved.
    eager: bool,
    active: bool,
    /// Remember the fds that are no files (see [`NotFile`]): only for a
    /// table read whole (a table read in parts keeps its files only).
    others: bool,
}

impl FdScanner {
    /// Read the regular files and block devices open in one process, as
    /// much of them as `spend` allows.
    pub(super) fn read_fds(
        &mut self,
        r: &Reader,
        pid: i32,
        moved_io: Option<bool>,
        st: &mut ProcState,
        spend: &mut Spend,
        fds_seen: &mut u64,
    ) -> io::Result<ReadOut> {
        let hot = hot_fds(st, self.scans);
        if !spend.fits(1) && hot.is_empty() {
            return Ok(ReadOut::default());
        }
        let dirs = Dirs {
            fd: open_dir(&r.path(format!("/proc/{pid}/fd")))?,
            // One more directory open per process saves two path
            // components ("../fdinfo/") on every fd.
            info: open_dir(&r.path(format!("/proc/{pid}/fdinfo")))?,
        };
        let mut numbers = std::mem::take(&mut self.numbers);
        numbers.clear();
        let active = moved_io == Some(true);
        let out = match &st.sweep {
            // A table read in parts: the next part of its listing.
            Some(sw) => {
                let mut end = false;
                if spend.fits(1) {
                    end =
                        list_fd_numbers_from(&dirs.fd, sw.cursor, spend.left as usize, &mut self.dents, &mut numbers)?;
                    *fds_seen += numbers.len() as u64;
                }
                self.read_part(r, pid, &dirs, Listed { numbers: &numbers, end }, &hot, st, spend)
            }
            None => {
                list_fd_numbers(&dirs.fd, &mut self.dents, &mut numbers)?;
                numbers.sort_unstable();
                *fds_seen += numbers.len() as u64;
                st.table = u32::try_from(numbers.len()).unwrap_or(u32::MAX);
                if spend.fits(numbers.len()) {
                    self.read_whole(r, pid, &dirs, &numbers, active, st, spend)
                } else {
                    st.sweep = Some(Box::default());
                    let listed = Listed {
                        numbers: &numbers,
                        end: true,
                    };
                    self.read_part(r, pid, &dirs, listed, &hot, st, spend)
                }
            }
        };
        self.numbers = numbers;
        Ok(out)
    }

    /// A table that fits the budget: every fd, reported (those the time
    /// budget leaves unread are swept at the next scans).
    #[allow(clippy::too_many_arguments)]
    fn read_whole(
        &mut self,
        r: &Reader,
        pid: i32,
        dirs: &Dirs,
        numbers: &[i32],
        active: bool,
        st: &mut ProcState,
        spend: &mut Spend,
    ) -> ReadOut {
        let mut out = ReadOut {
            reached: true,
            ..Default::default()
        };
        let mut old = st.fds.take().unwrap_or_default();
        let want = Want {
            eager: true,
            active,
            others: true,
        };
        for (i, &fd) in numbers.iter().enumerate() {
            if !spend.take() {
                // Out of time: the rest at the next scans, as a sweep.
                out.unread = (numbers.len() - i) as u32;
                st.sweep.get_or_insert_default().cursor = fd;
                let map = st.fds.get_or_insert_default();
                map.extend(old.drain().filter(|(n, _)| *n >= fd));
                return out;
            }
            let prev = old.remove(&fd);
            if let Some((raw, moved)) = self.read_fd(r, pid, dirs, fd, prev, want, st) {
                out.moved |= moved;
                out.fds.push(raw);
            }
        }
        st.sweep = None;
        out
    }

    /// A table bigger than what is left of the budget: its hot fds, then
    /// the sweep goes on over `listed` (its next part); only fds that moved
    /// (and, with `report_all`, every fd read) are reported.
    #[allow(clippy::too_many_arguments)]
    fn read_part(
        &mut self,
        r: &Reader,
        pid: i32,
        dirs: &Dirs,
        listed: Listed<'_>,
        hot: &[i32],
        st: &mut ProcState,
        spend: &mut Spend,
    ) -> ReadOut {
        let mut out = ReadOut {
            reached: true,
            ..Default::default()
        };
        let mut sweep = st.sweep.take().unwrap_or_default();
        let numbers = numbers_from(listed.numbers, sweep.cursor);
        // Closed since (within the part listed): forgotten.
        if let Some(&last) = numbers.last() {
            let (lo, hi) = (sweep.cursor, if listed.end { i32::MAX } else { last });
            let map = st.fds.get_or_insert_default();
            map.retain(|fd, _| *fd < lo || *fd > hi || numbers.binary_search(fd).is_ok());
        }
        let want = Want {
            eager: self.report_all,
            active: false,
            others: false,
        };
        let mut read = 0usize;
        for &fd in hot {
            spend.take_hot();
            read += 1;
            let prev = st.fds.as_mut().and_then(|m| m.remove(&fd));
            if let Some((raw, moved)) = self.read_fd(r, pid, dirs, fd, prev, Want { eager: true, ..want }, st) {
                out.moved |= moved;
                out.fds.push(raw);
            }
        }
        let mut done = listed.end;
        for &fd in numbers {
            sweep.count += 1;
            if hot.contains(&fd) {
                continue;
            }
            if !spend.take() {
                sweep.cursor = fd;
                sweep.count -= 1;
                done = false;
                break;
            }
            sweep.cursor = fd + 1;
            read += 1;
            let prev = st.fds.as_mut().and_then(|m| m.remove(&fd));
            if let Some((raw, moved)) = self.read_fd(r, pid, dirs, fd, prev, want, st) {
                if !sweep.devs.contains(&raw.dev) {
                    sweep.devs.push(raw.dev);
                }
                out.moved |= moved;
                if moved || self.report_all {
                    out.fds.push(raw);
                }
            }
        }
        if done {
            // The whole table swept: its size and devices are known anew.
            st.table = sweep.count;
            sweep.cursor = 0;
            sweep.count = 0;
            sweep.devs_last = std::mem::take(&mut sweep.devs);
        }
        let mut devs: Vec<u64> = sweep.devs_last.iter().chain(&sweep.devs).copied().collect();
        devs.sort_unstable();
        devs.dedup();
        out.devs = devs;
        out.unread = (st.table as usize).saturating_sub(read).max(1) as u32;
        // A table that now fits half the budget is read whole again (from
        // the next scan), so one scan cut short by time is not for ever.
        if !(done && st.table <= self.budget.fds / 2) {
            st.sweep = Some(sweep);
        }
        out
    }

    /// Read one fd: its fdinfo, and unless it is on a mount that may block,
    /// its `statx`. Records it in `st.fds` (with the scan in which it last
    /// moved). `None` for what is not a regular file or block device, or
    /// was closed meanwhile.
    #[allow(clippy::too_many_arguments)]
    fn read_fd(
        &mut self,
        r: &Reader,
        pid: i32,
        dirs: &Dirs,
        fd: i32,
        prev: Option<SeenFd>,
        want: Want,
        st: &mut ProcState,
    ) -> Option<(RawFd, bool)> {
        let mut name = CName::default();
        let prev = still_object(dirs, fd, prev, st)?;
        // fdinfo first: its mnt_id says whether the file may be stat'ed.
        let info = read_small(&dirs.info, name.set(b"", fd), &mut self.buf)
            .ok()
            .and_then(parse_fdinfo)?;
        if is_dir_or_path(info.flags) {
            return None;
        }
        // Another type of file at the last scan, the same inode now.
        if let Some(seen) = prev
            .as_ref()
            .filter(|s| s.not_file == NotFile::Other && info.ino == Some(s.ino) && info.mnt_id == s.mnt_id)
        {
            st.fds.get_or_insert_default().insert(fd, seen.clone());
            return None;
        }
        let remote = match info.mnt_id {
            Some(id) => self.mount_may_block(r, pid, id),
            // Before Linux 3.15 fdinfo has no mnt_id: nothing to go by.
            None => false,
        };
        // A pipe, socket, anonymous inode, memfd or SysV shared memory
        // segment lives on an internal mount that no mountinfo lists, so it
        // counts as "may block"; its link text ("pipe:[123]",
        // "/memfd:name (deleted)", "/SYSV0000002a (deleted)") names no file
        // on a disk: skipped (readlinkat of an fd link never reaches the
        // filesystem).
        if remote
            && let Some(id) = info.mnt_id.filter(|&id| self.mount(id).is_none())
            && let Some(link) = read_link_at(&dirs.fd, name.set(b"", fd))
        {
            let internal = internal_object(&link);
            self.own_mounts.note_unlisted(id, internal);
            if internal {
                if want.others && !link.starts_with(b"/") {
                    st.fds
                        .get_or_insert_default()
                        .insert(fd, SeenFd::not_file(NotFile::Object, 0, None));
                }
                return None;
            }
        }
        let (target, ino, dev, size) = if remote {
            // Never stat a file on FUSE, network or automount filesystems:
            // that can wait on the daemon or server for ever,
            // uninterruptibly. Its size stays unknown; its device is the
            // mount's (mountinfo's major:minor is its st_dev).
            let dev = info
                .mnt_id
                .and_then(|id| self.mount(id))
                .map_or(0, |m| libc::makedev(m.major, m.minor));
            (FdTarget::File, info.ino.unwrap_or(0), dev, None)
        } else {
            let sx = statx(
                &dirs.fd,
                name.set(b"", fd),
                AtFlags::STATX_DONT_SYNC,
                StatxFlags::TYPE | StatxFlags::SIZE | StatxFlags::INO,
            )
            .ok()?; // closed meanwhile, or a target we may not stat
            let target = match u32::from(sx.stx_mode) & libc::S_IFMT {
                libc::S_IFREG => FdTarget::File,
                libc::S_IFBLK => FdTarget::BlockDevice,
                _ => {
                    if want.others
                        && let Some(ino) = info.ino
                    {
                        st.fds
                            .get_or_insert_default()
                            .insert(fd, SeenFd::not_file(NotFile::Other, ino, info.mnt_id));
                    }
                    return None;
                }
            };
            let (size, dev) = match target {
                FdTarget::File => (Some(sx.stx_size), libc::makedev(sx.stx_dev_major, sx.stx_dev_minor)),
                FdTarget::BlockDevice => (
                    block_size(
                        r,
                        &dirs.fd,
                        name.set(b"", fd),
                        (sx.stx_rdev_major, sx.stx_rdev_minor),
                        &mut self.buf,
                    ),
                    libc::makedev(sx.stx_rdev_major, sx.stx_rdev_minor),
                ),
            };
            (target, info.ino.unwrap_or(sx.stx_ino), dev, size)
        };
        let access = Access::from_flags(info.flags);
        let (moved, cached, last_moved) = match prev {
            Some(seen) if seen.not_file == NotFile::No && seen.ino == ino && seen.mnt_id == info.mnt_id => {
                (seen.pos != info.pos, seen.path, seen.moved)
            }
            _ => (false, None, 0),
        };
        // The link text only for what can be a transfer: a file already
        // read into, written to, or moving, or in a process doing I/O. An
        // fd at 0 that never moved is not read until it does.
        let path = cached.or_else(|| {
            (moved || (want.eager && (info.pos > 0 || access.writes() || want.active)))
                .then(|| read_link_at(&dirs.fd, name.set(b"", fd)).map_or_else(|| Arc::from(&b"?"[..]), Arc::from))
        });
        st.fds.get_or_insert_default().insert(
            fd,
            SeenFd {
                pos: info.pos,
                ino,
                mnt_id: info.mnt_id,
                path: path.clone(),
                moved: if moved { self.scans } else { last_moved },
                not_file: NotFile::No,
            },
        );
        let raw = RawFd {
            fd,
            target,
            pos: info.pos,
            flags: info.flags,
            mnt_id: info.mnt_id,
            ino,
            dev,
            size,
            remote,
            path,
        };
        Some((raw, moved))
    }

    /// The files the page-cache events of `pid` touched that its fds do
    /// not name, from its maps (bounded: [`super::maps::MAPS_CAP`]) into
    /// `snap.mapped`.
    pub(super) fn read_maps(&mut self, r: &Reader, pid: i32, fds: &[RawFd], snap: &mut super::FdSnapshot) {
        let Some(wanted) = self.also_now.get(&pid) else {
            return;
        };
        let named = |&(major, minor, ino): &(u32, u32, u64)| {
            fds.iter()
                .any(|f| f.ino == ino && f.dev == libc::makedev(major, minor) && f.path.is_some())
        };
        let missing: Vec<(u32, u32, u64)> = wanted.iter().copied().filter(|k| !named(k)).collect();
        if missing.is_empty() {
            return;
        }
        let mut name = CName::default();
        if let Ok(dir) = open_dir(&r.path("/proc"))
            && let Ok(text) = read_at(
                &dir,
                name.set3(b"", pid, b"/maps"),
                &mut self.buf,
                false,
                super::maps::MAPS_CAP,
            )
        {
            snap.mapped.extend(super::maps::find(pid, text, &missing));
        }
    }

    /// Whether a file of `pid` on mount `id` may block when stat'ed. A mount
    /// missing from the table has the process's own mountinfo read (it may
    /// live in another mount namespace); one still missing, or a mountinfo
    /// that cannot be read, counts as one that may block.
    fn mount_may_block(&mut self, r: &Reader, pid: i32, id: u64) -> bool {
        if let Some(b) = self
            .own_mounts
            .fd_may_block(id)
            .or_else(|| self.mounts.fd_may_block(id))
        {
            return b;
        }
        if self.unlisted.contains(&id) {
            return true;
        }
        let mut name = CName::default();
        if let Ok(dir) = open_dir(&r.path("/proc"))
            && let Ok(text) = read_at(
                &dir,
                name.set3(b"", pid, b"/mountinfo"),
                &mut self.buf,
                false,
                MOUNTINFO_CAP,
            )
        {
            self.mounts.extend(crate::collect::mountinfo::parse(text));
        }
        self.mounts.fd_may_block(id).unwrap_or_else(|| {
            self.unlisted.push(id);
            true
        })
    }
}

impl FdScanner {
    /// Mount `id`, from iolens's own table or this scan's.
    fn mount(&self, id: u64) -> Option<&crate::collect::mountinfo::Mount> {
        self.own_mounts.get(id).or_else(|| self.mounts.get(id))
    }
}

/// An fd that was a kernel object at the last scan: one readlinkat tells
/// whether it still is one (an fdinfo read is three system calls); then
/// it stays remembered and `None` is returned, as for an fd closed
/// meanwhile. Otherwise `Some` of what to read it against: nothing for a
/// former object, `prev` for any other fd.
fn still_object(dirs: &Dirs, fd: i32, prev: Option<SeenFd>, st: &mut ProcState) -> Option<Option<SeenFd>> {
    match prev {
        Some(seen) if seen.not_file == NotFile::Object => {
            let link = read_link_at(&dirs.fd, CName::default().set(b"", fd))?;
            if !link.starts_with(b"/") {
                st.fds.get_or_insert_default().insert(fd, seen);
                return None;
            }
            Some(None)
        }
        p => Some(p),
    }
}

impl SeenFd {
    /// An fd that is no file (inode and mount: see [`NotFile::Other`]).
    fn not_file(not_file: NotFile, ino: u64, mnt_id: Option<u64>) -> Self {
        SeenFd {
            pos: 0,
            ino,
            mnt_id,
            path: None,
            moved: 0,
            not_file,
        }
    }
}

/// The fds of a table read in parts that moved within the last
/// [`TRACK_IDLE_SAMPLES`] scans, the most recent first, at most [`HOT_FDS`].
fn hot_fds(st: &ProcState, scan: u64) -> Vec<i32> {
    let (Some(_), Some(map)) = (&st.sweep, &st.fds) else {
        return Vec::new();
    };
    let mut hot: Vec<(u64, i32)> = map
        .iter()
        .filter(|(_, s)| s.moved != 0 && scan.saturating_sub(s.moved) < u64::from(TRACK_IDLE_SAMPLES))
        .map(|(fd, s)| (s.moved, *fd))
        .collect();
    hot.sort_unstable_by(|a, b| b.cmp(a));
    hot.truncate(HOT_FDS);
    let mut fds: Vec<i32> = hot.into_iter().map(|(_, fd)| fd).collect();
    fds.sort_unstable();
    fds
}

/// Whether an fd link on an internal mount names an object in memory, not
/// a file: no leading `/` (`pipe:[1]`, `anon_inode:[eventfd]`), a memfd or a
/// SysV shared memory segment.
fn internal_object(link: &[u8]) -> bool {
    !link.starts_with(b"/") || link.starts_with(b"/memfd:") || link.starts_with(b"/SYSV")
}
