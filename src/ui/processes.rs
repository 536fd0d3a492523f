//! Processes pane (iotop-like): per-process storage and logical I/O, sorted,
//! filtered, as rates or as totals since iolens started.

use std::cmp::Ordering;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table, TableState};

use super::devices::truncate;
use super::{Pane, ProcCol, ViewState, pane_block};
use crate::collect::process::{IoUnavailable, ProcIo};
use crate::format;
use crate::model::process::CACHE_SHARE_MIN_BYTES;
use crate::model::{Model, ProcRow};

/// The numbers one row shows, as rates or as totals (accumulated mode).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ProcNums {
    pub disk_read: f64,
    pub disk_write: f64,
    pub cancelled: f64,
    pub read: f64,
    pub write: f64,
    pub syscalls: f64,
    pub avg_syscall: Option<f64>,
    pub cache: Option<f64>,
    pub io_wait: Option<f64>,
}

fn totals(io: &ProcIo, reads_files: bool) -> ProcNums {
    let sys = io.syscr + io.syscw;
    ProcNums {
        disk_read: io.read_bytes as f64,
        disk_write: io.write_bytes as f64,
        cancelled: io.cancelled_write_bytes as f64,
        read: io.rchar as f64,
        write: io.wchar as f64,
        syscalls: sys as f64,
        avg_syscall: (sys > 0).then(|| (io.rchar + io.wchar) as f64 / sys as f64),
        cache: (reads_files && io.rchar >= CACHE_SHARE_MIN_BYTES)
            .then(|| (1.0 - io.read_bytes as f64 / io.rchar as f64).clamp(0.0, 1.0)),
        io_wait: None,
    }
}

/// The row's numbers in the current mode; `None` when unknown (first sample,
/// counters not readable).
pub fn nums(p: &ProcRow, accumulated: bool) -> Option<ProcNums> {
    if accumulated {
        return p.since_start.as_ref().map(|io| totals(io, p.reads_files));
    }
    let r = p.rates?;
    let sys = r.syscr_per_s + r.syscw_per_s;
    Some(ProcNums {
        disk_read: r.read_bps,
        disk_write: r.write_bps,
        cancelled: r.cancelled_write_bps,
        read: r.rchar_bps,
        write: r.wchar_bps,
        syscalls: sys,
        avg_syscall: (sys > 0.0).then(|| (r.rchar_bps + r.wchar_bps) / sys),
        cache: r.cache_share,
        io_wait: r.io_wait_pct,
    })
}

fn active(p: &ProcRow, accumulated: bool) -> bool {
    nums(p, accumulated).is_some_and(|n| n.disk_read + n.disk_write + n.cancelled + n.read + n.write > 0.0)
}

/// The command line; "[comm]" for kernel threads ("[loop0 backing I/O]
/// kworker/u8:3-loop0" for a loop worker); "(comm) cmdline" when the
/// process renamed itself (comm is not where argv[0] points), so a changed
/// comm is never invisible.
pub fn command(p: &ProcRow) -> String {
    let (comm, cmd) = (&p.raw.comm, &p.raw.cmdline);
    if let Some(w) = &p.worker {
        return format!("[{}] {}", w.label(), format::escape(comm));
    }
    if cmd.is_empty() {
        return format!("[{}]", format::escape(comm));
    }
    let argv0 = cmd.split(' ').next().unwrap_or("");
    let base = argv0.rsplit('/').next().unwrap_or(argv0);
    if base.starts_with(comm.as_str()) || comm.starts_with(base) && !base.is_empty() {
        format::escape(cmd)
    } else {
        format!("({}) {}", format::escape(comm), format::escape(cmd))
    }
}

/// Numbers sort largest first; PID and text sort ascending.
fn natural_desc(c: ProcCol) -> bool {
    !matches!(
        c,
        ProcCol::Pid | ProcCol::User | ProcCol::Prio | ProcCol::Devices | ProcCol::Command
    )
}

fn matches(p: &ProcRow, filter: &str) -> bool {
    if filter.is_empty() {
        return true;
    }
    let f = filter.to_lowercase();
    p.raw.key.pid.to_string().contains(&f)
        || p.raw.comm.to_lowercase().contains(&f)
        || p.raw.cmdline.to_lowercase().contains(&f)
        || p.raw.user.as_deref().is_some_and(|u| u.to_lowercase().contains(&f))
}

