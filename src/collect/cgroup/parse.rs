//! Parsers for the cgroup I/O files, pure functions over `&[u8]`.
//!
//! v2: `io.stat`, `io.max`, `io.weight` / `io.bfq.weight`, `io.latency`;
//! v1: the `blkio.throttle.*` and `blkio.bfq.*` "rwstat" files and the
//! `*_device` limits; both: `/proc/<pid>/cgroup`. A malformed line is
//! skipped, never a panic.

use serde::{Deserialize, Serialize};

use crate::collect::parse_u64;

/// A block device as the cgroup files name it ("MAJ:MIN").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(default)]
pub struct DevId {
    pub major: u32,
    pub minor: u32,
}

impl std::fmt::Display for DevId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.major, self.minor)
    }
}

fn parse_devid(b: &[u8]) -> Option<DevId> {
    let colon = b.iter().position(|&c| c == b':')?;
    Some(DevId {
        major: u32::try_from(parse_u64(&b[..colon])?).ok()?,
        minor: u32::try_from(parse_u64(&b[colon + 1..])?).ok()?,
    })
}

fn words(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|c| c.is_ascii_whitespace()).filter(|w| !w.is_empty())
}

fn lines(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    buf.split(|&c| c == b'\n')
}

/// The iocost fields of a v2 `io.stat` line (all in µs except `vrate`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IoCost {
    /// `cost.vrate`: the device's current vrate in % (root cgroup only).
    pub vrate: Option<f64>,
    pub usage_us: Option<u64>,
    pub wait_us: Option<u64>,
    pub indebt_us: Option<u64>,
    pub indelay_us: Option<u64>,
}

impl IoCost {
    pub fn is_empty(&self) -> bool {
        *self == IoCost::default()
    }
}

/// Cumulative I/O of one cgroup on one device, as the kernel counted it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DevCounters {
    pub dev: DevId,
    pub rbytes: u64,
    pub wbytes: u64,
    pub rios: u64,
    pub wios: u64,
    /// Discards: v2 (5.x+) only; `None` where the file has no such field.
    pub dbytes: Option<u64>,
    pub dios: Option<u64>,
    pub iocost: IoCost,
}

/// v2 `io.stat`: "8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353
/// dbytes=0 dios=0 cost.usage=..." one line per device.
pub fn parse_io_stat(buf: &[u8]) -> Vec<DevCounters> {
    let mut out = Vec::new();
    for line in lines(buf) {
        let mut w = words(line);
        let Some(dev) = w.next().and_then(parse_devid) else {
            continue;
        };
        let mut c = DevCounters {
            dev,
            ..Default::default()
        };
        let mut seen = 0u8;
        for kv in w {
            let Some(eq) = kv.iter().position(|&c| c == b'=') else {
                continue;
            };
            let (k, v) = (&kv[..eq], &kv[eq + 1..]);
            let n = parse_u64(v);
            match k {
                b"rbytes" => (c.rbytes, seen) = (n.unwrap_or(0), seen | u8::from(n.is_some())),
                b"wbytes" => (c.wbytes, seen) = (n.unwrap_or(0), seen | (u8::from(n.is_some()) << 1)),
                b"rios" => (c.rios, seen) = (n.unwrap_or(0), seen | (u8::from(n.is_some()) << 2)),
                b"wios" => (c.wios, seen) = (n.unwrap_or(0), seen | (u8::from(n.is_some()) << 3)),
                b"dbytes" => c.dbytes = n,
                b"dios" => c.dios = n,
                b"cost.vrate" => c.iocost.vrate = std::str::from_utf8(v).ok().and_then(|s| s.parse().ok()),
                b"cost.usage" => c.iocost.usage_us = n,
                b"cost.wait" => c.iocost.wait_us = n,
                b"cost.indebt" => c.iocost.indebt_us = n,
                b"cost.indelay" => c.iocost.indelay_us = n,
                _ => {}
            }
        }
        // A line without the four basic counters is not trusted at all.
        if seen == 0b1111 {
            out.push(c);
        }
    }
    out
}

