//! The device detail's traced latency: per op (read, write, discard,
//! flush) with requests in the last interval, the queue / device / total
//! percentiles and their histograms side by side in power-of-two buckets,
//! so where the time goes (waiting in the queue or on the device) shows.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::Theme;
use crate::format;
use crate::model::trace::hist::LatHist;
use crate::model::trace::view::TraceView;
use crate::model::trace::{DeviceTrace, OpLatency};

const OPS: [&str; 4] = ["read", "write", "discard", "flush"];

/// Most bucket rows shown per op.
const MAX_BUCKETS: usize = 8;

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
/// the slowest kept when there are more than [`MAX_BUCKETS`].
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
        // fill the empty buckets in between, so the shape is honest
        let mut b = lo;
        while b < hi {
            if !rows.iter().any(|r| r.0 == b) {
                rows.push((b, [0; 3]));
            }
            b = b.saturating_mul(2);
        }
        rows.sort_by_key(|(b, _)| *b);
    }
    let skip = rows.len().saturating_sub(MAX_BUCKETS);
    rows.split_off(skip)
}

fn bar(n: u64, max: u64, w: usize) -> String {
    if n == 0 || max == 0 {
        return " ".repeat(w);
    }
    let k = ((n as f64 / max as f64) * w as f64).ceil() as usize;
    format!("{}{}", "█".repeat(k.min(w)), " ".repeat(w - k.min(w)))
}

/// The lines for one device, `width` columns wide.
pub fn lines<'a>(d: &DeviceTrace, width: u16, t: &Theme) -> Vec<Line<'a>> {
    let mut out = Vec::new();
    // bound (7) + 3 × (" " bar " " count(7))
    let bar_w = (usize::from(width).saturating_sub(7 + 3 * 9) / 3).clamp(1, 30);
    for (k, name) in OPS.iter().enumerate() {
        let l = &d.latency[k];
        if l.device.n == 0 && l.total.n == 0 {
            continue;
        }
        out.push(Line::from(vec![
            Span::styled(format!("{name} {} requests", d.completed[k]), t.title()),
            Span::styled(" p50/p99/max ms: ", t.dim()),
            Span::raw(format!(
                "queue {} · device {} · total {}",
                pcts(&l.queue),
                pcts(&l.device),
                pcts(&l.total)
            )),
        ]));
        let rows = buckets(l);
        let max = rows.iter().flat_map(|(_, c)| c.iter().copied()).max().unwrap_or(0);
        out.push(Line::styled(
            format!(
                "{:>7} {:<bar_w$} {:>7} {:<bar_w$} {:>7} {:<bar_w$} {:>7}",
                "", "queue", "", "device", "", "total", ""
            ),
            t.dim(),
        ));
        for (b, c) in rows {
            out.push(Line::from(vec![
                Span::styled(format!("{:>7}", bound(b)), t.dim()),
                Span::styled(format!(" {}", bar(c[0], max, bar_w)), t.accent()),
                Span::raw(format!(" {:>7}", c[0])),
                Span::styled(format!(" {}", bar(c[1], max, bar_w)), t.ok()),
                Span::raw(format!(" {:>7}", c[1])),
                Span::styled(format!(" {}", bar(c[2], max, bar_w)), t.title()),
                Span::raw(format!(" {:>7}", c[2])),
            ]));
        }
    }
    out
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

pub fn render(frame: &mut Frame, area: Rect, trace: &TraceView, d: Option<&DeviceTrace>, t: &Theme) {
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Line::styled("latency per request, last interval (traced)", t.title()));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let body = if !trace.active {
        let why = trace.reason.as_deref().unwrap_or("not started");
        vec![Line::styled(
            format!("needs block tracing, which is off: {}", format::escape(why)),
            t.dim(),
        )]
    } else {
        d.map(|d| lines(d, inner.width, t)).unwrap_or_default()
    };
    frame.render_widget(Paragraph::new(body), inner);
}
