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
    let (head, rest) = line.split_once(": block_")?;
    let (name, body) = rest.split_once(": ")?;
    let task = head.trim_start().split(" (").next()?.trim_end();
    let pid = task.rsplit_once('-')?.1.parse().ok()?;
    let ts = head.rsplit(' ').next()?;
    let (s, us) = ts.split_once('.')?;
    let us = s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()?;
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
    let dec = Decoder::load(&Path::new(DIR).join("events")).unwrap();
    let mut stats = DecodeStats::default();
    let mut all = Vec::new();
    for cpu in ["cpu0", "cpu1"] {
        let raw = std::fs::read(format!("{DIR}/{cpu}.raw")).unwrap();
        assert_eq!(raw.len() % 4096, 0);
        dec.decode_pages(&raw, &mut all, &mut stats);
    }
    let mut out = Vec::new();
    Merger::default().push(&mut all, u64::MAX, &mut out);
    (out, stats)
}

#[test]
fn captured_pages_match_the_kernels_text() {
    let (events, stats) = decode_fixture();
    let text = std::fs::read_to_string(format!("{DIR}/trace.txt")).unwrap();
    // io_done was enabled in the capture, iolens does not decode it.
    let want: Vec<Row> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.contains("block_io_done"))
        .map(|l| parse_text(l).unwrap_or_else(|| panic!("unparsed line {l}")))
        .collect();
    assert_eq!(want.len(), 107);
    assert_eq!(stats.events, 107);
    assert_eq!((stats.pages, stats.errors, stats.missed_pages), (3, 0, 0));
    let got: Vec<Row> = events
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
