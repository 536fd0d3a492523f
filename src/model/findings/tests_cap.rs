//! capped_device (against the session's peak and a saved probe result)
//! and the informational at_device_limit: fires at its threshold, not
//! below, clears.

use super::tests::{device, model, proc_with, rates, rules, step, trace};
use super::*;
use crate::model::process::ProcRates;
use crate::model::saved::{DepthCurve, SavedProbe, SavedProbes};

/// loop7 probed: 10.24 MB/s sequential, 1,000 IOPS at QD 1 and 2,500 at
/// the best depth of its sweep (knee QD 4).
fn probed() -> SavedProbes {
    let p = SavedProbe {
        device: "loop7".into(),
        started_unix: 1_690_000_000.0,
        random_iops: Some(1000.0),
        seq_bps: Some(10_240_000.0),
        depth: Some(DepthCurve {
            points: vec![(1, 1000.0), (2, 1800.0), (4, 2500.0), (8, 2550.0)],
            knee: Some(4),
            ..Default::default()
        }),
        ..Default::default()
    };
    SavedProbes {
        devices: [("loop7".to_string(), p)].into(),
        error: None,
    }
}

fn engine(saved: Option<SavedProbes>) -> Engine {
    Engine {
        saved: saved.unwrap_or_default(),
        ..Default::default()
    }
}

/// The findings of `rule` at each second 1..=until with `m` every second.
fn held(e: &mut Engine, m: impl Fn() -> Model, until: u64, rule: &str) -> Vec<Vec<Finding>> {
    (1..=until)
        .map(|t| step(e, &mut m(), t).into_iter().filter(|f| f.rule == rule).collect())
        .collect()
}

/// A throttled reader that every sample catches running (its bios are
/// released on the tick the sampler wakes on): PSI io some says it waited
/// between the samples; without that pressure, nobody is seen waiting.
#[test]
fn capped_device_throttled_reader_seen_by_psi_not_state_d() {
    let run = |some_us_per_s: u64| {
        let mut e = engine(Some(probed()));
        (1..=12)
            .map(|t| {
                let mut m = capped_at(2000, 4.0, 0.3, 30.0, 'R');
                // psi() sets some at twice full.
                m.psi = super::tests::psi(t * some_us_per_s / 2);
                step(&mut e, &mut m, t)
            })
            .last()
            .unwrap_or_default()
    };
    let f = run(900_000);
    let f: Vec<_> = f.iter().filter(|f| f.rule == "capped_device").collect();
    assert_eq!(f.len(), 1, "{f:?}");
    assert!(f[0].text.contains("PSI io some"), "{}", f[0].text);
    assert!(run(400_000).iter().all(|f| f.rule != "capped_device"));
}

#[test]
fn capped_device_against_a_saved_probe_result() {
    // Throttled at 2000 IOPS = 8.192 MB/s from the first second: the
    // session never showed more, the saved probe did (exactly 80% of it).
    let throttled = || capped_at(2000, 4.0, 0.3, 30.0, 'D');
    let f = held(&mut engine(Some(probed())), throttled, 12, "capped_device");
    let f = &f[11];
    assert_eq!(rules(f), [("capped_device", "loop7".to_string())]);
    let ev = |n: &str| f[0].evidence.iter().find(|e| e.name == n).unwrap();
    assert_eq!(ev("highest shown").value, Some(10_240_000.0));
    assert!(
        ev("highest shown").source.starts_with("saved probe result"),
        "{:?}",
        ev("highest shown")
    );
    assert_eq!(ev("highest IOPS shown").value, Some(2550.0));
    assert!(ev("highest IOPS shown").source.starts_with("saved probe result"));
    assert!(
        f[0].text
            .contains("20% below the 10.2 MB/s it showed in its saved probe result"),
        "{}",
        f[0].text
    );
    // 2050 IOPS: 80.1% of the saved rate, not capped.
    let f = held(
        &mut engine(Some(probed())),
        || capped_at(2050, 4.0, 0.3, 30.0, 'D'),
        14,
        "capped_device",
    );
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // Without a saved result the session's highest is the basis: flat at
    // it from the start is not capped.
    let f = held(&mut engine(None), throttled, 14, "capped_device");
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // A saved result of another device is not this one's basis.
    let mut other = probed();
    let p = other.devices.remove("loop7").unwrap();
    other.devices.insert("loop8".into(), p);
    let f = held(&mut engine(Some(other)), throttled, 14, "capped_device");
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // The session showed more than the saved result: the session's basis.
    let mut e = engine(Some(probed()));
    for t in 1..=5 {
        step(&mut e, &mut capped_at(3000, 4.0, 1.0, 100.0, 'D'), t);
    }
    let f: Vec<Finding> = (6..=16)
        .flat_map(|t| step(&mut e, &mut capped_at(2000, 4.0, 0.3, 30.0, 'D'), t))
        .filter(|f| f.rule == "capped_device")
        .collect();
    let last = f.last().unwrap();
    let hs = last.evidence.iter().find(|e| e.name == "highest shown").unwrap();
    assert_eq!(
        (hs.value, hs.source),
        (Some(12_288_000.0), "the highest interval this session")
    );
    assert!(
        last.text.contains("33% below the 12.3 MB/s it showed this session"),
        "{}",
        last.text
    );
}