/// v1 "rwstat" files (`blkio.throttle.io_service_bytes`, `io_serviced`,
/// `blkio.bfq.*`): "7:0 Read 26214400" lines per device and operation,
/// then "Total N". Returns (device, read, write) per device; the discard
/// line, where the kernel prints one, in the last field.
pub fn parse_rwstat(buf: &[u8]) -> Vec<(DevId, u64, u64, Option<u64>)> {
    let mut out: Vec<(DevId, u64, u64, Option<u64>)> = Vec::new();
    for line in lines(buf) {
        let mut w = words(line);
        let (Some(dev), Some(op), Some(v)) = (w.next().and_then(parse_devid), w.next(), w.next().and_then(parse_u64))
        else {
            continue;
        };
        let i = match out.iter().position(|e| e.0 == dev) {
            Some(i) => i,
            None => {
                out.push((dev, 0, 0, None));
                out.len() - 1
            }
        };
        match op {
            b"Read" => out[i].1 = v,
            b"Write" => out[i].2 = v,
            b"Discard" => out[i].3 = Some(v),
            _ => {}
        }
    }
    out
}

/// Join a v1 bytes file and an ios file into per-device counters.
pub fn join_rwstat(
    bytes: &[(DevId, u64, u64, Option<u64>)],
    ios: &[(DevId, u64, u64, Option<u64>)],
) -> Vec<DevCounters> {
    bytes
        .iter()
        .filter_map(|&(dev, rb, wb, db)| {
            let &(_, ri, wi, di) = ios.iter().find(|e| e.0 == dev)?;
            Some(DevCounters {
                dev,
                rbytes: rb,
                wbytes: wb,
                rios: ri,
                wios: wi,
                dbytes: db,
                dios: di,
                iocost: IoCost::default(),
            })
        })
        .collect()
}

/// Throttle limits of one cgroup on one device; `None` = no limit ("max").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Limits {
    pub rbps: Option<u64>,
    pub wbps: Option<u64>,
    pub riops: Option<u64>,
    pub wiops: Option<u64>,
}

impl Limits {
    pub fn is_empty(&self) -> bool {
        *self == Limits::default()
    }

    /// The smaller of each limit (a missing limit is no bound).
    pub fn min(&self, o: &Limits) -> Limits {
        let m = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        Limits {
            rbps: m(self.rbps, o.rbps),
            wbps: m(self.wbps, o.wbps),
            riops: m(self.riops, o.riops),
            wiops: m(self.wiops, o.wiops),
        }
    }
}

/// v2 `io.max`: "8:16 rbps=2097152 wbps=max riops=max wiops=120".
pub fn parse_io_max(buf: &[u8]) -> Vec<(DevId, Limits)> {
    let mut out = Vec::new();
    for line in lines(buf) {
        let mut w = words(line);
        let Some(dev) = w.next().and_then(parse_devid) else {
            continue;
        };
        let mut l = Limits::default();
        for kv in w {
            let Some(eq) = kv.iter().position(|&c| c == b'=') else {
                continue;
            };
            // "max" (or anything unparsable) is no limit.
            let v = parse_u64(&kv[eq + 1..]);
            match &kv[..eq] {
                b"rbps" => l.rbps = v,
                b"wbps" => l.wbps = v,
                b"riops" => l.riops = v,
                b"wiops" => l.wiops = v,
                _ => {}
            }
        }
        if !l.is_empty() {
            out.push((dev, l));
        }
    }
    out
}

/// Which v1 limit file a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V1Limit {
    ReadBps,
    WriteBps,
    ReadIops,
    WriteIops,
}

