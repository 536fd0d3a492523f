//! The one keymap of the dashboard: every key of the normal mode, where it
//! works (everywhere, or in some panes), what it does and how it is
//! described. The key handler (`app::input`), the help screen, the status
//! line hints and the README's key table (checked by a test) all come from
//! [`ROWS`]. Popups (help, detail, confirmation, probe menu) and typing a
//! filter are modal; their few keys are shown in the popup or the status
//! line itself.
//!
//! Movement is arrows, PgUp/PgDn and Home/End. `vim_keys = true` in the
//! config adds j/k/g/G; then SIGTERM is on `K` (and F9, as in htop) so that
//! no key ever means two things.

use crossterm::event::KeyCode;

use super::Pane;

mod table;
pub use table::ROWS;

use Action as A;
use KeyCode as K;
use Pane as P;

/// What a key does in the normal mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Help,
    FocusNext,
    FocusPrev,
    Down,
    Up,
    PageDown,
    PageUp,
    First,
    Last,
    /// Device detail; on a transfer: select its process; on a cgroup: its detail.
    Enter,
    /// Close, cancel the running probe, else clear the filter.
    Escape,
    FoldToggle,
    Fold,
    Unfold,
    HideIdle,
    Probe,
    SortNext,
    SortPrev,
    Reverse,
    OnlyActive,
    Filter,
    Accumulated,
    /// Show / hide the cgroups pane.
    Cgroups,
    /// The findings pane.
    Findings,
    /// The files view.
    Files,
    Ionice,
    Kill,
    /// Follow the process under the cursor as rows re-sort (or stop).
    Follow,
    /// Processes as a tree (children under parents), or flat.
    Tree,
    /// The focused pane fills the screen, or back.
    Zoom,
    /// Close / reopen the probe results pane.
    ToggleResults,
    /// Close / reopen the transfers pane.
    ToggleTransfers,
    /// Show an earlier / a later result of the session (results pane).
    OlderResult,
    NewerResult,
    /// Turn delay accounting on (root, after a yes).
    DelayAcct,
    Pause,
    Slower,
    Faster,
    /// Show / hide the request log pane.
    RequestLog,
    /// Freeze / resume the request log.
    FreezeLog,
    /// Replay: show the previous / next recorded sample.
    StepBack,
    StepForward,
    /// Replay: type a time to jump to.
    JumpTo,
}

/// Which keymap a row belongs to (config `vim_keys`; live or replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    Both,
    /// Without `vim_keys` only.
    Default,
    /// With `vim_keys = true` only.
    Vim,
    /// On the live machine only (not in `iolens replay`).
    Live,
    /// In `iolens replay` only.
    Replay,
}

/// Where a row's keys work: everywhere, or only with the focus on these
/// panes (elsewhere the key says where it works).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Global,
    Panes(&'static [Pane]),
}

impl Scope {
    pub fn contains(self, p: Pane) -> bool {
        match self {
            Scope::Global => true,
            Scope::Panes(ps) => ps.contains(&p),
        }
    }
}

/// One row of the key table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Row {
    /// The keys as shown ("s >, S <").
    pub label: &'static str,
    /// What they do (help screen and README).
    pub help: &'static str,
    pub scope: Scope,
    pub layout: Layout,
    pub keys: &'static [(KeyCode, Action)],
    /// Status-line hints: (pane, text) for the panes that show one.
    pub hints: &'static [(Pane, &'static str)],
}

const ALL_PANES: [Pane; 6] = [
    Pane::Devices,
    Pane::Progress,
    Pane::Results,
    Pane::Cgroups,
    Pane::Requests,
    Pane::Processes,
];

/// The rows of the current keymap (`replay`: `iolens replay`'s).
pub fn rows(vim: bool, replay: bool) -> impl Iterator<Item = &'static Row> {
    ROWS.iter().filter(move |r| match r.layout {
        Layout::Both => true,
        Layout::Default => !vim,
        Layout::Vim => vim,
        Layout::Live => !replay,
        Layout::Replay => replay,
    })
}

/// What `code` does with the focus on `pane`: `Ok(action)`, or `Err(row)`
/// when the key exists but works elsewhere (the row says where), or `None`
/// for a key that does nothing anywhere.
pub fn lookup(code: KeyCode, pane: Pane, vim: bool, replay: bool) -> Option<Result<Action, &'static Row>> {
    let mut elsewhere = None;
    for r in rows(vim, replay) {
        if let Some((_, a)) = r.keys.iter().find(|(k, _)| *k == code) {
            if r.scope.contains(pane) {
                return Some(Ok(*a));
            }
            elsewhere.get_or_insert(r);
        }
    }
    elsewhere.map(Err)
}

