//! Workloads: the cgroup a task runs in, and what its path names (a Kubernetes pod and
//! container, a Docker or Podman container, a systemd unit). Plain data: analyze names a
//! path (`irqlens_analyze::workload::workload_of`), collect resolves an id to its path.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::kernel::Comm;

/// A cgroup v2 id: the inode number of the cgroup's directory in the cgroup2 file system,
/// which is what BPF's `bpf_get_current_cgroup_id()` and `task->cgroups->dfl_cgrp->kn->id`
/// give (64-bit kernfs ids, Linux 5.5 and later).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(transparent)]
pub struct CgroupId(pub u64);

impl CgroupId {
    /// No id: a recording older than the field, or a task the probe could not read. Real
    /// ids start above it (the root cgroup's is 1).
    pub const UNKNOWN: CgroupId = CgroupId(0);

    /// Whether the id names a cgroup.
    pub fn is_known(self) -> bool {
        self != Self::UNKNOWN
    }
}

/// A thread as a cause or a chain names it: its name and its cgroup, so that two threads
/// of one name in two workloads (a `worker` in each of two pods) are told apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NamedThread {
    /// Its comm.
    pub comm: Comm,
    /// Its cgroup v2 id (unknown in recordings older than the field).
    pub cgroup: CgroupId,
}

impl NamedThread {
    /// Thread `comm` in cgroup `cgroup`.
    pub fn new(comm: Comm, cgroup: CgroupId) -> Self {
        NamedThread { comm, cgroup }
    }

    /// Thread `name`, its cgroup unknown (a recording older than the field).
    pub fn named(name: &str) -> Self {
        NamedThread::new(Comm::new(name), CgroupId::UNKNOWN)
    }
}

/// A Kubernetes pod's quality of service class, which the kubelet makes a level of the
/// cgroup tree (guaranteed pods sit directly under `kubepods`).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum QosClass {
    /// Requests equal limits for every resource.
    Guaranteed,
    /// Some requests or limits, not all equal.
    Burstable,
    /// No requests or limits.
    BestEffort,
}

/// The container runtime a cgroup's name shows (none in the kubelet's cgroupfs layout,
/// where a container's cgroup is its bare id).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ContainerRuntime {
    /// containerd's CRI plugin (`cri-containerd-<id>.scope`).
    Containerd,
    /// CRI-O (`crio-<id>.scope`).
    Crio,
    /// Docker, or the kubelet's dockershim (`docker-<id>.scope`, `/docker/<id>`).
    Docker,
    /// Podman (`libpod-<id>.scope`).
    Podman,
}

impl ContainerRuntime {
    /// The runtime's name, as serialized and shown.
    pub fn name(self) -> &'static str {
        match self {
            ContainerRuntime::Containerd => "containerd",
            ContainerRuntime::Crio => "crio",
            ContainerRuntime::Docker => "docker",
            ContainerRuntime::Podman => "podman",
        }
    }
}

/// A container: its full id (64 lowercase hex digits) and, when the path shows it, its runtime.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct Container {
    /// The runtime, if the cgroup's name shows it.
    pub runtime: Option<ContainerRuntime>,
    /// The container id, 64 lowercase hex digits.
    pub id: String,
}

/// What a cgroup v2 path names.
#[derive(
    Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Workload {
    /// A Kubernetes pod, and the container in it when the path goes that deep.
    Pod {
        /// The pod's UID, with dashes (as the API server shows it), lowercase.
        uid: String,
        /// The pod's QoS class.
        qos: QosClass,
        /// The container, if the path names one (not the pod's own cgroup).
        container: Option<Container>,
    },
    /// A container outside Kubernetes (Docker, Podman).
    Container(Container),
    /// A systemd unit: a service, a scope (a login session, a transient unit) or a slice.
    Unit {
        /// The unit's name, e.g. `sshd.service`, `session-3.scope`, `user-1000.slice`.
        name: String,
    },
    /// A cgroup whose layout irqlens does not know: only its path.
    Cgroup {
        /// The cgroup v2 path, from the hierarchy's root (`/` is the root).
        path: String,
    },
}

impl Workload {
    /// Its kind, as serialized and shown: `pod`, `container`, `unit` or `cgroup`.
    pub fn kind(&self) -> &'static str {
        match self {
            Workload::Pod { .. } => "pod",
            Workload::Container(_) => "container",
            Workload::Unit { .. } => "unit",
            Workload::Cgroup { .. } => "cgroup",
        }
    }
}

