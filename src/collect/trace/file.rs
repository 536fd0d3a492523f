//! Page-cache and writeback tracepoints decoded into [`FileEvent`]s:
//! `filemap:mm_filemap_add_to_page_cache` (a folio added to a file's cache:
//! `s_dev`, `i_ino`, `index`, `order`) and `writeback:writeback_dirty_folio`
//! (a folio dirtied: the bdi's `name`, `ino`, `index`; no size). Both run in
//! the context of the task that caused them (the reader, the writer, or a
//! kernel worker). Fields are located through the events' `format` files.
//! What the events mean (bytes read from storage per file and process) is
//! model code: `model::files`.

use super::block::Dev;
use super::layout::EventFormat;
use super::page::{RawEvent, read_uint};

/// The tracepoints, as `(system, event)` under `events/`.
pub const EVENTS: [(&str, &str); 2] = [
    ("filemap", "mm_filemap_add_to_page_cache"),
    ("writeback", "writeback_dirty_folio"),
];

/// What happened to a folio.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// Added to the page cache: `4096 << order` bytes (a read from storage,
    /// readahead included, or a page a buffered write creates).
    Added { order: u8 },
    /// Marked dirty (a buffered write or a write through a mapping).
    Dirtied,
}

/// Where a file lives, as each event names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Where {
    /// The superblock's device (`s_dev`, the `st_dev` of the file).
    Sb(Dev),
    /// The backing device's name (`bdi`), NUL-padded: "254:0" for a disk
    /// (the whole disk, not the partition), "0:53" for FUSE or NFS.
    Bdi([u8; 32]),
}

impl Where {
    /// The bdi name as text (lossy; empty for [`Where::Sb`]).
    pub fn bdi_name(&self) -> String {
        match self {
            Where::Sb(_) => String::new(),
            Where::Bdi(b) => {
                let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
                String::from_utf8_lossy(&b[..n]).into_owned()
            }
        }
    }
}

/// One decoded page-cache event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileEvent {
    /// Trace-clock (CLOCK_MONOTONIC) nanoseconds.
    pub ts: u64,
    pub kind: FileKind,
    pub place: Where,
    pub ino: u64,
    /// Page index of the folio in the file.
    pub index: u64,
    /// The task (thread id) the event ran in.
    pub pid: i32,
    /// Its process, resolved by the reader; 0 when unknown.
    pub tgid: i32,
    /// `pid` is a kernel thread (flusher, loop worker, khugepaged).
    pub kernel: bool,
}

