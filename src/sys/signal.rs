//! Signals as a flag, for the command-line probe: SIGINT, SIGTERM and
//! SIGHUP set [`interrupted`] instead of killing the process, so the probe
//! is cancelled and its partial result reported. (The dashboard uses
//! tokio's signal streams instead.) rustix's handler installation is itself
//! `unsafe` and no simpler, so this is `signal(2)` from libc.

use std::sync::atomic::{AtomicBool, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// From now on SIGINT, SIGTERM and SIGHUP only set the flag.
pub fn catch_interrupts() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; it stays valid for the life of the process.
        unsafe {
            libc::signal(sig, handler as libc::sighandler_t);
        }
    }
}

/// One of the caught signals arrived.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}
