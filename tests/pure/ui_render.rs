//! Snapshot tests of the dashboard from a deterministic model.

use crate::common;

use iolens::collect::process::ProcKey;
use iolens::model::Model;
use iolens::ui::theme::Theme;
use iolens::ui::{self, Confirm, ConfirmAction, Pane, Popup, ProbeMenu, ViewState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;

fn draw(model: &Model, view: &ViewState, w: u16, h: u16) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::render(f, model, view)).unwrap();
    t
}

fn text(t: &Terminal<TestBackend>) -> String {
    t.backend().to_string()
}

#[test]
fn whole_screen_at_three_sizes() {
    let m = common::model();
    let v = ViewState::default();
    for (w, h) in [(80, 24), (120, 40), (200, 60)] {
        let t = draw(&m, &v, w, h);
        // The iostat -x essentials are on the devices header at every
        // size; the traced p99 gives way to them on a narrow terminal.
        let s = text(&t);
        let head = s.lines().find(|l| l.contains("│Device")).unwrap();
        for col in ["r/s", "w/s", "rMB/s", "wMB/s", "r_await", "w_await", "aqu-sz", "%util"] {
            assert!(head.contains(col), "{w}x{h}: {col} not in {head}");
        }
        assert_eq!(head.contains("p99 ms"), w >= 120, "{w}x{h}: {head}");
        insta::assert_snapshot!(format!("screen_{w}x{h}"), t.backend());
    }
}

#[test]
fn values_on_screen_are_the_hand_computed_ones() {
    let m = common::model();
    let mut v = ViewState::default();
    v.unfolded.insert("sda".into());
    let s = text(&draw(&m, &v, 200, 60));
    // Interval 39 (i = 39, wave 5): sda reads 100/s of 128 KiB = 13.11 MB/s,
    // await 30 ms; writes 40/s of 4 KiB at 60 ms; 95% busy; SEQ.
    let sda = s.lines().find(|l| l.contains("│sda ")).unwrap();
    for want in [
        "100", "13.11", "30.0", "128 KiB", "40.0", "0.16", "60.0", "4.00 KiB", "95.0", "SEQ",
    ] {
        assert!(sda.contains(want), "{want} not in {sda}");
    }
    // loop0: 500 reads/s of 4 KiB, RAND.
    let lo = s.lines().find(|l| l.contains("│loop0")).unwrap();
    assert!(lo.contains("500") && lo.contains("2.05") && lo.contains("RAND"), "{lo}");
    // The misaligned partition folds under sda with a tree glyph.
    assert!(s.contains("├sda1") && s.contains("└sda2"), "{s}");
    // dd reads 12.5 MiB/s from the disk (all of sda's reads), 40 MiB/s
    // logically: cache 1 - 12.5/40 = 68.75%; its open file is on sda.
    let dd = s.lines().find(|l| l.contains("dd if=/dev/sda")).unwrap();
    assert!(
        dd.contains("13.1 MB/s") && dd.contains("41.9 MB/s") && dd.contains("69%") && dd.contains(" sda "),
        "{dd}"
    );
    // The loop worker is named by what it serves; it is left out of the
    // process total, so the processes account for all of the disk reads.
    assert!(s.contains("[loop0 backing I/O] kworker/u8:3-loop0"), "{s}");
    assert!(
        s.contains("Disks rd 13.1 MB/s wr 164 kB/s · processes rd 13.1 MB/s (100% of disk reads)"),
        "{s}"
    );
    // mallory dirtied 40 kB/s and cancelled 20 kB/s: 40 s of it.
    assert!(
        s.contains("last 40s: dirtied 1.64 MB (cancelled 819 kB), disks wrote 6.55 MB"),
        "{s}"
    );
    // Header: CPU shares over 200 ticks, PSI and memory from the fixture.
    assert!(s.contains("iowait 15.0% user 10.0% sys 5.0% steal 0.0%"), "{s}");
    assert!(s.contains("Dirty 1.26 MB Writeback 57.3 kB"), "{s}");
}

#[test]
fn escape_sequences_are_shown_escaped() {
    let m = common::model();
    let t = draw(&m, &ViewState::default(), 200, 60);
    let s = text(&t);
    assert!(s.contains("[evil\\x1b[31mred\\x07]"), "{s}");
    let raw: String = t.backend().buffer().content().iter().map(|c| c.symbol()).collect();
    assert!(
        !raw.chars().any(|c| c.is_control()),
        "a control character reached the buffer"
    );
}

