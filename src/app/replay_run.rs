//! The loop of `iolens replay FILE` on the dashboard: terminal events,
//! signals, the playback clock and frames. No sampler, no tracer, no
//! probes: the samples come from the recording (see [`super::replay`]).

use std::process::ExitCode;

use crossterm::event::EventStream;
use futures_util::StreamExt;

use super::run::{FRAME_MIN, terminal_msg};
use super::signals::Signals;
use super::{App, Command, Msg, Replay, terminal};
use crate::cli::{Cli, ReplayArgs};
use crate::config;
use crate::ui::{self, ViewState};

/// The replay dashboard: paused on the first sample with rates (or the
/// first at or after `--from`), until quit.
pub fn run_replay(cli: &Cli, args: &ReplayArgs) -> anyhow::Result<ExitCode> {
    let settings = config::load(cli)?;
    let rec = crate::record::replay::open(&args.file)?;
    let tz = jiff::tz::TimeZone::system();
    let replay = Replay::new(rec, tz.clone());
    anyhow::ensure!(
        !replay.player.is_empty(),
        "{}: no samples to replay",
        args.file.display()
    );
    let start = match args.from.as_deref() {
        Some(t) => replay
            .player
            .index_at(crate::record::when::parse(t, jiff::Timestamp::now(), &tz)?),
        // The first sample is a baseline (no rates yet): start on the second.
        None => usize::from(replay.player.len() > 1 && replay.player.mark(1).is_some_and(|m| m.seg == 0)),
    };
    let interval = replay.rec.segments.first().map_or(settings.interval, |s| {
        std::time::Duration::from_secs_f64(s.header.interval_s.clamp(0.05, 3600.0))
    });
    let view = ViewState {
        interval,
        theme: settings.theme,
        dev_cols: settings.dev_cols,
        proc_cols: settings.proc_cols,
        vim_keys: settings.vim_keys,
        paused: true,
        ..Default::default()
    };
    let mut model = crate::record::replay::model_for(&replay.rec.segments[0]);
    model.thresholds = settings.pattern;
    model.findings.cfg = settings.findings.clone();
    model.progress.known_names = crate::batch::progress::KNOWN_COMMANDS
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut app = App::new(model, view);
    app.replay = Some(Box::new(replay));
    app.replay_go(start);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(replay_loop(app, !cli.no_mouse))
}

async fn replay_loop(mut app: App, mouse: bool) -> anyhow::Result<ExitCode> {
    let mut signals = Signals::new()?;
    terminal::chain_panic_hook(terminal::restore);
    let mut guard = terminal::enter(mouse)?;
    let mut events = EventStream::new();
    let mut dirty = true;
    let mut next_frame = tokio::time::Instant::now();
    let mut next_play = None;
    let mut exit: Result<ExitCode, anyhow::Error> = Ok(ExitCode::SUCCESS);
    loop {
        // The playback clock runs while playing, from the last step.
        let playing = !app.view.paused;
        if !playing {
            next_play = None;
        } else if next_play.is_none() {
            let wait = app.replay.as_ref().and_then(|r| r.player.wait()).unwrap_or(FRAME_MIN);
            next_play = Some(tokio::time::Instant::now() + wait);
        }
        let msg = tokio::select! {
            ev = events.next() => match terminal_msg(ev, || guard.term.size()) {
                Some(m) => m,
                None => continue,
            },
            m = signals.next() => m,
            _ = tokio::time::sleep_until(next_play.unwrap_or_else(tokio::time::Instant::now)), if next_play.is_some() => {
                next_play = None;
                Msg::PlayTick
            }
            _ = tokio::time::sleep_until(next_frame), if dirty => {
                if let Err(e) = guard.term.draw(|f| ui::render_view(f, &app.model, &app.view, &app.rows)) {
                    exit = Err(anyhow::anyhow!("writing to the terminal: {e}"));
                    break;
                }
                dirty = false;
                next_frame = tokio::time::Instant::now() + FRAME_MIN;
                continue;
            }
        };
        dirty = true;
        let pos = app.replay.as_ref().map(|r| r.player.pos());
        let speed = app.view.replay.as_ref().map(|r| r.speed);
        match app.update(msg) {
            Some(Command::Quit) => break,
            Some(Command::Exit(code)) => {
                exit = Ok(ExitCode::from(code));
                break;
            }
            // The cgroups pane shows the recorded cgroups; nothing else
            // reaches the machine in replay.
            _ => {}
        }
        // A step or a new speed restarts the playback clock.
        if app.replay.as_ref().map(|r| r.player.pos()) != pos || app.view.replay.as_ref().map(|r| r.speed) != speed {
            next_play = None;
        }
    }
    drop(guard);
    exit
}
