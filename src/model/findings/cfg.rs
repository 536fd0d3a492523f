//! The findings' thresholds and windows, as the config file's
//! `[findings]` table overrides them (every key optional; the defaults are
//! the rules' named constants):
//!
//! ```toml
//! [findings]
//! clear_s = 5.0
//! [findings.slow_device]
//! ceiling_ssd_ms = 10.0
//! ```

use serde::{Deserialize, Serialize};

pub use super::at_limit::AtLimitCfg;
pub use super::capped::CappedCfg;
pub use super::cgroup_limit::CgroupLimitCfg;
pub use super::dirty_throttled::DirtyThrottledCfg;
pub use super::hung_mount::HungMountCfg;
pub use super::io_errors::IoErrorsCfg;
pub use super::io_stall::IoStallCfg;
pub use super::maintenance::MaintenanceCfg;
pub use super::misaligned::MisalignedCfg;
pub use super::page_thrash::PageThrashCfg;
pub use super::queue_bound::QueueBoundCfg;
pub use super::random_rotating::RandomRotatingCfg;
pub use super::slow_device::SlowDeviceCfg;
pub use super::swapping::SwappingCfg;
pub use super::sync_heavy::SyncHeavyCfg;
pub use super::tiny_syscalls::TinySyscallsCfg;

/// Seconds a condition must have stopped holding before its finding clears.
pub const CLEAR_S: f64 = 5.0;
/// Seconds a condition must hold before it is a finding (most rules):
/// at the default 1 s interval, the third interval it holds in.
pub const ON_S: f64 = 3.0;
/// Requests a device must complete in an interval before its latency or
/// queue is judged.
pub const MIN_IOS: f64 = 5.0;

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct FindingsCfg {
    pub clear_s: f64,
    pub slow_device: SlowDeviceCfg,
    pub queue_bound: QueueBoundCfg,
    pub io_errors: IoErrorsCfg,
    pub tiny_syscalls: TinySyscallsCfg,
    pub io_stall: IoStallCfg,
    pub random_rotating: RandomRotatingCfg,
    pub misaligned: MisalignedCfg,
    pub maintenance: MaintenanceCfg,
    pub page_cache_thrash: PageThrashCfg,
    pub swapping: SwappingCfg,
    pub hung_mount: HungMountCfg,
    pub cgroup_at_limit: CgroupLimitCfg,
    pub sync_heavy: SyncHeavyCfg,
    pub capped_device: CappedCfg,
    pub dirty_throttled: DirtyThrottledCfg,
    pub at_device_limit: AtLimitCfg,
}

impl Default for FindingsCfg {
    fn default() -> Self {
        FindingsCfg {
            clear_s: CLEAR_S,
            slow_device: Default::default(),
            queue_bound: Default::default(),
            io_errors: Default::default(),
            tiny_syscalls: Default::default(),
            io_stall: Default::default(),
            random_rotating: Default::default(),
            misaligned: Default::default(),
            maintenance: Default::default(),
            page_cache_thrash: Default::default(),
            swapping: Default::default(),
            hung_mount: Default::default(),
            cgroup_at_limit: Default::default(),
            sync_heavy: Default::default(),
            capped_device: Default::default(),
            dirty_throttled: Default::default(),
            at_device_limit: Default::default(),
        }
    }
}

impl FindingsCfg {
    /// The window rule `rule` must hold for, seconds.
    pub fn on_s(&self, rule: &str) -> f64 {
        match rule {
            super::slow_device::ID => self.slow_device.on_s,
            super::queue_bound::ID => self.queue_bound.on_s,
            super::io_errors::ID => self.io_errors.on_s,
            super::tiny_syscalls::ID => self.tiny_syscalls.on_s,
            super::io_stall::ID => self.io_stall.on_s,
            super::random_rotating::ID => self.random_rotating.on_s,
            super::misaligned::ID => self.misaligned.on_s,
            super::maintenance::ID => self.maintenance.on_s,
            super::page_thrash::ID => self.page_cache_thrash.on_s,
            super::swapping::ID => self.swapping.on_s,
            super::hung_mount::ID => self.hung_mount.on_s,
            super::cgroup_limit::ID => self.cgroup_at_limit.on_s,
            super::sync_heavy::ID => self.sync_heavy.on_s,
            super::capped::ID => self.capped_device.on_s,
            super::dirty_throttled::ID => self.dirty_throttled.on_s,
            super::at_limit::ID => self.at_device_limit.on_s,
            _ => ON_S,
        }
    }

    /// Every value must be a finite number ≥ 0: the first that is not,
    /// named by its key ("findings.slow_device.factor").
    pub fn check(&self) -> Result<(), String> {
        fn walk(v: &serde_json::Value, key: &str) -> Result<(), String> {
            match v {
                serde_json::Value::Object(m) => m.iter().try_for_each(|(k, v)| walk(v, &format!("{key}.{k}"))),
                serde_json::Value::Number(n) if n.as_f64().is_some_and(|f| f.is_finite() && f >= 0.0) => Ok(()),
                serde_json::Value::Array(_) | serde_json::Value::String(_) => Ok(()),
                // serde_json turns NaN and infinities into null.
                _ => Err(format!("{key} must be a finite number ≥ 0")),
            }
        }
        walk(&serde_json::to_value(self).map_err(|e| e.to_string())?, "findings")
    }
}
