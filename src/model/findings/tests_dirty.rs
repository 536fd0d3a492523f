//! dirty_throttled on model histories: fires at its threshold, not below,
//! not for a lone writer however much it is paused (nor on PSI alone),
//! clears with hysteresis, names the paused writer and the waiting others.

use super::tests::{device, model, proc_with, psi, rates, rules, step, waiter};
use super::*;
use crate::collect::trace::block::Dev;
use crate::model::ProcRow;
use crate::model::dirty::{BdiThrottle, Throttled};
use crate::model::procdev::{DevSource, ProcDevice};
use crate::model::process::ProcRates;
use crate::model::trace::ProcDevTrace;

const BDI: &str = "7:3";

fn on_loop3(mut p: ProcRow) -> ProcRow {
    p.devices.push(ProcDevice {
        name: "loop3".into(),
        source: DevSource::OpenFiles,
    });
    p
}

/// dd's interval on its bdi: 20 pauses, `paused_ms` in all.
fn dd_paused(paused_ms: u64) -> Throttled {
    Throttled {
        passes: 40,
        pauses: 20,
        paused_ms,
        max_pause_ms: paused_ms / 10,
        dirtied_pages: 4096,
        kernel: false,
    }
}

/// loop3 with dd (PID 500, in state D: paused) paused `paused_ms` of a
/// 1 s interval on its bdi, a reader (PID 600) on loop3 in state D when
/// `reader`, and PSI io at `full_us` µs full per second (`t` seconds in).
fn throttled(paused_ms: u64, reader: bool, t: u64, full_us: u64) -> Model {
    let mut m = model();
    m.delayacct = Some(false);
    m.psi = psi(t * full_us);
    m.devices
        .push(device("loop3", 3, None, rates("loop3", 100, 5.0, 2.0, 90.0)));
    let row = dd_paused(paused_ms);
    let d = &mut m.trace.dirty;
    d.active = true;
    d.interval.procs.insert((500, BDI.into()), row);
    // a kernel thread paused longer is never the culprit
    d.interval.procs.insert(
        (90, BDI.into()),
        Throttled {
            paused_ms: 900,
            kernel: true,
            ..row
        },
    );
    d.interval.bdis.insert(
        BDI.into(),
        BdiThrottle {
            sum: row,
            writers: 1,
            limit_pages: 1_000_000,
            dirty_pages: 20_000,
            wb_dirty_pages: Some(300),
            wb_setpoint_pages: Some(220),
        },
    );
    m.procs.push(on_loop3(waiter(500, "dd")));
    if reader {
        m.procs.push(on_loop3(waiter(600, "postgres")));
    }
    m
}

fn run(paused_ms: u64, reader: bool, full_us: u64) -> Vec<Finding> {
    let mut e = Engine::default();
    (0..=3)
        .map(|t| step(&mut e, &mut throttled(paused_ms, reader, t, full_us), t))
        .last()
        .unwrap_or_default()
}

#[test]
fn dirty_throttled_at_20_pct_paused_with_a_reader_waiting() {
    let f = run(200, true, 0);
    assert_eq!(rules(&f), [("dirty_throttled", "loop3".to_string())]);
    let f = &f[0];
    assert_eq!((f.culprits[0].pid, f.culprits[0].comm.as_str()), (500, "dd"));
    assert_eq!(f.culprits.len(), 1, "the kernel thread is not named: {:?}", f.culprits);
    assert_eq!(f.evidence[0].value, Some(20.0));
    assert_eq!(f.evidence[1].value, Some(20.0));
    assert_eq!(f.evidence[3].value, Some(300.0));
    assert_eq!((f.evidence[5].name, f.evidence[5].value), ("others waiting", Some(1.0)));
    assert!(
        f.text.contains("dd (PID 500)") && f.text.contains("postgres (PID 600)"),
        "{}",
        f.text
    );
    assert!(f.text.contains("bdi 7:3"), "{}", f.text);
    assert!(f.next.contains("/sys/class/bdi/7:3/max_bytes"), "{}", f.next);
    assert!(run(199, true, 0).is_empty(), "19.9% paused is below the threshold");
}

