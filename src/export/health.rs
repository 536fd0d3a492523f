//! The exporter's own health in OpenMetrics: samples, tracing and what
//! the tracer costs, scrapes, errors.

use prometheus_client::encoding::DescriptorEncoder;

use super::family::counter_family;
use super::metrics::{Exported, counter, gauge};

/// The exporter's own health: samples, tracing, scrapes, errors.
pub(super) fn encode(e: &Exported, enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    counter(enc, "samples", "Samples taken", e.samples as f64)?;
    counter(
        enc,
        "sample_errors",
        "Files that could not be read, summed over samples",
        e.sample_errors as f64,
    )?;
    gauge(
        enc,
        "last_sample_timestamp_seconds",
        "Wall-clock time of the last sample, s since the Unix epoch",
        e.last_sample_unix_s,
    )?;
    gauge(
        enc,
        "sample_duration_seconds",
        "How long the last sample took to read",
        e.last_sample_duration_s,
    )?;
    gauge(
        enc,
        "trace_active",
        "1 while block-request tracing runs (root), else 0",
        f64::from(u8::from(e.trace_active)),
    )?;
    if let Some(s) = e.trace_share {
        let help = "Share of the last interval traced: 1 when every request was; below, the CPU budget \
                    (--trace-budget) traced in windows and the traced counts are estimates scaled by 1/share";
        gauge(enc, "trace_share", help, s)?;
    }
    if let Some(ns) = e.tracer_cpu_ns {
        let help = "CPU the block tracer used (its thread and the samples' reads of its buffers), \
                    as its budget (--trace-budget) counts it";
        counter(enc, "tracer_cpu_seconds", help, ns as f64 / 1e9)?;
    }
    if let Some(b) = e.trace_budget {
        gauge(
            enc,
            "trace_budget_cores",
            "The block tracer's CPU budget, share of one core",
            b,
        )?;
    }
    counter(
        enc,
        "trace_lost_events",
        "Trace events the kernel lost (ring buffer overruns)",
        e.trace_lost_events as f64,
    )?;
    counter(
        enc,
        "trace_unmatched_requests",
        "Traced requests that could not be matched (completion without issue, expired)",
        e.trace_unmatched as f64,
    )?;
    counter_family(
        enc,
        "scrapes",
        "Scrapes of /metrics served, by format (as of the last sample)",
        &[
            (vec![("format", "openmetrics".to_string())], e.scrapes[0] as f64),
            (vec![("format", "text".to_string())], e.scrapes[1] as f64),
        ],
    )?;
    counter(
        enc,
        "http_errors",
        "Requests answered with an error: other paths (404), other methods (405), before the first sample (503)",
        e.http_errors as f64,
    )?;
    counter(
        enc,
        "exit_record_overflows",
        "Times the kernel dropped taskstats exit records (their threads' I/O is missing)",
        e.exit_record_overflows as f64,
    )?;
    Ok(())
}
