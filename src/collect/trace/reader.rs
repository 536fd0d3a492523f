//! The live tracer: owns the tracefs instance, reads every CPU's
//! `trace_pipe_raw` without blocking, decodes and merges the events, and
//! counts what was lost. A sample reads the buffers itself when it closes
//! its interval ([`Handle::flush`]); between samples a thread of its own
//! ([`spawn`]) sleeps in poll(2) until a CPU's buffer reaches the
//! instance's watermark (`buffer_percent`), so a burst is read before the
//! buffer fills whatever the sample interval, and an idle tracer wakes no
//! thread at all. On a kernel without `buffer_percent` the thread reads
//! every [`POLL`] instead ([`POLL_IDLE`] while reads find nothing).

use std::fs::File;
use std::io::{self, Read};

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use super::block::BlockEvent;
use super::budget::Mark;
use super::dirty::PauseEvent;
use super::file::FileEvent;
use super::instance::{CpuStats, Instance, Mount, remove_stale};
use super::merge::Merger;
use super::sampling::{Cost, Sampling};
use super::{DecodeStats, Decoder, Side, read_small};
use crate::collect::taskstats::ExitTgids;
use crate::collect::{monotonic_ns, thread_cpu_ns};
use crate::sys::wake::Waker;

mod tasks;
pub use tasks::{Tasks, parse_status, saved_tgids, task_info};

/// How often the buffers are read without a watermark.
pub const POLL: Duration = Duration::from_millis(50);
/// How often they are read while reads find nothing: the wait doubles from
/// [`POLL`] up to this, and is back to [`POLL`] at the first event. At the
/// highest rate measured here (~195,000 events a second per CPU on a loop
/// device) 100 ms of a burst fill about three quarters of a 2 MiB buffer.
pub const POLL_IDLE: Duration = Duration::from_millis(100);
/// With a watermark, the longest the thread sleeps when no buffer fills
/// (samples read the buffers themselves).
const WATERMARK_WAIT: Duration = Duration::from_secs(5);
/// The per-CPU `stats` files are read at most this often.
const STATS_EVERY: Duration = Duration::from_secs(1);

/// Counts since tracing started, for the lost/unmatched report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub decode: DecodeStats,
    /// Events the kernel lost (per-CPU `stats`: overrun + dropped).
    pub lost: u64,
    /// Reads of `trace_pipe_raw` that failed (not counting "empty").
    pub read_errors: u64,
}

struct CpuPipe {
    cpu: usize,
    file: File,
    base: CpuStats,
}

/// A running tracer. Dropping it closes the pipes, removes the instance and
/// unmounts tracefs if iolens mounted it.
pub struct Tracer {
    // Field order is drop order: pipes closed before the instance is
    // removed, the instance removed before tracefs is unmounted.
    pipes: Vec<CpuPipe>,
    pub decoder: Decoder,
    merger: Merger,
    buf: Vec<u8>,
    batch: Vec<BlockEvent>,
    /// Page-cache and throttle events of the last poll, each in time
    /// order (not held back: their models pair events of one task, which
    /// one CPU orders).
    side: Side,
    /// The tasks' processes, and what looking them up cost.
    pub tasks: Tasks,
    /// Where the tgid of a thread already gone is looked up first.
    pub exits: Option<ExitTgids>,
    stats_read_ns: u64,
    pub counters: Counters,
    /// The CPU budget, when one holds the tracer ([`Tracer::hold_to`]).
    pub sampling: Option<Sampling>,
    pub instance: Instance,
    pub mount: Mount,
}

