//! `Model::update` over sequences of raw samples: counter wraps, devices
//! removed and re-added, appearing and vanishing, and pid reuse. Every
//! expected value is computed by hand from the counters in the samples.

use iolens::collect::RawSample;
use iolens::collect::diskstats::{DiskStat, parse_line};
use iolens::collect::process::{ProcIo, ProcSnapshot, RawProc};
use iolens::collect::sample::HostInfo;
use iolens::collect::sysblock::{DevKind, DeviceInfo};
use iolens::model::disk::Rebaseline;
use iolens::model::{DeviceRow, Model};

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

fn proc_sample(t_s: u64, procs: Vec<RawProc>) -> RawSample {
    RawSample {
        mono_ns: t_s * SEC,
        procs: ProcSnapshot {
            procs,
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
    let r = old.rates.unwrap();
    assert_eq!(r.rchar_bps, 4_000_000.0);
    assert_eq!(r.read_bps, 1_000_000.0);
    assert_eq!(r.syscr_per_s, 40.0);
    assert_eq!(r.avg_read, Some(100_000.0));
    assert_eq!(r.cache_share, Some(0.75));
    assert_eq!(old.since_start.unwrap().rchar, 4_000_000);

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
    assert_eq!(new.since_start, Some(ProcIo::default()));
    // The other process is unaffected.
    let p77 = m.procs.iter().find(|p| p.raw.key.pid == 77).unwrap();
    assert_eq!(p77.rates.unwrap().rchar_bps, 4096.0);

    // Even when the new process's counters are *larger* than the old one's.
    let mut m = model();
    m.update(proc_sample(1, vec![proc(600, 1000, 100, 0, 1)]));
    m.update(proc_sample(2, vec![proc(600, 3000, 50_000_000, 0, 9)]));
    let p = &m.procs[0];
    assert_eq!(p.rates, None);
    assert_eq!(p.since_start, Some(ProcIo::default()));
    m.update(proc_sample(3, vec![proc(600, 3000, 50_001_000, 0, 10)]));
    let p = &m.procs[0];
    assert_eq!(p.rates.unwrap().rchar_bps, 1000.0);
    assert_eq!(p.since_start.unwrap().rchar, 1000);
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