/// What rows are grouped by (`--by`): a workload at one level of naming. A task whose
/// cgroup does not name that level falls back to the next finer name it has (a systemd
/// service under `--by pod` is its unit; an unknown layout is its path).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkloadBy {
    /// The cgroup v2 path itself.
    Cgroup,
    /// The Kubernetes pod (its containers together).
    Pod,
    /// The container (a pod's or a plain Docker/Podman one).
    Container,
    /// The systemd unit.
    Unit,
}

impl WorkloadBy {
    /// Its name on the command line and in documents.
    pub fn name(self) -> &'static str {
        match self {
            WorkloadBy::Cgroup => "cgroup",
            WorkloadBy::Pod => "pod",
            WorkloadBy::Container => "container",
            WorkloadBy::Unit => "unit",
        }
    }
}

/// The cgroup v2 paths of the cgroup ids a run saw, so that a recording can name them
/// without the live machine (a cgroup may be gone by the time it is read).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CgroupNames {
    /// Id → path from the hierarchy's root.
    #[serde(deserialize_with = "ids_from_keys")]
    pub paths: BTreeMap<CgroupId, String>,
}

/// JSON keys are strings: serde reads a number from one when it parses the text itself,
/// but not when a recording's line was buffered first (an internally tagged enum's
/// variant, as `Line::End` is), so the ids are parsed here.
fn ids_from_keys<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<CgroupId, String>, D::Error> {
    use serde::de::Error;
    let by_key = BTreeMap::<String, String>::deserialize(deserializer)?;
    by_key
        .into_iter()
        .map(|(key, path)| match key.parse() {
            Ok(id) => Ok((CgroupId(id), path)),
            Err(_) => Err(D::Error::custom(format!(
                "cgroup id {key:?} is not a number"
            ))),
        })
        .collect()
}

impl CgroupNames {
    /// The path of `id`, if known.
    pub fn path(&self, id: CgroupId) -> Option<&str> {
        self.paths.get(&id).map(String::as_str)
    }

    /// Records `path` as the path of `id` (a later name replaces an earlier one: ids are
    /// not reused while the kernel runs, but a cgroup can be renamed).
    pub fn insert(&mut self, id: CgroupId, path: String) {
        self.paths.insert(id, path);
    }
}

/// A task's cgroup as the documents show it: the probe's id, its path and what the path
/// names (the path and workload are none when no name is known: the cgroup was gone
/// before it was read, or a recording does not name it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TaskCgroup {
    /// The cgroup v2 id.
    pub id: CgroupId,
    /// Its path from the hierarchy's root.
    pub path: Option<String>,
    /// What the path names.
    pub workload: Option<Workload>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_json_with_ids_as_keys() {
        let mut names = CgroupNames::default();
        names.insert(CgroupId(1), "/".into());
        names.insert(CgroupId(4242), "/system.slice/sshd.service".into());
        let text = serde_json::to_string(&names).unwrap();
        assert_eq!(
            text,
            r#"{"paths":{"1":"/","4242":"/system.slice/sshd.service"}}"#
        );
        let back: CgroupNames = serde_json::from_str(&text).unwrap();
        assert_eq!(back, names);
        assert_eq!(
            back.path(CgroupId(4242)),
            Some("/system.slice/sshd.service")
        );
        assert_eq!(back.path(CgroupId(7)), None);
        // buffered first, as a tagged enum's variant is
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::from_value::<CgroupNames>(value).unwrap(), names);
        let bad = serde_json::json!({"paths": {"x1": "/"}});
        let error = serde_json::from_value::<CgroupNames>(bad).unwrap_err();
        assert!(
            error.to_string().contains("\"x1\" is not a number"),
            "{error}"
        );
    }

    #[test]
    fn a_pod_serializes_tagged_with_its_qos_in_lowercase() {
        let pod = Workload::Pod {
            uid: "1b2c3d4e-0000-4000-8000-000000000001".into(),
            qos: QosClass::BestEffort,
            container: Some(Container {
                runtime: Some(ContainerRuntime::Containerd),
                id: "ab".repeat(32),
            }),
        };
        let value = serde_json::to_value(&pod).unwrap();
        assert_eq!(value["kind"], "pod");
        assert_eq!(value["qos"], "besteffort");
        assert_eq!(value["container"]["runtime"], "containerd");
        assert_eq!(value["kind"], pod.kind());
        assert_eq!(serde_json::from_value::<Workload>(value).unwrap(), pod);
    }

    #[test]
    fn runtime_names_are_their_serialized_names() {
        for runtime in [
            ContainerRuntime::Containerd,
            ContainerRuntime::Crio,
            ContainerRuntime::Docker,
            ContainerRuntime::Podman,
        ] {
            assert_eq!(serde_json::to_value(runtime).unwrap(), runtime.name());
        }
    }
}