fn num_key(n: Option<ProcNums>, c: ProcCol) -> f64 {
    let Some(n) = n else { return f64::NEG_INFINITY };
    let v = match c {
        ProcCol::DiskRead => Some(n.disk_read),
        ProcCol::DiskWrite => Some(n.disk_write),
        ProcCol::Cancelled => Some(n.cancelled),
        ProcCol::Read => Some(n.read),
        ProcCol::Write => Some(n.write),
        ProcCol::Syscalls => Some(n.syscalls),
        ProcCol::AvgSyscall => n.avg_syscall,
        ProcCol::Cache => n.cache,
        ProcCol::IoWait => n.io_wait,
        _ => None,
    };
    v.unwrap_or(f64::NEG_INFINITY)
}

/// Compare two rows on `col` in its natural order (numbers largest first,
/// text and PIDs ascending), ties broken by PID so the order is stable.
fn compare(a: &ProcRow, b: &ProcRow, col: ProcCol, accumulated: bool) -> Ordering {
    let by_pid = a.raw.key.pid.cmp(&b.raw.key.pid);
    let o = match col {
        ProcCol::Pid => Ordering::Equal,
        ProcCol::User => a.raw.user.cmp(&b.raw.user),
        ProcCol::Prio => prio_rank(a).cmp(&prio_rank(b)),
        ProcCol::Command => command(a).cmp(&command(b)),
        ProcCol::Devices => a.devices.cmp(&b.devices),
        // Busiest first; for disk reads, busiest on the disk overall then.
        _ => {
            let ka = num_key(nums(a, accumulated), col);
            let kb = num_key(nums(b, accumulated), col);
            kb.partial_cmp(&ka).unwrap_or(Ordering::Equal).then_with(|| {
                let t = |p: &ProcRow| nums(p, accumulated).map_or(f64::NEG_INFINITY, |n| n.disk_read + n.disk_write);
                t(b).partial_cmp(&t(a)).unwrap_or(Ordering::Equal)
            })
        }
    };
    o.then(by_pid)
}

fn prio_rank(p: &ProcRow) -> (u8, u8) {
    use crate::collect::process::IoClass;
    match p.raw.ioprio {
        Some(io) => match io.class {
            IoClass::RealTime => (0, io.level),
            IoClass::BestEffort => (1, io.level),
            IoClass::None => (1, ((p.raw.nice.clamp(-20, 19) + 20) / 5) as u8),
            IoClass::Idle => (2, 0),
        },
        None => (3, 0),
    }
}

/// The rows in display order after filter, only-active and sort.
pub fn visible<'a>(model: &'a Model, view: &ViewState) -> Vec<&'a ProcRow> {
    let mut v: Vec<&ProcRow> = model
        .procs
        .iter()
        .filter(|p| !view.only_active || active(p, view.accumulated))
        .filter(|p| matches(p, &view.filter))
        .collect();
    v.sort_by(|a, b| {
        let o = compare(a, b, view.sort, view.accumulated);
        if view.reverse { o.reverse() } else { o }
    });
    v
}

/// Columns kept longest first; the command always gets what is left.
const KEEP_ORDER: [ProcCol; 14] = [
    ProcCol::Pid,
    ProcCol::Command,
    ProcCol::DiskRead,
    ProcCol::DiskWrite,
    ProcCol::Read,
    ProcCol::Write,
    ProcCol::User,
    ProcCol::Prio,
    ProcCol::Devices,
    ProcCol::Cache,
    ProcCol::Cancelled,
    ProcCol::AvgSyscall,
    ProcCol::Syscalls,
    ProcCol::IoWait,
];

/// The command keeps at least this much before optional columns get room.
const COMMAND_MIN: u16 = 28;

fn width(c: ProcCol) -> u16 {
    match c {
        ProcCol::Pid => 7,
        ProcCol::User => 9,
        ProcCol::Prio => 5,
        ProcCol::DiskRead | ProcCol::DiskWrite | ProcCol::Cancelled | ProcCol::Read | ProcCol::Write => 10,
        ProcCol::Devices => 10,
        ProcCol::Syscalls => 7,
        ProcCol::AvgSyscall => 9,
        ProcCol::Cache => 5,
        ProcCol::IoWait => 5,
        ProcCol::Command => COMMAND_MIN,
    }
}

