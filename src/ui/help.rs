//! The help popup: every key. The same table is in the README.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{ViewState, centered, pane_block};

/// Every key of the dashboard: (keys, what they do).
pub const KEYS: &[(&str, &str)] = &[
    ("q, Ctrl-C", "quit"),
    ("?", "this help (Esc, q or ? closes it)"),
    ("Tab, Shift-Tab", "move the focus between panes"),
    ("↑ ↓, j k", "move the selection (k: not in the processes pane)"),
    ("PgUp PgDn, Home End", "move by a page, to the first / last row"),
    ("Enter", "device detail; on a transfer: jump to its process"),
    ("Esc", "close a popup, cancel a running probe, clear the filter"),
    ("Space, ← →", "fold / unfold the partitions of the selected disk"),
    ("a", "hide / show idle devices"),
    ("t", "probe the selected device (read-only): menu"),
    ("s >, S <", "sort processes by the next / previous column"),
    ("r", "reverse the sort order"),
    ("o", "only processes doing I/O"),
    ("/", "filter processes by text (Enter keeps it, Esc clears)"),
    ("c", "accumulated mode: totals since iolens started"),
    ("i", "set I/O priority of the process: idle or best-effort 0-7"),
    ("k", "send SIGTERM to the process (processes pane, asks first)"),
    (
        "D",
        "turn delay accounting on for IO% (root, asks first; undone at exit)",
    ),
    ("p", "pause / resume sampling (rates restart after a pause)"),
    ("+ -", "longer / shorter sample interval"),
];

/// What the less obvious numbers mean, under the keys.
const NOTES: &[&str] = &[
    " \"-\": no request completed in the interval; n/a: cannot be known",
    " DISK WR: bytes dirtied for writeback (charged when written into the",
    "   page cache; the disk writes them later). CANCEL: dirtied bytes dropped",
    "   before writeback by this process's truncate or delete",
    " IO%: time waiting for block I/O, all threads (needs delay accounting)",
    " CACHE: reads served from the page cache (only with files open to read)",
];

pub fn render(frame: &mut Frame, area: Rect, view: &ViewState) {
    let t = &view.theme;
    let key_w = KEYS.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0);
    let mut lines: Vec<Line> = KEYS
        .iter()
        .map(|(k, what)| {
            Line::from(vec![
                Span::styled(format!(" {k:<key_w$}  "), t.title()),
                Span::raw(*what),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    for note in NOTES {
        lines.push(Line::styled(*note, t.dim()));
    }
    let w = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 2;
    let popup = centered(area, w + 1, lines.len() as u16 + 2);
    frame.render_widget(Clear, popup);
    let block = pane_block(Line::styled(" Keys ", t.title()), true, t);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}
