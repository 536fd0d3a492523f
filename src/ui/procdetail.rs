//! Process detail (Enter in the processes pane): the whole command line,
//! user, state, I/O priority, cgroup, working directory, the devices it
//! uses, its I/O now and since iolens started, and its open files with
//! their positions (what it reads and writes right now); the keys for
//! signals and ionice. Reads the model's process row and the
//! [`ProcInfo`] the controller read when the detail opened.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::viewmodel::nums;
use super::{ViewState, pane_block};
use crate::format;
use crate::model::{Access, FdTarget, Model, ProcInfo, ProcKey, RawFd};

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

/// The detail's lines for process `key`.
pub fn lines(model: &Model, info: Option<&ProcInfo>, key: ProcKey) -> Vec<Line<'static>> {
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
    v.push(Line::raw(""));
    match info {
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
    let mut body = lines(model, view.proc_info.as_ref(), key);
    body.push(Line::raw(""));
    body.push(Line::styled(KEYS, t.dim()));
    frame.render_widget(Paragraph::new(body).wrap(Wrap { trim: false }), inner);
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
