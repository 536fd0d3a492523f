//! Read-only probes: what can the disk under a target really do?
//!
//! * [`random`]: cache-free random reads at queue depth 1 → IOPS and a
//!   latency histogram.
//! * [`sweep`]: sequential reads in zones spread over the whole target →
//!   MB/s against position.
//! * [`verdict`]: HDD / SATA-class SSD / NVMe-class / virtual or
//!   cache-backed / inconclusive, with its evidence.
//!
//! Rules (see "Probes" in the crate docs): the target is opened `O_RDONLY | O_DIRECT |
//! O_CLOEXEC` and only ever read; every test has a time cap and an I/O cap;
//! a [`CancelToken`] stops it between two reads (one read lasts well under
//! 200 ms on any working device); results carry their method.
//!
//! Running one: [`run`] is blocking and reports [`Progress`] through a
//! callback; [`spawn`] runs it on its own thread and sends [`ProbeMsg`]s to a
//! sink, which is how the dashboard and the CLI use it.
//!
//! Wiring into the dashboard (the app loop owns a [`ProbeView`]):
//! 1. A key on the devices pane opens the menu (random / sweep / both,
//!    quick / thorough) for `/dev/<name>`. Refuse while
//!    [`ProbeView::is_running`]: one probe at a time.
//! 2. Start: `let token = CancelToken::new();
//!    view.start(target::describe_path(&cfg.target), cfg.label());
//!    probe::spawn(cfg, token.clone(), move |m| { let _ = tx.send(Msg::Probe(m)); })`
//!    with `tx` a `tokio::sync::mpsc::UnboundedSender` (its `send` is not
//!    async). Keep `token`; the join handle can be dropped.
//! 3. On `Msg::Probe(m)`: for `ProbeMsg::Finished(r)` call
//!    [`store::append`] (show its error, if any, in the status line); then
//!    `view.apply(m)` and mark the screen dirty.
//! 4. Esc while running: `token.cancel(); view.cancel_requested();` and do
//!    not wait: the thread stops after the read in flight and sends the
//!    partial result.
//! 5. Draw with `ui::results::render(frame, area, &view)`.

pub mod align;
pub mod check;
pub mod cmd;
pub mod engine;
mod evidence;
#[cfg(any(test, feature = "test-support"))]
pub mod example;
#[cfg(any(test, feature = "test-support"))]
pub mod example_capacity;
pub mod layout;
pub mod mechanics;
pub mod qd;
pub mod random;
pub mod reach;
pub mod seek;
mod setup;
pub mod size;
pub mod stats;
pub mod store;
pub mod sweep;
pub mod sync;
pub mod target;
pub mod verdict;
pub mod view;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use setup::{block_size, drop_global_cache, enter_idle, place_zones, read_layout, time_cap};

pub use check::DiskCheck;
pub use qd::{QdConfig, QdPoint, QdResult};
pub use random::RandomResult;
pub use sweep::{SweepResult, Zone};
pub use target::{CacheMode, Target};
pub use verdict::{Class, Verdict};
pub use view::ProbeView;

/// Which tests to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Tests {
    Random,
    Sweep,
    Both,
    /// Queue-depth sweep (random reads at QD 1, 2, 4, … 64).
    QueueDepth,
    /// Write + fdatasync latency in a directory (the one probe that writes).
    SyncWrite,
    /// Partition alignment (sysfs) with +512 B reads as evidence.
    Align,
    /// Random reads of 4 KiB … 4 MiB.
    Size,
    /// Seek curve and rotation of a whole disk.
    Seek,
}

