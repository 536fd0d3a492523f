//! The recording file: a fixed file head (magic and format version), then
//! frames (see [`super::frame`]). Each run of the recorder starts with a
//! host frame (host, kernel, clock ticks, boot id), so a file appended to
//! across reboots says which machine state each sample belongs to.
//!
//! Payloads are JSON (zstd-compressed for samples) of serde structs with
//! defaults: a newer iolens reads an older file (missing fields take their
//! default), an older one skips fields it does not know.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use super::frame::{self, Damage, FLAG_ZSTD, FrameRef, kind};
use crate::collect::RawSample;
use crate::model::trace::TraceInterval;
use crate::model::trace::view::TraceView;

/// The file starts with these 8 bytes...
pub const FILE_MAGIC: [u8; 8] = *b"IOLENSRC";
/// ... then the format version (u32, little-endian).
pub const FORMAT_VERSION: u32 = 1;
/// Length of the file head.
pub const FILE_HEAD_LEN: usize = 12;
/// zstd level of sample payloads (fast; ratio measured in benches/record_cost.sh).
const ZSTD_LEVEL: i32 = 3;
/// A sample's JSON is never larger than this (a bound on decompression).
const MAX_SAMPLE_JSON: u64 = 512 << 20;
/// The smallest `--max-size`.
pub const MIN_MAX_SIZE: u64 = 64 * 1024;

/// The host facts the samples of one recorder run were taken with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Header {
    /// iolens version that wrote the frame.
    pub iolens: String,
    pub host: String,
    pub kernel: String,
    /// Clock ticks per second of the recorded machine (process times).
    pub clk_tck: f64,
    /// /proc/sys/kernel/random/boot_id: monotonic stamps compare only
    /// within one boot.
    pub boot_id: Option<String>,
    /// The recorder ran as root (what it could see).
    pub is_root: bool,
    /// Seconds between samples.
    pub interval_s: f64,
}

fn file_head() -> [u8; FILE_HEAD_LEN] {
    let mut h = [0u8; FILE_HEAD_LEN];
    h[..8].copy_from_slice(&FILE_MAGIC);
    h[8..].copy_from_slice(&FORMAT_VERSION.to_le_bytes());
    h
}

/// Check a file head; the error says what the file is instead.
pub fn check_head(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    if data.len() < FILE_HEAD_LEN || data[..8] != FILE_MAGIC {
        bail!("{} is not an iolens recording (no IOLENSRC header)", path.display());
    }
    let mut v = [0u8; 4];
    v.copy_from_slice(&data[8..12]);
    let version = u32::from_le_bytes(v);
    if version > FORMAT_VERSION {
        bail!(
            "{} was written by a newer iolens (recording format {version}; this iolens reads format {FORMAT_VERSION} and older): replay it with that version",
            path.display()
        );
    }
    if version == 0 {
        bail!("{}: recording format version 0 is not valid", path.display());
    }
    Ok(())
}

fn sample_payload(s: &impl Serialize) -> anyhow::Result<Vec<u8>> {
    let json = serde_json::to_vec(s).context("encoding a sample")?;
    zstd::bulk::compress(&json, ZSTD_LEVEL).context("compressing a sample")
}

/// Appends frames to a recording, rotating it under `max_size`.
pub struct Writer {
    path: PathBuf,
    file: File,
    /// Current length of the file.
    len: u64,
    max_size: Option<u64>,
    header: Vec<u8>,
    /// Times the oldest samples were dropped to stay under `max_size`.
    pub rotations: u64,
    /// Samples offered, and those that could not be written.
    pub samples: u64,
    pub lost: u64,
    /// Samples lost in a row (0 after one is written).
    failing_in_a_row: u32,
}

/// The recorder stops (status 1) when this many samples in a row could
/// not be written: a full or failing filesystem that stays so. Fewer are
/// retried with the next sample (space may be freed meanwhile); each lost
/// sample is said on stderr, and a run that lost any ends with status 1.
pub const MAX_LOST_IN_A_ROW: u32 = 6;

