//! Command-line interface. Every flag can also be set from an `IOLENS_*`
//! environment variable; precedence is CLI > env > config file > default.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "iolens",
    version,
    about = "Live disk analysis for Linux: devices, processes, progress, probes"
)]
pub struct Cli {
    /// Read /proc and /sys under this directory instead of "/": a captured /proc and /sys tree
    /// (before a subcommand: `iolens --root DIR progress`; probes refuse it)
    #[arg(long, env = "IOLENS_ROOT", default_value = "/")]
    pub root: PathBuf,

    /// Seconds between samples
    #[arg(long, short = 'i', env = "IOLENS_INTERVAL", global = true)]
    pub interval: Option<f64>,

    /// Print plain-text reports instead of opening the dashboard
    #[arg(long, short = 'b', env = "IOLENS_BATCH")]
    pub batch: bool,

    /// Print one JSON object per interval (implies --batch)
    #[arg(long, env = "IOLENS_JSON")]
    pub json: bool,

    /// Number of reports in batch mode (default: run until interrupted)
    #[arg(long, short = 'n', env = "IOLENS_COUNT")]
    pub count: Option<u64>,

    /// Number of processes (and cgroups) listed per report in batch mode (0: no process or cgroup section)
    #[arg(long, env = "IOLENS_TOP", default_value_t = 10)]
    pub top: usize,

    /// Batch text units: human (auto-scaled, kB/s .. GB/s) or raw (plain bytes and bytes/s)
    #[arg(long, env = "IOLENS_UNITS", value_enum, default_value_t = Units::Human)]
    pub units: Units,

    /// Batch text (also of record and replay): every `iostat -x` device column (merges, discard, flush) and the process io% column; the default set fits 120 columns
    #[arg(long, short = 'x', env = "IOLENS_WIDE", global = true)]
    pub wide: bool,

    /// Print CSV (implies --batch): one header line, then one row per device or per process and interval, plain units
    #[arg(long, env = "IOLENS_CSV", value_enum, value_name = "TABLE", num_args = 0..=1, default_missing_value = "devices")]
    pub csv: Option<CsvTable>,

    /// Disable colours (also honoured: the NO_COLOR environment variable)
    #[arg(long, env = "IOLENS_NO_COLOR", global = true)]
    pub no_color: bool,

    /// Dashboard: leave the mouse to the terminal (no click, wheel or header sort)
    #[arg(long, env = "IOLENS_NO_MOUSE")]
    pub no_mouse: bool,

    /// Config file (default: $XDG_CONFIG_HOME/iolens/config.toml)
    #[arg(long, env = "IOLENS_CONFIG", global = true)]
    pub config: Option<PathBuf>,

    /// Dashboard: always track the open files of these PIDs (transfers pane)
    #[arg(long, env = "IOLENS_PID", value_delimiter = ',', value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Vec<i32>,

    /// Dashboard: always track the open files of processes with this command name (exact comm)
    #[arg(long, env = "IOLENS_NAME", value_delimiter = ',')]
    pub name: Vec<String>,

    /// Transfers: files smaller than this (bytes) are not listed as transfers (0: all)
    #[arg(long, env = "IOLENS_MIN_TRANSFER_SIZE", value_name = "BYTES", default_value_t = 1 << 20, global = true)]
    pub min_transfer_size: u64,

    /// Remove tracefs instances left by an iolens that was killed (owner no longer running), then exit
    #[arg(long)]
    pub cleanup: bool,

    /// Do not trace block requests even as root (pattern then estimated from counters)
    #[arg(long, env = "IOLENS_NO_TRACE")]
    pub no_trace: bool,

    /// Trace block requests but not the page cache (no per-file disk reads and dirtying; their events are per folio, the tracer's largest cost under heavy buffered I/O)
    #[arg(long, env = "IOLENS_NO_FILE_EVENTS")]
    pub no_file_events: bool,

