//! A tmux server with one session (120x40 unless sized) for end-to-end tests of the
//! dashboard, killed on drop. Included with `#[path]` by the tests that
//! drive the binary in a terminal.
#![allow(dead_code)]

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub const PROMPT: &str = "IOLENS-TEST$ ";

static SEQ: AtomicUsize = AtomicUsize::new(0);

/// A tmux server with one 120x40 session; killed on drop.
pub struct Tmux {
    sock: String,
}

impl Tmux {
    /// Start `cmd` (a shell command line) as the session's program.
    pub fn start(cmd: &str) -> Tmux {
        Tmux::start_sized(cmd, 120, 40)
    }

    /// [`Tmux::start`] in a `w`×`h` terminal.
    pub fn start_sized(cmd: &str, w: u16, h: u16) -> Tmux {
        let sock = format!(
            "iolens-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::SeqCst)
        );
        let t = Tmux { sock };
        let ok = t
            .cmd(&[
                "new-session",
                "-d",
                "-s",
                "main",
                "-x",
                &w.to_string(),
                "-y",
                &h.to_string(),
                cmd,
            ])
            .status()
            .unwrap()
            .success();
        assert!(ok, "tmux new-session failed");
        t
    }

    /// An interactive shell with a known prompt, to see what is left after
    /// iolens exits.
    pub fn shell() -> Tmux {
        let t = Tmux::start(&format!(
            "env PS1='{PROMPT}' TERM=tmux-256color bash --norc --noprofile"
        ));
        t.wait_for("shell prompt", |s| s.contains(PROMPT.trim_end()));
        t
    }

    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("tmux");
        c.args(["-L", &self.sock, "-f", "/dev/null"]).args(args);
        c.stdout(Stdio::piped()).stderr(Stdio::null());
        c
    }

    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            let ok = self.cmd(&["send-keys", "-t", "main", k]).status().unwrap().success();
            assert!(ok, "send-keys {k}");
            // Let each key be handled before the next (the dashboard
            // coalesces redraws, not keys, but this keeps captures stable).
            std::thread::sleep(Duration::from_millis(60));
        }
    }

    /// Type literal text.
    pub fn type_text(&self, text: &str) {
        let ok = self
            .cmd(&["send-keys", "-t", "main", "-l", text])
            .status()
            .unwrap()
            .success();
        assert!(ok);
    }

    /// The screen as text, with the focused pane's thick border drawn thin
    /// so that checks do not depend on which pane has the focus.
    pub fn screen(&self) -> String {
        self.raw_screen()
            .chars()
            .map(|c| match c {
                '┃' => '│',
                '━' => '─',
                '┏' => '┌',
                '┓' => '┐',
                '┗' => '└',
                '┛' => '┘',
                c => c,
            })
            .collect()
    }

    pub fn raw_screen(&self) -> String {
        let out = self.cmd(&["capture-pane", "-p", "-t", "main"]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn format(&self, f: &str) -> String {
        let out = self.cmd(&["display-message", "-p", "-t", "main", f]).output().unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Wait (up to 30 s) until the screen satisfies `ok`; panic with the
    /// screen otherwise.
    pub fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            if Instant::now() > end {
                panic!("timed out waiting for {what}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// After iolens exited in the shell: prompt back with the exit code,
    /// normal screen, cursor visible.
    pub fn assert_restored(&self, exit: &str) -> String {
        let s = self.wait_for(&format!("EXIT={exit} and the prompt"), |s| {
            s.contains(&format!("EXIT={exit}")) && s.lines().any(|l| l.starts_with(PROMPT.trim_end()))
        });
        assert_eq!(self.format("#{alternate_on}"), "0", "alternate screen left on");
        assert_eq!(self.format("#{cursor_flag}"), "1", "cursor left hidden");
        // The line discipline is back to cooked mode: typed text echoes.
        self.type_text("echo still-$((40+2))");
        self.keys(&["Enter"]);
        self.wait_for("a working shell", |s| s.contains("still-42"));
        s
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]).status();
    }
}
