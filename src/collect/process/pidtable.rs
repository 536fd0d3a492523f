//! [`PidTable`]: per-pid entries kept side by side, for wide entries kept
//! for every process.

use super::PidMap;

/// A map of pids to wide values, each stored once in a dense vector and
/// found through a hash table of 4-byte positions. A hash table of the
/// values themselves has up to twice as many slots as entries (5,000
/// processes: 8,192 slots), each as wide as a value; here only the
/// positions pay for the spare slots, and the vector is sized to the
/// listing ([`PidTable::reserve_total`]).
#[derive(Debug)]
pub struct PidTable<V> {
    at: PidMap<i32, u32>,
    entries: Vec<(i32, V)>,
}

impl<V> Default for PidTable<V> {
    fn default() -> Self {
        PidTable {
            at: PidMap::default(),
            entries: Vec::new(),
        }
    }
}

impl<V> PidTable<V> {
    #[cfg(any(test, feature = "test-support"))]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn get(&self, pid: i32) -> Option<&V> {
        let &i = self.at.get(&pid)?;
        self.entries.get(i as usize).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, pid: i32) -> Option<&mut V> {
        let &i = self.at.get(&pid)?;
        self.entries.get_mut(i as usize).map(|(_, v)| v)
    }

    /// The entry of `pid`, made with `V::default()` when there is none.
    pub fn get_or_default(&mut self, pid: i32) -> &mut V
    where
        V: Default,
    {
        let i = match self.at.get(&pid) {
            Some(&i) => i as usize,
            None => {
                let i = self.entries.len();
                self.entries.push((pid, V::default()));
                self.at.insert(pid, i as u32);
                i
            }
        };
        &mut self.entries[i].1
    }

    /// Put `v` in as the entry of `pid`, replacing any.
    pub fn insert(&mut self, pid: i32, v: V) {
        match self.at.get(&pid) {
            Some(&i) => self.entries[i as usize].1 = v,
            None => {
                self.at.insert(pid, self.entries.len() as u32);
                self.entries.push((pid, v));
            }
        }
    }

    /// Take out the entry of `pid` (the last entry takes its place).
    pub fn remove(&mut self, pid: i32) -> Option<V> {
        let i = self.at.remove(&pid)? as usize;
        let (_, v) = self.entries.swap_remove(i);
        if let Some((moved, _)) = self.entries.get(i) {
            self.at.insert(*moved, i as u32);
        }
        Some(v)
    }

    #[cfg(any(test, feature = "test-support"))]
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// Keep the entries for which `keep` is true (in any order). When
    /// fewer than half the room is left used, it shrinks to an eighth more
    /// than the entries left.
    pub fn retain(&mut self, mut keep: impl FnMut(i32, &mut V) -> bool) {
        let mut i = 0;
        while i < self.entries.len() {
            let (pid, v) = &mut self.entries[i];
            let pid = *pid;
            if keep(pid, v) {
                i += 1;
                continue;
            }
            self.remove(pid);
        }
        let left = self.entries.len();
        if self.entries.capacity() > 2 * left {
            self.entries.shrink_to(left + left / 8);
            self.at.shrink_to(left + left / 8);
        }
    }

    /// Room for `n` entries in all, with no more spare room than that
    /// (rather than double the entries when they outgrow it).
    pub fn reserve_total(&mut self, n: usize) {
        self.entries.reserve_exact(n.saturating_sub(self.entries.len()));
        self.at.reserve(n.saturating_sub(self.at.len()));
    }

    #[cfg(test)]
    fn is_consistent(&self) -> bool {
        self.at.len() == self.entries.len()
            && self
                .entries
                .iter()
                .enumerate()
                .all(|(i, (pid, _))| self.at.get(pid) == Some(&(i as u32)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_found_after_others_are_removed() {
        let mut t: PidTable<String> = PidTable::default();
        for pid in [5, 9, 2, 30, 7] {
            *t.get_or_default(pid) = format!("p{pid}");
        }
        assert_eq!(t.len(), 5);
        assert_eq!(t.get(30).map(String::as_str), Some("p30"));
        assert_eq!(t.get(4), None);
        // Removing the first and the last moves others into their places.
        t.retain(|pid, _| pid != 5 && pid != 7);
        assert!(t.is_consistent());
        assert_eq!(t.len(), 3);
        for pid in [9, 2, 30] {
            assert_eq!(t.get(pid), Some(&format!("p{pid}")), "pid {pid}");
        }
        assert_eq!(t.get(5), None);
        assert_eq!(t.get(7), None);
        t.get_mut(2).unwrap().push('!');
        assert_eq!(t.get(2).map(String::as_str), Some("p2!"));
        // An existing entry is returned, not replaced.
        assert_eq!(t.get_or_default(9), "p9");
        assert_eq!(t.get_or_default(11), "");
        assert!(t.is_consistent());
        // Taken out and put back, as the fd scanner does.
        assert_eq!(t.remove(9).as_deref(), Some("p9"));
        assert_eq!(t.remove(9), None);
        assert!(t.is_consistent());
        t.insert(9, "new".into());
        t.insert(2, "again".into());
        assert_eq!(
            (t.get(9).map(String::as_str), t.get(2).map(String::as_str)),
            (Some("new"), Some("again"))
        );
        assert_eq!(t.len(), 4);
        assert!(t.is_consistent());
        t.retain(|_, _| false);
        assert!(t.is_empty() && t.is_consistent());
    }

    #[test]
    fn room_is_what_was_asked_and_shrinks_with_the_entries() {
        let mut t: PidTable<u64> = PidTable::default();
        t.reserve_total(1000);
        assert!(t.entries.capacity() >= 1000 && t.entries.capacity() < 1100);
        for pid in 0..1000 {
            *t.get_or_default(pid) = pid as u64;
        }
        assert!(t.entries.capacity() < 1100);
        t.retain(|pid, _| pid % 10 == 0);
        assert!(t.is_consistent());
        assert_eq!(t.len(), 100);
        assert!(t.entries.capacity() < 200, "{}", t.entries.capacity());
        assert_eq!(t.get(990), Some(&990));
        assert_eq!(t.get(991), None);
    }
}
