//! Header: host, kernel, uptime, interval; CPU shares; I/O pressure; dirty
//! memory; whether running as root and what is hidden; the disks' read and
//! write rates against what process rows account for; delay accounting.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::ViewState;
use super::theme::Severity;
use crate::format;
use crate::model::Model;

pub const HEIGHT: u16 = 4;

fn sev(v: f64, warn: f64, crit: f64) -> Severity {
    if v >= crit {
        Severity::Crit
    } else if v >= warn {
        Severity::Warn
    } else {
        Severity::Normal
    }
}

/// A playback speed as the header shows it: ×¼, ×½, ×1 ... ×512.
fn speed(s: f64) -> String {
    if s < 0.3 {
        "¼".to_string()
    } else if s < 0.9 {
        "½".to_string()
    } else {
        format!("{s:.0}")
    }
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState) {
    let t = &view.theme;
    let sep = || Span::styled(" │ ", t.dim());
    // Line 1: who, when, as whom. CLOCK_MONOTONIC is the time since boot
    // (without time suspended), so the sample stamp doubles as uptime.
    let mut l1 = vec![Span::styled("iolens ", t.title())];
    if let Some(r) = &view.replay {
        // Which recorded sample: its time, position and the playback speed.
        l1.push(Span::styled("replay ", t.accent()));
        l1.push(Span::styled(format::escape(&r.time), t.title()));
        l1.push(Span::raw(format!(" ({}/{}) ×{}", r.pos, r.total, speed(r.speed))));
        if view.paused {
            l1.push(Span::styled(" PAUSED", t.error()));
        }
        l1.push(Span::styled(" of ", t.dim()));
    }
    l1.extend([
        Span::raw(format::escape(&model.host.hostname)),
        Span::styled(" · kernel ", t.dim()),
        Span::raw(format::escape(&model.host.kernel)),
        Span::styled(" · up ", t.dim()),
        Span::raw(if model.mono_ns > 0 {
            format::duration(Some(model.mono_ns as f64 / 1e9))
        } else {
            format::NA.to_string()
        }),
        Span::styled(" · every ", t.dim()),
        Span::raw(format!("{:.2}s", view.interval.as_secs_f64())),
        // During a stall the stall text (below) says more than that.
        Span::styled(
            if view.stall.is_some() {
                String::new()
            } else {
                covered(model.interval_s, view.interval)
            },
            t.dim(),
        ),
        Span::styled(" · ", t.dim()),
        if model.host.is_root {
            Span::styled("root", t.ok())
        } else {
            Span::styled("not root", t.severity(Severity::Warn))
        },
    ]);
    if view.paused && view.replay.is_none() {
        l1.push(Span::styled(" PAUSED", t.error()));
    }
    if let Some(stall) = &view.stall {
        l1.push(Span::styled(format!(" {stall}"), t.error()));
    }
    if view.accumulated {
        l1.push(Span::styled(" TOTALS", t.title()));
    }
    // Line 2: CPU and the memory on its way to the disks.
    let mut l2 = vec![Span::styled("CPU ", t.title())];
    match model.cpu {
        Some(c) => {
            l2.push(Span::raw("iowait "));
            l2.push(Span::styled(
                format!("{:.1}%", c.iowait),
                t.severity(sev(c.iowait, 10.0, 30.0)).add_modifier(Modifier::BOLD),
            ));
            l2.push(Span::raw(format!(
                " user {:.1}% sys {:.1}% steal {:.1}%",
                c.user + c.nice,
                c.system,
                c.steal
            )));
        }
        None => l2.push(Span::raw(format::NA)),
    }
    l2.push(sep());
    match model.mem {
        Some(m) => {
            l2.push(Span::styled("Dirty ", t.title()));
            l2.push(Span::raw(format::decimal(m.dirty_bytes as f64)));
            l2.push(Span::styled(" Writeback ", t.title()));
            l2.push(Span::raw(format::decimal(m.writeback_bytes as f64)));
        }
        None => l2.push(Span::raw(format!("Dirty {0} Writeback {0}", format::NA))),
    }
    // Line 3: pressure, blocked tasks, what we cannot see, read errors.
    let mut l3 = Vec::new();
    match model.psi.and_then(|p| p.some) {
        Some(s) => {
            l3.push(Span::styled("PSI io ", t.title()));
            l3.push(Span::raw("some "));
            l3.push(Span::styled(
                format!("{:.2}", s.avg10),
                t.severity(sev(s.avg10, 10.0, 40.0)),
            ));
            l3.push(Span::raw(" full "));
            l3.push(match model.psi.and_then(|p| p.full) {
                Some(f) => Span::styled(format!("{:.2}", f.avg10), t.severity(sev(f.avg10, 5.0, 20.0))),
                None => Span::raw(format::NA),
            });
            l3.push(Span::styled(" avg10", t.dim()));
        }
        None => l3.push(Span::styled("PSI off", t.dim())),
    }
    if let Some(b) = model.cpu.and_then(|c| c.procs_blocked) {
        l3.push(sep());
        l3.push(Span::raw(format!("blocked {b}")));
    }
    if !model.host.is_root && model.denied > 0 {
        l3.push(sep());
        l3.push(Span::styled(
            format!("I/O of {} processes hidden: other users', needs root", model.denied),
            t.severity(Severity::Warn),
        ));
    }
    if model.hidden > 0 {
        l3.push(sep());
        l3.push(Span::styled(
            format!("{} processes not readable (hidepid?)", model.hidden),
            t.severity(Severity::Warn),
        ));
    }
    if let Some(why) = &model.trace.reason {
        l3.push(sep());
        l3.push(Span::styled(
            format!("~pattern estimated: no tracing ({})", format::escape(why)),
            t.dim(),
        ));
    }
    if let Some(e) = model.errors.first() {
        l3.push(sep());
        let more = if model.errors.len() > 1 {
            format!(" (+{} more)", model.errors.len() - 1)
        } else {
            String::new()
        };
        l3.push(Span::styled(
            format!("⚠ {}{more}", format::escape(e)),
            t.severity(Severity::Warn),
        ));
    }
    // Who did the I/O: how exact the process rows are.
    if model.exits.active {
        l3.push(sep());
        l3.push(Span::styled("exit records lost ", t.dim()));
        let lost = model.exits.overflows;
        l3.push(if lost > 0 {
            Span::styled(format!("{lost}×"), t.severity(Severity::Warn))
        } else {
            Span::raw("0")
        });
    } else if let Some(why) = model.exits.why_not.as_deref().filter(|_| model.host.is_root)
        && why != crate::model::EXITS_NOT_REQUESTED
    {
        l3.push(sep());
        l3.push(Span::styled(
            format!("exit records off: {}", format::escape(why)),
            t.severity(Severity::Warn),
        ));
    } else if !model.host.is_root {
        l3.push(sep());
        l3.push(Span::styled(
            "without root: ↳ = exited threads and reaped children; not attributed: \
             other users', orphans reaped by PID 1, children of SIGCHLD-ignoring parents",
            t.dim(),
        ));
    }
    let text = vec![
        Line::from(l1),
        Line::from(l2),
        Line::from(l3),
        Line::from(totals_line(model, view)),
    ];
    frame.render_widget(Paragraph::new(text), area);
}

