//! The controller's tests: keys in, state and commands out, no terminal.

use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::probe_ctl::ProbeSink;
use super::*;
use crate::model::Model;
use crate::probe::{self, ProbeConfig, ProbeMsg, Status};
use crate::ui::{Pane, Popup, ProbeMenu, ProcCol, ViewState};

fn key(c: KeyCode) -> KeyEvent {
    KeyEvent::new(c, KeyModifiers::NONE)
}

fn app() -> App {
    App::new(Model::default(), ViewState::default())
}

#[test]
fn quit_keys() {
    let mut a = app();
    assert_eq!(a.on_key(key(KeyCode::Char('q'))), Some(Command::Quit));
    assert_eq!(
        a.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
        Some(Command::Quit)
    );
}

#[test]
fn interval_steps_and_pause() {
    let mut a = app();
    assert_eq!(
        a.on_key(key(KeyCode::Char('+'))),
        Some(Command::SetInterval(Duration::from_secs(2)))
    );
    a.on_key(key(KeyCode::Char('-')));
    assert_eq!(
        a.on_key(key(KeyCode::Char('-'))),
        Some(Command::SetInterval(Duration::from_millis(500)))
    );
    for _ in 0..10 {
        a.on_key(key(KeyCode::Char('-')));
    }
    assert_eq!(a.view.interval, Duration::from_millis(100));
    assert_eq!(a.on_key(key(KeyCode::Char('-'))), None);
    assert_eq!(a.on_key(key(KeyCode::Char('p'))), Some(Command::Pause(true)));
    assert!(a.view.paused);
    assert_eq!(a.on_key(key(KeyCode::Char('p'))), Some(Command::Pause(false)));
}

#[test]
fn toggles_focus_sort_and_filter() {
    let mut a = app();
    assert_eq!(a.view.focus, Pane::Processes);
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.view.focus, Pane::Devices);
    a.on_key(key(KeyCode::BackTab));
    assert_eq!(a.view.focus, Pane::Processes);
    assert_eq!(a.view.sort, ProcCol::DiskRead);
    a.on_key(key(KeyCode::Char('s')));
    assert_eq!(a.view.sort, ProcCol::DiskWrite);
    a.on_key(key(KeyCode::Char('<')));
    a.on_key(key(KeyCode::Char('<')));
    assert_eq!(a.view.sort, ProcCol::Prio);
    a.on_key(key(KeyCode::Char('r')));
    assert!(a.view.reverse);
    a.on_key(key(KeyCode::Char('/')));
    assert!(a.view.editing_filter);
    for c in "dd q".chars() {
        a.on_key(key(KeyCode::Char(c)));
    }
    // 'q' while typing a filter is text, not quit.
    assert_eq!(a.view.filter, "dd q");
    a.on_key(key(KeyCode::Backspace));
    a.on_key(key(KeyCode::Enter));
    assert!(!a.view.editing_filter);
    assert_eq!(a.view.filter, "dd ");
    a.on_key(key(KeyCode::Esc));
    assert_eq!(a.view.filter, "");
    for (c, check) in [
        ('o', (|v: &ViewState| v.only_active) as fn(&ViewState) -> bool),
        ('c', |v| v.accumulated),
        ('a', |v| v.hide_idle),
    ] {
        a.on_key(key(KeyCode::Char(c)));
        assert!(check(&a.view), "{c}");
    }
    a.on_key(key(KeyCode::Char('?')));
    assert_eq!(a.view.popup, Popup::Help);
    a.on_key(key(KeyCode::Esc));
    assert_eq!(a.view.popup, Popup::None);
}

#[test]
fn actions_need_a_selected_process_and_a_confirmation() {
    use crate::collect::process::RawProc;
    let mut a = app();
    a.on_key(key(KeyCode::Char('k')));
    assert!(a.view.status.as_ref().is_some_and(|s| s.error));
    let raw = RawProc::example(42, 7, "evil\x1b[2J");
    a.model.procs.push(crate::model::ProcRow::example(raw));
    a.fix_selection();
    let k = ProcKey { pid: 42, start_time: 7 };
    assert_eq!(a.view.proc_sel, Some(k));
    a.on_key(key(KeyCode::Char('k')));
    let Popup::Confirm(c) = &a.view.popup else {
        panic!("no confirmation")
    };
    // Kept raw in the state; the popup escapes it when drawn (see the
    // confirm_kill snapshot).
    assert_eq!(c.comm, "evil\x1b[2J");
    // Unrelated keys leave the question open; y answers it.
    assert_eq!(a.on_key(key(KeyCode::Char('x'))), None);
    assert_eq!(a.on_key(key(KeyCode::Char('y'))), Some(Command::Kill(k)));
    assert_eq!(a.view.popup, Popup::None);
    a.on_key(key(KeyCode::Char('i')));
    assert_eq!(
        a.on_key(key(KeyCode::Char('3'))),
        Some(Command::Ionice(k, IoPrioChoice::BestEffort(3)))
    );
    a.on_key(key(KeyCode::Char('i')));
    assert_eq!(
        a.on_key(key(KeyCode::Char('i'))),
        Some(Command::Ionice(k, IoPrioChoice::Idle))
    );
    a.on_key(key(KeyCode::Char('k')));
    assert_eq!(a.on_key(key(KeyCode::Esc)), None);
    assert_eq!(a.view.status.as_ref().map(|s| s.text.as_str()), Some("cancelled"));
    // In the devices pane k moves up instead.
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.on_key(key(KeyCode::Char('k'))), None);
    assert_eq!(a.view.popup, Popup::None);
}

fn app_with_device(name: &str) -> App {
    let mut m = Model::default();
    m.devices.push(crate::model::DeviceRow {
        name: name.into(),
        major: 0,
        minor: 0,
        info: None,
        rates: None,
        rebaseline: None,
        history: Default::default(),
    });
    App::new(m, ViewState::default())
}

fn status(a: &App) -> (String, bool) {
    a.view
        .status
        .as_ref()
        .map(|s| (s.text.clone(), s.error))
        .unwrap_or_default()
}

fn menu(a: &App) -> ProbeMenu {
    match &a.view.popup {
        Popup::ProbeMenu(m) => m.clone(),
        p => panic!("no probe menu: {p:?}"),
    }
}

