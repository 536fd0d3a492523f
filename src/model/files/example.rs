//! Page-cache events and a files view built by hand, for tests.

use std::sync::Arc;

use super::{FileTracker, FilesView};
use crate::collect::trace::block::Dev;
use crate::collect::trace::file::{FileEvent, FileKind, Where};

/// A folio of 4 KiB << `order` added to the cache of inode `ino` on `dev`
/// at page `index`, by task `pid` of process `tgid`.
pub fn add(pid: i32, tgid: i32, dev: Dev, ino: u64, index: u64, order: u8) -> FileEvent {
    FileEvent {
        ts: 0,
        kind: FileKind::Added { order },
        place: Where::Sb(dev),
        ino,
        index,
        pid,
        tgid,
        kernel: false,
    }
}

/// A folio dirtied, on the backing device named `bdi` (e.g. "7:0").
pub fn dirty(pid: i32, tgid: i32, bdi: &str, ino: u64, index: u64) -> FileEvent {
    let mut name = [0u8; 32];
    let n = bdi.len().min(name.len());
    name[..n].copy_from_slice(&bdi.as_bytes()[..n]);
    FileEvent {
        ts: 0,
        kind: FileKind::Dirtied,
        place: Where::Bdi(name),
        ino,
        index,
        pid,
        tgid,
        kernel: false,
    }
}

/// The event, run by a kernel thread.
pub fn kernel(mut e: FileEvent) -> FileEvent {
    e.kernel = true;
    e
}

impl FilesView {
    /// One interval on loop0 (1 MiB folios): a 64 MiB cold read of
    /// `/mnt/A` (inode 12) by `reader`, a 32 MiB buffered write by `writer`
    /// of a file deleted since and named with an escape sequence (inode
    /// 13), and 16 KiB of readahead by a kernel thread of an unnamed file
    /// (inode 1).
    pub fn example(reader: i32, writer: i32) -> FilesView {
        let loop0 = Dev { major: 7, minor: 0 };
        let mut events = Vec::new();
        for i in 0..64 {
            events.push(add(reader, reader, loop0, 12, i * 256, 8));
        }
        for i in 0..32 {
            events.push(add(writer, writer, loop0, 13, i * 256, 8));
            events.push(dirty(writer, writer, "7:0", 13, i * 256));
        }
        events.push(kernel(add(50, 50, loop0, 1, 0, 2)));
        let mut t = FileTracker::default();
        t.feed(&events);
        FilesView {
            active: true,
            reason: None,
            interval: t.take_interval(),
            names: vec![
                Some(Arc::from(&b"/mnt/A"[..])),
                Some(Arc::from(&b"/mnt/B\x1b[31m (deleted)"[..])),
                None,
            ],
        }
    }
}
