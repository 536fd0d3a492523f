//! The dashboard's controller: one [`App::update`] takes a [`Msg`] (a
//! sample, a key, a probe message, a signal), changes the state, and returns
//! the work that needs I/O or other threads as a [`Command`] for the run
//! loop to carry out. Nothing in here but the run loop and the sampler
//! touches the system, so the whole controller is tested without a terminal.
//!
//! - [`input`]: keys → actions, through the one table of [`keymap`];
//!   [`mouse`]: clicks and the wheel over the panes' layout;
//! - [`select`]: the selections and the focus, over the view-model;
//! - [`probe_ctl`]: the probe menu, starting, cancelling and the results;
//! - [`sampler`]: the thread that reads /proc and /sys on a steady clock;
//! - [`run`]: the async loop (samples, terminal events, signals, frames);
//! - [`replay`]: `iolens replay` on the dashboard (time travel over a
//!   recording) and [`replay_run`], its loop;
//! - [`actions`]: SIGTERM and ionice on a process; [`delay`]: the `D` key
//!   (delay accounting on, after a yes); [`terminal`]: raw mode in and out
//!   on every path.

mod actions;
mod delay;
mod files;
mod findings;
mod input;
mod mouse;
mod probe_ctl;
mod replay;
mod replay_run;
mod run;
mod sampler;
mod select;
mod signals;
pub mod terminal;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::time::Duration;

use crossterm::event::KeyEvent;

pub use actions::IoPrioChoice;
pub use replay::{Replay, UNDO_DEPTH, shown_time};
pub use replay_run::run_replay;
pub use run::{FIRST_FRAME_MAX, FRAME_MIN, run};
pub use sampler::SamplerCtl;

use crate::collect::RawSample;
use crate::model::{Model, ProcKey};
use crate::probe::{CancelToken, ProbeConfig, ProbeMsg, ProbeResult};
use crate::ui::viewmodel::ViewModel;
use crate::ui::{StatusMsg, ViewState};

/// Everything the loop reacts to.
#[derive(Debug)]
pub enum Msg {
    Sample(Box<RawSample>),
    /// Progress and results of the running probe (from its thread).
    Probe(ProbeMsg),
    Key(KeyEvent),
    /// A mouse event on a screen of this size.
    Mouse(crossterm::event::MouseEvent, ratatui::layout::Rect),
    Resize,
    /// The terminal went away (SIGHUP, read error, end of input).
    TermGone(String),
    /// SIGTERM / SIGINT / SIGQUIT / SIGUSR1 / SIGUSR2.
    Terminate(&'static str),
    /// Replay: playing, the next recorded sample is due.
    PlayTick,
}

/// Work for the loop that needs I/O or other threads.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Quit,
    /// End with this exit status (a signal, the terminal gone).
    Exit(u8),
    SetInterval(Duration),
    Pause(bool),
    Kill(ProcKey),
    /// Another signal (process detail), after a yes.
    Signal(ProcKey, crate::ui::Sig),
    /// Read the process detail's cwd, cgroup and open files.
    ReadProcInfo(ProcKey),
    Ionice(ProcKey, IoPrioChoice),
    /// Start this probe on its own thread; its token is [`App::probe_token`].
    StartProbe(Box<ProbeConfig>),
    /// Set `kernel.task_delayacct` to 1 (restored at exit).
    DelayAcctOn,
    /// Read the cgroup tree each sample (the cgroups pane is shown), or stop.
    Cgroups(bool),
}

/// Stores a finished probe result and says where it went.
pub type SaveResult = fn(&ProbeResult) -> anyhow::Result<PathBuf>;

/// Data model, view state and the view-model computed from both.
#[derive(Debug)]
pub struct App {
    pub model: Model,
    pub view: ViewState,
    /// The rows of the panes for the current model and view state,
    /// recomputed after every change ([`App::fix_selection`]).
    pub rows: ViewModel,
    /// Row of the process cursor: it keeps its row while rows re-sort
    /// (unless following a process, [`ViewState::follow`]).
    proc_idx: usize,
    dev_idx: usize,
    /// The process keys in display order at the last
    /// [`App::fix_selection`] (the order kept while a confirmation is open).
    proc_keys: Vec<ProcKey>,
    cg_idx: usize,
    /// The process detail a confirmation was asked from (it reopens after).
    detail_back: Option<ProcKey>,
    /// Cancels the probe thread; `Some` from the start of a probe until its
    /// thread has reported its end (also after Esc, while it stops).
    pub probe_token: Option<CancelToken>,
    /// Reading a captured /proc and /sys tree (`--root`): device names are
    /// not this machine's, so probes are refused.
    pub captured_tree: bool,
    /// Where [`App::update`] stores finished probe results.
    pub save: SaveResult,
    /// Replaying a recording (`iolens replay`): the samples come from it.
    pub replay: Option<Box<Replay>>,
}

impl App {
    pub fn new(model: Model, view: ViewState) -> Self {
        let mut app = App {
            model,
            view,
            rows: ViewModel::default(),
            proc_idx: 0,
            dev_idx: 0,
            proc_keys: Vec::new(),
            cg_idx: 0,
            detail_back: None,
            probe_token: None,
            captured_tree: false,
            save: crate::probe::store::append,
            replay: None,
        };
        app.fix_selection();
        app
    }

    /// The one entry point of the controller.
    pub fn update(&mut self, msg: Msg) -> Option<Command> {
        match msg {
            Msg::Sample(s) => {
                self.on_sample(*s);
                None
            }
            Msg::Probe(m) => {
                self.on_probe(m, self.save);
                None
            }
            Msg::Key(k) => self.on_key(k),
            Msg::Mouse(m, screen) => {
                self.on_mouse(m, screen);
                None
            }
            Msg::Resize => None,
            Msg::PlayTick => {
                self.replay_tick();
                None
            }
            Msg::TermGone(_) => Some(Command::Exit(129)),
            Msg::Terminate(sig) => Some(Command::Exit(match sig {
                "SIGINT" => 130,
                "SIGQUIT" => 131,
                "SIGUSR1" => 138,
                "SIGUSR2" => 140,
                _ => 143,
            })),
        }
    }

    /// Fold in a sample.
    pub fn on_sample(&mut self, s: RawSample) {
        self.model.update(s);
        self.fix_selection();
    }

    fn status(&mut self, text: impl Into<String>, error: bool) {
        self.view.status = Some(StatusMsg {
            text: text.into(),
            error,
        });
    }

    /// Record the result of a command the loop carried out.
    pub fn report(&mut self, r: Result<String, String>) {
        match r {
            Ok(t) => self.status(t, false),
            Err(t) => self.status(t, true),
        }
    }
}
