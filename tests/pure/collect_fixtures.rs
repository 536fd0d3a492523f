//! Parsers and the full `Collector::sample()` on captured fixture trees.
//!
//! - `vm-6.18`: this development VM (kernel 6.18, virtio disk, a loop device
//!   attached read-only during the capture), captured with
//!   `tests/fixtures/capture.sh`.
//! - `root-4.14`: 14-field diskstats (kernels before 4.18, no discard).
//! - `root-5.0`: 18-field diskstats (4.18 to 5.4: discard, no flush).
//! - `diskstats-malformed`: bad, truncated and odd lines among good ones.

use iolens::collect::Collector;
use iolens::collect::diskstats::{self, FlushCounters, IoCounters};
use iolens::collect::sample::ProcScope;
use iolens::collect::sysblock::DevKind;
use iolens::collect::system::PsiLine;

const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

fn io(ios: u64, merges: u64, sectors: u64, ticks: u64) -> IoCounters {
    IoCounters {
        ios,
        merges,
        sectors,
        ticks,
    }
}

#[test]
fn full_sample_of_the_captured_vm() {
    let mut c = Collector::new(format!("{FIX}/vm-6.18"));
    let s = c.sample();
    assert!(s.errors.is_empty(), "{:?}", s.errors);

    // /proc/diskstats: 10 devices, 20 fields each.
    let names: Vec<&str> = s.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "loop0", "loop1", "loop2", "loop3", "loop4", "loop5", "loop6", "loop7", "vda", "zram0"
        ]
    );
    let vda = s.disks.iter().find(|d| d.name == "vda").unwrap();
    assert_eq!((vda.major, vda.minor), (254, 0));
    assert_eq!(vda.read, io(51143, 8990, 6189394, 19651));
    assert_eq!(vda.write, io(11423, 36987, 12680440, 44999));
    assert_eq!((vda.in_flight, vda.io_ticks, vda.time_in_queue), (0, 10352, 67129));
    assert_eq!(vda.discard, Some(io(8310, 98, 2847688, 2274)));
    assert_eq!(vda.flush, Some(FlushCounters { ios: 629, ticks: 204 }));
    let loop0 = &s.disks[0];
    assert_eq!(loop0.read, io(200, 0, 25600, 5));

    // sysfs facts.
    assert_eq!(s.devices.len(), 10);
    let vda = s.devices.iter().find(|d| d.name == "vda").unwrap();
    assert_eq!(vda.kind, DevKind::Disk);
    assert_eq!(vda.size_bytes, Some(536_870_912 * 512));
    assert_eq!(vda.rotational, Some(true));
    assert_eq!(vda.logical_block_size, Some(512));
    assert_eq!(vda.physical_block_size, Some(4096));
    assert_eq!(vda.scheduler.as_deref(), Some("mq-deadline"));
    assert_eq!(vda.nr_requests, Some(256));
    assert_eq!(vda.max_sectors_kb, Some(4096));
    assert_eq!(vda.read_ahead_kb, Some(8192));
    assert_eq!(vda.diskseq, Some(9));
    assert_eq!(vda.queue_depth, None);
    assert!(vda.counts_in_total());
    // Device facts: a virtio disk with a volatile cache, discard in 4 KiB units.
    let f = &vda.facts;
    assert_eq!(f.transport.as_ref().map(|t| t.kind.as_str()), Some("virtio"));
    assert!(f.rotational_caveat.is_some_and(|c| c.contains("virtio-blk")));
    assert_eq!(f.write_cache.as_deref(), Some("write back"));
    assert_eq!(f.fua, Some(false));
    assert_eq!(f.discard, Some(true));
    assert_eq!(f.discard_granularity, Some(4096));
    assert_eq!(f.discard_max_bytes, Some(1 << 30));
    assert_eq!(f.zoned.as_deref(), Some("none"));
    assert_eq!(f.iostats, Some(true));
    assert_eq!(f.minimum_io_size, Some(4096));
    assert_eq!(f.alignment_offset, Some(0));
    // Mounts come from <root>/proc/mounts under a captured tree.
    assert_eq!(vda.mounts.len(), 1);
    assert_eq!(vda.mounts[0].mount_point, "/");
    assert_eq!(vda.mounts[0].fs_type, "ext4");
    let lo = s.devices.iter().find(|d| d.name == "loop0").unwrap();
    assert_eq!(lo.kind, DevKind::Loop);
    assert_eq!(lo.backing_file.as_deref(), Some("/tmp/cap-loop.img"));
    assert_eq!(lo.size_bytes, Some(64 << 20));
    assert_eq!(lo.scheduler.as_deref(), Some("none"));
    assert_eq!(lo.diskseq, Some(13));
    assert!(!lo.counts_in_total());
    assert_eq!(lo.facts.transport, None);
    assert!(lo.facts.rotational_caveat.is_some_and(|c| c.contains("backing file")));
    let zram = s.devices.iter().find(|d| d.name == "zram0").unwrap();
    assert_eq!(zram.kind, DevKind::Zram);
    assert_eq!(zram.scheduler, None);

    // System files.
    let cpu = s.cpu.unwrap();
    assert_eq!(
        (
            cpu.user,
            cpu.nice,
            cpu.system,
            cpu.idle,
            cpu.iowait,
            cpu.irq,
            cpu.softirq,
            cpu.steal
        ),
        (22971, 10120, 8788, 168185, 660, 0, 136, 132)
    );
    assert_eq!(cpu.procs_blocked, Some(0));
    let psi = s.psi.unwrap();
    assert_eq!(
        psi.some,
        Some(PsiLine {
            avg10: 0.25,
            avg60: 0.29,
            avg300: 0.26,
            total_us: 5_434_451
        })
    );
    assert_eq!(psi.full.unwrap().total_us, 4_390_913);
    let mem = s.mem.unwrap();
    assert_eq!(mem.total_bytes, 24_683_656 * 1024);
    assert_eq!(mem.dirty_bytes, 48_260 * 1024);
    assert_eq!(mem.writeback_bytes, 0);

    // The capture script's own process.
    assert_eq!(s.procs.procs.len(), 1);
    let p = &s.procs.procs[0];
    assert_eq!((p.key.pid, p.key.start_time), (24641, 105_815));
    assert_eq!((&*p.comm, p.state, p.ppid), ("bash", 'S', 24594));
    assert_eq!(&*p.cmdline, "bash tests/fixtures/capture.sh tests/fixtures/vm-6.18");
    assert_eq!(p.ioprio, None, "no ioprio_get on a captured tree");
    let pio = p.io.as_ref().unwrap();
    assert_eq!((pio.rchar, pio.wchar, pio.syscr, pio.syscw), (79077, 4871, 117, 6));
    assert_eq!((pio.read_bytes, pio.write_bytes), (0, 32768));
    assert_eq!((s.procs.hidden, s.procs.exited), (0, 0));

    // A second sample of an unchanged tree reads the same (cached facts).
    let s2 = c.sample();
    assert_eq!(s2.disks, s.disks);
    assert_eq!(s2.devices, s.devices);
    assert_eq!(s2.procs.procs, s.procs.procs);
}

