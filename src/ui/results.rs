//! Probe results pane: live progress while a probe runs, then the numbers,
//! the latency histogram, the sweep chart (MB/s against position) and the
//! verdict with its evidence. Reads a [`ProbeView`]; no I/O here.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, Gauge, GraphType, Paragraph, Wrap};

use super::Theme;
use super::theme::Severity;
use crate::format;
use crate::probe::view::{RunState, coarse_histogram, lat, summary_line};
use crate::probe::{Phase, ProbeResult, ProbeView, Progress, Stop, Zone};

/// Where the pane is scrolled to and which result it shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    /// First line shown when the result does not fit and is shown as lines.
    pub offset: u16,
    /// An earlier result of the session (index into [`ProbeView::past`])
    /// instead of the current one.
    pub pick: Option<usize>,
}

/// The results with the default theme, in a plain border (tests, and any
/// caller without a view state).
#[cfg(any(test, feature = "test-support"))]
pub fn render(frame: &mut Frame, area: Rect, view: &ProbeView) {
    render_scrolled(frame, area, view, Scroll::default());
}

/// [`render`], scrolled and showing the picked result.
#[cfg(any(test, feature = "test-support"))]
pub fn render_scrolled(frame: &mut Frame, area: Rect, view: &ProbeView, scroll: Scroll) {
    let block = Block::default()
        .borders(ratatui::widgets::Borders::ALL)
        .title(title(view));
    draw(frame, area, view, block, &Theme::default(), scroll);
}

/// The pane in the dashboard, with its focus border.
pub fn render_pane(frame: &mut Frame, area: Rect, view: &crate::ui::ViewState) {
    let focused = view.focus == crate::ui::Pane::Results;
    let block = crate::ui::pane_block(Line::from(title(&view.probe)), focused, &view.theme);
    draw(frame, area, &view.probe, block, &view.theme, view.results);
}

/// The result a [`Scroll`] shows in full: the picked earlier one, or the
/// current one once finished.
fn shown(view: &ProbeView, scroll: Scroll) -> Option<&ProbeResult> {
    match scroll.pick {
        Some(i) => view.past.get(i),
        None => match &view.state {
            RunState::Finished(r) | RunState::Cancelled(Some(r)) => Some(r),
            _ => None,
        },
    }
}

/// Lines of the shown result when drawn as lines (a short pane): what
/// scrolling moves over. 0 when no result is shown.
pub fn line_count(view: &ProbeView, scroll: Scroll) -> usize {
    shown(view, scroll).map_or(0, |r| all_lines(r, None, &Theme::default(), None).len())
}

fn title(view: &ProbeView) -> String {
    if view.target.is_empty() {
        " Probe ".to_string()
    } else {
        format!(" Probe: {} — {} ", view.target, view.plan)
    }
}

