//! Directory listings, stats and link reads under a [`Reader`]'s root.
//!
//! On the live system ("/") these are the plain calls (sysfs's
//! `/sys/block/<dev>` entries are symlinks that must be followed). Under a
//! captured tree (`--root`) every path is resolved with `openat2` relative
//! to the root and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_XDEV`: a symlink anywhere in the path (`sys/block/evil ->
//! /outside`), a `..` that climbs out, or a mount inside the tree (a hung
//! FUSE mount) is an error at once, never followed or waited on. The one
//! exception is [`Reader::resolve`], for the relative links a capture keeps
//! (a disk's `device`), which follows links only while they stay in the
//! tree.

use std::ffi::{CStr, OsStr, OsString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, Stat};

use super::Reader;

/// How a path under a captured tree is resolved: inside it, through no
/// symlink, on no other filesystem.
pub(super) const STRICT: ResolveFlags = ResolveFlags::BENEATH
    .union(ResolveFlags::NO_SYMLINKS)
    .union(ResolveFlags::NO_XDEV);

/// One entry of a directory: its name and type (not followed: a symlink
/// is a [`FileType::Symlink`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: OsString,
    pub kind: FileType,
}

impl Entry {
    /// The name, when it is UTF-8.
    pub fn name_str(&self) -> Option<&str> {
        self.name.to_str()
    }
}

/// No directory listing returns more entries than this; the rest are not
/// seen (a captured tree is any directory the user names).
pub const LIST_CAP: usize = 1 << 20;

impl Reader {
    /// The captured tree's root directory, opened on first use.
    pub(super) fn root_fd(&self) -> io::Result<BorrowedFd<'_>> {
        if self.root_dir.get().is_none() {
            let fd = rustix::fs::open(
                self.root.as_path(),
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?;
            let _ = self.root_dir.set(fd);
        }
        match self.root_dir.get() {
            Some(fd) => Ok(fd.as_fd()),
            None => Err(io::Error::other("root directory not open")),
        }
    }

    /// `openat2(root, rel, flags, resolve)` for a captured tree.
    pub(super) fn open_beneath(&self, rel: &Path, flags: OFlags, resolve: ResolveFlags) -> io::Result<OwnedFd> {
        let rel = relative(rel);
        let rel = if rel.as_os_str().is_empty() {
            Path::new(".")
        } else {
            rel
        };
        Ok(rustix::fs::openat2(
            self.root_fd()?,
            rel,
            flags | OFlags::CLOEXEC,
            Mode::empty(),
            resolve,
        )?)
    }

    /// Open a directory under the root for listing or for `*at` calls.
    pub fn open_dir(&self, rel: impl AsRef<Path>) -> io::Result<OwnedFd> {
        let rel = rel.as_ref();
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK;
        if self.is_live() {
            return Ok(rustix::fs::open(
                self.path(rel).as_path(),
                flags | OFlags::CLOEXEC,
                Mode::empty(),
            )?);
        }
        self.open_beneath(rel, flags, STRICT)
    }

    /// The entries of a directory under the root ("." and ".." left out),
    /// in the order the filesystem gives them, at most [`LIST_CAP`].
    pub fn list_dir(&self, rel: impl AsRef<Path>) -> io::Result<Vec<Entry>> {
        let dir = self.open_dir(rel)?;
        let mut out = Vec::new();
        let mut it = rustix::fs::Dir::read_from(&dir)?;
        while let Some(e) = it.read() {
            let e = e?;
            let name = e.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            if out.len() >= LIST_CAP {
                break;
            }
            let kind = match e.file_type() {
                // Some filesystems do not fill d_type: ask without following.
                FileType::Unknown => rustix::fs::statat(&dir, e.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode)),
                k => k,
            };
            out.push(Entry {
                name: OsStr::from_bytes(name).to_os_string(),
                kind,
            });
        }
        Ok(out)
    }

    /// The names of a directory's entries, sorted; empty when it cannot
    /// be listed.
    pub fn list_names(&self, rel: impl AsRef<Path>) -> Vec<String> {
        let mut v: Vec<String> = self
            .list_dir(rel)
            .map(|es| es.into_iter().filter_map(|e| e.name.into_string().ok()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }

    /// The numeric entries of a directory (`/proc`, `/proc/<pid>/task`),
    /// sorted.
    pub fn list_numbers(&self, rel: impl AsRef<Path>) -> io::Result<Vec<i32>> {
        let mut v: Vec<i32> = self
            .list_dir(rel)?
            .iter()
            .filter_map(|e| e.name_str()?.parse().ok())
            .collect();
        v.sort_unstable();
        Ok(v)
    }

    /// `stat` of a path under the root. Live: follows symlinks as `stat`
    /// does. Captured tree: a symlink anywhere in the path is an error.
    pub fn stat(&self, rel: impl AsRef<Path>) -> io::Result<Stat> {
        let rel = rel.as_ref();
        if self.is_live() {
            return Ok(rustix::fs::stat(self.path(rel).as_path())?);
        }
        let fd = self.open_beneath(rel, OFlags::PATH, STRICT)?;
        Ok(rustix::fs::fstat(&fd)?)
    }

    /// Whether a path under the root exists (see [`Reader::stat`]).
    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        self.stat(rel).is_ok()
    }

    /// The target of a symlink under the root (the link is read, not
    /// followed; under a captured tree the directories leading to it are
    /// resolved as [`Reader::open_dir`] does).
    pub fn read_link(&self, rel: impl AsRef<Path>) -> io::Result<PathBuf> {
        let rel = rel.as_ref();
        if self.is_live() {
            return std::fs::read_link(self.path(rel));
        }
        let name = rel
            .file_name()
            .ok_or_else(|| io::Error::from(io::ErrorKind::InvalidInput))?;
        let parent = rel.parent().unwrap_or(Path::new(""));
        let dir = self.open_beneath(parent, OFlags::PATH | OFlags::DIRECTORY, STRICT)?;
        let target = rustix::fs::readlinkat(&dir, name, Vec::new())?;
        Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
    }

    /// The canonical path of `rel` as a path under the root (`root` joined
    /// with the canonical path inside the tree). Live: `realpath`. Captured
    /// tree: symlinks are followed only while they stay inside it (a link
    /// that is absolute or climbs out is an error, as is a mount inside).
    pub fn resolve(&self, rel: impl AsRef<Path>) -> io::Result<PathBuf> {
        let rel = rel.as_ref();
        if self.is_live() {
            return std::fs::canonicalize(self.path(rel));
        }
        let fd = self.open_beneath(rel, OFlags::PATH, ResolveFlags::BENEATH | ResolveFlags::NO_XDEV)?;
        let real = fd_path(fd.as_fd())?;
        let top = fd_path(self.root_fd()?)?;
        let inside = real
            .strip_prefix(&top)
            .map_err(|_| io::Error::other("resolved outside the root"))?;
        Ok(self.root.join(inside))
    }
}

