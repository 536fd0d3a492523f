//! Probe control: the probe menu on the devices pane, starting a probe on
//! its own thread (one at a time), cancelling it, and the messages it sends
//! back. The results pane reads [`crate::probe::ProbeView`].

use std::path::PathBuf;

use crossterm::event::KeyCode;

use super::{App, Command};
use crate::probe::{self, CancelToken, ProbeConfig, ProbeMsg, Status};
use crate::ui::{Pane, Popup, ProbeMenu};

impl App {
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
    pub(super) fn open_probe_menu(&mut self) {
        if self.captured_tree {
            self.status(
                "probes need the live system: not available on a captured /proc and /sys tree (--root)",
                true,
            );
        } else if self.view.focus != Pane::Devices {
            self.status("select a device first (Tab to the devices pane), then t", true);
        } else if let Some(busy) = self.probe_busy() {
            self.status(busy, true);
        } else if let Some(dev) = self.view.dev_sel.clone() {
            let mount = self
                .model
                .devices
                .iter()
                .find(|d| d.name == dev)
                .and_then(|d| d.info.as_ref())
                .and_then(|i| i.mounts.first())
                .map(|m| m.mount_point.clone());
            self.view.popup = Popup::ProbeMenu(ProbeMenu {
                sync_dir: mount,
                ..ProbeMenu::new(dev)
            });
        } else {
            self.status("no device selected", true);
        }
    }

    pub(super) fn on_menu_key(&mut self, mut m: ProbeMenu, code: KeyCode) -> Option<Command> {
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
            KeyCode::Char('a') => m.tests = probe::Tests::Align,
            KeyCode::Char('x') => m.tests = probe::Tests::Size,
            KeyCode::Char('m') => m.tests = probe::Tests::Seek,
            KeyCode::Char('w') if m.sync_dir.is_some() => m.tests = probe::Tests::SyncWrite,
            KeyCode::Char('w') => self.status("sync-write latency needs a mounted filesystem on this device", true),
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
        let target = match (&m.sync_dir, m.tests) {
            (Some(dir), probe::Tests::SyncWrite) => PathBuf::from(dir),
            _ => PathBuf::from(format!("/dev/{}", m.device)),
        };
        let mut cfg = ProbeConfig::new(target, m.tests, m.depth);
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
        self.view.show_results = true;
        self.view.results = crate::ui::results::Scroll::default();
        self.probe_token = Some(CancelToken::new());
        self.view.focus = Pane::Results;
        self.status(text, false);
        Some(Command::StartProbe(Box::new(cfg)))
    }

    /// Esc while a probe runs: stop it without waiting for the read in flight.
    pub(super) fn cancel_probe(&mut self) {
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
                        // The new result is the device's basis from now on.
                        if !self.captured_tree {
                            self.model.findings.saved = probe::store::load_saved(Some(&p));
                        }
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
}

/// Sends a probe thread's messages to the loop. Should the thread end
/// without a last word (a panic), dropping the sink says so, so the
/// dashboard never waits for a probe that is gone.
pub(super) struct ProbeSink {
    pub(super) tx: tokio::sync::mpsc::UnboundedSender<ProbeMsg>,
    pub(super) ended: std::sync::atomic::AtomicBool,
}

impl ProbeSink {
    pub(super) fn new(tx: tokio::sync::mpsc::UnboundedSender<ProbeMsg>) -> Self {
        ProbeSink {
            tx,
            ended: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub(super) fn send(&self, m: ProbeMsg) {
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
