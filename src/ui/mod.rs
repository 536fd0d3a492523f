//! The dashboard's views. Rendering is pure: [`render`] draws a [`Model`]
//! (the numbers) and a [`ViewState`] (focus, selection, sort, filter, popups)
//! into a frame and does no I/O. Each pane has its own module with a
//! `render(frame, area, &Model, &ViewState)` function.

pub mod capacity;
pub mod cgroup_detail;
pub mod cgroups;
pub mod chart;
mod columns;
pub mod depth;
pub mod detail;
pub mod devices;
pub mod files;
pub mod findings;
pub mod header;
pub mod help;
pub mod keymap;
pub mod latency;
pub mod menu;
pub mod procdetail;
pub mod processes;
pub mod proctree;
pub mod progress;
pub mod requests;
pub mod results;
pub mod saturation;
pub mod status;
pub use crate::present::theme;
pub mod viewmodel;

use std::collections::BTreeSet;
use std::time::Duration;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, BorderType, Borders, Paragraph, Wrap};

use crate::model::{Model, ProcKey};
use crate::probe::{Depth, ProbeView, Tests};
pub use columns::{DevCol, ProcCol};
pub use devices::clip;
pub use procdetail::Sig;
pub use theme::Theme;
use viewmodel::ViewModel;

/// Smallest terminal the dashboard lays out in; below this a message says so.
pub const MIN_WIDTH: u16 = 50;
pub const MIN_HEIGHT: u16 = 12;

/// A pane that can take the focus, in [`ViewState::panes`] and drawn by
/// [`render_panes`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Devices,
    /// Tracked transfers (shown while there are any).
    Progress,
    /// Probe progress and results (shown once a probe was started).
    Results,
    /// Per-cgroup I/O (shown while toggled on).
    Cgroups,
    /// The live request log (shown after `L`).
    Requests,
    Processes,
}

/// What is drawn over the panes.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Popup {
    #[default]
    None,
    Help,
    /// Device detail of the named device.
    Detail(String),
    /// A cgroup's processes and devices, by its path.
    Cgroup(String),
    Confirm(Confirm),
    /// The probe menu for a device.
    ProbeMenu(ProbeMenu),
    /// "Turn delay accounting on?" (root).
    DelayAcct,
    /// Process detail (Enter in the processes pane).
    Process(ProcKey),
    /// The findings (`w`), the selected one by its index.
    Findings(usize),
    /// The files (`I`), the selected one by its index.
    Files(usize),
}

/// The choices of the probe menu, before the probe starts.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeMenu {
    /// Device name (the target is `/dev/<device>`).
    pub device: String,
    pub tests: Tests,
    pub depth: Depth,
    /// Run in the idle I/O class.
    pub idle: bool,
    /// Drop the global page cache first (root only, confirmed).
    pub drop_cache: bool,
    /// The "affects the whole machine" question is open.
    pub confirm_drop: bool,
    /// Where the sync-write probe would write its own temporary file: the
    /// device's first mount point (`None`: not mounted, no sync probe).
    pub sync_dir: Option<String>,
}

impl ProbeMenu {
    pub fn new(device: String) -> Self {
        ProbeMenu {
            device,
            tests: Tests::Random,
            depth: Depth::Quick,
            idle: false,
            drop_cache: false,
            confirm_drop: false,
            sync_dir: None,
        }
    }
}

/// An action on a process waiting for a yes.
#[derive(Debug, Clone, PartialEq)]
pub struct Confirm {
    pub action: ConfirmAction,
    pub key: ProcKey,
    /// Escaped command name, for the question.
    pub comm: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfirmAction {
    /// SIGTERM.
    Kill,
    /// ioprio_set: idle, or best-effort with the chosen level.
    Ionice,
    /// Another signal, from the process detail.
    Signal(Sig),
}

/// The request log pane: shown or not, frozen, filtered.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LogView {
    /// The pane is shown (`L`).
    pub shown: bool,
    /// The log as it was when frozen (`f`); `None` while it follows.
    pub frozen: Option<Vec<crate::model::trace::requests::Request>>,
    /// Command, pid or device text (see [`requests::matches`]).
    pub filter: String,
}

