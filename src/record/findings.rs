//! The findings a recording carries (frame kind `FINDINGS`), read back.
//!
//! A finding's rule id and its evidence's names, units and sources are
//! static texts in iolens (the rules' constants); read from a file they
//! are interned: each distinct text is kept once for the life of the
//! process, at most [`MAX_INTERNED`] of them (a recording is a few
//! hundred at most; past the cap a text reads as "?"), so a crafted file
//! cannot grow memory without bound.

use std::collections::HashSet;
use std::sync::Mutex;

use serde::Deserialize;

use crate::model::findings::{Culprit, Evidence, Finding, Severity, Subject};

/// Distinct static texts read back from recordings, at most.
pub const MAX_INTERNED: usize = 4096;
/// The longest static text kept (longer ones are cut).
const MAX_TEXT: usize = 256;

/// `s` as a static text: the one already kept, else kept now.
fn intern(s: &str) -> &'static str {
    static POOL: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let s = match s.char_indices().nth(MAX_TEXT) {
        Some((i, _)) => &s[..i],
        None => s,
    };
    let mut pool = POOL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let pool = pool.get_or_insert_with(HashSet::new);
    if let Some(k) = pool.get(s) {
        return k;
    }
    if pool.len() >= MAX_INTERNED {
        return "?";
    }
    let k: &'static str = Box::leak(s.to_string().into_boxed_str());
    pool.insert(k);
    k
}

#[derive(Debug, Deserialize)]
struct RecEvidence {
    name: String,
    value: Option<f64>,
    unit: String,
    source: String,
}

#[derive(Debug, Deserialize)]
struct RecCulprit {
    pid: i32,
    comm: String,
    value: f64,
    unit: String,
}

/// A finding as a recording holds it (the JSON of [`Finding`]).
#[derive(Debug, Deserialize)]
pub struct Recorded {
    rule: String,
    severity: Severity,
    subject: Subject,
    since_mono_ns: u64,
    since_unix_ns: u64,
    #[serde(default)]
    evidence: Vec<RecEvidence>,
    #[serde(default)]
    culprits: Vec<RecCulprit>,
    text: String,
    next: String,
    holding: bool,
}

impl Recorded {
    pub fn into_finding(self) -> Finding {
        Finding {
            rule: intern(&self.rule),
            severity: self.severity,
            subject: self.subject,
            since_mono_ns: self.since_mono_ns,
            since_unix_ns: self.since_unix_ns,
            evidence: self
                .evidence
                .into_iter()
                .map(|e| Evidence::new(intern(&e.name), e.value, intern(&e.unit), intern(&e.source)))
                .collect(),
            culprits: self
                .culprits
                .into_iter()
                .map(|c| Culprit {
                    pid: c.pid,
                    comm: c.comm,
                    value: c.value,
                    unit: intern(&c.unit),
                })
                .collect(),
            text: self.text,
            next: self.next,
            holding: self.holding,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_finding_reads_back_as_written() {
        let f = Finding::example(
            "slow_device",
            Severity::Warning,
            Subject::Process {
                pid: 7,
                comm: "dd".into(),
            },
        );
        let json = serde_json::to_vec(&[&f]).unwrap();
        let back: Vec<Recorded> = serde_json::from_slice(&json).unwrap();
        let back: Vec<Finding> = back.into_iter().map(Recorded::into_finding).collect();
        assert_eq!(back, [f]);
        assert!(std::ptr::eq(intern("slow_device"), intern("slow_device")), "kept once");
        assert_eq!(intern(&"x".repeat(1000)).len(), MAX_TEXT);
    }
}
