//! Per-device rates between two `/proc/diskstats` samples, with the formulas
//! of `iostat -x` (see "What the numbers mean" in the crate docs).

use serde::Serialize;

use super::counters::{delta32, delta64};
use super::pattern::{self, Basis, Pattern};
use crate::collect::diskstats::{DiskStat, IoCounters};

/// Rates of one direction (read, write or discard) over an interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DirRates {
    /// Completed requests per second (r/s).
    pub ios_per_s: f64,
    /// Bytes per second (rkB/s × 1000).
    pub bytes_per_s: f64,
    /// Merged requests per second (rrqm/s).
    pub merges_per_s: f64,
    /// Share of requests merged, % (%rrqm); `None` when nothing was queued.
    pub merge_pct: Option<f64>,
    /// Average time per request in ms (r_await); `None` when no request completed.
    pub await_ms: Option<f64>,
    /// Average request size in bytes (rareq-sz × 1024); `None` when no request completed.
    pub req_bytes: Option<f64>,
    /// Raw deltas, kept for totals and the pattern rule.
    pub d_ios: u64,
    pub d_merges: u64,
    pub d_sectors: u64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct FlushRates {
    pub ios_per_s: f64,
    pub await_ms: Option<f64>,
}

/// One device's numbers over one interval.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiskRates {
    pub name: String,
    pub interval_s: f64,
    pub read: DirRates,
    pub write: DirRates,
    /// `None` on kernels without discard fields (before 4.18).
    pub discard: Option<DirRates>,
    /// `None` on kernels without flush fields (before 5.5).
    pub flush: Option<FlushRates>,
    /// Average queue length (aqu-sz).
    pub aqu_sz: f64,
    /// Percent of the interval with at least one request in flight (%util).
    /// Not clamped, like iostat's: io_ticks advance in jiffies, so a
    /// saturated device can show a little over 100 (clamp when drawing bars).
    pub util_pct: f64,
    /// Requests in flight at the end of the interval.
    pub in_flight: u64,
    /// SEQ / MIXED / RAND: of `seq_byte_share` when traced, else the
    /// counter estimate.
    pub pattern: Option<Pattern>,
    /// Share of requests that were sequential (0..1), from traced requests;
    /// `None` when not traced.
    pub seq_share: Option<f64>,
    /// Share of the requests' bytes in sequential requests (0..1), from
    /// traced requests: the figure shown with the label; `None` when not
    /// traced.
    pub seq_byte_share: Option<f64>,
    /// What `pattern` rests on: traced requests, or the counter estimate.
    pub pattern_basis: Basis,
}

impl DiskRates {
    pub fn total_ios_per_s(&self) -> f64 {
        self.read.ios_per_s + self.write.ios_per_s
    }

    /// Average of read and write await, weighted by requests (iostat's old "await").
    pub fn await_ms(&self) -> Option<f64> {
        let n = self.read.d_ios + self.write.d_ios;
        (n > 0).then(|| {
            (self.read.await_ms.unwrap_or(0.0) * self.read.d_ios as f64
                + self.write.await_ms.unwrap_or(0.0) * self.write.d_ios as f64)
                / n as f64
        })
    }

    /// True when nothing happened on the device in the interval.
    pub fn is_idle(&self) -> bool {
        self.read.d_ios == 0
            && self.write.d_ios == 0
            && self.discard.is_none_or(|d| d.d_ios == 0)
            && self.util_pct == 0.0
    }
}

fn dir_rates(p: &IoCounters, c: &IoCounters, dt_s: f64) -> Option<DirRates> {
    let d_ios = delta64(p.ios, c.ios)?;
    let d_merges = delta64(p.merges, c.merges)?;
    let d_sectors = delta64(p.sectors, c.sectors)?;
    let d_ticks = delta32(p.ticks, c.ticks)?;
    let per_s = |v: u64| v as f64 / dt_s;
    Some(DirRates {
        ios_per_s: per_s(d_ios),
        bytes_per_s: per_s(d_sectors) * 512.0,
        merges_per_s: per_s(d_merges),
        merge_pct: (d_merges > 0 || d_ios > 0).then(|| d_merges as f64 / (d_merges as f64 + d_ios as f64) * 100.0),
        await_ms: (d_ios > 0).then(|| d_ticks as f64 / d_ios as f64),
        req_bytes: (d_ios > 0).then(|| d_sectors as f64 * 512.0 / d_ios as f64),
        d_ios,
        d_merges,
        d_sectors,
    })
}

