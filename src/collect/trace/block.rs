//! Block-layer tracepoints decoded into [`BlockEvent`]s, with every field
//! located through the event's `format` file.

use serde::Serialize;

use super::layout::{EventFormat, Field};
use super::page::{RawEvent, read_uint};

/// What a block event says happened to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A request was started for a bio (`block_io_start`), or, on kernels
    /// without that event, a bio was queued (`block_bio_queue`).
    Start,
    /// A bio was queued (`block_bio_queue`), before any writeback
    /// throttling or tag wait: its wait runs from here to the issue of
    /// its request. On kernels without `block_io_start` this tracepoint
    /// is the [`Kind::Start`] and not taken twice.
    Queue,
    /// A request went into the I/O scheduler (`block_rq_insert`).
    Insert,
    /// A request was sent to the driver (`block_rq_issue`).
    Issue,
    /// Some or all of a request's bytes completed (`block_rq_complete`).
    Complete,
    /// The driver gave a request back to be issued again.
    Requeue,
    /// A bio joined the back / front of a queued request.
    BackMerge,
    FrontMerge,
    /// A queued request was merged into another.
    RqMerge,
}

/// The tracepoints iolens enables, the first name of each pair preferred.
pub const EVENTS: &[(&str, Option<&str>, Kind)] = &[
    ("block_io_start", Some("block_bio_queue"), Kind::Start),
    ("block_bio_queue", None, Kind::Queue),
    ("block_rq_insert", None, Kind::Insert),
    ("block_rq_issue", None, Kind::Issue),
    ("block_rq_complete", None, Kind::Complete),
    ("block_rq_requeue", None, Kind::Requeue),
    ("block_bio_backmerge", None, Kind::BackMerge),
    ("block_bio_frontmerge", None, Kind::FrontMerge),
    ("block_rq_merge", None, Kind::RqMerge),
];

/// The operation of a request, from the `rwbs` string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    Read,
    Write,
    Discard,
    Flush,
    Other,
}

impl Op {
    pub const ALL: [Op; 4] = [Op::Read, Op::Write, Op::Discard, Op::Flush];

    pub fn name(self) -> &'static str {
        match self {
            Op::Read => "read",
            Op::Write => "write",
            Op::Discard => "discard",
            Op::Flush => "flush",
            Op::Other => "other",
        }
    }

    /// One letter, as iosnoop prints it.
    pub fn letter(self) -> char {
        match self {
            Op::Read => 'R',
            Op::Write => 'W',
            Op::Discard => 'D',
            Op::Flush => 'F',
            Op::Other => 'N',
        }
    }
}

/// The request flags the kernel prints as `rwbs` (`blk_fill_rwbs`): an
/// optional leading `F` (preflush), the op (`R`, `W`, `D`, `DE`, `F`, `N`),
/// then `F` (FUA), `A` (read-ahead), `S` (sync), `M` (metadata).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Rwbs {
    pub op: Option<Op>,
    pub preflush: bool,
    pub fua: bool,
    pub ahead: bool,
    pub sync: bool,
    pub meta: bool,
}

impl Rwbs {
    pub fn parse(s: &[u8]) -> Rwbs {
        let is_op = |c: u8| matches!(c, b'R' | b'W' | b'D' | b'F' | b'N');
        let mut i = 0;
        let mut r = Rwbs::default();
        if s.len() > 1 && s[0] == b'F' && is_op(s[1]) {
            r.preflush = true;
            i = 1;
        }
        r.op = s.get(i).and_then(|c| match c {
            b'R' => Some(Op::Read),
            b'W' => Some(Op::Write),
            b'D' => Some(Op::Discard),
            b'F' => Some(Op::Flush),
            b'N' => Some(Op::Other),
            _ => None,
        });
        for &c in s.get(i + 1..).unwrap_or(&[]) {
            match c {
                b'F' => r.fua = true,
                b'A' => r.ahead = true,
                b'S' => r.sync = true,
                b'M' => r.meta = true,
                _ => {}
            }
        }
        r
    }

