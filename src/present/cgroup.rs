//! The cgroup table: every column of the cgroups pane and of the batch
//! text's cgroup section, defined once.

use std::cmp::Ordering;

use super::cgroup_text::limits_text;
use super::{Align, Out, column_table};
use crate::cli::Units;
use crate::format;
use crate::model::cgroup::CgroupRow;

/// One column of the cgroup table.
#[derive(Debug)]
pub struct CgColumn {
    pub id: CgCol,
    /// The column's name (sort key).
    pub key: &'static str,
    /// Dashboard heading, width, alignment.
    pub head: &'static str,
    pub width: u16,
    pub align: Align,
    /// Batch text heading, width, alignment, and place in its line (its
    /// own order; `None`: not in the batch text).
    pub text_head: &'static str,
    pub text_width: usize,
    pub text_align: Align,
    pub text_pos: Option<u8>,
    /// Rank in which a narrow dashboard keeps the columns (0 longest).
    pub keep: u8,
    /// The JSON fields of a cgroup row the column shows (`a.b`: field `b`
    /// of object `a`): public names, kept as they are.
    pub json: &'static [&'static str],
    /// The exporter's per-cgroup counters the column shows (public names).
    pub metric: &'static [&'static str],
    pub value: CgValue,
}

/// What a column shows of a row.
#[derive(Debug)]
pub enum CgValue {
    /// A number (sorted largest first, unknown last), written as `CgFmt`.
    Num(fn(&CgroupRow) -> Option<f64>, CgFmt),
    /// Text (sorted ascending, by `order` or else by the text).
    Text(
        fn(&CgroupRow, Out) -> String,
        Option<fn(&CgroupRow, &CgroupRow) -> Ordering>,
    ),
}

/// How a cgroup number is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CgFmt {
    /// Bytes per second.
    Rate,
    /// Requests per second (auto-scaled in both units).
    Num,
    /// A percentage, one decimal.
    Pct,
    /// A whole count.
    Count,
    /// The share of the binding limit: [`share_text`] on the dashboard,
    /// `AT` at the limit in the batch text.
    LimitShare,
}

const R: Align = Align::Right;
const L: Align = Align::Left;
/// The name keeps at least this much before optional columns get room.
pub const NAME_MIN: u16 = 32;

column_table! {
    /// A column of the cgroups pane (also the sort keys).
    enum CgCol, static CG_COLUMNS: CgColumn = [
        Name {
            key: "name", head: "CGROUP", width: NAME_MIN, align: L, text_head: "cgroup", text_width: 32,
            text_align: L, text_pos: Some(0), keep: 0,
            json: &["name", "path"], metric: &[],
            value: CgValue::Text(|r, _| format::escape(&r.name), Some(|a, b| a.name.cmp(&b.name))),
        },
        Kind {
            key: "kind_label", head: "KIND", width: 7, align: L, text_head: "kind", text_width: 7, text_align: L,
            text_pos: Some(1), keep: 11,
            json: &["kind"], metric: &[],
            value: CgValue::Text(|r, _| r.kind.label().to_string(), None),
        },
        Source {
            key: "source_label", head: "SOURCE", width: 6, align: L, text_head: "source", text_width: 6,
            text_align: L, text_pos: Some(2), keep: 4,
            json: &["source"], metric: &[],
            value: CgValue::Text(|r, _| r.source.label().to_string(), None),
        },
        Read {
            key: "read_bps", head: "READ/s", width: 10, align: R, text_head: "read/s", text_width: 11,
            text_align: R, text_pos: Some(3), keep: 1,
            json: &["rates.read_bps"], metric: &["cgroup_read_bytes"],
            value: CgValue::Num(|r| r.rates.map(|x| x.read_bps), CgFmt::Rate),
        },
        Write {
            key: "write_bps", head: "WRITE/s", width: 10, align: R, text_head: "write/s", text_width: 11,
            text_align: R, text_pos: Some(4), keep: 2,
            json: &["rates.write_bps"], metric: &["cgroup_written_bytes"],
            value: CgValue::Num(|r| r.rates.map(|x| x.write_bps), CgFmt::Rate),
        },
        ReadIops {
            key: "read_iops", head: "R/s", width: 7, align: R, text_head: "r/s", text_width: 8, text_align: R,
            text_pos: Some(5), keep: 7,
            json: &["rates.read_iops"], metric: &["cgroup_read_requests"],
            value: CgValue::Num(|r| r.rates.and_then(|x| x.read_iops), CgFmt::Num),
        },
        WriteIops {
            key: "write_iops", head: "W/s", width: 7, align: R, text_head: "w/s", text_width: 8, text_align: R,
            text_pos: Some(6), keep: 8,
            json: &["rates.write_iops"], metric: &["cgroup_write_requests"],
            value: CgValue::Num(|r| r.rates.and_then(|x| x.write_iops), CgFmt::Num),
        },
        PsiSome {
            key: "psi_some", head: "SOME", width: 6, align: R, text_head: "some", text_width: 6, text_align: R,
            text_pos: Some(8), keep: 5,
            json: &["pressure.some_pct"], metric: &["cgroup_io_pressure_some_seconds"],
            value: CgValue::Num(|r| r.pressure.and_then(|p| p.some_pct), CgFmt::Pct),
        },
        PsiFull {
            key: "psi_full", head: "FULL", width: 6, align: R, text_head: "full", text_width: 6, text_align: R,
            text_pos: Some(9), keep: 9,
            json: &["pressure.full_pct"], metric: &["cgroup_io_pressure_full_seconds"],
            value: CgValue::Num(|r| r.pressure.and_then(|p| p.full_pct), CgFmt::Pct),
        },
        Limit {
            key: "limits", head: "LIMIT", width: 24, align: L, text_head: "limits", text_width: 0, text_align: L,
            text_pos: None, keep: 6,
            json: &["devices"], metric: &[],
            value: CgValue::Text(|r, _| limit_cell(r), None),
        },
        LimitShare {
            key: "limit_share", head: "%LIMIT", width: 8, align: R, text_head: "limit", text_width: 5,
            text_align: L, text_pos: Some(10), keep: 3,
            json: &["at_limit"], metric: &[],
            value: CgValue::Num(CgroupRow::limit_share, CgFmt::LimitShare),
        },
        Procs {
            key: "processes", head: "PROCS", width: 6, align: R, text_head: "procs", text_width: 5,
            text_align: R, text_pos: Some(7), keep: 10,
            json: &["processes.count"], metric: &[],
            value: CgValue::Num(|r| Some(r.processes.count as f64), CgFmt::Count),
        },
    ];
}

