//! Decoding one ring-buffer page as read from `per_cpu/cpuN/trace_pipe_raw`.
//!
//! A page is a header (`events/header_page`: a 64-bit time stamp, a commit
//! word holding the number of data bytes, then the data) followed by events.
//! Each event starts with a 32-bit word split into `type_len` and
//! `time_delta` (`events/header_event`):
//! - `type_len` 1..=data_max: a data event of `type_len` × 4 bytes;
//! - 0: a data event whose length (plus 4) is in the next 32-bit word;
//! - padding: a discarded event (`time_delta` ≠ 0, length in the next word),
//!   or the rest of the page (`time_delta` = 0);
//! - time extend: adds `next word << delta_bits | time_delta` to the clock;
//! - time stamp: sets the clock to that absolute value (the bits above 59
//!   come from the running clock, as the kernel's `rb_fix_abs_ts` does).
//!
//! The commit word also carries two flags that `header_page` does not
//! describe: bit 31, events were lost before this page, and bit 30, their
//! number is stored as a long right after the data.

use super::layout::{EventHeader, PageHeader};

/// Events were lost (overwritten or dropped) before this page.
pub const MISSED_EVENTS: u64 = 1 << 31;
/// The number lost is stored after the page's data.
pub const MISSED_STORED: u64 = 1 << 30;
/// The data length in the commit word (the bits below the flags).
const COMMIT_MASK: u64 = (1 << 27) - 1;

/// How a page and its events are laid out on this kernel.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    pub page: PageHeader,
    pub event: EventHeader,
}

/// Events lost before a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Missed {
    /// The page carries the missed-events flag.
    pub flagged: bool,
    /// How many, when the kernel stored the count.
    pub count: Option<u64>,
}

/// A page that passed the header checks.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    pub timestamp: u64,
    pub missed: Missed,
    data: &'a [u8],
    event: EventHeader,
}

/// One data event: its absolute time stamp (ns of the trace clock) and its
/// payload, which starts with the common fields of its `format` file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawEvent<'a> {
    pub ts: u64,
    pub payload: &'a [u8],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageError(pub String);

impl std::fmt::Display for PageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PageError {}

/// A native-endian unsigned integer of 1, 2, 4 or 8 bytes at `off`.
#[inline]
pub fn read_uint(b: &[u8], off: usize, size: usize) -> Option<u64> {
    let s = b.get(off..off.checked_add(size)?)?;
    Some(match size {
        1 => u64::from(s[0]),
        2 => u64::from(u16::from_ne_bytes([s[0], s[1]])),
        4 => u64::from(u32::from_ne_bytes([s[0], s[1], s[2], s[3]])),
        8 => u64::from_ne_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]]),
        _ => return None,
    })
}

fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    read_uint(b, off, 4).map(|v| v as u32)
}

impl<'a> Page<'a> {
    /// Check a page's header. `buf` may be longer than the page (only the
    /// header and the committed bytes are looked at).
    pub fn parse(buf: &'a [u8], layout: &Layout) -> Result<Page<'a>, PageError> {
        let h = &layout.page;
        let timestamp = read_uint(buf, h.timestamp_offset, h.timestamp_size)
            .ok_or_else(|| PageError(format!("page of {} bytes has no time stamp", buf.len())))?;
        let commit = read_uint(buf, h.commit_offset, h.commit_size)
            .ok_or_else(|| PageError(format!("page of {} bytes has no commit word", buf.len())))?;
        let size = (commit & COMMIT_MASK) as usize;
        if size > h.data_size {
            return Err(PageError(format!(
                "page commit says {size} bytes of data, a page holds {}",
                h.data_size
            )));
        }
        let data = buf.get(h.data_offset..h.data_offset + size).ok_or_else(|| {
            PageError(format!(
                "page of {} bytes is shorter than its {size} committed bytes",
                buf.len()
            ))
        })?;
        let mut missed = Missed::default();
        if commit & MISSED_EVENTS != 0 {
            missed.flagged = true;
            if commit & MISSED_STORED != 0 {
                missed.count = read_uint(buf, h.data_offset + size, h.commit_size);
            }
        }
        Ok(Page {
            timestamp,
            missed,
            data,
            event: layout.event,
        })
    }

    /// The data events, in order, with absolute time stamps.
    pub fn events(&self) -> Events<'a> {
        Events {
            data: self.data,
            pos: 0,
            ts: self.timestamp,
            h: self.event,
            failed: false,
        }
    }
}

