//! The live request log (block tracing): the last completed requests,
//! newest first, like iosnoop — when each completed (local wall-clock
//! time, `HH:MM:SS.mmm`), command, pid, op, device, sector, bytes and its
//! queue, device and total time. Frozen with `f`, filtered by command, pid or
//! device with `/` while the pane has the focus.

use jiff::tz::TimeZone;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{Pane, ViewState, pane_block};
use crate::format;
use crate::model::Model;
use crate::model::trace::requests::Request;
use crate::present::process::ProcCol;

/// The device name of a request (its number when the device is not listed).
pub fn device_name(model: &Model, r: &Request) -> String {
    model
        .devices
        .iter()
        .find(|d| d.major == r.dev.major && d.minor == r.dev.minor)
        .map_or_else(
            || format!("{}:{}", r.dev.major, r.dev.minor),
            |d| format::escape(&d.name),
        )
}

/// The process id shown: the thread group when known, else the thread.
fn pid(r: &Request) -> i32 {
    if r.task.tgid > 0 { r.task.tgid } else { r.task.pid }
}

fn command(r: &Request) -> String {
    let n = r.task.comm.iter().position(|&c| c == 0).unwrap_or(r.task.comm.len());
    let c = format::escape_bytes(&r.task.comm[..n]);
    if r.task.kernel { format!("[{c}]") } else { c }
}

/// Whether a request passes the log filter: digits match the pid exactly,
/// other text a part of the command or the device name (case-insensitive).
pub fn matches(filter: &str, r: &Request, device: &str) -> bool {
    let f = filter.trim();
    if f.is_empty() {
        return true;
    }
    if f.bytes().all(|b| b.is_ascii_digit()) {
        return f.parse::<i32>().is_ok_and(|p| p == pid(r));
    }
    let f = f.to_lowercase();
    command(r).to_lowercase().contains(&f) || device.to_lowercase().contains(&f)
}

fn lat(v: Option<u64>) -> String {
    v.map_or_else(|| format::NA.to_string(), super::latency::ms3)
}

/// The columns' widths, for the header and the rows alike.
/// Cells of a row: time, command, pid, op, device, sector, bytes and the
/// queue, device and total times.
type Cells = [String; 10];

/// Width the full row takes; below it the narrow row drops the time and
/// narrows the names so that the three times stay.
const FULL_WIDTH: usize = 103;

fn row(c: &Cells, narrow: bool) -> String {
    if narrow {
        format!(
            "{:<10} {:>7} {:>2} {:<8} {:>11} {:>7} {:>7} {:>7} {:>7}",
            super::devices::truncate(&c[1], 10),
            c[2],
            c[3],
            super::devices::truncate(&c[4], 8),
            c[5],
            c[6],
            c[7],
            c[8],
            c[9]
        )
    } else {
        format!(
            "{:<12} {:<16} {:>7} {:>2} {:<10} {:>12} {:>8} {:>9} {:>9} {:>9}",
            c[0],
            super::devices::truncate(&c[1], 16),
            c[2],
            c[3],
            super::devices::truncate(&c[4], 10),
            c[5],
            c[6],
            c[7],
            c[8],
            c[9]
        )
    }
}

fn head(narrow: bool) -> String {
    let (q, d, t) = if narrow {
        ("Q ms", "DEV ms", "TOT ms")
    } else {
        ("QUEUE ms", "DEVICE ms", "TOTAL ms")
    };
    let c = [
        "TIME",
        ProcCol::Command.head(false),
        ProcCol::Pid.head(false),
        "OP",
        "DEVICE",
        "SECTOR",
        "BYTES",
        q,
        d,
        t,
    ]
    .map(String::from);
    row(&c, narrow)
}

fn clock(model: &Model, r: &Request, tz: &TimeZone) -> String {
    if model.wall_ns == 0 {
        return format::NA.to_string();
    }
    let unix_ns = model.wall_ns.saturating_sub(model.mono_ns.saturating_sub(r.done_ts));
    match jiff::Timestamp::from_nanosecond(i128::from(unix_ns)) {
        Ok(ts) => ts.to_zoned_datetime(tz.clone()).strftime("%H:%M:%S%.3f").to_string(),
        Err(_) => format::NA.to_string(),
    }
}

