//! Counter arithmetic across samples.
//!
//! In `/proc/diskstats` the request, merge and sector counters are `unsigned
//! long` (64-bit here), while every time field (ticks, io_ticks,
//! time_in_queue) is printed as `unsigned int` and wraps at 2^32 ms (about
//! 49.7 days of busy time). A 64-bit counter that goes backwards means the
//! device was removed and re-added (or reset): the caller re-baselines.

/// Δ of a 64-bit counter; `None` when it went backwards.
pub fn delta64(prev: u64, cur: u64) -> Option<u64> {
    cur.checked_sub(prev)
}

/// Δ of a 32-bit time counter, correct across one wrap. `None` when the
/// values cannot be a 32-bit counter that wrapped (either exceeds u32).
pub fn delta32(prev: u64, cur: u64) -> Option<u64> {
    if cur >= prev {
        Some(cur - prev)
    } else if prev <= u64::from(u32::MAX) {
        Some(cur + (1u64 << 32) - prev)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_and_backwards() {
        assert_eq!(delta64(5, 9), Some(4));
        assert_eq!(delta64(9, 5), None);
        assert_eq!(delta32(10, 25), Some(15));
        // 4294967290 → 4 is 10 ms across the wrap.
        assert_eq!(delta32(4_294_967_290, 4), Some(10));
        assert_eq!(delta32(u64::from(u32::MAX) + 5, 3), None);
    }
}
