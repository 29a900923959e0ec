//! What a cgroup v2 path names: a Kubernetes pod and its container, a Docker or Podman
//! container, a systemd unit, or (for a layout irqlens does not know, or a malformed
//! path) only the path. Pure: the path comes from the probe's cgroup id, resolved by
//! collect, or from a recording.
//!
//! The layouts, as the kubelet makes them (`pkg/kubelet/cm/cgroup_manager_linux.go`,
//! `CgroupName.ToSystemd` and `ToCgroupfs`; `pod_container_manager_linux.go`, the
//! `pod<UID>` suffix; `qos_container_manager_linux.go`, guaranteed pods directly under
//! `kubepods`) and as cAdvisor recognises the runtimes' containers (`container/containerd`,
//! `container/crio`, `container/docker`: a 64-hex id, bare or as `<prefix>-<id>.scope`):
//!
//! - kubelet, systemd driver: every level is a slice named by its ancestors joined with
//!   `-`, a `-` inside a name escaped as `_` (so the UID's dashes are underscores):
//!   `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod<uid>.slice/cri-containerd-<id>.scope`,
//!   `/kubepods.slice/kubepods-pod<uid>.slice/crio-<id>.scope` (guaranteed), and
//!   `docker-<id>.scope` under the dockershim. A `--cgroup-root` adds its own levels in
//!   front (`/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/...`).
//! - kubelet, cgroupfs driver: `/kubepods/<qos>/pod<uid>/<id>`, `/kubepods/pod<uid>/<id>`
//!   (guaranteed); CRI-O names its containers `crio-<id>` there.
//! - Docker: `/system.slice/docker-<id>.scope` (systemd driver), `/docker/<id>` (cgroupfs).
//! - Podman: `/machine.slice/libpod-<id>.scope`, rootless under the user's
//!   `user@<uid>.service`, `/libpod_parent/libpod-<id>` (cgroupfs). Its `libpod-conmon-<id>.scope`
//!   is the monitor, not the container.
//! - systemd: the deepest unit on the path, `/system.slice/sshd.service`,
//!   `/user.slice/user-1000.slice/session-3.scope`; a cgroup a unit made inside itself
//!   (delegation) belongs to the unit.

use irqlens_model::workload::{
    CgroupId, CgroupNames, Container, ContainerRuntime, QosClass, TaskCgroup, Workload, WorkloadBy,
};

/// The longest path parsed (PATH_MAX): a longer one is not a cgroup path the kernel gives,
/// and stays a path.
const LONGEST_PATH: usize = 4096;

/// How long a container id is, in hex digits (a SHA-256 digest: Docker, containerd, CRI-O, Podman).
const CONTAINER_ID_DIGITS: usize = 64;

/// How many hex digits of a container id a short name shows (as `docker ps` does).
const SHORT_CONTAINER_ID: usize = 12;

/// How many characters of a pod UID a short name shows (its first group).
const SHORT_POD_UID: usize = 8;

/// The name prefixes of the runtimes' container cgroups (followed by the id, and `.scope`
/// under the systemd driver).
const RUNTIME_PREFIXES: [(&str, ContainerRuntime); 4] = [
    ("cri-containerd-", ContainerRuntime::Containerd),
    ("crio-", ContainerRuntime::Crio),
    ("docker-", ContainerRuntime::Docker),
    ("libpod-", ContainerRuntime::Podman),
];

/// The suffixes of the systemd units that have a cgroup.
const UNIT_SUFFIXES: [&str; 6] = [".service", ".scope", ".slice", ".socket", ".mount", ".swap"];

/// What the cgroup v2 `path` (from the hierarchy's root, as /proc/PID/cgroup's `0::` line
/// gives it) names. Never fails: an unknown or malformed path is `Workload::Cgroup`.
pub fn workload_of(path: &str) -> Workload {
    parse(path).unwrap_or_else(|| Workload::Cgroup {
        path: path.to_owned(),
    })
}