fn draw(frame: &mut Frame, area: Rect, view: &ProbeView, block: Block, t: &Theme, scroll: Scroll) {
    let mut inner = block.inner(area);
    frame.render_widget(block, area);
    // Earlier results of this session (the current one is shown in full).
    let earlier: Vec<&ProbeResult> = match (scroll.pick, &view.state) {
        (Some(i), _) => view
            .past
            .iter()
            .enumerate()
            .rev()
            .filter(|(k, _)| *k != i)
            .map(|(_, r)| r)
            .collect(),
        (None, RunState::Finished(_) | RunState::Cancelled(Some(_))) => view.past.iter().rev().skip(1).collect(),
        _ => view.past.iter().rev().collect(),
    };
    // A tall pane lists them under the result; a short one at the end of
    // the result's lines.
    let listed = !earlier.is_empty() && inner.height > 12;
    let unlisted = (!listed).then_some(earlier.as_slice());
    if listed {
        let n = earlier.len().min(4) as u16;
        let [main, list] = Layout::vertical([Constraint::Min(0), Constraint::Length(n + 1)]).areas(inner);
        let mut lines = vec![Line::styled(
            "earlier this session",
            Style::default().add_modifier(Modifier::BOLD),
        )];
        lines.extend(earlier.iter().take(n as usize).map(|r| Line::raw(summary_line(r))));
        frame.render_widget(Paragraph::new(lines), list);
        inner = main;
    }
    if let Some(i) = scroll.pick
        && let Some(r) = view.past.get(i)
    {
        let banner = Line::styled(
            format!(
                "earlier result {} of {} ([ older, ] newer): {}",
                i + 1,
                view.past.len(),
                summary_line(r)
            ),
            t.accent(),
        );
        result(frame, inner, r, Some(banner), t, scroll.offset, unlisted);
        return;
    }
    match &view.state {
        RunState::Idle => {
            let msg = "No probe has run in this session. Choose a device and start a probe (random read, zone sweep or both; quick or thorough). Probes only read.";
            frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), inner);
        }
        RunState::Starting => {
            frame.render_widget(Paragraph::new("opening the target…"), inner);
        }
        RunState::Running(p) => running(frame, inner, p, t),
        RunState::Finished(r) => result(frame, inner, r, None, t, scroll.offset, unlisted),
        RunState::Cancelled(Some(r)) => result(
            frame,
            inner,
            r,
            Some(Line::styled(
                "cancelled — partial results",
                t.severity(Severity::Warn).add_modifier(Modifier::BOLD),
            )),
            t,
            scroll.offset,
            unlisted,
        ),
        RunState::Cancelled(None) => {
            frame.render_widget(
                Paragraph::new(Line::styled(
                    "cancelled — stopping after the read in flight",
                    t.severity(Severity::Warn),
                )),
                inner,
            );
        }
        RunState::Failed(e) => {
            let text = vec![Line::styled("probe failed", t.error()), Line::raw(format::escape(e))];
            frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), inner);
        }
    }
}

fn running(frame: &mut Frame, area: Rect, p: &Progress, t: &Theme) {
    let [gauge, info, chart] =
        Layout::vertical([Constraint::Length(1), Constraint::Length(1), Constraint::Min(0)]).areas(area);
    let what = match p.phase {
        Phase::Random => "random read",
        Phase::Sweep => "zone sweep",
        Phase::QueueDepth => "queue-depth sweep",
        Phase::SyncWrite => "sync-write latency",
        Phase::Align => "alignment",
        Phase::Size => "request-size sweep",
        Phase::Seek => "seek and rotation",
    };
    frame.render_widget(
        Gauge::default()
            .ratio(p.fraction.clamp(0.0, 1.0))
            .label(format!("{what} {:.0}%", p.fraction * 100.0))
            .gauge_style(t.accent()),
        gauge,
    );
    let line = match p.phase {
        Phase::Random => format!(
            "{:.1} s  {} reads  p50 {}  IOPS {}   (Esc cancels)",
            p.elapsed_s,
            p.reads,
            lat(p.p50_ms),
            p.iops.map_or_else(|| format::NA.into(), |v| format!("{v:.0}"))
        ),
        Phase::Sweep => format!("{:.1} s  {} zones done   (Esc cancels)", p.elapsed_s, p.zones.len()),
        Phase::SyncWrite => format!(
            "{:.1} s  {} B writes: {}  fdatasync p50 {}   (Esc cancels)",
            p.elapsed_s,
            p.size_bytes,
            p.reads,
            lat(p.p50_ms)
        ),
        Phase::Align | Phase::Seek => format!("{:.1} s  {} reads   (Esc cancels)", p.elapsed_s, p.reads),
        Phase::Size => format!(
            "{:.1} s  {}: {} reads  p50 {}   (Esc cancels)",
            p.elapsed_s,
            format::binary(p.size_bytes as f64),
            p.reads,
            lat(p.p50_ms)
        ),
        Phase::QueueDepth => format!(
            "{:.1} s  QD{}: {} reads  p50 {}  IOPS {}   (Esc cancels)",
            p.elapsed_s,
            p.queue_depth.unwrap_or(1),
            p.reads,
            lat(p.p50_ms),
            p.iops.map_or_else(|| format::NA.into(), |v| format!("{v:.0}"))
        ),
    };
    frame.render_widget(Paragraph::new(line), info);
    if !p.depths.is_empty() {
        let h = chart.height.min(12);
        crate::ui::depth::chart(frame, Rect { height: h, ..chart }, &p.depths, t);
    }
    if !p.zones.is_empty() {
        sweep_chart(frame, chart, &p.zones, Some(p.size_bytes).filter(|s| *s > 0), t);
    }
}

