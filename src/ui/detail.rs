//! Device detail (Enter on a device): sysfs facts, partitions with their
//! alignment, the saturation basis and headroom ([`super::saturation`]),
//! history charts of MB/s, IOPS, await and %util, and with
//! block tracing the latency per op ([`super::latency`]).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::chart::{self, Spec};
use super::{Theme, ViewState, pane_block, processes};
use crate::format;
use crate::model::procdev::on_device;
use crate::model::{AlignVerdict, DeviceFacts, DeviceRow, Model, exact_size};
use crate::present::files::{FilesOf, detail_file_lines};

fn opt_u(v: Option<u64>) -> String {
    v.map_or_else(|| format::NA.to_string(), |v| v.to_string())
}

/// The device's facts, then (second vector) its partitions and last interval.
fn facts<'a>(d: &DeviceRow, model: &Model, t: &Theme) -> (Vec<Line<'a>>, Vec<Line<'a>>) {
    let mut out = Vec::new();
    let kv = |k: &str, v: String| Line::from(vec![Span::styled(format!("{k:<16}"), t.dim()), Span::raw(v)]);
    let Some(i) = &d.info else {
        out.push(Line::raw("no sysfs facts for this device"));
        return (out, Vec::new());
    };
    out.push(kv(
        "model",
        i.model.as_deref().map_or(format::NA.to_string(), format::escape),
    ));
    out.push(kv("kind", format!("{:?}", i.kind).to_lowercase()));
    out.push(kv(
        "size",
        i.size_bytes
            .map_or(format::NA.to_string(), |b| format::decimal(b as f64)),
    ));
    out.push(kv(
        "rotational",
        match i.rotational {
            Some(true) => "yes".into(),
            Some(false) => "no".into(),
            None => format::NA.into(),
        },
    ));
    if let Some(c) = i.facts.rotational_caveat {
        out.push(Line::styled(format!("  ⚠ {c}"), t.dim()));
    }
    out.push(kv(
        "sector log/phys",
        format!("{} / {} B", opt_u(i.logical_block_size), opt_u(i.physical_block_size)),
    ));
    out.extend(device_facts(&i.facts, t));
    out.push(kv(
        "scheduler",
        i.scheduler.as_deref().map_or(format::NA.to_string(), format::escape),
    ));
    out.push(kv("queue depth", opt_u(i.queue_depth)));
    out.push(kv("nr_requests", opt_u(i.nr_requests)));
    out.push(kv(
        "max_sectors",
        i.max_sectors_kb
            .map_or(format::NA.to_string(), |k| format::binary(k as f64 * 1024.0)),
    ));
    out.push(kv(
        "read_ahead",
        i.read_ahead_kb
            .map_or(format::NA.to_string(), |k| format::binary(k as f64 * 1024.0)),
    ));
    for m in &i.mounts {
        out.push(kv(
            "mounted",
            format!("{} ({})", format::escape(&m.mount_point), format::escape(&m.fs_type)),
        ));
    }
    if let Some(b) = &i.backing_file {
        out.push(kv("backing file", format::escape(b)));
    }
    if let Some(n) = &i.dm_name {
        out.push(kv("dm name", format::escape(n)));
    }
    if !i.slaves.is_empty() {
        out.push(kv("on top of", format::escape(&i.slaves.join(" "))));
    }
    if !i.holders.is_empty() {
        out.push(kv("used by", format::escape(&i.holders.join(" "))));
    }
    if let Some(s) = i.start_sector {
        out.push(kv("start sector", s.to_string()));
        if let Some(a) = &i.alignment {
            let style = match a.verdict {
                AlignVerdict::Misaligned | AlignVerdict::NotOptimal => t.severity(super::theme::Severity::Warn),
                _ => t.dim(),
            };
            out.push(Line::styled(format!("{}: {}", a.verdict.text(), a.explain()), style));
        }
    }
    let mut more = partitions(d, model, t);
    if let Some(r) = &d.rates {
        more.push(Line::styled("last interval", t.title()));
        for (k, d) in [("read", &r.read), ("write", &r.write)] {
            more.push(kv(
                k,
                format!(
                    "{} {}/s {} ms",
                    format::rate(d.bytes_per_s),
                    format::num(d.ios_per_s),
                    d.await_ms.map_or("-".into(), format::ms)
                ),
            ));
        }
        more.push(kv("in flight", r.in_flight.to_string()));
    }
    more.extend(super::saturation::lines(d, model, t));
    more.extend(processes_on(d, model, t));
    (out, more)
}