impl Row {
    /// Where the row's keys work: "everywhere", "devices pane",
    /// "transfers, processes panes".
    pub fn place(&self) -> String {
        match self.scope {
            Scope::Global => "everywhere".to_string(),
            Scope::Panes(ps) => {
                let names: Vec<&str> = ALL_PANES
                    .into_iter()
                    .filter(|p| ps.contains(p))
                    .map(pane_name)
                    .collect();
                let s = if names.len() == 1 { "" } else { "s" };
                format!("{} pane{s}", names.join(", "))
            }
        }
    }

    /// The panes as letters for the help screen ("[T P]"), empty when the
    /// row works everywhere.
    pub fn marks(&self) -> String {
        match self.scope {
            Scope::Global => String::new(),
            Scope::Panes(ps) => {
                let m: Vec<&str> = ALL_PANES
                    .into_iter()
                    .filter(|p| ps.contains(p))
                    .map(|p| match p {
                        Pane::Devices => "D",
                        Pane::Progress => "T",
                        Pane::Results => "R",
                        Pane::Cgroups => "C",
                        Pane::Requests => "L",
                        Pane::Processes => "P",
                    })
                    .collect();
                format!("[{}]", m.join(" "))
            }
        }
    }
}

/// What the help screen's marks mean.
pub const MARKS_LEGEND: &str =
    " [D T C L P]: only in the devices, transfers, cgroups, request log, processes pane (elsewhere the key says so)";

/// "k (send SIGTERM to the selected process (asks first)) works in the
/// transfers, processes panes: Tab to one".
pub fn works_elsewhere(key: &str, r: &Row) -> String {
    format!("{key} ({}) works in the {}: Tab there", r.help, r.place())
}

pub fn pane_name(p: Pane) -> &'static str {
    match p {
        Pane::Devices => "devices",
        Pane::Progress => "transfers",
        Pane::Results => "probe results",
        Pane::Cgroups => "cgroups",
        Pane::Requests => "request log",
        Pane::Processes => "processes",
    }
}

/// Actions on the machine: off in `iolens replay` (they say so there).
pub fn live_only(a: Action) -> bool {
    matches!(a, Action::Probe | Action::Ionice | Action::Kill | Action::DelayAcct)
}

impl Row {
    /// Every key of the row acts on the machine (off in replay).
    pub fn is_live_only(&self) -> bool {
        self.keys.iter().all(|(_, a)| live_only(*a))
    }
}

