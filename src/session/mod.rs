//! The session: the one place that builds the collectors from the options
//! (the collector with its cgroup reader, exit records and watched
//! processes, the block tracer) and the one sampler loop every mode uses:
//! the dashboard, the batch output and `iolens record`
//! ([`headless`]), `iolens export`, and the clock of `iolens progress`.
//!
//! - [`clock`]: when samples are taken ([`FIRST_INTERVAL`], skipped ticks).
//! - [`sampler`]: the sampler loop on its own thread.
//! - [`headless`]: a report per interval without a terminal, saying so
//!   when a sample is late.
//! - [`FdSources`]: the open-file scan alone, for `iolens progress`.

pub mod clock;
pub mod headless;
pub mod jobfiles;
pub mod jobs;
pub mod sampler;
pub mod tracing;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use clock::{Clock, FIRST_INTERVAL, First, tick_offset};
pub use sampler::{Sampler, SamplerCtl, Taken};

use crate::cli::Cli;
use crate::collect::cgroup::CgroupReader;
use crate::collect::fdinfo::{AlsoScan, FdScanner, ProcLister, Watch};
use crate::collect::sample::HostInfo;
use crate::collect::taskstats::ExitTgids;
use crate::collect::{Collector, RawSample, Reader};
use crate::model::Model;
use crate::model::trace::view::TraceView;
use crate::session::tracing::Tracing;

/// Default seconds between samples (dashboard and batch output).
pub const DEFAULT_INTERVAL: f64 = 1.0;

/// Clock ticks per second (`sysconf(_SC_CLK_TCK)`, from the auxiliary vector).
pub fn clk_tck() -> f64 {
    match rustix::param::clock_ticks_per_second() {
        0 => 100.0,
        v => v as f64,
    }
}

/// Validate an interval given on the command line (`--interval`), or the
/// default.
pub fn interval(v: Option<f64>) -> anyhow::Result<Duration> {
    check_interval(v.unwrap_or(DEFAULT_INTERVAL), "--interval")
}

/// Validate an interval, naming where it came from (`key`): NaN, infinite,
/// not positive or absurd values are refused.
pub fn check_interval(s: f64, key: &str) -> anyhow::Result<Duration> {
    anyhow::ensure!(
        s.is_finite() && (0.05..=3600.0).contains(&s),
        "{key} must be between 0.05 and 3600 seconds, got {s}"
    );
    Ok(Duration::from_secs_f64(s))
}

/// Why tracing is not even tried, from the command line.
pub fn trace_disabled(cli: &Cli) -> Option<&'static str> {
    if cli.no_trace {
        Some("--no-trace")
    } else if cli.root != std::path::Path::new("/") {
        Some("a captured /proc and /sys tree (--root)")
    } else {
        None
    }
}

/// An empty model of this host, its findings engine with the default
/// thresholds (a mode sets the config file's, `[findings]`) and leaving
/// iolens itself out (its reads of /proc are many small syscalls).
pub fn model() -> Model {
    let mut m = Model::new(HostInfo::read(), clk_tck());
    m.findings.ignore_pid = i32::try_from(std::process::id()).ok();
    m
}

/// The saved probe results into the model's findings engine (what each
/// device showed it can do): from `path`, else the default results file;
/// none for a captured tree (`--root`), whose devices are not this box's.
pub fn load_saved_probes(model: &mut Model, cli: &Cli, path: Option<&Path>) {
    if cli.root == Path::new("/") {
        model.findings.saved = crate::probe::store::load_saved(path);
    }
}

/// One sample into the model, as every mode folds it: the counters, the
/// tracer's interval, then the findings engine.
pub fn fold(model: &mut Model, s: RawSample, trace: TraceView) {
    model.update(s);
    model.apply_trace(trace);
    model.judge();
}

/// What a mode collects.
#[derive(Debug, Clone)]
pub struct Plan {
    /// "/" or a captured /proc and /sys tree (`--root`).
    pub root: PathBuf,
    /// Read the cgroup tree every sample.
    pub cgroups: bool,
    /// Listen for taskstats exit records.
    pub exits: bool,
    /// Processes whose fds are read every sample.
    pub watch: Watch,
    /// Why block tracing is off (`None`: tried).
    pub trace_off: Option<&'static str>,
    /// Trace the page-cache events too (not `--no-file-events`).
    pub file_events: bool,
    /// The tracer's CPU budget, share of one core (`None`: no limit).
    pub trace_budget: Option<f64>,
}

impl Plan {
    /// Everything on: cgroups, exit records and tracing unless `trace_off`
    /// says why not (batch, record, export).
    pub fn full(cli: &Cli, trace_off: Option<&'static str>) -> Plan {
        Plan {
            root: cli.root.clone(),
            cgroups: true,
            exits: true,
            watch: Watch::default(),
            trace_off,
            file_events: !cli.no_file_events,
            trace_budget: trace_budget(cli),
        }
    }
}

/// `--trace-budget` as a share of one core (`None`: no limit).
pub fn trace_budget(cli: &Cli) -> Option<f64> {
    (cli.trace_budget > 0.0).then_some(cli.trace_budget / 100.0)
}

/// Starts the block tracer where the session's plan allows it.
#[derive(Debug, Clone)]
pub struct TraceSetup(
    Option<&'static str>,
    bool,
    Option<f64>,
    Arc<AlsoScan>,
    Option<ExitTgids>,
);

impl TraceSetup {
    /// Start tracing (or keep why it is off); removed when dropped. The
    /// processes of the page-cache events are read by the next fd scan.
    pub fn start(self) -> Tracing {
        Tracing::start(self.0, self.1, self.2, self.3, self.4)
    }
}

/// The collectors of a run, built from its [`Plan`].
#[derive(Debug)]
pub struct Session {
    pub sampler: Sampler,
    pub tracer: TraceSetup,
}

impl Session {
    pub fn new(plan: Plan) -> Session {
        let live = plan.root == Path::new("/");
        let mut collector = Collector::new(plan.root);
        if plan.cgroups {
            collector.cgroups = Some(CgroupReader::new());
        }
        if plan.exits {
            collector.listen_for_exits();
        }
        collector.fds.watch = plan.watch;
        let also = Arc::new(AlsoScan::default());
        collector.fds.also = Some(also.clone());
        let exits = collector.exit_tgids();
        Session {
            sampler: Sampler::new(
                collector,
                live.then(|| {
                    let mut e = jobs::Engine::new(false);
                    if plan.trace_off.is_none() {
                        e.trace_files();
                    }
                    e
                }),
            ),
            tracer: TraceSetup(plan.trace_off, plan.file_events, plan.trace_budget, also, exits),
        }
    }
}

/// The collectors of `iolens progress`: the process list and the open-file
/// scanner alone, not a whole sample.
#[derive(Debug)]
pub struct FdSources {
    pub reader: Reader,
    pub lister: ProcLister,
    pub scanner: FdScanner,
}

impl FdSources {
    /// Reading under `root` the fds of the `watch`ed processes; with none
    /// watched, the first scan covers every process (a full scan).
    pub fn new(root: &Path, watch: Watch) -> FdSources {
        let full = watch.is_empty();
        let mut scanner = FdScanner::new(watch);
        scanner.full_next = full;
        FdSources {
            reader: Reader::new(root),
            lister: ProcLister::default(),
            scanner,
        }
    }
}
