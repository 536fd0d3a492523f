//! The findings as series, the same rules for a fleet:
//! `iolens_finding{rule, severity, subject_kind, subject}` is 1 while a
//! finding holds (the series ends when it clears), and
//! `iolens_findings{severity}` counts the findings held per severity.
//!
//! Bounded like the per-command series: at most [`MAX_SERIES`] finding
//! series (the most severe first; the count gauge still counts every
//! finding), and only bounded values as labels: the rule id, the severity,
//! the subject's kind and its name (a device name, a command without its
//! PID, a cgroup or mount path, `system`). Never a time or an evidence
//! value.

use prometheus_client::encoding::DescriptorEncoder;

use super::family::{Labels, gauge_family};
use super::metrics::label;
use crate::model::findings::{Finding, Severity, Subject};

/// Finding series exported at most.
pub const MAX_SERIES: usize = 64;

const SEVERITIES: [Severity; 3] = [Severity::Info, Severity::Warning, Severity::Critical];

/// What one sample's findings export.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Held {
    /// `[rule, severity, subject_kind, subject]`, one per series.
    pub series: Vec<[String; 4]>,
    /// Findings held per severity (info, warning, critical).
    pub counts: [u64; 3],
}

/// The subject as a label: a process by its command alone (a PID per
/// series would make a new series for every process).
fn subject_label(s: &Subject) -> String {
    match s {
        Subject::Process { comm, .. } => comm.clone(),
        other => other.name(),
    }
}

/// The series of the findings held (engine order: most severe first),
/// one per distinct label set, at most [`MAX_SERIES`].
pub fn held(found: &[Finding]) -> Held {
    let mut h = Held::default();
    for f in found {
        if let Some(i) = SEVERITIES.iter().position(|s| *s == f.severity) {
            h.counts[i] += 1;
        }
        let s = [
            f.rule.to_string(),
            f.severity.text().to_string(),
            f.subject.kind().to_string(),
            label(&subject_label(&f.subject)),
        ];
        if h.series.len() < MAX_SERIES && !h.series.contains(&s) {
            h.series.push(s);
        }
    }
    h
}

/// The two families.
pub fn encode(h: &Held, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let series: Vec<(Labels, f64)> = h
        .series
        .iter()
        .map(|[rule, sev, kind, subject]| {
            let l: Labels = vec![
                ("rule", rule.clone()),
                ("severity", sev.clone()),
                ("subject_kind", kind.clone()),
                ("subject", subject.clone()),
            ];
            (l, 1.0)
        })
        .collect();
    gauge_family(
        enc,
        "finding",
        "1 while a finding holds (iolens why; see docs/findings.md), by rule, severity and subject",
        &series,
    )?;
    let counts: Vec<(Labels, f64)> = SEVERITIES
        .iter()
        .zip(h.counts)
        .map(|(s, n)| (vec![("severity", s.text().to_string())], n as f64))
        .collect();
    gauge_family(enc, "findings", "Findings held now, by severity", &counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_series_per_label_set_processes_by_command_capped() {
        let p = |pid| Subject::Process {
            pid,
            comm: "dd\n".into(),
        };
        let mut found = vec![
            Finding::example("io_errors", Severity::Critical, Subject::Device { name: "sdb".into() }),
            Finding::example("tiny_syscalls", Severity::Warning, p(1)),
            Finding::example("tiny_syscalls", Severity::Warning, p(2)),
        ];
        let h = held(&found);
        assert_eq!(h.counts, [0, 2, 1]);
        assert_eq!(
            h.series,
            [
                ["io_errors", "critical", "device", "sdb"].map(String::from),
                ["tiny_syscalls", "warning", "process", "dd\\n"].map(String::from),
            ]
        );
        for i in 0..200 {
            found.push(Finding::example(
                "slow_device",
                Severity::Info,
                Subject::Device { name: format!("d{i}") },
            ));
        }
        let h = held(&found);
        assert_eq!(h.series.len(), MAX_SERIES);
        assert_eq!(h.counts, [200, 2, 1]);
        assert_eq!(h.series[0][0], "io_errors", "the most severe kept");
    }

    #[test]
    fn exposition_has_help_type_and_the_series() {
        let mut e = crate::export::metrics::Exported::new(5);
        let none = crate::export::metrics::text_format(&e.openmetrics());
        assert!(!none.contains("iolens_finding{"), "{none}");
        assert!(none.contains("iolens_findings{severity=\"critical\"} 0"), "{none}");
        e.findings = held(&[Finding::example(
            "slow_device",
            Severity::Warning,
            Subject::Device { name: "loop7".into() },
        )]);
        for text in [e.openmetrics(), crate::export::metrics::text_format(&e.openmetrics())] {
            assert!(text.contains("# HELP iolens_finding 1 while a finding holds"), "{text}");
            assert!(text.contains("# TYPE iolens_finding gauge"), "{text}");
            assert!(
                text.contains(
                    "iolens_finding{rule=\"slow_device\",severity=\"warning\",subject_kind=\"device\",subject=\"loop7\"} 1"
                ),
                "{text}"
            );
            assert!(text.contains("# TYPE iolens_findings gauge"), "{text}");
            assert!(text.contains("iolens_findings{severity=\"warning\"} 1"), "{text}");
        }
    }
}
