//! The dashboard's message loop.
//!
//! A sampler thread does the blocking reads of /proc and /sys on a steady
//! clock and sends owned [`RawSample`]s over a channel. The async loop
//! `select!`s over samples, terminal events, signals and a frame timer that
//! is armed only when something changed: an idle screen costs no wakeups and
//! no terminal output, and at most one frame is drawn per [`FRAME_MIN`].
//! Key handling ([`App::on_key`]) is pure state change; what needs I/O comes
//! back as a [`Command`] for the loop to carry out.

mod actions;
mod delay;
pub mod terminal;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc as std_mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{Event, EventStream, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use futures_util::StreamExt;
use tokio::signal::unix::{SignalKind, signal};

pub use actions::IoPrioChoice;

use crate::batch::clk_tck;
use crate::cli::Cli;
use crate::collect::process::ProcKey;
use crate::collect::sample::HostInfo;
use crate::collect::{Collector, RawSample, Reader, delayacct};
use crate::config;
use crate::model::Model;
use crate::probe::{self, CancelToken, ProbeConfig, ProbeMsg, Status};
use crate::ui::{self, Confirm, ConfirmAction, Pane, Popup, ProbeMenu, ProcCol, StatusMsg, ViewState};

/// Frames are at least this far apart (key repeat, bursts of events).
pub const FRAME_MIN: Duration = Duration::from_millis(50);

/// The longest the screen stays blank while the first sample is taken.
pub const FIRST_FRAME_MAX: Duration = Duration::from_millis(250);

/// Rows moved by PgUp / PgDn.
const PAGE: isize = 10;

/// Interval steps for `+` / `-`, seconds.
const STEPS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0];

/// Everything the loop reacts to.
#[derive(Debug)]
pub enum Msg {
    Sample(Box<RawSample>),
    /// Progress and results of the running probe (from its thread).
    Probe(ProbeMsg),
    Key(KeyEvent),
    Resize,
    /// The terminal went away (SIGHUP, read error, end of input).
    TermGone(String),
    /// SIGTERM / SIGINT.
    Terminate(&'static str),
}

/// Work for the loop that needs I/O or other threads.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Quit,
    SetInterval(Duration),
    Pause(bool),
    Kill(ProcKey),
    Ionice(ProcKey, IoPrioChoice),
    /// Start this probe on its own thread; its token is [`App::probe_token`].
    StartProbe(Box<ProbeConfig>),
    /// Set `kernel.task_delayacct` to 1 (restored at exit).
    DelayAcctOn,
}

/// Messages to the sampler thread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SamplerCtl {
    Interval(Duration),
    Pause(bool),
}

/// Data model and view state, side by side.
#[derive(Debug)]
pub struct App {
    pub model: Model,
    pub view: ViewState,
    /// Last row index of the process selection, to stay near it when the
    /// selected process ends.
    proc_idx: usize,
    dev_idx: usize,
    /// Cancels the probe thread; `Some` from the start of a probe until its
    /// thread has reported its end (also after Esc, while it stops).
    pub probe_token: Option<CancelToken>,
    /// Replaying a captured tree (`--root`): device names are not this
    /// machine's, so probes are refused.
    pub replaying: bool,
}

impl App {
    pub fn new(model: Model, view: ViewState) -> Self {
        let mut app = App {
            model,
            view,
            proc_idx: 0,
            dev_idx: 0,
            probe_token: None,
            replaying: false,
        };
        app.fix_selection();
        app
    }

    /// Fold in a sample.
    pub fn on_sample(&mut self, s: RawSample) {
        self.model.update(s);
        self.fix_selection();
    }

    /// Keep the selections on rows that exist: the same device / process if
    /// still shown, else the row at the same position.
    pub fn fix_selection(&mut self) {
        let devs = ui::devices::visible(&self.model, &self.view);
        match self
            .view
            .dev_sel
            .as_ref()
            .and_then(|n| devs.iter().position(|l| &l.row.name == n))
        {
            Some(i) => self.dev_idx = i,
            None => {
                self.dev_idx = self.dev_idx.min(devs.len().saturating_sub(1));
                self.view.dev_sel = devs.get(self.dev_idx).map(|l| l.row.name.clone());
            }
        }
        let procs = ui::processes::visible(&self.model, &self.view);
        match self
            .view
            .proc_sel
            .and_then(|k| procs.iter().position(|p| p.raw.key == k))
        {
            Some(i) => self.proc_idx = i,
            None => {
                self.proc_idx = self.proc_idx.min(procs.len().saturating_sub(1));
                self.view.proc_sel = procs.get(self.proc_idx).map(|p| p.raw.key);
            }
        }
        let jobs = &self.model.progress.jobs;
        if !self.view.xfer_sel.is_some_and(|k| jobs.iter().any(|j| j.proc == k)) {
            self.view.xfer_sel = jobs.first().map(|j| j.proc);
        }
        // A pane that went away (no transfers left) gives the focus back.
        if !self.view.panes(&self.model).contains(&self.view.focus) {
            self.view.focus = Pane::Processes;
        }
    }

