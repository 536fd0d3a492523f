//! Progress pane: the copy and backup jobs — one row each (bar, percent,
//! rate, ETA, files) with their transfers folded under them — then the
//! other tracked transfers — command, file (escaped), a bar, percent, rate,
//! ETA — sorted by ETA, done ones last (kept a while). Where progress
//! cannot be known the bar gives way to the reason.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Cell, Paragraph, Row, Table, TableState};

use crate::model::jobs::track::JobView;
use crate::model::progress::Job;
use crate::model::{Model, ProcKey};
pub use crate::present::transfer::{BAR_WIDTH, bar};
use crate::present::transfer::{Fit, TransferCol, Width, job_state, state};
use crate::ui::{Pane, ViewState, pane_block};

/// A row of the pane: a job, or a transfer (under its job when folded).
#[derive(Clone, Copy)]
enum Item<'a> {
    Job(&'a JobView),
    File(&'a Job, bool),
}

impl Item<'_> {
    fn proc(&self) -> Option<ProcKey> {
        match self {
            Item::Job(_) => None,
            Item::File(j, _) => Some(j.proc),
        }
    }

    fn state(&self) -> String {
        match self {
            Item::Job(v) => job_state(v),
            Item::File(j, in_job) => state(j, *in_job),
        }
    }
}

/// The rows in order: each job, the transfers of its processes under it,
/// then the transfers of no job.
fn items(model: &Model) -> Vec<Item<'_>> {
    let files = &model.progress.jobs;
    let mut used = vec![false; files.len()];
    let mut out = Vec::with_capacity(files.len() + model.jobs.views.len());
    for v in &model.jobs.views {
        out.push(Item::Job(v));
        for (i, j) in files.iter().enumerate() {
            if !used[i] && v.pids.contains(&j.proc.pid) {
                used[i] = true;
                out.push(Item::File(j, true));
            }
        }
    }
    out.extend(
        files
            .iter()
            .zip(used)
            .filter(|(_, u)| !u)
            .map(|(j, _)| Item::File(j, false)),
    );
    out
}

/// Rows the pane lists (jobs and transfers).
pub fn row_count(model: &Model) -> usize {
    model.progress.jobs.len() + model.jobs.views.len()
}

/// The process of the `row`-th row as listed (to jump to it in the
/// processes pane); `None` on a job's row.
pub fn row_proc(model: &Model, row: usize) -> Option<ProcKey> {
    items(model).get(row).and_then(Item::proc)
}

/// The transfer at `row` of a pane `page` rows high whose selection was
/// `sel` (the rows scroll so that the selection is on the page), or the
/// first transfer under a job's row.
pub fn clicked(model: &Model, sel: Option<ProcKey>, focused: bool, page: usize, row: usize) -> Option<ProcKey> {
    let items = items(model);
    let sel_at = sel
        .and_then(|k| items.iter().position(|i| i.proc() == Some(k)))
        .unwrap_or(0);
    let offset = if focused { (sel_at + 1).saturating_sub(page) } else { 0 };
    items.get(row + offset..)?.iter().find_map(Item::proc)
}

/// The transfers' processes in the order listed (up/down follow it).
pub fn order(model: &Model) -> Vec<ProcKey> {
    items(model).iter().filter_map(Item::proc).collect()
}

/// Below this inner width the pane drops the PID column and narrows the
/// bar and the state so the file keeps room.
const NARROW: u16 = 110;

/// One row: the command cut to its column, the path to `file_w` cells
/// from its start, the state to `state_w` ("…"; none at 0). A job's row is
/// bold, ended rows dim.
fn row(item: Item, narrow: bool, file_w: usize, state_w: usize) -> Row<'static> {
    let (done, folded) = match item {
        Item::Job(v) => (v.ended_ns.is_some(), false),
        Item::File(j, f) => (j.is_done(), f),
    };
    let mut style = Style::default();
    if done {
        style = style.add_modifier(Modifier::DIM);
    }
    if matches!(item, Item::Job(_)) {
        style = style.add_modifier(Modifier::BOLD);
    }
    let fit = Fit {
        bar_w: if narrow { BAR_WIDTH / 2 } else { BAR_WIDTH },
        file_w,
        state_w,
        folded,
    };
    let cells = shown_cols(narrow, state_w).map(|c| {
        Cell::from(match item {
            Item::Job(v) => (c.def().job)(v, &fit),
            Item::File(j, _) => (c.def().text)(j, &fit),
        })
    });
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
            .and_then(|k| items(model).iter().position(|i| i.proc() == Some(k)))
            .map(|i| (i, t.selected()))
    } else {
        None
    };
    draw(frame, area, model, block, sel);
}

/// Rows that do not fit in `area` (borders and heading take 3 rows).
fn hidden_rows(model: &Model, area: Rect) -> usize {
    let fit = usize::from(area.height.saturating_sub(3));
    row_count(model).saturating_sub(fit)
}

