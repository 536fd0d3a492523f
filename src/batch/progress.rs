//! `iolens progress`: the current transfers on the command line, like
//! Xfennec/progress — once, or refreshed with `--watch` until the watched
//! processes end, as text or JSON records. Exit status 0 when something was
//! shown, 1 when nothing matched.
//!
//! Without `--pid`/`--name` the first pass scans every process's fds once
//! (a full scan), then shows what moved in the interval, what did positional
//! I/O, and the files of the well-known copy tools ([`KNOWN_COMMANDS`]).

use std::fmt::Write as _;
use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::cli::{Cli, ProgressArgs};
use crate::collect::fdinfo::{FdScanner, FdSnapshot, ProcLister, Watch};
use crate::collect::{Reader, monotonic_ns, process_cpu_ns};
use crate::format::{self, escape, escape_bytes};
use crate::model::jobs::track::{JobTracker, Seen};
use crate::model::progress::{Job, Label, Transfer, TransferTracker};
use crate::session::{Clock, FdSources, First, interval};

/// Shown even before their files move (the list Xfennec/progress uses, plus
/// common backup tools).
pub const KNOWN_COMMANDS: &[&str] = &[
    "cp",
    "mv",
    "dd",
    "tar",
    "bsdtar",
    "cat",
    "rsync",
    "scp",
    "gzip",
    "gunzip",
    "pigz",
    "bzip2",
    "bunzip2",
    "xz",
    "unxz",
    "lzma",
    "zstd",
    "unzstd",
    "lz4",
    "zcat",
    "pv",
    "cpio",
    "7z",
    "7za",
    "zip",
    "unzip",
    "split",
    "gpg",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "pg_dump",
    "mysqldump",
    "borg",
    "restic",
    "adb",
    "curl",
    "wget",
    "ffmpeg",
];

/// One collection pass of the command.
struct Pass {
    reader: Reader,
    lister: ProcLister,
    scanner: FdScanner,
    tracker: TransferTracker,
    /// List every process, not only the watched ones (to see who did I/O).
    all: bool,
    jobs: crate::session::jobs::Engine,
    job_tracker: JobTracker,
}

/// CPU cost of one pass, in ns, and what it covered.
struct PassCost {
    list_ns: u64,
    scan_ns: u64,
    listed: u32,
    scanned: usize,
    fds_seen: u64,
}

impl Pass {
    fn new(cli: &Cli, args: &ProgressArgs) -> Self {
        let watch = Watch {
            pids: args.pid.clone(),
            names: args.name.clone(),
        };
        let unfiltered = watch.is_empty();
        let FdSources {
            reader,
            lister,
            scanner,
        } = FdSources::new(&cli.root, watch);
        let mut tracker = TransferTracker::with_min_size(cli.min_transfer_size);
        let mut jobs = crate::session::jobs::Engine::new(args.walk_network);
        if reader.is_live() && !cli.no_trace {
            // Before the first pass: a job started from now on is traced
            // from its first read (files done exact, as root).
            jobs.trace_files();
        }
        if unfiltered {
            tracker.known_names = KNOWN_COMMANDS.iter().map(|s| s.to_string()).collect();
        }
        Pass {
            reader,
            lister,
            scanner,
            tracker,
            all: unfiltered,
            jobs,
            job_tracker: JobTracker::default(),
        }
    }

    fn run(&mut self) -> anyhow::Result<(FdSnapshot, PassCost)> {
        let t0 = process_cpu_ns();
        let procs = self
            .lister
            .list(&self.reader, &self.scanner.watch, self.all)
            .with_context(|| format!("listing {}", self.reader.path("/proc").display()))?;
        let tools: Vec<i32> = procs
            .iter()
            .filter(|p| crate::session::jobs::tool_comm(&p.comm))
            .map(|p| p.key.pid)
            .collect();
        let t1 = process_cpu_ns();
        let snap = self.scanner.scan(&self.reader, &procs);
        let t2 = process_cpu_ns();
        let now = monotonic_ns();
        self.tracker.update(&snap, now);
        if self.reader.is_live() {
            let inputs = self.jobs.read(&tools);
            let seen = Seen {
                files: &self.tracker.jobs,
                fds: &snap.procs,
            };
            self.job_tracker.update(inputs, &seen, now);
        }
        let cost = PassCost {
            list_ns: t1 - t0,
            scan_ns: t2 - t1,
            listed: snap.listed,
            scanned: snap.procs.len(),
            fds_seen: snap.fds_seen,
        };
        Ok((snap, cost))
    }
}

