//! The view-model: which rows the panes show and in what order, computed
//! once per change (a sample, a key) from the [`Model`] and the
//! [`ViewState`] — devices in tree order with folding and idle-hiding,
//! processes filtered and sorted, each process row's numbers in the current
//! mode, cgroups sorted. The controller (`app`) keeps it current and moves the selections
//! over it; panes only read it.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use super::{ProcCol, ViewState};
use crate::model::disk::DiskRates;
use crate::model::{DevKind, DeviceRow, Model, ProcRow};
use crate::present::process::Value;
pub use crate::present::process::{ProcNums, active, nums};
pub use crate::present::text::{comm_from_argv0, command};

/// One visible line of the devices pane.
#[derive(Debug, Clone, Copy)]
pub struct DevLine<'a> {
    pub row: &'a DeviceRow,
    /// 0 for a disk, 1 for a partition under it.
    pub depth: u8,
    /// Number of partitions folded away under this disk.
    pub folded: usize,
    /// Last partition of its disk (for the tree glyph).
    pub last: bool,
}

/// A [`DevLine`] by index into [`Model::devices`], to be kept next to the
/// model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevItem {
    pub index: usize,
    pub depth: u8,
    pub folded: usize,
    pub last: bool,
}

/// The rows of the panes, by index into the model they were computed from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ViewModel {
    pub devices: Vec<DevItem>,
    /// Indices into [`Model::procs`], in display order.
    pub procs: Vec<usize>,
    /// In the tree view (`v`): the tree drawn before each process's
    /// command, by index into [`Model::procs`] ("├─", "│ └─"; empty for a
    /// root). Empty outside the tree view.
    pub tree: Vec<String>,
    /// Indices into the model's cgroup rows, in display order.
    pub cgroups: Vec<usize>,
}

impl ViewModel {
    pub fn new(model: &Model, view: &ViewState) -> Self {
        let mut procs = proc_order(model, view);
        let mut tree = Vec::new();
        if view.tree {
            tree = vec![String::new(); model.procs.len()];
            procs = super::proctree::order(&model.procs, &procs)
                .into_iter()
                .map(|(i, prefix)| {
                    tree[i] = prefix;
                    i
                })
                .collect();
        }
        ViewModel {
            devices: device_items(model, view),
            procs,
            tree,
            cgroups: super::cgroups::order(model, view),
        }
    }

    /// The device lines, resolved against `model` (the one this was
    /// computed from).
    pub fn dev_lines<'a>(&self, model: &'a Model) -> Vec<DevLine<'a>> {
        resolve(&self.devices, model)
    }

    /// The process rows in display order.
    pub fn proc_rows<'a>(&self, model: &'a Model) -> Vec<&'a ProcRow> {
        self.procs.iter().filter_map(|&i| model.procs.get(i)).collect()
    }

    /// The tree drawn before the command of process row `i` (an index
    /// into [`Model::procs`]); empty outside the tree view.
    pub fn tree_prefix(&self, i: usize) -> &str {
        self.tree.get(i).map_or("", String::as_str)
    }
}

fn resolve<'a>(items: &[DevItem], model: &'a Model) -> Vec<DevLine<'a>> {
    items
        .iter()
        .filter_map(|it| {
            Some(DevLine {
                row: model.devices.get(it.index)?,
                depth: it.depth,
                folded: it.folded,
                last: it.last,
            })
        })
        .collect()
}

/// The device lines in display order (see [`device_items`]).
#[cfg(any(test, feature = "test-support"))]
pub fn device_lines<'a>(model: &'a Model, view: &ViewState) -> Vec<DevLine<'a>> {
    resolve(&device_items(model, view), model)
}

/// The process rows in display order (see [`proc_order`]).
pub fn proc_rows<'a>(model: &'a Model, view: &ViewState) -> Vec<&'a ProcRow> {
    proc_order(model, view)
        .into_iter()
        .filter_map(|i| model.procs.get(i))
        .collect()
}

fn is_partition(r: &DeviceRow) -> bool {
    r.info
        .as_ref()
        .is_some_and(|i| i.kind == DevKind::Partition && i.parent.is_some())
}

fn parent_of(r: &DeviceRow) -> Option<&str> {
    r.info.as_ref().and_then(|i| i.parent.as_deref())
}

/// Idle: counters compared and nothing happened. A device without rates yet
/// (first sample) is not idle, it is unknown.
fn idle(r: &DeviceRow) -> bool {
    r.rates.as_ref().is_some_and(DiskRates::is_idle)
}

