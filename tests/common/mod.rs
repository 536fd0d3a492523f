//! A deterministic model built from the `root-6.8` fixture tree: the tree is
//! read once, then counters are advanced by hand-chosen amounts for 40
//! samples of 1 s each, so rates, history, sparklines and charts have known
//! values.
#![allow(dead_code)]

use iolens::collect::fdinfo::{FdProc, FdSnapshot, FdTarget, RawFd, ScanReason};
use iolens::collect::process::{IoPrio, RawProc};
use iolens::collect::sample::HostInfo;
use iolens::collect::{Collector, RawSample};
use iolens::model::Model;

pub const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/root-6.8");

/// A process whose name carries a terminal escape sequence.
pub const EVIL_COMM: &str = "evil\x1b[31mred\x07";

fn evil_proc() -> RawProc {
    RawProc {
        uid: Some(1000),
        user: Some("mallory".into()),
        ioprio: Some(IoPrio::from_raw(3 << 13)),
        blkio_ticks: Some(0),
        ..RawProc::example(31337, 5555, EVIL_COMM)
    }
}

/// The kworker serving loop0's backing file (a kernel thread).
fn loop_worker() -> RawProc {
    RawProc {
        ppid: 2,
        ioprio: Some(IoPrio::from_raw((2 << 13) | 4)),
        ..RawProc::example(90, 12, "kworker/u8:3-loop0")
    }
}

/// dd's open files: /dev/sda read-only (8:0), and its terminal (not listed:
/// only regular files and block devices are).
fn dd_files() -> FdSnapshot {
    let sda = RawFd {
        fd: 0,
        target: FdTarget::BlockDevice,
        pos: 1 << 30,
        flags: 0o100000,
        mnt_id: Some(22),
        ino: 301,
        dev: 8 << 8,
        size: Some(500_107_862_016),
        remote: false,
        path: Some(std::sync::Arc::from(&b"/dev/sda"[..])),
    };
    FdSnapshot {
        procs: vec![FdProc {
            key: iolens::collect::process::ProcKey {
                pid: 4242,
                start_time: 987_654,
            },
            comm: "dd".into(),
            io: None,
            reason: ScanReason::Active,
            fds: vec![sda],
            unread: 0,
            devs: Vec::new(),
        }],
        ..Default::default()
    }
}

fn first_sample() -> RawSample {
    let mut c = Collector::new(FIXTURE);
    let mut s = c.sample();
    // About 4 days after boot.
    s.mono_ns = 360_000 * 1_000_000_000;
    // 2026-11-23T16:20:01Z.
    s.wall_ns = 1_795_450_801_000_000_000;
    for p in &mut s.procs.procs {
        p.uid = Some(0);
        p.user = Some("root".into());
        p.ioprio = Some(IoPrio::from_raw((2 << 13) | 4));
    }
    s.procs.procs.push(evil_proc());
    s.procs.procs.push(loop_worker());
    s.fds = dd_files();
    s
}

/// Advance sample `s` by one second of activity; `i` shapes the load.
fn advance(s: &mut RawSample, i: u64) {
    s.mono_ns += 1_000_000_000;
    s.wall_ns += 1_000_000_000;
    let wave = [2u64, 5, 9, 14, 20, 14, 9, 5][i as usize % 8];
    for d in &mut s.disks {
        match d.name.as_str() {
            // Busy spinning disk: 128 KiB sequential reads at 30 ms, some
            // small writes at 60 ms, 95% busy.
            "sda" | "sda2" | "dm-0" => {
                let r = 20 * wave;
                d.read.ios += r;
                d.read.merges += r / 2;
                d.read.sectors += r * 256;
                d.read.ticks += r * 30;
                d.write.ios += 40;
                d.write.merges += 10;
                d.write.sectors += 40 * 8;
                d.write.ticks += 40 * 60;
                d.io_ticks += 950;
                d.time_in_queue += r * 30 + 2400;
                if let Some(f) = &mut d.flush {
                    f.ios += 4;
                    f.ticks += 8;
                }
            }
            // Loop device: small random reads, fast.
            "loop0" => {
                d.read.ios += 500;
                d.read.sectors += 500 * 8;
                d.read.ticks += 50;
                d.io_ticks += 300;
                d.time_in_queue += 50;
            }
            // sda1 and sdb stay idle.
            _ => {}
        }
    }
    if let Some(c) = &mut s.cpu {
        c.user += 20;
        c.system += 10;
        c.iowait += 30;
        c.idle += 140;
    }
    for p in &mut s.procs.procs {
        if let Ok(io) = &mut p.io {
            if p.key.pid == 4242 {
                // dd: 1 MiB reads; what sda reads (20 x wave requests of
                // 128 KiB) comes from the disk, the rest from the cache.
                io.rchar += 40 << 20;
                io.read_bytes += 20 * wave * (128 << 10);
                io.syscr += 40;
                io.wchar += 40 << 20;
                io.syscw += 40;
            } else if p.key.pid == 31337 {
                // Many tiny writes, to a file it then deletes: half of what
                // it dirtied is cancelled.
                io.wchar += 64 * 1000;
                io.syscw += 1000;
                io.write_bytes += 4096 * 10;
                io.cancelled_write_bytes += 4096 * 5;
            } else if p.key.pid == 90 {
                // loop0's backing-file reads: 500 x 4 KiB.
                io.read_bytes += 500 * 4096;
            }
        }
    }
}