    /// Move the selection of the focused pane by `delta` rows, clamped
    /// (`isize::MIN` / `isize::MAX` go to the first / last row).
    fn move_sel(&mut self, delta: isize) {
        let step = |idx: usize, len: usize| -> usize {
            (idx as isize).saturating_add(delta).clamp(0, (len as isize - 1).max(0)) as usize
        };
        match self.view.focus {
            Pane::Devices => {
                let devs = ui::devices::visible(&self.model, &self.view);
                self.dev_idx = step(self.dev_idx, devs.len());
                self.view.dev_sel = devs.get(self.dev_idx).map(|l| l.row.name.clone());
            }
            Pane::Processes => {
                let procs = ui::processes::visible(&self.model, &self.view);
                self.proc_idx = step(self.proc_idx, procs.len());
                self.view.proc_sel = procs.get(self.proc_idx).map(|p| p.raw.key);
            }
            Pane::Progress => {
                let jobs = &self.model.progress.jobs;
                let idx = self
                    .view
                    .xfer_sel
                    .and_then(|k| jobs.iter().position(|j| j.proc == k))
                    .unwrap_or(0);
                self.view.xfer_sel = jobs.get(step(idx, jobs.len())).map(|j| j.proc);
            }
            Pane::Results => {}
        }
    }

    fn cycle_focus(&mut self, back: bool) {
        let panes = self.view.panes(&self.model);
        let i = panes.iter().position(|p| *p == self.view.focus).unwrap_or(0);
        let n = panes.len();
        self.view.focus = panes[if back { (i + n - 1) % n } else { (i + 1) % n }];
    }

