//! Names from `/proc/<pid>/maps`: a file a process has mapped but not open
//! (a program's own binary and libraries, a file mapped then closed: its
//! page faults add folios to the cache, its stores dirty them). Read only
//! for the processes the page-cache events came from, only when their fds
//! did not name every file their events touched, and bounded
//! ([`MAPS_CAP`]). Generating the text walks no filesystem (the paths are
//! the kernel's `d_path` of the mapped files).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// At most this much of a maps file is read (about 2,500 mappings; a file
/// mapped past that is not named from it).
pub const MAPS_CAP: usize = 256 * 1024;

/// A file mapped by a process: its filesystem (MAJ, MIN), inode and path
/// (" (deleted)" when unlinked, as the kernel writes it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MappedFile {
    pub pid: i32,
    pub dev: (u32, u32),
    pub ino: u64,
    pub path: Arc<[u8]>,
}

/// One line of a maps file: (MAJ, MIN, inode, path), for a file mapping
/// (inode 0: anonymous, `[heap]`, `[stack]`: `None`). The device is in hex
/// ("fd:01"); the path is the rest of the line after the padding.
pub fn parse_line(line: &[u8]) -> Option<((u32, u32), u64, &[u8])> {
    let mut rest = line;
    let mut field = || -> Option<&[u8]> {
        let start = rest.iter().position(|c| *c != b' ')?;
        let s = &rest[start..];
        let end = s.iter().position(|c| *c == b' ').unwrap_or(s.len());
        rest = &s[end..];
        Some(&s[..end])
    };
    let (_range, _perms, _offset, dev, ino) = (field()?, field()?, field()?, field()?, field()?);
    let ino: u64 = std::str::from_utf8(ino).ok()?.parse().ok()?;
    let dev = std::str::from_utf8(dev).ok()?;
    let (a, b) = dev.split_once(':')?;
    let dev = (u32::from_str_radix(a, 16).ok()?, u32::from_str_radix(b, 16).ok()?);
    let path = rest.trim_ascii_start();
    (ino != 0 && path.starts_with(b"/")).then_some((dev, ino, path))
}

/// The mappings of `text` (a maps file) of the files in `wanted` (MAJ,
/// MIN, inode), each once.
pub fn find(pid: i32, text: &[u8], wanted: &[(u32, u32, u64)]) -> Vec<MappedFile> {
    let mut out: Vec<MappedFile> = Vec::new();
    for (dev, ino, path) in text.split(|c| *c == b'\n').filter_map(parse_line) {
        if wanted.contains(&(dev.0, dev.1, ino)) && !out.iter().any(|m| m.dev == dev && m.ino == ino) {
            out.push(MappedFile {
                pid,
                dev,
                ino,
                path: Arc::from(path),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_a_maps_file() {
        let l = b"7f3a1c000000-7f3a1c021000 r--p 00000000 fe:01 1835043                    /usr/lib/x86_64-linux-gnu/libc.so.6";
        assert_eq!(
            parse_line(l),
            Some(((254, 1), 1_835_043, &b"/usr/lib/x86_64-linux-gnu/libc.so.6"[..]))
        );
        let deleted = b"7f00-7f10 rw-s 00001000 07:00 12 /mnt/a file (deleted)";
        assert_eq!(parse_line(deleted), Some(((7, 0), 12, &b"/mnt/a file (deleted)"[..])));
        assert_eq!(
            parse_line(b"5600-5700 rw-p 00000000 00:00 0                          [heap]"),
            None
        );
        assert_eq!(parse_line(b"7ffd-7ffe rw-p 00000000 00:00 0 "), None);
        assert_eq!(parse_line(b"7ffd-7ffe r-xp 00000000 00:00 0 [vdso]"), None);
        assert_eq!(parse_line(b"garbage"), None);
        assert_eq!(parse_line(b""), None);
        assert_eq!(parse_line(b"a b c zz:01 5 /x"), None);
    }
}