impl Writer {
    /// Open `path` for recording: create it (never overwriting anything),
    /// or append to an iolens recording of this format. Writes the host
    /// frame of this run.
    pub fn open(path: &Path, header: &Header, max_size: Option<u64>) -> anyhow::Result<Writer> {
        if let Some(m) = max_size {
            anyhow::ensure!(
                m >= MIN_MAX_SIZE,
                "--max-size must be at least {MIN_MAX_SIZE} bytes, got {m}"
            );
        }
        let created = OpenOptions::new().append(true).create_new(true).mode(0o640).open(path);
        let (file, len) = match created {
            Ok(mut f) => {
                f.write_all(&file_head())
                    .with_context(|| format!("writing {}", path.display()))?;
                (f, FILE_HEAD_LEN as u64)
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let mut f = OpenOptions::new()
                    .read(true)
                    .append(true)
                    .open(path)
                    .with_context(|| format!("opening {}", path.display()))?;
                let meta = f.metadata().with_context(|| format!("reading {}", path.display()))?;
                anyhow::ensure!(meta.is_file(), "{} is not a regular file", path.display());
                let mut head = [0u8; FILE_HEAD_LEN];
                let n = f
                    .read(&mut head)
                    .with_context(|| format!("reading {}", path.display()))?;
                check_head(path, &head[..n])?;
                let version = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
                anyhow::ensure!(
                    version == FORMAT_VERSION,
                    "{} is in recording format {version}: record to a new file",
                    path.display()
                );
                (f, meta.len())
            }
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        };
        let payload = serde_json::to_vec(header).context("encoding the host frame")?;
        let mut w = Writer {
            path: path.to_path_buf(),
            file,
            len,
            max_size,
            header: frame::encode(kind::HOST, 0, crate::collect::realtime_ns(), &payload),
            rotations: 0,
            samples: 0,
            lost: 0,
            failing_in_a_row: 0,
        };
        let h = w.header.clone();
        w.append_frame(&h)?;
        Ok(w)
    }

    /// Append one sample, and the tracer's interval ending with it.
    pub fn append(&mut self, s: &RawSample, trace: Option<&TraceInterval>) -> anyhow::Result<()> {
        self.append_payload(kind::SAMPLE, s.wall_ns, &sample_payload(s)?)?;
        match trace {
            Some(t) => self.append_payload(kind::TRACE, s.wall_ns, &sample_payload(t)?),
            None => Ok(()),
        }
    }

