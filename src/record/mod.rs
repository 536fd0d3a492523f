//! Recording and replay: `iolens record FILE` appends the raw samples (with
//! the host facts they were taken with) to a compact file; `iolens replay
//! FILE` feeds them through the same pure model as live.
//!
//! - [`frame`]: the frames, pure over bytes (magic, capped length, CRC;
//!   torn tails and corrupted frames are stepped over).
//! - [`file`]: the file head, the host frame, the writer (with rotation
//!   under `--max-size`) and the indexed reader.
//! - [`replay`]: the batch and JSON replay; [`when`]: `--from`/`--to` times;
//!   [`player`]: where a replay on the dashboard is (time travel).

mod crc;
pub mod dirty;
pub mod file;
pub mod files;
pub mod findings;
pub mod frame;
pub mod player;
pub mod replay;
pub mod when;

/// Why a replayed sample has no traced numbers: recorded without
/// `--trace` (or the tracer could not run).
pub const NOT_TRACED: &str = "recorded without tracing (iolens record --trace)";

/// Default seconds between recorded samples.
pub const DEFAULT_INTERVAL: f64 = 10.0;

/// The host frame of this run.
pub fn header(interval_s: f64) -> file::Header {
    let host = crate::collect::sample::HostInfo::read();
    file::Header {
        iolens: env!("CARGO_PKG_VERSION").to_string(),
        host: host.hostname,
        kernel: host.kernel,
        clk_tck: crate::session::clk_tck(),
        boot_id: file::boot_id(),
        is_root: host.is_root,
        interval_s,
    }
}

/// `iolens record FILE`: the session's report loop with every sample
/// appended to the file (with `--trace`, the tracer's interval too),
/// printing the batch reports only with `--batch` or `--json`. Status 1
/// when a sample could not be written (see [`file::MAX_LOST_IN_A_ROW`]).
pub fn run(cli: &crate::cli::Cli, args: &crate::cli::RecordArgs) -> anyhow::Result<std::process::ExitCode> {
    use crate::session::headless::{self, Schedule};
    use std::ops::ControlFlow;
    let every = crate::session::interval(cli.interval.or(Some(DEFAULT_INTERVAL)))?;
    let writer = file::Writer::open(&args.file, &header(every.as_secs_f64()), args.max_size)?;
    let schedule = Schedule {
        every,
        count: args.count,
    };
    let printer = (args.json || args.batch).then_some(crate::batch::Printer {
        top: args.top,
        json: args.json,
        csv: None,
        text: crate::batch::TextStyle {
            units: crate::cli::Units::Human,
            wide: cli.wide,
        },
    });
    // Tracing only when asked: its intervals are recorded next to the
    // samples (sequential share, latency), not the requests themselves.
    let trace_off = if args.trace {
        crate::session::trace_disabled(cli)
    } else {
        // The reason replay gives too: its reports equal the recorder's.
        Some(NOT_TRACED)
    };
    let session = crate::session::Session::new(crate::session::Plan::full(cli, trace_off));
    let mut model = crate::session::model();
    model.thresholds = crate::config::load_pattern(cli)?;
    model.findings.cfg = crate::config::load_findings(cli)?;
    crate::session::load_saved_probes(&mut model, cli, None);
    // The findings after each sample follow it in the file.
    let writer = std::cell::RefCell::new(writer);
    headless::run(
        session,
        model,
        schedule,
        |s, trace| writer.borrow_mut().record(s, trace),
        |r| {
            if let headless::Report::Fresh { model, .. } = &r {
                let mut w = writer.borrow_mut();
                if let Err(e) = w.append_findings(model.wall_ns, model.findings.findings()) {
                    eprintln!("iolens: {e:#}: findings not recorded");
                }
                if let Err(e) = w.append_files(model.wall_ns, &model.trace.files) {
                    eprintln!("iolens: {e:#}: per-file numbers not recorded");
                }
                if let Err(e) = w.append_dirty(model.wall_ns, &model.trace) {
                    eprintln!("iolens: {e:#}: dirty-throttle figures not recorded");
                }
            }
            printer.as_ref().map_or(ControlFlow::Continue(()), |p| p.print(r))
        },
    )?;
    let writer = writer.into_inner();
    if writer.lost > 0 {
        eprintln!(
            "iolens: {} of {} samples could not be written to {}",
            writer.lost,
            writer.samples,
            args.file.display()
        );
        return Ok(std::process::ExitCode::from(1));
    }
    Ok(std::process::ExitCode::SUCCESS)
}
