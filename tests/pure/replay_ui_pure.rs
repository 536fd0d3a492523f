//! `iolens replay` on the dashboard, without a terminal: the fixture's 41
//! samples are recorded to a temporary file and replayed through the App;
//! the replayed screen is the live one, and the time-travel keys (step,
//! pause/play, speed, jump) and the refusal of live actions are checked.

use crate::common;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use iolens::app::{App, Msg, Replay};
use iolens::model::Model;
use iolens::model::trace::view::TraceView;
use iolens::record::NOT_TRACED;
use iolens::record::file::{Header, Recording, Writer};
use iolens::ui::{self, Pane, Popup, ViewState};
use jiff::tz::TimeZone;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

/// 2026-11-23T16:20:01Z, the fixture's first sample.
const T0: u64 = 1_795_450_801_000_000_000;
const SEC: u64 = 1_000_000_000;

/// The fixture host's recording header, 1 s interval.
fn header() -> Header {
    let h = common::host();
    Header {
        iolens: "test".into(),
        host: h.hostname,
        kernel: h.kernel,
        clk_tck: 100.0,
        boot_id: None,
        is_root: h.is_root,
        interval_s: 1.0,
    }
}

fn recording() -> Recording {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fixture.iolens");
    let mut w = Writer::open(&path, &header(), None).unwrap();
    for s in common::samples(40) {
        w.append(&s, None).unwrap();
    }
    drop(w);
    Recording::open(&path).unwrap()
}

/// The replay dashboard on the fixture recording, at sample `at`.
fn app_at(at: usize) -> App {
    app_on(recording(), at)
}

/// The replay dashboard on `rec`, at sample `at`.
fn app_on(rec: Recording, at: usize) -> App {
    let mut app = App::new(
        iolens::record::replay::model_for(&rec.segments[0]),
        ViewState {
            paused: true,
            ..Default::default()
        },
    );
    app.replay = Some(Box::new(Replay::new(rec, TimeZone::UTC)));
    app.replay_go(at);
    app
}

fn screen(model: &Model, view: &ViewState, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::render(f, model, view)).unwrap();
    t.backend().to_string()
}

fn key(app: &mut App, code: KeyCode) {
    app.update(Msg::Key(KeyEvent::new(code, KeyModifiers::NONE)));
}

fn typed(app: &mut App, text: &str) {
    key(app, KeyCode::Char('b'));
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
    key(app, KeyCode::Enter);
}

fn pos(app: &App) -> usize {
    app.replay.as_ref().unwrap().player.pos()
}

fn status(app: &App) -> String {
    app.view.status.as_ref().map(|s| s.text.clone()).unwrap_or_default()
}

#[test]
fn the_replayed_screen_is_the_live_one() {
    let app = app_at(40);
    let mut live = common::model();
    live.apply_trace(TraceView::off(NOT_TRACED));
    for (w, h) in [(120, 40), (200, 60)] {
        let replayed = screen(&app.model, &app.view, w, h);
        let shown = screen(&live, &ViewState::default(), w, h);
        let r: Vec<&str> = replayed.lines().collect();
        let l: Vec<&str> = shown.lines().collect();
        // Line 1 says replay, the last line has replay's key hints: every
        // pane and number in between is the live screen's.
        assert_eq!(r[1..r.len() - 1], l[1..l.len() - 1], "{replayed}\n{shown}");
        // At 120 columns the kernel and the uptime give way to the top
        // finding (the replay runs the findings engine: the fixture's
        // misaligned partition with I/O on it).
        let want = if w >= 200 {
            "iolens replay 2026-11-23 16:20:41 (41/41) ×1 PAUSED of fixture-host · kernel 6.8.0-fixture · up"
        } else {
            "iolens replay 2026-11-23 16:20:41 (41/41) ×1 PAUSED of fixture-host · every 1.00s · root · WARNING misaligned sda2"
        };
        assert!(r[0].contains(want), "{}", r[0]);
    }
    insta::assert_snapshot!("replay_120x40", screen(&app.model, &app.view, 120, 40));
}

#[test]
fn step_back_and_forward_keep_the_numbers_of_a_straight_replay() {
    let mut app = app_at(30);
    for _ in 0..10 {
        key(&mut app, KeyCode::Char(']'));
    }
    assert_eq!(pos(&app), 40);
    assert_eq!(app.model.wall_ns, T0 + 40 * SEC);
    for _ in 0..5 {
        key(&mut app, KeyCode::Char('['));
    }
    assert_eq!(pos(&app), 35);
    // Stepped back through kept models = a replay straight to sample 35.
    let straight = app_at(35);
    assert_eq!(
        screen(&app.model, &app.view, 200, 60),
        screen(&straight.model, &straight.view, 200, 60)
    );
    assert_eq!(app.view.replay.as_ref().unwrap().pos, 36);
    // At the ends: a message, no move.
    let mut first = app_at(0);
    key(&mut first, KeyCode::Char('['));
    assert_eq!(pos(&first), 0);
    assert_eq!(status(&first), "no more samples this way");
    let mut last = app_at(40);
    key(&mut last, KeyCode::Char(']'));
    assert_eq!(pos(&last), 40);
}

