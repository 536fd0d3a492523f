//! Processes pane (iotop-like): per-process storage and logical I/O, sorted,
//! filtered, as rates or as totals since iolens started.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table, TableState};

use super::devices::truncate;
use super::viewmodel::{ProcNums, ViewModel, active, natural_desc, nums};
use super::{Pane, ProcCol, ViewState, pane_block};
use crate::format;
use crate::model::{IoUnavailable, Model, ProcRow};
use crate::present::Align;
use crate::present::process::rate_nums;
use crate::present::text::CHILDREN_LABEL;
pub use crate::present::text::{command, devices_text};

/// The rows in display order after filter, only-active and sort.
#[cfg(any(test, feature = "test-support"))]
pub fn visible<'a>(model: &'a Model, view: &ViewState) -> Vec<&'a ProcRow> {
    super::viewmodel::proc_rows(model, view)
}

fn width(c: ProcCol) -> u16 {
    c.def().width
}

/// The columns that fit in `avail`, in display order: PID, the command and
/// the sort column always (a list is never sorted by a column not shown),
/// then the others in the order of the table's `keep` rank.
pub fn fit_columns(wanted: &[ProcCol], avail: u16, sort: ProcCol) -> Vec<ProcCol> {
    let mut used = 0u16;
    let mut keep = Vec::new();
    // Columns kept longest first (the table's `keep` rank); the command
    // always gets what is left.
    let mut by_keep = ProcCol::ALL;
    by_keep.sort_by_key(|c| c.def().keep);
    let order = [ProcCol::Pid, ProcCol::Command, sort].into_iter().chain(
        by_keep
            .into_iter()
            .filter(|c| *c != sort && *c != ProcCol::Pid && *c != ProcCol::Command),
    );
    for c in order {
        if keep.contains(&c) {
            continue;
        }
        if !wanted.contains(&c) && !matches!(c, ProcCol::Pid | ProcCol::Command) && c != sort {
            continue;
        }
        let w = width(c) + u16::from(!keep.is_empty());
        if used + w > avail {
            break;
        }
        used += w;
        keep.push(c);
    }
    ProcCol::ALL.into_iter().filter(|c| keep.contains(c)).collect()
}

/// The column at `x` cells from the pane's inner left edge, as drawn in
/// `inner_w` cells (for a click on the header).
pub fn column_at(view: &ViewState, inner_w: u16, x: u16) -> Option<ProcCol> {
    let mut left = 0u16;
    for c in fit_columns(&view.proc_cols, inner_w, view.sort) {
        if c == ProcCol::Command {
            // Fills what is left (always the last column).
            return (x >= left).then_some(c);
        }
        let right = left + width(c);
        if x < right {
            return (x >= left).then_some(c);
        }
        left = right + 1;
    }
    None
}

fn cell_text(c: ProcCol, p: &ProcRow, n: Option<ProcNums>, accumulated: bool) -> String {
    // Unknown numbers: say why once, in the first number column.
    if n.is_none() && c == ProcCol::DiskRead {
        return match &p.raw.io {
            Err(IoUnavailable::PermissionDenied) => "denied".to_string(),
            _ => format::NA.to_string(),
        };
    }
    c.pane_text(p, n.as_ref(), accumulated)
}

/// The indented line under a process for what arrived in its counters from
/// exited threads and reaped children in the interval (without exit
/// records); rates only, so not in accumulated mode.
fn children_row(p: &ProcRow, cols: &[ProcCol], accumulated: bool) -> Option<Row<'static>> {
    let r = p.children_rates.as_deref().filter(|r| r.is_active() && !accumulated)?;
    let n = rate_nums(r);
    Some(Row::new(cols.iter().map(|c| {
        let w = usize::from(width(*c));
        match c {
            ProcCol::Command => Cell::from(format!("  {CHILDREN_LABEL}")),
            c if c.def().children.0 => Cell::from(format!("{:>w$}", c.pane_text(p, Some(&n), false))),
            _ => Cell::from(""),
        }
    })))
}

