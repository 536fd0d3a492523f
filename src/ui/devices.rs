//! Devices pane: one iostat -x like row per device, partitions folded under
//! their disk, columns dropped on narrow terminals in a fixed order.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Row, Table, TableState};

use super::viewmodel::ViewModel;
use super::{DevCol, Pane, ViewState, pane_block, sparkline};
use crate::format;
use crate::model::saved::SavedProbes;
use crate::model::{DeviceRow, Model};
use crate::present::{Align, device};

pub use super::viewmodel::DevLine;

/// The rows in display order: each disk followed by its partitions (unless
/// folded), idle devices left out when `hide_idle` is on, empty ones always.
#[cfg(any(test, feature = "test-support"))]
pub fn visible<'a>(model: &'a Model, view: &ViewState) -> Vec<DevLine<'a>> {
    super::viewmodel::device_lines(model, view)
}

fn width(c: DevCol, name_w: u16) -> u16 {
    match c.def().width {
        0 => name_w,
        w => w,
    }
}

/// Which of the wanted columns fit in `avail` cells (one space between
/// columns), in display order, with their widths: space left over widens
/// the history sparkline and the mount point.
pub fn layout_columns(wanted: &[DevCol], avail: u16, name_w: u16) -> Vec<(DevCol, u16)> {
    let cols = fit_columns(wanted, avail, name_w);
    let used: u16 = cols.iter().map(|c| width(*c, name_w) + 1).sum();
    let mut extra = avail.saturating_sub(used);
    cols.into_iter()
        .map(|c| {
            let mut w = width(c, name_w);
            let grow = match c {
                DevCol::Mount => extra.min(15),
                DevCol::Spark => extra.min(50),
                _ => 0,
            };
            extra -= grow;
            w += grow;
            (c, w)
        })
        .collect()
}

/// Which of the wanted columns fit in `avail` cells (one space between
/// columns), in display order.
pub fn fit_columns(wanted: &[DevCol], avail: u16, name_w: u16) -> Vec<DevCol> {
    let mut used = 0u16;
    let mut keep = Vec::new();
    for c in DevCol::keep_order() {
        if !wanted.contains(&c) && c != DevCol::Name {
            continue;
        }
        let w = width(c, name_w) + u16::from(!keep.is_empty());
        if used + w > avail {
            break;
        }
        used += w;
        keep.push(c);
    }
    DevCol::ALL.into_iter().filter(|c| keep.contains(c)).collect()
}

