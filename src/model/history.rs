//! Fixed-size ring buffers of recent values, for sparklines and charts.

use std::collections::VecDeque;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ring {
    cap: usize,
    values: VecDeque<f64>,
}

impl Ring {
    /// A ring of up to `cap` values; memory grows with the values pushed,
    /// not reserved up front (10,000 devices × 5 rings × 600 values would
    /// be 240 MB before any history exists).
    pub fn new(cap: usize) -> Self {
        Ring {
            cap,
            values: VecDeque::new(),
        }
    }

    pub fn push(&mut self, v: f64) {
        if self.cap == 0 {
            return;
        }
        if self.values.len() == self.cap {
            self.values.pop_front();
        }
        self.values.push_back(v);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = f64> + ExactSizeIterator + '_ {
        self.values.iter().copied()
    }

    pub fn max(&self) -> f64 {
        self.iter().fold(0.0, f64::max)
    }

    pub fn last(&self) -> Option<f64> {
        self.values.back().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_last_n() {
        let mut r = Ring::new(3);
        for v in [1.0, 2.0, 3.0, 4.0] {
            r.push(v);
        }
        assert_eq!(r.iter().collect::<Vec<_>>(), [2.0, 3.0, 4.0]);
        assert_eq!(r.max(), 4.0);
        assert_eq!(r.last(), Some(4.0));
    }
}
