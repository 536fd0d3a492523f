//! Cgroups pane (toggled with `C`): which service, container or pod does
//! the I/O — read/write bytes/s and requests/s per cgroup, io pressure, the
//! effective limit and how close the cgroup is to it, and where each row's
//! numbers come from (the kernel's per-cgroup counters or the member
//! processes' own I/O). Sortable like the processes pane; Enter opens the
//! cgroup's processes and devices ([`super::cgroup_detail`]).

use std::cmp::Ordering;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};

use super::devices::truncate;
use super::viewmodel::ViewModel;
use super::{Pane, ViewState, pane_block};
use crate::format;
use crate::model::Model;
use crate::model::cgroup::{CgroupRow, CgroupView};
use crate::present::Align;
use crate::present::cgroup_text::hierarchy_text;

pub use crate::present::cgroup::{CgCol, share_text};

fn width(c: CgCol) -> u16 {
    c.def().width
}

fn left_aligned(c: CgCol) -> bool {
    c.def().align == Align::Left
}

/// The columns that fit in `avail` cells, in display order. The sort
/// column is always among them (right after the name): a list sorted by a
/// column that is not shown would look unsorted.
pub fn fit_columns(avail: u16, sort: CgCol) -> Vec<CgCol> {
    let mut used = 0u16;
    let mut keep = Vec::new();
    // Columns kept longest first (the table's `keep` rank): the name, the
    // rates, how close to the limit, where the numbers come from.
    let mut by_keep = CgCol::ALL;
    by_keep.sort_by_key(|c| c.def().keep);
    let order = [CgCol::Name, sort]
        .into_iter()
        .chain(by_keep.into_iter().filter(|c| *c != sort && *c != CgCol::Name));
    for c in order {
        if keep.contains(&c) {
            continue;
        }
        let w = width(c) + u16::from(!keep.is_empty());
        if used + w > avail {
            break;
        }
        used += w;
        keep.push(c);
    }
    CgCol::ALL.into_iter().filter(|c| keep.contains(c)).collect()
}

/// The column at `x` cells from the pane's inner left edge, as drawn in
/// `inner_w` cells sorted by `sort` (for a click on the header).
pub fn column_at(sort: CgCol, inner_w: u16, x: u16) -> Option<CgCol> {
    let cols = fit_columns(inner_w, sort);
    let others: u16 = cols.iter().filter(|c| **c != CgCol::Name).map(|c| width(*c) + 1).sum();
    let mut left = 0u16;
    for c in cols {
        let w = if c == CgCol::Name {
            inner_w.saturating_sub(others)
        } else {
            width(c)
        };
        if x < left + w {
            return Some(c);
        }
        left += w + 1;
    }
    None
}

/// Compare two rows on `col` in its natural order; unknown numbers last,
/// ties by total bytes/s then path so the order is stable.
pub fn compare(a: &CgroupRow, b: &CgroupRow, col: CgCol) -> Ordering {
    col.order(a, b)
        .then_with(|| b.total_bps().total_cmp(&a.total_bps()))
        .then_with(|| a.path.cmp(&b.path))
}

/// The rows in display order, as indices into the model's cgroup rows.
pub fn order(model: &Model, view: &ViewState) -> Vec<usize> {
    let Some(v) = &model.cgroups else {
        return Vec::new();
    };
    let mut idx: Vec<usize> = (0..v.rows.len()).collect();
    idx.sort_by(|&a, &b| {
        let o = compare(&v.rows[a], &v.rows[b], view.cg_sort);
        if view.cg_reverse { o.reverse() } else { o }
    });
    idx
}

/// Height the pane wants: its rows, header, borders and the notes line.
pub fn height(model: &Model, vm: &ViewModel) -> u16 {
    let notes = model.cgroups.as_ref().is_some_and(|c| !c.notes.is_empty());
    u16::try_from(vm.cgroups.len().max(1))
        .unwrap_or(u16::MAX)
        .saturating_add(3 + u16::from(notes))
}