    /// CPU the block tracer may use, % of one core (its reads, decode and model); above it requests are traced in windows and the counts scaled, marked sampled (JSON trace_share). off or 0: no limit
    #[arg(long, env = "IOLENS_TRACE_BUDGET", value_name = "PCT", default_value = "2", value_parser = parse_budget, global = true)]
    pub trace_budget: f64,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// How batch text shows byte counts and rates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum Units {
    /// Auto-scaled decimal units (kB/s, MB/s, GB)
    #[default]
    Human,
    /// Plain bytes and bytes per second, for sort and awk
    Raw,
}

/// Which table `--csv` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CsvTable {
    /// One row per device (and the total) per interval
    Devices,
    /// One row per busiest process (--top) per interval
    Processes,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Show progress, rate and ETA of long file operations (from fdinfo)
    Progress(ProgressArgs),
    /// Run a read-only probe of a block device, partition or file
    Probe(ProbeArgs),
    /// Measure the cost of one full sample (CPU µs per sample and per process)
    #[command(hide = true)]
    BenchSample(BenchArgs),
    /// Record samples to FILE (default every 10 s) for `iolens replay`
    Record(RecordArgs),
    /// Replay a recording: the dashboard with time travel, or reports of a time range (--batch, --json)
    Replay(ReplayArgs),
    /// Prometheus exporter: /metrics over HTTP (loopback by default) and/or a textfile
    Export(ExportArgs),
    /// Sample for a few seconds and say why the disks are slow: findings with evidence (exit 0: none, 1: a warning or worse, 2: an error)
    Why(WhyArgs),
    /// Print the man page (roff) or shell completions, generated from this definition
    #[command(hide = true)]
    Generate(GenerateArgs),
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Serve /metrics on this ADDRESS:PORT (default 127.0.0.1:9839, loopback only; not served when only --textfile is given)
    #[arg(long, value_name = "ADDR", env = "IOLENS_LISTEN")]
    pub listen: Option<String>,
    /// Also write the metrics to this file after every sample, atomically (node_exporter's textfile collector)
    #[arg(long, value_name = "PATH")]
    pub textfile: Option<PathBuf>,
    /// Commands with a series of their own (the rest is comm="other")
    #[arg(long, default_value_t = 20)]
    pub top: usize,
    /// Export the last completed probe result per device from this results file (written by `iolens probe` and the dashboard; the exporter never runs probes)
    #[arg(long, value_name = "FILE")]
    pub probe_results: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// The recording: created (never overwritten), or appended to when it is an iolens recording
    pub file: PathBuf,
    /// Keep the file under this size by dropping the oldest samples (e.g. 100M, 1G; at least 64K)
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    pub max_size: Option<u64>,
    /// Stop after this many intervals, N + 1 samples (default: record until interrupted)
    #[arg(long, short = 'n')]
    pub count: Option<u64>,
    /// Also print the plain-text report of every interval
    #[arg(long, short = 'b')]
    pub batch: bool,
    /// Also print the JSON report of every interval
    #[arg(long)]
    pub json: bool,
    /// Number of processes listed per printed report
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Also trace block requests (root) and record each interval's sequential share and latency histograms
    #[arg(long)]
    pub trace: bool,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A recording written by `iolens record`
    pub file: PathBuf,
    /// Print plain-text reports of the recorded intervals
    #[arg(long, short = 'b')]
    pub batch: bool,
    /// Print one JSON object per recorded interval
    #[arg(long)]
    pub json: bool,
    /// First report at or after TIME: RFC 3339 (2026-11-23T03:00:00+01:00), HH:MM[:SS] today, or -1h / -30m / -90s / -2d before now
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub from: Option<String>,
    /// Last report at or before TIME (same forms as --from)
    #[arg(long, value_name = "TIME", allow_hyphen_values = true)]
    pub to: Option<String>,
    /// Number of processes listed per report
    #[arg(long, default_value_t = 10)]
    pub top: usize,
}

/// A CPU budget in % of one core: a number in [0, 100], or `off` (0: no
/// limit).
pub fn parse_budget(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%');
    if t.eq_ignore_ascii_case("off") {
        return Ok(0.0);
    }
    match t.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a share of a core in % (0 to 100, or off)")),
    }
}

