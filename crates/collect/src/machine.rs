//! What `irqlens advise` reads of the machine: the settings its remedies would change
//! (IRQ affinities, RPS and XPS masks, threaded NAPI, sysctls, the workqueue cpumask, the
//! policies of the threads the causes name) and what works against them (irqbalance, RT
//! throttling, the boot line, C-states). Reads only: nothing is
//! tried, so whether an IRQ's affinity can be changed is deduced, not tested.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::Result;
use irqlens_model::tune::{
    CauseSource, CpuCause, IdleState, IrqMovable, IrqState, Knob, MachineState, NetDevice,
    RpsQueue, ThreadPolicy, comm_matches, parse_cpu_mask,
};
use irqlens_model::units::CpuList;

use crate::held::DMA_LATENCY_PATH;
use crate::knob;
use crate::system::{online_cpus, read_proc};

/// The sysctls the remedies and conflicts read.
pub const SYSCTLS: [&str; 9] = [
    "net.core.netdev_budget",
    "net.core.netdev_budget_usecs",
    "kernel.sched_rt_runtime_us",
    "kernel.sched_rt_period_us",
    "kernel.timer_migration",
    "kernel.nmi_watchdog",
    "kernel.watchdog",
    "kernel.soft_watchdog",
    "kernel.watchdog_cpumask",
];

/// Reads the machine's state for `causes`: the threads they name (by tid, or every
/// thread of the name when the measurement knows only the name), the idle states of their
/// CPUs, and the devices of irqlens's namespace and of `netns` (`ip netns` names).
pub fn read(causes: &[CpuCause], netns: &[String]) -> Result<MachineState> {
    let online = online_cpus()?;
    let class_net = Path::new("/sys/class/net");
    let mut rps = queue_masks(class_net, None, QueueKind::Rps);
    let mut xps = queue_masks(class_net, None, QueueKind::Xps);
    let mut net_devices = net_devices(class_net, None);
    for ns in netns {
        let listing = netns_devices(ns)?;
        rps.extend(listing.rps);
        xps.extend(listing.xps);
        net_devices.extend(listing.devices);
    }
    let mut tids = Vec::new();
    let mut comms = Vec::new();
    for cause in causes {
        if let CauseSource::Thread { tid, comm } = &cause.source {
            match tid {
                Some(tid) => tids.push(*tid),
                None => comms.push(comm.as_str()),
            }
        }
    }
    tids.extend(tids_named(&comms));
    tids.sort_unstable();
    tids.dedup();
    let cpus: CpuList = causes.iter().map(|cause| cause.cpu).collect();
    // the knobs are read as tune reads them, the values it would write back
    let workqueue_cpumask = knob::read(&Knob::WorkqueueCpumask).ok();
    Ok(MachineState {
        irqs: parse_interrupts(&read_proc("interrupts"), &online, |irq, file| {
            read_trimmed(format!("/proc/irq/{irq}/{file}"))
        }),
        idle_states: idle_states_of(&cpus, &online),
        online_cpus: online,
        rps,
        xps,
        net_devices,
        sysctls: SYSCTLS
            .iter()
            .filter_map(|name| {
                let value = knob::read(&Knob::Sysctl {
                    name: name.to_string(),
                })
                .ok()?;
                Some((name.to_string(), value))
            })
            .collect(),
        workqueue_cpus: workqueue_cpumask.as_deref().and_then(parse_cpu_mask),
        workqueue_cpumask,
        dma_latency_us: dma_latency_us(),
        irqbalance_running: !irqbalance_pids().is_empty(),
        cmdline: read_proc("cmdline").trim().to_owned(),
        ksoftirqd: threads_named("ksoftirqd/"),
        threads: tids.into_iter().filter_map(thread_policy).collect(),
    })
}

/// The idle states of `cpus` that are `online`.
pub(crate) fn idle_states_of(cpus: &CpuList, online: &CpuList) -> Vec<IdleState> {
    cpus.iter()
        .filter(|&cpu| online.contains(cpu))
        .flat_map(|cpu| {
            let dir = format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle");
            idle_states(cpu, |file| read_trimmed(format!("{dir}/{file}")))
        })
        .collect()
}

