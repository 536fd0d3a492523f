//! Progress pane: the tracked transfers — command, file (escaped), a bar,
//! percent, rate, ETA — sorted by ETA, done ones last (kept a while).
//! Where progress cannot be known the bar gives way to the reason.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, TableState};

use crate::model::Model;
use crate::model::progress::Job;
pub use crate::present::transfer::{BAR_WIDTH, bar};
use crate::present::transfer::{Fit, TransferCol, Width, state};
use crate::ui::{Pane, ViewState, pane_block};

/// Below this inner width the pane drops the PID column and narrows the
/// bar and the state so the file keeps room.
const NARROW: u16 = 110;

/// One transfer's row: the command cut to its column, the path to
/// `file_w` cells from its start, the state to `state_w` ("…"; none at 0).
fn row(j: &Job, narrow: bool, file_w: usize, state_w: usize) -> Row<'static> {
    let style = if j.is_done() {
        Style::default().add_modifier(Modifier::DIM)
    } else {
        Style::default()
    };
    let fit = Fit {
        bar_w: if narrow { BAR_WIDTH / 2 } else { BAR_WIDTH },
        file_w,
        state_w,
    };
    let cells = shown_cols(narrow, state_w).map(|c| Cell::from((c.def().text)(j, &fit)));
    Row::new(cells).style(style)
}

/// The columns shown: all but the PID when narrow, and the state only
/// with room for it.
fn shown_cols(narrow: bool, state_w: usize) -> impl Iterator<Item = TransferCol> {
    TransferCol::ALL
        .into_iter()
        .filter(move |c| (!narrow || c.def().narrow) && (*c != TransferCol::State || state_w > 0))
}

/// The pane in the dashboard: focus border, the selected transfer and how
/// many do not fit.
pub fn render_pane(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState) {
    let focused = view.focus == Pane::Progress;
    let t = &view.theme;
    let mut title = vec![Span::styled(title(model, 0), t.title())];
    let hidden = hidden_rows(model, area);
    if hidden > 0 {
        title.push(Span::styled(format!("{hidden} more: ↓ or z to maximise "), t.accent()));
    }
    let block = pane_block(Line::from(title), focused, t);
    let sel = if focused {
        view.xfer_sel
            .and_then(|k| model.progress.jobs.iter().position(|j| j.proc == k))
            .map(|i| (i, t.selected()))
    } else {
        None
    };
    draw(frame, area, model, block, sel);
}

/// Transfers that do not fit in `area` (borders and heading take 3 rows).
fn hidden_rows(model: &Model, area: Rect) -> usize {
    let fit = usize::from(area.height.saturating_sub(3));
    model.progress.jobs.len().saturating_sub(fit)
}

fn title(model: &Model, hidden: usize) -> String {
    let running = model.progress.jobs.iter().filter(|j| !j.is_done()).count();
    if hidden > 0 {
        format!(" Transfers ({running}) {hidden} more ")
    } else {
        format!(" Transfers ({running}) ")
    }
}

/// The FILE column keeps at least this much before STATE gets room.
const FILE_MIN: u16 = 24;