/// A size with an optional K, M, G suffix (powers of 1024; `B`, `iB` accepted).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let t = t.strip_suffix("iB").or_else(|| t.strip_suffix('B')).unwrap_or(t);
    let (num, mult) = match t.char_indices().last() {
        Some((i, 'K' | 'k')) => (&t[..i], 1u64 << 10),
        Some((i, 'M' | 'm')) => (&t[..i], 1 << 20),
        Some((i, 'G' | 'g')) => (&t[..i], 1 << 30),
        Some((i, 'T' | 't')) => (&t[..i], 1 << 40),
        _ => (t, 1),
    };
    let n: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a size (e.g. 100M)"))?;
    let v = n * mult as f64;
    if !(v.is_finite() && (1.0..1e18).contains(&v)) {
        return Err(format!("{s:?} is not a size (e.g. 100M)"));
    }
    Ok(v as u64)
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub what: Generated,
}

#[derive(Debug, Subcommand)]
pub enum Generated {
    /// The man page, iolens(1), in roff: `iolens generate man > iolens.1`
    Man,
    /// Completions for SHELL: `iolens generate completions bash > /etc/bash_completion.d/iolens`
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

/// Write what `generate` asks for to `out`.
pub fn generate(what: &Generated, out: &mut dyn std::io::Write) -> std::io::Result<()> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    match what {
        Generated::Man => clap_mangen::Man::new(cmd).render(out),
        Generated::Completions { shell } => {
            let mut cmd = cmd;
            clap_complete::generate(*shell, &mut cmd, "iolens", out);
            Ok(())
        }
    }
}