    /// [`Writer::append`], saying on stderr when the sample could not be
    /// written; `Break` when [`MAX_LOST_IN_A_ROW`] samples in a row were
    /// lost (the recorder then stops).
    pub fn record(&mut self, s: &RawSample, trace: Option<&TraceInterval>) -> std::ops::ControlFlow<()> {
        self.samples += 1;
        let Err(e) = self.append(s, trace) else {
            self.failing_in_a_row = 0;
            return std::ops::ControlFlow::Continue(());
        };
        self.lost += 1;
        self.failing_in_a_row += 1;
        eprintln!("iolens: {e:#}: sample not recorded");
        if self.failing_in_a_row >= MAX_LOST_IN_A_ROW {
            eprintln!(
                "iolens: {} samples in a row could not be written to {}: recording stopped",
                self.failing_in_a_row,
                self.path.display()
            );
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    }

    /// The findings that hold after the sample of `wall_ns` (appended
    /// right after it).
    pub fn append_findings(&mut self, wall_ns: u64, found: &[crate::model::findings::Finding]) -> anyhow::Result<()> {
        self.append_payload(kind::FINDINGS, wall_ns, &sample_payload(&found)?)
    }

    /// The per-file figures of the sample of `wall_ns` (appended after it;
    /// nothing while the page-cache events are not traced).
    pub fn append_files(&mut self, wall_ns: u64, files: &crate::model::files::FilesView) -> anyhow::Result<()> {
        match super::files::RecordedFiles::of(files) {
            Some(r) => self.append_payload(kind::FILES, wall_ns, &sample_payload(&r)?),
            None => Ok(()),
        }
    }

    /// The dirty-throttle figures of the sample of `wall_ns` (appended
    /// after it; nothing while the block tracer does not run, as no trace
    /// frame is written then).
    pub fn append_dirty(&mut self, wall_ns: u64, trace: &TraceView) -> anyhow::Result<()> {
        if !trace.active {
            return Ok(());
        }
        let r = super::dirty::RecordedThrottle::of(&trace.dirty);
        self.append_payload(kind::DIRTY, wall_ns, &sample_payload(&r)?)
    }

    fn append_payload(&mut self, kind: u8, wall_ns: u64, payload: &[u8]) -> anyhow::Result<()> {
        anyhow::ensure!(
            payload.len() <= frame::MAX_PAYLOAD as usize,
            "a sample of {} bytes is over the frame cap",
            payload.len()
        );
        let bytes = frame::encode(kind, FLAG_ZSTD, wall_ns, payload);
        if let Some(max) = self.max_size {
            if (FILE_HEAD_LEN + self.header.len() + bytes.len()) as u64 > max {
                bail!(
                    "a sample of {} bytes does not fit --max-size {max}: not recorded",
                    bytes.len()
                );
            }
            if self.len + bytes.len() as u64 > max {
                // Half of the cap, and room for this frame: a frame larger
                // than half the cap must not take the file over it.
                let room = max - (FILE_HEAD_LEN + self.header.len() + bytes.len()) as u64;
                self.rotate((max / 2).min(room))?;
            }
        }
        self.append_frame(&bytes)
    }

    fn append_frame(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        if let Err(e) = self.file.write_all(bytes) {
            // No part of a frame stays behind (a full filesystem may have
            // taken some of it): the file keeps its length.
            let _ = self.file.set_len(self.len);
            return Err(e).with_context(|| format!("writing {}", self.path.display()));
        }
        self.len += bytes.len() as u64;
        Ok(())
    }

    /// Drop the oldest samples: rewrite the file with the newest frames
    /// that fit in `keep` bytes, after the host frame they belong to, into
    /// a new file next to it that replaces it (rename: a reader of the old
    /// file keeps a whole file). Streamed: the frames are found in one pass
    /// through a fixed buffer ([`frame::valid_frames`]) and copied range by
    /// range; what is held is the list of frames, never the data.
    fn rotate(&mut self, keep: u64) -> anyhow::Result<()> {
        let what = || format!("reading {}", self.path.display());
        let src = File::open(&self.path).with_context(what)?;
        let total = src.metadata().with_context(what)?.len();
        let start = (FILE_HEAD_LEN as u64).min(total);
        let mut hashed = 0;
        let valid = (&src)
            .seek(SeekFrom::Start(start))
            .and_then(|_| frame::valid_frames((&src).take(total - start), start, total, &mut hashed))
            .with_context(what)?;
        let frames = frame::chain(&valid, start as usize);
        drop(valid);
        let first = first_kept(&frames, keep);
        // Kept samples come after the host frame they were taken with.
        let host = if frames.get(first).is_none_or(|f| f.kind != kind::HOST) {
            Some(frames[..first].iter().rev().find(|g| g.kind == kind::HOST))
        } else {
            None
        };
        // Byte ranges to copy, adjacent frames as one.
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for f in host.flatten().into_iter().chain(&frames[first..]) {
            let (a, b) = (f.offset as u64, f.payload.1 as u64);
            match ranges.last_mut() {
                Some(r) if r.1 == a => r.1 = b,
                _ => ranges.push((a, b)),
            }
        }
        let name = self
            .path
            .file_name()
            .map_or_else(|| "recording".into(), |n| n.to_string_lossy().into_owned());
        let tmp = self
            .path
            .with_file_name(format!(".{name}.rotate-{}", std::process::id()));
        let res = (|| -> std::io::Result<(File, u64)> {
            let mut f = OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o640)
                .open(&tmp)?;
            f.write_all(&file_head())?;
            let mut len = FILE_HEAD_LEN as u64;
            if host.is_some_and(|h| h.is_none()) {
                f.write_all(&self.header)?;
                len += self.header.len() as u64;
            }
            for (a, b) in ranges {
                (&src).seek(SeekFrom::Start(a))?;
                let n = std::io::copy(&mut (&src).take(b - a), &mut f)?;
                if n != b - a {
                    return Err(std::io::ErrorKind::UnexpectedEof.into());
                }
                len += n;
            }
            std::fs::rename(&tmp, &self.path)?;
            Ok((f, len))
        })();
        match res {
            Ok((f, len)) => {
                self.file = f;
                self.len = len;
                self.rotations += 1;
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(e).with_context(|| format!("rotating {} (through {})", self.path.display(), tmp.display()))
            }
        }
    }
}

