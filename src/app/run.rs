//! The run loop: `select!` over samples, terminal events, signals, probe
//! messages and a frame timer that is armed only when something changed
//! (an idle screen costs no wakeups and no terminal output; at most one
//! frame per [`FRAME_MIN`]). Every message goes through [`App::update`];
//! the loop carries out the [`Command`]s it returns.

use std::ops::ControlFlow;
use std::process::ExitCode;
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use crossterm::event::{Event, EventStream};
use futures_util::StreamExt;

use super::probe_ctl::ProbeSink;
use super::sampler::SamplerCtl;
use super::signals::Signals;
use super::{App, Command, Msg, actions, terminal};
use crate::cli::Cli;
use crate::collect::activity::Activity;
use crate::collect::{Reader, delayacct};
use crate::config;
use crate::probe::{self, ProbeMsg};
use crate::session::{Plan, Session};
use crate::ui::{self, ViewState};

/// Frames are at least this far apart (key repeat, bursts of events).
pub const FRAME_MIN: Duration = Duration::from_millis(50);

/// The longest the screen stays blank while the first sample is taken.
pub const FIRST_FRAME_MAX: Duration = Duration::from_millis(250);

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
        vim_keys: settings.vim_keys,
        ..Default::default()
    };
    let (sample_tx, mut samples) = tokio::sync::mpsc::channel(2);
    let (ctl_tx, ctl_rx) = std_mpsc::channel();
    let session = Session::new(plan(cli));
    let activity = session.sampler.activity();
    let start_ns = crate::collect::monotonic_ns();
    let mut watchdog = tokio::time::interval(Duration::from_millis(500));
    let sampler = super::sampler::spawn(session.sampler, settings.interval, ctl_rx, sample_tx)?;
    // Dropped at the end of this function, on every way out of the loop:
    // the tracefs instance is removed.
    let tracing = session.tracer.start();
    let mut signals = Signals::new()?;
    crate::stop::watch_sampler(activity.clone());
    terminal::chain_panic_hook(restore_all);
    let mouse = !cli.no_mouse;
    let mut guard = terminal::enter(mouse)?;
    let mut events = EventStream::new();
    let mut app = new_app(cli, view, settings.pattern);
    app.model.findings.cfg = settings.findings.clone();
    if let Some(r) = delayacct::recovered() {
        app.report(r);
    }
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
            ev = events.next() => match terminal_msg(ev, || guard.term.size()) {
                Some(m) => m,
                None => continue,
            },
            m = signals.next() => m,
            _ = watchdog.tick() => {
                // A sample later than stall_after(interval) is said in the
                // header, with what the sampler waits on.
                let stall = stall_text(&app, &activity, start_ns);
                if stall != app.view.stall {
                    app.view.stall = stall;
                    dirty = true;
                }
                continue;
            }
            _ = tokio::time::sleep_until(next_frame), if dirty => {
                if let Err(e) = guard.term.draw(|f| ui::render_view(f, &app.model, &app.view, &app.rows)) {
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
        let sample = matches!(msg, Msg::Sample(_));
        let from_probe = matches!(msg, Msg::Probe(_));
        dirty = true;
        let cmd = app.update(msg);
        if sample {
            app.model.apply_trace(tracing.take());
            tracing.learn_devices(&app.model);
            app.model.judge();
            app.fix_selection();
            // The open process detail follows its files' positions.
            if let ui::Popup::Process(k) = app.view.popup {
                app.read_proc_info(&mut reader, k);
            }
            if !drawn {
                next_frame = tokio::time::Instant::now();
            }
        }
        if from_probe && !terminal::active() {
            // The probe thread panicked and the hook restored the terminal
            // (its message is on the normal screen, seen after quitting):
            // take the screen back and go on.
            drop(guard);
            guard = terminal::enter(mouse)?;
            guard.term.clear()?;
        }
        if let Some(cmd) = cmd
            && let ControlFlow::Break(code) = carry_out(&mut app, cmd, &ctl_tx, &mut reader, &probe_tx)
        {
            if let Some(code) = code {
                exit = Ok(code);
            }
            break;
        }
    }
    drop(guard);
    // Not longer: a sampler stuck in a read (a hung mount) must not hold
    // up the quit; its instance is then removed by the next iolens.
    super::sampler::stop(sampler, ctl_tx, samples, Duration::from_millis(250));
    exit
}