/// Rows a result needs for the side-by-side layout.
const FULL_LAYOUT_MIN_H: u16 = 16;

fn head_line(r: &ProbeResult) -> Line<'static> {
    Line::from(vec![
        Span::raw("verdict: "),
        Span::styled(r.verdict.class.label(), Style::default().add_modifier(Modifier::BOLD)),
    ])
}

/// The latency histogram as lines, at most `rows` buckets: octaves are
/// merged in pairs (fours, ...) until they fit, so the lines always reach
/// the slowest read.
fn histogram_lines(rr: &crate::probe::RandomResult, rows: usize, bar_w: u64, t: &Theme) -> Vec<Line<'static>> {
    let coarse = coarse_histogram(&rr.histogram);
    let per = coarse.len().div_ceil(rows.max(1)).max(1);
    let merged: Vec<(u64, u64, u64)> = coarse
        .chunks(per)
        .filter_map(|c| Some((c.first()?.0, c.last()?.1, c.iter().map(|b| b.2).sum())))
        .collect();
    let most = merged.iter().map(|c| c.2).max().unwrap_or(1).max(1);
    merged
        .into_iter()
        .map(|(lo, hi, n)| {
            let w = (n * bar_w).div_ceil(most) as usize;
            Line::from(vec![
                Span::raw(format!(
                    "{:>8}–{:<8} {n:>7} ",
                    lat(Some(lo as f64 / 1e6)),
                    lat(Some((hi + 1) as f64 / 1e6))
                )),
                Span::styled("█".repeat(w), t.accent()),
            ])
        })
        .collect()
}

/// The whole result as lines, for a pane too short for the side-by-side
/// layout: verdict, numbers, the full histogram, zones, depths or sizes,
/// evidence, then the session's earlier results.
fn all_lines(
    r: &ProbeResult,
    banner: Option<Line<'static>>,
    t: &Theme,
    earlier: Option<&[&ProbeResult]>,
) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut v = vec![banner.unwrap_or_else(|| head_line(r))];
    v.extend(numbers(r));
    if let Some(rr) = &r.random {
        v.push(Line::styled("latency histogram", bold));
        v.extend(histogram_lines(rr, usize::MAX, 30, t));
    }
    if let Some(sw) = r.sweep.as_ref().filter(|s| !s.zones.is_empty()) {
        v.push(Line::styled("zones (position: MB/s)", bold));
        for z in &sw.zones {
            v.push(Line::raw(format!(
                "{:>8.2} GB: {:.1}",
                z.offset as f64 / 1e9,
                z.mb_per_s
            )));
        }
    }
    if let Some(q) = r.queue_depth_sweep.as_ref().filter(|q| !q.points.is_empty()) {
        v.extend(crate::ui::depth::table(&q.points));
    } else if let Some(s) = &r.sync_write {
        v.extend(crate::ui::depth::sync_table(s, t));
    }
    v.extend(evidence(r, t));
    if let Some(e) = earlier.filter(|e| !e.is_empty()) {
        v.push(Line::styled("earlier this session ([ ] shows one)", bold));
        v.extend(e.iter().map(|p| Line::raw(summary_line(p))));
    }
    v
}