impl Tests {
    pub fn random(self) -> bool {
        matches!(self, Tests::Random | Tests::Both)
    }
    pub fn sweep(self) -> bool {
        matches!(self, Tests::Sweep | Tests::Both)
    }
    pub fn label(self) -> &'static str {
        match self {
            Tests::Random => "random read",
            Tests::Sweep => "zone sweep",
            Tests::Both => "random read + zone sweep",
            Tests::QueueDepth => "queue-depth sweep",
            Tests::SyncWrite => "sync-write latency",
            Tests::Align => "alignment",
            Tests::Size => "request-size sweep",
            Tests::Seek => "seek and rotation",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Depth {
    Quick,
    Thorough,
}

/// Everything a probe run needs. Fields left `None` take the defaults of
/// the chosen [`Depth`].
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeConfig {
    pub target: PathBuf,
    pub tests: Tests,
    pub depth: Depth,
    /// Random read size (default 4 KiB, at least the physical block size).
    pub bs: Option<u64>,
    /// Time cap per test.
    pub duration: Option<Duration>,
    /// Random reads: sample cap (default 20,000 quick, 100,000 thorough).
    pub max_reads: Option<u64>,
    /// Random reads: only offsets in `[start, end)` of the target.
    pub span: Option<(u64, u64)>,
    /// Sweep: number of zones (default 20 quick, 100 thorough).
    pub zones: Option<usize>,
    /// Sweep: bytes read per zone (default 64 MiB, less on small targets).
    pub chunk: Option<u64>,
    /// Run in the idle I/O class (labelled impact-limited only where the scheduler is bfq).
    pub idle: bool,
    /// Drop the global page cache first (root only; affects the whole box).
    pub drop_caches: bool,
    /// Where /proc and /sys are read (normally "/").
    pub root: PathBuf,
    /// Queue-depth sweep options.
    pub qd: QdConfig,
}

impl ProbeConfig {
    pub fn new(target: impl Into<PathBuf>, tests: Tests, depth: Depth) -> Self {
        ProbeConfig {
            target: target.into(),
            tests,
            depth,
            bs: None,
            duration: None,
            max_reads: None,
            span: None,
            zones: None,
            chunk: None,
            idle: false,
            drop_caches: false,
            root: PathBuf::from("/"),
            qd: QdConfig::default(),
        }
    }
}

impl ProbeConfig {
    /// The plan as the results pane shows it: "random read + zone sweep, quick".
    pub fn label(&self) -> String {
        let depth = match self.depth {
            Depth::Quick => "quick",
            Depth::Thorough => "thorough",
        };
        format!("{}, {depth}", self.tests.label())
    }
}

/// Cancels a running probe from any thread. Clones share the flag.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Random,
    Sweep,
    QueueDepth,
    SyncWrite,
    Align,
    Size,
    Seek,
}

/// Live progress of a running probe (sent at most every 100 ms per phase).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    pub phase: Phase,
    /// Done fraction of this phase, 0..=1 (the larger of the sample and
    /// time fractions).
    pub fraction: f64,
    pub elapsed_s: f64,
    /// Timed reads so far in this phase.
    pub reads: u64,
    pub p50_ms: Option<f64>,
    pub iops: Option<f64>,
    /// Sweep: the zones finished so far.
    pub zones: Vec<Zone>,
    /// Size of the target in bytes (the sweep chart's x range).
    pub size_bytes: u64,
    /// Queue-depth sweep: the depth being measured.
    pub queue_depth: Option<u32>,
    /// Queue-depth sweep: the depths finished so far.
    pub depths: Vec<QdPoint>,
}

/// Why a test stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Reached its I/O cap (sample count, or every zone read fully).
    Done,
    /// Reached its time cap.
    TimeCap,
    Cancelled,
}

/// How the probe read, so a result can be trusted or questioned later.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Method {
    pub target: String,
    pub target_kind: target::TargetKind,
    pub size_bytes: u64,
    pub tests: Tests,
    pub depth: Depth,
    pub queue_depth: u32,
    pub cache: CacheMode,
    pub cache_note: String,
    pub global_cache_dropped: bool,
    /// `None` where it does not apply (the sync probe's buffered writes).
    pub align_bytes: Option<u64>,
    pub align_source: String,
    /// Regular files: allocated bytes on disk.
    pub allocated_bytes: Option<u64>,
    /// What serves the reads: a block device, none, or one that cannot be named.
    pub backing: layout::Backing,
    /// Regular files: where their bytes are (FIEMAP); `None` for devices
    /// and where FIEMAP is unavailable (said in the notes).
    pub file_layout: Option<layout::FileLayout>,
    /// The idle I/O class was set and the scheduler (bfq) honours it.
    pub impact_limited: bool,
    pub idle_note: Option<String>,
}

