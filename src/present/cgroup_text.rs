//! Cgroup text the outputs share (limits, hierarchy) and the cgroups
//! section of the batch text report (its columns: [`super::cgroup`]).

use std::fmt::Write as _;

use super::Align;
use super::cgroup::CgCol;
use super::units::rate_in;
use crate::cli::Units;
use crate::collect::cgroup::Hierarchy;
use crate::collect::cgroup::parse::Limits;
use crate::format;
use crate::model::cgroup::{CgroupRow, CgroupView};

fn opt_rate(v: Option<f64>, units: Units) -> String {
    v.map_or_else(|| format::NA.to_string(), |v| rate_in(v, units))
}

fn opt_num(v: Option<f64>) -> String {
    v.map_or_else(|| format::NA.to_string(), format::num)
}

/// "rbps 20.0 MB/s wiops 120" — the limits that are set.
pub fn limits_text(l: &Limits) -> String {
    limits_text_in(l, Units::Human)
}

/// The limits that are set, byte rates in `units` ("rbps 20000000").
fn limits_text_in(l: &Limits, units: Units) -> String {
    let mut parts = Vec::new();
    if let Some(v) = l.rbps {
        parts.push(format!("rbps {}", rate_in(v as f64, units)));
    }
    if let Some(v) = l.wbps {
        parts.push(format!("wbps {}", rate_in(v as f64, units)));
    }
    if let Some(v) = l.riops {
        parts.push(format!("riops {v}"));
    }
    if let Some(v) = l.wiops {
        parts.push(format!("wiops {v}"));
    }
    parts.join(" ")
}

/// Which hierarchy the rows come from and where the kernel counts.
pub fn hierarchy_text(v: &CgroupView) -> String {
    match (v.hierarchy, &v.counted_devices) {
        (Some(Hierarchy::V2), _) => "cgroup v2, kernel counters on every device".to_string(),
        (Some(Hierarchy::V1Blkio), Some(d)) if d.is_empty() => {
            "cgroup v1 blkio, no device has kernel counters (no throttle limit ever set)".to_string()
        }
        (Some(Hierarchy::V1Blkio), Some(d)) => format!(
            "cgroup v1 blkio, kernel counters on {}",
            d.iter().map(|n| format::escape(n)).collect::<Vec<_>>().join(" ")
        ),
        (Some(Hierarchy::V1Blkio), None) => "cgroup v1 blkio".to_string(),
        (Some(Hierarchy::V2NoIo), _) => "cgroup v2 without the io controller".to_string(),
        (None, _) => "no cgroup hierarchy".to_string(),
    }
}

/// Rows worth a line: doing I/O, or limited; busiest first, at most `top`.
pub fn shown_rows(v: &CgroupView, top: usize) -> Vec<&CgroupRow> {
    let mut rows: Vec<&CgroupRow> = v
        .rows
        .iter()
        .filter(|r| r.is_active() || r.devices.iter().any(|d| !d.effective_limits.is_empty()))
        .collect();
    rows.sort_by(|a, b| {
        b.total_bps()
            .total_cmp(&a.total_bps())
            .then_with(|| a.path.cmp(&b.path))
    });
    rows.truncate(top);
    rows
}

/// The cgroups section: the `top` busiest or limited cgroups, rates in
/// `units`; none at all with `top` 0 (as the process section).
pub fn text(out: &mut String, v: &CgroupView, top: usize, units: Units) {
    if top == 0 {
        return;
    }
    if v.hierarchy.is_none() {
        let why = v.notes.iter().map(|n| format::escape(n)).collect::<Vec<_>>().join("; ");
        let _ = writeln!(out, "\ncgroups: n/a ({why})");
        return;
    }
    let _ = writeln!(out, "\ncgroups ({})", hierarchy_text(v));
    let cols: Vec<CgCol> = CgCol::text_columns().collect();
    let line = |out: &mut String, cell: &dyn Fn(CgCol) -> String, tail: &str| {
        for &c in &cols {
            let (v, w) = (cell(c), c.def().text_width);
            let _ = match c.def().text_align {
                Align::Left => write!(out, "{v:<w$} "),
                Align::Right => write!(out, "{v:>w$} "),
            };
        }
        let _ = writeln!(out, "{tail}");
    };
    line(out, &|c| c.def().text_head.to_string(), "path");
    let shown = shown_rows(v, top);
    for r in &shown {
        line(out, &|c| c.text(r, units), &format::escape(&r.path));
        for d in &r.devices {
            let limits = limits_text_in(&d.effective_limits, units);
            let busy = d.rates.is_some_and(|x| x.total_bps() > 0.0);
            if !busy && limits.is_empty() {
                continue;
            }
            let mark = match d.at_limit {
                Some(true) => format!(
                    "  AT LIMIT ({}, {}s window)",
                    d.at_limits.join(","),
                    crate::model::cgroup::AT_LIMIT_WINDOW_S
                ),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {:<30} {:<7} {:<6} {:>11} {:>11} {:>8} {:>8}  {}{}",
                format::escape(&d.device),
                "device",
                "kernel",
                opt_rate(d.rates.map(|x| x.read_bps), units),
                opt_rate(d.rates.map(|x| x.write_bps), units),
                opt_num(d.rates.and_then(|x| x.read_iops)),
                opt_num(d.rates.and_then(|x| x.write_iops)),
                if limits.is_empty() {
                    String::new()
                } else {
                    format!("limit {limits}")
                },
                mark,
            );
        }
    }
    let rest = v.rows.len() - shown.len();
    if rest > 0 {
        let _ = writeln!(out, "({rest} more cgroups idle or beyond --top)");
    }
    for n in &v.notes {
        let _ = writeln!(out, "note: {}", format::escape(n));
    }
}