    /// The op for statistics: an empty preflush write is a flush.
    pub fn op(&self, sectors: u32) -> Op {
        match self.op {
            Some(Op::Write) if self.preflush && sectors == 0 => Op::Flush,
            Some(op) => op,
            None => Op::Other,
        }
    }
}

/// A block device number as the kernel's `dev_t` inside tracepoints
/// (`major << 20 | minor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize)]
pub struct Dev {
    pub major: u32,
    pub minor: u32,
}

impl Dev {
    pub fn from_kernel(dev: u64) -> Dev {
        Dev {
            major: (dev >> 20) as u32,
            minor: (dev & ((1 << 20) - 1)) as u32,
        }
    }
}

/// One decoded block event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockEvent {
    /// Trace-clock (CLOCK_MONOTONIC) nanoseconds.
    pub ts: u64,
    pub kind: Kind,
    pub dev: Dev,
    pub sector: u64,
    pub sectors: u32,
    pub rwbs: Rwbs,
    /// The task (thread id) the event ran in.
    pub pid: i32,
    /// The `comm` field where the event has one (NUL-padded).
    pub comm: [u8; 16],
    /// `error` of a completion (0 = success).
    pub error: i32,
    /// The process (thread group) of `pid`, resolved by the reader for
    /// start events; 0 when unknown.
    pub tgid: i32,
    /// `pid` is a kernel thread (writeback, journal, kworker).
    pub kernel: bool,
}

impl BlockEvent {
    pub fn comm_str(&self) -> String {
        let n = self.comm.iter().position(|&c| c == 0).unwrap_or(16);
        String::from_utf8_lossy(&self.comm[..n]).into_owned()
    }
}

#[derive(Debug, Clone, Copy)]
struct Loc {
    off: usize,
    size: usize,
}

impl Loc {
    fn of(f: &Field) -> Loc {
        Loc {
            off: f.offset,
            size: f.size,
        }
    }
}

#[derive(Debug, Clone)]
struct Decoder {
    id: u16,
    kind: Kind,
    pid: Loc,
    dev: Loc,
    sector: Loc,
    sectors: Option<Loc>,
    rwbs: Loc,
    comm: Option<Loc>,
    error: Option<Loc>,
}

/// Decodes the payloads of the enabled block events.
#[derive(Debug, Clone, Default)]
pub struct BlockDecoder {
    decoders: Vec<Decoder>,
}

impl BlockDecoder {
    /// Add an event from its format file. Refuses a format without the
    /// fields iolens needs.
    pub fn add(&mut self, kind: Kind, f: &EventFormat) -> Result<(), String> {
        let need = |n: &str| {
            f.field(n)
                .map(Loc::of)
                .ok_or_else(|| format!("{} has no {n} field", f.name))
        };
        let d = Decoder {
            id: f.id,
            kind,
            pid: need("common_pid")?,
            dev: need("dev")?,
            sector: need("sector")?,
            sectors: f.field("nr_sector").map(Loc::of),
            rwbs: need("rwbs")?,
            comm: f.field("comm").map(Loc::of),
            error: f.field("error").map(Loc::of),
        };
        self.decoders.retain(|x| x.id != d.id);
        self.decoders.push(d);
        Ok(())
    }

    /// The event type id of a payload (the `common_type` field, which every
    /// format has at offset 0, 2 bytes: checked on the formats in `add`).
    fn decoder(&self, payload: &[u8]) -> Option<&Decoder> {
        let id = read_uint(payload, 0, 2)? as u16;
        self.decoders.iter().find(|d| d.id == id)
    }

