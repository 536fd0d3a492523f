//! Batch output: plain-text tables (iostat's device columns, all of
//! `iostat -x` with `--wide`, plus the access pattern: [`devices`]; then
//! the top processes by disk I/O) or, with `--json`, one JSON object per
//! interval. Used with `--batch`, `--json`, or when stdout is not
//! a terminal.

mod bench;
pub mod csv;
pub mod devices;
mod processes;
mod trace;
mod units;

pub use units::{bytes_in, rate_in};

pub use bench::bench_sample;

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::cli::{Cli, Units};
use crate::collect::Collector;
use crate::collect::cgroup::CgroupReader;
use crate::collect::sample::HostInfo;
use crate::format;
use crate::model::process::ProcRates;
use crate::model::trace::view::ProcDevJson;
use crate::model::{AlignVerdict, Model, ProcRow};
use crate::tracer::Tracing;

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, from the auxiliary vector).
pub fn clk_tck() -> f64 {
    match rustix::param::clock_ticks_per_second() {
        0 => 100.0,
        v => v as f64,
    }
}

/// Validate an interval given on the command line (`--interval`), or the
/// default.
pub fn interval(v: Option<f64>) -> anyhow::Result<Duration> {
    crate::config::interval(v, None)
}

/// Why tracing is not even tried, from the command line.
pub fn trace_disabled(cli: &Cli) -> Option<&'static str> {
    if cli.no_trace {
        Some("--no-trace")
    } else if cli.root != std::path::Path::new("/") {
        Some("a captured /proc and /sys tree (--root)")
    } else {
        None
    }
}

/// What a run of reports prints, and how often.
pub struct Reports {
    pub every: Duration,
    /// Reports (intervals) before the run ends; `None`: until interrupted.
    pub count: Option<u64>,
    pub top: usize,
    pub json: bool,
    /// CSV rows of this table instead of the text report.
    pub csv: Option<crate::cli::CsvTable>,
    /// Units and columns of the text report.
    pub text: TextStyle,
    /// Print the reports (a recorder without `--batch`/`--json` does not).
    pub print: bool,
}

pub fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let reports = Reports {
        every: crate::config::load_interval(cli)?,
        count: cli.count,
        top: cli.top,
        json: cli.json,
        csv: cli.csv,
        text: TextStyle {
            units: cli.units,
            wide: cli.wide,
        },
        print: true,
    };
    run_reports(cli, &reports, trace_disabled(cli), None)
}