#[test]
fn probe_menu_opens_chooses_and_cancels() {
    let mut a = app_with_device("loop0");
    // Only from the devices pane.
    a.on_key(key(KeyCode::Char('t')));
    assert_eq!(a.view.popup, Popup::None);
    assert!(
        status(&a).1 && status(&a).0.contains("devices pane"),
        "{:?}",
        status(&a)
    );
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.view.focus, Pane::Devices);
    a.on_key(key(KeyCode::Char('t')));
    assert_eq!(menu(&a), ProbeMenu::new("loop0".into()));
    for c in ['z', 'd', 'i'] {
        a.on_key(key(KeyCode::Char(c)));
    }
    let m = menu(&a);
    assert_eq!(
        (m.tests, m.depth, m.idle),
        (probe::Tests::Sweep, probe::Depth::Thorough, true)
    );
    // Not root: no dropping of the page cache.
    a.on_key(key(KeyCode::Char('c')));
    assert!(!menu(&a).drop_cache && !menu(&a).confirm_drop);
    assert_eq!(status(&a), ("dropping the page cache needs root".into(), true));
    // Modal: Tab and s do nothing underneath.
    a.on_key(key(KeyCode::Tab));
    a.on_key(key(KeyCode::Char('s')));
    assert_eq!((a.view.focus, a.view.sort), (Pane::Devices, ProcCol::DiskRead));
    assert_eq!(a.on_key(key(KeyCode::Esc)), None);
    assert_eq!(a.view.popup, Popup::None);
    assert!(!a.view.probe.is_running() && a.probe_token.is_none());
    assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Processes]);
}

#[test]
fn probes_are_refused_on_a_captured_tree() {
    let mut a = app_with_device("loop0");
    a.captured_tree = true;
    a.on_key(key(KeyCode::Tab));
    a.on_key(key(KeyCode::Char('t')));
    assert_eq!(a.view.popup, Popup::None);
    assert!(status(&a).0.contains("--root"), "{:?}", status(&a));
}

#[test]
fn probe_starts_refuses_a_second_and_esc_cancels_it() {
    let mut a = app_with_device("loop0");
    a.model.host.is_root = true;
    a.on_key(key(KeyCode::Tab));
    a.on_key(key(KeyCode::Char('t')));
    // Dropping the page cache asks first; n keeps it off, y turns it on.
    a.on_key(key(KeyCode::Char('c')));
    assert!(menu(&a).confirm_drop);
    a.on_key(key(KeyCode::Char('n')));
    assert!(!menu(&a).confirm_drop && !menu(&a).drop_cache);
    a.on_key(key(KeyCode::Char('c')));
    a.on_key(key(KeyCode::Char('y')));
    assert!(menu(&a).drop_cache);
    a.on_key(key(KeyCode::Char('p')));
    assert_eq!(menu(&a).tests, probe::Tests::QueueDepth);
    for (c, want) in [
        ('a', probe::Tests::Align),
        ('x', probe::Tests::Size),
        ('m', probe::Tests::Seek),
    ] {
        a.on_key(key(KeyCode::Char(c)));
        assert_eq!(menu(&a).tests, want);
    }
    // Not mounted: no sync-write probe.
    a.on_key(key(KeyCode::Char('w')));
    assert_eq!(menu(&a).tests, probe::Tests::Seek);
    assert!(status(&a).0.contains("mounted"), "{:?}", status(&a));
    a.on_key(key(KeyCode::Char('b')));
    let Some(Command::StartProbe(cfg)) = a.on_key(key(KeyCode::Enter)) else {
        panic!("no probe started")
    };
    let mut want = ProbeConfig::new("/dev/loop0", probe::Tests::Both, probe::Depth::Quick);
    want.drop_caches = true;
    assert_eq!(*cfg, want);
    assert_eq!(a.view.popup, Popup::None);
    assert!(a.view.probe.is_running());
    assert_eq!(a.view.focus, Pane::Results);
    assert_eq!(
        status(&a).0,
        "probe started on /dev/loop0 (random read + zone sweep, quick), dropping the page cache first"
    );
    assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Results, Pane::Processes]);
    let token = a.probe_token.clone().expect("a token");
    // A second probe is refused.
    a.on_key(key(KeyCode::BackTab));
    assert_eq!(a.view.focus, Pane::Devices);
    a.on_key(key(KeyCode::Char('t')));
    assert_eq!(a.view.popup, Popup::None);
    assert!(
        status(&a).1 && status(&a).0.contains("already running on /dev/loop0"),
        "{:?}",
        status(&a)
    );
    // Esc cancels at once, without waiting for the probe thread.
    a.view.filter = "keep".into();
    a.on_key(key(KeyCode::Esc));
    assert!(token.is_cancelled());
    assert!(matches!(a.view.probe.state, probe::view::RunState::Cancelled(None)));
    assert_eq!(a.view.filter, "keep");
    assert_eq!(status(&a).0, "probe on /dev/loop0 cancelled");
    // Until its thread reports its end, no new probe.
    a.on_key(key(KeyCode::Char('t')));
    assert!(status(&a).0.contains("still stopping"), "{:?}", status(&a));
    let r = probe::example::result(Status::Cancelled);
    a.on_probe(ProbeMsg::Finished(Box::new(r)), |_| {
        Ok(PathBuf::from("/state/probes.jsonl"))
    });
    assert!(a.probe_token.is_none());
    assert_eq!(
        status(&a),
        (
            "probe on /dev/loop0 cancelled (partial results); saved to /state/probes.jsonl".into(),
            false
        )
    );
    assert!(matches!(a.view.probe.state, probe::view::RunState::Cancelled(Some(_))));
    assert_eq!(a.view.probe.past.len(), 1);
    // Then a new one may start; its result is kept next to the first.
    a.on_key(key(KeyCode::Char('t')));
    assert!(matches!(a.on_key(key(KeyCode::Enter)), Some(Command::StartProbe(_))));
    let mut r = probe::example::result(Status::Completed);
    r.method.global_cache_dropped = true;
    a.on_probe(ProbeMsg::Finished(Box::new(r)), |_| Err(anyhow::anyhow!("disk full")));
    let (text, err) = status(&a);
    assert!(err, "{text}");
    assert!(
        text.starts_with("probe finished on /dev/loop0: ")
            && text.ends_with("; page cache dropped; not saved: disk full"),
        "{text}"
    );
    assert_eq!(a.view.probe.past.len(), 2);
    // Esc with nothing running clears the filter again.
    a.on_key(key(KeyCode::Esc));
    assert_eq!(a.view.filter, "");
}

#[test]
fn probe_failure_is_reported() {
    let mut a = app_with_device("loop0");
    a.on_key(key(KeyCode::Tab));
    a.on_key(key(KeyCode::Char('t')));
    a.on_key(key(KeyCode::Enter));
    a.on_probe(
        ProbeMsg::Failed("opening /dev/loop0: EACCES".into()),
        |_| unreachable!(),
    );
    assert_eq!(status(&a), ("probe failed: opening /dev/loop0: EACCES".into(), true));
    assert!(a.probe_token.is_none() && !a.view.probe.is_running());
}

