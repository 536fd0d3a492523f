//! The files view (`I`): the files the disk read into the page cache or
//! whose pages were dirtied in the last interval, busiest first, with
//! their device and processes (columns from
//! [`crate::present::files::FILE_COLUMNS`]); ↑↓ select, Enter opens the
//! selected file's busiest process. Without tracing it says why.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{ViewState, pane_block};
use crate::model::Model;
use crate::present::files::{FILE_COLUMNS, FILES_TITLE, FileCol, FileColumn, cell, files_note};
use crate::present::text::truncate;

/// The path column's least width; below it the processes column, then the
/// blocked one, are left out so that the path keeps room.
const MIN_PATH: usize = 20;

/// The columns that fit in `w`.
fn columns(w: usize) -> Vec<&'static FileColumn> {
    let fixed = |cols: &[&FileColumn]| cols.iter().map(|c| c.width + 1).sum::<usize>();
    let mut cols: Vec<&FileColumn> = FILE_COLUMNS.iter().collect();
    for drop in [FileCol::Processes, FileCol::Blocked] {
        if w.saturating_sub(fixed(&cols)) < MIN_PATH {
            cols.retain(|c| c.id != drop);
        }
    }
    cols
}

fn row_text(cols: &[&FileColumn], w: usize, text: impl Fn(&FileColumn) -> String) -> String {
    let mut out = String::new();
    for c in cols {
        let t = text(c);
        let width = if c.width == 0 {
            w.saturating_sub(out.chars().count())
        } else {
            c.width
        };
        let t = truncate(&t, width);
        if c.width == 0 {
            out.push_str(&t);
        } else if c.right {
            out.push_str(&format!("{t:>width$} "));
        } else {
            out.push_str(&format!("{t:<width$} "));
        }
    }
    out
}

/// The view over the body, `sel` the selected file.
pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, sel: usize) {
    let t = &view.theme;
    let files = &model.trace.files.interval.files;
    let mut title = Line::from(vec![Span::styled(
        if model.trace.files.active {
            format!(" {FILES_TITLE} ({}) ", files.len())
        } else {
            format!(" {FILES_TITLE} ")
        },
        t.title(),
    )]);
    if let Some(tag) = model.trace.sampled().filter(|_| model.trace.files.active) {
        title.push_span(Span::styled(
            format!("~trace {tag} "),
            t.severity(super::theme::Severity::Warn),
        ));
    }
    title.push_span(Span::styled("↑↓ select · Enter process · Esc back ", t.dim()));
    let b = pane_block(title, true, t);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    let w = usize::from(inner.width);
    let h = usize::from(inner.height);
    let mut lines = vec![Line::styled(truncate(&files_note(model), w), t.dim())];
    if !model.trace.files.active {
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    }
    let cols = columns(w);
    lines.push(Line::styled(row_text(&cols, w, |c| c.head.to_string()), t.title()));
    if files.is_empty() {
        if !model.trace.no_window() {
            lines.push(Line::raw("no file was read from disk or dirtied in the last interval"));
        }
        frame.render_widget(Paragraph::new(lines), inner);
        return;
    }
    let room = h.saturating_sub(lines.len()).max(1);
    let sel = sel.min(files.len() - 1);
    let first = (sel + 1).saturating_sub(room);
    for i in (first..files.len()).take(room) {
        let text = row_text(&cols, w, |c| cell(c.id, model, i));
        let style = if i == sel {
            t.selected()
        } else {
            ratatui::style::Style::new()
        };
        lines.push(Line::styled(text, style));
    }
    frame.render_widget(Paragraph::new(lines), inner);
}