/// A CPU's idle states, `read` giving the text of a file under its `cpuidle` directory
/// (`state0/name`); states stop at the first without a name, a CPU without the directory
/// has none.
fn idle_states(cpu: u32, read: impl Fn(&str) -> Option<String>) -> Vec<IdleState> {
    (0..)
        .map_while(|index| {
            let name = read(&format!("state{index}/name"))?;
            Some((index, name))
        })
        .filter_map(|(index, name)| {
            Some(IdleState {
                cpu,
                index,
                name,
                latency_us: read(&format!("state{index}/latency"))?.parse().ok()?,
                disabled: read(&format!("state{index}/disable")).as_deref() == Some("1"),
            })
        })
        .collect()
}

pub(crate) fn read_trimmed(path: impl AsRef<Path>) -> Option<String> {
    fs::read_to_string(path)
        .ok()
        .map(|text| text.trim().to_owned())
}

/// The rows of /proc/interrupts, with each numbered line's affinity as `affinity(irq,
/// file)` reads it (`smp_affinity_list`, `effective_affinity_list`).
pub fn parse_interrupts(
    text: &str,
    online: &CpuList,
    affinity: impl Fn(u32, &str) -> Option<String>,
) -> Vec<IrqState> {
    let mut lines = text.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let columns: Vec<u32> = header
        .split_whitespace()
        .filter_map(|cpu| cpu.strip_prefix("CPU")?.parse().ok())
        .collect();
    let mut irqs = Vec::new();
    for line in lines {
        let Some((key, rest)) = line.split_once(':') else {
            continue;
        };
        let key = key.trim().to_owned();
        let words: Vec<&str> = rest.split_whitespace().collect();
        let counted = words
            .iter()
            .take(columns.len())
            .take_while(|word| word.parse::<u64>().is_ok())
            .count();
        let counts: Vec<(u32, u64)> = columns
            .iter()
            .zip(&words[..counted])
            .filter(|(cpu, _)| online.contains(**cpu))
            .map(|(&cpu, count)| (cpu, count.parse().unwrap_or(0)))
            .collect();
        let name = words[counted..].join(" ");
        let irq = key.parse::<u32>().ok();
        let (affinity_list, effective, movable) = match irq {
            None => (None, None, IrqMovable::PerCpuVector),
            Some(irq) => {
                let list = affinity(irq, "smp_affinity_list");
                let effective = affinity(irq, "effective_affinity_list");
                let movable = if list.is_none() {
                    IrqMovable::NoAffinityFile
                } else if looks_managed(&name, effective.as_deref()) {
                    IrqMovable::LikelyManaged
                } else {
                    IrqMovable::Yes
                };
                (list, effective, movable)
            }
        };
        irqs.push(IrqState {
            key,
            irq,
            name,
            affinity: affinity_list,
            effective_affinity: effective,
            counts,
            movable,
        });
    }
    irqs
}

/// Whether a line looks like a queue of a multi-queue device, whose affinity the kernel
/// manages (a heuristic: a write is the only test, and advise writes nothing): a queue
/// name (`nvme0q1`, `-q`, `queue`, `TxRx`, virtio_blk's `virtio1-req.0` and virtio_scsi's
/// `-request`: block multi-queue drivers ask the kernel to manage their vectors) delivered
/// to one CPU.
fn looks_managed(name: &str, effective: Option<&str>) -> bool {
    let one_cpu = effective
        .and_then(|list| list.parse::<CpuList>().ok())
        .is_some_and(|cpus| cpus.len() == 1);
    let queue_name = name.split_whitespace().any(|word| {
        let lower = word.to_ascii_lowercase();
        lower.contains("-q")
            || lower.contains("queue")
            || lower.contains("txrx")
            || lower.contains("-req.")
            || lower.contains("-request")
            || lower
                .strip_prefix("nvme")
                .and_then(|rest| rest.split_once('q'))
                .is_some_and(|(_, queue)| queue.parse::<u32>().is_ok())
    });
    one_cpu && queue_name
}

/// The steering masks of a device's queues.
#[derive(Clone, Copy)]
enum QueueKind {
    /// Receive packet steering: `rx-N/rps_cpus`.
    Rps,
    /// Transmit packet steering: `tx-N/xps_cpus` (multi-queue devices only).
    Xps,
}

impl QueueKind {
    /// The queue directories' prefix and the mask's file.
    fn files(self) -> (&'static str, &'static str) {
        match self {
            QueueKind::Rps => ("rx-", "rps_cpus"),
            QueueKind::Xps => ("tx-", "xps_cpus"),
        }
    }
}