/// A column's heading; `pat` is the pattern column's
/// ([`crate::model::pattern::heading`]).
fn header(c: DevCol, pat: &'static str) -> &'static str {
    match c {
        DevCol::Pattern => pat,
        c => c.def().head,
    }
}

fn name_cell(l: &DevLine) -> String {
    device::name_text(&l.row.name, l.depth, l.folded, l.last)
}

/// The style of a data cell holding `s` (the text [`DevCol::pane_text`]
/// gave): unknown and idle dim, latency and (where it means saturation)
/// %util by severity.
fn cell_style(c: DevCol, r: &DeviceRow, s: &str, saved: &SavedProbes, t: &super::Theme) -> Style {
    // The p99 is traced: shown also without rates.
    if c == DevCol::P99 {
        return if s == format::NA { t.dim() } else { Style::new() };
    }
    let Some(rates) = &r.rates else { return t.dim() };
    match c {
        DevCol::FlushIops | DevCol::QueueSize => Style::new(),
        // %util is saturation only where one request at a time is the
        // device's limit (a disk known to rotate, or its saved depth probe
        // found no gain past QD 1).
        DevCol::Util => {
            if crate::model::findings::saturation_basis(r.info.as_ref(), saved.of_row(r)).is_util() {
                t.severity(t.util_severity(Some(rates.util_pct)))
            } else {
                Style::new()
            }
        }
        DevCol::Pattern => t.accent(),
        _ => {
            let d = if c.is_read() { &rates.read } else { &rates.write };
            match c {
                DevCol::ReadAwait | DevCol::WriteAwait => t.severity(t.await_severity(d.await_ms)),
                _ if d.d_ios == 0 && d.bytes_per_s == 0.0 => t.dim(),
                _ => Style::new(),
            }
        }
    }
}

fn cell<'a>(c: DevCol, l: &DevLine, w: u16, model: &Model, view: &ViewState) -> Cell<'a> {
    let t = &view.theme;
    let w = usize::from(w);
    let r = l.row;
    match c {
        DevCol::Name => Cell::from(truncate(&name_cell(l), w)),
        DevCol::Mount => Cell::from(truncate(&c.pane_text(r, model), w)),
        DevCol::Spark => Cell::from(Span::styled(
            sparkline(r.history.util_pct.iter(), w, Some(100.0)),
            t.accent(),
        )),
        _ => {
            let s = c.pane_text(r, model);
            let style = cell_style(c, r, &s, &model.findings.saved, t);
            Cell::from(Line::from(Span::styled(format!("{s:>w$}"), style)))
        }
    }
}

pub use crate::present::text::truncate;

/// `line` cut to `w` cells, its last cell "…" when something was cut, the
/// spans' styles kept (a long name ends visibly instead of running into
/// what is drawn next to it).
pub fn clip(line: Line<'_>, w: usize) -> Line<'_> {
    let len: usize = line.spans.iter().map(|s| s.content.chars().count()).sum();
    if len <= w {
        return line;
    }
    let mut left = w.saturating_sub(1);
    let mut spans = Vec::with_capacity(line.spans.len());
    for s in line.spans {
        if left == 0 {
            break;
        }
        let n = s.content.chars().count();
        if n <= left {
            left -= n;
            spans.push(s);
        } else {
            let cut: String = s.content.chars().take(left).collect();
            spans.push(ratatui::text::Span::styled(cut, s.style));
            left = 0;
        }
    }
    if w > 0 {
        let style = spans.last().map(|s| s.style).unwrap_or_default();
        spans.push(ratatui::text::Span::styled("…", style));
    }
    Line::from(spans).style(line.style)
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, vm: &ViewModel) {
    let t = &view.theme;
    let lines = vm.dev_lines(model);
    let focused = view.focus == Pane::Devices;
    let mut title = vec![Span::styled(" Devices ", t.title())];
    let n_empty = model.devices.iter().filter(|r| r.has_no_media()).count();
    let folded: usize = lines.iter().map(|l| l.folded).sum();
    let n_idle = model.devices.len().saturating_sub(lines.len() + n_empty + folded);
    let mut notes = Vec::new();
    if view.hide_idle {
        notes.push(format!("{n_idle} idle"));
    }
    if n_empty > 0 {
        notes.push(format!("{n_empty} empty"));
    }
    if !notes.is_empty() {
        title.push(Span::styled(format!("({} not shown) ", notes.join(", ")), t.dim()));
    }
    // Rows that do not fit: say how many, and how to see them.
    let fit = usize::from(area.height.saturating_sub(3));
    if lines.len() > fit {
        title.push(Span::styled(
            format!("{} more: ↓ or z to maximise ", lines.len() - fit),
            t.accent(),
        ));
    }
    let inner_w = area.width.saturating_sub(2);
    let name_w = lines
        .iter()
        .map(|l| name_cell(l).chars().count() as u16)
        .max()
        .unwrap_or(6)
        .clamp(6, 16);
    let cols = layout_columns(&view.dev_cols, inner_w, name_w);
    // The traced columns (pattern, p99) of a sampled interval: estimates.
    if let Some(tag) = model.trace.sampled()
        && cols.iter().any(|(c, _)| matches!(c, DevCol::Pattern | DevCol::P99))
    {
        title.insert(
            1,
            Span::styled(format!("~trace {tag} "), t.severity(super::theme::Severity::Warn)),
        );
    }
    let block = pane_block(Line::from(title), focused, t);
    let widths: Vec<Constraint> = cols.iter().map(|(_, w)| Constraint::Length(*w)).collect();
    let pat = crate::model::pattern::heading(model.devices.iter().map(|d| d.rates.as_ref()));
    let head = Row::new(cols.iter().map(|(c, w)| {
        let w = usize::from(*w);
        let h = header(*c, pat);
        Cell::from(match c.def().align {
            Align::Left => format!("{h:<w$}"),
            Align::Right => format!("{h:>w$}"),
        })
    }))
    .style(t.title());
    let rows = lines.iter().map(|l| {
        let row = Row::new(cols.iter().map(|(c, w)| cell(*c, l, *w, model, view)));
        if l.depth > 0 { row.style(t.dim()) } else { row }
    });
    let selected = view
        .dev_sel
        .as_ref()
        .and_then(|n| lines.iter().position(|l| &l.row.name == n));
    let mut state = TableState::default().with_selected(if focused { selected } else { None });
    let table = Table::new(rows, widths)
        .header(head)
        .block(block)
        .column_spacing(1)
        .row_highlight_style(t.selected());
    frame.render_stateful_widget(table, area, &mut state);
}

#[cfg(test)]
mod tests {
    #[test]
    fn clip_cuts_with_an_ellipsis_and_keeps_styles() {
        use ratatui::style::Style;
        use ratatui::text::Line;
        use ratatui::text::Span;
        let l = Line::from(vec![
            Span::raw("4242 "),
            Span::styled("dd if=/dev/sda", Style::new().red()),
        ]);
        let c = clip(l.clone(), 10);
        assert_eq!(c.to_string(), "4242 dd i…");
        assert_eq!(c.spans[1].style, Style::new().red());
        assert_eq!(clip(l.clone(), 19).to_string(), "4242 dd if=/dev/sda");
        assert_eq!(clip(l.clone(), 1).to_string(), "…");
        assert_eq!(clip(l, 0).to_string(), "");
    }

    use super::*;

    #[test]
    fn narrow_terminals_drop_columns_in_order() {
        use DevCol as D;
        let all = DevCol::ALL.to_vec();
        // The iostat -x essentials first: r/s w/s MB/s, then aqu-sz.
        let c = fit_columns(&all, 40, 8);
        assert_eq!(c, [D::Name, D::ReadIops, D::ReadMb, D::WriteIops, D::Util]);
        let c = fit_columns(&all, 60, 8);
        assert_eq!(
            c,
            [
                D::Name,
                D::ReadIops,
                D::ReadMb,
                D::WriteIops,
                D::WriteMb,
                D::QueueSize,
                D::Util
            ]
        );
        // 80 columns (78 inside the border): the awaits and the mount (or
        // backing file) too; pattern and p99 are the first to go.
        let c = fit_columns(&all, 78, 6);
        assert_eq!(
            c,
            [
                D::Name,
                D::Mount,
                D::ReadIops,
                D::ReadMb,
                D::ReadAwait,
                D::WriteIops,
                D::WriteMb,
                D::WriteAwait,
                D::QueueSize,
                D::Util
            ]
        );
        // 120 columns: pattern, p99 and the history as well.
        let c = fit_columns(&all, 118, 6);
        for col in [D::Pattern, D::P99, D::Spark] {
            assert!(c.contains(&col), "{col:?} missing at 120 columns: {c:?}");
        }
        let wide = fit_columns(&all, 200, 8);
        assert_eq!(wide, all);
        // A column the user switched off stays off however wide.
        let no_mount: Vec<DevCol> = all.iter().copied().filter(|c| *c != DevCol::Mount).collect();
        assert!(!fit_columns(&no_mount, 200, 8).contains(&DevCol::Mount));
        assert_eq!(fit_columns(&all, 3, 8), Vec::<DevCol>::new());
    }

    #[test]
    fn truncates_with_ellipsis() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
        assert_eq!(truncate("abc", 0), "");
    }

    #[test]
    fn util_is_coloured_as_saturation_only_on_a_disk_known_to_rotate() {
        use crate::model::DeviceInfo;
        use crate::model::disk::DirRates;
        let model = |name: &str, rot: bool| {
            let mut m = crate::model::Model::default();
            let mut d = crate::model::DeviceRow::example(name, 8, 0, DirRates::default());
            d.info = Some(DeviceInfo {
                rotational: Some(rot),
                ..DeviceInfo::example(name)
            });
            m.devices.push(d);
            m
        };
        let view = ViewState::default();
        let t = &view.theme;
        let util = |name: &str, rot: bool| {
            let m = model(name, rot);
            let l = DevLine {
                row: &m.devices[0],
                depth: 0,
                folded: 0,
                last: false,
            };
            cell(DevCol::Util, &l, 6, &m, &view)
        };
        let shown = |st: Style| Cell::from(Line::from(Span::styled(" 100.0", st)));
        let red = t.severity(t.util_severity(Some(100.0)));
        assert_ne!(red, Style::new());
        assert_eq!(util("sda", true), shown(red));
        // A loop device's flag is copied from its backing file's disk; a
        // disk that does not rotate serves requests in parallel.
        assert_eq!(util("loop0", true), shown(Style::new()));
        assert_eq!(util("nvme0n1", false), shown(Style::new()));
    }
}
