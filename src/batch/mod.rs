//! Batch output: plain-text tables (iostat's device columns, all of
//! `iostat -x` with `--wide`, plus the access pattern: [`devices`]; then
//! the top processes by disk I/O) or, with `--json`, one JSON object per
//! interval. Used with `--batch`, `--json`, or when stdout is not
//! a terminal. The intervals come from the session's report loop
//! ([`crate::session::headless`]); [`Printer`] prints them (for `iolens
//! record` and `iolens replay` too).

mod bench;
pub mod csv;
pub mod devices;
mod files;
mod processes;
pub mod progress;
mod trace;
pub mod why;

pub use crate::present::text::CHILDREN_LABEL;
pub use crate::present::units::{bytes_in, rate_in};

pub use bench::bench_sample;

use std::fmt::Write as _;
use std::io::Write;
use std::ops::ControlFlow;
use std::process::ExitCode;

use serde_json::json;

use crate::cli::{Cli, CsvTable, Units};
use crate::format;
use crate::model::process::ProcRates;
use crate::model::{AlignVerdict, Model, ProcRow};
use crate::present::trace_json::ProcDevJson;
use crate::session::headless::{self, Report, Schedule};
use crate::session::{Plan, Session};

/// How the reports are printed.
#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub top: usize,
    pub json: bool,
    /// CSV rows of this table instead of the text report.
    pub csv: Option<CsvTable>,
    /// Units and columns of the text report.
    pub text: TextStyle,
}

impl Printer {
    /// The CSV header, when the reports are CSV rows; `Break` when stdout
    /// is closed.
    pub fn header(&self) -> ControlFlow<()> {
        match self.csv {
            Some(table) => write_out(&csv::header(table)),
            None => ControlFlow::Continue(()),
        }
    }

    /// Print the report of one interval; `Break` when stdout is closed
    /// (`iolens --batch | head` ends quietly).
    pub fn print(&self, report: Report) -> ControlFlow<()> {
        match report {
            Report::Fresh { model, start_ns } => self.fresh(model, start_ns),
            Report::Late { stall, waiting } => self.late(&stall, waiting),
        }
    }

    /// The report of an interval (`start_ns`: when the run began, for the
    /// CSV's `time_s`).
    pub fn fresh(&self, model: &Model, start_ns: u64) -> ControlFlow<()> {
        write_out(&if self.json {
            format::escape_json_controls(json_report(model, self.top).to_string()) + "\n"
        } else if let Some(table) = self.csv {
            csv::rows(model, table, self.top, start_ns)
        } else {
            text_report_in(model, self.top, self.text)
        })
    }

    /// What stands for the report of an interval whose sample is late.
    fn late(&self, stall: &str, waiting: String) -> ControlFlow<()> {
        let wall = crate::collect::realtime_ns();
        if self.csv.is_some() {
            // A CSV stream stays rows of its header; the stall goes to stderr.
            eprintln!("{stall}");
            write_out("")
        } else if self.json {
            let line = json!({
                "time": format::wall_time(wall, false),
                "unix_ns": wall,
                "stall": stall,
                "waiting_on": (!waiting.is_empty()).then_some(waiting),
            });
            write_out(&(format::escape_json_controls(line.to_string()) + "\n"))
        } else {
            write_out(&format!("{}\n{stall}\n\n", format::wall_time(wall, true)))
        }
    }
}

/// Write to stdout and flush; `Break` when it is closed.
fn write_out(text: &str) -> ControlFlow<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| out.flush()) {
        Ok(()) => ControlFlow::Continue(()),
        Err(_) => ControlFlow::Break(()),
    }
}

/// `iolens --batch`/`--json`/`--csv`: a report per interval.
pub fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let schedule = Schedule {
        every: crate::config::load_interval(cli)?,
        count: cli.count,
    };
    let printer = Printer {
        top: cli.top,
        json: cli.json,
        csv: cli.csv,
        text: TextStyle {
            units: cli.units,
            wide: cli.wide,
        },
    };
    let session = Session::new(Plan::full(cli, crate::session::trace_disabled(cli)));
    let mut model = crate::session::model();
    model.thresholds = crate::config::load_pattern(cli)?;
    model.findings.cfg = crate::config::load_findings(cli)?;
    crate::session::load_saved_probes(&mut model, cli, None);
    if printer.header().is_break() {
        return Ok(ExitCode::SUCCESS);
    }
    headless::run(
        session,
        model,
        schedule,
        |_, _| ControlFlow::Continue(()),
        |r| printer.print(r),
    )?;
    Ok(ExitCode::SUCCESS)
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
#[cfg(any(test, feature = "test-support"))]
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
        None if model.trace.active => {
            out.push_str("  trace on");
            // Its own CPU, where a budget measures it.
            if let Some(cost) = model.trace.cost.and_then(|c| c.summary()) {
                let _ = write!(out, " ({cost})");
            }
            if let Some(tag) = model.trace.sampled() {
                let _ = write!(out, ", {tag}: traced figures ~estimated");
            }
        }
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
    // The findings that hold, first (nothing when none).
    for f in model.findings.findings() {
        out.push_str(&crate::present::findings::text_block(f));
    }
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
        files::lines(&mut out, model, top);
    }
    if let Some(cg) = &model.cgroups {
        crate::present::cgroup_text::text(&mut out, cg, top, units);
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
        "findings": crate::present::findings::json_list(model.findings.findings()),
        "trace": crate::present::trace_json::counts_json(&model.trace),
        "trace_share": model.trace.active.then_some(model.trace.interval.share.0),
        "traced_processes": trace::traced_processes_json(model),
        "files": crate::present::files::files_json(model, top),
        "files_info": crate::present::files::files_info_json(model),
    })
}
