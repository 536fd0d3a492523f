//! The device detail's traced latency: per op (read, write, discard,
//! flush) with requests in the last interval, the queue / device / total
//! percentiles and their histograms side by side in power-of-two buckets,
//! so where the time goes (waiting in the queue or on the device) shows.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::{Theme, ViewState};
use crate::format;
use crate::model::trace::hist::LatHist;
use crate::model::trace::view::TraceView;
use crate::model::trace::{DeviceTrace, OpLatency};

const OPS: [&str; 4] = ["read", "write", "discard", "flush"];

/// A bucket's exclusive upper bound in ns, rounded up so that "<" stays
/// true: "<512ns", "<17µs" (16.384 µs), "<2.1ms" (2.097 ms), "<17ms".
fn bound(ns: u64) -> String {
    let up = |v: f64, unit: &str| {
        if v < 10.0 {
            format!("<{:.1}{unit}", (v * 10.0).ceil() / 10.0)
        } else {
            format!("<{:.0}{unit}", v.ceil())
        }
    };
    let v = ns as f64;
    if v < 1e3 {
        format!("<{ns}ns")
    } else if v < 1e6 {
        up(v / 1e3, "µs")
    } else if v < 1e9 {
        up(v / 1e6, "ms")
    } else {
        up(v / 1e9, "s")
    }
}

/// Nanoseconds as ms, to the µs below 1 ms.
pub fn ms3(ns: u64) -> String {
    let v = ns as f64 / 1e6;
    if v < 1.0 { format!("{v:.3}") } else { format::ms(v) }
}

/// "p50/p99/max" in ms, or "-".
fn pcts(h: &LatHist) -> String {
    match h.percentiles() {
        Some(p) => format!("{}/{}/{}", ms3(p.p50), ms3(p.p99), ms3(p.max)),
        None => "-".into(),
    }
}

/// Rows of power-of-two buckets: (bound, queue, device, total counts),
/// from the smallest to the largest non-empty bucket of any of the three,
/// the empty ones in between included (so the shape is honest).
fn buckets(l: &OpLatency) -> Vec<(u64, [u64; 3])> {
    let mut rows: Vec<(u64, [u64; 3])> = Vec::new();
    for (i, h) in [&l.queue, &l.device, &l.total].into_iter().enumerate() {
        for (ub, n) in h.log2_buckets() {
            match rows.iter_mut().find(|(b, _)| *b == ub) {
                Some((_, c)) => c[i] += n,
                None => {
                    let mut c = [0; 3];
                    c[i] = n;
                    rows.push((ub, c));
                }
            }
        }
    }
    rows.sort_by_key(|(b, _)| *b);
    if let (Some(lo), Some(hi)) = (rows.first().map(|r| r.0), rows.last().map(|r| r.0)) {
        let mut b = lo;
        while b < hi {
            if !rows.iter().any(|r| r.0 == b) {
                rows.push((b, [0; 3]));
            }
            b = b.saturating_mul(2);
        }
        rows.sort_by_key(|(b, _)| *b);
    }
    rows
}

/// The bucket (its exclusive upper bound, a power of two) holding the
/// p50 of the total time (of the device time when no total is known).
pub fn p50_bound(l: &OpLatency) -> Option<u64> {
    let h = if l.total.n > 0 { &l.total } else { &l.device };
    let p50 = h.percentiles()?.p50;
    Some(p50.saturating_add(1).checked_next_power_of_two().unwrap_or(u64::MAX))
}

/// The `k` rows shown of `len`: centred on the p50's row, moved by
/// `scroll` rows (↑↓ in the detail), within bounds.
fn window(len: usize, p50: usize, k: usize, scroll: i16) -> std::ops::Range<usize> {
    let k = k.clamp(1, len.max(1)).min(len);
    let centred = p50.saturating_sub(k.saturating_sub(1) / 2) as i64;
    let start = (centred + i64::from(scroll)).clamp(0, (len - k) as i64) as usize;
    start..start + k
}