/// A short name for tables: `pod 1b2c3d4e…/containerd 3f4e5a6b7c8d`, `docker 3f4e5a6b7c8d`,
/// `sshd.service`, or the path.
pub fn short_name(workload: &Workload) -> String {
    match workload {
        Workload::Pod { uid, container, .. } => {
            let pod = format!("pod {}…", prefix(uid, SHORT_POD_UID));
            match container {
                Some(container) => format!("{pod}/{}", short_container(container)),
                None => pod,
            }
        }
        Workload::Container(container) => short_container(container),
        Workload::Unit { name } => name.clone(),
        Workload::Cgroup { path } => path.clone(),
    }
}

/// The shortest name of `short_name`'s: a pod's container alone (`containerd
/// 3f4e5a6b7c8d`), for a column too narrow for its pod too.
pub fn innermost_name(workload: &Workload) -> String {
    match workload {
        Workload::Pod {
            container: Some(container),
            ..
        } => short_container(container),
        _ => short_name(workload),
    }
}

/// Task cgroup `id` as documents show it, named by `names`; none if the id is unknown.
pub fn task_cgroup(id: CgroupId, names: &CgroupNames) -> Option<TaskCgroup> {
    let path = names.path(id.is_known().then_some(id)?);
    Some(TaskCgroup {
        id,
        path: path.map(str::to_owned),
        workload: path.map(workload_of),
    })
}

fn short_container(container: &Container) -> String {
    container_name(container, SHORT_CONTAINER_ID)
}

/// `<runtime> <id>`, the id cut to `chars` characters.
fn container_name(container: &Container, chars: usize) -> String {
    let runtime = container
        .runtime
        .map_or("container", ContainerRuntime::name);
    format!("{runtime} {}", prefix(&container.id, chars))
}

/// The first `chars` characters of `text` (all of it if shorter).
fn prefix(text: &str, chars: usize) -> &str {
    text.char_indices()
        .nth(chars)
        .map_or(text, |(end, _)| &text[..end])
}

/// What `path` names at the level `by` (`--by`), with [`WorkloadBy`]'s fallbacks: a pod
/// (its containers together) falls back to a container, a container to the deepest
/// systemd unit on the path, a unit to the path itself. `WorkloadBy::Cgroup` groups by
/// the path, and names it as fully as [`workload_of`] does.
pub fn workload_at(path: &str, by: WorkloadBy) -> Workload {
    let named = workload_of(path);
    match (by, named) {
        (WorkloadBy::Cgroup, named) => named,
        (WorkloadBy::Pod, Workload::Pod { uid, qos, .. }) => Workload::Pod {
            uid,
            qos,
            container: None,
        },
        (
            WorkloadBy::Pod | WorkloadBy::Container,
            named @ (Workload::Container(_)
            | Workload::Pod {
                container: Some(_), ..
            }),
        ) => named,
        _ => levels_of(path)
            .and_then(|levels| unit_of(&levels))
            .unwrap_or_else(|| Workload::Cgroup {
                path: path.to_owned(),
            }),
    }
}

/// The workload of a task whose cgroup is not named (unknown to the probe, or gone before
/// it was read), in every table and label.
pub const UNNAMED: &str = "[unknown]";

/// The key that groups tasks at the level `by`: the same for every path in one workload,
/// different for different workloads (full pod UIDs and container ids, a unit's own
/// cgroup path (two units of one name, a user's and the system's, are two workloads), or
/// the path; the kinds cannot collide: only a path starts with `/`, only a pod with
/// `pod `, and a container key names its runtime). Readable, but long: tables show
/// [`short_name`].
pub fn workload_key(path: &str, by: WorkloadBy) -> String {
    if by == WorkloadBy::Cgroup {
        return path.to_owned();
    }
    match workload_at(path, by) {
        Workload::Pod { uid, container, .. } => match container {
            Some(container) => format!("pod {uid}/{}", container_key(&container)),
            None => format!("pod {uid}"),
        },
        Workload::Container(container) => container_key(&container),
        Workload::Unit { name } => unit_path(path, &name).unwrap_or(name),
        Workload::Cgroup { path } => path,
    }
}