fn left_aligned(c: ProcCol) -> bool {
    c.def().align == Align::Left
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, vm: &ViewModel) {
    let t = &view.theme;
    let rows = vm.proc_rows(model);
    let focused = view.focus == Pane::Processes;
    let mut title = vec![
        Span::styled(" Processes ", t.title()),
        Span::styled(format!("{}/{} ", rows.len(), model.procs.len()), t.dim()),
    ];
    if view.only_active {
        title.push(Span::styled("[active] ", t.accent()));
    }
    if !view.filter.is_empty() || view.editing_filter {
        title.push(Span::styled(
            format!("[/{}] ", format::escape(&view.filter)),
            t.accent(),
        ));
    }
    if view.accumulated {
        title.push(Span::styled("[totals since start] ", t.accent()));
    }
    if view.tree {
        title.push(Span::styled("[tree] ", t.accent()));
    }
    if let Some(k) = view.proc_sel.filter(|_| view.follow) {
        title.push(Span::styled(format!("[following PID {}] ", k.pid), t.accent()));
    }
    // Rows that do not fit: say how many, and how to see them.
    let page = usize::from(area.height.saturating_sub(3)).max(1);
    if rows.len() > page {
        title.push(Span::styled(
            format!("{} more: ↓ or z to maximise ", rows.len() - page),
            t.accent(),
        ));
    }
    let inner_w = area.width.saturating_sub(2);
    let cols = fit_columns(&view.proc_cols, inner_w, view.sort);
    // The dirty throttle's pauses of a sampled interval: estimates.
    if let Some(tag) = model.trace.sampled().filter(|_| model.trace.dirty.active)
        && cols.contains(&ProcCol::DirtyPaused)
    {
        title.insert(
            2,
            Span::styled(format!("~PAUSE% {tag} "), t.severity(super::theme::Severity::Warn)),
        );
    }
    let block = pane_block(Line::from(title), focused, t);
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| match c {
            ProcCol::Command => Constraint::Fill(1),
            c => Constraint::Length(width(*c)),
        })
        .collect();
    let arrow = if natural_desc(view.sort) != view.reverse {
        "▼"
    } else {
        "▲"
    };
    let head = Row::new(cols.iter().map(|c| {
        let h = c.head(view.accumulated);
        let w = usize::from(width(*c));
        // The arrow is never clipped: a long name gives way to it.
        let h = if *c == view.sort {
            format!("{}{arrow}", truncate(h, w.saturating_sub(1)))
        } else {
            h.to_string()
        };
        Cell::from(if left_aligned(*c) { h } else { format!("{h:>w$}") })
    }))
    .style(t.title());
    // Only the rows on screen are built: the window ends at the selection
    // when it is below the first page (as TableState would scroll).
    let selected = view.proc_sel.and_then(|k| rows.iter().position(|p| p.raw.key == k));
    let offset = selected.filter(|_| focused).map_or(0, |s| (s + 1).saturating_sub(page));
    let mut body = Vec::with_capacity(page);
    let mut shown = None;
    for (i, (p, &mi)) in rows.iter().zip(&vm.procs).enumerate().skip(offset).take(page) {
        if selected == Some(i) && focused {
            shown = Some(body.len());
        }
        let n = nums(p, view.accumulated);
        let busy = n.is_some_and(|n| n.disk_read + n.disk_write > 0.0);
        // Exited processes and idle ones are greyed.
        let row_style = if n.is_none() || p.exited || !active(p, view.accumulated) {
            t.dim()
        } else {
            Style::new()
        };
        body.push(
            Row::new(cols.iter().map(|c| {
                let s = cell_text(*c, p, n, view.accumulated);
                let w = usize::from(width(*c));
                match c {
                    ProcCol::Command => Cell::from(format!("{}{s}", vm.tree_prefix(mi))),
                    c if left_aligned(*c) => Cell::from(truncate(&s, w)),
                    ProcCol::DiskRead | ProcCol::DiskWrite if busy && !p.exited => {
                        Cell::from(Span::styled(format!("{s:>w$}"), t.accent()))
                    }
                    _ => Cell::from(format!("{s:>w$}")),
                }
            }))
            .style(row_style),
        );
        if let Some(row) = children_row(p, &cols, view.accumulated) {
            body.push(row.style(t.dim()));
        }
    }
    let mut state = TableState::default().with_selected(shown);
    let table = Table::new(body, widths)
        .header(head)
        .block(block)
        .column_spacing(1)
        .row_highlight_style(t.selected());
    frame.render_stateful_widget(table, area, &mut state);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_and_command_stays() {
        let all = ProcCol::ALL.to_vec();
        let rd = ProcCol::DiskRead;
        assert_eq!(
            fit_columns(&all, 60, rd),
            [ProcCol::Pid, ProcCol::DiskRead, ProcCol::DiskWrite, ProcCol::Command]
        );
        // 120 columns: the command keeps room, IO% and syscalls/s go first.
        let at120 = fit_columns(&all, 118, rd);
        assert!(
            !at120.contains(&ProcCol::IoWait) && at120.contains(&ProcCol::Devices),
            "{at120:?}"
        );
        assert_eq!(fit_columns(&all, 300, rd), all);
        // The sort column is always shown, even one that would drop first.
        let by_io = fit_columns(&all, 60, ProcCol::IoWait);
        assert_eq!(
            by_io,
            [ProcCol::Pid, ProcCol::DiskRead, ProcCol::IoWait, ProcCol::Command]
        );
        // Even one not in the configured columns.
        let few = [ProcCol::Pid, ProcCol::Command];
        assert_eq!(
            fit_columns(&few, 100, ProcCol::Syscalls),
            [ProcCol::Pid, ProcCol::Syscalls, ProcCol::Command]
        );
    }
}