#[test]
fn help_and_detail_are_modal() {
    let mut a = app_with_device("sda");
    a.on_key(key(KeyCode::Char('?')));
    for c in [KeyCode::Tab, KeyCode::Char('s'), KeyCode::Char('p'), KeyCode::Char('t')] {
        assert_eq!(a.on_key(key(c)), None);
    }
    assert_eq!(
        (a.view.focus, a.view.sort, a.view.paused),
        (Pane::Processes, ProcCol::DiskRead, false)
    );
    assert_eq!(a.view.popup, Popup::Help);
    // q closes the help instead of quitting.
    assert_eq!(a.on_key(key(KeyCode::Char('q'))), None);
    assert_eq!(a.view.popup, Popup::None);
    a.on_key(key(KeyCode::Tab));
    a.on_key(key(KeyCode::Enter));
    assert_eq!(a.view.popup, Popup::Detail("sda".into()));
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.view.focus, Pane::Devices);
    a.on_key(key(KeyCode::Char('?')));
    assert_eq!(a.view.popup, Popup::None);
}

#[test]
fn enter_on_a_transfer_selects_its_process_clearing_filters() {
    use crate::collect::process::RawProc;
    use crate::model::progress::{Label, example_job};
    let mut a = app();
    for (pid, comm) in [(10, "bash"), (4242, "pv")] {
        a.model
            .procs
            .push(crate::model::ProcRow::example(RawProc::example(pid, 1, comm)));
    }
    a.model.progress.jobs = vec![
        example_job(4242, "pv", b"/tmp/f", 50, 100, 10.0, Label::Progress),
        example_job(999, "gone", b"/tmp/g", 5, 100, 10.0, Label::Progress),
    ];
    a.view.filter = "bash".into();
    a.view.only_active = true;
    a.fix_selection();
    assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Progress, Pane::Processes]);
    a.on_key(key(KeyCode::Tab));
    a.on_key(key(KeyCode::Tab));
    assert_eq!(a.view.focus, Pane::Progress);
    let pv = ProcKey {
        pid: 4242,
        start_time: 1,
    };
    assert_eq!(a.view.xfer_sel, Some(pv));
    a.on_key(key(KeyCode::Enter));
    assert_eq!(a.view.focus, Pane::Processes);
    assert_eq!(a.view.proc_sel, Some(pv));
    assert_eq!((a.view.filter.as_str(), a.view.only_active), ("", false));
    assert_eq!(
        status(&a).0,
        "PID 4242 (pv): i ionice, k SIGTERM (filter cleared, showing idle processes)"
    );
    // From there it can be ioniced.
    a.on_key(key(KeyCode::Char('i')));
    assert!(matches!(&a.view.popup, Popup::Confirm(c) if c.key == pv));
    a.on_key(key(KeyCode::Esc));
    // A transfer whose process is not listed says so.
    a.view.focus = Pane::Progress;
    a.on_key(key(KeyCode::Down));
    a.on_key(key(KeyCode::Enter));
    assert_eq!(a.view.focus, Pane::Progress);
    assert_eq!(
        status(&a),
        ("PID 999 is not in the process list (it ended)".into(), true)
    );
    // The pane goes away with its transfers, and the focus with it.
    a.model.progress.jobs.clear();
    a.fix_selection();
    assert_eq!(a.view.focus, Pane::Processes);
}

#[test]
fn a_probe_thread_that_dies_is_reported() {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let sink = ProbeSink {
        tx,
        ended: std::sync::atomic::AtomicBool::new(false),
    };
    let h = std::thread::spawn(move || {
        let _s = sink;
        panic!("probe thread panics");
    });
    assert!(h.join().is_err());
    assert!(matches!(rx.try_recv(), Ok(ProbeMsg::Failed(e)) if e.contains("without a result")));
    // A sink that delivered its end says nothing more.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let sink = ProbeSink {
        tx,
        ended: std::sync::atomic::AtomicBool::new(false),
    };
    sink.send(ProbeMsg::Failed("x".into()));
    drop(sink);
    assert!(matches!(rx.try_recv(), Ok(ProbeMsg::Failed(e)) if e == "x"));
    assert!(rx.try_recv().is_err());
}

/// Press a sequence of keys through [`App::update`], as the run loop does:
/// words separated by spaces, each a key name ("Tab", "BackTab", "Enter",
/// "Esc", "Up", "Down", "PgUp", "PgDn", "Home", "End", "Left", "Right",
/// "Space", "Bksp", "F9") or one character. Returns the commands.
fn press(a: &mut App, keys: &str) -> Vec<Command> {
    keys.split(' ')
        .filter(|w| !w.is_empty())
        .filter_map(|w| {
            let code = match w {
                "Tab" => KeyCode::Tab,
                "BackTab" => KeyCode::BackTab,
                "Enter" => KeyCode::Enter,
                "Esc" => KeyCode::Esc,
                "Up" => KeyCode::Up,
                "Down" => KeyCode::Down,
                "PgUp" => KeyCode::PageUp,
                "PgDn" => KeyCode::PageDown,
                "Home" => KeyCode::Home,
                "End" => KeyCode::End,
                "Left" => KeyCode::Left,
                "Right" => KeyCode::Right,
                "Space" => KeyCode::Char(' '),
                "Bksp" => KeyCode::Backspace,
                "F9" => KeyCode::F(9),
                c if c.chars().count() == 1 => KeyCode::Char(c.chars().next().unwrap_or(' ')),
                other => panic!("unknown key {other}"),
            };
            a.update(Msg::Key(key(code)))
        })
        .collect()
}

/// Three processes (pids 10 bash, 20 tar, 30 gzip) and a transfer of tar's.
fn app_with_processes() -> App {
    use crate::collect::process::RawProc;
    use crate::model::progress::{Label, example_job};
    let mut a = app_with_device("sda");
    for (pid, comm) in [(10, "bash"), (20, "tar"), (30, "gzip")] {
        a.model
            .procs
            .push(crate::model::ProcRow::example(RawProc::example(pid, 1, comm)));
    }
    a.model.progress.jobs = vec![example_job(20, "tar", b"/srv/db.dump", 50, 100, 10.0, Label::Progress)];
    a.fix_selection();
    a
}

fn pid(k: u32) -> ProcKey {
    ProcKey {
        pid: k as i32,
        start_time: 1,
    }
}

