//! The help popup: every key of the keymap ([`keymap::ROWS`], also the
//! README's key table), then what the less obvious numbers mean.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{ViewState, centered, keymap, pane_block};

/// What the less obvious numbers mean, under the keys.
const NOTES: &[&str] = &[
    " \"-\": no request completed in the interval; n/a: cannot be known",
    " pat (seq bytes when traced): SEQ 97% = 97% of the bytes were in requests",
    "   starting where one of the same process (or device) ended; by default SEQ",
    "   at >= 70%, RAND at <= 30%; ~SEQ: estimated from sizes and merges (untraced)",
    " DISK WR: bytes dirtied for writeback (charged when written into the",
    "   page cache; the disk writes them later). CANCEL: dirtied bytes dropped",
    "   before writeback by this process's truncate or delete",
    " IO%: time waiting for block I/O, all threads (needs delay accounting)",
    " CACHE: reads served from the page cache (only with files open to read)",
    " %LIMIT (cgroups): rate over the last 3 s against the effective limit; AT at 90%",
];

/// The help's lines `w` cells wide: the key table (a long text goes on
/// under its text, not under the keys), the marks' legend, the notes.
fn lines(view: &ViewState, w: usize) -> Vec<Line<'static>> {
    let t = &view.theme;
    let rows: Vec<&keymap::Row> = keymap::rows(view.vim_keys, view.replay.is_some()).collect();
    let key_w = rows.iter().map(|r| r.label.chars().count()).max().unwrap_or(0);
    let mut lines: Vec<Line> = rows
        .iter()
        .flat_map(|r| {
            let mut l = vec![
                Span::styled(format!(" {:<key_w$}  ", r.label), t.title()),
                Span::raw(r.help),
            ];
            if view.replay.is_some() && r.is_live_only() {
                l.push(Span::styled("  (live only: off in replay)", t.dim()));
            }
            if r.scope != keymap::Scope::Global {
                l.push(Span::styled(format!("  {}", r.marks()), t.dim()));
            }
            wrap(Line::from(l), w, key_w + 3)
        })
        .collect();
    lines.push(Line::raw(""));
    lines.extend(wrap(Line::styled(keymap::MARKS_LEGEND, t.dim()), w, 1));
    for note in NOTES {
        lines.extend(wrap(Line::styled(*note, t.dim()), w, 3));
    }
    lines
}

/// `l` in lines of at most `w` cells, broken between words; the lines
/// after the first start with `indent` blanks. A word longer than a line
/// is cut where the line ends.
fn wrap(l: Line<'static>, w: usize, indent: usize) -> Vec<Line<'static>> {
    if l.width() <= w {
        return vec![l];
    }
    let mut out = Vec::new();
    let mut cur: Vec<Span<'static>> = Vec::new();
    let mut used = 0;
    for s in l.spans {
        for word in s.content.split_inclusive(' ') {
            let n = word.trim_end().chars().count();
            if used > indent && used + n > w {
                out.push(Line::from(std::mem::take(&mut cur)));
                cur.push(Span::raw(" ".repeat(indent)));
                used = indent;
            }
            let word = if used == indent && !out.is_empty() {
                word.trim_start()
            } else {
                word
            };
            used += word.chars().count();
            cur.push(Span::styled(word.to_string(), s.style));
        }
    }
    out.push(Line::from(cur));
    out
}

/// The most lines the help takes (at the narrowest terminal), for the
/// scroll keys (↑↓ PgUp PgDn Home End); drawing clamps the offset.
pub fn line_count(view: &ViewState) -> usize {
    lines(view, usize::from(super::MIN_WIDTH) - 3).len()
}

pub fn render(frame: &mut Frame, area: Rect, view: &ViewState) {
    let t = &view.theme;
    // one blank left of the text and the borders: the text wraps at what
    // the screen leaves
    let lines = lines(view, usize::from(area.width.saturating_sub(3)));
    let w = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 2;
    let popup = centered(area, w + 1, lines.len() as u16 + 2);
    // What does not fit scrolls; the title says how.
    let visible = usize::from(popup.height.saturating_sub(2));
    let offset = usize::from(view.help_offset).min(lines.len().saturating_sub(visible));
    let hidden = lines.len().saturating_sub(visible);
    let title = if hidden > 0 {
        format!(" Keys · line {} of {} (↑↓ PgUp PgDn scroll) ", offset + 1, lines.len())
    } else {
        " Keys ".to_string()
    };
    frame.render_widget(Clear, popup);
    let block = pane_block(Line::styled(title, t.title()), true, t);
    let shown: Vec<Line> = lines.into_iter().skip(offset).collect();
    frame.render_widget(Paragraph::new(shown).block(block), popup);
}
