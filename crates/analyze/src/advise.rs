//! `irqlens advise`: from the causes a measurement named on each CPU and the machine's
//! state, the knob that would take each cause off the CPU (or why none can), and what on
//! the machine works against it. The remedies follow the kernel's
//! Documentation/admin-guide/kernel-per-CPU-kthreads.rst.

mod causes;

use irqlens_model::tune::{
    Advice, Blocker, CauseClass, CauseSource, Change, Conflict, CpuCause, IrqMovable, Knob,
    MachineState, cpu_mask_hex,
};
use irqlens_model::units::CpuList;

pub use causes::{account_causes, bh_causes, noise_causes, wakeup_causes};

/// The value of `/dev/cpu_dma_latency` when nobody holds a request (µs).
pub const NO_DMA_LATENCY_REQUEST: u32 = 2_000_000_000;

/// What `advise` found: the remedies, per CPU ranked by the time of their cause, and what
/// works against them.
pub fn advise(causes: &[CpuCause], machine: &MachineState) -> (Vec<Advice>, Vec<Conflict>) {
    let measured: CpuList = causes.iter().map(|cause| cause.cpu).collect();
    let advisor = Advisor {
        machine,
        measured: &measured,
        housekeeping: machine.online_cpus.without(&measured),
    };
    let mut advice: Vec<Advice> = causes
        .iter()
        .filter(|cause| cause.time_ns > 0)
        .flat_map(|cause| advisor.remedies(cause))
        .collect();
    advice.sort_by(|a, b| {
        (a.cpu, std::cmp::Reverse(a.time_ns), &a.id).cmp(&(
            b.cpu,
            std::cmp::Reverse(b.time_ns),
            &b.id,
        ))
    });
    // the same knob advised twice for one CPU (a cause seen by two recordings) once, at
    // the rank of its largest cause
    let mut seen = std::collections::HashSet::new();
    advice.retain(|a| seen.insert((a.cpu, a.id.clone())));
    (advice, conflicts(machine, &measured))
}

struct Advisor<'a> {
    machine: &'a MachineState,
    measured: &'a CpuList,
    housekeeping: CpuList,
}

/// An advice's parts besides the cause it answers.
struct Remedy {
    id: String,
    remedy: String,
    change: Option<Change>,
    command: Option<String>,
    blocker: Option<Blocker>,
}

impl Remedy {
    fn change(
        id: String,
        remedy: String,
        knob: Knob,
        from: String,
        to: String,
        command: String,
    ) -> Self {
        Remedy {
            id,
            remedy,
            change: Some(Change { knob, from, to }),
            command: Some(command),
            blocker: None,
        }
    }

    fn blocked(id: String, remedy: String, blocker: Blocker) -> Self {
        Remedy {
            id,
            remedy,
            change: None,
            command: None,
            blocker: Some(blocker),
        }
    }
}

