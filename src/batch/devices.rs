//! The device table of the batch text: `iostat -x` columns, a fixed default
//! set that fits a normal terminal, or (`--wide`) the full set.
//!
//! The columns never change between reports of a run (nor with the data):
//! `awk '{print $N}'` reads the same column in every report. A device's
//! mount point is the last column, free text (it may hold spaces).

use std::fmt::Write as _;

use crate::cli::Units;
use crate::format;
use crate::model::disk::{DirRates, DiskRates};
use crate::model::pattern;

/// A request direction of `/proc/diskstats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Read,
    Write,
    Discard,
}

/// A per-direction column, iostat's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Ios,
    Bytes,
    Merges,
    MergePct,
    Await,
    ReqSz,
}

/// A column of the device table (the name before, pattern and mount after).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Col {
    Dir(Dir, Field),
    Flushes,
    FlushAwait,
    QueueSize,
    Util,
}

use Col::Dir as D;
use Dir::{Discard, Read, Write};
use Field::{Await, Bytes, Ios, MergePct, Merges, ReqSz};

/// The default columns: iostat's most read ones, the same that the
/// dashboard's device pane gives up last on a narrow terminal (rates,
/// latency, request size, queue, %util; merges, discards and flushes are
/// the first it drops). 110 columns before the mount point (116 with
/// `--units raw`).
pub const DEFAULT: [Col; 10] = [
    D(Read, Ios),
    D(Read, Bytes),
    D(Read, Await),
    D(Read, ReqSz),
    D(Write, Ios),
    D(Write, Bytes),
    D(Write, Await),
    D(Write, ReqSz),
    Col::QueueSize,
    Col::Util,
];

/// `--wide`: every `iostat -x` column, in its order.
pub const WIDE: [Col; 22] = [
    D(Read, Ios),
    D(Read, Bytes),
    D(Read, Merges),
    D(Read, MergePct),
    D(Read, Await),
    D(Read, ReqSz),
    D(Write, Ios),
    D(Write, Bytes),
    D(Write, Merges),
    D(Write, MergePct),
    D(Write, Await),
    D(Write, ReqSz),
    D(Discard, Ios),
    D(Discard, Bytes),
    D(Discard, Merges),
    D(Discard, MergePct),
    D(Discard, Await),
    D(Discard, ReqSz),
    Col::Flushes,
    Col::FlushAwait,
    Col::QueueSize,
    Col::Util,
];

/// The columns of a layout.
pub fn columns(wide: bool) -> &'static [Col] {
    if wide { &WIDE } else { &DEFAULT }
}

/// Width of the device name column.
pub const NAME_W: usize = 12;

fn heading(c: Col, units: Units) -> String {
    let p = |d: Dir| match d {
        Read => 'r',
        Write => 'w',
        Discard => 'd',
    };
    match c {
        D(d, Ios) => format!("{}/s", p(d)),
        D(d, Bytes) if units == Units::Raw => format!("{}B/s", p(d)),
        D(d, Bytes) => format!("{}MB/s", p(d)),
        D(d, Merges) => format!("{}rqm/s", p(d)),
        D(d, MergePct) => format!("%{}rqm", p(d)),
        D(d, Await) => format!("{}_await", p(d)),
        D(d, ReqSz) => format!("{}areq-sz", p(d)),
        Col::Flushes => "f/s".into(),
        Col::FlushAwait => "f_await".into(),
        Col::QueueSize => "aqu-sz".into(),
        Col::Util => "%util".into(),
    }
}

fn width(c: Col, units: Units) -> usize {
    match c {
        D(_, Ios) => 9,
        D(_, Bytes) if units == Units::Raw => 11,
        D(_, Bytes) => 8,
        D(_, Merges) | Col::Flushes => 7,
        D(_, MergePct) | Col::QueueSize | Col::Util => 6,
        D(_, Await | ReqSz) | Col::FlushAwait => 8,
    }
}

pub(super) fn opt2(v: Option<f64>) -> String {
    v.map_or_else(|| format::NA.to_string(), |v| format!("{v:.2}"))
}

