//! The page-cache event decoder against pages captured from this kernel
//! (tests/fixtures/files-6.18, made by tests/fixtures/files-capture.sh: a
//! 64 KiB buffered write of file `w` on ext4 on a loop device by dd, sync,
//! its cache dropped, a cold read and a warm re-read by cat): every event
//! the kernel rendered as text in `trace.txt` must come out of the raw
//! pages with the same time, task, device or bdi, inode, index and order.

use std::path::Path;

use crate::common;

use iolens::collect::trace::block::Dev;
use iolens::collect::trace::file::{FileEvent, FileKind, Where};
use iolens::collect::trace::{DecodeStats, Decoder};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/files-6.18");

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct Row {
    us: u64,
    pid: i32,
    /// "add 254:0 order=0" or "dirty 7:0"
    what: String,
    ino: u64,
    index: u64,
}

/// `dd-7300 ( 7300) [000] ..... 26550.849005: mm_filemap_add_to_page_cache: dev 254:0 ino 3c52d pfn=0x3b8672 ofs=4096 order=0`
/// `dd-7300 ( 7300) [000] d..1. 26550.853039: writeback_dirty_folio: bdi 7:0: ino=12 index=0`
fn parse_text(line: &str) -> Option<Row> {
    let (us, pid, rest) = crate::trace_text::split_line(line)?;
    let (name, body) = rest.split_once(": ")?;
    let t: Vec<&str> = body.split_whitespace().collect();
    let val = |k: &str| t.iter().find_map(|x| x.strip_prefix(k));
    match name {
        "mm_filemap_add_to_page_cache" => Some(Row {
            us,
            pid,
            what: format!("add {} order={}", t[1], val("order=")?),
            ino: u64::from_str_radix(t[3], 16).ok()?,
            index: val("ofs=")?.parse::<u64>().ok()? >> 12,
        }),
        "writeback_dirty_folio" => Some(Row {
            us,
            pid,
            what: format!("dirty {}", t[1].trim_end_matches(':')),
            ino: val("ino=")?.parse().ok()?,
            index: val("index=")?.parse().ok()?,
        }),
        _ => None,
    }
}

fn row(e: &FileEvent) -> Row {
    let what = match (e.kind, e.place) {
        (FileKind::Added { order }, Where::Sb(d)) => format!("add {}:{} order={order}", d.major, d.minor),
        (FileKind::Dirtied, w) => format!("dirty {}", w.bdi_name()),
        (k, w) => format!("{k:?} {w:?}"),
    };
    Row {
        us: (e.ts + 500) / 1000,
        pid: e.pid,
        what,
        ino: e.ino,
        index: e.index,
    }
}

fn decode_fixture() -> (Vec<FileEvent>, DecodeStats) {
    let dec = Decoder::load_any(&Path::new(DIR).join("events")).unwrap();
    assert!(dec.file.complete());
    assert!(dec.events.is_empty());
    let mut stats = DecodeStats::default();
    let mut all = Vec::new();
    for cpu in ["cpu0", "cpu1"] {
        let raw = std::fs::read(format!("{DIR}/{cpu}.raw")).unwrap();
        assert_eq!(raw.len() % 4096, 0);
        let mut side = iolens::collect::trace::Side::default();
        dec.decode_pages_into(&raw, &mut Vec::new(), &mut side, &mut stats);
        all.append(&mut side.files);
    }
    all.sort_by_key(|e| e.ts);
    (all, stats)
}

