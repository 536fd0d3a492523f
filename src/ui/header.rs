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

/// A part of a header line: its forms, longest first (an empty last form:
/// the part may go), and its rank: the lowest shrinks first.
struct Part {
    rank: u8,
    forms: Vec<Vec<Span<'static>>>,
}

fn part(rank: u8, forms: Vec<Vec<Span<'static>>>) -> Part {
    Part { rank, forms }
}

fn width(spans: &[Span]) -> usize {
    spans.iter().map(|s| s.content.chars().count()).sum()
}

/// The line in `w` cells: the lowest-ranked parts take their shorter
/// forms (or go) until it fits, then what room is left goes back to the
/// highest-ranked ones; what still does not fit ends in "…".
fn fit(parts: Vec<Part>, w: usize) -> Line<'static> {
    let mut pick = vec![0usize; parts.len()];
    let total = |pick: &[usize]| -> usize { parts.iter().zip(pick).map(|(p, &i)| width(&p.forms[i])).sum() };
    let mut by_rank: Vec<usize> = (0..parts.len()).collect();
    by_rank.sort_by_key(|&i| parts[i].rank);
    while total(&pick) > w {
        let Some(&i) = by_rank.iter().find(|&&i| pick[i] + 1 < parts[i].forms.len()) else {
            break;
        };
        pick[i] += 1;
    }
    for &i in by_rank.iter().rev() {
        let spare = w.saturating_sub(total(&pick)) + width(&parts[i].forms[pick[i]]);
        if let Some(f) = (0..pick[i]).find(|&f| width(&parts[i].forms[f]) <= spare) {
            pick[i] = f;
        }
    }
    let spans: Vec<Span> = parts
        .into_iter()
        .zip(pick)
        .flat_map(|(mut p, i)| p.forms.swap_remove(i))
        .collect();
    super::clip(Line::from(spans), w)
}

pub fn render(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState) {
    let w = usize::from(area.width);
    let text = vec![
        fit(who(model, view), w),
        fit(cpu_line(model, view), w),
        fit(pressure_line(model, view), w),
        fit(totals_line(model, view), w),
    ];
    frame.render_widget(Paragraph::new(text), area);
}

/// Line 1: who, when, as whom. CLOCK_MONOTONIC is the time since boot
/// (without time suspended), so the sample stamp doubles as uptime; in
/// replay, which recorded sample: its time, position and the speed.
fn who(model: &Model, view: &ViewState) -> Vec<Part> {
    let t = &view.theme;
    let mut v = vec![part(9, vec![vec![Span::styled("iolens ", t.title())]])];
    if let Some(r) = &view.replay {
        let mut l = vec![
            Span::styled("replay ", t.accent()),
            Span::styled(format::escape(&r.time), t.title()),
            Span::raw(format!(" ({}/{}) ×{}", r.pos, r.total, speed(r.speed))),
        ];
        if view.paused {
            l.push(Span::styled(" PAUSED", t.error()));
        }
        v.push(part(9, vec![l]));
    }
    // In replay: "… of <host>", the recording's host.
    let host = format::escape(&model.host.hostname);
    let of = if view.replay.is_some() { " of " } else { "" };
    v.push(part(
        6,
        vec![
            vec![Span::styled(of, t.dim()), Span::raw(host.clone())],
            vec![
                Span::styled(of, t.dim()),
                Span::raw(super::devices::truncate(&host, 16)),
            ],
            vec![],
        ],
    ));
    v.push(part(
        1,
        vec![
            vec![
                Span::styled(" · kernel ", t.dim()),
                Span::raw(format::escape(&model.host.kernel)),
            ],
            vec![],
        ],
    ));
    let up = if model.mono_ns > 0 {
        format::duration(Some(model.mono_ns as f64 / 1e9))
    } else {
        format::NA.to_string()
    };
    v.push(part(
        2,
        vec![vec![Span::styled(" · up ", t.dim()), Span::raw(up)], vec![]],
    ));
    let every = format!("{:.2}s", view.interval.as_secs_f64());
    // During a stall the stall text (below) says more than the coverage.
    let cov = if view.stall.is_some() {
        String::new()
    } else {
        covered(model.interval_s, view.interval)
    };
    v.push(part(
        7,
        vec![
            vec![
                Span::styled(" · every ", t.dim()),
                Span::raw(every.clone()),
                Span::styled(cov, t.dim()),
            ],
            vec![Span::styled(" · every ", t.dim()), Span::raw(every.clone())],
            vec![Span::styled(" · ", t.dim()), Span::raw(every)],
        ],
    ));
    let root = if model.host.is_root {
        Span::styled("root", t.ok())
    } else {
        Span::styled("not root", t.severity(Severity::Warn))
    };
    v.push(part(8, vec![vec![Span::styled(" · ", t.dim()), root]]));
    let mut flags = Vec::new();
    if view.paused && view.replay.is_none() {
        flags.push(Span::styled(" PAUSED", t.error()));
    }
    if let Some(stall) = &view.stall {
        flags.push(Span::styled(format!(" {stall}"), t.error()));
    }
    if view.accumulated {
        flags.push(Span::styled(" TOTALS", t.title()));
    }
    v.push(part(9, vec![flags]));
    // The top finding (or "no findings"): it outranks all but the flags.
    v.push(part(8, super::findings::top_spans(model, t)));
    v
}

