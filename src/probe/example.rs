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
                disk_position: None,
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
        positions: None,
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
        lat_from: Some("random read test"),
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
            align_bytes: Some(512),
            align_source: "statx STATX_DIOALIGN".into(),
            allocated_bytes: None,
            backing: super::layout::Backing::Device,
            file_layout: None,
            impact_limited: false,
            idle_note: None,
        },
        device: Some(hints),
        random: Some(random),
        sweep,
        queue_depth_sweep: None,
        sync_write: None,
        alignment: None,
        size_sweep: None,
        seek: None,
        verdict,
        notes: vec![],
    }
}

/// A queue-depth sweep of a SATA-SSD-like disk: 9,000 IOPS at QD1 rising
/// to a plateau of about 90,000 at QD32.
pub fn qd_result(status: Status) -> ProbeResult {
    use super::engine::{DepthRun, Engine};
    use super::qd;
    let curve: &[(u32, f64, f64)] = &[
        (1, 9_000.0, 0.11),
        (2, 17_500.0, 0.12),
        (4, 33_000.0, 0.13),
        (8, 58_000.0, 0.15),
        (16, 80_000.0, 0.21),
        (32, 88_000.0, 0.38),
        (64, 90_000.0, 0.75),
    ];
    let take = if status == Status::Cancelled { 4 } else { curve.len() };
    let mut points = Vec::new();
    for &(depth, iops, p50) in &curve[..take] {
        let mut hist = Histogram::new();
        let n = (iops * 1.0) as u64;
        for i in 0..n {
            // p50 at `p50` ms, a tail to 8× at the top 2%.
            let ms = if i % 50 == 0 {
                p50 * 8.0
            } else {
                p50 * (0.8 + 0.4 * (i % 97) as f64 / 96.0)
            };
            hist.record((ms * 1e6) as u64);
        }
        let run = DepthRun {
            completions: hist.count(),
            secs: n as f64 / iops,
            hist,
            issued: n + u64::from(depth) + 8,
            stopped: Stop::Done,
            slices: Vec::new(),
        };
        let p = qd::point(depth, 4096, &run, &points);
        points.push(p);
    }
    let (knee, latency_bounded, speedup) = qd::summarize(&points, qd::P99_TARGET_MS);
    let mut r = result(Status::Completed);
    r.status = status;
    r.method.tests = Tests::QueueDepth;
    r.method.target = "/dev/sdb".into();
    r.method.queue_depth = points.last().map_or(1, |p| p.queue_depth);
    r.random = None;
    r.sweep = None;
    let hints = DeviceHints {
        name: "sdb".into(),
        disk: "sdb".into(),
        major: 8,
        minor: 16,
        rotational: Some(false),
        model: Some("Samsung SSD 870".into()),
        driver: Some("sd".into()),
        ..Default::default()
    };
    let q1 = &points[0].latency;
    r.verdict = verdict::judge(&Evidence {
        bs: 4096,
        rand_count: q1.count,
        p50_ms: q1.p50_ms,
        p90_ms: q1.p90_ms,
        lat_from: Some("queue-depth sweep"),
        qd_speedup: speedup.zip(knee).map(|(x, k)| (x, k, r.method.queue_depth)),
        reached_device: Some(true),
        has_device: true,
        hints: Some(hints.clone()),
        ..Default::default()
    });
    r.device = Some(hints);
    r.queue_depth_sweep = Some(qd::QdResult {
        engine: Engine::IoUring,
        engine_note: "io_uring (one ring on the probe thread)".into(),
        bs: 4096,
        depths_planned: qd::DEPTHS.to_vec(),
        stop_rule: true,
        step_s: 1.0,
        depth_cap_s: 15.0,
        time_cap_s: 60.0,
        p99_target_ms: qd::P99_TARGET_MS,
        reads_issued: points.iter().map(|p| p.completions).sum(),
        duration_s: points.iter().map(|p| p.duration_s).sum(),
        points,
        knee,
        latency_bounded,
        speedup,
        end: if status == Status::Cancelled {
            "cancelled".into()
        } else {
            "every planned depth was measured".into()
        },
        noise: Vec::new(),
        repeat: None,
        stopped: if status == Status::Cancelled {
            Stop::Cancelled
        } else {
            Stop::Done
        },
        disk_check: None,
    });
    r
}

/// A sync-write probe on a disk whose flushes take 2–4 ms, with a 16 KiB
/// tail over the 10 ms target.
pub fn sync_result() -> ProbeResult {
    use super::sync::{self, FileMethod, SyncResult, SyncSize};
    let sizes = sync::SIZES
        .iter()
        .map(|&bytes| {
            let (mut w, mut f) = (Histogram::new(), Histogram::new());
            for i in 0..1000u64 {
                w.record(20_000 + bytes * 2 + i * 10);
                let tail = if bytes == 16384 && i % 50 == 0 { 12_000_000 } else { 0 };
                f.record(2_000_000 + (i * 7919 % 2000) * 1000 + tail);
            }
            let fdatasync = LatencySummary::of(&f);
            SyncSize {
                bytes,
                writes: 1000,
                duration_s: 3.2,
                write: LatencySummary::of(&w),
                meets_target: fdatasync.p99_ms.map(|p| p <= sync::TARGET_MS),
                fdatasync,
                stopped: Stop::Done,
                write_histogram: w.buckets(),
                fdatasync_histogram: f.buckets(),
            }
        })
        .collect();
    let s = SyncResult {
        dir: "/var/lib/etcd".into(),
        file: FileMethod::Tmpfile,
        sizes,
        target_ms: sync::TARGET_MS,
        max_writes_per_size: 1000,
        time_cap_per_size_s: 15.0,
        max_file_bytes: sync::MAX_FILE,
        bytes_written: 22_696_000,
        disk: Some("sda".into()),
        write_cache: Some("write back".into()),
        fua: Some(false),
    };
    let mut r = result(Status::Completed);
    let hints = r.device.clone();
    r.method.target = s.dir.clone();
    r.method.target_kind = TargetKind::Directory;
    r.method.tests = Tests::SyncWrite;
    r.method.size_bytes = s.bytes_written;
    r.method.cache = CacheMode::SyncWrites;
    r.method.cache_note = CacheMode::SyncWrites.describe().into();
    r.method.align_bytes = None;
    r.random = None;
    r.sweep = None;
    r.verdict = sync::judge(&s, &r.method.backing, hints.as_ref());
    r.sync_write = Some(s);
    r
}