#[test]
fn a_lone_writer_paused_by_design_is_not_found_whatever_the_psi() {
    // dd paused 90% of the time, alone: its own pauses make io full
    // 90% (it is the only task), still not a finding.
    let f = run(900, false, 900_000);
    assert!(f.iter().all(|f| f.rule != "dirty_throttled"), "{f:?}");
}

#[test]
fn dirty_throttled_clears_5_s_after_the_reader_stops_waiting() {
    let mut e = Engine::default();
    for t in 0..=3 {
        step(&mut e, &mut throttled(500, true, t, 0), t);
    }
    for t in 4..8 {
        let f = step(&mut e, &mut throttled(500, false, t, 0), t);
        assert_eq!(rules(&f), [("dirty_throttled", "loop3".to_string())], "t={t}");
        assert!(!f[0].holding);
    }
    assert!(step(&mut e, &mut throttled(500, false, 8, 0), 8).is_empty());
}

#[test]
fn a_reader_slowed_above_the_devices_baseline_counts_as_waiting() {
    // Baseline: 5 low-load intervals at 1 ms device time (traced).
    let mut e = Engine::default();
    for t in 0..5 {
        let mut m = model();
        m.devices
            .push(device("loop3", 3, None, rates("loop3", 100, 1.0, 0.5, 10.0)));
        super::tests::trace(&mut m, 3, 100, (0.01, 1.0), (600, "postgres"), (0, 0));
        step(&mut e, &mut m, t);
    }
    assert_eq!(e.baselines.device_ms("loop3").map(f64::round), Some(1.0));
    // Then the reader (running, not in D) reads at `p50_ms` beside dd.
    let at = |p50_ms: f64, t: u64| {
        let mut m = throttled(300, false, t, 0);
        let r = ProcDevTrace {
            comm: "postgres".into(),
            issued: 50,
            completed: 50,
            read_bytes: 50 * 4096,
            ..Default::default()
        };
        let mut r = r;
        for _ in 0..50 {
            r.total.record((p50_ms * 1e6) as u64);
        }
        m.trace.active = true;
        m.trace.interval.procs.insert((600, Dev { major: 7, minor: 3 }), r);
        m.procs.push(on_loop3(proc_with(600, "postgres", ProcRates::default())));
        m
    };
    let mut slow = e.clone();
    let f = (5..=7).map(|t| step(&mut slow, &mut at(40.0, t), t)).last().unwrap();
    let f: Vec<&Finding> = f.iter().filter(|f| f.rule == "dirty_throttled").collect();
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].text.contains("postgres (PID 600)"), "{}", f[0].text);
    // 5.5 ms: 5.5× the baseline but only 4.5 ms above it: not slowed.
    let mut fine = e;
    for t in 5..=8 {
        let f = step(&mut fine, &mut at(5.5, t), t);
        assert!(f.iter().all(|f| f.rule != "dirty_throttled"), "t={t}: {f:?}");
    }
}

/// Untraced: dirty pages at `pct` of the threshold, cp dirtying 80 MB/s,
/// a reader in state D.
fn untraced(pct: u64) -> Model {
    let mut m = model();
    m.delayacct = Some(false);
    m.trace.dirty = crate::model::dirty::ThrottleView::off("not traced");
    m.vm = Some(crate::collect::vmstat::VmRates {
        dirty_pages: Some(pct * 10_000),
        dirty_threshold_pages: Some(1_000_000),
        ..Default::default()
    });
    let mut cp = proc_with(
        700,
        "cp",
        ProcRates {
            write_bps: 80e6,
            ..Default::default()
        },
    );
    cp.raw.state = 'D';
    m.procs.push(cp);
    m.procs.push(waiter(701, "postgres"));
    m
}

