use super::example::{add, dirty, kernel};
use super::*;

const LOOP0: Dev = Dev { major: 7, minor: 0 };
const VDA: Dev = Dev { major: 254, minor: 0 };
const VDA1: Dev = Dev { major: 254, minor: 1 };
const VDA2: Dev = Dev { major: 254, minor: 2 };

fn row(i: &FilesInterval, dev: Dev, ino: u64) -> &FileRow {
    &i.files
        .iter()
        .find(|(k, _)| *k == FileKey { dev, ino })
        .unwrap_or_else(|| panic!("no file {ino} on {dev:?} in {i:?}"))
        .1
}

#[test]
fn cold_read_with_large_folios() {
    let mut t = FileTracker::default();
    // readahead of 12 folios: order 4 (64 KiB) × 8, order 2 (16 KiB) × 4,
    // by thread 101 of process 100
    let mut ev: Vec<FileEvent> = (0..8).map(|i| add(101, 100, LOOP0, 12, i * 16, 4)).collect();
    ev.extend((0..4).map(|i| add(101, 100, LOOP0, 12, 128 + i * 4, 2)));
    t.feed(&ev);
    let i = t.take_interval();
    let r = row(&i, LOOP0, 12);
    assert_eq!(r.io.read, 8 * 65536 + 4 * 16384);
    assert_eq!(r.io.read, 589_824);
    assert_eq!((r.io.dirtied, r.io.created), (0, 0));
    assert_eq!(r.procs.len(), 1);
    assert_eq!(r.procs[&100].read, 589_824);
    assert_eq!(r.kernel, FileIo::default());
    assert_eq!(i.events, 12);
}

#[test]
fn buffered_write_creates_and_dirties_but_reads_nothing() {
    let mut t = FileTracker::default();
    let mut ev = Vec::new();
    for idx in 0..10 {
        ev.push(add(200, 200, LOOP0, 13, idx, 0));
        ev.push(dirty(200, 200, "7:0", 13, idx));
    }
    // a rewrite of page 3: already cached, dirtied only
    ev.push(dirty(200, 200, "7:0", 13, 3));
    t.feed(&ev);
    let i = t.take_interval();
    let r = row(&i, LOOP0, 13);
    assert_eq!(r.io.read, 0);
    assert_eq!(r.io.created, 40_960);
    assert_eq!(r.io.dirtied, 11);
    assert_eq!(r.procs[&200].dirtied, 11);
}

#[test]
fn read_and_write_interleaved_across_processes() {
    let mut t = FileTracker::default();
    // reader 300 reads file 20 while writer 400 writes file 21; their
    // events interleave, each task's in its own order
    let ev = vec![
        add(300, 300, LOOP0, 20, 0, 0),
        add(400, 400, LOOP0, 21, 0, 0),
        add(300, 300, LOOP0, 20, 1, 0),
        dirty(400, 400, "7:0", 21, 0),
        add(300, 300, LOOP0, 20, 2, 0),
        add(400, 400, LOOP0, 21, 1, 0),
        dirty(400, 400, "7:0", 21, 1),
    ];
    t.feed(&ev);
    let i = t.take_interval();
    let a = row(&i, LOOP0, 20);
    assert_eq!((a.io.read, a.io.dirtied, a.io.created), (12_288, 0, 0));
    assert_eq!(a.procs.keys().copied().collect::<Vec<_>>(), [300]);
    let b = row(&i, LOOP0, 21);
    assert_eq!((b.io.read, b.io.dirtied, b.io.created), (0, 2, 8_192));
    assert_eq!(b.procs.keys().copied().collect::<Vec<_>>(), [400]);
    // busiest first: 12 KiB read before 2 folios (8 KiB) dirtied
    assert_eq!(i.files[0].0.ino, 20);
}

#[test]
fn a_read_then_a_write_of_another_page_stays_a_read() {
    let mut t = FileTracker::default();
    // the task reads page 5 then dirties page 9 (already cached)
    t.feed(&[add(1, 1, LOOP0, 30, 5, 0), dirty(1, 1, "7:0", 30, 9)]);
    let i = t.take_interval();
    let r = row(&i, LOOP0, 30);
    assert_eq!((r.io.read, r.io.dirtied, r.io.created), (4096, 1, 0));
}

#[test]
fn kernel_workers_are_not_charged_to_processes() {
    let mut t = FileTracker::default();
    t.feed(&[
        kernel(add(77, 77, LOOP0, 40, 0, 0)),
        kernel(add(77, 77, LOOP0, 40, 1, 0)),
        add(500, 500, LOOP0, 40, 2, 0),
        kernel(dirty(78, 78, "7:0", 40, 7)),
    ]);
    let i = t.take_interval();
    let r = row(&i, LOOP0, 40);
    assert_eq!((r.io.read, r.io.dirtied), (12_288, 1));
    assert_eq!((r.kernel.read, r.kernel.dirtied), (8_192, 1));
    assert_eq!(r.procs.len(), 1);
    assert_eq!(r.procs[&500].read, 4096);
}

