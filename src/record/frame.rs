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
    /// The findings that hold after the sample before it (zstd JSON,
    /// `[model::findings::Finding]`); recordings made before findings
    /// have none (replay then runs the findings engine on the samples).
    pub const FINDINGS: u8 = 4;
    /// The per-file figures of the interval ending at the sample before it
    /// (zstd JSON, `record::files::RecordedFiles`), with `--trace` where the
    /// page-cache events are traced; recordings made before them have none
    /// (replay then says the per-file numbers are not recorded).
    pub const FILES: u8 = 5;
    /// The dirty throttle of the interval ending at the sample before it
    /// (zstd JSON, `record::dirty::RecordedThrottle`), with `--trace`;
    /// recordings made before it have none (replay: not traced).
    pub const DIRTY: u8 = 6;
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

/// The end of the frame that the head `head` (at `at`, of data `total`
/// bytes long) claims, or why there is none: the head's checks, before
/// its CRC.
fn claim(head: Option<&[u8]>, at: u64, total: u64) -> Result<u64, Step> {
    let Some(head) = head.filter(|h| h.len() >= HEAD_LEN) else {
        return Err(Step::Short);
    };
    if head[..4] != FRAME_MAGIC {
        return Err(Step::Bad("no frame magic"));
    }
    let len = u32_at(head, 8);
    if len > MAX_PAYLOAD {
        return Err(Step::Bad("length over the cap"));
    }
    let end = at + (HEAD_LEN as u64) + u64::from(len);
    if end > total {
        return Err(Step::Short);
    }
    Ok(end)
}

/// The next frame magic at or after `from`.
fn next_magic(data: &[u8], from: usize) -> Option<usize> {
    data.get(from..)?
        .windows(FRAME_MAGIC.len())
        .position(|w| w == FRAME_MAGIC)
        .map(|p| from + p)
}

/// Every valid frame in `data` (starting at `start`), and what was skipped.
/// Never panics, never allocates by a length read from the data, and takes
/// time linear in the data however the frames claimed overlap
/// ([`valid_frames`]).
pub fn scan(data: &[u8], start: usize) -> (Vec<FrameRef>, Vec<Damage>) {
    scan_counted(data, start).0
}

/// [`scan`], and the bytes it hashed.
pub fn scan_counted(data: &[u8], start: usize) -> ((Vec<FrameRef>, Vec<Damage>), u64) {
    let mut hashed = 0;
    let tail = data.get(start..).unwrap_or_default();
    // Reading a slice cannot fail.
    let valid = valid_frames(tail, start as u64, data.len() as u64, &mut hashed).unwrap_or_default();
    let frames = chain(&valid, start);
    let mut damage = Vec::new();
    let mut at = start;
    for f in &frames {
        // Between two frames: each bad offset skipped up to the next magic
        // word (the next frame's, at the latest).
        while at < f.offset {
            let next = next_magic(data, at + 1).unwrap_or(f.offset).min(f.offset);
            let why = match claim(data.get(at..at + HEAD_LEN), at as u64, data.len() as u64) {
                Err(Step::Bad(why)) => why,
                Err(Step::Short) => "length past the next frame",
                Ok(_) => "CRC mismatch",
            };
            damage.push(Damage::Corrupt {
                offset: at,
                skipped: next - at,
                why,
            });
            at = next;
        }
        at = f.payload.1;
    }
    // No whole frame after: a torn tail.
    if at < data.len() {
        damage.push(Damage::Torn {
            offset: at,
            bytes: data.len() - at,
        });
    }
    ((frames, damage), hashed)
}

/// The frames a reader of the data keeps, in order: the first valid frame
/// at or after `start`, then the first one at or after its end, and so on
/// (`valid` sorted by offset, as [`valid_frames`] gives them).
pub fn chain(valid: &[FrameRef], start: usize) -> Vec<FrameRef> {
    let mut out = Vec::new();
    let mut at = start;
    for f in valid {
        if f.offset >= at {
            out.push(*f);
            at = f.payload.1;
        }
    }
    out
}

