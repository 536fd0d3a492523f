//! Names for the files the page-cache events name by device and inode: the
//! path where a process has the inode open, from the open files the fd
//! scanner read in the same sample (it reads the fds of the processes that
//! did I/O, which the processes reading and writing files are, and of no
//! other), those of the processes the events came from first; then a small
//! cache of earlier names. Otherwise there is no name and the views say
//! "inode N on DEV". Never a search of a filesystem.

use std::collections::VecDeque;
use std::sync::Arc;

use foldhash::HashMap;

use super::FileKey;
use crate::collect::blocked::FileWait;
use crate::collect::fdinfo::{FdSnapshot, FdTarget};
use crate::collect::trace::block::Dev;

/// Earlier names kept.
pub const CACHE: usize = 1024;

/// `st_dev` as user space sees it (glibc's `makedev` encoding).
pub fn dev_of(st_dev: u64) -> Dev {
    Dev {
        major: (((st_dev >> 8) & 0xfff) | ((st_dev >> 32) & !0xfff)) as u32,
        minor: ((st_dev & 0xff) | ((st_dev >> 12) & !0xff)) as u32,
    }
}

/// Where a file is open: the process and the fd's link text.
type OpenAt = (i32, Arc<[u8]>);

#[derive(Debug, Clone, Default)]
pub struct Names {
    /// From the last sample's open files.
    open: HashMap<FileKey, Vec<OpenAt>>,
    cache: HashMap<FileKey, Arc<[u8]>>,
    order: VecDeque<FileKey>,
}

impl Names {
    /// Take the open regular files of a sample's scanned processes (those
    /// whose link text was read), then the files they have mapped.
    pub fn learn(&mut self, snap: &FdSnapshot) {
        self.open.clear();
        for p in &snap.procs {
            for f in p.fds.iter().filter(|f| f.target == FdTarget::File) {
                if let Some(path) = &f.path {
                    let key = FileKey {
                        dev: dev_of(f.dev),
                        ino: f.ino,
                    };
                    self.open.entry(key).or_default().push((p.key.pid, path.clone()));
                }
            }
        }
        // Mapped, not open: after the open files.
        for m in &snap.mapped {
            let key = FileKey {
                dev: Dev {
                    major: m.dev.0,
                    minor: m.dev.1,
                },
                ino: m.ino,
            };
            self.open.entry(key).or_default().push((m.pid, m.path.clone()));
        }
    }

    /// Take the files the threads blocked in calls on files wait on (after
    /// [`Names::learn`]: their link texts name them too).
    pub fn learn_waits(&mut self, waits: &[FileWait]) {
        for w in waits {
            if let (Some((major, minor)), Some(ino), Some(path)) = (w.dev, w.ino, &w.path) {
                let key = FileKey {
                    dev: Dev { major, minor },
                    ino,
                };
                self.open
                    .entry(key)
                    .or_default()
                    .push((w.pid, Arc::from(path.as_slice())));
            }
        }
    }

    /// The name of `key`: where one of `pids` has it open, else where any
    /// scanned process has it open, else the cache.
    pub fn name(&mut self, key: FileKey, pids: &[i32]) -> Option<Arc<[u8]>> {
        let open = self.open.get(&key).and_then(|v| {
            v.iter()
                .find(|(p, _)| pids.contains(p))
                .or_else(|| v.first())
                .map(|(_, n)| n.clone())
        });
        match open {
            Some(n) => {
                self.remember(key, n.clone());
                Some(n)
            }
            None => self.cache.get(&key).cloned(),
        }
    }

