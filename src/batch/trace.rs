//! The traced-request parts of the batch outputs: the per-device latency
//! and per-process tables of the text report, and the JSON fields built
//! from block tracepoints.

use std::fmt::Write as _;

use serde_json::json;

use crate::format;
use crate::model::Model;
use crate::present::device::DevCol;
use crate::present::process::ProcCol;
use crate::present::trace_json::{self as trace_view, ProcDevJson};

fn ms3(ns: Option<u64>) -> String {
    ns.map_or_else(|| format::NA.to_string(), |v| format!("{:.3}", v as f64 / 1e6))
}

/// The device's name for a traced device number.
pub(super) fn dev_name(model: &Model, d: &crate::collect::trace::block::Dev) -> String {
    model
        .devices
        .iter()
        .find(|r| r.major == d.major && r.minor == d.minor)
        .map_or_else(|| format!("{}:{}", d.major, d.minor), |r| format::escape(&r.name))
}

fn pct(share: Option<f64>) -> String {
    share.map_or(String::new(), |s| format!("{:.0}%", s * 100.0))
}

/// Per-request latency per device and op, and requests per process; the
/// sequential shares of bytes (`seq B`) and of requests (`seq R`).
pub(super) fn traced_report(out: &mut String, model: &Model) {
    use crate::collect::trace::block::Op;
    let iv = &model.trace.interval;
    // Sampled: counts scaled to the interval, percentiles and shares of
    // the traced requests.
    let sampled = model
        .trace
        .sampled()
        .map_or(String::new(), |tag| format!(" (~{tag}: counts scaled)"));
    let _ = writeln!(
        out,
        "\ntraced requests{sampled}: lost events {}  unmatched {}\n{:<12} {:<7} {:>7} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        iv.lost_events + iv.missed_pages,
        iv.unmatched,
        DevCol::Name.def().head,
        "op",
        "reqs",
        "seq B",
        "seq R",
        "p50 ms",
        "p95 ms",
        DevCol::P99.def().head,
        "max ms",
        "queue p99",
        "dev p99"
    );
    for (dev, d) in &iv.devices {
        // The device's sequential shares go on its first line.
        let mut seq = Some((pct(d.seq_byte_share()), pct(d.seq_share())));
        for (i, op) in Op::ALL.iter().enumerate() {
            let l = &d.latency[i];
            if d.completed[i] == 0 {
                continue;
            }
            let p = l.total.percentiles();
            let (seq_b, seq_r) = seq.take().unwrap_or_default();
            let _ = writeln!(
                out,
                "{:<12} {:<7} {:>7} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
                dev_name(model, dev),
                op.name(),
                d.completed[i],
                seq_b,
                seq_r,
                ms3(p.map(|p| p.p50)),
                ms3(p.map(|p| p.p95)),
                ms3(p.map(|p| p.p99)),
                ms3(p.map(|p| p.max)),
                ms3(l.queue.quantile(0.99)),
                ms3(l.device.quantile(0.99)),
            );
        }
    }
    let mut rows: Vec<_> = iv.procs.iter().collect();
    rows.sort_by_key(|(_, p)| std::cmp::Reverse(p.read_bytes + p.write_bytes));
    let _ = writeln!(
        out,
        "{:>8} {:<16} {:<12} {:>7} {:>11} {:>11} {:>6} {:>6} {:>9}",
        ProcCol::Pid.def().text_head,
        ProcCol::Command.def().text_head,
        "device",
        "reqs",
        "read",
        "written",
        "seq B",
        "seq R",
        DevCol::P99.def().head
    );
    for ((key, dev), p) in rows.into_iter().take(10) {
        let pid = if *key > 0 {
            key.to_string()
        } else {
            format::NA.to_string()
        };
        let who = if p.kernel {
            format!("[{}]", p.comm)
        } else {
            p.comm.clone()
        };
        let _ = writeln!(
            out,
            "{:>8} {:<16} {:<12} {:>7} {:>11} {:>11} {:>6} {:>6} {:>9}",
            pid,
            format::escape(&who),
            dev_name(model, dev),
            p.issued,
            format::decimal(p.read_bytes as f64),
            format::decimal(p.write_bytes as f64),
            pct(p.seq_byte_share()),
            pct(p.seq_share()),
            ms3(p.total.quantile(0.99)),
        );
    }
}

/// A process's devices: traced ones (exact, with their numbers) first,
/// then those of its open files that tracing did not already name.
pub(super) fn proc_devices_json(
    traced: &[ProcDevJson],
    open: &[crate::model::procdev::ProcDevice],
) -> serde_json::Value {
    let mut v: Vec<serde_json::Value> = traced
        .iter()
        .map(|t| serde_json::to_value(t).unwrap_or_default())
        .collect();
    for d in open {
        if d.source != crate::model::procdev::DevSource::Trace && !traced.iter().any(|t| t.name == d.name) {
            v.push(serde_json::to_value(d).unwrap_or_default());
        }
    }
    serde_json::Value::Array(v)
}

/// `devices[]`: each row plus `latency` and `trace` from traced requests
/// (`null` where the device had none or tracing is off).
pub(super) fn devices_json(model: &Model) -> serde_json::Value {
    let rows = model.devices.iter().map(|d| {
        let mut v = serde_json::to_value(d).unwrap_or(serde_json::Value::Null);
        let t = model.trace.device(d.major, d.minor);
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "latency".into(),
                t.map_or(serde_json::Value::Null, trace_view::latency_json),
            );
            o.insert(
                "trace".into(),
                t.map_or(serde_json::Value::Null, trace_view::device_json),
            );
        }
        v
    });
    serde_json::Value::Array(rows.collect())
}

/// Every traced process × device of the interval (also those not in the
/// top list, exited ones and kernel threads).
pub(super) fn traced_processes_json(model: &Model) -> serde_json::Value {
    // In (process, device) order: the rows are hashed.
    let mut procs: Vec<_> = model.trace.interval.procs.iter().collect();
    procs.sort_by_key(|((key, dev), _)| (*key, *dev));
    let rows = procs.into_iter().map(|((key, dev), p)| {
        let mut v = serde_json::to_value(ProcDevJson::new(dev_name(model, dev), p)).unwrap_or_default();
        if let Some(o) = v.as_object_mut() {
            o.insert("pid".into(), if *key > 0 { json!(key) } else { json!(null) });
            o.insert("comm".into(), json!(p.comm));
            o.insert("kernel".into(), json!(p.kernel));
        }
        v
    });
    serde_json::Value::Array(rows.collect())
}