pub fn fit_columns(wanted: &[ProcCol], avail: u16) -> Vec<ProcCol> {
    let mut used = 0u16;
    let mut keep = Vec::new();
    for c in KEEP_ORDER {
        if !wanted.contains(&c) && !matches!(c, ProcCol::Pid | ProcCol::Command) {
            continue;
        }
        let w = width(c) + u16::from(!keep.is_empty());
        if used + w > avail {
            break;
        }
        used += w;
        keep.push(c);
    }
    ProcCol::ALL.into_iter().filter(|c| keep.contains(c)).collect()
}

pub fn header(c: ProcCol, accumulated: bool) -> &'static str {
    match (c, accumulated) {
        (ProcCol::Pid, _) => "PID",
        (ProcCol::User, _) => "USER",
        (ProcCol::Prio, _) => "PRIO",
        (ProcCol::DiskRead, false) => "DISK RD/s",
        (ProcCol::DiskRead, true) => "DISK RD",
        (ProcCol::DiskWrite, false) => "DISK WR/s",
        (ProcCol::DiskWrite, true) => "DISK WR",
        (ProcCol::Cancelled, false) => "CANCEL/s",
        (ProcCol::Cancelled, true) => "CANCELLED",
        (ProcCol::Devices, _) => "DEVICES",
        (ProcCol::Read, false) => "READ/s",
        (ProcCol::Read, true) => "READ",
        (ProcCol::Write, false) => "WRITE/s",
        (ProcCol::Write, true) => "WRITE",
        (ProcCol::Syscalls, false) => "SYSC/s",
        (ProcCol::Syscalls, true) => "SYSCALLS",
        (ProcCol::AvgSyscall, _) => "B/SYSCALL",
        (ProcCol::Cache, _) => "CACHE",
        (ProcCol::IoWait, _) => "IO%",
        (ProcCol::Command, _) => "COMMAND",
    }
}

fn bytes(v: f64, accumulated: bool) -> String {
    if accumulated {
        format::decimal(v)
    } else {
        format::rate(v)
    }
}

fn cell_text(c: ProcCol, p: &ProcRow, n: Option<ProcNums>, accumulated: bool) -> String {
    let missing = || match &p.raw.io {
        Err(IoUnavailable::PermissionDenied) => "denied".to_string(),
        _ => format::NA.to_string(),
    };
    match c {
        ProcCol::Pid => p.raw.key.pid.to_string(),
        ProcCol::User => p
            .raw
            .user
            .as_deref()
            .map_or_else(|| p.raw.uid.map_or("?".to_string(), |u| u.to_string()), format::escape),
        ProcCol::Prio => p.raw.ioprio.map_or(format::NA.to_string(), |io| io.label(p.raw.nice)),
        ProcCol::Command => command(p),
        ProcCol::Devices => devices_text(p),
        _ => {
            // Unknown numbers: say why once, in the first number column.
            let Some(n) = n else {
                return if c == ProcCol::DiskRead {
                    missing()
                } else {
                    String::new()
                };
            };
            match c {
                ProcCol::DiskRead => bytes(n.disk_read, accumulated),
                ProcCol::DiskWrite => bytes(n.disk_write, accumulated),
                ProcCol::Cancelled => bytes(n.cancelled, accumulated),
                ProcCol::Read => bytes(n.read, accumulated),
                ProcCol::Write => bytes(n.write, accumulated),
                ProcCol::Syscalls => format::num(n.syscalls),
                ProcCol::AvgSyscall => n.avg_syscall.map_or("-".to_string(), format::binary),
                ProcCol::Cache => match n.cache {
                    Some(c) => format!("{:.0}%", c * 100.0),
                    // Reading, but no file or block device open for
                    // reading: pipes, sockets, /dev/zero (no page cache).
                    None if !p.reads_files && n.read > 0.0 => format::NA.to_string(),
                    None => "-".to_string(),
                },
                ProcCol::IoWait => n.io_wait.map_or(format::NA.to_string(), |w| format!("{w:.0}")),
                _ => String::new(),
            }
        }
    }
}

fn left_aligned(c: ProcCol) -> bool {
    matches!(c, ProcCol::User | ProcCol::Prio | ProcCol::Devices | ProcCol::Command)
}