/// The CPUs of a `per_cpu` directory, in order.
pub(super) fn cpus(dir: &std::path::Path) -> Vec<usize> {
    let mut v: Vec<usize> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.file_name().to_str()?.strip_prefix("cpu")?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

/// How many times [`Tracer::start`] tries when tracefs went away under it.
pub const START_TRIES: u32 = 5;

impl Tracer {
    /// Start tracing, or say why it cannot be done. iolens processes
    /// starting at once race over tracefs: when another one unmounts the
    /// tracefs it mounted between this one's finding it and creating its
    /// instance (it saw no instance of this one yet), the start is tried
    /// again, up to [`START_TRIES`] times.
    pub fn start() -> Result<Tracer, String> {
        Self::start_with(true)
    }

    /// [`Tracer::start`], with the page-cache events only where
    /// `file_events` says so.
    pub fn start_with(file_events: bool) -> Result<Tracer, String> {
        if !crate::sys::is_root() {
            return Err("block tracing needs root".into());
        }
        let mut tries = 1;
        loop {
            match Self::start_once(file_events) {
                Err(_) if tries < START_TRIES && super::instance::find_tracefs().is_none() => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                r => return r,
            }
        }
    }

    fn start_once(file_events: bool) -> Result<Tracer, String> {
        let mount = Mount::get()?;
        for r in remove_stale(&mount.dir) {
            if let Err(e) = r {
                return Err(format!("a stale iolens instance could not be removed: {e}"));
            }
        }
        let ncpu = cpus(&mount.dir.join("per_cpu")).len();
        let instance = Instance::create(&mount.dir, ncpu, file_events)?;
        let decoder = Decoder::load(&instance.events_dir())?;
        let mut pipes = Vec::new();
        for cpu in cpus(&instance.dir.join("per_cpu")) {
            let path = instance.cpu_file(cpu, "trace_pipe_raw");
            let file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(&path)
                .map_err(|e| format!("opening {}: {e}", path.display()))?;
            pipes.push(CpuPipe {
                cpu,
                file,
                base: CpuStats::default(),
            });
        }
        let page = decoder.layout.page.page_size();
        Ok(Tracer {
            pipes,
            decoder,
            merger: Merger::default(),
            buf: vec![0; page],
            batch: Vec::new(),
            side: Side::default(),
            tasks: Default::default(),
            exits: None,
            stats_read_ns: 0,
            counters: Counters::default(),
            sampling: None,
            instance,
            mount,
        })
    }

    /// The page-cache events of the last poll (cleared by the next).
    pub fn take_files(&mut self, out: &mut Vec<FileEvent>) {
        out.append(&mut self.side.files);
    }

    /// The throttle events of the last poll (cleared by the next).
    pub fn take_pauses(&mut self, out: &mut Vec<PauseEvent>) {
        out.append(&mut self.side.pauses);
    }

    pub fn instance_dir(&self) -> PathBuf {
        self.instance.dir.clone()
    }

    /// Pages one CPU may yield per poll: a full buffer and a little more,
    /// so one busy CPU cannot keep the reader looping forever.
    fn max_pages(&self) -> usize {
        (self.instance.buffer_kb as usize * 1024 / self.buf.len().max(1)) + 4
    }

    /// Read what every CPU has, without waiting; events old enough to be in
    /// order are appended to `out`, oldest first. Returns the pages read.
    pub fn poll(&mut self, out: &mut Vec<BlockEvent>) -> usize {
        let start = monotonic_ns();
        let max = self.max_pages();
        let mut pages = 0;
        self.side.files.clear();
        self.side.pauses.clear();
        for p in &mut self.pipes {
            for _ in 0..max {
                match p.file.read(&mut self.buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        pages += 1;
                        self.decoder.decode_page_into(
                            &self.buf[..n],
                            &mut self.batch,
                            &mut self.side,
                            &mut self.counters.decode,
                        )
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        self.counters.read_errors += 1;
                        break;
                    }
                }
            }
        }
        let dir = &self.mount.dir;
        self.tasks
            .resolve(&mut self.batch, &mut self.side, self.exits.as_ref(), dir);
        self.side.files.sort_by_key(|e| e.ts);
        self.side.pauses.sort_by_key(|e| e.ts);
        self.merger.push(&mut self.batch, start, out);
        if start.saturating_sub(self.stats_read_ns) >= STATS_EVERY.as_nanos() as u64 {
            self.read_stats();
        }
        pages
    }

    /// Descriptors to poll(2) for the watermark, apart from the reads
    /// (the same open pipes): `None` without a watermark.
    fn watermark_fds(&self) -> io::Result<Option<Vec<OwnedFd>>> {
        if !self.instance.watermark {
            return Ok(None);
        }
        self.pipes
            .iter()
            .map(|p| p.file.as_fd().try_clone_to_owned())
            .collect::<io::Result<_>>()
            .map(Some)
    }

    /// Re-read the per-CPU `stats` files into `counters.lost`.
    pub fn read_stats(&mut self) {
        self.stats_read_ns = monotonic_ns();
        let mut lost = 0;
        for p in &mut self.pipes {
            let path = self.instance.cpu_file(p.cpu, "stats");
            if let Ok(t) = read_small(&path) {
                let s = CpuStats::parse(&t);
                lost += s.lost().saturating_sub(p.base.lost());
            }
        }
        self.counters.lost = lost;
    }
}

