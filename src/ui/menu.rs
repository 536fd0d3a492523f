//! The probe menu: which tests, how long, the idle I/O class and (root only,
//! behind a question) dropping the page cache first. Keys are handled in
//! `app`; this only draws the choices.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{ProbeMenu, ViewState, centered, pane_block};
use crate::format;
use crate::probe::{Depth, Tests};

pub fn render(frame: &mut Frame, area: Rect, view: &ViewState, m: &ProbeMenu, is_root: bool) {
    let t = &view.theme;
    let mark = |on: bool| if on { "(•)" } else { "( )" };
    let check = |on: bool| if on { "[x]" } else { "[ ]" };
    let choice = |key: &'static str, text: String| {
        Line::from(vec![Span::styled(format!(" {key:<3}"), t.title()), Span::raw(text)])
    };
    let mut lines = if m.confirm_drop {
        vec![
            Line::styled(" Drop the page cache of the WHOLE machine first?", t.error()),
            Line::raw(" Every process loses its cached file data and reads it"),
            Line::raw(" again from disk: the box is slower for a while."),
            Line::raw(""),
            Line::styled(" y yes, drop it · n / Esc no", t.title()),
        ]
    } else {
        vec![
            match (&m.sync_dir, m.tests) {
                (Some(d), Tests::SyncWrite) => Line::styled(
                    format!(" Writes only its own temporary file in {}", format::escape(d)),
                    t.severity(super::theme::Severity::Warn),
                ),
                _ => Line::raw(format!(" Read-only probe of /dev/{}", format::escape(&m.device))),
            },
            if is_root || m.tests == Tests::SyncWrite {
                Line::raw("")
            } else {
                Line::styled(
                    " Needs root: only root may read the device (start iolens as root)",
                    t.error(),
                )
            },
            choice(
                "r",
                format!("{} random read latency (4 KiB, QD1)", mark(m.tests == Tests::Random)),
            ),
            choice(
                "z",
                format!("{} zone sweep (MB/s across the disk)", mark(m.tests == Tests::Sweep)),
            ),
            choice("b", format!("{} both", mark(m.tests == Tests::Both))),
            choice(
                "p",
                format!(
                    "{} queue-depth sweep (IOPS at QD 1…64, io_uring)",
                    mark(m.tests == Tests::QueueDepth)
                ),
            ),
            choice(
                "a",
                format!("{} alignment of the partitions (sysfs)", mark(m.tests == Tests::Align)),
            ),
            choice(
                "x",
                format!("{} request sizes (MB/s at 4 KiB … 4 MiB)", mark(m.tests == Tests::Size)),
            ),
            choice(
                "m",
                format!("{} seek and rotation (RPM; whole disks)", mark(m.tests == Tests::Seek)),
            ),
            match &m.sync_dir {
                Some(d) => choice(
                    "w",
                    format!(
                        "{} sync-write latency in {} (writes a temp file)",
                        mark(m.tests == Tests::SyncWrite),
                        format::escape(d)
                    ),
                ),
                None => Line::styled("     (sync-write latency: not mounted)", t.dim()),
            },
            choice(
                "d",
                format!(
                    "length: {}",
                    match m.depth {
                        Depth::Quick => "quick (≤10 s random, 20 zones)",
                        Depth::Thorough => "thorough (≤30 s random, 100 zones)",
                    }
                ),
            ),
            choice(
                "i",
                format!("{} idle I/O class (limits impact with bfq only)", check(m.idle)),
            ),
        ]
    };
    if !m.confirm_drop {
        if is_root {
            lines.push(choice(
                "c",
                format!(
                    "{} drop the page cache first (affects the whole machine)",
                    check(m.drop_cache)
                ),
            ));
        } else {
            lines.push(Line::styled(" (dropping the page cache needs root)", t.dim()));
        }
        lines.push(Line::raw(""));
        lines.push(Line::styled(" Enter start · Esc cancel", t.title()));
    }
    let w = lines.iter().map(Line::width).max().unwrap_or(0) as u16 + 3;
    let popup = centered(area, w, lines.len() as u16 + 2);
    frame.render_widget(Clear, popup);
    let block = pane_block(Line::styled(" Probe ", t.title()), true, t);
    frame.render_widget(Paragraph::new(lines).block(block), popup);
}
