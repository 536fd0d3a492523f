//! The exporter's accumulation and encoding on the fixture model: the
//! per-command series add up to the processes' I/O, the top N get their
//! own series, and the text format is what Prometheus's parser expects.

use crate::common;

use iolens::export::metrics::{Exported, OTHER, text_format};

fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.parse().ok())
}

#[test]
fn per_command_series_add_up_and_the_busiest_gets_its_own() {
    let m = common::model();
    let dt = m.interval_s.unwrap();
    let mut e = Exported::new(1);
    e.update(&m, 0.004);
    let om = e.openmetrics();
    assert!(om.ends_with("# EOF\n"), "{om}");
    // The busiest command by storage bytes has the one series.
    let busiest = m
        .procs
        .iter()
        .filter_map(|p| Some((p, p.rates.as_deref()?)))
        .filter(|(p, _)| p.worker.is_none())
        .max_by(|a, b| (a.1.read_bps + a.1.write_bps).total_cmp(&(b.1.read_bps + b.1.write_bps)))
        .map(|(p, _)| p.raw.comm.clone())
        .unwrap();
    assert_eq!(e.exported_comms(), vec![&*busiest], "{om}");
    let want: f64 = m
        .procs
        .iter()
        .filter_map(|p| p.rates.as_deref())
        .map(|r| r.read_bps * dt)
        .sum();
    let own: f64 = m
        .procs
        .iter()
        .filter(|p| p.raw.comm == busiest && p.worker.is_none())
        .filter_map(|p| p.rates.as_deref())
        .map(|r| r.read_bps * dt)
        .sum();
    let got_own = value(&om, &format!("iolens_process_read_bytes_total{{comm=\"{busiest}\"}}")).unwrap();
    let got_other = value(&om, &format!("iolens_process_read_bytes_total{{comm=\"{OTHER}\"}}")).unwrap();
    assert!((got_own - own).abs() < 1e-6 * want.max(1.0), "{got_own} vs {own}");
    assert!((got_own + got_other - want).abs() < 1e-6 * want.max(1.0));
    assert!(want > 0.0);
    // A second interval adds to the counters, never resets them.
    e.update(&m, 0.004);
    let om2 = e.openmetrics();
    let again = value(&om2, &format!("iolens_process_read_bytes_total{{comm=\"{busiest}\"}}")).unwrap();
    assert!((again - 2.0 * own).abs() < 1e-6 * want.max(1.0), "{again}");
    assert_eq!(value(&om2, "iolens_samples_total"), Some(2.0));
    assert_eq!(value(&om2, "iolens_sample_duration_seconds"), Some(0.004));
    assert_eq!(
        value(&om2, "iolens_last_sample_timestamp_seconds"),
        Some(m.wall_ns as f64 / 1e9)
    );
}

#[test]
fn text_format_names_counter_families_by_their_samples() {
    let om = "# HELP iolens_samples Samples taken.\n# TYPE iolens_samples counter\niolens_samples_total 3\n\
              # HELP iolens_sample_duration_seconds How long.\n# TYPE iolens_sample_duration_seconds gauge\n\
              # UNIT iolens_sample_duration_seconds seconds\niolens_sample_duration_seconds 0.5\n# EOF\n";
    assert_eq!(
        text_format(om),
        "# HELP iolens_samples_total Samples taken.\n# TYPE iolens_samples_total counter\niolens_samples_total 3\n\
         # HELP iolens_sample_duration_seconds How long.\n# TYPE iolens_sample_duration_seconds gauge\n\
         iolens_sample_duration_seconds 0.5\n"
    );
}

/// The traced counters per device: requests and bytes, all and
/// sequential (the bytes' share is what the pattern column shows).
#[test]
fn traced_requests_and_bytes() {
    let mut m = common::model();
    common::trace_loop0_mixed(&mut m);
    let mut e = Exported::new(1);
    e.update(&m, 0.004);
    e.update(&m, 0.004);
    let om = e.openmetrics();
    let v = |name: &str| value(&om, &format!("iolens_{name}_total{{device=\"loop0\"}}"));
    assert_eq!(v("traced_requests"), Some(84.0), "{om}");
    assert_eq!(v("traced_sequential_requests"), Some(4.0));
    assert_eq!(v("traced_bytes"), Some(2.0 * ((2 << 20) + 40 * 4096) as f64));
    assert_eq!(v("traced_sequential_bytes"), Some(2.0 * (2 << 20) as f64));
}

