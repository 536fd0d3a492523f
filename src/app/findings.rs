//! Keys of the findings pane (`w`): ↑↓ select, Enter goes to the selected
//! finding's subject, Esc / q / w close.

use crossterm::event::KeyCode;

use super::{App, Command};
use crate::model::findings::Subject;
use crate::ui::{Pane, Popup};

impl App {
    pub(super) fn on_findings_key(&mut self, sel: usize, code: KeyCode) -> Option<Command> {
        let last = self.model.findings.findings().len().saturating_sub(1);
        match code {
            KeyCode::Up => self.view.popup = Popup::Findings(sel.min(last).saturating_sub(1)),
            KeyCode::Down => self.view.popup = Popup::Findings((sel + 1).min(last)),
            KeyCode::Home => self.view.popup = Popup::Findings(0),
            KeyCode::End => self.view.popup = Popup::Findings(last),
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('w') => self.view.popup = Popup::None,
            KeyCode::Enter => return self.go_to_finding(sel.min(last)),
            _ => {}
        }
        None
    }

    /// The subject of finding `i`: a device's detail (a mount's device),
    /// a process's detail, a cgroup's row in the cgroups pane (shown if
    /// hidden); the system: the processes pane.
    fn go_to_finding(&mut self, i: usize) -> Option<Command> {
        let subject = self.model.findings.findings().get(i)?.subject.clone();
        self.view.popup = Popup::None;
        match subject {
            Subject::Device { name } => self.go_to_device(&name),
            Subject::Mount { path } => {
                let dev = self.model.devices.iter().find(|d| {
                    d.info
                        .as_ref()
                        .is_some_and(|i| i.mounts.iter().any(|m| m.mount_point == path))
                });
                match dev.map(|d| d.name.clone()) {
                    Some(name) => self.go_to_device(&name),
                    None => self.status("no device of this mount is listed", true),
                }
            }
            Subject::Process { pid, .. } => {
                let key = self
                    .model
                    .procs
                    .iter()
                    .filter(|p| p.raw.key.pid == pid)
                    .min_by_key(|p| p.exited)
                    .map(|p| p.raw.key);
                let Some(k) = key else {
                    self.status(format!("process {pid} is gone"), true);
                    return None;
                };
                self.view.focus = Pane::Processes;
                self.view.proc_sel = Some(k);
                self.view.popup = Popup::Process(k);
                self.view.proc_info = None;
                return Some(Command::ReadProcInfo(k));
            }
            Subject::Cgroup { path } => {
                let shown = self.view.show_cgroups;
                self.view.show_cgroups = true;
                self.view.focus = Pane::Cgroups;
                self.view.cg_sel = Some(path);
                return (!shown).then_some(Command::Cgroups(true));
            }
            Subject::System => {
                self.view.focus = Pane::Processes;
                self.status("the processes waiting on I/O: the io% column, state D", false);
            }
        }
        None
    }

    fn go_to_device(&mut self, name: &str) {
        if !self.model.devices.iter().any(|d| d.name == name) {
            self.status("this device is gone", true);
            return;
        }
        self.view.focus = Pane::Devices;
        self.view.dev_sel = Some(name.to_string());
        self.view.popup = Popup::Detail(name.to_string());
        self.view.lat_scroll = 0;
    }
}