    fn cycle_sort(&mut self, back: bool) {
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

    fn selected_proc(&self) -> Option<(ProcKey, String)> {
        let k = self.view.proc_sel?;
        let p = self.model.procs.iter().find(|p| p.raw.key == k)?;
        Some((k, p.raw.comm.clone()))
    }

    fn selected_disk(&self) -> Option<String> {
        let name = self.view.dev_sel.clone()?;
        let is_part = self
            .model
            .devices
            .iter()
            .find(|d| d.name == name)
            .and_then(|d| d.info.as_ref())
            .and_then(|i| i.parent.clone());
        Some(is_part.unwrap_or(name))
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
        if self.view.editing_filter {
            match key.code {
                KeyCode::Enter => self.view.editing_filter = false,
                KeyCode::Esc => {
                    self.view.editing_filter = false;
                    self.view.filter.clear();
                }
                KeyCode::Backspace => {
                    self.view.filter.pop();
                }
                KeyCode::Char(c) if !ctrl => self.view.filter.push(c),
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
            Popup::Help | Popup::Detail(_) => {
                let closes = match key.code {
                    KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('?') => true,
                    KeyCode::Enter => matches!(self.view.popup, Popup::Detail(_)),
                    _ => false,
                };
                if closes {
                    self.view.popup = Popup::None;
                }
                return None;
            }
        }
        self.view.status = None;
        let in_procs = self.view.focus == Pane::Processes;
        match key.code {
            KeyCode::Char('q') => return Some(Command::Quit),
            KeyCode::Char('?') => self.view.popup = Popup::Help,
            KeyCode::Esc => {
                if self.view.probe.is_running() {
                    self.cancel_probe();
                } else {
                    self.view.filter.clear();
                }
            }
            KeyCode::Enter => match self.view.focus {
                Pane::Devices => {
                    if let Some(n) = self.view.dev_sel.clone() {
                        self.view.popup = Popup::Detail(n);
                    }
                }
                Pane::Progress => self.jump_to_transfer(),
                Pane::Results | Pane::Processes => {}
            },
            KeyCode::Tab => self.cycle_focus(false),
            KeyCode::BackTab => self.cycle_focus(true),
            KeyCode::Down | KeyCode::Char('j') => self.move_sel(1),
            KeyCode::Up => self.move_sel(-1),
            KeyCode::Char('k') if !in_procs => self.move_sel(-1),
            KeyCode::PageDown => self.move_sel(PAGE),
            KeyCode::PageUp => self.move_sel(-PAGE),
            KeyCode::Home => self.move_sel(isize::MIN),
            KeyCode::End => self.move_sel(isize::MAX),
            KeyCode::Char(' ') | KeyCode::Left | KeyCode::Right => {
                if let Some(disk) = self.selected_disk() {
                    let fold = match key.code {
                        KeyCode::Left => true,
                        KeyCode::Right => false,
                        _ => !self.view.folded.contains(&disk),
                    };
                    if fold {
                        self.view.folded.insert(disk.clone());
                        self.view.dev_sel = Some(disk);
                    } else {
                        self.view.folded.remove(&disk);
                    }
                }
            }
            KeyCode::Char('a') => self.view.hide_idle = !self.view.hide_idle,
            KeyCode::Char('s') | KeyCode::Char('>') => self.cycle_sort(false),
            KeyCode::Char('S') | KeyCode::Char('<') => self.cycle_sort(true),
            KeyCode::Char('r') => self.view.reverse = !self.view.reverse,
            KeyCode::Char('o') => self.view.only_active = !self.view.only_active,
            KeyCode::Char('/') => {
                self.view.editing_filter = true;
                self.view.focus = Pane::Processes;
            }
            KeyCode::Char('c') => self.view.accumulated = !self.view.accumulated,
            KeyCode::Char('p') => {
                self.view.paused = !self.view.paused;
                if !self.view.paused {
                    // The next sample is a new baseline, not an average over the pause.
                    self.model.rebaseline();
                }
                return Some(Command::Pause(self.view.paused));
            }
            KeyCode::Char('+') | KeyCode::Char('=') => return self.step_interval(true),
            KeyCode::Char('-') => return self.step_interval(false),
            KeyCode::Char('t') => self.open_probe_menu(),
            KeyCode::Char('D') => self.ask_delayacct(),
            KeyCode::Char(c @ ('i' | 'k')) => {
                if !in_procs {
                    self.status("select a process first (Tab to the processes pane)", true);
                } else if let Some((key, comm)) = self.selected_proc() {
                    let action = if c == 'k' {
                        ConfirmAction::Kill
                    } else {
                        ConfirmAction::Ionice
                    };
                    self.view.popup = Popup::Confirm(Confirm { action, key, comm });
                } else {
                    self.status("no process selected", true);
                }
            }
            _ => {}
        }
        self.fix_selection();
        None
    }

    fn on_confirm_key(&mut self, c: &Confirm, code: KeyCode) -> Option<Command> {
        let cmd = match (c.action, code) {
            (ConfirmAction::Kill, KeyCode::Char('y') | KeyCode::Char('Y')) => Some(Command::Kill(c.key)),
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
        self.view.popup = Popup::None;
        cmd
    }

    /// Why a probe cannot start now, if it cannot.
    fn probe_busy(&self) -> Option<String> {
        if self.view.probe.is_running() {
            Some(format!(
                "a probe is already running on {} (one at a time; Esc cancels it)",
                self.view.probe.target
            ))
        } else if self.probe_token.is_some() {
            Some("the cancelled probe is still stopping; try again in a moment".into())
        } else {
            None
        }
    }

    /// `t` on the devices pane: the probe menu for the selected device.
    fn open_probe_menu(&mut self) {
        if self.replaying {
            self.status(
                "probes need the live system: not available while replaying a captured tree (--root)",
                true,
            );
        } else if self.view.focus != Pane::Devices {
            self.status("select a device first (Tab to the devices pane), then t", true);
        } else if let Some(busy) = self.probe_busy() {
            self.status(busy, true);
        } else if let Some(dev) = self.view.dev_sel.clone() {
            self.view.popup = Popup::ProbeMenu(ProbeMenu::new(dev));
        } else {
            self.status("no device selected", true);
        }
    }

    fn on_menu_key(&mut self, mut m: ProbeMenu, code: KeyCode) -> Option<Command> {
        if m.confirm_drop {
            match code {
                KeyCode::Char('y') | KeyCode::Char('Y') => {
                    m.drop_cache = true;
                    m.confirm_drop = false;
                }
                KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Char('q') => m.confirm_drop = false,
                _ => {}
            }
            self.view.popup = Popup::ProbeMenu(m);
            return None;
        }
        match code {
            KeyCode::Esc | KeyCode::Char('q') => {
                self.view.popup = Popup::None;
                self.status("probe not started", false);
                return None;
            }
            KeyCode::Enter => {
                self.view.popup = Popup::None;
                return self.start_probe(m);
            }
            KeyCode::Char('r') => m.tests = probe::Tests::Random,
            KeyCode::Char('z') => m.tests = probe::Tests::Sweep,
            KeyCode::Char('b') => m.tests = probe::Tests::Both,
            KeyCode::Char('p') => m.tests = probe::Tests::QueueDepth,
            KeyCode::Char('d') => {
                m.depth = match m.depth {
                    probe::Depth::Quick => probe::Depth::Thorough,
                    probe::Depth::Thorough => probe::Depth::Quick,
                }
            }
            KeyCode::Char('i') => m.idle = !m.idle,
            KeyCode::Char('c') if m.drop_cache => m.drop_cache = false,
            KeyCode::Char('c') if self.model.host.is_root => m.confirm_drop = true,
            KeyCode::Char('c') => {
                self.status("dropping the page cache needs root", true);
            }
            _ => {}
        }
        self.view.popup = Popup::ProbeMenu(m);
        None
    }

    fn start_probe(&mut self, m: ProbeMenu) -> Option<Command> {
        if let Some(busy) = self.probe_busy() {
            self.status(busy, true);
            return None;
        }
        let mut cfg = ProbeConfig::new(format!("/dev/{}", m.device), m.tests, m.depth);
        cfg.idle = m.idle;
        cfg.drop_caches = m.drop_cache;
        let target = probe::target::describe_path(&cfg.target);
        let mut text = format!("probe started on {target} ({})", cfg.label());
        if cfg.idle {
            text.push_str(", idle I/O class");
        }
        if cfg.drop_caches {
            text.push_str(", dropping the page cache first");
        }
        self.view.probe.start(target, cfg.label());
        self.probe_token = Some(CancelToken::new());
        self.view.focus = Pane::Results;
        self.status(text, false);
        Some(Command::StartProbe(Box::new(cfg)))
    }

    /// Esc while a probe runs: stop it without waiting for the read in flight.
    fn cancel_probe(&mut self) {
        if let Some(t) = &self.probe_token {
            t.cancel();
        }
        self.view.probe.cancel_requested();
        self.status(format!("probe on {} cancelled", self.view.probe.target), false);
    }

    /// A message from the probe thread. `save` stores a finished result
    /// (the results file; a stub in tests) and returns where it went.
    pub fn on_probe(&mut self, m: ProbeMsg, save: impl FnOnce(&probe::ProbeResult) -> anyhow::Result<PathBuf>) {
        match &m {
            ProbeMsg::Progress(_) => {}
            ProbeMsg::Finished(r) => {
                self.probe_token = None;
                let mut text = match r.status {
                    Status::Completed => format!(
                        "probe finished on {}: {}",
                        self.view.probe.target,
                        r.verdict.class.label()
                    ),
                    Status::Cancelled => format!("probe on {} cancelled (partial results)", self.view.probe.target),
                };
                if r.method.global_cache_dropped {
                    text.push_str("; page cache dropped");
                }
                match save(r) {
                    Ok(p) => {
                        text.push_str(&format!("; saved to {}", p.to_string_lossy()));
                        self.status(text, false);
                    }
                    Err(e) => {
                        text.push_str(&format!("; not saved: {e:#}"));
                        self.status(text, true);
                    }
                }
            }
            ProbeMsg::Failed(e) => {
                self.probe_token = None;
                self.status(format!("probe failed: {e}"), true);
            }
        }
        self.view.probe.apply(m);
    }

    /// Enter on a transfer: select its process in the processes pane,
    /// clearing the filters that hide it (and saying so).
    fn jump_to_transfer(&mut self) {
        let Some(k) = self.view.xfer_sel else {
            self.status("no transfer selected", true);
            return;
        };
        let shown = |a: &App| ui::processes::visible(&a.model, &a.view).iter().any(|p| p.raw.key == k);
        let Some(comm) = self
            .model
            .procs
            .iter()
            .find(|p| p.raw.key == k)
            .map(|p| p.raw.comm.clone())
        else {
            self.status(format!("PID {} is not in the process list (it ended)", k.pid), true);
            return;
        };
        let mut cleared = Vec::new();
        if !shown(self) && !self.view.filter.is_empty() {
            self.view.filter.clear();
            cleared.push("filter cleared");
        }
        if !shown(self) && self.view.only_active {
            self.view.only_active = false;
            cleared.push("showing idle processes");
        }
        self.view.proc_sel = Some(k);
        self.view.focus = Pane::Processes;
        self.fix_selection();
        let mut text = format!("PID {} ({comm}): i ionice, k SIGTERM", k.pid);
        if !cleared.is_empty() {
            text = format!("{text} ({})", cleared.join(", "));
        }
        self.status(text, false);
    }
}

/// Sends a probe thread's messages to the loop. Should the thread end
/// without a last word (a panic), dropping the sink says so, so the
/// dashboard never waits for a probe that is gone.
struct ProbeSink {
    tx: tokio::sync::mpsc::UnboundedSender<ProbeMsg>,
    ended: std::sync::atomic::AtomicBool,
}

impl ProbeSink {
    fn send(&self, m: ProbeMsg) {
        if !matches!(m, ProbeMsg::Progress(_)) {
            self.ended.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let _ = self.tx.send(m);
    }
}

impl Drop for ProbeSink {
    fn drop(&mut self) {
        if !self.ended.load(std::sync::atomic::Ordering::Relaxed) {
            let _ = self
                .tx
                .send(ProbeMsg::Failed("the probe thread ended without a result".into()));
        }
    }
}

/// The sampler thread: samples at once, then every `interval` on a steady
/// clock; changes of interval and pause arrive on `ctl`. Ends when either
/// channel closes.
fn sampler(
    mut collector: Collector,
    mut interval: Duration,
    ctl: std_mpsc::Receiver<SamplerCtl>,
    tx: tokio::sync::mpsc::Sender<Box<RawSample>>,
) {
    let mut paused = false;
    let mut last = Instant::now();
    let mut next = last;
    loop {
        let now = Instant::now();
        if !paused && now >= next {
            last = now;
            if tx.blocking_send(Box::new(collector.sample())).is_err() {
                return;
            }
            next += interval;
            if next <= Instant::now() {
                // Fell behind (suspend, slow sample): skip, don't burst.
                next = Instant::now() + interval;
            }
        }
        let msg = if paused {
            ctl.recv().map_err(|_| std_mpsc::RecvTimeoutError::Disconnected)
        } else {
            ctl.recv_timeout(next.saturating_duration_since(Instant::now()))
        };
        match msg {
            Ok(SamplerCtl::Interval(d)) => {
                interval = d;
                next = last + d;
            }
            Ok(SamplerCtl::Pause(p)) => {
                paused = p;
                // On resume, sample at once: the model takes it as the new
                // baseline (`Model::rebaseline`), so the first rates after a
                // pause cover one normal interval.
                next = Instant::now();
            }
            Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Sets back what iolens changed on the machine (the delay accounting
/// sysctl) when dropped: on quit, error, signal and unwinding panic (the
/// panic hook covers the rest).
struct RestoreSysctl;

impl Drop for RestoreSysctl {
    fn drop(&mut self) {
        delayacct::restore();
    }
}

/// What the panic hook puts back: the terminal, then the sysctl.
fn restore_all() {
    terminal::restore();
    delayacct::restore();
}

/// Run the dashboard until quit. The terminal and any sysctl iolens changed
/// are restored on every path.
pub fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let settings = config::load(cli)?;
    let _restore = RestoreSysctl;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(run_loop(cli, settings))
}

async fn run_loop(cli: &Cli, settings: config::Settings) -> anyhow::Result<ExitCode> {
    let view = ViewState {
        interval: settings.interval,
        theme: settings.theme,
        dev_cols: settings.dev_cols,
        proc_cols: settings.proc_cols,
        ..Default::default()
    };
    let (sample_tx, mut samples) = tokio::sync::mpsc::channel(2);
    let (ctl_tx, ctl_rx) = std_mpsc::channel();
    let mut collector = Collector::new(&cli.root);
    let activity = collector.activity.clone();
    let start_ns = crate::collect::monotonic_ns();
    let mut watchdog = tokio::time::interval(Duration::from_millis(500));
    // Watched processes have their fds read every sample (others only when
    // they did I/O), and their open files show before they move.
    collector.fds.watch = crate::collect::fdinfo::Watch {
        pids: cli.pid.clone(),
        names: cli.name.clone(),
    };
    std::thread::Builder::new()
        .name("iolens-sampler".into())
        .spawn(move || sampler(collector, settings.interval, ctl_rx, sample_tx))?;
    // Dropped at the end of this function, on every way out of the loop:
    // the tracefs instance is removed.
    let tracing = crate::tracer::Tracing::start(crate::batch::trace_disabled(cli));
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigquit = signal(SignalKind::quit())?;
    terminal::chain_panic_hook(restore_all);
    let mut guard = terminal::enter()?;
    let mut events = EventStream::new();
    let mut model = Model::new(HostInfo::read(), clk_tck());
    model.progress.known_names = crate::progress::KNOWN_COMMANDS.iter().map(|s| s.to_string()).collect();
    let mut app = App::new(model, view);
    app.replaying = cli.root != std::path::Path::new("/");
    let (probe_tx, mut probe_rx) = tokio::sync::mpsc::unbounded_channel::<ProbeMsg>();
    let mut reader = Reader::new("/");
    let debug_panic = std::env::var_os("IOLENS_DEBUG_PANIC").is_some_and(|v| v == "1");
    // The first frame waits for the first sample (a frame of "n/a" is no
    // use), but not longer than FIRST_FRAME_MAX on a slow machine.
    let mut dirty = true;
    let mut drawn = false;
    let mut next_frame = tokio::time::Instant::now() + FIRST_FRAME_MAX;
    let mut exit: Result<ExitCode, anyhow::Error> = Ok(ExitCode::SUCCESS);
    loop {
        let msg = tokio::select! {
            s = samples.recv() => match s {
                Some(s) => Msg::Sample(s),
                None => {
                    exit = Err(anyhow::anyhow!("the sampler thread stopped"));
                    break;
                }
            },
            Some(m) = probe_rx.recv() => Msg::Probe(m),
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) => Msg::Key(k),
                Some(Ok(Event::Resize(..))) => Msg::Resize,
                Some(Ok(_)) => continue,
                Some(Err(e)) => Msg::TermGone(format!("reading the terminal: {e}")),
                None => Msg::TermGone("end of terminal input".into()),
            },
            _ = sighup.recv() => Msg::TermGone("SIGHUP".into()),
            _ = sigterm.recv() => Msg::Terminate("SIGTERM"),
            _ = sigint.recv() => Msg::Terminate("SIGINT"),
            _ = sigquit.recv() => Msg::Terminate("SIGQUIT"),
            _ = watchdog.tick() => {
                // A sample later than stall_after(interval) is said in the
                // header, with what the sampler waits on.
                let stall = (!app.view.paused)
                    .then(|| {
                        crate::collect::activity::stall_text(
                            crate::collect::monotonic_ns(),
                            activity.last_done_ns(),
                            start_ns,
                            app.view.interval,
                            &activity.describe(),
                        )
                    })
                    .flatten();
                if stall != app.view.stall {
                    app.view.stall = stall;
                    dirty = true;
                }
                continue;
            }
            _ = tokio::time::sleep_until(next_frame), if dirty => {
                if let Err(e) = guard.term.draw(|f| ui::render(f, &app.model, &app.view)) {
                    // Writing failed: the terminal is gone.
                    exit = Err(anyhow::anyhow!("writing to the terminal: {e}"));
                    break;
                }
                dirty = false;
                drawn = true;
                next_frame = tokio::time::Instant::now() + FRAME_MIN;
                if debug_panic && app.model.samples > 0 {
                    panic!("debug panic requested by IOLENS_DEBUG_PANIC=1");
                }
                continue;
            }
        };
        match msg {
            Msg::Sample(s) => {
                app.on_sample(*s);
                app.model.apply_trace(tracing.take());
                dirty = true;
                if !drawn {
                    next_frame = tokio::time::Instant::now();
                }
            }
            Msg::Probe(m) => {
                app.on_probe(m, probe::store::append);
                dirty = true;
                if !terminal::active() {
                    // The probe thread panicked and the hook restored the
                    // terminal (its message is on the normal screen, seen
                    // after quitting): take the screen back and go on.
                    drop(guard);
                    guard = terminal::enter()?;
                    guard.term.clear()?;
                }
            }
            Msg::Resize => dirty = true,
            Msg::Key(k) => {
                dirty = true;
                match app.on_key(k) {
                    None => {}
                    Some(Command::Quit) => break,
                    Some(Command::SetInterval(d)) => {
                        let _ = ctl_tx.send(SamplerCtl::Interval(d));
                    }
                    Some(Command::Pause(p)) => {
                        let _ = ctl_tx.send(SamplerCtl::Pause(p));
                    }
                    Some(Command::Kill(key)) => app.report(actions::terminate(&mut reader, key)),
                    Some(Command::Ionice(key, prio)) => app.report(actions::set_ioprio(&mut reader, key, prio)),
                    Some(Command::DelayAcctOn) => app.report(delayacct::switch_on(&mut reader)),
                    Some(Command::StartProbe(cfg)) => {
                        let token = app.probe_token.clone().unwrap_or_default();
                        let sink = ProbeSink {
                            tx: probe_tx.clone(),
                            ended: std::sync::atomic::AtomicBool::new(false),
                        };
                        if let Err(e) = probe::spawn(*cfg, token, move |m| sink.send(m)) {
                            let failed = ProbeMsg::Failed(format!("starting the probe thread: {e}"));
                            app.on_probe(failed, |_| Err(anyhow::anyhow!("no result")));
                        }
                    }
                }
            }
            Msg::TermGone(_) => {
                exit = Ok(ExitCode::from(129));
                break;
            }
            Msg::Terminate(sig) => {
                exit = Ok(ExitCode::from(match sig {
                    "SIGINT" => 130,
                    "SIGQUIT" => 131,
                    _ => 143,
                }));
                break;
            }
        }
    }
    drop(guard);
    exit
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn app() -> App {
        App::new(Model::default(), ViewState::default())
    }

    #[test]
    fn quit_keys() {
        let mut a = app();
        assert_eq!(a.on_key(key(KeyCode::Char('q'))), Some(Command::Quit));
        assert_eq!(
            a.on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Command::Quit)
        );
    }

    #[test]
    fn interval_steps_and_pause() {
        let mut a = app();
        assert_eq!(
            a.on_key(key(KeyCode::Char('+'))),
            Some(Command::SetInterval(Duration::from_secs(2)))
        );
        a.on_key(key(KeyCode::Char('-')));
        assert_eq!(
            a.on_key(key(KeyCode::Char('-'))),
            Some(Command::SetInterval(Duration::from_millis(500)))
        );
        for _ in 0..10 {
            a.on_key(key(KeyCode::Char('-')));
        }
        assert_eq!(a.view.interval, Duration::from_millis(100));
        assert_eq!(a.on_key(key(KeyCode::Char('-'))), None);
        assert_eq!(a.on_key(key(KeyCode::Char('p'))), Some(Command::Pause(true)));
        assert!(a.view.paused);
        assert_eq!(a.on_key(key(KeyCode::Char('p'))), Some(Command::Pause(false)));
    }

    #[test]
    fn toggles_focus_sort_and_filter() {
        let mut a = app();
        assert_eq!(a.view.focus, Pane::Processes);
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.view.focus, Pane::Devices);
        a.on_key(key(KeyCode::BackTab));
        assert_eq!(a.view.focus, Pane::Processes);
        assert_eq!(a.view.sort, ProcCol::DiskRead);
        a.on_key(key(KeyCode::Char('s')));
        assert_eq!(a.view.sort, ProcCol::DiskWrite);
        a.on_key(key(KeyCode::Char('<')));
        a.on_key(key(KeyCode::Char('<')));
        assert_eq!(a.view.sort, ProcCol::Prio);
        a.on_key(key(KeyCode::Char('r')));
        assert!(a.view.reverse);
        a.on_key(key(KeyCode::Char('/')));
        assert!(a.view.editing_filter);
        for c in "dd q".chars() {
            a.on_key(key(KeyCode::Char(c)));
        }
        // 'q' while typing a filter is text, not quit.
        assert_eq!(a.view.filter, "dd q");
        a.on_key(key(KeyCode::Backspace));
        a.on_key(key(KeyCode::Enter));
        assert!(!a.view.editing_filter);
        assert_eq!(a.view.filter, "dd ");
        a.on_key(key(KeyCode::Esc));
        assert_eq!(a.view.filter, "");
        for (c, check) in [
            ('o', (|v: &ViewState| v.only_active) as fn(&ViewState) -> bool),
            ('c', |v| v.accumulated),
            ('a', |v| v.hide_idle),
        ] {
            a.on_key(key(KeyCode::Char(c)));
            assert!(check(&a.view), "{c}");
        }
        a.on_key(key(KeyCode::Char('?')));
        assert_eq!(a.view.popup, Popup::Help);
        a.on_key(key(KeyCode::Esc));
        assert_eq!(a.view.popup, Popup::None);
    }

    #[test]
    fn actions_need_a_selected_process_and_a_confirmation() {
        use crate::collect::process::RawProc;
        let mut a = app();
        a.on_key(key(KeyCode::Char('k')));
        assert!(a.view.status.as_ref().is_some_and(|s| s.error));
        let raw = RawProc::example(42, 7, "evil\x1b[2J");
        a.model.procs.push(crate::model::ProcRow::example(raw));
        a.fix_selection();
        let k = ProcKey { pid: 42, start_time: 7 };
        assert_eq!(a.view.proc_sel, Some(k));
        a.on_key(key(KeyCode::Char('k')));
        let Popup::Confirm(c) = &a.view.popup else {
            panic!("no confirmation")
        };
        // Kept raw in the state; the popup escapes it when drawn (see the
        // confirm_kill snapshot).
        assert_eq!(c.comm, "evil\x1b[2J");
        // Unrelated keys leave the question open; y answers it.
        assert_eq!(a.on_key(key(KeyCode::Char('x'))), None);
        assert_eq!(a.on_key(key(KeyCode::Char('y'))), Some(Command::Kill(k)));
        assert_eq!(a.view.popup, Popup::None);
        a.on_key(key(KeyCode::Char('i')));
        assert_eq!(
            a.on_key(key(KeyCode::Char('3'))),
            Some(Command::Ionice(k, IoPrioChoice::BestEffort(3)))
        );
        a.on_key(key(KeyCode::Char('i')));
        assert_eq!(
            a.on_key(key(KeyCode::Char('i'))),
            Some(Command::Ionice(k, IoPrioChoice::Idle))
        );
        a.on_key(key(KeyCode::Char('k')));
        assert_eq!(a.on_key(key(KeyCode::Esc)), None);
        assert_eq!(a.view.status.as_ref().map(|s| s.text.as_str()), Some("cancelled"));
        // In the devices pane k moves up instead.
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.on_key(key(KeyCode::Char('k'))), None);
        assert_eq!(a.view.popup, Popup::None);
    }

    fn app_with_device(name: &str) -> App {
        let mut m = Model::default();
        m.devices.push(crate::model::DeviceRow {
            name: name.into(),
            major: 0,
            minor: 0,
            info: None,
            rates: None,
            rebaseline: None,
            history: Default::default(),
        });
        App::new(m, ViewState::default())
    }

    fn status(a: &App) -> (String, bool) {
        a.view
            .status
            .as_ref()
            .map(|s| (s.text.clone(), s.error))
            .unwrap_or_default()
    }

    fn menu(a: &App) -> ProbeMenu {
        match &a.view.popup {
            Popup::ProbeMenu(m) => m.clone(),
            p => panic!("no probe menu: {p:?}"),
        }
    }

    #[test]
    fn probe_menu_opens_chooses_and_cancels() {
        let mut a = app_with_device("loop0");
        // Only from the devices pane.
        a.on_key(key(KeyCode::Char('t')));
        assert_eq!(a.view.popup, Popup::None);
        assert!(
            status(&a).1 && status(&a).0.contains("devices pane"),
            "{:?}",
            status(&a)
        );
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.view.focus, Pane::Devices);
        a.on_key(key(KeyCode::Char('t')));
        assert_eq!(menu(&a), ProbeMenu::new("loop0".into()));
        for c in ['z', 'd', 'i'] {
            a.on_key(key(KeyCode::Char(c)));
        }
        let m = menu(&a);
        assert_eq!(
            (m.tests, m.depth, m.idle),
            (probe::Tests::Sweep, probe::Depth::Thorough, true)
        );
        // Not root: no dropping of the page cache.
        a.on_key(key(KeyCode::Char('c')));
        assert!(!menu(&a).drop_cache && !menu(&a).confirm_drop);
        assert_eq!(status(&a), ("dropping the page cache needs root".into(), true));
        // Modal: Tab and s do nothing underneath.
        a.on_key(key(KeyCode::Tab));
        a.on_key(key(KeyCode::Char('s')));
        assert_eq!((a.view.focus, a.view.sort), (Pane::Devices, ProcCol::DiskRead));
        assert_eq!(a.on_key(key(KeyCode::Esc)), None);
        assert_eq!(a.view.popup, Popup::None);
        assert!(!a.view.probe.is_running() && a.probe_token.is_none());
        assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Processes]);
    }

    #[test]
    fn probes_are_refused_while_replaying_a_captured_tree() {
        let mut a = app_with_device("loop0");
        a.replaying = true;
        a.on_key(key(KeyCode::Tab));
        a.on_key(key(KeyCode::Char('t')));
        assert_eq!(a.view.popup, Popup::None);
        assert!(status(&a).0.contains("--root"), "{:?}", status(&a));
    }

    #[test]
    fn probe_starts_refuses_a_second_and_esc_cancels_it() {
        let mut a = app_with_device("loop0");
        a.model.host.is_root = true;
        a.on_key(key(KeyCode::Tab));
        a.on_key(key(KeyCode::Char('t')));
        // Dropping the page cache asks first; n keeps it off, y turns it on.
        a.on_key(key(KeyCode::Char('c')));
        assert!(menu(&a).confirm_drop);
        a.on_key(key(KeyCode::Char('n')));
        assert!(!menu(&a).confirm_drop && !menu(&a).drop_cache);
        a.on_key(key(KeyCode::Char('c')));
        a.on_key(key(KeyCode::Char('y')));
        assert!(menu(&a).drop_cache);
        a.on_key(key(KeyCode::Char('p')));
        assert_eq!(menu(&a).tests, probe::Tests::QueueDepth);
        a.on_key(key(KeyCode::Char('b')));
        let Some(Command::StartProbe(cfg)) = a.on_key(key(KeyCode::Enter)) else {
            panic!("no probe started")
        };
        let mut want = ProbeConfig::new("/dev/loop0", probe::Tests::Both, probe::Depth::Quick);
        want.drop_caches = true;
        assert_eq!(*cfg, want);
        assert_eq!(a.view.popup, Popup::None);
        assert!(a.view.probe.is_running());
        assert_eq!(a.view.focus, Pane::Results);
        assert_eq!(
            status(&a).0,
            "probe started on /dev/loop0 (random read + zone sweep, quick), dropping the page cache first"
        );
        assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Results, Pane::Processes]);
        let token = a.probe_token.clone().expect("a token");
        // A second probe is refused.
        a.on_key(key(KeyCode::BackTab));
        assert_eq!(a.view.focus, Pane::Devices);
        a.on_key(key(KeyCode::Char('t')));
        assert_eq!(a.view.popup, Popup::None);
        assert!(
            status(&a).1 && status(&a).0.contains("already running on /dev/loop0"),
            "{:?}",
            status(&a)
        );
        // Esc cancels at once, without waiting for the probe thread.
        a.view.filter = "keep".into();
        a.on_key(key(KeyCode::Esc));
        assert!(token.is_cancelled());
        assert!(matches!(a.view.probe.state, probe::view::RunState::Cancelled(None)));
        assert_eq!(a.view.filter, "keep");
        assert_eq!(status(&a).0, "probe on /dev/loop0 cancelled");
        // Until its thread reports its end, no new probe.
        a.on_key(key(KeyCode::Char('t')));
        assert!(status(&a).0.contains("still stopping"), "{:?}", status(&a));
        let r = probe::example::result(Status::Cancelled);
        a.on_probe(ProbeMsg::Finished(Box::new(r)), |_| {
            Ok(PathBuf::from("/state/probes.jsonl"))
        });
        assert!(a.probe_token.is_none());
        assert_eq!(
            status(&a),
            (
                "probe on /dev/loop0 cancelled (partial results); saved to /state/probes.jsonl".into(),
                false
            )
        );
        assert!(matches!(a.view.probe.state, probe::view::RunState::Cancelled(Some(_))));
        assert_eq!(a.view.probe.past.len(), 1);
        // Then a new one may start; its result is kept next to the first.
        a.on_key(key(KeyCode::Char('t')));
        assert!(matches!(a.on_key(key(KeyCode::Enter)), Some(Command::StartProbe(_))));
        let mut r = probe::example::result(Status::Completed);
        r.method.global_cache_dropped = true;
        a.on_probe(ProbeMsg::Finished(Box::new(r)), |_| Err(anyhow::anyhow!("disk full")));
        let (text, err) = status(&a);
        assert!(err, "{text}");
        assert!(
            text.starts_with("probe finished on /dev/loop0: ")
                && text.ends_with("; page cache dropped; not saved: disk full"),
            "{text}"
        );
        assert_eq!(a.view.probe.past.len(), 2);
        // Esc with nothing running clears the filter again.
        a.on_key(key(KeyCode::Esc));
        assert_eq!(a.view.filter, "");
    }

    #[test]
    fn probe_failure_is_reported() {
        let mut a = app_with_device("loop0");
        a.on_key(key(KeyCode::Tab));
        a.on_key(key(KeyCode::Char('t')));
        a.on_key(key(KeyCode::Enter));
        a.on_probe(
            ProbeMsg::Failed("opening /dev/loop0: EACCES".into()),
            |_| unreachable!(),
        );
        assert_eq!(status(&a), ("probe failed: opening /dev/loop0: EACCES".into(), true));
        assert!(a.probe_token.is_none() && !a.view.probe.is_running());
    }

    #[test]
    fn help_and_detail_are_modal() {
        let mut a = app_with_device("sda");
        a.on_key(key(KeyCode::Char('?')));
        for c in [KeyCode::Tab, KeyCode::Char('s'), KeyCode::Char('p'), KeyCode::Char('t')] {
            assert_eq!(a.on_key(key(c)), None);
        }
        assert_eq!(
            (a.view.focus, a.view.sort, a.view.paused),
            (Pane::Processes, ProcCol::DiskRead, false)
        );
        assert_eq!(a.view.popup, Popup::Help);
        // q closes the help instead of quitting.
        assert_eq!(a.on_key(key(KeyCode::Char('q'))), None);
        assert_eq!(a.view.popup, Popup::None);
        a.on_key(key(KeyCode::Tab));
        a.on_key(key(KeyCode::Enter));
        assert_eq!(a.view.popup, Popup::Detail("sda".into()));
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.view.focus, Pane::Devices);
        a.on_key(key(KeyCode::Char('?')));
        assert_eq!(a.view.popup, Popup::None);
    }

    #[test]
    fn enter_on_a_transfer_selects_its_process_clearing_filters() {
        use crate::collect::process::RawProc;
        use crate::model::progress::{Label, example_job};
        let mut a = app();
        for (pid, comm) in [(10, "bash"), (4242, "pv")] {
            a.model
                .procs
                .push(crate::model::ProcRow::example(RawProc::example(pid, 1, comm)));
        }
        a.model.progress.jobs = vec![
            example_job(4242, "pv", b"/tmp/f", 50, 100, 10.0, Label::Progress),
            example_job(999, "gone", b"/tmp/g", 5, 100, 10.0, Label::Progress),
        ];
        a.view.filter = "bash".into();
        a.view.only_active = true;
        a.fix_selection();
        assert_eq!(a.view.panes(&a.model), [Pane::Devices, Pane::Progress, Pane::Processes]);
        a.on_key(key(KeyCode::Tab));
        a.on_key(key(KeyCode::Tab));
        assert_eq!(a.view.focus, Pane::Progress);
        let pv = ProcKey {
            pid: 4242,
            start_time: 1,
        };
        assert_eq!(a.view.xfer_sel, Some(pv));
        a.on_key(key(KeyCode::Enter));
        assert_eq!(a.view.focus, Pane::Processes);
        assert_eq!(a.view.proc_sel, Some(pv));
        assert_eq!((a.view.filter.as_str(), a.view.only_active), ("", false));
        assert_eq!(
            status(&a).0,
            "PID 4242 (pv): i ionice, k SIGTERM (filter cleared, showing idle processes)"
        );
        // From there it can be ioniced.
        a.on_key(key(KeyCode::Char('i')));
        assert!(matches!(&a.view.popup, Popup::Confirm(c) if c.key == pv));
        a.on_key(key(KeyCode::Esc));
        // A transfer whose process is not listed says so.
        a.view.focus = Pane::Progress;
        a.on_key(key(KeyCode::Down));
        a.on_key(key(KeyCode::Enter));
        assert_eq!(a.view.focus, Pane::Progress);
        assert_eq!(
            status(&a),
            ("PID 999 is not in the process list (it ended)".into(), true)
        );
        // The pane goes away with its transfers, and the focus with it.
        a.model.progress.jobs.clear();
        a.fix_selection();
        assert_eq!(a.view.focus, Pane::Processes);
    }

    #[test]
    fn a_probe_thread_that_dies_is_reported() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = ProbeSink {
            tx,
            ended: std::sync::atomic::AtomicBool::new(false),
        };
        let h = std::thread::spawn(move || {
            let _s = sink;
            panic!("probe thread panics");
        });
        assert!(h.join().is_err());
        assert!(matches!(rx.try_recv(), Ok(ProbeMsg::Failed(e)) if e.contains("without a result")));
        // A sink that delivered its end says nothing more.
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = ProbeSink {
            tx,
            ended: std::sync::atomic::AtomicBool::new(false),
        };
        sink.send(ProbeMsg::Failed("x".into()));
        drop(sink);
        assert!(matches!(rx.try_recv(), Ok(ProbeMsg::Failed(e)) if e == "x"));
        assert!(rx.try_recv().is_err());
    }
}