/// The traced share of the last interval: 1 when whole, the share while
/// the tracer's budget traced in windows (its counters are scaled
/// estimates), no series at all while tracing is off.
#[test]
fn trace_share_gauge() {
    let mut m = common::model();
    common::trace_loop0_mixed(&mut m);
    let mut e = Exported::new(1);
    e.update(&m, 0.004);
    let om = e.openmetrics();
    assert_eq!(value(&om, "iolens_trace_share"), Some(1.0), "{om}");
    assert!(om.contains("# TYPE iolens_trace_share gauge"), "{om}");
    assert!(
        om.contains("# HELP iolens_trace_share Share of the last interval traced"),
        "{om}"
    );
    m.trace.interval.share = iolens::model::trace::window::Share(0.3);
    e.update(&m, 0.004);
    assert_eq!(value(&e.openmetrics(), "iolens_trace_share"), Some(0.3));
    m.trace = iolens::model::trace::view::TraceView::off("block tracing needs root");
    e.update(&m, 0.004);
    let off = e.openmetrics();
    assert!(!off.contains("iolens_trace_share"), "{off}");
    assert_eq!(value(&off, "iolens_trace_active"), Some(0.0), "{off}");
}

/// The tracer's own CPU as its budget counts it: a counter summed over
/// the intervals (4 ms and 6 ms: 0.01 s), the budget as a gauge; neither
/// without a budget.
#[test]
fn tracer_cpu_counter_and_budget() {
    use iolens::collect::trace::sampling::Cost;
    let mut m = common::model();
    common::trace_loop0_mixed(&mut m);
    let mut e = Exported::new(1);
    e.update(&m, 0.004);
    let none = e.openmetrics();
    assert!(!none.contains("iolens_tracer_cpu_seconds"), "{none}");
    assert!(!none.contains("iolens_trace_budget_cores"), "{none}");
    for ms in [4, 6] {
        m.trace.cost = Some(Cost {
            cpu_ns: ms * 1_000_000,
            lookup_ns: 0,
            wall_ns: 1_000_000_000,
            budget: Some(0.02),
        });
        e.update(&m, 0.004);
    }
    let om = e.openmetrics();
    assert_eq!(value(&om, "iolens_tracer_cpu_seconds_total"), Some(0.01), "{om}");
    assert!(om.contains("# TYPE iolens_tracer_cpu_seconds counter"), "{om}");
    assert_eq!(value(&om, "iolens_trace_budget_cores"), Some(0.02), "{om}");
}

/// A comm (and a probe's device and verdict) carrying an OSC 52 clipboard
/// write, BEL, DEL, a one-character CSI (U+009B), a quote, a backslash and
/// a newline: no byte a terminal acts on is left in either encoding, and
/// the label value read back by the exposition format's rules is the name
/// as the text output shows it (`format::escape`).
#[test]
fn hostile_names_reach_labels_escaped_and_parse_back() {
    use iolens::export::probes::LastProbe;
    const HOSTILE: &str = "x\x1b]52;c;aGk=\x07\x7f\u{9b}2J\x1b[2J\"q\\b\nz";
    let mut m = iolens::model::Model::new(common::host(), 100.0);
    for mut s in common::samples(3) {
        for p in &mut s.procs.procs {
            if p.key.pid == 31337 {
                p.comm = HOSTILE.into();
            }
        }
        m.update(s);
    }
    let mut e = Exported::new(100);
    e.update(&m, 0.001);
    e.probes = vec![LastProbe {
        device: HOSTILE.into(),
        verdict: HOSTILE.into(),
        started_unix: 1.0,
        ..Default::default()
    }];
    assert!(e.exported_comms().contains(&HOSTILE), "{:?}", e.exported_comms());
    let om = e.openmetrics();
    let text = text_format(&om);
    let want = iolens::format::escape(HOSTILE);
    for body in [&om, &text] {
        let bad: Vec<(usize, char)> = body
            .char_indices()
            .filter(|(_, c)| (*c < ' ' && *c != '\n') || ('\u{7f}'..='\u{9f}').contains(c))
            .collect();
        assert!(bad.is_empty(), "raw controls at {bad:?} in\n{body}");
        // Every sample line parses; the hostile series are there with the
        // escaped name as their value.
        let mut found = [0; 3];
        for l in body.lines().filter(|l| !l.starts_with('#')) {
            let (name, labels) = parse_sample(l).unwrap_or_else(|| panic!("does not parse: {l:?}"));
            for (k, v) in labels {
                if v.contains("52;c;") {
                    assert_eq!(v, want, "{l}");
                    match (name.as_str(), k.as_str()) {
                        ("iolens_process_dirtied_bytes_total", "comm") => found[0] += 1,
                        ("iolens_probe_info", "device") => found[1] += 1,
                        ("iolens_probe_info", "verdict") => found[2] += 1,
                        _ => {}
                    }
                }
            }
        }
        assert_eq!(found, [1, 1, 1], "{body}");
    }
}

