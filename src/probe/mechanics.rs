//! The spinning-disk estimator: pure code over timed reads, no I/O.
//!
//! A read on a disk with a moving head takes seek(distance) + a rotational
//! wait + the transfer. The rotational wait is uniform between 0 and one
//! revolution T when reads land at random angles, so:
//!
//! - over reads at short distances (one to a few tracks away), latency =
//!   track-to-track seek + U(0, T): the distribution is flat and T wide.
//!   T comes from its spread: for a uniform distribution p90 − p10 = 0.8 T.
//!   It counts as a rotation only when the spread is what a real spindle
//!   gives (3,600 to 15,000 RPM: T of 4 to 16.7 ms) and its shape is flat
//!   (quantiles evenly spaced); a heavy-tailed or narrow spread (SSD, loop,
//!   virtio) is "no rotation found", and no RPM is invented.
//! - with T known, the seek at each distance is the mean latency minus T/2
//!   (the mean rotational wait), and the full-stroke seek is that of reads
//!   alternating between the first and last 0.1% of the device.

use serde::Serialize;

/// Spindle speeds a disk can have: 3,600 to 15,000 RPM.
const MIN_REV_MS: f64 = 60_000.0 / 15_000.0 * 0.9;
const MAX_REV_MS: f64 = 60_000.0 / 3_600.0 * 1.1;
/// How far (share of the p10–p90 spread) the quantiles may bend away from
/// the straight line of a uniform distribution.
const MAX_BEND: f64 = 0.08;
/// A moving head: the longest seeks take at least this much longer than
/// the shortest (ms). Even a 15,000 RPM disk's full stroke is several ms.
const MIN_DISTANCE_EFFECT_MS: f64 = 1.5;
/// Fewest short-distance reads for a rotation estimate.
pub const MIN_SHORT_READS: usize = 100;

/// Latencies (ms) of reads at one distance from the previous read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DistanceSeries {
    /// Bytes between the end of the previous read and this one (the mean
    /// of the series).
    pub distance_bytes: u64,
    /// As a fraction of the device.
    pub fraction: f64,
    pub latencies_ms: Vec<f64>,
}

/// One point of the seek curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SeekPoint {
    pub distance_bytes: u64,
    pub fraction: f64,
    pub reads: usize,
    pub mean_ms: f64,
    pub p50_ms: f64,
    /// Mean latency minus half a revolution; `None` without a rotation.
    pub seek_ms: Option<f64>,
}

/// The rotation found in the short-distance reads, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rotation {
    pub found: bool,
    /// Revolution time from the spread (p90 − p10 = 0.8 T of a uniform wait).
    pub revolution_ms: Option<f64>,
    pub rpm: Option<f64>,
    /// What the spread looked like, in words.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    pub rotation: Rotation,
    pub track_to_track_ms: Option<f64>,
    pub full_stroke_ms: Option<f64>,
    /// Seek time against distance, shortest first.
    pub curve: Vec<SeekPoint>,
    /// The spread of mean latencies between the shortest and the longest
    /// distance (ms): near 0 where no head moves.
    pub distance_effect_ms: Option<f64>,
}

/// Quantile `q` (0..=1) of sorted values, linear between neighbours.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

