//! The JSON of tracing (per device, per process × device, the counts):
//! built here, from the pure model's numbers (the model builds no JSON).

use serde::Serialize;
use serde_json::{Value, json};

use crate::collect::trace::block::Op;
use crate::model::trace::hist::{LatHist, Log2Hist};
use crate::model::trace::view::TraceView;
use crate::model::trace::{DeviceTrace, OpLatency, ProcDevTrace};

/// The counts that say how complete the tracing picture is.
pub fn counts_json(t: &TraceView) -> Value {
    let iv = &t.interval;
    json!({
        "active": t.active,
        "reason": t.reason,
        "events": iv.events,
        "lost_events": iv.lost_events,
        "missed_pages": iv.missed_pages,
        "unmatched": iv.unmatched,
        "decode_errors": iv.decode_errors,
        "trace_share": t.active.then_some(iv.share.0),
        // The tracer's own CPU over the interval as its budget counts it
        // (its thread and the samples' reads of the buffers), % of one
        // core; the lookups of new tasks' processes are in it but not
        // held by the budget.
        "tracer_cpu_pct": t.cost.and_then(|c| c.pct(c.cpu_ns)),
        "tracer_lookups_pct": t.cost.and_then(|c| c.pct(c.lookup_ns)),
        "trace_budget_pct": t.cost.and_then(|c| c.budget).map(|b| b * 100.0),
    })
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// Percentiles in ms and the histogram (power-of-two buckets) of one
/// latency; `null` when empty.
pub fn hist_json(h: &LatHist) -> Value {
    let Some(p) = h.percentiles() else {
        return Value::Null;
    };
    let buckets: Vec<Value> = h
        .log2_buckets()
        .into_iter()
        .map(|(le, n)| json!({"lt_ms": ms(le), "count": n}))
        .collect();
    json!({
        "count": h.n,
        "p50_ms": ms(p.p50),
        "p95_ms": ms(p.p95),
        "p99_ms": ms(p.p99),
        "max_ms": ms(p.max),
        "histogram": buckets,
    })
}

fn op_json(l: &OpLatency) -> Value {
    if l.device.n == 0 && l.total.n == 0 {
        return Value::Null;
    }
    json!({
        "queue": hist_json(&l.queue),
        "wait": hist_json(&l.wait),
        "device": hist_json(&l.device),
        "total": hist_json(&l.total),
    })
}

/// `latency` of a device: per op, queue / wait (from the bio queued) /
/// device / total.
pub fn latency_json(d: &DeviceTrace) -> Value {
    let mut m = serde_json::Map::new();
    for (i, op) in Op::ALL.iter().enumerate() {
        m.insert(op.name().to_string(), op_json(&d.latency[i]));
    }
    Value::Object(m)
}

fn log2_json(h: &Log2Hist, unit: &str) -> Value {
    Value::Array(
        h.buckets()
            .into_iter()
            .map(|(lt, n)| json!({ format!("lt_{unit}"): lt, "count": n }))
            .collect(),
    )
}

/// `trace` of a device: request counts and the size / seek histograms.
pub fn device_json(d: &DeviceTrace) -> Value {
    json!({
        "requests": d.issued,
        "sequential": d.sequential,
        "request_bytes": d.issued_bytes,
        "sequential_bytes": d.sequential_bytes,
        "completed": {"read": d.completed[0], "write": d.completed[1], "discard": d.completed[2], "flush": d.completed[3]},
        "merges": d.merges,
        "unmatched": d.unmatched,
        "errors": d.errors,
        "sizes": log2_json(&d.sizes, "bytes"),
        "seeks": log2_json(&d.seeks, "bytes"),
    })
}

/// One process × device row.
#[derive(Debug, Clone, Serialize)]
pub struct ProcDevJson {
    pub name: String,
    pub source: &'static str,
    pub requests: u64,
    pub completed: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Sequential share of the requests, and of their bytes.
    pub seq_share: Option<f64>,
    pub seq_byte_share: Option<f64>,
    pub total_p50_ms: Option<f64>,
    pub total_p99_ms: Option<f64>,
}

impl ProcDevJson {
    pub fn new(name: String, p: &ProcDevTrace) -> ProcDevJson {
        let pc = p.total.percentiles();
        ProcDevJson {
            name,
            source: "trace",
            requests: p.issued,
            completed: p.completed,
            read_bytes: p.read_bytes,
            write_bytes: p.write_bytes,
            seq_share: p.seq_share(),
            seq_byte_share: p.seq_byte_share(),
            total_p50_ms: pc.map(|p| ms(p.p50)),
            total_p99_ms: pc.map(|p| ms(p.p99)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_and_process_fields_keep_their_names() {
        let d = DeviceTrace {
            issued: 1550,
            sequential: 49,
            issued_bytes: 7,
            sequential_bytes: 5,
            ..DeviceTrace::default()
        };
        let j = device_json(&d);
        let got = (
            &j["requests"],
            &j["sequential"],
            &j["request_bytes"],
            &j["sequential_bytes"],
        );
        assert_eq!(got, (&1550.into(), &49.into(), &7.into(), &5.into()));
        assert_eq!(latency_json(&d)["read"], Value::Null, "no request completed");
        let p = ProcDevJson::new("loop0".into(), &ProcDevTrace::default());
        let v = serde_json::to_value(&p).unwrap_or_default();
        assert_eq!((&v["name"], &v["source"]), (&"loop0".into(), &"trace".into()));
        let c = counts_json(&TraceView::off("why"));
        assert_eq!((&c["active"], &c["reason"]), (&false.into(), &"why".into()));
        assert_eq!(
            (&c["tracer_cpu_pct"], &c["trace_budget_pct"]),
            (&Value::Null, &Value::Null)
        );
    }

    /// The tracer's cost over the interval in % of one core: 5 ms of CPU,
    /// 1 ms of it lookups, over 2 s under a 0.2 % budget; a fixed duty
    /// has no budget.
    #[test]
    fn tracer_cost_in_percent_of_a_core() {
        use crate::collect::trace::sampling::Cost;
        let mut t = TraceView {
            active: true,
            ..TraceView::default()
        };
        t.cost = Some(Cost {
            cpu_ns: 5_000_000,
            lookup_ns: 1_000_000,
            wall_ns: 2_000_000_000,
            budget: Some(0.002),
        });
        let c = counts_json(&t);
        let pct = |k: &str| c[k].as_f64().map(|v| (v * 1e6).round() / 1e6);
        assert_eq!(
            (
                pct("tracer_cpu_pct"),
                pct("tracer_lookups_pct"),
                pct("trace_budget_pct")
            ),
            (Some(0.25), Some(0.05), Some(0.2))
        );
        t.cost = t.cost.map(|c| Cost { budget: None, ..c });
        assert_eq!(counts_json(&t)["trace_budget_pct"], Value::Null);
    }
}
