//! The findings pane (`w`): every finding that holds, most severe first,
//! with its evidence, culprits and next step; ↑↓ select, Enter goes to the
//! subject (a device's or process's detail, a cgroup's row). The header's
//! first line names the top one ([`top_spans`]).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::theme::{Severity as Shown, Theme};
use super::{ViewState, pane_block};
use crate::format;
use crate::model::Model;
use crate::model::findings::{Finding, Severity};
use crate::present::findings::{culprit_text, evidence_text, headline};

/// A finding's colour: critical red, warning yellow, info plain.
pub fn style(t: &Theme, s: Severity) -> Style {
    match s {
        Severity::Critical => t.severity(Shown::Crit),
        Severity::Warning => t.severity(Shown::Warn),
        Severity::Info => Style::new(),
    }
}

/// The header's forms of the top finding, longest first: " · WARNING
/// slow_device loop0: <text>", then without the text, then the rule
/// alone; " · no findings" when none.
pub fn top_spans(model: &Model, t: &Theme) -> Vec<Vec<Span<'static>>> {
    let found = model.findings.findings();
    let Some(f) = found.first() else {
        return vec![vec![Span::styled(" · no findings", t.dim())], vec![]];
    };
    let s = style(t, f.severity);
    let more = match found.len() {
        1 => String::new(),
        n => format!(" (+{} w)", n - 1),
    };
    let sev = f.severity.text().to_uppercase();
    let subject = format::escape(&f.subject.name());
    vec![
        vec![
            Span::styled(" · ", t.dim()),
            Span::styled(format!("{sev} {} {subject}", f.rule), s),
            Span::raw(format!(": {}", format::escape(&f.text))),
            Span::styled(more.clone(), t.dim()),
        ],
        vec![
            Span::styled(" · ", t.dim()),
            Span::styled(format!("{sev} {} {subject}", f.rule), s),
            Span::styled(more, t.dim()),
        ],
        vec![Span::styled(" · ", t.dim()), Span::styled(f.rule.to_string(), s)],
    ]
}

/// The lines of one finding: its headline (selected: reversed), then
/// evidence, culprits and next step, indented.
fn block(f: &Finding, selected: bool, t: &Theme) -> Vec<Line<'static>> {
    let mut head = style(t, f.severity);
    if selected {
        head = head.patch(t.selected());
    }
    let since = format::wall_time(f.since_unix_ns, false);
    let mut v = vec![Line::from(vec![
        Span::styled(headline(f), head),
        Span::styled(format!("  since {since}"), t.dim()),
    ])];
    v.extend(
        f.evidence
            .iter()
            .map(|e| Line::raw(format!("    {}", evidence_text(e)))),
    );
    v.extend(
        f.culprits
            .iter()
            .map(|c| Line::raw(format!("    culprit: {}", culprit_text(c)))),
    );
    v.push(Line::from(vec![
        Span::styled("    next: ", t.dim()),
        Span::raw(format::escape(&f.next)),
    ]));
    v
}

/// The pane over the body, `sel` the selected finding.
pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, sel: usize) {
    let t = &view.theme;
    let found = model.findings.findings();
    let title = Line::from(vec![
        Span::styled(format!(" Findings ({}) ", found.len()), t.title()),
        Span::styled("↑↓ select · Enter go to · Esc back ", t.dim()),
    ]);
    let b = pane_block(title, true, t);
    let inner = b.inner(area);
    frame.render_widget(b, area);
    if found.is_empty() {
        let none = "no findings: no rule's condition held long enough (docs/findings.md)";
        frame.render_widget(Paragraph::new(none), inner);
        return;
    }
    let sel = sel.min(found.len() - 1);
    // The selected finding's block starts on screen: scroll past the
    // blocks before it when they do not all fit with it.
    let blocks: Vec<Vec<Line>> = found.iter().enumerate().map(|(i, f)| block(f, i == sel, t)).collect();
    let h = usize::from(inner.height);
    let mut first = 0;
    while first < sel && blocks[first..=sel].iter().map(Vec::len).sum::<usize>() > h {
        first += 1;
    }
    let lines: Vec<Line> = blocks.into_iter().skip(first).flatten().take(h).collect();
    let w = usize::from(inner.width);
    let lines: Vec<Line> = lines.into_iter().map(|l| super::clip(l, w)).collect();
    frame.render_widget(Paragraph::new(lines), inner);
}