#[test]
fn at_device_limit_at_90_pct_of_the_saved_rate_is_info_and_clears() {
    // 2250 IOPS of 4 KiB = 9.216 MB/s, 90% of the saved sequential rate
    // (and 88% of the best depth's 2550 IOPS), 95% busy, await 4 ms at
    // aqu-sz 1 (its own baseline), dd reading (not throttled).
    let flat_out = |iops| move || capped_at(iops, 4.0, 1.0, 95.0, 'D');
    let mut e = engine(Some(probed()));
    let f = held(&mut e, flat_out(2250), 9, "at_device_limit");
    // Baseline from 5 low-load intervals (t=6 on), held 3 s.
    assert!(f[..7].iter().all(Vec::is_empty), "{f:?}");
    let f = &f[8];
    assert_eq!(rules(f), [("at_device_limit", "loop7".to_string())]);
    assert_eq!(f[0].severity, Severity::Info);
    let ev = |n: &str| f[0].evidence.iter().find(|e| e.name == n).unwrap();
    assert_eq!(
        (ev("saved basis").value, ev("saved basis").unit),
        (Some(10_240_000.0), "B/s")
    );
    assert_eq!(ev("share of the saved basis").value, Some(90.0));
    assert!(
        f[0].text
            .contains("9.22 MB/s of the 10.2 MB/s its saved probe result shows (90%)"),
        "{}",
        f[0].text
    );
    // Not capped at the same time.
    assert!(e.findings().iter().all(|f| f.rule != "capped_device"));
    // Clears: the load drops (the level is no longer flat); 5 s later.
    let mut gone = None;
    for t in 10..=20 {
        let f = step(&mut e, &mut flat_out(500)(), t);
        if gone.is_none() && f.iter().all(|f| f.rule != "at_device_limit") {
            gone = Some(t);
        }
    }
    assert_eq!(gone, Some(14), "last held at t=9, clear_s 5");
    // 2249 IOPS: 89.96%, no finding.
    let f = held(&mut engine(Some(probed())), flat_out(2249), 14, "at_device_limit");
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // No saved result: the session's own highest is no device limit.
    let f = held(&mut engine(None), flat_out(2250), 14, "at_device_limit");
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // 79% busy: not running flat out.
    let f = held(
        &mut engine(Some(probed())),
        || capped_at(2250, 4.0, 1.0, 79.0, 'D'),
        14,
        "at_device_limit",
    );
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // Latency above its baseline: a queue grew (the queue rules' case).
    let mut e = engine(Some(probed()));
    held(&mut e, flat_out(2250), 6, "at_device_limit");
    let f = held(&mut e, || capped_at(2250, 6.1, 1.5, 95.0, 'D'), 14, "at_device_limit");
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
}

