//! `iolens why`: sample for `--duration` seconds, run the findings engine
//! on every sample, and print the findings that hold at the end with their
//! evidence (or "no findings"). Exit 0: none; 1: a finding of severity
//! warning or above; 2: an error or a usage mistake.

use std::fmt::Write as _;
use std::io::Write;
use std::ops::ControlFlow;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use serde_json::json;

use crate::cli::{Cli, WhyArgs};
use crate::format;
use crate::model::Model;
use crate::model::findings::{Finding, Severity};
use crate::session::headless::{self, Report, Schedule};
use crate::session::{Plan, Session};

pub fn run(cli: &Cli, args: &WhyArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.duration.is_finite() && (0.5..=3600.0).contains(&args.duration),
        "--duration must be between 0.5 and 3600 seconds, got {}",
        args.duration
    );
    let every = crate::config::load_interval(cli)?;
    let mut samples = 0u32;
    let mut found = Vec::new();
    // The session runs the findings engine on every sample.
    let stalled = sample_for(cli, Duration::from_secs_f64(args.duration), every, |m| {
        samples += 1;
        found = m.findings.findings().to_vec();
    })?;
    let found = &found[..];
    let text = if args.json {
        format::escape_json_controls(json_report(found, samples, stalled.as_deref()).to_string()) + "\n"
    } else {
        text_report(found, stalled.as_deref())
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("writing to stdout")?;
    Ok(if found.iter().any(|f| f.severity >= Severity::Warning) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Sample with the session's full collector set-up (tracing as root) for
/// `duration` (a report per interval, the first one short), calling `each`
/// with the model after every interval. A sample that hangs (a read stuck
/// in the kernel) makes a late report instead: the returned text says what
/// the last late one was waiting on.
fn sample_for(
    cli: &Cli,
    duration: Duration,
    every: Duration,
    mut each: impl FnMut(&Model),
) -> anyhow::Result<Option<String>> {
    let session = Session::new(Plan::full(cli, crate::session::trace_disabled(cli)));
    let mut model = crate::session::model();
    model.thresholds = crate::config::load_pattern(cli)?;
    model.findings.cfg = crate::config::load_findings(cli)?;
    let reports = (duration.as_secs_f64() / every.as_secs_f64()).ceil().max(1.0) as u64;
    let schedule = Schedule {
        every,
        count: Some(reports),
    };
    let mut stalled = None;
    headless::run(
        session,
        model,
        schedule,
        |_, _| ControlFlow::Continue(()),
        |r| {
            match r {
                Report::Fresh { model, .. } => each(model),
                Report::Late { stall, .. } => stalled = Some(stall),
            }
            ControlFlow::Continue(())
        },
    )?;
    Ok(stalled)
}

fn value_text(v: Option<f64>, unit: &str) -> String {
    match v {
        None => format::NA.to_string(),
        Some(v) if unit.is_empty() => format!("{v:.1}"),
        Some(v) if unit == "B/s" => format::rate(v),
        Some(v) => format!("{v:.1} {unit}"),
    }
}

/// The findings as text: one block each, escaped for the terminal.
pub fn text_report(found: &[Finding], stalled: Option<&str>) -> String {
    let mut s = String::new();
    if let Some(st) = stalled {
        let _ = writeln!(s, "note: {}", format::escape(st));
    }
    if found.is_empty() {
        s.push_str("no findings\n");
        return s;
    }
    for f in found {
        let _ = writeln!(
            s,
            "{} {} [{} {}]: {}",
            f.severity.text().to_uppercase(),
            f.rule,
            f.subject.kind(),
            format::escape(&f.subject.name()),
            format::escape(&f.text)
        );
        for e in &f.evidence {
            let _ = writeln!(s, "    {}: {}  ({})", e.name, value_text(e.value, e.unit), e.source);
        }
        for c in &f.culprits {
            let _ = writeln!(
                s,
                "    culprit: {} (PID {}) {}",
                format::escape(&c.comm),
                c.pid,
                value_text(Some(c.value), c.unit)
            );
        }
        let _ = writeln!(s, "    next: {}", format::escape(&f.next));
    }
    s
}

/// `findings[]` with rule, severity, subject, since, evidence, text.
pub fn json_report(found: &[Finding], samples: u32, stalled: Option<&str>) -> serde_json::Value {
    let findings: Vec<serde_json::Value> = found
        .iter()
        .map(|f| {
            json!({
                "rule": f.rule,
                "severity": f.severity,
                "subject": f.subject,
                "since": format::wall_time(f.since_unix_ns, true),
                "since_unix_ns": f.since_unix_ns,
                "evidence": f.evidence,
                "culprits": f.culprits,
                "text": f.text,
                "next": f.next,
                "holding": f.holding,
            })
        })
        .collect();
    json!({ "samples": samples, "stalled": stalled, "findings": findings })
}