#[test]
fn help_detail_confirm_and_tiny() {
    let m = common::model();
    let help = ViewState {
        popup: Popup::Help,
        ..Default::default()
    };
    insta::assert_snapshot!("help_120x40", draw(&m, &help, 120, 40).backend());
    let detail = ViewState {
        popup: Popup::Detail("sda".into()),
        focus: Pane::Devices,
        ..Default::default()
    };
    let t = draw(&m, &detail, 120, 40);
    insta::assert_snapshot!("detail_sda_120x40", t.backend());
    let s = text(&t);
    assert!(s.contains("WDC WD10EZEX-08W") && s.contains("mq-deadline"), "{s}");
    // dd has /dev/sda open: the detail lists it with its rates.
    let dd = s
        .lines()
        .find(|l| l.contains("4242 rd 13.1 MB/s wr 0 B/s dd if=/dev/sda"));
    assert!(s.contains("processes with files here (1)") && dd.is_some(), "{s}");
    assert!(
        s.contains("63  1000 GB ⚠ misaligned") && s.contains("2048   537 MB aligned"),
        "{s}"
    );
    insta::assert_snapshot!("detail_sda_80x24", draw(&m, &detail, 80, 24).backend());
    let confirm = ViewState {
        popup: Popup::Confirm(Confirm {
            action: ConfirmAction::Kill,
            key: ProcKey {
                pid: 4242,
                start_time: 987_654,
            },
            comm: "dd".into(),
        }),
        ..Default::default()
    };
    insta::assert_snapshot!("confirm_kill_80x24", draw(&m, &confirm, 80, 24).backend());
    insta::assert_snapshot!("tiny_30x8", draw(&m, &ViewState::default(), 30, 8).backend());
}

#[test]
fn sorted_filtered_accumulated_and_hidden_idle() {
    let m = common::model();
    let v = ViewState {
        sort: ui::ProcCol::Pid,
        filter: "dd".into(),
        accumulated: true,
        hide_idle: true,
        ..Default::default()
    };
    let t = draw(&m, &v, 120, 40);
    insta::assert_snapshot!("filtered_totals_120x40", t.backend());
    let s = text(&t);
    // 40 s of sda's reads (20 x wave requests of 128 KiB, the waves
    // summing to 390): 7800 x 128 KiB = 1.02 GB from the disk; 39% cached.
    assert!(s.contains("1.02 GB") && s.contains("39%"), "{s}");
    assert!(!s.contains("evil"), "{s}");
    assert!(!s.contains("│sdb "), "idle sdb still shown: {s}");
}

#[test]
fn first_sample_shows_na_not_zero() {
    let m = common::model_after(0);
    let s = text(&draw(&m, &ViewState::default(), 120, 40));
    let sda = s.lines().find(|l| l.contains("│sda ")).unwrap();
    assert!(sda.contains("n/a") && !sda.contains("0.00"), "{sda}");
}

#[test]
fn every_small_size_draws_without_panic() {
    let m = common::model();
    let views = [
        ViewState::default(),
        ViewState {
            popup: Popup::Help,
            ..Default::default()
        },
        ViewState {
            popup: Popup::Detail("sda".into()),
            ..Default::default()
        },
        ViewState {
            popup: Popup::Confirm(Confirm {
                action: ConfirmAction::Ionice,
                key: ProcKey { pid: 1, start_time: 1 },
                comm: "x".into(),
            }),
            editing_filter: true,
            ..Default::default()
        },
        ViewState {
            popup: Popup::Findings(7),
            ..Default::default()
        },
    ];
    let with = model_with_findings();
    for v in &views {
        for w in 0..=40 {
            for h in 0..=15 {
                draw(&m, v, w, h);
                draw(&with, v, w, h);
            }
        }
        // And just above the minimum, where the layout is real.
        for w in ui::MIN_WIDTH..ui::MIN_WIDTH + 20 {
            for h in ui::MIN_HEIGHT..ui::MIN_HEIGHT + 10 {
                draw(&m, v, w, h);
                draw(&with, v, w, h);
            }
        }
    }
}

#[test]
fn colours_follow_severity_and_no_color_is_plain() {
    let m = common::model();
    let t = draw(&m, &ViewState::default(), 200, 60);
    let buf = t.backend().buffer();
    let find = |row_has: &str, col_text: &str| {
        let s = text(&t);
        let (y, line) = s.lines().enumerate().find(|(_, l)| l.contains(row_has)).unwrap();
        let x = line.find(col_text).unwrap();
        // The line is quoted and may contain multi-byte glyphs before x.
        let x = line[..x].chars().count() - 1;
        buf[(x as u16, y as u16)].fg
    };
    assert_eq!(find("│sda ", "95.0"), Color::Red, "util 95% is critical");
    assert_eq!(find("│sda ", " 60.0"), Color::Red, "w_await 60 ms is critical");
    assert_eq!(find("│sda ", " 30.0"), Color::Yellow, "r_await 30 ms warns");
    let plain = ViewState {
        theme: Theme::plain(),
        ..Default::default()
    };
    let t = draw(&m, &plain, 200, 60);
    assert!(no_colours(&t), "NO_COLOR must give no colours");
}