    /// Decode one raw event; `None` for an event of another type or one too
    /// short for its format.
    pub fn decode(&self, ev: &RawEvent<'_>) -> Option<BlockEvent> {
        let d = self.decoder(ev.payload)?;
        let p = ev.payload;
        let get = |l: Loc| read_uint(p, l.off, l.size);
        let mut comm = [0u8; 16];
        if let Some(l) = d.comm {
            let s = p.get(l.off..l.off + l.size)?;
            let n = s.len().min(16);
            comm[..n].copy_from_slice(&s[..n]);
        }
        let rwbs = p.get(d.rwbs.off..d.rwbs.off + d.rwbs.size)?;
        let rwbs = &rwbs[..rwbs.iter().position(|&c| c == 0).unwrap_or(rwbs.len())];
        Some(BlockEvent {
            ts: ev.ts,
            kind: d.kind,
            dev: Dev::from_kernel(get(d.dev)?),
            sector: get(d.sector)?,
            sectors: d.sectors.and_then(get).unwrap_or(0) as u32,
            rwbs: Rwbs::parse(rwbs),
            pid: get(d.pid)? as u32 as i32,
            comm,
            error: d.error.and_then(get).map_or(0, |e| e as u32 as i32),
            tgid: 0,
            kernel: false,
        })
    }
}

/// The string a `__data_loc` field points at (offset in the low 16 bits,
/// length in the high 16, NUL excluded).
pub fn data_loc_str<'a>(payload: &'a [u8], f: &Field) -> Option<&'a [u8]> {
    let v = read_uint(payload, f.offset, f.size)? as u32;
    let (off, len) = ((v & 0xffff) as usize, (v >> 16) as usize);
    let s = payload.get(off..off + len)?;
    Some(&s[..s.iter().position(|&c| c == 0).unwrap_or(s.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::trace::layout::parse_event_format;

    #[test]
    fn rwbs_strings() {
        let r = Rwbs::parse(b"FWS");
        assert_eq!((r.op, r.preflush, r.sync, r.fua), (Some(Op::Write), true, true, false));
        assert_eq!(r.op(0), Op::Flush);
        assert_eq!(r.op(8), Op::Write);
        let r = Rwbs::parse(b"FF");
        assert_eq!((r.op, r.preflush), (Some(Op::Flush), true));
        let r = Rwbs::parse(b"WFS");
        assert_eq!((r.op, r.preflush, r.fua), (Some(Op::Write), false, true));
        assert_eq!(Rwbs::parse(b"RA").op, Some(Op::Read));
        assert_eq!(Rwbs::parse(b"DS").op, Some(Op::Discard));
        assert_eq!(Rwbs::parse(b"F").op, Some(Op::Flush));
        assert_eq!(Rwbs::parse(b"").op(0), Op::Other);
    }

    #[test]
    fn kernel_dev_numbers() {
        assert_eq!(Dev::from_kernel((254 << 20) | 3), Dev { major: 254, minor: 3 });
        assert_eq!(
            Dev::from_kernel((259 << 20) | 0xfffff),
            Dev {
                major: 259,
                minor: 0xfffff
            }
        );
    }

    #[test]
    fn data_loc_field() {
        let dir = crate::collect::trace::page::tests::DIR;
        let text = std::fs::read_to_string(format!("{dir}/events/block/block_rq_issue/format")).unwrap();
        let f = parse_event_format(&text).unwrap();
        let cmd = f.field("cmd").unwrap();
        let mut p = vec![0u8; 72];
        // cmd: 5 bytes "scsi\0" at offset 64
        p[60..64].copy_from_slice(&((5u32 << 16) | 64).to_ne_bytes());
        p[64..69].copy_from_slice(b"scsi\0");
        assert_eq!(data_loc_str(&p, cmd), Some(&b"scsi"[..]));
        // a location past the payload is refused, not a panic
        p[60..64].copy_from_slice(&((50u32 << 16) | 64).to_ne_bytes());
        assert_eq!(data_loc_str(&p, cmd), None);
    }
}
