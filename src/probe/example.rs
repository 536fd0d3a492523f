//! A made-up but consistent probe result (an HDD-like disk), for snapshot
//! tests of the results pane and of the dashboard. Not used at run time.

use super::check::{DiskCheck, Snapshot};
use super::stats::{Histogram, LatencySummary};
use super::target::{CacheMode, DeviceHints, TargetKind};
use super::verdict::{self, Evidence};
use super::{Depth, Method, ProbeResult, RandomResult, Status, Stop, SweepResult, Tests, Zone, sweep};

pub fn zones(n: usize) -> Vec<Zone> {
    // An HDD-like profile: 180 MB/s at the start falling to 95 MB/s.
    (0..n)
        .map(|i| {
            let mbps = 180.0 - 85.0 * i as f64 / 19.0;
            Zone {
                index: i,
                offset: i as u64 * 52_631_578_947,
                bytes: 63 << 20,
                secs: (63u64 << 20) as f64 / (mbps * 1e6),
                mb_per_s: mbps,
            }
        })
        .collect()
}

pub fn result(status: Status) -> ProbeResult {
    let mut h = Histogram::new();
    for i in 0..3000u64 {
        // 4–16 ms, with a tail to 40 ms
        h.record(4_000_000 + (i * 7919 % 12_000) * 1000 + if i % 100 == 0 { 24_000_000 } else { 0 });
    }
    let latency = LatencySummary::of(&h);
    let stopped = if status == Status::Cancelled {
        Stop::Cancelled
    } else {
        Stop::TimeCap
    };
    let random = RandomResult {
        bs: 4096,
        queue_depth: 1,
        span: (0, 1_000_204_886_016),
        warmup_reads: 16,
        sample_cap: 20_000,
        time_cap_s: 30.0,
        reads_issued: 3016,
        duration_s: 30.0,
        iops: Some(100.0),
        mb_per_s: Some(0.41),
        latency: latency.clone(),
        seek_correlation: Some(0.48),
        stopped,
        histogram: h.buckets(),
        disk_check: Some(DiskCheck::compare(
            "sda",
            Snapshot {
                read_ios: 0,
                read_sectors: 0,
                write_ios: 0,
            },
            Snapshot {
                read_ios: 3016,
                read_sectors: 3016 * 8,
                write_ios: 0,
            },
            3016,
            3016 * 4096,
        )),
    };
    let zs = zones(20);
    let (min, median, max, ratio) = sweep::summarize(&zs);
    let sweep = (status == Status::Completed).then_some(SweepResult {
        zones_planned: 20,
        request_bytes: 1 << 20,
        chunk_bytes: 64 << 20,
        time_cap_s: 30.0,
        zones_shortened: 0,
        zones: zs,
        min,
        median_mb_per_s: median,
        max,
        first_last_ratio: ratio,
        overall_mb_per_s: Some(130.0),
        duration_s: 10.2,
        requests_issued: 1280,
        bytes_issued: 1280 << 20,
        stopped: Stop::Done,
        disk_check: None,
    });
    let hints = DeviceHints {
        name: "sda".into(),
        disk: "sda".into(),
        major: 8,
        minor: 0,
        rotational: Some(true),
        model: Some("WDC WD10EZEX-08W".into()),
        driver: Some("sd".into()),
        ..Default::default()
    };
    let verdict = verdict::judge(&Evidence {
        bs: 4096,
        rand_count: latency.count,
        p50_ms: latency.p50_ms,
        p90_ms: latency.p90_ms,
        seek_correlation: Some(0.48),
        sweep_zones: sweep.as_ref().map_or(0, |s| s.zones.len()),
        sweep_median_mbps: median.filter(|_| sweep.is_some()),
        sweep_first_last_ratio: ratio.filter(|_| sweep.is_some()),
        reached_device: Some(true),
        has_device: true,
        hints: Some(hints.clone()),
        ..Default::default()
    });
    ProbeResult {
        iolens_version: "0.1.0",
        started_unix: 1_700_000_000,
        status,
        method: Method {
            target: "/dev/sda".into(),
            target_kind: TargetKind::BlockDevice,
            size_bytes: 1_000_204_886_016,
            tests: Tests::Both,
            depth: Depth::Quick,
            queue_depth: 1,
            cache: CacheMode::Direct,
            cache_note: CacheMode::Direct.describe().into(),
            global_cache_dropped: false,
            align_bytes: 512,
            align_source: "statx STATX_DIOALIGN".into(),
            allocated_bytes: None,
            impact_limited: false,
            idle_note: None,
        },
        device: Some(hints),
        random: Some(random),
        sweep,
        verdict,
        notes: vec![],
    }
}
