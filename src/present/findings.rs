//! Findings as every output shows them, defined once: the text block of
//! `iolens why` and the batch text, the one-line headline of the
//! dashboard, and the JSON object of `iolens why --json` and of the batch
//! JSON's `findings[]`. Names from the system (commands, paths) are
//! escaped here for text; JSON is escaped by its writer.

use std::fmt::Write as _;

use serde_json::json;

use crate::format;
use crate::model::findings::{Evidence, Finding};

/// A number of the evidence with its unit (`n/a` when not known).
pub fn value_text(v: Option<f64>, unit: &str) -> String {
    match v {
        None => format::NA.to_string(),
        Some(v) if unit.is_empty() => format!("{v:.1}"),
        Some(v) if unit == "B/s" => format::rate(v),
        Some(v) => format!("{v:.1} {unit}"),
    }
}

/// "await: 21.0 ms  (/proc/diskstats)"; a traced figure of a sampled
/// interval: "device latency: ~20.4 ms (sampled 30%)  (traced ...)".
pub fn evidence_text(e: &Evidence) -> String {
    let v = value_text(e.value, e.unit);
    match e.trace_share.map(crate::model::trace::window::Share) {
        Some(s) if s.sampled() && e.value.is_some() => {
            format!("{}: ~{v} ({})  ({})", e.name, s.tag().unwrap_or_default(), e.source)
        }
        Some(s) if s.sampled() => format!("{}: {v} ({})  ({})", e.name, s.tag().unwrap_or_default(), e.source),
        _ => format!("{}: {v}  ({})", e.name, e.source),
    }
}

/// "WARNING slow-device [device loop0]: the device is slow ..." (escaped).
pub fn headline(f: &Finding) -> String {
    format!(
        "{} {} [{} {}]: {}",
        f.severity.text().to_uppercase(),
        f.rule,
        f.subject.kind(),
        format::escape(&f.subject.name()),
        format::escape(&f.text)
    )
}

/// The culprit lines' text: "fio (PID 12) 40.0 requests (traced)" (escaped).
pub fn culprit_text(c: &crate::model::findings::Culprit) -> String {
    format!(
        "{} (PID {}) {}",
        format::escape(&c.comm),
        c.pid,
        value_text(Some(c.value), c.unit)
    )
}

/// A finding as a block of text: the headline, then indented evidence,
/// culprits and the next step.
pub fn text_block(f: &Finding) -> String {
    let mut s = headline(f) + "\n";
    for e in &f.evidence {
        let _ = writeln!(s, "    {}", evidence_text(e));
    }
    for c in &f.culprits {
        let _ = writeln!(s, "    culprit: {}", culprit_text(c));
    }
    let _ = writeln!(s, "    next: {}", format::escape(&f.next));
    s
}

/// The findings as text ("no findings" when none).
pub fn text_report(found: &[Finding]) -> String {
    if found.is_empty() {
        return "no findings\n".into();
    }
    found.iter().map(text_block).collect()
}

/// One finding as JSON: rule, severity, subject (its kind, its name as a
/// person reads it, and its fields), since, evidence, culprits, text and
/// the next step.
pub fn json(f: &Finding) -> serde_json::Value {
    let mut subject = serde_json::to_value(&f.subject).unwrap_or_else(|_| json!({}));
    if let Some(o) = subject.as_object_mut() {
        o.entry("name").or_insert_with(|| f.subject.name().into());
    }
    json!({
        "rule": f.rule,
        "severity": f.severity,
        "subject": subject,
        "since": format::wall_time(f.since_unix_ns, true),
        "since_unix_ns": f.since_unix_ns,
        "evidence": f.evidence,
        "culprits": f.culprits,
        "text": f.text,
        "next": f.next,
        "holding": f.holding,
    })
}

/// `findings[]`.
pub fn json_list(found: &[Finding]) -> serde_json::Value {
    found.iter().map(json).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::findings::{Culprit, Severity, Subject};

    fn example() -> Finding {
        Finding {
            rule: "slow-device",
            severity: Severity::Warning,
            subject: Subject::Process {
                pid: 12,
                comm: "f\x1bio".into(),
            },
            since_mono_ns: 1,
            since_unix_ns: 1_700_000_000_000_000_000,
            evidence: vec![
                Evidence::new("await", Some(21.04), "ms", "/proc/diskstats"),
                Evidence::new("util", None, "%", "x"),
            ],
            culprits: vec![Culprit {
                pid: 12,
                comm: "fio".into(),
                value: 40.0,
                unit: "requests (traced)",
            }],
            text: "slow".into(),
            next: "press d".into(),
            holding: true,
        }
    }

    #[test]
    fn text_and_json_of_one_finding() {
        let f = example();
        assert_eq!(
            text_block(&f),
            "WARNING slow-device [process f\\x1bio (PID 12)]: slow\n    await: 21.0 ms  (/proc/diskstats)\n    util: n/a  (x)\n    culprit: fio (PID 12) 40.0 requests (traced)\n    next: press d\n"
        );
        let j = json(&f);
        assert_eq!(j["subject"]["kind"], "process");
        assert_eq!(j["subject"]["name"], "f\x1bio (PID 12)");
        assert_eq!(j["subject"]["pid"], 12);
        assert_eq!(j["evidence"][0]["value"], 21.04);
        assert!(j["evidence"][1]["value"].is_null());
        assert_eq!(j["next"], "press d");
        assert_eq!(text_report(&[]), "no findings\n");
    }
}
