//! Sequential share, labels and latency from traced requests against fio
//! on a loop device with direct I/O (root, tracefs, fio; skipped with the
//! reason otherwise). Each workload runs for a few 1-second intervals; the
//! first and last are left out (fio starting and stopping), and the share
//! and label must be right in at least 95% of the rest.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use iolens::collect::trace::block::Dev;
use iolens::collect::trace::reader::Tracer;
use iolens::model::pattern::Pattern;
use iolens::model::trace::hist::LatHist;
use iolens::model::trace::{Thresholds, TraceInterval, Tracker};

const SIZE_MB: u64 = 512;

struct Loop(String, PathBuf);

impl Loop {
    fn attach() -> Result<Loop, String> {
        let img = std::env::temp_dir().join(format!("iolens-trace-wl-{}.img", std::process::id()));
        std::fs::File::create(&img)
            .and_then(|f| f.set_len(SIZE_MB << 20))
            .map_err(|e| format!("creating {}: {e}", img.display()))?;
        let out = Command::new("losetup")
            .args(["-f", "--show", "--direct-io=on"])
            .arg(&img)
            .output()
            .map_err(|e| format!("losetup: {e}"))?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&img);
            return Err(format!("losetup: {}", String::from_utf8_lossy(&out.stderr).trim()));
        }
        Ok(Loop(String::from_utf8_lossy(&out.stdout).trim().to_string(), img))
    }

    fn dev(&self) -> Dev {
        let name = self.0.trim_start_matches("/dev/");
        let t = std::fs::read_to_string(format!("/sys/block/{name}/dev")).unwrap_or_default();
        let (a, b) = t.trim().split_once(':').unwrap_or(("0", "0"));
        Dev {
            major: a.parse().unwrap_or(0),
            minor: b.parse().unwrap_or(0),
        }
    }
}

impl Drop for Loop {
    fn drop(&mut self) {
        let _ = Command::new("losetup").args(["-d", &self.0]).status();
        let _ = std::fs::remove_file(&self.1);
    }
}

/// A fio child, killed if the test fails early.
struct Fio(std::process::Child);

