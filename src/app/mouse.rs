//! Mouse: a click focuses the pane under it and selects the row clicked; a
//! click on the processes or cgroups pane's column header sorts by that
//! column (on the sort column: reverses); the wheel scrolls the pane under
//! it. Hit
//! tests use the layout the panes are drawn in ([`ui::pane_areas`]).
//! Off with `--no-mouse` (then the terminal's own selection works without
//! Shift).

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::App;
use crate::ui::{self, Pane, Popup};

/// Rows the wheel moves.
const WHEEL: isize = 3;

impl App {
    /// React to a mouse event on a `screen`-sized terminal.
    pub fn on_mouse(&mut self, m: MouseEvent, screen: Rect) {
        if self.view.popup != Popup::None || self.view.editing_filter {
            return;
        }
        let at = Position::new(m.column, m.row);
        let areas = ui::pane_areas(screen, &self.model, &self.view, &self.rows);
        let Some(&(pane, area)) = areas.iter().find(|(_, a)| a.contains(at)) else {
            return;
        };
        let was_focused = self.view.focus == pane;
        self.view.focus = pane;
        match m.kind {
            MouseEventKind::Down(MouseButton::Left) => self.click(pane, area, at, was_focused),
            MouseEventKind::ScrollDown => self.move_sel(WHEEL),
            MouseEventKind::ScrollUp => self.move_sel(-WHEEL),
            _ => {}
        }
        self.fix_selection();
    }

    fn click(&mut self, pane: Pane, area: Rect, at: Position, was_focused: bool) {
        // Border, then the column header, then the rows.
        let header_y = area.y + 1;
        let inner_w = area.width.saturating_sub(2);
        let x = at.x.saturating_sub(area.x + 1);
        if pane == Pane::Processes && at.y == header_y {
            if let Some(c) = ui::processes::column_at(&self.view, inner_w, x) {
                if c == self.view.sort {
                    self.view.reverse = !self.view.reverse;
                } else {
                    self.view.sort = c;
                    self.view.reverse = false;
                }
            }
            return;
        }
        if pane == Pane::Cgroups && at.y == header_y {
            if let Some(c) = ui::cgroups::column_at(self.view.cg_sort, inner_w, x) {
                if c == self.view.cg_sort {
                    self.view.cg_reverse = !self.view.cg_reverse;
                } else {
                    self.view.cg_sort = c;
                    self.view.cg_reverse = false;
                }
            }
            return;
        }
        if at.y <= header_y || at.y + 1 >= area.bottom() {
            return;
        }
        // The rows were drawn scrolled so that the selection (of a focused
        // pane) was on the last row of the page.
        let page = usize::from(area.height.saturating_sub(3)).max(1);
        let offset = |sel: usize| if was_focused { (sel + 1).saturating_sub(page) } else { 0 };
        let row = usize::from(at.y - header_y - 1);
        match pane {
            Pane::Processes => {
                let i = row + offset(self.proc_idx);
                if let Some(k) = self.proc_keys.get(i).copied() {
                    self.proc_idx = i;
                    self.view.proc_sel = Some(k);
                }
            }
            Pane::Devices => {
                let i = row + offset(self.dev_idx);
                if let Some(r) = self.rows.devices.get(i).and_then(|d| self.model.devices.get(d.index)) {
                    self.dev_idx = i;
                    self.view.dev_sel = Some(r.name.clone());
                }
            }
            Pane::Progress => {
                if let Some(k) = ui::progress::clicked(&self.model, self.view.xfer_sel, was_focused, page, row) {
                    self.view.xfer_sel = Some(k);
                }
            }
            Pane::Cgroups => {
                let i = row + offset(self.cg_idx);
                let path = self
                    .model
                    .cgroups
                    .as_ref()
                    .and_then(|c| self.rows.cgroups.get(i).and_then(|&j| c.rows.get(j)))
                    .map(|r| r.path.clone());
                if let Some(p) = path {
                    self.cg_idx = i;
                    self.view.cg_sel = Some(p);
                }
            }
            Pane::Results | Pane::Requests => {}
        }
    }
}