#[test]
fn loop_backing_file_is_not_counted_twice() {
    let mut t = FileTracker::default();
    let image = FileKey { dev: VDA1, ino: 99 };
    t.set_backing([image]);
    // cat reads 2 pages of a file on loop0; loop0's worker reads the same
    // 8 KiB from its backing file on vda1
    t.feed(&[
        add(600, 600, LOOP0, 12, 0, 0),
        add(600, 600, LOOP0, 12, 1, 0),
        kernel(add(80, 80, VDA1, 99, 100, 0)),
        kernel(add(80, 80, VDA1, 99, 101, 0)),
    ]);
    let i = t.take_interval();
    assert_eq!(row(&i, LOOP0, 12).io.read, 8192);
    let img = row(&i, VDA1, 99);
    assert_eq!((img.io.read, img.io.backing_read), (0, 8192));
    let read: u64 = i.files.iter().map(|(_, r)| r.io.read).sum();
    assert_eq!(read, 8192);
    // the worker's buffered writes of the loop device's writes: dirties
    // of the image kept apart, and it ranks below any file with I/O
    t.feed(&[
        dirty(600, 600, "7:0", 12, 3),
        kernel(dirty(81, 81, "254:1", 99, 103)),
        kernel(dirty(81, 81, "254:1", 99, 104)),
    ]);
    let i = t.take_interval();
    assert_eq!(row(&i, LOOP0, 12).io.dirtied, 1);
    let img = row(&i, VDA1, 99);
    assert_eq!(
        (img.io.dirtied, img.io.backing_dirtied, img.kernel.backing_dirtied),
        (0, 2, 2)
    );
    assert_eq!(i.files[0].0, FileKey { dev: LOOP0, ino: 12 });
}

#[test]
fn partitions_share_the_disks_bdi() {
    let mut t = FileTracker::default();
    let mut m = BdiMap::default();
    m.by_name.insert("254:0".into(), vec![VDA1, VDA2]);
    t.set_bdis(m);
    // a write on vda2: paired with its add, so placed on vda2
    t.feed(&[add(1, 1, VDA2, 50, 0, 0), dirty(1, 1, "254:0", 50, 0)]);
    // a rewrite of a cached page of inode 50: vda2 knows inode 50
    t.feed(&[dirty(2, 2, "254:0", 50, 0)]);
    // inode 51 never seen: the first filesystem on the disk
    t.feed(&[dirty(3, 3, "254:0", 51, 0)]);
    // a bdi nothing names and not a device number: not placed
    t.feed(&[dirty(4, 4, "btrfs-1", 52, 0)]);
    let i = t.take_interval();
    assert_eq!(row(&i, VDA2, 50).io.dirtied, 2);
    assert_eq!(row(&i, VDA2, 50).io.created, 4096);
    assert_eq!(row(&i, VDA1, 51).io.dirtied, 1);
    assert_eq!(i.unplaced_dirtied, 1);
    assert_eq!(BdiMap::default().devs("0:53"), [Dev { major: 0, minor: 53 }]);
    assert!(BdiMap::default().devs("noop").is_empty());
    let _ = VDA;
}

#[test]
fn intervals_and_totals() {
    let mut t = FileTracker::default();
    t.feed(&[add(1, 1, LOOP0, 60, 0, 0), add(1, 1, LOOP0, 60, 1, 0)]);
    let a = t.take_interval();
    t.feed(&[add(2, 2, LOOP0, 60, 2, 1)]);
    let b = t.take_interval();
    let c = t.take_interval();
    assert_eq!(row(&a, LOOP0, 60).io.read, 8192);
    assert_eq!(row(&b, LOOP0, 60).io.read, 8192);
    assert!(c.files.is_empty());
    let tot = t.total();
    assert_eq!(tot.files.len(), 1);
    let r = &tot.files[0].1;
    assert_eq!(r.io.read, 16_384);
    assert_eq!((r.procs[&1].read, r.procs[&2].read), (8192, 8192));
}

