//! Process detail (Enter in the processes pane): the whole command line,
//! user, state, I/O priority, cgroup, working directory, the devices it
//! uses, its I/O now and since iolens started, its storage and syscall
//! read/write rates over the last two minutes (charts), and its open files
//! with their positions (what it reads and writes right now); the keys for
//! signals and ionice. Reads the model's process row and the
//! [`ProcInfo`] the controller read when the detail opened.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::chart::{self, Spec};
use super::viewmodel::nums;
use super::{ViewState, pane_block};
use crate::format;
use crate::model::prochist::PROC_HISTORY_LEN;
use crate::model::{Access, FdTarget, Model, ProcInfo, ProcKey, RawFd};
use crate::present::files::{FilesOf, detail_file_lines};
use crate::present::transfer::job_summary;

/// The keys of the detail, shown at its bottom.
pub const KEYS: &str = "t SIGTERM · K SIGKILL · s SIGSTOP · c SIGCONT · i ionice (each asks first) · Esc close";

fn file_line(f: &RawFd) -> String {
    let mode = match f.access() {
        Access::Read => "r ",
        Access::Write => " w",
        Access::ReadWrite => "rw",
    };
    let size = match (f.size, f.remote) {
        (_, true) => "size unknown (FUSE/network)".to_string(),
        (Some(s), _) if s > 0 => format!(
            "{} ({:.0}%)",
            format::decimal(s as f64),
            (f.pos as f64 / s as f64 * 100.0).min(999.0)
        ),
        (Some(s), _) => format::decimal(s as f64),
        (None, _) => format::NA.to_string(),
    };
    let kind = if f.target == FdTarget::BlockDevice {
        " [block device]"
    } else {
        ""
    };
    let path = f
        .path
        .as_deref()
        .map_or_else(|| "(path not read)".to_string(), format::escape_bytes);
    format!(
        "{:>4} {mode} at {:>10} of {size:<18} {path}{kind}",
        f.fd,
        format::decimal(f.pos as f64)
    )
}

/// The detail's first lines for process `key`: command, user, cgroup,
/// cwd, devices, its I/O now and since iolens started.
pub fn head_lines(model: &Model, info: Option<&ProcInfo>, key: ProcKey) -> Vec<Line<'static>> {
    let Some(p) = model.procs.iter().find(|p| p.raw.key == key) else {
        return vec![Line::raw(format!("PID {} is gone (or no longer listed).", key.pid))];
    };
    let raw = &p.raw;
    let mut v = vec![Line::raw(format!("command: {}", super::viewmodel::command(p)))];
    v.push(Line::raw(format!(
        "user: {}  state: {}  threads: {}  parent: {}  I/O priority: {}",
        raw.user
            .as_deref()
            .map_or_else(|| raw.uid.map_or("?".into(), |u| u.to_string()), format::escape),
        raw.state,
        raw.num_threads,
        raw.ppid,
        raw.ioprio.map_or(format::NA.to_string(), |io| io.label(raw.nice))
    )));
    let info = info.filter(|i| i.key == key);
    v.push(Line::raw(format!(
        "cgroup: {}",
        info.and_then(|i| i.cgroup.as_deref())
            .map_or(format::NA.to_string(), format::escape)
    )));
    v.push(Line::raw(format!(
        "cwd: {}",
        info.and_then(|i| i.cwd.as_deref())
            .map_or(format::NA.to_string(), format::escape)
    )));
    v.push(Line::raw(format!("devices: {}", super::processes::devices_text(p))));
    if let Some(j) = model.jobs.views.iter().find(|j| j.pids.contains(&key.pid)) {
        v.push(Line::raw(format!("job: {}", job_summary(j))));
    }
    for (label, acc) in [("now (per second)", false), ("since iolens started", true)] {
        let line = match nums(p, acc) {
            Some(n) => format!(
                "{label}: disk read {}  disk write {}  read {}  write {}  syscalls {}  cache {}  io% {}",
                format::decimal(n.disk_read),
                format::decimal(n.disk_write),
                format::decimal(n.read),
                format::decimal(n.write),
                format::num(n.syscalls),
                n.cache.map_or(format::NA.to_string(), |c| format!("{:.0}%", c * 100.0)),
                n.io_wait.map_or(format::NA.to_string(), |w| format!("{w:.0}")),
            ),
            None => format!("{label}: n/a (I/O counters not readable yet)"),
        };
        v.push(Line::raw(line));
    }
    v.push(Line::raw(format!(
        "dirty throttle: {}",
        crate::present::process::dirty_text(
            p.rates.as_deref(),
            model.trace.dirty.reason.as_deref(),
            model.trace.sampled().as_deref(),
        )
    )));
    v
}