/// Bytes read at a time by [`valid_frames`].
pub const SCAN_BUF: usize = 64 * 1024;

/// A frame head waiting for the pass to reach its end.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    end: u64,
    offset: u64,
    /// CRC of the head's first 20 bytes ^ CRC of the data before the payload.
    acc: u32,
    crc: u32,
    kind: u8,
    flags: u8,
    wall_ns: u64,
}

/// Every valid frame in the data that `r` yields, which starts at offset
/// `base` and ends at `total`, sorted by offset: one pass through a buffer
/// of [`SCAN_BUF`] bytes, hashing each byte once (plus 20 bytes a head:
/// `hashed` counts them), whatever the heads claim. The CRC of a frame is
/// made of the CRCs of the data before its payload and before its end
/// ([`super::crc`]), taken as the pass reaches them; it holds the frame
/// heads whose end it has not reached, and the valid frames found.
pub fn valid_frames(
    mut r: impl std::io::Read,
    base: u64,
    total: u64,
    hashed: &mut u64,
) -> std::io::Result<Vec<FrameRef>> {
    use std::cmp::Reverse;
    let mut buf = vec![0u8; SCAN_BUF];
    let mut pending = std::collections::BinaryHeap::new();
    let mut valid = Vec::new();
    // The buffer holds the data from `win`; the CRC covers it up to `cursor`.
    let (mut win, mut filled, mut cursor) = (base, 0usize, base);
    let mut crc = crc32fast::Hasher::new();
    let mut eof = false;
    // The first offset not yet searched for a magic word.
    let mut search = base;
    // Hash up to `to` (in the buffer) and settle the heads ending there.
    let advance = |to: u64, buf: &[u8], win: u64, cursor: &mut u64, crc: &mut crc32fast::Hasher, hashed: &mut u64| {
        let (a, b) = ((*cursor - win) as usize, (to - win) as usize);
        crc.update(&buf[a..b]);
        *hashed += (b - a) as u64;
        *cursor = to;
    };
    loop {
        while !eof && filled < buf.len() {
            match r.read(&mut buf[filled..]) {
                Ok(0) => eof = true,
                Ok(n) => filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        let end = win + filled as u64;
        let data = &buf[..filled];
        // Heads wholly in the buffer (or all that is left of the data).
        let mut at = (search - win) as usize;
        while let Some(q) = next_magic(data, at) {
            if q + HEAD_LEN > filled && !eof {
                break;
            }
            at = q + 1;
            let off = win + q as u64;
            let head = data.get(q..q + HEAD_LEN);
            let Ok(stop) = claim(head, off, total) else { continue };
            let Some(head) = head else { continue };
            let start = off + HEAD_LEN as u64;
            settle(
                &mut pending,
                &mut valid,
                start,
                |to, c: &mut crc32fast::Hasher| {
                    advance(to, data, win, &mut cursor, c, hashed);
                    c.clone().finalize()
                },
                &mut crc,
            );
            advance(start, data, win, &mut cursor, &mut crc, hashed);
            let mut h = crc32fast::Hasher::new();
            h.update(&head[..20]);
            *hashed += 20;
            let mut w = [0u8; 8];
            w.copy_from_slice(&head[12..20]);
            pending.push(Reverse(Pending {
                end: stop,
                offset: off,
                acc: h.finalize() ^ crc.clone().finalize(),
                crc: u32_at(head, 20),
                kind: head[4],
                flags: head[5],
                wall_ns: u64::from_le_bytes(w),
            }));
        }
        // What is left unsearched (a magic word or a head across the
        // buffer's end) is kept for the next read.
        search = (win + at as u64)
            .max(end.saturating_sub(HEAD_LEN as u64 - 1))
            .max(search)
            .min(end);
        if eof {
            search = end;
        }
        settle(
            &mut pending,
            &mut valid,
            end,
            |to, c: &mut crc32fast::Hasher| {
                advance(to, data, win, &mut cursor, c, hashed);
                c.clone().finalize()
            },
            &mut crc,
        );
        advance(end, data, win, &mut cursor, &mut crc, hashed);
        if eof {
            break;
        }
        let keep = (search - win) as usize;
        buf.copy_within(keep..filled, 0);
        filled -= keep;
        win = search;
    }
    valid.sort_by_key(|f: &FrameRef| f.offset);
    Ok(valid)
}

/// Settle the pending heads that end at or before `to`, in order of their
/// ends: `prefix(end)` hashes up to the end and gives the CRC there.
fn settle(
    pending: &mut std::collections::BinaryHeap<std::cmp::Reverse<Pending>>,
    valid: &mut Vec<FrameRef>,
    to: u64,
    mut prefix: impl FnMut(u64, &mut crc32fast::Hasher) -> u32,
    crc: &mut crc32fast::Hasher,
) {
    while let Some(std::cmp::Reverse(p)) = pending.peek().filter(|p| p.0.end <= to) {
        let at_end = prefix(p.end, crc);
        let payload = p.end - p.offset - HEAD_LEN as u64;
        if super::crc::shift(p.acc, payload) ^ at_end == p.crc {
            valid.push(FrameRef {
                offset: p.offset as usize,
                kind: p.kind,
                flags: p.flags,
                wall_ns: p.wall_ns,
                payload: (p.offset as usize + HEAD_LEN, p.end as usize),
            });
        }
        pending.pop();
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

    /// Frame heads every 24 bytes, each claiming half the data with a bad
    /// CRC (the crafted file of issue 33: 0.6 / 2.5 / 10 s of CPU at 1 / 2
    /// / 4 MB): every byte is hashed once, not once per head over it.
    #[test]
    fn overlapping_bad_heads_cost_a_linear_scan() {
        let n = 4 << 20;
        let mut data = Vec::with_capacity(n + 64);
        while data.len() + HEAD_LEN <= n {
            let mut head = encode(kind::SAMPLE, 0, 7, b"");
            head[8..12].copy_from_slice(&((n / 2) as u32).to_le_bytes());
            head[20] ^= 1;
            data.extend_from_slice(&head[..HEAD_LEN]);
        }
        let n = data.len();
        let ((frames, damage), hashed) = scan_counted(&data, 0);
        assert!(frames.is_empty());
        assert_eq!(damage, vec![Damage::Torn { offset: 0, bytes: n }]);
        assert!(hashed <= 2 * n as u64, "{hashed} bytes hashed for {n}");
        // With a whole frame at the end, every head before it is a
        // damaged frame, skipped one by one.
        let last = data.len();
        data.extend(encode(kind::SAMPLE, 0, 9, b"last"));
        let ((frames, damage), hashed) = scan_counted(&data, 0);
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].offset, last);
        assert_eq!(damage.len(), last / HEAD_LEN);
        assert!(
            hashed <= 2 * data.len() as u64,
            "{hashed} bytes hashed for {}",
            data.len()
        );
    }

    /// The pass through a small buffer finds what the whole data holds:
    /// heads across the buffer's end, frames longer than the buffer.
    #[test]
    fn the_buffered_pass_finds_every_frame() {
        let mut data = b"HEAD".to_vec();
        let mut want = Vec::new();
        for i in 0..40u64 {
            let len = (i as usize * 7919) % (3 * SCAN_BUF);
            let payload: Vec<u8> = (0..len).map(|k| (k * 31 + i as usize) as u8).collect();
            want.push(data.len());
            data.extend(encode(kind::SAMPLE, 0, i, &payload));
            if i % 5 == 0 {
                data.extend_from_slice(b"IOLfjunk");
            }
        }
        let (frames, damage) = scan(&data, 4);
        assert_eq!(frames.iter().map(|f| f.offset).collect::<Vec<_>>(), want);
        assert_eq!(damage.len(), 8, "{damage:?}");
    }
}