/// The status-line hints of `pane`, in table order (in replay without the
/// actions that are off there, and the time keys right after quit, help and
/// focus, so that a narrow line cuts the pane's own keys, not them).
pub fn hints(pane: Pane, vim: bool, replay: bool) -> String {
    let rank = |r: &Row| match (r.keys.first().map(|k| k.1), r.layout) {
        (Some(Action::Quit | Action::Help | Action::FocusNext), _) => 0,
        (_, Layout::Replay) => 1,
        _ => 2,
    };
    let mut shown: Vec<&Row> = rows(vim, replay).filter(|r| !(replay && r.is_live_only())).collect();
    if replay {
        shown.sort_by_key(|r| rank(r));
    }
    let v: Vec<&str> = shown
        .into_iter()
        .flat_map(|r| r.hints.iter())
        .filter(|(p, _)| *p == pane)
        .map(|(_, h)| *h)
        .collect();
    v.join("  ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_key_means_two_things_in_any_pane_or_keymap() {
        for (vim, replay) in [(false, false), (true, false), (false, true), (true, true)] {
            for pane in ALL_PANES {
                let mut seen: Vec<(KeyCode, Action)> = Vec::new();
                for r in rows(vim, replay).filter(|r| r.scope.contains(pane)) {
                    for (k, a) in r.keys {
                        if let Some((_, b)) = seen.iter().find(|(s, _)| s == k) {
                            panic!("{k:?} is {b:?} and {a:?} in {pane:?} (vim {vim}, replay {replay})");
                        }
                        seen.push((*k, *a));
                    }
                }
            }
        }
    }

    #[test]
    fn k_is_sigterm_and_movement_is_arrows_by_default() {
        for pane in [Pane::Processes, Pane::Progress] {
            assert_eq!(lookup(K::Char('k'), pane, false, false), Some(Ok(A::Kill)));
            assert_eq!(lookup(K::Char('K'), pane, true, false), Some(Ok(A::Kill)));
            assert_eq!(lookup(K::F(9), pane, true, false), Some(Ok(A::Kill)));
        }
        assert!(matches!(
            lookup(K::Char('k'), Pane::Devices, false, false),
            Some(Err(_))
        ));
        assert_eq!(lookup(K::Char('j'), Pane::Devices, false, false), None);
        assert_eq!(lookup(K::Char('j'), Pane::Devices, true, false), Some(Ok(A::Down)));
        assert_eq!(lookup(K::Char('k'), Pane::Processes, true, false), Some(Ok(A::Up)));
        assert_eq!(lookup(K::Down, Pane::Processes, false, false), Some(Ok(A::Down)));
    }

    #[test]
    fn a_key_for_another_pane_says_where_it_works() {
        let Some(Err(r)) = lookup(K::Char('k'), Pane::Devices, false, false) else {
            panic!("k in the devices pane")
        };
        assert_eq!(
            works_elsewhere("k", r),
            "k (send SIGTERM to the process (asks first)) works in the transfers, processes panes: Tab there"
        );
        let Some(Err(r)) = lookup(K::Char('t'), Pane::Processes, false, false) else {
            panic!("t in the processes pane")
        };
        assert!(works_elsewhere("t", r).ends_with("works in the devices pane: Tab there"));
    }

    #[test]
    fn hints_are_the_table_rows_of_the_pane() {
        assert_eq!(
            hints(Pane::Devices, false, false),
            "q quit  ? help  Tab focus  Enter detail  z maximise  t probe  a idle  Space fold  C cgroups  p pause  L requests  +/- interval"
        );
        assert_eq!(
            hints(Pane::Cgroups, false, false),
            "q quit  ? help  Tab focus  ↑↓ select  Enter processes, devices  s/S sort  r reverse  C hide"
        );
        assert_eq!(
            hints(Pane::Processes, false, false),
            "q quit  ? help  Tab focus  Enter detail  s/S sort  r reverse  o active  / filter  c totals  i ionice  k kill  F follow  v tree"
        );
        assert_eq!(
            hints(Pane::Progress, false, false),
            "q quit  ? help  Tab focus  ↑↓ select  Enter go to its process (to ionice it)  T close"
        );
        assert_eq!(
            hints(Pane::Results, false, false),
            "q quit  ? help  Tab focus  ↑↓ scroll  Esc cancel a running probe  [ ] earlier results  z maximise  R close  t (devices pane) new probe"
        );
        assert!(hints(Pane::Processes, true, false).ends_with("i ionice  K kill  F follow  v tree"));
    }

    #[test]
    fn replay_has_its_own_time_keys_and_keeps_the_others() {
        assert_eq!(
            hints(Pane::Devices, false, true),
            "q quit  ? help  Tab focus  [ ] step  p play  +/- speed  b jump  Enter detail  z maximise  a idle  Space fold  C cgroups  L requests"
        );
        assert_eq!(
            hints(Pane::Processes, false, true),
            "q quit  ? help  Tab focus  [ ] step  p play  b jump  Enter detail  s/S sort  r reverse  o active  / filter  c totals  F follow  v tree"
        );
        assert_eq!(
            lookup(K::Char('['), Pane::Processes, false, true),
            Some(Ok(A::StepBack))
        );
        assert_eq!(
            lookup(K::Char(']'), Pane::Devices, true, true),
            Some(Ok(A::StepForward))
        );
        assert_eq!(lookup(K::Char('b'), Pane::Cgroups, false, true), Some(Ok(A::JumpTo)));
        // + is faster in replay, a longer interval live.
        assert_eq!(lookup(K::Char('+'), Pane::Devices, false, true), Some(Ok(A::Faster)));
        assert_eq!(lookup(K::Char('+'), Pane::Devices, false, false), Some(Ok(A::Slower)));
        // Live, [ ] browse the probe results (and say where elsewhere); in
        // replay they step in every pane, the results pane included. Live
        // actions stay in the replay keymap (the handler says they are off).
        assert!(matches!(
            lookup(K::Char('['), Pane::Devices, false, false),
            Some(Err(_))
        ));
        assert_eq!(
            lookup(K::Char('['), Pane::Results, false, false),
            Some(Ok(A::OlderResult))
        );
        assert_eq!(lookup(K::Char('['), Pane::Results, false, true), Some(Ok(A::StepBack)));
        assert_eq!(lookup(K::Char('k'), Pane::Processes, false, true), Some(Ok(A::Kill)));
        assert_eq!(lookup(K::Char('t'), Pane::Devices, false, true), Some(Ok(A::Probe)));
    }
}