impl Advisor<'_> {
    fn remedies(&self, cause: &CpuCause) -> Vec<Advice> {
        let remedies = match (&cause.class, &cause.source) {
            (CauseClass::Irq, CauseSource::IrqLine { irq, name }) => {
                vec![self.irq_line(*irq, name)]
            }
            (CauseClass::Irq, CauseSource::Vector { name, .. }) => vec![self.vector(name)],
            (CauseClass::Softirq, CauseSource::Softirq { name }) => self.softirq(name, cause.cpu),
            (CauseClass::Thread, CauseSource::Thread { tid, comm }) => {
                vec![self.thread(*tid, comm)]
            }
            (CauseClass::Nmi, _) => vec![self.nmi()],
            (CauseClass::Hw, _) => vec![Remedy::blocked(
                "hypervisor".into(),
                format!(
                    "{:.1}% of CPU {}'s noise or latency went where the guest sees no \
                     interference: the hypervisor (or SMIs); on the host, pin the vCPU to an \
                     isolated CPU",
                    cause.share_percent, cause.cpu
                ),
                Blocker::Hypervisor,
            )],
            (CauseClass::Idle, _) => vec![self.dma_latency()],
            _ => Vec::new(),
        };
        remedies
            .into_iter()
            .map(|remedy| Advice {
                id: remedy.id,
                cpu: cause.cpu,
                cause: cause.label.clone(),
                capability: cause.capability,
                time_ns: cause.time_ns,
                share_percent: cause.share_percent,
                remedy: remedy.remedy,
                change: remedy.change,
                command: remedy.command,
                blocker: remedy.blocker,
            })
            .collect()
    }

    /// Without housekeeping CPUs, nothing can be moved anywhere.
    fn no_housekeeping(&self, id: String) -> Option<Remedy> {
        self.housekeeping.is_empty().then(|| {
            Remedy::blocked(
                id,
                "measure fewer CPUs, or add one".into(),
                Blocker::Other {
                    why: "every online CPU is measured: there is no other CPU to move it to".into(),
                },
            )
        })
    }

    fn irq_line(&self, irq: u32, name: &str) -> Remedy {
        let id = format!("irq-{irq}-affinity");
        let state = self
            .machine
            .irqs
            .iter()
            .find(|state| state.irq == Some(irq));
        let Some(state) = state else {
            return Remedy::blocked(
                id,
                format!("IRQ {irq} {name}"),
                Blocker::Other {
                    why: format!("IRQ {irq} is not in this machine's /proc/interrupts"),
                },
            );
        };
        match state.movable {
            IrqMovable::LikelyManaged => {
                let cpus = self.measured.to_string();
                return Remedy::blocked(
                    id,
                    format!(
                        "IRQ {irq} {} looks like a queue of a multi-queue device (a queue name and \
                         one effective CPU): the kernel manages such affinities and refuses writes \
                         (EIO, EPERM since 6.12); fewer queues (ethtool -L) or isolcpus=managed_irq \
                         keep them off",
                        state.name
                    ),
                    Blocker::BootParameter {
                        line: format!("isolcpus=managed_irq,{cpus}"),
                    },
                );
            }
            IrqMovable::PerCpuVector => return self.vector(&state.key),
            IrqMovable::NoAffinityFile => {
                return Remedy::blocked(
                    id,
                    format!("IRQ {irq} {}", state.name),
                    Blocker::Other {
                        why: format!("/proc/irq/{irq}/smp_affinity_list is missing or read-only"),
                    },
                );
            }
            IrqMovable::Yes => {}
        }
        if let Some(blocked) = self.no_housekeeping(id.clone()) {
            return blocked;
        }
        let to = self.housekeeping.to_string();
        let from = state.affinity.clone().unwrap_or_default();
        Remedy::change(
            id,
            format!("deliver IRQ {irq} {} to CPUs {to} only", state.name),
            Knob::IrqAffinity { irq },
            from,
            to.clone(),
            format!("echo {to} > /proc/irq/{irq}/smp_affinity_list"),
        )
    }

    fn vector(&self, name: &str) -> Remedy {
        let cpus = self.measured.to_string();
        let remedy = match name {
            "local_timer" | "LOC" => format!(
                "the scheduler tick: nohz_full={cpus} stops it on a CPU running one task \
                 (with isolcpus={cpus} and rcu_nocbs={cpus}); needs a reboot"
            ),
            "reschedule" | "RES" => "IPIs that wake a task here: keep other tasks off the CPU \
                                     (isolcpus, cpusets)"
                .into(),
            "call_function" | "call_function_single" | "CAL" | "TLB" => {
                "IPIs from other CPUs (TLB shootdowns, smp_call_function): keep the measured \
                 process's threads and memory users off other CPUs' mm"
                    .into()
            }
            "irq_work" | "IWI" => "irq_work (perf, printk, tracing) raised on this CPU".into(),
            _ => format!("{name}: a per-CPU vector"),
        };
        Remedy::blocked(format!("vector-{name}"), remedy, Blocker::PerCpuVector)
    }

    fn softirq(&self, name: &str, cpu: u32) -> Vec<Remedy> {
        let cpus = self.measured.to_string();
        let boot = |id: &str, remedy: String, line: String| {
            Remedy::blocked(id.into(), remedy, Blocker::BootParameter { line })
        };
        match name {
            "NET_RX" => self.net_rx(cpu),
            "TIMER" | "HRTIMER" => vec![boot(
                "boot-nohz_full",
                format!(
                    "{name} softirq: timers expiring on the CPU; nohz_full stops the tick and \
                     moves unbound timers to housekeeping CPUs"
                ),
                format!("nohz_full={cpus} isolcpus={cpus}"),
            )],
            "RCU" => vec![boot(
                "boot-rcu_nocbs",
                "RCU callbacks run in the softirq of the CPU that queued them; rcu_nocbs \
                 offloads them to rcuo kthreads on housekeeping CPUs"
                    .into(),
                format!("rcu_nocbs={cpus} nohz_full={cpus}"),
            )],
            "SCHED" => vec![boot(
                "boot-isolcpus",
                "SCHED softirq: load balancing; isolcpus=domain takes the CPU out of the \
                 scheduler domains"
                    .into(),
                format!("isolcpus=domain,{cpus}"),
            )],
            _ => vec![Remedy::blocked(
                format!("softirq-{name}"),
                format!("{name} softirq raised by the IRQ or thread before it on this CPU"),
                Blocker::Other {
                    why: "no knob of its own: move the IRQ line that raises it".into(),
                },
            )],
        }
    }

    fn net_rx(&self, cpu: u32) -> Vec<Remedy> {
        let mut remedies = Vec::new();
        for queue in self.machine.rps.iter().filter(|q| q.cpus.contains(cpu)) {
            let to = cpu_mask_hex(&queue.cpus.without(self.measured));
            let prefix = queue
                .netns
                .as_ref()
                .map_or(String::new(), |ns| format!("{ns}-"));
            let path = format!(
                "/sys/class/net/{}/queues/rx-{}/rps_cpus",
                queue.device, queue.queue
            );
            let command = match &queue.netns {
                Some(ns) => format!("ip netns exec {ns} sh -c 'echo {to} > {path}'"),
                None => format!("echo {to} > {path}"),
            };
            remedies.push(Remedy::change(
                format!("rps-{prefix}{}-rx{}", queue.device, queue.queue),
                format!(
                    "RPS steers {}'s receive work (NET_RX) to CPU {cpu}: take the measured CPUs \
                     out of its mask",
                    queue.device
                ),
                Knob::RpsCpus {
                    netns: queue.netns.clone(),
                    device: queue.device.clone(),
                    queue: queue.queue,
                },
                queue.mask.clone(),
                to,
                command,
            ));
        }
        // the devices whose receive work reaches the CPU: by RPS, or by their IRQ lines
        let mut devices: Vec<_> =
            self.machine
                .net_devices
                .iter()
                .filter(|dev| dev.threaded.as_deref() == Some("0"))
                .filter(|dev| {
                    self.machine.rps.iter().any(|q| {
                        q.device == dev.device && q.netns == dev.netns && q.cpus.contains(cpu)
                    }) || dev.netns.is_none() && self.device_irq_on(&dev.device, cpu)
                })
                .collect();
        devices.dedup();
        for dev in devices {
            let prefix = dev
                .netns
                .as_ref()
                .map_or(String::new(), |ns| format!("{ns}-"));
            let path = format!("/sys/class/net/{}/threaded", dev.device);
            let command = match &dev.netns {
                Some(ns) => format!("ip netns exec {ns} sh -c 'echo 1 > {path}'"),
                None => format!("echo 1 > {path}"),
            };
            remedies.push(Remedy::change(
                format!("napi-{prefix}{}-threaded", dev.device),
                format!(
                    "poll {} in NAPI kthreads instead of NET_RX: the scheduler can then move \
                     them off the CPU (their affinity, priority)",
                    dev.device
                ),
                Knob::NapiThreaded {
                    netns: dev.netns.clone(),
                    device: dev.device.clone(),
                },
                "0".into(),
                "1".into(),
                command,
            ));
        }
        // the two caps of one NET_RX run: packets polled, and time
        for (name, what) in [
            ("net.core.netdev_budget", "packets"),
            ("net.core.netdev_budget_usecs", "µs"),
        ] {
            let Some(budget) = self
                .machine
                .sysctl(name)
                .and_then(|v| v.trim().parse::<u32>().ok())
            else {
                continue;
            };
            let to = (budget / 2).max(1);
            remedies.push(Remedy::change(
                format!("sysctl-{name}"),
                format!(
                    "shorter NET_RX runs (at most {to} {what} each instead of {budget}): each run \
                     takes less, the rest waits for the next run or ksoftirqd"
                ),
                Knob::Sysctl { name: name.into() },
                budget.to_string(),
                to.to_string(),
                format!("sysctl -w {name}={to}"),
            ));
        }
        if remedies.is_empty() {
            remedies.push(Remedy::blocked(
                "softirq-NET_RX".into(),
                "NET_RX softirq".into(),
                Blocker::Other {
                    why: "no RPS mask, threaded NAPI or budget found to change".into(),
                },
            ));
        }
        remedies
    }

    /// Whether an IRQ line named after `device` fired on `cpu`.
    fn device_irq_on(&self, device: &str, cpu: u32) -> bool {
        self.machine.irqs.iter().any(|irq| {
            irq.irq.is_some()
                && irq
                    .name
                    .split_whitespace()
                    .any(|word| word.starts_with(device))
                && irq.counts.iter().any(|&(c, count)| c == cpu && count > 0)
        })
    }

    fn thread(&self, tid: Option<u32>, comm: &str) -> Remedy {
        if let Some(kthread) = per_cpu_kthread(comm) {
            return Remedy::blocked(
                format!("kthread-{}", comm.replace('/', "-")),
                kthread.into(),
                Blocker::PinnedThread,
            );
        }
        if let Some(irq) = comm
            .strip_prefix("irq/")
            .and_then(|rest| rest.split('-').next())
        {
            if let Ok(irq) = irq.parse() {
                // a threaded handler follows its line's affinity
                return self.irq_line(irq, comm);
            }
        }
        if comm.starts_with("kworker/u") {
            return self.workqueue();
        }
        let Some(tid) = tid else {
            return Remedy::blocked(
                format!("thread-{comm}-affinity"),
                format!("move {comm} off the measured CPUs (taskset -apc on its process)"),
                Blocker::Other {
                    why: "the measurement names the thread by its name only: find its tid with \
                          `ps -eLo tid,comm`"
                        .into(),
                },
            );
        };
        let id = format!("thread-{tid}-affinity");
        if let Some(blocked) = self.no_housekeeping(id.clone()) {
            return blocked;
        }
        // a thread gone, or its tid reused, is not moved
        let current = self
            .machine
            .threads
            .iter()
            .find(|t| t.tid == tid && t.comm == comm);
        let Some(current) = current else {
            return Remedy::blocked(
                id,
                format!("move {comm} ({tid}) off the measured CPUs"),
                Blocker::Other {
                    why: format!("thread {tid} ({comm}) no longer runs on this machine"),
                },
            );
        };
        let from = current.affinity.clone().unwrap_or_default();
        let to = self.housekeeping.to_string();
        let pinned = from
            .parse::<CpuList>()
            .is_ok_and(|cpus| !cpus.is_empty() && cpus.iter().all(|c| self.measured.contains(c)));
        let mut remedy = format!("run {comm} ({tid}) on CPUs {to} only");
        if pinned {
            remedy.push_str(&format!(
                "; its owner pinned it to CPUs {from}: moving it may defeat what it was pinned for"
            ));
        }
        Remedy::change(
            id,
            remedy,
            Knob::ThreadAffinity {
                tid,
                comm: comm.into(),
            },
            from,
            to.clone(),
            format!("taskset -pc {to} {tid}"),
        )
    }

    fn workqueue(&self) -> Remedy {
        let id = "workqueue-cpumask".to_string();
        if let Some(blocked) = self.no_housekeeping(id.clone()) {
            return blocked;
        }
        let current = self
            .machine
            .workqueue_cpus
            .clone()
            .unwrap_or_else(|| self.machine.online_cpus.clone());
        let rest = current.without(self.measured);
        if rest.is_empty() {
            return Remedy::blocked(
                id,
                "unbound work items (kworker/u*) on the measured CPUs".into(),
                Blocker::Other {
                    why: "the workqueue cpumask has no CPU besides the measured ones".into(),
                },
            );
        }
        let to = cpu_mask_hex(&rest);
        Remedy::change(
            id,
            "unbound work items (kworker/u*) may run on the measured CPUs: keep them to the \
             housekeeping CPUs"
                .into(),
            Knob::WorkqueueCpumask,
            self.machine.workqueue_cpumask.clone().unwrap_or_default(),
            to.clone(),
            format!("echo {to} > /sys/devices/virtual/workqueue/cpumask"),
        )
    }

    fn nmi(&self) -> Remedy {
        let name = "kernel.nmi_watchdog";
        match self.machine.sysctl(name).map(str::trim) {
            Some("1") => Remedy::change(
                format!("sysctl-{name}"),
                "NMIs: the hard-lockup watchdog's perf counter fires them; stop the watchdog"
                    .into(),
                Knob::Sysctl { name: name.into() },
                "1".into(),
                "0".into(),
                format!("sysctl -w {name}=0"),
            ),
            _ => Remedy::blocked(
                "nmi".into(),
                "NMIs: perf counters (perf record, the watchdog is off)".into(),
                Blocker::Other {
                    why: "raised by whoever uses the PMU: stop the profiler".into(),
                },
            ),
        }
    }

    fn dma_latency(&self) -> Remedy {
        let from = self
            .machine
            .dma_latency_us
            .map_or_else(|| "-".into(), |us| us.to_string());
        Remedy::change(
            "dma-latency".into(),
            "the timer interrupt found the CPU idle: the exit from deep C-states took the \
             time; hold /dev/cpu_dma_latency at 0 while the workload runs (or \
             processor.max_cstate=1 intel_idle.max_cstate=1 on the boot line)"
                .into(),
            Knob::DmaLatency,
            from,
            "0".into(),
            "irqlens wakeup ... --dma-latency 0 (or hold /dev/cpu_dma_latency open with 0)".into(),
        )
    }
}