impl CgCol {
    /// Numbers sort largest first, text ascending.
    pub fn natural_desc(self) -> bool {
        matches!(self.def().value, CgValue::Num(..))
    }

    /// Compare two rows on the column in its natural order, unknown
    /// numbers last (ties are the caller's).
    pub fn order(self, a: &CgroupRow, b: &CgroupRow) -> Ordering {
        match self.def().value {
            CgValue::Text(_, Some(order)) => order(a, b),
            CgValue::Text(text, None) => text(a, Out::Pane).cmp(&text(b, Out::Pane)),
            CgValue::Num(get, _) => {
                let k = |r: &CgroupRow| get(r).unwrap_or(f64::NEG_INFINITY);
                k(b).total_cmp(&k(a))
            }
        }
    }

    /// The dashboard's text of row `r`.
    pub fn pane_text(self, r: &CgroupRow) -> String {
        match self.def().value {
            CgValue::Text(text, _) => text(r, Out::Pane),
            CgValue::Num(get, fmt) => {
                let v = get(r);
                match (fmt, v) {
                    (CgFmt::LimitShare, _) => share_text(r),
                    (_, None) => format::NA.to_string(),
                    (CgFmt::Rate, Some(v)) => format::rate(v),
                    (CgFmt::Num, Some(v)) => format::num(v),
                    (CgFmt::Pct, Some(v)) => format!("{v:.1}%"),
                    (CgFmt::Count, Some(v)) => format!("{v:.0}"),
                }
            }
        }
    }

    /// The batch text's value of row `r` in `units`.
    pub fn text(self, r: &CgroupRow, units: Units) -> String {
        match self.def().value {
            CgValue::Text(text, _) => text(r, Out::Text),
            CgValue::Num(get, fmt) => match (fmt, get(r)) {
                (CgFmt::LimitShare, _) => if r.at_limit { "AT" } else { "" }.to_string(),
                (CgFmt::Rate, Some(v)) => super::units::rate_in(v, units),
                _ => self.pane_text(r),
            },
        }
    }

    /// The batch text's columns, in its order.
    pub fn text_columns() -> impl Iterator<Item = CgCol> {
        let mut cols: Vec<(u8, CgCol)> = CgCol::ALL
            .into_iter()
            .filter_map(|c| Some((c.def().text_pos?, c)))
            .collect();
        cols.sort_by_key(|(p, _)| *p);
        cols.into_iter().map(|(_, c)| c)
    }
}

/// "loop0 rbps 20.0 MB/s" (+N more limited devices), or "none".
pub fn limit_cell(r: &CgroupRow) -> String {
    let Some(d) = r.binding_device() else {
        return "none".to_string();
    };
    let more = r.devices.iter().filter(|d| !d.effective_limits.is_empty()).count() - 1;
    let mut s = format!("{} {}", format::escape(&d.device), limits_text(&d.effective_limits));
    if more > 0 {
        s.push_str(&format!(" +{more}"));
    }
    s
}

/// "AT 99%" at a limit (at least
/// [`AT_LIMIT_SHARE`](crate::model::cgroup::AT_LIMIT_SHARE) of it over the
/// last 3 s), "45%" below it, "n/a" while the 3 s window fills,
/// blank without a limit.
pub fn share_text(r: &CgroupRow) -> String {
    match (r.limit_share(), r.limited()) {
        (Some(s), _) if r.at_limit => format!("AT {:.0}%", s * 100.0),
        (Some(s), _) => format!("{:.0}%", s * 100.0),
        (None, true) => format::NA.to_string(),
        (None, false) => String::new(),
    }
}
