//! `iolens replay FILE` on the dashboard: the recorded samples through the
//! same model and panes as live, with time travel. The recording is in
//! memory; stepping forward feeds the model the next sample, stepping back
//! puts back the model as it was a sample ago (kept for the last
//! [`UNDO_DEPTH`] steps), and a jump builds a new model of the sample's
//! recorder run from the samples before it ([`Player`]'s warm-up).
//! Anything that would act on a machine (probes, signals, ionice, delay
//! accounting) is off, and says so.

use crossterm::event::KeyCode;
use jiff::tz::TimeZone;

use super::App;
use crate::model::Model;
use crate::record::file::Recording;
use crate::record::player::{Go, Player};
use crate::ui::ReplayView;
use crate::ui::keymap::{self, Action};

/// How many steps back are exact and instant (older ones rebuild).
pub const UNDO_DEPTH: usize = 32;

/// The recording being replayed and where the replay is.
pub struct Replay {
    pub rec: Recording,
    pub player: Player,
    /// The time zone the sample times are shown and typed in.
    pub tz: TimeZone,
    /// The model before each of the last steps forward.
    undo: Vec<Model>,
}

impl std::fmt::Debug for Replay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replay")
            .field("player", &self.player)
            .field("undo", &self.undo.len())
            .finish_non_exhaustive()
    }
}

impl Replay {
    pub fn new(rec: Recording, tz: TimeZone) -> Replay {
        let player = Player::new(&rec);
        Replay {
            rec,
            player,
            tz,
            undo: Vec::new(),
        }
    }
}

impl App {
    /// Show recorded sample `to` (see [`Player::go`]).
    pub fn replay_go(&mut self, to: usize) {
        let Some(r) = self.replay.as_mut() else {
            return;
        };
        if let Some(go) = r.player.go(to) {
            self.replay_apply(go);
        }
        self.sync_replay_view();
    }

    fn replay_apply(&mut self, go: Go) {
        let Some(r) = self.replay.as_mut() else {
            return;
        };
        let pos = r.player.pos();
        let from = match go {
            Go::Next => {
                if r.undo.len() >= UNDO_DEPTH {
                    r.undo.remove(0);
                }
                r.undo.push(self.model.clone());
                pos
            }
            Go::Back { from } => match r.undo.pop() {
                Some(m) => {
                    self.model = m;
                    self.fix_selection();
                    return;
                }
                None => from,
            },
            Go::Rebuild { from } => from,
        };
        if !matches!(go, Go::Next) {
            r.undo.clear();
            let Some(seg) = r.player.mark(pos).and_then(|m| r.rec.segments.get(m.seg)) else {
                return;
            };
            let mut m = crate::record::replay::model_for(seg);
            m.thresholds = self.model.thresholds;
            m.findings = crate::model::findings::Engine::new(self.model.findings.cfg.clone());
            m.progress.known_names = std::mem::take(&mut self.model.progress.known_names);
            self.model = m;
        }
        let mut bad = Vec::new();
        for i in from..=pos {
            let Some(mark) = r.player.mark(i) else { continue };
            let Some(seg) = r.rec.segments.get(mark.seg) else {
                continue;
            };
            let Some(frame) = seg.samples.get(mark.idx) else {
                continue;
            };
            match r.rec.sample(frame) {
                Ok(s) => {
                    crate::record::replay::fold(&mut self.model, &r.rec, seg, mark.idx, s);
                }
                Err(e) => bad.push(format!("{e:#}")),
            }
        }
        self.fix_selection();
        if let Some(e) = bad.first() {
            self.status(format!("sample skipped: {e}"), true);
        }
    }

    /// The header's replay line, from the player.
    pub fn sync_replay_view(&mut self) {
        let Some(r) = self.replay.as_ref() else {
            return;
        };
        let prompt = self.view.replay.as_ref().and_then(|v| v.prompt.clone());
        let time = r
            .player
            .current()
            .map_or_else(|| crate::format::NA.to_string(), |m| shown_time(m.wall_ns, &r.tz));
        self.view.replay = Some(ReplayView {
            time,
            pos: r.player.pos() + 1,
            total: r.player.len(),
            speed: r.player.speed(),
            prompt,
        });
    }

