//! Selections and focus: which device, process and transfer is selected,
//! kept on the same row across samples and re-sorts, moved by keys over the
//! view-model's rows.

use super::App;
use crate::model::ProcKey;
use crate::ui::Pane;
use crate::ui::viewmodel::{self, ViewModel};

impl App {
    /// Recompute the view-model, then keep the selections on rows that
    /// exist: the same device / process if still shown, else the row at the
    /// same position. Called after every change of the model or view state.
    pub fn fix_selection(&mut self) {
        self.rows = ViewModel::new(&self.model, &self.view);
        self.view.dev_order = self
            .rows
            .devices
            .iter()
            .filter_map(|d| self.model.devices.get(d.index))
            .map(|r| r.name.clone())
            .collect();
        let devs = &self.rows.devices;
        let name_at = |i: usize| {
            devs.get(i)
                .and_then(|d| self.model.devices.get(d.index))
                .map(|r| r.name.clone())
        };
        match self.view.dev_sel.as_ref().and_then(|n| {
            devs.iter()
                .position(|d| self.model.devices.get(d.index).is_some_and(|r| &r.name == n))
        }) {
            Some(i) => self.dev_idx = i,
            None => {
                self.dev_idx = self.dev_idx.min(devs.len().saturating_sub(1));
                self.view.dev_sel = name_at(self.dev_idx);
            }
        }
        // While a confirmation is open the rows keep their order, so the
        // question and the list under it never disagree.
        if matches!(self.view.popup, crate::ui::Popup::Confirm(_)) {
            let old = &self.proc_keys;
            let model = &self.model;
            let rank = |i: &usize| {
                model
                    .procs
                    .get(*i)
                    .and_then(|p| old.iter().position(|k| *k == p.raw.key))
                    .unwrap_or(usize::MAX)
            };
            self.rows.procs.sort_by_key(rank);
        }
        let procs = &self.rows.procs;
        let key_at = |i: usize| procs.get(i).and_then(|&p| self.model.procs.get(p)).map(|p| p.raw.key);
        // Like htop: the cursor keeps its row while rows re-sort; only in
        // follow mode does it move with its process. A followed process
        // that is gone (or filtered away) ends follow mode; the cursor
        // stays at the nearest row.
        let followed = self
            .view
            .follow
            .then_some(self.view.proc_sel)
            .flatten()
            .and_then(|k| (0..procs.len()).position(|i| key_at(i) == Some(k)));
        match followed {
            Some(i) => self.proc_idx = i,
            None => {
                if self.view.follow {
                    self.view.follow = false;
                    if let Some(k) = self.view.proc_sel {
                        self.view.status = Some(crate::ui::StatusMsg {
                            text: format!("PID {} is no longer listed: follow mode off", k.pid),
                            error: false,
                        });
                    }
                }
                self.proc_idx = self.proc_idx.min(procs.len().saturating_sub(1));
            }
        }
        self.view.proc_sel = key_at(self.proc_idx);
        self.proc_keys = (0..procs.len()).filter_map(key_at).collect();
        let cgs = &self.rows.cgroups;
        let rows = self.model.cgroups.as_ref().map(|c| &c.rows[..]).unwrap_or_default();
        let path_at = |i: usize| cgs.get(i).and_then(|&r| rows.get(r)).map(|r| r.path.clone());
        match self
            .view
            .cg_sel
            .as_ref()
            .and_then(|s| (0..cgs.len()).position(|i| path_at(i).as_ref() == Some(s)))
        {
            Some(i) => self.cg_idx = i,
            // Kept while the rows are not read yet (pane just opened).
            None if self.model.cgroups.is_none() => {}
            None => {
                self.cg_idx = self.cg_idx.min(cgs.len().saturating_sub(1));
                self.view.cg_sel = path_at(self.cg_idx);
            }
        }
        let order = crate::ui::progress::order(&self.model);
        if !self.view.xfer_sel.is_some_and(|k| order.contains(&k)) {
            self.view.xfer_sel = order.first().copied();
        }
        // A pane that went away (no transfers left) gives the focus back.
        if !self.view.panes(&self.model).contains(&self.view.focus) {
            self.view.focus = Pane::Processes;
        }
    }

    /// Move the selection of the focused pane by `delta` rows, clamped
    /// (`isize::MIN` / `isize::MAX` go to the first / last row).
    pub(super) fn move_sel(&mut self, delta: isize) {
        let step = |idx: usize, len: usize| -> usize {
            (idx as isize).saturating_add(delta).clamp(0, (len as isize - 1).max(0)) as usize
        };
        match self.view.focus {
            Pane::Devices => {
                self.dev_idx = step(self.dev_idx, self.rows.devices.len());
                self.view.dev_sel = self
                    .rows
                    .devices
                    .get(self.dev_idx)
                    .and_then(|d| self.model.devices.get(d.index))
                    .map(|r| r.name.clone());
            }
            Pane::Processes => {
                self.proc_idx = step(self.proc_idx, self.rows.procs.len());
                self.view.proc_sel = self
                    .rows
                    .procs
                    .get(self.proc_idx)
                    .and_then(|&i| self.model.procs.get(i))
                    .map(|p| p.raw.key);
            }
            Pane::Progress => {
                let order = crate::ui::progress::order(&self.model);
                let idx = self
                    .view
                    .xfer_sel
                    .and_then(|k| order.iter().position(|p| *p == k))
                    .unwrap_or(0);
                self.view.xfer_sel = order.get(step(idx, order.len())).copied();
            }
            Pane::Cgroups => {
                self.cg_idx = step(self.cg_idx, self.rows.cgroups.len());
                let rows = self.model.cgroups.as_ref().map(|c| &c.rows[..]).unwrap_or_default();
                self.view.cg_sel = self
                    .rows
                    .cgroups
                    .get(self.cg_idx)
                    .and_then(|&i| rows.get(i))
                    .map(|r| r.path.clone());
            }
            Pane::Requests => {}
            Pane::Results => {
                let n = crate::ui::results::line_count(&self.view.probe, self.view.results);
                let off = (self.view.results.offset as isize).saturating_add(delta);
                self.view.results.offset = off.clamp(0, n.saturating_sub(1) as isize).min(u16::MAX as isize) as u16;
            }
        }
    }

