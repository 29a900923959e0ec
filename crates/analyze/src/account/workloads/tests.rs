//! Workload rows from a synthetic ledger: a pod whose two containers were served NET_RX
//! time that the kernel billed a hog in another cgroup.

use std::collections::HashMap;

use super::*;
use crate::account::report::{relative_error, table};
use crate::account::{BySource, Ledger, Seen, Source, ThreadAccount};
use irqlens_model::account::ThreadInfo;
use irqlens_model::kernel::Comm;
use irqlens_model::tables::AccountAmounts;
use irqlens_model::workload::{CgroupId, QosClass};

const US: u64 = 1_000;
const UID: &str = "0d9b3e51-7c1a-4e7e-9c2f-5a8b6d4e3f21";
const RECEIVER: u32 = 20;
const SIDECAR: u32 = 25;
const HOG: u32 = 10;
const STRANGER: u32 = 30;
const RECEIVER_CG: CgroupId = CgroupId(100);
const SIDECAR_CG: CgroupId = CgroupId(101);
const NOISY_CG: CgroupId = CgroupId(200);
const GONE_CG: CgroupId = CgroupId(300);

fn pod_slice() -> String {
    format!(
        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice",
        UID.replace('-', "_")
    )
}

fn container_path(seed: char) -> String {
    format!(
        "{}/cri-containerd-{}.scope",
        pod_slice(),
        seed.to_string().repeat(64)
    )
}

fn net_rx(us: u64) -> BySource {
    BySource::from([(Source::Softirq { vector: 3 }, us * US)])
}

fn names() -> CgroupNames {
    let mut names = CgroupNames::default();
    names.insert(RECEIVER_CG, container_path('a'));
    names.insert(SIDECAR_CG, container_path('b'));
    names.insert(NOISY_CG, "/irqlens-test-noisy".into());
    // GONE_CG: removed before it could be named
    names
}

fn info(tgid: u32, comm: &str, runtime_us: u64, cgroup: Option<CgroupId>) -> ThreadInfo {
    ThreadInfo {
        tgid,
        comm: comm.into(),
        runtime_ns: Some(runtime_us * US),
        cgroup,
    }
}

/// The receiver (two threads, the second served too) and the sidecar are in the pod, named
/// by the checkpoints only; the hog, charged all the NET_RX time, is in /irqlens-test-noisy,
/// named by /proc only; the stranger's cgroup is gone.
fn run() -> (Ledger, HashMap<u32, ThreadInfo>) {
    let mut ledger = Ledger::default();
    let mut account = |tid: u32, charged: u64, served: u64, units: u64| {
        let account = ThreadAccount {
            charged: net_rx(charged),
            served: net_rx(served),
            units,
            ..Default::default()
        };
        ledger.threads.insert(tid, account);
    };
    account(RECEIVER, 0, 500, 4);
    account(RECEIVER + 1, 0, 100, 1);
    account(SIDECAR, 0, 150, 2);
    account(HOG, 800, 0, 0);
    account(STRANGER, 30, 20, 1);
    for (tid, tgid, comm, cgroup) in [
        (RECEIVER, RECEIVER, "receiver", RECEIVER_CG),
        (RECEIVER + 1, RECEIVER, "receiver-io", RECEIVER_CG),
        (SIDECAR, SIDECAR, "sidecar", SIDECAR_CG),
        (STRANGER, STRANGER, "stranger", GONE_CG),
    ] {
        let comm = Comm::new(comm);
        ledger.seen.insert(tid, Seen { tgid, comm, cgroup });
    }
    let threads = HashMap::from([
        (RECEIVER, info(RECEIVER, "receiver", 2_000, None)),
        (RECEIVER + 1, info(RECEIVER, "receiver-io", 300, None)),
        (SIDECAR, info(SIDECAR, "sidecar", 400, None)),
        (HOG, info(HOG, "hog", 10_000, Some(NOISY_CG))),
        (STRANGER, info(STRANGER, "stranger", 90, None)),
    ]);
    (ledger, threads)
}

