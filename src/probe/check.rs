//! Did the reads reach the device? Compare the growth of the device's
//! `/proc/diskstats` read counters with what the probe issued, and notice
//! other I/O on the device that was large enough to disturb the probe.

use std::path::Path;

use serde::Serialize;

use crate::collect::{Reader, diskstats};

/// The counters of one device at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub read_ios: u64,
    pub read_sectors: u64,
    pub write_ios: u64,
}

/// Read the counters of `name` from `<root>/proc/diskstats`.
pub fn snapshot(root: &Path, name: &str) -> Option<Snapshot> {
    let mut r = Reader::new(root);
    let buf = r.read("/proc/diskstats").ok()?;
    diskstats::parse(buf)
        .disks
        .into_iter()
        .find(|d| d.name == name)
        .map(|d| Snapshot {
            read_ios: d.read.ios,
            read_sectors: d.read.sectors,
            write_ios: d.write.ios,
        })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reach {
    /// The device's read count and read bytes grew by at least 90% of the
    /// reads and bytes issued.
    Reached,
    /// Between 50% and 90%: some reads were served from a cache.
    Partial,
    /// Under 50%: the measurements are not the device's.
    NotReached,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DiskCheck {
    pub device: String,
    pub reads_issued: u64,
    pub bytes_issued: u64,
    pub device_reads: u64,
    pub device_read_bytes: u64,
    pub device_writes: u64,
    pub reach: Reach,
    /// Set when other I/O on the device was large enough to disturb the probe.
    pub disturbance: Option<String>,
}

impl DiskCheck {
    pub fn compare(device: &str, before: Snapshot, after: Snapshot, reads: u64, bytes: u64) -> Self {
        // A counter that went backwards (device re-created) counts as zero.
        let device_reads = after.read_ios.saturating_sub(before.read_ios);
        let device_read_bytes = after
            .read_sectors
            .saturating_sub(before.read_sectors)
            .saturating_mul(512);
        let device_writes = after.write_ios.saturating_sub(before.write_ios);
        // Both the count and the bytes must have grown: other I/O on the
        // device can make up the bytes with a few large reads, and a
        // device that splits requests can make up the count.
        let frac = |got: u64, want: u64| if want == 0 { 1.0 } else { got as f64 / want as f64 };
        let frac = frac(device_read_bytes, bytes).min(frac(device_reads, reads));
        let reach = if frac >= 0.9 {
            Reach::Reached
        } else if frac >= 0.5 {
            Reach::Partial
        } else {
            Reach::NotReached
        };
        let extra_bytes = device_read_bytes.saturating_sub(bytes);
        let mut other = Vec::new();
        if bytes > 0 && extra_bytes as f64 > 0.1 * bytes as f64 {
            other.push(format!("{} read by others", crate::format::decimal(extra_bytes as f64)));
        }
        if reads > 0 && device_writes as f64 > 0.1 * reads as f64 {
            other.push(format!("{device_writes} writes"));
        }
        let disturbance = (!other.is_empty()).then(|| {
            format!(
                "other I/O on {device} during the probe ({}) was large enough to disturb the numbers",
                other.join(", ")
            )
        });
        DiskCheck {
            device: device.to_string(),
            reads_issued: reads,
            bytes_issued: bytes,
            device_reads,
            device_read_bytes,
            device_writes,
            reach,
            disturbance,
        }
    }

    /// One line for reports: "loop3: 2016 reads for 2016 issued (100% of the bytes): reached the device".
    pub fn describe(&self) -> String {
        let pct = if self.bytes_issued == 0 {
            100.0
        } else {
            self.device_read_bytes as f64 / self.bytes_issued as f64 * 100.0
        };
        let what = match self.reach {
            Reach::Reached => "reached the device",
            Reach::Partial => "part of the reads were served from a cache",
            Reach::NotReached => "the reads did not reach the device",
        };
        format!(
            "diskstats {}: {} reads for {} issued ({pct:.0}% of the bytes): {what}",
            self.device, self.device_reads, self.reads_issued
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(r: u64, sec: u64, w: u64) -> Snapshot {
        Snapshot {
            read_ios: r,
            read_sectors: sec,
            write_ios: w,
        }
    }

    #[test]
    fn reads_that_reached_the_device() {
        let c = DiskCheck::compare("loop3", s(100, 800, 0), s(2116, 800 + 2016 * 8, 0), 2016, 2016 * 4096);
        assert_eq!(c.reach, Reach::Reached);
        assert_eq!(c.device_reads, 2016);
        assert_eq!(c.disturbance, None);
        assert_eq!(
            c.describe(),
            "diskstats loop3: 2016 reads for 2016 issued (100% of the bytes): reached the device"
        );
    }

    #[test]
    fn reads_that_did_not() {
        let c = DiskCheck::compare("vda", s(10, 80, 5), s(13, 104, 5), 2000, 2000 * 4096);
        assert_eq!(c.reach, Reach::NotReached);
        let c = DiskCheck::compare("vda", s(10, 80, 5), s(1410, 80 + 1400 * 8, 5), 2000, 2000 * 4096);
        assert_eq!(c.reach, Reach::Partial);
        // Others' large reads make up the bytes, not the count.
        let c = DiskCheck::compare("vda", s(0, 0, 0), s(141, 13_368, 0), 2016, 2016 * 4096);
        assert_eq!(c.reach, Reach::NotReached);
    }

    #[test]
    fn other_io_is_noticed_and_backwards_counters_are_zero() {
        let c = DiskCheck::compare("vda", s(0, 0, 0), s(3000, 3000 * 8, 400), 2000, 2000 * 4096);
        assert_eq!(c.reach, Reach::Reached);
        let d = c.disturbance.unwrap();
        assert!(d.contains("4.10 MB read by others") && d.contains("400 writes"), "{d}");
        let c = DiskCheck::compare("vda", s(500, 500, 0), s(10, 10, 0), 10, 4096);
        assert_eq!((c.device_reads, c.reach), (0, Reach::NotReached));
    }
}
