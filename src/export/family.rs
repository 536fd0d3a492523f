//! Metric families with one sample per label set, as the exporter's
//! per-command, per-cgroup, per-device and probe series are written.

use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// The labels of one sample: name, value (escaped with
/// [`super::metrics::label`]).
pub(super) type Labels = Vec<(&'static str, String)>;

/// A counter with one sample per label set (none: no family).
pub(super) fn counter_family(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels, f64)],
) -> Result<(), std::fmt::Error> {
    family(enc, name, help, series, MetricType::Counter, ConstCounter::new)
}

/// A gauge with one sample per label set (none: no family).
pub(super) fn gauge_family(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels, f64)],
) -> Result<(), std::fmt::Error> {
    family(enc, name, help, series, MetricType::Gauge, ConstGauge::new)
}

fn family<M: EncodeMetric>(
    enc: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: &[(Labels, f64)],
    kind: MetricType,
    metric: fn(f64) -> M,
) -> Result<(), std::fmt::Error> {
    if series.is_empty() {
        return Ok(());
    }
    let mut f = enc.encode_descriptor(name, help, None, kind)?;
    for (labels, v) in series {
        metric(*v).encode(f.encode_family(labels)?)?;
    }
    Ok(())
}