    /// Playing: the next sample is due. Pauses at the end.
    pub fn replay_tick(&mut self) {
        let Some(r) = self.replay.as_ref() else {
            return;
        };
        if r.player.at_end() {
            self.view.paused = true;
            self.status("end of the recording: paused ([ steps back, b jumps)", false);
            return;
        }
        let next = r.player.pos() + 1;
        self.replay_go(next);
    }

    /// A keymap action in replay: `Some` when replay handles it (time
    /// travel, or a live action refused), `None` for the usual handling.
    pub(super) fn replay_act(&mut self, action: Action) -> Option<()> {
        let r = self.replay.as_mut()?;
        match action {
            Action::StepBack | Action::StepForward => {
                self.view.paused = true;
                let pos = r.player.pos();
                let to = if action == Action::StepBack {
                    pos.checked_sub(1)
                } else {
                    Some(pos + 1).filter(|_| !r.player.at_end())
                };
                match to {
                    Some(to) => self.replay_go(to),
                    None => self.status("no more samples this way", true),
                }
            }
            Action::Pause => {
                self.view.paused = !self.view.paused;
                if !self.view.paused && r.player.at_end() {
                    self.view.paused = true;
                    self.status("end of the recording ([ steps back, b jumps)", true);
                }
            }
            Action::Faster | Action::Slower => {
                if !r.player.change_speed(action == Action::Faster) {
                    self.status("no faster / slower speed", true);
                }
                self.sync_replay_view();
            }
            Action::JumpTo => {
                if let Some(v) = self.view.replay.as_mut() {
                    v.prompt = Some(String::new());
                }
            }
            a if keymap::live_only(a) => {
                let label = keymap::ROWS
                    .iter()
                    .find(|row| row.keys.iter().any(|(_, a)| *a == action))
                    .map_or("", |row| row.help);
                let host = crate::format::escape(&self.model.host.hostname);
                self.status(
                    format!("{label}: off in replay (a recording of {host}; nothing here acts on a machine)"),
                    true,
                );
            }
            _ => return None,
        }
        Some(())
    }

    /// A key while the jump prompt is open.
    pub(super) fn on_prompt_key(&mut self, code: KeyCode) {
        let Some(text) = self.view.replay.as_mut().and_then(|v| v.prompt.as_mut()) else {
            return;
        };
        match code {
            KeyCode::Char(c) => text.push(c),
            KeyCode::Backspace => {
                text.pop();
            }
            KeyCode::Esc => self.close_prompt(),
            KeyCode::Enter => {
                let text = text.clone();
                self.close_prompt();
                self.jump_to(&text);
            }
            _ => {}
        }
    }

    fn close_prompt(&mut self) {
        if let Some(v) = self.view.replay.as_mut() {
            v.prompt = None;
        }
    }

    /// Jump to the first sample at or after a typed time (the forms of
    /// `--from`, with "now" the sample shown).
    pub fn jump_to(&mut self, text: &str) {
        let Some(r) = self.replay.as_ref() else {
            return;
        };
        let now_ns = r.player.current().map_or(0, |m| m.wall_ns);
        let now = jiff::Timestamp::from_nanosecond(i128::from(now_ns)).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
        match crate::record::when::parse(text, now, &r.tz) {
            Ok(t) => {
                let to = r.player.index_at(t);
                let first = r.player.mark(0).map_or(0, |m| m.wall_ns);
                let last = r.player.mark(r.player.len().saturating_sub(1)).map_or(0, |m| m.wall_ns);
                self.view.paused = true;
                self.replay_go(to);
                if t < first || t > last {
                    let shown = self.view.replay.as_ref().map_or_else(String::new, |v| v.time.clone());
                    self.status(
                        format!(
                            "{} is outside the recording: showing {shown}",
                            shown_time(t, &self.replay.as_ref().map_or(TimeZone::UTC, |r| r.tz.clone()))
                        ),
                        true,
                    );
                }
            }
            Err(e) => self.status(format!("{e:#}"), true),
        }
    }
}

/// A sample's time as the header shows it: local date and time.
pub fn shown_time(wall_ns: u64, tz: &TimeZone) -> String {
    match jiff::Timestamp::from_nanosecond(i128::from(wall_ns)) {
        Ok(ts) if wall_ns > 0 => ts
            .to_zoned_datetime(tz.clone())
            .strftime("%Y-%m-%d %H:%M:%S")
            .to_string(),
        _ => crate::format::NA.to_string(),
    }
}
