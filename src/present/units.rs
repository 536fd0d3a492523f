//! Byte counts and rates in the text outputs' units: auto-scaled for people
//! (`--units human`), plain numbers for scripts (`--units raw`).

use crate::cli::Units;
use crate::format;

/// Bytes/s in `units`: auto-scaled ("32.3 kB/s") or plain ("32300").
pub fn rate_in(v: f64, units: Units) -> String {
    match units {
        Units::Human => format::rate(v),
        Units::Raw => format!("{v:.0}"),
    }
}

/// Bytes in `units`: auto-scaled decimal ("4.10 MB") or plain.
pub fn bytes_in(v: f64, units: Units) -> String {
    match units {
        Units::Human => format::decimal(v),
        Units::Raw => format!("{v:.0}"),
    }
}
