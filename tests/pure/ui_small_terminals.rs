//! The dashboard at 120x40 and 80x24 with long names (a long command
//! line, long file paths, a long device name) and a latency histogram that
//! spans more buckets than fit: every pane keeps the numbers it exists
//! for, long names end in "…", and the device detail's histogram shows the
//! bucket holding the p50 and says what it hides above and below.

use crate::common;

use iolens::collect::process::ProcKey;
use iolens::collect::trace::block::{BlockEvent, Dev, Kind, Rwbs};
use iolens::model::Model;
use iolens::model::progress::{Label, example_job, sort_jobs};
use iolens::model::trace::Accumulator;
use iolens::model::trace::view::TraceView;
use iolens::ui::{self, LogView, Pane, Popup, ReplayView, ViewState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

const SIZES: [(u16, u16); 2] = [(120, 40), (80, 24)];

/// A command line far wider than any terminal.
const LONG_CMD: &str = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java -Xmx8g -jar \
                        /opt/analytics-pipeline-ingest-service/lib/ingest-server.jar --data /srv/ingest";
/// A device name as long as kernel names get in practice.
const LONG_DEV: &str = "nvme10n1p15";

fn draw(model: &Model, view: &ViewState, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| ui::render(f, model, view)).unwrap();
    t.backend().to_string()
}

fn line<'a>(s: &'a str, has: &str) -> &'a str {
    s.lines()
        .find(|l| l.contains(has))
        .unwrap_or_else(|| panic!("no line with {has:?} in\n{s}"))
}

fn comm(s: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..s.len()].copy_from_slice(s.as_bytes());
    c
}

/// Device times of the traced reads on loop0 (ns, how many): fio-like, a
/// p50 of about 100 µs with fast and slow tails over 14 power-of-two
/// buckets; 170 of 737 below the p50's bucket.
const READS: [(u64, u64); 14] = [
    (3_000, 20),
    (6_000, 20),
    (12_000, 30),
    (24_000, 40),
    (48_000, 60),
    (93_000, 300),
    (200_000, 100),
    (400_000, 60),
    (800_000, 40),
    (1_600_000, 30),
    (3_200_000, 20),
    (6_400_000, 10),
    (12_800_000, 5),
    (25_000_000, 2),
];

/// The fixture model with long names: the dd process runs [`LONG_CMD`],
/// sdb is renamed [`LONG_DEV`] (and dd has a file there), eleven
/// transfers with long paths, and a traced interval on loop0: [`READS`]
/// (each waiting 10 µs in the queue) and 20 writes of 2 ms.
fn long_model() -> Model {
    let mut m = common::model();
    for d in &mut m.devices {
        if d.name == "sdb" {
            d.name = LONG_DEV.into();
        }
    }
    for p in &mut m.procs {
        if p.raw.key.pid == 4242 {
            p.raw.cmdline = LONG_CMD.into();
            let mut dev = p.devices[0].clone();
            dev.name = LONG_DEV.into();
            p.devices.push(dev);
        }
    }
    let mut jobs: Vec<_> = (0..11u64)
        .map(|i| {
            let path = format!("/srv/ingest/2026/11/23/partition-{i:02}/segment-000{i:02}-of-00011.parquet");
            let label = if i == 3 { Label::Growing } else { Label::Progress };
            example_job(
                5000 + i as i32,
                "java-ingest-worker",
                path.as_bytes(),
                (i + 1) * 700_000_000,
                12_000_000_000,
                (i as f64 + 1.0) * 10e6,
                label,
            )
        })
        .collect();
    sort_jobs(&mut jobs);
    m.progress.jobs = jobs;
    let loop0 = Dev { major: 7, minor: 0 };
    let ev = |ts: u64, kind: Kind, sector: u64, rwbs: &[u8]| BlockEvent {
        ts,
        kind,
        dev: loop0,
        sector,
        sectors: 8,
        rwbs: Rwbs::parse(rwbs),
        pid: 4242,
        comm: comm("java-ingest-wor"),
        error: 0,
        tgid: 4242,
        kernel: false,
    };
    let mut evs = Vec::new();
    let mut i = 0u64;
    let writes = [(2_000_000u64, 20u64)];
    for (op, set) in [(&b"R"[..], &READS[..]), (&b"W"[..], &writes[..])] {
        for &(dev_ns, n) in set {
            for _ in 0..n {
                let (t, sector) = (100_000_000 + i * 1_000_000, i * 1000);
                evs.extend([
                    ev(t, Kind::Start, sector, op),
                    ev(t + 10_000, Kind::Issue, sector, op),
                    ev(t + 10_000 + dev_ns, Kind::Complete, sector, op),
                ]);
                i += 1;
            }
        }
    }
    evs.sort_by_key(|e| e.ts);
    let mut t = Accumulator::default();
    t.feed(&evs);
    m.mono_ns = 1_500_000_000;
    m.apply_trace(TraceView {
        active: true,
        reason: None,
        interval: t.take_interval(),
        log: t.log().copied().collect(),
        files: Default::default(),
        dirty: Default::default(),
        cost: None,
    });
    m
}