/// Not one cell with a foreground or background colour.
fn no_colours(t: &Terminal<TestBackend>) -> bool {
    t.backend()
        .buffer()
        .content()
        .iter()
        .all(|c| c.fg == Color::Reset && c.bg == Color::Reset)
}

#[test]
fn docs_key_table_is_the_keymap() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/dashboard.md")).unwrap();
    let start = readme
        .find("| key | where | what it does |")
        .expect("docs/dashboard.md's key table");
    let table: Vec<&str> = readme[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    let want: Vec<String> = ui::keymap::ROWS
        .iter()
        .map(|r| format!("| {} | {} | {} |", r.label, r.place(), r.help))
        .collect();
    assert_eq!(table, want, "docs/dashboard.md's key table is not the keymap");
}

#[test]
fn panes_never_name_the_collectors() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/ui");
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "rs") {
            let text = std::fs::read_to_string(&p).unwrap();
            assert!(
                !text.contains("crate::collect"),
                "{} uses crate::collect: views read model and view-model types only",
                p.display()
            );
        }
    }
}

#[test]
fn no_color_reaches_the_results_pane() {
    use iolens::probe::{ProbeMsg, Status, example};
    let m = common::model();
    let mut v = ViewState {
        theme: Theme::plain(),
        focus: Pane::Results,
        ..Default::default()
    };
    v.probe
        .start("/dev/sda".into(), "random read + zone sweep, quick".into());
    v.probe
        .apply(ProbeMsg::Finished(Box::new(example::result(Status::Completed))));
    let t = draw(&m, &v, 120, 40);
    assert!(text(&t).contains("latency histogram"), "{}", text(&t));
    assert!(no_colours(&t), "NO_COLOR must give no colours in the results pane");
    // With colours, the histogram bars are in the accent colour.
    v.theme = Theme::default();
    let t = draw(&m, &v, 120, 40);
    assert!(
        t.backend()
            .buffer()
            .content()
            .iter()
            .any(|c| c.symbol() == "█" && c.fg == Color::Cyan)
    );
}

#[test]
fn the_selected_process_is_scrolled_into_view() {
    let mut m = common::model();
    let template = m.procs[0].clone();
    for pid in 50_000..50_200 {
        let mut p = template.clone();
        p.raw.key = ProcKey { pid, start_time: 1 };
        m.procs.push(p);
    }
    let v = ViewState {
        sort: ui::ProcCol::Pid,
        proc_sel: Some(ProcKey {
            pid: 50_150,
            start_time: 1,
        }),
        ..Default::default()
    };
    let s = text(&draw(&m, &v, 80, 24));
    assert!(s.contains(" 50150 "), "{s}");
    assert!(!s.contains(" 50000 "), "{s}");
    let rows = ui::processes::visible(&m, &v);
    assert_eq!(rows.len(), 204);
}

#[test]
fn keys_fold_partitions_hide_idle_and_open_the_detail() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use iolens::app::App;
    let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
    let mut app = App::new(common::model(), ViewState::default());
    let names = |app: &App| -> Vec<String> {
        ui::devices::visible(&app.model, &app.view)
            .iter()
            .map(|l| l.row.name.clone())
            .collect()
    };
    // Disks first (partitions folded), then device-mapper, then loop;
    // busiest first within a group.
    assert_eq!(names(&app), ["sda", "sdb", "dm-0", "loop0"]);
    let s = text(&draw(&app.model, &app.view, 120, 40));
    assert!(s.contains("│sda +2 "), "{s}");
    app.on_key(key(KeyCode::Tab));
    assert_eq!(app.view.focus, Pane::Devices);
    assert_eq!(app.view.dev_sel.as_deref(), Some("sda"));
    // Space unfolds sda's partitions, Space folds them again.
    app.on_key(key(KeyCode::Char(' ')));
    assert_eq!(names(&app), ["sda", "sda1", "sda2", "sdb", "dm-0", "loop0"]);
    app.on_key(key(KeyCode::Char(' ')));
    assert_eq!(names(&app), ["sda", "sdb", "dm-0", "loop0"]);
    let s = text(&draw(&app.model, &app.view, 120, 40));
    assert!(s.contains("┃sda +2 "), "{s}");
    app.on_key(key(KeyCode::Right));
    assert_eq!(names(&app).len(), 6);
    // On a partition, Left folds its disk and selects the disk.
    app.on_key(key(KeyCode::Down));
    assert_eq!(app.view.dev_sel.as_deref(), Some("sda1"));
    app.on_key(key(KeyCode::Left));
    assert_eq!(app.view.dev_sel.as_deref(), Some("sda"));
    app.on_key(key(KeyCode::Right));
    // Hide idle: sda1 and sdb did nothing.
    app.on_key(key(KeyCode::Char('a')));
    assert_eq!(names(&app), ["sda", "sda2", "dm-0", "loop0"]);
    // Down moves down (k is SIGTERM, not movement); Enter opens the detail of the selection.
    app.on_key(key(KeyCode::End));
    assert_eq!(app.view.dev_sel.as_deref(), Some("loop0"));
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.view.popup, Popup::Detail("loop0".into()));
    let s = text(&draw(&app.model, &app.view, 120, 40));
    assert!(s.contains("/var/tmp/disk.img"), "{s}");
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.view.popup, Popup::None);
}

