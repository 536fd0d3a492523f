//! The comms of exit records, shared.

use std::sync::Arc;

/// The comms of the last records, so that the records of one command share
/// one string: a fork storm runs the same few commands thousands of times a
/// second, and each record's own string was an allocation (and a copy
/// more for the row of each exited process).
#[derive(Debug, Default)]
pub struct Comms(Vec<Arc<str>>);

impl Comms {
    /// Distinct comms kept (the oldest makes room).
    pub(crate) const KEEP: usize = 16;

    /// The comm `b` (bytes up to the NUL), shared when it was seen lately.
    pub fn get(&mut self, b: &[u8]) -> Arc<str> {
        if let Some(i) = self.0.iter().position(|c| c.as_bytes() == b) {
            return self.0[i].clone();
        }
        let c: Arc<str> = String::from_utf8_lossy(b).into();
        if self.0.len() == Self::KEEP {
            self.0.remove(0);
        }
        self.0.push(c.clone());
        c
    }
}
