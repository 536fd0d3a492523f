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
pub mod terminal;

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
use crate::collect::{Collector, RawSample, Reader};
use crate::config;
use crate::format;
use crate::model::Model;
use crate::ui::{self, Confirm, ConfirmAction, Pane, Popup, ProcCol, StatusMsg, ViewState};

/// Frames are at least this far apart (key repeat, bursts of events).
pub const FRAME_MIN: Duration = Duration::from_millis(50);

/// The longest the screen stays blank while the first sample is taken.
pub const FIRST_FRAME_MAX: Duration = Duration::from_millis(250);

/// Rows moved by PgUp / PgDn.
const PAGE: isize = 10;

/// Interval steps for `+` / `-`, seconds.
const STEPS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0];

/// Everything the loop reacts to. Transfers (progress) and probe events are
/// added here as variants when those panes land.
#[derive(Debug)]
pub enum Msg {
    Sample(Box<RawSample>),
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
}

impl App {
    pub fn new(model: Model, view: ViewState) -> Self {
        let mut app = App {
            model,
            view,
            proc_idx: 0,
            dev_idx: 0,
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
        }
    }

    fn cycle_focus(&mut self, back: bool) {
        let panes = self.view.panes();
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
        Some((k, format::escape(&p.raw.comm)))
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
        if let Popup::Confirm(c) = &self.view.popup {
            let c = c.clone();
            let cmd = match (c.action, key.code) {
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
            return cmd;
        }
        self.view.status = None;
        let in_procs = self.view.focus == Pane::Processes;
        match key.code {
            KeyCode::Char('q') => return Some(Command::Quit),
            KeyCode::Char('?') => {
                self.view.popup = if self.view.popup == Popup::Help {
                    Popup::None
                } else {
                    Popup::Help
                };
            }
            KeyCode::Esc => {
                if self.view.popup != Popup::None {
                    self.view.popup = Popup::None;
                } else {
                    self.view.filter.clear();
                }
            }
            KeyCode::Enter if matches!(self.view.popup, Popup::Detail(_)) => self.view.popup = Popup::None,
            KeyCode::Enter if self.view.focus == Pane::Devices => {
                if let Some(n) = self.view.dev_sel.clone() {
                    self.view.popup = Popup::Detail(n);
                }
            }
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
                return Some(Command::Pause(self.view.paused));
            }
            KeyCode::Char('+') | KeyCode::Char('=') => return self.step_interval(true),
            KeyCode::Char('-') => return self.step_interval(false),
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
                next = Instant::now() + interval;
            }
            Err(std_mpsc::RecvTimeoutError::Timeout) => {}
            Err(std_mpsc::RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// Run the dashboard until quit. The terminal is restored on every path.
pub fn run(cli: &Cli) -> anyhow::Result<ExitCode> {
    let settings = config::load(cli)?;
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
    let collector = Collector::new(&cli.root);
    std::thread::Builder::new()
        .name("iolens-sampler".into())
        .spawn(move || sampler(collector, settings.interval, ctl_rx, sample_tx))?;
    let mut sigterm = signal(SignalKind::terminate())?;
    let mut sighup = signal(SignalKind::hangup())?;
    let mut sigint = signal(SignalKind::interrupt())?;
    let mut sigquit = signal(SignalKind::quit())?;
    terminal::chain_panic_hook(terminal::restore);
    let mut guard = terminal::enter()?;
    let mut events = EventStream::new();
    let mut app = App::new(Model::new(HostInfo::read(), clk_tck()), view);
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
                dirty = true;
                if !drawn {
                    next_frame = tokio::time::Instant::now();
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
        use crate::collect::process::{ProcIo, RawProc};
        let mut a = app();
        a.on_key(key(KeyCode::Char('k')));
        assert!(a.view.status.as_ref().is_some_and(|s| s.error));
        let raw = RawProc {
            key: ProcKey { pid: 42, start_time: 7 },
            ppid: 1,
            comm: "evil\x1b[2J".into(),
            cmdline: String::new(),
            state: 'S',
            nice: 0,
            uid: Some(0),
            user: Some("root".into()),
            ioprio: None,
            cpu_ticks: 0,
            blkio_ticks: None,
            io: Ok(ProcIo::default()),
        };
        a.model.procs.push(crate::model::ProcRow {
            raw,
            rates: None,
            since_start: None,
        });
        a.fix_selection();
        let k = ProcKey { pid: 42, start_time: 7 };
        assert_eq!(a.view.proc_sel, Some(k));
        a.on_key(key(KeyCode::Char('k')));
        let Popup::Confirm(c) = &a.view.popup else {
            panic!("no confirmation")
        };
        assert_eq!(c.comm, "evil\\x1b[2J");
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
}