fn result(
    frame: &mut Frame,
    area: Rect,
    r: &ProbeResult,
    banner: Option<Line<'static>>,
    t: &Theme,
    offset: u16,
    earlier: Option<&[&ProbeResult]>,
) {
    // Too short for the side-by-side layout (verdict, numbers next to the
    // histogram, a chart of at least 5 rows, 3 rows of evidence): the
    // result as lines, scrolled (↑↓).
    if area.height < FULL_LAYOUT_MIN_H {
        let lines = all_lines(r, banner, t, earlier);
        let n = lines.len() as u16;
        let h = area.height;
        let offset = offset.min(n.saturating_sub(h));
        // The "more" line only where it leaves room for the result.
        let more = if h >= 3 { n.saturating_sub(offset + h) } else { 0 };
        let [body, foot] = if more > 0 {
            Layout::vertical([Constraint::Min(0), Constraint::Length(1)]).areas(area)
        } else {
            [area, Rect { height: 0, ..area }]
        };
        frame.render_widget(Paragraph::new(lines).scroll((offset, 0)), body);
        if more > 0 {
            let text = format!("↓ {more} more lines (↑↓ scroll, z maximises)");
            frame.render_widget(Paragraph::new(Line::styled(text, t.dim())), foot);
        }
        return;
    }
    let has_sweep = r.sweep.as_ref().is_some_and(|s| !s.zones.is_empty());
    let qd = r.queue_depth_sweep.as_ref().filter(|q| !q.points.is_empty());
    let hist_rows = match (&r.random, qd) {
        (Some(rr), _) => coarse_histogram(&rr.histogram).len() as u16,
        (None, Some(q)) => q.points.len() as u16,
        (None, None) => r.sync_write.as_ref().map_or(0, |s| s.sizes.len() as u16 + 1),
    };
    let top_h = numbers(r).len().max(hist_rows as usize + 1) as u16;
    let head_line = banner.unwrap_or_else(|| head_line(r));
    // Short panes (small terminals, every pane shown) keep what matters
    // most: the verdict, the numbers, the evidence. Otherwise the chart
    // gets up to 10 rows (at least 5) and the numbers at least 6.
    const EVIDENCE_H: u16 = 3;
    let room = area.height.saturating_sub(1 + EVIDENCE_H);
    if room < 6 {
        let mut lines = vec![head_line];
        lines.extend(numbers(r));
        lines.extend(evidence(r, t));
        frame.render_widget(Paragraph::new(lines), area);
        return;
    }
    let (mut top_h, mut chart_h) = (top_h.min(room), 0);
    if has_sweep || qd.is_some() {
        top_h = top_h.min(room.saturating_sub(10).max(6));
        chart_h = (room - top_h).min(10);
        if chart_h < 5 {
            chart_h = 0;
        }
    }
    let [head, top, chart, verdict] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(top_h),
        Constraint::Length(chart_h),
        Constraint::Min(3),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(head_line), head);

    let [left, right] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(top);
    frame.render_widget(Paragraph::new(numbers(r)), left);
    if let Some(rr) = &r.random {
        let bar_w = u64::from(right.width.saturating_sub(26)).max(1);
        let mut lines = vec![Line::styled(
            "latency histogram",
            Style::default().add_modifier(Modifier::BOLD),
        )];
        lines.extend(histogram_lines(rr, usize::from(top_h.saturating_sub(1)), bar_w, t));
        frame.render_widget(Paragraph::new(lines), right);
    } else if let Some(q) = qd {
        frame.render_widget(Paragraph::new(crate::ui::depth::table(&q.points)), right);
    } else if let Some(s) = &r.sync_write {
        frame.render_widget(Paragraph::new(crate::ui::depth::sync_table(s, t)), right);
    }
    if let Some(sw) = r.sweep.as_ref().filter(|_| chart_h > 0) {
        sweep_chart(frame, chart, &sw.zones, Some(r.method.size_bytes), t);
    } else if let Some(q) = qd.filter(|_| chart_h > 0) {
        crate::ui::depth::chart(frame, chart, &q.points, t);
    }
    frame.render_widget(Paragraph::new(evidence(r, t)).wrap(Wrap { trim: false }), verdict);
}

