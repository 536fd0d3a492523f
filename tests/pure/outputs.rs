//! Pins of what iolens prints outside the dashboard: the batch text and JSON
//! reports, the `iolens progress` text and JSON lines, and the probe report
//! (text and JSON). Taken on the code before the structure refactor of
//! issue 9, so that refactor provably changes nothing a user sees.
//!
//! The reports are built from deterministic inputs (the fixture model of
//! `common`, example jobs and the example probe result); the end-to-end runs
//! of the binary over a captured /proc and /sys tree replace only what
//! depends on the machine or the clock (host, kernel, interval, mono_ns).

use crate::common;

use std::process::Command;

use iolens::batch::TextStyle;
use iolens::model::progress::{Label, Transfer, example_job, sort_jobs};
use iolens::probe::Status;

/// The report's time line is the model's wall clock in RFC 3339 with this
/// machine's UTC offset: checked to be that instant, then pinned as `[time]`.
fn pin_time_line(m: &iolens::model::Model, text: String) -> String {
    let (first, rest) = text.split_once('\n').unwrap();
    assert_eq!(first, iolens::format::wall_time(m.wall_ns, true));
    let at: jiff::Timestamp = first.parse().unwrap();
    assert_eq!(at.as_second(), (m.wall_ns / 1_000_000_000) as i64, "{first}");
    format!("[time]\n{rest}")
}

/// The JSON `time` field: the instant of `unix_ns` to the millisecond, with
/// an offset; pinned as `[time]` (the offset is this machine's).
fn pin_time_field(v: &mut serde_json::Value) {
    let time = v["time"].as_str().unwrap().to_string();
    let at: jiff::Timestamp = time.parse().unwrap();
    let ns = v["unix_ns"].as_u64().unwrap();
    assert_eq!(at.as_millisecond(), (ns / 1_000_000) as i64, "{time}");
    assert!(time.len() == "2026-11-23T16:20:01.123+00:00".len(), "{time}");
    v["time"] = serde_json::Value::String("[time]".into());
}

#[test]
fn batch_text_report() {
    let m = common::model();
    insta::assert_snapshot!(
        "batch_text_top10",
        pin_time_line(&m, iolens::batch::text_report(&m, 10))
    );
    insta::assert_snapshot!("batch_text_top1", pin_time_line(&m, iolens::batch::text_report(&m, 1)));
    // --wide: the full iostat -x device columns and the process io%.
    let wide = TextStyle {
        wide: true,
        ..Default::default()
    };
    insta::assert_snapshot!(
        "batch_text_wide",
        pin_time_line(&m, iolens::batch::text_report_in(&m, 10, wide))
    );
    // Why io% is n/a is said where the column is shown.
    let mut off = m.clone();
    off.delayacct = Some(false);
    let note = "io% n/a: delay accounting is off";
    assert!(iolens::batch::text_report_in(&off, 10, wide).contains(note));
    assert!(!iolens::batch::text_report(&off, 10).contains(note));
}

/// For scripts: `--units raw` (plain bytes and bytes/s, one word per
/// heading), `--top 0` (no process section) and CSV of both tables.
#[test]
fn batch_raw_units_top0_and_csv() {
    use iolens::batch::{csv, text_report_in};
    use iolens::cli::{CsvTable, Units};
    let m = common::model();
    let raw = |wide| TextStyle {
        units: Units::Raw,
        wide,
    };
    insta::assert_snapshot!("batch_text_raw", pin_time_line(&m, text_report_in(&m, 10, raw(false))));
    insta::assert_snapshot!(
        "batch_text_raw_wide",
        pin_time_line(&m, text_report_in(&m, 10, raw(true)))
    );
    let none = text_report_in(&m, 0, TextStyle::default());
    assert!(!none.contains("command") && !none.contains("attribution"), "{none}");
    assert_eq!(
        none.lines().next(),
        iolens::batch::text_report(&m, 10).lines().next(),
        "same header line"
    );
    let start = m.mono_ns - 2_000_000_000;
    let dev = csv::header(CsvTable::Devices) + &csv::rows(&m, CsvTable::Devices, 10, start);
    insta::assert_snapshot!("batch_csv_devices", dev);
    let procs = csv::header(CsvTable::Processes) + &csv::rows(&m, CsvTable::Processes, 10, start);
    insta::assert_snapshot!("batch_csv_processes", procs);
    // Every row has as many fields as the header (no field holds a comma
    // here), and numbers are plain.
    for text in [&dev, &procs] {
        let n = text.lines().next().unwrap().split(',').count();
        for l in text.lines() {
            assert_eq!(l.split(',').count(), n, "{l}");
            assert!(!l.contains("MB/s") && !l.contains("kB/s"), "{l}");
        }
    }
}