/// The partitions of `d`: start, size and alignment, then a blank line
/// (nothing when it has none).
fn partitions<'a>(d: &DeviceRow, model: &Model, t: &Theme) -> Vec<Line<'a>> {
    let parts: Vec<&DeviceRow> = model
        .devices
        .iter()
        .filter(|p| p.info.as_ref().and_then(|i| i.parent.as_deref()) == Some(d.name.as_str()))
        .collect();
    let mut more = Vec::new();
    if !parts.is_empty() {
        more.push(Line::styled(
            format!("{:<7}{:>11} {:>8}", "part", "start", "size"),
            t.title(),
        ));
        for p in parts {
            let Some(pi) = &p.info else { continue };
            let mut spans = vec![Span::raw(format!(
                "{:<7}{:>11} {:>8}",
                format::escape(&p.name),
                opt_u(pi.start_sector),
                pi.size_bytes
                    .map_or(format::NA.to_string(), |b| format::decimal(b as f64)),
            ))];
            match pi.alignment.as_ref().map(|a| a.verdict) {
                Some(AlignVerdict::Misaligned) => {
                    spans.push(Span::styled(" ⚠ misaligned", t.severity(super::theme::Severity::Warn)))
                }
                Some(AlignVerdict::NotOptimal) => spans.push(Span::styled(
                    " ⚠ not on optimal I/O",
                    t.severity(super::theme::Severity::Warn),
                )),
                Some(AlignVerdict::AlignedNot1Mib) => spans.push(Span::styled(" aligned, not 1 MiB", t.ok())),
                Some(AlignVerdict::Aligned) => spans.push(Span::styled(" aligned", t.ok())),
                None => {}
            }
            more.push(Line::from(spans));
        }
        more.push(Line::raw(""));
    }
    more
}

/// Transport, write cache, discard, zoned model and iostats, one line each.
fn device_facts<'a>(f: &DeviceFacts, t: &Theme) -> Vec<Line<'a>> {
    let kv = |k: &str, v: String| Line::from(vec![Span::styled(format!("{k:<16}"), t.dim()), Span::raw(v)]);
    let na = || format::NA.to_string();
    let transport = f.transport.as_ref().map_or_else(na, |tr| {
        let mut s = tr.kind.clone();
        if let Some(n) = tr.nvme_transport.as_deref().filter(|n| *n != "pcie") {
            s.push_str(&format!(" over {n}"));
        }
        if let Some(l) = &tr.link {
            s.push_str(&format!(" {l}"));
        }
        if let Some(m) = tr.link_max.as_ref().filter(|m| Some(*m) != tr.link.as_ref()) {
            s.push_str(&format!(" (max {m})"));
        }
        format::escape(&s)
    });
    let cache = match (f.write_cache.as_deref(), f.fua) {
        (None, _) => na(),
        (Some(c), fua) => format!(
            "{}{}",
            format::escape(c),
            match fua {
                Some(true) => ", FUA",
                Some(false) => ", no FUA",
                None => "",
            }
        ),
    };
    let discard = match (f.discard, f.discard_granularity) {
        (Some(true), Some(g)) => format!("yes, granularity {}", exact_size(g)),
        (Some(true), None) => "yes".into(),
        (Some(false), _) => "no".into(),
        (None, _) => na(),
    };
    let mut out = vec![
        kv("transport", transport),
        kv("write cache", cache),
        kv("discard", discard),
        kv("zoned", f.zoned.as_deref().map_or_else(na, format::escape)),
    ];
    if f.iostats == Some(false) {
        out.push(Line::styled(
            "⚠ iostats off: diskstats does not count this device",
            t.severity(super::theme::Severity::Warn),
        ));
    }
    out
}