#[test]
fn key_sequences_focus_select_and_confirm() {
    let mut a = app_with_processes();
    assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Progress, Pane::Processes]);
    // Sorted by disk reads (none), ties by PID: 10, 20, 30.
    assert_eq!(a.view.proc_sel, Some(pid(10)));
    assert!(press(&mut a, "End").is_empty());
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    press(&mut a, "Up");
    assert_eq!(a.view.proc_sel, Some(pid(20)));
    press(&mut a, "Home PgDn");
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    // k asks first; n cancels; k y sends SIGTERM to the selection.
    assert!(press(&mut a, "k").is_empty());
    assert!(matches!(&a.view.popup, Popup::Confirm(c) if c.key == pid(30) && c.comm == "gzip"));
    assert!(press(&mut a, "n").is_empty());
    assert_eq!(status(&a), ("cancelled".into(), false));
    assert_eq!(press(&mut a, "k y"), [Command::Kill(pid(30))]);
    assert_eq!(
        press(&mut a, "i 5"),
        [Command::Ionice(pid(30), IoPrioChoice::BestEffort(5))]
    );
    // Focus: Tab cycles devices, transfers, processes.
    press(&mut a, "Tab");
    assert_eq!(a.view.focus, Pane::Devices);
    // k does nothing to a device: it says where it works, and opens nothing.
    assert!(press(&mut a, "k").is_empty());
    assert_eq!(a.view.popup, Popup::None);
    let (text, err) = status(&a);
    assert!(
        err && text.starts_with("k (send SIGTERM") && text.contains("transfers, processes panes"),
        "{text}"
    );
    // Enter on the devices pane: the detail; Esc closes it.
    press(&mut a, "Enter");
    assert_eq!(a.view.popup, Popup::Detail("sda".into()));
    press(&mut a, "Esc Tab");
    assert_eq!(a.view.focus, Pane::Progress);
    // In the transfers pane k and i act on the transfer's process.
    assert_eq!(press(&mut a, "k y"), [Command::Kill(pid(20))]);
    assert_eq!(press(&mut a, "i i"), [Command::Ionice(pid(20), IoPrioChoice::Idle)]);
    // t only on the devices pane.
    press(&mut a, "t");
    assert!(status(&a).0.contains("devices pane"), "{:?}", status(&a));
    press(&mut a, "BackTab BackTab");
    assert_eq!(a.view.focus, Pane::Processes);
}

#[test]
fn key_sequences_sort_and_filter() {
    let mut a = app_with_processes();
    // Sort by PID descending (natural order of PID is ascending; r reverses).
    let pids = |a: &App| -> Vec<i32> { a.rows.proc_rows(&a.model).iter().map(|p| p.raw.key.pid).collect() };
    press(&mut a, "< < < r");
    assert_eq!(a.view.sort, ProcCol::Pid);
    assert_eq!(pids(&a), [30, 20, 10]);
    // The filter narrows the rows as it is typed; the selection follows.
    press(&mut a, "/ t a");
    assert!(a.view.editing_filter);
    assert_eq!(pids(&a), [20]);
    assert_eq!(a.view.proc_sel, Some(pid(20)));
    press(&mut a, "Bksp Bksp g Enter");
    assert_eq!((a.view.filter.as_str(), a.view.editing_filter), ("g", false));
    assert_eq!(pids(&a), [30]);
    // q while typing is text; Esc clears the filter.
    press(&mut a, "/ q");
    assert_eq!(a.view.filter, "gq");
    assert!(pids(&a).is_empty());
    assert_eq!(a.view.proc_sel, None);
    press(&mut a, "Esc");
    assert_eq!(a.view.filter, "");
    assert_eq!(pids(&a), [30, 20, 10]);
    assert_eq!(press(&mut a, "q"), [Command::Quit]);
}

#[test]
fn vim_keys_move_and_never_clash_with_sigterm() {
    let mut a = app_with_processes();
    press(&mut a, "j");
    assert_eq!(a.view.proc_sel, Some(pid(10)), "j is nothing without vim_keys");
    a.view.vim_keys = true;
    press(&mut a, "j j");
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    assert!(press(&mut a, "k").is_empty());
    assert_eq!((a.view.proc_sel, &a.view.popup), (Some(pid(20)), &Popup::None));
    press(&mut a, "g");
    assert_eq!(a.view.proc_sel, Some(pid(10)));
    press(&mut a, "G");
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    assert_eq!(press(&mut a, "K y"), [Command::Kill(pid(30))]);
    assert_eq!(press(&mut a, "F9 y"), [Command::Kill(pid(30))]);
}

#[test]
fn signals_and_a_lost_terminal_end_the_loop_with_their_status() {
    let mut a = app();
    assert_eq!(a.update(Msg::Terminate("SIGTERM")), Some(Command::Exit(143)));
    assert_eq!(a.update(Msg::Terminate("SIGINT")), Some(Command::Exit(130)));
    assert_eq!(a.update(Msg::Terminate("SIGQUIT")), Some(Command::Exit(131)));
    assert_eq!(a.update(Msg::TermGone("SIGHUP".into())), Some(Command::Exit(129)));
    assert_eq!(a.update(Msg::Resize), None);
}

/// Set the disk read rate of each process (by pid) and re-sort, as a new
/// sample would.
fn set_reads(a: &mut App, reads: &[(i32, f64)]) {
    for p in &mut a.model.procs {
        let r = reads.iter().find(|(pid, _)| *pid == p.raw.key.pid).map_or(0.0, |x| x.1);
        p.rates = Some(
            crate::model::process::ProcRates {
                read_bps: r,
                ..Default::default()
            }
            .into(),
        );
    }
    a.fix_selection();
}

fn pids(a: &App) -> Vec<i32> {
    a.rows.proc_rows(&a.model).iter().map(|p| p.raw.key.pid).collect()
}

#[test]
fn the_cursor_keeps_its_row_while_rows_resort() {
    let mut a = app_with_processes();
    // The first screen: the cursor on the top row, whatever sorts there.
    set_reads(&mut a, &[(30, 5e6)]);
    assert_eq!(pids(&a), [30, 10, 20]);
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    set_reads(&mut a, &[(20, 9e6), (10, 1e6)]);
    assert_eq!(pids(&a), [20, 10, 30]);
    assert_eq!(a.view.proc_sel, Some(pid(20)), "row 0 stays row 0");
    // r reverses; the cursor stays on the top row.
    press(&mut a, "r");
    assert_eq!(pids(&a), [30, 10, 20]);
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    press(&mut a, "r End Up");
    assert_eq!(a.view.proc_sel, Some(pid(10)));
    set_reads(&mut a, &[(30, 9e6)]);
    assert_eq!((pids(&a), a.view.proc_sel), (vec![30, 10, 20], Some(pid(10))));
}

#[test]
fn follow_mode_moves_with_the_process_until_it_is_gone() {
    let mut a = app_with_processes();
    set_reads(&mut a, &[(30, 5e6)]);
    press(&mut a, "Down F");
    assert!(a.view.follow);
    assert_eq!(a.view.proc_sel, Some(pid(10)));
    set_reads(&mut a, &[(20, 9e6), (30, 5e6)]);
    assert_eq!(pids(&a), [20, 30, 10]);
    assert_eq!(a.view.proc_sel, Some(pid(10)), "followed to the bottom");
    // F again: the cursor keeps its row from then on.
    press(&mut a, "F");
    assert!(!a.view.follow);
    set_reads(&mut a, &[(10, 9e6)]);
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    // A followed process that exits: follow ends, the cursor stays at the
    // nearest row (the same position, clamped to the shorter list).
    press(&mut a, "End F");
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    a.model.procs.retain(|p| p.raw.key.pid != 30);
    a.fix_selection();
    assert!(!a.view.follow);
    assert_eq!(a.view.proc_sel, Some(pid(20)));
    assert!(status(&a).0.contains("PID 30 is no longer listed"), "{:?}", status(&a));
}