fn named_table(by_thread: bool) -> Table {
    let (ledger, threads) = run();
    let mut table = table(&ledger, &threads, None, by_thread);
    name_cgroups(&mut table, &names());
    table
}

fn find<'a>(rows: &'a [WorkloadRow], key: &str) -> &'a WorkloadRow {
    rows.iter()
        .find(|row| row.key == key)
        .unwrap_or_else(|| panic!("no {key} among {rows:#?}"))
}

#[test]
fn workload_sums_are_the_rows_sums_and_the_error_is_recomputed() {
    for by_thread in [false, true] {
        let table = named_table(by_thread);
        for by in [
            WorkloadBy::Cgroup,
            WorkloadBy::Pod,
            WorkloadBy::Container,
            WorkloadBy::Unit,
        ] {
            let workloads = workloads(&table, by);
            let figures: [fn(&AccountAmounts) -> u64; 4] = [
                |a| a.charged_ns,
                |a| a.served_ns,
                |a| a.kernel_ns.unwrap_or(0),
                |a| a.units,
            ];
            for figure in figures {
                let rows = table.rows.iter().map(|row| figure(&row.figures.amounts));
                let groups = workloads.iter().map(|w| figure(&w.sums.figures.amounts));
                assert_eq!(groups.sum::<u64>(), rows.sum::<u64>(), "{by:?}");
            }
            assert_eq!(
                workloads.iter().map(|w| w.tasks).sum::<usize>(),
                table.rows.len()
            );
            for group in workloads.iter().map(|w| &w.sums.figures.amounts) {
                let (t, t_o) = (group.kernel_ns.unwrap(), group.corrected_ns.unwrap());
                assert_eq!(t_o, t - group.charged_ns + group.served_ns);
                assert_eq!(group.error, relative_error(t, t_o));
            }
        }
    }
}

#[test]
fn by_pod_the_pod_is_served_what_the_noisy_cgroup_is_charged() {
    let workloads = workloads(&named_table(false), WorkloadBy::Pod);
    assert_eq!(workloads.len(), 3, "{workloads:#?}");
    let pod = find(&workloads, &format!("pod {UID}"));
    assert_eq!(pod.tasks, 2);
    assert_eq!(pod.path.as_deref(), Some(pod_slice().as_str()));
    assert_eq!(
        pod.workload,
        Some(Workload::Pod {
            uid: UID.into(),
            qos: QosClass::BestEffort,
            container: None
        })
    );
    let amounts = &pod.sums.figures.amounts;
    assert_eq!((amounts.charged_ns, amounts.served_ns), (0, 750 * US));
    assert_eq!(amounts.kernel_ns, Some(2_700 * US));
    assert_eq!(amounts.units, 7);
    assert!(
        amounts.error.unwrap() < 0.0,
        "the kernel under-bills the pod"
    );
    let noisy = find(&workloads, "/irqlens-test-noisy");
    let amounts = &noisy.sums.figures.amounts;
    assert_eq!((amounts.charged_ns, amounts.served_ns), (800 * US, 0));
    assert_eq!(amounts.corrected_ns, Some(9_200 * US));
    assert_eq!(noisy.name, "/irqlens-test-noisy");
    let unknown = find(&workloads, UNKNOWN);
    assert_eq!(
        (unknown.path.as_ref(), unknown.workload.as_ref()),
        (None, None)
    );
    assert_eq!(unknown.name, UNKNOWN);
    // the hog's row first: the largest share
    assert_eq!(workloads[0].key, "/irqlens-test-noisy");
}