/// The group a device is listed in: whole disks (and md arrays) first, then
/// device-mapper volumes, then loop and zram devices.
fn group(r: &DeviceRow) -> u8 {
    match r.info.as_ref().map(|i| i.kind) {
        Some(DevKind::Loop | DevKind::Zram) => 2,
        Some(DevKind::Dm) => 1,
        _ => 0,
    }
}

/// How busy a device is for the order of its group: %util (0 when unknown).
fn busy(r: &DeviceRow) -> f64 {
    r.rates.as_ref().map_or(0.0, |x| x.util_pct).max(0.0)
}

/// %util points a device must be busier than the one above it to move up:
/// rows do not swap every second over noise.
pub const DEV_HYSTERESIS_PCT: f64 = 10.0;

/// Devices (indices) in group order, busiest first within a group, with
/// hysteresis: starting from the previous order (`prev`, names; new devices
/// by name after them), a device moves above its neighbour only when its
/// %util is more than [`DEV_HYSTERESIS_PCT`] points higher.
fn order_devices(devs: &[DeviceRow], idx: Vec<usize>, prev: &[String]) -> Vec<usize> {
    order(
        idx,
        |i| (group(&devs[i]), devs[i].name.as_str()),
        |i| busy(&devs[i]),
        prev,
    )
}

