//! The tracefs page decoder against pages captured from this kernel
//! (tests/fixtures/trace-6.18, made by tests/fixtures/trace-capture.sh):
//! every event the kernel rendered as text in `trace.txt` must come out of
//! the raw pages with the same time, CPU-merged order, device, sector,
//! size, flags and task.

use std::path::Path;

use iolens::collect::trace::block::{BlockEvent, Dev, Kind, Op};
use iolens::collect::trace::merge::Merger;
use iolens::collect::trace::{DecodeStats, Decoder};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trace-6.18");

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct Row {
    us: u64,
    name: String,
    dev: (u32, u32),
    rwbs: String,
    sector: u64,
    sectors: u32,
    pid: i32,
}

fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Start => "block_io_start",
        Kind::Queue => "block_bio_queue",
        Kind::Insert => "block_rq_insert",
        Kind::Issue => "block_rq_issue",
        Kind::Complete => "block_rq_complete",
        Kind::Requeue => "block_rq_requeue",
        Kind::BackMerge => "block_bio_backmerge",
        Kind::FrontMerge => "block_bio_frontmerge",
        Kind::RqMerge => "block_rq_merge",
    }
}

/// `  dd-16991   (  16991) [001] .....   619.747605: block_io_start: 7,0 RS 4096 () 0 + 8 be,0,4 [dd]`
fn parse_text(line: &str) -> Option<Row> {
    let (us, pid, rest) = crate::trace_text::split_line(line)?;
    let (name, body) = rest.strip_prefix("block_")?.split_once(": ")?;
    let toks: Vec<&str> = body.split_whitespace().collect();
    let (maj, min) = toks[0].split_once(',')?;
    let plus = toks.iter().position(|t| *t == "+")?;
    Some(Row {
        us,
        name: format!("block_{name}"),
        dev: (maj.parse().ok()?, min.parse().ok()?),
        rwbs: toks[1].to_string(),
        sector: toks[plus - 1].parse().ok()?,
        sectors: toks[plus + 1].parse().ok()?,
        pid,
    })
}

fn rwbs_text(e: &BlockEvent) -> String {
    let mut s = String::new();
    if e.rwbs.preflush {
        s.push('F');
    }
    s.push(e.rwbs.op.map_or('?', |o| o.letter()));
    if e.rwbs.fua {
        s.push('F');
    }
    for (on, c) in [(e.rwbs.ahead, 'A'), (e.rwbs.sync, 'S'), (e.rwbs.meta, 'M')] {
        if on {
            s.push(c);
        }
    }
    s
}

fn decode_fixture() -> (Vec<BlockEvent>, DecodeStats) {
    decode_dir(DIR)
}

fn decode_dir(dir: &str) -> (Vec<BlockEvent>, DecodeStats) {
    let dec = Decoder::load(&Path::new(dir).join("events")).unwrap();
    let mut stats = DecodeStats::default();
    let mut all = Vec::new();
    for cpu in ["cpu0", "cpu1"] {
        let raw = std::fs::read(format!("{dir}/{cpu}.raw")).unwrap();
        assert_eq!(raw.len() % 4096, 0);
        dec.decode_pages(&raw, &mut all, &mut stats);
    }
    let mut out = Vec::new();
    Merger::default().push(&mut all, u64::MAX, &mut out);
    (out, stats)
}

/// The rows of the kernel's text rendering (`io_done`, enabled in the
/// first capture, is not decoded) and of the decoded events.
fn rows(dir: &str, events: &[BlockEvent]) -> (Vec<Row>, Vec<Row>) {
    let text = std::fs::read_to_string(format!("{dir}/trace.txt")).unwrap();
    let want: Vec<Row> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains("block_io_done"))
        .map(|l| parse_text(l).unwrap_or_else(|| panic!("unparsed line {l}")))
        .collect();
    let got = events
        .iter()
        .map(|e| Row {
            us: (e.ts + 500) / 1000,
            name: kind_name(e.kind).to_string(),
            dev: (e.dev.major, e.dev.minor),
            rwbs: rwbs_text(e),
            sector: e.sector,
            sectors: e.sectors,
            pid: e.pid,
        })
        .collect();
    (want, got)
}