#[test]
fn fourteen_field_diskstats_of_kernel_4() {
    let mut c = Collector::new(format!("{FIX}/root-4.14"));
    c.scope = ProcScope::None;
    let s = c.sample();
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    assert_eq!(s.disks.len(), 4);
    let sda = &s.disks[0];
    assert_eq!(sda.read, io(2512331, 84123, 201233120, 3812331));
    assert_eq!(sda.write, io(1823312, 2231233, 112331228, 19823312));
    assert_eq!((sda.in_flight, sda.io_ticks, sda.time_in_queue), (0, 4123312, 23651230));
    assert!(s.disks.iter().all(|d| d.discard.is_none() && d.flush.is_none()));
    // No /proc/stat, pressure or meminfo in this tree: None, and no complaint.
    assert_eq!((s.cpu, s.psi, s.mem), (None, None, None));
}

#[test]
fn eighteen_field_diskstats_of_kernel_5_0() {
    let mut c = Collector::new(format!("{FIX}/root-5.0"));
    c.scope = ProcScope::None;
    let s = c.sample();
    assert!(s.errors.is_empty(), "{:?}", s.errors);
    let names: Vec<&str> = s.disks.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["nvme0n1", "nvme0n1p1", "nvme0n1p2", "loop0"]);
    let nvme = &s.disks[0];
    assert_eq!(nvme.read, io(8123312, 1233, 612331244, 1933122));
    assert_eq!(nvme.discard, Some(io(12331, 0, 81223312, 11331)));
    assert!(s.disks.iter().all(|d| d.discard.is_some() && d.flush.is_none()));
}