#[test]
fn home_end_and_page_keys_clamp() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = iolens::app::App::new(common::model(), ViewState::default());
    let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
    let order: Vec<i32> = ui::processes::visible(&app.model, &app.view)
        .iter()
        .map(|p| p.raw.key.pid)
        .collect();
    assert_eq!(order, [4242, 90, 31337, 1]);
    app.on_key(key(KeyCode::End));
    assert_eq!(app.view.proc_sel.map(|k| k.pid), Some(1));
    app.on_key(key(KeyCode::PageDown));
    assert_eq!(app.view.proc_sel.map(|k| k.pid), Some(1));
    app.on_key(key(KeyCode::Home));
    assert_eq!(app.view.proc_sel.map(|k| k.pid), Some(4242));
    app.on_key(key(KeyCode::Up));
    assert_eq!(app.view.proc_sel.map(|k| k.pid), Some(4242));
    app.on_key(key(KeyCode::PageDown));
    assert_eq!(app.view.proc_sel.map(|k| k.pid), Some(1));
}

#[test]
fn huge_terminals_draw_too() {
    let m = common::model();
    draw(&m, &ViewState::default(), 1000, 2000);
}

/// The fixture model with transfers: dd (pid 4242, in the fixture's
/// processes) reading a disk image, tar, and a finished rsync.
fn model_with_transfers() -> Model {
    use iolens::model::progress::{Label, example_job, sort_jobs};
    let mut m = common::model();
    let mut jobs = vec![
        example_job(
            4242,
            "dd",
            b"/srv/backup/db.img",
            60_000_000_000,
            100_000_000_000,
            150e6,
            Label::Progress,
        ),
        example_job(
            4100,
            "tar",
            b"/home/a/evil\x1b[2J.jpg",
            3_000_000,
            4_000_000,
            250e3,
            Label::Progress,
        ),
        example_job(
            4600,
            "rsync",
            b"/var/lib/x.db",
            1000,
            1000,
            0.0,
            Label::Done { complete: true },
        ),
    ];
    sort_jobs(&mut jobs);
    m.progress.jobs = jobs;
    m
}

#[test]
fn dashboard_with_the_progress_pane() {
    let m = model_with_transfers();
    let dd = ProcKey {
        pid: 4242,
        start_time: 1,
    };
    let v = ViewState {
        focus: Pane::Progress,
        xfer_sel: Some(dd),
        ..Default::default()
    };
    assert_eq!(v.panes(&m), [Pane::Devices, Pane::Progress, Pane::Processes]);
    let t = draw(&m, &v, 120, 40);
    let s = text(&t);
    // tar: 3 of 4 MB at 250 kB/s → 75%, 4 s left; dd: 60%, 40 GB at 150 MB/s → 4m27s.
    let tar = s.lines().find(|l| l.contains("tar")).unwrap();
    assert!(
        tar.contains("75.0%") && tar.contains("250 kB/s") && tar.contains("evil\\x1b[2J"),
        "{tar}"
    );
    let dd_line = s.lines().find(|l| l.contains("db.img")).unwrap();
    assert!(dd_line.contains("60.0%") && dd_line.contains("150 MB/s"), "{dd_line}");
    let order: Vec<usize> = ["tar", "db.img", "rsync"].iter().map(|w| s.find(w).unwrap()).collect();
    assert!(order[0] < order[1] && order[1] < order[2], "sorted by ETA, done last");
    insta::assert_snapshot!("progress_120x40", t.backend());
    insta::assert_snapshot!("progress_80x24", draw(&m, &v, 80, 24).backend());
}