/// The `kind` mask of every queue under `class_net` (a /sys/class/net) that has one.
fn queue_masks(class_net: &Path, netns: Option<&str>, kind: QueueKind) -> Vec<RpsQueue> {
    let (prefix, file) = kind.files();
    let mut queues = Vec::new();
    for device in dir_names(class_net) {
        for queue in dir_names(&class_net.join(&device).join("queues")) {
            let Some(number) = queue.strip_prefix(prefix).and_then(|n| n.parse().ok()) else {
                continue;
            };
            let path = class_net
                .join(&device)
                .join("queues")
                .join(&queue)
                .join(file);
            if let Some(mask) = read_trimmed(path) {
                queues.push(queue_mask(netns, &device, number, mask));
            }
        }
    }
    queues
}

fn queue_mask(netns: Option<&str>, device: &str, queue: u32, mask: String) -> RpsQueue {
    RpsQueue {
        netns: netns.map(str::to_owned),
        device: device.to_owned(),
        queue,
        cpus: parse_cpu_mask(&mask).unwrap_or_default(),
        mask,
    }
}

fn net_devices(class_net: &Path, netns: Option<&str>) -> Vec<NetDevice> {
    dir_names(class_net)
        .into_iter()
        .map(|device| NetDevice {
            netns: netns.map(str::to_owned),
            threaded: read_trimmed(class_net.join(&device).join("threaded")),
            device,
        })
        .collect()
}

/// What a network namespace's devices show.
#[derive(Debug, Default)]
struct NetnsListing {
    rps: Vec<RpsQueue>,
    xps: Vec<RpsQueue>,
    devices: Vec<NetDevice>,
}

/// A namespace's RPS and XPS masks and NAPI modes, read by `ip netns exec` (which mounts
/// that namespace's /sys for the command).
fn netns_devices(netns: &str) -> Result<NetnsListing> {
    // xps_cpus of a single-queue device fails to read (ENOENT): no line; `if` keeps a
    // missing file from failing the script
    let script = "cd /sys/class/net && for d in *; do \
                  echo \"dev $d $(cat $d/threaded 2>/dev/null)\"; \
                  for q in $d/queues/rx-*; do if [ -e $q/rps_cpus ]; then echo \"rps $d ${q##*/rx-} $(cat $q/rps_cpus)\"; fi; done; \
                  for q in $d/queues/tx-*; do if m=$(cat $q/xps_cpus 2>/dev/null); then echo \"xps $d ${q##*/tx-} $m\"; fi; done; \
                  done";
    let output = Command::new("ip")
        .args(["netns", "exec", netns, "sh", "-c", script])
        .output()
        .map_err(|e| anyhow::anyhow!("--netns {netns}: cannot run ip: {e}"))?;
    if !output.status.success() {
        anyhow::bail!(
            "--netns {netns}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(parse_netns_listing(
        &String::from_utf8_lossy(&output.stdout),
        netns,
    ))
}

fn parse_netns_listing(text: &str, netns: &str) -> NetnsListing {
    let mut listing = NetnsListing::default();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["dev", device, rest @ ..] => listing.devices.push(NetDevice {
                netns: Some(netns.into()),
                device: device.to_string(),
                threaded: rest.first().map(|t| t.to_string()),
            }),
            [kind @ ("rps" | "xps"), device, queue, mask] => {
                if let Ok(queue) = queue.parse() {
                    let mask = queue_mask(Some(netns), device, queue, mask.to_string());
                    match *kind {
                        "rps" => listing.rps.push(mask),
                        _ => listing.xps.push(mask),
                    }
                }
            }
            _ => {}
        }
    }
    listing
}

fn dir_names(path: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(path)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The current `/dev/cpu_dma_latency` request, µs: the file reads as a binary s32.
fn dma_latency_us() -> Option<u32> {
    let bytes = fs::read(DMA_LATENCY_PATH).ok()?;
    Some(u32::from_ne_bytes(bytes.get(..4)?.try_into().ok()?))
}

/// The irqbalance daemons that can move IRQ lines: those running as root (only root
/// writes /proc/irq/*/smp_affinity, and any user can name a process irqbalance).
pub(crate) fn irqbalance_pids() -> Vec<u32> {
    pids_named("irqbalance")
        .into_iter()
        .filter(|&pid| effective_uid(pid) == Some(0))
        .collect()
}

/// The processes named `name`.
fn pids_named(name: &str) -> Vec<u32> {
    dir_names(Path::new("/proc"))
        .iter()
        .filter_map(|pid| pid.parse::<u32>().ok())
        .filter(|pid| read_trimmed(format!("/proc/{pid}/comm")).as_deref() == Some(name))
        .collect()
}

/// The effective user id of process `pid` (the second of /proc/PID/status's `Uid:`).
fn effective_uid(pid: u32) -> Option<u32> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let ids = status.lines().find_map(|line| line.strip_prefix("Uid:"))?;
    ids.split_whitespace().nth(1)?.parse().ok()
}