#[test]
fn pause_play_and_speed() {
    let mut app = app_at(1);
    assert!(app.view.paused);
    key(&mut app, KeyCode::Char('p'));
    assert!(!app.view.paused);
    app.update(Msg::PlayTick);
    app.update(Msg::PlayTick);
    assert_eq!(pos(&app), 3);
    key(&mut app, KeyCode::Char('+'));
    key(&mut app, KeyCode::Char('+'));
    let v = app.view.replay.clone().unwrap();
    assert_eq!(v.speed, 4.0);
    let r = app.replay.as_ref().unwrap();
    assert_eq!(r.player.wait(), Some(std::time::Duration::from_millis(250)));
    key(&mut app, KeyCode::Char('-'));
    assert_eq!(app.view.replay.as_ref().unwrap().speed, 2.0);
    // A step pauses.
    key(&mut app, KeyCode::Char(']'));
    assert!(app.view.paused);
    // Playing to the end pauses there and says so.
    app.replay_go(39);
    key(&mut app, KeyCode::Char('p'));
    app.update(Msg::PlayTick);
    assert_eq!(pos(&app), 40);
    app.update(Msg::PlayTick);
    assert!(app.view.paused);
    assert!(status(&app).starts_with("end of the recording"), "{}", status(&app));
}

#[test]
fn jump_takes_the_forms_of_from() {
    let mut app = app_at(1);
    typed(&mut app, "16:20:10");
    assert_eq!(pos(&app), 9);
    typed(&mut app, "-5s");
    assert_eq!(pos(&app), 4);
    typed(&mut app, "+20s");
    assert_eq!(pos(&app), 24);
    typed(&mut app, "2026-11-23T17:20:30+01:00");
    assert_eq!(pos(&app), 29);
    assert_eq!(app.model.wall_ns, T0 + 29 * SEC);
    assert_eq!(app.view.replay.as_ref().unwrap().time, "2026-11-23 16:20:30");
    // Between samples: the first one after.
    typed(&mut app, "2026-11-23T16:20:12.5Z");
    assert_eq!(pos(&app), 12);
    // Outside the recording: the nearest end, said.
    typed(&mut app, "+1h");
    assert_eq!(pos(&app), 40);
    assert!(status(&app).contains("is outside the recording"), "{}", status(&app));
    // Bad text: an error, no move; Esc closes the prompt.
    typed(&mut app, "yesterday");
    assert_eq!(pos(&app), 40);
    assert!(status(&app).contains("expected HH:MM[:SS]"), "{}", status(&app));
    key(&mut app, KeyCode::Char('b'));
    key(&mut app, KeyCode::Char('1'));
    assert_eq!(app.view.replay.as_ref().unwrap().prompt.as_deref(), Some("1"));
    let s = screen(&app.model, &app.view, 120, 40);
    assert!(s.contains("jump to: 1█"), "{s}");
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.view.replay.as_ref().unwrap().prompt, None);
    assert_eq!(pos(&app), 40);
}

#[test]
fn live_actions_are_off_in_replay() {
    let mut app = app_at(40);
    app.view.focus = Pane::Devices;
    key(&mut app, KeyCode::Char('t'));
    assert_eq!(app.view.popup, Popup::None);
    assert!(
        status(&app)
            .starts_with("probe the selected device (read-only): menu: off in replay (a recording of fixture-host"),
        "{}",
        status(&app)
    );
    app.view.focus = Pane::Processes;
    for k in ['k', 'i', 'D'] {
        app.view.status = None;
        let cmd = app.update(Msg::Key(KeyEvent::new(KeyCode::Char(k), KeyModifiers::NONE)));
        assert_eq!(cmd, None);
        assert_eq!(app.view.popup, Popup::None, "{k}");
        assert!(status(&app).contains("off in replay"), "{k}: {}", status(&app));
    }
    // The help shows the replay keys, not the live interval keys.
    key(&mut app, KeyCode::Char('?'));
    let s = screen(&app.model, &app.view, 200, 60);
    assert!(s.contains("replay: step back / forward one recorded sample"), "{s}");
    assert!(!s.contains("longer / shorter sample interval"), "{s}");
}