/// The verdict's evidence, impossibilities and notes, one line each.
fn evidence(r: &ProbeResult, t: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    if r.status == crate::probe::Status::Cancelled {
        lines.push(Line::from(vec![
            Span::raw("verdict (partial): "),
            Span::styled(r.verdict.class.label(), Style::default().add_modifier(Modifier::BOLD)),
        ]));
    }
    for e in &r.verdict.impossible {
        lines.push(Line::styled(format!("! {e}"), t.severity(Severity::Crit)));
    }
    for e in &r.verdict.evidence {
        lines.push(Line::raw(format!("- {e}")));
    }
    for n in &r.notes {
        lines.push(Line::styled(format!("note: {n}"), t.severity(Severity::Warn)));
    }
    lines
}

fn stop(s: Stop) -> &'static str {
    match s {
        Stop::Done => "",
        Stop::TimeCap => " (time cap)",
        Stop::Cancelled => " (cancelled)",
    }
}

fn numbers(r: &ProbeResult) -> Vec<Line<'static>> {
    let m = &r.method;
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut v = Vec::new();
    if let Some(rr) = &r.random {
        let l = &rr.latency;
        v.push(Line::styled(
            format!(
                "random {} QD{}: {} reads, {:.1} s{}",
                format::binary(rr.bs as f64),
                rr.queue_depth,
                l.count,
                rr.duration_s,
                stop(rr.stopped)
            ),
            bold,
        ));
        v.push(Line::raw(format!(
            "IOPS {}  {}",
            rr.iops.map_or_else(|| format::NA.into(), |x| format!("{x:.0}")),
            rr.mb_per_s.map_or_else(|| format::NA.into(), |x| format::rate(x * 1e6))
        )));
        v.push(Line::raw(format!(
            "mean {}  sd {}  max {}",
            lat(l.mean_ms),
            lat(l.stddev_ms),
            lat(l.max_ms)
        )));
        v.push(Line::raw(format!(
            "p50 {}  p90 {}  p99 {}  p99.9 {}",
            lat(l.p50_ms),
            lat(l.p90_ms),
            lat(l.p99_ms),
            lat(l.p99_9_ms)
        )));
        if let Some(c) = &rr.disk_check {
            v.push(Line::raw(format!(
                "diskstats {}: {}/{} reads",
                c.device, c.device_reads, c.reads_issued
            )));
        }
    }
    if let Some(sw) = &r.sweep {
        let mbs = |x: Option<f64>| x.map_or_else(|| format::NA.into(), |x| format::rate(x * 1e6));
        v.push(Line::styled(
            format!(
                "sweep: {}/{} zones × {}{}",
                sw.zones.len(),
                sw.zones_planned,
                format::binary(sw.chunk_bytes as f64),
                stop(sw.stopped)
            ),
            bold,
        ));
        v.push(Line::raw(format!(
            "min {}  median {}  max {}",
            mbs(sw.min.map(|p| p.mb_per_s)),
            mbs(sw.median_mb_per_s),
            mbs(sw.max.map(|p| p.mb_per_s))
        )));
        v.push(Line::raw(format!(
            "first/last 10%: {}",
            sw.first_last_ratio
                .map_or_else(|| format::NA.into(), |x| format!("{x:.2}"))
        )));
    }
    if let Some(q) = &r.queue_depth_sweep {
        v.extend(crate::ui::depth::summary(q, stop(q.stopped)));
    }
    if let Some(s) = &r.sync_write {
        v.extend(crate::ui::depth::sync_summary(s));
    }
    v.extend(crate::ui::capacity::summary(r));
    let cache = match m.cache {
        crate::probe::CacheMode::Direct => "O_DIRECT",
        crate::probe::CacheMode::BufferedFadvise => "buffered+fadvise",
        crate::probe::CacheMode::SyncWrites => "write+fdatasync",
    };
    v.push(Line::raw(format!(
        "method: {cache}, align {}{}",
        m.align_bytes
            .map_or_else(|| format::NA.into(), |a| format::binary(a as f64)),
        if m.impact_limited { ", impact-limited" } else { "" }
    )));
    v
}

