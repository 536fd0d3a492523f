//! The copy and backup jobs as gauges: each job's progress ratio (its
//! bytes done over its walked total) and its ETA, labelled by its root's
//! pid and its tool. Bounded: at most [`MAX_JOBS`] jobs (running ones
//! first, as the dashboard lists them); a job without a total or a rate
//! has no sample (never a made-up 0).

use prometheus_client::encoding::DescriptorEncoder;

use super::family::{Labels, gauge_family};
use super::metrics::label;
use crate::model::Model;

/// The most jobs exported at once.
pub const MAX_JOBS: usize = 32;

/// One job's exported values.
#[derive(Debug, Clone, PartialEq)]
pub struct JobSeries {
    pub pid: i32,
    pub tool: &'static str,
    /// 0 to 1; `None` while its total is unknown.
    pub ratio: Option<f64>,
    pub eta_s: Option<f64>,
}

/// The model's jobs, bounded.
pub fn series(m: &Model) -> Vec<JobSeries> {
    m.jobs
        .views
        .iter()
        .take(MAX_JOBS)
        .map(|v| JobSeries {
            pid: v.pid,
            tool: v.tool.name(),
            ratio: v.percent.map(|p| p / 100.0),
            eta_s: v.eta_s,
        })
        .collect()
}

pub fn encode(jobs: &[JobSeries], enc: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
    let each = |f: &dyn Fn(&JobSeries) -> Option<f64>| -> Vec<(Labels, f64)> {
        jobs.iter()
            .filter_map(|j| f(j).map(|v| (vec![("pid", j.pid.to_string()), ("tool", label(j.tool))], v)))
            .collect()
    };
    gauge_family(
        enc,
        "job_progress_ratio",
        "A copy or backup job's bytes of its sources done over their walked total (0 to 1)",
        &each(&|j| j.ratio),
    )?;
    gauge_family(
        enc,
        "job_eta_seconds",
        "Seconds until the job is done at its rate over the last samples",
        &each(&|j| j.eta_s),
    )
}
