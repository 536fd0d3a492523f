//! The process table of the batch text: the busiest processes by storage
//! I/O, one line each (and a `↳` line for what arrived from exited threads
//! and reaped children), then the attribution note.

use std::fmt::Write as _;

use super::{CHILDREN_LABEL, TextStyle, attribution_note, rate_in, top_procs};
use crate::cli::Units;
use crate::format;
use crate::model::Model;

/// The process table's columns before the command: width, and whether
/// left-aligned (text). `io%` is at [`IO_PCT`].
const PROC_COLS: [(usize, bool); 13] = [
    (8, false),  // PID
    (10, true),  // user
    (7, false),  // prio
    (11, false), // disk rd/s
    (11, false), // disk wr/s
    (11, false), // cancel/s
    (11, false), // read/s
    (11, false), // write/s
    (8, false),  // sysc/s
    (9, false),  // B/sysc
    (6, false),  // cache
    (6, false),  // io%
    (12, true),  // devices
];

/// `io%`, the column the dashboard gives up first: only with `--wide`,
/// so that the default table fits 132 columns before the command.
const IO_PCT: usize = 11;

/// One line of the process table: the cells of [`PROC_COLS`], then the
/// command (free text, last).
fn proc_line<S: std::fmt::Display>(out: &mut String, cells: impl IntoIterator<Item = S>, command: &str, wide: bool) {
    for (i, (c, (w, left))) in cells.into_iter().zip(PROC_COLS).enumerate() {
        if i == IO_PCT && !wide {
            continue;
        }
        let _ = if left {
            write!(out, "{c:<w$} ")
        } else {
            write!(out, "{c:>w$} ")
        };
    }
    let _ = writeln!(out, "{command}");
}

/// The busiest processes, and what the rows can attribute.
pub(super) fn lines(out: &mut String, model: &Model, top: usize, style: TextStyle) {
    let units = style.units;
    let raw = units == Units::Raw;
    // Raw: one word per column heading, for awk.
    let heads = if raw {
        ["disk_rd_B/s", "disk_wr_B/s", "cancel_B/s", "read_B/s", "write_B/s"]
    } else {
        ["disk rd/s", "disk wr/s", "cancel/s", "read/s", "write/s"]
    };
    // The byte rates and system calls of a row (or of its ↳ line).
    let rates = |r: &crate::model::process::ProcRates| {
        [
            rate_in(r.read_bps, units),
            rate_in(r.write_bps, units),
            rate_in(r.cancelled_write_bps, units),
            rate_in(r.rchar_bps, units),
            rate_in(r.wchar_bps, units),
            if raw {
                format!("{:.0}", r.syscr_per_s + r.syscw_per_s)
            } else {
                format::num(r.syscr_per_s + r.syscw_per_s)
            },
        ]
    };
    out.push('\n');
    proc_line(
        out,
        [
            "PID",
            "user",
            "prio",
            heads[0],
            heads[1],
            heads[2],
            heads[3],
            heads[4],
            "sysc/s",
            "B/sysc",
            if raw { "cache%" } else { "cache" },
            "io%",
            "devices",
        ],
        "command",
        style.wide,
    );
    for p in top_procs(model, top) {
        let Some(r) = p.rates.as_deref() else { continue };
        proc_line(
            out,
            [
                p.raw.key.pid.to_string(),
                format::escape(p.raw.user.as_deref().unwrap_or("?")),
                p.raw.ioprio.map_or(format::NA.to_string(), |io| io.label(p.raw.nice)),
            ]
            .into_iter()
            .chain(rates(r))
            .chain([
                avg_syscall(r, units),
                r.cache_share.map_or(format::NA.to_string(), |c| {
                    // Raw: a plain number of percent, like io%.
                    format!("{:.0}{}", c * 100.0, if raw { "" } else { "%" })
                }),
                r.io_wait_pct.map_or(format::NA.to_string(), |w| format!("{w:.0}")),
                crate::ui::processes::devices_text(p),
            ]),
            &crate::ui::processes::command(p),
            style.wide,
        );
        if let Some(c) = p.children_rates.as_deref().filter(|c| c.is_active()) {
            let none = || std::iter::repeat_n(String::new(), 4);
            proc_line(
                out,
                none().take(3).chain(rates(c)).chain(none()),
                CHILDREN_LABEL,
                style.wide,
            );
        }
    }
    let _ = writeln!(out, "{}", attribution_note(model));
}

/// Bytes per system call, (rchar + wchar) / (syscr + syscw), as the
/// dashboard's `B/SYSCALL`.
fn avg_syscall(r: &crate::model::process::ProcRates, units: Units) -> String {
    let sys = r.syscr_per_s + r.syscw_per_s;
    match ((sys > 0.0).then(|| (r.rchar_bps + r.wchar_bps) / sys), units) {
        (Some(b), Units::Human) => format::binary(b),
        (Some(b), Units::Raw) => format!("{b:.0}"),
        (None, _) => format::NA.to_string(),
    }
}
