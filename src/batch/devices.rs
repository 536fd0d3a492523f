//! The device table of the batch text: `iostat -x` columns, a fixed default
//! set that fits a normal terminal, or (`--wide`) the full set (the
//! columns: [`crate::present::device`]).
//!
//! The columns never change between reports of a run (nor with the data):
//! `awk '{print $N}'` reads the same column in every report. A device's
//! mount point is the last column, free text (it may hold spaces).

use std::fmt::Write as _;

use crate::cli::Units;
use crate::model::disk::DiskRates;
use crate::model::pattern;
use crate::present::device::DevCol;
pub use crate::present::device::{Col, DEFAULT, WIDE, columns, opt2};

/// Width of the device name column.
pub const NAME_W: usize = 12;

/// The heading line of the table; `pat` is the pattern column's heading
/// ([`pattern::heading`]).
pub fn header(out: &mut String, cols: &[Col], units: Units, pat: &str) {
    let _ = write!(out, "{:<NAME_W$}", DevCol::Name.def().head);
    for &c in cols {
        let _ = write!(out, " {:>w$}", c.heading(units), w = c.width(units));
    }
    let _ = writeln!(out, " {pat:<9} mount");
}

/// One device's line (or the `total`'s, with an empty mount).
pub fn line(out: &mut String, cols: &[Col], name: &str, r: &DiskRates, mount: &str, units: Units) {
    let _ = write!(out, "{name:<NAME_W$}");
    for &c in cols {
        let _ = write!(out, " {:>w$}", c.text(r, units), w = c.width(units));
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
    use crate::present::device::DevCol;

    /// The dashboard's column for a default batch column.
    fn on_dashboard(c: Col) -> Option<DevCol> {
        DevCol::ALL.into_iter().find(|d| d.def().col == Some(c))
    }

    #[test]
    fn default_set_is_what_the_dashboard_keeps_longest() {
        // The dashboard's data columns before the first one it drops of
        // the batch default's (merges), without its own pane-only columns.
        let kept: Vec<DevCol> = DevCol::keep_order()
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