#[test]
fn device_detail_latency_shows_the_p50_bucket_and_what_is_hidden() {
    let m = long_model();
    let d = m.trace.device(7, 0).expect("loop0 traced");
    assert_eq!(d.completed[0], 737);
    let p50 = d.latency[0].total.percentiles().unwrap().p50;
    // 170 faster, 300 at ~103 µs: the 369th is in the 300
    assert!((100_000..110_000).contains(&p50), "{p50}");
    // The bucket holding it: [65.5, 131) µs, drawn as "<132µs".
    assert_eq!(ui::latency::p50_bound(&d.latency[0]), Some(131_072));
    let v = ViewState {
        popup: Popup::Detail("loop0".into()),
        focus: Pane::Devices,
        ..Default::default()
    };
    for (w, h) in SIZES {
        let s = draw(&m, &v, w, h);
        insta::assert_snapshot!(format!("latency_detail_{w}x{h}"), s);
        // the summary keeps the count, the device and the total figures
        let sum = line(&s, "read 737");
        assert!(sum.contains("dev") && sum.contains("tot"), "{w}x{h}: {sum}");
        let tot = ui::latency::ms3(p50);
        assert!(sum.contains(&tot), "{w}x{h}: total p50 {tot} not in {sum}");
        // the row holding the p50, with its 300 requests
        let row = line(&s, "<132µs");
        assert!(row.matches(" 300 ").count() == 2, "{w}x{h}: {row}");
        // what is left out is said, above and below
        let hint = line(&s, "hidden: ↑");
        assert!(
            hint.contains("faster (") && hint.contains("↓") && hint.contains("↑↓ scroll"),
            "{w}x{h}: {hint}"
        );
        // the writes' summary is there too
        assert!(s.contains("write 20"), "{w}x{h}:\n{s}");
    }
    // Wide enough, the full labels.
    let s = draw(&m, &v, 200, 60);
    assert!(line(&s, "read 737 requests").contains("· device "), "{s}");
}

#[test]
fn device_detail_names_end_before_the_charts() {
    let m = long_model();
    let v = ViewState {
        popup: Popup::Detail("sda".into()),
        focus: Pane::Devices,
        ..Default::default()
    };
    for (w, h) in SIZES {
        let s = draw(&m, &v, w, h);
        insta::assert_snapshot!(format!("long_names_detail_{w}x{h}"), s);
        if w < 120 {
            // facts and partitions share half the height: what is left
            // out is counted
            // (the right column: 7 with its saturation basis line)
            let row = line(&s, "+7 more lines");
            assert_eq!(row.matches("+7 more lines").count(), 2, "{w}x{h}: {row}");
            continue;
        }
        let row = line(&s, "   4242 rd");
        assert!(row.contains("13.1 MB/s") && row.contains("…"), "{w}x{h}: {row}");
        // a blank cell between the name and whatever is drawn right of it
        let x = row.find('…').unwrap();
        assert!(row[x + '…'.len_utf8()..].starts_with(' '), "{w}x{h}: {row}");
    }
}