#[test]
fn malformed_and_truncated_lines_are_skipped_and_reported() {
    let buf = std::fs::read(format!("{FIX}/diskstats-malformed")).unwrap();
    let p = diskstats::parse(&buf);
    let names: Vec<&str> = p.disks.iter().map(|d| d.name.as_str()).collect();
    // sde has 3 extra numeric fields (a future kernel): accepted, extras ignored.
    assert_eq!(names, ["sda", "dm-0", "sde"]);
    assert_eq!(p.disks[2].flush, Some(FlushCounters { ios: 0, ticks: 0 }));
    // Skipped: old 4-counter partition line, negative number, overflow,
    // control character in the name, garbage, and the line cut short at EOF.
    assert_eq!(p.skipped.len(), 6, "{:#?}", p.skipped);
    for (note, line) in p.skipped.iter().zip([2, 3, 4, 6, 7, 9]) {
        assert!(note.starts_with(&format!("/proc/diskstats line {line}: ")), "{note}");
    }
    // The note keeps the line as read; it is escaped once where it is
    // shown (`\x1b`, not `\\x1b`), and JSON escapes it itself.
    assert_eq!(
        p.skipped[3],
        "/proc/diskstats line 6:    8      48 sd\u{1b}[31md 1 0 8 1 0 0 0 0 0 1 1"
    );
    assert_eq!(
        iolens::format::escape(&p.skipped[3]),
        "/proc/diskstats line 6:    8      48 sd\\x1b[31md 1 0 8 1 0 0 0 0 0 1 1"
    );

    // Through the collector: the good devices show, each bad line is an error
    // that says what was read.
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    std::fs::write(dir.path().join("proc/diskstats"), &buf).unwrap();
    let mut c = Collector::new(dir.path());
    let s = c.sample();
    assert_eq!(s.disks.len(), 3);
    assert_eq!(s.errors.len(), 6, "{:?}", s.errors);
    assert!(s.errors.iter().all(|e| e.starts_with("/proc/diskstats line")));
}

#[test]
fn missing_diskstats_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("proc")).unwrap();
    let mut c = Collector::new(dir.path());
    let s = c.sample();
    assert!(s.disks.is_empty());
    assert_eq!(s.errors.len(), 1, "{:?}", s.errors);
    assert!(s.errors[0].contains("proc/diskstats"), "{}", s.errors[0]);
}

#[test]
fn re_added_device_is_seen_at_the_next_sample_not_the_next_refresh() {
    use iolens::model::Model;
    use iolens::model::disk::Rebaseline;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("proc")).unwrap();
    std::fs::create_dir_all(root.join("sys/block/sdb")).unwrap();
    let write = |stats: &str, seq: u64| {
        std::fs::write(root.join("proc/diskstats"), format!("8 16 sdb {stats}\n")).unwrap();
        std::fs::write(root.join("sys/block/sdb/diskseq"), format!("{seq}\n")).unwrap();
    };
    let mut c = Collector::new(root);
    c.scope = ProcScope::None;
    let mut m = Model::new(Default::default(), 100.0);
    write("100 0 800 50 0 0 0 0 0 40 50", 3);
    m.update(c.sample());
    write("200 0 1600 100 0 0 0 0 0 80 100", 3);
    m.update(c.sample());
    assert!(m.devices[0].rates.is_some());
    // Same name, same numbers, counters ahead: only diskseq changed.
    write("90000 0 720000 900 0 0 0 0 0 900 900", 4);
    let s = c.sample();
    assert_eq!(s.devices[0].diskseq, Some(4));
    m.update(s);
    assert_eq!(m.devices[0].rates, None);
    assert_eq!(m.devices[0].rebaseline, Some(Rebaseline::NewDevice));
}