/// One sample line by the exposition format's rules: the metric name and
/// its labels with values unescaped (`\\`, `\"`, `\n`); `None` if the line
/// is not well formed (a raw quote or newline in a value, an unknown escape).
fn parse_sample(line: &str) -> Option<(String, Vec<(String, String)>)> {
    let name_end = line.find(['{', ' '])?;
    let name = line[..name_end].to_string();
    let mut labels = Vec::new();
    let mut rest = &line[name_end..];
    if let Some(r) = rest.strip_prefix('{') {
        rest = r;
        loop {
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
            let (k, r) = rest.split_once("=\"")?;
            let mut v = String::new();
            let mut chars = r.char_indices();
            let end = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => match chars.next()?.1 {
                        '\\' => v.push('\\'),
                        '"' => v.push('"'),
                        'n' => v.push('\n'),
                        _ => return None,
                    },
                    (_, c) => v.push(c),
                }
            };
            labels.push((k.to_string(), v));
            rest = &r[end + 1..];
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
    }
    let value = rest.strip_prefix(' ')?;
    value.split(' ').next()?.parse::<f64>().ok()?;
    Some((name, labels))
}

/// Jobs carried by the samples reach the exporter as a progress ratio and
/// an ETA per job; a job without a total has neither (no made-up 0); at
/// most `MAX_JOBS` jobs are exported.
#[test]
fn jobs_export_their_progress_ratio_and_eta_bounded() {
    use iolens::export::jobs::{MAX_JOBS, series};
    use iolens::model::jobs::Tool;
    use iolens::model::jobs::track::{JobInput, Total};
    let mut m = iolens::model::Model::new(common::host(), 100.0);
    let job = |pid: i32, pos: u64, total: Total| JobInput {
        key: (pid, 1),
        tool: Tool::Tar,
        command: "tar cf - /srv".into(),
        pids: vec![pid],
        position: Some(pos),
        total,
        notes: vec![],
        current: None,
        files_done: None,
        files_why: None,
        age_ns: None,
        gone: false,
    };
    let known = Total::Known {
        files: 10,
        bytes: 1_000_000_000,
    };
    let unknown = Total::Unknown {
        why: "the file list is read from standard input".into(),
    };
    let samples = common::samples(3);
    let n = samples.len() as u64;
    for (i, mut s) in samples.into_iter().enumerate() {
        let pos = i as u64 * 100_000_000;
        s.jobs = vec![job(700, pos, known.clone()), job(800, pos, unknown.clone())];
        s.jobs.extend((0..40).map(|k| job(1000 + k, pos, known.clone())));
        m.update(s);
    }
    let mut e = Exported::new(1);
    e.update(&m, 0.001);
    e.jobs = series(&m);
    assert_eq!(e.jobs.len(), MAX_JOBS);
    let text = text_format(&e.openmetrics());
    // (n - 1) × 100 MB of 1 GB, 100 MB per sample interval.
    let dt = m.interval_s.unwrap();
    let ratio = (n - 1) as f64 / 10.0;
    assert_eq!(
        value(&text, "iolens_job_progress_ratio{pid=\"700\",tool=\"tar\"}"),
        Some(ratio),
        "{text}"
    );
    let eta = value(&text, "iolens_job_eta_seconds{pid=\"700\",tool=\"tar\"}").unwrap();
    let want = (1.0 - ratio) * 10.0 * dt;
    assert!((eta - want).abs() < 1e-6, "{eta} vs {want}");
    // The job without a total has no ETA either: it sorts after the 41
    // others, beyond the bound.
    assert!(!text.contains("pid=\"800\""), "{text}");
    assert_eq!(
        text.lines()
            .filter(|l| l.starts_with("iolens_job_progress_ratio{"))
            .count(),
        MAX_JOBS
    );
    assert!(
        m.jobs
            .views
            .iter()
            .any(|v| v.pid == 800 && v.percent.is_none() && v.eta_s.is_none())
    );
}