#[test]
fn a_vanished_selection_moves_to_the_nearest_row() {
    let mut a = app_with_processes();
    press(&mut a, "Down");
    assert_eq!(a.view.proc_sel, Some(pid(20)));
    a.model.procs.retain(|p| p.raw.key.pid != 20);
    a.fix_selection();
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    a.model.procs.retain(|p| p.raw.key.pid != 30);
    a.fix_selection();
    assert_eq!(a.view.proc_sel, Some(pid(10)));
}

#[test]
fn an_action_binds_the_pid_at_the_keypress_and_rows_freeze_meanwhile() {
    let mut a = app_with_processes();
    set_reads(&mut a, &[(30, 5e6)]);
    assert!(press(&mut a, "k").is_empty());
    assert!(matches!(&a.view.popup, Popup::Confirm(c) if c.key == pid(30)));
    // A sample re-sorts the processes while the question is open: the rows
    // keep their order and the cursor its process.
    set_reads(&mut a, &[(20, 9e6)]);
    assert_eq!(pids(&a), [30, 10, 20]);
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    assert_eq!(press(&mut a, "y"), [Command::Kill(pid(30))]);
    // Answered: the rows sort again.
    set_reads(&mut a, &[(20, 9e6)]);
    assert_eq!(pids(&a), [20, 10, 30]);
    assert_eq!(press(&mut a, "i i"), [Command::Ionice(pid(20), IoPrioChoice::Idle)]);
}

/// `L` opens the request log with the focus on it; there `f` freezes a
/// copy of the log, `/` types the log's filter (not the processes'), Esc
/// clears it; `f` elsewhere says where it works; `L` again hides the pane.
/// With tracing off, opening it says why the log is empty.
#[test]
fn request_log_keys() {
    use crate::collect::trace::block::{Dev, Op};
    use crate::model::trace::requests::{Request, Task};
    let mut a = app_with_processes();
    let req = Request {
        dev: Dev { major: 7, minor: 0 },
        op: Op::Read,
        sector: 8,
        bytes: 4096,
        done_ts: 1,
        queue_ns: None,
        wait_ns: None,
        device_ns: Some(1000),
        total_ns: None,
        task: Task {
            pid: 20,
            tgid: 20,
            kernel: false,
            comm: *b"tar\0\0\0\0\0\0\0\0\0\0\0\0\0",
        },
        error: 0,
    };
    a.model.trace.active = true;
    a.model.trace.log = vec![req];
    press(&mut a, "f");
    assert_eq!(
        status(&a),
        (
            "f (freeze / resume the request log) works in the request log pane: Tab there".into(),
            true
        )
    );
    press(&mut a, "L");
    assert!(a.view.log.shown);
    assert_eq!(a.view.focus, Pane::Requests);
    assert_eq!(
        a.view.panes(&a.model),
        [Pane::Devices, Pane::Progress, Pane::Requests, Pane::Processes]
    );
    press(&mut a, "f");
    assert_eq!(a.view.log.frozen.as_deref(), Some(&[req][..]));
    a.model.trace.log.clear();
    press(&mut a, "/ l o o p Enter");
    assert_eq!((a.view.log.filter.as_str(), a.view.filter.as_str()), ("loop", ""));
    assert_eq!(a.view.focus, Pane::Requests);
    press(&mut a, "Esc f");
    assert_eq!((a.view.log.filter.as_str(), a.view.log.frozen.clone()), ("", None));
    press(&mut a, "L");
    assert_eq!((a.view.log.shown, a.view.focus), (false, Pane::Processes));
    a.model.trace = crate::model::trace::view::TraceView::off("block tracing needs root");
    press(&mut a, "L");
    assert_eq!(
        status(&a),
        (
            "no request log: block tracing is off (block tracing needs root)".into(),
            true
        )
    );
}

/// The three processes and three cgroups: backup.service (9 MB/s, tar and
/// gzip), nginx.service (5 MB/s, bash), init.scope (idle, no process).
fn app_with_cgroups() -> App {
    use crate::model::cgroup::{CgroupRow, CgroupView, Hierarchy};
    let mut a = app_with_processes();
    a.model.cgroups = Some(CgroupView {
        hierarchy: Some(Hierarchy::V2),
        counted_devices: None,
        rows: vec![
            CgroupRow::example("/system.slice/nginx.service", 5e6, vec![10]),
            CgroupRow::example("/init.scope", 0.0, Vec::new()),
            CgroupRow::example("/system.slice/backup.service", 9e6, vec![20, 30]),
        ],
        notes: Vec::new(),
    });
    a.fix_selection();
    a
}

#[test]
fn key_sequences_cgroups_pane() {
    use crate::ui::cgroups::CgCol;
    let mut a = app_with_cgroups();
    let names = |a: &App| -> Vec<String> {
        let rows = &a.model.cgroups.as_ref().map(|c| c.rows.clone()).unwrap_or_default();
        a.rows.cgroups.iter().map(|&i| rows[i].name.clone()).collect()
    };
    assert!(!a.view.panes(&a.model).contains(&Pane::Cgroups));
    // C shows the pane, focuses it and asks the sampler for the cgroup tree.
    assert_eq!(press(&mut a, "C"), [Command::Cgroups(true)]);
    assert_eq!(
        a.view.panes(&a.model),
        [Pane::Devices, Pane::Progress, Pane::Cgroups, Pane::Processes]
    );
    assert_eq!(a.view.focus, Pane::Cgroups);
    // Busiest first; the selection starts on the first row.
    assert_eq!(names(&a), ["backup.service", "nginx.service", "init.scope"]);
    assert_eq!(a.view.cg_sel.as_deref(), Some("/system.slice/backup.service"));
    press(&mut a, "Down");
    assert_eq!(a.view.cg_sel.as_deref(), Some("/system.slice/nginx.service"));
    press(&mut a, "End");
    assert_eq!(a.view.cg_sel.as_deref(), Some("/init.scope"));
    // r reverses the cgroups (not the processes); the selection stays on its row.
    press(&mut a, "r");
    assert!(a.view.cg_reverse && !a.view.reverse);
    assert_eq!(names(&a), ["init.scope", "nginx.service", "backup.service"]);
    assert_eq!(a.view.cg_sel.as_deref(), Some("/init.scope"));
    // s / S cycle the cgroup columns (processes keep their sort).
    press(&mut a, "r s");
    assert_eq!((a.view.cg_sort, a.view.sort), (CgCol::Write, ProcCol::DiskRead));
    press(&mut a, "S S S S");
    assert_eq!(a.view.cg_sort, CgCol::Name);
    assert_eq!(names(&a), ["backup.service", "init.scope", "nginx.service"]);
    // Enter: the cgroup's detail; Esc closes it.
    press(&mut a, "Home Down Enter");
    assert_eq!(a.view.popup, Popup::Cgroup("/init.scope".into()));
    press(&mut a, "Esc");
    assert_eq!(a.view.popup, Popup::None);
    // k is for processes: it says where it works and asks nothing.
    assert!(press(&mut a, "k").is_empty());
    assert!(status(&a).0.contains("transfers, processes panes"), "{:?}", status(&a));
    // Tab goes on to the processes; C hides the pane and stops the reads.
    press(&mut a, "Tab");
    assert_eq!(a.view.focus, Pane::Processes);
    press(&mut a, "BackTab");
    assert_eq!(press(&mut a, "C"), [Command::Cgroups(false)]);
    assert_eq!(a.view.focus, Pane::Processes);
    assert!(!a.view.panes(&a.model).contains(&Pane::Cgroups));
    // Enter with nothing selected says so.
    a.model.cgroups = None;
    press(&mut a, "C");
    assert_eq!(a.view.cg_sel.as_deref(), Some("/init.scope"), "kept until rows come");
    a.view.cg_sel = None;
    press(&mut a, "Enter");
    assert_eq!(status(&a), ("no cgroup selected".into(), true));
}

