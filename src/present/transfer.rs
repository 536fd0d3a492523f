//! The transfer table: the columns of the transfers pane, defined once,
//! and the text of its cells.

use super::column_table;
use super::text::truncate;
use crate::format::{self, escape, escape_bytes};
use crate::model::jobs::track::{JobView, Total};
use crate::model::progress::{Job, Label};

/// Width of the text progress bar, in cells.
pub const BAR_WIDTH: usize = 20;

/// How wide a column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Width {
    Cells(u16),
    /// The bar's width (half of [`BAR_WIDTH`] when narrow).
    Bar,
    /// What the others leave.
    Fill,
    /// As wide as the longest state on screen (none when all are empty).
    State,
}

/// The widths a row is cut to.
#[derive(Debug, Clone, Copy)]
pub struct Fit {
    pub bar_w: usize,
    pub file_w: usize,
    pub state_w: usize,
    /// A transfer listed under its job (the file indented).
    pub folded: bool,
}

/// One column of the transfers pane.
#[derive(Debug)]
pub struct TransferColumn {
    pub id: TransferCol,
    pub key: &'static str,
    pub head: &'static str,
    pub width: Width,
    /// Kept on a narrow pane.
    pub narrow: bool,
    /// The cell's text.
    pub text: fn(&Job, &Fit) -> String,
    /// The cell's text on a job's row.
    pub job: fn(&JobView, &Fit) -> String,
}

column_table! {
    /// A column of the transfers pane.
    enum TransferCol, static TRANSFER_COLUMNS: TransferColumn = [
        Pid {
            key: "pid", head: "PID", width: Width::Cells(7), narrow: false,
            text: |j, _| j.proc.pid.to_string(), job: |v, _| v.pid.to_string(),
        },
        Command {
            key: "command", head: "COMMAND", width: Width::Cells(10), narrow: true,
            text: |j, _| truncate(&escape(&j.comm), 10),
            job: |v, _| truncate(&format!("{} job", v.tool.name()), 10),
        },
        File {
            key: "file", head: "FILE", width: Width::Fill, narrow: true,
            text: |j, f| file_cell(&j.main.path, f), job: |v, f| truncate(&escape(&v.command), f.file_w),
        },
        Progress { key: "progress", head: "PROGRESS", width: Width::Bar, narrow: true, text: bar_text, job: job_bar },
        Percent {
            key: "percent", head: "%", width: Width::Cells(6), narrow: true,
            text: |j, _| percent(j), job: |v, _| format::pct(v.percent),
        },
        Rate {
            key: "rate", head: "RATE", width: Width::Cells(10), narrow: true,
            text: |j, _| j.main.rate_bps.map_or_else(|| format::NA.to_string(), format::rate),
            job: |v, _| v.rate_bps.map_or_else(|| format::NA.to_string(), format::rate),
        },
        Eta {
            key: "eta", head: "ETA", width: Width::Cells(6), narrow: true,
            text: |j, _| format::duration(j.main.eta_s), job: |v, _| format::duration(v.eta_s),
        },
        State {
            key: "state", head: "STATE", width: Width::State, narrow: true,
            text: |j, f| truncate(&state(j, f.folded), f.state_w), job: |v, f| truncate(&job_state(v), f.state_w),
        },
    ];
}

fn percent(j: &Job) -> String {
    let m = &j.main;
    let (percent, estimated) = m.shown_percent();
    match m.label {
        Label::Positional | Label::Growing | Label::Truncated | Label::Remote => format::NA.to_string(),
        _ if estimated => "~100%".into(),
        _ => format::pct(percent),
    }
}

fn bar_text(j: &Job, f: &Fit) -> String {
    let (m, bar_w) = (&j.main, f.bar_w);
    match m.label {
        Label::Growing => format!("{:<bar_w$}", format!("{} written", format::decimal(m.pos as f64))),
        Label::Remote => format!("{:<bar_w$}", format!("{} at", format::decimal(m.pos as f64))),
        Label::Positional | Label::Truncated => bar(None, bar_w),
        _ => bar(m.shown_percent().0, bar_w),
    }
}

/// "██████░░░░░░" for a percent; blanks when unknown.
pub fn bar(percent: Option<f64>, width: usize) -> String {
    match percent {
        Some(p) if p.is_finite() => {
            let full = ((p.clamp(0.0, 100.0) / 100.0) * width as f64).round() as usize;
            "█".repeat(full) + &"░".repeat(width - full)
        }
        _ => " ".repeat(width),
    }
}