#[test]
fn captured_pages_match_the_kernels_text() {
    let (events, stats) = decode_fixture();
    let (want, got) = rows(DIR, &events);
    assert_eq!(want.len(), 107);
    assert_eq!(stats.events, 107);
    assert_eq!((stats.pages, stats.errors, stats.missed_pages), (3, 0, 0));
    // Same events in the same time order (events within one microsecond
    // may be listed in either order by the text).
    let mut a = got.clone();
    let mut b = want.clone();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert!(got.windows(2).all(|w| w[0].us <= w[1].us));
}

#[test]
fn captured_fields() {
    let (events, _) = decode_fixture();
    let e = &events[0];
    assert_eq!(e.kind, Kind::Start);
    assert_eq!(e.dev, Dev { major: 7, minor: 0 });
    assert_eq!((e.sector, e.sectors), (0, 8));
    assert_eq!(e.rwbs.op(e.sectors), Op::Read);
    assert_eq!(e.comm_str(), "dd");
    // the empty preflush write and the flush request the kernel made for it
    let fws = events
        .iter()
        .find(|e| e.kind == Kind::Start && e.rwbs.preflush && e.dev.major == 7)
        .unwrap();
    assert_eq!(fws.rwbs.op(fws.sectors), Op::Flush);
    let ff_done = events
        .iter()
        .find(|e| e.kind == Kind::Complete && e.rwbs.op == Some(Op::Flush) && e.dev.major == 7)
        .unwrap();
    assert_eq!(ff_done.sector, u64::MAX);
    // back merges of the buffered write
    let merges = events.iter().filter(|e| e.kind == Kind::BackMerge).count();
    assert_eq!(merges, 31);
    // vda's writeback went through mq-deadline: inserted before issue
    assert!(events.iter().any(|e| e.kind == Kind::Insert && e.dev.major == 254));
}

/// Captured with `block_bio_queue` enabled beside the events iolens
/// enables (tests/fixtures/trace-6.18-wait: `EVENTS=... trace-capture.sh`).
const WAIT_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trace-6.18-wait");

#[test]
fn bio_queue_pages_match_the_kernels_text_and_give_the_wait() {
    use iolens::model::trace::Accumulator;
    let (events, stats) = decode_dir(WAIT_DIR);
    let (want, got) = rows(WAIT_DIR, &events);
    assert_eq!(want.len(), 187);
    assert_eq!((stats.events, stats.errors, stats.missed_pages), (187, 0, 0));
    let (mut a, mut b) = (got.clone(), want.clone());
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let queued = events.iter().filter(|e| e.kind == Kind::Queue).count();
    assert_eq!(queued, want.iter().filter(|r| r.name == "block_bio_queue").count());
    assert_eq!(queued, 62);
    let mut acc = Accumulator::default();
    acc.feed(&events);
    let reqs: Vec<_> = acc
        .log()
        .filter(|r| r.dev == Dev { major: 7, minor: 0 })
        .copied()
        .collect();
    // The buffered write merged from 32 bios (trace.txt): the first bio
    // queued at 37665.485957, its request started at .485968 and was
    // issued at .486038 (800 + 256): wait 81 µs, queue 70 µs
    let w = reqs.iter().find(|r| r.op == Op::Write && r.sector == 800).unwrap();
    assert_eq!(w.bytes, 256 * 512);
    // (the text rounds each stamp to the µs: ±1 µs)
    let us = |n: Option<u64>| n.map_or(-1.0, |n| n as f64 / 1000.0);
    assert!((us(w.wait_ns) - 81.0).abs() <= 1.0, "wait {:?}", w.wait_ns);
    assert!((us(w.queue_ns) - 70.0).abs() <= 1.0, "queue {:?}", w.queue_ns);
    // Every data request has its wait, never shorter than its queue time
    // (the bio is queued before its request starts).
    let data: Vec<_> = reqs.iter().filter(|r| r.op != Op::Flush).collect();
    assert!(data.len() >= 20, "{} requests", data.len());
    for r in &data {
        let (Some(wait), Some(q)) = (r.wait_ns, r.queue_ns) else {
            panic!("no wait or queue time: {r:?}");
        };
        assert!(wait >= q, "{r:?}");
    }
    // The flush has no bio of its own.
    assert!(reqs.iter().filter(|r| r.op == Op::Flush).all(|r| r.wait_ns.is_none()));
}
