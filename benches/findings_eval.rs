//! CPU per sample of the findings engine on a synthetic model: 2,000
//! processes (1% of them making tiny syscalls), four traced devices (one
//! slow), PSI. The target is at most 0.3 ms per sample (measured 0.097 ms
//! on the 2-core test VM, 22 findings held).
//!
//!     cargo bench --bench findings_eval

use std::sync::Arc;

use iolens::collect::process::RawProc;
use iolens::collect::process_cpu_ns;
use iolens::collect::system::{Pressure, PsiLine};
use iolens::collect::trace::block::Dev;
use iolens::model::disk::DirRates;
use iolens::model::findings::Engine;
use iolens::model::process::ProcRates;
use iolens::model::trace::{DeviceTrace, ProcDevTrace};
use iolens::model::{DeviceRow, Model, ProcRow};

fn device(m: &mut Model, minor: u32, ms: f64) {
    let name = format!("loop{minor}");
    m.devices.push(DeviceRow::example(
        &name,
        7,
        minor,
        DirRates {
            ios_per_s: 200.0,
            await_ms: Some(ms),
            d_ios: 200,
            ..Default::default()
        },
    ));
    let dev = Dev { major: 7, minor };
    let mut d = DeviceTrace {
        issued: 200,
        ..Default::default()
    };
    for i in 0..200u64 {
        d.latency[0].device.record((ms * 1e6) as u64 + i);
        d.latency[0].queue.record(1000 + i);
    }
    m.trace.active = true;
    m.trace.interval.devices.insert(dev, d);
    for pid in 0..8 {
        m.trace.interval.procs.insert(
            (pid, dev),
            ProcDevTrace {
                comm: "fio".into(),
                issued: 25,
                issued_bytes: 25 * 4096,
                completed: 25,
                ..Default::default()
            },
        );
    }
}

fn main() {
    let mut m = Model::default();
    m.interval_s = Some(1.0);
    for minor in 0..4 {
        device(&mut m, minor, if minor == 0 { 20.0 } else { 0.2 });
    }
    for i in 0..2000 {
        let mut raw = RawProc::example(1000 + i, 1, "worker");
        raw.cmdline = "worker".into();
        raw.state = if i % 50 == 0 { 'D' } else { 'S' };
        let calls = if i % 100 == 0 { 20_000.0 } else { 10.0 };
        m.procs.push(ProcRow {
            rates: Some(Arc::new(ProcRates {
                syscr_per_s: calls,
                rchar_bps: calls * 512.0,
                ..Default::default()
            })),
            ..ProcRow::example(raw)
        });
    }
    let mut e = Engine::default();
    let n = 2000u64;
    let t0 = process_cpu_ns();
    for t in 1..=n {
        m.mono_ns = t * 1_000_000_000;
        m.wall_ns = m.mono_ns;
        let l = |v| PsiLine {
            total_us: v,
            ..Default::default()
        };
        m.psi = Some(Pressure {
            some: Some(l(t * 300_000)),
            full: Some(l(t * 200_000)),
        });
        e.update(&m);
    }
    let per = (process_cpu_ns() - t0) as f64 / n as f64 / 1e6;
    println!(
        "findings: {per:.3} ms CPU per sample, 2000 processes, 4 traced devices ({} findings held)",
        e.findings().len()
    );
}
