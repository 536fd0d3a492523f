//! `iolens replay FILE --batch|--json`: the recorded samples through the
//! same pure model as live, with the recorded host facts, printed as the
//! live batch reports were.

use std::process::ExitCode;

use crate::cli::{Cli, ReplayArgs};
use crate::collect::sample::HostInfo;
use crate::model::Model;

use super::file::{Recording, Segment};

/// Recorded sample `i` of `seg` into the model as live ([`crate::session::fold`]),
/// then the findings the recorder saw after it, where the recording
/// carries them (one made before findings: the engine's, from the samples).
pub fn fold(model: &mut Model, rec: &Recording, seg: &Segment, i: usize, s: crate::collect::RawSample) {
    crate::session::fold(model, s, rec.trace(seg, i));
    if let Some(found) = rec.findings(seg, i) {
        model.findings.set_findings(found);
    }
}

/// How far before `--from` the model starts taking samples, ns.
const WARM_UP_NS: u64 = 60_000_000_000;

/// The model of one recorder run: its host facts, not this machine's.
pub fn model_for(seg: &Segment) -> Model {
    let h = &seg.header;
    let host = HostInfo {
        hostname: h.host.clone(),
        kernel: h.kernel.clone(),
        is_root: h.is_root,
    };
    Model::new(host, h.clk_tck)
}

/// Read a recording, printing what was skipped to stderr.
pub fn open(path: &std::path::Path) -> anyhow::Result<Recording> {
    let rec = Recording::open(path)?;
    for d in &rec.damage {
        eprintln!("iolens: warning: {}: {d}", path.display());
    }
    if rec.unknown_frames > 0 {
        eprintln!(
            "iolens: note: {}: {} frames of kinds this iolens does not know were skipped (written by a newer iolens)",
            path.display(),
            rec.unknown_frames
        );
    }
    Ok(rec)
}

/// The time range of `args` in ns since the Unix epoch.
fn range(args: &ReplayArgs) -> anyhow::Result<(Option<u64>, Option<u64>)> {
    let now = jiff::Timestamp::now();
    let tz = jiff::tz::TimeZone::system();
    let parse = |t: &Option<String>| t.as_deref().map(|t| super::when::parse(t, now, &tz)).transpose();
    let (from, to) = (parse(&args.from)?, parse(&args.to)?);
    if let (Some(f), Some(t)) = (from, to) {
        anyhow::ensure!(f <= t, "--from is after --to");
    }
    Ok((from, to))
}

pub fn run(cli: &Cli, args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let rec = open(&args.file)?;
    // The SEQ/RAND cut-offs are the viewer's settings, as live.
    let thresholds = crate::config::load_pattern(cli)?;
    let findings = crate::config::load_findings(cli)?;
    let (from, to) = range(args)?;
    let printer = crate::batch::Printer {
        top: args.top,
        json: args.json || cli.json,
        csv: None,
        text: crate::batch::TextStyle {
            wide: cli.wide,
            ..Default::default()
        },
    };
    let mut printed = 0u64;
    for seg in &rec.segments {
        // The sample before the range is the baseline of its first report.
        let Some(first) = seg.samples.iter().position(|f| from.is_none_or(|t| f.wall_ns >= t)) else {
            continue;
        };
        // The model is warmed up on the minute before the range (the
        // write window and the cgroup limit window look back that far), so
        // a report in a range gives what a replay of the whole file does.
        let warm = from.map_or(0, |t| {
            let since = t.saturating_sub(WARM_UP_NS);
            seg.samples.iter().position(|f| f.wall_ns >= since).unwrap_or(first)
        });
        let mut model = model_for(seg);
        model.thresholds = thresholds;
        model.findings.cfg = findings.clone();
        for (i, f) in seg.samples.iter().enumerate().skip(warm.min(first.saturating_sub(1))) {
            if to.is_some_and(|t| f.wall_ns > t) {
                break;
            }
            let s = match rec.sample(f) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("iolens: warning: {}: {e:#}: sample skipped", args.file.display());
                    continue;
                }
            };
            let baseline = model.last_sample().is_none();
            fold(&mut model, &rec, seg, i, s);
            if baseline || i < first {
                continue;
            }
            if printer.fresh(&model, 0).is_break() {
                return Ok(ExitCode::SUCCESS);
            }
            printed += 1;
        }
    }
    if printed == 0 {
        eprintln!(
            "iolens: {}: no report in this range ({} samples in {} recorder runs; a report needs two samples)",
            args.file.display(),
            rec.segments.iter().map(|s| s.samples.len()).sum::<usize>(),
            rec.segments.len()
        );
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