    fn remember(&mut self, key: FileKey, name: Arc<[u8]>) {
        if self.cache.insert(key, name).is_none() {
            self.order.push_back(key);
            while self.order.len() > CACHE {
                if let Some(old) = self.order.pop_front() {
                    self.cache.remove(&old);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::fdinfo::{FdProc, RawFd, ScanReason};
    use crate::collect::process::ProcKey;

    fn fd(dev: u64, ino: u64, path: &str) -> RawFd {
        RawFd {
            fd: 3,
            target: FdTarget::File,
            pos: 0,
            flags: 0,
            mnt_id: None,
            ino,
            dev,
            size: Some(1),
            remote: false,
            path: Some(Arc::from(path.as_bytes())),
        }
    }

    fn snap(procs: Vec<(i32, Vec<RawFd>)>) -> FdSnapshot {
        FdSnapshot {
            procs: procs
                .into_iter()
                .map(|(pid, fds)| FdProc {
                    key: ProcKey { pid, start_time: 1 },
                    comm: "x".into(),
                    io: None,
                    reason: ScanReason::Active,
                    fds,
                    unread: 0,
                    devs: Vec::new(),
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn user_space_dev_numbers() {
        // makedev(7, 0), makedev(254, 1), makedev(259, 300)
        assert_eq!(dev_of(0x700), Dev { major: 7, minor: 0 });
        assert_eq!(dev_of(0xfe01), Dev { major: 254, minor: 1 });
        assert_eq!(dev_of(0x11_032c), Dev { major: 259, minor: 300 });
    }

    #[test]
    fn open_files_then_the_cache() {
        let mut n = Names::default();
        let a = FileKey {
            dev: Dev { major: 7, minor: 0 },
            ino: 12,
        };
        n.learn(&snap(vec![
            (10, vec![fd(0x700, 12, "/mnt/a (deleted)")]),
            (20, vec![fd(0x700, 12, "/mnt/link-to-a")]),
        ]));
        assert_eq!(n.name(a, &[20]).as_deref(), Some(&b"/mnt/link-to-a"[..]));
        assert_eq!(n.name(a, &[99]).as_deref(), Some(&b"/mnt/a (deleted)"[..]));
        // closed since: the cache remembers the last name given
        n.learn(&snap(vec![]));
        assert_eq!(n.name(a, &[10]).as_deref(), Some(&b"/mnt/a (deleted)"[..]));
        let b = FileKey { ino: 13, ..a };
        assert_eq!(n.name(b, &[10]), None);
    }

    #[test]
    fn the_cache_is_bounded() {
        let mut n = Names::default();
        let key = |ino| FileKey {
            dev: Dev { major: 7, minor: 0 },
            ino,
        };
        for ino in 0..CACHE as u64 + 5 {
            n.learn(&snap(vec![(1, vec![fd(0x700, ino, "/f")])]));
            assert!(n.name(key(ino), &[1]).is_some());
        }
        n.learn(&snap(vec![]));
        assert_eq!(n.cache.len(), CACHE);
        assert!(n.name(key(4), &[1]).is_none());
        assert!(n.name(key(5), &[1]).is_some());
    }

    #[test]
    fn mapped_files_after_open_ones() {
        use crate::collect::fdinfo::maps::MappedFile;
        let mut n = Names::default();
        let mut s = snap(vec![(10, vec![fd(0x700, 12, "/mnt/open")])]);
        let mapped = |pid, ino, path: &str| MappedFile {
            pid,
            dev: (7, 0),
            ino,
            path: Arc::from(path.as_bytes()),
        };
        s.mapped = vec![
            mapped(20, 12, "/mnt/mapped-too"),
            mapped(20, 14, "/mnt/lib.so (deleted)"),
        ];
        n.learn(&s);
        let key = |ino| FileKey {
            dev: Dev { major: 7, minor: 0 },
            ino,
        };
        assert_eq!(n.name(key(14), &[20]).as_deref(), Some(&b"/mnt/lib.so (deleted)"[..]));
        assert_eq!(n.name(key(12), &[99]).as_deref(), Some(&b"/mnt/open"[..]));
        assert_eq!(n.name(key(12), &[20]).as_deref(), Some(&b"/mnt/mapped-too"[..]));
    }
}