/// The op's summary in the first form that fits `width`: the request
/// count and the total and device percentiles are kept longest, the queue
/// and the long labels give way first.
fn summary<'a>(name: &str, n: u64, l: &OpLatency, width: u16, t: &Theme) -> Line<'a> {
    let (q, d, tot) = (pcts(&l.queue), pcts(&l.device), pcts(&l.total));
    let forms = [
        (
            format!("{name} {n} requests"),
            " p50/p99/max ms: ",
            format!("queue {q} · device {d} · total {tot}"),
        ),
        (
            format!("{name} {n} req"),
            " p50/p99/max ms: ",
            format!("queue {q} · dev {d} · total {tot}"),
        ),
        (
            format!("{name} {n}"),
            " p50/p99/max ms: ",
            format!("dev {d} · total {tot}"),
        ),
        (format!("{name} {n}"), " p50/p99/max ms ", format!("dev {d} tot {tot}")),
        (format!("{name} {n}"), " ms ", format!("dev {d} tot {tot}")),
    ];
    let fits = |(a, b, c): &(String, &str, String)| a.chars().count() + b.chars().count() + c.chars().count();
    let last = forms.len() - 1;
    let i = forms.iter().position(|f| fits(f) <= usize::from(width)).unwrap_or(last);
    let (a, b, c) = forms[i].clone();
    Line::from(vec![Span::styled(a, t.title()), Span::styled(b, t.dim()), Span::raw(c)])
}

fn bar(n: u64, max: u64, w: usize) -> String {
    if n == 0 || max == 0 {
        return " ".repeat(w);
    }
    let k = ((n as f64 / max as f64) * w as f64).ceil() as usize;
    format!("{}{}", "█".repeat(k.min(w)), " ".repeat(w - k.min(w)))
}

/// What the window leaves out, with the requests there by their total
/// time: "hidden: ↑ 4 faster (70 req) ↓ 6 slower (107 req) · ↑↓ scroll".
fn hidden_hint<'a>(rows: &[(u64, [u64; 3])], shown: &std::ops::Range<usize>, width: u16, t: &Theme) -> Line<'a> {
    let count = |r: &[(u64, [u64; 3])]| r.iter().map(|(_, c)| c[2]).sum::<u64>();
    let (above, below) = (&rows[..shown.start], &rows[shown.end..]);
    let mut text = format!("{:>7} hidden:", "");
    if !above.is_empty() {
        text.push_str(&format!(" ↑ {} faster ({} req)", above.len(), count(above)));
    }
    if !below.is_empty() {
        text.push_str(&format!(" ↓ {} slower ({} req)", below.len(), count(below)));
    }
    let line = Line::from(vec![
        Span::styled(text, t.dim()),
        Span::styled(" · ", t.dim()),
        Span::styled("↑↓ scroll", t.title()),
    ]);
    super::clip(line, usize::from(width))
}