#[test]
fn sync_probe_from_the_menu_writes_in_the_mount_point() {
    let mut a = app_with_device("loop0");
    a.on_key(key(KeyCode::Tab));
    a.on_key(key(KeyCode::Char('t')));
    let Popup::ProbeMenu(m) = &mut a.view.popup else {
        panic!("no menu")
    };
    m.sync_dir = Some("/srv/db".into());
    a.on_key(key(KeyCode::Char('w')));
    assert_eq!(menu(&a).tests, probe::Tests::SyncWrite);
    let Some(Command::StartProbe(cfg)) = a.on_key(key(KeyCode::Enter)) else {
        panic!("no probe started")
    };
    assert_eq!(
        *cfg,
        ProbeConfig::new("/srv/db", probe::Tests::SyncWrite, probe::Depth::Quick)
    );
}

/// An app whose results pane holds two finished probes (the second one
/// current).
fn app_with_two_results() -> App {
    let mut a = app_with_processes();
    let mut first = crate::probe::example::result(probe::Status::Completed);
    first.method.target = "/dev/first".into();
    let second = crate::probe::example::result(probe::Status::Completed);
    a.view.probe.start("/dev/sda".into(), "random read".into());
    a.view.probe.apply(ProbeMsg::Finished(Box::new(first)));
    a.view.probe.start("/dev/sda".into(), "random read".into());
    a.view.probe.apply(ProbeMsg::Finished(Box::new(second)));
    a.fix_selection();
    a
}

#[test]
fn results_pane_closes_reopens_scrolls_and_browses() {
    let mut a = app_with_two_results();
    assert_eq!(
        a.view.panes(&a.model),
        [Pane::Devices, Pane::Progress, Pane::Results, Pane::Processes]
    );
    // R closes it (the focus moves off it), R reopens it with the focus.
    press(&mut a, "BackTab");
    assert_eq!(a.view.focus, Pane::Results);
    press(&mut a, "R");
    assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Progress, Pane::Processes]);
    assert_eq!(a.view.focus, Pane::Processes);
    assert!(status(&a).0.contains("R reopens"), "{:?}", status(&a));
    press(&mut a, "R");
    assert_eq!(a.view.focus, Pane::Results);
    // ↓ PgDn scroll it, within the result's lines; Home goes back.
    let n = crate::ui::results::line_count(&a.view.probe, a.view.results);
    assert!(n > 20, "{n} lines");
    press(&mut a, "Down Down");
    assert_eq!(a.view.results.offset, 2);
    press(&mut a, "End");
    assert_eq!(usize::from(a.view.results.offset), n - 1);
    press(&mut a, "Home");
    assert_eq!(a.view.results.offset, 0);
    // [ shows the earlier result, ] back to the current one.
    press(&mut a, "[");
    assert_eq!(a.view.results.pick, Some(0));
    press(&mut a, "[");
    assert_eq!(a.view.results.pick, Some(0), "no result before the first");
    press(&mut a, "]");
    assert_eq!(a.view.results.pick, None);
    // [ ] only mean something in the results pane.
    press(&mut a, "Tab [");
    assert!(status(&a).0.contains("probe results pane"), "{:?}", status(&a));
}

#[test]
fn optional_panes_toggle_and_z_maximises() {
    let mut a = app_with_processes();
    press(&mut a, "T");
    assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Processes]);
    press(&mut a, "T");
    assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Progress, Pane::Processes]);
    // R without a probe says how to get one.
    press(&mut a, "R");
    assert!(status(&a).1 && status(&a).0.contains("t on the devices pane"));
    press(&mut a, "z");
    assert!(a.view.zoom);
    press(&mut a, "z");
    assert!(!a.view.zoom);
}

fn mouse(a: &mut App, kind: crossterm::event::MouseEventKind, x: u16, y: u16) {
    let m = crossterm::event::MouseEvent {
        kind,
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    };
    a.on_mouse(m, SCREEN);
}

const SCREEN: ratatui::layout::Rect = ratatui::layout::Rect {
    x: 0,
    y: 0,
    width: 120,
    height: 40,
};

fn area_of(a: &App, p: Pane) -> ratatui::layout::Rect {
    crate::ui::pane_areas(SCREEN, &a.model, &a.view, &a.rows)
        .into_iter()
        .find(|(q, _)| *q == p)
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("{p:?} not drawn"))
}

