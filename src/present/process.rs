//! The process table: every column of the processes pane, the batch
//! text's process section and `--csv processes`, defined once.

use std::cmp::Ordering;

use super::text::{command, devices_text};
use super::{Align, Out, column_table};
use crate::cli::Units;
use crate::format;
use crate::model::process::{CACHE_SHARE_MIN_BYTES, ProcRates};
use crate::model::{IoClass, ProcIo, ProcRow};

/// One column of the process table.
#[derive(Debug)]
pub struct ProcColumn {
    pub id: ProcCol,
    /// Name in the config file (`columns.processes`), also the sort key.
    pub key: &'static str,
    /// Dashboard heading, for rates and for totals since start (`c`).
    pub head: &'static str,
    pub head_total: &'static str,
    /// Batch text heading in human units, and in raw units (one word, for
    /// awk).
    pub text_head: &'static str,
    pub raw_head: &'static str,
    /// `--csv processes` header name.
    pub csv_head: &'static str,
    /// The JSON fields of a process the column shows (`rates.` for the
    /// serialized [`ProcRates`]): public names, kept as they are.
    pub json: &'static [&'static str],
    /// The exporter's per-command counters the column shows (public names).
    pub metric: &'static [&'static str],
    /// Dashboard width (the command's: its minimum) and alignment.
    pub width: u16,
    pub align: Align,
    /// Batch text width and alignment (the last column is free text).
    pub text_width: usize,
    pub text_align: Align,
    /// Rank in which a narrow dashboard keeps the columns (0 longest).
    pub keep: u8,
    /// Shown on the `↳` line of exited threads and children: on the
    /// dashboard, in the batch text.
    pub children: (bool, bool),
    /// In the batch text only with `--wide`.
    pub wide_only: bool,
    pub value: Value,
}

/// What a column shows of a row.
#[derive(Debug)]
pub enum Value {
    /// A number of the row's [`ProcNums`] (sorted largest first), in `Fmt`.
    Num(fn(&ProcNums) -> Option<f64>, Fmt),
    /// Text (sorted ascending, by `order` or else by PID).
    Text {
        text: fn(&ProcRow, Out) -> String,
        order: Option<fn(&ProcRow, &ProcRow) -> Ordering>,
    },
}

/// How a number is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fmt {
    /// Bytes per second (bytes, as totals).
    Bytes,
    /// A count per second (a count, as totals).
    Count,
    /// Bytes per system call; `-` on the dashboard without calls.
    PerCall,
    /// A share 0..1, shown in percent.
    Share,
    /// A percentage.
    Pct,
}

impl Fmt {
    /// The dashboard's text of `v` (of row `p` with numbers `n`).
    pub fn pane(self, v: Option<f64>, accumulated: bool, p: &ProcRow, n: &ProcNums) -> String {
        let Some(v) = v else {
            return match self {
                Fmt::PerCall => "-".to_string(),
                // Reading, but no file or block device open for reading:
                // pipes, sockets, /dev/zero (no page cache).
                Fmt::Share if p.reads_files || n.read <= 0.0 => "-".to_string(),
                _ => format::NA.to_string(),
            };
        };
        match self {
            Fmt::Bytes if accumulated => format::decimal(v),
            Fmt::Bytes => format::rate(v),
            Fmt::Count => format::num(v),
            Fmt::PerCall => format::binary(v),
            Fmt::Share => format!("{:.0}%", v * 100.0),
            Fmt::Pct => format!("{v:.0}"),
        }
    }

    /// The batch text's value of `v` in `units`.
    pub fn text(self, v: Option<f64>, units: Units) -> String {
        let Some(v) = v else { return format::NA.to_string() };
        let raw = units == Units::Raw;
        match self {
            Fmt::Bytes => super::units::rate_in(v, units),
            Fmt::Count | Fmt::PerCall | Fmt::Pct if raw => format!("{v:.0}"),
            Fmt::Count => format::num(v),
            Fmt::PerCall => format::binary(v),
            // Raw: a plain number of percent, like io%.
            Fmt::Share => format!("{:.0}{}", v * 100.0, if raw { "" } else { "%" }),
            Fmt::Pct => format!("{v:.0}"),
        }
    }

    /// The CSV value of `v`: a plain number, `n/a` when unknown.
    pub fn csv(self, v: Option<f64>) -> String {
        let (v, prec) = match self {
            Fmt::Bytes | Fmt::PerCall => (v, 0),
            Fmt::Count => (v, 2),
            Fmt::Share => (v.map(|s| s * 100.0), 1),
            Fmt::Pct => (v, 1),
        };
        v.filter(|v| v.is_finite())
            .map_or_else(|| format::NA.to_string(), |v| format!("{v:.prec$}"))
    }
}

