//! `Model::update` over sequences of raw samples: counter wraps, devices
//! removed and re-added, appearing and vanishing, and pid reuse. Every
//! expected value is computed by hand from the counters in the samples.

use iolens::collect::RawSample;
use iolens::collect::diskstats::{DiskStat, parse_line};
use iolens::collect::fdinfo::{FdProc, FdSnapshot, FdTarget, RawFd, ScanReason};
use iolens::collect::process::{ProcIo, ProcKey, ProcSnapshot, RawProc};
use iolens::collect::sample::HostInfo;
use iolens::collect::sysblock::{DevKind, DeviceInfo};
use iolens::collect::taskstats::{ExitBatch, ExitRecord};
use iolens::model::disk::Rebaseline;
use iolens::model::{DeviceRow, Model};

use crate::common;

const SEC: u64 = 1_000_000_000;

fn disk(line: &str) -> DiskStat {
    parse_line(line.as_bytes()).unwrap()
}

fn info(name: &str, diskseq: Option<u64>) -> DeviceInfo {
    DeviceInfo {
        name: name.to_string(),
        kind: DevKind::Disk,
        parent: None,
        start_sector: None,
        size_bytes: Some(1 << 40),
        rotational: Some(false),
        logical_block_size: Some(512),
        physical_block_size: Some(4096),
        model: None,
        dm_name: None,
        scheduler: Some("none".into()),
        nr_requests: Some(64),
        max_sectors_kb: Some(1280),
        read_ahead_kb: Some(128),
        queue_depth: None,
        diskseq,
        backing_file: None,
        holders: vec![],
        slaves: vec![],
        mounts: vec![],
        ..DeviceInfo::example(name)
    }
}

fn sample(t_s: u64, disks: &[(&str, Option<u64>)]) -> RawSample {
    RawSample {
        mono_ns: t_s * SEC,
        disks: disks.iter().map(|(l, _)| disk(l)).collect(),
        devices: disks
            .iter()
            .map(|(l, seq)| info(l.split_whitespace().nth(2).unwrap(), *seq))
            .collect(),
        ..Default::default()
    }
}

fn model() -> Model {
    Model::new(HostInfo::default(), 100.0)
}

fn row<'a>(m: &'a Model, name: &str) -> &'a DeviceRow {
    m.devices
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("no row {name}"))
}

#[test]
fn tick_counters_wrapping_at_32_bits_give_exact_rates() {
    let mut m = model();
    // read ticks, io_ticks and time_in_queue all cross 2^32 = 4294967296.
    m.update(sample(
        10,
        &[("8 0 sda 1000 0 8000 4294967000 0 0 0 0 0 4294967200 4294967100", None)],
    ));
    m.update(sample(12, &[("8 0 sda 1400 0 11200 904 0 0 0 0 1 1304 1804", None)]));
    let r = row(&m, "sda").rates.as_ref().expect("rates across the wrap");
    assert_eq!(m.interval_s, Some(2.0));
    assert_eq!(r.read.ios_per_s, 200.0);
    // 4294967000 → 904 is 1200 ms for 400 reads.
    assert_eq!(r.read.await_ms, Some(3.0));
    // io_ticks 4294967200 → 1304 is 1400 ms of 2000: 70 %.
    assert_eq!(r.util_pct, 70.0);
    // time_in_queue 4294967100 → 1804 is 2000 ms over 2 s: aqu-sz 1.
    assert_eq!(r.aqu_sz, 1.0);
    assert_eq!(row(&m, "sda").rebaseline, None);
    assert_eq!(m.total.as_ref().unwrap().read.ios_per_s, 200.0);
}

