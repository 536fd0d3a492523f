//! Block-request tracing from the tracefs ring buffer (root only).
//!
//! iolens reads the raw pages of `per_cpu/cpuN/trace_pipe_raw` of a private
//! tracefs instance ([`instance`]) and decodes them itself: no BPF, no
//! libtraceevent. Layouts come from the instance's own files
//! ([`layout`]: `events/header_page`, `events/header_event` and each event's
//! `format`); pages are decoded by [`page`], block events by [`block`], and
//! the CPUs' streams merged into one time order by [`merge`]. What the events
//! mean (queue / device time, sequential share, per-process attribution) is
//! model code: `model::trace`.

pub mod block;
pub mod budget;
pub mod dirty;
pub mod file;
pub mod instance;
pub mod layout;
pub mod merge;
pub mod page;
pub mod reader;
pub mod reads;
pub mod sampling;

use std::path::Path;

use block::{BlockDecoder, BlockEvent, EVENTS, Kind};
use dirty::{DirtyDecoder, PauseEvent};
use file::{FileDecoder, FileEvent};
use layout::{parse_event_format, parse_header_event, parse_header_page};
use page::{Layout, Page};

/// Counts kept while decoding pages.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DecodeStats {
    pub pages: u64,
    pub events: u64,
    /// Pages flagged with lost events before them.
    pub missed_pages: u64,
    /// Lost events the pages counted (where the kernel stored the count).
    pub missed_events: u64,
    /// Pages or events that could not be decoded.
    pub errors: u64,
}

/// The events decoded beside the block events, each in page order.
#[derive(Debug, Clone, Default)]
pub struct Side {
    /// Page-cache events ([`file`]).
    pub files: Vec<FileEvent>,
    /// Passes through the dirty throttle ([`dirty`]).
    pub pauses: Vec<PauseEvent>,
}

/// Everything needed to decode an instance's pages.
#[derive(Debug, Clone)]
pub struct Decoder {
    pub layout: Layout,
    pub block: BlockDecoder,
    /// The events found, `(kind, tracepoint name)`.
    pub events: Vec<(Kind, String)>,
    /// The page-cache events ([`file`]) this kernel has.
    pub file: FileDecoder,
    /// The dirty throttle's event ([`dirty`]) where this kernel has it.
    pub dirty: DirtyDecoder,
}

pub(crate) fn read_small(path: &Path) -> Result<String, String> {
    use std::io::Read;
    let ctx = |e: std::io::Error| format!("reading {}: {e}", path.display());
    let mut f = std::fs::File::open(path).map_err(ctx)?;
    // One large read at a time: tracefs files report size 0, and some
    // return nothing after a short first read.
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    while len < buf.len() {
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ctx(e)),
        }
    }
    buf.truncate(len);
    String::from_utf8(buf).map_err(|_| format!("reading {}: not UTF-8", path.display()))
}

impl Decoder {
    /// Load the layouts from an `events` directory (an instance's, or a
    /// fixture with the same files). Each wanted tracepoint that exists is
    /// added; the start event falls back to `block_bio_queue`.
    pub fn load(events: &Path) -> Result<Decoder, String> {
        let d = Self::load_any(events)?;
        for need in [Kind::Start, Kind::Issue, Kind::Complete] {
            if !d.events.iter().any(|(k, _)| *k == need) {
                return Err(format!(
                    "{} lacks the block tracepoints needed ({need:?} event)",
                    events.display()
                ));
            }
        }
        Ok(d)
    }

    /// As [`Decoder::load`], without requiring any block event (a capture
    /// of page-cache events only).
    pub fn load_any(events: &Path) -> Result<Decoder, String> {
        let hp = read_small(&events.join("header_page"))?;
        let he = read_small(&events.join("header_event"))?;
        let layout = Layout {
            page: parse_header_page(&hp).map_err(|e| format!("{}: {e}", events.join("header_page").display()))?,
            event: parse_header_event(&he).map_err(|e| format!("{}: {e}", events.join("header_event").display()))?,
        };
        let mut block = BlockDecoder::default();
        let mut found = Vec::new();
        for &(name, fallback, kind) in EVENTS {
            for n in std::iter::once(name).chain(fallback) {
                let p = events.join("block").join(n).join("format");
                // A tracepoint taken as the start already (block_bio_queue
                // on kernels without block_io_start) is not a second kind.
                if !p.exists() || found.iter().any(|(_, f)| f == n) {
                    continue;
                }
                let f = parse_event_format(&read_small(&p)?).map_err(|e| format!("{}: {e}", p.display()))?;
                block.add(kind, &f).map_err(|e| format!("{}: {e}", p.display()))?;
                found.push((kind, n.to_string()));
                break;
            }
        }
        let mut file = FileDecoder::default();
        for (sys, name) in file::EVENTS {
            let p = events.join(sys).join(name).join("format");
            if p.exists() {
                let f = parse_event_format(&read_small(&p)?).map_err(|e| format!("{}: {e}", p.display()))?;
                file.add(&f).map_err(|e| format!("{}: {e}", p.display()))?;
            }
        }
        let mut throttle = DirtyDecoder::default();
        let p = events.join(dirty::EVENT.0).join(dirty::EVENT.1).join("format");
        if p.exists() {
            let f = parse_event_format(&read_small(&p)?).map_err(|e| format!("{}: {e}", p.display()))?;
            throttle.add(&f).map_err(|e| format!("{}: {e}", p.display()))?;
        }
        Ok(Decoder {
            layout,
            block,
            events: found,
            file,
            dirty: throttle,
        })
    }

    /// Decode one page into `out` (appended in page order); page-cache
    /// and throttle events are left out.
    pub fn decode_page(&self, buf: &[u8], out: &mut Vec<BlockEvent>, stats: &mut DecodeStats) {
        self.decode_page_into(buf, out, &mut Side::default(), stats);
    }

    /// Decode one page: block events into `out`, page-cache and throttle
    /// events into `side` (each appended in page order).
    pub fn decode_page_into(&self, buf: &[u8], out: &mut Vec<BlockEvent>, side: &mut Side, stats: &mut DecodeStats) {
        let page = match Page::parse(buf, &self.layout) {
            Ok(p) => p,
            Err(_) => {
                stats.errors += 1;
                return;
            }
        };
        stats.pages += 1;
        if page.missed.flagged {
            stats.missed_pages += 1;
            stats.missed_events += page.missed.count.unwrap_or(0);
        }
        for ev in page.events() {
            match ev {
                Ok(raw) => {
                    if let Some(b) = self.block.decode(&raw) {
                        stats.events += 1;
                        out.push(b);
                    } else if let Some(f) = self.file.decode(&raw) {
                        stats.events += 1;
                        side.files.push(f);
                    } else if let Some(p) = self.dirty.decode(&raw) {
                        stats.events += 1;
                        side.pauses.push(p);
                    }
                }
                Err(_) => stats.errors += 1,
            }
        }
    }

    /// Decode a buffer of whole pages (as read from `trace_pipe_raw`).
    pub fn decode_pages(&self, buf: &[u8], out: &mut Vec<BlockEvent>, stats: &mut DecodeStats) {
        self.decode_pages_into(buf, out, &mut Side::default(), stats);
    }

    /// [`Decoder::decode_pages`] keeping the page-cache and throttle
    /// events too.
    pub fn decode_pages_into(&self, buf: &[u8], out: &mut Vec<BlockEvent>, side: &mut Side, stats: &mut DecodeStats) {
        for p in buf.chunks(self.layout.page.page_size()) {
            self.decode_page_into(p, out, side, stats);
        }
    }
}