#[test]
fn mouse_clicks_focus_select_and_sort_and_the_wheel_scrolls() {
    use crossterm::event::{MouseButton, MouseEventKind as M};
    let click = M::Down(MouseButton::Left);
    let mut a = app_with_processes();
    set_reads(&mut a, &[(30, 5e6)]);
    assert_eq!(pids(&a), [30, 10, 20]);
    // A click on the devices pane focuses it.
    let d = area_of(&a, Pane::Devices);
    mouse(&mut a, click, d.x + 3, d.y + 2);
    assert_eq!((a.view.focus, a.view.dev_sel.as_deref()), (Pane::Devices, Some("sda")));
    // A click on the third process row focuses the pane and selects it.
    let p = area_of(&a, Pane::Processes);
    mouse(&mut a, click, p.x + 5, p.y + 4);
    assert_eq!((a.view.focus, a.view.proc_sel), (Pane::Processes, Some(pid(20))));
    // The wheel moves the selection (3 rows, clamped).
    mouse(&mut a, M::ScrollUp, p.x + 5, p.y + 4);
    assert_eq!(a.view.proc_sel, Some(pid(30)));
    // A click on the PID header sorts by PID; again reverses.
    mouse(&mut a, click, p.x + 3, p.y + 1);
    assert_eq!((a.view.sort, a.view.reverse), (ProcCol::Pid, false));
    assert_eq!(pids(&a), [10, 20, 30]);
    mouse(&mut a, click, p.x + 3, p.y + 1);
    assert_eq!(pids(&a), [30, 20, 10]);
    // The COMMAND header: by command.
    mouse(&mut a, click, p.right() - 5, p.y + 1);
    assert_eq!(a.view.sort, ProcCol::Command);
    // A click on a transfer selects it.
    let t = area_of(&a, Pane::Progress);
    mouse(&mut a, click, t.x + 5, t.y + 2);
    assert_eq!((a.view.focus, a.view.xfer_sel), (Pane::Progress, Some(pid(20))));
    // Popups are modal: a click does nothing under the help.
    press(&mut a, "?");
    mouse(&mut a, click, d.x + 3, d.y + 2);
    assert_eq!(a.view.focus, Pane::Progress);
}

#[test]
fn z_maximises_the_focused_pane_for_the_mouse_too() {
    let mut a = app_with_processes();
    press(&mut a, "z");
    let areas = crate::ui::pane_areas(SCREEN, &a.model, &a.view, &a.rows);
    assert_eq!(areas.len(), 1);
    assert_eq!(areas[0].0, Pane::Processes);
    assert!(areas[0].1.height > 30, "{:?}", areas[0].1);
}

#[test]
fn enter_opens_the_process_detail_with_confirmed_signals() {
    use crate::ui::{ConfirmAction, Sig};
    let mut a = app_with_processes();
    press(&mut a, "Down");
    assert_eq!(press(&mut a, "Enter"), [Command::ReadProcInfo(pid(20))]);
    assert_eq!(a.view.popup, Popup::Process(pid(20)));
    // Each signal asks first; the answer goes back to the detail.
    for (k, sig) in [("K", Sig::Kill), ("s", Sig::Stop), ("c", Sig::Cont)] {
        press(&mut a, k);
        assert!(
            matches!(&a.view.popup, Popup::Confirm(c) if c.action == ConfirmAction::Signal(sig) && c.key == pid(20)),
            "{k}: {:?}",
            a.view.popup
        );
        assert_eq!(press(&mut a, "y"), [Command::Signal(pid(20), sig)]);
        assert_eq!(a.view.popup, Popup::Process(pid(20)));
    }
    assert_eq!(press(&mut a, "t y"), [Command::Kill(pid(20))]);
    press(&mut a, "K n");
    assert_eq!(a.view.popup, Popup::Process(pid(20)));
    assert_eq!(
        press(&mut a, "i 7"),
        [Command::Ionice(pid(20), IoPrioChoice::BestEffort(7))]
    );
    // Modal: q closes it instead of quitting.
    assert!(press(&mut a, "q").is_empty());
    assert_eq!(a.view.popup, Popup::None);
}

#[test]
fn v_shows_children_under_their_parents_and_back() {
    let mut a = app_with_processes();
    // gzip (30) and tar (20) are children of bash (10); sorted by PID
    // descending, flat: 30, 20, 10.
    for p in &mut a.model.procs {
        if p.raw.key.pid != 10 {
            p.raw.ppid = 10;
        }
    }
    press(&mut a, "< < < r");
    assert_eq!(a.view.sort, ProcCol::Pid);
    let pids = |a: &App| -> Vec<i32> { a.rows.proc_rows(&a.model).iter().map(|p| p.raw.key.pid).collect() };
    assert_eq!(pids(&a), [30, 20, 10]);
    press(&mut a, "v");
    assert!(a.view.tree);
    assert_eq!(
        status(&a).0,
        "tree view: children under their parent, siblings sorted (v again: flat list)"
    );
    // The parent first, its children under it in the sort order.
    assert_eq!(pids(&a), [10, 30, 20]);
    let prefix = |a: &App, pid: i32| {
        let i = a.model.procs.iter().position(|p| p.raw.key.pid == pid).unwrap();
        a.rows.tree_prefix(i).to_string()
    };
    assert_eq!([prefix(&a, 10), prefix(&a, 30), prefix(&a, 20)], ["", "├─", "└─"]);
    // The cursor keeps its row position (the first) as rows re-order.
    assert_eq!(a.view.proc_sel, Some(pid(10)));
    // F5 too; back to the flat list.
    press(&mut a, "Tab");
    assert_ne!(a.view.focus, Pane::Processes);
    press(&mut a, "v");
    assert!(a.view.tree, "v works in the processes pane only");
    assert!(status(&a).0.starts_with("v (tree view"), "{:?}", status(&a));
    a.view.focus = Pane::Processes;
    a.update(Msg::Key(key(KeyCode::F(5))));
    assert!(!a.view.tree);
    assert_eq!(pids(&a), [30, 20, 10]);
    assert!(a.rows.tree.is_empty());
}

/// A process row with a parent, for the tree view.
fn child(pid: i32, ppid: i32) -> crate::model::ProcRow {
    let mut raw = crate::collect::process::RawProc::example(pid, 1, "x");
    raw.ppid = ppid;
    crate::model::ProcRow::example(raw)
}

#[test]
fn tree_children_under_parents_in_sort_order() {
    // 0:pid 1 (root), 1:pid 10 child of 1, 2:pid 11 child of 1,
    // 3:pid 20 child of 10, 4:pid 99 whose parent 50 is not listed.
    let procs = [child(1, 0), child(10, 1), child(11, 1), child(20, 10), child(99, 50)];
    // Sorted: 20, 99, 11, 1, 10.
    let got = crate::ui::proctree::order(&procs, &[3, 4, 2, 0, 1]);
    let shown: Vec<(i32, &str)> = got.iter().map(|(i, s)| (procs[*i].raw.key.pid, s.as_str())).collect();
    assert_eq!(shown, [(99, ""), (1, ""), (11, "├─"), (10, "└─"), (20, "  └─")]);
}

#[test]
fn tree_cycles_and_self_parents_are_listed_once() {
    let procs = [child(5, 6), child(6, 5), child(7, 7)];
    let got = crate::ui::proctree::order(&procs, &[0, 1, 2]);
    let mut idx: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
    idx.sort();
    assert_eq!(idx, [0, 1, 2]);
}

