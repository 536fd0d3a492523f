//! The exporter's accumulation and encoding on the fixture model: the
//! per-command series add up to the processes' I/O, the top N get their
//! own series, and the text format is what Prometheus's parser expects.

mod common;

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
    use iolens::collect::trace::block::Dev;
    use iolens::model::trace::view::TraceView;
    use iolens::model::trace::{DeviceTrace, TraceInterval};
    let mut m = common::model();
    let mut interval = TraceInterval::default();
    let d = DeviceTrace {
        issued: 42,
        sequential: 2,
        issued_bytes: (2 << 20) + 40 * 4096,
        sequential_bytes: 2 << 20,
        completed: [42, 0, 0, 0],
        ..Default::default()
    };
    interval.devices.insert(Dev { major: 7, minor: 0 }, d);
    m.apply_trace(TraceView {
        active: true,
        reason: None,
        interval,
        log: Vec::new(),
    });
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