fn draw(frame: &mut Frame, area: Rect, model: &Model, block: Block, sel: Option<(usize, Style)>) {
    let jobs = &model.progress.jobs;
    if jobs.is_empty() {
        let p = Paragraph::new(Line::from(
            "no transfers: open files whose position moves show here (or watch with --pid/--name)",
        ))
        .block(block);
        frame.render_widget(p, area);
        return;
    }
    // Only the rows on screen: the window ends at the selection when it is
    // below the first page (as TableState would scroll).
    let page = usize::from(area.height.saturating_sub(3)).max(1);
    let offset = sel.map_or(0, |(i, _)| (i + 1).saturating_sub(page));
    let shown = &jobs[offset.min(jobs.len())..(offset + page).min(jobs.len())];
    let inner = area.width.saturating_sub(2);
    let narrow = inner < NARROW;
    let bar_w = if narrow { BAR_WIDTH / 2 } else { BAR_WIDTH };
    // The state column is as wide as its longest text on screen, none
    // when they are all empty; the file keeps FILE_MIN cells first.
    // `fixed`: the fixed columns with a gap each, and the file's gap.
    let fixed: u16 = shown_cols(narrow, 0)
        .filter(|c| *c != TransferCol::State)
        .map(|c| match c.def().width {
            Width::Cells(n) => n + 1,
            Width::Bar => bar_w as u16 + 1,
            Width::Fill | Width::State => 1,
        })
        .sum();
    let longest = shown.iter().map(|j| state(j).chars().count()).max().unwrap_or(0);
    let room = inner.saturating_sub(fixed + FILE_MIN);
    let state_w = if longest == 0 {
        0
    } else {
        (longest.max(5) as u16).min(room).max(5)
    };
    let cols: Vec<TransferCol> = shown_cols(narrow, usize::from(state_w)).collect();
    let names: Vec<&str> = cols.iter().map(|c| c.def().head).collect();
    let widths: Vec<Constraint> = cols
        .iter()
        .map(|c| match c.def().width {
            Width::Cells(n) => Constraint::Length(n),
            Width::Bar => Constraint::Length(bar_w as u16),
            Width::Fill => Constraint::Fill(1),
            Width::State => Constraint::Length(state_w),
        })
        .collect();
    let header = Row::new(names).style(Style::default().add_modifier(Modifier::BOLD));
    let state_cells = if state_w > 0 { state_w + 1 } else { 0 };
    let file_w = usize::from(inner.saturating_sub(fixed - 1 + state_cells));
    let rows = shown.iter().map(|j| row(j, narrow, file_w, usize::from(state_w)));
    let mut table = Table::new(rows, widths).header(header).block(block).column_spacing(1);
    let mut state = TableState::default();
    if let Some((i, style)) = sel {
        table = table.row_highlight_style(style);
        state.select(Some(i - offset));
    }
    frame.render_stateful_widget(table, area, &mut state);
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use ratatui::widgets::Borders;

    use super::*;
    use crate::model::ProcKey;
    use crate::model::progress::Label;
    use crate::model::progress::example_job as job;

    /// The pane on its own, without selection.
    fn render(frame: &mut Frame, area: Rect, model: &Model) {
        let hidden = hidden_rows(model, area);
        let block = Block::default().borders(Borders::ALL).title(title(model, hidden));
        draw(frame, area, model, block, None);
    }

    #[test]
    fn pane_snapshot() {
        let mut model = Model::default();
        let mut tar = job(
            4100,
            "tar",
            b"/home/a/photos/img_0042.jpg",
            3_000_000,
            4_000_000,
            250e3,
            Label::Progress,
        );
        tar.files_done = 1234;
        let mut jobs = vec![
            job(
                4242,
                "dd",
                b"/srv/backup/db.img",
                60_000_000_000,
                100_000_000_000,
                150e6,
                Label::Progress,
            ),
            tar,
            job(
                4300,
                "fio",
                b"/data/evil\x1b[2Jname",
                0,
                8_000_000_000,
                210e6,
                Label::Positional,
            ),
            job(4400, "gzip", b"/tmp/out.gz", 5_000_000, 5_000_000, 4e6, Label::Growing),
            job(
                4500,
                "cp",
                b"/mnt/nfs/big.iso",
                700,
                1000,
                0.0,
                Label::Stalled { seconds: 5 },
            ),
            job(
                4600,
                "rsync",
                b"/var/lib/x.db",
                1000,
                1000,
                0.0,
                Label::Done { complete: true },
            ),
            // Last seen at 85.3 %; its rate reached the end before it was
            // seen gone: done, ~100 %.
            job(
                4700,
                "pv",
                b"/srv/a.tar",
                853,
                1000,
                0.0,
                Label::Done { complete: true },
            ),
            job(
                4800,
                "pv",
                b"/srv/b.tar",
                480,
                1000,
                0.0,
                Label::Done { complete: false },
            ),
        ];
        crate::model::progress::sort_jobs(&mut jobs);
        model.progress.jobs = jobs;
        let mut term = Terminal::new(TestBackend::new(130, 12)).unwrap();
        term.draw(|f| render(f, f.area(), &model)).unwrap();
        insta::with_settings!({ prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!("progress_pane", term.backend());
        });
        assert_eq!(
            model.progress.jobs[0].proc,
            ProcKey {
                pid: 4100,
                start_time: 1
            }
        );
    }

    #[test]
    fn empty_pane_and_bar() {
        let model = Model::default();
        let mut term = Terminal::new(TestBackend::new(100, 3)).unwrap();
        term.draw(|f| render(f, f.area(), &model)).unwrap();
        let text = format!("{}", term.backend());
        assert!(text.contains("no transfers"), "{text}");
        assert_eq!(bar(Some(50.0), 4), "██░░");
        assert_eq!(bar(Some(150.0), 2), "██");
        assert_eq!(bar(None, 2), "  ");
    }
}