fn cell(c: Col, r: &DiskRates, units: Units) -> String {
    let dir = |d: Dir| -> Option<&DirRates> {
        match d {
            Read => Some(&r.read),
            Write => Some(&r.write),
            Discard => r.discard.as_ref(),
        }
    };
    match c {
        D(d, f) => {
            let Some(d) = dir(d) else {
                // A kernel without discard fields.
                return format::NA.to_string();
            };
            match f {
                Ios => format!("{:.2}", d.ios_per_s),
                Bytes if units == Units::Raw => format!("{:.0}", d.bytes_per_s),
                Bytes => format!("{:.2}", d.bytes_per_s / 1e6),
                Merges => format!("{:.2}", d.merges_per_s),
                MergePct => opt2(d.merge_pct),
                Await => opt2(d.await_ms),
                ReqSz => opt2(d.req_bytes.map(|b| b / 1024.0)),
            }
        }
        Col::Flushes => r
            .flush
            .map_or_else(|| format::NA.to_string(), |f| format!("{:.2}", f.ios_per_s)),
        Col::FlushAwait => opt2(r.flush.and_then(|f| f.await_ms)),
        Col::QueueSize => format!("{:.2}", r.aqu_sz),
        Col::Util => format!("{:.1}", r.util_pct),
    }
}

/// The heading line of the table; `pat` is the pattern column's heading
/// ([`pattern::heading`]).
pub fn header(out: &mut String, cols: &[Col], units: Units, pat: &str) {
    let _ = write!(out, "{:<NAME_W$}", "Device");
    for &c in cols {
        let _ = write!(out, " {:>w$}", heading(c, units), w = width(c, units));
    }
    let _ = writeln!(out, " {pat:<9} mount");
}

/// One device's line (or the `total`'s, with an empty mount).
pub fn line(out: &mut String, cols: &[Col], name: &str, r: &DiskRates, mount: &str, units: Units) {
    let _ = write!(out, "{name:<NAME_W$}");
    for &c in cols {
        let _ = write!(out, " {:>w$}", cell(c, r, units), w = width(c, units));
    }
    let _ = writeln!(
        out,
        " {:<9} {}",
        pattern::text(r.pattern, r.seq_byte_share, r.pattern_basis),
        mount
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::DevCol;

    /// The dashboard's column for a default batch column.
    fn on_dashboard(c: Col) -> Option<DevCol> {
        Some(match c {
            D(Read, Ios) => DevCol::ReadIops,
            D(Read, Bytes) => DevCol::ReadMb,
            D(Read, Await) => DevCol::ReadAwait,
            D(Read, ReqSz) => DevCol::ReadReqSz,
            D(Read, MergePct) => DevCol::ReadMerge,
            D(Write, Ios) => DevCol::WriteIops,
            D(Write, Bytes) => DevCol::WriteMb,
            D(Write, Await) => DevCol::WriteAwait,
            D(Write, ReqSz) => DevCol::WriteReqSz,
            D(Write, MergePct) => DevCol::WriteMerge,
            Col::Flushes => DevCol::FlushIops,
            Col::QueueSize => DevCol::QueueSize,
            Col::Util => DevCol::Util,
            _ => return None,
        })
    }

    #[test]
    fn default_set_is_what_the_dashboard_keeps_longest() {
        // The dashboard's data columns before the first one it drops of
        // the batch default's (merges), without its own pane-only columns.
        let kept: Vec<DevCol> = crate::ui::devices::KEEP_ORDER
            .into_iter()
            .take_while(|c| *c != DevCol::ReadMerge)
            .filter(|c| {
                !matches!(
                    c,
                    DevCol::Name | DevCol::Mount | DevCol::Pattern | DevCol::P99 | DevCol::Spark
                )
            })
            .collect();
        let mut ours: Vec<DevCol> = DEFAULT.iter().filter_map(|c| on_dashboard(*c)).collect();
        assert_eq!(ours.len(), DEFAULT.len(), "every default column is on the dashboard");
        ours.sort_by_key(|c| kept.iter().position(|k| k == c));
        assert_eq!(ours, kept);
        // In iostat's order, a subset of the wide set.
        let pos: Vec<usize> = DEFAULT
            .iter()
            .map(|c| WIDE.iter().position(|w| w == c).unwrap())
            .collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{pos:?}");
    }

    #[test]
    fn default_table_fits_120_columns_before_the_mount() {
        for units in [Units::Human, Units::Raw] {
            let mut h = String::new();
            header(&mut h, &DEFAULT, units, "pat");
            let before_mount = h.trim_end().len() - "mount".len();
            assert!(before_mount <= 120, "{units:?}: {h}");
            let mut w = String::new();
            header(&mut w, &WIDE, units, "pat");
            assert!(w.len() > 200, "the wide set is the full one: {w}");
        }
    }
}