/// One run of the recorder in a file: its host facts and its samples.
#[derive(Debug, Default)]
pub struct Segment {
    pub header: Header,
    pub samples: Vec<FrameRef>,
    /// The trace frame after sample `i`, if any (`iolens record --trace`).
    pub traces: std::collections::HashMap<usize, FrameRef>,
    /// The findings frame after sample `i`, if any.
    pub findings: std::collections::HashMap<usize, FrameRef>,
    /// The per-file frame after sample `i`, if any.
    pub files: std::collections::HashMap<usize, FrameRef>,
    /// The dirty-throttle frame after sample `i`, if any.
    pub dirty: std::collections::HashMap<usize, FrameRef>,
}

/// A recording read into memory, indexed.
pub struct Recording {
    data: Vec<u8>,
    pub segments: Vec<Segment>,
    /// What was skipped, for warnings.
    pub damage: Vec<Damage>,
    /// Frames of kinds this iolens does not know (from a newer one).
    pub unknown_frames: usize,
}

impl Recording {
    /// Read and index a recording. Fails only when it is not one (or is of
    /// a newer format); damage inside is listed, not fatal. Opened without
    /// blocking and only if it is a regular file (a FIFO or `/dev/zero` is
    /// an error at once), and read up to the size it had when opened: a
    /// recorder appending meanwhile does not grow what is read.
    pub fn open(path: &Path) -> anyhow::Result<Recording> {
        let what = || format!("reading {}", path.display());
        let f = crate::sys::input::open_regular(path).with_context(what)?;
        let size = f.metadata().with_context(what)?.len();
        let mut data = Vec::new();
        f.take(size).read_to_end(&mut data).with_context(what)?;
        Self::from_bytes(path, data)
    }

    pub fn from_bytes(path: &Path, data: Vec<u8>) -> anyhow::Result<Recording> {
        check_head(path, &data)?;
        let (frames, mut damage) = frame::scan(&data, FILE_HEAD_LEN);
        let mut segments: Vec<Segment> = Vec::new();
        let mut unknown_frames = 0;
        for f in frames {
            match f.kind {
                kind::HOST => match serde_json::from_slice::<Header>(&data[f.payload.0..f.payload.1]) {
                    Ok(header) => segments.push(Segment {
                        header,
                        ..Default::default()
                    }),
                    Err(_) => damage.push(Damage::Corrupt {
                        offset: f.offset,
                        skipped: f.total_len(),
                        why: "host frame does not decode",
                    }),
                },
                kind::SAMPLE => match segments.last_mut() {
                    Some(s) => s.samples.push(f),
                    None => damage.push(Damage::Corrupt {
                        offset: f.offset,
                        skipped: f.total_len(),
                        why: "sample before any host frame",
                    }),
                },
                // Trace, findings and files frames belong to the sample
                // just before.
                kind::TRACE | kind::FINDINGS | kind::FILES | kind::DIRTY => {
                    if let Some(seg) = segments.last_mut()
                        && let Some(i) = seg.samples.len().checked_sub(1)
                        && seg.samples[i].wall_ns == f.wall_ns
                    {
                        let at = match f.kind {
                            kind::TRACE => &mut seg.traces,
                            kind::FINDINGS => &mut seg.findings,
                            kind::DIRTY => &mut seg.dirty,
                            _ => &mut seg.files,
                        };
                        at.insert(i, f);
                    }
                }
                _ => unknown_frames += 1,
            }
        }
        Ok(Recording {
            data,
            segments,
            damage,
            unknown_frames,
        })
    }

