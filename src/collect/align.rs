//! Partition alignment from sysfs alone: a partition's start (`start`, in
//! 512-byte units whatever the sector size) against the disk's physical
//! sector (`queue/physical_block_size`), its optimal I/O size
//! (`queue/optimal_io_size`, 0 when the device gives none) and 1 MiB (what
//! partitioning tools have used since 2010), with the kernel's own
//! `alignment_offset`. A start off the physical sector makes every write of
//! a physical sector touch two of them (the drive reads, modifies and
//! writes both); reads lose little.

use serde::{Deserialize, Serialize};

use super::devfacts::DeviceFacts;

const MIB: u64 = 1 << 20;

/// The verdict on one partition's start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlignVerdict {
    /// On a physical sector, the optimal I/O size (if any) and 1 MiB.
    Aligned,
    /// On a physical sector and the optimal I/O size, not on 1 MiB: fine
    /// for the drive, only short of the usual convention.
    AlignedNot1Mib,
    /// On a physical sector, not on the optimal I/O size the device asks
    /// for (a RAID stripe, an SSD's preferred unit).
    NotOptimal,
    /// Not on a physical sector: every write of one physical sector is a
    /// read-modify-write of two.
    Misaligned,
}

impl AlignVerdict {
    pub fn text(self) -> &'static str {
        match self {
            AlignVerdict::Aligned => "aligned",
            AlignVerdict::AlignedNot1Mib => "aligned to the physical sector, not to 1 MiB",
            AlignVerdict::NotOptimal => "aligned to the physical sector, not to the optimal I/O size",
            AlignVerdict::Misaligned => "misaligned to the physical sector",
        }
    }
}

/// One partition's start against each boundary that matters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alignment {
    pub start_bytes: u64,
    pub physical_block_size: u64,
    /// Bytes past the last physical-sector boundary (0 = on one).
    pub physical_offset: u64,
    /// `queue/optimal_io_size` where the device gives one (non-zero).
    pub optimal_io_size: Option<u64>,
    /// Bytes past the last optimal-I/O boundary; `None` without one.
    pub optimal_offset: Option<u64>,
    /// Bytes past the last 1 MiB boundary.
    pub mib_offset: u64,
    /// The kernel's `alignment_offset` of the partition, where it has one.
    pub kernel_alignment_offset: Option<u64>,
    pub verdict: AlignVerdict,
}

impl Alignment {
    /// The verdict with its numbers, in a sentence.
    pub fn explain(&self) -> String {
        let kib = exact_size;
        match self.verdict {
            AlignVerdict::Misaligned => format!(
                "starts {} B past a {} physical-sector boundary: every write of a physical sector touches two (read-modify-write)",
                self.physical_offset,
                kib(self.physical_block_size)
            ),
            AlignVerdict::NotOptimal => format!(
                "on the {} physical sector, {} B past a boundary of the optimal I/O size {}",
                kib(self.physical_block_size),
                self.optimal_offset.unwrap_or(0),
                kib(self.optimal_io_size.unwrap_or(0))
            ),
            AlignVerdict::AlignedNot1Mib => format!(
                "on the {} physical sector{}, {} past a 1 MiB boundary (the partitioning tools' default)",
                kib(self.physical_block_size),
                if self.optimal_io_size.is_some() {
                    " and the optimal I/O size"
                } else {
                    ""
                },
                kib(self.mib_offset)
            ),
            AlignVerdict::Aligned => format!(
                "on the {} physical sector{} and 1 MiB",
                kib(self.physical_block_size),
                match self.optimal_io_size {
                    Some(o) => format!(", the optimal I/O size {}", kib(o)),
                    None => String::new(),
                }
            ),
        }
    }
}

/// A size that is a whole number of MiB, KiB or bytes, exactly: "4 KiB",
/// "1 MiB", "3584 B".
pub fn exact_size(b: u64) -> String {
    if b >= MIB && b.is_multiple_of(MIB) {
        format!("{} MiB", b / MIB)
    } else if b >= 1024 && b.is_multiple_of(1024) {
        format!("{} KiB", b / 1024)
    } else {
        format!("{b} B")
    }
}