#[test]
fn dashboard_with_the_results_pane_running_and_finished() {
    use iolens::probe::example::{result, zones};
    use iolens::probe::{Phase, ProbeMsg, Progress, Status};
    let m = common::model();
    let mut v = ViewState {
        focus: Pane::Results,
        ..Default::default()
    };
    v.probe
        .start("/dev/sda".into(), "random read + zone sweep, quick".into());
    v.probe.apply(ProbeMsg::Progress(Progress {
        phase: Phase::Sweep,
        fraction: 0.45,
        elapsed_s: 4.6,
        reads: 580,
        p50_ms: None,
        iops: None,
        zones: zones(9),
        size_bytes: 1_000_204_886_016,
        queue_depth: None,
        depths: Vec::new(),
    }));
    assert_eq!(v.panes(&m), [Pane::Devices, Pane::Results, Pane::Processes]);
    let running = draw(&m, &v, 120, 40);
    assert!(text(&running).contains("45%"), "{}", text(&running));
    insta::assert_snapshot!("results_running_120x40", running.backend());
    v.probe.apply(ProbeMsg::Finished(Box::new(result(Status::Completed))));
    let done = draw(&m, &v, 120, 40);
    let s = text(&done);
    assert!(s.contains("HDD"), "{s}");
    insta::assert_snapshot!("results_finished_120x40", done.backend());
    insta::assert_snapshot!("results_finished_200x60", draw(&m, &v, 200, 60).backend());
}

#[test]
fn probe_menu_popup() {
    let m = common::model();
    let mut menu = ProbeMenu::new("sda".into());
    menu.depth = iolens::probe::Depth::Thorough;
    menu.drop_cache = true;
    menu.sync_dir = Some("/srv".into());
    let v = ViewState {
        popup: Popup::ProbeMenu(menu.clone()),
        ..Default::default()
    };
    let s = text(&draw(&m, &v, 80, 24));
    for want in [
        "/dev/sda",
        "(•) random read",
        "thorough",
        "[x] drop the page cache",
        "( ) alignment",
        "( ) request sizes",
        "( ) seek and rotation",
        "( ) sync-write latency in /srv",
        "Enter start",
        // How long the probe runs, not a queue depth.
        "d  length: thorough",
    ] {
        assert!(s.contains(want), "{want} not in\n{s}");
    }
    assert!(!s.contains("depth: thorough") && !s.contains("Needs root"), "{s}");
    insta::assert_snapshot!("probe_menu_80x24", draw(&m, &v, 80, 24).backend());
    // Without root the menu says that the probe needs it (before, the
    // probe was offered and failed with "Permission denied").
    let mut user = common::model();
    user.host.is_root = false;
    let s = text(&draw(&user, &v, 80, 24));
    assert!(s.contains("Needs root: only root may read the device"), "{s}");
    assert!(s.contains("dropping the page cache needs root"), "{s}");
    menu.confirm_drop = true;
    let v = ViewState {
        popup: Popup::ProbeMenu(menu),
        ..Default::default()
    };
    assert!(text(&draw(&m, &v, 80, 24)).contains("WHOLE machine"));
}

#[test]
fn every_pane_at_once_keeps_the_processes_visible() {
    use iolens::probe::ProbeMsg;
    use iolens::probe::example::result;
    let m = model_with_transfers();
    let mut v = ViewState::default();
    v.probe
        .start("/dev/sda".into(), "random read + zone sweep, quick".into());
    v.probe
        .apply(ProbeMsg::Finished(Box::new(result(iolens::probe::Status::Completed))));
    assert_eq!(
        v.panes(&m),
        [Pane::Devices, Pane::Progress, Pane::Results, Pane::Processes]
    );
    let t = draw(&m, &v, 80, 24);
    let s = text(&t);
    assert!(
        s.contains("Transfers (2)") && s.contains("Probe: /dev/sda") && s.contains("Processes 4/4"),
        "{s}"
    );
    assert!(s.contains("dd if=/dev/sda"), "{s}");
    insta::assert_snapshot!("all_panes_80x24", t.backend());
    insta::assert_snapshot!("all_panes_120x40", draw(&m, &v, 120, 40).backend());
}