/// Line 2: CPU and the memory on its way to the disks.
fn cpu_line(model: &Model, view: &ViewState) -> Vec<Part> {
    let t = &view.theme;
    let cpu = match model.cpu {
        Some(c) => {
            let iowait = Span::styled(
                format!("{:.1}%", c.iowait),
                t.severity(sev(c.iowait, 10.0, 30.0)).add_modifier(Modifier::BOLD),
            );
            let (user, sys, steal) = (c.user + c.nice, c.system, c.steal);
            vec![
                vec![
                    Span::styled("CPU ", t.title()),
                    Span::raw("iowait "),
                    iowait.clone(),
                    Span::raw(format!(" user {user:.1}% sys {sys:.1}% steal {steal:.1}%")),
                ],
                vec![
                    Span::styled("CPU ", t.title()),
                    Span::raw("iowait "),
                    iowait.clone(),
                    Span::raw(format!(" us {user:.1}% sy {sys:.1}% st {steal:.1}%")),
                ],
                vec![Span::styled("CPU ", t.title()), Span::raw("iowait "), iowait],
            ]
        }
        None => vec![vec![Span::styled("CPU ", t.title()), Span::raw(format::NA)]],
    };
    let (dirty, wb) = model.mem.map_or((format::NA.to_string(), format::NA.to_string()), |m| {
        (
            format::decimal(m.dirty_bytes as f64),
            format::decimal(m.writeback_bytes as f64),
        )
    });
    let sep = Span::styled(" │ ", t.dim());
    vec![
        part(9, cpu),
        part(
            8,
            vec![
                vec![
                    sep.clone(),
                    Span::styled("Dirty ", t.title()),
                    Span::raw(dirty.clone()),
                    Span::styled(" Writeback ", t.title()),
                    Span::raw(wb.clone()),
                ],
                vec![
                    sep,
                    Span::styled("Dirty ", t.title()),
                    Span::raw(dirty),
                    Span::styled(" WB ", t.title()),
                    Span::raw(wb),
                ],
            ],
        ),
    ]
}