/// [`order_devices`] over plain functions: `key(i)` = (group, name),
/// `busy(i)` = %util.
fn order<'a>(
    mut idx: Vec<usize>,
    key: impl Fn(usize) -> (u8, &'a str),
    busy: impl Fn(usize) -> f64,
    prev: &[String],
) -> Vec<usize> {
    let rank = |i: usize| prev.iter().position(|n| n.as_str() == key(i).1).unwrap_or(usize::MAX);
    idx.sort_by(|&a, &b| {
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0).then(rank(a).cmp(&rank(b))).then(ka.1.cmp(kb.1))
    });
    // Bubble passes: bounded (n passes), stable for equals.
    for _ in 0..idx.len() {
        let mut moved = false;
        for k in 1..idx.len() {
            let (a, b) = (idx[k - 1], idx[k]);
            if key(a).0 == key(b).0 && busy(b) > busy(a) + DEV_HYSTERESIS_PCT {
                idx.swap(k - 1, k);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
    idx
}

/// The rows in display order: whole disks, then device-mapper, then loop
/// and zram devices, busiest first within each group (with hysteresis, see
/// [`order_devices`]); a disk's partitions under it when unfolded (folded
/// by default); idle devices left out when `hide_idle` is on, empty ones
/// always.
pub fn device_items(model: &Model, view: &ViewState) -> Vec<DevItem> {
    let devs = &model.devices;
    let mut out = Vec::new();
    // Partitions by their disk's name, hashed: no search per device (a
    // tree with 10,000 devices would make that quadratic).
    let names: HashSet<&str> = devs.iter().map(|d| d.name.as_str()).collect();
    let mut parts_of: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, d) in devs.iter().enumerate() {
        if let Some(parent) = parent_of(d).filter(|_| is_partition(d)) {
            parts_of.entry(parent).or_default().push(i);
        }
    }
    let tops: Vec<usize> = (0..devs.len())
        .filter(|&i| !devs[i].has_no_media())
        .filter(|&i| !is_partition(&devs[i]) || !parent_of(&devs[i]).is_some_and(|p| names.contains(p)))
        .collect();
    for top in order_devices(devs, tops, &view.dev_order) {
        let name = devs[top].name.as_str();
        let parts: Vec<usize> = parts_of
            .get(name)
            .map(|v| {
                v.iter()
                    .copied()
                    .filter(|&p| !(view.hide_idle && idle(&devs[p])))
                    .collect()
            })
            .unwrap_or_default();
        let folded = !view.unfolded.contains(name);
        if view.hide_idle && idle(&devs[top]) && parts.is_empty() {
            continue;
        }
        out.push(DevItem {
            index: top,
            depth: 0,
            folded: if folded { parts.len() } else { 0 },
            last: false,
        });
        if !folded {
            let n = parts.len();
            out.extend(parts.into_iter().enumerate().map(|(i, p)| DevItem {
                index: p,
                depth: 1,
                folded: 0,
                last: i + 1 == n,
            }));
        }
    }
    out
}

/// Numbers sort largest first; PID and text sort ascending.
pub fn natural_desc(c: ProcCol) -> bool {
    c.natural_desc()
}

fn matches(p: &ProcRow, filter: &str) -> bool {
    if filter.is_empty() {
        return true;
    }
    let f = filter.to_lowercase();
    p.raw.key.pid.to_string().contains(&f)
        || p.raw.comm.to_lowercase().contains(&f)
        || p.raw.cmdline.to_lowercase().contains(&f)
        || p.raw.user.as_deref().is_some_and(|u| u.to_lowercase().contains(&f))
}

fn num_key(n: Option<ProcNums>, c: ProcCol) -> f64 {
    n.and_then(|n| c.number(&n)).unwrap_or(f64::NEG_INFINITY)
}

/// Compare two rows on `col` in its natural order (numbers largest first,
/// text and PIDs ascending), ties broken by PID so the order is stable.
fn compare(a: &ProcRow, b: &ProcRow, col: ProcCol, accumulated: bool) -> Ordering {
    let by_pid = a.raw.key.pid.cmp(&b.raw.key.pid);
    let o = match col.def().value {
        Value::Text { order, .. } => order.map_or(Ordering::Equal, |o| o(a, b)),
        // Busiest first; for disk reads, busiest on the disk overall then.
        Value::Num(..) => {
            let ka = num_key(nums(a, accumulated), col);
            let kb = num_key(nums(b, accumulated), col);
            kb.partial_cmp(&ka).unwrap_or(Ordering::Equal).then_with(|| {
                let t = |p: &ProcRow| nums(p, accumulated).map_or(f64::NEG_INFINITY, |n| n.disk_read + n.disk_write);
                t(b).partial_cmp(&t(a)).unwrap_or(Ordering::Equal)
            })
        }
    };
    o.then(by_pid)
}

/// The rows in display order after filter, only-active and sort, as indices
/// into [`Model::procs`].
pub fn proc_order(model: &Model, view: &ViewState) -> Vec<usize> {
    let procs = &model.procs;
    let mut v: Vec<usize> = (0..procs.len())
        .filter(|&i| !view.only_active || active(&procs[i], view.accumulated))
        .filter(|&i| matches(&procs[i], &view.filter))
        .collect();
    v.sort_by(|&a, &b| {
        let o = compare(&procs[a], &procs[b], view.sort, view.accumulated);
        if view.reverse { o.reverse() } else { o }
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_is_hidden_only_when_exec_would_have_set_it() {
        assert!(comm_from_argv0("dd", "/usr/bin/dd if=/dev/sda"));
        // Cut to 15 bytes by the kernel.
        assert!(comm_from_argv0("systemd-journal", "/lib/systemd/systemd-journald"));
        // Renamed: longer, shorter, a prefix, empty, or bytes that are not
        // UTF-8 (read as U+FFFD: "\xff\xfe\x9b\x07x" vs "\xff\xfe\x9b").
        let bad = "\u{FFFD}\u{FFFD}\u{FFFD}";
        for (comm, cmdline) in [
            ("ddx", "dd if=x"),
            ("d", "dd if=x"),
            ("systemd-jour", "/lib/systemd/systemd-journald"),
            ("", "dd"),
            (&format!("{bad}\u{7}x") as &str, &format!("{bad} arg") as &str),
            (bad, &format!("/x/{bad}") as &str),
        ] {
            assert!(!comm_from_argv0(comm, cmdline), "{comm:?} hidden for {cmdline:?}");
        }
    }

    #[test]
    fn devices_group_then_busiest_first_with_hysteresis() {
        // (group, name, %util)
        let devs = [
            (2, "loop0", 0.0),
            (0, "vda", 3.0),
            (2, "loop1", 95.0),
            (1, "dm-0", 0.0),
            (0, "sda", 0.0),
        ];
        let names = |o: &[usize]| -> Vec<String> { o.iter().map(|&i| devs[i].1.to_string()).collect() };
        let run = |utils: &[f64], prev: &[String]| {
            names(&order(
                (0..devs.len()).collect(),
                |i| (devs[i].0, devs[i].1),
                |i| utils[i],
                prev,
            ))
        };
        let u0: Vec<f64> = devs.iter().map(|d| d.2).collect();
        // First screen: disks (sda, vda by name; vda is not 10 points
        // busier), then dm, then loop with the busy loop1 first.
        let first = run(&u0, &[]);
        assert_eq!(first, ["sda", "vda", "dm-0", "loop1", "loop0"]);
        // loop0 a little busier than loop1: no jump.
        assert_eq!(run(&[5.0, 3.0, 90.0, 0.0, 0.0], &first), first);
        // Clearly busier: it moves up; vda clearly busier than sda too.
        assert_eq!(
            run(&[99.0, 40.0, 20.0, 0.0, 0.0], &first),
            ["vda", "sda", "dm-0", "loop0", "loop1"]
        );
    }
}