impl FileEvent {
    /// Bytes of the folio where the event gives its size.
    pub fn bytes(&self) -> Option<u64> {
        match self.kind {
            FileKind::Added { order } => 4096u64.checked_shl(u32::from(order)),
            FileKind::Dirtied => None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Loc {
    off: usize,
    size: usize,
}

#[derive(Debug, Clone, Copy)]
struct Add {
    id: u16,
    pid: Loc,
    ino: Loc,
    index: Loc,
    dev: Loc,
    order: Option<Loc>,
}

#[derive(Debug, Clone, Copy)]
struct Dirty {
    id: u16,
    pid: Loc,
    name: Loc,
    ino: Loc,
    index: Loc,
}

/// Decodes the two page-cache events where the kernel has them.
#[derive(Debug, Clone, Default)]
pub struct FileDecoder {
    add: Option<Add>,
    dirty: Option<Dirty>,
}

fn need(f: &EventFormat, n: &str) -> Result<Loc, String> {
    f.field(n)
        .map(|x| Loc {
            off: x.offset,
            size: x.size,
        })
        .ok_or_else(|| format!("{} has no {n} field", f.name))
}

impl FileDecoder {
    /// Add an event from its format file (recognised by its name). Refuses
    /// a format without the fields iolens needs.
    pub fn add(&mut self, f: &EventFormat) -> Result<(), String> {
        match f.name.as_str() {
            "mm_filemap_add_to_page_cache" => {
                self.add = Some(Add {
                    id: f.id,
                    pid: need(f, "common_pid")?,
                    ino: need(f, "i_ino")?,
                    index: need(f, "index")?,
                    dev: need(f, "s_dev")?,
                    // Kernels before 6.x added single pages: order 0.
                    order: need(f, "order").ok(),
                });
            }
            "writeback_dirty_folio" | "writeback_dirty_page" => {
                let name = need(f, "name")?;
                if name.size == 0 || name.size > 32 {
                    return Err(format!("{}: name of {} bytes not understood", f.name, name.size));
                }
                self.dirty = Some(Dirty {
                    id: f.id,
                    pid: need(f, "common_pid")?,
                    name,
                    ino: need(f, "ino")?,
                    index: need(f, "index")?,
                });
            }
            other => return Err(format!("{other} is not a page-cache event")),
        }
        Ok(())
    }

    /// Whether both events are known.
    pub fn complete(&self) -> bool {
        self.add.is_some() && self.dirty.is_some()
    }

    /// Decode one raw event; `None` for an event of another type or one too
    /// short for its format.
    pub fn decode(&self, ev: &RawEvent<'_>) -> Option<FileEvent> {
        let p = ev.payload;
        let id = read_uint(p, 0, 2)? as u16;
        let get = |l: Loc| read_uint(p, l.off, l.size);
        if let Some(a) = self.add.filter(|a| a.id == id) {
            let order = match a.order {
                Some(l) => get(l)?,
                None => 0,
            };
            return Some(FileEvent {
                ts: ev.ts,
                kind: FileKind::Added {
                    order: u8::try_from(order).ok()?,
                },
                place: Where::Sb(Dev::from_kernel(get(a.dev)?)),
                ino: get(a.ino)?,
                index: get(a.index)?,
                pid: get(a.pid)? as u32 as i32,
                tgid: 0,
                kernel: false,
            });
        }
        let d = self.dirty.filter(|d| d.id == id)?;
        let mut name = [0u8; 32];
        let s = p.get(d.name.off..d.name.off + d.name.size)?;
        name[..s.len()].copy_from_slice(s);
        Some(FileEvent {
            ts: ev.ts,
            kind: FileKind::Dirtied,
            place: Where::Bdi(name),
            ino: get(d.ino)?,
            index: get(d.index)?,
            pid: get(d.pid)? as u32 as i32,
            tgid: 0,
            kernel: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::trace::layout::parse_event_format;

    const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/files-6.18/events");

    fn format(rel: &str) -> EventFormat {
        parse_event_format(&std::fs::read_to_string(format!("{DIR}/{rel}/format")).unwrap()).unwrap()
    }

    fn decoder() -> FileDecoder {
        let mut d = FileDecoder::default();
        for (sys, ev) in EVENTS {
            d.add(&format(&format!("{sys}/{ev}"))).unwrap();
        }
        d
    }

    #[test]
    fn hand_made_payloads() {
        let d = decoder();
        assert!(d.complete());
        let add = format("filemap/mm_filemap_add_to_page_cache");
        let mut p = vec![0u8; 40];
        p[0..2].copy_from_slice(&add.id.to_ne_bytes());
        p[4..8].copy_from_slice(&4242i32.to_ne_bytes());
        p[16..24].copy_from_slice(&0x3c52du64.to_ne_bytes());
        p[24..32].copy_from_slice(&17u64.to_ne_bytes());
        p[32..36].copy_from_slice(&((259u32 << 20) | 3).to_ne_bytes());
        p[36] = 4;
        let e = d.decode(&RawEvent { ts: 9, payload: &p }).unwrap();
        assert_eq!(e.kind, FileKind::Added { order: 4 });
        assert_eq!(e.bytes(), Some(65536));
        assert_eq!(e.place, Where::Sb(Dev { major: 259, minor: 3 }));
        assert_eq!((e.ino, e.index, e.pid, e.ts), (0x3c52d, 17, 4242, 9));
        // cut short: refused, not a panic
        assert_eq!(
            d.decode(&RawEvent {
                ts: 9,
                payload: &p[..30]
            }),
            None
        );

        let dirty = format("writeback/writeback_dirty_folio");
        let mut p = vec![0u8; 56];
        p[0..2].copy_from_slice(&dirty.id.to_ne_bytes());
        p[4..8].copy_from_slice(&7i32.to_ne_bytes());
        p[8..13].copy_from_slice(b"254:0");
        p[40..48].copy_from_slice(&12u64.to_ne_bytes());
        p[48..56].copy_from_slice(&3u64.to_ne_bytes());
        let e = d.decode(&RawEvent { ts: 1, payload: &p }).unwrap();
        assert_eq!(e.kind, FileKind::Dirtied);
        assert_eq!(e.bytes(), None);
        assert_eq!(e.place.bdi_name(), "254:0");
        assert_eq!((e.ino, e.index, e.pid), (12, 3, 7));
        // another event type
        p[0..2].copy_from_slice(&1u16.to_ne_bytes());
        assert_eq!(d.decode(&RawEvent { ts: 1, payload: &p }), None);
    }

    #[test]
    fn formats_without_the_fields_are_refused() {
        let mut f = format("filemap/mm_filemap_add_to_page_cache");
        f.fields.retain(|x| x.name != "i_ino");
        assert!(FileDecoder::default().add(&f).unwrap_err().contains("i_ino"));
        let mut f = format("writeback/writeback_dirty_folio");
        f.name = "block_rq_issue".into();
        assert!(FileDecoder::default().add(&f).is_err());
    }
}