/// The lines of a text report that are prose (an explanation, not a table
/// row or a header line): not bound in width.
const PROSE: [&str; 6] = ["alignment:", "attribution:", "warning:", "note:", "(", "io% n/a:"];

/// The default text report fits a normal terminal: the device table at most
/// 120 columns before the mount point, every other line at most 132 before
/// its free-text last column (a process's devices and command, a cgroup's
/// path), prose lines apart. And nothing overflows its column: every row
/// has the header's fields where the header has them, so `awk '{print
/// $N}'` reads one column in every row. Returns how many device and
/// process rows were checked.
fn check_default_width(text: &str) -> (usize, usize) {
    #[derive(PartialEq)]
    enum In {
        Other,
        Devices { pat: usize, mount: usize, fields: usize },
        Procs { devices: usize },
        Cgroups,
    }
    let mut at = In::Other;
    let (mut devs, mut procs) = (0, 0);
    for l in text.lines() {
        let chars: Vec<char> = l.chars().collect();
        let col = |s: &str| l[..l.rfind(s).unwrap()].chars().count();
        if l.starts_with("Device ") && l.ends_with(" mount") {
            let (pat, mount) = (col(" pat ") + 1, col(" mount") + 1);
            assert!(
                mount - 1 <= 120,
                "device table {} columns before the mount: {l}",
                mount - 1
            );
            let fields = l[..l.rfind(" pat ").unwrap()].split_whitespace().count();
            at = In::Devices { pat, mount, fields };
            continue;
        }
        if l.trim_start().starts_with("PID ") && l.ends_with(" command") {
            assert!(col(" command") <= 132, "process table: {l}");
            at = In::Procs {
                devices: col(" devices") + 1,
            };
            continue;
        }
        if l.starts_with("cgroup ") && l.ends_with(" path") {
            assert!(col(" path") <= 132, "cgroup table: {l}");
            at = In::Cgroups;
            continue;
        }
        if l.is_empty() || PROSE.iter().any(|p| l.starts_with(p)) {
            if l.is_empty() || l.starts_with("attribution:") {
                at = In::Other;
            }
            continue;
        }
        match at {
            In::Devices { pat, mount, fields } if !l.starts_with("disks rd ") => {
                if l.contains(" n/a (") {
                    continue; // first sample, re-baselined
                }
                devs += 1;
                assert!(chars.len() >= mount, "{l}");
                assert!(
                    chars[pat - 1] == ' ' && chars[mount - 1] == ' ',
                    "a column overflowed: {l}"
                );
                let before_pat: String = chars[..pat].iter().collect();
                assert_eq!(before_pat.split_whitespace().count(), fields, "{l}");
            }
            In::Procs { devices } => {
                procs += 1;
                assert!(
                    chars.len() > devices && chars[devices - 1] == ' ',
                    "a column overflowed: {l}"
                );
            }
            In::Cgroups => {}
            _ => {
                at = In::Other;
                assert!(chars.len() <= 132, "{} columns: {l}", chars.len());
            }
        }
    }
    (devs, procs)
}

