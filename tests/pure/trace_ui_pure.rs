//! The dashboard with block tracing on and off, from the deterministic
//! model plus a hand-made trace interval: the devices pane's exact share
//! and p99, the device detail's latency per op with the queue / device
//! split, the request log (frozen, filtered), and, with tracing off, the
//! estimate marked and the reason in the header.

use crate::common;

use iolens::collect::trace::block::{BlockEvent, Dev, Kind, Rwbs};
use iolens::model::Model;
use iolens::model::trace::Accumulator;
use iolens::model::trace::view::TraceView;
use iolens::ui::{self, LogView, Pane, Popup, ViewState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn draw(model: &Model, view: &ViewState, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::render(f, model, view)).unwrap();
    t
}

fn text(t: &Terminal<TestBackend>) -> String {
    t.backend().to_string()
}

/// The request log's time column is local time: its hours and minutes
/// depend on the machine's time zone, so they are masked (`hh:mm`) in the
/// snapshot; the seconds and milliseconds stay.
fn mask_hours_minutes(s: &str) -> String {
    let b = s.as_bytes();
    let shape = b"00:00:00.000";
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let fits = b.len() - i >= shape.len()
            && shape
                .iter()
                .zip(&b[i..])
                .all(|(p, c)| if *p == b'0' { c.is_ascii_digit() } else { p == c });
        if fits {
            out.push_str("hh:mm");
            i += 5;
        } else {
            let ch = s[i..].chars().next().unwrap_or('?');
            out.push(ch);
            i += ch.len_utf8().max(1);
        }
    }
    out
}

fn comm(s: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..s.len()].copy_from_slice(s.as_bytes());
    c
}

/// loop0 (7:0): 40 reads of 4 KiB by dd (pid 4242), 30 in one stream from
/// sector 0 and 10 far apart: 29 sequential of 40 = 72.5% → SEQ 72%.
/// Request i waits 10 µs in the queue and takes 100 µs on the device,
/// except every tenth, which takes 2 ms: p99 of the total is in the 2 ms
/// bucket. Completions end at 1.000 s on the trace clock, and the model's
/// sample is at 1.5 s.
pub(crate) fn traced_model() -> Model {
    let mut m = common::model();
    let loop0 = Dev { major: 7, minor: 0 };
    let ev = |ts: u64, kind: Kind, sector: u64| BlockEvent {
        ts,
        kind,
        dev: loop0,
        sector,
        sectors: 8,
        rwbs: Rwbs::parse(b"R"),
        pid: 4242,
        comm: comm("dd"),
        error: 0,
        tgid: 4242,
        kernel: false,
    };
    let mut evs = Vec::new();
    for i in 0..40u64 {
        let sector = if i < 30 { i * 8 } else { 1_000_000 * i };
        let t = 500_000_000 + i * 10_000_000;
        let dev_ns = if i % 10 == 9 { 2_000_000 } else { 100_000 };
        evs.extend([
            ev(t, Kind::Start, sector),
            ev(t + 10_000, Kind::Issue, sector),
            ev(t + 10_000 + dev_ns, Kind::Complete, sector),
        ]);
    }
    let mut t = Accumulator::default();
    t.feed(&evs);
    let view = TraceView {
        active: true,
        reason: None,
        interval: t.take_interval(),
        log: t.log().copied().collect(),
        files: Default::default(),
        dirty: Default::default(),
        cost: None,
    };
    m.mono_ns = 1_500_000_000;
    m.apply_trace(view);
    m
}

#[test]
fn devices_pane_shows_the_exact_share_and_p99() {
    let m = traced_model();
    // Partitions are folded under their disk unless unfolded.
    let v = ViewState {
        unfolded: ["sda".to_string()].into(),
        ..Default::default()
    };
    let s = text(&draw(&m, &v, 200, 60));
    let lo = s.lines().find(|l| l.contains("│loop0")).unwrap();
    // 29 of 40 sequential; p99 is the middle of the bucket holding 2.01 ms,
    // [1.966, 2.032) ms
    assert!(lo.contains("SEQ 72%") && lo.contains(" 2.00 "), "{lo}");
    // sda was not traced in this interval: its estimate stays marked, and
    // no request completed there, so its p99 is "-"; a partition's is n/a
    let sda = s.lines().find(|l| l.contains("│sda ")).unwrap();
    assert!(sda.contains("~SEQ") && sda.contains(" - "), "{sda}");
    let sda1 = s.lines().find(|l| l.contains("├sda1")).unwrap();
    assert!(sda1.contains("n/a"), "{sda1}");
    // the heading says what the percentage is of
    assert!(s.contains(" seq bytes "), "{s}");
    insta::assert_snapshot!("traced_devices_200x60", draw(&m, &v, 200, 60).backend());
}

