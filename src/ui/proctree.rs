//! The processes pane as a tree (`v`, as htop's F5): each listed process
//! under its parent when the parent is listed too, siblings in the sort
//! order, roots (parent not listed) in the sort order.

use std::collections::{HashMap, HashSet};

use crate::model::ProcRow;

/// `sorted` (indices into `procs`, in sort order) as a tree walk: the
/// indices in display order, each with the prefix drawn before its
/// command ("├─", "│ └─"; empty for a root).
pub fn order(procs: &[ProcRow], sorted: &[usize]) -> Vec<(usize, String)> {
    // The first listed row of a pid is the parent of its children (an
    // exited row may share a pid with a newer process).
    let mut by_pid: HashMap<i32, usize> = HashMap::with_capacity(sorted.len());
    for &i in sorted {
        by_pid.entry(procs[i].raw.key.pid).or_insert(i);
    }
    let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut roots = Vec::new();
    for &i in sorted {
        let p = &procs[i].raw;
        match by_pid.get(&p.ppid) {
            Some(&parent) if parent != i && p.ppid != p.key.pid => children.entry(parent).or_default().push(i),
            _ => roots.push(i),
        }
    }
    let mut out = Vec::with_capacity(sorted.len());
    let mut seen = HashSet::with_capacity(sorted.len());
    // Depth first, without recursion: (row, prefix of its children, its own prefix).
    let mut stack: Vec<(usize, String, String)> =
        roots.iter().rev().map(|&r| (r, String::new(), String::new())).collect();
    while let Some((i, indent, prefix)) = stack.pop() {
        if !seen.insert(i) {
            continue;
        }
        out.push((i, prefix));
        if let Some(kids) = children.get(&i) {
            let n = kids.len();
            for (j, &k) in kids.iter().enumerate().rev() {
                let last = j + 1 == n;
                let own = format!("{indent}{}", if last { "└─" } else { "├─" });
                let next = format!("{indent}{}", if last { "  " } else { "│ " });
                stack.push((k, next, own));
            }
        }
    }
    // Rows in a parent cycle (impossible in /proc, possible in a capture)
    // are never reached from a root: listed last, flat.
    for &i in sorted {
        if !seen.contains(&i) {
            seen.insert(i);
            out.push((i, String::new()));
        }
    }
    out
}
