//! The cgroup part of [`Model::update`]: cgroup rates from the kernel's
//! counters or, where they are not active, from the member processes' rows.

use std::collections::HashMap;

use super::{Model, cgroup};
use crate::collect::RawSample;
use crate::collect::cgroup::parse::DevId;
use crate::collect::process::PidMap;
use crate::collect::sysblock::DeviceInfo;
use crate::model::process::ProcRates;

impl Model {
    /// The cgroup part of [`Model::update`] alone, against the current
    /// baseline (for `iolens bench-sample --cgroups`).
    pub fn update_cgroups_only(&mut self, cur: &RawSample) {
        let prev = self.prev.take();
        let dt_s = prev
            .as_ref()
            .map(|p| cur.mono_ns.saturating_sub(p.mono_ns) as f64 / 1e9)
            .filter(|d| *d > 0.0);
        self.update_cgroups(prev.as_ref(), cur, dt_s);
        self.prev = prev;
    }

    pub(super) fn update_cgroups(&mut self, prev: Option<&RawSample>, cur: &RawSample, dt_s: Option<f64>) {
        let Some(snap) = &cur.cgroups else {
            self.cgroups = None;
            return;
        };
        let infos: HashMap<&str, &DeviceInfo> = cur.devices.iter().map(|i| (i.name.as_str(), i)).collect();
        let devices: HashMap<DevId, cgroup::DevName> = cur
            .disks
            .iter()
            .map(|d| {
                let dev = DevId {
                    major: d.major,
                    minor: d.minor,
                };
                let in_total = infos.get(d.name.as_str()).is_some_and(|i| i.counts_in_total());
                let name = d.name.clone();
                (dev, cgroup::DevName { dev, name, in_total })
            })
            .collect();
        // Kernel workers (a loop device's backing I/O) do I/O for others:
        // left out of the sums, like the process totals.
        let mut procs: PidMap<i32, Option<&ProcRates>> = PidMap::default();
        procs.reserve(self.procs.len());
        procs.extend(
            self.procs
                .iter()
                .filter(|p| p.worker.is_none())
                .map(|p| (p.raw.key.pid, p.rates.as_deref())),
        );
        let cx = cgroup::Context {
            now_ns: cur.mono_ns,
            dt_s,
            devices: &devices,
            procs: &procs,
        };
        let prev = prev.and_then(|p| p.cgroups.as_ref());
        self.cgroups = Some(self.cgroup_tracker.update(prev, snap, &cx));
    }
}
