//! The results pane's lines for the capacity probes: alignment, request-size
//! sweep, seek and rotation. Pure: reads a finished [`ProbeResult`].

use ratatui::style::{Modifier, Style};
use ratatui::text::Line;

use crate::format;
use crate::probe::ProbeResult;
use crate::probe::view::lat;

/// Summary lines of whichever capacity probes `r` holds (none: empty).
pub fn summary(r: &ProbeResult) -> Vec<Line<'static>> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let mut v = Vec::new();
    if let Some(a) = &r.alignment {
        v.push(Line::styled(
            format!("alignment of {} (sysfs)", format::escape(&a.device)),
            bold,
        ));
        if a.partitions.is_empty() {
            v.push(Line::raw("no partitions: starts at byte 0"));
        }
        for p in &a.partitions {
            v.push(Line::raw(format!(
                "{} at {} B: {}",
                format::escape(&p.name),
                p.alignment.start_bytes,
                p.alignment.verdict.text()
            )));
        }
        match (&a.reads, &a.reads_note) {
            (Some(s), _) => v.push(Line::raw(format!(
                "reads p50 {} aligned, {} at +512 B (evidence only)",
                lat(s.aligned.p50_ms),
                lat(s.shifted.p50_ms)
            ))),
            (None, Some(_)) => v.push(Line::raw("+512 B reads impossible (sector > 512 B)")),
            (None, None) => {}
        }
    }
    if let Some(s) = &r.size_sweep {
        v.push(Line::styled("request sizes (QD1 random reads)", bold));
        for p in &s.points {
            v.push(Line::raw(format!(
                "{:>8} {:>7} IOPS {:>10}  p50 {}",
                format::binary(p.bytes as f64),
                p.iops.map_or_else(|| format::NA.into(), |x| format!("{x:.0}")),
                p.mb_per_s.map_or_else(|| format::NA.into(), |x| format::rate(x * 1e6)),
                lat(p.latency.p50_ms)
            )));
        }
        v.push(Line::raw(crate::probe::size::plateau_text(s)));
    }
    if let Some(s) = &r.seek {
        let e = &s.estimate;
        let ms = |x: Option<f64>| x.map_or_else(|| format::NA.to_string(), |x| format!("{x:.2} ms"));
        v.push(Line::styled("seek and rotation", bold));
        v.push(Line::raw(match e.rotation.rpm {
            Some(rpm) => format!("{rpm:.0} RPM (revolution {})", ms(e.rotation.revolution_ms)),
            None => "no rotation found".into(),
        }));
        v.push(Line::raw(format!(
            "track-to-track {}  full stroke {}",
            ms(e.track_to_track_ms),
            ms(e.full_stroke_ms)
        )));
    }
    v
}