/// The path the kernel holds for an open descriptor (`/proc/self/fd/N`).
fn fd_path(fd: BorrowedFd<'_>) -> io::Result<PathBuf> {
    let mut digits = [0u8; 11];
    let n = std::os::fd::AsRawFd::as_raw_fd(&fd);
    let mut name = b"/proc/self/fd/".to_vec();
    name.extend_from_slice(super::decimal(n, &mut digits));
    name.push(0);
    let name = CStr::from_bytes_with_nul(&name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let target = rustix::fs::readlink(name, Vec::new())?;
    Ok(PathBuf::from(OsStr::from_bytes(target.as_bytes())))
}

/// `rel` without its leading "/" (and without a "." start).
fn relative(rel: &Path) -> &Path {
    let mut c = rel.components();
    while let Some(Component::RootDir | Component::CurDir) = c.clone().next() {
        c.next();
    }
    c.as_path()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn captured_listings_stats_and_links_stay_in_the_tree() {
        let base = tempfile::tempdir().unwrap();
        let (root, out) = (base.path().join("tree"), base.path().join("out"));
        std::fs::create_dir_all(root.join("sys/devices/pci0/ata3/host")).unwrap();
        std::fs::create_dir_all(root.join("sys/block/sda")).unwrap();
        std::fs::create_dir_all(out.join("leak")).unwrap();
        std::fs::write(root.join("sys/block/sda/size"), "8\n").unwrap();
        symlink("../../devices/pci0/ata3/host", root.join("sys/block/sda/device")).unwrap();
        symlink(&out, root.join("sys/block/evil")).unwrap();
        symlink("../../../out", root.join("sys/block/rel")).unwrap();
        let r = Reader::new(&root);

        let mut names = r.list_names("/sys/block");
        names.sort();
        assert_eq!(names, ["evil", "rel", "sda"]);
        let kinds: Vec<FileType> = {
            let mut es = r.list_dir("/sys/block").unwrap();
            es.sort_by(|a, b| a.name.cmp(&b.name));
            es.into_iter().map(|e| e.kind).collect()
        };
        assert_eq!(kinds, [FileType::Symlink, FileType::Symlink, FileType::Directory]);
        assert_eq!(r.list_names("/sys/block/sda"), ["device", "size"]);
        // Links out of the tree: neither listed through nor stat'ed.
        for p in [
            "/sys/block/evil",
            "/sys/block/rel",
            "/sys/block/evil/leak",
            "/sys/../../out",
        ] {
            assert!(r.list_dir(p).is_err(), "{p}");
            assert!(r.stat(p).is_err(), "{p}");
            assert!(r.resolve(p).is_err(), "{p}");
        }
        // A link inside the tree: read, resolved, but not stat'ed through.
        assert_eq!(
            r.read_link("/sys/block/sda/device").unwrap(),
            Path::new("../../devices/pci0/ata3/host")
        );
        assert!(r.read_link("/sys/block/evil/leak").is_err());
        assert!(!r.exists("/sys/block/sda/device/."));
        assert!(r.exists("/sys/block/sda/size"));
        assert_eq!(r.stat("sys/block/sda/size").unwrap().st_size, 2);
        assert_eq!(
            r.resolve("/sys/block/sda/device").unwrap(),
            root.join("sys/devices/pci0/ata3/host")
        );
    }

    #[test]
    fn live_listings_follow_sysfs_links() {
        let r = Reader::new("/");
        let pid = std::process::id() as i32;
        assert!(r.list_numbers("/proc").unwrap().contains(&pid));
        assert!(r.exists(format!("/proc/{pid}/stat")));
        assert!(r.read_link("/proc/self/cwd").is_ok());
    }
}