fn sweep_chart(frame: &mut Frame, area: Rect, zones: &[Zone], size: Option<u64>, t: &Theme) {
    let points: Vec<(f64, f64)> = zones.iter().map(|z| (z.offset as f64 / 1e9, z.mb_per_s)).collect();
    let x_max = size
        .map(|s| s as f64 / 1e9)
        .or_else(|| points.last().map(|p| p.0))
        .unwrap_or(1.0)
        .max(1e-3);
    let y_max = points.iter().map(|p| p.1).fold(0.0, f64::max).max(1.0) * 1.1;
    let data = Dataset::default()
        .name("MB/s")
        .marker(Marker::Braille)
        .graph_type(GraphType::Line)
        .style(t.ok())
        .data(&points);
    let chart = Chart::new(vec![data])
        .legend_position(None)
        .x_axis(Axis::default().title("position (GB)").bounds([0.0, x_max]).labels([
            "0".to_string(),
            format!("{:.2}", x_max / 2.0),
            format!("{x_max:.2}"),
        ]))
        .y_axis(Axis::default().title("MB/s").bounds([0.0, y_max]).labels([
            "0".to_string(),
            format!("{:.0}", y_max / 2.0),
            format!("{y_max:.0}"),
        ]));
    frame.render_widget(chart, area);
}

#[cfg(test)]
mod tests {
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::probe::{Depth, ProbeMsg, Status, Tests};

    fn draw(view: &ProbeView) -> String {
        let mut t = Terminal::new(TestBackend::new(100, 34)).unwrap();
        t.draw(|f| render(f, f.area(), view)).unwrap();
        t.backend().to_string()
    }

    use crate::probe::example::{result, zones};

    fn view() -> ProbeView {
        let mut v = ProbeView::default();
        let cfg = crate::probe::ProbeConfig::new("/dev/sda", Tests::Both, Depth::Quick);
        v.start("/dev/sda".into(), cfg.label());
        v
    }

    #[test]
    fn idle_and_running() {
        insta::assert_snapshot!("idle", draw(&ProbeView::default()));
        let mut v = view();
        v.apply(ProbeMsg::Progress(Progress {
            phase: Phase::Random,
            fraction: 0.25,
            elapsed_s: 7.5,
            reads: 750,
            p50_ms: Some(8.2),
            iops: Some(100.0),
            zones: vec![],
            size_bytes: 1_000_204_886_016,
            queue_depth: None,
            depths: Vec::new(),
        }));
        insta::assert_snapshot!("running_random", draw(&v));
        v.apply(ProbeMsg::Progress(Progress {
            phase: Phase::Sweep,
            fraction: 0.45,
            elapsed_s: 4.6,
            reads: 580,
            p50_ms: None,
            iops: None,
            zones: zones(9),
            size_bytes: 1_000_204_886_016,
            queue_depth: None,
            depths: Vec::new(),
        }));
        insta::assert_snapshot!("running_sweep", draw(&v));
    }

