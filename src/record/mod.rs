//! Recording and replay: `iolens record FILE` appends the raw samples (with
//! the host facts they were taken with) to a compact file; `iolens replay
//! FILE` feeds them through the same pure model as live.
//!
//! - [`frame`]: the frames, pure over bytes (magic, capped length, CRC;
//!   torn tails and corrupted frames are stepped over).
//! - [`file`]: the file head, the host frame, the writer (with rotation
//!   under `--max-size`) and the indexed reader.
//! - [`replay`]: the batch and JSON replay; [`when`]: `--from`/`--to` times.

pub mod file;
pub mod frame;
pub mod replay;
pub mod when;

/// Why a recording has no traced requests (the tracer's intervals are not
/// recorded): the trace reason of the recorder's own reports and of replay.
pub const NOT_TRACED: &str = "recorded samples (traced requests are not recorded)";

/// Default seconds between recorded samples.
pub const DEFAULT_INTERVAL: f64 = 10.0;

/// The host frame of this run.
pub fn header(interval_s: f64) -> file::Header {
    let host = crate::collect::sample::HostInfo::read();
    file::Header {
        iolens: env!("CARGO_PKG_VERSION").to_string(),
        host: host.hostname,
        kernel: host.kernel,
        clk_tck: crate::batch::clk_tck(),
        boot_id: file::boot_id(),
        is_root: host.is_root,
        interval_s,
    }
}

/// `iolens record FILE`: the batch loop with every sample appended to the
/// file (tracing off: its intervals are not recorded), printing reports
/// only with `--batch` or `--json`.
pub fn run(cli: &crate::cli::Cli, args: &crate::cli::RecordArgs) -> anyhow::Result<std::process::ExitCode> {
    let every = crate::batch::interval(cli.interval.or(Some(DEFAULT_INTERVAL)))?;
    let mut writer = file::Writer::open(&args.file, &header(every.as_secs_f64()), args.max_size)?;
    let reports = crate::batch::Reports {
        every,
        count: args.count,
        top: args.top,
        json: args.json,
        csv: None,
        units: crate::cli::Units::Human,
        print: args.json || args.batch,
    };
    crate::batch::run_reports(cli, &reports, Some(NOT_TRACED), Some(&mut writer))
}
