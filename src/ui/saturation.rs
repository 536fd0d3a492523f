//! The device detail's saturation lines: which basis the device's
//! saturation is judged on ([`saturation_basis`]), and with a saved depth
//! probe the load of the last interval against that curve — queue depth
//! against its knee, IOPS against the IOPS at the knee, and the headroom
//! (an estimate: the probe's random reads are not this load). A sweep
//! that reported its IOPS as noisy says so.

use ratatui::text::{Line, Span};

use super::Theme;
use crate::format;
use crate::model::findings::saturation_basis;
use crate::model::saved::DepthCurve;
use crate::model::{DeviceRow, Model, exact_size};

fn kv<'a>(k: &str, v: String, t: &Theme) -> Line<'a> {
    Line::from(vec![Span::styled(format!("{k:<16}"), t.dim()), Span::raw(v)])
}

/// "3 d ago", "5 h ago", "12 min ago"; n/a for an unknown or future time.
fn ago(started_unix: f64, now_ns: u64) -> String {
    let s = now_ns as f64 / 1e9 - started_unix;
    if started_unix <= 0.0 || !s.is_finite() || s < 0.0 {
        return format::NA.into();
    }
    match s as u64 {
        s if s >= 86_400 => format!("{} d ago", s / 86_400),
        s if s >= 3600 => format!("{} h ago", s / 3600),
        s => format!("{} min ago", s / 60),
    }
}

/// The curve's lines and the last interval's load against it.
fn against_curve<'a>(d: &DeviceRow, c: &DepthCurve, now_ns: u64, t: &Theme) -> Vec<Line<'a>> {
    let bs =
        c.bs.filter(|b| *b > 0.0)
            .map_or(format::NA.into(), |b| exact_size(b as u64));
    let knee = c.knee.map_or(format::NA.into(), |k| k.to_string());
    let knee_iops = c.knee_iops();
    let mut out = vec![
        kv(
            "depth probe",
            format!("{bs} random reads, {}", ago(c.started_unix, now_ns)),
            t,
        ),
        kv(
            "  knee",
            format!(
                "QD {knee}: {} IOPS{}",
                knee_iops.map_or(format::NA.into(), format::num),
                if c.noisy { " (noisy)" } else { "" }
            ),
            t,
        ),
    ];
    let Some(r) = &d.rates else {
        out.push(kv("  now", format::NA.into(), t));
        return out;
    };
    let iops = r.read.ios_per_s + r.write.ios_per_s;
    out.push(kv(
        "  now",
        format!("QD {} of {knee}, {} IOPS", format::num(r.aqu_sz), format::num(iops)),
        t,
    ));
    let head = match knee_iops {
        None => format::NA.into(),
        Some(_) if iops <= 0.0 => "idle: all of the curve".into(),
        Some(k) if iops >= k => format!("none: past the knee ({:.0}% of its IOPS)", iops / k * 100.0),
        Some(k) => format!("≈{:.1}x the IOPS (estimate)", k / iops),
    };
    out.push(kv("  headroom", head, t));
    out
}

/// The saturation basis of `d`, then (with a saved depth probe of it)
/// the load against the curve.
pub fn lines<'a>(d: &DeviceRow, model: &Model, t: &Theme) -> Vec<Line<'a>> {
    let saved = &model.findings.saved;
    let p = saved.of_row(d);
    let mut out = vec![kv("saturation", saturation_basis(d.info.as_ref(), p).text(), t)];
    if let Some(e) = &saved.error {
        out.push(kv("saved probes", format!("n/a: {}", format::escape(e)), t));
    }
    if let Some(c) = p.and_then(|p| p.depth.as_ref()) {
        out.extend(against_curve(d, c, model.wall_ns, t));
    }
    out
}