/// A sampled interval's counts are scaled before they reach the totals:
/// 2 folios of 4 KiB traced at share 0.25 are 32 KiB in the interval and
/// in the totals; a whole interval after adds its 4 KiB as traced.
#[test]
fn totals_take_the_scaled_interval() {
    use crate::model::trace::window::Share;
    let mut t = FileTracker::default();
    t.feed(&[add(1, 1, LOOP0, 60, 0, 0), add(1, 1, LOOP0, 60, 1, 0)]);
    let a = t.take_interval_at(u64::MAX, Share(0.25));
    assert_eq!(row(&a, LOOP0, 60).io.read, 32_768);
    assert_eq!(row(&a, LOOP0, 60).procs[&1].read, 32_768);
    t.feed(&[add(1, 1, LOOP0, 60, 2, 0)]);
    let b = t.take_interval_at(u64::MAX, Share(1.0));
    assert_eq!(row(&b, LOOP0, 60).io.read, 4096);
    // an interval without a window: no file known, nothing added
    t.feed(&[add(1, 1, LOOP0, 60, 3, 0)]);
    let c = t.take_interval_at(u64::MAX, Share(0.0));
    assert!(c.files.is_empty(), "{c:?}");
    let tot = t.total();
    assert_eq!(tot.files[0].1.io.read, 36_864);
    assert_eq!(tot.files[0].1.procs[&1].read, 36_864);
}

#[test]
fn processes_past_the_limit_are_summed() {
    let mut t = FileTracker::default();
    let ev: Vec<FileEvent> = (1..=20).map(|p| add(p, p, LOOP0, 70, p as u64, 0)).collect();
    t.feed(&ev);
    let i = t.take_interval();
    let r = row(&i, LOOP0, 70);
    assert_eq!(r.procs.len(), MAX_PROCS_PER_FILE + 1);
    assert_eq!(r.procs[&0].read, 4 * 4096);
    assert_eq!(r.procs.values().map(|p| p.read).sum::<u64>(), 20 * 4096);
}

#[test]
fn totals_are_bounded() {
    let mut t = FileTracker::default();
    let ev: Vec<FileEvent> = (0..MAX_FILES as u64 + 10)
        .map(|ino| add(1, 1, LOOP0, ino, 0, u8::from(ino < 5)))
        .collect();
    t.feed(&ev);
    t.take_interval();
    let tot = t.total();
    assert_eq!(tot.files.len(), MAX_FILES * 3 / 4);
    // the five 8 KiB files are kept, first
    assert!(tot.files[..5].iter().all(|(_, r)| r.io.read == 8192));
    let kept: u64 = tot.files.iter().map(|(_, r)| r.io.read).sum();
    assert_eq!(kept + tot.other.read, 5 * 8192 + (MAX_FILES as u64 + 5) * 4096);
}

/// The bdi map from the device rows: vda's mounted partitions under
/// "254:0" (vda itself is not mounted), loop0 under its own number, an
/// unmounted partition left out.
#[test]
fn bdi_map_from_the_device_rows() {
    use crate::collect::mounts::MountInfo;
    use crate::collect::sysblock::DeviceInfo;
    use crate::model::DeviceRow;
    let dev = |name: &str, d: Dev, parent: Option<&str>, mounted: bool| {
        let mut info = DeviceInfo::example(name);
        info.parent = parent.map(String::from);
        if mounted {
            info.mounts = vec![MountInfo {
                mount_point: format!("/mnt/{name}"),
                fs_type: "ext4".into(),
                total_bytes: None,
                available_bytes: None,
            }];
        }
        DeviceRow {
            name: name.into(),
            major: d.major,
            minor: d.minor,
            info: Some(info),
            rates: None,
            rebaseline: None,
            history: Default::default(),
        }
    };
    let vda3 = Dev { major: 254, minor: 3 };
    let rows = vec![
        dev("vda", VDA, None, false),
        dev("vda2", VDA2, Some("vda"), true),
        dev("vda1", VDA1, Some("vda"), true),
        dev("vda3", vda3, Some("vda"), false),
        dev("loop0", LOOP0, None, true),
    ];
    let m = BdiMap::from_devices(&rows);
    assert_eq!(m.by_name.len(), 2, "{m:?}");
    assert_eq!(m.devs("254:0"), [VDA1, VDA2]);
    assert_eq!(m.devs("7:0"), [LOOP0]);
    // a dirty of a file on vda1 named by the disk's bdi lands on vda1
    let mut t = FileTracker::default();
    t.set_bdis(m);
    t.feed(&[add(1, 1, VDA1, 60, 0, 0), dirty(1, 1, "254:0", 60, 0)]);
    t.feed(&[dirty(1, 1, "254:0", 60, 1)]);
    let i = t.take_interval();
    assert_eq!(row(&i, VDA1, 60).io.dirtied, 2);
    assert_eq!(i.files.len(), 1);
}