#[test]
fn exited_rows_and_the_children_line() {
    use iolens::model::process::ProcRates;
    let mut m = common::model();
    let rates = |read_bps: f64| ProcRates {
        read_bps,
        rchar_bps: read_bps,
        syscr_per_s: 10.0,
        ..Default::default()
    };
    let base = m.procs[0].clone();
    let mut parent = base.clone();
    parent.raw.key = ProcKey {
        pid: 7001,
        start_time: 1,
    };
    parent.raw.comm = "python3".into();
    parent.raw.cmdline = "python3 parent.py".into();
    parent.rates = Some(rates(0.0).into());
    parent.children_rates = Some(Box::new(rates(104_857_600.0)));
    let mut gone = base.clone();
    gone.raw.key = ProcKey {
        pid: 7002,
        start_time: 2,
    };
    gone.raw.comm = "dd".into();
    gone.exited = true;
    gone.rates = Some(rates(4_194_304.0).into());
    m.procs = vec![parent, gone];
    m.host.is_root = false;
    let s = text(&draw(&m, &ViewState::default(), 160, 40));
    let lines: Vec<&str> = s.lines().collect();
    let p = lines.iter().position(|l| l.contains("python3 parent.py")).unwrap();
    // The arrivals are on the indented line right under their process.
    assert!(
        lines[p + 1].contains("↳ exited threads and children"),
        "{}",
        lines[p + 1]
    );
    assert!(lines[p + 1].contains("105 MB/s"), "{}", lines[p + 1]);
    assert!(s.contains("dd (exited)"), "{s}");
    assert!(s.contains("without root: ↳ = exited threads"), "{s}");
}

#[test]
fn results_of_the_capacity_probes() {
    use iolens::probe::ProbeMsg;
    use iolens::probe::example_capacity as e;
    let m = common::model();
    for (name, r, want) in [
        ("align", e::align_result(), "sda2 at 32256 B: misaligned"),
        ("size", e::size_result(), "throughput stops growing at"),
        ("seek", e::seek_result(), "RPM (revolution"),
    ] {
        let mut v = ViewState {
            theme: Theme::plain(),
            focus: Pane::Results,
            ..Default::default()
        };
        v.probe.start(r.method.target.clone(), r.method.tests.label().into());
        v.probe.apply(ProbeMsg::Finished(Box::new(r)));
        let t = draw(&m, &v, 120, 40);
        assert!(text(&t).contains(want), "{want} not in\n{}", text(&t));
        insta::assert_snapshot!(format!("results_{name}_120x40"), t.backend());
    }
}

#[test]
fn process_detail_with_its_io_history() {
    use iolens::model::{FdTarget, ProcInfo, RawFd};
    let m = common::model();
    let key = ProcKey {
        pid: 4242,
        start_time: 987_654,
    };
    let file = |fd: i32, flags: u32, pos: u64, path: &[u8]| RawFd {
        fd,
        target: if path.starts_with(b"/dev/") {
            FdTarget::BlockDevice
        } else {
            FdTarget::File
        },
        pos,
        flags,
        mnt_id: Some(22),
        ino: 301,
        dev: 8 << 8,
        size: Some(500_107_862_016),
        remote: false,
        path: Some(std::sync::Arc::from(path)),
    };
    let v = ViewState {
        popup: Popup::Process(key),
        focus: Pane::Processes,
        proc_info: Some(ProcInfo {
            key,
            cwd: Some("/root".into()),
            cgroup: Some("/user.slice/user-0.slice/session-1.scope".into()),
            fds: vec![
                file(0, 0o100000, 1 << 30, b"/dev/sda"),
                file(1, 0o100001, 1 << 29, b"/var/tmp/sda.img"),
            ],
            error: None,
        }),
        ..Default::default()
    };
    // dd's history: 40 one-second samples; its disk reads follow sda's
    // wave (2..20 × 20 requests of 128 KiB: 5.2 to 52.4 MB/s), its
    // syscall reads and writes stay at 40 MiB/s = 41.9 MB/s.
    let h = m.proc_history.get(key).unwrap();
    assert_eq!(h.disk_read.len(), 40);
    assert_eq!(h.read.iter().fold(0.0, f64::max), (40u64 << 20) as f64);
    assert_eq!(h.disk_read.max(), 20.0 * 20.0 * 131_072.0);
    for (w, hgt) in [(120, 40), (80, 24)] {
        let t = draw(&m, &v, w, hgt);
        let s = text(&t);
        assert!(s.contains("disk MB/s ⣿ read • write"), "{s}");
        assert!(s.contains("52.4") && s.contains("41.9"), "{s}");
        // The time axis says how far back the history goes; charts side
        // by side never touch ("now" then spaces, then the next label).
        assert!(s.contains("-39s"), "{s}");
        assert!(!s.contains("now-"), "{s}");
        assert!(s.contains("/dev/sda"), "{s}");
        insta::assert_snapshot!(format!("process_detail_{w}x{hgt}"), t.backend());
    }
}