#[test]
fn captured_pages_match_the_kernels_text() {
    let (events, stats) = decode_fixture();
    let text = std::fs::read_to_string(format!("{DIR}/trace.txt")).unwrap();
    let want: Vec<Row> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| parse_text(l).unwrap_or_else(|| panic!("unparsed line {l}")))
        .collect();
    assert_eq!(want.len(), 325);
    assert_eq!(stats.events, 325);
    assert_eq!((stats.pages, stats.errors, stats.missed_pages), (5, 0, 0));
    let mut got: Vec<Row> = events.iter().map(row).collect();
    let mut want = want;
    got.sort();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn the_write_and_the_reads_of_the_file() {
    let (events, _) = decode_fixture();
    let facts = std::fs::read_to_string(format!("{DIR}/inode")).unwrap();
    let mut it = facts.split_whitespace();
    let ino: u64 = it.next().unwrap().parse().unwrap();
    assert_eq!(it.next(), Some("7:0"));
    let loop0 = Where::Sb(Dev { major: 7, minor: 0 });
    let of_w: Vec<&FileEvent> = events.iter().filter(|e| e.ino == ino && e.index < 16).collect();
    let adds: Vec<&&FileEvent> = of_w.iter().filter(|e| e.place == loop0).collect();
    let dirties: Vec<&&FileEvent> = of_w.iter().filter(|e| e.kind == FileKind::Dirtied).collect();
    // dd's buffered write: 16 folios added then dirtied, each by dd, in
    // index order, the dirty right after its add; then cat's cold read: 16
    // folios added by cat; the warm re-read adds nothing.
    assert_eq!(adds.len(), 32);
    assert_eq!(dirties.len(), 16);
    assert!(
        adds.iter()
            .all(|e| e.kind == FileKind::Added { order: 0 } && e.bytes() == Some(4096))
    );
    let dd = dirties[0].pid;
    assert!(dirties.iter().all(|e| e.pid == dd && e.place.bdi_name() == "7:0"));
    for (i, d) in dirties.iter().enumerate() {
        assert_eq!(d.index, i as u64);
        let add = adds[i];
        assert_eq!((add.pid, add.index), (dd, i as u64));
        assert!(add.ts < d.ts);
    }
    let cat = adds[16].pid;
    assert_ne!(cat, dd);
    assert!(adds[16..].iter().all(|e| e.pid == cat));
    let mut idx: Vec<u64> = adds[16..].iter().map(|e| e.index).collect();
    idx.sort_unstable();
    assert_eq!(idx, (0..16).collect::<Vec<_>>());
}

/// The captured events through the model: dd's write created and dirtied
/// the 16 folios of `w` and read none; cat's cold read read 64 KiB; the
/// warm re-read added nothing.
#[test]
fn captured_events_through_the_model() {
    use iolens::model::files::{FileKey, FileTracker};
    let (events, _) = decode_fixture();
    let facts = std::fs::read_to_string(format!("{DIR}/inode")).unwrap();
    let ino: u64 = facts.split_whitespace().next().unwrap().parse().unwrap();
    let mut t = FileTracker::default();
    t.feed(&events);
    let i = t.take_interval();
    let key = FileKey {
        dev: Dev { major: 7, minor: 0 },
        ino,
    };
    let (_, w) = i.files.iter().find(|(k, _)| *k == key).unwrap();
    assert_eq!((w.io.read, w.io.created, w.io.dirtied), (65_536, 65_536, 16));
    let dd = events
        .iter()
        .find(|e| e.ino == ino && e.kind == FileKind::Dirtied)
        .unwrap()
        .pid;
    let cat = events.iter().rfind(|e| e.ino == ino).unwrap().pid;
    assert_eq!(w.procs.len(), 2);
    assert_eq!(
        (w.procs[&dd].read, w.procs[&dd].dirtied, w.procs[&dd].created),
        (0, 16, 65_536)
    );
    assert_eq!((w.procs[&cat].read, w.procs[&cat].dirtied), (65_536, 0));
}

/// The common model with a files view: a 64 MiB cold read of /mnt/A by
/// dd (pid 4242, 1 MiB folios), a 32 MiB buffered write by the process
/// with an escape in its name (31337) of a file whose name has one too,
/// readahead by a kernel thread of an unnamed file, over the model's
/// 1 s interval.
pub(crate) fn files_model() -> iolens::model::Model {
    let mut m = common::model();
    m.trace.active = true;
    m.trace.reason = None;
    m.trace.files = iolens::model::files::FilesView::example(4242, 31337);
    // evil (31337) seen blocked in fsync on /mnt/B at the sample
    let wait = iolens::collect::blocked::FileWait {
        pid: 31337,
        tid: 31337,
        syscall: 74,
        wchan: "folio_wait_bit".into(),
        fd: 3,
        dev: Some((7, 0)),
        ino: Some(13),
        path: None,
    };
    let dt = m.interval_s;
    m.trace.files.add_waits(&[wait], dt);
    m
}

fn draw_files(m: &iolens::model::Model, sel: usize, w: u16, h: u16) -> String {
    draw_popup(m, iolens::ui::Popup::Files(sel), w, h)
}