/// The ids of every thread (of every process) named one of `comms` (as recorded: cut at
/// 15 bytes).
fn tids_named(comms: &[&str]) -> Vec<u32> {
    if comms.is_empty() {
        return Vec::new();
    }
    let mut tids = Vec::new();
    for pid in dir_names(Path::new("/proc")) {
        if pid.parse::<u32>().is_err() {
            continue;
        }
        for tid in dir_names(&Path::new("/proc").join(&pid).join("task")) {
            let Ok(number) = tid.parse::<u32>() else {
                continue;
            };
            let comm = read_trimmed(format!("/proc/{pid}/task/{tid}/comm"));
            if comm.is_some_and(|comm| comms.iter().any(|wanted| comm_matches(wanted, &comm))) {
                tids.push(number);
            }
        }
    }
    tids
}

/// Every thread whose name starts with `prefix`.
pub(crate) fn threads_named(prefix: &str) -> Vec<ThreadPolicy> {
    crate::system::threads_named(prefix)
        .into_iter()
        .filter_map(thread_policy)
        .collect()
}

/// A thread's name, policy and affinity, from /proc/TID/stat and status.
fn thread_policy(tid: u32) -> Option<ThreadPolicy> {
    let stat = read_trimmed(format!("/proc/{tid}/stat"))?;
    let status = read_trimmed(format!("/proc/{tid}/status")).unwrap_or_default();
    let (comm, policy) = parse_stat_policy(&stat)?;
    let affinity = status
        .lines()
        .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
        .map(|list| list.trim().to_owned());
    Some(ThreadPolicy {
        tid,
        comm,
        policy,
        affinity,
    })
}