#[test]
fn saturation_basis_from_a_saved_depth_probe_before_the_rotation_flag() {
    let lo = super::tests::info("loop0", Some(true));
    let mut sda = super::tests::info("sda", Some(true));
    sda.kind = crate::model::DevKind::Disk;
    let flat = SavedProbe {
        depth: Some(DepthCurve {
            points: vec![(1, 100.0), (2, 104.0), (4, 103.0)],
            knee: Some(1),
            ..Default::default()
        }),
        ..Default::default()
    };
    // No gain past QD 1: %util is saturation, on a loop device too.
    assert_eq!(saturation_basis(Some(&lo), Some(&flat)), SaturationBasis::UtilProbed);
    assert!(saturation_basis(Some(&lo), Some(&flat)).is_util());
    // A curve that gains to QD 4: its knee, on a rotating disk too.
    let gains = probed().devices.remove("loop7");
    let k4 = SaturationBasis::QueueKnee { knee: 4 };
    assert_eq!(saturation_basis(Some(&lo), gains.as_ref()), k4);
    assert_eq!(saturation_basis(Some(&sda), gains.as_ref()), k4);
    assert!(!k4.is_util());
    assert_eq!(k4.text(), "aqu-sz vs probe knee QD 4");
    // A saved result without a depth sweep: the flag decides.
    let sweep_only = SavedProbe {
        seq_bps: Some(1e8),
        ..Default::default()
    };
    assert_eq!(saturation_basis(Some(&sda), Some(&sweep_only)), SaturationBasis::Util);
    assert_eq!(saturation_basis(Some(&lo), Some(&sweep_only)), SaturationBasis::Queue);
}

/// Untraced, a saved knee at QD 8 raises "a long queue" from aqu-sz 4 to
/// 8: at 7.9 the device still serves more in parallel; at 8 it is queue-
/// bound (await 8 ms, 4 × its 2 ms baseline).
#[test]
fn queue_bound_untraced_against_the_saved_knee() {
    use super::tests::{device, model, rates};
    let knee8 = || {
        let p = SavedProbe {
            device: "sdc".into(),
            depth: Some(DepthCurve {
                points: vec![(1, 100.0), (2, 180.0), (4, 300.0), (8, 400.0), (16, 410.0)],
                knee: Some(8),
                ..Default::default()
            }),
            ..Default::default()
        };
        SavedProbes {
            devices: [("sdc".to_string(), p)].into(),
            error: None,
        }
    };
    let at = |aqu: f64| {
        move || {
            let mut m = model();
            let ms = if aqu < 1.0 { 2.0 } else { 8.0 };
            m.devices
                .push(device("sdc", 32, Some(false), rates("sdc", 100, ms, aqu, 100.0)));
            m
        }
    };
    let run = |saved: Option<SavedProbes>, aqu: f64| {
        let mut e = engine(saved);
        held(&mut e, at(0.5), 6, "queue_bound");
        let f: Vec<Finding> = (7..=12)
            .flat_map(|t| step(&mut e, &mut at(aqu)(), t))
            .filter(|f| f.rule == "queue_bound")
            .collect();
        f.last().cloned()
    };
    assert!(run(Some(knee8()), 7.9).is_none());
    let f = run(Some(knee8()), 8.0).expect("queue_bound at the knee");
    let knee = f.evidence.iter().find(|e| e.name == "depth probe knee").unwrap();
    assert_eq!(knee.value, Some(8.0));
    // Without a saved probe, aqu-sz 4 is long already; the knee is n/a.
    let f = run(None, 4.0).expect("queue_bound at aqu-sz 4");
    assert_eq!(
        f.evidence.iter().find(|e| e.name == "depth probe knee").unwrap().value,
        None
    );
}

/// capped_device on a saved basis with loop7's IOPS cycling through
/// `pattern` (await 4 ms, 30% busy, dd in D): the findings at 1..=14 s.
fn capped_cycling(pattern: &[u64]) -> Vec<Vec<Finding>> {
    let i = std::cell::Cell::new(0);
    let m = || {
        i.set(i.get() + 1);
        capped_at(pattern[i.get() % pattern.len()], 4.0, 0.3, 30.0, 'D')
    };
    held(&mut engine(Some(probed())), m, 14, "capped_device")
}

#[test]
fn capped_device_flat_as_delivered_through_a_throttles_bursts() {
    // A throttle releasing in bursts: 2200, 1880, 1920, 1500, 2000 IOPS
    // (mean 1900, 74% of the saved 2550): 37% from highest to lowest, but
    // every rotation of the window delivers within 4.2% of the steady
    // 1900/s (e.g. 2200, 4080, 6000, 7500 against 1900, 3800, 5700, 7600:
    // 300 of 9500): found as soon as a steady 1900/s is.
    let first = |f: &[Vec<Finding>]| f.iter().position(|f| !f.is_empty());
    let steady = capped_cycling(&[1900]);
    let f = capped_cycling(&[2200, 1880, 1920, 1500, 2000]);
    assert_eq!(first(&f), first(&steady));
    let at = first(&f).unwrap();
    assert_eq!(rules(&f[at]), [("capped_device", "loop7".to_string())]);
    let level = f[at][0].evidence.iter().find(|e| e.name == "level").unwrap();
    assert!((level.value.unwrap() - 1900.0 * 4096.0).abs() < 1e-6, "{level:?}");
}

