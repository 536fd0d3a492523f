//! Sync-write latency: the one probe that writes, and only to its own file.
//!
//! In the directory the user names, the probe creates an unnamed file
//! (`O_TMPFILE`: nothing is left behind even after SIGKILL); where the
//! filesystem does not support that, a new file with `O_CREAT|O_EXCL` and a
//! random name, unlinked right after it was opened (and again on drop if
//! that failed), so it exists under a name for one system call. Block
//! devices and existing files are refused: the probe never writes to
//! anything it did not create.
//!
//! For each size — 4 KiB, 16 KiB and 2,300 bytes (an etcd WAL entry) — it
//! appends with `pwrite` and calls `fdatasync` after each write, like
//! `fio --ioengine=sync --fdatasync=1`, timing the write and the
//! fdatasync separately, until the count cap or the time cap. The file is
//! at most [`MAX_FILE`] bytes (writes wrap to offset 0 after that). Each
//! size gets its own new file. fdatasync p99 is compared with the 10 ms
//! that etcd and databases ask for.

use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileExt, FileTypeExt, MetadataExt};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::fs::{AtFlags, Mode, OFlags};
use serde::Serialize;

use super::layout::Backing;
use super::random::Rng;
use super::stats::{Bucket, Histogram, LatencySummary};
use super::target::{CacheMode, DeviceHints, TargetKind};
use super::verdict::{self, Class, Verdict};
use super::view::lat;
use super::{CancelToken, Method, Phase, ProbeConfig, ProbeResult, Progress, Status, Stop, Tests, Throttle};
use crate::collect::Reader;
use crate::format;

/// Write sizes, in the order they run.
pub const SIZES: [u64; 3] = [4096, 16384, 2300];
/// fdatasync p99 that etcd and databases ask for.
pub const TARGET_MS: f64 = 10.0;
/// Largest size of the probe's file; writes wrap to offset 0 after it.
pub const MAX_FILE: u64 = 64 << 20;