/// The open files part of the detail of process `key`.
pub fn file_lines(info: Option<&ProcInfo>, key: ProcKey) -> Vec<Line<'static>> {
    let mut v = Vec::new();
    match info.filter(|i| i.key == key) {
        None => v.push(Line::raw("open files: reading…")),
        Some(i) => {
            v.push(Line::raw(format!(
                "open files and block devices ({}): fd, mode, position of size, path",
                i.fds.len()
            )));
            v.extend(i.fds.iter().map(|f| Line::raw(file_line(f))));
            if let Some(e) = &i.error {
                v.push(Line::raw(format!("note: {}", format::escape(e))));
            }
        }
    }
    v
}

/// Rows of `lines` wrapped at `width` cells.
fn wrapped_height(lines: &[Line], width: u16) -> u16 {
    let w = usize::from(width.max(1));
    let rows: usize = lines.iter().map(|l| l.width().max(1).div_ceil(w)).sum();
    u16::try_from(rows).unwrap_or(u16::MAX)
}

/// The least height of the I/O history charts in a detail `inner_h` rows
/// high: 0 when too short to read a chart.
fn chart_height(inner_h: u16) -> u16 {
    match inner_h {
        0..14 => 0,
        14..20 => 5,
        h => (h * 2 / 5).clamp(8, 16),
    }
}

/// Its storage and syscall read/write rates over the history the model
/// keeps (side by side), or why there is none.
fn render_history(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, key: ProcKey) {
    let t = &view.theme;
    let Some(h) = model.proc_history.get(key) else {
        let text = "I/O history: none (no I/O since iolens first saw this process)";
        frame.render_widget(Paragraph::new(Line::styled(text, t.dim())), area);
        return;
    };
    let step = model.interval_s.unwrap_or(view.interval.as_secs_f64());
    let (read, write) = (t.ok(), t.accent());
    let mb = |v: f64| format!("{v:.1}");
    let specs = [
        Spec {
            title: "disk MB/s",
            series: &[("read", &h.disk_read, read), ("write", &h.disk_write, write)],
            scale: 1e-6,
            fmt: mb,
        },
        Spec {
            title: "syscall MB/s",
            series: &[("read", &h.read, read), ("write", &h.write, write)],
            scale: 1e-6,
            fmt: mb,
        },
    ];
    for (spec, cell) in specs.iter().zip(chart::grid(area, 1, 2)) {
        chart::render(frame, cell, spec, PROC_HISTORY_LEN, step, t);
    }
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, key: ProcKey) {
    let t = &view.theme;
    let comm = model
        .procs
        .iter()
        .find(|p| p.raw.key == key)
        .map_or(String::new(), |p| format::escape(&p.raw.comm));
    let title = Line::from(vec![Span::styled(format!(" Process {} ({comm}) ", key.pid), t.title())]);
    frame.render_widget(Clear, area);
    let block = pane_block(title, true, t);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let head = head_lines(model, view.proc_info.as_ref(), key);
    let mut files: Vec<Line> = detail_file_lines(model, FilesOf::Process(key.pid))
        .into_iter()
        .map(Line::raw)
        .collect();
    if view.replay.is_some() {
        files.push(Line::raw(
            "open files, cwd, cgroup: not recorded (replay shows the recorded counters only)",
        ));
    } else {
        files.extend(file_lines(view.proc_info.as_ref(), key));
    }
    let keys = if view.replay.is_some() {
        "replay: signals and ionice are off (they would reach the live machine) · Esc close"
    } else {
        KEYS
    };
    // The head leaves room for the smallest chart, the keys and two lines
    // of open files; the charts grow into what the open files leave (up to
    // 24 rows).
    let files_h = wrapped_height(&files, inner.width);
    let min_chart = chart_height(inner.height);
    let head_room = inner.height.saturating_sub(min_chart + 1 + files_h.min(2));
    let head_h = wrapped_height(&head, inner.width).min(head_room);
    let avail = inner.height.saturating_sub(head_h + 1);
    let chart_h = match min_chart {
        0 => 0,
        min => avail.saturating_sub(files_h).clamp(min, min.max(24)).min(avail),
    };
    let [head_area, charts_area, files_area, keys_area] = Layout::vertical([
        Constraint::Length(head_h),
        Constraint::Length(chart_h),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(inner);
    frame.render_widget(Paragraph::new(head).wrap(Wrap { trim: false }), head_area);
    if chart_h > 0 {
        render_history(frame, charts_area, model, view, key);
    }
    frame.render_widget(Paragraph::new(files).wrap(Wrap { trim: false }), files_area);
    frame.render_widget(Paragraph::new(Line::styled(keys, t.dim())), keys_area);
}

/// The signals the process detail sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sig {
    Term,
    Kill,
    Stop,
    Cont,
}

impl Sig {
    pub fn name(self) -> &'static str {
        match self {
            Sig::Term => "SIGTERM",
            Sig::Kill => "SIGKILL",
            Sig::Stop => "SIGSTOP",
            Sig::Cont => "SIGCONT",
        }
    }
}