/// The dashboard's collectors: exit records, no cgroups. Watched processes
/// have their fds read every sample (others only when they did I/O), and
/// their open files show before they move.
fn plan(cli: &Cli) -> Plan {
    Plan {
        root: cli.root.clone(),
        cgroups: false,
        exits: true,
        watch: crate::collect::fdinfo::Watch {
            pids: cli.pid.clone(),
            names: cli.name.clone(),
        },
        trace_off: crate::session::trace_disabled(cli),
        file_events: !cli.no_file_events,
        trace_budget: crate::session::trace_budget(cli),
    }
}

/// The message of a terminal event, or `None` for events the dashboard
/// ignores (and a mouse event when the screen size cannot be read).
pub(super) fn terminal_msg(
    ev: Option<std::io::Result<Event>>,
    size: impl FnOnce() -> std::io::Result<ratatui::layout::Size>,
) -> Option<Msg> {
    Some(match ev {
        Some(Ok(Event::Key(k))) => Msg::Key(k),
        Some(Ok(Event::Resize(..))) => Msg::Resize,
        Some(Ok(Event::Mouse(m))) => {
            let s = size().ok()?;
            Msg::Mouse(m, ratatui::layout::Rect::new(0, 0, s.width, s.height))
        }
        Some(Ok(_)) => return None,
        Some(Err(e)) => Msg::TermGone(format!("reading the terminal: {e}")),
        None => Msg::TermGone("end of terminal input".into()),
    })
}

/// The controller over an empty model of this host, with the options'
/// pattern thresholds and transfer settings.
fn new_app(cli: &Cli, view: ViewState, pattern: crate::model::trace::PatternThresholds) -> App {
    let mut model = crate::session::model();
    model.thresholds = pattern;
    model.progress.known_names = crate::batch::progress::KNOWN_COMMANDS
        .iter()
        .map(|s| s.to_string())
        .collect();
    model.progress.min_size = cli.min_transfer_size;
    crate::session::load_saved_probes(&mut model, cli, None);
    let mut app = App::new(model, view);
    app.captured_tree = cli.root != std::path::Path::new("/");
    app
}

/// What the header says of a late sample (`None` while paused or on time).
fn stall_text(app: &App, activity: &Activity, start_ns: u64) -> Option<String> {
    (!app.view.paused)
        .then(|| {
            crate::collect::activity::stall_text(
                crate::collect::monotonic_ns(),
                activity.last_done_ns(),
                start_ns,
                app.view.interval,
                &activity.describe(),
            )
        })
        .flatten()
}

/// Carry out a command of [`App::update`]: `Break` to leave the loop (with
/// the exit code, when the command gives one).
fn carry_out(
    app: &mut App,
    cmd: Command,
    ctl_tx: &std_mpsc::Sender<SamplerCtl>,
    reader: &mut Reader,
    probe_tx: &tokio::sync::mpsc::UnboundedSender<ProbeMsg>,
) -> ControlFlow<Option<ExitCode>> {
    match cmd {
        Command::Quit => return ControlFlow::Break(None),
        Command::Exit(code) => return ControlFlow::Break(Some(ExitCode::from(code))),
        Command::SetInterval(d) => {
            let _ = ctl_tx.send(SamplerCtl::Interval(d));
        }
        Command::Pause(p) => {
            let _ = ctl_tx.send(SamplerCtl::Pause(p));
        }
        Command::Cgroups(on) => {
            let _ = ctl_tx.send(SamplerCtl::Cgroups(on));
        }
        Command::Kill(key) => app.report(actions::terminate(reader, key)),
        Command::Signal(key, sig) => app.report(actions::signal(reader, key, sig)),
        Command::ReadProcInfo(key) => app.read_proc_info(reader, key),
        Command::Ionice(key, prio) => app.report(actions::set_ioprio(reader, key, prio)),
        Command::DelayAcctOn => {
            let r = delayacct::switch_on(reader);
            app.view.delayacct_ours = delayacct::changed_by_us();
            app.report(r);
        }
        Command::StartProbe(cfg) => {
            let token = app.probe_token.clone().unwrap_or_default();
            let sink = ProbeSink::new(probe_tx.clone());
            if let Err(e) = probe::spawn(*cfg, token, move |m| sink.send(m)) {
                let failed = ProbeMsg::Failed(format!("starting the probe thread: {e}"));
                app.on_probe(failed, |_| Err(anyhow::anyhow!("no result")));
            }
        }
    }
    ControlFlow::Continue(())
}