/// `iolens replay` on the dashboard: which recorded sample is shown.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReplayView {
    /// The sample's wall-clock time as shown ("2026-11-23 03:10:20").
    pub time: String,
    /// 1-based position of the sample and the number of samples.
    pub pos: usize,
    pub total: usize,
    /// Playback speed (recorded time per real time).
    pub speed: f64,
    /// The "jump to" time being typed (`b`).
    pub prompt: Option<String>,
}

/// The outcome of the last action, shown in the status line.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusMsg {
    pub text: String,
    pub error: bool,
}

/// Everything about the screen that is not data: the renderer reads it, the
/// key handler in `app` changes it.
#[derive(Debug, Clone)]
pub struct ViewState {
    pub focus: Pane,
    /// Selected device, by name.
    pub dev_sel: Option<String>,
    /// The process under the cursor. The cursor keeps its row while rows
    /// re-sort (as in htop); with `follow` it moves with this process.
    pub proc_sel: Option<ProcKey>,
    /// Follow mode (`F`): the cursor stays on `proc_sel` as rows re-sort.
    pub follow: bool,
    /// Selected transfer in the progress pane, by its process.
    pub xfer_sel: Option<ProcKey>,
    pub sort: ProcCol,
    /// Sort ascending instead of the column's natural order.
    pub reverse: bool,
    pub only_active: bool,
    pub filter: String,
    /// Typing into the filter.
    pub editing_filter: bool,
    /// Totals since iolens started instead of rates.
    pub accumulated: bool,
    pub hide_idle: bool,
    pub paused: bool,
    /// "no sample for N s (...)" while the sampler is late (the watchdog).
    pub stall: Option<String>,
    /// iolens turned delay accounting on (and restores it at exit).
    pub delayacct_ours: bool,
    /// Disks whose partitions are shown (folded away by default).
    pub unfolded: BTreeSet<String>,
    /// The device rows' order at the last change (names): the next order
    /// starts from it, so rows move only for a clear difference.
    pub dev_order: Vec<String>,
    pub popup: Popup,
    pub status: Option<StatusMsg>,
    pub interval: Duration,
    pub theme: Theme,
    /// Columns the user wants (config); narrow terminals drop some of these.
    pub dev_cols: Vec<DevCol>,
    pub proc_cols: Vec<ProcCol>,
    /// The results pane: the running or last probe and this session's results.
    pub probe: ProbeView,
    /// j/k/g/G move (config `vim_keys`); SIGTERM is then on K and F9.
    pub vim_keys: bool,
    /// The cgroups pane is shown (the sampler reads the cgroup tree only then).
    pub show_cgroups: bool,
    /// Selected cgroup, by path.
    pub cg_sel: Option<String>,
    pub cg_sort: cgroups::CgCol,
    /// Sort the cgroups against the column's natural order.
    pub cg_reverse: bool,
    /// The request log pane.
    pub log: LogView,
    /// The processes pane shows children under their parents (`v`).
    pub tree: bool,
    /// First line of the help shown (it scrolls when it does not fit).
    pub help_offset: u16,
    /// The device detail's latency histograms moved this many rows down
    /// (up when negative) from the rows around the p50 (↑↓ there).
    pub lat_scroll: i16,
    /// The results pane is open (`R` closes and reopens it; a new probe
    /// opens it).
    pub show_results: bool,
    /// The transfers pane is open while there are transfers (`T`).
    pub show_transfers: bool,
    /// The focused pane fills the screen (`z`).
    pub zoom: bool,
    /// The results pane's scroll position and the result it shows.
    pub results: results::Scroll,
    /// What the process detail shows besides the process row (read when
    /// it opens and after every sample while it is open).
    pub proc_info: Option<crate::model::ProcInfo>,
    /// Replaying a recording (`iolens replay`): live actions are off.
    pub replay: Option<ReplayView>,
}

impl Default for ViewState {
    fn default() -> Self {
        ViewState {
            focus: Pane::Processes,
            dev_sel: None,
            proc_sel: None,
            follow: false,
            xfer_sel: None,
            sort: ProcCol::DiskRead,
            reverse: false,
            only_active: false,
            filter: String::new(),
            editing_filter: false,
            accumulated: false,
            hide_idle: false,
            paused: false,
            stall: None,
            delayacct_ours: false,
            unfolded: BTreeSet::new(),
            dev_order: Vec::new(),
            popup: Popup::None,
            status: None,
            interval: Duration::from_secs(1),
            theme: Theme::default(),
            dev_cols: DevCol::ALL.to_vec(),
            proc_cols: ProcCol::ALL.to_vec(),
            probe: ProbeView::default(),
            vim_keys: false,
            show_cgroups: false,
            cg_sel: None,
            cg_sort: cgroups::CgCol::Read,
            cg_reverse: false,
            log: LogView::default(),
            tree: false,
            help_offset: 0,
            lat_scroll: 0,
            show_results: true,
            show_transfers: true,
            zoom: false,
            results: results::Scroll::default(),
            proc_info: None,
            replay: None,
        }
    }
}