/// On this machine's real devices and processes (two samples 0.3 s
/// apart, through the functions the binary uses), on the fixture model and
/// on the binary over a captured tree, in both units.
#[test]
fn batch_text_default_fits_a_terminal() {
    use iolens::cli::Units;
    let mut collector = iolens::collect::Collector::new("/");
    let mut live = iolens::model::Model::new(iolens::collect::sample::HostInfo::read(), iolens::session::clk_tck());
    live.update(collector.sample());
    std::thread::sleep(std::time::Duration::from_millis(300));
    live.update(collector.sample());
    let fixture = common::model();
    for units in [Units::Human, Units::Raw] {
        let style = TextStyle { units, wide: false };
        let text = iolens::batch::text_report_in(&live, 10, style);
        let (devs, procs) = check_default_width(&text);
        // This machine has a disk, and iolens reading /proc is a process doing I/O.
        assert!(
            devs >= 2 && procs >= 1,
            "{devs} device rows, {procs} process rows:\n{text}"
        );
        let text = iolens::batch::text_report_in(&fixture, 10, style);
        assert_eq!(check_default_width(&text), (7, 3), "{text}");
        // The wide set is the full one, and wider than the terminal.
        let wide = iolens::batch::text_report_in(&fixture, 10, TextStyle { units, wide: true });
        let head = wide.lines().find(|l| l.starts_with("Device ")).unwrap();
        assert!(
            head.contains(" drqm/s ") && head.contains(" f_await ") && head.len() > 200,
            "{head}"
        );
    }
    let out = iolens(&[
        "--root",
        common::FIXTURE,
        "--batch",
        "--count",
        "1",
        "--interval",
        "0.05",
    ]);
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(check_default_width(&text).0 > 0, "{text}");
}

#[test]
fn batch_text_first_interval_and_not_root() {
    // One interval: every device has rates; not root: the hidden line shows.
    let mut m = common::model_after(1);
    m.host.is_root = false;
    m.hidden = 3;
    m.denied = 2;
    m.errors.push("reading /proc/x: \x1b[2Jgone".into());
    insta::assert_snapshot!(
        "batch_text_not_root",
        pin_time_line(&m, iolens::batch::text_report(&m, 10))
    );
}

#[test]
fn batch_json_report() {
    let m = common::model();
    let mut v = iolens::batch::json_report(&m, 10);
    // What `--json` prints: one compact line per interval.
    let line = v.to_string();
    assert!(!line.contains('\n'));
    assert_eq!(serde_json::from_str::<serde_json::Value>(&line).unwrap(), v);
    pin_time_field(&mut v);
    insta::assert_snapshot!("batch_json", serde_json::to_string_pretty(&v).unwrap());
}

/// Findings in the batch text and JSON: the JSON object is the one
/// `iolens why --json` prints, the text block the one `why` prints.
#[test]
fn batch_findings_text_and_json() {
    use iolens::model::findings::{Finding, Severity, Subject};
    let mut m = common::model();
    assert_eq!(iolens::batch::json_report(&m, 0)["findings"], serde_json::json!([]));
    let plain = iolens::batch::text_report(&m, 0);
    let found = vec![
        Finding::example("slow_device", Severity::Warning, Subject::Device { name: "sda".into() }),
        Finding::example(
            "tiny_syscalls",
            Severity::Info,
            Subject::Process {
                pid: 4242,
                comm: common::EVIL_COMM.into(),
            },
        ),
    ];
    m.findings.set_findings(found.clone());
    let v = iolens::batch::json_report(&m, 0);
    let why = iolens::batch::why::json_report(&found, 5, None);
    assert_eq!(v["findings"], why["findings"]);
    let f = &v["findings"][0];
    assert_eq!(f["rule"], "slow_device");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["subject"], serde_json::json!({"kind": "device", "name": "sda"}));
    assert_eq!(f["evidence"][0]["value"], 20.4);
    assert!(f["evidence"][1]["value"].is_null());
    assert_eq!(f["next"], "press Enter for the device detail");
    assert_eq!(
        v["findings"][1]["subject"]["name"],
        format!("{} (PID 4242)", common::EVIL_COMM)
    );
    let text = iolens::batch::text_report(&m, 0);
    let (head, _) = plain.split_at(plain.find("Device").unwrap_or(plain.len()));
    let block = iolens::batch::why::text_report(&found, None);
    assert!(text.starts_with(&format!("{head}{block}")), "{text}");
    assert!(
        block.starts_with("WARNING slow_device [device sda]: requests take 20.4 ms"),
        "{block}"
    );
    assert!(block.contains(
        "    device latency p50: 20.4 ms  (traced requests (issue -> complete))\n    aqu-sz: n/a  (/proc/diskstats)\n"
    ));
    assert!(!text.contains('\x1b'), "escaped: {text}");
}