/// The alignment of a partition (`None` for a whole device, or when its
/// start or the physical sector size is unknown).
pub fn of(start_sector: Option<u64>, physical_block_size: Option<u64>, facts: &DeviceFacts) -> Option<Alignment> {
    let start_bytes = start_sector?.checked_mul(512)?;
    let phys = physical_block_size?.max(512);
    let optimal_io_size = facts.optimal_io_size.filter(|&o| o > 0);
    let physical_offset = start_bytes % phys;
    let optimal_offset = optimal_io_size.map(|o| start_bytes % o);
    let mib_offset = start_bytes % MIB;
    let verdict = if physical_offset != 0 {
        AlignVerdict::Misaligned
    } else if optimal_offset.is_some_and(|o| o != 0) {
        AlignVerdict::NotOptimal
    } else if mib_offset != 0 {
        AlignVerdict::AlignedNot1Mib
    } else {
        AlignVerdict::Aligned
    };
    Some(Alignment {
        start_bytes,
        physical_block_size: phys,
        physical_offset,
        optimal_io_size,
        optimal_offset,
        mib_offset,
        kernel_alignment_offset: facts.alignment_offset,
        verdict,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collect::Reader;
    use crate::collect::sysblock::{DeviceInfo, read_devices};

    fn of_dev(i: &DeviceInfo) -> Option<Alignment> {
        of(i.start_sector, i.physical_block_size, &i.facts)
    }

    fn part(start: u64, phys: u64, optimal: u64) -> DeviceInfo {
        let mut i = DeviceInfo::example("sda1");
        i.start_sector = Some(start);
        i.physical_block_size = Some(phys);
        i.facts.optimal_io_size = Some(optimal);
        i
    }

    #[test]
    fn hand_computed_cases() {
        let a = of_dev(&part(2048, 4096, 0)).unwrap();
        assert_eq!((a.start_bytes, a.verdict), (1 << 20, AlignVerdict::Aligned));
        assert_eq!(a.optimal_io_size, None);
        // Sector 63: 32,256 B = 7 × 4096 + 3584.
        let a = of_dev(&part(63, 4096, 0)).unwrap();
        assert_eq!((a.physical_offset, a.verdict), (3584, AlignVerdict::Misaligned));
        // 512-byte physical sectors: sector 63 is fine for the drive.
        let a = of_dev(&part(63, 512, 0)).unwrap();
        assert_eq!((a.mib_offset, a.verdict), (32256, AlignVerdict::AlignedNot1Mib));
        // 1 GiB + 4 KiB on a 128 KiB optimal I/O size.
        let a = of_dev(&part(2_097_160, 512, 131072)).unwrap();
        assert_eq!((a.optimal_offset, a.verdict), (Some(4096), AlignVerdict::NotOptimal));
        assert!(of_dev(&DeviceInfo::example("sda")).is_none());
    }

    #[test]
    fn fixture_partitions() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/devfacts");
        let devs = read_devices(&mut Reader::new(root));
        let v = |n: &str| devs.iter().find(|d| d.name == n).and_then(|d| d.alignment.clone());
        assert_eq!(v("nvme0n1p1").unwrap().verdict, AlignVerdict::Aligned);
        let p2 = v("nvme0n1p2").unwrap();
        assert_eq!(p2.verdict, AlignVerdict::NotOptimal);
        assert_eq!(p2.optimal_io_size, Some(131072));
        assert_eq!(v("sda1").unwrap().verdict, AlignVerdict::Aligned);
        let sda2 = v("sda2").unwrap();
        assert_eq!((sda2.verdict, sda2.physical_offset), (AlignVerdict::Misaligned, 3584));
        assert_eq!(sda2.kernel_alignment_offset, Some(512));
        assert_eq!(
            sda2.explain(),
            "starts 3584 B past a 4 KiB physical-sector boundary: every write of a physical sector touches two (read-modify-write)"
        );
        // 4Kn disk, partition at 128 KiB: on the sector, not 1 MiB.
        let sdb1 = v("sdb1").unwrap();
        assert_eq!(sdb1.verdict, AlignVerdict::AlignedNot1Mib);
        assert_eq!(sdb1.physical_block_size, 4096);
        assert_eq!(v("sda"), None);
    }
}