/// How the probe's own file was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FileMethod {
    /// `O_TMPFILE`: never had a name.
    Tmpfile,
    /// `O_CREAT|O_EXCL`, unlinked right after opening.
    CreatedAndUnlinked,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncSize {
    pub bytes: u64,
    pub writes: u64,
    pub duration_s: f64,
    pub write: LatencySummary,
    pub fdatasync: LatencySummary,
    /// fdatasync p99 ≤ the target; `None` when p99 is n/a (too few writes).
    pub meets_target: Option<bool>,
    pub stopped: Stop,
    pub write_histogram: Vec<Bucket>,
    pub fdatasync_histogram: Vec<Bucket>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyncResult {
    pub dir: String,
    pub file: FileMethod,
    pub sizes: Vec<SyncSize>,
    pub target_ms: f64,
    pub max_writes_per_size: u64,
    pub time_cap_per_size_s: f64,
    pub max_file_bytes: u64,
    pub bytes_written: u64,
    /// The disk under DIR and its `queue/write_cache` ("write back": flushes
    /// reach the device; "write through": it never sees one).
    pub disk: Option<String>,
    pub write_cache: Option<String>,
    /// `queue/fua`: the device takes forced-unit-access writes.
    pub fua: Option<bool>,
}

/// The probe's own file: closed (and, if it still has a name, unlinked)
/// on drop.
struct OwnFile {
    file: File,
    dir: OwnedFd,
    name: Option<String>,
}

impl Drop for OwnFile {
    fn drop(&mut self) {
        if let Some(n) = self.name.take() {
            let _ = rustix::fs::unlinkat(&self.dir, n.as_str(), AtFlags::empty());
        }
    }
}

fn create(dir: &OwnedFd, shown: &str) -> anyhow::Result<(OwnFile, FileMethod)> {
    let mode = Mode::RUSR | Mode::WUSR;
    match rustix::fs::openat(dir, ".", OFlags::WRONLY | OFlags::CLOEXEC | OFlags::TMPFILE, mode) {
        Ok(fd) => {
            return Ok((
                OwnFile {
                    file: File::from(fd),
                    dir: rustix::io::fcntl_dupfd_cloexec(dir, 0)
                        .map_err(|e| anyhow::anyhow!("duplicating the descriptor of {shown}: {e}"))?,
                    name: None,
                },
                FileMethod::Tmpfile,
            ));
        }
        // Filesystems without O_TMPFILE say EOPNOTSUPP (older kernels
        // EISDIR or EINVAL); anything else is a real error.
        Err(e)
            if e == rustix::io::Errno::OPNOTSUPP || e == rustix::io::Errno::ISDIR || e == rustix::io::Errno::INVAL => {}
        Err(e) => anyhow::bail!("creating a temporary file in {shown}: {e}"),
    }
    Ok((create_named(dir, shown)?, FileMethod::CreatedAndUnlinked))
}

/// The fallback where O_TMPFILE is unsupported: a new file (O_EXCL: never
/// one that exists) with a random name, unlinked at once.
fn create_named(dir: &OwnedFd, shown: &str) -> anyhow::Result<OwnFile> {
    let mode = Mode::RUSR | Mode::WUSR;
    let mut rng = Rng::seeded();
    let name = format!(".iolens-sync-{}-{:016x}", std::process::id(), rng.next_u64());
    let flags = OFlags::WRONLY | OFlags::CLOEXEC | OFlags::CREATE | OFlags::EXCL;
    let fd = rustix::fs::openat(dir, name.as_str(), flags, mode)
        .map_err(|e| anyhow::anyhow!("creating {shown}/{name}: {e}"))?;
    let mut own = OwnFile {
        file: File::from(fd),
        dir: rustix::io::fcntl_dupfd_cloexec(dir, 0)
            .map_err(|e| anyhow::anyhow!("duplicating the descriptor of {shown}: {e}"))?,
        name: Some(name),
    };
    if let Some(n) = &own.name
        && rustix::fs::unlinkat(&own.dir, n.as_str(), AtFlags::empty()).is_ok()
    {
        own.name = None;
    }
    Ok(own)
}

/// Refuse anything but an existing directory.
pub fn check_dir(path: &Path) -> anyhow::Result<std::fs::Metadata> {
    let shown = super::target::describe_path(path);
    let meta = std::fs::metadata(path).map_err(|e| anyhow::anyhow!("cannot use {shown}: {e}"))?;
    let ft = meta.file_type();
    anyhow::ensure!(
        !ft.is_block_device(),
        "{shown} is a block device: the sync probe writes, so it only writes its own temporary file inside a directory you name"
    );
    anyhow::ensure!(
        ft.is_dir(),
        "{shown} exists and is not a directory: the sync probe never writes to an existing file; name a directory and it writes its own temporary file there"
    );
    Ok(meta)
}

fn sysfs_text(root: &Path, disk: &str, what: &str) -> Option<String> {
    let mut r = Reader::new(root);
    let b = r.read(format!("/sys/block/{disk}/queue/{what}")).ok()?;
    let s = String::from_utf8_lossy(b).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Run the probe in `cfg.target` (a directory). Returns the result and the
/// device hints of the filesystem under it.
pub fn run(
    cfg: &ProbeConfig,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<(SyncResult, Option<super::target::DeviceHints>)> {
    let shown = super::target::describe_path(&cfg.target);
    let meta = check_dir(&cfg.target)?;
    let dir = rustix::fs::open(
        &cfg.target,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| anyhow::anyhow!("opening {shown}: {e}"))?;
    let hints = super::target::device_hints(&cfg.root, libc::major(meta.dev()), libc::minor(meta.dev()));
    let disk = hints.as_ref().map(|h| h.disk.clone());
    let write_cache = disk.as_deref().and_then(|d| sysfs_text(&cfg.root, d, "write_cache"));
    let fua = disk
        .as_deref()
        .and_then(|d| sysfs_text(&cfg.root, d, "fua"))
        .map(|s| s == "1");
    // p99 needs 1,000 samples, p99.9 10,000 (10 beyond the percentile).
    let max_writes = cfg.max_reads.unwrap_or(match cfg.depth {
        super::Depth::Quick => 1000,
        super::Depth::Thorough => 10_000,
    });
    let cap = super::time_cap(cfg, Phase::SyncWrite);
    let mut rng = Rng::seeded();
    let mut data = vec![0u8; *SIZES.iter().max().unwrap_or(&4096) as usize];
    for chunk in data.chunks_mut(8) {
        let v = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    let mut sizes = Vec::new();
    let mut method = FileMethod::Tmpfile;
    let mut written = 0u64;
    let began = Instant::now();
    for (i, &bytes) in SIZES.iter().enumerate() {
        if cancel.is_cancelled() {
            break;
        }
        let (own, m) = create(&dir, &shown)?;
        method = m;
        let buf = &data[..bytes as usize];
        let (mut wh, mut fh) = (Histogram::new(), Histogram::new());
        let mut off = 0u64;
        let size_began = Instant::now();
        let mut stopped = Stop::Done;
        let mut throttle = Throttle::new();
        while wh.count() < max_writes {
            if cancel.is_cancelled() {
                stopped = Stop::Cancelled;
                break;
            }
            let elapsed = size_began.elapsed();
            if elapsed >= cap {
                stopped = Stop::TimeCap;
                break;
            }
            if off + bytes > MAX_FILE {
                off = 0;
            }
            let t0 = Instant::now();
            own.file
                .write_all_at(buf, off)
                .map_err(|e| anyhow::anyhow!("writing {bytes} B to the probe's file in {shown}: {e}"))?;
            let t1 = Instant::now();
            rustix::fs::fdatasync(&own.file)
                .map_err(|e| anyhow::anyhow!("fdatasync of the probe's file in {shown}: {e}"))?;
            let t2 = Instant::now();
            let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
            wh.record(ns(t1 - t0));
            fh.record(ns(t2 - t1));
            off += bytes;
            written += bytes;
            if throttle.due() {
                let n = wh.count();
                let secs = elapsed.as_secs_f64();
                on_progress(Progress {
                    phase: Phase::SyncWrite,
                    fraction: ((i as f64 + (n as f64 / max_writes as f64).max(secs / cap.as_secs_f64()).min(1.0))
                        / SIZES.len() as f64)
                        .min(1.0),
                    elapsed_s: began.elapsed().as_secs_f64(),
                    reads: n,
                    p50_ms: fh.quantile(0.5).map(|v| v / 1e6),
                    iops: (secs > 0.0).then(|| n as f64 / secs),
                    zones: Vec::new(),
                    size_bytes: bytes,
                    queue_depth: None,
                    depths: Vec::new(),
                });
            }
        }
        drop(own);
        let fdatasync = LatencySummary::of(&fh);
        sizes.push(SyncSize {
            bytes,
            writes: wh.count(),
            duration_s: size_began.elapsed().as_secs_f64(),
            write: LatencySummary::of(&wh),
            meets_target: fdatasync.p99_ms.map(|p| p <= TARGET_MS),
            fdatasync,
            stopped,
            write_histogram: wh.buckets(),
            fdatasync_histogram: fh.buckets(),
        });
        if stopped == Stop::Cancelled {
            break;
        }
    }
    Ok((
        SyncResult {
            dir: shown,
            file: method,
            sizes,
            target_ms: TARGET_MS,
            max_writes_per_size: max_writes,
            time_cap_per_size_s: cap.as_secs_f64(),
            max_file_bytes: MAX_FILE,
            bytes_written: written,
            disk,
            write_cache,
            fua,
        },
        hints,
    ))
}

/// The verdict on fdatasync latency, with the device facts that explain it.
pub fn judge(r: &SyncResult, backing: &Backing, hints: Option<&DeviceHints>) -> Verdict {
    let mut evidence = Vec::new();
    for s in &r.sizes {
        let f = &s.fdatasync;
        evidence.push(format!(
            "{} B: fdatasync p50 {}  p99 {}  p99.9 {} (write p50 {}) over {} writes: {}",
            s.bytes,
            lat(f.p50_ms),
            lat(f.p99_ms),
            lat(f.p99_9_ms),
            lat(s.write.p50_ms),
            s.writes,
            match s.meets_target {
                Some(true) => format!("meets the {} ms target", format::ms(r.target_ms)),
                Some(false) => format!("MISSES the {} ms target", format::ms(r.target_ms)),
                None => "too few writes for a p99".into(),
            }
        ));
    }
    match r.write_cache.as_deref() {
        Some("write back") => evidence.push(
            "write_cache: write back — each fdatasync ends in a cache flush the device must carry out".into(),
        ),
        Some("write through") => evidence.push(
            "write_cache: write through — the kernel sends no flush, fdatasync waits only for the write itself (right for battery-backed caches; a disk that hides a volatile cache loses data on power failure)".into(),
        ),
        Some(other) => evidence.push(format!("write_cache: {other}")),
        None => {}
    }
    if let Some(fua) = r.fua {
        evidence.push(format!(
            "FUA: {}",
            if fua {
                "supported (journal commits can skip a full flush)"
            } else {
                "not supported"
            }
        ));
    }
    if let Some(why) = hints.and_then(verdict::virtual_reason) {
        evidence.push(format!(
            "{why}: a flush ends at the host, whose own caching decides what is durable"
        ));
    }
    let class = match backing {
        Backing::NoDevice { filesystem } => {
            evidence.insert(
                0,
                format!(
                    "{filesystem} has no block device under it: fdatasync reaches no disk, nothing is made durable"
                ),
            );
            Class::NoDevice
        }
        _ if r.sizes.iter().any(|s| s.meets_target == Some(false)) => Class::SyncSlow,
        _ if !r.sizes.is_empty() && r.sizes.iter().all(|s| s.meets_target == Some(true)) => Class::SyncFast,
        _ => Class::Inconclusive,
    };
    Verdict {
        class,
        evidence,
        impossible: Vec::new(),
    }
}

/// Run the sync probe and wrap it as a [`ProbeResult`] with its method.
pub fn probe(
    cfg: &ProbeConfig,
    started_unix: u64,
    cancel: &CancelToken,
    on_progress: &mut dyn FnMut(Progress),
) -> anyhow::Result<ProbeResult> {
    let (r, hints) = run(cfg, cancel, on_progress)?;
    let dir = File::open(&cfg.target).map_err(|e| anyhow::anyhow!("opening {}: {e}", r.dir))?;
    let backing = super::layout::backing(&dir, hints.is_some());
    let verdict = judge(&r, &backing, hints.as_ref());
    let notes = vec![format!(
        "the probe wrote only its own file in {} ({}), {} in all: at most {} writes and {:.0} s per size, the file at most {}",
        r.dir,
        match r.file {
            FileMethod::Tmpfile => "O_TMPFILE, never named",
            FileMethod::CreatedAndUnlinked => "O_CREAT|O_EXCL, unlinked right after it was opened",
        },
        format::decimal(r.bytes_written as f64),
        r.max_writes_per_size,
        r.time_cap_per_size_s,
        format::binary(r.max_file_bytes as f64)
    )];
    let cancelled = cancel.is_cancelled();
    Ok(ProbeResult {
        iolens_version: env!("CARGO_PKG_VERSION"),
        started_unix,
        status: if cancelled {
            Status::Cancelled
        } else {
            Status::Completed
        },
        method: Method {
            target: r.dir.clone(),
            target_kind: TargetKind::Directory,
            size_bytes: r.bytes_written,
            tests: Tests::SyncWrite,
            depth: cfg.depth,
            queue_depth: 1,
            cache: CacheMode::SyncWrites,
            cache_note: CacheMode::SyncWrites.describe().into(),
            global_cache_dropped: false,
            align_bytes: None,
            align_source: "not applicable: buffered writes".into(),
            allocated_bytes: None,
            backing,
            file_layout: None,
            impact_limited: false,
            idle_note: None,
        },
        device: hints,
        random: None,
        sweep: None,
        queue_depth_sweep: None,
        sync_write: Some(r),
        alignment: None,
        size_sweep: None,
        seek: None,
        verdict,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open_dir(p: &Path) -> OwnedFd {
        rustix::fs::open(p, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap()
    }

    fn entries(p: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(p)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn both_ways_of_making_the_file_leave_nothing_behind() {
        let d = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        std::fs::write(d.path().join("keep.txt"), "mine").unwrap();
        let dir = open_dir(d.path());
        let (own, method) = create(&dir, "d").unwrap();
        own.file.write_all_at(b"x", 0).unwrap();
        eprintln!("{method:?}");
        assert_eq!(entries(d.path()), ["keep.txt"], "{method:?}");
        drop(own);
        // The fallback: named for one call, then unlinked.
        let own = create_named(&dir, "d").unwrap();
        assert_eq!(own.name, None, "unlinked right after it was opened");
        own.file.write_all_at(b"abc", 0).unwrap();
        assert_eq!(own.file.metadata().unwrap().nlink(), 0);
        assert_eq!(entries(d.path()), ["keep.txt"]);
        drop(own);
        assert_eq!(std::fs::read_to_string(d.path().join("keep.txt")).unwrap(), "mine");
    }

    #[test]
    fn refuses_files_block_devices_and_missing_paths() {
        let d = tempfile::tempdir_in(std::env::temp_dir()).unwrap();
        let f = d.path().join("data");
        std::fs::write(&f, "x").unwrap();
        let e = check_dir(&f).unwrap_err().to_string();
        assert!(e.contains("never writes to an existing file"), "{e}");
        assert!(check_dir(&d.path().join("missing")).is_err());
        assert!(check_dir(d.path()).is_ok());
        let block = std::fs::read_dir("/dev").ok().and_then(|it| {
            it.filter_map(Result::ok)
                .find(|e| e.file_type().is_ok_and(|t| t.is_block_device()))
        });
        match block {
            Some(b) => {
                let e = check_dir(&b.path()).unwrap_err().to_string();
                assert!(e.contains("is a block device"), "{e}");
            }
            None => eprintln!("skipped (block device part): no block device node in /dev"),
        }
    }

    fn size(bytes: u64, p99_ms: Option<f64>) -> SyncSize {
        SyncSize {
            bytes,
            writes: 1000,
            duration_s: 5.0,
            write: LatencySummary::default(),
            fdatasync: LatencySummary {
                count: 1000,
                p50_ms: Some(2.0),
                p99_ms,
                ..Default::default()
            },
            meets_target: p99_ms.map(|p| p <= TARGET_MS),
            stopped: Stop::Done,
            write_histogram: vec![],
            fdatasync_histogram: vec![],
        }
    }

    fn result(sizes: Vec<SyncSize>, cache: &str) -> SyncResult {
        SyncResult {
            dir: "/srv".into(),
            file: FileMethod::Tmpfile,
            sizes,
            target_ms: TARGET_MS,
            max_writes_per_size: 1000,
            time_cap_per_size_s: 15.0,
            max_file_bytes: MAX_FILE,
            bytes_written: 1,
            disk: Some("sda".into()),
            write_cache: Some(cache.into()),
            fua: Some(true),
        }
    }

    #[test]
    fn verdict_against_the_10_ms_target() {
        let fast = result(vec![size(4096, Some(3.0)), size(2300, Some(9.9))], "write back");
        let v = judge(&fast, &Backing::Device, None);
        assert_eq!(v.class, Class::SyncFast);
        assert!(
            v.evidence[1].contains("p99 9.90 ms") && v.evidence[1].ends_with("meets the 10.0 ms target"),
            "{v:?}"
        );
        assert!(v.evidence.iter().any(|e| e.starts_with("write_cache: write back")));
        let slow = result(vec![size(4096, Some(3.0)), size(16384, Some(25.0))], "write through");
        let v = judge(&slow, &Backing::Device, None);
        assert_eq!(v.class, Class::SyncSlow);
        assert!(v.evidence[1].ends_with("MISSES the 10.0 ms target"), "{v:?}");
        assert!(v.evidence.iter().any(|e| e.contains("the kernel sends no flush")));
        let few = result(vec![size(4096, None)], "write back");
        assert_eq!(judge(&few, &Backing::Device, None).class, Class::Inconclusive);
        let tmpfs = Backing::NoDevice {
            filesystem: "tmpfs".into(),
        };
        let v = judge(&fast, &tmpfs, None);
        assert_eq!(v.class, Class::NoDevice);
        assert!(v.evidence[0].contains("nothing is made durable"), "{v:?}");
    }
}
