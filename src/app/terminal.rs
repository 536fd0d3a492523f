//! Terminal setup and restoration on every exit path: a guard restores on
//! drop (normal quit, error, signal), and a panic hook restores before the
//! panic message is printed.

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::{Hide, Show};
use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// Whole frames are written with one `write`: a frame at 200x60 with colours
/// stays under this size.
const OUT_BUF: usize = 256 * 1024;

pub type Term = Terminal<CrosstermBackend<BufWriter<Stdout>>>;

/// Set while the terminal is in raw mode on the alternate screen.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Set while mouse events are captured.
static MOUSE: AtomicBool = AtomicBool::new(false);

/// Put the terminal back: leave the alternate screen, show the cursor, leave
/// raw mode. Safe to call more than once and from any thread; errors (a
/// terminal that is gone) are ignored, there is nothing left to restore.
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let mut out = io::stdout();
        if MOUSE.swap(false, Ordering::SeqCst) {
            let _ = execute!(out, DisableMouseCapture);
        }
        let _ = execute!(out, LeaveAlternateScreen, Show);
        let _ = out.flush();
        let _ = disable_raw_mode();
    }
}

/// Whether the terminal is (still) in raw mode on the alternate screen: a
/// panic on another thread restores it through the hook.
pub fn active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// Restores the terminal when dropped.
pub struct Guard {
    /// Never dropped: ratatui's `Terminal` shows the cursor when dropped
    /// and prints with `eprintln!` when that fails, which panics once the
    /// terminal is gone (a hangup: stderr is the dead terminal too), and
    /// a panic there skips the rest of the way out. [`restore`] shows the
    /// cursor itself; the screen buffers are left to the exit.
    pub term: std::mem::ManuallyDrop<Term>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Raw mode, alternate screen, hidden cursor; mouse events captured when
/// `mouse` (`--no-mouse` leaves the mouse to the terminal).
pub fn enter(mouse: bool) -> io::Result<Guard> {
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    let mut out = io::stdout();
    if let Err(e) = execute!(out, EnterAlternateScreen, Hide) {
        restore();
        return Err(e);
    }
    if mouse {
        MOUSE.store(true, Ordering::SeqCst);
        if let Err(e) = execute!(out, EnableMouseCapture) {
            restore();
            return Err(e);
        }
    }
    let backend = CrosstermBackend::new(BufWriter::with_capacity(OUT_BUF, io::stdout()));
    match Terminal::new(backend) {
        Ok(term) => Ok(Guard {
            term: std::mem::ManuallyDrop::new(term),
        }),
        Err(e) => {
            restore();
            Err(e)
        }
    }
}

/// A panic hook that runs `restore` first, then the previous hook (which
/// prints the message on the now normal screen).
pub fn chain_panic_hook(restore: fn()) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    static RESTORED: AtomicUsize = AtomicUsize::new(0);

    fn count_restore() {
        RESTORED.fetch_add(1, Ordering::SeqCst);
    }

    #[test]
    fn panic_hook_restores_before_the_panic_propagates() {
        chain_panic_hook(count_restore);
        let r = std::panic::catch_unwind(|| panic!("boom"));
        let _ = std::panic::take_hook();
        assert!(r.is_err());
        assert!(RESTORED.load(Ordering::SeqCst) >= 1);
    }

    #[test]
    fn restore_without_enter_does_nothing() {
        // Not active: must not touch the terminal (nor fail).
        restore();
        assert!(!ACTIVE.load(Ordering::SeqCst));
    }
}