/// Why no rates could be computed for an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rebaseline {
    /// A 64-bit counter went backwards: the device was removed and re-added or reset.
    CounterWentBackwards,
    /// The device's diskseq changed: a new device under the same name.
    NewDevice,
    /// A time counter moved more than the wall clock allows.
    Implausible,
    /// The interval was empty or negative.
    NoTime,
    /// More sectors than the completed and in-flight requests can carry
    /// (a counter reset that left the request count ahead, a bad capture).
    SectorsBeyondRequests,
}

impl Rebaseline {
    /// Why, in words (batch text, detail view).
    pub fn text(self) -> &'static str {
        match self {
            Rebaseline::CounterWentBackwards => "a counter went backwards",
            Rebaseline::NewDevice => "a new device under the same name",
            Rebaseline::Implausible => "busy time beyond the wall clock",
            Rebaseline::NoTime => "no time between the samples",
            Rebaseline::SectorsBeyondRequests => "more sectors than the requests can carry",
        }
    }
}

/// The largest request or bio in 512-byte sectors on any device: the
/// kernel keeps their sizes in 32-bit byte counts (4 GiB).
pub const MAX_REQUEST_SECTORS: u64 = (u32::MAX as u64 + 1) / 512;

/// Whether Δsectors fits the requests of the interval: each direction
/// moves at most (Δios + requests in flight at either sample + 1) ×
/// the largest request. `max_read_sectors` is the largest read request of
/// the device (`max_sectors_kb` × 2 for a request-based device), else
/// [`MAX_REQUEST_SECTORS`]; writes (write-zeroes requests are counted as
/// writes and may be larger than `max_sectors_kb`) and discards are held
/// to [`MAX_REQUEST_SECTORS`] only. Legitimately fast devices (zram, md
/// over NVMe) pass: their sectors come with their requests.
pub fn sectors_fit(prev: &DiskStat, cur: &DiskStat, max_read_sectors: u64) -> Result<(), Rebaseline> {
    let in_flight = prev.in_flight.saturating_add(cur.in_flight).saturating_add(1);
    let fits = |p: &IoCounters, c: &IoCounters, per_request: u64| {
        let (Some(sectors), Some(ios)) = (delta64(p.sectors, c.sectors), delta64(p.ios, c.ios)) else {
            return true;
        };
        sectors <= ios.saturating_add(in_flight).saturating_mul(per_request)
    };
    let ok = fits(&prev.read, &cur.read, max_read_sectors.clamp(1, MAX_REQUEST_SECTORS))
        && fits(&prev.write, &cur.write, MAX_REQUEST_SECTORS)
        && match (&prev.discard, &cur.discard) {
            (Some(p), Some(c)) => fits(p, c, MAX_REQUEST_SECTORS),
            _ => true,
        };
    if ok {
        Ok(())
    } else {
        Err(Rebaseline::SectorsBeyondRequests)
    }
}

