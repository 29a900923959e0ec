//! Cgroups (root): a process in a Kubernetes-shaped cgroup v2 path is found there, its
//! cgroup's id resolves to that path, and the path names its pod and container.

use std::process::{Child, Command};
use std::time::{SystemTime, UNIX_EPOCH};

use irqlens_analyze::workload::workload_of;
use irqlens_collect::cgroup::{CgroupResolver, path_of_process};
use irqlens_model::workload::{Container, ContainerRuntime, QosClass, Workload};
use irqlens_test_support::cgroup_bed::CgroupBed;

use crate::common::*;

/// A child process, killed and reaped when dropped (before the cgroup it is in).
pub(crate) struct Sleeper(pub(crate) Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A pod UID and a container id of this run's own, so that nothing on the machine has them.
pub(crate) fn fresh_uid_and_container_id() -> (String, String) {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let pid = std::process::id();
    let uid = format!(
        "{pid:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        nanos >> 48 & 0xffff,
        nanos >> 36 & 0xfff,
        nanos >> 24 & 0xfff,
        nanos & 0xffff_ffff_ffff
    );
    let container_id = format!("{nanos:016x}{pid:016x}").repeat(2);
    (uid, container_id)
}

#[test]
#[ignore = "needs root: makes cgroups (scripts/test runs it)"]
fn a_process_in_a_pod_cgroup_is_named_by_its_pod_and_container() {
    require_root("this test makes cgroups").unwrap();
    let (uid, container_id) = fresh_uid_and_container_id();
    let pod_slice = format!(
        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice",
        uid.replace('-', "_")
    );
    let path = format!("{pod_slice}/cri-containerd-{container_id}.scope");
    // built before the cgroup is made: it must walk again to find it
    let mut resolver = CgroupResolver::new().unwrap();
    let bed = CgroupBed::make(&path).unwrap();
    let sleeper = Sleeper(Command::new("sleep").arg("60").spawn().unwrap());
    bed.add(sleeper.0.id()).unwrap();

    assert_eq!(path_of_process(sleeper.0.id()).unwrap(), path);
    let id = bed.id().unwrap();
    assert_eq!(resolver.path_of(id), Some(path.as_str()));
    assert_eq!(resolver.walks(), 2, "a cgroup made since the first walk");
    let expected = Workload::Pod {
        uid: uid.clone(),
        qos: QosClass::BestEffort,
        container: Some(Container {
            runtime: Some(ContainerRuntime::Containerd),
            id: container_id,
        }),
    };
    assert_eq!(workload_of(&path), expected);

    let (leaf, pod_dir) = (bed.dir(), resolver.mount().join(&pod_slice[1..]));
    drop(sleeper);
    drop(bed);
    assert!(!leaf.exists() && !pod_dir.exists(), "cgroups left behind");
}

#[test]
#[ignore = "needs root: makes cgroups (scripts/test runs it)"]
fn a_cgroup_bed_is_removed_when_its_test_fails_with_a_process_inside() {
    require_root("this test makes cgroups").unwrap();
    let (uid, _) = fresh_uid_and_container_id();
    let top = format!("/irqlens-test-{uid}");
    let path = format!("{top}/inner");
    let top_dir = CgroupResolver::new().unwrap().mount().join(&top[1..]);
    // alive through the failure: the bed moves it out before removing the cgroup
    let sleeper = Sleeper(Command::new("sleep").arg("60").spawn().unwrap());
    let pid = sleeper.0.id();
    let failed = std::panic::catch_unwind(|| {
        let bed = CgroupBed::make(&path).unwrap();
        assert!(
            CgroupBed::make(&path).is_err(),
            "a cgroup that exists is refused"
        );
        bed.add(pid).unwrap();
        assert_eq!(path_of_process(pid).unwrap(), path);
        panic!("the test fails with process {pid} in {path}");
    });
    assert!(failed.is_err());
    assert!(!top_dir.exists(), "{} left behind", top_dir.display());
    assert_eq!(path_of_process(pid).unwrap(), "/", "moved to the root");
    drop(sleeper);
}