/// " Jobs (1) Transfers (3) ": running ones.
fn title(model: &Model, hidden: usize) -> String {
    let running = model.progress.jobs.iter().filter(|j| !j.is_done()).count();
    let jobs = model.jobs.views.iter().filter(|v| v.ended_ns.is_none()).count();
    let mut s = String::from(" ");
    if !model.jobs.views.is_empty() {
        s.push_str(&format!("Jobs ({jobs}) "));
    }
    s.push_str(&format!("Transfers ({running}) "));
    if hidden > 0 {
        s.push_str(&format!("{hidden} more "));
    }
    s
}

/// The FILE column keeps at least this much before STATE gets room.
const FILE_MIN: u16 = 24;

fn draw(frame: &mut Frame, area: Rect, model: &Model, block: Block, sel: Option<(usize, Style)>) {
    let jobs = items(model);
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
    let longest = shown.iter().map(|j| j.state().chars().count()).max().unwrap_or(0);
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
    let rows = shown.iter().map(|j| row(*j, narrow, file_w, usize::from(state_w)));
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
        tar.files_seen_closed = 1234;
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

    /// A model with three jobs (tar at 45 % with its gzip, rsync counting,
    /// a cp that exited 0) and four transfers, one of no job.
    pub(crate) fn jobs_model() -> Model {
        use crate::model::jobs::Tool;
        use crate::model::jobs::track::{JobInput, Seen, Total};
        const S: u64 = 1_000_000_000;
        let mut model = Model::default();
        model.progress.jobs = vec![
            job(
                5100,
                "tar",
                b"/srv/tree/d3/f0042.bin",
                3_000_000,
                4_000_000,
                30e6,
                Label::Progress,
            ),
            job(
                5101,
                "gzip",
                b"/backup/tree.tgz",
                90_000_000,
                90_000_000,
                28e6,
                Label::Growing,
            ),
            job(4242, "dd", b"/srv/db.img", 6_000_000, 10_000_000, 1e6, Label::Progress),
            job(5300, "rsync", b"/home/a/x\x1b[2J.bin", 100, 1000, 1e3, Label::Progress),
        ];
        let input = |pid: i32, tool, cmd: &str, pids: Vec<i32>, pos: u64, total: Total| JobInput {
            key: (pid, 1),
            tool,
            command: cmd.into(),
            pids,
            position: Some(pos),
            total,
            notes: vec![],
            current: None,
            files_done: None,
            files_why: Some("the job started before iolens traced its reads".into()),
            age_ns: None,
            gone: false,
        };
        let known = Total::Known {
            files: 600,
            bytes: 1_000_000_000,
        };
        let counting = Total::Counting {
            files: 41_000,
            bytes: 38_000_000_000,
        };
        let inputs = |t: u64| {
            let mut v = vec![
                input(
                    5100,
                    Tool::Tar,
                    "tar czf /backup/tree.tgz /srv/tree",
                    vec![5100, 5101],
                    300_000_000 + t * 150_000_000,
                    known.clone(),
                ),
                input(
                    5300,
                    Tool::Rsync,
                    "rsync -a /home/ /mnt/b/",
                    vec![5300],
                    t * 1000,
                    counting.clone(),
                ),
                input(
                    5400,
                    Tool::Cp,
                    "cp -r /srv/a /srv/b",
                    vec![5400],
                    200_000_000 + t * 100_000_000,
                    Total::Known {
                        files: 7,
                        bytes: 900_000_000,
                    },
                ),
            ];
            // The tar's reads were all traced: counted one by one.
            v[0].files_done = Some(150 + t * 90);
            v[0].files_why = None;
            v
        };
        let files = model.progress.jobs.clone();
        let seen = Seen {
            files: &files,
            fds: &[],
        };
        model.jobs.update(inputs(0), &seen, 0);
        model.jobs.update(inputs(1), &seen, S);
        let mut last = inputs(2);
        last.pop();
        model.jobs.note_exit(5400, 0, 2 * S);
        model.jobs.update(last, &seen, 2 * S);
        model
    }

    #[test]
    fn jobs_fold_their_transfers() {
        let model = jobs_model();
        let mut term = Terminal::new(TestBackend::new(130, 12)).unwrap();
        term.draw(|f| render(f, f.area(), &model)).unwrap();
        insta::with_settings!({ prepend_module_to_snapshot => false }, {
            insta::assert_snapshot!("progress_pane_jobs", term.backend());
        });
        let text = format!("{}", term.backend());
        // The job's percent (600 MB of 1 GB at 150 MB/s: 2.7 s left), not
        // its current file's (75 %).
        assert!(
            text.contains("tar job") && text.contains("60.0%") && text.contains("3s"),
            "{text}"
        );
        // Jobs first, their transfers under them, the transfer of no job last.
        assert_eq!(row_proc(&model, 0), None);
        let order: Vec<i32> = order(&model).iter().map(|k| k.pid).collect();
        assert_eq!(order, [5100, 5101, 5300, 4242]);
        // Narrow: a 7-row pane shows 4 of the 7 rows, and says so.
        let mut small = Terminal::new(TestBackend::new(80, 7)).unwrap();
        small.draw(|f| render(f, f.area(), &model)).unwrap();
        let text = format!("{}", small.backend());
        assert!(text.contains("Jobs (2) Transfers (4) 3 more"), "{text}");
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