impl Drop for Fio {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Run fio with `args` for `secs` seconds while tracing; return the
/// 1-second intervals (first and last dropped) and fio's JSON output.
fn run(tracer: &mut Tracer, dev: &str, args: &[&str], secs: u64) -> (Vec<TraceInterval>, serde_json::Value) {
    let mut tracker = Tracker::default();
    let mut out = Vec::new();
    // Drain what came before.
    tracer.poll(&mut out);
    out.clear();
    let child = Command::new("fio")
        .args(["--name=w", "--direct=1", "--time_based", "--output-format=json"])
        .arg(format!("--filename={dev}"))
        .arg(format!("--runtime={secs}"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("fio runs");
    let mut fio = Fio(child);
    let mut intervals = Vec::new();
    let mut next = Instant::now() + Duration::from_secs(1);
    loop {
        tracer.poll(&mut out);
        tracker.feed(&out);
        tracker.set_counters(&tracer.counters);
        out.clear();
        if Instant::now() >= next {
            intervals.push(tracker.take_interval());
            next += Duration::from_secs(1);
        }
        if let Ok(Some(_)) = fio.0.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    intervals.push(tracker.take_interval());
    let mut text = String::new();
    if let Some(mut o) = fio.0.stdout.take() {
        use std::io::Read;
        let _ = o.read_to_string(&mut text);
    }
    let json = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
    // first and last interval left out
    let n = intervals.len();
    let kept = if n > 2 {
        intervals[1..n - 1].to_vec()
    } else {
        Vec::new()
    };
    (kept, json)
}

fn skip_reason() -> Option<String> {
    if !iolens::sys::is_root() {
        return Some("not root".into());
    }
    if Command::new("fio").arg("--version").output().is_err() {
        return Some("fio not installed".into());
    }
    None
}

struct Case {
    name: &'static str,
    args: &'static [&'static str],
    label: Pattern,
    share: fn(f64) -> bool,
}

#[test]
fn sequential_share_and_latency_match_fio() {
    if let Some(r) = skip_reason() {
        eprintln!("skipped: {r}");
        return;
    }
    let lo = match Loop::attach() {
        Ok(l) => l,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let dev = lo.dev();
    let mut tracer = match Tracer::start() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("skipped: {e}");
            return;
        }
    };
    let half = format!("--offset_increment={}M", SIZE_MB / 2);
    let half_size = format!("--size={}M", SIZE_MB / 2);
    let th = Thresholds::default();
    let cases = [
        Case {
            name: "seq 4k psync",
            args: &["--rw=read", "--bs=4k", "--ioengine=psync"],
            label: Pattern::Seq,
            share: |s| s >= 0.9,
        },
        Case {
            name: "seq 4k libaio qd8",
            args: &["--rw=read", "--bs=4k", "--ioengine=libaio", "--iodepth=8"],
            label: Pattern::Seq,
            share: |s| s >= 0.9,
        },
        Case {
            name: "rand 4k",
            args: &["--rw=randread", "--bs=4k", "--ioengine=psync"],
            label: Pattern::Rand,
            share: |s| s <= 0.1,
        },
        Case {
            name: "rand 128k",
            args: &["--rw=randread", "--bs=128k", "--ioengine=psync"],
            label: Pattern::Rand,
            share: |s| s <= 0.1,
        },
        Case {
            name: "seq 1m",
            args: &["--rw=read", "--bs=1m", "--ioengine=psync"],
            label: Pattern::Seq,
            share: |s| s >= 0.9,
        },
    ];
    let mut report = Vec::new();
    let mut failures = Vec::new();
    let mut check = |name: &str, ivs: &[TraceInterval], label: Option<Pattern>, share_ok: fn(f64) -> bool| {
        let mut right = 0;
        let mut shares = Vec::new();
        for iv in ivs {
            let Some(d) = iv.devices.get(&dev) else { continue };
            let s = d.seq_share().unwrap_or(-1.0);
            shares.push(format!("{s:.3}"));
            if share_ok(s) && (label.is_none() || d.pattern(&th) == label) {
                right += 1;
            }
        }
        let ok = !ivs.is_empty() && right * 100 >= ivs.len() * 95;
        report.push(format!(
            "{name}: {right}/{} intervals right, shares {}",
            ivs.len(),
            shares.join(" ")
        ));
        if !ok {
            failures.push(name.to_string());
        }
    };
    let mut psync_p50 = None;
    for c in &cases {
        let (ivs, json) = run(&mut tracer, &lo.0, c.args, 5);
        check(c.name, &ivs, Some(c.label), c.share);
        if c.name == "seq 4k psync" {
            let mut total = LatHist::default();
            for iv in &ivs {
                if let Some(d) = iv.devices.get(&dev) {
                    total.merge(&d.latency[0].total);
                }
            }
            let fio_p50 = json["jobs"][0]["read"]["clat_ns"]["percentile"]["50.000000"].as_f64();
            psync_p50 = Some((total.quantile(0.5), fio_p50));
        }
    }
    // 70/30 random/sequential: fio makes exactly 30% of the requests
    // sequential, which is the RAND/MIXED boundary (RAND at <= 30%): the
    // share is checked, the label can be either and is reported.
    let (ivs, _) = run(
        &mut tracer,
        &lo.0,
        &["--rw=randread", "--bs=4k", "--ioengine=psync", "--percentage_random=70"],
        5,
    );
    let labels: Vec<String> = ivs
        .iter()
        .filter_map(|iv| iv.devices.get(&dev))
        .map(|d| format!("{:?} {:.3}", d.pattern(&th), d.seq_share().unwrap_or(-1.0)))
        .collect();
    eprintln!("70/30 random/seq: {}", labels.join(", "));
    check("70/30 random/seq (share)", &ivs, None, |s| (0.2..=0.4).contains(&s));
    // two sequential streams interleaved: each job reads its own half
    let (ivs, _) = run(
        &mut tracer,
        &lo.0,
        &[
            "--rw=read",
            "--bs=4k",
            "--ioengine=psync",
            "--numjobs=2",
            &half,
            &half_size,
        ],
        5,
    );
    check("two interleaved seq streams", &ivs, Some(Pattern::Seq), |s| s >= 0.9);
    for r in &report {
        eprintln!("{r}");
    }
    let lost = tracer.counters.lost + tracer.counters.decode.missed_pages;
    eprintln!("lost events {lost}");
    drop(tracer);
    assert!(failures.is_empty(), "wrong in more than 5% of intervals: {failures:?}");
    let (ours, fio) = psync_p50.unwrap();
    let (ours, fio) = (ours.unwrap() as f64, fio.expect("fio clat p50 in its JSON"));
    eprintln!(
        "psync 4k QD1 read: iolens total p50 {:.1} µs, fio clat p50 {:.1} µs",
        ours / 1e3,
        fio / 1e3
    );
    assert!((ours - fio).abs() <= 0.15 * fio, "p50 {ours} ns vs fio {fio} ns");
}