#[test]
fn help_scroll_keys_stay_in_range() {
    let mut a = app();
    press(&mut a, "? Down Down Down");
    assert_eq!(a.view.popup, Popup::Help);
    assert_eq!(a.view.help_offset, 3);
    press(&mut a, "Up PgUp");
    assert_eq!(a.view.help_offset, 0);
    press(&mut a, "End");
    let last = crate::ui::help::line_count(&a.view) - 1;
    assert_eq!(usize::from(a.view.help_offset), last);
    press(&mut a, "PgDn Down");
    assert_eq!(usize::from(a.view.help_offset), last);
    // Closing and opening again starts at the top.
    press(&mut a, "Esc ?");
    assert_eq!(a.view.help_offset, 0);
}

#[test]
fn mouse_selects_and_sorts_cgroups_too() {
    use crate::ui::cgroups::CgCol;
    use crossterm::event::{MouseButton, MouseEventKind as M};
    let click = M::Down(MouseButton::Left);
    let mut a = app_with_cgroups();
    press(&mut a, "C Tab");
    assert_ne!(a.view.focus, Pane::Cgroups);
    // Rows busiest first: backup, nginx, init. A click on the second row
    // focuses the pane and selects nginx.
    let c = area_of(&a, Pane::Cgroups);
    mouse(&mut a, click, c.x + 5, c.y + 3);
    assert_eq!(a.view.focus, Pane::Cgroups);
    assert_eq!(a.view.cg_sel.as_deref(), Some("/system.slice/nginx.service"));
    // A click on the CGROUP header sorts by name; again reverses.
    mouse(&mut a, click, c.x + 3, c.y + 1);
    assert_eq!((a.view.cg_sort, a.view.cg_reverse), (CgCol::Name, false));
    mouse(&mut a, click, c.x + 3, c.y + 1);
    assert!(a.view.cg_reverse);
    // The processes keep their own sort.
    assert_eq!(a.view.sort, ProcCol::DiskRead);
}

/// `w` opens the findings; ↑↓ select; Enter goes to the subject: a
/// device's detail, a process's detail, a cgroup's row (the pane shown).
#[test]
fn key_sequences_findings_pane_jumps_to_the_subject() {
    use crate::model::findings::{Finding, Severity, Subject};
    let mut a = app_with_cgroups();
    let found = vec![
        Finding::example("io_errors", Severity::Critical, Subject::Device { name: "sda".into() }),
        Finding::example(
            "tiny_syscalls",
            Severity::Warning,
            Subject::Process {
                pid: 20,
                comm: "tar".into(),
            },
        ),
        Finding::example(
            "cgroup_limit",
            Severity::Warning,
            Subject::Cgroup {
                path: "/init.scope".into(),
            },
        ),
    ];
    a.model.findings.set_findings(found);
    assert_eq!(press(&mut a, "w"), []);
    assert_eq!(a.view.popup, Popup::Findings(0));
    press(&mut a, "Up");
    assert_eq!(a.view.popup, Popup::Findings(0));
    press(&mut a, "Enter");
    assert_eq!(a.view.popup, Popup::Detail("sda".into()));
    assert_eq!(a.view.focus, Pane::Devices);
    press(&mut a, "Esc w Down");
    assert_eq!(a.view.popup, Popup::Findings(1));
    assert_eq!(press(&mut a, "Enter"), [Command::ReadProcInfo(pid(20))]);
    assert_eq!(a.view.popup, Popup::Process(pid(20)));
    assert_eq!(a.view.proc_sel, Some(pid(20)));
    press(&mut a, "Esc w End Down");
    assert_eq!(a.view.popup, Popup::Findings(2));
    assert_eq!(press(&mut a, "Enter"), [Command::Cgroups(true)]);
    assert_eq!(a.view.popup, Popup::None);
    assert_eq!(a.view.focus, Pane::Cgroups);
    assert_eq!(a.view.cg_sel.as_deref(), Some("/init.scope"));
    // Esc closes; a process that is gone says so.
    press(&mut a, "w Esc");
    assert_eq!(a.view.popup, Popup::None);
    a.model.findings.set_findings(vec![Finding::example(
        "tiny_syscalls",
        Severity::Warning,
        Subject::Process {
            pid: 99,
            comm: "x".into(),
        },
    )]);
    assert_eq!(press(&mut a, "w Enter"), []);
    assert_eq!(a.view.popup, Popup::None);
    assert!(a.view.status.as_ref().is_some_and(|s| s.error && s.text.contains("99")));
}

/// `I` opens the files view; ↓ selects; Enter opens the detail of the
/// selected file's busiest process; a file only kernel threads touched
/// says so; Esc closes.
#[test]
fn key_sequences_files_view_opens_the_busiest_process() {
    use crate::collect::trace::block::Dev;
    use crate::model::files::example::{add, kernel};
    use crate::model::files::{FileTracker, FilesView};
    let mut a = app_with_processes();
    let sda = Dev { major: 8, minor: 0 };
    let ev = |ino, index, pid| add(pid, pid, sda, ino, index, 0);
    let mut t = FileTracker::default();
    // file 5: tar reads 3 pages, gzip 1; file 6: 1 page by a kernel thread
    t.feed(&[ev(5, 0, 20), ev(5, 1, 20), ev(5, 2, 20)]);
    t.feed(&[ev(5, 3, 30), kernel(ev(6, 0, 2))]);
    a.model.trace.files = FilesView {
        active: true,
        reason: None,
        interval: t.take_interval(),
        names: Vec::new(),
    };
    assert_eq!(press(&mut a, "I"), []);
    assert_eq!(a.view.popup, Popup::Files(0));
    assert_eq!(press(&mut a, "Enter"), [Command::ReadProcInfo(pid(20))]);
    assert_eq!(a.view.popup, Popup::Process(pid(20)));
    press(&mut a, "Esc I Down Down");
    assert_eq!(a.view.popup, Popup::Files(1));
    assert_eq!(press(&mut a, "Enter"), []);
    assert_eq!(a.view.popup, Popup::Files(1));
    press(&mut a, "Esc");
    assert_eq!(a.view.popup, Popup::None);
}

/// A probe the dashboard saves is at once the device's saved basis (the
/// results file read back); a captured tree (`--root`) keeps none.
#[test]
fn a_saved_probe_becomes_the_devices_basis() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("probes.jsonl");
    let save = |r: &probe::ProbeResult| {
        probe::store::append_to(&path, r)?;
        Ok(path.clone())
    };
    let mut a = app();
    assert!(a.model.findings.saved.devices.is_empty());
    let r = probe::example::qd_result(Status::Completed);
    a.on_probe(ProbeMsg::Finished(Box::new(r.clone())), save);
    let sdb = a.model.findings.saved.of("sdb").expect("sdb's saved result");
    assert_eq!(
        sdb.depth.as_ref().and_then(|d| d.knee),
        r.queue_depth_sweep.and_then(|q| q.knee)
    );
    let mut b = app();
    b.captured_tree = true;
    b.on_probe(
        ProbeMsg::Finished(Box::new(probe::example::qd_result(Status::Completed))),
        save,
    );
    assert!(b.model.findings.saved.devices.is_empty());
}