#[test]
fn device_re_added_with_new_diskseq_is_rebaselined_not_a_huge_rate() {
    let mut m = model();
    m.update(sample(1, &[("8 16 sdb 100 0 800 50 0 0 0 0 0 40 50", Some(3))]));
    m.update(sample(2, &[("8 16 sdb 200 0 1600 100 0 0 0 0 0 80 100", Some(3))]));
    assert_eq!(row(&m, "sdb").rates.as_ref().unwrap().read.ios_per_s, 100.0);
    assert_eq!(row(&m, "sdb").history.iops.len(), 1);
    // Removed and re-added between samples: a new diskseq. Its counters
    // happen to be ahead of the old device's, so only diskseq can tell.
    m.update(sample(3, &[("8 16 sdb 90000 0 720000 900 0 0 0 0 0 900 900", Some(4))]));
    let r = row(&m, "sdb");
    assert_eq!(r.rates, None);
    assert_eq!(r.rebaseline, Some(Rebaseline::NewDevice));
    assert!(r.history.iops.is_empty(), "history of the old device is dropped");
    assert_eq!(m.total, None);
    // The next interval is measured against the new device's first sample.
    m.update(sample(
        4,
        &[("8 16 sdb 90500 0 724000 1400 0 0 0 0 0 1400 1400", Some(4))],
    ));
    let r = row(&m, "sdb");
    assert_eq!(r.rebaseline, None);
    let rates = r.rates.as_ref().unwrap();
    assert_eq!(rates.read.ios_per_s, 500.0);
    assert_eq!(rates.read.await_ms, Some(1.0));
    assert_eq!(rates.util_pct, 50.0);
    assert_eq!(r.history.iops.iter().collect::<Vec<_>>(), [500.0]);
}

#[test]
fn device_re_added_without_diskseq_is_caught_by_counters_going_backwards() {
    let mut m = model();
    m.update(sample(
        1,
        &[("8 16 sdb 50000 10 400000 900 7000 3 56000 800 0 1500 1700", None)],
    ));
    m.update(sample(2, &[("8 16 sdb 12 0 96 3 4 0 32 2 0 5 5", None)]));
    let r = row(&m, "sdb");
    assert_eq!(r.rates, None);
    assert_eq!(r.rebaseline, Some(Rebaseline::CounterWentBackwards));
    m.update(sample(3, &[("8 16 sdb 112 0 896 53 4 0 32 2 0 105 55", None)]));
    let rates = row(&m, "sdb").rates.clone().unwrap();
    assert_eq!(rates.read.ios_per_s, 100.0);
    assert_eq!(rates.read.bytes_per_s, 800.0 * 512.0);
    assert_eq!(rates.read.await_ms, Some(0.5));
    assert_eq!(rates.util_pct, 10.0);
}

#[test]
fn new_device_mid_run_starts_from_its_first_sample_and_vanished_ones_go() {
    let sda = |n: u64| format!("8 0 sda {n} 0 {} {n} 0 0 0 0 0 {n} {n}", n * 8);
    let sdc = |n: u64| format!("8 32 sdc {n} 0 {} {n} 0 0 0 0 0 {n} {n}", n * 8);
    let mut m = model();
    m.update(sample(1, &[(&sda(100), Some(1))]));
    m.update(sample(2, &[(&sda(200), Some(1))]));
    assert_eq!(m.devices.len(), 1);

    // sdc appears (hot-plugged with counters already at 5000).
    m.update(sample(3, &[(&sda(300), Some(1)), (&sdc(5000), Some(7))]));
    assert_eq!(m.devices.len(), 2);
    let c = row(&m, "sdc");
    assert_eq!((c.rates.as_ref(), c.rebaseline), (None, None));
    assert_eq!(m.total.as_ref().unwrap().read.ios_per_s, 100.0, "total: sda only");

    m.update(sample(4, &[(&sda(400), Some(1)), (&sdc(5050), Some(7))]));
    assert_eq!(row(&m, "sdc").rates.as_ref().unwrap().read.ios_per_s, 50.0);
    assert_eq!(m.total.as_ref().unwrap().read.ios_per_s, 150.0);
    assert_eq!(row(&m, "sdc").history.iops.len(), 1);

    // sdc vanishes: no row, and no history kept for it.
    m.update(sample(5, &[(&sda(500), Some(1))]));
    assert_eq!(m.devices.len(), 1);
    assert_eq!(m.devices[0].name, "sda");
    assert_eq!(m.total.as_ref().unwrap().read.ios_per_s, 100.0);

    // It comes back later: a first sample again, with an empty history,
    // never a delta against the counters from before it vanished.
    m.update(sample(6, &[(&sda(600), Some(1)), (&sdc(9000), Some(8))]));
    let c = row(&m, "sdc");
    assert_eq!((c.rates.as_ref(), c.rebaseline), (None, None));
    assert!(c.history.iops.is_empty());
    assert_eq!(row(&m, "sda").history.iops.len(), 5);
}