fn jobs() -> Vec<iolens::model::progress::Job> {
    let mut copy = example_job(
        4242,
        "tar",
        b"/srv/backup/db.dump",
        4_100_000,
        47_700_000,
        2_000_000.0,
        Label::Progress,
    );
    copy.files_seen_closed = 3;
    let mut out = example_job(
        4242,
        "tar",
        b"/mnt/usb/db.tar",
        4_000_000,
        4_000_000,
        2_000_000.0,
        Label::Growing,
    );
    out.main.key.fd = 4;
    out.main.size = None;
    out.main.percent = None;
    copy.others.push(out.main);
    let mut jobs = vec![
        copy,
        example_job(
            77,
            "evil\x1b[31m",
            b"/tmp/\x1b]0;pwned\x07name",
            10,
            100,
            1.0,
            Label::Stalled { seconds: 4 },
        ),
        example_job(
            88,
            "postgres",
            b"/var/lib/pg/base/1",
            0,
            8192,
            512_000.0,
            Label::Positional,
        ),
        example_job(99, "cp", b"/data/iso", 600, 500, 0.0, Label::Truncated),
        example_job(
            100,
            "dd",
            b"/dev/sdb",
            1 << 30,
            1 << 30,
            0.0,
            Label::Done { complete: true },
        ),
        example_job(
            101,
            "rsync",
            b"/data/x",
            10,
            1 << 30,
            0.0,
            Label::Done { complete: false },
        ),
        // Last seen at 85.3 %, and its rate reached the end before it was
        // seen gone.
        example_job(102, "pv", b"/data/y", 853, 1000, 0.0, Label::Done { complete: true }),
    ];
    sort_jobs(&mut jobs);
    jobs
}

#[test]
fn progress_text_and_json() {
    let jobs = jobs();
    insta::assert_snapshot!("progress_text", iolens::batch::progress::report(&jobs));
    let lines: String = jobs.iter().map(|j| serde_json::to_string(j).unwrap() + "\n").collect();
    insta::assert_snapshot!("progress_json", lines);
    let t: &Transfer = &jobs[0].main;
    assert_eq!(
        iolens::batch::progress::transfer_line(t),
        iolens::batch::progress::report(&jobs[..1])
            .lines()
            .nth(1)
            .unwrap()
            .trim_start()
    );
}

#[test]
fn probe_report_text_and_json() {
    for (name, status) in [("completed", Status::Completed), ("cancelled", Status::Cancelled)] {
        let r = iolens::probe::example::result(status);
        insta::assert_snapshot!(format!("probe_text_{name}"), iolens::probe::cmd::report(&r));
        let v = serde_json::to_value(&r).unwrap();
        insta::assert_snapshot!(format!("probe_json_{name}"), serde_json::to_string_pretty(&v).unwrap());
    }
}

#[test]
fn capacity_probe_reports() {
    use iolens::probe::example_capacity as e;
    for (name, r) in [
        ("align", e::align_result()),
        ("size", e::size_result()),
        ("seek", e::seek_result()),
    ] {
        insta::assert_snapshot!(format!("probe_text_{name}"), iolens::probe::cmd::report(&r));
    }
}

fn iolens(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_iolens"))
        .args(args)
        .env_remove("NO_COLOR")
        // an empty config file: the defaults, whatever the user's config says
        .env("IOLENS_CONFIG", "/dev/null")
        .output()
        .expect("running the iolens binary")
}

