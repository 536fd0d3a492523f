//! io_uring for the queue-depth probe, through the `io-uring` crate, with a
//! safe interface that can only ever read.
//!
//! The one submission this module builds is [`read_entry`]: an
//! `IORING_OP_READ` of one slot's buffer. [`ReadRing::submit`] takes a
//! [`ReadOp`] (a slot and an offset: there is no field for an opcode or a
//! data source), so no caller can make the ring write; the descriptor is a
//! duplicate of the probe's `O_RDONLY` one besides. A unit test checks the
//! opcode of every entry the module can build, and that no other opcode is
//! named in this file.
//!
//! Buffers: the ring owns one aligned buffer of `slots × len` bytes; slot
//! `i` reads into `[i·len, (i+1)·len)`. The kernel writes into a slot until
//! its completion is reaped, so a ring dropped with reads in flight first
//! waits for them (bounded), and if they still have not completed, leaks
//! the buffer rather than free memory the kernel may yet write.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use io_uring::{IoUring, opcode, squeue, types};

use super::aligned::AlignedBuf;

/// The only request a [`ReadRing`] accepts: read slot `slot`'s buffer
/// length at byte `offset` of the ring's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOp {
    pub slot: u32,
    pub offset: u64,
}

/// One reaped completion: the slot and the kernel's result (bytes read, or
/// a negative errno).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub slot: u32,
    pub result: i32,
}

/// The submission entry for `op`: `IORING_OP_READ` into `buf` (`len` bytes).
fn read_entry(fd: i32, buf: *mut u8, len: u32, op: ReadOp) -> squeue::Entry {
    opcode::Read::new(types::Fd(fd), buf, len)
        .offset(op.offset)
        .build()
        .user_data(u64::from(op.slot))
}

pub struct ReadRing {
    ring: IoUring,
    file: File,
    buf: Option<AlignedBuf>,
    len: u32,
    in_flight: Vec<bool>,
}

/// How long a dropped ring waits for reads in flight before leaking their
/// buffer.
const DRAIN_LIMIT: Duration = Duration::from_secs(5);

impl ReadRing {
    /// A ring of `slots` entries reading `len` bytes per request from a
    /// duplicate of `file`'s descriptor, into buffers aligned to `mem_align`.
    /// Fails where io_uring is unavailable (old kernel, seccomp, sysctl
    /// `kernel.io_uring_disabled`).
    pub fn new(file: &File, slots: u32, len: u32, mem_align: usize) -> io::Result<Self> {
        let slots = slots.max(1);
        let ring = IoUring::new(slots.next_power_of_two())?;
        let file = file.try_clone()?;
        let total = slots as usize * len as usize;
        let buf = AlignedBuf::new(total, mem_align).map_err(|e| io::Error::other(format!("{e:#}")))?;
        Ok(ReadRing {
            ring,
            file,
            buf: Some(buf),
            len,
            in_flight: vec![false; slots as usize],
        })
    }

    pub fn slots(&self) -> u32 {
        self.in_flight.len() as u32
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.iter().filter(|b| **b).count()
    }

    /// Queue a read (sent to the kernel by the next [`Self::enter`]).
    /// Refuses a slot that is out of range or already in flight.
    pub fn submit(&mut self, op: ReadOp) -> io::Result<()> {
        let i = op.slot as usize;
        if self.in_flight.get(i) != Some(&false) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("slot {} is busy or out of range", op.slot),
            ));
        }
        let buf = self
            .buf
            .as_mut()
            .ok_or_else(|| io::Error::other("ring buffer already released"))?;
        // SAFETY: slot i lies inside the buffer (i < slots, buffer is
        // slots × len bytes).
        let ptr = unsafe { buf.as_mut_slice().as_mut_ptr().add(i * self.len as usize) };
        let entry = read_entry(self.file.as_raw_fd(), ptr, self.len, op);
        // SAFETY: the buffer stays allocated and unaliased while the read
        // is in flight: `in_flight[i]` keeps the slot from reuse until its
        // completion is reaped, and Drop waits for (or leaks) busy slots.
        unsafe { self.ring.submission().push(&entry) }
            .map_err(|_| io::Error::other("io_uring submission queue full"))?;
        self.in_flight[i] = true;
        Ok(())
    }

    /// Send queued reads and wait until at least `want` completions are
    /// ready or `timeout` passed (`Ok` either way; EINTR is not an error).
    pub fn enter(&mut self, want: usize, timeout: Duration) -> io::Result<()> {
        let ts = types::Timespec::from(timeout);
        let args = types::SubmitArgs::new().timespec(&ts);
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => Ok(()),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Take every ready completion.
    pub fn reap(&mut self, out: &mut Vec<Completion>) {
        for cqe in self.ring.completion() {
            let slot = cqe.user_data() as u32;
            if let Some(b) = self.in_flight.get_mut(slot as usize) {
                *b = false;
            }
            out.push(Completion {
                slot,
                result: cqe.result(),
            });
        }
    }
}

impl Drop for ReadRing {
    fn drop(&mut self) {
        let until = Instant::now() + DRAIN_LIMIT;
        let mut sink = Vec::new();
        while self.in_flight() > 0 && Instant::now() < until {
            if self.enter(1, Duration::from_millis(100)).is_err() {
                break;
            }
            self.reap(&mut sink);
        }
        if self.in_flight() > 0 {
            // The kernel may still write into it: never free it.
            std::mem::forget(self.buf.take());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_only_entry_is_a_read() {
        let mut buf = [0u8; 4096];
        for (slot, offset) in [(0, 0), (7, 4096), (63, u64::MAX - 4095)] {
            let e = read_entry(3, buf.as_mut_ptr(), 4096, ReadOp { slot, offset });
            assert_eq!(e.get_opcode(), u32::from(opcode::Read::CODE));
            assert_eq!(e.get_user_data(), u64::from(slot));
        }
        // No other opcode is named anywhere in this module's code, so no
        // other kind of request can be built here.
        let src = include_str!("uring.rs");
        let code = src.split("#[cfg(test)]").next().unwrap_or(src);
        let named: Vec<&str> = code
            .match_indices("opcode::")
            .map(|(i, _)| {
                let rest = &code[i + 8..];
                &rest[..rest.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(rest.len())]
            })
            .collect();
        assert!(!named.is_empty());
        assert!(named.iter().all(|n| *n == "Read"), "{named:?}");
    }

    #[test]
    fn reads_a_file_and_refuses_busy_slots() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let data: Vec<u8> = (0..16384u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let f = File::open(&p).unwrap();
        let mut ring = match ReadRing::new(&f, 4, 4096, 4096) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("skipped: io_uring unavailable here: {e}");
                return;
            }
        };
        ring.submit(ReadOp { slot: 1, offset: 8192 }).unwrap();
        assert!(ring.submit(ReadOp { slot: 1, offset: 0 }).is_err());
        assert!(ring.submit(ReadOp { slot: 4, offset: 0 }).is_err());
        let mut got = Vec::new();
        while got.is_empty() {
            ring.enter(1, Duration::from_secs(1)).unwrap();
            ring.reap(&mut got);
        }
        assert_eq!(got, [Completion { slot: 1, result: 4096 }]);
        let b = ring.buf.as_mut().unwrap().as_mut_slice();
        assert_eq!(&b[4096..8192], &data[8192..12288]);
        assert_eq!(ring.in_flight(), 0);
    }
}
