//! `iolens probe [rand|sweep|all] TARGET ...`: run a probe on a thread,
//! show progress on stderr (when it is a terminal), print the report (or
//! JSON), append the result to the results file. Ctrl-C cancels.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use super::view::{coarse_histogram, lat, text_bar};
use super::{CancelToken, Depth, Phase, ProbeConfig, ProbeMsg, ProbeResult, Status, Stop, Tests};
use crate::cli::{Cli, ProbeArgs, ProbeKind};
use crate::format;

/// Parse a request size in binary units: "4096", "4k", "4KiB", "64K", "1m", "1MiB".
pub fn parse_size(s: &str) -> anyhow::Result<u64> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| anyhow::anyhow!("--bs {s:?}: expected a size like 4k, 64KiB or 1MiB"))?;
    let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => anyhow::bail!("--bs {s:?}: unknown unit (use k, KiB, m or MiB)"),
    };
    n.checked_mul(mult)
        .ok_or_else(|| anyhow::anyhow!("--bs {s:?} is too large"))
}

/// The config the command line asks for.
pub fn config(cli: &Cli, args: &ProbeArgs) -> anyhow::Result<ProbeConfig> {
    let tests = match args.kind {
        ProbeKind::Rand => Tests::Random,
        ProbeKind::Sweep => Tests::Sweep,
        ProbeKind::All => Tests::Both,
        ProbeKind::Depth => Tests::QueueDepth,
        ProbeKind::Sync => Tests::SyncWrite,
        ProbeKind::Align => Tests::Align,
        ProbeKind::Size => Tests::Size,
        ProbeKind::Seek => Tests::Seek,
    };
    let depth = if args.thorough { Depth::Thorough } else { Depth::Quick };
    let mut cfg = ProbeConfig::new(&args.target, tests, depth);
    cfg.bs = args.bs.as_deref().map(parse_size).transpose()?;
    cfg.duration = args
        .duration
        .map(|d| {
            anyhow::ensure!(
                d.is_finite() && d > 0.0 && d <= 3600.0,
                "--duration must be between 0 and 3600 seconds, got {d}"
            );
            Ok(Duration::from_secs_f64(d))
        })
        .transpose()?;
    let secs = |flag: &str, d: f64| {
        anyhow::ensure!(
            d.is_finite() && d > 0.0 && d <= 3600.0,
            "{flag} must be between 0 and 3600 seconds, got {d}"
        );
        Ok(Duration::from_secs_f64(d))
    };
    cfg.qd = super::QdConfig {
        depths: args.qd.as_deref().map(super::qd::parse_depths).transpose()?,
        step: args.qd_time.map(|d| secs("--qd-time", d)).transpose()?,
        p99_target_ms: Some(args.p99_target),
        force_pread: args.pread,
    };
    anyhow::ensure!(
        args.p99_target.is_finite() && args.p99_target > 0.0,
        "--p99-target must be a positive number of ms, got {}",
        args.p99_target
    );
    cfg.idle = args.idle;
    cfg.drop_caches = args.drop_caches;
    // Probes read the live /proc and /sys (and may drop the live page
    // cache): a captured tree's device names are not this machine's.
    anyhow::ensure!(
        cli.root == std::path::Path::new("/"),
        "probes run on the live system and cannot be combined with --root (a captured /proc and /sys tree)"
    );
    Ok(cfg)
}

