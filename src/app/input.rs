//! Keys: what each does in the focused pane or the open popup. Popups are
//! modal; typing a filter takes every printable key.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

use super::{App, Command, IoPrioChoice};
use crate::ui::cgroups::CgCol;
use crate::ui::keymap::{self, Action};
use crate::ui::{Confirm, ConfirmAction, Pane, Popup, ProcCol};

/// Rows moved by PgUp / PgDn.
const PAGE: isize = 10;

/// Interval steps for `+` / `-`, seconds.
const STEPS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0];

impl App {
    pub(super) fn cycle_sort(&mut self, back: bool) {
        if self.view.focus == Pane::Cgroups {
            let n = CgCol::ALL.len();
            let i = CgCol::ALL.iter().position(|c| *c == self.view.cg_sort).unwrap_or(0);
            self.view.cg_sort = CgCol::ALL[if back { (i + n - 1) % n } else { (i + 1) % n }];
            return;
        }
        let cols: Vec<ProcCol> = ProcCol::ALL
            .into_iter()
            .filter(|c| self.view.proc_cols.contains(c))
            .collect();
        if cols.is_empty() {
            return;
        }
        let n = cols.len();
        let i = cols.iter().position(|c| *c == self.view.sort).unwrap_or(0);
        self.view.sort = cols[if back { (i + n - 1) % n } else { (i + 1) % n }];
    }

    fn step_interval(&mut self, up: bool) -> Option<Command> {
        let cur = self.view.interval.as_secs_f64();
        let next = if up {
            STEPS.iter().copied().find(|s| *s > cur + 1e-9)
        } else {
            STEPS.iter().rev().copied().find(|s| *s < cur - 1e-9)
        }?;
        self.view.interval = Duration::from_secs_f64(next);
        Some(Command::SetInterval(self.view.interval))
    }