/// How many processes the detail lists under "processes with files here".
const PROCS_SHOWN: usize = 8;

/// Processes with open files on this device (or, for a partition, on its
/// disk), busiest on the disk first.
fn processes_on<'a>(d: &DeviceRow, model: &Model, t: &Theme) -> Vec<Line<'a>> {
    let parent = d.info.as_ref().and_then(|i| i.parent.as_deref());
    let mut procs: Vec<&crate::model::ProcRow> = model
        .procs
        .iter()
        .filter(|p| on_device(&p.devices, &d.name, parent))
        .collect();
    let busy = |p: &crate::model::ProcRow| p.rates.as_deref().map_or(0.0, |r| r.read_bps + r.write_bps);
    procs.sort_by(|a, b| busy(b).total_cmp(&busy(a)).then(a.raw.key.cmp(&b.raw.key)));
    let mut out = vec![
        Line::raw(""),
        Line::styled(format!("processes with files here ({})", procs.len()), t.title()),
    ];
    for p in procs.iter().take(PROCS_SHOWN) {
        let rw = p.rates.as_deref().map_or_else(
            || format::NA.to_string(),
            |r| format!("rd {} wr {}", format::rate(r.read_bps), format::rate(r.write_bps)),
        );
        out.push(Line::from(vec![
            Span::raw(format!("{:>7} ", p.raw.key.pid)),
            Span::raw(format!("{rw} ")),
            Span::styled(processes::command(p), t.dim()),
        ]));
    }
    if procs.len() > PROCS_SHOWN {
        out.push(Line::styled(format!("  +{} more", procs.len() - PROCS_SHOWN), t.dim()));
    }
    out
}