#[test]
fn untraced_dirty_memory_at_95_pct_of_its_threshold_names_the_top_dirtier() {
    let mut e = Engine::default();
    let f = (1..=3).map(|t| step(&mut e, &mut untraced(95), t)).last().unwrap();
    assert_eq!(rules(&f), [("dirty_throttled", "system".to_string())]);
    assert_eq!((f[0].culprits[0].pid, f[0].culprits[0].value), (700, 80e6));
    assert!(f[0].text.contains("postgres (PID 701)"), "{}", f[0].text);
    let mut e = Engine::default();
    for t in 1..=4 {
        assert!(step(&mut e, &mut untraced(94), t).is_empty());
    }
}

/// mountinfo of a box with a FUSE mount (0:52, what tests/common's
/// SlowMount makes) and an NFS one (0:61).
const MOUNTINFO: &str = "\
22 1 252:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
25 22 0:22 / /proc rw,nosuid - proc proc rw
88 22 0:52 / /tmp/slow\\040mnt rw,nosuid,nodev,relatime shared:48 - fuse.slowfs slowfs rw,user_id=0,group_id=0
90 22 0:61 / /srv/nfs rw,relatime shared:50 - nfs4 srv:/export rw,vers=4.2
";

/// dd (PID 500) paused `paused_ms` of a 1 s interval on bdi `bdi` (no
/// device row), a reader (PID 600) in state D with files on `fs` open.
fn throttled_on_mount(bdi: &str, paused_ms: u64, fs: &str) -> Model {
    let mut m = model();
    m.delayacct = Some(false);
    m.prev = Some(crate::collect::RawSample {
        anon_mounts: crate::collect::mountinfo::parse_anon(MOUNTINFO),
        ..Default::default()
    });
    let row = dd_paused(paused_ms);
    let d = &mut m.trace.dirty;
    d.active = true;
    d.interval.procs.insert((500, bdi.into()), row);
    d.interval.bdis.insert(
        bdi.into(),
        BdiThrottle {
            sum: row,
            writers: 1,
            ..Default::default()
        },
    );
    m.procs.push(waiter(500, "dd"));
    let mut reader = waiter(600, "postgres");
    reader.devices.push(ProcDevice {
        name: fs.into(),
        source: DevSource::OpenFiles,
    });
    m.procs.push(reader);
    m
}

fn run_on_mount(bdi: &str, paused_ms: u64, fs: &str) -> Vec<Finding> {
    let mut e = Engine::default();
    (0..=3)
        .map(|t| step(&mut e, &mut throttled_on_mount(bdi, paused_ms, fs), t))
        .last()
        .unwrap_or_default()
}

#[test]
fn a_fuse_or_nfs_bdi_is_judged_on_its_mount() {
    let f = run_on_mount("0:52", 300, "fuse.slowfs");
    assert_eq!(rules(&f), [("dirty_throttled", "/tmp/slow mnt".to_string())]);
    assert_eq!(f[0].subject.kind(), "mount");
    assert_eq!((f[0].culprits[0].pid, f[0].evidence[0].value), (500, Some(30.0)));
    assert!(
        f[0].text.contains("bdi 0:52") && f[0].text.contains("postgres (PID 600)"),
        "{}",
        f[0].text
    );
    let f = run_on_mount("0:61", 300, "nfs4");
    assert_eq!(rules(&f), [("dirty_throttled", "/srv/nfs".to_string())]);
    // Below the threshold; a reader on another filesystem; a bdi that is
    // neither a device row nor a mount: none.
    assert!(run_on_mount("0:52", 199, "fuse.slowfs").is_empty());
    assert!(run_on_mount("0:52", 300, "nfs4").is_empty());
    assert!(run_on_mount("0:77", 300, "fuse.slowfs").is_empty());
}
