//! Made-up but consistent results of the capacity probes (alignment,
//! request sizes, seek and rotation), for snapshot tests of the text
//! report and the results pane. Not used at run time.

use super::align::{self, AlignResult, PartAlignment, ShiftedReads};
use super::mechanics::{self, DistanceSeries};
use super::random::Rng;
use super::seek::{self, SeekResult};
use super::size::{self, SizePoint, SizeResult};
use super::stats::{Histogram, LatencySummary};
use super::{ProbeResult, Status, Stop, Tests, example};
use crate::collect::align::of;
use crate::collect::sysblock::DeviceInfo;

fn summary(from_ms: f64, to_ms: f64, n: u64) -> LatencySummary {
    let mut h = Histogram::new();
    for i in 0..n {
        h.record(((from_ms + (to_ms - from_ms) * (i % 100) as f64 / 99.0) * 1e6) as u64);
    }
    LatencySummary::of(&h)
}

fn base(tests: Tests, target: &str) -> ProbeResult {
    let mut r = example::result(Status::Completed);
    r.method.tests = tests;
    r.method.target = target.into();
    r.random = None;
    r.sweep = None;
    r
}

/// sda with a partition at 1 MiB and one at sector 63 on 4 KiB physical sectors.
pub fn align_result() -> ProbeResult {
    let part = |name: &str, start: u64| {
        let mut i = DeviceInfo::example(name);
        i.start_sector = Some(start);
        i.physical_block_size = Some(4096);
        PartAlignment {
            name: name.into(),
            alignment: of(i.start_sector, i.physical_block_size, &i.facts)
                .unwrap_or_else(|| unreachable!("a partition with a start")),
        }
    };
    let a = AlignResult {
        device: "sda".into(),
        logical_block_size: Some(512),
        physical_block_size: Some(4096),
        optimal_io_size: None,
        partitions: vec![part("sda1", 2048), part("sda2", 63)],
        worst: Some(crate::collect::align::AlignVerdict::Misaligned),
        reads: Some(ShiftedReads {
            bs: 4096,
            aligned: summary(4.0, 16.0, 500),
            shifted: summary(4.1, 16.2, 500),
            p50_ratio: Some(1.01),
            stopped: Stop::Done,
        }),
        reads_note: None,
    };
    let mut r = base(Tests::Align, "/dev/sda");
    r.verdict = align::verdict(&a);
    r.alignment = Some(a);
    r
}

/// An SSD that stops growing at 512 KiB.
pub fn size_result() -> ProbeResult {
    let points: Vec<SizePoint> = (0..11)
        .map(|i| {
            let bytes = 4096u64 << i;
            let mbps = 2000.0_f64.min(45.0 * 2f64.powi(i) * 0.95f64.powi(i));
            let iops = mbps * 1e6 / bytes as f64;
            let p50 = 1000.0 / iops;
            SizePoint {
                bytes,
                reads: 2000,
                duration_s: 2000.0 / iops,
                iops: Some(iops),
                mb_per_s: Some(mbps),
                latency: summary(p50 * 0.9, p50 * 1.1, 2000),
                stopped: Stop::Done,
            }
        })
        .collect();
    let pairs: Vec<(u64, f64)> = points.iter().filter_map(|p| Some((p.bytes, p.mb_per_s?))).collect();
    let best = pairs.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1));
    let s = SizeResult {
        plateau_bytes: size::plateau(&pairs),
        best_mb_per_s: best.map(|b| b.1),
        best_bytes: best.map(|b| b.0),
        reads_issued: points.iter().map(|p| p.reads + 1).sum(),
        bytes_issued: points.iter().map(|p| (p.reads + 1) * p.bytes).sum(),
        points,
        reads_cap: 2000,
        bytes_cap: 256 << 20,
        time_per_size_s: 30.0 / 11.0,
        stopped: Stop::Done,
        disk_check: None,
    };
    let mut r = base(Tests::Size, "/dev/sda");
    let hints = r.device.as_mut().map(|h| {
        h.rotational = Some(false);
        h.model = Some("Samsung SSD 870".into());
        h.clone()
    });
    let first = &s.points[0].latency;
    r.verdict = super::verdict::judge(&super::verdict::Evidence {
        bs: 4096,
        rand_count: first.count,
        p50_ms: first.p50_ms,
        p90_ms: first.p90_ms,
        lat_from: Some("request-size sweep"),
        reached_device: Some(true),
        has_device: true,
        hints,
        ..Default::default()
    });
    r.size_sweep = Some(s);
    r
}

/// A 7,200 RPM disk: track-to-track 1 ms, full stroke 16 ms, read by the
/// model in the estimator's tests.
pub fn seek_result() -> ProbeResult {
    let mut rng = Rng::from_seed(5);
    let mut u = move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
    let rev = 60_000.0 / 7200.0;
    let mut read = |frac: f64| 1.0 + 15.0 * frac.sqrt() + u() * rev + 0.05;
    let short: Vec<f64> = (0..500).map(|_| read(2e-6)).collect();
    let series: Vec<DistanceSeries> = seek::FRACTIONS
        .iter()
        .map(|&f| DistanceSeries {
            distance_bytes: (f * 1e12) as u64,
            fraction: f,
            latencies_ms: (0..500).map(|_| read(f)).collect(),
        })
        .collect();
    let full: Vec<f64> = (0..500).map(|_| read(0.999)).collect();
    let s = SeekResult {
        bs: 4096,
        reads_per_step: 500,
        time_cap_s: 120.0,
        reads_issued: 3507,
        duration_s: 41.2,
        stopped: Stop::Done,
        short_reads: short.len(),
        full_stroke_reads: full.len(),
        estimate: mechanics::estimate(&short, &series, &full),
        notes: Vec::new(),
    };
    let mut r = base(Tests::Seek, "/dev/sda");
    r.verdict = seek::verdict(&s);
    r.seek = Some(s);
    r
}