/// The lines of a column `area` wide and high, each ending a cell before
/// the next column (a long name ends in "…" instead of running into a
/// chart); when they do not all fit, the last row says how many are left
/// out.
fn clipped<'a>(mut lines: Vec<Line<'a>>, area: Rect, t: &Theme) -> Vec<Line<'a>> {
    let (w, h) = (usize::from(area.width.saturating_sub(1)), usize::from(area.height));
    if lines.len() > h && h > 0 {
        let hidden = lines.len() - (h - 1);
        lines.truncate(h - 1);
        lines.push(Line::styled(format!("+{hidden} more lines"), t.dim()));
    }
    lines.into_iter().map(|l| super::clip(l, w)).collect()
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, name: &str) {
    let t = &view.theme;
    let title = Line::from(vec![
        Span::styled(format!(" {} ", format::escape(name)), t.title()),
        Span::styled("Esc back ", t.dim()),
    ]);
    let block = pane_block(title, true, t);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(d) = model.devices.iter().find(|d| d.name == name) else {
        frame.render_widget(Paragraph::new("this device is gone"), inner);
        return;
    };
    let (mut lines, mut more) = facts(d, model, t);
    more.push(Line::raw(""));
    more.extend(
        detail_file_lines(model, FilesOf::Device(name))
            .into_iter()
            .map(Line::raw),
    );
    // Wide: facts in a column left of the charts. Narrow: facts and
    // partitions side by side above the charts.
    let charts_area = if inner.width >= 100 {
        let [a, b] = Layout::horizontal([Constraint::Length(50), Constraint::Fill(1)]).areas(inner);
        lines.push(Line::raw(""));
        lines.extend(more);
        frame.render_widget(Paragraph::new(clipped(lines, a, t)), a);
        b
    } else {
        let h = (lines.len().max(more.len()) as u16).min(inner.height / 2);
        let [a, b] = Layout::vertical([Constraint::Length(h), Constraint::Fill(1)]).areas(inner);
        let [left, right] = Layout::horizontal([Constraint::Length(34), Constraint::Fill(1)]).areas(a);
        frame.render_widget(Paragraph::new(clipped(lines, left, t)), left);
        frame.render_widget(Paragraph::new(clipped(more, right, t)), right);
        b
    };
    // With tracing: the latency per op of the last interval under the charts.
    let traced = model.trace.device(d.major, d.minor);
    // Half the room, or at least what shows each summary and the p50's row
    // with what is hidden around it (the charts give way).
    let want = super::latency::height(&model.trace, traced);
    let least = super::latency::min_height(traced).max(2);
    let lat_h = want.min((charts_area.height / 2).max(least)).min(charts_area.height);
    let [charts_area, lat_area] = Layout::vertical([Constraint::Fill(1), Constraint::Length(lat_h)]).areas(charts_area);
    if lat_h > 0 {
        super::latency::render(frame, lat_area, &model.trace, traced, view);
    }
    let step = model.interval_s.unwrap_or(view.interval.as_secs_f64());
    // One point per braille column pair is plenty; keep "several minutes".
    let n = (usize::from(charts_area.width) * 2).clamp(10, 600);
    let h = &d.history;
    let (read, write) = (t.ok(), t.accent());
    let util = t.severity(super::theme::Severity::Warn);
    let specs = [
        Spec {
            title: "MB/s",
            series: &[("read", &h.read_bps, read), ("write", &h.write_bps, write)],
            scale: 1e-6,
            fmt: |v| format!("{v:.1}"),
        },
        Spec {
            title: "IOPS",
            series: &[("r+w", &h.iops, read)],
            scale: 1.0,
            fmt: format::num,
        },
        Spec {
            title: "await ms",
            series: &[("await", &h.await_ms, write)],
            scale: 1.0,
            fmt: format::ms,
        },
        Spec {
            title: "%util",
            series: &[("util", &h.util_pct, util)],
            scale: 1.0,
            fmt: |v| format!("{v:.0}"),
        },
    ];
    for (spec, cell) in specs.iter().zip(chart::grid(charts_area, 2, 2)) {
        chart::render(frame, cell, spec, n, step, t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Transport;

    fn text(lines: &[Line]) -> String {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn facts_lines() {
        let t = Theme::default();
        let nvme = DeviceFacts {
            write_cache: Some("write back".into()),
            fua: Some(true),
            discard: Some(true),
            discard_granularity: Some(512),
            zoned: Some("none".into()),
            transport: Some(Transport {
                kind: "nvme".into(),
                link: Some("8.0 GT/s PCIe x4".into()),
                link_max: Some("16.0 GT/s PCIe x4".into()),
                nvme_transport: Some("pcie".into()),
            }),
            ..Default::default()
        };
        assert_eq!(
            text(&device_facts(&nvme, &t)),
            "transport       nvme 8.0 GT/s PCIe x4 (max 16.0 GT/s PCIe x4)\n\
             write cache     write back, FUA\n\
             discard         yes, granularity 512 B\n\
             zoned           none"
        );
        let sata = DeviceFacts {
            write_cache: Some("write back".into()),
            fua: Some(false),
            discard: Some(false),
            iostats: Some(false),
            transport: Some(Transport {
                kind: "sata".into(),
                link: Some("6.0 Gbps".into()),
                link_max: None,
                nvme_transport: None,
            }),
            ..Default::default()
        };
        assert_eq!(
            text(&device_facts(&sata, &t)),
            "transport       sata 6.0 Gbps\nwrite cache     write back, no FUA\ndiscard         no\nzoned           n/a\n\
             ⚠ iostats off: diskstats does not count this device"
        );
        assert_eq!(
            text(&device_facts(&DeviceFacts::default(), &t)),
            "transport       n/a\nwrite cache     n/a\ndiscard         n/a\nzoned           n/a"
        );
    }
}