/// A byte column (storage or syscall bytes).
const fn bytes(get: fn(&ProcNums) -> Option<f64>) -> Value {
    Value::Num(get, Fmt::Bytes)
}

const fn text(text: fn(&ProcRow, Out) -> String, order: Option<fn(&ProcRow, &ProcRow) -> Ordering>) -> Value {
    Value::Text { text, order }
}

const R: Align = Align::Right;
const L: Align = Align::Left;
/// What a narrow dashboard keeps of the command before optional columns
/// get room (at 80 columns: PID, disk and syscall reads, disk writes and
/// DEVICES).
pub const COMMAND_MIN: u16 = 26;

column_table! {
    /// A column of the processes pane (also the sort keys).
    enum ProcCol, static PROC_COLUMNS: ProcColumn = [
        Pid {
            key: "pid", head: "PID", head_total: "PID", text_head: "PID", raw_head: "PID", csv_head: "pid",
            json: &["pid"], metric: &[], width: 7, align: R, text_width: 8, text_align: R, keep: 0,
            children: (false, false), wide_only: false,
            value: text(|p, _| p.raw.key.pid.to_string(), None),
        },
        User {
            key: "user", head: "USER", head_total: "USER", text_head: "user", raw_head: "user", csv_head: "user",
            json: &["user"], metric: &[], width: 9, align: L, text_width: 10, text_align: L, keep: 7,
            children: (false, false), wide_only: false,
            value: text(user, Some(|a, b| a.raw.user.cmp(&b.raw.user))),
        },
        Prio {
            key: "prio", head: "PRIO", head_total: "PRIO", text_head: "prio", raw_head: "prio", csv_head: "prio",
            json: &["ioprio"], metric: &[], width: 5, align: L, text_width: 7, text_align: R, keep: 8,
            children: (false, false), wide_only: false,
            value: text(
                |p, _| p.raw.ioprio.map_or(format::NA.to_string(), |io| io.label(p.raw.nice)),
                Some(|a, b| prio_rank(a).cmp(&prio_rank(b))),
            ),
        },
        DiskRead {
            key: "disk_read", head: "DISK RD/s", head_total: "DISK RD", text_head: "disk rd/s",
            raw_head: "disk_rd_B/s", csv_head: "disk_rd_B/s", json: &["rates.read_bps"],
            metric: &["process_read_bytes"], width: 10, align: R, text_width: 11, text_align: R, keep: 2,
            children: (true, true), wide_only: false, value: bytes(|n| Some(n.disk_read)),
        },
        DiskWrite {
            key: "disk_write", head: "DISK WR/s", head_total: "DISK WR", text_head: "disk wr/s",
            raw_head: "disk_wr_B/s", csv_head: "disk_wr_B/s", json: &["rates.write_bps"],
            metric: &["process_dirtied_bytes"], width: 10, align: R, text_width: 11, text_align: R, keep: 3,
            children: (true, true), wide_only: false, value: bytes(|n| Some(n.disk_write)),
        },
        Cancelled {
            key: "cancelled_write", head: "CANCEL/s", head_total: "CANCELLED", text_head: "cancel/s",
            raw_head: "cancel_B/s", csv_head: "cancel_B/s", json: &["rates.cancelled_write_bps"],
            metric: &["process_cancelled_write_bytes"], width: 10, align: R, text_width: 11, text_align: R,
            keep: 10, children: (false, true), wide_only: false, value: bytes(|n| Some(n.cancelled)),
        },
        Read {
            key: "read", head: "READ/s", head_total: "READ", text_head: "read/s", raw_head: "read_B/s",
            csv_head: "read_B/s", json: &["rates.rchar_bps"], metric: &["process_syscall_read_bytes"],
            width: 10, align: R, text_width: 11, text_align: R, keep: 4, children: (true, true),
            wide_only: false, value: bytes(|n| Some(n.read)),
        },
        Write {
            key: "write", head: "WRITE/s", head_total: "WRITE", text_head: "write/s", raw_head: "write_B/s",
            csv_head: "write_B/s", json: &["rates.wchar_bps"], metric: &["process_syscall_written_bytes"],
            width: 10, align: R, text_width: 11, text_align: R, keep: 6, children: (true, true),
            wide_only: false, value: bytes(|n| Some(n.write)),
        },
        Syscalls {
            key: "syscalls", head: "SYSC/s", head_total: "SYSCALLS", text_head: "sysc/s", raw_head: "sysc/s",
            csv_head: "sysc/s", json: &["rates.syscr_per_s", "rates.syscw_per_s"],
            metric: &["process_read_syscalls", "process_write_syscalls"], width: 7, align: R, text_width: 8,
            text_align: R, keep: 12, children: (true, true), wide_only: false,
            value: Value::Num(|n| Some(n.syscalls), Fmt::Count),
        },
        /// (rchar + wchar) / (syscr + syscw).
        AvgSyscall {
            key: "avg_syscall", head: "B/SYSCALL", head_total: "B/SYSCALL", text_head: "B/sysc",
            raw_head: "B/sysc", csv_head: "B/sysc", json: &[], metric: &[], width: 9, align: R,
            text_width: 9, text_align: R, keep: 11, children: (false, false), wide_only: false,
            value: Value::Num(|n| n.avg_syscall, Fmt::PerCall),
        },
        Cache {
            key: "cache", head: "CACHE", head_total: "CACHE", text_head: "cache", raw_head: "cache%",
            csv_head: "cache%", json: &["rates.cache_share"], metric: &[], width: 5, align: R, text_width: 6,
            text_align: R, keep: 9, children: (false, false), wide_only: false,
            value: Value::Num(|n| n.cache, Fmt::Share),
        },
        /// The column the dashboard gives up first: in the batch text only
        /// with `--wide`, so that the default table fits 132 columns before
        /// the command.
        IoWait {
            key: "io_wait", head: "IO%", head_total: "IO%", text_head: "io%", raw_head: "io%", csv_head: "io%",
            json: &["rates.io_wait_pct"], metric: &[], width: 5, align: R, text_width: 6, text_align: R,
            keep: 13, children: (false, false), wide_only: true, value: Value::Num(|n| n.io_wait, Fmt::Pct),
        },
        /// Share of the interval paused by the dirty throttle (traced
        /// `balance_dirty_pages`; n/a untraced): given up even before IO%,
        /// in the batch text only with `--wide`.
        DirtyPaused {
            key: "dirty_paused", head: "PAUSE%", head_total: "PAUSE%", text_head: "pause%",
            raw_head: "dirty_pause%", csv_head: "dirty_pause%",
            json: &["rates.dirty_paused_pct", "rates.dirty_paused_ms", "rates.dirty_pauses", "rates.dirty_max_pause_ms"],
            metric: &["process_dirty_paused_seconds", "process_dirty_pauses"], width: 6, align: R, text_width: 7,
            text_align: R, keep: 14, children: (false, false), wide_only: true,
            value: Value::Num(|n| n.dirty_paused, Fmt::Pct),
        },
        Devices {
            key: "devices", head: "DEVICES", head_total: "DEVICES", text_head: "devices", raw_head: "devices",
            csv_head: "devices", json: &["devices"], metric: &[], width: 10, align: L, text_width: 12,
            text_align: L, keep: 5, children: (false, false), wide_only: false,
            value: text(|p, _| devices_text(p), Some(|a, b| a.devices.cmp(&b.devices))),
        },
        /// Free text, last: takes what is left.
        Command {
            key: "command", head: "COMMAND", head_total: "COMMAND", text_head: "command", raw_head: "command",
            csv_head: "command", json: &["comm", "cmdline"], metric: &[], width: COMMAND_MIN, align: L,
            text_width: 0, text_align: L, keep: 1, children: (false, false), wide_only: false,
            value: text(|p, _| command(p), Some(|a, b| command(a).cmp(&command(b)))),
        },
    ];
}

