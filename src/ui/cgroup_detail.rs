//! Cgroup detail (Enter on a cgroup): what the cgroup is (path, container,
//! pod, systemd unit), where its numbers come from, its pressure, weights
//! and limits, the kernel's per-device split with each device's effective
//! limit and the at-limit mark, and its member processes busiest first.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::devices::truncate;
use super::{Theme, ViewState, pane_block};
use crate::format;
use crate::model::cgroup::{CgDevice, CgroupRow, PsiLine, Source, Weight};
use crate::model::{Model, ProcRow};
use crate::present::cgroup::CgCol;
use crate::present::cgroup_text::limits_text;
use crate::present::process::ProcCol;

fn na() -> String {
    format::NA.to_string()
}

fn psi(line: Option<PsiLine>, interval_pct: Option<f64>) -> String {
    let Some(l) = line else { return na() };
    format!(
        "{} over the interval (avg10 {:.2}% avg60 {:.2}% avg300 {:.2}%)",
        format::pct(interval_pct),
        l.avg10,
        l.avg60,
        l.avg300
    )
}

fn weight(w: &Weight, r: &CgroupRow) -> String {
    let mut parts: Vec<String> = w.default.iter().map(|d| format!("default {d}")).collect();
    parts.extend(
        w.per_device
            .iter()
            .map(|(d, v)| format!("{} {v}", dev_label(r, d.to_string()))),
    );
    parts.join(", ")
}

/// A device of the row by its "MAJ:MIN", named where the row knows it.
fn dev_label(r: &CgroupRow, id: String) -> String {
    r.devices
        .iter()
        .find(|d| d.dev.to_string() == id)
        .map_or(id, |d| format::escape(&d.device))
}

fn facts(r: &CgroupRow, model: &Model, t: &Theme) -> Vec<Line<'static>> {
    let kv = |k: &str, v: String| Line::from(vec![Span::styled(format!("{k:<16}"), t.dim()), Span::raw(v)]);
    let mut out = vec![
        kv("path", format::escape(&r.path)),
        kv("kind", r.kind.label().to_string()),
    ];
    if let Some(s) = &r.systemd_path {
        out.push(kv("systemd path", format::escape(s)));
    }
    if let Some(id) = &r.container_id {
        let name = r
            .container_name
            .as_deref()
            .map_or(String::new(), |n| format!(" ({})", format::escape(n)));
        out.push(kv("container", format!("{}{name}", format::escape(id))));
    }
    if let Some(u) = &r.pod_uid {
        out.push(kv("pod uid", format::escape(u)));
    }
    let source = match r.source {
        Source::Kernel => "kernel per-cgroup counters (exact; whole disks only in the total)".to_string(),
        Source::Processes => format!(
            "member processes' own I/O (bytes only; {} of {} without rates this interval)",
            r.processes.without_rates, r.processes.count
        ),
    };
    out.push(kv("source", source));
    let total = match r.rates {
        Some(x) => format!(
            "read {} write {}  r/s {} w/s {}",
            format::rate(x.read_bps),
            format::rate(x.write_bps),
            x.read_iops.map_or_else(na, format::num),
            x.write_iops.map_or_else(na, format::num)
        ),
        None => na(),
    };
    out.push(kv("total", total));
    out.push(kv(
        "processes",
        format!(
            "{}: own I/O read {} write {}",
            r.processes.count,
            format::rate(r.processes.read_bps),
            format::rate(r.processes.write_bps)
        ),
    ));
    let (some, full) = match &r.pressure {
        Some(p) => (psi(p.some, p.some_pct), psi(p.full, p.full_pct)),
        None => ("n/a (no io.pressure for this cgroup)".to_string(), na()),
    };
    out.push(kv("pressure some", some));
    out.push(kv("pressure full", full));
    if let Some(w) = &r.weight {
        out.push(kv("io.weight", weight(w, r)));
    }
    if let Some(w) = &r.bfq_weight {
        out.push(kv("bfq weight", weight(w, r)));
    }
    for (d, us) in &r.latency_target_us {
        out.push(kv(
            "latency target",
            format!("{} {} ms", dev_label(r, d.to_string()), format::ms(*us as f64 / 1000.0)),
        ));
    }
    if let Some(cv) = &model.cgroups {
        for n in &cv.notes {
            out.push(Line::styled(format!("note: {}", format::escape(n)), t.dim()));
        }
    }
    out
}