/// Iterator over a page's data events; a malformed event ends it with one
/// error.
#[derive(Debug, Clone)]
pub struct Events<'a> {
    data: &'a [u8],
    pos: usize,
    ts: u64,
    h: EventHeader,
    failed: bool,
}

/// The kernel's `rb_fix_abs_ts`: an absolute time stamp holds 59 bits; the
/// top bits come from the running clock.
fn fix_abs(abs: u64, running: u64) -> u64 {
    const TS_MSB: u64 = 0xf8 << 56;
    if running & TS_MSB == 0 {
        return abs;
    }
    let v = abs | (running & TS_MSB);
    if v < running { v.wrapping_add(1 << 59) } else { v }
}

impl<'a> Events<'a> {
    fn fail(&mut self, what: String) -> Option<Result<RawEvent<'a>, PageError>> {
        self.failed = true;
        Some(Err(PageError(format!("event at page offset {}: {what}", self.pos))))
    }
}

impl<'a> Iterator for Events<'a> {
    type Item = Result<RawEvent<'a>, PageError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed && self.pos + 4 <= self.data.len() {
            let word = u32_at(self.data, self.pos)?;
            let bits = self.h.type_len_bits;
            let (type_len, delta) = if cfg!(target_endian = "little") {
                (word & ((1 << bits) - 1), word >> bits)
            } else {
                (
                    word >> self.h.time_delta_bits,
                    word & ((1 << self.h.time_delta_bits) - 1),
                )
            };
            let delta = u64::from(delta);
            let next_word = u32_at(self.data, self.pos + 4);
            if type_len == self.h.padding {
                if delta == 0 {
                    // The rest of the page is padding.
                    self.pos = self.data.len();
                    return None;
                }
                let Some(len) = next_word else {
                    return self.fail("padding without its length".into());
                };
                self.pos += 4 + len as usize;
                continue;
            }
            if type_len == self.h.time_extend || type_len == self.h.time_stamp {
                let Some(ext) = next_word else {
                    return self.fail("time extend without its second word".into());
                };
                let v = (u64::from(ext) << self.h.time_delta_bits) | delta;
                self.ts = if type_len == self.h.time_extend {
                    self.ts.wrapping_add(v)
                } else {
                    fix_abs(v, self.ts)
                };
                self.pos += 8;
                continue;
            }
            let (start, len) = if type_len == 0 {
                let Some(len) = next_word else {
                    return self.fail("long event without its length".into());
                };
                let Some(len) = (len as usize).checked_sub(4) else {
                    return self.fail(format!("long event of length {len}"));
                };
                (self.pos + 8, len)
            } else if type_len <= self.h.data_max {
                (self.pos + 4, type_len as usize * 4)
            } else {
                return self.fail(format!("unknown event type {type_len}"));
            };
            let Some(payload) = self.data.get(start..start + len) else {
                return self.fail(format!(
                    "{len} bytes of data run past the page's {} bytes",
                    self.data.len()
                ));
            };
            self.ts = self.ts.wrapping_add(delta);
            self.pos = start + len.div_ceil(4) * 4;
            return Some(Ok(RawEvent { ts: self.ts, payload }));
        }
        None
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::collect::trace::layout::{parse_header_event, parse_header_page};

    pub(crate) const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/trace-6.18");

    pub(crate) fn layout() -> Layout {
        let rd = |f: &str| std::fs::read_to_string(format!("{DIR}/events/{f}")).unwrap();
        Layout {
            page: parse_header_page(&rd("header_page")).unwrap(),
            event: parse_header_event(&rd("header_event")).unwrap(),
        }
    }

    /// A hand-built page: header word = type_len | delta << 5.
    struct Builder {
        data: Vec<u8>,
    }

    impl Builder {
        fn word(&mut self, type_len: u32, delta: u32) {
            self.data.extend_from_slice(&(type_len | (delta << 5)).to_ne_bytes());
        }
        fn u32(&mut self, v: u32) {
            self.data.extend_from_slice(&v.to_ne_bytes());
        }
        fn page(&self, ts: u64, flags: u64, missed: Option<u64>) -> Vec<u8> {
            let mut p = Vec::new();
            p.extend_from_slice(&ts.to_ne_bytes());
            p.extend_from_slice(&(self.data.len() as u64 | flags).to_ne_bytes());
            p.extend_from_slice(&self.data);
            if let Some(m) = missed {
                p.extend_from_slice(&m.to_ne_bytes());
            }
            p.resize(4096, 0);
            p
        }
    }

    #[test]
    fn hand_built_page() {
        let mut b = Builder { data: Vec::new() };
        // 1: small data event, 8 bytes, delta 100
        b.word(2, 100);
        b.u32(0xaaaa_0001);
        b.u32(7);
        // time extend of (3 << 27) | 5 ns
        b.word(30, 5);
        b.u32(3);
        // 2: data event, delta 10
        b.word(1, 10);
        b.u32(0xbbbb_0002);
        // a discarded event (padding with delta != 0): its length word
        // counts itself and the 12 bytes after it
        b.word(29, 1);
        b.u32(16);
        b.data.extend_from_slice(&[0xee; 12]);
        // absolute time stamp: 10_000_000_000 = (74 << 27) | 65_224_704
        let abs: u64 = 10_000_000_000;
        b.word(31, (abs & ((1 << 27) - 1)) as u32);
        b.u32((abs >> 27) as u32);
        // 3: long event (type_len 0): length word = 4 + 6 data bytes
        // (padded to 8), delta 7
        b.word(0, 7);
        b.u32(10);
        b.data.extend_from_slice(&[1, 2, 3, 4, 5, 6, 0, 0]);
        // rest of the page is padding (type 29, delta 0)
        b.word(29, 0);
        let buf = b.page(1_000, MISSED_EVENTS | MISSED_STORED, Some(42));
        let p = Page::parse(&buf, &layout()).unwrap();
        assert_eq!(p.timestamp, 1_000);
        assert_eq!(
            p.missed,
            Missed {
                flagged: true,
                count: Some(42)
            }
        );
        let ev: Vec<RawEvent> = p.events().map(Result::unwrap).collect();
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[0].ts, 1_100);
        assert_eq!(ev[0].payload, &[1, 0, 0xaa, 0xaa, 7, 0, 0, 0][..]);
        assert_eq!(ev[1].ts, 1_100 + (3 << 27) + 5 + 10);
        assert_eq!(ev[1].payload.len(), 4);
        assert_eq!(ev[2].ts, abs + 7);
        assert_eq!(ev[2].payload, &[1, 2, 3, 4, 5, 6][..]);
    }

    #[test]
    fn missed_flag_without_count() {
        let b = Builder { data: Vec::new() };
        let buf = b.page(5, MISSED_EVENTS, None);
        let p = Page::parse(&buf, &layout()).unwrap();
        assert_eq!(
            p.missed,
            Missed {
                flagged: true,
                count: None
            }
        );
        assert_eq!(p.events().count(), 0);
    }

    #[test]
    fn absolute_stamp_keeps_top_bits_of_the_running_clock() {
        let top = 0x08u64 << 56;
        assert_eq!(fix_abs(12345, top | 100), top | 12345);
        assert_eq!(fix_abs(5, 0), 5);
    }

    #[test]
    fn malformed_pages() {
        let l = layout();
        assert!(Page::parse(&[0u8; 10], &l).is_err());
        let mut b = Builder { data: Vec::new() };
        let mut huge = b.page(0, 0, None);
        huge[8..16].copy_from_slice(&5000u64.to_ne_bytes());
        assert!(Page::parse(&huge, &l).is_err());
        // an event longer than the committed data
        b.word(0, 1);
        b.u32(400);
        let buf = b.page(0, 0, None);
        let p = Page::parse(&buf, &l).unwrap();
        let r: Vec<_> = p.events().collect();
        assert_eq!(r.len(), 1);
        assert!(r[0].is_err());
    }
}