fn sorted(v: &[f64]) -> Vec<f64> {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    s
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Look for a uniform rotational wait in the latencies of short-distance reads.
pub fn rotation(short_ms: &[f64]) -> Rotation {
    let s = sorted(short_ms);
    let none = |reason: String| Rotation {
        found: false,
        revolution_ms: None,
        rpm: None,
        reason,
    };
    if s.len() < MIN_SHORT_READS {
        return none(format!(
            "only {} short-distance reads (at least {MIN_SHORT_READS} are needed)",
            s.len()
        ));
    }
    let q = |p| quantile(&s, p).unwrap_or(0.0);
    let (p10, p25, p75, p90) = (q(0.10), q(0.25), q(0.75), q(0.90));
    let spread = p90 - p10;
    let rev = spread / 0.8;
    let shape = if p75 - p25 > 0.0 {
        spread / (p75 - p25)
    } else {
        f64::INFINITY
    };
    // Between p10 and p90 a uniform distribution's quantiles lie on a
    // straight line: the largest distance from it, as a share of the spread.
    let bend = (1..16)
        .map(|i| {
            let p = 0.10 + 0.05 * f64::from(i);
            let line = p10 + (p - 0.10) / 0.8 * spread;
            (q(p) - line).abs()
        })
        .fold(0.0, f64::max)
        / spread.max(f64::MIN_POSITIVE);
    if rev < MIN_REV_MS {
        return none(format!(
            "no rotation found: short-distance reads spread over {spread:.2} ms (p10–p90), less than a spindle's revolution (4 ms at 15,000 RPM) would give"
        ));
    }
    if rev > MAX_REV_MS {
        return none(format!(
            "no rotation found: short-distance reads spread over {spread:.2} ms (p10–p90), more than one revolution of a 3,600 RPM spindle"
        ));
    }
    // A uniform wait: p10–p90 is 1.6 × the interquartile range and the
    // quantiles in between lie on a line. Heavy tails (queueing, a host's
    // cache) give larger ratios and bent quantiles.
    if !(1.35..=1.9).contains(&shape) || bend > MAX_BEND {
        return none(format!(
            "no rotation found: the spread of short-distance reads ({spread:.2} ms p10–p90) is not flat like a rotational wait (p10–p90 / IQR {shape:.2}, uniform 1.6; quantiles up to {:.0}% of the spread off a straight line, at most {:.0}% allowed)",
            bend * 100.0,
            MAX_BEND * 100.0
        ));
    }
    Rotation {
        found: true,
        revolution_ms: Some(rev),
        rpm: Some(60_000.0 / rev),
        reason: format!(
            "short-distance reads spread flat over {spread:.2} ms (p10–p90 / IQR {shape:.2}, uniform 1.6): a rotational wait of one revolution"
        ),
    }
}

/// The whole estimate: rotation from `short`, seek curve from `series`
/// (any order), full stroke from `full`.
pub fn estimate(short: &[f64], series: &[DistanceSeries], full: &[f64]) -> Estimate {
    let mut rotation = rotation(short);
    // A flat wait alone is not a spindle: the head must be seen to move.
    let far = mean(full).or_else(|| series.iter().filter_map(|d| mean(&d.latencies_ms)).reduce(f64::max));
    if let (true, Some(near), Some(far)) = (rotation.found, mean(short), far)
        && far - near < MIN_DISTANCE_EFFECT_MS
    {
        rotation = Rotation {
            found: false,
            revolution_ms: None,
            rpm: None,
            reason: format!(
                "no rotation found: short-distance reads spread like a rotational wait, but the longest seeks take only {:+.2} ms longer than the shortest (a moving head adds at least {MIN_DISTANCE_EFFECT_MS} ms)",
                far - near
            ),
        };
    }
    let half = rotation.revolution_ms.map(|t| t / 2.0);
    let seek_of = |m: f64| half.map(|h| (m - h).max(0.0));
    let mut curve: Vec<SeekPoint> = series
        .iter()
        .filter_map(|d| {
            let s = sorted(&d.latencies_ms);
            let m = mean(&s)?;
            Some(SeekPoint {
                distance_bytes: d.distance_bytes,
                fraction: d.fraction,
                reads: s.len(),
                mean_ms: m,
                p50_ms: quantile(&s, 0.5)?,
                seek_ms: seek_of(m),
            })
        })
        .collect();
    curve.sort_by_key(|c| c.distance_bytes);
    let distance_effect_ms = match (curve.first(), mean(full).or(curve.last().map(|c| c.mean_ms))) {
        (Some(a), Some(b)) => Some(b - a.mean_ms),
        _ => None,
    };
    Estimate {
        track_to_track_ms: mean(short).and_then(seek_of),
        full_stroke_ms: mean(full).and_then(seek_of),
        rotation,
        curve,
        distance_effect_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::probe::random::Rng;

    /// A model disk: seek(d) = t2t + (full − t2t) · √(d / D) for d > 0,
    /// a uniform rotational wait of one revolution, a fixed transfer time
    /// and ±0.1 ms of noise.
    struct Disk {
        t2t: f64,
        full: f64,
        rev: f64,
        xfer: f64,
        rng: Rng,
    }

    impl Disk {
        fn seek(&self, frac: f64) -> f64 {
            self.t2t + (self.full - self.t2t) * frac.sqrt()
        }
        fn uniform(&mut self) -> f64 {
            (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
        }
        fn read(&mut self, frac: f64) -> f64 {
            let noise = (self.uniform() - 0.5) * 0.2;
            self.seek(frac) + self.uniform() * self.rev + self.xfer + noise
        }
    }

    const FRACS: [f64; 5] = [0.001, 0.01, 0.1, 0.3, 0.6];

    fn run(d: &mut Disk, n: usize) -> Estimate {
        // Short reads: one to four tracks over a 1 TB disk (≈ 2e-6 of it).
        let short: Vec<f64> = (0..n).map(|_| d.read(2e-6)).collect();
        let series: Vec<DistanceSeries> = FRACS
            .iter()
            .map(|&f| DistanceSeries {
                distance_bytes: (f * 1e12) as u64,
                fraction: f,
                latencies_ms: (0..n).map(|_| d.read(f)).collect(),
            })
            .collect();
        let full: Vec<f64> = (0..n).map(|_| d.read(0.998)).collect();
        estimate(&short, &series, &full)
    }

    fn within(got: f64, want: f64, tol: f64) -> bool {
        (got - want).abs() <= tol * want
    }

    #[test]
    fn recovers_a_7200_rpm_disk() {
        let mut d = Disk {
            t2t: 1.0,
            full: 16.0,
            rev: 60_000.0 / 7200.0,
            xfer: 0.05,
            rng: Rng::from_seed(7),
        };
        let e = run(&mut d, 3000);
        assert!(e.rotation.found, "{}", e.rotation.reason);
        let rpm = e.rotation.rpm.unwrap();
        eprintln!(
            "model 7200 RPM: got {rpm:.0} RPM, full stroke {:.2} ms (model {:.2}), t2t {:.2} ms (model {:.2})",
            e.full_stroke_ms.unwrap_or(f64::NAN),
            d.seek(0.998) + d.xfer,
            e.track_to_track_ms.unwrap_or(f64::NAN),
            d.seek(2e-6) + d.xfer
        );
        assert!(within(rpm, 7200.0, 0.10), "rpm {rpm}");
        // The transfer time rides on every seek: compare seek + transfer.
        let full = e.full_stroke_ms.unwrap();
        assert!(within(full, d.seek(0.998) + d.xfer, 0.10), "full stroke {full}");
        let t2t = e.track_to_track_ms.unwrap();
        assert!(within(t2t, d.seek(2e-6) + d.xfer, 0.10), "t2t {t2t}");
        assert_eq!(e.curve.len(), FRACS.len());
        for p in &e.curve {
            let want = d.seek(p.fraction) + d.xfer;
            let got = p.seek_ms.unwrap();
            eprintln!("  seek at {:.1}%: {got:.2} ms (model {want:.2})", p.fraction * 100.0);
            assert!(within(got, want, 0.10), "seek at {}: {got} vs {want}", p.fraction);
        }
    }

    #[test]
    fn recovers_a_5400_and_a_15000_rpm_disk() {
        for (rpm, t2t, full, seed) in [(5400.0, 2.0, 22.0, 11), (15000.0, 0.3, 7.0, 13)] {
            let mut d = Disk {
                t2t,
                full,
                rev: 60_000.0 / rpm,
                xfer: 0.02,
                rng: Rng::from_seed(seed),
            };
            let e = run(&mut d, 3000);
            assert!(e.rotation.found, "{rpm}: {}", e.rotation.reason);
            let got = e.rotation.rpm.unwrap();
            eprintln!("model {rpm} RPM: got {got:.0} RPM");
            assert!(within(got, rpm, 0.10), "{rpm}: got {got}");
            for p in &e.curve {
                let want = d.seek(p.fraction) + d.xfer;
                assert!(within(p.seek_ms.unwrap(), want, 0.10), "{rpm} at {}: {p:?}", p.fraction);
            }
        }
    }

    #[test]
    fn no_rotation_on_flash_or_a_loop_device() {
        // Flash: 0.08 ms ± a little, a rare slow read.
        let mut r = Rng::from_seed(3);
        let mut u = || (r.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        let flash: Vec<f64> = (0..500)
            .map(|i| 0.08 + u() * 0.02 + if i % 97 == 0 { 2.0 } else { 0.0 })
            .collect();
        let e = estimate(&flash, &[], &flash);
        assert!(!e.rotation.found);
        assert!(
            e.rotation.reason.starts_with("no rotation found"),
            "{}",
            e.rotation.reason
        );
        assert_eq!(
            (e.rotation.rpm, e.full_stroke_ms, e.track_to_track_ms),
            (None, None, None)
        );
        // Exponential queueing times with a mean of 5 ms: spread in the
        // spindle range, but not flat.
        let expo: Vec<f64> = (0..500).map(|_| -5.0 * (1.0 - u()).ln()).collect();
        let e = estimate(&expo, &[], &[]);
        assert!(!e.rotation.found, "{}", e.rotation.reason);
        assert!(e.rotation.reason.contains("not flat"), "{}", e.rotation.reason);
        // A flat 8 ms spread without any head movement: not a spindle.
        let flat: Vec<f64> = (0..500).map(|_| 1.0 + 8.0 * u()).collect();
        assert!(rotation(&flat).found);
        let e = estimate(&flat, &[], &flat);
        assert!(
            !e.rotation.found && e.rotation.reason.contains("longest seeks"),
            "{}",
            e.rotation.reason
        );
        // Too few reads: no estimate.
        assert!(!rotation(&[5.0; 10]).found);
    }

    #[test]
    fn quantiles() {
        let s = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&s, 0.5), Some(3.0));
        assert_eq!(quantile(&s, 0.25), Some(2.0));
        assert_eq!(quantile(&s, 0.1), Some(1.4));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