pub fn run(cli: &Cli, args: &ProbeArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(cli, args)?;
    if cfg.drop_caches {
        eprintln!(
            "iolens: warning: --drop-caches drops the page cache of the whole machine; every program will re-read its files from disk"
        );
    }
    crate::sys::signal::catch_interrupts();
    let live = std::io::stderr().is_terminal();
    let mut err = std::io::stderr();
    let cancel = CancelToken::new();
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = super::spawn(cfg, cancel.clone(), move |m| {
        let _ = tx.send(m);
    })?;
    let shown = super::target::describe_path(&args.target);
    let mut asked: Option<std::time::Instant> = None;
    let outcome = loop {
        if crate::sys::signal::interrupted() {
            cancel.cancel();
            let since = *asked.get_or_insert_with(std::time::Instant::now);
            // A probe stops between two reads; one that has not within the
            // grace is in a call that does not return: end without it.
            if since.elapsed() >= crate::stop::GRACE {
                if live {
                    let _ = write!(err, "\r\x1b[K");
                }
                anyhow::bail!(
                    "the probe of {shown} did not stop within {:.0} s of the signal: a call on it does not return (a dying disk?); iolens ends without it",
                    crate::stop::GRACE.as_secs_f64()
                );
            }
        }
        match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(ProbeMsg::Progress(p)) if live => {
                let what = match p.phase {
                    Phase::Random => format!("random read: {} reads, p50 {} ms", p.reads, format::opt_ms(p.p50_ms)),
                    Phase::Sweep => format!("zone sweep: {} zones done", p.zones.len()),
                    Phase::SyncWrite => format!(
                        "sync writes of {} B: {} writes, fdatasync p50 {} ms",
                        p.size_bytes,
                        p.reads,
                        format::opt_ms(p.p50_ms)
                    ),
                    Phase::Align => format!("alignment: {} reads", p.reads),
                    Phase::Size => format!(
                        "request-size sweep: {} × {} reads, p50 {} ms",
                        format::binary(p.size_bytes as f64),
                        p.reads,
                        format::opt_ms(p.p50_ms)
                    ),
                    Phase::Seek => format!("seek and rotation: {} reads", p.reads),
                    Phase::QueueDepth => format!(
                        "queue-depth sweep: QD{} {} reads, {} IOPS",
                        p.queue_depth.unwrap_or(1),
                        p.reads,
                        p.iops.map_or_else(|| format::NA.into(), |v| format!("{v:.0}"))
                    ),
                };
                let _ = write!(err, "\r\x1b[K{:3.0}%  {what}  (Ctrl-C cancels)", p.fraction * 100.0);
            }
            Ok(ProbeMsg::Progress(_)) => {}
            Ok(ProbeMsg::Finished(r)) => break Ok(r),
            Ok(ProbeMsg::Failed(e)) => break Err(anyhow::anyhow!(e)),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                break Err(anyhow::anyhow!("the probe thread ended without a result"));
            }
        }
    };
    if live {
        let _ = write!(err, "\r\x1b[K");
    }
    let _ = handle.join();
    let r = outcome?;
    let text = if args.json {
        format::json(&*r)? + "\n"
    } else {
        report(&r)
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|_| out.flush());
    drop(out);
    let saved = match &args.save {
        Some(p) => super::store::append_to(p, &r).map(|_| p.clone()),
        None => super::store::append(&r),
    };
    match saved {
        Ok(p) if !args.json => eprintln!("result appended to {}", format::escape(&p.to_string_lossy())),
        Ok(_) => {}
        Err(e) => eprintln!("iolens: {e:#}"),
    }
    Ok(if r.status == Status::Cancelled {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

fn stop_text(s: Stop) -> &'static str {
    match s {
        Stop::Done => "done",
        Stop::TimeCap => "time cap reached",
        Stop::Cancelled => "cancelled",
    }
}

/// The plain-text report.
pub fn report(r: &ProbeResult) -> String {
    let mut s = String::new();
    target_report(&mut s, r);
    if let Some(rr) = &r.random {
        random_report(&mut s, rr);
    }
    if let Some(sw) = &r.sweep {
        sweep_report(&mut s, sw);
    }
    if let Some(q) = &r.queue_depth_sweep {
        qd_report(&mut s, q);
    }
    if let Some(a) = &r.alignment {
        super::align::report(&mut s, a);
    }
    if let Some(z) = &r.size_sweep {
        super::size::report(&mut s, z);
    }
    if let Some(k) = &r.seek {
        super::seek::report(&mut s, k);
    }
    verdict_report(&mut s, r);
    s
}

/// The target, its device and file layout, and the method used.
fn target_report(s: &mut String, r: &ProbeResult) {
    use std::fmt::Write as _;
    let m = &r.method;
    let kind = match m.target_kind {
        super::target::TargetKind::BlockDevice => "block device",
        super::target::TargetKind::RegularFile => "regular file",
        super::target::TargetKind::Directory => "directory",
    };
    let size = match m.target_kind {
        super::target::TargetKind::Directory => format!("{} written", format::decimal(m.size_bytes as f64)),
        _ => format::decimal(m.size_bytes as f64),
    };
    let _ = writeln!(
        s,
        "probe of {} ({kind}, {size}){}",
        m.target,
        if r.status == Status::Cancelled {
            " — CANCELLED, partial results"
        } else {
            ""
        }
    );
    if let Some(d) = &r.device {
        let _ = writeln!(s, "device: {} (disk {})", d.name, d.disk);
    }
    match &m.backing {
        super::layout::Backing::Device => {}
        super::layout::Backing::NoDevice { filesystem } => {
            let _ = writeln!(s, "device: none ({filesystem} has no block device under it)");
        }
        super::layout::Backing::Unmappable { filesystem } => {
            let _ = writeln!(
                s,
                "device: cannot be mapped ({filesystem} gives files an anonymous device number)"
            );
        }
    }
    if let Some(l) = &m.file_layout {
        let _ = writeln!(
            s,
            "file extents (FIEMAP): {}{}, written {}, unwritten {}, holes {}, not yet on disk {}",
            l.extents,
            if l.truncated { "+ (list cut)" } else { "" },
            format::decimal(l.written_bytes as f64),
            format::decimal(l.unwritten_bytes as f64),
            format::decimal(l.hole_bytes as f64),
            format::decimal(l.pending_bytes as f64)
        );
    }
    let _ = writeln!(
        s,
        "method: {}, alignment {} ({}), queue depth {}{}",
        m.cache_note,
        m.align_bytes
            .map_or_else(|| format::NA.into(), |a| format::binary(a as f64)),
        m.align_source,
        m.queue_depth,
        if m.impact_limited {
            ", impact-limited (idle I/O class)"
        } else {
            ""
        }
    );
}

/// The random-read section: rates, latency percentiles, histogram.
fn random_report(s: &mut String, rr: &super::RandomResult) {
    use std::fmt::Write as _;
    let l = &rr.latency;
    let _ = writeln!(
        s,
        "\nrandom read: {} × {} reads in {:.1} s ({}; {} warm-up reads discarded)",
        format::binary(rr.bs as f64),
        l.count,
        rr.duration_s,
        stop_text(rr.stopped),
        rr.warmup_reads
    );
    let _ = writeln!(
        s,
        "  IOPS {}   {}",
        rr.iops.map_or_else(|| format::NA.into(), |v| format!("{v:.0}")),
        rr.mb_per_s.map_or_else(|| format::NA.into(), |v| format::rate(v * 1e6))
    );
    let _ = writeln!(
        s,
        "  latency: min {}  mean {}  stddev {}  p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
        lat(l.min_ms),
        lat(l.mean_ms),
        lat(l.stddev_ms),
        lat(l.p50_ms),
        lat(l.p90_ms),
        lat(l.p99_ms),
        lat(l.p99_9_ms),
        lat(l.max_ms)
    );
    if let Some(c) = rr.seek_correlation {
        let _ = writeln!(s, "  latency vs seek distance: r = {c:.2}");
    }
    let coarse = coarse_histogram(&rr.histogram);
    let most = coarse.iter().map(|c| c.2).max().unwrap_or(1).max(1);
    for (lo, hi, n) in coarse {
        let bar = "#".repeat(((n * 40).div_ceil(most)) as usize);
        let _ = writeln!(
            s,
            "  {:>9} – {:<9} {n:>7} {bar}",
            lat(Some(lo as f64 / 1e6)),
            lat(Some((hi + 1) as f64 / 1e6))
        );
    }
    if let Some(c) = &rr.disk_check {
        let _ = writeln!(s, "  {}", c.describe());
    }
}

/// The zone-sweep section: sequential rate across the target.
fn sweep_report(s: &mut String, sw: &super::SweepResult) {
    use std::fmt::Write as _;
    let _ = writeln!(
        s,
        "\nzone sweep: {} of {} zones × {} in {} requests, {:.1} s ({}{})",
        sw.zones.len(),
        sw.zones_planned,
        format::binary(sw.chunk_bytes as f64),
        format::binary(sw.request_bytes as f64),
        sw.duration_s,
        stop_text(sw.stopped),
        if sw.zones_shortened > 0 {
            format!(", {} zones shortened by the time cap", sw.zones_shortened)
        } else {
            String::new()
        }
    );
    let pt = |p: Option<super::sweep::ZonePoint>| {
        p.map_or_else(
            || format::NA.to_string(),
            |p| {
                format!(
                    "{} at {}",
                    format::rate(p.mb_per_s * 1e6),
                    format::decimal(p.offset as f64)
                )
            },
        )
    };
    let _ = writeln!(
        s,
        "  min {}  median {}  max {}",
        pt(sw.min),
        sw.median_mb_per_s
            .map_or_else(|| format::NA.into(), |v| format::rate(v * 1e6)),
        pt(sw.max)
    );
    let _ = writeln!(
        s,
        "  first/last 10% of zones: {}   overall {}",
        sw.first_last_ratio
            .map_or_else(|| format::NA.into(), |v| format!("{v:.2}")),
        sw.overall_mb_per_s
            .map_or_else(|| format::NA.into(), |v| format::rate(v * 1e6))
    );
    for z in &sw.zones {
        let _ = writeln!(
            s,
            "  zone {:>3} at {:>9}: {:>10}",
            z.index,
            format::decimal(z.offset as f64),
            format::rate(z.mb_per_s * 1e6)
        );
    }
    if let Some(p) = &sw.positions {
        let _ = writeln!(s, "  {p}");
    }
    if let Some(c) = &sw.disk_check {
        let _ = writeln!(s, "  {}", c.describe());
    }
}

/// The verdict with its impossible results and evidence, then the notes.
fn verdict_report(s: &mut String, r: &ProbeResult) {
    use std::fmt::Write as _;
    let _ = writeln!(s, "\nverdict: {}", r.verdict.class.label());
    for e in &r.verdict.impossible {
        let _ = writeln!(s, "  ! {e}");
    }
    for e in &r.verdict.evidence {
        let _ = writeln!(s, "  - {e}");
    }
    for n in &r.notes {
        let _ = writeln!(s, "note: {n}");
    }
}

fn qd_report(s: &mut String, q: &super::QdResult) {
    use std::fmt::Write as _;
    let _ = writeln!(
        s,
        "\nqueue-depth sweep: {} random reads, {}; each depth ≥ {} completions and ≥ {:.1} s (cap {:.0} s per depth, {:.0} s in all); {}",
        format::binary(q.bs as f64),
        q.engine_note,
        super::qd::MIN_COMPLETIONS,
        q.step_s,
        q.depth_cap_s,
        q.time_cap_s,
        q.end
    );
    let _ = writeln!(
        s,
        "  {:>4} {:>9} {:>10} {:>9} {:>9} {:>7} {:>6}",
        "QD", "IOPS", "MB/s", "p50", "p99", "gain", "×QD1"
    );
    let most = q.points.iter().filter_map(|p| p.iops).fold(0.0, f64::max);
    let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or_else(|| format::NA.to_string(), f);
    for p in &q.points {
        let _ = writeln!(
            s,
            "  {:>4} {:>9} {:>10} {:>9} {:>9} {:>7} {:>6} {}{}",
            p.queue_depth,
            opt(p.iops, &|v| format!("{v:.0}")),
            opt(p.mb_per_s, &|v| format::rate(v * 1e6)),
            lat(p.latency.p50_ms),
            lat(p.latency.p99_ms),
            opt(p.gain, &|g| format!("{:+.0}%", g * 100.0)),
            opt(p.speedup, &|x| format!("{x:.2}")),
            text_bar(p.iops, most),
            if p.short {
                format!(" (only {} completions: {})", p.completions, stop_text(p.stopped))
            } else {
                String::new()
            }
        );
    }
    let _ = writeln!(
        s,
        "  knee: {}   speed-up over QD1: {}",
        q.knee.map_or_else(|| format::NA.into(), |k| format!("QD{k}")),
        opt(q.speedup, &|x| format!("{x:.2}×"))
    );
    let _ = writeln!(
        s,
        "  latency-bounded IOPS (p99 ≤ {} ms): {}",
        format::ms(q.p99_target_ms),
        match q.latency_bounded {
            Some(b) => format!("{:.0} at QD{} (p99 {})", b.iops, b.queue_depth, lat(Some(b.p99_ms))),
            None => "none: no depth kept its p99 under the target".into(),
        }
    );
    if let (Some(r), Some(first)) = (q.repeat, q.points.first().and_then(|p| p.iops)) {
        let _ = writeln!(
            s,
            "  QD{} again after the sweep: {:.0} IOPS ({:+.0}%)",
            r.queue_depth,
            r.iops,
            (r.iops / first - 1.0) * 100.0
        );
    }
    if let Some(c) = &q.disk_check {
        let _ = writeln!(s, "  {}", c.describe());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4k").unwrap(), 4096);
        assert_eq!(parse_size("64KiB").unwrap(), 65536);
        assert_eq!(parse_size("1M").unwrap(), 1 << 20);
        assert!(parse_size("4x").is_err());
        assert!(parse_size("k").is_err());
        assert!(parse_size("99999999999999G").is_err());
    }
}