pub fn run(cli: &Cli, args: &ProgressArgs) -> anyhow::Result<ExitCode> {
    let every = interval(cli.interval)?;
    let mut pass = Pass::new(cli, args);
    // A terminating signal ends the run between passes; one that comes
    // while a read is stuck in the kernel is answered after a second.
    crate::stop::catch(true);
    if let Some(n) = args.bench {
        return match bench(&mut pass, every, n) {
            // `iolens progress --bench 5 | head -1`
            Err(e)
                if e.chain().any(|c| {
                    c.downcast_ref::<std::io::Error>()
                        .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
                }) =>
            {
                Ok(ExitCode::SUCCESS)
            }
            r => r,
        };
    }
    let (first, _) = pass.run()?;
    if first.denied > 0 {
        let why = if crate::sys::is_root() {
            "permission denied even to root: exiting, or guarded by a security module"
        } else {
            "other users' processes; run as root to see them"
        };
        let n = first.denied;
        eprintln!(
            "iolens: the open files of {n} process{} could not be read ({why})",
            if n == 1 { "" } else { "es" }
        );
    }
    // The first pass was tick 0.
    let mut clock = started(every);
    let mut shown = false;
    let stdout = std::io::stdout();
    loop {
        if clock.sleep() {
            break;
        }
        let (snap, _) = pass.run()?;
        clock.advance(Instant::now());
        let jobs = &pass.tracker.jobs;
        let views = &pass.job_tracker.views;
        shown |= !jobs.is_empty() || !views.is_empty();
        let text = if args.json {
            // Each record carries the wall-clock time of its pass.
            let wall = crate::collect::realtime_ns();
            let time = crate::format::wall_time(wall, false);
            // The jobs first, as one record of the pass.
            let head = (!views.is_empty())
                .then(|| serde_json::json!({"time": time.clone(), "unix_ns": wall, "jobs": views}))
                .map(|v| format::escape_json_controls(v.to_string()) + "\n")
                .unwrap_or_default();
            head + &jobs
                .iter()
                .filter_map(|j| serde_json::to_value(j).ok())
                .map(|mut v| {
                    if let Some(m) = v.as_object_mut() {
                        m.insert("time".into(), time.clone().into());
                        m.insert("unix_ns".into(), wall.into());
                    }
                    format::escape_json_controls(v.to_string())
                })
                .fold(String::new(), |s, l| s + &l + "\n")
        } else {
            let mut t = crate::session::jobs::report(views) + &report(jobs);
            if args.watch {
                t.push('\n');
            }
            t
        };
        let mut out = stdout.lock();
        if out.write_all(text.as_bytes()).and_then(|_| out.flush()).is_err() {
            break;
        }
        if !args.watch {
            break;
        }
        // Watched processes all gone (or, unfiltered, nothing left running).
        // With --name, a watch started before its process waits for it.
        let running = if pass.scanner.watch.is_empty() {
            jobs.iter().any(|j| !j.is_done()) || views.iter().any(|v| v.ended_ns.is_none())
        } else {
            !snap.procs.is_empty() || (!shown && !args.name.is_empty())
        };
        if !running {
            break;
        }
    }
    if !shown && !args.json && !crate::stop::requested() {
        eprintln!("iolens: no transfers found{}", hint(&pass.scanner.watch));
    }
    Ok(if shown { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

fn hint(w: &Watch) -> &'static str {
    if w.is_empty() {
        " (no process moved a file position in the interval; try --name or --pid)"
    } else {
        " for the given --pid/--name"
    }
}

/// The text report: per job a header line, then its progress line, then its
/// other files.
pub fn report(jobs: &[Job]) -> String {
    let mut s = String::new();
    for j in jobs {
        let _ = writeln!(s, "[{}] {} {}", j.proc.pid, escape(&j.comm), escape_bytes(&j.main.path));
        let _ = writeln!(s, "\t{}", transfer_line(&j.main));
        if j.files_seen_closed > 0 || j.main.label == Label::Positional {
            let reads = j.read_bps.map_or_else(|| format::NA.to_string(), format::rate);
            let _ = match j.files_seen_closed {
                0 => writeln!(s, "\tprocess reads {reads}"),
                n => writeln!(
                    s,
                    "\tfiles closed: at least {n} (seen open at a sample), process reads {reads}"
                ),
            };
        }
        for o in &j.others {
            let _ = writeln!(s, "\t+ fd {} {}: {}", o.key.fd, escape_bytes(&o.path), transfer_line(o));
        }
    }
    s
}

/// "8.7% (4.10 MB / 47.7 MB) 2.00 MB/s, eta 21s" or the honest label.
pub fn transfer_line(t: &Transfer) -> String {
    let size = t
        .size
        .map_or_else(|| format::NA.to_string(), |s| format::decimal(s as f64));
    let rate = t.rate_bps.map_or_else(|| format::NA.to_string(), format::rate);
    let pos = format::decimal(t.pos as f64);
    let mut s = match t.label {
        Label::Positional => format!("positional I/O (pread/mmap): progress unknowable, {rate}"),
        Label::Growing => format!("writing {pos} (size grows with it), {rate}"),
        Label::Truncated => format!("pos {pos} beyond size {size}: file truncated under the reader"),
        Label::Remote => format!("at {pos}, {}, {rate}", crate::model::progress::REMOTE),
        _ if t.shown_percent().1 => format!(
            "~100% (last seen at {}: {pos} / {size}, its rate reached the end before it was gone)",
            format::pct(t.percent)
        ),
        _ => format!(
            "{} ({pos} / {size}) {rate}, eta {}",
            format::pct(t.percent),
            format::duration(t.eta_s)
        ),
    };
    if matches!(t.label, Label::Stalled { .. } | Label::Done { .. }) {
        let _ = write!(s, " [{}]", t.label_text());
    }
    s
}

/// The session's clock, its tick 0 (a pass) taken now: the next pass is
/// due a whole interval later.
fn started(every: Duration) -> Clock {
    let now = Instant::now();
    let mut clock = Clock::new(now, every, First::Full);
    clock.advance(now);
    clock
}

fn bench(pass: &mut Pass, every: Duration, samples: u32) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    let line = |c: &PassCost| {
        format!(
            "list {:>8.0} µs + fd scan {:>8.0} µs CPU  ({} listed, {} scanned, {} fds)",
            c.list_ns as f64 / 1e3,
            c.scan_ns as f64 / 1e3,
            c.listed,
            c.scanned,
            c.fds_seen
        )
    };
    let (_, first) = pass.run()?;
    writeln!(out, "first pass:    {}", line(&first)).context("writing to stdout")?;
    let mut clock = started(every);
    let (mut list, mut scan, mut scanned, mut n) = (0u64, 0u64, 0usize, 0u64);
    for k in 1..=samples {
        if clock.sleep() {
            break;
        }
        let (_, c) = pass.run()?;
        clock.advance(Instant::now());
        if k <= 2 {
            writeln!(out, "pass {}:        {}", k + 1, line(&c))?;
        } else {
            list += c.list_ns;
            scan += c.scan_ns;
            scanned += c.scanned;
            n += 1;
        }
    }
    if n > 0 {
        let per_s = 1.0 / every.as_secs_f64();
        writeln!(
            out,
            "steady (mean of {n}): list {:.0} µs + fd scan {:.0} µs CPU per sample, {:.1} processes scanned; fd scan {:.2} ms CPU per second",
            list as f64 / n as f64 / 1e3,
            scan as f64 / n as f64 / 1e3,
            scanned as f64 / n as f64,
            scan as f64 / n as f64 / 1e6 * per_s
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
