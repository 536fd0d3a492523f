//! The status line (key hints, the filter being typed, the result of the
//! last action) and the confirmation popup of process actions.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{Confirm, ConfirmAction, ViewState, centered, keymap, pane_block};
use crate::format;
use crate::model::Model;

pub fn render(frame: &mut Frame, area: Rect, _model: &Model, view: &ViewState) {
    let t = &view.theme;
    let line = if let Some(text) = view.replay.as_ref().and_then(|r| r.prompt.as_ref()) {
        Line::from(vec![
            Span::styled("jump to: ", t.title()),
            Span::raw(format::escape(text)),
            Span::styled("█", t.accent()),
            Span::styled(
                "  HH:MM[:SS] on the shown day, RFC 3339, -10m / +10m · Enter jump · Esc cancel",
                t.dim(),
            ),
        ])
    } else if view.editing_filter {
        Line::from(vec![
            Span::styled("filter: ", t.title()),
            Span::raw(format::escape(view.active_filter())),
            Span::styled("█", t.accent()),
            Span::styled("  Enter keep · Esc clear", t.dim()),
        ])
    } else if let Some(s) = &view.status {
        Line::styled(format::escape(&s.text), if s.error { t.error() } else { t.ok() })
    } else {
        let hints = keymap::hints(view.focus, view.vim_keys, view.replay.is_some());
        Line::styled(fit_hints(&hints, usize::from(area.width)), t.dim())
    };
    frame.render_widget(Paragraph::new(line), area);
}

/// The hints that fit in `w` cells, whole, in the table's order (one that
/// does not fit is left out and a shorter one after it may still come).
fn fit_hints(hints: &str, w: usize) -> String {
    let mut out = String::new();
    for h in hints.split("  ") {
        let sep = if out.is_empty() { 0 } else { 2 };
        if out.chars().count() + sep + h.chars().count() <= w {
            if sep > 0 {
                out.push_str("  ");
            }
            out.push_str(h);
        }
    }
    out
}

pub fn render_confirm(frame: &mut Frame, area: Rect, view: &ViewState, c: &Confirm) {
    let t = &view.theme;
    let who = format!("PID {} ({})", c.key.pid, format::escape(&c.comm));
    let (title, question, answers) = match c.action {
        ConfirmAction::Kill => (
            " Send SIGTERM ",
            format!("Send SIGTERM to {who}?"),
            "y yes · n / Esc no",
        ),
        ConfirmAction::Ionice => (
            " I/O priority ",
            format!("Set the I/O priority of {who}:"),
            "i idle · 0-7 best-effort level · Esc cancel",
        ),
        ConfirmAction::Signal(s) => (
            " Send a signal ",
            format!("Send {} to {who}?", s.name()),
            "y yes · n / Esc no",
        ),
    };
    let lines = vec![Line::raw(question), Line::raw(""), Line::styled(answers, t.title())];
    let w = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 4;
    let popup = centered(area, w, 5);
    frame.render_widget(Clear, popup);
    let block = pane_block(Line::styled(title, t.title()), true, t);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

/// The question before turning delay accounting on.
pub fn render_delayacct(frame: &mut Frame, area: Rect, view: &ViewState) {
    let t = &view.theme;
    let lines = vec![
        Line::raw("Turn block I/O delay accounting on for the whole machine?"),
        Line::raw("Writes 1 to /proc/sys/kernel/task_delayacct (now 0): IO% becomes"),
        Line::raw("known; every task pays a small cost in the scheduler."),
        Line::raw("iolens writes 0 back when it exits."),
        Line::raw(""),
        Line::styled("y yes · n / Esc no", t.title()),
    ];
    let w = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 4;
    let popup = centered(area, w, lines.len() as u16 + 2);
    frame.render_widget(Clear, popup);
    let block = pane_block(Line::styled(" Delay accounting ", t.title()), true, t);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}

#[cfg(test)]
mod tests {
    #[test]
    fn hints_fit_whole() {
        let h = "q quit  ? help  Enter go to its process (to ionice it)  T close";
        assert_eq!(super::fit_hints(h, 30), "q quit  ? help  T close");
        assert_eq!(super::fit_hints(h, 200), h);
        assert_eq!(super::fit_hints(h, 3), "");
    }
}
