//! `iolens export`: a Prometheus exporter. A sampler thread takes a sample
//! every interval, folds it into the model and into [`metrics::Exported`]
//! (counters accumulated by iolens), and renders both encodings; the HTTP
//! server ([`http`]) only hands out the last rendering, and `--textfile`
//! writes it atomically for node_exporter's textfile collector.

pub mod http;
pub mod metrics;
pub mod probes;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use hyper::body::Bytes;

use crate::cli::{Cli, ExportArgs};
use crate::collect::Collector;
use crate::collect::cgroup::CgroupReader;
use crate::collect::sample::HostInfo;
use crate::model::Model;
use crate::tracer::Tracing;

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

struct Sampler {
    every: Duration,
    top: usize,
    trace_off: Option<&'static str>,
    root: PathBuf,
    textfile: Option<PathBuf>,
    probe_results: Option<probes::ResultsFile>,
    bodies: http::Shared,
    stop: Arc<AtomicBool>,
}

impl Sampler {
    fn run(mut self) {
        let mut collector = Collector::new(&self.root);
        collector.cgroups = Some(CgroupReader::new());
        collector.listen_for_exits();
        let mut model = Model::new(HostInfo::read(), crate::batch::clk_tck());
        let tracing = Tracing::start(self.trace_off);
        let mut exported = metrics::Exported::new(self.top);
        let start = Instant::now();
        for k in 1u32.. {
            let t0 = Instant::now();
            let s = collector.sample();
            let took = t0.elapsed().as_secs_f64();
            model.update(s);
            model.apply_trace(tracing.take());
            exported.update(&model, took);
            if let Some(f) = self.probe_results.as_mut() {
                f.refresh();
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
            {
                let mut b = self
                    .bodies
                    .bodies
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                b.openmetrics = Bytes::from(om);
                b.text = Bytes::from(text);
            }
            let next = start + self.every * k;
            while Instant::now() < next {
                if self.stop.load(Ordering::Relaxed) {
                    return;
                }
                std::thread::sleep(
                    next.saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(100)),
                );
            }
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}

pub fn run(cli: &Cli, args: &ExportArgs) -> anyhow::Result<ExitCode> {
    let every = crate::batch::interval(cli.interval.or(Some(DEFAULT_INTERVAL)))?;
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
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = Sampler {
        every,
        top: args.top,
        trace_off: crate::batch::trace_disabled(cli),
        root: cli.root.clone(),
        textfile: args.textfile.clone(),
        probe_results: args.probe_results.as_deref().map(probes::ResultsFile::new),
        bodies: bodies.clone(),
        stop: stop.clone(),
    };
    let (done_tx, done) = std::sync::mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("iolens-sampler".into())
        .spawn(move || {
            sampler.run();
            let _ = done_tx.send(());
        })
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
    stop.store(true, Ordering::Relaxed);
    // The sampler notices within 100 ms, or after the sample it is taking,
    // and removes its tracer as it ends; a sample stuck in the kernel is
    // not waited for beyond 3 s (a left tracefs instance is removed by the
    // next start, or `iolens --cleanup`).
    let _ = done.recv_timeout(Duration::from_secs(3));
    Ok(ExitCode::SUCCESS)
}