impl V1Limit {
    pub const ALL: [(V1Limit, &'static str); 4] = [
        (V1Limit::ReadBps, "blkio.throttle.read_bps_device"),
        (V1Limit::WriteBps, "blkio.throttle.write_bps_device"),
        (V1Limit::ReadIops, "blkio.throttle.read_iops_device"),
        (V1Limit::WriteIops, "blkio.throttle.write_iops_device"),
    ];
}

/// Fold one v1 `blkio.throttle.*_device` file ("7:0 20000000" per line)
/// into per-device limits.
pub fn add_v1_limits(out: &mut Vec<(DevId, Limits)>, which: V1Limit, buf: &[u8]) {
    for line in lines(buf) {
        let mut w = words(line);
        let (Some(dev), Some(v)) = (w.next().and_then(parse_devid), w.next().and_then(parse_u64)) else {
            continue;
        };
        if v == 0 {
            continue;
        }
        let i = match out.iter().position(|e| e.0 == dev) {
            Some(i) => i,
            None => {
                out.push((dev, Limits::default()));
                out.len() - 1
            }
        };
        let slot = match which {
            V1Limit::ReadBps => &mut out[i].1.rbps,
            V1Limit::WriteBps => &mut out[i].1.wbps,
            V1Limit::ReadIops => &mut out[i].1.riops,
            V1Limit::WriteIops => &mut out[i].1.wiops,
        };
        *slot = Some(v);
    }
}

/// A proportional weight: `io.weight`, `io.bfq.weight` ("default 100" then
/// "8:16 200" lines) or a v1 `blkio.bfq.weight` (one number).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Weight {
    pub default: Option<u64>,
    pub per_device: Vec<(DevId, u64)>,
}

pub fn parse_weight(buf: &[u8]) -> Option<Weight> {
    let mut w = Weight::default();
    for line in lines(buf) {
        let mut f = words(line);
        match (f.next(), f.next()) {
            (Some(b"default"), Some(v)) => w.default = parse_u64(v),
            (Some(v), None) => w.default = w.default.or(parse_u64(v)),
            (Some(d), Some(v)) => {
                if let (Some(dev), Some(v)) = (parse_devid(d), parse_u64(v)) {
                    w.per_device.push((dev, v));
                }
            }
            _ => {}
        }
    }
    (w != Weight::default()).then_some(w)
}

/// v2 `io.latency`: "8:16 target=75000" (µs) per device.
pub fn parse_io_latency(buf: &[u8]) -> Vec<(DevId, u64)> {
    lines(buf)
        .filter_map(|line| {
            let mut w = words(line);
            let dev = w.next().and_then(parse_devid)?;
            let v = w.find_map(|kv| kv.strip_prefix(b"target="))?;
            Some((dev, parse_u64(v)?))
        })
        .collect()
}

/// The cgroups of one process, from `/proc/<pid>/cgroup`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcCgroups<'a> {
    /// The v1 blkio hierarchy's path.
    pub blkio: Option<&'a [u8]>,
    /// The v2 ("0::") path.
    pub unified: Option<&'a [u8]>,
    /// The v1 `name=systemd` path (hybrid systemd layouts).
    pub systemd: Option<&'a [u8]>,
}