/// What the tracer thread hands over after each poll.
pub trait Sink: Send + 'static {
    fn events(&mut self, events: &[BlockEvent], counters: &Counters);
    /// Page-cache events, in time order (after `events` of the same poll).
    fn files(&mut self, _events: &[FileEvent]) {}
    /// Passes through the dirty throttle, in time order (after `files`).
    fn pauses(&mut self, _events: &[PauseEvent]) {}
    /// Window edges of the CPU budget (after the events of the same poll).
    fn marks(&mut self, _marks: &[Mark]) {}
    /// Requests started in the last window not complete yet.
    fn pending(&mut self) -> Option<usize> {
        None
    }
}

impl<F: FnMut(&[BlockEvent], &Counters) + Send + 'static> Sink for F {
    fn events(&mut self, events: &[BlockEvent], counters: &Counters) {
        self(events, counters)
    }
}

/// The tracer and where its events go: read by the thread when a buffer
/// fills to the watermark, and by [`Handle::flush`] in the caller's thread
/// (no wake-up of another thread per sample).
struct Running {
    tracer: Tracer,
    sink: Box<dyn Sink>,
    out: Vec<BlockEvent>,
    files: Vec<FileEvent>,
    pauses: Vec<PauseEvent>,
    marks: Vec<Mark>,
}

impl Running {
    /// Read the buffers and hand what is in order to the sink, then step
    /// the budget; returns the pages read. Its CPU is counted from `since`
    /// (the calling thread's CPU clock), or from here: the tracer's own
    /// thread counts from the end of its last poll, so that its wake-ups
    /// and waits are charged too.
    fn poll(&mut self, since: Option<u64>) -> usize {
        let t0 = self
            .tracer
            .sampling
            .is_some()
            .then(|| since.unwrap_or_else(thread_cpu_ns));
        let lookups = self.tracer.tasks.lookup_ns;
        let pages = self.tracer.poll(&mut self.out);
        self.sink.events(&self.out, &self.tracer.counters);
        self.out.clear();
        self.deliver_files();
        if let Some(t0) = t0 {
            let pending = self.sink.pending();
            if let Some(s) = &mut self.tracer.sampling {
                s.step(monotonic_ns(), pending);
                s.take_marks(&mut self.marks);
                let lookups = self.tracer.tasks.lookup_ns.saturating_sub(lookups);
                s.charge(thread_cpu_ns().saturating_sub(t0), lookups);
            }
            if !self.marks.is_empty() {
                self.sink.marks(&self.marks);
                self.marks.clear();
            }
        }
        pages
    }

    /// When the budget's next edge is due.
    fn wake(&self) -> Option<u64> {
        self.tracer.sampling.as_ref().and_then(|s| s.wake)
    }

    fn deliver_files(&mut self) {
        self.tracer.take_files(&mut self.files);
        if !self.files.is_empty() {
            self.sink.files(&self.files);
            self.files.clear();
        }
        self.tracer.take_pauses(&mut self.pauses);
        if !self.pauses.is_empty() {
            self.sink.pauses(&self.pauses);
            self.pauses.clear();
        }
    }
}

struct Shared {
    /// `None` once the thread has stopped (the instance is removed).
    running: Mutex<Option<Running>>,
    stop: AtomicBool,
    /// Ends the thread's sleep when it is to stop, or when a read from
    /// another thread moved the budget's next edge before its end.
    waker: Waker,
    /// When the thread's sleep ends (monotonic ns).
    sleeps_until: AtomicU64,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Option<Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Read the buffers from another thread than the tracer's (a sample's
    /// flush). Its budget step may set an edge (a window to end: the budget
    /// bound) before the tracer thread wakes: that thread is woken then,
    /// else the edge would wait for its next read (up to seconds).
    fn poll_outside(&self) {
        let next = self.lock().as_mut().and_then(|r| {
            r.poll(None);
            r.wake()
        });
        if next.is_some_and(|w| w < self.sleeps_until.load(Ordering::Relaxed)) {
            self.waker.wake();
        }
    }
}