    /// The tracer's view of sample `idx` of `seg`: the recorded interval,
    /// or off (not traced, or a trace frame that does not decode).
    pub fn trace(&self, seg: &Segment, idx: usize) -> TraceView {
        let Some(f) = seg.traces.get(&idx) else {
            return TraceView::off(super::NOT_TRACED);
        };
        match self.decode::<TraceInterval>(f) {
            Ok(interval) => TraceView {
                active: true,
                reason: None,
                interval,
                log: Vec::new(),
                files: self.files(seg, idx),
                dirty: self.dirty(seg, idx),
                // Not recorded: the tracer's cost is the recorder's.
                cost: None,
            },
            Err(e) => TraceView::off(format!("recorded trace unreadable: {e:#}")),
        }
    }

    /// The per-file figures recorded after sample `idx` of `seg` (a
    /// recording made before they were kept has none: not recorded).
    fn files(&self, seg: &Segment, idx: usize) -> crate::model::files::FilesView {
        use crate::model::files::FilesView;
        let Some(f) = seg.files.get(&idx) else {
            return FilesView::off(FILES_NOT_RECORDED);
        };
        match self.decode::<super::files::RecordedFiles>(f) {
            Ok(r) => r.into_view(),
            Err(e) => FilesView::off(format!("recorded per-file numbers unreadable: {e:#}")),
        }
    }

    /// The dirty throttle recorded after sample `idx` of `seg` (a
    /// recording made before it was kept has none: not traced).
    fn dirty(&self, seg: &Segment, idx: usize) -> crate::model::dirty::ThrottleView {
        use crate::model::dirty::ThrottleView;
        let Some(f) = seg.dirty.get(&idx) else {
            return ThrottleView::off(super::dirty::NOT_RECORDED);
        };
        match self.decode::<super::dirty::RecordedThrottle>(f) {
            Ok(r) => r.into_view(),
            Err(e) => ThrottleView::off(format!("recorded dirty-throttle figures unreadable: {e:#}")),
        }
    }

    /// The findings recorded after sample `idx` of `seg`; `None` without
    /// a findings frame (a recording made before findings) or when it
    /// does not decode.
    pub fn findings(&self, seg: &Segment, idx: usize) -> Option<Vec<crate::model::findings::Finding>> {
        let f = seg.findings.get(&idx)?;
        let rec: Vec<super::findings::Recorded> = self.decode(f).ok()?;
        Some(rec.into_iter().map(super::findings::Recorded::into_finding).collect())
    }

    /// Decode one sample frame.
    pub fn sample(&self, f: &FrameRef) -> anyhow::Result<RawSample> {
        let mut s: RawSample = self.decode(f)?;
        // Static texts are not read back: recomputed as the collector does.
        for d in &mut s.devices {
            let disk = d.parent.clone().unwrap_or_else(|| d.name.clone());
            d.facts.rotational_caveat = crate::collect::devfacts::caveat(d.kind, d.facts.transport.as_ref(), &disk);
        }
        Ok(s)
    }

