//! Terminating signals as a flag: SIGINT, SIGTERM, SIGHUP, SIGUSR1 and
//! SIGUSR2 store their number (the first one wins) and write a byte to a
//! wake-up descriptor instead of killing the process, so iolens can end
//! through its normal path (a probe reports its partial result, a tracefs
//! instance is removed) and then [`reraise`] the signal with its default
//! action: the shell sees the usual status (143 for SIGTERM) and a service
//! manager sees a process ended by its stop signal. The dashboard receives
//! signals through tokio's streams instead and only [`note`]s them.
//! rustix's handler installation is itself `unsafe` and no simpler, so this
//! is `signal(2)` from libc.

use std::os::fd::{IntoRawFd, OwnedFd};
use std::sync::atomic::{AtomicI32, Ordering};

/// The signals iolens ends on through its own path.
pub const TERMINATING: [libc::c_int; 5] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2];

static CAUGHT: AtomicI32 = AtomicI32::new(0);
static WAKE_FD: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let _ = CAUGHT.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
    let fd = WAKE_FD.load(Ordering::Relaxed);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) and the errno accessor are async-signal-safe;
        // the byte lives on this frame for the call; errno is put back so
        // the interrupted code does not see ours.
        unsafe {
            let errno = *libc::__errno_location();
            libc::write(fd, (&byte as *const u8).cast(), 1);
            *libc::__errno_location() = errno;
        }
    }
}

/// From now on the [`TERMINATING`] signals only set the flag (and wake
/// the descriptor given to [`wake_on_signal`], if any).
pub fn catch_interrupts() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in TERMINATING {
        // SAFETY: the handler only stores to atomics and calls write(2),
        // which are async-signal-safe; it stays valid for the life of the
        // process.
        unsafe {
            libc::signal(sig, handler as libc::sighandler_t);
        }
    }
}

/// A caught signal also writes one byte to `fd` (the write end of a
/// socket pair or pipe a thread waits on). The descriptor is kept open
/// for the life of the process.
pub fn wake_on_signal(fd: OwnedFd) {
    let old = WAKE_FD.swap(fd.into_raw_fd(), Ordering::Relaxed);
    if old >= 0 {
        // SAFETY: `old` came from `into_raw_fd` above and nobody else owns it.
        unsafe {
            libc::close(old);
        }
    }
}

/// One of the caught signals arrived.
pub fn interrupted() -> bool {
    caught().is_some()
}

/// The first terminating signal that arrived (caught here or [`note`]d).
pub fn caught() -> Option<i32> {
    Some(CAUGHT.load(Ordering::Relaxed)).filter(|s| *s != 0)
}

/// Record a terminating signal received another way (the dashboard's
/// tokio signal streams), to be re-raised at the end.
pub fn note(sig: i32) {
    let _ = CAUGHT.compare_exchange(0, sig, Ordering::Relaxed, Ordering::Relaxed);
}

/// The signal's name ("SIGTERM"), for messages.
pub fn name(sig: i32) -> &'static str {
    match sig {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGQUIT => "SIGQUIT",
        _ => "a signal",
    }
}

/// End the process by `sig` with its default action (after iolens has put
/// back what it changed): the parent sees "killed by SIGTERM", status 143
/// in a shell. Falls back to `exit(128 + sig)` should the signal not end
/// the process.
pub fn reraise(sig: i32) -> ! {
    // SAFETY: resetting a disposition to the default, unblocking one
    // signal of this thread and raising it have no memory effects; the
    // sigset is initialised by sigemptyset before use.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    std::process::exit(128 + sig)
}