/// The path of unit `name`'s own cgroup in `path`: its deepest level so named.
fn unit_path(path: &str, name: &str) -> Option<String> {
    let levels: Vec<&str> = path.split('/').collect();
    let at = levels.iter().rposition(|level| *level == name)?;
    Some(levels[..=at].join("/"))
}

fn container_key(container: &Container) -> String {
    container_name(container, usize::MAX)
}

/// Whether the cgroup `path` is `ancestor` or below it, level by level (`/a/b` is not
/// below `/a/bc`); `/` holds every path.
pub fn is_within(path: &str, ancestor: &str) -> bool {
    let ancestor = ancestor.trim_end_matches('/');
    path.strip_prefix(ancestor)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The levels of a path the kernel could give, none for the root or a malformed path.
fn levels_of(path: &str) -> Option<Vec<&str>> {
    if path.len() > LONGEST_PATH {
        return None;
    }
    let levels: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    // the root, a trailing or doubled slash, and relative steps are no path the kernel gives
    let malformed = levels
        .iter()
        .any(|level| level.is_empty() || *level == "." || *level == "..");
    (!malformed).then_some(levels)
}

fn parse(path: &str) -> Option<Workload> {
    let levels = levels_of(path)?;
    if levels.iter().any(|level| is_kubepods(level)) {
        // a Kubernetes path is a pod or nothing known: a QoS level alone, or a pod
        // without a valid UID, is shown as its path
        return pod_of_systemd(&levels).or_else(|| pod_of_cgroupfs(&levels));
    }
    container_outside_kubernetes(&levels).or_else(|| unit_of(&levels))
}

/// Whether `level` is one of the kubelet's: `kubepods`, or a systemd slice named after it.
fn is_kubepods(level: &str) -> bool {
    level == "kubepods"
        || level
            .strip_suffix(".slice")
            .is_some_and(|stem| stem.split('-').any(|name| name == "kubepods"))
}

/// A pod under the systemd driver: `[<root>-]kubepods[-<qos>]-pod<uid>.slice`.
fn pod_of_systemd(levels: &[&str]) -> Option<Workload> {
    levels.iter().enumerate().find_map(|(at, level)| {
        let (ancestors, pod_name) = level.strip_suffix(".slice")?.rsplit_once('-')?;
        let uid = pod_uid(&pod_name.strip_prefix("pod")?.replace('_', "-"))?;
        let mut names = ancestors.rsplit('-');
        let qos = match names.next()? {
            "kubepods" => QosClass::Guaranteed,
            qos => {
                let qos = qos_named(qos)?;
                (names.next()? == "kubepods").then_some(qos)?
            }
        };
        Some(pod(uid, qos, levels.get(at + 1)))
    })
}

/// A pod under the cgroupfs driver: `kubepods/[<qos>/]pod<uid>`.
fn pod_of_cgroupfs(levels: &[&str]) -> Option<Workload> {
    let at = levels.iter().position(|level| *level == "kubepods")?;
    let (qos, pod_at) = match levels.get(at + 1).copied().and_then(qos_named) {
        Some(qos) => (qos, at + 2),
        None => (QosClass::Guaranteed, at + 1),
    };
    let uid = pod_uid(levels.get(pod_at)?.strip_prefix("pod")?)?;
    Some(pod(uid, qos, levels.get(pod_at + 1)))
}

/// The pod, with the container its child level names (none for the pod's own cgroup, or
/// a child that is no container, such as CRI-O's `crio-conmon-<id>.scope`).
fn pod(uid: String, qos: QosClass, child: Option<&&str>) -> Workload {
    Workload::Pod {
        uid,
        qos,
        container: child.and_then(|level| container_in_pod(level)),
    }
}

/// The QoS level names (guaranteed pods have none).
fn qos_named(name: &str) -> Option<QosClass> {
    match name {
        "besteffort" => Some(QosClass::BestEffort),
        "burstable" => Some(QosClass::Burstable),
        _ => None,
    }
}

/// A pod UID: a UUID (8-4-4-4-12 hex digits), or the 32 hex digits of a static pod's
/// (the hash of its manifest). Lowercased.
fn pod_uid(text: &str) -> Option<String> {
    let groups: Vec<&str> = text.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|group| group.len()).collect();
    let shaped = lengths == [8, 4, 4, 4, 12] || lengths == [32];
    let hex = groups
        .iter()
        .all(|group| group.bytes().all(|byte| byte.is_ascii_hexdigit()));
    (shaped && hex).then(|| text.to_ascii_lowercase())
}

