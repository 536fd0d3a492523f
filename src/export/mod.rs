//! `iolens export`: a Prometheus exporter. A sampler thread takes a sample
//! every interval, folds it into the model and into [`metrics::Exported`]
//! (counters accumulated by iolens), and renders both encodings; the HTTP
//! server ([`http`]) only hands out the last rendering, and `--textfile`
//! writes it atomically for node_exporter's textfile collector.

mod family;
pub mod files;
pub mod findings;
mod health;
pub mod hist;
pub mod http;
pub mod jobs;
pub mod metrics;
pub mod probes;

use std::net::SocketAddr;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::body::Bytes;

use crate::cli::{Cli, ExportArgs};
use crate::collect::RawSample;
use crate::model::Model;
use crate::session::tracing::Tracing;
use crate::session::{Clock, First, Plan, Session, Taken};

/// Default address: loopback only.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:9839";
/// Default seconds between samples.
pub const DEFAULT_INTERVAL: f64 = 10.0;

/// Write `text` to `path` atomically: a new file next to it, renamed over it.
pub fn write_atomic(path: &Path, text: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?
        .to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
    let res = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&tmp)
        .and_then(|mut f| f.write_all(text))
        .and_then(|_| std::fs::rename(&tmp, path));
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res.with_context(|| format!("writing {} (through {})", path.display(), tmp.display()))
}

/// What the sampler thread does with each sample: folds it into the model
/// and the exported counters, and renders them. Dropped when the sampler
/// ends: the tracer is removed first, then `done` says so.
struct Publisher {
    model: Model,
    tracing: Tracing,
    exported: metrics::Exported,
    textfile: Option<PathBuf>,
    probe_results: Option<probes::ResultsFile>,
    bodies: http::Shared,
    done: std::sync::mpsc::Sender<()>,
}

impl Drop for Publisher {
    fn drop(&mut self) {
        self.tracing.stop();
        let _ = self.done.send(());
    }
}

impl Publisher {
    fn publish(&mut self, taken: Taken, s: RawSample) -> ControlFlow<()> {
        let exported = &mut self.exported;
        crate::session::fold(&mut self.model, s, self.tracing.take());
        exported.update(&self.model, taken.took.as_secs_f64());
        exported.findings = findings::held(self.model.findings.findings());
        exported.jobs = jobs::series(&self.model);
        if let Some(f) = self.probe_results.as_mut() {
            // A new probe result is the findings' basis from the next sample.
            if f.refresh() {
                self.model.findings.saved.clone_from(&f.saved);
            }
            exported.probes.clone_from(&f.last);
        }
        let st = &self.bodies.stats;
        exported.scrapes = [st.openmetrics.load(Ordering::Relaxed), st.text.load(Ordering::Relaxed)];
        exported.http_errors = st.errors.load(Ordering::Relaxed);
        let om = exported.openmetrics();
        let text = metrics::text_format(&om);
        if let Some(path) = &self.textfile
            && let Err(e) = write_atomic(path, text.as_bytes())
        {
            eprintln!("iolens: {e:#}");
        }
        let mut b = self
            .bodies
            .bodies
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        b.openmetrics = Bytes::from(om);
        b.text = Bytes::from(text);
        ControlFlow::Continue(())
    }
}

pub fn run(cli: &Cli, args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let every = crate::session::interval(cli.interval.or(Some(DEFAULT_INTERVAL)))?;
    let mut model = crate::session::model();
    model.findings.cfg = crate::config::load_findings(cli)?;
    crate::session::load_saved_probes(&mut model, cli, args.probe_results.as_deref());
    let listen: Option<SocketAddr> = match (&args.listen, &args.textfile) {
        (Some(a), _) => Some(
            a.parse()
                .with_context(|| format!("--listen {a}: expected ADDRESS:PORT"))?,
        ),
        (None, Some(_)) => None,
        (None, None) => DEFAULT_LISTEN.parse().ok(),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let listener = match listen {
        Some(addr) => Some(rt.block_on(http::bind(addr))?),
        None => None,
    };
    if let Some(l) = &listener {
        let addr = l.local_addr().map_or_else(|_| "?".to_string(), |a| a.to_string());
        eprintln!(
            "iolens: serving metrics on http://{addr}/metrics every {} s",
            every.as_secs_f64()
        );
    }
    let bodies = http::Shared::default();
    let session = Session::new(Plan::full(cli, crate::session::trace_disabled(cli)));
    let (done, done_rx) = std::sync::mpsc::channel::<()>();
    let mut publisher = Publisher {
        model,
        tracing: session.tracer.start(),
        exported: metrics::Exported::new(args.top),
        textfile: args.textfile.clone(),
        probe_results: args.probe_results.as_deref().map(probes::ResultsFile::new),
        bodies: bodies.clone(),
        done,
    };
    // Closed when a signal ends the server: the sampler ends at once, or
    // after the sample it is taking.
    let (stop, ctl) = std::sync::mpsc::channel();
    let clock = Clock::new(Instant::now(), every, First::Full);
    session
        .sampler
        .spawn(clock, ctl, move |t, s| publisher.publish(t, s))
        .context("starting the sampler thread")?;
    rt.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let (Ok(mut i), Ok(mut t), Ok(mut h)) = (
            signal(SignalKind::interrupt()),
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
        ) else {
            return;
        };
        let server = async {
            match listener {
                Some(l) => http::serve(l, bodies).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = server => {}
            _ = i.recv() => {}
            _ = t.recv() => {}
            _ = h.recv() => {}
        }
    });
    drop(stop);
    // The sampler notices at once, or after the sample it is taking, and
    // removes its tracer as it ends; a sample stuck in the kernel is not
    // waited for beyond 3 s (a left tracefs instance is removed by the
    // next start, or `iolens --cleanup`).
    let _ = done_rx.recv_timeout(Duration::from_secs(3));
    Ok(ExitCode::SUCCESS)
}