/// Rates between two samples of the same device. `Err` when the counters
/// cannot be compared (the caller re-baselines on `cur`).
pub fn disk_rates(prev: &DiskStat, cur: &DiskStat, dt_s: f64) -> Result<DiskRates, Rebaseline> {
    if dt_s <= 0.0 || !dt_s.is_finite() {
        return Err(Rebaseline::NoTime);
    }
    let back = Rebaseline::CounterWentBackwards;
    let read = dir_rates(&prev.read, &cur.read, dt_s).ok_or(back)?;
    let write = dir_rates(&prev.write, &cur.write, dt_s).ok_or(back)?;
    let discard = match (&prev.discard, &cur.discard) {
        (Some(p), Some(c)) => Some(dir_rates(p, c, dt_s).ok_or(back)?),
        _ => None,
    };
    let flush = match (&prev.flush, &cur.flush) {
        (Some(p), Some(c)) => {
            let d_ios = delta64(p.ios, c.ios).ok_or(back)?;
            let d_ticks = delta32(p.ticks, c.ticks).ok_or(back)?;
            Some(FlushRates {
                ios_per_s: d_ios as f64 / dt_s,
                await_ms: (d_ios > 0).then(|| d_ticks as f64 / d_ios as f64),
            })
        }
        _ => None,
    };
    let dt_ms = dt_s * 1000.0;
    let io_ticks = delta32(prev.io_ticks, cur.io_ticks).ok_or(back)?;
    // io_ticks can't advance faster than the wall clock; allow for the
    // kernel's jiffy granularity and a late sample. A bigger jump is a reset
    // that happened to leave the 64-bit counters ahead.
    if io_ticks as f64 > dt_ms * 1.1 + 1000.0 {
        return Err(Rebaseline::Implausible);
    }
    let weighted = delta32(prev.time_in_queue, cur.time_in_queue).ok_or(back)?;
    Ok(DiskRates {
        name: cur.name.clone(),
        interval_s: dt_s,
        read,
        write,
        discard,
        flush,
        aqu_sz: weighted as f64 / dt_ms,
        util_pct: io_ticks as f64 / dt_ms * 100.0,
        in_flight: cur.in_flight,
        pattern: pattern_of(&read, &write),
        seq_share: None,
        seq_byte_share: None,
        pattern_basis: Basis::Estimate,
    })
}

/// The pattern over reads and writes together (discards and flushes left out).
fn pattern_of(read: &DirRates, write: &DirRates) -> Option<Pattern> {
    pattern::classify(
        read.d_ios.saturating_add(write.d_ios),
        read.d_merges.saturating_add(write.d_merges),
        read.d_sectors.saturating_add(write.d_sectors).saturating_mul(512),
    )
}

