//! A sampled interval (the tracer's CPU budget bound: share 0.3) is marked
//! where its figures are shown: the devices pane (pattern, p99), the
//! device detail's latency, the request log, the files view and the
//! details' file lists, the batch text; a whole interval (share 1) shows
//! none of it.

use crate::files_trace_pure::{draw_popup, files_model};
use crate::trace_ui_pure::traced_model;

use iolens::model::Model;
use iolens::model::trace::window::Share;
use iolens::ui::{self, LogView, Pane, Popup, ViewState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn draw(model: &Model, view: &ViewState, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::render(f, model, view)).unwrap();
    t.backend().to_string()
}

fn sampled(mut m: Model, share: f64) -> Model {
    m.trace.interval.share = Share(share);
    m
}

#[test]
fn share_tag_rounds_and_never_reads_100() {
    assert_eq!(Share(0.3).tag().as_deref(), Some("sampled 30%"));
    assert_eq!(Share(0.29).tag().as_deref(), Some("sampled 29%"));
    assert_eq!(Share(0.999).tag().as_deref(), Some("sampled 99%"));
    assert_eq!(Share(0.0).tag().as_deref(), Some("sampled 0%"));
    assert_eq!(Share(1.0).tag(), None);
    // off: nothing, whatever the share
    let mut m = sampled(traced_model(), 0.3);
    assert_eq!(m.trace.sampled().as_deref(), Some("sampled 30%"));
    m.trace.active = false;
    assert_eq!(m.trace.sampled(), None);
}

#[test]
fn devices_pane_is_marked_once() {
    let m = sampled(traced_model(), 0.3);
    let v = ViewState::default();
    let s = draw(&m, &v, 200, 60);
    let top = s.lines().find(|l| l.contains(" Devices ")).unwrap();
    assert!(top.contains(" Devices ~trace sampled 30% "), "{top}");
    assert_eq!(s.matches("sampled 30%").count(), 1, "{s}");
    insta::assert_snapshot!("sampled_devices_200x60", s);
    // the smallest layout keeps it while the traced columns are shown
    let small = draw(&m, &v, 80, 24);
    let cols_traced = small.contains(" seq bytes") || small.contains("p99");
    assert_eq!(small.contains("~trace sampled 30%"), cols_traced, "{small}");
    // whole: nothing new
    let whole = draw(&sampled(traced_model(), 1.0), &v, 200, 60);
    assert!(!whole.contains("sampled"), "{whole}");
}

#[test]
fn detail_latency_and_request_log_are_marked() {
    let m = sampled(traced_model(), 0.3);
    let detail = ViewState {
        popup: Popup::Detail("loop0".into()),
        focus: Pane::Devices,
        ..Default::default()
    };
    let s = draw(&m, &detail, 160, 50);
    assert!(
        s.contains("latency per request, last interval (traced, ~sampled 30%; bars count traced requests)"),
        "{s}"
    );
    let log = ViewState {
        focus: Pane::Requests,
        log: LogView {
            shown: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let s = draw(&m, &log, 160, 50);
    assert!(s.contains(" Requests sampled 30%: windows only "), "{s}");
    // frozen: the log is of another interval, no tag
    let mut frozen = log.clone();
    frozen.log.frozen = Some(m.trace.log.clone());
    assert!(!draw(&m, &frozen, 160, 50).contains("Requests sampled"));
    let whole = sampled(traced_model(), 1.0);
    assert!(!draw(&whole, &detail, 160, 50).contains("sampled"));
    assert!(!draw(&whole, &log, 160, 50).contains("sampled"));
}

#[test]
fn files_view_and_detail_lists_are_marked() {
    let m = sampled(files_model(), 0.3);
    let s = draw_popup(&m, Popup::Files(0), 120, 16);
    assert!(s.contains(" Files (3) ~trace sampled 30% ↑↓ select"), "{s}");
    let key = m.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap().raw.key;
    let p = draw_popup(&m, Popup::Process(key), 120, 30);
    assert!(
        p.contains("files (1): disk read/s, dirty folios/s, ~blocked (~trace sampled 30%)"),
        "{p}"
    );
    let whole = files_model();
    assert!(!draw_popup(&whole, Popup::Files(0), 120, 16).contains("trace sampled"));
}

#[test]
fn batch_text_is_marked() {
    let m = sampled(traced_model(), 0.3);
    let text = iolens::batch::text_report(&m, 10);
    assert!(
        text.contains("  trace on, sampled 30%: traced figures ~estimated"),
        "{text}"
    );
    assert!(
        text.contains("\ntraced requests (~sampled 30%: counts scaled): lost events"),
        "{text}"
    );
    let whole = iolens::batch::text_report(&sampled(traced_model(), 1.0), 10);
    assert!(whole.contains("  trace on") && !whole.contains("sampled"), "{whole}");
    let f = iolens::batch::text_report(&sampled(files_model(), 0.3), 10);
    assert!(f.contains("~blocked: sampled) (~trace sampled 30%: scaled)"), "{f}");
}

/// The tracer's own CPU as its budget counts it (4.5 ms over 1.5 s:
/// 0.30 %) beside its budget, where one holds it; nothing without.
#[test]
fn batch_text_says_what_the_tracer_costs() {
    use iolens::collect::trace::sampling::Cost;
    let mut m = sampled(traced_model(), 0.3);
    m.trace.cost = Some(Cost {
        cpu_ns: 4_500_000,
        lookup_ns: 0,
        wall_ns: 1_500_000_000,
        budget: Some(0.002),
    });
    let text = iolens::batch::text_report(&m, 10);
    assert!(
        text.contains("  trace on (cpu 0.3%, budget 0.2%), sampled 30%: traced figures ~estimated"),
        "{text}"
    );
    m.trace.cost = m.trace.cost.map(|c| Cost { budget: None, ..c });
    let fixed = iolens::batch::text_report(&m, 10);
    assert!(fixed.contains("  trace on, sampled 30%"), "{fixed}");
}

/// An interval with no tracer window (share 0): the page-cache figures are
/// n/a (text, JSON null), not 0; the sampled blocked time stays.
#[test]
fn an_interval_without_a_window_shows_files_as_unknown() {
    let mut m = sampled(files_model(), 0.0);
    let s = draw_popup(&m, Popup::Files(0), 120, 16);
    assert!(s.contains("no tracer window in the last interval"), "{s}");
    let rate = iolens::format::rate(64.0 * 1048576.0 / m.interval_s.unwrap_or(1.0));
    assert!(draw_popup(&sampled(files_model(), 1.0), Popup::Files(0), 120, 16).contains(&rate));
    assert!(!s.contains(&rate) && s.contains("n/a"), "{s}");
    let j = iolens::present::files::files_json(&m, 10);
    let rows = j.as_array().cloned().unwrap_or_default();
    assert!(!rows.is_empty());
    assert!(
        rows.iter()
            .all(|r| r["read_bytes"].is_null() && r["dirtied_folios"].is_null()),
        "{j}"
    );
    assert!(
        rows.iter().any(|r| r["blocked_seconds_est"].as_f64() > Some(0.0)),
        "{j}"
    );
    let info = iolens::present::files::files_info_json(&m);
    assert!(info["unplaced_dirtied_folios"].is_null(), "{info}");
    m.trace.interval.share = Share(0.5);
    let j = iolens::present::files::files_json(&m, 10);
    assert!(j[0]["read_bytes"].as_u64().is_some(), "{j}");
}