#[test]
fn every_pane_keeps_its_numbers_with_long_names() {
    use iolens::probe::ProbeMsg;
    use iolens::probe::example::result;
    let m = long_model();
    let mut v = ViewState::default();
    v.probe
        .start(format!("/dev/{LONG_DEV}"), "random read + zone sweep, quick".into());
    v.probe
        .apply(ProbeMsg::Finished(Box::new(result(iolens::probe::Status::Completed))));
    assert_eq!(
        v.panes(&m),
        [Pane::Devices, Pane::Progress, Pane::Results, Pane::Processes]
    );
    for (w, h) in SIZES {
        let s = draw(&m, &v, w, h);
        insta::assert_snapshot!(format!("long_names_panes_{w}x{h}"), s);
        // devices: the long name whole, its numbers under their headings
        let (head, dev) = (line(&s, "│Device"), line(&s, "│nvme"));
        assert!(dev.contains("│nvme10n1p15 "), "{w}x{h}: {dev}");
        let (head, dev): (Vec<char>, Vec<char>) = (head.chars().collect(), dev.chars().collect());
        for (col, v) in [("r/s", "0"), ("rMB/s", "0.00"), ("aqu-sz", "0.00"), ("%util", "0.0")] {
            let col: Vec<char> = col.chars().collect();
            let end = head.windows(col.len()).position(|c| c == col).unwrap() + col.len();
            let got: String = dev[end - v.len()..end].iter().collect();
            assert_eq!(got, v, "{w}x{h}: {col:?} in {dev:?}");
        }
        // transfers: the file gets the room (its name's end), the hidden
        // rows are counted
        let x = line(&s, "java-inge…");
        assert!(x.contains('%') && x.contains("MB/s"), "{w}x{h}: {x}");
        let file = x.split_whitespace().find(|w| w.ends_with(".parquet")).unwrap();
        assert!(
            file.chars().count() >= 30 && file.ends_with("-of-00011.parquet"),
            "{w}x{h}: FILE column {file:?} in {x}"
        );
        assert!(s.contains("more: ↓ or z"), "{w}x{h}:\n{s}");
        // probe results: the verdict
        assert!(s.contains("verdict: HDD"), "{w}x{h}:\n{s}");
        // processes: DEVICES stays, with the rates
        let head = line(&s, "DISK RD/s");
        assert!(head.contains("DEVICES") && head.contains("READ/s"), "{w}x{h}: {head}");
        if h < 40 {
            // 2 of the 4 processes fit
            assert!(line(&s, "Processes 4/4").contains("2 more: ↓ or z"), "{w}x{h}");
        }
        let dd = line(&s, "/usr/lib/jvm");
        assert!(
            dd.contains("13.1 MB/s") && dd.contains("41.9 MB/s") && dd.contains("loop0,sda"),
            "{w}x{h}: {dd}"
        );
    }
}

#[test]
fn request_log_keeps_the_three_times() {
    let m = long_model();
    let v = ViewState {
        focus: Pane::Requests,
        log: LogView {
            shown: true,
            ..Default::default()
        },
        ..Default::default()
    };
    for (w, h) in SIZES {
        let s = draw(&m, &v, w, h);
        let head = line(&s, "SECTOR");
        // the newest is the slowest read (25 ms on the device, 10 µs queued)
        let row = line(&s, "4242  R ");
        assert!(
            row.contains(" R ") && row.contains("0.010") && row.contains("25.0"),
            "{w}x{h}: {row}"
        );
        assert!(head.contains("TOT ms") || head.contains("TOTAL ms"), "{w}x{h}: {head}");
        let (head, row): (Vec<char>, Vec<char>) = (head.chars().collect(), row.chars().collect());
        let tot: Vec<char> = "ms".chars().collect();
        let end = head.windows(2).rposition(|c| c == tot).unwrap() + 2;
        let got: String = row[end - 4..end].iter().collect();
        assert_eq!(got, "25.0", "{w}x{h}: the total under its heading");
        insta::assert_snapshot!(format!("long_names_requests_{w}x{h}"), mask_clock(&s));
    }
}