#[test]
fn by_container_and_by_cgroup_keep_the_pods_containers_apart() {
    let table = named_table(false);
    let by_container = workloads(&table, WorkloadBy::Container);
    assert_eq!(by_container.len(), 4);
    let receiver = find(
        &by_container,
        &format!("pod {UID}/containerd {}", "a".repeat(64)),
    );
    assert_eq!(receiver.path.as_deref(), Some(container_path('a').as_str()));
    assert_eq!(receiver.sums.figures.amounts.served_ns, 600 * US);
    assert_eq!(receiver.name, "pod 0d9b3e51…/containerd aaaaaaaaaaaa");
    let by_cgroup = workloads(&table, WorkloadBy::Cgroup);
    let sidecar = find(&by_cgroup, &container_path('b'));
    assert_eq!(sidecar.name, container_path('b'));
    assert!(matches!(
        sidecar.workload,
        Some(Workload::Pod {
            container: Some(_),
            ..
        })
    ));
}

#[test]
fn rows_name_their_cgroup_and_the_filter_keeps_those_inside() {
    let mut table = named_table(false);
    let hog = table.rows.iter().find(|r| r.figures.id == HOG).unwrap();
    assert_eq!(hog.figures.cgroup.as_deref(), Some("/irqlens-test-noisy"));
    keep_within(&mut table, &[]);
    assert_eq!(table.rows.len(), 4);
    keep_within(&mut table, &[pod_slice()]);
    let mut ids: Vec<u32> = table.rows.iter().map(|r| r.figures.id).collect();
    ids.sort_unstable();
    assert_eq!(ids, [RECEIVER, SIDECAR]);
    // a prefix of a level's name is no ancestor
    let mut table = named_table(false);
    keep_within(&mut table, &["/irqlens-test-noi".into()]);
    assert!(table.rows.is_empty());
    let mut table = named_table(false);
    keep_within(&mut table, &["/".into()]);
    assert_eq!(table.rows.len(), 3, "all but the unknown cgroup's");
}

#[test]
fn common_ancestors_are_level_by_level() {
    assert_eq!(common_ancestor("/a/b/c", "/a/b/d"), "/a/b");
    assert_eq!(common_ancestor("/a/b", "/a/bc"), "/a");
    assert_eq!(common_ancestor("/a/b", "/a/b"), "/a/b");
    assert_eq!(common_ancestor("/a", "/b"), "/");
    assert_eq!(common_ancestor("/", "/b"), "/");
}

#[test]
fn a_process_gone_by_the_end_reading_leaves_its_workloads_error_alone() {
    let (mut ledger, mut threads) = run();
    // an exec probe of the pod that ended before the end reading: billed and served, no
    // kernel bill
    const PROBE: u32 = 40;
    let probe = ThreadAccount {
        charged: net_rx(4_000),
        served: net_rx(2_000),
        units: 1,
        ..Default::default()
    };
    ledger.threads.insert(PROBE, probe);
    let comm = Comm::new("probe");
    let seen = Seen {
        tgid: PROBE,
        comm,
        cgroup: RECEIVER_CG,
    };
    ledger.seen.insert(PROBE, seen);
    threads.remove(&PROBE);
    let with_probe = {
        let mut table = table(&ledger, &threads, None, false);
        name_cgroups(&mut table, &names());
        workloads(&table, WorkloadBy::Pod)
    };
    let without = workloads(&named_table(false), WorkloadBy::Pod);
    let pod = |rows: &[WorkloadRow]| {
        find(rows, &format!("pod {UID}"))
            .sums
            .figures
            .amounts
            .clone()
    };
    let (with_probe, without) = (pod(&with_probe), pod(&without));
    // its charge and service show, its bill does not skew the others'
    assert_eq!(with_probe.charged_ns, without.charged_ns + 4_000 * US);
    assert_eq!(with_probe.served_ns, without.served_ns + 2_000 * US);
    assert_eq!(with_probe.kernel_ns, without.kernel_ns);
    assert_eq!(with_probe.corrected_ns, without.corrected_ns);
    assert_eq!(with_probe.error, without.error);
}
