//! Colours and severity thresholds. With `NO_COLOR` / `--no-color` every style
//! is plain except bold / reversed, which carry meaning without colour.

use ratatui::style::{Color, Modifier, Style};

/// Where await and %util turn yellow (warn) and red (crit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SeverityThresholds {
    pub await_warn_ms: f64,
    pub await_crit_ms: f64,
    pub util_warn_pct: f64,
    pub util_crit_pct: f64,
}

impl Default for SeverityThresholds {
    fn default() -> Self {
        SeverityThresholds {
            await_warn_ms: 10.0,
            await_crit_ms: 50.0,
            util_warn_pct: 60.0,
            util_crit_pct: 90.0,
        }
    }
}

/// The colours a config file may set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Palette {
    pub accent: Color,
    pub ok: Color,
    pub warn: Color,
    pub crit: Color,
    pub dim: Color,
}

impl Default for Palette {
    fn default() -> Self {
        Palette {
            accent: Color::Cyan,
            ok: Color::Green,
            warn: Color::Yellow,
            crit: Color::Red,
            dim: Color::DarkGray,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Theme {
    pub color: bool,
    pub palette: Palette,
    pub thresholds: SeverityThresholds,
}

impl Default for Theme {
    fn default() -> Self {
        Theme {
            color: true,
            palette: Palette::default(),
            thresholds: SeverityThresholds::default(),
        }
    }
}

/// How bad a value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Normal,
    Warn,
    Crit,
}

impl Theme {
    #[cfg(any(test, feature = "test-support"))]
    pub fn plain() -> Self {
        Theme {
            color: false,
            ..Default::default()
        }
    }

    fn fg(&self, c: Color) -> Style {
        if self.color { Style::new().fg(c) } else { Style::new() }
    }

    pub fn accent(&self) -> Style {
        self.fg(self.palette.accent)
    }

    /// Titles, table headers and the border of the focused pane.
    pub fn title(&self) -> Style {
        self.accent().add_modifier(Modifier::BOLD)
    }

    pub fn dim(&self) -> Style {
        if self.color {
            Style::new().fg(self.palette.dim)
        } else {
            Style::new()
        }
    }

    pub fn ok(&self) -> Style {
        self.fg(self.palette.ok)
    }

    pub fn error(&self) -> Style {
        self.fg(self.palette.crit).add_modifier(Modifier::BOLD)
    }

    pub fn selected(&self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    pub fn severity(&self, s: Severity) -> Style {
        match s {
            Severity::Normal => Style::new(),
            Severity::Warn => self.fg(self.palette.warn),
            // Without colour a critical value is still bold.
            Severity::Crit => self.fg(self.palette.crit).add_modifier(Modifier::BOLD),
        }
    }

    pub fn await_severity(&self, ms: Option<f64>) -> Severity {
        level(ms, self.thresholds.await_warn_ms, self.thresholds.await_crit_ms)
    }

    pub fn util_severity(&self, pct: Option<f64>) -> Severity {
        level(pct, self.thresholds.util_warn_pct, self.thresholds.util_crit_pct)
    }
}

fn level(v: Option<f64>, warn: f64, crit: f64) -> Severity {
    match v {
        Some(v) if v >= crit => Severity::Crit,
        Some(v) if v >= warn => Severity::Warn,
        _ => Severity::Normal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn severity_levels_and_no_color() {
        let t = Theme::default();
        assert_eq!(t.await_severity(None), Severity::Normal);
        assert_eq!(t.await_severity(Some(9.99)), Severity::Normal);
        assert_eq!(t.await_severity(Some(10.0)), Severity::Warn);
        assert_eq!(t.await_severity(Some(50.0)), Severity::Crit);
        assert_eq!(t.util_severity(Some(95.0)), Severity::Crit);
        assert_eq!(t.severity(Severity::Warn).fg, Some(Color::Yellow));
        let p = Theme::plain();
        assert_eq!(p.severity(Severity::Warn), Style::new());
        assert_eq!(p.severity(Severity::Crit).fg, None);
        assert!(p.severity(Severity::Crit).add_modifier.contains(Modifier::BOLD));
    }
}