/// The name and `o:NICE` / `f:PRIO` / `r:PRIO` of a /proc/TID/stat line.
fn parse_stat_policy(stat: &str) -> Option<(String, String)> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let comm = stat[open + 1..close].to_owned();
    // nice is field 19, rt_priority 40, policy 41
    let fields: Vec<&str> = crate::system::stat_fields(stat)?.collect();
    let field = |n: usize| fields.get(n - 3).and_then(|f| f.parse::<i64>().ok());
    let policy = match field(41)? {
        1 => format!("f:{}", field(40)?),
        2 => format!("r:{}", field(40)?),
        _ => format!("o:{}", field(19)?),
    };
    Some((comm, policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTERRUPTS: &str = "           CPU0       CPU1       
  0:         38          0   IO-APIC   2-edge      timer
 24:          0       5210   PCI-MSI 49152-edge      virtio0-input.0
 30:          0        812   PCI-MSI 1048577-edge      nvme0q1
 31:          3          0   IO-APIC   9-fasteoi   acpi
NMI:          0          0   Non-maskable interrupts
LOC:      77021      64020   Local timer interrupts
ERR:          0
";

    #[test]
    fn interrupts_are_read_with_their_affinity_and_whether_they_move() {
        let online: CpuList = "0-1".parse().unwrap();
        let irqs = parse_interrupts(INTERRUPTS, &online, |irq, file| match (irq, file) {
            (31, _) => None,
            (30, "effective_affinity_list") => Some("1".into()),
            (_, "effective_affinity_list") => Some("0".into()),
            _ => Some("0-1".into()),
        });
        let find = |key: &str| irqs.iter().find(|irq| irq.key == key).unwrap();
        let virtio = find("24");
        assert_eq!(virtio.irq, Some(24));
        assert_eq!(virtio.name, "PCI-MSI 49152-edge virtio0-input.0");
        assert_eq!(virtio.counts, [(0, 0), (1, 5210)]);
        assert_eq!(virtio.affinity.as_deref(), Some("0-1"));
        assert_eq!(virtio.movable, IrqMovable::Yes);
        assert_eq!(find("30").movable, IrqMovable::LikelyManaged);
        assert_eq!(find("31").movable, IrqMovable::NoAffinityFile);
        let loc = find("LOC");
        assert_eq!(loc.movable, IrqMovable::PerCpuVector);
        assert_eq!(loc.counts, [(0, 77021), (1, 64020)]);
        assert_eq!(loc.name, "Local timer interrupts");
        assert_eq!(find("ERR").counts, [(0, 0)]);
    }

    #[test]
    fn queue_names_on_one_cpu_look_managed() {
        for name in [
            "nvme0q3",
            "eth0-TxRx-1",
            "virtio1-req.0-q2",
            "mlx5_comp2 queue",
            "virtio1-req.0",
            "virtio2-request",
        ] {
            assert!(looks_managed(name, Some("2")), "{name}");
        }
        assert!(!looks_managed("nvme0q3", Some("0-3")));
        assert!(!looks_managed("virtio0-input.0", Some("1")));
        assert!(!looks_managed("nvme0q3", None));
    }

    #[test]
    fn a_stat_line_gives_the_name_and_policy() {
        let fields = |policy: u32, rt: u32, nice: i32| {
            let mut f: Vec<String> = (3..=52).map(|_| "0".to_string()).collect();
            f[19 - 3] = nice.to_string();
            f[40 - 3] = rt.to_string();
            f[41 - 3] = policy.to_string();
            format!("1234 (my (odd) name) {}", f.join(" "))
        };
        assert_eq!(
            parse_stat_policy(&fields(0, 0, -5)),
            Some(("my (odd) name".into(), "o:-5".into()))
        );
        assert_eq!(parse_stat_policy(&fields(1, 50, 0)).unwrap().1, "f:50");
        assert_eq!(parse_stat_policy(&fields(2, 7, 0)).unwrap().1, "r:7");
    }

    #[test]
    fn a_netns_listing_gives_its_queues_and_devices() {
        let listing = parse_netns_listing(
            "dev lo 0\nrps lo 0 0\ndev veth1 \nrps veth1 0 2\nxps veth1 1 00000003\n",
            "ns",
        );
        assert_eq!(listing.devices.len(), 2);
        assert_eq!(listing.devices[1].threaded, None);
        assert_eq!(listing.rps[1].cpus, "1".parse().unwrap());
        assert_eq!(listing.rps[1].netns.as_deref(), Some("ns"));
        assert_eq!(listing.xps.len(), 1);
        assert_eq!(listing.xps[0].queue, 1);
        assert_eq!(listing.xps[0].mask, "00000003");
        assert_eq!(listing.xps[0].cpus, "0-1".parse().unwrap());
    }

    #[test]
    fn idle_states_are_read_until_the_first_missing_one() {
        let files: std::collections::HashMap<&str, &str> = [
            ("state0/name", "POLL"),
            ("state0/latency", "0"),
            ("state0/disable", "0"),
            ("state1/name", "C6"),
            ("state1/latency", "133"),
            ("state1/disable", "1"),
            ("state2/latency", "999"),
        ]
        .into_iter()
        .collect();
        let states = idle_states(3, |file| files.get(file).map(|text| text.to_string()));
        assert_eq!(
            states,
            [
                IdleState {
                    cpu: 3,
                    index: 0,
                    name: "POLL".into(),
                    latency_us: 0,
                    disabled: false
                },
                IdleState {
                    cpu: 3,
                    index: 1,
                    name: "C6".into(),
                    latency_us: 133,
                    disabled: true
                }
            ]
        );
        assert!(idle_states(0, |_| None).is_empty());
    }

    #[test]
    fn this_machine_reads() {
        let thread = |tid: Option<u32>, comm: &str| CpuCause {
            cpu: 0,
            capability: irqlens_model::system::Capability::Noise,
            label: comm.into(),
            class: irqlens_model::tune::CauseClass::Thread,
            source: CauseSource::Thread {
                tid,
                comm: comm.into(),
            },
            time_ns: 1,
            share_percent: 1.0,
        };
        let me = std::process::id();
        let this_thread = crate::sched::gettid();
        let comm = fs::read_to_string(format!("/proc/{me}/task/{this_thread}/comm")).unwrap();
        let machine = read(&[thread(Some(me), "x"), thread(None, comm.trim())], &[]).unwrap();
        assert!(!machine.online_cpus.is_empty());
        assert!(machine.irqs.iter().any(|irq| irq.key == "LOC"));
        // the main thread by its tid, this test's thread by its name; one entry per tid
        assert!(machine.threads.iter().any(|t| t.tid == me));
        assert!(
            machine
                .threads
                .iter()
                .any(|t| t.tid == this_thread && t.comm == comm.trim()),
            "{:?}",
            machine.threads
        );
        let tids: std::collections::HashSet<u32> = machine.threads.iter().map(|t| t.tid).collect();
        assert_eq!(tids.len(), machine.threads.len());
        assert!(machine.sysctls.contains_key("kernel.sched_rt_runtime_us"));
    }
}
