//! Renders the dashboard of the test model (the snapshot tests' fixture:
//! the `root-6.8` tree advanced by hand-chosen counters) with ratatui's
//! `TestBackend` and writes each screen as an SVG image into `assets/`,
//! so that a reader on a code host sees the dashboard, and as plain text
//! next to it (`screenshot-*.txt`, what `tmux capture-pane -p` would show):
//!
//! ```sh
//! cargo run --example screenshots   # writes assets/screenshot-*.{svg,txt}
//! ```
//!
//! Cells become `<text>` runs with their colours and bold; backgrounds
//! become rectangles. The fonts are the reader's monospace font.

#[path = "../tests/common/mod.rs"]
mod common;

use std::fmt::Write as _;

use iolens::model::Model;
use iolens::ui::{self, Pane, Popup, ProbeMenu, ViewState};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

const CELL_W: f64 = 8.4;
const CELL_H: f64 = 17.0;
const FG: &str = "#d0d0d0";
const BG: &str = "#1c1c1c";

fn hex(c: Color, default: &str) -> String {
    let s = match c {
        Color::Reset => return default.to_string(),
        Color::Black => "#000000",
        Color::Red => "#cd3131",
        Color::Green => "#0dbc79",
        Color::Yellow => "#e5e510",
        Color::Blue => "#2472c8",
        Color::Magenta => "#bc3fbc",
        Color::Cyan => "#11a8cd",
        Color::Gray => "#b0b0b0",
        Color::DarkGray => "#767676",
        Color::LightRed => "#f14c4c",
        Color::LightGreen => "#23d18b",
        Color::LightYellow => "#f5f543",
        Color::LightBlue => "#3b8eea",
        Color::LightMagenta => "#d670d6",
        Color::LightCyan => "#29b8db",
        Color::White => "#ffffff",
        Color::Rgb(r, g, b) => return format!("#{r:02x}{g:02x}{b:02x}"),
        Color::Indexed(i) => return format!("#{0:02x}{0:02x}{0:02x}", i),
    };
    s.to_string()
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The buffer as an SVG: one rectangle per run of a background colour,
/// one `<text>` per run of the same style.
fn svg(buf: &Buffer) -> String {
    let (w, h) = (buf.area.width, buf.area.height);
    let mut out = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" \
         font-family=\"DejaVu Sans Mono, Menlo, Consolas, monospace\" font-size=\"14\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"{BG}\"/>\n",
        f64::from(w) * CELL_W,
        f64::from(h) * CELL_H
    );
    for y in 0..h {
        let mut x = 0;
        while x < w {
            let c = &buf[(x, y)];
            let (fg, bg, bold) = (hex(c.fg, FG), hex(c.bg, BG), c.modifier.contains(Modifier::BOLD));
            let rev = c.modifier.contains(Modifier::REVERSED);
            let (fg, bg) = if rev { (bg, fg) } else { (fg, bg) };
            let start = x;
            let mut text = String::new();
            while x < w {
                let d = &buf[(x, y)];
                let same = hex(d.fg, FG) == hex(c.fg, FG) && hex(d.bg, BG) == hex(c.bg, BG) && d.modifier == c.modifier;
                if !same {
                    break;
                }
                text.push_str(d.symbol());
                x += 1;
            }
            let (px, py) = (f64::from(start) * CELL_W, f64::from(y) * CELL_H);
            let len = f64::from(x - start) * CELL_W;
            if bg != BG {
                let _ = writeln!(
                    out,
                    "<rect x=\"{px:.1}\" y=\"{py:.1}\" width=\"{len:.1}\" height=\"{CELL_H}\" fill=\"{bg}\"/>"
                );
            }
            if !text.trim().is_empty() {
                let weight = if bold { " font-weight=\"bold\"" } else { "" };
                let _ = writeln!(
                    out,
                    "<text x=\"{px:.1}\" y=\"{:.1}\" fill=\"{fg}\"{weight} textLength=\"{len:.1}\" \
                     lengthAdjust=\"spacingAndGlyphs\" xml:space=\"preserve\">{}</text>",
                    py + CELL_H * 0.78,
                    esc(&text)
                );
            }
        }
    }
    out.push_str("</svg>\n");
    out
}

/// The buffer as text: one line per row, trailing blanks cut.
fn text(b: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..b.area.height {
        let mut line = String::new();
        for x in 0..b.area.width {
            line.push_str(b[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Draw `view` of `model` at `w`x`h`; write `name`.svg and `name`.txt.
fn shot(name: &str, model: &Model, view: &ViewState, w: u16, h: u16) {
    let mut t = match Terminal::new(TestBackend::new(w, h)) {
        Ok(t) => t,
        Err(e) => panic!("a test terminal: {e}"),
    };
    if let Err(e) = t.draw(|f| ui::render(f, model, view)) {
        panic!("drawing {name}: {e}");
    }
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/assets/");
    let b = t.backend().buffer();
    for (ext, body) in [("svg", svg(b)), ("txt", text(b))] {
        let path = format!("{dir}{name}.{ext}");
        if let Err(e) = std::fs::write(&path, body) {
            panic!("writing {path}: {e}");
        }
        println!("wrote {path}");
    }
}

fn main() {
    use iolens::probe::example::result;
    use iolens::probe::{ProbeMsg, Status};
    let m = common::model();
    let v = ViewState::default();
    shot("screenshot-dashboard", &m, &v, 120, 40);
    shot("screenshot-dashboard-80x24", &m, &v, 80, 24);
    let detail = ViewState {
        popup: Popup::Detail("sda".into()),
        focus: Pane::Devices,
        ..ViewState::default()
    };
    shot("screenshot-detail", &m, &detail, 120, 40);
    let dd = m.procs.iter().find(|p| &*p.raw.comm == "dd").map(|p| p.raw.key);
    if let Some(k) = dd {
        // Its open files as the fixture's last sample has them.
        let fds = m
            .last_sample()
            .and_then(|s| s.fds.procs.iter().find(|f| f.key == k))
            .map(|f| f.fds.clone())
            .unwrap_or_default();
        let process = ViewState {
            popup: Popup::Process(k),
            focus: Pane::Processes,
            proc_info: Some(iolens::model::ProcInfo {
                key: k,
                cwd: Some("/root".into()),
                cgroup: Some("/user.slice/user-0.slice/session-1.scope".into()),
                fds,
                error: None,
            }),
            ..ViewState::default()
        };
        shot("screenshot-process", &m, &process, 120, 40);
    }
    let help = ViewState {
        popup: Popup::Help,
        ..ViewState::default()
    };
    shot("screenshot-help", &m, &help, 120, 40);
    let menu = ViewState {
        popup: Popup::ProbeMenu(ProbeMenu::new("sda".into())),
        focus: Pane::Devices,
        ..ViewState::default()
    };
    shot("screenshot-probe-menu", &m, &menu, 120, 40);
    let mut probe = ViewState {
        focus: Pane::Results,
        ..ViewState::default()
    };
    probe
        .probe
        .start("/dev/sda".into(), "random read + zone sweep, quick".into());
    probe
        .probe
        .apply(ProbeMsg::Finished(Box::new(result(Status::Completed))));
    shot("screenshot-probe", &m, &probe, 120, 40);
}
