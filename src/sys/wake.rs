//! A wake-up a thread waits on beside its own descriptors (an eventfd):
//! a thread that waits in poll(2) on, say, a netlink socket or tracefs
//! pipes and on a [`Waker`] sleeps until one of them is ready or another
//! thread calls [`Waker::wake`], instead of waking every few hundred
//! milliseconds to look at a flag. Each such wake-up costs CPU time of its
//! own (tens of microseconds on a VM), however little the thread then does.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec, eventfd, poll};

#[derive(Debug)]
pub struct Waker {
    fd: OwnedFd,
}

impl Waker {
    pub fn new() -> io::Result<Waker> {
        let fd = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK)?;
        Ok(Waker { fd })
    }

    /// Wake the thread in [`Waker::wait`] (or make its next wait return
    /// at once).
    pub fn wake(&self) {
        // Only fails when the counter would overflow: then it is set.
        let _ = rustix::io::write(&self.fd, &1u64.to_ne_bytes());
    }

    /// Wait until one of `fds` is readable, [`Waker::wake`] was called, or
    /// `timeout` passed (`None`: no limit). Returns whether it was woken
    /// (the wake is used up). A signal ends the wait early.
    pub fn wait(&self, fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<bool> {
        let mut polled: Vec<PollFd<'_>> = fds
            .iter()
            .map(|f| PollFd::from_borrowed_fd(*f, PollFlags::IN))
            .collect();
        polled.push(PollFd::new(&self.fd, PollFlags::IN));
        let timeout = timeout.map(|d| Timespec {
            tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            tv_nsec: i64::from(d.subsec_nanos()),
        });
        match poll(&mut polled, timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let woken = polled.last().is_some_and(|p| !p.revents().is_empty());
        if woken {
            let mut count = [0u8; 8];
            let _ = rustix::io::read(&self.fd, &mut count);
        }
        Ok(woken)
    }
}

impl AsFd for Waker {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_wake_ends_a_wait_and_is_used_up() {
        let w = Arc::new(Waker::new().unwrap());
        assert!(!w.wait(&[], Some(Duration::ZERO)).unwrap());
        w.wake();
        w.wake();
        assert!(w.wait(&[], None).unwrap());
        // Both wakes were used up by the one wait.
        assert!(!w.wait(&[], Some(Duration::ZERO)).unwrap());
        let other = Arc::clone(&w);
        let t = std::thread::spawn(move || other.wait(&[], None).unwrap());
        w.wake();
        assert!(t.join().unwrap());
    }

    #[test]
    fn a_readable_descriptor_ends_a_wait_without_a_wake() {
        let w = Waker::new().unwrap();
        let (a, mut b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(!w.wait(&[a.as_fd()], Some(Duration::ZERO)).unwrap());
        std::io::Write::write_all(&mut b, b"x").unwrap();
        assert!(!w.wait(&[a.as_fd()], None).unwrap());
    }
}