impl Method {
    /// The method of a probe of `t` run with `cfg`; `queue_depth` is the
    /// deepest the queue-depth sweep reached, else 1.
    fn new(
        cfg: &ProbeConfig,
        t: &Target,
        qd_res: Option<&QdResult>,
        backing: layout::Backing,
        file_layout: Option<layout::FileLayout>,
        impact_limited: bool,
        idle_note: Option<String>,
    ) -> Self {
        Method {
            target: t.display.clone(),
            target_kind: t.kind,
            size_bytes: t.size,
            tests: cfg.tests,
            depth: cfg.depth,
            queue_depth: qd_res.and_then(|q| q.points.last().map(|p| p.queue_depth)).unwrap_or(1),
            cache: t.cache,
            cache_note: t.cache.describe().to_string(),
            global_cache_dropped: cfg.drop_caches,
            align_bytes: Some(t.align),
            align_source: t.align_source.clone(),
            allocated_bytes: t.allocated_bytes,
            backing,
            file_layout,
            impact_limited,
            idle_note,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Completed,
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbeResult {
    pub iolens_version: &'static str,
    /// Seconds since the Unix epoch when the probe started.
    pub started_unix: u64,
    pub status: Status,
    pub method: Method,
    pub device: Option<target::DeviceHints>,
    pub random: Option<RandomResult>,
    pub sweep: Option<SweepResult>,
    pub queue_depth_sweep: Option<QdResult>,
    pub sync_write: Option<sync::SyncResult>,
    pub alignment: Option<align::AlignResult>,
    pub size_sweep: Option<size::SizeResult>,
    pub seek: Option<seek::SeekResult>,
    pub verdict: Verdict,
    /// Notes that change how far the numbers can be trusted: other I/O on
    /// the device, fallbacks, the idle class.
    pub notes: Vec<String>,
}

/// Messages from a probe running on its own thread.
#[derive(Debug, Clone)]
pub enum ProbeMsg {
    Progress(Progress),
    /// Completed or cancelled (see [`ProbeResult::status`]).
    Finished(Box<ProbeResult>),
    Failed(String),
}

/// Run `cfg` on a new thread; every message goes to `sink` (for the
/// dashboard: a closure that sends into the app's channel). The thread ends
/// after sending `Finished` or `Failed`.
pub fn spawn(
    cfg: ProbeConfig,
    cancel: CancelToken,
    sink: impl Fn(ProbeMsg) + Send + 'static,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("iolens-probe".into()).spawn(move || {
        // `IOLENS_DEBUG_PROBE_STALL=<seconds>`: the probe first sleeps that
        // long, deaf to cancelling, as in a call that does not return
        // (tests of the command's way out).
        if let Some(s) = std::env::var("IOLENS_DEBUG_PROBE_STALL")
            .ok()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
        {
            std::thread::sleep(Duration::from_secs_f64(s.min(600.0)));
        }
        let msg = match run(&cfg, &cancel, &mut |p| sink(ProbeMsg::Progress(p))) {
            Ok(r) => ProbeMsg::Finished(Box::new(r)),
            Err(e) => ProbeMsg::Failed(format!("{e:#}")),
        };
        sink(msg);
    })
}

/// A sink for progress that sends at most every 100 ms.
pub(crate) struct Throttle {
    last: Option<Instant>,
}

impl Throttle {
    pub(crate) fn new() -> Self {
        Throttle { last: None }
    }
    pub(crate) fn due(&mut self) -> bool {
        let now = Instant::now();
        if self
            .last
            .is_some_and(|l| now.duration_since(l) < Duration::from_millis(100))
        {
            return false;
        }
        self.last = Some(now);
        true
    }
}

/// Run the probe described by `cfg`, blocking, until done, capped or
/// cancelled. A cancelled run returns its partial results with
/// [`Status::Cancelled`]; errors (unusable target, failed read) say what
/// was being done.
pub fn run(
    cfg: &ProbeConfig,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<ProbeResult> {
    let started_unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    // Nothing on a FUSE or network mount is touched; "loop0" is /dev/loop0.
    let cfg = &ProbeConfig {
        target: reach::resolve(&cfg.target, &cfg.root)?,
        ..cfg.clone()
    };
    if cfg.tests == Tests::SyncWrite {
        return sync::probe(cfg, started_unix, cancel, on_progress);
    }
    let t = target::open(&cfg.target, &cfg.root)?;
    let bs = block_size(cfg, &t)?;
    let mut notes = Vec::new();

    if cfg.drop_caches {
        drop_global_cache(&cfg.root)?;
        notes.push("the global page cache was dropped before the probe (affects the whole machine)".into());
    }
    let (idle_guard, impact_limited, idle_note) = enter_idle(cfg, &t);
    notes.extend(idle_note.clone());
    if t.cache == CacheMode::BufferedFadvise {
        notes.push(format!("{}: {}", t.display, CacheMode::BufferedFadvise.describe()));
    }

    let backing = layout::backing(&t.file, t.device.is_some());
    let file_layout = read_layout(cfg, &t, &backing, &mut notes);
    let dev_name = t.device.as_ref().map(|d| d.name.clone());
    let snap = || dev_name.as_deref().and_then(|n| check::snapshot(&cfg.root, n));

    let mut random = None;
    if cfg.tests.random() {
        let before = snap();
        let mut r = random::run(&t, cfg, bs, time_cap(cfg, Phase::Random), cancel, on_progress)?;
        if let (Some(n), Some(b), Some(a)) = (&dev_name, before, snap()) {
            r.disk_check = Some(DiskCheck::compare(n, b, a, r.reads_issued, r.reads_issued * bs));
        }
        random = Some(r);
    }
    let mut sweep_res = None;
    if cfg.tests.sweep() && !cancel.is_cancelled() {
        let before = snap();
        let mut s = sweep::run(&t, cfg, time_cap(cfg, Phase::Sweep), cancel, on_progress)?;
        if let (Some(n), Some(b), Some(a)) = (&dev_name, before, snap()) {
            s.disk_check = Some(DiskCheck::compare(n, b, a, s.requests_issued, s.bytes_issued));
        }
        sweep_res = Some(s);
    }
    let zones_note = match (sweep_res.as_mut(), t.kind) {
        (Some(s), target::TargetKind::RegularFile) => Some(place_zones(cfg, &t, s, file_layout.as_ref())),
        _ => None,
    };
    let mut qd_res = None;
    if cfg.tests == Tests::QueueDepth && !cancel.is_cancelled() {
        let before = snap();
        let mut q = qd::run(&t, cfg, bs, time_cap(cfg, Phase::QueueDepth), cancel, on_progress)?;
        if let (Some(n), Some(b), Some(a)) = (&dev_name, before, snap()) {
            q.disk_check = Some(DiskCheck::compare(n, b, a, q.reads_issued, q.reads_issued * bs));
        }
        q.noise
            .extend(q.disk_check.as_ref().and_then(|c| c.disturbance.clone()));
        if !q.noise.is_empty() {
            // The notes end the text report and the results pane.
            notes.push(format!("queue-depth sweep: {}", qd::noisy_text(&q.noise)));
        }
        qd_res = Some(q);
    }
    let alignment = (cfg.tests == Tests::Align)
        .then(|| align::run(&t, cfg, time_cap(cfg, Phase::Align), cancel, on_progress))
        .transpose()?;
    let seek_res = (cfg.tests == Tests::Seek)
        .then(|| seek::run(&t, cfg, time_cap(cfg, Phase::Seek), cancel, on_progress))
        .transpose()?;
    let mut size_res = None;
    if cfg.tests == Tests::Size {
        let before = snap();
        let mut s = size::run(&t, cfg, time_cap(cfg, Phase::Size), cancel, on_progress)?;
        if let (Some(n), Some(b), Some(a)) = (&dev_name, before, snap()) {
            s.disk_check = Some(DiskCheck::compare(n, b, a, s.reads_issued, s.bytes_issued));
        }
        size_res = Some(s);
    }

    let runs = evidence::Runs {
        random: random.as_ref(),
        sweep: sweep_res.as_ref(),
        qd: qd_res.as_ref(),
        size: size_res.as_ref(),
    };
    let evidence = evidence::gather(&t, bs, &runs, &backing, file_layout.as_ref(), zones_note, &mut notes);
    let verdict = match (&alignment, &seek_res) {
        (Some(a), _) => align::verdict(a),
        (_, Some(s)) => seek::verdict(s),
        _ => verdict::judge(&evidence),
    };

    Ok(ProbeResult {
        iolens_version: env!("CARGO_PKG_VERSION"),
        started_unix,
        status: if cancel.is_cancelled() {
            Status::Cancelled
        } else {
            Status::Completed
        },
        method: Method::new(
            cfg,
            &t,
            qd_res.as_ref(),
            backing,
            file_layout,
            impact_limited && idle_guard.is_some(),
            idle_note,
        ),
        device: t.device.clone(),
        random,
        sweep: sweep_res,
        queue_depth_sweep: qd_res,
        sync_write: None,
        alignment,
        size_sweep: size_res,
        seek: seek_res,
        verdict,
        notes,
    })
}