fn line(model: &Model, r: &Request, dev: &str, tz: &TimeZone, narrow: bool) -> String {
    let c = [
        clock(model, r, tz),
        command(r),
        pid(r).to_string(),
        r.op.letter().to_string(),
        dev.to_string(),
        r.sector.to_string(),
        r.bytes.to_string(),
        lat(r.queue_ns),
        lat(r.device_ns),
        lat(r.total_ns),
    ];
    row(&c, narrow)
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState) {
    let t = &view.theme;
    let focused = view.focus == Pane::Requests;
    let log = view.log.frozen.as_deref().unwrap_or(&model.trace.log);
    let mut title = vec![Span::styled(" Requests ", t.title())];
    // Sampled: the log holds the traced windows' requests only.
    if let Some(tag) = model.trace.sampled().filter(|_| view.log.frozen.is_none()) {
        title.push(Span::styled(
            format!("{tag}: windows only "),
            t.severity(super::theme::Severity::Warn),
        ));
    }
    if view.log.frozen.is_some() {
        title.push(Span::styled(
            "FROZEN (f resumes) ",
            t.severity(super::theme::Severity::Warn),
        ));
    }
    if (view.editing_filter && focused) || !view.log.filter.is_empty() {
        let cursor = if view.editing_filter && focused { "▏" } else { "" };
        title.push(Span::styled(
            format!("filter: {}{cursor} ", format::escape(&view.log.filter)),
            t.accent(),
        ));
    }
    let block = pane_block(Line::from(title), focused, t);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if !model.trace.active {
        let why = model.trace.reason.as_deref().unwrap_or("not started");
        let text = format!("no request log: block tracing is off ({})", format::escape(why));
        frame.render_widget(Paragraph::new(Span::styled(text, t.dim())), inner);
        return;
    }
    let w = usize::from(inner.width);
    let narrow = w < FULL_WIDTH;
    let rows = usize::from(inner.height.saturating_sub(1));
    let mut lines = vec![Line::styled(super::devices::truncate(&head(narrow), w), t.title())];
    let mut shown = 0;
    let tz = TimeZone::system();
    for r in log.iter().rev() {
        if shown == rows {
            break;
        }
        let dev = device_name(model, r);
        if !matches(&view.log.filter, r, &dev) {
            continue;
        }
        let style = if r.error != 0 {
            t.severity(super::theme::Severity::Crit)
        } else {
            Default::default()
        };
        lines.push(Line::styled(
            super::devices::truncate(&line(model, r, &dev, &tz, narrow), w),
            style,
        ));
        shown += 1;
    }
    if shown == 0 {
        let why = if log.is_empty() {
            "no request completed yet"
        } else {
            "no request matches the filter"
        };
        lines.push(Line::styled(why, t.dim()));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::trace::requests::{Dev, Op, Task};

    #[test]
    fn log_time_is_the_wall_clock_of_the_completion() {
        let mut m = Model::default();
        // sample at 2026-11-23T16:20:01.500Z, monotonic 1000 s
        m.wall_ns = 1_795_450_801_500_000_000;
        m.mono_ns = 1_000_000_000_000;
        let mut comm = [0u8; 16];
        comm[..3].copy_from_slice(b"fio");
        let r = Request {
            dev: Dev { major: 7, minor: 0 },
            op: Op::Read,
            sector: 2048,
            bytes: 4096,
            // completed 1.250 s before the sample
            done_ts: 998_750_000_000,
            queue_ns: Some(2_000),
            wait_ns: Some(3_000),
            device_ns: Some(48_000),
            total_ns: Some(50_000),
            task: Task {
                pid: 4250,
                tgid: 4242,
                kernel: false,
                comm,
            },
            error: 0,
        };
        let utc = TimeZone::UTC;
        let l = line(&m, &r, "loop0", &utc, false);
        assert!(l.starts_with("16:20:00.250 fio "), "{l}");
        // the header's columns line up with the row's
        let h = head(false);
        assert_eq!(h.len(), FULL_WIDTH);
        assert_eq!(l.len(), h.len(), "{l}\n{h}");
        assert_eq!(l.find(" 4242 ").map(|i| i + 5), h.find(" PID ").map(|i| i + 4));
        assert_eq!(l.rfind(" 0.050").map(|i| i + 6), Some(h.len()));
        let plus2 = TimeZone::fixed(jiff::tz::offset(2));
        assert!(line(&m, &r, "loop0", &plus2, false).starts_with("18:20:00.250 "));
        // narrow: the three times end where their headings do, in 80 columns
        let (n, nh) = (line(&m, &r, "loop0", &utc, true), head(true));
        assert!(nh.len() <= 78 && n.len() == nh.len(), "{n}\n{nh}");
        assert!(
            n.ends_with("   0.002   0.048   0.050") && nh.ends_with("    Q ms  DEV ms  TOT ms"),
            "{n}\n{nh}"
        );
        // a sample without wall-clock time
        m.wall_ns = 0;
        assert!(line(&m, &r, "loop0", &utc, false).starts_with("n/a          fio"));
    }
}
