//! The signals that end the dashboard and the replay viewer, each as the
//! message the loop handles.

use tokio::signal::unix::{Signal, SignalKind, signal};

use super::Msg;

/// The terminating signals, handled from the start of a loop.
pub(super) struct Signals {
    hup: Signal,
    term: Signal,
    int: Signal,
    usr1: Signal,
    usr2: Signal,
    quit: Signal,
}

impl Signals {
    pub(super) fn new() -> std::io::Result<Self> {
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            hup: signal(SignalKind::hangup())?,
            int: signal(SignalKind::interrupt())?,
            quit: signal(SignalKind::quit())?,
            usr1: signal(SignalKind::user_defined1())?,
            usr2: signal(SignalKind::user_defined2())?,
        })
    }

    /// The next signal's message (cancel-safe: a `select!` arm). Re-raised
    /// by main once the terminal is restored, SIGQUIT not (its default
    /// action dumps core).
    pub(super) async fn next(&mut self) -> Msg {
        tokio::select! {
            _ = self.hup.recv() => terminating(libc::SIGHUP),
            _ = self.term.recv() => terminating(libc::SIGTERM),
            _ = self.int.recv() => terminating(libc::SIGINT),
            _ = self.usr1.recv() => terminating(libc::SIGUSR1),
            _ = self.usr2.recv() => terminating(libc::SIGUSR2),
            _ = self.quit.recv() => Msg::Terminate("SIGQUIT"),
        }
    }
}

/// The message for a terminating signal, noted to be re-raised once the
/// terminal is restored.
fn terminating(sig: i32) -> Msg {
    crate::sys::signal::note(sig);
    match sig {
        libc::SIGHUP => Msg::TermGone("SIGHUP".into()),
        s => Msg::Terminate(crate::sys::signal::name(s)),
    }
}