/// Line 4: disk totals against the process rows (reads per interval,
/// writes over the last minute) and whether IO% can be known; what matters
/// most first, since a narrow terminal cuts the end.
fn totals_line(model: &Model, view: &ViewState) -> Vec<Span<'static>> {
    let t = &view.theme;
    let tot = &model.totals;
    let rate = |v: Option<f64>| v.map_or_else(|| format::NA.to_string(), format::rate);
    let mut l = vec![
        Span::styled("Disks ", t.title()),
        Span::raw(format!(
            "rd {} wr {}",
            rate(tot.device_read_bps),
            rate(tot.device_write_bps)
        )),
        Span::styled(" · processes rd ", t.dim()),
        Span::raw(format::rate(tot.process_read_bps)),
    ];
    if let Some(s) = tot.read_share {
        l.push(Span::raw(format!(" ({:.0}% of disk reads)", s * 100.0)));
    }
    l.push(Span::styled(" │ ", t.dim()));
    match model.delayacct {
        Some(false) if view.replay.is_some() => l.push(Span::styled(
            "IO% n/a: delay accounting was off",
            t.severity(Severity::Warn),
        )),
        Some(false) if model.host.is_root => l.push(Span::styled(
            "IO% n/a: delay accounting off (D turns it on)",
            t.severity(Severity::Warn),
        )),
        Some(false) => l.push(Span::styled(
            "IO% n/a: delay accounting off (root: sysctl kernel.task_delayacct=1)",
            t.severity(Severity::Warn),
        )),
        _ if view.delayacct_ours => l.push(Span::styled("delay accounting on (restored at exit)", t.dim())),
        _ => l.push(Span::styled("delay accounting on", t.dim())),
    }
    if tot.write_window_s > 0.0 {
        l.push(Span::styled(" │ ", t.dim()));
        l.push(Span::styled(format!("last {:.0}s: ", tot.write_window_s), t.dim()));
        l.push(Span::raw(format!("dirtied {}", format::decimal(tot.dirtied_bytes))));
        if tot.cancelled_bytes > 0.0 {
            l.push(Span::raw(format!(
                " (cancelled {})",
                format::decimal(tot.cancelled_bytes)
            )));
        }
        l.push(Span::raw(format!(
            ", disks wrote {}",
            tot.written_bytes
                .map_or_else(|| format::NA.to_string(), format::decimal)
        )));
    }
    l
}

/// What interval the rates on screen cover, when it is not the configured
/// one (more than 10 % off): the short first interval, a late sample, the
/// interval before a change with + or -.
fn covered(measured: Option<f64>, every: std::time::Duration) -> String {
    match measured {
        Some(m) if (m - every.as_secs_f64()).abs() > every.as_secs_f64() / 10.0 => format!(" (rates over {m:.2}s)"),
        _ => String::new(),
    }
}