impl ProcCol {
    /// The dashboard heading, for rates or totals since start.
    pub fn head(self, accumulated: bool) -> &'static str {
        let d = self.def();
        if accumulated { d.head_total } else { d.head }
    }

    /// Numbers sort largest first; PID and text sort ascending.
    pub fn natural_desc(self) -> bool {
        matches!(self.def().value, Value::Num(..))
    }

    /// The number the column shows and sorts by (`None` for text).
    pub fn number(self, n: &ProcNums) -> Option<f64> {
        match self.def().value {
            Value::Num(get, _) => get(n),
            Value::Text { .. } => None,
        }
    }

    /// The dashboard's text of row `p` (numbers `n`, `None` when unknown:
    /// empty).
    pub fn pane_text(self, p: &ProcRow, n: Option<&ProcNums>, accumulated: bool) -> String {
        match (&self.def().value, n) {
            (Value::Text { text, .. }, _) => text(p, Out::Pane),
            (Value::Num(get, fmt), Some(n)) => fmt.pane(get(n), accumulated, p, n),
            (Value::Num(..), None) => String::new(),
        }
    }

    /// The batch text's value of row `p` with rates `n`.
    pub fn text(self, p: &ProcRow, n: &ProcNums, units: Units) -> String {
        match &self.def().value {
            Value::Text { text, .. } => text(p, Out::Text),
            Value::Num(get, fmt) => fmt.text(get(n), units),
        }
    }

    /// The CSV field of row `p` with rates `n` (text: the batch text's
    /// value, quoted per RFC 4180 where needed).
    pub fn csv(self, p: &ProcRow, n: &ProcNums) -> String {
        match &self.def().value {
            Value::Text { text, .. } => super::text::csv_field(&text(p, Out::Text)),
            Value::Num(get, fmt) => fmt.csv(get(n)),
        }
    }
}

