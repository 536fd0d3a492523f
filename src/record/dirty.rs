//! The dirty-throttle figures in a recording: the interval's per-process
//! and per-bdi pauses ([`crate::model::dirty::ThrottleInterval`]), or why
//! the throttle was not traced, in a frame of their own after the sample
//! (`frame::kind::DIRTY`), so that a replay shows the paused time and the
//! dirty_throttled rule judges it as live (a recording without them
//! replays with the throttle not traced: the rule's untraced check).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::dirty::{BdiThrottle, ThrottleInterval, ThrottleView, Throttled};

/// Why a replayed sample has no throttle figures: recorded by an iolens
/// that did not keep them.
pub const NOT_RECORDED: &str = "the dirty-throttle figures are not in this recording";

/// One (process, bdi) row as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Row {
    pub key: i32,
    pub bdi: String,
    #[serde(flatten)]
    pub t: Throttled,
}

/// One interval's throttle as recorded.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct RecordedThrottle {
    /// Why the throttle was not traced (then nothing else is set).
    pub off: Option<String>,
    pub procs: Vec<Row>,
    pub bdis: BTreeMap<String, BdiThrottle>,
    pub events: u64,
}

impl RecordedThrottle {
    /// What to record of a view.
    pub fn of(v: &ThrottleView) -> RecordedThrottle {
        if !v.active {
            return RecordedThrottle {
                off: Some(v.reason.clone().unwrap_or_default()),
                ..Default::default()
            };
        }
        let iv = &v.interval;
        RecordedThrottle {
            off: None,
            procs: iv
                .procs
                .iter()
                .map(|((key, bdi), t)| Row {
                    key: *key,
                    bdi: bdi.clone(),
                    t: *t,
                })
                .collect(),
            bdis: iv.bdis.clone(),
            events: iv.events,
        }
    }

    /// The view a replay shows (rows past [`crate::model::dirty::MAX_ROWS`]
    /// dropped: a recording is input).
    pub fn into_view(self) -> ThrottleView {
        if let Some(why) = self.off {
            return ThrottleView::off(why);
        }
        let procs = self
            .procs
            .into_iter()
            .take(crate::model::dirty::MAX_ROWS + 1)
            .map(|r| ((r.key, r.bdi), r.t))
            .collect();
        ThrottleView {
            active: true,
            reason: None,
            interval: ThrottleInterval {
                procs,
                bdis: self.bdis,
                events: self.events,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_view_reads_back_as_it_was() {
        let mut iv = ThrottleInterval::default();
        let t = Throttled {
            passes: 9,
            pauses: 7,
            paused_ms: 812,
            max_pause_ms: 200,
            dirtied_pages: 320,
            kernel: false,
        };
        iv.procs.insert((4242, "7:0".into()), t);
        iv.bdis.insert(
            "7:0".into(),
            BdiThrottle {
                sum: t,
                writers: 1,
                limit_pages: 1000,
                dirty_pages: 990,
                wb_dirty_pages: Some(1024),
                wb_setpoint_pages: None,
            },
        );
        iv.events = 9;
        let v = ThrottleView {
            active: true,
            reason: None,
            interval: iv,
        };
        let json = serde_json::to_string(&RecordedThrottle::of(&v)).unwrap();
        let back: RecordedThrottle = serde_json::from_str(&json).unwrap();
        assert_eq!(back.into_view(), v);
        let off = ThrottleView::off("no such event");
        let json = serde_json::to_string(&RecordedThrottle::of(&off)).unwrap();
        assert_eq!(
            serde_json::from_str::<RecordedThrottle>(&json).unwrap().into_view(),
            off
        );
    }
}