fn device_line(d: &CgDevice, t: &Theme) -> Line<'static> {
    let opt_rate = |v: Option<f64>| v.map_or_else(na, format::rate);
    let opt_num = |v: Option<f64>| v.map_or_else(na, format::num);
    let limit = if d.effective_limits.is_empty() {
        "none".to_string()
    } else {
        limits_text(&d.effective_limits)
    };
    let own = if d.limits != d.effective_limits && !d.limits.is_empty() {
        format!(" (own {})", limits_text(&d.limits))
    } else {
        String::new()
    };
    let name = if d.in_total {
        format::escape(&d.device)
    } else {
        format!("{} *", format::escape(&d.device))
    };
    let share = d.limit_share().map_or(0.0, |s| s * 100.0);
    let (mark, style) = match d.at_limit {
        Some(true) => (format!("AT {} {share:.0}%", d.at_limits.join(",")), t.error()),
        Some(false) => (format!("{share:.0}%"), Style::new()),
        None if !d.effective_limits.is_empty() => (na(), t.dim()),
        None => (String::new(), Style::new()),
    };
    let spans = vec![
        Span::raw(format!(
            "{:<12} {:>10} {:>10} {:>7} {:>7}  ",
            truncate(&name, 12),
            opt_rate(d.rates.map(|x| x.read_bps)),
            opt_rate(d.rates.map(|x| x.write_bps)),
            opt_num(d.rates.and_then(|x| x.read_iops)),
            opt_num(d.rates.and_then(|x| x.write_iops)),
        )),
        Span::styled(format!("{mark:<14}"), style),
        Span::raw(format!(" {limit}{own}")),
    ];
    Line::from(spans)
}

fn process_line(p: &ProcRow) -> String {
    let rates = p.rates.as_deref().map_or_else(
        || format!("{:>10} {:>10}", na(), na()),
        |r| format!("{:>10} {:>10}", format::rate(r.read_bps), format::rate(r.write_bps)),
    );
    let note = if p.worker.is_some() {
        " (kernel worker: not summed)"
    } else {
        ""
    };
    format!("{:>7} {rates}  {}{note}", p.raw.key.pid, super::viewmodel::command(p))
}

/// The lines of the detail of `r`, to fit in `height` rows.
pub fn lines(r: &CgroupRow, model: &Model, t: &Theme, height: usize) -> Vec<Line<'static>> {
    let mut out = facts(r, model, t);
    out.push(Line::raw(""));
    out.push(Line::styled(
        format!(
            "{:<12} {:>10} {:>10} {:>7} {:>7}  {:<14} effective limit (* not in the total)",
            "device",
            CgCol::Read.def().text_head,
            CgCol::Write.def().text_head,
            CgCol::ReadIops.def().text_head,
            CgCol::WriteIops.def().text_head,
            "%LIMIT (3s)"
        ),
        t.title(),
    ));
    if r.devices.is_empty() {
        out.push(Line::styled("(no kernel counters for this cgroup)", t.dim()));
    }
    out.extend(r.devices.iter().map(|d| device_line(d, t)));
    out.push(Line::raw(""));
    let mut procs: Vec<&ProcRow> = model
        .procs
        .iter()
        .filter(|p| !p.exited && r.pids.contains(&p.raw.key.pid))
        .collect();
    let busy = |p: &ProcRow| {
        p.rates
            .as_deref()
            .map_or(f64::NEG_INFINITY, |r| r.read_bps + r.write_bps)
    };
    procs.sort_by(|a, b| busy(b).total_cmp(&busy(a)).then(a.raw.key.pid.cmp(&b.raw.key.pid)));
    out.push(Line::styled(
        format!(
            "{:>7} {:>10} {:>10}  processes ({})",
            ProcCol::Pid.head(false),
            ProcCol::DiskRead.head(false),
            ProcCol::DiskWrite.head(false),
            procs.len()
        ),
        t.title(),
    ));
    let room = height.saturating_sub(out.len());
    let cut = procs.len() > room;
    let take = if cut { room.saturating_sub(1) } else { procs.len() };
    out.extend(procs.iter().take(take).map(|p| Line::raw(process_line(p))));
    if cut {
        out.push(Line::styled(format!("({} more)", procs.len() - take), t.dim()));
    }
    out
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, path: &str) {
    let t = &view.theme;
    let row = model
        .cgroups
        .as_ref()
        .and_then(|c| c.rows.iter().find(|r| r.path == path));
    let name = row.map_or_else(|| format::escape(path), |r| format::escape(&r.name));
    let title = Line::from(vec![
        Span::styled(format!(" {name} "), t.title()),
        Span::styled("Esc back ", t.dim()),
    ]);
    let block = pane_block(title, true, t);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(r) = row else {
        frame.render_widget(
            Paragraph::new("this cgroup is gone (no processes and no I/O counters left)"),
            inner,
        );
        return;
    };
    frame.render_widget(Paragraph::new(lines(r, model, t, usize::from(inner.height))), inner);
}