/// A tracer whose buffers a thread of its own reads between samples.
/// Dropping the handle stops the thread and waits for it, which removes
/// the instance.
pub struct Handle {
    shared: Arc<Shared>,
    join: Option<JoinHandle<()>>,
    pub instance_dir: PathBuf,
    pub events: Vec<String>,
    pub buffer_kb: u64,
}

/// Start the tracer, feeding `sink` at every [`Handle::flush`] and, from
/// a thread of its own, whenever a CPU's buffer fills to the watermark
/// (every [`POLL`] without one, [`POLL_IDLE`] while reads find nothing).
pub fn spawn(tracer: Tracer, sink: impl Sink) -> io::Result<Handle> {
    let instance_dir = tracer.instance_dir();
    let events = tracer.instance.enabled.clone();
    let buffer_kb = tracer.instance.buffer_kb;
    let watermark = tracer.watermark_fds()?;
    let mut wake = tracer.sampling.as_ref().and_then(|s| s.wake);
    let shared = Arc::new(Shared {
        running: Mutex::new(Some(Running {
            tracer,
            sink: Box::new(sink),
            out: Vec::new(),
            files: Vec::new(),
            pauses: Vec::new(),
            marks: Vec::new(),
        })),
        stop: AtomicBool::new(false),
        waker: Waker::new()?,
        sleeps_until: AtomicU64::new(u64::MAX),
    });
    let sh = shared.clone();
    let join = std::thread::Builder::new().name("iolens-trace".into()).spawn(move || {
        let mut wait = POLL;
        let mut since = None;
        while !sh.stop.load(Ordering::Relaxed) {
            let (fds, timeout): (Vec<_>, _) = match &watermark {
                Some(fds) => (fds.iter().map(|f| f.as_fd()).collect(), WATERMARK_WAIT),
                None => (Vec::new(), wait),
            };
            // The budget's next window edge comes first.
            let now = monotonic_ns();
            let timeout = wake.map_or(timeout, |w| timeout.min(Duration::from_nanos(w.saturating_sub(now))));
            let until = now.saturating_add(u64::try_from(timeout.as_nanos()).unwrap_or(u64::MAX));
            sh.sleeps_until.store(until, Ordering::Relaxed);
            if sh.waker.wait(&fds, Some(timeout)).is_err() {
                std::thread::sleep(POLL);
            }
            if sh.stop.load(Ordering::Relaxed) {
                break;
            }
            let (pages, next, budget) = sh.lock().as_mut().map_or((0, None, false), |r| {
                (r.poll(since), r.wake(), r.tracer.sampling.is_some())
            });
            since = budget.then(thread_cpu_ns);
            wake = next;
            wait = if pages == 0 { (wait * 2).min(POLL_IDLE) } else { POLL };
        }
        // The pipes are closed before the instance is removed.
        drop(watermark);
        let running = sh.lock().take();
        if let Some(mut r) = running {
            r.tracer.read_stats();
            r.tracer.poll(&mut r.out);
            r.tracer.merger.flush(&mut r.out);
            r.sink.events(&r.out, &r.tracer.counters);
            r.deliver_files();
            // `r` dropped here: instance removed, tracefs unmounted.
        }
    })?;
    Ok(Handle {
        shared,
        join: Some(join),
        instance_dir,
        events,
        buffer_kb,
    })
}

impl Handle {
    /// A function that reads the buffers now and hands the events to the
    /// sink, as [`Handle::flush`], callable from another thread.
    pub fn flusher(&self) -> Box<dyn Fn() + Send + Sync> {
        let shared = self.shared.clone();
        Box::new(move || shared.poll_outside())
    }

    /// Read the buffers now and hand what was read to the sink: an
    /// interval taken after this ends at the call, less the merge's
    /// hold-back of 2 ms, instead of at the last read.
    pub fn flush(&self) {
        self.shared.poll_outside();
    }

    /// The tracer's CPU since the last call, as its budget counts it;
    /// `None` when nothing holds the tracer (no budget, no fixed duty: the
    /// cost is measured only to hold it).
    /// Takes the tracer's lock, which its thread holds while it feeds the
    /// sink: never call it holding a lock the sink takes.
    pub fn take_cost(&self) -> Option<Cost> {
        let mut r = self.shared.lock();
        let s = r.as_mut()?.tracer.sampling.as_mut()?;
        Some(s.take_cost(monotonic_ns()))
    }

    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.waker.wake();
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.stop();
    }
}
