//! The capacity probes in the results pane: the queue-depth sweep (summary
//! lines, per-depth table, bar chart of IOPS against queue depth) and the
//! sync-write probe (summary lines, per-size table).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Bar, BarChart, BarGroup};

use super::Theme;
use super::theme::Severity;
use crate::format;
use crate::probe::sync::SyncResult;
use crate::probe::view::lat;
use crate::probe::{QdPoint, QdResult};

fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| format::NA.to_string(), f)
}

/// Engine, knee, latency-bounded IOPS and speed-up.
pub fn summary(q: &QdResult, stop: &str) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    vec![
        Line::styled(
            format!(
                "queue depth {} × {}: {} depths{stop}",
                format::binary(q.bs as f64),
                q.engine.label(),
                q.points.len()
            ),
            bold,
        ),
        Line::raw(format!(
            "knee {}  speed-up {}",
            q.knee.map_or_else(|| format::NA.into(), |k| format!("QD{k}")),
            opt(q.speedup, |x| format!("{x:.1}× QD1"))
        )),
        Line::raw(match q.latency_bounded {
            Some(b) => format!(
                "p99 ≤ {} ms: {:.0} IOPS at QD{}",
                format::ms(q.p99_target_ms),
                b.iops,
                b.queue_depth
            ),
            None => format!("p99 ≤ {} ms: no depth", format::ms(q.p99_target_ms)),
        }),
        Line::raw(q.end.clone()),
    ]
}

/// One row per depth: QD, IOPS, p50, p99, gain.
pub fn table(points: &[QdPoint]) -> Vec<Line<'static>> {
    let mut v = vec![Line::styled(
        format!("{:>4} {:>8} {:>8} {:>8} {:>6}", "QD", "IOPS", "p50", "p99", "gain"),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    for p in points {
        v.push(Line::raw(format!(
            "{:>4} {:>8} {:>8} {:>8} {:>6}{}",
            p.queue_depth,
            opt(p.iops, |x| format!("{x:.0}")),
            lat(p.latency.p50_ms),
            lat(p.latency.p99_ms),
            opt(p.gain, |g| format!("{:+.0}%", g * 100.0)),
            if p.short { " short" } else { "" }
        )));
    }
    v
}

/// Vertical bars of IOPS per depth, labelled "QD1", "QD2", …
pub fn chart(frame: &mut Frame, area: Rect, points: &[QdPoint], t: &Theme) {
    if points.is_empty() || area.height < 3 {
        return;
    }
    let bars: Vec<Bar> = points
        .iter()
        .map(|p| {
            let v = p.iops.unwrap_or(0.0);
            Bar::default()
                .value(v.round() as u64)
                .text_value(if v >= 100_000.0 {
                    format!("{:.0}k", v / 1000.0)
                } else if v >= 10_000.0 {
                    format!("{:.1}k", v / 1000.0)
                } else {
                    format!("{v:.0}")
                })
                .label(Line::raw(format!("QD{}", p.queue_depth)))
        })
        .collect();
    let n = points.len() as u16;
    let width = (area.width.saturating_sub(n) / n.max(1)).clamp(4, 9);
    let chart = BarChart::default()
        .data(BarGroup::default().bars(&bars))
        .bar_width(width)
        .bar_gap(1)
        .bar_style(t.ok())
        .value_style(t.ok().add_modifier(Modifier::REVERSED));
    frame.render_widget(chart, area);
}

/// Sync probe: where it wrote, the device's write cache and FUA.
pub fn sync_summary(s: &SyncResult) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    vec![
        Line::styled(
            format!(
                "write + fdatasync: {} sizes, {}",
                s.sizes.len(),
                format::decimal(s.bytes_written as f64)
            ),
            bold,
        ),
        Line::raw(format!("target: fdatasync p99 ≤ {} ms", format::ms(s.target_ms))),
        Line::raw(format!(
            "{}: write_cache {}, FUA {}",
            s.disk.as_deref().unwrap_or("no disk"),
            s.write_cache.as_deref().unwrap_or(format::NA),
            s.fua.map_or(format::NA, |f| if f { "yes" } else { "no" })
        )),
    ]
}

/// One row per write size: fdatasync p50/p99/p99.9 and the write p50.
pub fn sync_table(s: &SyncResult, t: &Theme) -> Vec<Line<'static>> {
    let mut v = vec![Line::styled(
        format!(
            "{:>6} {:>6} {:>8} {:>8} {:>8} {:>8}",
            "size", "writes", "sync p50", "p99", "p99.9", "write"
        ),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    for z in &s.sizes {
        let miss = z.meets_target == Some(false);
        let line = format!(
            "{:>6} {:>6} {:>8} {:>8} {:>8} {:>8}{}",
            z.bytes,
            z.writes,
            lat(z.fdatasync.p50_ms),
            lat(z.fdatasync.p99_ms),
            lat(z.fdatasync.p99_9_ms),
            lat(z.write.p50_ms),
            if miss { " over" } else { "" }
        );
        v.push(if miss {
            Line::styled(line, t.severity(Severity::Crit))
        } else {
            Line::raw(line)
        });
    }
    v
}