/// A container in a pod: `<prefix>-<id>[.scope]` or, under cgroupfs, the bare id.
fn container_in_pod(level: &str) -> Option<Container> {
    runtime_container(level).or_else(|| {
        is_container_id(level).then(|| Container {
            runtime: None,
            id: level.to_owned(),
        })
    })
}

/// `<prefix>-<id>.scope`, or `<prefix>-<id>` (cgroupfs), of a known runtime.
fn runtime_container(level: &str) -> Option<Container> {
    let name = level.strip_suffix(".scope").unwrap_or(level);
    RUNTIME_PREFIXES.iter().find_map(|(prefix, runtime)| {
        let id = name.strip_prefix(prefix)?;
        is_container_id(id).then(|| Container {
            runtime: Some(*runtime),
            id: id.to_owned(),
        })
    })
}

/// The deepest Docker or Podman container on the path (the one the task is in, when
/// containers nest).
fn container_outside_kubernetes(levels: &[&str]) -> Option<Workload> {
    (0..levels.len())
        .rev()
        .find_map(|at| {
            runtime_container(levels[at]).or_else(|| {
                // Docker's cgroupfs driver: /docker/<id>
                (at > 0 && levels[at - 1] == "docker" && is_container_id(levels[at])).then(|| {
                    Container {
                        runtime: Some(ContainerRuntime::Docker),
                        id: levels[at].to_owned(),
                    }
                })
            })
        })
        .map(Workload::Container)
}

fn is_container_id(text: &str) -> bool {
    text.len() == CONTAINER_ID_DIGITS
        && text
            .bytes()
            .all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte))
}

/// The deepest systemd unit on the path.
fn unit_of(levels: &[&str]) -> Option<Workload> {
    levels
        .iter()
        .rev()
        .find(|level| is_unit_name(level))
        .map(|name| Workload::Unit {
            name: (*name).to_owned(),
        })
}