/// The pane's title: how many rows, the hierarchy, and how many rows do
/// not fit in `page` lines (and how to see them).
fn title<'a>(v: Option<&CgroupView>, shown: usize, page: usize, view: &ViewState) -> Line<'a> {
    let t = &view.theme;
    let mut spans = vec![Span::styled(" Cgroups ", t.title())];
    match v {
        None => spans.push(Span::styled("(reading the cgroup tree at the next sample) ", t.dim())),
        Some(v) => {
            spans.push(Span::styled(format!("{shown} · "), t.dim()));
            // Before the hierarchy, which a narrow terminal cuts.
            if shown > page {
                spans.push(Span::styled(
                    format!("{} more: ↓ or z to maximise", shown - page),
                    t.accent(),
                ));
                spans.push(Span::styled(" · ", t.dim()));
            }
            spans.push(Span::styled(format!("{} ", hierarchy_text(v)), t.dim()));
        }
    }
    Line::from(spans)
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, vm: &ViewModel) {
    let t = &view.theme;
    let focused = view.focus == Pane::Cgroups;
    let cv = model.cgroups.as_ref();
    let rows: Vec<&CgroupRow> =
        cv.map_or_else(Vec::new, |v| vm.cgroups.iter().filter_map(|&i| v.rows.get(i)).collect());
    let inner = pane_block(Line::raw(""), focused, t).inner(area);
    let has_notes = cv.is_some_and(|v| !v.notes.is_empty()) && inner.height > 2;
    // Lines for rows: the inner height less the header and the note line.
    let page = usize::from(inner.height.saturating_sub(1 + u16::from(has_notes))).max(1);
    let block = pane_block(title(cv, rows.len(), page, view), focused, t);
    frame.render_widget(block, area);
    let notes: Vec<String> = cv.map_or_else(Vec::new, |v| v.notes.iter().map(|n| format::escape(n)).collect());
    let [table_area, notes_area] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(u16::from(!notes.is_empty() && inner.height > 2)),
    ])
    .areas(inner);
    if notes_area.height > 0 {
        let text = format!("note: {}", notes.join("; "));
        frame.render_widget(Paragraph::new(Line::styled(text, t.dim())), notes_area);
    }
    if let Some(v) = cv.filter(|v| v.hierarchy.is_none()) {
        let why = v.notes.iter().map(|n| format::escape(n)).collect::<Vec<_>>().join("; ");
        frame.render_widget(Paragraph::new(format!("per-cgroup I/O n/a: {why}")), table_area);
        return;
    }
    let cols = fit_columns(table_area.width, view.cg_sort);
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| match c {
            CgCol::Name => Constraint::Fill(1),
            c => Constraint::Length(width(*c)),
        })
        .collect();
    // The name takes what the other columns leave (cut with "…").
    let others: u16 = cols.iter().filter(|c| **c != CgCol::Name).map(|c| width(*c) + 1).sum();
    let name_w = usize::from(table_area.width.saturating_sub(others));
    let arrow = if view.cg_sort.natural_desc() != view.cg_reverse {
        "▼"
    } else {
        "▲"
    };
    let head = Row::new(cols.iter().map(|c| {
        let w = usize::from(width(*c));
        // The arrow is never clipped: a long name gives way to it.
        let h = if *c == view.cg_sort {
            format!("{}{arrow}", truncate(c.def().head, w.saturating_sub(1)))
        } else {
            c.def().head.to_string()
        };
        Cell::from(if left_aligned(*c) { h } else { format!("{h:>w$}") })
    }))
    .style(t.title());
    let selected = view
        .cg_sel
        .as_ref()
        .and_then(|s| rows.iter().position(|r| &r.path == s));
    let offset = selected.filter(|_| focused).map_or(0, |s| (s + 1).saturating_sub(page));
    let mut body = Vec::with_capacity(page);
    let mut shown = None;
    for (i, r) in rows.iter().enumerate().skip(offset).take(page) {
        if selected == Some(i) && focused {
            shown = Some(body.len());
        }
        let style = if r.is_active() || r.at_limit {
            Style::new()
        } else {
            t.dim()
        };
        body.push(
            Row::new(cols.iter().map(|c| {
                let s = c.pane_text(r);
                let w = usize::from(width(*c));
                match c {
                    CgCol::Name => Cell::from(truncate(&s, name_w)),
                    CgCol::LimitShare if s.starts_with("AT") => Cell::from(Span::styled(format!("{s:>w$}"), t.error())),
                    c if left_aligned(*c) => Cell::from(truncate(&s, w)),
                    _ => Cell::from(format!("{s:>w$}")),
                }
            }))
            .style(style),
        );
    }
    let mut state = TableState::default().with_selected(shown);
    let table = Table::new(body, widths)
        .header(head)
        .column_spacing(1)
        .row_highlight_style(t.selected());
    frame.render_stateful_widget(table, table_area, &mut state);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_fit_and_the_limit_mark_stays() {
        use CgCol as C;
        let at80 = [C::Name, C::Source, C::Read, C::Write, C::PsiSome, C::LimitShare];
        assert_eq!(fit_columns(78, C::Read), at80);
        let at120 = fit_columns(118, C::Read);
        assert!(at120.contains(&C::Limit) && at120.contains(&C::WriteIops), "{at120:?}");
        assert!(!at120.contains(&C::Kind), "{at120:?}");
        assert_eq!(fit_columns(40, C::Name), [C::Name]);
        assert_eq!(fit_columns(300, C::Read), CgCol::ALL);
        // Sorted by a column that would not fit: it is shown, right after
        // the name, and the least important of the others give way.
        let by_procs = fit_columns(78, C::Procs);
        assert!(by_procs.contains(&C::Procs), "{by_procs:?}");
        assert_eq!(
            by_procs,
            [C::Name, C::Source, C::Read, C::Write, C::LimitShare, C::Procs]
        );
        assert_eq!(fit_columns(40, C::Kind), [C::Name, C::Kind]);
    }
}
