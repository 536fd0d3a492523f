//! How iolens ends: on SIGINT, SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 it
//! puts back what it changed (the terminal, a tracefs instance, a sysctl)
//! and then re-raises the signal, so the shell sees the usual status (143
//! for SIGTERM) and a service manager a clean stop; and when a read is
//! stuck in the kernel (a hung FUSE or network filesystem: not even SIGKILL
//! ends it) it says so instead of going quiet.
//!
//! The batch output, `iolens progress` and the probe command [`catch`] the
//! signals as a flag ([`requested`]); the dashboard gets them from tokio's
//! streams and records them with [`crate::sys::signal::note`]. `main` ends
//! every run with [`finish`].

use std::io::Read;
use std::os::unix::net::UnixStream;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::collect::activity::Activity;
use crate::sys::signal;

/// A step of a sample that has lasted this long is called stuck.
pub const STUCK_AFTER: Duration = Duration::from_secs(1);

/// How long after a signal the watcher waits for the normal way out
/// before it says that a read is stuck and re-raises the signal itself.
pub const GRACE: Duration = Duration::from_secs(1);

/// The sampler whose step says what is stuck (batch, dashboard).
static SAMPLER: Mutex<Option<Arc<Activity>>> = Mutex::new(None);

/// Say what the sampler does, for the messages about a stuck read.
pub fn watch_sampler(activity: Arc<Activity>) {
    if let Ok(mut s) = SAMPLER.lock() {
        *s = Some(activity);
    }
}

/// What is stuck right now, if anything.
fn stuck_now() -> Option<String> {
    let a = SAMPLER.lock().ok()?.clone()?;
    a.stuck(crate::collect::monotonic_ns(), STUCK_AFTER)
}

/// The message for a read stuck in the kernel.
pub fn stuck_message(what: Option<&str>) -> String {
    let what = what.map_or_else(
        || "a read is stuck in the kernel".to_string(),
        |w| format!("a read is stuck in the kernel ({w})"),
    );
    format!(
        "iolens: {what}: a hung FUSE or network filesystem, or a dying disk? iolens ends as soon as it returns (not even SIGKILL ends it sooner)"
    )
}

/// Catch the terminating signals as a flag (see [`requested`]). With
/// `watch`, a thread also waits for them: when the normal way out has not
/// ended the process [`GRACE`] after the signal (the main thread is in a
/// read stuck in the kernel), it says so and re-raises the signal.
pub fn catch(watch: bool) {
    signal::catch_interrupts();
    if !watch {
        return;
    }
    let Ok((mut rx, tx)) = UnixStream::pair() else {
        return;
    };
    signal::wake_on_signal(tx.into());
    let _ = std::thread::Builder::new()
        .name("iolens-signals".into())
        .spawn(move || {
            let mut b = [0u8; 1];
            loop {
                match rx.read(&mut b) {
                    Ok(0) => return,
                    Ok(_) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => return,
                }
            }
            if let Ok(hooks) = ON_REQUEST.lock() {
                hooks.iter().for_each(|wake| wake());
            }
            std::thread::sleep(GRACE);
            let Some(sig) = signal::caught() else { return };
            eprintln!("{}", stuck_message(stuck_now().as_deref()));
            signal::reraise(sig);
        });
}

/// Called by the watching thread of [`catch`] when a terminating signal
/// arrives: each wakes a thread that waits on something else (a channel)
/// so that it sees [`requested`] at once.
type Hook = Box<dyn Fn() + Send>;
static ON_REQUEST: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Have `wake` called when a terminating signal arrives (with
/// `catch(true)`): a thread that waits for a channel then needs no short
/// timeouts to look at [`requested`].
pub fn on_request(wake: impl Fn() + Send + 'static) {
    if let Ok(mut hooks) = ON_REQUEST.lock() {
        hooks.push(Box::new(wake));
    }
}

/// A terminating signal arrived.
pub fn requested() -> bool {
    signal::interrupted()
}

/// Sleep for `d`, in short steps so that a signal ends the wait within
/// 100 ms; returns whether one did.
pub fn sleep(d: Duration) -> bool {
    let end = std::time::Instant::now() + d;
    loop {
        if requested() {
            return true;
        }
        let left = end.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return false;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// The end of every run, once what iolens changed is put back: say if a
/// read is stuck (the process cannot end before it returns), then re-raise
/// the terminating signal that ended the run, if any, else exit with `code`.
pub fn finish(code: ExitCode) -> ExitCode {
    if let Some(what) = stuck_now() {
        eprintln!("{}", stuck_message(Some(&what)));
    }
    if let Some(sig) = signal::caught() {
        signal::reraise(sig);
    }
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stuck_message_names_what_is_stuck() {
        assert_eq!(
            stuck_message(Some("reading the open files of pid 812 for 4.0 s")),
            "iolens: a read is stuck in the kernel (reading the open files of pid 812 for 4.0 s): a hung FUSE or network filesystem, or a dying disk? iolens ends as soon as it returns (not even SIGKILL ends it sooner)"
        );
        assert!(stuck_message(None).starts_with("iolens: a read is stuck in the kernel: "));
    }
}