#[test]
fn tree_view_puts_children_under_their_parent() {
    let mut m = common::model();
    // dd and the hostile name are children of systemd (1); the loop
    // worker's parent (kthreadd) is not listed: it is a root.
    for p in &mut m.procs {
        if matches!(p.raw.key.pid, 4242 | 31337) {
            p.raw.ppid = 1;
        }
    }
    let v = ViewState {
        tree: true,
        focus: Pane::Processes,
        ..Default::default()
    };
    let t = draw(&m, &v, 120, 40);
    let s = text(&t);
    let order: Vec<&str> = s
        .lines()
        .filter_map(|l| {
            ["[systemd]", "├─dd if=", "└─[evil", "[loop0 backing I/O]"]
                .into_iter()
                .find(|w| l.contains(w))
        })
        .collect();
    // Roots in the sort order (disk reads): the loop worker (2.05 MB/s),
    // then systemd (n/a sorts last), with its children under it in the
    // same order: dd (13.1 MB/s) above the writer (0 B/s).
    assert_eq!(
        order,
        ["[loop0 backing I/O]", "[systemd]", "├─dd if=", "└─[evil"],
        "{s}"
    );
    assert!(s.contains("[tree]"), "{s}");
    insta::assert_snapshot!("tree_view_120x40", t.backend());
}

#[test]
fn help_scrolls_when_it_does_not_fit() {
    let m = common::model();
    let mut v = ViewState {
        popup: Popup::Help,
        ..Default::default()
    };
    let top = text(&draw(&m, &v, 120, 40));
    assert!(top.contains("Keys · line 1 of") && top.contains("scroll"), "{top}");
    assert!(!top.contains("%LIMIT (cgroups)"), "{top}");
    // Scrolled past the end: drawn at the last page, the notes' last line
    // on it, the first key row scrolled away.
    v.help_offset = u16::MAX;
    let end = text(&draw(&m, &v, 120, 40));
    assert!(end.contains("%LIMIT (cgroups)"), "{end}");
    assert!(!end.contains("q, Ctrl-C"), "{end}");
    // Tall enough: no scrolling, no hint.
    let tall = text(&draw(&m, &ViewState { help_offset: 0, ..v }, 120, 60));
    assert!(tall.contains(" Keys ") && !tall.contains("scroll)"), "{tall}");
}

/// The fixture model with three findings (critical on sda, warning on
/// dd with an escape in its name, info on the system).
fn model_with_findings() -> Model {
    use iolens::model::findings::{Finding, Severity, Subject};
    let mut m = common::model();
    m.findings.set_findings(vec![
        Finding::example("io_errors", Severity::Critical, Subject::Device { name: "sda".into() }),
        Finding::example(
            "tiny_syscalls",
            Severity::Warning,
            Subject::Process {
                pid: 31337,
                comm: common::EVIL_COMM.into(),
            },
        ),
        Finding::example("io_stall", Severity::Info, Subject::System),
    ]);
    m
}

#[test]
fn findings_header_and_pane() {
    let m = model_with_findings();
    // The header's first line names the top finding in its severity's colour.
    let t = draw(&m, &ViewState::default(), 120, 40);
    insta::assert_snapshot!("findings_header_120x40", t.backend());
    let s = text(&t);
    let first = s.lines().next().unwrap();
    assert!(first.contains("CRITICAL io_errors sda"), "{first}");
    let x = first.find("CRITICAL").unwrap();
    let x = first[..x].chars().count() - 1;
    let cell = &t.backend().buffer()[(x as u16, 0)];
    assert_eq!(cell.fg, Theme::default().palette.crit, "critical is red");
    // Without findings it says so.
    let none = text(&draw(&common::model(), &ViewState::default(), 120, 40));
    assert!(none.lines().next().unwrap().contains("no findings"), "{none}");
    // The pane: every finding with its evidence, escaped, the second selected.
    let v = ViewState {
        popup: Popup::Findings(1),
        ..Default::default()
    };
    for (w, h) in [(120, 40), (80, 24)] {
        let t = draw(&m, &v, w, h);
        insta::assert_snapshot!(format!("findings_pane_{w}x{h}"), t.backend());
        let s = text(&t);
        assert!(s.contains("Findings (3)"), "{s}");
        assert!(
            s.contains("WARNING tiny_syscalls [process evil\\x1b[31mred\\x07 (PID 31337)]"),
            "{s}"
        );
        assert!(!s.contains('\x1b'), "{s}");
    }
    let s = text(&draw(&m, &v, 120, 40));
    assert!(
        s.contains("device latency p50: 20.4 ms  (traced requests (issue -> complete))"),
        "{s}"
    );
    assert!(s.contains("aqu-sz: n/a  (/proc/diskstats)"), "{s}");
    assert!(s.contains("next: press Enter for the device detail"), "{s}");
}