/// The devices of the process's open files, comma-separated ("-" when its
/// files were not read or hold no storage).
pub fn devices_text(p: &ProcRow) -> String {
    if p.devices.is_empty() {
        return "-".to_string();
    }
    let names: Vec<String> = p.devices.iter().map(|d| format::escape(&d.name)).collect();
    names.join(",")
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState) {
    let t = &view.theme;
    let rows = visible(model, view);
    let focused = view.focus == Pane::Processes;
    let mut title = vec![
        Span::styled(" Processes ", t.title()),
        Span::styled(format!("{}/{} ", rows.len(), model.procs.len()), t.dim()),
    ];
    if view.only_active {
        title.push(Span::styled("[active] ", t.accent()));
    }
    if !view.filter.is_empty() || view.editing_filter {
        title.push(Span::styled(
            format!("[/{}] ", format::escape(&view.filter)),
            t.accent(),
        ));
    }
    if view.accumulated {
        title.push(Span::styled("[totals since start] ", t.accent()));
    }
    let block = pane_block(Line::from(title), focused, t);
    let inner_w = area.width.saturating_sub(2);
    let cols = fit_columns(&view.proc_cols, inner_w);
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| match c {
            ProcCol::Command => Constraint::Fill(1),
            c => Constraint::Length(width(*c)),
        })
        .collect();
    let arrow = if natural_desc(view.sort) != view.reverse {
        "▼"
    } else {
        "▲"
    };
    let head = Row::new(cols.iter().map(|c| {
        let h = header(*c, view.accumulated);
        let h = if *c == view.sort {
            format!("{h}{arrow}")
        } else {
            h.to_string()
        };
        let w = usize::from(width(*c));
        Cell::from(if left_aligned(*c) { h } else { format!("{h:>w$}") })
    }))
    .style(t.title());
    // Only the rows on screen are built: the window ends at the selection
    // when it is below the first page (as TableState would scroll).
    let page = usize::from(area.height.saturating_sub(3)).max(1);
    let selected = view.proc_sel.and_then(|k| rows.iter().position(|p| p.raw.key == k));
    let offset = selected.filter(|_| focused).map_or(0, |s| (s + 1).saturating_sub(page));
    let body = rows.iter().skip(offset).take(page).map(|p| {
        let n = nums(p, view.accumulated);
        let busy = n.is_some_and(|n| n.disk_read + n.disk_write > 0.0);
        let row_style = if n.is_none() || !active(p, view.accumulated) {
            t.dim()
        } else {
            Style::new()
        };
        Row::new(cols.iter().map(|c| {
            let s = cell_text(*c, p, n, view.accumulated);
            let w = usize::from(width(*c));
            match c {
                ProcCol::Command => Cell::from(s),
                c if left_aligned(*c) => Cell::from(truncate(&s, w)),
                ProcCol::DiskRead | ProcCol::DiskWrite if busy => {
                    Cell::from(Span::styled(format!("{s:>w$}"), t.accent()))
                }
                _ => Cell::from(format!("{s:>w$}")),
            }
        }))
        .style(row_style)
    });
    let shown = selected.filter(|_| focused).map(|s| s - offset);
    let mut state = TableState::default().with_selected(shown);
    let table = Table::new(body, widths)
        .header(head)
        .block(block)
        .column_spacing(1)
        .row_highlight_style(t.selected());
    frame.render_stateful_widget(table, area, &mut state);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_and_command_stays() {
        let all = ProcCol::ALL.to_vec();
        assert_eq!(
            fit_columns(&all, 60),
            [ProcCol::Pid, ProcCol::DiskRead, ProcCol::DiskWrite, ProcCol::Command]
        );
        // 120 columns: the command keeps room, IO% and syscalls/s go first.
        let at120 = fit_columns(&all, 118);
        assert!(
            !at120.contains(&ProcCol::IoWait) && at120.contains(&ProcCol::Devices),
            "{at120:?}"
        );
        assert_eq!(fit_columns(&all, 300), all);
    }

    #[test]
    fn totals_give_average_and_cache_share() {
        let io = ProcIo {
            rchar: 1_000_000,
            wchar: 0,
            syscr: 250,
            syscw: 0,
            read_bytes: 250_000,
            write_bytes: 0,
            cancelled_write_bytes: 0,
        };
        let n = totals(&io, true);
        assert_eq!(totals(&io, false).cache, None);
        assert_eq!(n.avg_syscall, Some(4000.0));
        assert_eq!(n.cache, Some(0.75));
        assert_eq!(n.syscalls, 250.0);
    }
}