#[derive(Debug, Args)]
pub struct WhyArgs {
    /// Seconds to sample before answering
    #[arg(long, short = 'd', default_value_t = 5.0)]
    pub duration: f64,
    /// Machine-readable output: one JSON object with findings[]
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ProgressArgs {
    /// Only these PIDs
    #[arg(long, short = 'p', env = "IOLENS_PID", value_delimiter = ',', value_parser = clap::value_parser!(i32).range(1..))]
    pub pid: Vec<i32>,
    /// Only processes whose command name matches (exact comm)
    #[arg(long, short = 'c', env = "IOLENS_NAME", value_delimiter = ',')]
    pub name: Vec<String>,
    /// Refresh until the watched processes end
    #[arg(long, short = 'w')]
    pub watch: bool,
    /// Machine-readable output, one JSON object per line
    #[arg(long)]
    pub json: bool,
    /// Measure instead of showing: CPU of the first (full) fd scan, then of
    /// SAMPLES steady samples at the interval
    #[arg(long, value_name = "SAMPLES")]
    pub bench: Option<u32>,
    /// Walk a job's sources even on FUSE, network and automount filesystems (a hung server can then leave its total unknown)
    #[arg(long)]
    pub walk_network: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProbeKind {
    /// Random read latency at queue depth 1
    Rand,
    /// Sequential zone sweep across the target
    Sweep,
    /// Both
    All,
    /// Queue-depth sweep: random reads at QD 1, 2, 4, … 64 (io_uring)
    Depth,
    /// Write + fdatasync latency in a DIRECTORY (writes only its own temporary file there)
    Sync,
    /// Partition alignment of a block device (sysfs), +512 B reads as evidence
    Align,
    /// Request-size sweep: random reads of 4 KiB … 4 MiB
    Size,
    /// Seek curve and rotation (RPM) of a whole disk
    Seek,
}

#[derive(Debug, Args)]
pub struct ProbeArgs {
    /// Which test to run
    #[arg(value_enum)]
    pub kind: ProbeKind,
    /// Block device, partition or regular file (for `sync`: a directory)
    pub target: PathBuf,
    /// Short run (default)
    #[arg(long, conflicts_with = "thorough")]
    pub quick: bool,
    /// Longer run, more zones
    #[arg(long)]
    pub thorough: bool,
    /// Block size for random reads (e.g. 4k, 64KiB)
    #[arg(long)]
    pub bs: Option<String>,
    /// Time cap in seconds per test
    #[arg(long)]
    pub duration: Option<f64>,
    /// Run in the idle I/O class (labelled impact-limited only where the scheduler is bfq)
    #[arg(long)]
    pub idle: bool,
    /// Drop the global page cache first (root only; affects the whole machine)
    #[arg(long)]
    pub drop_caches: bool,
    /// Machine-readable output
    #[arg(long)]
    pub json: bool,
    /// Depth sweep: these queue depths only (e.g. 1,4,16), without the stop rule
    #[arg(long, value_name = "LIST")]
    pub qd: Option<String>,
    /// Depth sweep: minimum seconds per depth (default 1 quick, 3 thorough)
    #[arg(long, value_name = "SECS")]
    pub qd_time: Option<f64>,
    /// Depth sweep: p99 bound for the latency-bounded IOPS, in ms
    #[arg(long, value_name = "MS", default_value_t = 10.0)]
    pub p99_target: f64,
    /// Depth sweep: use a pread thread pool instead of io_uring
    #[arg(long)]
    pub pread: bool,
    /// Append the result to FILE instead of the default results file (e.g. the file `iolens export --probe-results` reads)
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Number of samples to take
    #[arg(long, default_value_t = 20)]
    pub samples: u32,
    /// Also read the cgroup tree each sample, and report its cost apart
    #[arg(long)]
    pub cgroups: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn help_hides_internal_subcommands_and_probe_does_not_offer_root() {
        let mut cmd = Cli::command();
        let help = cmd.render_help().to_string();
        assert!(help.contains("progress") && help.contains("probe"), "{help}");
        assert!(!help.contains("bench-sample") && !help.contains("generate"), "{help}");
        let probe = cmd.find_subcommand_mut("probe").map(|c| c.render_help().to_string());
        let probe = probe.unwrap_or_default();
        assert!(probe.contains("--thorough") && !probe.contains("--root"), "{probe}");
        // Given after the subcommand it is an error, not a silent ignore.
        assert!(Cli::try_parse_from(["iolens", "probe", "rand", "/dev/sda", "--root", "/x"]).is_err());
        assert!(Cli::try_parse_from(["iolens", "--root", "/x", "progress"]).is_ok());
    }

    #[test]
    fn the_trace_budget_is_2_percent_unless_turned_off() {
        if std::env::var_os("IOLENS_TRACE_BUDGET").is_some() {
            eprintln!("skipped: IOLENS_TRACE_BUDGET is set in this environment");
            return;
        }
        let budget = |args: &[&str]| Cli::try_parse_from(args).map(|c| crate::session::trace_budget(&c));
        assert_eq!(budget(&["iolens"]).ok(), Some(Some(0.02)));
        assert_eq!(budget(&["iolens", "--trace-budget", "off"]).ok(), Some(None));
        assert_eq!(budget(&["iolens", "--trace-budget", "0"]).ok(), Some(None));
        assert_eq!(budget(&["iolens", "--trace-budget", "5%"]).ok(), Some(Some(0.05)));
        assert!(budget(&["iolens", "--trace-budget", "150"]).is_err());
    }

    #[test]
    fn man_page_and_completions_come_from_the_definition() {
        let mut man = Vec::new();
        generate(&Generated::Man, &mut man).unwrap();
        let man = String::from_utf8(man).unwrap();
        assert!(man.contains(".TH iolens 1"), "{}", &man[..man.len().min(200)]);
        assert!(
            man.contains("\\-\\-units") && man.contains("\\-\\-no\\-mouse"),
            "flags in the man page"
        );
        let mut bash = Vec::new();
        generate(
            &Generated::Completions {
                shell: clap_complete::Shell::Bash,
            },
            &mut bash,
        )
        .unwrap();
        let bash = String::from_utf8(bash).unwrap();
        assert!(bash.contains("_iolens()") && bash.contains("--csv"), "bash completions");
    }
}