    fn decode<T: serde::de::DeserializeOwned>(&self, f: &FrameRef) -> anyhow::Result<T> {
        let raw = &self.data[f.payload.0..f.payload.1];
        let json = if f.flags & FLAG_ZSTD != 0 {
            // Bounded: a sample never decompresses to more than this.
            let mut out = Vec::new();
            zstd::stream::read::Decoder::new(raw)
                .and_then(|d| d.take(MAX_SAMPLE_JSON).read_to_end(&mut out))
                .with_context(|| format!("decompressing the frame at byte {}", f.offset))?;
            out
        } else {
            raw.to_vec()
        };
        serde_json::from_slice(&json).with_context(|| format!("decoding the frame at byte {}", f.offset))
    }
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`).
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|s| s.trim().chars().take(64).collect())
}

/// Why a replay shows no per-file numbers.
pub const FILES_NOT_RECORDED: &str = "per-file numbers are not recorded";
/// The first of the newest `frames` that fit in `keep` bytes
/// (`frames.len()` when not even the last fits).
fn first_kept(frames: &[FrameRef], keep: u64) -> usize {
    let mut first = frames.len();
    let mut size = 0;
    for (i, f) in frames.iter().enumerate().rev() {
        if (size + f.total_len()) as u64 > keep {
            break;
        }
        size += f.total_len();
        first = i;
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(i: u64) -> RawSample {
        RawSample {
            mono_ns: i * 1_000_000_000,
            wall_ns: 1_795_450_801_000_000_000 + i,
            // Incompressible enough to fill frames.
            errors: (0..40)
                .map(|k| format!("{:x}", (i * 7919 + k) * 2_654_435_761))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn appends_reads_back_and_rotates_under_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.rec");
        let header = Header {
            host: "h".into(),
            clk_tck: 100.0,
            ..Default::default()
        };
        let cap = MIN_MAX_SIZE;
        let mut w = Writer::open(&path, &header, Some(cap)).unwrap();
        for i in 0..300 {
            w.append(&sample(i), None).unwrap();
            let len = std::fs::metadata(&path).unwrap().len();
            assert!(len <= cap, "{len} bytes after sample {i}");
        }
        assert!(w.rotations > 0);
        let rec = Recording::open(&path).unwrap();
        assert!(rec.damage.is_empty(), "{:?}", rec.damage);
        assert_eq!(rec.segments.len(), 1);
        assert_eq!(rec.segments[0].header, header);
        let kept: Vec<u64> = rec.segments[0]
            .samples
            .iter()
            .map(|f| rec.sample(f).unwrap().mono_ns / 1_000_000_000)
            .collect();
        // The newest samples, in order, ending with the last one.
        assert_eq!(kept.last(), Some(&299));
        assert!(kept.windows(2).all(|w| w[1] == w[0] + 1), "{kept:?}");
        assert_eq!(
            rec.sample(&rec.segments[0].samples[0]).unwrap().errors,
            sample(kept[0]).errors
        );
        // Frames over half the cap (a busy machine's samples) stay under
        // it too.
        let big = dir.path().join("big.rec");
        let mut w = Writer::open(&big, &header, Some(cap)).unwrap();
        for i in 0..20u64 {
            let mut s = sample(i);
            let mut x = i + 1;
            // Alternately just under and well over half the cap.
            s.errors = (0..if i % 2 == 0 { 3000 } else { 5000 })
                .map(|_| {
                    // xorshift64: random hex, about 8 bytes compressed.
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!("{x:016x}")
                })
                .collect();
            w.append(&s, None).unwrap();
            let len = std::fs::metadata(&big).unwrap().len();
            assert!(len <= cap, "{len} bytes after big sample {i}");
        }
        assert!(w.rotations > 0);
        let rec = Recording::open(&big).unwrap();
        assert!(rec.damage.is_empty(), "{:?}", rec.damage);
        let kept = &rec.segments[0].samples;
        let last = kept.last().unwrap();
        assert!(last.total_len() as u64 > cap / 2, "frame not big enough");
        assert_eq!(rec.sample(last).unwrap().mono_ns, 19_000_000_000);
        // Appending again starts a second run with its own host frame.
        drop(w);
        let mut w = Writer::open(&path, &header, None).unwrap();
        w.append(&sample(1000), None).unwrap();
        let rec = Recording::open(&path).unwrap();
        assert_eq!(rec.segments.len(), 2);
        assert_eq!(rec.segments[1].samples.len(), 1);
    }

    #[test]
    fn lost_samples_are_counted_and_a_run_of_them_stops_the_recorder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("full.rec");
        let mut w = Writer::open(&path, &Header::default(), None).unwrap();
        assert!(w.record(&sample(0), None).is_continue());
        let good = std::fs::read(&path).unwrap();
        // A full filesystem: every write fails with ENOSPC.
        let full = OpenOptions::new().append(true).open("/dev/full").unwrap();
        let file = std::mem::replace(&mut w.file, full);
        for i in 1..MAX_LOST_IN_A_ROW {
            assert!(w.record(&sample(u64::from(i)), None).is_continue(), "sample {i}");
        }
        // Space freed: the next sample is written, the run of losses ends.
        w.file = file;
        assert!(w.record(&sample(100), None).is_continue());
        assert_eq!((w.samples, w.lost), (7, 5));
        w.file = OpenOptions::new().append(true).open("/dev/full").unwrap();
        for i in 1..MAX_LOST_IN_A_ROW {
            assert!(w.record(&sample(u64::from(i)), None).is_continue(), "sample {i}");
        }
        assert!(w.record(&sample(200), None).is_break());
        assert_eq!((w.samples, w.lost), (13, 11));
        // The file holds the samples written, nothing of the lost ones.
        let rec = Recording::open(&path).unwrap();
        assert!(rec.damage.is_empty(), "{:?}", rec.damage);
        let kept: Vec<u64> = rec.segments[0]
            .samples
            .iter()
            .map(|f| rec.sample(f).unwrap().mono_ns / 1_000_000_000)
            .collect();
        assert_eq!(kept, vec![0, 100]);
        assert!(std::fs::read(&path).unwrap().starts_with(&good));
    }

    /// The rotation as it was (the whole file in memory): the reference
    /// the streamed one must equal byte for byte.
    fn rotated_in_memory(data: &[u8], keep: u64, header: &[u8]) -> Vec<u8> {
        let (frames, _) = frame::scan(data, FILE_HEAD_LEN.min(data.len()));
        let first = first_kept(&frames, keep);
        let mut out = file_head().to_vec();
        if frames.get(first).is_none_or(|f| f.kind != kind::HOST) {
            let host = frames[..first].iter().rev().find(|g| g.kind == kind::HOST);
            out.extend_from_slice(host.map_or(header, |g| &data[g.offset..g.payload.1]));
        }
        for f in &frames[first..] {
            out.extend_from_slice(&data[f.offset..f.payload.1]);
        }
        out
    }

    #[test]
    fn streamed_rotation_writes_what_the_in_memory_one_did() {
        let dir = tempfile::tempdir().unwrap();
        let header = Header {
            host: "h".into(),
            ..Default::default()
        };
        // Two runs, a corrupted frame, garbage and a torn tail; frames
        // larger than the scan's buffer.
        let mut data = file_head().to_vec();
        let mut x = 1u64;
        let mut bytes = |n: usize| -> Vec<u8> {
            (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as u8
                })
                .collect()
        };
        for run in 0..2u64 {
            data.extend(frame::encode(
                kind::HOST,
                0,
                run,
                format!("{{\"host\":\"run{run}\"}}").as_bytes(),
            ));
            for i in 0..30u64 {
                let len = if i % 7 == 3 {
                    3 * frame::SCAN_BUF
                } else {
                    500 + 37 * i as usize
                };
                let at = data.len();
                data.extend(frame::encode(kind::SAMPLE, FLAG_ZSTD, run * 100 + i, &bytes(len)));
                if i == 11 {
                    data[at + 30] ^= 1;
                }
                if i == 20 {
                    data.extend_from_slice(b"IOLf garbage");
                }
            }
        }
        let torn = frame::encode(kind::SAMPLE, 0, 999, &bytes(100));
        data.extend_from_slice(&torn[..60]);
        let total = data.len() as u64;
        for keep in [0, 100, 5_000, 200_000, total / 2, total] {
            let path = dir.path().join(format!("r{keep}.rec"));
            std::fs::write(&path, &data).unwrap();
            let mut w = Writer::open(&path, &header, None).unwrap();
            let before = std::fs::read(&path).unwrap();
            let want = rotated_in_memory(&before, keep, &w.header);
            w.rotate(keep).unwrap();
            let got = std::fs::read(&path).unwrap();
            assert!(got == want, "keep {keep}: {} bytes, want {}", got.len(), want.len());
            assert_eq!(w.len, got.len() as u64);
            // Appending goes on in the new file.
            w.append(&sample(1), None).unwrap();
            assert_eq!(std::fs::metadata(&path).unwrap().len(), w.len);
        }
    }
}
