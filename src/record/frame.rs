//! The recording's frames, pure over bytes: encoding, and a decoder that
//! survives a torn tail and corrupted frames.
//!
//! A frame is a fixed 24-byte head and a payload:
//!
//! ```text
//! magic "IOLf" | kind u8 | flags u8 | reserved u16 | length u32 | wall_ns u64 | crc32 u32 | payload
//! ```
//!
//! (integers little-endian; the CRC-32 covers the head before it and the
//! payload). The length is checked against [`MAX_PAYLOAD`] and against the
//! bytes that are there before anything is allocated. A frame whose CRC
//! does not match, or whose head is not a frame's, is skipped by looking
//! for the next magic word; a frame that runs past the end of the data with
//! no frame after it is a torn tail (the recorder was killed mid-write).

/// Every frame starts with these four bytes.
pub const FRAME_MAGIC: [u8; 4] = *b"IOLf";
/// Bytes before the payload.
pub const HEAD_LEN: usize = 24;
/// The largest payload a frame may announce (a sample of 100,000
/// processes compresses to far less).
pub const MAX_PAYLOAD: u32 = 64 << 20;

/// What a frame holds.
pub mod kind {
    /// The host facts of the samples that follow (JSON, see `file::Header`).
    pub const HOST: u8 = 1;
    /// One raw sample (zstd-compressed JSON).
    pub const SAMPLE: u8 = 2;
    /// The tracer's interval ending at the sample before it (zstd JSON,
    /// `model::trace::TraceInterval`), with `iolens record --trace`.
    pub const TRACE: u8 = 3;
}

/// Flag: the payload is zstd-compressed.
pub const FLAG_ZSTD: u8 = 1;

/// One frame found in the data: where its payload is, not a copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameRef {
    /// Offset of the frame's head.
    pub offset: usize,
    pub kind: u8,
    pub flags: u8,
    pub wall_ns: u64,
    /// The payload's range in the data.
    pub payload: (usize, usize),
}

impl FrameRef {
    /// The frame's bytes, head included.
    pub fn total_len(&self) -> usize {
        self.payload.1 - self.offset
    }
}

/// A problem the decoder stepped over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Damage {
    /// Bytes at `offset` that are not a valid frame (bad head, bad length
    /// or a CRC mismatch), skipped up to the next magic word.
    Corrupt {
        offset: usize,
        skipped: usize,
        why: &'static str,
    },
    /// The last frame was cut short: `bytes` from `offset` to the end.
    Torn { offset: usize, bytes: usize },
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::Corrupt { offset, skipped, why } => {
                write!(f, "corrupted frame at byte {offset} ({why}): {skipped} bytes skipped")
            }
            Damage::Torn { offset, bytes } => {
                write!(f, "torn last frame at byte {offset}: {bytes} bytes ignored")
            }
        }
    }
}

