//! `--max-size` rotation streams the file: rotating a 64 MiB recording
//! does not take the process's peak memory up by the file's size (before:
//! the whole file was read, 199 MB rotating peaked at 313 MB RSS). Alone in
//! its own test binary, so that no other test's memory is counted.

use std::io::Write;

use iolens::record::file::{FILE_MAGIC, FORMAT_VERSION, Header, Recording, Writer};
use iolens::record::frame::{self, kind};

/// Peak resident set of this process, KiB.
fn vm_hwm_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn rotating_a_large_recording_holds_no_copy_of_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.rec");
    let frames = 4096u64;
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
        f.write_all(&FILE_MAGIC).unwrap();
        f.write_all(&FORMAT_VERSION.to_le_bytes()).unwrap();
        f.write_all(&frame::encode(kind::HOST, 0, 0, b"{\"host\":\"old\"}"))
            .unwrap();
        let mut x = 7u64;
        let mut payload = vec![0u8; 16 * 1024];
        for i in 0..frames {
            for b in payload.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = x as u8;
            }
            f.write_all(&frame::encode(kind::SAMPLE, 0, i, &payload)).unwrap();
        }
        f.flush().unwrap();
    }
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 64 << 20, "{size}");
    let cap = size + 1024;
    let mut w = Writer::open(&path, &Header::default(), Some(cap)).unwrap();
    let before = vm_hwm_kib();
    let mut i = 0;
    while w.rotations == 0 {
        let s = iolens::collect::RawSample {
            wall_ns: frames + i,
            ..Default::default()
        };
        w.append(&s, None).unwrap();
        i += 1;
        assert!(i < 100, "never rotated");
    }
    let grew = vm_hwm_kib().saturating_sub(before);
    eprintln!("rotating {size} bytes: peak RSS +{grew} KiB");
    assert!(grew < 16 * 1024, "peak RSS grew by {grew} KiB rotating {size} bytes");
    drop(w);
    // The newest samples, after their host frame, under half the cap.
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len <= cap / 2 + 1024 * 1024, "{len}");
    let rec = Recording::open(&path).unwrap();
    assert!(rec.damage.is_empty(), "{:?}", rec.damage);
    let walls: Vec<u64> = rec
        .segments
        .iter()
        .flat_map(|s| s.samples.iter().map(|f| f.wall_ns))
        .collect();
    assert_eq!(walls.last(), Some(&(frames + i - 1)));
    assert!(walls.len() > 1000, "{} samples kept", walls.len());
}