/// The percentage shown, and the label, are of bytes: 1 MiB sequential
/// reads next to 4 KiB random ones are 2 of 42 requests and 2 MiB of
/// 2 MiB + 160 KiB (92.8%). Untraced, the heading stays `pat`.
#[test]
fn the_share_shown_is_of_bytes() {
    let mut m = common::model();
    let s = text(&draw(&m, &ViewState::default(), 200, 60));
    assert!(s.contains("  pat ") && !s.contains("seq bytes"), "{s}");
    common::trace_loop0_mixed(&mut m);
    let s = text(&draw(&m, &ViewState::default(), 200, 60));
    let lo = s.lines().find(|l| l.contains("│loop0")).unwrap();
    assert!(lo.contains("SEQ 93%"), "{lo}");
    assert!(s.contains(" seq bytes "), "{s}");
    // the batch text: the same heading and figure; its traced report has
    // the bytes' share and the requests' (2 of 42)
    let text = iolens::batch::text_report(&m, 10);
    assert!(text.contains(" seq bytes mount"), "{text}");
    assert!(
        text.lines().any(|l| l.starts_with("loop0 ") && l.contains(" SEQ 93% ")),
        "{text}"
    );
    let (_, traced) = text.split_once("traced requests:").unwrap();
    assert!(traced.contains(" seq B  seq R "), "{traced}");
    let row = traced.lines().find(|l| l.starts_with("loop0 ")).unwrap();
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[..5], ["loop0", "read", "42", "93%", "5%"], "{row}");
}

#[test]
fn detail_shows_latency_per_op_with_the_queue_device_split() {
    let m = traced_model();
    let v = ViewState {
        popup: Popup::Detail("loop0".into()),
        focus: Pane::Devices,
        ..Default::default()
    };
    let t = draw(&m, &v, 160, 50);
    let s = text(&t);
    assert!(s.contains("read 40 requests"), "{s}");
    // queue 10 µs for all 40; device 100 µs ×36 and 2 ms ×4
    assert!(
        s.contains("queue 0.010/0.010/0.010 · device 0.100/2.00/2.00 · total 0.109/2.00/2.01"),
        "{s}"
    );
    let q = s.lines().find(|l| l.contains("<17µs")).unwrap_or_else(|| panic!("{s}"));
    assert!(q.contains(" 40 "), "{q}");
    let d = s
        .lines()
        .find(|l| l.contains("<132µs"))
        .unwrap_or_else(|| panic!("{s}"));
    assert!(d.contains(" 36 "), "{d}");
    insta::assert_snapshot!("traced_detail_160x50", t.backend());
}

#[test]
fn request_log_newest_first_frozen_and_filtered() {
    let mut m = traced_model();
    let mut v = ViewState {
        focus: Pane::Requests,
        log: LogView {
            shown: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let t = draw(&m, &v, 160, 50);
    let s = text(&t);
    insta::assert_snapshot!("request_log_160x50", mask_hours_minutes(&s));
    // the newest (request 39, far away at sector 39,000,000) first; it
    // completed at 0.89201 s on the trace clock, 0.608 s before the sample
    // taken at wall-clock second 41 of its minute
    assert_eq!(m.wall_ns % 60_000_000_000, 41_000_000_000);
    let rows: Vec<&str> = s.lines().filter(|l| l.contains(" dd ")).collect();
    assert!(
        rows[0].contains(":40.392 dd") && rows[0].contains("39000000"),
        "{}",
        rows[0]
    );
    assert!(rows[0].contains("loop0") && rows[0].contains("4096") && rows[0].contains("4242"));
    // frozen: a new interval with no log does not empty it
    v.log.frozen = Some(m.trace.log.clone());
    m.trace.log.clear();
    let s = text(&draw(&m, &v, 160, 50));
    assert!(s.contains("FROZEN") && s.contains("39000000"), "{s}");
    // filtered by a pid that did nothing, by the device, by the command
    v.log.filter = "99".into();
    assert!(text(&draw(&m, &v, 160, 50)).contains("no request matches the filter"));
    for f in ["loop0", "DD", "4242"] {
        v.log.filter = f.into();
        assert!(text(&draw(&m, &v, 160, 50)).contains("39000000"), "filter {f}");
    }
}

/// The header says what the tracer costs where a budget measures it, and
/// drops it first on a narrow terminal.
#[test]
fn the_header_says_what_the_tracer_costs() {
    use iolens::collect::trace::sampling::Cost;
    let mut m = common::model();
    common::trace_loop0_mixed(&mut m);
    m.trace.cost = Some(Cost {
        cpu_ns: 4_500_000,
        lookup_ns: 0,
        wall_ns: 1_500_000_000,
        budget: Some(0.02),
    });
    let v = ViewState::default();
    let wide = text(&draw(&m, &v, 200, 40));
    assert!(wide.contains("│ tracer cpu 0.3%, budget 2%"), "{wide}");
    let narrow = text(&draw(&m, &v, 60, 40));
    assert!(!narrow.contains("tracer cpu"), "{narrow}");
    m.trace.cost = None;
    assert!(!text(&draw(&m, &v, 200, 40)).contains("tracer cpu"));
}

#[test]
fn tracing_off_marks_the_estimate_and_says_why() {
    let mut m = common::model();
    m.apply_trace(TraceView::off("block tracing needs root"));
    let v = ViewState {
        focus: Pane::Requests,
        log: LogView {
            shown: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let s = text(&draw(&m, &v, 200, 60));
    assert!(
        s.contains("~pattern estimated: no tracing (block tracing needs root)"),
        "{s}"
    );
    let sda = s.lines().find(|l| l.contains("│sda ")).unwrap();
    assert!(sda.contains("~SEQ") && sda.contains("n/a"), "{sda}");
    assert!(
        s.contains("no request log: block tracing is off (block tracing needs root)"),
        "{s}"
    );
    let detail = ViewState {
        popup: Popup::Detail("sda".into()),
        focus: Pane::Devices,
        ..Default::default()
    };
    let s = text(&draw(&m, &detail, 160, 50));
    assert!(
        s.contains("needs block tracing, which is off: block tracing needs root"),
        "{s}"
    );
}