/// The lines for one device, `width` columns by `height` rows: per op its
/// summary, then as many bucket rows as fit around the p50 (its row among
/// them unless scrolled away by `scroll` rows) and what was left out above
/// and below.
pub fn lines<'a>(d: &DeviceTrace, width: u16, height: u16, scroll: i16, t: &Theme) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    // bound (7) + 3 × (" " bar " " count(7))
    let bar_w = (usize::from(width).saturating_sub(7 + 3 * 9) / 3).clamp(1, 30);
    let ops: Vec<usize> = (0..OPS.len())
        .filter(|&k| d.latency[k].device.n > 0 || d.latency[k].total.n > 0)
        .collect();
    // Every op's summary first; the rest shared between the histograms.
    let share = usize::from(height).saturating_sub(ops.len()) / ops.len().max(1);
    for k in ops {
        let l = &d.latency[k];
        out.push(summary(OPS[k], d.completed[k], l, width, t));
        let rows = buckets(l);
        // a histogram needs its heading, a row and room to say what is hidden
        if share < 2 || (share < 3 && rows.len() > 1) || rows.is_empty() {
            continue;
        }
        let fit = if rows.len() < share { rows.len() } else { share - 2 };
        let p50 = p50_bound(l)
            .and_then(|b| rows.iter().position(|(r, _)| *r >= b))
            .unwrap_or(0);
        let shown = window(rows.len(), p50, fit, scroll);
        let max = rows[shown.clone()]
            .iter()
            .flat_map(|(_, c)| c.iter().copied())
            .max()
            .unwrap_or(0);
        out.push(Line::styled(
            format!(
                "{:>7} {:<bar_w$} {:>7} {:<bar_w$} {:>7} {:<bar_w$} {:>7}",
                "", "queue", "", "device", "", "total", ""
            ),
            t.dim(),
        ));
        for (b, c) in &rows[shown.clone()] {
            out.push(Line::from(vec![
                Span::styled(format!("{:>7}", bound(*b)), t.dim()),
                Span::styled(format!(" {}", bar(c[0], max, bar_w)), t.accent()),
                Span::raw(format!(" {:>7}", c[0])),
                Span::styled(format!(" {}", bar(c[1], max, bar_w)), t.ok()),
                Span::raw(format!(" {:>7}", c[1])),
                Span::styled(format!(" {}", bar(c[2], max, bar_w)), t.title()),
                Span::raw(format!(" {:>7}", c[2])),
            ]));
        }
        if shown.len() < rows.len() {
            out.push(hidden_hint(&rows, &shown, width, t));
        }
    }
    out
}

/// The most bucket rows of any op of the device (how far ↑↓ can move).
pub fn row_count(d: &DeviceTrace) -> usize {
    d.latency.iter().map(|l| buckets(l).len()).max().unwrap_or(0)
}

/// Rows [`render`] needs to show every op's summary and, under each, the
/// row of its p50 with the column heading and what is hidden.
pub fn min_height(d: Option<&DeviceTrace>) -> u16 {
    let ops = d.map_or(0, |d| {
        d.latency.iter().filter(|l| l.device.n > 0 || l.total.n > 0).count()
    });
    if ops == 0 { 0 } else { 1 + 4 * ops as u16 }
}

/// Rows [`render`] wants for this device (0 when tracing runs but the
/// device had no requests: the charts keep the space).
pub fn height(trace: &TraceView, d: Option<&DeviceTrace>) -> u16 {
    match d {
        // off, with the reason (no reason: no trace was ever applied)
        _ if !trace.active => 2 * u16::from(trace.reason.is_some()),
        Some(d) => {
            let n: usize = d
                .latency
                .iter()
                .filter(|l| l.device.n > 0 || l.total.n > 0)
                .map(|l| 2 + buckets(l).len())
                .sum();
            if n == 0 {
                0
            } else {
                u16::try_from(n + 1).unwrap_or(u16::MAX)
            }
        }
        None => 0,
    }
}

pub fn render(frame: &mut Frame, area: Rect, trace: &TraceView, d: Option<&DeviceTrace>, view: &ViewState) {
    let t = &view.theme;
    // Sampled: the request counts are scaled to the interval, the
    // histograms' counts are of the traced requests.
    let title = match trace.sampled() {
        Some(tag) => vec![
            Span::styled("latency per request, last interval (traced, ", t.title()),
            Span::styled(format!("~{tag}"), t.severity(super::theme::Severity::Warn)),
            Span::styled("; bars count traced requests)", t.title()),
        ],
        None => vec![Span::styled("latency per request, last interval (traced)", t.title())],
    };
    let block = Block::default().borders(Borders::TOP).title(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let body = if !trace.active {
        let why = trace.reason.as_deref().unwrap_or("not started");
        vec![Line::styled(
            format!("needs block tracing, which is off: {}", format::escape(why)),
            t.dim(),
        )]
    } else {
        d.map(|d| lines(d, inner.width, inner.height, view.lat_scroll, t))
            .unwrap_or_default()
    };
    frame.render_widget(Paragraph::new(body), inner);
}
