//! Line charts of history rings (device and process detail): the series
//! named in the title with their markers, the y axis from 0 to the largest
//! value shown, the x axis in seconds from the oldest value shown to now.
//! A NaN value (an interval without a number) is left out: a gap, not 0.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType};

use super::Theme;
use crate::format;
use crate::model::history::Ring;

/// Chart markers of the series of one chart, with the glyph naming each.
const MARKERS: [(Marker, &str); 2] = [(Marker::Braille, "⣿"), (Marker::Dot, "•")];

/// Cells between two charts side by side, and between rows of charts, so
/// that the y labels of one never touch the other.
pub const GAP: u16 = 2;

/// One chart: its title, its series (name, values, style), the values'
/// scale and how the largest is written.
pub struct Spec<'a> {
    pub title: &'a str,
    pub series: &'a [(&'a str, &'a Ring, Style)],
    pub scale: f64,
    pub fmt: fn(f64) -> String,
}

/// Points of the newest `n` values, x in seconds before now (`step` s
/// apart); NaN values left out.
pub fn points(r: &Ring, n: usize, step: f64, scale: f64) -> Vec<(f64, f64)> {
    let len = r.len();
    let skip = len.saturating_sub(n);
    r.iter()
        .enumerate()
        .skip(skip)
        .filter(|(_, v)| v.is_finite())
        .map(|(i, v)| (-((len - 1 - i) as f64) * step, v * scale))
        .collect()
}

/// The time axis label of a chart showing `shown` values `step` s apart:
/// "-1m59s" (the oldest value's age); at least one step.
pub fn age_label(shown: usize, step: f64) -> String {
    let span = (shown.saturating_sub(1)) as f64 * step;
    format!("-{}", format::duration(Some(span.max(step))))
}

/// Draw chart `c` in `area`, showing at most `n` values per series.
pub fn render(frame: &mut Frame, area: Rect, c: &Spec, n: usize, step: f64, t: &Theme) {
    let data: Vec<Vec<(f64, f64)>> = c.series.iter().map(|(_, r, _)| points(r, n, step, c.scale)).collect();
    let max = data.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    let top = if max > 0.0 { max * 1.1 } else { 1.0 };
    let shown = c.series.iter().map(|(_, r, _)| r.len()).max().unwrap_or(0).min(n);
    let span = (shown.saturating_sub(1)) as f64 * step;
    let datasets = c
        .series
        .iter()
        .zip(&data)
        .enumerate()
        .map(|(i, ((_, _, style), pts))| {
            Dataset::default()
                .marker(MARKERS[i % MARKERS.len()].0)
                .graph_type(GraphType::Line)
                .style(*style)
                .data(pts)
        })
        .collect();
    // The series are named in the title (a legend box would hide the
    // newest values), with their marker so they differ without colour too.
    let mut title_spans = vec![Span::styled(format!("{} ", c.title), t.title())];
    if c.series.len() > 1 {
        for (i, (name, _, style)) in c.series.iter().enumerate() {
            title_spans.push(Span::styled(
                format!("{} {name} ", MARKERS[i % MARKERS.len()].1),
                *style,
            ));
        }
    }
    let label_style = t.dim();
    let chart = Chart::new(datasets)
        .block(Block::default().borders(Borders::TOP).title(Line::from(title_spans)))
        .x_axis(
            Axis::default()
                .bounds([-span.max(step), 0.0])
                .style(label_style)
                .labels([Span::raw(age_label(shown, step)), Span::raw("now")]),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .style(label_style)
                .labels([Span::raw("0"), Span::raw((c.fmt)(max))]),
        )
        .legend_position(None);
    frame.render_widget(chart, area);
}

/// `area` cut into `rows` × `cols` chart cells with [`GAP`] between them,
/// row by row.
pub fn grid(area: Rect, rows: usize, cols: usize) -> Vec<Rect> {
    let mut out = Vec::with_capacity(rows * cols);
    let row_areas = Layout::vertical(vec![Constraint::Fill(1); rows]).spacing(1).split(area);
    for r in row_areas.iter() {
        out.extend(
            Layout::horizontal(vec![Constraint::Fill(1); cols])
                .spacing(GAP)
                .split(*r)
                .iter()
                .copied(),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_stay_gaps_and_x_is_seconds_before_now() {
        let mut r = Ring::new(10);
        for v in [1.0, f64::NAN, 3.0] {
            r.push(v);
        }
        assert_eq!(points(&r, 10, 2.0, 1.0), vec![(-4.0, 1.0), (0.0, 3.0)]);
        assert_eq!(points(&r, 1, 2.0, 10.0), vec![(0.0, 30.0)]);
    }

    #[test]
    fn the_axis_says_how_old_the_oldest_value_is() {
        assert_eq!(age_label(60, 1.0), "-59s");
        assert_eq!(age_label(1, 1.0), "-1s");
        assert_eq!(age_label(0, 2.0), "-2s");
    }

    #[test]
    fn grid_cells_never_touch() {
        let cells = grid(Rect::new(0, 0, 81, 21), 2, 2);
        assert_eq!(cells.len(), 4);
        assert!(cells[1].x >= cells[0].right() + GAP, "{cells:?}");
        assert!(cells[2].y > cells[0].bottom(), "{cells:?}");
    }
}
