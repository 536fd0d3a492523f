//! Opening a file the user named as an input (a config, a recording, a
//! probe-results file): without blocking and only if it is a regular file.
//!
//! A plain `open` of a FIFO with no writer waits forever, and reading
//! `/dev/zero` never ends: the path is opened with `O_NONBLOCK` (which
//! changes nothing for a regular file, whose reads never wait on a writer)
//! and checked with `fstat` before any byte is read.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{FileType, Mode, OFlags};

/// Open `path` read-only if it is a regular file; a FIFO, a device, a
/// socket or a directory is an error saying what it is, at once.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )?;
    let st = rustix::fs::fstat(&fd)?;
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(File::from(fd)),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file (a {})", kind_name(other)),
        )),
    }
}

/// The whole of a regular file of at most `limit` bytes ([`open_regular`]);
/// a larger one is an error, never an allocation of its size.
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let f = open_regular(path)?;
    let mut buf = Vec::new();
    f.take(limit + 1).read_to_end(&mut buf)?;
    if buf.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {limit} bytes"),
        ));
    }
    Ok(buf)
}

fn kind_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "file of unknown type",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_are_read_whole_and_bounded() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("f");
        std::fs::write(&p, b"12345").unwrap();
        assert_eq!(read_regular(&p, 5).unwrap(), b"12345");
        let e = read_regular(&p, 4).unwrap_err();
        assert_eq!(e.to_string(), "larger than 4 bytes");
    }

    #[test]
    fn a_fifo_without_writer_a_device_and_a_directory_fail_at_once() {
        let d = tempfile::tempdir().unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::RUSR | Mode::WUSR, 0).unwrap();
        // Without O_NONBLOCK this open would wait for a writer forever.
        assert_eq!(
            open_regular(&fifo).unwrap_err().to_string(),
            "not a regular file (a FIFO)"
        );
        assert_eq!(
            read_regular(Path::new("/dev/zero"), 1 << 20).unwrap_err().to_string(),
            "not a regular file (a character device)"
        );
        assert_eq!(
            open_regular(d.path()).unwrap_err().to_string(),
            "not a regular file (a directory)"
        );
    }
}