/// The page-cache events of one interval: `n` files on loop0, file `i`
/// read `(n - i)` MiB by pid 4242 (1 MiB folios), file 1000 dirtied in
/// 32 folios by pid 31337 and named with an escape sequence.
fn files_model(n: u64) -> iolens::model::Model {
    use std::sync::Arc;

    use iolens::collect::trace::block::Dev;
    use iolens::model::files::example::{add, dirty};
    use iolens::model::files::{FileTracker, FilesView};
    let loop0 = Dev { major: 7, minor: 0 };
    let mut events = Vec::new();
    for i in 0..n {
        for j in 0..(n - i) {
            events.push(add(4242, 4242, loop0, i, j * 256, 8));
        }
    }
    for j in 0..32 {
        events.push(dirty(31337, 31337, "7:0", 1000, j));
    }
    let mut t = FileTracker::default();
    t.feed(&events);
    let interval = t.take_interval();
    let names = interval
        .files
        .iter()
        .map(|(k, _)| match k.ino {
            1000 => Some(Arc::from(&b"/mnt/B\x1b[31m"[..])),
            i => Some(Arc::from(format!("/mnt/f{i}").as_bytes())),
        })
        .collect();
    let mut m = common::model();
    m.trace.files = FilesView {
        active: true,
        reason: None,
        interval,
        names,
    };
    m
}

/// The busiest files get their own series (device, inode, name), the rest
/// add up under `file="other"`; 40 files with the top 3 give 4 series per
/// counter; the counters accumulate; an escaped name; nothing without the
/// events.
#[test]
fn files_top_n_with_other_bounded() {
    let mut m = files_model(40);
    // f0's reader seen blocked on it for 1.5 s (sampled)
    m.trace.files.interval.files[0].1.io.blocked_ns = 1_500_000_000;
    let mut e = Exported::new(3);
    e.update(&m, 0.001);
    let om = e.openmetrics();
    assert_eq!(e.files.exported(), ["/mnt/f0", "/mnt/f1", "/mnt/f2"], "{om}");
    let mib = 1_048_576.0;
    let f0 = "iolens_file_read_bytes_total{device=\"loop0\",inode=\"0\",file=\"/mnt/f0\"}";
    assert_eq!(value(&om, f0), Some(40.0 * mib), "{om}");
    // 1 + 2 + ... + 37 MiB outside the top 3
    let other = "iolens_file_read_bytes_total{device=\"\",inode=\"\",file=\"other\"}";
    assert_eq!(value(&om, other), Some(703.0 * mib), "{om}");
    let dirt = "iolens_file_dirtied_folios_total{device=\"\",inode=\"\",file=\"other\"}";
    assert_eq!(value(&om, dirt), Some(32.0), "{om}");
    let blocked = "iolens_file_blocked_seconds_total{device=\"loop0\",inode=\"0\",file=\"/mnt/f0\"}";
    assert_eq!(value(&om, blocked), Some(1.5), "{om}");
    let blocked_other = "iolens_file_blocked_seconds_total{device=\"\",inode=\"\",file=\"other\"}";
    assert_eq!(value(&om, blocked_other), Some(0.0), "{om}");
    let n = |body: &str| {
        body.lines()
            .filter(|l| l.starts_with("iolens_file_read_bytes_total"))
            .count()
    };
    assert_eq!(n(&om), 4, "{om}");
    e.update(&m, 0.001);
    assert_eq!(value(&e.openmetrics(), f0), Some(80.0 * mib));
    // with the top 100 the escaped name is a label of its own
    let mut e = Exported::new(100);
    e.update(&m, 0.001);
    let om = e.openmetrics();
    assert!(om.contains("file=\"/mnt/B\\\\x1b[31m\""), "{om}");
    assert!(!om.contains('\x1b'));
    // 41 files and `other`
    assert_eq!(n(&om), 42);
    // not traced: no family at all
    let mut off = common::model();
    off.trace = iolens::model::trace::view::TraceView::off("block tracing needs root");
    let mut e = Exported::new(3);
    e.update(&off, 0.001);
    assert!(!e.openmetrics().contains("iolens_file_"));
}