/// Line 3: pressure, blocked tasks, what we cannot see, read errors, how
/// exact the process rows are.
fn pressure_line(model: &Model, view: &ViewState) -> Vec<Part> {
    let t = &view.theme;
    let sep = || Span::styled(" │ ", t.dim());
    let mut psi = Vec::new();
    match model.psi.and_then(|p| p.some) {
        Some(s) => {
            psi.push(Span::styled("PSI io ", t.title()));
            psi.push(Span::raw("some "));
            psi.push(Span::styled(
                format!("{:.2}", s.avg10),
                t.severity(sev(s.avg10, 10.0, 40.0)),
            ));
            psi.push(Span::raw(" full "));
            psi.push(match model.psi.and_then(|p| p.full) {
                Some(f) => Span::styled(format!("{:.2}", f.avg10), t.severity(sev(f.avg10, 5.0, 20.0))),
                None => Span::raw(format::NA),
            });
            psi.push(Span::styled(" avg10", t.dim()));
        }
        None => psi.push(Span::styled("PSI off", t.dim())),
    }
    let mut v = vec![part(9, vec![psi])];
    let mut note = |rank: u8, forms: Vec<Span<'static>>| {
        let mut full = vec![sep()];
        full.extend(forms);
        v.push(part(rank, vec![full]));
    };
    if let Some(b) = model.cpu.and_then(|c| c.procs_blocked) {
        note(8, vec![Span::raw(format!("blocked {b}"))]);
    }
    if !model.host.is_root && model.denied > 0 {
        note(
            7,
            vec![Span::styled(
                format!("I/O of {} processes hidden: other users', needs root", model.denied),
                t.severity(Severity::Warn),
            )],
        );
    }
    if model.hidden > 0 {
        note(
            7,
            vec![Span::styled(
                format!("{} processes not readable (hidepid?)", model.hidden),
                t.severity(Severity::Warn),
            )],
        );
    }
    if let Some(why) = &model.trace.reason {
        note(
            6,
            vec![Span::styled(
                format!("~pattern estimated: no tracing ({})", format::escape(why)),
                t.dim(),
            )],
        );
    }
    if let Some(e) = model.errors.first() {
        let more = if model.errors.len() > 1 {
            format!(" (+{} more)", model.errors.len() - 1)
        } else {
            String::new()
        };
        note(
            6,
            vec![Span::styled(
                format!("⚠ {}{more}", format::escape(e)),
                t.severity(Severity::Warn),
            )],
        );
    }
    if let Some(spans) = exits_note(model, t) {
        note(5, spans);
    }
    // What the tracer costs: the first to go when the line is short.
    if let Some(cost) = model.trace.cost.and_then(|c| c.summary()) {
        let full = vec![sep(), Span::styled(format!("tracer {cost}"), t.dim())];
        v.push(part(1, vec![full, Vec::new()]));
    }
    v
}

/// Who did the I/O: how exact the process rows are.
fn exits_note(model: &Model, t: &super::Theme) -> Option<Vec<Span<'static>>> {
    if model.exits.active {
        let lost = model.exits.overflows;
        Some(vec![
            Span::styled("exit records lost ", t.dim()),
            if lost > 0 {
                Span::styled(format!("{lost}×"), t.severity(Severity::Warn))
            } else {
                Span::raw("0")
            },
        ])
    } else if let Some(why) = model.exits.why_not.as_deref().filter(|_| model.host.is_root)
        && why != crate::model::EXITS_NOT_REQUESTED
    {
        Some(vec![Span::styled(
            format!("exit records off: {}", format::escape(why)),
            t.severity(Severity::Warn),
        )])
    } else if !model.host.is_root {
        Some(vec![Span::styled(
            "without root: ↳ = exited threads and reaped children; not attributed: \
             other users', orphans reaped by PID 1, children of SIGCHLD-ignoring parents",
            t.dim(),
        )])
    } else {
        None
    }
}