#[test]
fn capped_device_not_flat_on_a_ramp_or_a_swing() {
    // A ramp 1300 → 2500 IOPS (9.5% of the window's bytes off a steady
    // rate at its middle) and a swing of ±45% between 1000 and 2800:
    // neither is flat, so neither is capped however long it lasts.
    let patterns: [&[u64]; 2] = [&[1300, 1600, 1900, 2200, 2500], &[1000, 2800]];
    for pattern in patterns {
        let f = capped_cycling(pattern);
        assert!(f.iter().all(Vec::is_empty), "{pattern:?}: {f:?}");
    }
}

/// loop7 over one interval: `iops` reads of 4 KiB (bytes/s = iops × 4096)
/// at `await_ms`, aqu-sz `aqu`, `util` %; `dd` (PID 700) has a file open
/// on it, in state `state`.
fn capped_at(iops: u64, await_ms: f64, aqu: f64, util: f64, state: char) -> Model {
    let mut m = model();
    m.devices
        .push(device("loop7", 7, None, rates("loop7", iops, await_ms, aqu, util)));
    let mut p = proc_with(700, "dd", ProcRates::default());
    p.raw.state = state;
    p.devices.push(crate::model::procdev::ProcDevice {
        name: "loop7".into(),
        source: crate::model::procdev::DevSource::OpenFiles,
    });
    m.procs.push(p);
    m
}

/// The capped_device findings of a run: 5 s at its peak (2500 IOPS =
/// 10.24 MB/s, await 4 ms at aqu-sz 1: the baseline), then `level`
/// until second `until`.
fn capped_run(level: impl Fn() -> Model, until: u64) -> Vec<Vec<Finding>> {
    let mut e = Engine::default();
    for t in 1..=5 {
        let f = step(&mut e, &mut capped_at(2500, 4.0, 1.0, 100.0, 'D'), t);
        assert!(f.is_empty(), "t={t}: {f:?}");
    }
    (6..=until)
        .map(|t| {
            step(&mut e, &mut level(), t)
                .into_iter()
                .filter(|f| f.rule == "capped_device")
                .collect()
        })
        .collect()
}

#[test]
fn capped_device_throttled_flat_at_80_pct_of_its_peak() {
    // Throttled: 2000 IOPS = 8.192 MB/s, exactly 80% of the peak, the
    // device 30% busy, await 4 ms (its baseline), dd in state D. Flat
    // from t=6; the window of 5 is all throttled at t=10, held 3 s at 12.
    let f = capped_run(|| capped_at(2000, 4.0, 0.3, 30.0, 'D'), 12);
    assert!(f[..6].iter().all(Vec::is_empty), "{f:?}");
    let f = &f[6];
    assert_eq!(rules(f), [("capped_device", "loop7".to_string())]);
    let ev = |n: &str| f[0].evidence.iter().find(|e| e.name == n).and_then(|e| e.value);
    assert_eq!(ev("level"), Some(8_192_000.0));
    assert_eq!(ev("highest shown"), Some(10_240_000.0));
    assert_eq!(ev("baseline await"), Some(4.0));
    assert_eq!((f[0].culprits[0].pid, f[0].culprits[0].comm.as_str()), (700, "dd"));
    assert!(f[0].text.contains("8.19 MB/s"), "{}", f[0].text);
    assert!(f[0].text.contains("20% below the 10.2 MB/s"), "{}", f[0].text);
    assert!(f[0].text.contains("throttle"), "{}", f[0].text);
    // 2025 IOPS is 81% of the peak: not capped.
    let f = capped_run(|| capped_at(2025, 4.0, 0.3, 30.0, 'D'), 14);
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // Nobody waits (dd sleeping): a steady reader by design.
    let f = capped_run(|| capped_at(1000, 4.0, 0.3, 30.0, 'S'), 14);
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // Latency 7 ms: above 1.5 × the baseline (6) and 2 ms over it, under
    // 2 × (8): neither a throttle nor a cap below the device.
    let f = capped_run(|| capped_at(1000, 7.0, 0.3, 30.0, 'D'), 14);
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
    // The device 61% busy: not the throttle's idle device.
    let f = capped_run(|| capped_at(1000, 4.0, 0.7, 61.0, 'D'), 14);
    assert!(f.iter().all(Vec::is_empty), "{f:?}");
}