#[test]
fn blocked_threads_are_sampled_time_on_their_files() {
    use crate::collect::blocked::FileWait;
    let mut t = FileTracker::default();
    t.feed(&[add(101, 100, LOOP0, 12, 0, 0)]);
    let wait = |pid, tid, dev, ino| FileWait {
        pid,
        tid,
        syscall: libc::SYS_fsync,
        wchan: "folio_wait_bit".into(),
        fd: 4,
        dev,
        ino,
        path: None,
    };
    let mut v = FilesView {
        active: true,
        interval: t.take_interval(),
        ..Default::default()
    };
    let waits = [
        // two threads of 200 on file 12, one of 300 on file 13 (no I/O
        // this interval), one whose file is not known
        wait(200, 201, Some((7, 0)), Some(12)),
        wait(200, 202, Some((7, 0)), Some(12)),
        wait(300, 300, Some((7, 0)), Some(13)),
        wait(400, 400, None, Some(14)),
    ];
    v.add_waits(&waits, Some(0.25));
    assert_eq!(v.interval.files.len(), 2);
    let r = row(&v.interval, LOOP0, 12);
    assert_eq!(r.io.blocked_ns, 500_000_000);
    assert_eq!(r.procs[&200].blocked_ns, 500_000_000);
    assert_eq!(r.procs[&100].blocked_ns, 0);
    assert_eq!(r.io.read, 4096);
    assert_eq!(row(&v.interval, LOOP0, 13).procs[&300].blocked_ns, 250_000_000);
    // blocked longest first, then by bytes
    let order: Vec<u64> = v.interval.files.iter().map(|(k, _)| k.ino).collect();
    assert_eq!(order, vec![12, 13]);
    v.add_waits(&waits[2..3], Some(0.5));
    let order: Vec<u64> = v.interval.files.iter().map(|(k, _)| k.ino).collect();
    assert_eq!(order, vec![13, 12]);
    // before the first interval, or while the view is off: nothing added
    let before = v.clone();
    assert_eq!(row(&v.interval, LOOP0, 13).io.blocked_ns, 750_000_000);
    v.add_waits(&waits, None);
    assert_eq!(v.interval, before.interval);
    let mut off = FilesView::off("no tracefs");
    off.add_waits(&waits, Some(1.0));
    assert!(off.interval.files.is_empty());
}

fn at(mut e: FileEvent, ts: u64) -> FileEvent {
    e.ts = ts;
    e
}

/// Traced in windows: a write's add at the window's end with its dirty in
/// the drain is created, not read (1 MiB folios: one such write read as
/// 1 MiB, 2 MiB once scaled, failed CI); the drain's own add and dirty
/// are not counted; a reader's add before the end is still read.
#[test]
fn a_drain_settles_the_adds_pending_at_a_windows_end() {
    let mut t = FileTracker::default();
    let ev = [
        add(1, 1, LOOP0, 80, 0, 8),   // writer, in the window
        add(2, 2, LOOP0, 81, 0, 8),   // reader, in the window
        dirty(1, 1, "7:0", 80, 0),    // drain: the writer's dirty
        add(1, 1, LOOP0, 80, 256, 8), // drain: the writer's next write
        dirty(1, 1, "7:0", 80, 256),  // drain
        add(2, 2, LOOP0, 81, 256, 8), // drain: the reader's next read
    ];
    let inside = [true, true, false, false, false, false];
    t.feed_gated(&ev, |i| inside[i]);
    let i = t.take_interval_at(u64::MAX, Share(0.5));
    let w = row(&i, LOOP0, 80);
    assert_eq!((w.io.read, w.io.created, w.io.dirtied), (0, 2 << 20, 0));
    let r = row(&i, LOOP0, 81);
    assert_eq!((r.io.read, r.io.created), (2 << 20, 0));
    assert_eq!(i.events, 2);
}

/// An add in the last 20 ms before an interval's close waits for its
/// task's next event in the next interval (its dirty: created); an older
/// one is a read of the interval.
#[test]
fn a_recent_add_waits_for_the_next_interval() {
    const MS: u64 = 1_000_000;
    let mut t = FileTracker::default();
    t.feed(&[
        at(add(1, 1, LOOP0, 90, 0, 0), 990 * MS),
        at(add(2, 2, LOOP0, 91, 0, 0), 900 * MS),
    ]);
    let a = t.take_interval_at(1000 * MS, Share::default());
    assert_eq!(row(&a, LOOP0, 91).io.read, 4096);
    assert!(a.files.iter().all(|(k, _)| k.ino != 90), "{:?}", a.files);
    t.feed(&[at(dirty(1, 1, "7:0", 90, 0), 1001 * MS)]);
    let b = t.take_interval_at(2000 * MS, Share::default());
    let w = row(&b, LOOP0, 90);
    assert_eq!((w.io.read, w.io.created, w.io.dirtied), (0, 4096, 1));
}