/// Encode one frame.
pub fn encode(kind: u8, flags: u8, wall_ns: u64, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEAD_LEN + payload.len());
    out.extend_from_slice(&FRAME_MAGIC);
    out.push(kind);
    out.push(flags);
    out.extend_from_slice(&0u16.to_le_bytes());
    // Callers never pass more than MAX_PAYLOAD (the writer checks);
    // saturate rather than wrap if one did: the frame then fails its check.
    out.extend_from_slice(&u32::try_from(payload.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(&wall_ns.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&out);
    crc.update(payload);
    out.extend_from_slice(&crc.finalize().to_le_bytes());
    out.extend_from_slice(payload);
    out
}

/// What is at one offset.
enum Step {
    Frame(FrameRef),
    /// Not a frame here.
    Bad(&'static str),
    /// A frame head whose payload runs past the end.
    Short,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn frame_at(data: &[u8], at: usize) -> Step {
    let Some(head) = data.get(at..at + HEAD_LEN) else {
        return Step::Short;
    };
    if head[..4] != FRAME_MAGIC {
        return Step::Bad("no frame magic");
    }
    let len = u32_at(head, 8);
    if len > MAX_PAYLOAD {
        return Step::Bad("length over the cap");
    }
    let end = at + HEAD_LEN + len as usize;
    if end > data.len() {
        return Step::Short;
    }
    let mut crc = crc32fast::Hasher::new();
    crc.update(&head[..20]);
    crc.update(&data[at + HEAD_LEN..end]);
    if crc.finalize() != u32_at(head, 20) {
        return Step::Bad("CRC mismatch");
    }
    let mut w = [0u8; 8];
    w.copy_from_slice(&head[12..20]);
    Step::Frame(FrameRef {
        offset: at,
        kind: head[4],
        flags: head[5],
        wall_ns: u64::from_le_bytes(w),
        payload: (at + HEAD_LEN, end),
    })
}

/// The next frame magic at or after `from`.
fn next_magic(data: &[u8], from: usize) -> Option<usize> {
    data.get(from..)?
        .windows(FRAME_MAGIC.len())
        .position(|w| w == FRAME_MAGIC)
        .map(|p| from + p)
}

/// Every valid frame in `data` (starting at `start`), and what was skipped.
/// Never panics and never allocates by a length read from the data.
pub fn scan(data: &[u8], start: usize) -> (Vec<FrameRef>, Vec<Damage>) {
    let mut frames = Vec::new();
    let mut damage = Vec::new();
    let mut at = start;
    while at < data.len() {
        match frame_at(data, at) {
            Step::Frame(f) => {
                at = f.payload.1;
                frames.push(f);
            }
            step => {
                // Whatever is wrong here, a whole frame further on means
                // this one was damaged; none means the tail was torn.
                match next_magic(data, at + 1) {
                    Some(next) if has_frame_from(data, next) => {
                        let why = match step {
                            Step::Bad(why) => why,
                            _ => "length past the next frame",
                        };
                        damage.push(Damage::Corrupt {
                            offset: at,
                            skipped: next - at,
                            why,
                        });
                        at = next;
                    }
                    _ => {
                        damage.push(Damage::Torn {
                            offset: at,
                            bytes: data.len() - at,
                        });
                        break;
                    }
                }
            }
        }
    }
    (frames, damage)
}

/// True when a valid frame starts at or after `from` (at a magic word).
fn has_frame_from(data: &[u8], mut from: usize) -> bool {
    loop {
        if let Step::Frame(_) = frame_at(data, from) {
            return true;
        }
        match next_magic(data, from + 1) {
            Some(n) => from = n,
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn three() -> (Vec<u8>, Vec<usize>) {
        let mut data = b"HEADER-0123".to_vec();
        let mut offsets = Vec::new();
        for (i, p) in [&b"first"[..], b"second payload", b"third"].iter().enumerate() {
            offsets.push(data.len());
            data.extend(encode(kind::SAMPLE, 0, 1000 + i as u64, p));
        }
        (data, offsets)
    }

    #[test]
    fn whole_frames_decode_with_their_fields() {
        let (data, offsets) = three();
        let (frames, damage) = scan(&data, 11);
        assert!(damage.is_empty(), "{damage:?}");
        assert_eq!(frames.len(), 3);
        assert_eq!(frames[1].offset, offsets[1]);
        assert_eq!(frames[1].wall_ns, 1001);
        assert_eq!(frames[1].kind, kind::SAMPLE);
        let (a, b) = frames[1].payload;
        assert_eq!(&data[a..b], b"second payload");
        assert_eq!(frames[1].total_len(), HEAD_LEN + 14);
    }

    #[test]
    fn a_torn_tail_keeps_every_whole_frame() {
        let (data, offsets) = three();
        for cut in offsets[2] + 1..data.len() {
            let (frames, damage) = scan(&data[..cut], 11);
            assert_eq!(frames.len(), 2, "cut at {cut}");
            assert_eq!(
                damage,
                vec![Damage::Torn {
                    offset: offsets[2],
                    bytes: cut - offsets[2]
                }]
            );
        }
    }

    #[test]
    fn a_corrupted_middle_frame_is_skipped_by_resync() {
        let (mut data, offsets) = three();
        // One flipped payload byte: CRC mismatch.
        data[offsets[1] + HEAD_LEN + 3] ^= 0x40;
        let (frames, damage) = scan(&data, 11);
        assert_eq!(frames.iter().map(|f| f.wall_ns).collect::<Vec<_>>(), vec![1000, 1002]);
        assert_eq!(
            damage,
            vec![Damage::Corrupt {
                offset: offsets[1],
                skipped: offsets[2] - offsets[1],
                why: "CRC mismatch"
            }]
        );
        // A length blown up past the end is a damaged frame too when a
        // whole frame follows, not a torn tail.
        let (mut data, offsets) = three();
        data[offsets[1] + 8..offsets[1] + 12].copy_from_slice(&1_000_000u32.to_le_bytes());
        let (frames, damage) = scan(&data, 11);
        assert_eq!(frames.len(), 2);
        assert!(matches!(damage[..], [Damage::Corrupt { .. }]), "{damage:?}");
        // Over the cap: refused before any allocation.
        data[offsets[1] + 8..offsets[1] + 12].copy_from_slice(&u32::MAX.to_le_bytes());
        let (_, damage) = scan(&data, 11);
        assert!(
            matches!(
                damage[..],
                [Damage::Corrupt {
                    why: "length over the cap",
                    ..
                }]
            ),
            "{damage:?}"
        );
    }
}
