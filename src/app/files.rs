//! Keys of the files view (`I`): ↑↓ select, Enter opens the detail of the
//! selected file's busiest process, Esc / q / I close.

use crossterm::event::KeyCode;

use super::{App, Command};
use crate::ui::{Pane, Popup};

impl App {
    pub(super) fn on_files_key(&mut self, sel: usize, code: KeyCode) -> Option<Command> {
        let last = self.model.trace.files.interval.files.len().saturating_sub(1);
        match code {
            KeyCode::Up => self.view.popup = Popup::Files(sel.min(last).saturating_sub(1)),
            KeyCode::Down => self.view.popup = Popup::Files((sel + 1).min(last)),
            KeyCode::PageUp => self.view.popup = Popup::Files(sel.min(last).saturating_sub(10)),
            KeyCode::PageDown => self.view.popup = Popup::Files((sel + 10).min(last)),
            KeyCode::Home => self.view.popup = Popup::Files(0),
            KeyCode::End => self.view.popup = Popup::Files(last),
            KeyCode::Esc | KeyCode::Char('q') | KeyCode::Char('I') => self.view.popup = Popup::None,
            KeyCode::Enter => return self.open_file_process(sel.min(last)),
            _ => {}
        }
        None
    }

    /// The detail of the process that did most to file `i` (kernel
    /// threads and the "others" row are not processes to open).
    fn open_file_process(&mut self, i: usize) -> Option<Command> {
        let (_, row) = self.model.trace.files.interval.files.get(i)?;
        let mut procs: Vec<_> = row.procs.iter().filter(|(p, _)| **p > 0).collect();
        procs.sort_by(|a, b| b.1.busy().cmp(&a.1.busy()).then(a.0.cmp(b.0)));
        let Some(k) = procs
            .iter()
            .find_map(|(pid, _)| self.model.procs.iter().find(|p| p.raw.key.pid == **pid))
            .map(|p| p.raw.key)
        else {
            self.status("no listed process did this file's I/O (kernel threads or gone)", true);
            return None;
        };
        self.view.focus = Pane::Processes;
        self.view.proc_sel = Some(k);
        self.view.popup = Popup::Process(k);
        self.view.proc_info = None;
        Some(Command::ReadProcInfo(k))
    }
}