pub fn host() -> HostInfo {
    HostInfo {
        hostname: "fixture-host".into(),
        kernel: "6.8.0-fixture".into(),
        is_root: true,
    }
}

/// The samples behind [`model_after`]: the first and `n` one second apart.
pub fn samples(n: u64) -> Vec<RawSample> {
    let mut s = first_sample();
    let mut v = vec![s.clone()];
    for i in 0..n {
        advance(&mut s, i);
        v.push(s.clone());
    }
    v
}

/// The fixture model after `n` one-second intervals.
pub fn model_after(n: u64) -> Model {
    let mut m = Model::new(host(), 100.0);
    let mut s = first_sample();
    m.update(s.clone());
    for i in 0..n {
        advance(&mut s, i);
        m.update(s.clone());
    }
    m
}

pub fn model() -> Model {
    model_after(40)
}

/// One traced interval on loop0 (7:0): 1 MiB sequential reads beside 4 KiB
/// random ones, 2 of 42 requests and 2 MiB of 2 MiB + 160 KiB sequential.
pub fn trace_loop0_mixed(m: &mut Model) {
    use iolens::collect::trace::block::Dev;
    use iolens::model::trace::view::TraceView;
    use iolens::model::trace::{DeviceTrace, TraceInterval};
    let mut interval = TraceInterval::default();
    let d = DeviceTrace {
        issued: 42,
        sequential: 2,
        issued_bytes: (2 << 20) + 40 * 4096,
        sequential_bytes: 2 << 20,
        completed: [42, 0, 0, 0],
        ..Default::default()
    };
    interval.devices.insert(Dev { major: 7, minor: 0 }, d);
    m.apply_trace(TraceView {
        active: true,
        reason: None,
        interval,
        log: Vec::new(),
        files: Default::default(),
        dirty: Default::default(),
        cost: None,
    });
}

/// One traced interval in which process `pid` was paused by the dirty
/// throttle on loop0's bdi (7:0): `pauses` pauses of `paused_ms` in all,
/// the longest `max_ms` (the block trace itself empty).
pub fn dirty_view(pid: i32, pauses: u64, paused_ms: u64, max_ms: u64) -> iolens::model::dirty::ThrottleView {
    use iolens::model::dirty::{BdiThrottle, ThrottleInterval, ThrottleView, Throttled};
    let t = Throttled {
        passes: pauses + 1,
        pauses,
        paused_ms,
        max_pause_ms: max_ms,
        dirtied_pages: 256,
        kernel: false,
    };
    let mut interval = ThrottleInterval::default();
    interval.procs.insert((pid, "7:0".into()), t);
    interval.bdis.insert(
        "7:0".into(),
        BdiThrottle {
            sum: t,
            writers: 1,
            limit_pages: 1000,
            dirty_pages: 990,
            wb_dirty_pages: Some(40),
            wb_setpoint_pages: Some(32),
        },
    );
    interval.events = pauses + 1;
    ThrottleView {
        active: true,
        reason: None,
        interval,
    }
}

/// [`dirty_view`] folded into `m` as a traced interval.
pub fn trace_dirty(m: &mut Model, pid: i32, pauses: u64, paused_ms: u64, max_ms: u64) {
    use iolens::model::trace::view::TraceView;
    m.apply_trace(TraceView {
        active: true,
        reason: None,
        interval: Default::default(),
        log: Vec::new(),
        files: Default::default(),
        dirty: dirty_view(pid, pauses, paused_ms, max_ms),
        cost: None,
    });
}