pub fn parse_proc_cgroup(buf: &[u8]) -> ProcCgroups<'_> {
    let mut out = ProcCgroups::default();
    for line in lines(buf) {
        // "ID:controllers:path"; the path itself may contain ':'.
        let mut parts = line.splitn(3, |&c| c == b':');
        let (Some(id), Some(ctrl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if id == b"0" && ctrl.is_empty() {
            out.unified = Some(path);
        } else if ctrl == b"name=systemd" {
            out.systemd = Some(path);
        } else if ctrl.split(|&c| c == b',').any(|c| c == b"blkio") {
            out.blkio = Some(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(major: u32, minor: u32) -> DevId {
        DevId { major, minor }
    }

    #[test]
    fn io_stat_with_iocost_and_bad_lines() {
        let s = b"8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 dbytes=0 dios=0 cost.vrate=100.00 cost.usage=1200 cost.wait=30 cost.indebt=0 cost.indelay=0\n\
                  8:0 rbytes=90430464 wbytes=299008000 rios=8950 wios=1252 dbytes=50331648 dios=3021\n\
                  7:0 rbytes=12 wbytes=x rios=1 wios=1\n\
                  garbage line\n";
        let v = parse_io_stat(s);
        assert_eq!(v.len(), 2, "{v:?}");
        assert_eq!(v[0].dev, dev(8, 16));
        assert_eq!(
            (v[0].rbytes, v[0].wbytes, v[0].rios, v[0].wios),
            (1_459_200, 314_773_504, 192, 353)
        );
        assert_eq!(v[0].iocost.vrate, Some(100.0));
        assert_eq!(v[0].iocost.usage_us, Some(1200));
        assert_eq!(v[1].dbytes, Some(50_331_648));
        assert!(v[1].iocost.is_empty());
    }

    #[test]
    fn v1_rwstat_joined() {
        let b = b"7:0 Read 26214400\n7:0 Write 4096\n7:0 Sync 26214400\n7:0 Async 4096\n7:0 Discard 0\n7:0 Total 26218496\nTotal 26218496\n";
        let i = b"7:0 Read 400\n7:0 Write 1\n7:0 Sync 400\n7:0 Async 1\n7:0 Discard 0\n7:0 Total 401\nTotal 401\n";
        let c = join_rwstat(&parse_rwstat(b), &parse_rwstat(i));
        assert_eq!(c.len(), 1);
        assert_eq!(
            (c[0].rbytes, c[0].wbytes, c[0].rios, c[0].wios),
            (26_214_400, 4096, 400, 1)
        );
        assert_eq!(c[0].dbytes, Some(0));
        assert!(parse_rwstat(b"Total 0\n").is_empty());
    }

    #[test]
    fn limits_v2_and_v1() {
        let l = parse_io_max(
            b"8:16 rbps=2097152 wbps=max riops=max wiops=120\n8:0 rbps=max wbps=max riops=max wiops=max\n",
        );
        assert_eq!(
            l,
            [(
                dev(8, 16),
                Limits {
                    rbps: Some(2_097_152),
                    wiops: Some(120),
                    ..Default::default()
                }
            )]
        );
        let mut v1 = Vec::new();
        add_v1_limits(&mut v1, V1Limit::ReadBps, b"7:0 20000000\n8:0 0\n");
        add_v1_limits(&mut v1, V1Limit::WriteIops, b"7:0 50\n");
        assert_eq!(
            v1,
            [(
                dev(7, 0),
                Limits {
                    rbps: Some(20_000_000),
                    wiops: Some(50),
                    ..Default::default()
                }
            )]
        );
        let a = Limits {
            rbps: Some(10),
            wbps: Some(5),
            ..Default::default()
        };
        let b = Limits {
            rbps: Some(3),
            riops: Some(7),
            ..Default::default()
        };
        assert_eq!(
            a.min(&b),
            Limits {
                rbps: Some(3),
                wbps: Some(5),
                riops: Some(7),
                wiops: None
            }
        );
    }

    #[test]
    fn weights_latency_and_proc_cgroup() {
        let w = parse_weight(b"default 100\n8:16 200\n").unwrap();
        assert_eq!(w.default, Some(100));
        assert_eq!(w.per_device, [(dev(8, 16), 200)]);
        assert_eq!(parse_weight(b"500\n").unwrap().default, Some(500));
        assert_eq!(parse_weight(b""), None);
        assert_eq!(parse_io_latency(b"8:16 target=75000\n"), [(dev(8, 16), 75_000)]);
        let p =
            parse_proc_cgroup(b"9:name=systemd:/system.slice/nginx.service\n7:blkio,net_cls:/system.slice\n0::/a:b\n");
        assert_eq!(p.systemd, Some(&b"/system.slice/nginx.service"[..]));
        assert_eq!(p.blkio, Some(&b"/system.slice"[..]));
        assert_eq!(p.unified, Some(&b"/a:b"[..]));
    }
}
