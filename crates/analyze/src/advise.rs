//! `irqlens advise`: from the causes a measurement named on each CPU and the machine's
//! state, the knob that would take each cause off the CPU (or why none can), and what on
//! the machine works against it. The remedies follow the kernel's
//! Documentation/admin-guide/kernel-per-CPU-kthreads.rst.

mod causes;

use irqlens_model::system::Capability;

use irqlens_model::tune::{
    Advice, Blocker, CauseClass, CauseSource, Change, Conflict, CpuCause, IdleState, IrqMovable,
    Knob, MachineState, RpsQueue, ThreadPolicy, comm_matches, cpu_mask_hex, is_irqlens_thread,
};
use irqlens_model::units::CpuList;

pub use causes::{BH_DELAY, account_causes, bh_causes, noise_causes, wakeup_causes};

/// The value of `/dev/cpu_dma_latency` when nobody holds a request (µs).
pub const NO_DMA_LATENCY_REQUEST: u32 = 2_000_000_000;

/// Idle states whose exit takes longer than this (µs) are a conflict when the measured CPUs
/// may enter them: the exit is added to every IRQ and wakeup that finds the CPU there.
pub const DEEP_IDLE_LATENCY_US: u32 = 10;

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
        // a remedy changes something: a knob already at its proposed value is none
        .filter(|advice| advice.change.as_ref().is_none_or(|c| c.from != c.to))
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
            // irqlens's own threads are the measurement: moving them is no remedy
            (CauseClass::Thread, CauseSource::Thread { comm, .. }) if is_irqlens_thread(comm) => {
                Vec::new()
            }
            (CauseClass::Thread, CauseSource::Thread { tid, comm }) => {
                self.thread(*tid, comm, ThreadRole::of(cause))
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
            (CauseClass::Idle, source) => vec![self.dma_latency(cause.cpu, source)],
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
        let id = irq_affinity_id(irq);
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
            "NET_TX" => self.net_tx(cpu),
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
        let mut remedies: Vec<Remedy> = self
            .machine
            .rps
            .iter()
            .filter(|q| q.cpus.contains(cpu))
            .map(|queue| self.steering(queue, Steering::Rps, cpu))
            .collect();
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
                sysctl_id(name),
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

    /// The queue's mask without the measured CPUs.
    fn steering(&self, queue: &RpsQueue, steering: Steering, cpu: u32) -> Remedy {
        let Change { knob, from, to } = steering_change(queue, steering, self.measured);
        let (dir, file, work) = match steering {
            Steering::Rps => ("rx", "rps_cpus", "RPS steers its receive work (NET_RX)"),
            Steering::Xps => (
                "tx",
                "xps_cpus",
                "XPS gives the CPU's sends its transmit queue (NET_TX, completions)",
            ),
        };
        let path = format!(
            "/sys/class/net/{}/queues/{dir}-{}/{file}",
            queue.device, queue.queue
        );
        let command = match &queue.netns {
            Some(ns) => format!("ip netns exec {ns} sh -c 'echo {to} > {path}'"),
            None => format!("echo {to} > {path}"),
        };
        Remedy::change(
            steering_id(queue, steering),
            format!(
                "{}: {work} on CPU {cpu}: take the measured CPUs out of its mask",
                queue.device
            ),
            knob,
            from,
            to,
            command,
        )
    }

    /// NET_TX: the sends of the CPU's tasks, and the completions of its queues.
    fn net_tx(&self, cpu: u32) -> Vec<Remedy> {
        let remedies: Vec<Remedy> = self
            .machine
            .xps
            .iter()
            .filter(|q| q.cpus.contains(cpu))
            .map(|queue| self.steering(queue, Steering::Xps, cpu))
            .collect();
        if !remedies.is_empty() {
            return remedies;
        }
        vec![Remedy::blocked(
            "softirq-NET_TX".into(),
            "NET_TX softirq: sends and transmit completions on this CPU".into(),
            Blocker::Other {
                why: "no XPS mask includes the CPU: initiate network I/O on other CPUs and \
                      move the NIC's IRQ lines (kernel-per-CPU-kthreads.rst)"
                    .into(),
            },
        )]
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

    /// The thread a cause names, as it runs now: by its tid (a tid reused by another
    /// thread is not it), or the one thread of its name when the measurement names it by
    /// its name only; Err: why there is none.
    fn running_thread(&self, tid: Option<u32>, comm: &str) -> Result<&ThreadPolicy, String> {
        let mut known = self.machine.threads.iter().chain(&self.machine.ksoftirqd);
        if let Some(tid) = tid {
            return known
                .find(|t| t.tid == tid && comm_matches(comm, &t.comm))
                .ok_or_else(|| format!("thread {tid} ({comm}) no longer runs on this machine"));
        }
        let named: std::collections::BTreeMap<u32, &ThreadPolicy> = known
            .filter(|t| comm_matches(comm, &t.comm))
            .map(|t| (t.tid, t))
            .collect();
        match named.values().collect::<Vec<_>>().as_slice() {
            [one] => Ok(one),
            [] => Err(format!(
                "the measurement names the thread by its name only, and no thread named \
                 {comm} runs now"
            )),
            many => Err(format!(
                "the measurement names the thread by its name only, and {} threads are named \
                 {comm} (tids {}): pick one with `ps -eLo tid,comm`",
                many.len(),
                named
                    .keys()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        }
    }

    fn thread(&self, tid: Option<u32>, comm: &str, role: ThreadRole) -> Vec<Remedy> {
        let running = self.running_thread(tid, comm);
        // a bottom half's thread: its policy decides what it preempts and what waits for it
        let priority = || {
            running
                .as_ref()
                .ok()
                .and_then(|thread| self.bottom_half_priority(thread, role))
        };
        if let Some(kthread) = per_cpu_kthread(comm) {
            let pinned = Remedy::blocked(
                format!("kthread-{}", comm.replace('/', "-")),
                kthread.into(),
                Blocker::PinnedThread,
            );
            let softirqd = comm.starts_with("ksoftirqd/");
            return std::iter::once(pinned)
                .chain(priority().filter(|_| softirqd))
                .collect();
        }
        if let Some(irq) = comm
            .strip_prefix("irq/")
            .and_then(|rest| rest.split('-').next())
            .and_then(|irq| irq.parse().ok())
        {
            // a threaded handler follows its line's affinity
            return std::iter::once(self.irq_line(irq, comm))
                .chain(priority())
                .collect();
        }
        if comm.starts_with("kworker/u") {
            return vec![self.workqueue()];
        }
        let moved = match &running {
            Ok(thread) => self.move_thread(thread),
            Err(why) => {
                let why = why.clone();
                let what = match tid {
                    Some(tid) => format!("move {comm} ({tid}) off the measured CPUs"),
                    None => {
                        format!("move {comm} off the measured CPUs (taskset -apc on its process)")
                    }
                };
                let id = tid.map_or_else(|| format!("thread-{comm}-affinity"), thread_affinity_id);
                Remedy::blocked(id, what, Blocker::Other { why })
            }
        };
        std::iter::once(moved)
            .chain(priority().filter(|_| comm.starts_with("napi/")))
            .collect()
    }

    /// A thread off the measured CPUs: its affinity, the housekeeping CPUs.
    fn move_thread(&self, thread: &ThreadPolicy) -> Remedy {
        let (tid, comm) = (thread.tid, thread.comm.as_str());
        let id = thread_affinity_id(tid);
        if let Some(blocked) = self.no_housekeeping(id.clone()) {
            return blocked;
        }
        let from = thread.affinity.clone().unwrap_or_default();
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

    /// The policy a bottom half's thread (IRQ thread, NAPI thread, ksoftirqd) should run
    /// at for the measured work; none: leave it as it is.
    fn bottom_half_priority(&self, thread: &ThreadPolicy, role: ThreadRole) -> Option<Remedy> {
        let real_time = thread.policy.starts_with("f:") || thread.policy.starts_with("r:");
        let nice = thread
            .policy
            .strip_prefix("o:")
            .and_then(|nice| nice.parse::<i32>().ok());
        let (to, why) = match role {
            // Chubb & Song: a bottom half at SCHED_OTHER no longer preempts a real-time task
            ThreadRole::InTheWay if real_time => (
                "o:0",
                "it runs real-time and preempts the measured task: at SCHED_OTHER the task's \
                 real-time priority runs first (niced bottom halves)",
            ),
            ThreadRole::InTheWay if nice.is_some_and(|nice| nice < 19) => (
                "o:19",
                "it shares the CPU with the measured task: niced, it takes less of it (the \
                 work it carries then waits longer)",
            ),
            // kernel-per-CPU-kthreads.rst: ksoftirqd and bottom-half threads run at
            // SCHED_OTHER, behind every task of the CPU; the lowest real-time priority
            // runs them first and still lets every real-time task preempt them
            ThreadRole::OnThePath if !real_time => (
                "f:1",
                "the wakeup waited for it (it carries the work that wakes the task) behind \
                 normal tasks: at SCHED_FIFO 1 it runs before them and below every \
                 real-time task",
            ),
            _ => return None,
        };
        let (tid, comm) = (thread.tid, thread.comm.as_str());
        Some(Remedy::change(
            thread_priority_id(tid),
            format!("run {comm} ({tid}) at {to}: {why}"),
            Knob::ThreadPriority {
                tid,
                comm: comm.into(),
            },
            thread.policy.clone(),
            to.into(),
            priority_command(to, tid),
        ))
    }

    fn workqueue(&self) -> Remedy {
        let id = WORKQUEUE_ID.to_string();
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
                sysctl_id(name),
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

    /// An idle exit: a PM QoS latency target that keeps the CPU out of deep C-states,
    /// unless there are none to keep it out of, or the run that saw the exit held one.
    fn dma_latency(&self, cpu: u32, source: &CauseSource) -> Remedy {
        let id = DMA_LATENCY_ID.to_string();
        // without a cpuidle driver (most VMs) the CPU halts, and the hypervisor decides
        // how long waking it takes: a latency target has no state to rule out
        if !self
            .machine
            .idle_states
            .iter()
            .any(|state| state.cpu == cpu)
        {
            return Remedy::blocked(
                id,
                format!(
                    "the wakeup found CPU {cpu} idle, and it has no idle states (no cpuidle \
                     driver): waking a halted virtual CPU is the hypervisor's time"
                ),
                Blocker::Hypervisor,
            );
        }
        // holding 0 rules out more than the run's target only if a state the CPU entered
        // exits within that target, yet not at once
        let ruled_out_already = |held: u32| {
            !self.machine.idle_states.iter().any(|state| {
                state.cpu == cpu && !state.disabled && (1..=held).contains(&state.latency_us)
            })
        };
        if let CauseSource::IdleExit {
            held_dma_latency_us: Some(held),
        } = *source
            && ruled_out_already(held)
        {
            return Remedy::blocked(
                id,
                format!(
                    "the wakeup found CPU {cpu} idle, though the run held /dev/cpu_dma_latency at {held} µs"
                ),
                Blocker::Other {
                    why: format!(
                        "the run held the latency target at {held} µs already: what is left is \
                         the exit from the states it allows (keep the CPU busy, or idle=poll)"
                    ),
                },
            );
        }
        let from = self
            .machine
            .dma_latency_us
            .map_or_else(|| "-".into(), |us| us.to_string());
        let deepest = self
            .machine
            .idle_states
            .iter()
            .filter(|state| state.cpu == cpu && !state.disabled)
            .max_by_key(|state| state.latency_us)
            .map_or(String::new(), |state| {
                format!(
                    " (the deepest state CPU {cpu} enters: {}, {} µs exit latency)",
                    state.name, state.latency_us
                )
            });
        Remedy::change(
            id,
            format!(
                "the timer interrupt found the CPU idle: the exit from deep C-states took the \
                 time{deepest}; hold /dev/cpu_dma_latency at 0 while the workload runs (or \
                 processor.max_cstate=1 intel_idle.max_cstate=1 on the boot line)"
            ),
            Knob::DmaLatency,
            from,
            "0".into(),
            "irqlens wakeup ... --dma-latency 0 (or hold /dev/cpu_dma_latency open with 0)".into(),
        )
    }
}

/// The id of the remedy that moves IRQ line `irq` off the measured CPUs.
pub fn irq_affinity_id(irq: u32) -> String {
    format!("irq-{irq}-affinity")
}

/// The id of the remedy that changes sysctl `name` (dotted).
pub fn sysctl_id(name: &str) -> String {
    format!("sysctl-{name}")
}

/// The id of the remedy that moves thread `tid` off the measured CPUs.
pub fn thread_affinity_id(tid: u32) -> String {
    format!("thread-{tid}-affinity")
}

/// The id of the remedy that changes thread `tid`'s policy.
pub fn thread_priority_id(tid: u32) -> String {
    format!("thread-{tid}-priority")
}

/// The id of the remedy that keeps unbound work items off the measured CPUs.
pub const WORKQUEUE_ID: &str = "workqueue-cpumask";

/// The id of the remedy that holds `/dev/cpu_dma_latency`.
pub const DMA_LATENCY_ID: &str = "dma-latency";

/// The id of the remedy that takes the measured CPUs out of a queue's `steering` mask
/// (`rps-veth0-rx0`, `xps-NETNS-eth0-tx1`).
pub fn steering_id(queue: &RpsQueue, steering: Steering) -> String {
    let (kind, dir) = steering.kind_and_queues();
    let prefix = queue
        .netns
        .as_ref()
        .map_or(String::new(), |ns| format!("{ns}-"));
    format!("{kind}-{prefix}{}-{dir}{}", queue.device, queue.queue)
}

/// The change that takes `cpus` out of a queue's RPS or XPS mask.
pub fn steering_change(queue: &RpsQueue, steering: Steering, cpus: &CpuList) -> Change {
    let (netns, device, number) = (queue.netns.clone(), queue.device.clone(), queue.queue);
    let knob = match steering {
        Steering::Rps => Knob::RpsCpus {
            netns,
            device,
            queue: number,
        },
        Steering::Xps => Knob::XpsCpus {
            netns,
            device,
            queue: number,
        },
    };
    Change {
        knob,
        from: queue.mask.clone(),
        to: cpu_mask_hex(&queue.cpus.without(cpus)),
    }
}

/// Which steering mask of a queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steering {
    /// Receive packet steering (`rps_cpus`).
    Rps,
    /// Transmit packet steering (`xps_cpus`).
    Xps,
}

impl Steering {
    /// Its name (`rps`) and the prefix of its queues' directories (`rx`).
    pub fn kind_and_queues(self) -> (&'static str, &'static str) {
        match self {
            Steering::Rps => ("rps", "rx"),
            Steering::Xps => ("xps", "tx"),
        }
    }
}

/// How a thread a cause names stands to the measured work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ThreadRole {
    /// It took time from it: noise, or a wakeup it ran before or kept waiting.
    InTheWay,
    /// It carried the work that woke the measured task (an interposed IRQ thread,
    /// ksoftirqd, NAPI thread): the wakeup waited for it to run.
    OnThePath,
}

impl ThreadRole {
    fn of(cause: &CpuCause) -> Self {
        if cause.capability == Capability::Wakeup
            && cause.label.starts_with(crate::wakeup::INTERPOSED_LABEL)
        {
            ThreadRole::OnThePath
        } else {
            ThreadRole::InTheWay
        }
    }
}

/// What a person types to give thread `tid` the policy `value` (`o:NICE`, `f:PRIO`, `r:PRIO`).
fn priority_command(value: &str, tid: u32) -> String {
    match value.split_once(':') {
        Some(("o", nice)) => format!("chrt -o -p 0 {tid} && renice -n {nice} -p {tid}"),
        Some(("r", prio)) => format!("chrt -r -p {prio} {tid}"),
        Some((_, prio)) => format!("chrt -f -p {prio} {tid}"),
        None => format!("chrt -p {tid}"),
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
    let steering = [
        ("RPS", "rx", "sends receive work to"),
        ("XPS", "tx", "takes the sends of"),
    ];
    for ((kind, dir, does), queues) in steering.into_iter().zip([&machine.rps, &machine.xps]) {
        for queue in queues {
            let hit = CpuList::from_iter(queue.cpus.iter().filter(|&c| measured.contains(c)));
            if hit.is_empty() {
                continue;
            }
            let netns = queue
                .netns
                .as_ref()
                .map_or(String::new(), |ns| format!(" (netns {ns})"));
            conflicts.push(Conflict {
                what: format!(
                    "{kind} on {} {dir}-{}{netns} {does} CPUs {hit} (mask {})",
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
    conflicts.extend(deep_idle_states(machine, measured));
    conflicts
}

/// The idle states `cpus` may enter whose exit takes longer than `DEEP_IDLE_LATENCY_US`:
/// enabled, and not ruled out by a `/dev/cpu_dma_latency` request (the kernel keeps CPUs
/// out of states whose exit latency exceeds it).
pub fn deep_idle_states_entered<'a>(
    machine: &'a MachineState,
    cpus: &'a CpuList,
) -> impl Iterator<Item = &'a IdleState> {
    let request = machine.dma_latency_us.unwrap_or(NO_DMA_LATENCY_REQUEST);
    machine.idle_states.iter().filter(move |state| {
        let deep = state.latency_us > DEEP_IDLE_LATENCY_US && state.latency_us <= request;
        deep && !state.disabled && cpus.contains(state.cpu)
    })
}

/// The idle states the measured CPUs may enter whose exit takes longer than
/// `DEEP_IDLE_LATENCY_US` (`deep_idle_states_entered`): one conflict per state, with the
/// CPUs that have it.
fn deep_idle_states(machine: &MachineState, measured: &CpuList) -> Vec<Conflict> {
    let mut states: std::collections::BTreeMap<(u32, &str, u32), Vec<&IdleState>> =
        std::collections::BTreeMap::new();
    for state in deep_idle_states_entered(machine, measured) {
        states
            .entry((state.latency_us, state.name.as_str(), state.index))
            .or_default()
            .push(state);
    }
    states
        .into_iter()
        .map(|((latency, name, index), states)| {
            let cpus: CpuList = states.iter().map(|state| state.cpu).collect();
            let files = states
                .iter()
                .map(|state| {
                    format!(
                        "/sys/devices/system/cpu/cpu{}/cpuidle/state{index}/disable",
                        state.cpu
                    )
                })
                .collect::<Vec<_>>()
                .join(" ");
            Conflict {
                what: format!(
                    "CPUs {cpus} may enter idle state {name} ({latency} µs exit latency): an IRQ \
                     or wakeup that finds them there waits for the exit"
                ),
                remedy: format!(
                    "hold /dev/cpu_dma_latency below {latency} while the workload runs \
                     (irqlens wakeup --dma-latency 0), or disable the state: \
                     echo 1 | tee {files}"
                ),
                cpus: Some(cpus),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests;