/// The batch loop: samples on their own thread, a report per interval;
/// with a recorder, every sample the model takes is appended to it first.
pub fn run_reports(
    cli: &Cli,
    reports: &Reports,
    trace_off: Option<&str>,
    mut recorder: Option<&mut crate::record::file::Writer>,
) -> anyhow::Result<ExitCode> {
    let every = reports.every;
    let mut collector = Collector::new(&cli.root);
    collector.cgroups = Some(CgroupReader::new());
    collector.listen_for_exits();
    let activity = collector.activity.clone();
    let mut model = Model::new(HostInfo::read(), clk_tck());
    model.thresholds = crate::config::load_pattern(cli)?;
    let tracing = Tracing::start(trace_off);
    // A terminating signal ends the run through the normal path (the
    // tracefs instance is removed), then main re-raises it.
    crate::stop::catch(true);
    crate::stop::watch_sampler(activity.clone());
    let start = Instant::now();
    let start_ns = crate::collect::monotonic_ns();
    // The samples are taken on their own thread, so that a read that hangs
    // (a process stuck in the kernel, a dying disk) never stops the
    // reports: each one comes on time, saying that no sample came.
    // `None` ends the wait for a sample: a terminating signal or the end
    // of the sampler thread (which only a panic ends).
    let (tx, rx) = std::sync::mpsc::sync_channel(2);
    let on_signal = tx.clone();
    crate::stop::on_request(move || {
        let _ = on_signal.try_send(None);
    });
    std::thread::Builder::new()
        .name("iolens-sampler".into())
        .spawn(move || {
            let _ended = Ended(tx.clone());
            sample_every(collector, start, every, tx)
        })?;
    let stdout = std::io::stdout();
    if let Some(table) = reports.csv.filter(|_| reports.print) {
        let mut out = stdout.lock();
        if out
            .write_all(csv::header(table).as_bytes())
            .and_then(|_| out.flush())
            .is_err()
        {
            return Ok(ExitCode::SUCCESS);
        }
    }
    let mut last_ns = 0;
    'reports: for k in 1u32.. {
        if reports.count.is_some_and(|n| u64::from(k) > n) {
            break;
        }
        // The sample of tick k is due at start + tick_offset(k); a report waits
        // for it a quarter of the interval more, at least 100 ms (a very
        // short interval must not call an ordinary sample late) and at most
        // 250 ms.
        let grace = (every / 4).clamp(Duration::from_millis(100), Duration::from_millis(250));
        let deadline = start + tick_offset(every, k) + grace;
        let mut fresh = false;
        loop {
            if crate::stop::requested() {
                break 'reports;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(None) => break 'reports,
                Ok(Some((tick, s))) => {
                    last_ns = s.mono_ns;
                    let trace = tracing.take();
                    // A lost sample is said and retried with the next
                    // one; samples lost in a row stop the recorder.
                    if let Some(r) = recorder.as_deref_mut()
                        && r.record(&s, trace.active.then_some(&trace.interval)).is_break()
                    {
                        break 'reports;
                    }
                    model.update(s);
                    // The first interval's requests (begun before the
                    // baseline) are taken and dropped with the baseline.
                    model.apply_trace(trace);
                    if tick >= k {
                        fresh = true;
                        break;
                    }
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) if !left.is_zero() => {}
                Err(_) => break,
            }
        }
        if !reports.print {
            continue;
        }
        let text = if fresh {
            if reports.json {
                format::escape_json_controls(json_report(&model, reports.top).to_string()) + "\n"
            } else if let Some(table) = reports.csv {
                csv::rows(&model, table, reports.top, start_ns)
            } else {
                text_report_in(&model, reports.top, reports.text)
            }
        } else {
            let now = crate::collect::monotonic_ns();
            let waiting = activity.describe();
            let since = if last_ns == 0 { start_ns } else { last_ns };
            let stall = crate::collect::activity::late_text(Duration::from_nanos(now.saturating_sub(since)), &waiting);
            let wall = crate::collect::realtime_ns();
            if reports.csv.is_some() {
                // A CSV stream stays rows of its header; the stall goes to stderr.
                eprintln!("{stall}");
                String::new()
            } else if reports.json {
                format::escape_json_controls(
                    json!({
                        "time": format::wall_time(wall, false),
                        "unix_ns": wall,
                        "stall": stall,
                        "waiting_on": (!waiting.is_empty()).then_some(waiting),
                    })
                    .to_string(),
                ) + "\n"
            } else {
                format!("{}\n{stall}\n\n", format::wall_time(wall, true))
            }
        };
        let mut out = stdout.lock();
        // A closed pipe (`iolens --batch | head`) ends the run quietly.
        if out.write_all(text.as_bytes()).and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The first interval, so that the first rates come at once (then the
/// configured interval follows): at most this long, never longer than the
/// configured interval.
pub const FIRST_INTERVAL: Duration = Duration::from_millis(250);

/// When tick `k` is due after the start: the baseline at 0, the first
/// report's sample [`FIRST_INTERVAL`] later (or `every` if shorter), then
/// one every `every`.
pub fn tick_offset(every: Duration, k: u32) -> Duration {
    match k {
        0 => Duration::ZERO,
        k => every.min(FIRST_INTERVAL) + every * (k - 1),
    }
}

/// The batch sampler thread: a baseline sample at once, then one at every
/// tick `start + tick_offset(k)`, sent with its tick number. A tick missed
/// while a sample took too long is skipped, not caught up.
type SampleTx = std::sync::mpsc::SyncSender<Option<(u32, crate::collect::RawSample)>>;

/// Says, when the sampler thread ends (by a panic, or when the reports
/// ended), that no sample will come.
struct Ended(SampleTx);

impl Drop for Ended {
    fn drop(&mut self) {
        let _ = self.0.send(None);
    }
}

fn sample_every(mut collector: Collector, start: Instant, every: Duration, tx: SampleTx) {
    if tx.send(Some((0, collector.sample()))).is_err() {
        return;
    }
    let mut k = 1u32;
    loop {
        std::thread::sleep((start + tick_offset(every, k)).saturating_duration_since(Instant::now()));
        if tx.send(Some((k, collector.sample()))).is_err() {
            return;
        }
        // The tick due next: the first one not already past.
        let past = start.elapsed().saturating_sub(tick_offset(every, 1)).as_secs_f64() / every.as_secs_f64();
        k = (k + 1).max(past.ceil() as u32 + 1);
    }
}

/// Processes that did I/O in the interval, busiest on the disk first (then by
/// logical I/O), at most `top`.
pub fn top_procs(model: &Model, top: usize) -> Vec<&ProcRow> {
    let mut v: Vec<&ProcRow> = model
        .procs
        .iter()
        .filter(|p| {
            p.rates.as_deref().is_some_and(ProcRates::is_active)
                || p.children_rates.as_ref().is_some_and(|r| r.is_active())
        })
        .collect();
    let key = |p: &ProcRow| {
        p.rates
            .as_deref()
            .map_or((0.0, 0.0), |r| (r.disk_bps(), r.rchar_bps + r.wchar_bps))
    };
    v.sort_by(|a, b| key(b).partial_cmp(&key(a)).unwrap_or(std::cmp::Ordering::Equal));
    v.truncate(top);
    v
}

/// A line for each partition whose start is off the physical sector or the
/// device's optimal I/O size (aligned ones are in the JSON).
fn alignment_lines(out: &mut String, model: &Model) {
    for d in &model.devices {
        let Some(a) = d.info.as_ref().and_then(|i| i.alignment.as_ref()) else {
            continue;
        };
        if matches!(a.verdict, AlignVerdict::Misaligned | AlignVerdict::NotOptimal) {
            let _ = writeln!(
                out,
                "alignment: {} {}: {}",
                format::escape(&d.name),
                a.verdict.text(),
                a.explain()
            );
        }
    }
}

/// How the text report is laid out: its units, and the full `iostat -x`
/// device columns (`--wide`) or the default set that fits a normal terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextStyle {
    pub units: Units,
    pub wide: bool,
}

/// The plain-text report of one interval, in human units, default columns.
pub fn text_report(model: &Model, top: usize) -> String {
    text_report_in(model, top, TextStyle::default())
}

/// The plain-text report of one interval; `top` 0 leaves out the process
/// and cgroup sections.
pub fn text_report_in(model: &Model, top: usize, style: TextStyle) -> String {
    let units = style.units;
    // The sample's wall-clock time on a line of its own, as `iostat -t`.
    let mut out = format::wall_time(model.wall_ns, true) + "\n";
    // Then the host and CPU on one line, pressure, tracing and memory on
    // the next (each fits 132 columns).
    let _ = write!(
        out,
        "{} {}  interval {}",
        format::escape(&model.host.hostname),
        format::escape(&model.host.kernel),
        devices::opt2(model.interval_s)
    );
    if let Some(c) = model.cpu {
        let _ = write!(
            out,
            "  cpu user {:.1}% sys {:.1}% iowait {:.1}% steal {:.1}% idle {:.1}%",
            c.user + c.nice,
            c.system,
            c.iowait,
            c.steal,
            c.idle
        );
    }
    out.push('\n');
    match model.psi.and_then(|p| p.some) {
        Some(s) => {
            let full = model
                .psi
                .and_then(|p| p.full)
                .map_or(format::NA.to_string(), |f| format!("{:.2}", f.avg10));
            let _ = write!(out, "psi io some {:.2} full {}", s.avg10, full);
        }
        None => out.push_str("psi off"),
    }
    match &model.trace.reason {
        None if model.trace.active => out.push_str("  trace on"),
        Some(why) => {
            let _ = write!(out, "  trace off ({}): pattern ~estimated", format::escape(why));
        }
        None => {}
    }
    if let Some(m) = model.mem {
        let _ = write!(
            out,
            "  dirty {} writeback {}",
            bytes_in(m.dirty_bytes as f64, units),
            bytes_in(m.writeback_bytes as f64, units)
        );
    }
    out.push('\n');
    let cols = devices::columns(style.wide);
    let pat = crate::model::pattern::heading(model.devices.iter().map(|d| d.rates.as_ref()));
    devices::header(&mut out, cols, units, pat);
    for d in model.devices.iter().filter(|d| !d.has_no_media()) {
        let name = format::escape(&d.name);
        let mount = d
            .info
            .as_ref()
            .and_then(|i| i.mounts.first())
            .map_or(String::new(), |m| format::escape(&m.mount_point));
        match &d.rates {
            Some(r) => devices::line(&mut out, cols, &name, r, &mount, units),
            None => {
                let w = devices::NAME_W;
                let _ = match d.rebaseline {
                    None => writeln!(out, "{name:<w$} n/a (first sample)"),
                    Some(r) => writeln!(out, "{name:<w$} n/a (re-baselined: {})", r.text()),
                };
            }
        }
    }
    if let Some(t) = &model.total {
        devices::line(&mut out, cols, "total", t, "", units);
    }
    alignment_lines(&mut out, model);
    totals_lines(&mut out, model, style);
    if model.trace.active {
        trace::traced_report(&mut out, model);
    }
    if top > 0 {
        processes::lines(&mut out, model, top, style);
    }
    if let Some(cg) = &model.cgroups {
        crate::batch_cgroups::text(&mut out, cg, top, units);
    }
    if !model.host.is_root && (model.hidden > 0 || model.denied > 0) {
        let _ = writeln!(
            out,
            "(not root: I/O of {} processes of other users is hidden; {} not visible at all)",
            model.denied, model.hidden
        );
    }
    for e in &model.errors {
        let _ = writeln!(out, "warning: {}", format::escape(e));
    }
    out.push('\n');
    out
}

/// The header total (disks against process rows; then written against
/// dirtied) and, when the io% column is shown but cannot be known, why.
fn totals_lines(out: &mut String, model: &Model, style: TextStyle) {
    let units = style.units;
    let t = &model.totals;
    let rate = |v: Option<f64>| v.map_or_else(|| format::NA.to_string(), |v| rate_in(v, units));
    let _ = write!(
        out,
        "disks rd {} wr {}  processes rd {} ({} of disk reads)",
        rate(t.device_read_bps),
        rate(t.device_write_bps),
        rate_in(t.process_read_bps, units),
        t.read_share
            .map_or_else(|| format::NA.to_string(), |s| format!("{:.0}%", s * 100.0)),
    );
    let _ = writeln!(
        out,
        "\nlast {:.0}s: processes dirtied {} (cancelled {}), disks wrote {}",
        t.write_window_s,
        bytes_in(t.dirtied_bytes, units),
        bytes_in(t.cancelled_bytes, units),
        t.written_bytes
            .map_or_else(|| format::NA.to_string(), |b| bytes_in(b, units)),
    );
    if style.wide && model.delayacct == Some(false) {
        out.push_str("io% n/a: delay accounting is off (sysctl kernel.task_delayacct=1 turns it on)\n");
    }
}

/// The line under a process for what arrived from its exited threads and
/// reaped children (without exit records).
pub const CHILDREN_LABEL: &str = "↳ exited threads and children";

/// What the process rows can and cannot attribute, and why: one line for
/// the header of every output.
pub fn attribution_note(model: &Model) -> String {
    if model.exits.active {
        format!(
            "attribution: exact per process (exit records: {} lost to overflow)",
            model.exits.overflows
        )
    } else if model.exits.why_not.as_deref() == Some(crate::collect::sample::EXITS_CAPTURED) {
        "attribution: process-wide counters (a captured tree has no per-thread counters or exit records)".to_string()
    } else {
        let why = model.exits.why_not.as_deref().unwrap_or("no exit records");
        format!(
            "attribution: live threads only ({why}): I/O of exited threads and reaped children shows as \
             \"{CHILDREN_LABEL}\" when it reaches the parent; not attributed: other users' processes, \
             orphans reaped by PID 1, children reaped with SIGCHLD ignored"
        )
    }
}

/// One interval as a JSON value (fields documented in the README).
pub fn json_report(model: &Model, top: usize) -> serde_json::Value {
    let procs: Vec<serde_json::Value> = top_procs(model, top)
        .into_iter()
        .map(|p| {
            // In device order (the rows are hashed): the same report
            // prints alike every time, and in replay.
            let mut rows: Vec<_> = model.trace.proc_rows(p.raw.key.pid).collect();
            rows.sort_by_key(|(d, _)| **d);
            let traced: Vec<ProcDevJson> = rows
                .into_iter()
                .map(|(d, row)| ProcDevJson::new(trace::dev_name(model, d), row))
                .collect();
            json!({
                "pid": p.raw.key.pid,
                "start_time": p.raw.key.start_time,
                "comm": p.raw.comm,
                "cmdline": p.raw.cmdline,
                "user": p.raw.user,
                "uid": p.raw.uid,
                "state": if p.exited { "exited".to_string() } else { p.raw.state.to_string() },
                "exited": p.exited,
                "ioprio": p.raw.ioprio.map(|io| io.label(p.raw.nice)),
                "worker": p.worker.as_ref().map(|w| w.label()),
                "devices": trace::proc_devices_json(&traced, &p.devices),
                "rates": p.rates,
                "children_rates": p.children_rates,
            })
        })
        .collect();
    json!({
        "time": format::wall_time(model.wall_ns, false),
        "unix_ns": model.wall_ns,
        "host": model.host.hostname,
        "kernel": model.host.kernel,
        "mono_ns": model.mono_ns,
        "interval_s": model.interval_s,
        "cpu": model.cpu,
        "psi_io": model.psi,
        "memory": model.mem,
        "devices": trace::devices_json(model),
        "total": model.total,
        "io_totals": model.totals,
        "delay_accounting": model.delayacct,
        "processes": procs,
        "processes_hidden": model.hidden,
        "processes_denied": model.denied,
        "cgroups": model.cgroups.as_ref().map(|c| &c.rows),
        "cgroups_info": model.cgroups.as_ref().map(|c| json!({
            "hierarchy": c.hierarchy,
            "counted_devices": c.counted_devices,
            "notes": c.notes,
        })),
        "exit_records": model.exits,
        "errors": model.errors,
        "trace": model.trace.counts_json(),
        "traced_processes": trace::traced_processes_json(model),
    })
}
