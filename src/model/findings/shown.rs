//! Findings set from outside the rules: a recording's (replay shows the
//! findings the recorder saw) and an example for the outputs' tests.

use super::{Engine, Finding};

impl Engine {
    /// Hold these findings (most severe first) until the next
    /// [`Engine::update`]: what a recording carried.
    pub fn set_findings(&mut self, f: Vec<Finding>) {
        self.findings = f;
    }
}

impl Finding {
    /// A finding with made-up evidence, for the outputs' tests.
    #[cfg(any(test, feature = "test-support"))]
    pub fn example(rule: &'static str, severity: super::Severity, subject: super::Subject) -> Finding {
        Finding {
            rule,
            severity,
            subject,
            since_mono_ns: 1_000_000_000,
            since_unix_ns: 1_764_000_000_000_000_000,
            evidence: vec![
                super::Evidence::new(
                    "device latency p50",
                    Some(20.4),
                    "ms",
                    "traced requests (issue -> complete)",
                ),
                super::Evidence::new("aqu-sz", None, "", "/proc/diskstats"),
            ],
            culprits: vec![super::Culprit {
                pid: 4242,
                comm: "fio".into(),
                value: 48.0,
                unit: "requests (traced)",
            }],
            text: "requests take 20.4 ms in the device with a short queue".into(),
            next: "press Enter for the device detail".into(),
            holding: true,
        }
    }
}