/// sda with a saved depth probe (the example's curve, 3 days old): the
/// detail says the basis is the probe's knee, and the last interval's
/// queue and IOPS against it, with the headroom marked as an estimate.
#[test]
fn detail_with_a_saved_depth_probe_shows_its_basis_and_headroom() {
    use iolens::model::saved::SavedProbes;
    let mut m = common::model();
    let mut r = iolens::probe::example::qd_result(iolens::probe::Status::Completed);
    r.started_unix = m.wall_ns / 1_000_000_000 - 3 * 86_400;
    if let Some(d) = r.device.as_mut() {
        d.name = "sda".into();
    }
    m.findings.saved = SavedProbes::from_text(&iolens::format::json(&r).unwrap());
    let curve = m.findings.saved.of("sda").unwrap().depth.clone().unwrap();
    let (knee, at_knee) = (curve.knee.unwrap(), curve.knee_iops().unwrap());
    let detail = ViewState {
        popup: Popup::Detail("sda".into()),
        focus: Pane::Devices,
        ..Default::default()
    };
    let t = draw(&m, &detail, 120, 40);
    insta::assert_snapshot!("detail_sda_saved_depth_120x40", t.backend());
    let s = text(&t);
    let sda = m.devices.iter().find(|d| d.name == "sda").unwrap();
    let rates = sda.rates.as_ref().unwrap();
    let iops = rates.read.ios_per_s + rates.write.ios_per_s;
    let has = |want: &str| assert!(s.contains(want), "{want:?} not in\n{s}");
    has(&format!("saturation      aqu-sz vs probe knee QD {knee}"));
    has("depth probe     4 KiB random reads, 3 d ago");
    has(&format!(
        "  knee          QD {knee}: {} IOPS",
        iolens::format::num(at_knee)
    ));
    has(&format!(
        "  now           QD {} of {knee}, {} IOPS",
        iolens::format::num(rates.aqu_sz),
        iolens::format::num(iops)
    ));
    has(&format!("  headroom      ≈{:.1}x the IOPS (estimate)", at_knee / iops));
    // A sweep that called its IOPS noisy says so.
    let mut noisy = r.clone();
    if let Some(q) = noisy.queue_depth_sweep.as_mut() {
        q.noise = vec!["the rate at QD1 varied 15% between 100 ms slices".into()];
    }
    m.findings.saved = SavedProbes::from_text(&iolens::format::json(&noisy).unwrap());
    let s = text(&draw(&m, &detail, 120, 40));
    let noisy_knee = format!(
        "  knee          QD {knee}: {} IOPS (noisy)",
        iolens::format::num(at_knee)
    );
    assert!(s.contains(&noisy_knee), "{s}");
    // Without a saved result: the rotating disk's %util, no curve.
    m.findings.saved = SavedProbes::default();
    let s = text(&draw(&m, &detail, 120, 40));
    assert!(
        s.contains("saturation      %util (a rotating disk)") && !s.contains("depth probe"),
        "{s}"
    );
    // An unreadable results file is said, escaped.
    m.findings.saved.error = Some("reading /x\x1b[2J/probes.jsonl: Permission denied".into());
    let s = text(&draw(&m, &detail, 120, 40));
    assert!(s.contains("saved probes    n/a: reading /x\\x1b[2J/pro"), "{s}");
}

/// %util is saturation on sda (a rotating disk, 95%: red) unless its saved
/// depth probe gained past QD 1 (then plain: the queue is the basis); a
/// probe that gained nothing past QD 1 keeps it red.
#[test]
fn util_colour_follows_the_saved_depth_probe() {
    use iolens::model::saved::{DepthCurve, SavedProbe, SavedProbes};
    let with = |points: Vec<(u32, f64)>, knee| {
        let mut m = common::model();
        let p = SavedProbe {
            device: "sda".into(),
            depth: Some(DepthCurve {
                points,
                knee: Some(knee),
                ..Default::default()
            }),
            ..Default::default()
        };
        m.findings.saved = SavedProbes {
            devices: [("sda".to_string(), p)].into(),
            error: None,
        };
        m
    };
    let util_fg = |m: &Model| {
        let t = draw(m, &ViewState::default(), 200, 60);
        let s = text(&t);
        let (y, line) = s.lines().enumerate().find(|(_, l)| l.contains("│sda ")).unwrap();
        let x = line[..line.find("95.0").unwrap()].chars().count() - 1;
        t.backend().buffer()[(x as u16, y as u16)].fg
    };
    assert_eq!(util_fg(&common::model()), Color::Red);
    assert_eq!(
        util_fg(&with(vec![(1, 150.0), (2, 250.0), (4, 400.0), (8, 410.0)], 4)),
        Color::Reset
    );
    assert_eq!(util_fg(&with(vec![(1, 150.0), (2, 152.0), (4, 151.0)], 1)), Color::Red);
}