/// The owner: the user name escaped; the dashboard falls back on the uid.
fn user(p: &ProcRow, out: Out) -> String {
    match (p.raw.user.as_deref(), out) {
        (Some(u), _) => format::escape(u),
        (None, Out::Pane) => p.raw.uid.map_or("?".to_string(), |u| u.to_string()),
        (None, Out::Text) => "?".to_string(),
    }
}

/// I/O priority order: real-time, best-effort (by level; by nice without
/// a class), idle, unknown.
pub fn prio_rank(p: &ProcRow) -> (u8, u8) {
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
    pub dirty_paused: Option<f64>,
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
        dirty_paused: None,
    }
}

/// The row's numbers in the current mode; `None` when unknown (first sample,
/// counters not readable).
pub fn nums(p: &ProcRow, accumulated: bool) -> Option<ProcNums> {
    if accumulated {
        return p.since_start.as_deref().map(|io| totals(io, p.reads_files));
    }
    p.rates.as_deref().map(rate_nums)
}

/// The numbers of a row's rates (or of its exited threads and children).
pub fn rate_nums(r: &ProcRates) -> ProcNums {
    let sys = r.syscr_per_s + r.syscw_per_s;
    ProcNums {
        disk_read: r.read_bps,
        disk_write: r.write_bps,
        cancelled: r.cancelled_write_bps,
        read: r.rchar_bps,
        write: r.wchar_bps,
        syscalls: sys,
        avg_syscall: (sys > 0.0).then(|| (r.rchar_bps + r.wchar_bps) / sys),
        cache: r.cache_share,
        io_wait: r.io_wait_pct,
        dirty_paused: r.dirty_paused_pct,
    }
}

/// The dirty throttle's figures of rates `r` for the process detail and
/// the batch text: paused share, time, pauses and the longest, or n/a
/// with `why` (the throttle is not traced).
pub fn dirty_text(r: Option<&ProcRates>, why: Option<&str>, sampled: Option<&str>) -> String {
    match r.map(|r| {
        (
            r.dirty_paused_pct,
            r.dirty_paused_ms,
            r.dirty_pauses,
            r.dirty_max_pause_ms,
        )
    }) {
        Some((Some(pct), Some(ms), Some(n), Some(max))) => match sampled {
            // Sampled: time and pauses scaled to the interval, the longest
            // is of the traced windows.
            Some(tag) => format!(
                "~paused {pct:.0}% of the interval (~{ms} ms in ~{n} pauses, longest traced {max} ms; \
                 traced balance_dirty_pages, {tag})"
            ),
            None => format!(
                "paused {pct:.0}% of the interval ({ms} ms in {n} pauses, longest {max} ms; traced balance_dirty_pages)"
            ),
        },
        Some(_) => format!("{} ({})", format::NA, format::escape(why.unwrap_or("not traced"))),
        None => format!("{} (I/O counters not readable yet)", format::NA),
    }
}

/// Did I/O in the interval (or since start, in accumulated mode).
pub fn active(p: &ProcRow, accumulated: bool) -> bool {
    nums(p, accumulated).is_some_and(|n| n.disk_read + n.disk_write + n.cancelled + n.read + n.write > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sampled, the throttle's figures are marked: time and count as
    /// estimates, the longest pause as of the traced windows.
    #[test]
    fn dirty_text_marks_a_sampled_interval() {
        let r = ProcRates {
            dirty_paused_pct: Some(40.0),
            dirty_paused_ms: Some(400),
            dirty_pauses: Some(10),
            dirty_max_pause_ms: Some(60),
            ..Default::default()
        };
        assert_eq!(
            dirty_text(Some(&r), None, None),
            "paused 40% of the interval (400 ms in 10 pauses, longest 60 ms; traced balance_dirty_pages)"
        );
        assert_eq!(
            dirty_text(Some(&r), None, Some("sampled 30%")),
            "~paused 40% of the interval (~400 ms in ~10 pauses, longest traced 60 ms; \
             traced balance_dirty_pages, sampled 30%)"
        );
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