/// The request log's time is local time: masked (the zone of the machine).
fn mask_clock(s: &str) -> String {
    s.lines()
        .map(|l| match l.find(|c: char| c.is_ascii_digit()) {
            Some(i) if l[i..].len() > 12 && l.as_bytes().get(i + 2) == Some(&b':') && l.contains("java") => {
                format!("{}hh:mm:ss.mmm{}", &l[..i], &l[i + 12..])
            }
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn header_and_hints_fit_80_and_120_columns() {
    let m = long_model();
    let live = ViewState::default();
    let replay = ViewState {
        replay: Some(ReplayView {
            time: "2026-11-23 03:10:20".into(),
            pos: 1234,
            total: 86_400,
            speed: 16.0,
            prompt: None,
        }),
        paused: true,
        ..Default::default()
    };
    for (w, h) in SIZES {
        for v in [&live, &replay] {
            let s = draw(&m, v, w, h);
            let lines: Vec<&str> = s.lines().collect();
            // The buffer's lines are quoted: '"' at both ends. A line that
            // fits ends in a blank or ends exactly at the edge with a
            // whole word; the figures the header exists for are all there.
            let l1 = lines[0];
            assert!(l1.contains("every 1.00s") && l1.contains("root"), "{w}: {l1}");
            // the host gives way to the replay's position at 80 columns
            assert_eq!(l1.contains("fixture-host"), w >= 120 || v.replay.is_none(), "{w}: {l1}");
            if v.replay.is_some() {
                assert!(
                    l1.contains("2026-11-23 03:10:20") && l1.contains("1234/86400") && l1.contains("PAUSED"),
                    "{w}: {l1}"
                );
            }
            // at 80 columns the last minute's writes give way
            let l4 = lines[3];
            let mut want = vec!["rd 13.1 MB/s", "wr 164 kB/s", "100%"];
            if w >= 120 {
                want.extend(["dirtied 1.64 MB (cancelled 819 kB)", "wrote 6.55 MB"]);
            }
            for want in want {
                assert!(l4.contains(want), "{w}: {want} not in {l4}");
            }
            // every line ends whole (line 3 ends in the error text, cut
            // with an ellipsis)
            for l in &lines[..4] {
                assert!(l.ends_with(" \"") || l.ends_with("…\""), "{w}: cut: {l}");
            }
            // the hints shown are whole ones
            let all = ui::keymap::hints(Pane::Processes, false, v.replay.is_some());
            let all: Vec<&str> = all.split("  ").collect();
            let shown = lines[h as usize - 1].trim_matches('"').trim_end();
            for hint in shown.split("  ") {
                assert!(all.contains(&hint), "{w}: {hint:?} is cut: {shown}");
            }
        }
        insta::assert_snapshot!(format!("replay_header_{w}x{h}"), draw(&m, &replay, w, h));
    }
}

#[test]
fn the_transfers_pane_says_how_many_rows_it_hides() {
    let m = long_model();
    let v = ViewState {
        focus: Pane::Progress,
        xfer_sel: Some(ProcKey {
            pid: 5010,
            start_time: 1,
        }),
        ..Default::default()
    };
    let s = draw(&m, &v, 80, 24);
    assert!(s.contains("Transfers (11) 10 more"), "{s}");
    assert!(s.contains("more: ↓ or z to maximise"), "{s}");
}

#[test]
fn help_lines_wrap_at_80_columns() {
    let m = long_model();
    let v = ViewState {
        popup: Popup::Help,
        help_offset: 4,
        ..Default::default()
    };
    let s = draw(&m, &v, 80, 24);
    insta::assert_snapshot!("help_80x24", s);
    // the Enter row's text goes on under its text, whole
    let enter = line(&s, " Enter ");
    let next = s.lines().skip_while(|l| !l.contains(" Enter ")).nth(1).unwrap();
    let text = format!("{} {}", enter.trim_matches(|c| c == '"' || c == '┃' || c == ' '), next);
    assert!(
        text.contains("detail of the device, cgroup") && next.contains("select its process"),
        "{enter}\n{next}"
    );
    // no line of the popup runs into its border
    for l in s.lines().filter(|l| l.matches('┃').count() == 2) {
        let inner = l.split('┃').nth(1).unwrap();
        assert!(inner.ends_with(' '), "cut: {l}");
    }
}

#[test]
fn arrows_scroll_the_latency_histogram_in_the_detail() {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use iolens::app::App;
    let key = |c| KeyEvent::new(c, KeyModifiers::NONE);
    let mut app = App::new(
        long_model(),
        ViewState {
            popup: Popup::Detail("loop0".into()),
            focus: Pane::Devices,
            ..Default::default()
        },
    );
    // 120x40: <66µs <132µs <263µs <525µs around the p50; three rows down
    // the p50's row is scrolled away and the slow ones come in.
    for _ in 0..3 {
        app.on_key(key(KeyCode::Down));
    }
    assert_eq!(app.view.lat_scroll, 3);
    let s = draw(&app.model, &app.view, 120, 40);
    assert!(!s.contains("<132µs") && s.contains("<4.2ms"), "{s}");
    assert!(line(&s, "hidden: ↑ 7 faster").contains("↓ 3 slower"), "{s}");
    // Up stops where the rows end (14 of them for the reads), Home is back
    for _ in 0..100 {
        app.on_key(key(KeyCode::Up));
    }
    assert_eq!(app.view.lat_scroll, -14);
    let s = draw(&app.model, &app.view, 120, 40);
    assert!(line(&s, "<4.1µs").contains(" 20 "), "{s}");
    app.on_key(key(KeyCode::Home));
    assert_eq!(app.view.lat_scroll, 0);
    assert!(draw(&app.model, &app.view, 120, 40).contains("<132µs"));
    // Esc closes the detail
    app.on_key(key(KeyCode::Esc));
    assert_eq!(app.view.popup, Popup::None);
}

#[test]
fn why_io_percent_is_unknown_stays_in_the_header() {
    let mut m = long_model();
    m.delayacct = Some(false);
    let l4 = |m: &Model, v: &ViewState, w: u16| draw(m, v, w, 24).lines().nth(3).unwrap().to_string();
    let v = ViewState::default();
    // at 120 columns the last minute's writes give way to it, at 80 its
    // short form stays
    let at120 = l4(&m, &v, 120);
    assert!(
        at120.contains("│ IO% n/a: delay accounting off (D turns it on)"),
        "{at120}"
    );
    let at80 = l4(&m, &v, 80);
    assert!(at80.contains("rd 13.1 MB/s") && at80.contains("│ IO% n/a"), "{at80}");
    // iolens turned it on: said as long as it fits
    m.delayacct = Some(true);
    let ours = ViewState {
        delayacct_ours: true,
        ..Default::default()
    };
    let at120 = l4(&m, &ours, 120);
    assert!(at120.contains("delay accounting on (restored at exit)"), "{at120}");
    // a plain "on" goes first
    let at120 = l4(&m, &v, 120);
    assert!(!at120.contains("delay") && at120.contains("wrote 6.55 MB"), "{at120}");
}

/// The long-names model with a dd job (pid 4242, 40 % of 2 GB at 40 MB/s)
/// whose processes include one of the transfers (5004).
fn job_model() -> Model {
    use iolens::model::jobs::Tool;
    use iolens::model::jobs::track::{JobInput, Seen, Total};
    let mut m = long_model();
    let key = m.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap().raw.key;
    let input = |pos: u64| JobInput {
        key: (key.pid, key.start_time),
        tool: Tool::Dd,
        command: LONG_CMD.into(),
        pids: vec![4242, 5004],
        position: Some(pos),
        total: Total::Known {
            files: 1,
            bytes: 2_000_000_000,
        },
        notes: vec![],
        current: None,
        files_done: None,
        files_why: Some("dd copies one device or file: no files to count".into()),
        age_ns: None,
        gone: false,
    };
    let seen = Seen { files: &[], fds: &[] };
    m.jobs.update(vec![input(760_000_000)], &seen, 1_000_000_000);
    m.jobs.update(vec![input(800_000_000)], &seen, 2_000_000_000);
    m
}

#[test]
fn a_job_leads_the_transfers_and_the_process_detail_shows_it() {
    let m = job_model();
    let key = m.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap().raw.key;
    for (w, h) in SIZES {
        let s = draw(&m, &ViewState::default(), w, h);
        insta::assert_snapshot!(format!("job_transfers_{w}x{h}"), s);
        // The job's row first, under the heading, with its own numbers;
        // its transfer folded under it; the others hidden and counted.
        let lines: Vec<&str> = s.lines().collect();
        let head = lines.iter().position(|l| l.contains("PROGRESS")).unwrap();
        let job = lines[head + 1];
        assert!(
            job.contains("dd job") && job.contains("40.0%") && job.contains("40.0 MB/s") && job.contains("30s"),
            "{w}x{h}: {job}"
        );
        if h >= 40 {
            assert!(lines[head + 2].contains("└ "), "{w}x{h}: {}", lines[head + 2]);
        }
        assert!(
            s.contains("Jobs (1) Transfers (11)") && s.contains("more: ↓ or z"),
            "{w}x{h}:\n{s}"
        );
        let v = ViewState {
            popup: Popup::Process(key),
            focus: Pane::Processes,
            ..Default::default()
        };
        let s = draw(&m, &v, w, h);
        assert!(
            s.contains("job: dd job of PID 4242: 40.0% (800 MB / 2.00 GB) 40.0 MB/s"),
            "{w}x{h}:\n{s}"
        );
    }
}