    /// React to a key. Changes the view state; returns work for the loop.
    /// Popups are modal: while one is open, keys go to it alone.
    pub fn on_key(&mut self, key: KeyEvent) -> Option<Command> {
        if key.kind == KeyEventKind::Release {
            return None;
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        if ctrl && matches!(key.code, KeyCode::Char('c') | KeyCode::Char('C')) {
            return Some(Command::Quit);
        }
        if self.view.replay.as_ref().is_some_and(|r| r.prompt.is_some()) {
            self.on_prompt_key(key.code);
            return None;
        }
        if self.view.editing_filter {
            let filter = if self.view.focus == Pane::Requests {
                &mut self.view.log.filter
            } else {
                &mut self.view.filter
            };
            match key.code {
                KeyCode::Enter => self.view.editing_filter = false,
                KeyCode::Esc => {
                    self.view.editing_filter = false;
                    filter.clear();
                }
                KeyCode::Backspace => {
                    filter.pop();
                }
                KeyCode::Char(c) if !ctrl => filter.push(c),
                _ => {}
            }
            self.fix_selection();
            return None;
        }
        match self.view.popup.clone() {
            Popup::None => {}
            Popup::Confirm(c) => return self.on_confirm_key(&c, key.code),
            Popup::ProbeMenu(m) => return self.on_menu_key(m, key.code),
            Popup::DelayAcct => return self.on_delayacct_key(key.code),
            Popup::Process(k) => return self.on_proc_detail_key(k, key.code),
            Popup::Findings(i) => return self.on_findings_key(i, key.code),
            Popup::Files(i) => return self.on_files_key(i, key.code),
            Popup::Help | Popup::Detail(_) | Popup::Cgroup(_) => {
                if self.view.popup == Popup::Help {
                    self.scroll_help(key.code);
                }
                if let Popup::Detail(name) = &self.view.popup {
                    // the latency histograms, from the rows around the p50,
                    // at most as far as they have rows
                    let m = &self.model;
                    let rows = m
                        .devices
                        .iter()
                        .find(|d| d.name == *name)
                        .and_then(|d| m.trace.device(d.major, d.minor))
                        .map_or(0, crate::ui::latency::row_count);
                    let lim = i16::try_from(rows).unwrap_or(i16::MAX);
                    self.view.lat_scroll = match key.code {
                        KeyCode::Up => self.view.lat_scroll.saturating_sub(1),
                        KeyCode::Down => self.view.lat_scroll.saturating_add(1),
                        KeyCode::Home => 0,
                        _ => self.view.lat_scroll,
                    }
                    .clamp(-lim, lim);
                }
                let closes = match key.code {
                    KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?') => true,
                    KeyCode::Enter => matches!(self.view.popup, Popup::Detail(_) | Popup::Cgroup(_)),
                    _ => false,
                };
                if closes {
                    self.view.popup = Popup::None;
                }
                return None;
            }
        }
        self.view.status = None;
        let cmd = match keymap::lookup(key.code, self.view.focus, self.view.vim_keys, self.replay.is_some()) {
            Some(Ok(action)) => self.act(action),
            Some(Err(row)) => {
                self.status(keymap::works_elsewhere(&key_name(key.code), row), true);
                None
            }
            None => None,
        };
        self.fix_selection();
        cmd
    }

    /// ↑↓ PgUp PgDn Home End in the help (it is drawn clamped to what fits).
    fn scroll_help(&mut self, code: KeyCode) {
        let last = crate::ui::help::line_count(&self.view).saturating_sub(1);
        let off = usize::from(self.view.help_offset);
        let off = match code {
            KeyCode::Down => off + 1,
            KeyCode::Up => off.saturating_sub(1),
            KeyCode::PageDown => off + 10,
            KeyCode::PageUp => off.saturating_sub(10),
            KeyCode::Home => 0,
            KeyCode::End => last,
            _ => off,
        };
        self.view.help_offset = u16::try_from(off.min(last)).unwrap_or(u16::MAX);
    }

    /// Carry out an action of the keymap in the focused pane.
    fn act(&mut self, action: Action) -> Option<Command> {
        if self.replay_act(action).is_some() {
            return None;
        }
        match action {
            Action::Quit => return Some(Command::Quit),
            Action::Help => {
                self.view.popup = Popup::Help;
                self.view.help_offset = 0;
            }
            Action::Escape => {
                if self.view.probe.is_running() {
                    self.cancel_probe();
                } else if self.view.focus == Pane::Requests {
                    self.view.log.filter.clear();
                } else {
                    self.view.filter.clear();
                }
            }
            Action::Enter => return self.enter(),
            Action::FocusNext => self.cycle_focus(false),
            Action::FocusPrev => self.cycle_focus(true),
            Action::Down => self.move_sel(1),
            Action::Up => self.move_sel(-1),
            Action::PageDown => self.move_sel(PAGE),
            Action::PageUp => self.move_sel(-PAGE),
            Action::First => self.move_sel(isize::MIN),
            Action::Last => self.move_sel(isize::MAX),
            Action::FoldToggle => self.fold(None),
            Action::Fold => self.fold(Some(true)),
            Action::Unfold => self.fold(Some(false)),
            Action::HideIdle => self.view.hide_idle = !self.view.hide_idle,
            Action::SortNext => self.cycle_sort(false),
            Action::SortPrev => self.cycle_sort(true),
            Action::Reverse if self.view.focus == Pane::Cgroups => self.view.cg_reverse = !self.view.cg_reverse,
            Action::Reverse => self.view.reverse = !self.view.reverse,
            Action::OnlyActive => self.view.only_active = !self.view.only_active,
            Action::Filter => {
                self.view.editing_filter = true;
                if self.view.focus != Pane::Requests {
                    self.view.focus = Pane::Processes;
                }
            }
            Action::RequestLog => self.toggle_request_log(),
            Action::FreezeLog => {
                self.view.log.frozen = match self.view.log.frozen {
                    Some(_) => None,
                    None => Some(self.model.trace.log.clone()),
                };
            }
            Action::Accumulated => self.view.accumulated = !self.view.accumulated,
            Action::Findings => self.view.popup = Popup::Findings(0),
            Action::Files => self.view.popup = Popup::Files(0),
            Action::Cgroups => {
                self.view.show_cgroups = !self.view.show_cgroups;
                if self.view.show_cgroups {
                    self.view.focus = Pane::Cgroups;
                }
                return Some(Command::Cgroups(self.view.show_cgroups));
            }
            Action::Pause => {
                self.view.paused = !self.view.paused;
                if !self.view.paused {
                    // The next sample is a new baseline, not an average over the pause.
                    self.model.rebaseline();
                }
                return Some(Command::Pause(self.view.paused));
            }
            Action::Slower => return self.step_interval(true),
            Action::Faster => return self.step_interval(false),
            Action::Probe => self.open_probe_menu(),
            Action::DelayAcct => self.ask_delayacct(),
            Action::Follow => self.toggle_follow(),
            Action::Tree => self.toggle_tree(),
            Action::Zoom => self.view.zoom = !self.view.zoom,
            Action::ToggleResults => self.toggle_results(),
            Action::ToggleTransfers => self.toggle_transfers(),
            Action::OlderResult => self.pick_result(true),
            Action::NewerResult => self.pick_result(false),
            // Replay's own keys (handled above).
            Action::StepBack | Action::StepForward | Action::JumpTo => {}
            Action::Ionice | Action::Kill => match self.selected_proc() {
                Some((key, comm)) => {
                    let action = if action == Action::Kill {
                        ConfirmAction::Kill
                    } else {
                        ConfirmAction::Ionice
                    };
                    self.view.popup = Popup::Confirm(Confirm { action, key, comm });
                }
                None => self.status("no process selected", true),
            },
        }
        None
    }

    /// Enter: the selected device's, cgroup's or process's detail, or the
    /// process of the selected transfer.
    fn enter(&mut self) -> Option<Command> {
        match self.view.focus {
            Pane::Devices => {
                if let Some(n) = self.view.dev_sel.clone() {
                    self.view.popup = Popup::Detail(n);
                    self.view.lat_scroll = 0;
                }
            }
            Pane::Progress => self.jump_to_transfer(),
            Pane::Cgroups => match self.view.cg_sel.clone() {
                Some(p) => self.view.popup = Popup::Cgroup(p),
                None => self.status("no cgroup selected", true),
            },
            Pane::Processes => match self.view.proc_sel {
                Some(k) => {
                    self.view.popup = Popup::Process(k);
                    self.view.proc_info = None;
                    return Some(Command::ReadProcInfo(k));
                }
                None => self.status("no process selected", true),
            },
            Pane::Results | Pane::Requests => {}
        }
        None
    }

    /// Show / hide the request log pane (focused when shown), saying why it
    /// is empty when block tracing is off.
    fn toggle_request_log(&mut self) {
        self.view.log.shown = !self.view.log.shown;
        self.view.focus = if self.view.log.shown {
            Pane::Requests
        } else {
            Pane::Processes
        };
        if let Some(why) = self.model.trace.reason.clone().filter(|_| self.view.log.shown) {
            self.status(format!("no request log: block tracing is off ({why})"), true);
        }
    }

    /// Processes as a tree or a flat list, saying which.
    fn toggle_tree(&mut self) {
        self.view.tree = !self.view.tree;
        let s = if self.view.tree {
            "tree view: children under their parent, siblings sorted (v again: flat list)"
        } else {
            "flat list, sorted"
        };
        self.status(s, false);
    }

    /// Close / reopen the transfers pane, saying which.
    fn toggle_transfers(&mut self) {
        self.view.show_transfers = !self.view.show_transfers;
        let s = if self.view.show_transfers {
            "open"
        } else {
            "closed (T reopens it)"
        };
        self.status(format!("transfers pane {s}"), false);
    }

    /// Keys in the process detail: signals and ionice (each confirmed),
    /// Esc / q / Enter close it.
    fn on_proc_detail_key(&mut self, k: crate::model::ProcKey, code: KeyCode) -> Option<Command> {
        use crate::ui::Sig;
        let action = match code {
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Enter => {
                self.view.popup = Popup::None;
                self.view.proc_info = None;
                return None;
            }
            KeyCode::Char('t') => ConfirmAction::Kill,
            KeyCode::Char('K') => ConfirmAction::Signal(Sig::Kill),
            KeyCode::Char('s') => ConfirmAction::Signal(Sig::Stop),
            KeyCode::Char('c') => ConfirmAction::Signal(Sig::Cont),
            KeyCode::Char('i') => ConfirmAction::Ionice,
            _ => return None,
        };
        if self.replay.is_some() {
            self.status(
                "signals and ionice: off in replay (nothing here acts on a machine)",
                true,
            );
            return None;
        }
        let comm = self
            .model
            .procs
            .iter()
            .find(|p| p.raw.key == k)
            .map_or(String::new(), |p| p.raw.comm.to_string());
        self.detail_back = Some(k);
        self.view.popup = Popup::Confirm(Confirm { action, key: k, comm });
        None
    }

    pub(super) fn on_confirm_key(&mut self, c: &Confirm, code: KeyCode) -> Option<Command> {
        let cmd = match (c.action, code) {
            (ConfirmAction::Kill, KeyCode::Char('y') | KeyCode::Char('Y')) => Some(Command::Kill(c.key)),
            (ConfirmAction::Signal(s), KeyCode::Char('y') | KeyCode::Char('Y')) => Some(Command::Signal(c.key, s)),
            (ConfirmAction::Ionice, KeyCode::Char('i')) => Some(Command::Ionice(c.key, IoPrioChoice::Idle)),
            (ConfirmAction::Ionice, KeyCode::Char(d @ '0'..='7')) => {
                Some(Command::Ionice(c.key, IoPrioChoice::BestEffort(d as u8 - b'0')))
            }
            (_, KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Char('q')) => {
                self.status("cancelled", false);
                None
            }
            // Any other key leaves the question open.
            _ => return None,
        };
        // Back to the process detail the question was asked from.
        self.view.popup = self.detail_back.take().map_or(Popup::None, Popup::Process);
        cmd
    }
}

/// A key as the help shows it, for "works in ..." messages.
fn key_name(code: KeyCode) -> String {
    match code {
        KeyCode::Char(' ') => "Space".into(),
        KeyCode::Char(c) => c.to_string(),
        KeyCode::Enter => "Enter".into(),
        KeyCode::Up => "↑".into(),
        KeyCode::Down => "↓".into(),
        KeyCode::Left => "←".into(),
        KeyCode::Right => "→".into(),
        KeyCode::PageUp => "PgUp".into(),
        KeyCode::PageDown => "PgDn".into(),
        KeyCode::Home => "Home".into(),
        KeyCode::End => "End".into(),
        KeyCode::F(n) => format!("F{n}"),
        other => format!("{other:?}"),
    }
}
