//! `iolens bench-sample`: the CPU cost of one full sample of this machine.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;

use crate::cli::{BenchArgs, Cli};
use crate::collect::fdinfo::Watch;
use crate::session::{Plan, Session};

/// `iolens bench-sample`: the CPU cost of one full sample of this machine.
pub fn bench_sample(cli: &Cli, args: &BenchArgs) -> anyhow::Result<ExitCode> {
    use crate::collect::process_cpu_ns;
    let mut session = Session::new(Plan {
        root: cli.root.clone(),
        cgroups: args.cgroups,
        exits: false,
        watch: Watch::default(),
        trace_off: Some("not used by the benchmark"),
        file_events: false,
        trace_budget: None,
    });
    let collector = session.sampler.collector();
    let mut model = crate::session::model();
    // Warm-up: the first sample fills the per-process cache (cmdline, owner).
    let cold_start = process_cpu_ns();
    model.update(collector.sample());
    let cold_ns = process_cpu_ns() - cold_start;
    let samples = args.samples.max(1);
    let (mut sample_ns, mut model_ns, mut procs) = (0u64, 0u64, 0usize);
    let (mut cg_ns, mut cg_model_ns, mut cg_rows, mut cg_read) = (0u64, 0u64, 0usize, 0usize);
    for _ in 0..samples {
        let t0 = process_cpu_ns();
        let s = collector.sample();
        let t1 = process_cpu_ns();
        cg_ns += collector.cgroup_cpu_ns;
        if let Some(c) = &s.cgroups {
            cg_rows += c.cgroups.len();
            cg_read += c.walked;
            // The cgroup part of the model alone, on a copy of its state.
            let mut m = model.clone();
            let t = process_cpu_ns();
            m.update_cgroups_only(&s);
            cg_model_ns += process_cpu_ns() - t;
        }
        procs += s.procs.procs.len();
        model.update(s);
        model_ns += process_cpu_ns() - t1;
        sample_ns += t1 - t0;
    }
    let n = f64::from(samples);
    let per_sample = sample_ns as f64 / n / 1000.0;
    let per_proc_count = procs as f64 / n;
    let mut out = std::io::stdout().lock();
    writeln!(out, "processes per sample: {per_proc_count:.0}").context("writing to stdout")?;
    writeln!(out, "first (cold) sample:  {:.0} µs CPU", cold_ns as f64 / 1000.0)?;
    writeln!(out, "collect per sample:   {per_sample:.0} µs CPU (mean of {samples})")?;
    writeln!(out, "model per sample:     {:.0} µs CPU", model_ns as f64 / n / 1000.0)?;
    writeln!(
        out,
        "per process:          {:.2} µs CPU",
        per_sample / per_proc_count.max(1.0)
    )?;
    if args.cgroups {
        writeln!(
            out,
            "cgroups per sample:   {:.0} directories walked, {:.0} listed",
            cg_read as f64 / n,
            cg_rows as f64 / n
        )?;
        writeln!(
            out,
            "cgroup collect:       {:.0} µs CPU per sample",
            cg_ns as f64 / n / 1000.0
        )?;
        writeln!(
            out,
            "cgroup model:         {:.0} µs CPU per sample",
            cg_model_ns as f64 / n / 1000.0
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