#[test]
fn the_process_detail_in_replay_sends_nothing_and_reads_nothing_live() {
    let mut app = app_at(40);
    app.view.focus = Pane::Processes;
    key(&mut app, KeyCode::Enter);
    let Popup::Process(k) = app.view.popup.clone() else {
        panic!("Enter opens the process detail: {:?}", app.view.popup)
    };
    // Signals and ionice from the detail: refused, the detail stays open.
    for c in ['t', 'K', 's', 'c', 'i'] {
        app.view.status = None;
        let cmd = app.update(Msg::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)));
        assert_eq!(cmd, None, "{c}");
        assert_eq!(app.view.popup, Popup::Process(k), "{c}");
        assert!(status(&app).contains("off in replay"), "{c}: {}", status(&app));
    }
    // Open files, cwd and cgroup come from the live /proc: not shown.
    assert_eq!(app.view.proc_info, None);
    let s = screen(&app.model, &app.view, 120, 40);
    assert!(s.contains("open files, cwd, cgroup: not recorded"), "{s}");
    assert!(s.contains("replay: signals and ionice are off"), "{s}");
    assert!(!s.contains("t SIGTERM"), "{s}");
}

/// A recording carries the findings the recorder saw after each sample
/// (frame kind 4): replay shows those. A recording made before findings
/// (no such frames, as [`recording`] writes) still replays, with the
/// findings engine run on its samples.
#[test]
fn a_recording_carries_its_findings_and_an_old_one_replays_with_the_engines() {
    use iolens::model::findings::{Finding, Severity, Subject};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("findings.iolens");
    let recorded = Finding::example(
        "slow_device",
        Severity::Critical,
        Subject::Device { name: "loop0".into() },
    );
    let mut w = Writer::open(&path, &header(), None).unwrap();
    for (i, s) in common::samples(40).into_iter().enumerate() {
        w.append(&s, None).unwrap();
        let found = if i >= 20 { vec![recorded.clone()] } else { Vec::new() };
        w.append_findings(s.wall_ns, &found).unwrap();
    }
    drop(w);
    let rec = Recording::open(&path).unwrap();
    assert_eq!(rec.unknown_frames, 0);
    assert_eq!(rec.segments[0].findings.len(), 41);
    let mut app = app_on(rec, 40);
    assert_eq!(app.model.findings.findings(), std::slice::from_ref(&recorded));
    let s = screen(&app.model, &app.view, 120, 40);
    assert!(s.lines().next().unwrap().contains("CRITICAL slow_device loop0"), "{s}");
    // Before sample 20 the recorder saw none: none, not the engine's.
    app.replay_go(10);
    assert_eq!(app.model.findings.findings(), []);
    // The old recording: the engine's findings (the fixture's misaligned
    // partition with I/O on it).
    let old = app_at(40);
    let rules: Vec<&str> = old.model.findings.findings().iter().map(|f| f.rule).collect();
    assert_eq!(rules, ["misaligned"], "{:?}", old.model.findings.findings());
}

/// The dirty throttle's figures ride in the recording (a frame after each
/// traced sample): a replay shows dd paused 25% as live and hands the
/// findings engine the same traced view (the dirty_throttled rule then
/// judges the traced pauses, not the untraced vmstat check); a recording
/// with trace frames but none of these says the figures are not recorded
/// and shows n/a.
#[test]
fn a_recording_carries_the_dirty_throttle() {
    use iolens::model::trace::TraceInterval;
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, dirty: bool| {
        let path = dir.path().join(name);
        let mut w = Writer::open(&path, &header(), None).unwrap();
        for s in common::samples(40) {
            w.append(&s, Some(&TraceInterval::default())).unwrap();
            if dirty {
                let t = TraceView {
                    active: true,
                    dirty: common::dirty_view(4242, 3, 250, 120),
                    ..Default::default()
                };
                w.append_dirty(s.wall_ns, &t).unwrap();
            }
        }
        drop(w);
        Recording::open(&path).unwrap()
    };
    let rec = write("dirty.iolens", true);
    assert_eq!(rec.unknown_frames, 0);
    assert_eq!(rec.segments[0].dirty.len(), 41);
    let app = app_on(rec, 40);
    assert_eq!(app.model.trace.dirty, common::dirty_view(4242, 3, 250, 120));
    let dd = app.model.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap();
    let r = dd.rates.as_deref().unwrap();
    assert_eq!(
        (
            r.dirty_paused_pct,
            r.dirty_paused_ms,
            r.dirty_pauses,
            r.dirty_max_pause_ms
        ),
        (Some(25.0), Some(250), Some(3), Some(120))
    );
    let s = screen(&app.model, &app.view, 200, 60);
    let head = s.lines().find(|l| l.contains("PID USER")).unwrap();
    let at = head[..head.find("PAUSE%").unwrap()].chars().count() + "PAUSE%".len();
    let row = s.lines().find(|l| l.contains("dd if=/dev/sda")).unwrap();
    let cell: String = row.chars().take(at).collect();
    assert_eq!(cell.split_whitespace().last(), Some("25"), "{head}\n{row}");
    // Without the frames: not recorded, n/a.
    let old = app_on(write("old.iolens", false), 40);
    assert!(!old.model.trace.dirty.active);
    assert_eq!(
        old.model.trace.dirty.reason.as_deref(),
        Some(iolens::record::dirty::NOT_RECORDED)
    );
    let dd = old.model.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap();
    assert_eq!(dd.rates.as_deref().unwrap().dirty_paused_pct, None);
}