pub(crate) fn draw_popup(m: &iolens::model::Model, popup: iolens::ui::Popup, w: u16, h: u16) -> String {
    use iolens::ui::{self, ViewState};
    let view = ViewState {
        popup,
        ..Default::default()
    };
    let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::render(f, m, &view)).unwrap();
    t.backend().to_string()
}

/// The files view (`I`): busiest first, rates over the interval, the
/// processes by name, "kernel" for kernel threads, escaped names, the
/// unnamed file by inode and device; at the smallest size the processes
/// column gives way to the path.
#[test]
fn files_view_normal_and_small() {
    let m = files_model();
    let normal = draw_files(&m, 1, 120, 16);
    assert!(normal.contains("67.1 MB/s"), "{normal}");
    assert!(normal.contains("inode 1 on loop0"), "{normal}");
    assert!(!normal.contains('\x1b'));
    insta::assert_snapshot!("files_view_120x16", normal);
    let small = draw_files(&m, 0, 50, 12);
    insta::assert_snapshot!("files_view_50x12", small);
}

/// Without tracing the view says why and shows no figures (never 0).
#[test]
fn files_view_says_why_it_is_off() {
    let mut m = files_model();
    m.trace = iolens::model::trace::view::TraceView::off("block tracing needs root");
    let s = draw_files(&m, 0, 80, 12);
    assert!(s.contains("not traced: block tracing needs root"), "{s}");
    assert!(!s.contains("DISK READ/s"), "{s}");
    insta::assert_snapshot!("files_view_off", s);
}

/// A process's detail lists what it did to each file (dd: /mnt/A read
/// at 67.1 MB/s); loop0's detail lists the files on it, busiest first.
#[test]
fn files_in_the_process_and_device_details() {
    use iolens::ui::Popup;
    let m = files_model();
    let key = m.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap().raw.key;
    let p = draw_popup(&m, Popup::Process(key), 120, 30);
    assert!(p.contains("files (1): disk read/s, dirty folios/s, ~blocked"), "{p}");
    assert!(p.contains("67.1 MB/s     0   ~0% /mnt/A"), "{p}");
    assert!(!p.contains("/mnt/B"), "{p}");
    let evil = draw_popup(
        &m,
        Popup::Process(m.procs.iter().find(|p| p.raw.key.pid == 31337).unwrap().raw.key),
        120,
        30,
    );
    assert!(evil.contains("0 B/s    32 ~100% /mnt/B\\x1b[31m (deleted)"), "{evil}");
    let d = draw_popup(&m, Popup::Detail("loop0".into()), 120, 40);
    insta::assert_snapshot!("files_in_device_detail", d);
    let lines: Vec<&str> = d
        .lines()
        .filter(|l| l.contains("/mnt/") || l.contains("inode 1 on"))
        .collect();
    assert_eq!(lines.len(), 3, "{d}");
    assert!(
        // /mnt/B first: its writer was seen blocked on it
        lines[0].contains("/mnt/B") && lines[1].contains("/mnt/A") && lines[2].contains("inode 1 on loop0"),
        "{d}"
    );
}

/// `maps` of a python3 that mapped a 64 KiB file shared and unlinked it
/// (captured on 6.18, tests/fixtures/files-6.18/maps): the deleted file
/// and the program are found by device and inode, each once (the
/// program has five mappings), with their paths; an anonymous mapping's
/// "00:00 0" and an inode on another device are not.
#[test]
fn names_from_a_captured_maps_file() {
    use iolens::collect::fdinfo::maps::{MappedFile, find};
    let text = std::fs::read(Path::new(DIR).join("maps")).unwrap();
    let wanted = [(254, 0, 10_035_251), (254, 0, 247_706), (0, 0, 0), (7, 0, 247_706)];
    let found = find(77, &text, &wanted);
    let m = |ino, path: &str| MappedFile {
        pid: 77,
        dev: (254, 0),
        ino,
        path: std::sync::Arc::from(path.as_bytes()),
    };
    assert_eq!(
        found,
        vec![
            m(247_706, "/usr/bin/python3.11"),
            m(10_035_251, "/tmp/mapcap/data file (deleted)"),
        ]
    );
    // cut anywhere (a bounded read), no panic and no wrong name
    for cut in 0..text.len() {
        for f in find(77, &text[..cut], &wanted) {
            assert!(found.iter().any(|g| g.ino == f.ino && f.path.starts_with(b"/")));
        }
    }
}