impl ViewState {
    /// Panes in focus order: transfers while there are any (unless closed
    /// with `T`), results once a probe was started (unless closed with `R`),
    /// cgroups and the request log while toggled on.
    pub fn panes(&self, model: &Model) -> Vec<Pane> {
        let mut v = vec![Pane::Devices];
        if self.show_transfers && progress::row_count(model) > 0 {
            v.push(Pane::Progress);
        }
        if self.show_results && self.has_results() {
            v.push(Pane::Results);
        }
        if self.show_cgroups {
            v.push(Pane::Cgroups);
        }
        if self.log.shown {
            v.push(Pane::Requests);
        }
        v.push(Pane::Processes);
        v
    }

    /// The filter the focused pane uses: the request log's there, else
    /// the processes'.
    pub fn active_filter(&self) -> &str {
        if self.focus == Pane::Requests {
            &self.log.filter
        } else {
            &self.filter
        }
    }

    /// A probe was started in this session (its pane stays from then on).
    pub fn has_results(&self) -> bool {
        !matches!(self.probe.state, crate::probe::view::RunState::Idle) || !self.probe.past.is_empty()
    }
}

/// Draw the whole screen, computing the view-model first.
#[cfg(any(test, feature = "test-support"))]
pub fn render(frame: &mut Frame, model: &Model, view: &ViewState) {
    render_view(frame, model, view, &ViewModel::new(model, view));
}

/// Draw the whole screen from the view-model computed for `model` and
/// `view` (the dashboard keeps it current; panes only read it).
pub fn render_view(frame: &mut Frame, model: &Model, view: &ViewState, vm: &ViewModel) {
    let area = frame.area();
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        render_too_small(frame, area);
        return;
    }
    let [head, body, status_area] = Layout::vertical([
        Constraint::Length(header::HEIGHT),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area);
    header::render(frame, head, model, view);
    match &view.popup {
        Popup::Detail(name) => detail::render(frame, body, model, view, name),
        Popup::Cgroup(path) => cgroup_detail::render(frame, body, model, view, path),
        Popup::Process(k) => procdetail::render(frame, body, model, view, *k),
        Popup::Findings(i) => findings::render(frame, body, model, view, *i),
        Popup::Files(i) => files::render(frame, body, model, view, *i),
        _ => render_panes(frame, body, model, view, vm),
    }
    status::render(frame, status_area, model, view);
    match &view.popup {
        Popup::Help => help::render(frame, body, view),
        Popup::Confirm(c) => status::render_confirm(frame, body, view, c),
        Popup::DelayAcct => status::render_delayacct(frame, body, view),
        Popup::ProbeMenu(m) => menu::render(frame, body, view, m, model.host.is_root),
        Popup::None
        | Popup::Detail(_)
        | Popup::Cgroup(_)
        | Popup::Process(_)
        | Popup::Findings(_)
        | Popup::Files(_) => {}
    }
}

