//! The process table of the batch text: the busiest processes by storage
//! I/O, one line each (and a `↳` line for what arrived from exited threads
//! and reaped children), then the attribution note. Its columns are
//! [`crate::present::process::PROC_COLUMNS`].

use std::fmt::Write as _;

use super::{TextStyle, attribution_note, top_procs};
use crate::cli::Units;
use crate::model::Model;
use crate::present::Align;
use crate::present::process::{ProcCol, rate_nums};
use crate::present::text::CHILDREN_LABEL;

/// One line of the process table: `cell` of each column shown (the last,
/// the command, is free text).
fn proc_line<S: std::fmt::Display>(out: &mut String, wide: bool, mut cell: impl FnMut(ProcCol) -> S) {
    for c in ProcCol::ALL {
        let d = c.def();
        if d.wide_only && !wide {
            continue;
        }
        let v = cell(c);
        let w = d.text_width;
        let _ = match (d.text_width, d.text_align) {
            (0, _) => writeln!(out, "{v}"),
            (_, Align::Left) => write!(out, "{v:<w$} "),
            (_, Align::Right) => write!(out, "{v:>w$} "),
        };
    }
}

/// The busiest processes, and what the rows can attribute.
pub(super) fn lines(out: &mut String, model: &Model, top: usize, style: TextStyle) {
    let units = style.units;
    out.push('\n');
    proc_line(out, style.wide, |c| match units {
        Units::Human => c.def().text_head,
        Units::Raw => c.def().raw_head,
    });
    for p in top_procs(model, top) {
        let Some(r) = p.rates.as_deref() else { continue };
        let n = rate_nums(r);
        proc_line(out, style.wide, |c| c.text(p, &n, units));
        if let Some(c) = p.children_rates.as_deref().filter(|c| c.is_active()) {
            let n = rate_nums(c);
            proc_line(out, style.wide, |col| match col {
                ProcCol::Command => CHILDREN_LABEL.to_string(),
                col if col.def().children.1 => col.text(p, &n, units),
                _ => String::new(),
            });
        }
    }
    let _ = writeln!(out, "{}", attribution_note(model));
}