#[test]
fn capped_device_below_a_cap_with_growing_await_and_clears() {
    // A volume cap: 1000 IOPS with await 8 ms = 2 × the baseline, the
    // device 100% busy; fio's traced requests name it.
    let capped = || {
        let mut m = capped_at(1000, 8.0, 0.8, 100.0, 'S');
        trace(&mut m, 7, 1000, (0.0, 8.0), (900, "fio"), (0, 0));
        m
    };
    let mut e = Engine::default();
    for t in 1..=5 {
        step(&mut e, &mut capped_at(2500, 4.0, 1.0, 100.0, 'D'), t);
    }
    for t in 6..=11 {
        let f = step(&mut e, &mut capped(), t);
        assert!(f.iter().all(|f| f.rule != "capped_device"), "t={t}");
    }
    let f = step(&mut e, &mut capped(), 12);
    let f: Vec<_> = f.into_iter().filter(|f| f.rule == "capped_device").collect();
    assert_eq!(rules(&f), [("capped_device", "loop7".to_string())]);
    assert_eq!(f[0].culprits[0].comm, "fio");
    assert!(f[0].text.contains("await grew to 8.00 ms"), "{}", f[0].text);
    // Back at its peak: the level is no longer flat (t=13..), the
    // finding clears once 5 s passed without the condition.
    let mut gone = None;
    for t in 13..=20 {
        let f = step(&mut e, &mut capped_at(2500, 4.0, 1.0, 100.0, 'D'), t);
        if gone.is_none() && f.iter().all(|f| f.rule != "capped_device") {
            gone = Some(t);
        }
    }
    assert_eq!(gone, Some(17));
}

#[test]
fn capped_device_not_at_its_own_limit_nor_random_below_a_sequential_peak() {
    // Flat out at its peak the whole time, dd waiting: not capped.
    let mut e = Engine::default();
    for t in 1..=15 {
        let f = step(&mut e, &mut capped_at(2500, 4.0, 1.0, 100.0, 'D'), t);
        assert!(f.iter().all(|f| f.rule != "capped_device"), "t={t}");
    }
    // Peak 2500 IOPS of 1 MiB (2.6 GB/s); then 2500 IOPS of 4 KiB: far
    // below in bytes, at the peak in IOPS — a pattern change, not a cap.
    let big = || {
        let mut m = capped_at(2500, 4.0, 1.0, 100.0, 'D');
        if let Some(r) = &mut m.devices[0].rates {
            r.read.bytes_per_s = 2500.0 * 1_048_576.0;
        }
        m
    };
    let mut e = Engine::default();
    for t in 1..=5 {
        step(&mut e, &mut big(), t);
    }
    for t in 6..=15 {
        let f = step(&mut e, &mut capped_at(2500, 4.0, 0.3, 30.0, 'D'), t);
        assert!(f.iter().all(|f| f.rule != "capped_device"), "t={t}");
    }
}

#[test]
fn capped_device_latency_differences_under_2_ms_are_the_baseline() {
    // Baseline 0.4 ms; throttled with await 2.3 ms (5.75 × the baseline,
    // 1.9 ms over it): still at the baseline — a throttle; 2.4 ms (2.0
    // over): a cap below the device, named by its growth.
    let text = |ms: f64| {
        let mut e = Engine::default();
        for t in 1..=5 {
            step(&mut e, &mut capped_at(2500, 0.4, 1.0, 100.0, 'D'), t);
        }
        let mut f = Vec::new();
        for t in 6..=12 {
            f = step(&mut e, &mut capped_at(1000, ms, 0.3, 30.0, 'D'), t);
        }
        f.iter()
            .find(|f| f.rule == "capped_device")
            .map(|f| f.text.clone())
            .unwrap_or_default()
    };
    assert!(text(2.3).contains("throttle iolens cannot see"), "{}", text(2.3));
    assert!(text(2.4).contains("await grew to 2.40 ms"), "{}", text(2.4));
}