/// The status column: the honest label where there is no plain progress,
/// and the files seen closed (a lower bound: not under a job, which has
/// its own count).
pub fn state(j: &Job, in_job: bool) -> String {
    let mut s = match j.main.label {
        Label::Progress => String::new(),
        Label::Positional => "positional (pread/mmap)".into(),
        Label::Growing => "writing, size grows".into(),
        Label::Truncated => "truncated under reader".into(),
        Label::Remote => "size unknown: FUSE/net".into(),
        _ => j.main.label_text(),
    };
    if j.files_seen_closed > 0 && !in_job {
        if !s.is_empty() {
            s.push_str(", ");
        }
        s.push_str(&format!("≥{} files closed", j.files_seen_closed));
    }
    s
}

/// The FILE cell of a transfer: its path's end, indented under its job.
fn file_cell(path: &[u8], f: &Fit) -> String {
    if f.folded {
        format!("└ {}", path_tail(&escape_bytes(path), f.file_w.saturating_sub(2)))
    } else {
        path_tail(&escape_bytes(path), f.file_w)
    }
}

/// A job's bar; while the walk counts, what it found so far.
fn job_bar(v: &JobView, f: &Fit) -> String {
    let w = f.bar_w;
    match (&v.total, v.percent) {
        (Total::Counting { .. }, _) => format!("{:<w$}", truncate("counting", w)),
        (_, p) => bar(p, w),
    }
}

/// A job's files done of `total`: "12/600 files" counted one by one,
/// "~12/600 files (est.)" estimated from the bytes, "n/a/600 files".
pub fn files_text(v: &JobView, total: u64) -> String {
    let total = format::thousands(total);
    match (v.files_done, v.files_done_estimate) {
        (Some(d), _) => format!("{}/{total} files", format::thousands(d)),
        (None, Some(e)) => format!("~{}/{total} files (est.)", format::thousands(e)),
        (None, None) => format!("{}/{total} files", format::NA),
    }
}

/// A job's state: its phase, how it ended, its files (counted, or
/// estimated: "~… (est.)"), or why there is no percent.
pub fn job_state(v: &JobView) -> String {
    let mut s = v.phase.to_string();
    if let Some(e) = &v.exit {
        s.push_str(&format!(" ({e})"));
    } else if v.ended_ns.is_some() {
        s.push_str(" (exit status unknown)");
    }
    match &v.total {
        Total::Counting { files, bytes } => s.push_str(&format!(
            ": {} files, {} so far",
            format::thousands(*files),
            format::decimal(*bytes as f64)
        )),
        Total::Known { files, .. } => {
            s.push_str(&format!(", {}", files_text(v, *files)));
        }
        Total::Unknown { .. } => {}
    }
    if let Some(why) = v
        .percent_na
        .as_deref()
        .filter(|_| !matches!(v.total, Total::Counting { .. }))
    {
        s.push_str(&format!(": {}", escape(why)));
    }
    s
}

/// A job on one line (the process detail): "tar job of PID 41: 45.2%
/// (300 MB / 664 MB) 30.0 MB/s, eta 12s; copying, files ~12/600; tar cf …".
pub fn job_summary(v: &JobView) -> String {
    let total = match &v.total {
        Total::Known { bytes, .. } => format::decimal(*bytes as f64),
        _ => format::NA.to_string(),
    };
    format!(
        "{} job of PID {}: {} ({} / {total}) {}, eta {}; {}; {}",
        v.tool.name(),
        v.pid,
        format::pct(v.percent),
        v.bytes_done
            .map_or_else(|| format::NA.to_string(), |b| format::decimal(b as f64)),
        v.rate_bps.map_or_else(|| format::NA.to_string(), format::rate),
        format::duration(v.eta_s),
        job_state(v),
        escape(&v.command)
    )
}

/// A path in `w` cells: its end (the file's name) kept, "…" for the rest.
fn path_tail(p: &str, w: usize) -> String {
    let n = p.chars().count();
    if n <= w || w == 0 {
        return p.to_string();
    }
    let tail: String = p.chars().skip(n - (w - 1)).collect();
    format!("…{tail}")
}