/// The binary over a captured tree: counters do not move between samples, so
/// every rate is 0 and the report is fixed once host, kernel and interval
/// (which depend on this machine and its clock) are replaced.
#[test]
fn batch_binary_over_captured_tree() {
    // 0.5 s: at 0.05 s a sample later than 150 ms (a loaded machine, the
    // first run of a new binary) makes a "late" report instead of the
    // snapshot's.
    let out = iolens(&[
        "--root",
        common::FIXTURE,
        "--batch",
        "--count",
        "2",
        "--interval",
        "0.5",
    ]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let now = jiff::Timestamp::now();
    let redacted: String = text
        .lines()
        .map(|l| match l.find("  interval ") {
            // The wall-clock line of each report: now, give or take a minute.
            _ if l
                .parse::<jiff::Timestamp>()
                .is_ok_and(|t| (t - now).as_secs().abs() < 60) =>
            {
                "[time]\n".to_string()
            }
            Some(i) if !l.starts_with(' ') => {
                let rest = &l[i + "  interval ".len()..];
                let after = rest.find(' ').map_or("", |j| &rest[j..]);
                format!("[host kernel]  interval [s]{after}\n")
            }
            // The dirtied-bytes window is the run's length so far (whole
            // seconds: 0 or 1 with the first start of a new binary).
            _ if l.starts_with("last ") && l.contains("s: processes dirtied") => {
                format!("last [s]:{}\n", l.split_once("s:").map_or("", |(_, r)| r))
            }
            _ => format!("{l}\n"),
        })
        .collect();
    insta::assert_snapshot!("batch_binary_text", redacted);

    let out = iolens(&["--root", common::FIXTURE, "--json", "--count", "1", "--interval", "0.5"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    pin_time_field(&mut v);
    let unix_s = v["unix_ns"].as_u64().unwrap() as f64 / 1e9;
    assert!((unix_s - jiff::Timestamp::now().as_second() as f64).abs() < 60.0, "{v}");
    for k in ["host", "kernel", "mono_ns", "unix_ns"] {
        assert!(v.get(k).is_some(), "{k} missing");
        v[k] = serde_json::Value::String(format!("[{k}]"));
    }
    assert!(redact_intervals(&mut v) > 1, "no interval_s found");
    insta::assert_snapshot!("batch_binary_json", serde_json::to_string_pretty(&v).unwrap());
}

/// Replace every `interval_s` and `write_window_s` (measured by the clock)
/// in `v`; how many.
fn redact_intervals(v: &mut serde_json::Value) -> usize {
    match v {
        serde_json::Value::Object(m) => m
            .iter_mut()
            .map(|(k, v)| {
                if k == "interval_s" || k == "write_window_s" {
                    *v = serde_json::Value::String(format!("[{k}]"));
                    1
                } else {
                    redact_intervals(v)
                }
            })
            .sum(),
        serde_json::Value::Array(a) => a.iter_mut().map(redact_intervals).sum(),
        _ => 0,
    }
}

/// A command line holding a backslash, a comma, a quote, a newline and an
/// ESC: its CSV field, read back by Python's `csv` module, is the text
/// output's value (escaped once), and the row keeps its number of fields.
#[test]
fn csv_fields_read_back_as_the_text_output_shows_them() {
    use iolens::batch::csv;
    use iolens::cli::CsvTable;
    if std::process::Command::new("python3").arg("-V").output().is_err() {
        eprintln!("skipped: python3 is not installed");
        return;
    }
    let mut m = common::model();
    let row = m.procs.iter_mut().find(|p| p.raw.key.pid == 4242).unwrap();
    row.raw.cmdline = "dd if=a\\b,c \"q\"\nnext\x1b[2J".into();
    let want = iolens::ui::processes::command(row);
    assert_eq!(want, "dd if=a\\\\b,c \"q\"\\nnext\\x1b[2J");
    let text = csv::header(CsvTable::Processes) + &csv::rows(&m, CsvTable::Processes, 10, 0);
    let mut py = std::process::Command::new("python3")
        .args([
            "-c",
            "import csv,json,sys; print(json.dumps(list(csv.reader(sys.stdin))))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut py.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(out.status.success());
    let rows: Vec<Vec<String>> = serde_json::from_slice(&out.stdout).unwrap();
    let n = rows[0].len();
    assert!(rows.iter().all(|r| r.len() == n), "{rows:?}");
    let dd = rows.iter().find(|r| r[1] == "4242").unwrap();
    assert_eq!(dd[n - 1], want);
    let evil = rows.iter().find(|r| r[1] == "31337").unwrap();
    assert_eq!(evil[n - 1], "[evil\\x1b[31mred\\x07]", "escaped once");
}

/// B/SYSCALL is (rchar + wchar) / (syscr + syscw) in every output: a
/// process reading 1000 B in 10 calls and writing 3000 B in 10 calls moves
/// 200 B per call (not the 100 B of its reads alone).
#[test]
fn bytes_per_syscall_agree_across_outputs() {
    use iolens::batch::{csv, text_report_in};
    use iolens::cli::{CsvTable, Units};
    let mut m = common::model();
    let row = m.procs.iter_mut().find(|p| p.raw.key.pid == 4242).unwrap();
    let r = std::sync::Arc::make_mut(row.rates.as_mut().unwrap());
    (r.rchar_bps, r.syscr_per_s, r.avg_read) = (1000.0, 10.0, Some(100.0));
    (r.wchar_bps, r.syscw_per_s, r.avg_write) = (3000.0, 10.0, Some(300.0));
    let dd = m.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap();
    let dash = iolens::ui::viewmodel::nums(dd, false).unwrap().avg_syscall;
    assert_eq!(dash, Some(200.0));
    let rows = csv::header(CsvTable::Processes) + &csv::rows(&m, CsvTable::Processes, 10, 0);
    let head: Vec<&str> = rows.lines().next().unwrap().split(',').collect();
    let at = head.iter().position(|h| *h == "B/sysc").unwrap();
    let line = rows.lines().find(|l| l.split(',').nth(1) == Some("4242")).unwrap();
    assert_eq!(line.split(',').nth(at), Some("200"), "{rows}");
    let style = TextStyle {
        units: Units::Raw,
        wide: false,
    };
    let text = text_report_in(&m, 10, style);
    let heads = text.lines().find(|l| l.trim_start().starts_with("PID ")).unwrap();
    let at = heads.split_whitespace().position(|h| h == "B/sysc").unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("4242"))
        .unwrap();
    assert_eq!(line.split_whitespace().nth(at), Some("200"), "{text}");
}

/// The names the process table records for JSON and the exporter are the
/// ones those outputs use (public interfaces, not generated from the table).
#[test]
fn process_table_json_and_metric_names_are_the_outputs_names() {
    use iolens::present::process::ProcCol;
    let mut m = common::model();
    // The dirty-throttle counters exist once the throttle is traced.
    common::trace_dirty(&mut m, 4242, 3, 250, 120);
    let json = iolens::batch::json_report(&m, 10);
    let proc0 = &json["processes"][0];
    let mut e = iolens::export::metrics::Exported::new(1);
    e.update(&m, 0.004);
    let om = e.openmetrics();
    for c in ProcCol::ALL {
        for name in c.def().json {
            let v = match name.strip_prefix("rates.") {
                Some(f) => proc0["rates"].get(f),
                None => proc0.get(name),
            };
            assert!(v.is_some(), "{c:?}: no JSON field {name} in {proc0}");
        }
        for name in c.def().metric {
            assert!(
                om.contains(&format!("# TYPE iolens_{name} counter")),
                "{c:?}: no metric {name} in {om}"
            );
        }
    }
}

/// The dirty throttle's figures per process, traced, in every output: dd
/// (4242) paused 250 ms in 3 pauses (longest 120) of the 1 s interval is
/// 25% in the JSON, the wide batch text, the CSV, the dashboard's column
/// and the process detail, and 0.25 s and 3 pauses in the exporter; a
/// process not paused shows 0; untraced, every output says n/a (JSON
/// null, no exporter series), never 0.
#[test]
fn dirty_throttle_figures_in_every_output() {
    use iolens::batch::{csv, text_report_in};
    use iolens::cli::{CsvTable, Units};
    use iolens::present::process::ProcCol;
    let mut m = common::model();
    let untraced = m.clone();
    common::trace_dirty(&mut m, 4242, 3, 250, 120);
    let proc_json = |m: &iolens::model::Model, pid: i64| {
        let json = iolens::batch::json_report(m, 10);
        let p = json["processes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["pid"] == pid)
            .cloned();
        p.unwrap()["rates"].clone()
    };
    let r = proc_json(&m, 4242);
    assert_eq!(
        (
            &r["dirty_paused_pct"],
            &r["dirty_paused_ms"],
            &r["dirty_pauses"],
            &r["dirty_max_pause_ms"]
        ),
        (
            &serde_json::json!(25.0),
            &serde_json::json!(250),
            &serde_json::json!(3),
            &serde_json::json!(120)
        ),
        "{r}"
    );
    let others: Vec<i64> = iolens::batch::json_report(&m, 10)["processes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["pid"] != 4242 && !p["rates"].is_null())
        .map(|p| p["rates"]["dirty_pauses"].as_i64().unwrap())
        .collect();
    assert!(!others.is_empty() && others.iter().all(|n| *n == 0), "{others:?}");
    let r = proc_json(&untraced, 4242);
    for f in [
        "dirty_paused_pct",
        "dirty_paused_ms",
        "dirty_pauses",
        "dirty_max_pause_ms",
    ] {
        assert!(r[f].is_null(), "{f}: {r}");
    }
    // The wide batch text and the CSV: the column, 25 for dd.
    let cell = |text: &str, head: &str| {
        let mut lines = text
            .lines()
            .skip_while(|l| !(l.trim_start().starts_with("PID ") && l.contains(head)));
        let Some(heads) = lines.next() else {
            panic!("no {head} in {text}");
        };
        let at = heads.split_whitespace().position(|h| h == head).unwrap();
        let line = lines.find(|l| l.split_whitespace().next() == Some("4242")).unwrap();
        line.split_whitespace().nth(at).unwrap().to_string()
    };
    let raw_wide = TextStyle {
        units: Units::Raw,
        wide: true,
    };
    let head = ProcCol::DirtyPaused.def().raw_head;
    assert_eq!(cell(&text_report_in(&m, 10, raw_wide), head), "25");
    assert_eq!(cell(&text_report_in(&untraced, 10, raw_wide), head), "n/a");
    let narrow = text_report_in(&m, 10, TextStyle::default());
    assert!(!narrow.contains(ProcCol::DirtyPaused.def().text_head), "{narrow}");
    let rows = csv::header(CsvTable::Processes) + &csv::rows(&m, CsvTable::Processes, 10, 0);
    let at = rows
        .lines()
        .next()
        .unwrap()
        .split(',')
        .position(|h| h == ProcCol::DirtyPaused.def().csv_head);
    let line = rows.lines().find(|l| l.split(',').nth(1) == Some("4242")).unwrap();
    assert_eq!(line.split(',').nth(at.unwrap()), Some("25.0"), "{rows}");
    // The dashboard's cell and the process detail.
    let dd = m.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap();
    let n = iolens::ui::viewmodel::nums(dd, false).unwrap();
    assert_eq!(ProcCol::DirtyPaused.pane_text(dd, Some(&n), false), "25");
    let un = untraced.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap();
    let n = iolens::ui::viewmodel::nums(un, false).unwrap();
    assert_eq!(ProcCol::DirtyPaused.pane_text(un, Some(&n), false), "n/a");
    let detail = |m: &iolens::model::Model| {
        let key = m.procs.iter().find(|p| p.raw.key.pid == 4242).unwrap().raw.key;
        iolens::ui::procdetail::head_lines(m, None, key)
            .iter()
            .map(|l| l.to_string())
            .find(|l| l.starts_with("dirty throttle: "))
            .unwrap()
    };
    assert_eq!(
        detail(&m),
        "dirty throttle: paused 25% of the interval (250 ms in 3 pauses, longest 120 ms; traced balance_dirty_pages)"
    );
    assert!(
        detail(&untraced).starts_with("dirty throttle: n/a ("),
        "{}",
        detail(&untraced)
    );
    // The exporter: dd's command, exact; no series untraced.
    let mut e = iolens::export::metrics::Exported::new(10);
    e.update(&m, 0.004);
    let om = e.openmetrics();
    assert!(
        om.contains("iolens_process_dirty_paused_seconds_total{comm=\"dd\"} 0.25\n"),
        "{om}"
    );
    assert!(
        om.contains("iolens_process_dirty_pauses_total{comm=\"dd\"} 3.0\n"),
        "{om}"
    );
    let mut e = iolens::export::metrics::Exported::new(10);
    e.update(&untraced, 0.004);
    assert!(!e.openmetrics().contains("dirty_pause"), "{}", e.openmetrics());
}