    #[test]
    fn finished() {
        let mut v = view();
        v.apply(ProbeMsg::Finished(Box::new(result(Status::Completed))));
        assert!(matches!(v.state, RunState::Finished(_)));
        assert_eq!(v.past.len(), 1);
        insta::assert_snapshot!("finished", draw(&v));
        // A second run: the first is listed below it.
        v.start("/dev/sda".into(), "random read + zone sweep, quick".into());
        assert!(v.is_running());
        let mut second = result(Status::Completed);
        second.started_unix += 600;
        v.apply(ProbeMsg::Finished(Box::new(second)));
        assert_eq!(v.past.len(), 2);
        let s = draw(&v);
        assert!(s.contains("earlier this session"), "{s}");
        assert!(
            s.contains("22:13 /dev/sda random read + zone sweep → HDD (p50 9.99 ms, 138 MB/s)"),
            "{s}"
        );
    }

    #[test]
    fn cancelled() {
        let mut v = view();
        v.cancel_requested();
        insta::assert_snapshot!("cancelling", draw(&v));
        // A progress message still in the channel does not revive it.
        v.apply(ProbeMsg::Progress(Progress {
            phase: Phase::Random,
            fraction: 0.1,
            elapsed_s: 1.0,
            reads: 10,
            p50_ms: None,
            iops: None,
            zones: vec![],
            size_bytes: 1_000_204_886_016,
            queue_depth: None,
            depths: Vec::new(),
        }));
        assert!(matches!(v.state, RunState::Cancelled(None)));
        v.apply(ProbeMsg::Finished(Box::new(result(Status::Cancelled))));
        insta::assert_snapshot!("cancelled", draw(&v));
    }

    #[test]
    fn queue_depth_sweep() {
        use crate::probe::example::qd_result;
        let mut v = ProbeView::default();
        v.start("/dev/sdb".into(), "queue-depth sweep, quick".into());
        let done = qd_result(Status::Completed);
        let pts = done.queue_depth_sweep.as_ref().unwrap().points.clone();
        v.apply(ProbeMsg::Progress(Progress {
            phase: Phase::QueueDepth,
            fraction: 0.5,
            elapsed_s: 3.2,
            reads: 640,
            p50_ms: Some(0.15),
            iops: Some(57_800.0),
            zones: vec![],
            size_bytes: 500_107_862_016,
            queue_depth: Some(8),
            depths: pts[..3].to_vec(),
        }));
        let s = draw(&v);
        assert!(s.contains("QD8: 640 reads  p50 150 µs  IOPS 57800"), "{s}");
        insta::assert_snapshot!("running_qd", s);
        v.apply(ProbeMsg::Finished(Box::new(done)));
        let s = draw(&v);
        assert!(s.contains("knee QD32  speed-up 10.0× QD1"), "{s}");
        assert!(s.contains("p99 ≤ 10.0 ms: 90000 IOPS at QD64"), "{s}");
        insta::assert_snapshot!("finished_qd", s);
        let mut v = ProbeView::default();
        v.start("/dev/sdb".into(), "queue-depth sweep, quick".into());
        v.cancel_requested();
        v.apply(ProbeMsg::Finished(Box::new(qd_result(Status::Cancelled))));
        insta::assert_snapshot!("cancelled_qd", draw(&v));
    }

    #[test]
    fn sync_write_probe() {
        let mut v = ProbeView::default();
        v.start("/var/lib/etcd".into(), "sync-write latency, quick".into());
        v.apply(ProbeMsg::Finished(Box::new(crate::probe::example::sync_result())));
        let s = draw(&v);
        assert!(
            s.contains("verdict: fdatasync too slow for etcd and databases (p99 > 10 ms)"),
            "{s}"
        );
        assert!(s.contains("sda: write_cache write back, FUA no"), "{s}");
        insta::assert_snapshot!("finished_sync", s);
    }

    #[test]
    fn error() {
        let mut v = view();
        v.apply(ProbeMsg::Failed(
            "/dev/tty0 is a character device: a probe reads a block device, a partition or a regular file\x1b[2J"
                .into(),
        ));
        let s = draw(&v);
        assert!(s.contains("\\x1b[2J"), "{s}");
        insta::assert_snapshot!("error", s);
    }
}