/// Where each pane is drawn on a `screen`-sized terminal (empty when the
/// terminal is too small or the device detail covers the panes): the
/// mouse is hit-tested against the same layout the panes are drawn in.
pub fn pane_areas(screen: Rect, model: &Model, view: &ViewState, vm: &ViewModel) -> Vec<(Pane, Rect)> {
    if screen.width < MIN_WIDTH
        || screen.height < MIN_HEIGHT
        || matches!(view.popup, Popup::Detail(_) | Popup::Cgroup(_) | Popup::Process(_))
    {
        return Vec::new();
    }
    let [_, body, _] = Layout::vertical([
        Constraint::Length(header::HEIGHT),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(screen);
    body_areas(body, model, view, vm)
}

/// The panes under the header, top to bottom: devices sized to their rows
/// (at most 45% of the height, less when more panes are shown), transfers
/// sized to their rows (at most 25%), probe results (up to 26 rows, at most
/// 55%), cgroups sized to their rows (at most 30%), and processes take the
/// rest. Maximised (`z`): the focused pane alone.
fn body_areas(area: Rect, model: &Model, view: &ViewState, vm: &ViewModel) -> Vec<(Pane, Rect)> {
    let mut panes = view.panes(model);
    if view.zoom && panes.contains(&view.focus) {
        panes = vec![view.focus];
    }
    let pct = |p: u32| (u32::from(area.height) * p / 100) as u16;
    let rows = |n: usize| u16::try_from(n).unwrap_or(u16::MAX).saturating_add(3);
    let extra = panes.len() > 2;
    let dev_h = rows(vm.devices.len()).min(pct(if extra { 30 } else { 45 })).max(4);
    let mut constraints = Vec::with_capacity(panes.len());
    for p in &panes {
        constraints.push(match p {
            _ if panes.len() == 1 => Constraint::Fill(1),
            Pane::Devices => Constraint::Length(dev_h),
            Pane::Progress => Constraint::Length(rows(progress::row_count(model)).min(pct(25)).max(4)),
            Pane::Results => Constraint::Length(26.min(pct(55)).max(5)),
            Pane::Cgroups => Constraint::Length(cgroups::height(model, vm).min(pct(30)).max(5)),
            Pane::Requests => Constraint::Length(14.min(pct(35)).max(4)),
            // Wins over the lengths above on a short terminal.
            Pane::Processes => Constraint::Min(5),
        });
    }
    let areas = Layout::vertical(constraints).split(area);
    panes.into_iter().zip(areas.iter().copied()).collect()
}

fn render_panes(frame: &mut Frame, area: Rect, model: &Model, view: &ViewState, vm: &ViewModel) {
    for (p, a) in body_areas(area, model, view, vm) {
        match p {
            Pane::Devices => devices::render(frame, a, model, view, vm),
            Pane::Progress => progress::render_pane(frame, a, model, view),
            Pane::Results => results::render_pane(frame, a, view),
            Pane::Cgroups => cgroups::render(frame, a, model, view, vm),
            Pane::Requests => requests::render(frame, a, model, view),
            Pane::Processes => processes::render(frame, a, model, view, vm),
        }
    }
}

fn render_too_small(frame: &mut Frame, area: Rect) {
    let text = format!(
        "terminal too small: {}x{}, iolens needs at least {MIN_WIDTH}x{MIN_HEIGHT}",
        area.width, area.height
    );
    frame.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), area);
}

/// A bordered block whose border shows whether the pane has the focus: a
/// thick line (visible without colours too) in the title colour.
pub fn pane_block<'a>(title: Line<'a>, focused: bool, theme: &Theme) -> Block<'a> {
    let b = Block::default().borders(Borders::ALL).title(title);
    if focused {
        b.border_type(BorderType::Thick).border_style(theme.title())
    } else {
        b.border_style(theme.dim())
    }
}

/// A rectangle of at most `w`×`h` centred in `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let w = w.min(area.width);
    let h = h.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

/// The last `width` values as block characters scaled to `max` (or to their
/// own maximum); a zero is a space, any non-zero value at least the lowest block.
pub fn sparkline(
    values: impl DoubleEndedIterator<Item = f64> + ExactSizeIterator,
    width: usize,
    max: Option<f64>,
) -> String {
    const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let skip = values.len().saturating_sub(width);
    let vals: Vec<f64> = values.skip(skip).collect();
    let max = max.unwrap_or_else(|| vals.iter().copied().fold(0.0, f64::max));
    let mut s: String = " ".repeat(width - vals.len());
    for v in vals {
        if v <= 0.0 || max <= 0.0 || !v.is_finite() {
            s.push(' ');
        } else {
            let i = ((v / max) * 7.0).round() as usize;
            s.push(BLOCKS[i.min(7)]);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparkline_scales_to_max_and_pads() {
        assert_eq!(sparkline([0.0, 1.0, 2.0, 4.0].into_iter(), 6, None), "   ▃▅█");
        assert_eq!(sparkline([5.0, 1.0, 8.0].into_iter(), 2, None), "▂█");
        assert_eq!(sparkline(std::iter::empty(), 3, None), "   ");
        assert_eq!(sparkline([0.0, 0.0].into_iter(), 2, None), "  ");
        assert_eq!(sparkline([50.0, 100.0, 200.0].into_iter(), 3, Some(100.0)), "▅██");
    }
}