/// Line 4: disk totals against the process rows (reads per interval,
/// writes over the last minute) and whether IO% can be known; at 80
/// columns the labels shorten and the delay accounting note goes first.
fn totals_line(model: &Model, view: &ViewState) -> Vec<Part> {
    let t = &view.theme;
    let tot = &model.totals;
    let rate = |v: Option<f64>| v.map_or_else(|| format::NA.to_string(), format::rate);
    let mut v = vec![part(
        9,
        vec![vec![
            Span::styled("Disks ", t.title()),
            Span::raw(format!(
                "rd {} wr {}",
                rate(tot.device_read_bps),
                rate(tot.device_write_bps)
            )),
        ]],
    )];
    let prd = format::rate(tot.process_read_bps);
    let share = |long: bool| {
        tot.read_share.map_or(String::new(), |s| {
            if long {
                format!(" ({:.0}% of disk reads)", s * 100.0)
            } else {
                format!(" ({:.0}%)", s * 100.0)
            }
        })
    };
    v.push(part(
        7,
        vec![
            vec![
                Span::styled(" · processes rd ", t.dim()),
                Span::raw(format!("{prd}{}", share(true))),
            ],
            vec![
                Span::styled(" · procs rd ", t.dim()),
                Span::raw(format!("{prd}{}", share(false))),
            ],
        ],
    ));
    let sep = || Span::styled(" │ ", t.dim());
    v.push(delayacct_part(model, view));
    if tot.write_window_s > 0.0 {
        let dirtied = format::decimal(tot.dirtied_bytes);
        let cancelled = (tot.cancelled_bytes > 0.0).then(|| format::decimal(tot.cancelled_bytes));
        let wrote = tot
            .written_bytes
            .map_or_else(|| format::NA.to_string(), format::decimal);
        let secs = format!("{:.0}s", tot.write_window_s);
        let mut long = format!("dirtied {dirtied}");
        if let Some(c) = &cancelled {
            long.push_str(&format!(" (cancelled {c})"));
        }
        long.push_str(&format!(", disks wrote {wrote}"));
        let mut short = format!("dirtied {dirtied}");
        if let Some(c) = &cancelled {
            short.push_str(&format!(" (cancelled {c})"));
        }
        short.push_str(&format!(", wrote {wrote}"));
        v.push(part(
            8,
            vec![
                vec![sep(), Span::styled(format!("last {secs}: "), t.dim()), Span::raw(long)],
                vec![sep(), Span::styled(format!("{secs}: "), t.dim()), Span::raw(short)],
                vec![
                    sep(),
                    Span::styled(format!("{secs}: "), t.dim()),
                    Span::raw(format!("dirtied {dirtied}, wrote {wrote}")),
                ],
                vec![],
            ],
        ));
    }
    v
}

/// Whether IO% can be known, long and short: "IO% n/a" (it says why a
/// column is empty) and "on (restored at exit)" (iolens changed a setting
/// of the machine) are kept longest, a plain "on" goes first.
fn delayacct_part(model: &Model, view: &ViewState) -> Part {
    let t = &view.theme;
    let warn = t.severity(Severity::Warn);
    let acct: Vec<(&str, ratatui::style::Style)> = match model.delayacct {
        Some(false) if view.replay.is_some() => vec![("IO% n/a: delay accounting was off", warn), ("IO% n/a", warn)],
        Some(false) if model.host.is_root => vec![
            ("IO% n/a: delay accounting off (D turns it on)", warn),
            ("IO% n/a (D)", warn),
        ],
        Some(false) => vec![
            (
                "IO% n/a: delay accounting off (root: sysctl kernel.task_delayacct=1)",
                warn,
            ),
            ("IO% n/a: delayacct off", warn),
        ],
        _ if view.delayacct_ours => vec![
            ("delay accounting on (restored at exit)", t.dim()),
            ("delayacct on", t.dim()),
        ],
        _ => vec![("delay accounting on", t.dim()), ("delayacct on", t.dim())],
    };
    let mut forms: Vec<Vec<Span>> = acct
        .into_iter()
        .map(|(s, st)| vec![Span::styled(" │ ", t.dim()), Span::styled(s, st)])
        .collect();
    forms.push(vec![]);
    let says_more = model.delayacct == Some(false) || view.delayacct_ours;
    part(if says_more { 9 } else { 5 }, forms)
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
