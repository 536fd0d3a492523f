//! Parser for `/proc/diskstats`.
//!
//! Written here rather than taken from the procfs crate because procfs fails
//! the whole read when one line is malformed; here a bad line is skipped and
//! reported, and the rest of the devices still show.
//!
//! Kernels print 14 fields (major, minor, name + 11 counters), 18 (4.18+:
//! discard) or 20 (5.5+: flush). Fields a kernel lacks are `None` ("not
//! available"), never zero. Sectors are always 512 bytes in this file.

use serde::{Deserialize, Serialize};

/// Counters of one direction (read, write or discard).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct IoCounters {
    /// Completed requests.
    pub ios: u64,
    /// Requests merged with an adjacent one before completion.
    pub merges: u64,
    /// 512-byte sectors transferred.
    pub sectors: u64,
    /// Milliseconds spent on these requests (printed as a 32-bit value).
    pub ticks: u64,
}

/// Flush counters (kernel 5.5+).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct FlushCounters {
    pub ios: u64,
    pub ticks: u64,
}

/// One line of `/proc/diskstats`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiskStat {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub read: IoCounters,
    pub write: IoCounters,
    /// Requests in flight right now (a gauge, not a counter).
    pub in_flight: u64,
    /// Milliseconds the device had at least one request in flight.
    pub io_ticks: u64,
    /// Weighted milliseconds spent doing I/Os (sum of each request's time in queue).
    pub time_in_queue: u64,
    pub discard: Option<IoCounters>,
    pub flush: Option<FlushCounters>,
}

/// Result of parsing a whole file: the good lines and a note per bad line.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Parsed {
    pub disks: Vec<DiskStat>,
    pub skipped: Vec<String>,
}

/// Parse the whole file. Lines with fewer than 14 fields, non-numeric
/// counters, or an invalid name are skipped and listed in `skipped` (the
/// line as read, not escaped: its readers escape it once).
pub fn parse(buf: &[u8]) -> Parsed {
    let mut out = Parsed::default();
    for (i, line) in buf.split(|&c| c == b'\n').enumerate() {
        if line.trim_ascii().is_empty() {
            continue;
        }
        match parse_line(line) {
            Some(d) => out.disks.push(d),
            None => out.skipped.push(format!(
                "/proc/diskstats line {}: {}",
                i + 1,
                // Raw: escaped where it is shown (text) or by JSON.
                String::from_utf8_lossy(&line[..line.len().min(80)])
            )),
        }
    }
    out
}

/// Parse one line; `None` when it is not a valid diskstats line.
pub fn parse_line(line: &[u8]) -> Option<DiskStat> {
    let mut fields = line.split(|c| c.is_ascii_whitespace()).filter(|f| !f.is_empty());
    let major = u32::try_from(super::parse_u64(fields.next()?)?).ok()?;
    let minor = u32::try_from(super::parse_u64(fields.next()?)?).ok()?;
    let name = fields.next()?;
    // The name becomes a path component (/sys/block/<name>): never a
    // slash, "." or ".." (a captured tree could name a device "../../etc").
    if name.iter().any(|&c| c < 0x21 || c == 0x7f || c == b'/') || name == b"." || name == b".." {
        return None;
    }
    let name = std::str::from_utf8(name).ok()?.to_string();
    let mut n = [0u64; 17];
    let mut count = 0;
    for f in fields {
        if count == n.len() {
            break; // future kernels may add fields; ignore the extra ones
        }
        n[count] = super::parse_u64(f)?;
        count += 1;
    }
    if count < 11 {
        return None;
    }
    let io = |i: usize| IoCounters {
        ios: n[i],
        merges: n[i + 1],
        sectors: n[i + 2],
        ticks: n[i + 3],
    };
    Some(DiskStat {
        major,
        minor,
        name,
        read: io(0),
        write: io(4),
        in_flight: n[8],
        io_ticks: n[9],
        time_in_queue: n[10],
        discard: (count >= 15).then(|| io(11)),
        flush: (count >= 17).then_some(FlushCounters {
            ios: n[15],
            ticks: n[16],
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_fields() {
        let d = parse_line(b" 253       0 vda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17").unwrap();
        assert_eq!((d.major, d.minor, d.name.as_str()), (253, 0, "vda"));
        assert_eq!(
            d.read,
            IoCounters {
                ios: 1,
                merges: 2,
                sectors: 3,
                ticks: 4
            }
        );
        assert_eq!(
            d.write,
            IoCounters {
                ios: 5,
                merges: 6,
                sectors: 7,
                ticks: 8
            }
        );
        assert_eq!((d.in_flight, d.io_ticks, d.time_in_queue), (9, 10, 11));
        assert_eq!(
            d.discard,
            Some(IoCounters {
                ios: 12,
                merges: 13,
                sectors: 14,
                ticks: 15
            })
        );
        assert_eq!(d.flush, Some(FlushCounters { ios: 16, ticks: 17 }));
    }

    #[test]
    fn fourteen_and_eighteen_fields_mark_missing_as_unavailable() {
        let d = parse_line(b"8 0 sda 1 2 3 4 5 6 7 8 9 10 11").unwrap();
        assert_eq!(d.discard, None);
        assert_eq!(d.flush, None);
        let d = parse_line(b"8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15").unwrap();
        assert!(d.discard.is_some());
        assert_eq!(d.flush, None);
    }

    #[test]
    fn names_that_are_not_one_path_component_are_skipped() {
        for name in ["../../etc", "..", ".", "a/b"] {
            let p = parse(format!("8 0 {name} 1 2 3 4 5 6 7 8 9 10 11\n").as_bytes());
            assert!(p.disks.is_empty() && p.skipped.len() == 1, "{name}");
        }
    }

    #[test]
    fn bad_lines_are_skipped_not_fatal() {
        let p = parse(b"8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 1 sda1 1 2 3\n8 2 sdb x 2 3 4 5 6 7 8 9 10 11\n\n8 16 sdb 1 2 3 4 5 6 7 8 9 10 11");
        assert_eq!(p.disks.len(), 2);
        assert_eq!(p.skipped.len(), 2);
        assert!(p.skipped[0].contains("line 2"), "{:?}", p.skipped);
    }
}