fn proc(pid: i32, start_time: u64, rchar: u64, read_bytes: u64, syscr: u64) -> RawProc {
    RawProc {
        cmdline: "tar cf /backup/x.tar /srv".into(),
        state: 'D',
        io: Ok(ProcIo {
            rchar,
            read_bytes,
            syscr,
            ..Default::default()
        }),
        ..RawProc::example(pid, start_time, "tar")
    }
}

/// A sample of these processes, each with a regular file open for reading
/// on 8:1 (so a page-cache share can be claimed).
fn proc_sample(t_s: u64, procs: Vec<RawProc>) -> RawSample {
    let files = procs
        .iter()
        .map(|p| (p.key, vec![fd(FdTarget::File, 0, (8 << 8) | 1)]))
        .collect();
    sample_with_files(t_s, procs, files)
}

fn fd(target: FdTarget, flags: u32, dev: u64) -> RawFd {
    RawFd {
        fd: 3,
        target,
        pos: 0,
        flags,
        mnt_id: None,
        ino: 12,
        dev,
        size: Some(1 << 30),
        remote: false,
        path: None,
    }
}

fn sample_with_files(t_s: u64, procs: Vec<RawProc>, files: Vec<(ProcKey, Vec<RawFd>)>) -> RawSample {
    RawSample {
        mono_ns: t_s * SEC,
        procs: ProcSnapshot {
            procs,
            ..Default::default()
        },
        fds: FdSnapshot {
            procs: files
                .into_iter()
                .map(|(key, fds)| FdProc {
                    key,
                    comm: String::new(),
                    io: None,
                    reason: ScanReason::Active,
                    fds,
                    unread: 0,
                    devs: Vec::new(),
                })
                .collect(),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn reused_pid_is_a_new_process_never_a_delta() {
    let mut m = model();
    m.update(proc_sample(
        1,
        vec![proc(500, 1000, 10_000_000, 8_000_000, 100), proc(77, 5, 0, 0, 0)],
    ));
    m.update(proc_sample(
        2,
        vec![proc(500, 1000, 14_000_000, 9_000_000, 140), proc(77, 5, 4096, 0, 1)],
    ));
    let old = m.procs.iter().find(|p| p.raw.key.pid == 500).unwrap();
    let r = old.rates.as_deref().unwrap();
    assert_eq!(r.rchar_bps, 4_000_000.0);
    assert_eq!(r.read_bps, 1_000_000.0);
    assert_eq!(r.syscr_per_s, 40.0);
    assert_eq!(r.avg_read, Some(100_000.0));
    assert_eq!(r.cache_share, Some(0.75));
    assert_eq!(old.since_start.as_deref().unwrap().rchar, 4_000_000);

    // pid 500 exits and the pid is reused by a new process (other start
    // time) whose counters are smaller: no rates, no "since start" carried
    // over, no negative or huge numbers.
    m.update(proc_sample(
        3,
        vec![proc(500, 2000, 300, 0, 3), proc(77, 5, 8192, 0, 2)],
    ));
    let new = m.procs.iter().find(|p| p.raw.key.pid == 500).unwrap();
    assert_eq!(new.raw.key.start_time, 2000);
    assert_eq!(new.rates, None);
    assert_eq!(new.since_start.as_deref(), Some(&ProcIo::default()));
    // The other process is unaffected.
    let p77 = m.procs.iter().find(|p| p.raw.key.pid == 77).unwrap();
    assert_eq!(p77.rates.as_deref().unwrap().rchar_bps, 4096.0);
    // Its total counts from its first read, two updates back.
    assert_eq!(p77.since_start.as_deref().unwrap().rchar, 8192);

    // Even when the new process's counters are *larger* than the old one's.
    let mut m = model();
    m.update(proc_sample(1, vec![proc(600, 1000, 100, 0, 1)]));
    m.update(proc_sample(2, vec![proc(600, 3000, 50_000_000, 0, 9)]));
    let p = &m.procs[0];
    assert_eq!(p.rates, None);
    assert_eq!(p.since_start.as_deref(), Some(&ProcIo::default()));
    m.update(proc_sample(3, vec![proc(600, 3000, 50_001_000, 0, 10)]));
    let p = &m.procs[0];
    assert_eq!(p.rates.as_deref().unwrap().rchar_bps, 1000.0);
    assert_eq!(p.since_start.as_deref().unwrap().rchar, 1000);
}

#[test]
fn rebaseline_after_a_pause_never_averages_over_the_pause() {
    let mut m = model();
    m.update(sample(10, &[("8 0 sda 1000 0 8000 100 0 0 0 0 0 100 100", None)]));
    m.update(sample(11, &[("8 0 sda 1100 0 8800 200 0 0 0 0 0 200 200", None)]));
    assert_eq!(row(&m, "sda").rates.as_ref().unwrap().read.ios_per_s, 100.0);
    // Paused for 100 s; 9,000 reads happened meanwhile. On resume:
    m.rebaseline();
    m.update(sample(111, &[("8 0 sda 10100 0 80800 9200 0 0 0 0 0 9200 9200", None)]));
    // The baseline sample leaves the shown numbers as they were.
    assert_eq!(row(&m, "sda").rates.as_ref().unwrap().read.ios_per_s, 100.0);
    assert_eq!(m.interval_s, Some(1.0));
    // The first interval after it covers 111..113 s only: 600 reads / 2 s.
    m.update(sample(113, &[("8 0 sda 10700 0 85600 9800 0 0 0 0 0 9800 9800", None)]));
    assert_eq!(m.interval_s, Some(2.0));
    assert_eq!(row(&m, "sda").rates.as_ref().unwrap().read.ios_per_s, 300.0);
}

#[test]
fn process_rates_after_a_rebaseline_are_against_the_baseline_sample() {
    let mut m = model();
    // Listed in no particular pid order: the baselines are looked up by key.
    let at = |a: u64, b: u64| vec![proc(700, 1, a, 0, 1), proc(650, 1, b, 0, 1)];
    m.update(proc_sample(10, at(0, 0)));
    m.update(proc_sample(11, at(1000, 4000)));
    let rchar = |m: &Model, pid: i32| {
        let p = m.procs.iter().find(|p| p.raw.key.pid == pid).expect("listed");
        p.rates.as_deref().map(|r| r.rchar_bps)
    };
    assert_eq!((rchar(&m, 700), rchar(&m, 650)), (Some(1000.0), Some(4000.0)));
    // Paused 100 s; on resume the sample is only the baseline.
    m.rebaseline();
    m.update(proc_sample(111, at(901_000, 504_000)));
    // The next rates cover 111..113 s alone, for both processes.
    m.update(proc_sample(113, at(903_000, 510_000)));
    assert_eq!((rchar(&m, 700), rchar(&m, 650)), (Some(1000.0), Some(3000.0)));
    // A pid reused (another start time) across updates is never a delta.
    m.update(proc_sample(
        114,
        vec![proc(700, 2, 10, 0, 1), proc(650, 1, 513_000, 0, 1)],
    ));
    assert_eq!((rchar(&m, 700), rchar(&m, 650)), (None, Some(3000.0)));
}

/// A reader of `io` bytes through syscalls (`disk` of them from storage),
/// `cancelled` bytes of writes cancelled, main-thread block delay `ticks`.
fn reader(pid: i32, comm: &str, rchar: u64, disk: u64, cancelled: u64, ticks: u64) -> RawProc {
    RawProc {
        blkio_ticks: Some(ticks),
        io: Ok(ProcIo {
            rchar,
            read_bytes: disk,
            syscr: rchar / 4096,
            cancelled_write_bytes: cancelled,
            ..Default::default()
        }),
        ..RawProc::example(pid, 1, comm)
    }
}

#[test]
fn cache_share_only_with_files_open_for_reading() {
    let mut m = model();
    let key = |pid| ProcKey { pid, start_time: 1 };
    let procs = |t: u64| {
        vec![
            reader(10, "cat", t << 20, 0, 0, 0),
            reader(11, "grep", t << 20, 0, 0, 0),
            reader(12, "dd", t << 20, 0, 0, 0),
        ]
    };
    // cat reads a pipe (no file listed), grep a regular file, dd a block
    // device; a file open write-only does not count.
    let files = || {
        vec![
            (key(10), vec![fd(FdTarget::File, libc::O_WRONLY as u32, (8 << 8) | 1)]),
            (key(11), vec![fd(FdTarget::File, 0, (8 << 8) | 1)]),
            (key(12), vec![fd(FdTarget::BlockDevice, 0, 7 << 8)]),
        ]
    };
    m.update(sample_with_files(1, procs(1), files()));
    m.update(sample_with_files(2, procs(3), files()));
    let row = |pid| m.procs.iter().find(|p| p.raw.key.pid == pid).unwrap();
    assert_eq!(row(10).rates.as_deref().unwrap().cache_share, None);
    assert!(!row(10).reads_files);
    assert_eq!(row(11).rates.as_deref().unwrap().cache_share, Some(1.0));
    assert_eq!(row(12).rates.as_deref().unwrap().cache_share, Some(1.0));
    assert_eq!(row(12).devices.len(), 0, "7:0 is not in this sample's diskstats");
}

#[test]
fn io_wait_is_unknown_while_delay_accounting_is_off() {
    let mut m = model();
    let s = |t: u64, ticks: u64, on: bool| RawSample {
        delayacct: Some(on),
        ..proc_sample(t, vec![reader(10, "dd", t << 20, t << 20, 0, ticks)])
    };
    m.update(s(1, 10, false));
    m.update(s(2, 60, false));
    assert_eq!(m.procs[0].rates.as_deref().unwrap().io_wait_pct, None);
    // Turned on between samples: the interval is not fully accounted.
    m.update(s(3, 90, true));
    assert_eq!(m.procs[0].rates.as_deref().unwrap().io_wait_pct, None);
    // On at both ends: 40 ticks of 100 Hz in 1 s.
    m.update(s(4, 130, true));
    assert_eq!(m.procs[0].rates.as_deref().unwrap().io_wait_pct, Some(40.0));
    assert_eq!(m.delayacct, Some(true));
}

#[test]
fn totals_leave_out_loop_workers_and_compare_writes_over_a_minute() {
    let mut m = model();
    let sda = |r_sectors: u64, w_sectors: u64| format!("8 0 sda 100 0 {r_sectors} 10 100 0 {w_sectors} 10 0 20 20");
    let worker = |t: u64| RawProc {
        ppid: 2,
        ..reader(3, "kworker/u8:3+loop0", 0, t << 20, 0, 0)
    };
    let st = |t: u64, procs: Vec<RawProc>| RawSample {
        disks: vec![disk(&sda(t * 2048, t * 4096))],
        devices: vec![info("sda", None)],
        ..proc_sample(t, procs)
    };
    // dd reads 1 MiB/s (through loop0: the worker reads the same MiB from
    // sda); rm cancels 2 MiB/s of dirty pages; sda reads 1 MiB/s and
    // writes 2 MiB/s.
    let procs = |t: u64| {
        vec![
            reader(10, "dd", t << 20, t << 20, 0, 0),
            reader(11, "rm", 0, 0, t << 21, 0),
            worker(t),
        ]
    };
    m.update(st(1, procs(1)));
    m.update(st(2, procs(2)));
    let w = m.procs.iter().find(|p| p.raw.key.pid == 3).unwrap();
    assert_eq!(
        w.worker.as_ref().map(|w| w.label()).as_deref(),
        Some("loop0 backing I/O")
    );
    let t = m.totals;
    assert_eq!(t.device_read_bps, Some(1_048_576.0));
    assert_eq!(t.process_read_bps, 1_048_576.0);
    assert_eq!(t.read_share, Some(1.0));
    assert_eq!((t.write_window_s, t.cancelled_bytes), (1.0, 2_097_152.0));
    assert_eq!(t.written_bytes, Some(2_097_152.0));
    let rm = m.procs.iter().find(|p| p.raw.key.pid == 11).unwrap();
    assert_eq!(rm.rates.as_deref().unwrap().cancelled_write_bps, 2_097_152.0);
    // The worker's comm now names another workqueue: still loop0's.
    let mut w = worker(3);
    w.comm = "kworker/u8:3-events_unbound".into();
    m.update(st(
        3,
        vec![
            reader(10, "dd", 3 << 20, 3 << 20, 0, 0),
            reader(11, "rm", 0, 0, 3 << 21, 0),
            w,
        ],
    ));
    let w = m.procs.iter().find(|p| p.raw.key.pid == 3).unwrap();
    assert_eq!(
        w.worker.as_ref().map(|w| w.label()).as_deref(),
        Some("loop0 backing I/O")
    );
    assert_eq!(m.totals.read_share, Some(1.0));
    assert_eq!(m.totals.write_window_s, 2.0);
}

/// Traced requests replace the counter estimate on the device they were
/// seen on (exact share, `SEQ`, basis "requests"), leave other devices'
/// estimates alone, and put the traced device first in a process's list,
/// replacing its open-files entry.
#[test]
fn trace_interval_applied_to_the_model() {
    use iolens::collect::trace::block::{BlockEvent, Dev, Kind, Rwbs};
    use iolens::model::pattern::{Basis, Pattern};
    use iolens::model::procdev::{DevSource, ProcDevice};
    use iolens::model::trace::Accumulator;
    use iolens::model::trace::view::TraceView;

    let mut m = common::model();
    let pid = m.procs[0].raw.key.pid;
    m.procs[0].devices = vec![
        ProcDevice {
            name: "loop0".into(),
            source: DevSource::OpenFiles,
        },
        ProcDevice {
            name: "sda".into(),
            source: DevSource::OpenFiles,
        },
    ];
    let loop0 = Dev { major: 7, minor: 0 };
    let ev = |ts: u64, kind: Kind, sector: u64| BlockEvent {
        ts,
        kind,
        dev: loop0,
        sector,
        sectors: 8,
        rwbs: Rwbs::parse(b"R"),
        pid,
        comm: *b"dd\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
        error: 0,
        tgid: pid,
        kernel: false,
    };
    // 20 reads: 0, 8, ..., 144 (18 continue the first), then one at 9000
    let mut evs = Vec::new();
    for (i, s) in (0..19u64).map(|i| i * 8).chain([9000]).enumerate() {
        let t = i as u64 * 100;
        evs.extend([
            ev(t, Kind::Start, s),
            ev(t + 10, Kind::Issue, s),
            ev(t + 50, Kind::Complete, s),
        ]);
    }
    let mut t = Accumulator::default();
    t.feed(&evs);
    let view = TraceView {
        active: true,
        reason: None,
        interval: t.take_interval(),
        log: Vec::new(),
        files: Default::default(),
        dirty: Default::default(),
        cost: None,
    };
    let sda_before = row(&m, "sda").rates.clone().unwrap();
    m.apply_trace(view);
    let r = row(&m, "loop0").rates.clone().unwrap();
    assert_eq!(
        (r.seq_share, r.seq_byte_share, r.pattern, r.pattern_basis),
        (
            Some(18.0 / 20.0),
            Some(18.0 / 20.0),
            Some(Pattern::Seq),
            Basis::Requests
        )
    );
    let sda = row(&m, "sda").rates.clone().unwrap();
    assert_eq!(
        (sda.pattern, sda.pattern_basis, sda.seq_share),
        (sda_before.pattern, Basis::Estimate, None)
    );
    assert_eq!(
        m.procs[0].devices,
        vec![
            ProcDevice {
                name: "loop0".into(),
                source: DevSource::Trace
            },
            ProcDevice {
                name: "sda".into(),
                source: DevSource::OpenFiles
            },
        ]
    );
}

#[test]
fn a_sector_jump_no_request_count_allows_rebaselines_with_its_reason() {
    let mut m = model();
    m.update(sample(10, &[("8 0 sda 1000 0 8000 100 0 0 0 0 0 100 100", None)]));
    // One more read, 2^50 more sectors in 1 s: 576 PB/s. max_sectors_kb
    // 1280 allows (1 + 0 + 0 + 1) × 2560 = 5120 sectors.
    m.update(sample(
        11,
        &[("8 0 sda 1001 0 1125899906850624 101 0 0 0 0 0 101 101", None)],
    ));
    let r = row(&m, "sda");
    assert_eq!(r.rates, None);
    assert_eq!(r.rebaseline, Some(Rebaseline::SectorsBeyondRequests));
    assert_eq!(
        Rebaseline::SectorsBeyondRequests.text(),
        "more sectors than the requests can carry"
    );
    // The next interval is measured from the new baseline: 10 reads of
    // 256 sectors in 1 s.
    m.update(sample(
        12,
        &[("8 0 sda 1011 0 1125899906853184 111 0 0 0 0 0 111 111", None)],
    ));
    let r = row(&m, "sda").rates.as_ref().unwrap();
    assert_eq!(r.read.ios_per_s, 10.0);
    assert_eq!(r.read.bytes_per_s, 2560.0 * 512.0);
}

#[test]
fn a_process_counter_jump_beyond_100_tb_s_is_na_with_a_note() {
    let mut m = model();
    m.update(proc_sample(1, vec![proc(500, 1000, 1_000, 0, 1)]));
    // rchar + 1.8e19 in 1 s (a mutated capture showed 3e19 B/s).
    m.update(proc_sample(2, vec![proc(500, 1000, 18_000_000_000_000_001_000, 0, 2)]));
    assert_eq!(m.procs[0].rates, None);
    assert!(
        m.errors
            .iter()
            .any(|e| e == "pid 500 (tar): /proc/500/io jumped beyond 100 TB/s in 1.00 s: re-baselined"),
        "{:?}",
        m.errors
    );
    // 10 GB/s (reading /dev/zero) is real.
    m.update(proc_sample(3, vec![proc(500, 1000, 18_000_000_010_000_001_000, 0, 3)]));
    assert_eq!(m.procs[0].rates.as_deref().unwrap().rchar_bps, 1e10);
    assert!(m.errors.is_empty(), "{:?}", m.errors);
}

/// A row is kept per process (5,000 rows at 5,000 processes): its raw data
/// is moved in, not copied, and rarely present parts are boxed. A guard on
/// the row's size, not on timing.
#[test]
fn proc_row_stays_small() {
    let size = std::mem::size_of::<iolens::model::ProcRow>();
    eprintln!("size_of::<ProcRow>() = {size}");
    assert!(size <= 512, "ProcRow grew to {size} bytes");
}

/// A sample at `t_s` seconds (monotonic and boot clocks alike) of `procs`,
/// with the exit records received since the previous one.
fn exits_sample(t_s: u64, procs: Vec<RawProc>, records: Vec<ExitRecord>) -> RawSample {
    RawSample {
        boot_ns: t_s * SEC,
        exits: ExitBatch {
            active: true,
            records,
            ..Default::default()
        },
        ..proc_sample(t_s, procs)
    }
}

/// Thread `pid` of process `tgid`, started at `start_s` and received at
/// `recv_s` (boot clock, seconds), owned by `uid`, having read `rchar`.
fn exit_record(pid: i32, tgid: i32, uid: u32, start_s: u64, recv_s: u64, rchar: u64) -> ExitRecord {
    ExitRecord {
        pid,
        tgid,
        ppid: 1,
        uid,
        comm: format!("short{tgid}").into(),
        etime_us: (recv_s - start_s) * 1_000_000,
        exit_status: Some(0),
        recv_boot_ns: recv_s * SEC,
        io: ProcIo {
            rchar,
            ..Default::default()
        },
    }
}

#[test]
fn exited_processes_get_one_row_each_named_by_their_uid_and_kept_five_seconds() {
    let mut m = model();
    let alice = || RawProc {
        uid: Some(1000),
        user: Some("alice".into()),
        ..proc(10, 5, 0, 0, 0)
    };
    m.update(exits_sample(1, vec![alice()], vec![]));
    // Two of alice's processes and one of a uid nothing listed has, all
    // started and gone since the previous sample.
    m.update(exits_sample(
        2,
        vec![alice()],
        vec![
            exit_record(300, 300, 1000, 1, 2, 4096),
            exit_record(301, 301, 1000, 1, 2, 8192),
            exit_record(302, 302, 2000, 1, 2, 1024),
        ],
    ));
    let exited = |m: &Model| -> Vec<(i32, Option<String>, u64)> {
        let mut v: Vec<_> = m
            .procs
            .iter()
            .filter(|p| p.exited)
            .map(|p| {
                let total = p.since_start.as_deref().map_or(0, |t| t.rchar);
                (p.raw.key.pid, p.raw.user.as_deref().map(str::to_string), total)
            })
            .collect();
        v.sort();
        v
    };
    let alice_name = Some("alice".to_string());
    assert_eq!(
        exited(&m),
        vec![
            (300, alice_name.clone(), 4096),
            (301, alice_name.clone(), 8192),
            (302, None, 1024)
        ]
    );
    // A late record of another thread of process 300: its row is replaced
    // (one row, the total grown), not added to.
    m.update(exits_sample(
        3,
        vec![alice()],
        vec![exit_record(305, 300, 1000, 1, 3, 2048)],
    ));
    assert_eq!(
        exited(&m),
        vec![
            (300, alice_name.clone(), 6144),
            (301, alice_name.clone(), 8192),
            (302, None, 1024)
        ]
    );
    // Five seconds after their last record the rows are gone.
    m.update(exits_sample(7, vec![alice()], vec![]));
    assert_eq!(exited(&m), vec![(300, alice_name, 6144)]);
    m.update(exits_sample(8, vec![alice()], vec![]));
    assert_eq!(exited(&m), vec![]);
    // Exited rows live in the rows between updates: rows changed from
    // outside (one exited row taken out) leave no time matched to the
    // wrong row; the exited rows are dropped, never misdated.
    m.update(exits_sample(
        9,
        vec![alice()],
        vec![
            exit_record(310, 310, 1000, 1, 9, 512),
            exit_record(311, 311, 1000, 1, 9, 256),
        ],
    ));
    assert_eq!(exited(&m).len(), 2);
    m.procs.retain(|p| p.raw.key.pid != 310);
    m.update(exits_sample(10, vec![alice()], vec![]));
    assert_eq!(exited(&m), vec![]);
}

/// A trace frame recorded before the requests' bytes were kept (issued
/// requests, no bytes) leaves the counter estimate: its share of bytes is
/// not known, and the figure shown is of bytes.
#[test]
fn a_trace_interval_without_bytes_keeps_the_estimate() {
    use iolens::collect::trace::block::Dev;
    use iolens::model::pattern::Basis;
    use iolens::model::trace::view::TraceView;
    use iolens::model::trace::{DeviceTrace, TraceInterval};

    let mut m = common::model();
    let before = row(&m, "loop0").rates.clone().unwrap();
    let mut interval = TraceInterval::default();
    let old = DeviceTrace {
        issued: 20,
        sequential: 18,
        completed: [20, 0, 0, 0],
        ..Default::default()
    };
    interval.devices.insert(Dev { major: 7, minor: 0 }, old);
    m.apply_trace(TraceView {
        active: true,
        reason: None,
        interval,
        log: Vec::new(),
        files: Default::default(),
        dirty: Default::default(),
        cost: None,
    });
    let r = row(&m, "loop0").rates.clone().unwrap();
    assert_eq!(
        (r.pattern, r.pattern_basis, r.seq_share, r.seq_byte_share),
        (before.pattern, Basis::Estimate, None, None)
    );
}

/// A tar (pid 600) reading a 1 GiB file, its job at 30 % of 1 GB, then
/// gone with its exit record: exit 0 reads done, at 100 %, for the job and
/// for the file it was reading (not "ended at 30%"); another status failed.
#[test]
fn a_job_and_its_transfer_that_exited_0_are_done() {
    use iolens::model::jobs::Tool;
    use iolens::model::jobs::track::{JobInput, Total};
    use iolens::model::progress::Label;
    let run = |status: u32| {
        let mut m = model();
        let key = ProcKey {
            pid: 600,
            start_time: 1000,
        };
        let job = |pos: u64| JobInput {
            key: (600, 1000),
            tool: Tool::Tar,
            command: "tar cf /backup/x.tar /srv".into(),
            pids: vec![600],
            position: Some(pos),
            total: Total::Known {
                files: 10,
                bytes: 1_000_000_000,
            },
            notes: vec![],
            current: None,
            files_done: None,
            files_why: None,
            age_ns: None,
            gone: false,
        };
        for (t, pos) in [(1, 300_000_000u64), (2, 322_000_000)] {
            let p = proc(600, 1000, pos, pos, 10);
            let mut f = fd(FdTarget::File, 0, (8 << 8) | 1);
            f.pos = pos;
            f.path = Some(std::sync::Arc::from(&b"/srv/a.bin"[..]));
            let mut s = sample_with_files(t, vec![p], vec![(key, vec![f])]);
            s.jobs = vec![job(pos)];
            m.update(s);
        }
        assert_eq!(m.jobs.views[0].percent, Some(32.2));
        assert_eq!(m.progress.jobs[0].main.label, Label::Progress);
        let mut rec = exit_record(600, 600, 0, 0, 3, 0);
        rec.exit_status = Some(status);
        let mut s = exits_sample(3, vec![], vec![rec]);
        s.fds.exited.push(key);
        m.update(s);
        let v = &m.jobs.views[0];
        let t = &m.progress.jobs[0].main;
        (v.phase, v.percent, v.exit.clone(), t.label, t.shown_percent().0)
    };
    assert_eq!(
        run(0),
        (
            "done",
            Some(100.0),
            Some("exit 0".into()),
            Label::Done { complete: true },
            Some(100.0)
        )
    );
    let (phase, pct, exit, label, _) = run(2 << 8);
    assert_eq!(
        (phase, pct, exit, label),
        (
            "failed",
            Some(32.2),
            Some("exit 2".into()),
            Label::Done { complete: false }
        )
    );
}