/// A systemd unit name: a known suffix after a non-empty stem of the characters systemd
/// allows (`systemd.unit(5)`: ASCII letters, digits, `:-_.\` and `@` for templates).
fn is_unit_name(level: &str) -> bool {
    UNIT_SUFFIXES.iter().any(|suffix| {
        level.strip_suffix(suffix).is_some_and(|stem| {
            !stem.is_empty()
                && stem
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b":-_.\\@".contains(&byte))
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const UID: &str = "1b2c3d4e-5f60-4718-89ab-cdef01234567";
    const STATIC_POD_UID: &str = "0123456789abcdef0123456789abcdef";

    /// A 64-hex container id, distinct per `seed`.
    fn container_id(seed: u8) -> String {
        format!("{seed:02x}").repeat(32)
    }

    fn underscored(uid: &str) -> String {
        uid.replace('-', "_")
    }

    fn pod(
        uid: &str,
        qos: QosClass,
        container: Option<(Option<ContainerRuntime>, &str)>,
    ) -> Workload {
        Workload::Pod {
            uid: uid.to_owned(),
            qos,
            container: container.map(|(runtime, id)| Container {
                runtime,
                id: id.to_owned(),
            }),
        }
    }

    /// `pod_path` names pod UID alone, and its child `level` the pod with container `id`.
    fn assert_pod_and_its_container(
        pod_path: &str,
        qos: QosClass,
        level: &str,
        runtime: Option<ContainerRuntime>,
        id: &str,
    ) {
        assert_eq!(workload_of(pod_path), pod(UID, qos, None), "{pod_path}");
        let path = format!("{pod_path}/{level}");
        let expected = pod(UID, qos, Some((runtime, id)));
        assert_eq!(workload_of(&path), expected, "{path}");
    }

    fn cgroup(path: &str) -> Workload {
        Workload::Cgroup {
            path: path.to_owned(),
        }
    }

    #[test]
    fn systemd_driver_pods_name_uid_qos_and_container_of_every_runtime() {
        let id = container_id(0x3f);
        let uid = underscored(UID);
        for (scope, runtime) in [
            (
                format!("cri-containerd-{id}.scope"),
                ContainerRuntime::Containerd,
            ),
            (format!("crio-{id}.scope"), ContainerRuntime::Crio),
            (format!("docker-{id}.scope"), ContainerRuntime::Docker),
        ] {
            for (qos_level, qos) in [
                (
                    "/kubepods-besteffort.slice/kubepods-besteffort",
                    QosClass::BestEffort,
                ),
                (
                    "/kubepods-burstable.slice/kubepods-burstable",
                    QosClass::Burstable,
                ),
                ("/kubepods", QosClass::Guaranteed),
            ] {
                let pod_path = format!("/kubepods.slice{qos_level}-pod{uid}.slice");
                assert_pod_and_its_container(&pod_path, qos, &scope, Some(runtime), &id);
            }
        }
    }

    #[test]
    fn a_cgroup_root_in_front_and_levels_below_the_container_keep_the_pod() {
        let id = container_id(0xa1);
        let path = format!(
            "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/\
             kubelet-kubepods-burstable-pod{}.slice/cri-containerd-{id}.scope/init",
            underscored(UID)
        );
        let expected = pod(
            UID,
            QosClass::Burstable,
            Some((Some(ContainerRuntime::Containerd), &id)),
        );
        assert_eq!(workload_of(&path), expected);
    }

    #[test]
    fn cgroupfs_driver_pods_name_uid_qos_and_the_bare_container_id() {
        let id = container_id(0x42);
        for (qos_level, qos) in [
            ("/besteffort", QosClass::BestEffort),
            ("/burstable", QosClass::Burstable),
            ("", QosClass::Guaranteed),
        ] {
            let pod_path = format!("/kubepods{qos_level}/pod{UID}");
            assert_pod_and_its_container(&pod_path, qos, &id, None, &id);
            let crio = format!("crio-{id}");
            let runtime = Some(ContainerRuntime::Crio);
            assert_pod_and_its_container(&pod_path, qos, &crio, runtime, &id);
        }
    }

    #[test]
    fn static_pods_have_a_hash_for_uid_and_uids_are_lowercased() {
        let path = format!("/kubepods.slice/kubepods-pod{STATIC_POD_UID}.slice");
        assert_eq!(
            workload_of(&path),
            pod(STATIC_POD_UID, QosClass::Guaranteed, None)
        );
        let upper = format!("/kubepods/burstable/pod{}", UID.to_ascii_uppercase());
        assert_eq!(workload_of(&upper), pod(UID, QosClass::Burstable, None));
    }

    #[test]
    fn a_pod_level_that_is_no_container_leaves_the_container_unnamed() {
        let id = container_id(0x07);
        let path = format!(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice/crio-conmon-{id}.scope",
            underscored(UID)
        );
        assert_eq!(workload_of(&path), pod(UID, QosClass::BestEffort, None));
    }

    #[test]
    fn docker_and_podman_containers_outside_kubernetes() {
        let id = container_id(0x5e);
        let docker = Workload::Container(Container {
            runtime: Some(ContainerRuntime::Docker),
            id: id.clone(),
        });
        let podman = Workload::Container(Container {
            runtime: Some(ContainerRuntime::Podman),
            id: id.clone(),
        });
        assert_eq!(
            workload_of(&format!("/system.slice/docker-{id}.scope")),
            docker
        );
        assert_eq!(workload_of(&format!("/docker/{id}")), docker);
        assert_eq!(
            workload_of(&format!("/machine.slice/libpod-{id}.scope")),
            podman
        );
        assert_eq!(
            workload_of(&format!("/machine.slice/libpod-{id}.scope/container")),
            podman
        );
        assert_eq!(workload_of(&format!("/libpod_parent/libpod-{id}")), podman);
        let rootless =
            format!("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-{id}.scope");
        assert_eq!(workload_of(&rootless), podman);
        // the monitor is not the container: its unit
        let conmon = format!("/machine.slice/libpod-conmon-{id}.scope");
        let unit = Workload::Unit {
            name: format!("libpod-conmon-{id}.scope"),
        };
        assert_eq!(workload_of(&conmon), unit);
    }

    #[test]
    fn nested_containers_name_the_innermost() {
        let (outer, inner) = (container_id(0x01), container_id(0x02));
        let path = format!("/docker/{outer}/docker/{inner}");
        let expected = Workload::Container(Container {
            runtime: Some(ContainerRuntime::Docker),
            id: inner,
        });
        assert_eq!(workload_of(&path), expected);
    }

    #[test]
    fn systemd_units_are_the_deepest_unit_on_the_path() {
        for (path, name) in [
            ("/system.slice/sshd.service", "sshd.service"),
            (
                "/user.slice/user-1000.slice/session-3.scope",
                "session-3.scope",
            ),
            ("/user.slice/user-1000.slice", "user-1000.slice"),
            (
                "/user.slice/user-1000.slice/user@1000.service/app.slice/app-org.gnome.Terminal.slice",
                "app-org.gnome.Terminal.slice",
            ),
            ("/init.scope", "init.scope"),
            (
                "/system.slice/containerd.service/delegated/leaf",
                "containerd.service",
            ),
            (
                "/system.slice/system-getty.slice/getty@tty1.service",
                "getty@tty1.service",
            ),
        ] {
            let expected = Workload::Unit { name: name.into() };
            assert_eq!(workload_of(path), expected, "{path}");
        }
    }

    #[test]
    fn unknown_layouts_fall_back_to_the_path() {
        for path in [
            "/",
            "/irqlens-test-noisy",
            "/a/b/c",
            "/.slice",
            "/weird name.service",
        ] {
            assert_eq!(workload_of(path), cgroup(path), "{path}");
        }
    }

    #[test]
    fn malformed_paths_fall_back_to_the_path() {
        let id = container_id(0x3f);
        let uid = underscored(UID);
        let too_long = format!("/system.slice/{}.service", "a".repeat(LONGEST_PATH));
        for path in [
            String::new(),
            "system.slice/sshd.service".into(),
            "/system.slice//sshd.service".into(),
            "/system.slice/sshd.service/".into(),
            "/system.slice/../sshd.service".into(),
            "/system.slice/./sshd.service".into(),
            // a pod without a valid UID
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod.slice".into(),
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podnot_a_uid.slice"
                .into(),
            format!("/kubepods.slice/kubepods-pod{}.slice", &uid[1..]),
            format!("/kubepods.slice/kubepods-pod{}x.slice", &uid[1..]),
            format!("/kubepods/besteffort/pod{uid}"),
            "/kubepods/besteffort/pod".into(),
            // a QoS level is no pod, nor an unknown QoS
            "/kubepods.slice/kubepods-besteffort.slice".into(),
            format!("/kubepods.slice/kubepods-gold.slice/kubepods-gold-pod{uid}.slice"),
            format!("/kubepods/gold/pod{UID}"),
            "/kubepods".into(),
            too_long.clone(),
        ] {
            assert_eq!(workload_of(&path), cgroup(&path), "{path:.80}");
        }
        // a short, long or uppercase container id is no container (its unit, then)
        for bad in [&id[1..], &format!("{id}0"), &id.to_ascii_uppercase()] {
            let path = format!("/system.slice/docker-{bad}.scope");
            let unit = Workload::Unit {
                name: format!("docker-{bad}.scope"),
            };
            assert_eq!(workload_of(&path), unit, "{path}");
            let path = format!("/docker/{bad}");
            assert_eq!(workload_of(&path), cgroup(&path), "{path}");
        }
    }

    #[test]
    fn short_names_shorten_uids_and_ids_as_docker_does() {
        let id = "3f4e5a6b7c8d".to_owned() + &"0".repeat(52);
        let in_pod = pod(
            UID,
            QosClass::BestEffort,
            Some((Some(ContainerRuntime::Containerd), &id)),
        );
        assert_eq!(short_name(&in_pod), "pod 1b2c3d4e…/containerd 3f4e5a6b7c8d");
        let bare = pod(UID, QosClass::Guaranteed, Some((None, &id)));
        assert_eq!(short_name(&bare), "pod 1b2c3d4e…/container 3f4e5a6b7c8d");
        assert_eq!(innermost_name(&bare), "container 3f4e5a6b7c8d");
        let pod_alone = pod(UID, QosClass::Burstable, None);
        assert_eq!(innermost_name(&pod_alone), short_name(&pod_alone));
        assert_eq!(
            short_name(&pod(UID, QosClass::Burstable, None)),
            "pod 1b2c3d4e…"
        );
        let podman = Workload::Container(Container {
            runtime: Some(ContainerRuntime::Podman),
            id,
        });
        assert_eq!(short_name(&podman), "podman 3f4e5a6b7c8d");
        assert_eq!(
            short_name(&workload_of("/system.slice/sshd.service")),
            "sshd.service"
        );
        assert_eq!(short_name(&workload_of("/a/b")), "/a/b");
        // a name shorter than the prefix shown, not on a character boundary: whole
        assert_eq!(prefix("é", SHORT_POD_UID), "é");
        assert_eq!(prefix("ééé", 2), "éé");
    }

    #[test]
    fn by_pod_folds_a_pods_containers_and_falls_back_to_container_unit_path() {
        let (one, two) = (container_id(0x11), container_id(0x22));
        let pod_slice = format!(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice",
            underscored(UID)
        );
        let first = format!("{pod_slice}/cri-containerd-{one}.scope");
        let second = format!("{pod_slice}/cri-containerd-{two}.scope");
        let cgroupfs = format!("/kubepods/besteffort/pod{UID}/{one}");
        let whole_pod = pod(UID, QosClass::BestEffort, None);
        for path in [&first, &second, &pod_slice, &cgroupfs] {
            assert_eq!(workload_at(path, WorkloadBy::Pod), whole_pod, "{path}");
            assert_eq!(workload_key(path, WorkloadBy::Pod), format!("pod {UID}"));
        }
        let docker = format!("/system.slice/docker-{two}.scope");
        assert_eq!(workload_at(&docker, WorkloadBy::Pod), workload_of(&docker));
        assert_eq!(
            workload_key(&docker, WorkloadBy::Pod),
            format!("docker {two}")
        );
        let unit = "/system.slice/sshd.service";
        assert_eq!(workload_key(unit, WorkloadBy::Pod), unit);
        for path in ["/irqlens-test-noisy", "/", "", "/a//b", "/a/../b"] {
            assert_eq!(workload_at(path, WorkloadBy::Pod), cgroup(path), "{path}");
            assert_eq!(workload_key(path, WorkloadBy::Pod), path);
        }
    }

    #[test]
    fn by_container_keeps_each_container_and_a_pods_own_cgroup_falls_back() {
        let (one, two) = (container_id(0x11), container_id(0x22));
        let pod_slice = format!(
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice",
            underscored(UID)
        );
        let first = format!("{pod_slice}/cri-containerd-{one}.scope");
        let second = format!("{pod_slice}/cri-containerd-{two}.scope/sub");
        assert_eq!(
            workload_key(&first, WorkloadBy::Container),
            format!("pod {UID}/containerd {one}")
        );
        assert_eq!(
            workload_key(&second, WorkloadBy::Container),
            format!("pod {UID}/containerd {two}")
        );
        // the pod's own cgroup names no container: its slice, the unit
        assert_eq!(workload_key(&pod_slice, WorkloadBy::Container), pod_slice);
        // cgroupfs has no unit: the path
        let cgroupfs = format!("/kubepods/pod{UID}");
        assert_eq!(workload_key(&cgroupfs, WorkloadBy::Container), cgroupfs);
        let podman = format!("/machine.slice/libpod-{two}.scope/container");
        assert_eq!(
            workload_key(&podman, WorkloadBy::Container),
            format!("podman {two}")
        );
        assert_eq!(
            workload_key(
                "/user.slice/user-1000.slice/session-3.scope",
                WorkloadBy::Container
            ),
            "/user.slice/user-1000.slice/session-3.scope"
        );
    }

    #[test]
    fn by_unit_is_the_deepest_unit_and_by_cgroup_the_path() {
        let id = container_id(0x33);
        let in_pod = format!(
            "/kubepods.slice/kubepods-pod{}.slice/crio-{id}.scope",
            underscored(UID)
        );
        assert_eq!(
            workload_at(&in_pod, WorkloadBy::Unit),
            Workload::Unit {
                name: format!("crio-{id}.scope")
            }
        );
        let cgroupfs = format!("/kubepods/pod{UID}/{id}");
        assert_eq!(workload_at(&cgroupfs, WorkloadBy::Unit), cgroup(&cgroupfs));
        let delegated = "/system.slice/containerd.service/delegated/leaf";
        assert_eq!(
            workload_key(delegated, WorkloadBy::Unit),
            "/system.slice/containerd.service"
        );
        // two units of one name, the system's and a user's, are two workloads
        let users = "/user.slice/user-1000.slice/user@1000.service/app.slice/containerd.service";
        assert_eq!(workload_key(users, WorkloadBy::Unit), users);
        assert_eq!(
            workload_at(users, WorkloadBy::Unit),
            workload_at(delegated, WorkloadBy::Unit)
        );
        assert_eq!(workload_key(delegated, WorkloadBy::Cgroup), delegated);
        // by cgroup, the key is the path and the name as full as it gets
        assert_eq!(workload_key(&in_pod, WorkloadBy::Cgroup), in_pod);
        assert_eq!(
            workload_at(&in_pod, WorkloadBy::Cgroup),
            workload_of(&in_pod)
        );
        for path in ["/a/b.service/", "/x/./y.service", "relative.service"] {
            assert_eq!(workload_at(path, WorkloadBy::Unit), cgroup(path), "{path}");
        }
    }

    #[test]
    fn within_is_level_by_level_not_by_characters() {
        assert!(is_within("/a/b", "/a/b"));
        assert!(is_within("/a/b/c", "/a/b"));
        assert!(is_within("/a/b/c", "/a/b/"));
        assert!(!is_within("/a/bc", "/a/b"));
        assert!(!is_within("/a", "/a/b"));
        assert!(is_within("/a", "/"));
        assert!(is_within("/", "/"));
        assert!(!is_within("/b", "/a"));
    }

    proptest! {
        #[test]
        fn every_level_names_any_string_without_panic(path in "\\PC{0,120}") {
            for by in [WorkloadBy::Cgroup, WorkloadBy::Pod, WorkloadBy::Container, WorkloadBy::Unit] {
                let key = workload_key(&path, by);
                prop_assert!(!key.is_empty() || path.is_empty());
            }
        }


        #[test]
        fn any_string_is_named_without_panic_and_a_fallback_keeps_it(path in "\\PC{0,200}") {
            if let Workload::Cgroup { path: kept } = workload_of(&path) {
                prop_assert_eq!(kept, path);
            }
        }

        #[test]
        fn pod_shaped_paths_of_any_levels_never_panic(
            levels in proptest::collection::vec(
                prop_oneof![
                    Just("kubepods".to_owned()),
                    Just("kubepods.slice".to_owned()),
                    "kubepods-(besteffort|burstable)?-?pod[0-9a-f_-]{0,40}\\.slice",
                    "pod[0-9a-f-]{0,40}",
                    "(cri-containerd-|crio-|docker-|libpod-)?[0-9a-f]{60,68}(\\.scope)?",
                    "[a-z.@_-]{0,12}",
                ],
                0..8,
            )
        ) {
            let path = format!("/{}", levels.join("/"));
            let _ = short_name(&workload_of(&path));
        }
    }
}
