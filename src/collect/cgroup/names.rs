//! Names people know for a cgroup path: systemd units, Docker and Podman
//! containers, Kubernetes pods and their containers; the plain path
//! otherwise. Pure functions of the path (the container names that can be
//! read locally are looked up by the collector).

use serde::{Deserialize, Serialize};

/// What a cgroup is, as far as its path tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CgroupKind {
    /// The hierarchy's root ("/").
    Root,
    /// A systemd unit: service, scope, slice, socket, mount, swap.
    Systemd,
    Docker,
    Podman,
    Kubernetes,
    /// Anything else: shown by its path.
    Path,
}

impl CgroupKind {
    pub fn label(self) -> &'static str {
        match self {
            CgroupKind::Root => "root",
            CgroupKind::Systemd => "systemd",
            CgroupKind::Docker => "docker",
            CgroupKind::Podman => "podman",
            CgroupKind::Kubernetes => "k8s",
            CgroupKind::Path => "path",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CgroupName {
    pub kind: CgroupKind,
    /// "nginx.service", "docker 3f2a9c1d8e7b", "pod 7c1e…/cri 0a1b2c3d4e5f", or the path.
    pub name: String,
    /// Full container id (Docker, Podman, Kubernetes container).
    pub container_id: Option<String>,
    /// Kubernetes pod UID (with dashes).
    pub pod_uid: Option<String>,
}

const UNIT_SUFFIXES: [&str; 6] = [".service", ".scope", ".slice", ".socket", ".mount", ".swap"];

fn is_hex_id(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|c| c.is_ascii_hexdigit())
}

/// "docker-<id>.scope", "cri-containerd-<id>.scope", "crio-<id>.scope",
/// "libpod-<id>.scope", "libpod-<id>" or a bare id: (runtime, id).
fn container_of(comp: &str) -> Option<(&str, &str)> {
    if is_hex_id(comp) {
        return Some(("", comp));
    }
    let base = comp.strip_suffix(".scope").unwrap_or(comp);
    for rt in ["docker", "cri-containerd", "crio", "libpod-conmon", "libpod"] {
        if let Some(id) = base.strip_prefix(rt).and_then(|r| r.strip_prefix('-'))
            && is_hex_id(id)
        {
            return Some((rt, id));
        }
    }
    None
}

/// The pod UID in "pod<uid>" (cgroupfs driver) or
/// "kubepods-<qos>-pod<uid with _>.slice" (systemd driver).
fn pod_of(comp: &str) -> Option<String> {
    let base = comp.strip_suffix(".slice").unwrap_or(comp);
    let at = base.rfind("pod")?;
    let uid = &base[at + 3..];
    let ok = uid.len() >= 32 && uid.bytes().all(|c| c.is_ascii_hexdigit() || c == b'-' || c == b'_');
    ok.then(|| uid.replace('_', "-"))
}

fn short(id: &str) -> &str {
    &id[..12.min(id.len())]
}

/// Name a cgroup by its path relative to the hierarchy root.
pub fn name_of(path: &str) -> CgroupName {
    let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
    let plain = |kind| CgroupName {
        kind,
        name: if path.is_empty() {
            "/".to_string()
        } else {
            path.to_string()
        },
        container_id: None,
        pod_uid: None,
    };
    let Some(&last) = comps.last() else {
        return plain(CgroupKind::Root);
    };
    if comps.iter().any(|c| c.starts_with("kubepods")) {
        let pod_at = comps.iter().rposition(|c| pod_of(c).is_some());
        if let Some(i) = pod_at {
            let uid = pod_of(comps[i]);
            let ctr = comps.get(i + 1).and_then(|c| container_of(c));
            let mut name = format!("pod {}", uid.as_deref().unwrap_or("?"));
            if let Some((_, id)) = ctr {
                name = format!("{name} / {}", short(id));
            }
            return CgroupName {
                kind: CgroupKind::Kubernetes,
                name,
                container_id: ctr.map(|(_, id)| id.to_string()),
                pod_uid: uid,
            };
        }
        // A QoS slice ("kubepods-burstable.slice") or the top "kubepods".
        return CgroupName {
            name: last.strip_suffix(".slice").unwrap_or(last).to_string(),
            ..plain(CgroupKind::Kubernetes)
        };
    }
    let parent = comps.len().checked_sub(2).map(|i| comps[i]);
    if let Some((rt, id)) = container_of(last) {
        let kind = match (rt, parent) {
            ("libpod" | "libpod-conmon", _) | ("", Some("libpod_parent")) => CgroupKind::Podman,
            ("docker", _) | ("", Some("docker")) => CgroupKind::Docker,
            _ => CgroupKind::Path,
        };
        if kind != CgroupKind::Path {
            let what = if rt == "libpod-conmon" {
                "podman conmon"
            } else {
                kind.label()
            };
            return CgroupName {
                kind,
                name: format!("{what} {}", short(id)),
                container_id: Some(id.to_string()),
                pod_uid: None,
            };
        }
    }
    if UNIT_SUFFIXES.iter().any(|s| last.ends_with(s)) {
        return CgroupName {
            name: last.to_string(),
            ..plain(CgroupKind::Systemd)
        };
    }
    plain(CgroupKind::Path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a19";

    #[test]
    fn systemd_and_plain() {
        let n = name_of("/system.slice/nginx.service");
        assert_eq!((n.kind, n.name.as_str()), (CgroupKind::Systemd, "nginx.service"));
        let n = name_of("/user.slice/user-1000.slice/user@1000.service");
        assert_eq!(n.name, "user@1000.service");
        assert_eq!(name_of("/").kind, CgroupKind::Root);
        assert_eq!(name_of("").name, "/");
        let n = name_of("/batch/job7");
        assert_eq!((n.kind, n.name.as_str()), (CgroupKind::Path, "/batch/job7"));
    }

    #[test]
    fn containers() {
        let n = name_of(&format!("/system.slice/docker-{ID}.scope"));
        assert_eq!((n.kind, n.name.as_str()), (CgroupKind::Docker, "docker 3f2a9c1d8e7b"));
        assert_eq!(n.container_id.as_deref(), Some(ID));
        assert_eq!(name_of(&format!("/docker/{ID}")).kind, CgroupKind::Docker);
        let n = name_of(&format!("/machine.slice/libpod-{ID}.scope"));
        assert_eq!((n.kind, n.name.as_str()), (CgroupKind::Podman, "podman 3f2a9c1d8e7b"));
        assert_eq!(name_of(&format!("/libpod_parent/libpod-{ID}")).kind, CgroupKind::Podman);
        // A bare id under an unknown parent is only a path.
        assert_eq!(name_of(&format!("/other/{ID}")).kind, CgroupKind::Path);
    }

    #[test]
    fn kubernetes_both_drivers() {
        let uid = "7c1e2d3f-4a5b-6c7d-8e9f-0a1b2c3d4e5f";
        let n = name_of(&format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{ID}.scope",
            uid.replace('-', "_")
        ));
        assert_eq!(n.kind, CgroupKind::Kubernetes);
        assert_eq!(n.name, format!("pod {uid} / 3f2a9c1d8e7b"));
        assert_eq!(n.pod_uid.as_deref(), Some(uid));
        let n = name_of(&format!("/kubepods/besteffort/pod{uid}/{ID}"));
        assert_eq!(n.name, format!("pod {uid} / 3f2a9c1d8e7b"));
        let n = name_of(&format!("/kubepods/pod{uid}"));
        assert_eq!((n.name.as_str(), n.container_id), (&*format!("pod {uid}"), None));
        assert_eq!(
            name_of("/kubepods.slice/kubepods-besteffort.slice").name,
            "kubepods-besteffort"
        );
    }
}
