//! The dirty-throttle decoder against pages captured from this kernel
//! (tests/fixtures/dirty-6.18, made by tests/fixtures/dirty-capture.sh: a
//! 16 MiB buffered write by dd to a loop device whose bdi has a strict
//! dirty limit of 1 MiB): every `balance_dirty_pages` event the kernel
//! rendered as text in `trace.txt` must come out of the raw pages with
//! the same time, task, bdi, page counts and times; then the model sums
//! dd's pauses as the text does.

use std::path::Path;

use iolens::collect::trace::dirty::PauseEvent;
use iolens::collect::trace::{DecodeStats, Decoder, Side};
use iolens::model::dirty::ThrottleTracker;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/dirty-6.18");

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord, Clone)]
struct Row {
    us: u64,
    pid: i32,
    bdi: String,
    /// limit, dirty, wb_setpoint, wb_dirty, dirtied
    pages: [u64; 5],
    /// paused, pause, period, think
    ms: [i64; 4],
}

/// `dd-21718 ( 21718) [001] ..... 46994.912652: balance_dirty_pages: bdi 7:0: limit=1069868 setpoint=935970 dirty=16183 wb_setpoint=223 wb_dirty=249 dirty_ratelimit=102400 task_ratelimit=29800 dirtied=64 dirtied_pause=56 paused=0 pause=8 period=8 think=0 cgroup_ino=1`
fn parse_text(line: &str) -> Option<Row> {
    let (us, pid, rest) = crate::trace_text::split_line(line)?;
    let body = rest.strip_prefix("balance_dirty_pages: bdi ")?;
    let (bdi, kv) = body.split_once(": ")?;
    let val = |k: &str| -> Option<i64> {
        kv.split_whitespace()
            .find_map(|x| x.strip_prefix(k)?.strip_prefix('='))?
            .parse()
            .ok()
    };
    let p = |k: &str| val(k).map(|v| v as u64);
    Some(Row {
        us,
        pid,
        bdi: bdi.to_string(),
        pages: [
            p("limit")?,
            p("dirty")?,
            p("wb_setpoint")?,
            p("wb_dirty")?,
            p("dirtied")?,
        ],
        ms: [val("paused")?, val("pause")?, val("period")?, val("think")?],
    })
}

fn row(e: &PauseEvent) -> Row {
    Row {
        us: (e.ts + 500) / 1000,
        pid: e.pid,
        bdi: e.bdi_name(),
        pages: [e.limit, e.dirty, e.wb_setpoint.unwrap(), e.wb_dirty.unwrap(), e.dirtied],
        ms: [e.paused_ms as i64, e.pause_ms, e.period_ms as i64, e.think_ms],
    }
}

fn decode_fixture() -> (Vec<PauseEvent>, DecodeStats) {
    let dec = Decoder::load_any(&Path::new(DIR).join("events")).unwrap();
    assert!(dec.dirty.complete());
    assert!(dec.events.is_empty() && !dec.file.complete());
    let mut stats = DecodeStats::default();
    let mut side = Side::default();
    for cpu in ["cpu0", "cpu1"] {
        let raw = std::fs::read(format!("{DIR}/{cpu}.raw")).unwrap();
        assert_eq!(raw.len() % 4096, 0);
        dec.decode_pages_into(&raw, &mut Vec::new(), &mut side, &mut stats);
    }
    side.pauses.sort_by_key(|e| e.ts);
    (side.pauses, stats)
}

fn text_rows() -> Vec<Row> {
    let text = std::fs::read_to_string(format!("{DIR}/trace.txt")).unwrap();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| parse_text(l).unwrap_or_else(|| panic!("unparsed line {l}")))
        .collect()
}

fn writer() -> (String, i32) {
    let w = std::fs::read_to_string(format!("{DIR}/writer")).unwrap();
    let (bdi, pid) = w.trim().split_once(' ').unwrap();
    (bdi.to_string(), pid.parse().unwrap())
}

#[test]
fn captured_pages_match_the_kernels_text() {
    let (events, stats) = decode_fixture();
    let mut want = text_rows();
    assert_eq!(want.len(), 54);
    assert_eq!(stats.events, 54);
    assert_eq!((stats.pages, stats.errors, stats.missed_pages), (3, 0, 0));
    let mut got: Vec<Row> = events.iter().map(row).collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // both kinds of pass are in the capture: sleeping and not
    assert!(events.iter().any(|e| e.pause_ms > 0) && events.iter().any(|e| e.pause_ms <= 0));
}

#[test]
fn captured_pauses_through_the_model() {
    let (events, _) = decode_fixture();
    let (bdi, dd) = writer();
    let want = text_rows();
    assert!(want.iter().all(|r| r.pid == dd && r.bdi == bdi));
    let pauses: Vec<i64> = want.iter().map(|r| r.ms[1]).filter(|p| *p > 0).collect();
    let mut t = ThrottleTracker::default();
    // resolved by the reader in a live run: here the capture's one task
    let events: Vec<PauseEvent> = events.into_iter().map(|e| PauseEvent { tgid: dd, ..e }).collect();
    t.feed(&events);
    let i = t.take_interval();
    let r = i.procs[&(dd, bdi.clone())];
    assert_eq!(r.passes, 54);
    assert_eq!(r.pauses, pauses.len() as u64);
    assert_eq!(r.paused_ms, pauses.iter().sum::<i64>() as u64);
    assert_eq!(r.max_pause_ms, *pauses.iter().max().unwrap() as u64);
    let b = &i.bdis[&bdi];
    assert_eq!((b.writers, b.sum), (1, r));
    let last = want.iter().max_by_key(|r| r.us).unwrap();
    assert_eq!(b.wb_dirty_pages, Some(last.pages[3]));
}
