//! `iolens why`: sample for `--duration` seconds, run the findings engine
//! on every sample, and print the findings that hold at the end with their
//! evidence (or "no findings"). Exit 0: none; 1: a finding of severity
//! warning or above; 2: an error or a usage mistake.

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
    crate::session::load_saved_probes(&mut model, cli, None);
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

/// The findings as text, escaped for the terminal (after a note when a
/// sample came late).
pub fn text_report(found: &[Finding], stalled: Option<&str>) -> String {
    let note = stalled.map(|st| format!("note: {}\n", format::escape(st)));
    note.unwrap_or_default() + &crate::present::findings::text_report(found)
}

/// `findings[]` (each as [`crate::present::findings::json`]), the samples
/// taken and the last late sample's note.
pub fn json_report(found: &[Finding], samples: u32, stalled: Option<&str>) -> serde_json::Value {
    json!({ "samples": samples, "stalled": stalled, "findings": crate::present::findings::json_list(found) })
}
