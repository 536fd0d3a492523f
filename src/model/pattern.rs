//! The access-pattern indicator: SEQ / MIXED / RAND from kernel counters.
//!
//! The rule. Over one interval, with all reads and writes of a device taken
//! together:
//! - fewer than [`MIN_REQUESTS`] requests: no verdict (`None`), too little
//!   evidence;
//! - **SEQ** when the average request is at least 64 KiB, or at least 16 KiB
//!   with at least half of the incoming requests merged: the block layer only
//!   builds large requests, and only merges, when consecutive I/O touches
//!   adjacent sectors;
//! - **RAND** when the average request is under 16 KiB and fewer than 20% of
//!   requests were merged: small, isolated requests;
//! - **MIXED** otherwise.
//!
//! Limits, stated with the result: synchronous queue-depth-1 sequential I/O
//! with small buffers (`dd bs=4k iflag=direct`) is never merged and reads as
//! RAND here; only per-request evidence (block tracepoints) can tell it apart.

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Pattern {
    Seq,
    Mixed,
    Rand,
}

impl Pattern {
    pub fn label(self) -> &'static str {
        match self {
            Pattern::Seq => "SEQ",
            Pattern::Mixed => "MIXED",
            Pattern::Rand => "RAND",
        }
    }
}

/// What a pattern label rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Every request's sector, from block tracepoints: exact.
    Requests,
    /// Request size and merge ratio from the counters: a guess.
    #[default]
    Estimate,
}

/// The pattern as shown: `SEQ 97%` from traced requests (`share`: the
/// share of bytes in sequential requests, which the label is of too),
/// `~SEQ` for the counter estimate, `-` without enough requests.
pub fn text(p: Option<Pattern>, share: Option<f64>, basis: Basis) -> String {
    match (p, basis, share) {
        (Some(p), Basis::Requests, Some(s)) => format!("{} {:.0}%", p.label(), s * 100.0),
        (Some(p), _, _) => format!("~{}", p.label()),
        (None, _, _) => "-".to_string(),
    }
}

/// The pattern column's heading: `seq bytes` while a row shows a traced
/// share (its percentage is of bytes; the requests' share is in the JSON
/// and the traced report), `pat` otherwise.
pub fn heading<'a>(rates: impl IntoIterator<Item = Option<&'a crate::model::disk::DiskRates>>) -> &'static str {
    let traced = rates
        .into_iter()
        .any(|r| r.is_some_and(|r| r.pattern_basis == Basis::Requests && r.seq_byte_share.is_some()));
    if traced { "seq bytes" } else { "pat" }
}

pub const MIN_REQUESTS: u64 = 10;
const LARGE: f64 = 64.0 * 1024.0;
const MEDIUM: f64 = 16.0 * 1024.0;

/// Classify from completed requests, merged requests and bytes moved.
pub fn classify(ios: u64, merges: u64, bytes: u64) -> Option<Pattern> {
    if ios < MIN_REQUESTS {
        return None;
    }
    let avg = bytes as f64 / ios as f64;
    let merge_pct = merges as f64 / (merges as f64 + ios as f64) * 100.0;
    Some(if avg >= LARGE || (avg >= MEDIUM && merge_pct >= 50.0) {
        Pattern::Seq
    } else if avg < MEDIUM && merge_pct < 20.0 {
        Pattern::Rand
    } else {
        Pattern::Mixed
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule() {
        const K: u64 = 1024;
        assert_eq!(classify(9, 0, 9 * 4 * K), None);
        assert_eq!(classify(100, 0, 100 * 128 * K), Some(Pattern::Seq));
        assert_eq!(classify(100, 100, 100 * 32 * K), Some(Pattern::Seq));
        assert_eq!(classify(100, 5, 100 * 4 * K), Some(Pattern::Rand));
        assert_eq!(classify(100, 0, 100 * 32 * K), Some(Pattern::Mixed));
        assert_eq!(classify(100, 40, 100 * 8 * K), Some(Pattern::Mixed));
        assert_eq!(text(Some(Pattern::Seq), Some(0.974), Basis::Requests), "SEQ 97%");
        assert_eq!(text(Some(Pattern::Rand), None, Basis::Estimate), "~RAND");
        assert_eq!(text(None, Some(0.5), Basis::Requests), "-");
    }
}