    /// `R`: close the results pane, or reopen it (when a probe was run).
    pub(super) fn toggle_results(&mut self) {
        if !self.view.has_results() {
            self.status("no probe results yet: t on the devices pane starts a probe", true);
            return;
        }
        self.view.show_results = !self.view.show_results;
        if self.view.show_results {
            self.view.focus = Pane::Results;
            self.status("probe results pane open", false);
        } else {
            self.status("probe results pane closed (R reopens it)", false);
        }
    }

    /// `[` / `]`: show an earlier / a later result of the session; past the
    /// newest, the current one again.
    pub(super) fn pick_result(&mut self, older: bool) {
        let n = self.view.probe.past.len();
        if n == 0 {
            self.status("no finished probe results in this session yet", true);
            return;
        }
        // The current result (shown without a pick) is the last of `past`
        // once finished; while a probe runs or failed it is not in `past`.
        let current = match self.view.probe.state {
            crate::probe::view::RunState::Finished(_) | crate::probe::view::RunState::Cancelled(Some(_)) => n - 1,
            _ => n,
        };
        let cur = self.view.results.pick.unwrap_or(current);
        let next = if older {
            cur.saturating_sub(1)
        } else {
            (cur + 1).min(current)
        };
        self.view.results.pick = (next != current).then_some(next);
        self.view.results.offset = 0;
    }

    /// Put the cursor on the row of process `k` (if it is listed).
    pub(super) fn select_proc(&mut self, k: ProcKey) {
        if let Some(i) = self.proc_keys.iter().position(|x| *x == k) {
            self.proc_idx = i;
            self.view.proc_sel = Some(k);
        }
    }

    /// `F`: follow the process under the cursor (the cursor moves with it
    /// as rows re-sort), or stop following.
    pub(super) fn toggle_follow(&mut self) {
        if self.view.follow {
            self.view.follow = false;
            self.status("follow mode off: the cursor keeps its row", false);
        } else if let Some(k) = self.view.proc_sel {
            self.view.follow = true;
            self.status(format!("following PID {} (F stops)", k.pid), false);
        } else {
            self.status("no process selected", true);
        }
    }

    pub(super) fn cycle_focus(&mut self, back: bool) {
        let panes = self.view.panes(&self.model);
        let i = panes.iter().position(|p| *p == self.view.focus).unwrap_or(0);
        let n = panes.len();
        self.view.focus = panes[if back { (i + n - 1) % n } else { (i + 1) % n }];
    }

    /// The process selected in the focused pane: the processes pane's
    /// selection, or the process of the selected transfer.
    pub(super) fn selected_proc(&self) -> Option<(ProcKey, String)> {
        let k = match self.view.focus {
            Pane::Processes => self.view.proc_sel?,
            Pane::Progress => self.view.xfer_sel?,
            Pane::Devices | Pane::Results | Pane::Cgroups | Pane::Requests => return None,
        };
        let p = self.model.procs.iter().find(|p| p.raw.key == k)?;
        Some((k, p.raw.comm.to_string()))
    }

    /// The disk of the selected device (itself, or a partition's parent).
    pub(super) fn selected_disk(&self) -> Option<String> {
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

    /// Space, ← →: fold or unfold the partitions of the selected disk.
    pub(super) fn fold(&mut self, fold: Option<bool>) {
        if let Some(disk) = self.selected_disk() {
            if fold.unwrap_or(self.view.unfolded.contains(&disk)) {
                self.view.unfolded.remove(&disk);
                self.view.dev_sel = Some(disk);
            } else {
                self.view.unfolded.insert(disk);
            }
        }
    }

    /// Enter on a transfer: select its process in the processes pane,
    /// clearing the filters that hide it (and saying so).
    pub(super) fn jump_to_transfer(&mut self) {
        let Some(k) = self.view.xfer_sel else {
            self.status("no transfer selected", true);
            return;
        };
        let shown = |a: &App| viewmodel::proc_rows(&a.model, &a.view).iter().any(|p| p.raw.key == k);
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
        self.view.focus = Pane::Processes;
        self.fix_selection();
        self.select_proc(k);
        let mut text = format!("PID {} ({comm}): i ionice, k SIGTERM", k.pid);
        if !cleared.is_empty() {
            text = format!("{text} ({})", cleared.join(", "));
        }
        self.status(text, false);
    }
}
