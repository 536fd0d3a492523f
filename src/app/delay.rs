//! The `D` key: turn delay accounting on (root), after a yes. The sysctl is
//! set back to its previous value when iolens exits (see `run`).

use crossterm::event::KeyCode;

use super::{App, Command};
use crate::ui::Popup;

impl App {
    /// `D`: ask before turning delay accounting on, or say why not.
    pub(super) fn ask_delayacct(&mut self) {
        if self.captured_tree {
            self.status("not on a captured /proc and /sys tree (--root)", true);
        } else if self.model.delayacct != Some(false) {
            self.status("delay accounting is already on", false);
        } else if !self.model.host.is_root {
            self.status(
                "turning delay accounting on needs root (sysctl kernel.task_delayacct=1)",
                true,
            );
        } else {
            self.view.popup = Popup::DelayAcct;
        }
    }

    pub(super) fn on_delayacct_key(&mut self, code: KeyCode) -> Option<Command> {
        let cmd = match code {
            KeyCode::Char('y') | KeyCode::Char('Y') => Some(Command::DelayAcctOn),
            KeyCode::Esc | KeyCode::Char('n') | KeyCode::Char('N') | KeyCode::Char('q') => {
                self.status("cancelled", false);
                None
            }
            _ => return None,
        };
        self.view.popup = Popup::None;
        cmd
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyEvent, KeyModifiers};

    use super::*;
    use crate::collect::sample::HostInfo;
    use crate::model::Model;
    use crate::ui::ViewState;

    fn app(root: bool, on: Option<bool>) -> App {
        let mut m = Model::new(
            HostInfo {
                is_root: root,
                ..Default::default()
            },
            100.0,
        );
        m.delayacct = on;
        App::new(m, ViewState::default())
    }

    fn key(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
    }

    #[test]
    fn asks_first_and_only_root_with_accounting_off() {
        let mut a = app(true, Some(false));
        assert_eq!(a.on_key(key('D')), None);
        assert_eq!(a.view.popup, Popup::DelayAcct);
        // Other keys leave the question open; y answers it.
        assert_eq!(a.on_key(key('x')), None);
        assert_eq!(a.view.popup, Popup::DelayAcct);
        assert_eq!(a.on_key(key('y')), Some(Command::DelayAcctOn));
        assert_eq!(a.view.popup, Popup::None);
        a.on_key(key('D'));
        assert_eq!(a.on_key(key('n')), None);
        assert_eq!(a.view.popup, Popup::None);

        for (root, on) in [(false, Some(false)), (true, Some(true)), (true, None)] {
            let mut a = app(root, on);
            assert_eq!(a.on_key(key('D')), None);
            assert_eq!(a.view.popup, Popup::None, "root {root} on {on:?}");
            assert!(a.view.status.is_some());
        }
    }
}
