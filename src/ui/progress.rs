//! Progress pane: the tracked transfers — command, file (escaped), a bar,
//! percent, rate, ETA — sorted by ETA, done ones last (kept a while).
//! Where progress cannot be known the bar gives way to the reason.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};

use crate::format::{self, escape, escape_bytes};
use crate::model::progress::{Job, Label};
use crate::model::{Model, ProcKey};
use crate::present::process::ProcCol;
use crate::ui::{Pane, ViewState, pane_block};

/// Width of the text progress bar, in cells.
pub const BAR_WIDTH: usize = 20;

/// The process of the `row`-th transfer as listed (to jump to it in the
/// processes pane).
pub fn row_proc(model: &Model, row: usize) -> Option<ProcKey> {
    model.progress.jobs.get(row).map(|j| j.proc)
}

/// "██████░░░░░░" for a percent; blanks when unknown.
pub fn bar(percent: Option<f64>, width: usize) -> String {
    match percent {
        Some(p) if p.is_finite() => {
            let full = ((p.clamp(0.0, 100.0) / 100.0) * width as f64).round() as usize;
            "█".repeat(full) + &"░".repeat(width - full)
        }
        _ => " ".repeat(width),
    }
}

/// The status column: the honest label where there is no plain progress.
fn state(j: &Job) -> String {
    let mut s = match j.main.label {
        Label::Progress => String::new(),
        Label::Positional => "positional (pread/mmap)".into(),
        Label::Growing => "writing, size grows".into(),
        Label::Truncated => "truncated under reader".into(),
        Label::Remote => "size unknown: FUSE/net".into(),
        _ => j.main.label_text(),
    };
    if j.files_done > 0 {
        if !s.is_empty() {
            s.push_str(", ");
        }
        s.push_str(&format!("{} files done", j.files_done));
    }
    s
}

/// Below this inner width the pane drops the PID column and narrows the
/// bar and the state so the file keeps room.
const NARROW: u16 = 110;

/// A path in `w` cells: its end (the file's name) kept, "…" for the rest.
fn path_tail(p: &str, w: usize) -> String {
    let n = p.chars().count();
    if n <= w || w == 0 {
        return p.to_string();
    }
    let tail: String = p.chars().skip(n - (w - 1)).collect();
    format!("…{tail}")
}

/// One transfer's row: the command cut to its column, the path to
/// `file_w` cells from its start, the state to `state_w` ("…"; none at 0).
fn row(j: &Job, narrow: bool, file_w: usize, state_w: usize) -> Row<'static> {
    let m = &j.main;
    let bar_w = if narrow { BAR_WIDTH / 2 } else { BAR_WIDTH };
    let (percent, estimated) = m.shown_percent();
    let pct = match m.label {
        Label::Positional | Label::Growing | Label::Truncated | Label::Remote => format::NA.to_string(),
        _ if estimated => "~100%".into(),
        _ => format::pct(percent),
    };
    let bar_text = match m.label {
        Label::Growing => format!("{:<bar_w$}", format!("{} written", format::decimal(m.pos as f64))),
        Label::Remote => format!("{:<bar_w$}", format!("{} at", format::decimal(m.pos as f64))),
        Label::Positional | Label::Truncated => bar(None, bar_w),
        _ => bar(percent, bar_w),
    };
    let style = if j.is_done() {
        Style::default().add_modifier(Modifier::DIM)
    } else {
        Style::default()
    };
    let mut cells = Vec::with_capacity(8);
    if !narrow {
        cells.push(Cell::from(j.proc.pid.to_string()));
    }
    cells.extend([
        Cell::from(super::devices::truncate(&escape(&j.comm), 10)),
        Cell::from(path_tail(&escape_bytes(&m.path), file_w)),
        Cell::from(bar_text),
        Cell::from(pct),
        Cell::from(m.rate_bps.map_or_else(|| format::NA.to_string(), format::rate)),
        Cell::from(format::duration(m.eta_s)),
    ]);
    if state_w > 0 {
        cells.push(Cell::from(super::devices::truncate(&state(j), state_w)));
    }
    Row::new(cells).style(style)
}

/// The pane on its own (the `iolens progress`-like view), without selection.
pub fn render(frame: &mut Frame, area: Rect, model: &Model) {
    let hidden = hidden_rows(model, area);
    let block = Block::default().borders(Borders::ALL).title(title(model, hidden));
    draw(frame, area, model, block, None);
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
    let mut names = vec![
        ProcCol::Pid.head(false),
        ProcCol::Command.head(false),
        "FILE",
        "PROGRESS",
        "%",
        "RATE",
        "ETA",
        "STATE",
    ];
    let mut widths = vec![
        Constraint::Length(7),
        Constraint::Length(10),
        Constraint::Fill(1),
        Constraint::Length(bar_w as u16),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(6),
    ];
    if narrow {
        names.remove(0);
        widths.remove(0);
    }
    // The state column is as wide as its longest text on screen, none
    // when they are all empty; the file keeps FILE_MIN cells first.
    // `fixed`: the fixed columns with a gap each, and the file's gap.
    let fixed: u16 = widths
        .iter()
        .map(|c| match c {
            Constraint::Length(n) => n + 1,
            _ => 1,
        })
        .sum();
    let longest = shown.iter().map(|j| state(j).chars().count()).max().unwrap_or(0);
    let room = inner.saturating_sub(fixed + FILE_MIN);
    let state_w = if longest == 0 {
        names.pop();
        0
    } else {
        (longest.max(5) as u16).min(room).max(5)
    };
    if state_w > 0 {
        widths.push(Constraint::Length(state_w));
    }
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

    use super::*;
    use crate::model::progress::example_job as job;

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
            row_proc(&model, 0),
            Some(ProcKey {
                pid: 4100,
                start_time: 1
            })
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