/// Sum of several devices' rates over the same interval (for the total row).
pub fn sum(name: &str, rows: &[&DiskRates]) -> Option<DiskRates> {
    let first = rows.first()?;
    let add = |f: fn(&DiskRates) -> &DirRates| {
        let (mut ios, mut merges, mut sectors, mut ticks_weighted) = (0u64, 0u64, 0u64, 0.0);
        for r in rows {
            let d = f(r);
            ios += d.d_ios;
            merges += d.d_merges;
            sectors += d.d_sectors;
            ticks_weighted += d.await_ms.unwrap_or(0.0) * d.d_ios as f64;
        }
        let dt = first.interval_s;
        DirRates {
            ios_per_s: ios as f64 / dt,
            bytes_per_s: sectors as f64 * 512.0 / dt,
            merges_per_s: merges as f64 / dt,
            merge_pct: (ios + merges > 0).then(|| merges as f64 / (ios + merges) as f64 * 100.0),
            await_ms: (ios > 0).then(|| ticks_weighted / ios as f64),
            req_bytes: (ios > 0).then(|| sectors as f64 * 512.0 / ios as f64),
            d_ios: ios,
            d_merges: merges,
            d_sectors: sectors,
        }
    };
    let read = add(|r| &r.read);
    let write = add(|r| &r.write);
    Some(DiskRates {
        name: name.to_string(),
        interval_s: first.interval_s,
        read,
        write,
        discard: None,
        flush: None,
        aqu_sz: rows.iter().map(|r| r.aqu_sz).sum(),
        util_pct: rows.iter().map(|r| r.util_pct).fold(0.0, f64::max),
        in_flight: rows.iter().map(|r| r.in_flight).sum(),
        pattern: pattern_of(&read, &write),
        seq_share: None,
        seq_byte_share: None,
        pattern_basis: Basis::Estimate,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::diskstats::parse_line;

    fn line(s: &str) -> DiskStat {
        parse_line(s.as_bytes()).unwrap()
    }

    #[test]
    fn hand_computed_interval() {
        // Over 2 s: 200 reads (50 merged) of 1600 sectors in 300 ms, 100
        // writes (100 merged) of 800 sectors in 900 ms, io_ticks 1000 ms,
        // time_in_queue 1200 ms, 10 flushes taking 20 ms.
        let a = line("8 0 sda 1000 100 8000 500 500 200 4000 1000 0 5000 6000 0 0 0 0 40 60");
        let b = line("8 0 sda 1200 150 9600 800 600 300 4800 1900 2 6000 7200 0 0 0 0 50 80");
        let r = disk_rates(&a, &b, 2.0).unwrap();
        assert_eq!(r.read.ios_per_s, 100.0);
        assert_eq!(r.read.bytes_per_s, 1600.0 * 512.0 / 2.0);
        assert_eq!(r.read.merges_per_s, 25.0);
        assert_eq!(r.read.merge_pct, Some(20.0));
        assert_eq!(r.read.await_ms, Some(1.5));
        assert_eq!(r.read.req_bytes, Some(4096.0));
        assert_eq!(r.write.ios_per_s, 50.0);
        assert_eq!(r.write.merge_pct, Some(50.0));
        assert_eq!(r.write.await_ms, Some(9.0));
        assert_eq!(r.write.req_bytes, Some(4096.0));
        assert_eq!(r.aqu_sz, 0.6);
        assert_eq!(r.util_pct, 50.0);
        assert_eq!(r.flush.unwrap().ios_per_s, 5.0);
        assert_eq!(r.flush.unwrap().await_ms, Some(2.0));
        assert_eq!(r.discard.unwrap().await_ms, None);
        assert_eq!(r.in_flight, 2);
        // 300 requests of 4 KiB, 150 merges out of 450: RAND? no, 33% merged → MIXED.
        assert_eq!(r.pattern, Some(Pattern::Mixed));
        assert_eq!(r.await_ms(), Some((1.5 * 200.0 + 9.0 * 100.0) / 300.0));
    }

    #[test]
    fn no_requests_means_no_await_not_zero() {
        let a = line("8 0 sda 1 0 8 1 0 0 0 0 0 1 1");
        let r = disk_rates(&a, &a, 1.0).unwrap();
        assert_eq!(r.read.await_ms, None);
        assert_eq!(r.read.req_bytes, None);
        assert_eq!(r.read.merge_pct, None);
        assert_eq!(r.discard, None);
        assert_eq!(r.flush, None);
        assert!(r.is_idle());
    }

    #[test]
    fn tick_counters_wrap_at_32_bits() {
        // read ticks 4294967000 → 200 (496 ms), io_ticks 4294967295 → 499 (500 ms).
        let a = line("8 0 sda 100 0 800 4294967000 0 0 0 0 0 4294967295 4294967290");
        let b = line("8 0 sda 110 0 880 200 0 0 0 0 0 499 494");
        let r = disk_rates(&a, &b, 1.0).unwrap();
        assert_eq!(r.read.await_ms, Some(49.6));
        assert_eq!(r.util_pct, 50.0);
        assert_eq!(r.aqu_sz, 0.5);
    }

    #[test]
    fn counters_going_backwards_rebaseline() {
        let a = line("8 0 sda 5000 0 80000 100 0 0 0 0 0 100 100");
        let b = line("8 0 sda 10 0 80 1 0 0 0 0 0 1 1");
        assert_eq!(disk_rates(&a, &b, 1.0), Err(Rebaseline::CounterWentBackwards));
        assert_eq!(disk_rates(&a, &a, 0.0), Err(Rebaseline::NoTime));
    }

    #[test]
    fn sectors_beyond_what_the_requests_carry_rebaseline() {
        // max_sectors_kb 1280: a read request carries at most 2560 sectors.
        // 10 reads + 0 + 2 in flight + 1 = 13 requests: 33,280 sectors.
        let a = line("8 0 sda 100 0 800 10 0 0 0 0 0 10 10");
        let b = line("8 0 sda 110 0 34080 20 0 0 0 0 2 20 20");
        assert_eq!(sectors_fit(&a, &b, 2560), Ok(()));
        let c = line("8 0 sda 110 0 34081 20 0 0 0 0 2 20 20");
        assert_eq!(sectors_fit(&a, &c, 2560), Err(Rebaseline::SectorsBeyondRequests));
        // The 511 PB/s jump: one more read and 2^60 more sectors.
        let d = line("8 0 sda 101 0 1152921504606847776 11 0 0 0 0 0 11 11");
        assert_eq!(
            sectors_fit(&a, &d, MAX_REQUEST_SECTORS),
            Err(Rebaseline::SectorsBeyondRequests)
        );
        // Writes are held to 4 GiB per request only (write-zeroes): 1 write
        // of 3 GiB with nothing in flight passes; 2 writes allow (2 + 1) ×
        // 8 Mi = 25,165,824 sectors, and one sector more does not pass.
        let w = line("8 0 sda 100 0 800 10 1 0 6291456 5 0 10 10");
        assert_eq!(sectors_fit(&a, &w, 2560), Ok(()));
        let w2 = line("8 0 sda 100 0 800 10 2 0 25165825 5 0 10 10");
        assert_eq!(sectors_fit(&a, &w2, 2560), Err(Rebaseline::SectorsBeyondRequests));
    }

    #[test]
    fn fast_devices_are_not_flagged() {
        // zram (bio-based, 4 GiB bound): 1 s of 2.3 GB/s in 4 KiB pages.
        let a = line("251 0 zram0 1000 0 8000 1 0 0 0 0 0 1 1");
        let b = line("251 0 zram0 562500 0 4508000 300 0 0 0 0 0 1000 300");
        assert_eq!(sectors_fit(&a, &b, MAX_REQUEST_SECTORS), Ok(()));
        // NVMe with max_sectors_kb 128: 7 GB/s in 128 KiB reads (53,405
        // reads of 256 sectors each, 64 in flight).
        let n = line("259 0 nvme0n1 0 0 0 0 0 0 0 0 0 0 0");
        let m = line("259 0 nvme0n1 53405 0 13671680 900 0 0 0 0 64 1000 900");
        assert_eq!(sectors_fit(&n, &m, 256), Ok(()));
        // md over NVMe: 4 GiB bound, 1 MiB bios at 14 GB/s.
        let x = line("9 0 md0 13351 0 27342848 0 0 0 0 0 0 0 0");
        assert_eq!(sectors_fit(&n, &x, MAX_REQUEST_SECTORS), Ok(()));
        // `dd if=/dev/zero of=/dev/sdb bs=1M`: 1 MiB writes at 2 GB/s.
        let z = line("8 16 sdb 0 0 0 0 1907 0 3905536 900 32 1000 900");
        assert_eq!(sectors_fit(&n, &z, 2560), Ok(()));
    }

    #[test]
    fn impossible_busy_time_rebaselines() {
        let a = line("8 0 sda 5000 0 80000 100 0 0 0 0 0 100 100");
        let b = line("8 0 sda 5001 0 80008 101 0 0 0 0 0 900000 100");
        assert_eq!(disk_rates(&a, &b, 1.0), Err(Rebaseline::Implausible));
    }

    #[test]
    fn totals_add_up() {
        let a = line("8 0 sda 0 0 0 0 0 0 0 0 0 0 0");
        let b = line("8 0 sda 100 0 800 100 0 0 0 0 0 500 100");
        let c = line("8 16 sdb 300 0 2400 900 0 0 0 0 0 800 900");
        let r1 = disk_rates(&a, &b, 1.0).unwrap();
        let r2 = disk_rates(&a, &c, 1.0).unwrap();
        let t = sum("total", &[&r1, &r2]).unwrap();
        assert_eq!(t.read.ios_per_s, 400.0);
        assert_eq!(t.read.bytes_per_s, 3200.0 * 512.0);
        assert_eq!(t.read.await_ms, Some(2.5));
        assert_eq!(t.util_pct, 80.0);
        assert_eq!(t.aqu_sz, 1.0);
    }
}