/// Why a kernel per-CPU kthread named `comm` cannot be moved, and what takes its work
/// away instead; `None` if it is not one.
fn per_cpu_kthread(comm: &str) -> Option<&'static str> {
    let (name, rest) = comm.split_once('/')?;
    if !rest.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    Some(match name {
        "ksoftirqd" => {
            "ksoftirqd runs the softirqs deferred on its CPU: it is bound to it; \
                        take away the softirq's source (the IRQ line, RPS) instead"
        }
        "kworker" => {
            "a per-CPU workqueue worker: bound to its CPU; the work queued there comes \
                      from the CPU's own activity (see kernel-per-CPU-kthreads.rst)"
        }
        "migration" => {
            "the stopper thread (stop_machine, migration): bound, and nothing to \
                        tune but fewer CPU hotplug and module loads"
        }
        "cpuhp" => "CPU hotplug thread: bound; it runs when CPUs go on or offline",
        "idle_inject" | "watchdog" => "a per-CPU kthread: bound to its CPU",
        _ if name.starts_with("rcu") => {
            "an RCU per-CPU kthread: bound; rcu_nocbs= (and nohz_full=) on the boot line \
             offload its callbacks"
        }
        _ => return None,
    })
}

fn conflicts(machine: &MachineState, measured: &CpuList) -> Vec<Conflict> {
    let mut conflicts = Vec::new();
    if measured.is_empty() {
        return conflicts;
    }
    let cpus = measured.to_string();
    if machine.irqbalance_running {
        conflicts.push(Conflict {
            what: "irqbalance runs: it moves IRQ lines back onto the measured CPUs".into(),
            remedy: format!(
                "set IRQBALANCE_BANNED_CPULIST={cpus} in /etc/default/irqbalance (or \
                 /etc/sysconfig/irqbalance) and restart it, or stop it (systemctl stop irqbalance)"
            ),
            cpus: Some(measured.clone()),
        });
    }
    for queue in &machine.rps {
        let hit = CpuList::from_iter(queue.cpus.iter().filter(|&c| measured.contains(c)));
        if !hit.is_empty() {
            let netns = queue
                .netns
                .as_ref()
                .map_or(String::new(), |ns| format!(" (netns {ns})"));
            conflicts.push(Conflict {
                what: format!(
                    "RPS on {} rx-{}{netns} sends receive work to CPUs {hit} (mask {})",
                    queue.device, queue.queue, queue.mask
                ),
                remedy: format!(
                    "clear them from the mask: {}",
                    cpu_mask_hex(&queue.cpus.without(measured))
                ),
                cpus: Some(hit),
            });
        }
    }
    if let Some(wq) = &machine.workqueue_cpus {
        let hit = CpuList::from_iter(wq.iter().filter(|&c| measured.contains(c)));
        if !hit.is_empty() {
            let rest = wq.without(measured);
            let remedy = if rest.is_empty() {
                "every CPU it has is measured: measure fewer CPUs to leave unbound work one".into()
            } else {
                format!(
                    "echo {} > /sys/devices/virtual/workqueue/cpumask",
                    cpu_mask_hex(&rest)
                )
            };
            conflicts.push(Conflict {
                what: format!("unbound work items may run on CPUs {hit} (workqueue cpumask)"),
                remedy,
                cpus: Some(hit),
            });
        }
    }
    if let Some(runtime) = machine.sysctl("kernel.sched_rt_runtime_us") {
        if runtime.trim() != "-1" {
            let period = machine
                .sysctl("kernel.sched_rt_period_us")
                .unwrap_or("1000000");
            conflicts.push(Conflict {
                what: format!(
                    "RT throttling: real-time tasks may run {}µs of every {}µs, then are stopped",
                    runtime.trim(),
                    period.trim()
                ),
                remedy: "sysctl -w kernel.sched_rt_runtime_us=-1 (a runaway RT task can then \
                         starve the CPU)"
                    .into(),
                cpus: None,
            });
        }
    }
    if machine.sysctl("kernel.timer_migration").map(str::trim) == Some("1") {
        conflicts.push(Conflict {
            what: "timer_migration=1: timers armed by idle CPUs may expire on a busy measured CPU"
                .into(),
            remedy: "sysctl -w kernel.timer_migration=0 keeps each timer on the CPU that armed it"
                .into(),
            cpus: None,
        });
    }
    if let Some(us) = machine
        .dma_latency_us
        .filter(|&us| us < NO_DMA_LATENCY_REQUEST)
    {
        conflicts.push(Conflict {
            what: format!("a process holds /dev/cpu_dma_latency at {us}µs: C-states are limited"),
            remedy: "measurements of idle exits reflect that request, not the default".into(),
            cpus: None,
        });
    }
    conflicts
}

#[cfg(test)]
mod tests;
