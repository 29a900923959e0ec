//! `irqlens check`'s configuration checks: whether the machine's settings keep interrupts,
//! their bottom halves and the kernel's own housekeeping off the checked CPUs, as the
//! kernel's Documentation/admin-guide/kernel-per-CPU-kthreads.rst and the RT and NFV
//! tunings (tuned's realtime and cpu-partitioning profiles) set them. Pure: each check
//! reads a [`Configuration`] and concludes with what it found, the cause, and advise's
//! remedy ids (`tune --apply` acts on them: [`remedy_changes`] gives each id's changes,
//! named by the same code) or the remedy in words (a boot parameter).
//!
//! "Isolated" below means taken out of the kernel's housekeeping by the boot line: in
//! isolcpus= (the /sys isolated file) or nohz_full=. The machine then says these CPUs are
//! kept for a workload, so something routed onto them fails a check that only warns on a
//! CPU the kernel may use for anything.

pub mod measured;

use std::cell::RefCell;

use irqlens_model::check::{Check, Configuration, Kind, Profile, Status};
use irqlens_model::tune::{
    Change, IrqMovable, IrqState, Knob, MachineState, RpsQueue, ThreadPolicy, cpu_mask_hex,
};
use irqlens_model::units::CpuList;

use crate::advise::{
    DMA_LATENCY_ID, NO_DMA_LATENCY_REQUEST, Steering, WORKQUEUE_ID, deep_idle_states_entered,
    irq_affinity_id, steering_change, steering_id, sysctl_id, thread_affinity_id,
    thread_priority_id,
};

/// A configuration check: its id, the profiles it belongs to, and its rule.
struct Rule {
    id: &'static str,
    profiles: &'static [Profile],
    judge: fn(&Facts, &'static str) -> Check,
}

const ALL: &[Profile] = &[Profile::Realtime, Profile::Network, Profile::Hpc];
const REALTIME_HPC: &[Profile] = &[Profile::Realtime, Profile::Hpc];
const REALTIME_NETWORK: &[Profile] = &[Profile::Realtime, Profile::Network];

/// Every configuration check, in the order they are shown: the boot line, the IRQ
/// lines, where the kernel's deferred work runs, the scheduler, power and memory, the
/// watchdogs, the threads, the clock.
const RULES: [Rule; 17] = [
    Rule {
        id: "isolcpus",
        profiles: ALL,
        judge: isolcpus,
    },
    Rule {
        id: "nohz_full",
        profiles: REALTIME_HPC,
        judge: nohz_full,
    },
    Rule {
        id: "rcu_nocbs",
        profiles: REALTIME_HPC,
        judge: rcu_nocbs,
    },
    Rule {
        id: "irqaffinity",
        profiles: ALL,
        judge: irqaffinity,
    },
    Rule {
        id: "irq-affinity",
        profiles: ALL,
        judge: irq_affinity,
    },
    Rule {
        id: "irqbalance",
        profiles: ALL,
        judge: irqbalance,
    },
    Rule {
        id: "rps-xps",
        profiles: REALTIME_NETWORK,
        judge: rps_xps,
    },
    Rule {
        id: "workqueue-cpumask",
        profiles: REALTIME_HPC,
        judge: workqueue_cpumask,
    },
    Rule {
        id: "rt-throttling",
        profiles: REALTIME_NETWORK,
        judge: rt_throttling,
    },
    Rule {
        id: "timer-migration",
        profiles: REALTIME_HPC,
        judge: timer_migration,
    },
    Rule {
        id: "c-states",
        profiles: REALTIME_NETWORK,
        judge: c_states,
    },
    Rule {
        id: "thp",
        profiles: REALTIME_HPC,
        judge: thp,
    },
    Rule {
        id: "nmi-watchdog",
        profiles: REALTIME_HPC,
        judge: nmi_watchdog,
    },
    Rule {
        id: "softlockup-watchdog",
        profiles: REALTIME_HPC,
        judge: softlockup_watchdog,
    },
    Rule {
        id: "ksoftirqd",
        profiles: REALTIME_NETWORK,
        judge: ksoftirqd,
    },
    Rule {
        id: "irq-threads",
        profiles: REALTIME_NETWORK,
        judge: irq_threads,
    },
    Rule {
        id: "clocksource",
        profiles: ALL,
        judge: clocksource,
    },
];

/// The ids of `profile`'s configuration checks, in the order `configuration` runs them.
pub fn profile_checks(profile: Profile) -> Vec<&'static str> {
    rules(profile).map(|rule| rule.id).collect()
}

fn rules(profile: Profile) -> impl Iterator<Item = &'static Rule> {
    RULES
        .iter()
        .filter(move |rule| rule.profiles.contains(&profile))
}

/// The configuration checks of `profile` for `cpus`, in `profile_checks`'s order. Without
/// CPUs, every check is skipped.
pub fn configuration(config: &Configuration, cpus: &CpuList, profile: Profile) -> Vec<Check> {
    let facts = Facts::new(config, cpus);
    rules(profile)
        .map(|rule| {
            if cpus.is_empty() {
                return verdict(rule.id, Status::Skip, "no CPUs to check", "some CPUs");
            }
            (rule.judge)(&facts, rule.id)
        })
        .collect()
}

/// The changes of each remedy id the configuration checks of `cpus` (every profile's)
/// give, in the order they give them: what `irqlens tune --apply ID` makes. Most remedies
/// are one change; turning RT throttling off under RT group scheduling is two, made in
/// order (the sysctl, then the root group's runtime, which cannot exceed it) and put back
/// last first.
pub fn remedy_changes(config: &Configuration, cpus: &CpuList) -> Vec<(String, Vec<Change>)> {
    if cpus.is_empty() {
        return Vec::new();
    }
    let facts = Facts::new(config, cpus);
    for rule in &RULES {
        (rule.judge)(&facts, rule.id);
    }
    facts.remedies.into_inner()
}

/// What the rules share: the configuration, the checked CPUs, which of them are
/// isolated, and the CPUs left for housekeeping.
struct Facts<'a> {
    config: &'a Configuration,
    machine: &'a MachineState,
    cpus: &'a CpuList,
    /// The checked CPUs in isolcpus= or nohz_full=.
    isolated: CpuList,
    /// The online CPUs not checked: where what is moved off the checked ones goes.
    housekeeping: CpuList,
    /// Each remedy id the rules named, with its changes.
    remedies: RefCell<Vec<(String, Vec<Change>)>>,
}

impl<'a> Facts<'a> {
    fn new(config: &'a Configuration, cpus: &'a CpuList) -> Self {
        let machine = &config.machine;
        let nohz_full = config.nohz_full.clone().unwrap_or_default();
        let isolated = cpus
            .iter()
            .filter(|&cpu| config.isolated.contains(cpu) || nohz_full.contains(cpu));
        Facts {
            config,
            machine,
            cpus,
            isolated: isolated.collect(),
            housekeeping: machine.online_cpus.without(cpus),
            remedies: RefCell::default(),
        }
    }

    /// Names remedy `id`, made of `changes` (those that would change something): the id
    /// a check lists, its changes kept for [`remedy_changes`].
    fn remedy(&self, id: String, changes: impl IntoIterator<Item = Change>) -> String {
        let mut remedies = self.remedies.borrow_mut();
        if !remedies.iter().any(|(known, _)| *known == id) {
            let changes = changes.into_iter().filter(|c| !c.is_no_op()).collect();
            remedies.push((id.clone(), changes));
        }
        id
    }

    /// The remedy that delivers IRQ line `irq` to the housekeeping CPUs only.
    fn irq_remedy(&self, irq: u32) -> String {
        let line = self.machine.irqs.iter().find(|line| line.irq == Some(irq));
        let from = line.and_then(|line| line.affinity.clone());
        let change = Change {
            knob: Knob::IrqAffinity { irq },
            from: from.unwrap_or_default(),
            to: self.housekeeping.to_string(),
        };
        self.remedy(irq_affinity_id(irq), [change])
    }

    /// The remedy that sets sysctl `name` (as read: `from`) to `to`.
    fn sysctl_remedy(&self, name: &str, from: &str, to: &str) -> String {
        self.remedy(sysctl_id(name), [sysctl_change(name, from, to)])
    }

    /// `cpus` as a label: `CPU 1`, `CPUs 1-3`.
    fn label(cpus: &CpuList) -> String {
        match cpus.len() {
            1 => format!("CPU {cpus}"),
            _ => format!("CPUs {cpus}"),
        }
    }

    /// The checked CPUs as a label.
    fn checked(&self) -> String {
        Self::label(self.cpus)
    }

    /// Fail when `hit` (checked CPUs something reaches) includes an isolated one, else warn.
    fn warn_or_fail(&self, hit: &CpuList) -> Status {
        if hit.shared_with(&self.isolated).is_empty() {
            Status::Warn
        } else {
            Status::Fail
        }
    }

    /// Skipped when every online CPU is checked: there is nowhere to move anything to.
    fn no_housekeeping(&self, id: &'static str, expected: &str) -> Option<Check> {
        self.housekeeping.is_empty().then(|| {
            verdict(id, Status::Skip, "every online CPU is checked", expected)
                .caused_by("there is no other CPU to move anything to: check fewer CPUs")
        })
    }

    /// A sysctl's value, trimmed.
    fn sysctl(&self, name: &str) -> Option<&str> {
        self.machine.sysctl(name).map(str::trim)
    }

    /// A boot parameter's CPU list; Err: it is there but not a list.
    fn boot_cpus(&self, name: &str) -> Option<Result<CpuList, String>> {
        let value = self.machine.boot_parameter(name)?;
        Some(
            kernel_cpu_list(self.machine, value)
                .map_err(|_| format!("{name}={value} is not a CPU list")),
        )
    }
}

fn sysctl_change(name: &str, from: &str, to: &str) -> Change {
    Change {
        knob: Knob::Sysctl { name: name.into() },
        from: from.into(),
        to: to.into(),
    }
}

/// The advice to add `parameters` to the boot line.
fn boot_line(parameters: String) -> String {
    format!("add {parameters} to the kernel's command line and reboot")
}

fn verdict(id: &str, status: Status, found: impl Into<String>, expected: &str) -> Check {
    Check::new(id, Kind::Configuration, status, found, expected)
}

/// isolcpus=: PASS when every checked CPU is isolated (the /sys isolated file) and the
/// boot line's isolcpus= carries `managed_irq` for them; WARN when isolated without it
/// (the kernel still spreads the queues of multi-queue devices onto them), or not isolated
/// (the scheduler balances any task onto them).
fn isolcpus(facts: &Facts, id: &'static str) -> Check {
    let expected = "isolated, with managed_irq";
    let advice = boot_line(format!("isolcpus=managed_irq,domain,{}", facts.cpus));
    let outside = facts.cpus.without(&facts.config.isolated);
    if !outside.is_empty() {
        return verdict(
            id,
            Status::Warn,
            format!("{} not isolated", Facts::label(&outside)),
            expected,
        )
        .caused_by("the scheduler balances any task onto them, and kernel threads run there")
        .advised(advice);
    }
    let (flags, listed) =
        isolcpus_parameter(facts.machine, facts.machine.boot_parameter("isolcpus"));
    let managed = flags.contains(&"managed_irq")
        && listed.is_some_and(|listed| facts.cpus.without(&listed).is_empty());
    if managed {
        return verdict(id, Status::Pass, "isolated, managed_irq", expected);
    }
    verdict(id, Status::Warn, "isolated, without managed_irq", expected)
        .caused_by(
            "the kernel spreads the queues of multi-queue devices (NVMe, NICs) over every CPU, \
             isolated ones included, and nothing can move them: managed_irq keeps them off",
        )
        .advised(advice)
}

/// The flags (`managed_irq`, `domain`, `nohz`) and CPUs of an isolcpus= value
/// (`managed_irq,domain,2-3`): flags are words, the rest is the CPU list.
fn isolcpus_parameter<'v>(
    machine: &MachineState,
    value: Option<&'v str>,
) -> (Vec<&'v str>, Option<CpuList>) {
    let Some(value) = value else {
        return (Vec::new(), None);
    };
    // the kernel's own flags (housekeeping_isolcpus_setup); `all` and `N` are CPUs
    let (flags, cpus): (Vec<&str>, Vec<&str>) = value
        .split(',')
        .partition(|part| ["nohz", "domain", "managed_irq"].contains(&part.trim()));
    (flags, kernel_cpu_list(machine, &cpus.join(",")).ok())
}

/// A CPU list of the boot line, in the kernel's forms: `N` is the last CPU (taken as the
/// last online one: the kernel's is the last possible one, the same unless CPUs are
/// hot-unplugged).
fn kernel_cpu_list(machine: &MachineState, value: &str) -> Result<CpuList, String> {
    let last = machine.online_cpus.iter().last().unwrap_or(0);
    CpuList::parse_kernel(value, last)
}

/// nohz_full=: PASS when every checked CPU is in it (the tick stops while one task runs);
/// WARN otherwise, and when the kernel has no nohz_full at all (CONFIG_NO_HZ_FULL): the
/// tick then interrupts the workload HZ times a second.
fn nohz_full(facts: &Facts, id: &'static str) -> Check {
    let expected = "every checked CPU";
    let parameter = format!("nohz_full={}", facts.cpus);
    let cause = "the scheduler tick interrupts the workload every 1/HZ s";
    let Some(nohz_full) = &facts.config.nohz_full else {
        return verdict(id, Status::Warn, "kernel without nohz_full", expected)
            .caused_by(cause)
            .advised(format!(
                "a kernel built with CONFIG_NO_HZ_FULL, then {}",
                boot_line(parameter)
            ));
    };
    let outside = facts.cpus.without(nohz_full);
    if outside.is_empty() {
        return verdict(id, Status::Pass, format!("nohz_full={nohz_full}"), expected);
    }
    verdict(
        id,
        Status::Warn,
        format!("{} not in nohz_full", Facts::label(&outside)),
        expected,
    )
    .caused_by(cause)
    .advised(boot_line(parameter))
}

/// rcu_nocbs=: PASS when every checked CPU's RCU callbacks are offloaded to rcuo threads,
/// by rcu_nocbs= or by nohz_full= (which implies it); WARN otherwise (callbacks then run in
/// the RCU softirq of the CPU that queued them). A bare `rcu_nocbs` only makes CPUs able
/// to offload later: it counts for none.
fn rcu_nocbs(facts: &Facts, id: &'static str) -> Check {
    let expected = "in rcu_nocbs= or nohz_full=";
    let listed = facts
        .boot_cpus("rcu_nocbs")
        .and_then(Result::ok)
        .unwrap_or_default();
    let nohz_full = facts.config.nohz_full.clone().unwrap_or_default();
    let offloaded: CpuList = listed.iter().chain(nohz_full.iter()).collect();
    let outside = facts.cpus.without(&offloaded);
    if outside.is_empty() {
        return verdict(id, Status::Pass, "callbacks offloaded", expected);
    }
    verdict(
        id,
        Status::Warn,
        format!("{} not offloaded", Facts::label(&outside)),
        expected,
    )
    .caused_by("RCU callbacks run in the RCU softirq of the CPU that queued them")
    .advised(boot_line(format!("rcu_nocbs={}", facts.cpus)))
}

/// irqaffinity=, the CPUs IRQ lines start on: PASS when it leaves the checked CPUs out,
/// FAIL when it includes one (every new line starts there); when absent, lines start on
/// every CPU: WARN if a checked CPU is isolated, SKIP otherwise (nothing says the CPUs
/// are kept for anything).
fn irqaffinity(facts: &Facts, id: &'static str) -> Check {
    let expected = "without the checked CPUs";
    if let Some(skip) = facts.no_housekeeping(id, expected) {
        return skip;
    }
    let advice = boot_line(format!("irqaffinity={}", facts.housekeeping));
    let online = &facts.machine.online_cpus;
    let boot = match facts.boot_cpus("irqaffinity") {
        Some(Err(why)) => {
            return verdict(id, Status::Warn, "irqaffinity= unreadable", expected)
                .caused_by(why)
                .advised(advice);
        }
        boot => boot.and_then(Result::ok),
    };
    // what new lines start on now: the default irqaffinity= sets at boot, unless a write
    // changed it since
    let now = (facts.config.default_irq_affinity.as_ref())
        .map(|default| default.shared_with(online))
        .or_else(|| boot.clone());
    let found = match (&boot, &now) {
        (Some(boot), Some(now)) if boot.shared_with(online) != *now => {
            format!("default_smp_affinity={now} (irqaffinity={boot} at boot)")
        }
        (Some(boot), _) => format!("irqaffinity={boot}"),
        (None, Some(now)) => format!("default_smp_affinity={now}"),
        (None, None) => "no irqaffinity=".into(),
    };
    match now {
        // set by irqaffinity= or a write (every online CPU with neither: the kernel's own
        // default, judged below as no setting)
        Some(cpus) if boot.is_some() || cpus != *online => {
            let hit = cpus.shared_with(facts.cpus);
            if hit.is_empty() {
                verdict(id, Status::Pass, found, expected)
            } else {
                verdict(id, Status::Fail, found, expected)
                    .caused_by(format!(
                        "IRQ lines start on {}, among others",
                        Facts::label(&hit)
                    ))
                    .advised(format!(
                        "{advice}; until then: echo {} > /proc/irq/default_smp_affinity",
                        cpu_mask_hex(&facts.housekeeping)
                    ))
            }
        }
        _ if facts.isolated.is_empty() => verdict(id, Status::Skip, "no irqaffinity=", expected)
            .caused_by("no isolated CPUs: IRQ lines may start on any CPU"),
        _ => verdict(id, Status::Warn, "no irqaffinity=", expected)
            .caused_by(format!(
                "IRQ lines start on every CPU, isolated {} included, until moved",
                Facts::label(&facts.isolated)
            ))
            .advised(advice),
    }
}

/// What one IRQ line does to the checked CPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum LineOnCpus {
    /// Delivered there because the kernel chose a checked CPU among the allowed ones.
    Chosen,
    /// A managed line (a multi-queue device's queue) delivered there: only
    /// isolcpus=managed_irq or fewer queues keep it off.
    Managed,
    /// Delivered to an isolated checked CPU.
    OnIsolated,
    /// Its affinity lies within the checked CPUs: someone routed it there.
    Routed,
}

impl LineOnCpus {
    fn status(self) -> Status {
        match self {
            LineOnCpus::Chosen | LineOnCpus::Managed => Status::Warn,
            LineOnCpus::OnIsolated | LineOnCpus::Routed => Status::Fail,
        }
    }
}

/// One IRQ line on the checked CPUs.
struct LineHit<'a> {
    line: &'a IrqState,
    irq: u32,
    how: LineOnCpus,
    /// Its interrupts on the checked CPUs so far.
    count: u64,
}

/// IRQ lines: FAIL when a line's affinity lies within the checked CPUs (it was routed
/// there) or it is delivered to an isolated checked CPU; WARN when it is delivered to a
/// checked CPU the kernel chose among the allowed ones (not isolated: nothing told it
/// otherwise), or it is a managed line there (no affinity write can move it: the remedy
/// is isolcpus=managed_irq); PASS when none is. Per-CPU vectors (the tick, IPIs) are no
/// lines. Lines are named worst first, then by their interrupts on the checked CPUs.
fn irq_affinity(facts: &Facts, id: &'static str) -> Check {
    let expected = "no line delivered there";
    if let Some(skip) = facts.no_housekeeping(id, expected) {
        return skip;
    }
    let mut hits: Vec<LineHit> = facts
        .machine
        .irqs
        .iter()
        .filter_map(|line| line_hit(facts, line))
        .collect();
    hits.sort_by_key(|hit| {
        (
            std::cmp::Reverse(hit.how.status()),
            std::cmp::Reverse(hit.count),
            hit.irq,
        )
    });
    let Some(status) = hits.iter().map(|hit| hit.how.status()).max() else {
        return verdict(
            id,
            Status::Pass,
            format!("no IRQ line on {}", facts.checked()),
            expected,
        );
    };
    let routed = hits
        .iter()
        .filter(|hit| hit.how == LineOnCpus::Routed)
        .count();
    let mut found = format!(
        "{} line{} on {}",
        hits.len(),
        plural(hits.len()),
        facts.checked()
    );
    if routed > 0 {
        found.push_str(&format!(", {routed} routed"));
    }
    let cause = name_some(hits.iter().map(|hit| describe_line_hit(facts, hit)), "line");
    let remedies: Vec<String> = hits
        .iter()
        .filter(|hit| hit.how != LineOnCpus::Managed)
        .map(|hit| facts.irq_remedy(hit.irq))
        .collect();
    let mut check = verdict(id, status, found, expected)
        .caused_by(cause)
        .remedied_by(remedies);
    if hits.iter().any(|hit| hit.how == LineOnCpus::Managed) {
        check = check.advised(format!(
            "managed lines: add isolcpus=managed_irq,domain,{} to the kernel's command line, \
             or give the device fewer queues (ethtool -L)",
            facts.cpus
        ));
    }
    check
}

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// The most a cause names: the worst few say what is wrong, the remedies list them all.
const NAMED: usize = 5;

/// The first `NAMED` of `items` (`what`s), and how many more there are.
fn name_some(items: impl Iterator<Item = String>, what: &str) -> String {
    let items: Vec<String> = items.collect();
    let mut text = items[..items.len().min(NAMED)].join("; ");
    let more = items.len().saturating_sub(NAMED);
    if more > 0 {
        text.push_str(&format!("; and {more} more {what}{}", plural(more)));
    }
    text
}

fn line_hit<'a>(facts: &Facts, line: &'a IrqState) -> Option<LineHit<'a>> {
    let irq = line.irq?;
    let managed = match line.movable {
        IrqMovable::Yes => false,
        IrqMovable::LikelyManaged => true,
        IrqMovable::PerCpuVector | IrqMovable::NoAffinityFile => return None,
    };
    let list = |text: &Option<String>| text.as_deref().and_then(|t| t.parse::<CpuList>().ok());
    let affinity = list(&line.affinity);
    // without an effective affinity (older kernels, some chips) a line may go anywhere
    // it is allowed
    let delivered = list(&line.effective_affinity)
        .or_else(|| affinity.clone())
        .unwrap_or_default()
        .shared_with(facts.cpus);
    let routed = affinity.is_some_and(|a| !a.is_empty() && a.without(facts.cpus).is_empty());
    let how = if managed {
        (!delivered.is_empty()).then_some(LineOnCpus::Managed)?
    } else if routed {
        LineOnCpus::Routed
    } else if !delivered.shared_with(&facts.isolated).is_empty() {
        LineOnCpus::OnIsolated
    } else if !delivered.is_empty() {
        LineOnCpus::Chosen
    } else {
        return None;
    };
    let count = line
        .counts
        .iter()
        .filter(|(cpu, _)| facts.cpus.contains(*cpu))
        .map(|(_, count)| count)
        .sum();
    Some(LineHit {
        line,
        irq,
        how,
        count,
    })
}

fn describe_line_hit(facts: &Facts, hit: &LineHit) -> String {
    let line = hit.line;
    let affinity = line.affinity.as_deref().unwrap_or("?");
    let effective = line.effective_affinity.as_deref().unwrap_or(affinity);
    let why = match hit.how {
        LineOnCpus::Routed => format!("routed to {affinity}"),
        LineOnCpus::OnIsolated => format!("delivered to isolated {effective} (allowed {affinity})"),
        LineOnCpus::Chosen => format!("delivered to {effective}, chosen among {affinity}"),
        LineOnCpus::Managed => format!(
            "managed by the kernel, delivered to {effective}{}",
            if facts.isolated.is_empty() {
                ""
            } else {
                " despite isolation"
            }
        ),
    };
    format!(
        "IRQ {} {} ({why}, {} interrupt{} here)",
        hit.irq,
        line.handlers(),
        hit.count,
        plural(hit.count as usize)
    )
}

/// irqbalance: PASS when it does not run, or runs with every checked CPU banned
/// (IRQBALANCE_BANNED_CPULIST or _CPUS; without either it bans the isolated and nohz_full
/// CPUs by itself); FAIL when it runs and may use a checked CPU: it moves lines back onto
/// them every 10 s, undoing any affinity set by hand.
fn irqbalance(facts: &Facts, id: &'static str) -> Check {
    let expected = "stopped, or the CPUs banned";
    if !facts.machine.irqbalance_running {
        return verdict(id, Status::Pass, "not running", expected);
    }
    let (banned, from) = match &facts.config.irqbalance_banned {
        Some(banned) => (banned.cpus.clone(), banned.from.clone()),
        None => (
            facts
                .config
                .isolated
                .iter()
                .chain(facts.config.nohz_full.iter().flat_map(CpuList::iter))
                .collect(),
            "its default: the isolated and nohz_full CPUs".into(),
        ),
    };
    let allowed = facts.cpus.without(&banned);
    if allowed.is_empty() {
        return verdict(
            id,
            Status::Pass,
            format!("running, bans {}", Facts::label(facts.cpus)),
            expected,
        );
    }
    let list: CpuList = banned.iter().chain(facts.cpus.iter()).collect();
    verdict(
        id,
        Status::Fail,
        format!("running, {} not banned", Facts::label(&allowed)),
        expected,
    )
    .caused_by(format!(
        "irqbalance moves IRQ lines onto {} (banned: {}, from {from})",
        Facts::label(&allowed),
        if banned.is_empty() {
            "none".to_string()
        } else {
            banned.to_string()
        }
    ))
    .advised(format!(
        "set IRQBALANCE_BANNED_CPULIST={list} in /etc/default/irqbalance (or \
         /etc/sysconfig/irqbalance) and restart it, or stop it (systemctl disable --now irqbalance)"
    ))
}

/// RPS and XPS masks: WARN when a queue's mask includes a checked CPU (RPS sends that
/// queue's receive work there, XPS gives the CPU's sends that queue and its completions),
/// FAIL when the CPU is isolated; PASS when none does.
fn rps_xps(facts: &Facts, id: &'static str) -> Check {
    let expected = "no mask with these CPUs";
    if let Some(skip) = facts.no_housekeeping(id, expected) {
        return skip;
    }
    let masks = [
        (Steering::Rps, &facts.machine.rps),
        (Steering::Xps, &facts.machine.xps),
    ];
    let hits: Vec<(Steering, &RpsQueue, CpuList)> = masks
        .into_iter()
        .flat_map(|(steering, queues)| {
            queues
                .iter()
                .map(move |queue| (steering, queue, queue.cpus.shared_with(facts.cpus)))
        })
        .filter(|(_, _, hit)| !hit.is_empty())
        .collect();
    if hits.is_empty() {
        return verdict(
            id,
            Status::Pass,
            format!("none on {}", facts.checked()),
            expected,
        );
    }
    let hit: CpuList = hits.iter().flat_map(|(_, _, hit)| hit.iter()).collect();
    let cause = name_some(
        hits.iter().map(|(steering, queue, _)| {
            let (kind, dir) = steering.kind_and_queues();
            let kind = kind.to_uppercase();
            let netns = queue
                .netns
                .as_ref()
                .map_or(String::new(), |ns| format!(" (netns {ns})"));
            format!(
                "{kind} {} {dir}-{}{netns} mask {}",
                queue.device, queue.queue, queue.mask
            )
        }),
        "queue",
    );
    verdict(
        id,
        facts.warn_or_fail(&hit),
        format!(
            "{} queue{} steer to {}",
            hits.len(),
            plural(hits.len()),
            Facts::label(&hit)
        ),
        expected,
    )
    .caused_by(cause)
    .remedied_by(hits.iter().map(|(steering, queue, _)| {
        facts.remedy(
            steering_id(queue, *steering),
            [steering_change(queue, *steering, facts.cpus)],
        )
    }))
}

/// The workqueue cpumask, where unbound work items (kworker/u*) run: WARN when it
/// includes a checked CPU, FAIL when that CPU is isolated; PASS otherwise; SKIP when the
/// kernel has no such file.
fn workqueue_cpumask(facts: &Facts, id: &'static str) -> Check {
    let expected = "without the checked CPUs";
    if let Some(skip) = facts.no_housekeeping(id, expected) {
        return skip;
    }
    let (Some(mask), Some(cpus)) = (
        &facts.machine.workqueue_cpumask,
        &facts.machine.workqueue_cpus,
    ) else {
        return verdict(id, Status::Skip, "no workqueue cpumask", expected)
            .caused_by("the kernel has no /sys/devices/virtual/workqueue/cpumask");
    };
    let hit = cpus.shared_with(facts.cpus);
    if hit.is_empty() {
        return verdict(id, Status::Pass, format!("{mask} (CPUs {cpus})"), expected);
    }
    let check = verdict(
        id,
        facts.warn_or_fail(&hit),
        format!("{mask} (CPUs {cpus})"),
        expected,
    )
    .caused_by(format!(
        "unbound work items (kworker/u*) may run on {}",
        Facts::label(&hit)
    ));
    if cpus.without(facts.cpus).is_empty() {
        return check.advised("the cpumask has no CPU besides the checked ones: add one to it");
    }
    let change = Change {
        knob: Knob::WorkqueueCpumask,
        from: mask.clone(),
        to: cpu_mask_hex(&cpus.without(facts.cpus)),
    };
    check.remedied_by([facts.remedy(WORKQUEUE_ID.into(), [change])])
}

/// The share of each period the kernel lets real-time tasks run, below which RT
/// throttling fails: its default, 950000 of 1000000 µs.
const RT_RUNTIME_DEFAULT_PERCENT: i64 = 95;

/// RT throttling: PASS when sched_rt_runtime_us is -1 (off); WARN at the kernel's default
/// share or more (95%: a real-time task that spins is stopped 50 ms every second, which a
/// well-behaved periodic task never meets); FAIL below it (a task that needs more than
/// that share of a second is stopped when it is due). With RT group scheduling (a cgroup
/// v1 cpu controller) the root group's own runtime throttles its tasks: the lower of the
/// two counts. The remedy turns it off: the sysctl to -1, then the root group's runtime
/// to -1 (the kernel refuses a group more than the sysctl gives).
fn rt_throttling(facts: &Facts, id: &'static str) -> Check {
    let expected = "-1; 95% of the period warns";
    let name = "kernel.sched_rt_runtime_us";
    let Some((text, sysctl)) = facts
        .sysctl(name)
        .and_then(|text| Some((text, text.parse::<i64>().ok()?)))
    else {
        return verdict(id, Status::Skip, "no sched_rt_runtime_us", expected);
    };
    let group = facts
        .config
        .rt_group_runtime
        .as_ref()
        .filter(|(_, group)| *group >= 0 && (sysctl < 0 || *group < sysctl));
    let runtime = group.map_or(sysctl, |(_, group)| *group);
    if runtime < 0 {
        return verdict(id, Status::Pass, "-1 (off)", expected);
    }
    let period = facts
        .sysctl("kernel.sched_rt_period_us")
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(1_000_000);
    if runtime >= period {
        // the kernel throttles only a runtime short of its period
        return verdict(
            id,
            Status::Pass,
            format!("{runtime} of {period} µs"),
            expected,
        );
    }
    let status = if runtime * 100 >= period * RT_RUNTIME_DEFAULT_PERCENT {
        Status::Warn
    } else {
        Status::Fail
    };
    let mut cause = format!(
        "real-time tasks are stopped for {} ms of every {} ms",
        (period - runtime).max(0) / 1000,
        period / 1000
    );
    if let Some((path, _)) = group {
        cause.push_str(&format!(" (the root RT group's {path})"));
    }
    let group_off = (facts.config.rt_group_runtime.iter())
        .filter(|(_, runtime)| *runtime >= 0)
        .filter_map(|(path, runtime)| {
            let cgroup = std::path::Path::new(path).parent()?;
            Some(Change {
                knob: Knob::RtGroupRuntime {
                    cgroup: cgroup.to_string_lossy().into_owned(),
                },
                from: runtime.to_string(),
                to: "-1".into(),
            })
        });
    let off = std::iter::once(sysctl_change(name, text, "-1")).chain(group_off);
    verdict(id, status, format!("{runtime} of {period} µs"), expected)
        .caused_by(cause)
        .remedied_by([facts.remedy(sysctl_id(name), off)])
}

/// timer_migration: PASS at 0 (a timer expires on the CPU that armed it); WARN at 1 (the
/// kernel's default: timers armed by idle CPUs may expire on a busy checked one); SKIP
/// when the kernel has no such sysctl.
fn timer_migration(facts: &Facts, id: &'static str) -> Check {
    switched_off(
        facts,
        id,
        "kernel.timer_migration",
        "timers armed by idle CPUs may expire on a busy checked CPU",
    )
}

/// A sysctl that should be 0: PASS at 0, WARN (`cause`, with the sysctl's remedy)
/// otherwise, SKIP when the kernel has no such sysctl.
fn switched_off(facts: &Facts, id: &'static str, name: &str, cause: &str) -> Check {
    let expected = "0";
    match facts.sysctl(name) {
        None => verdict(
            id,
            Status::Skip,
            format!("no {}", name.trim_start_matches("kernel.")),
            expected,
        ),
        Some("0") => verdict(id, Status::Pass, "0", expected),
        Some(value) => verdict(id, Status::Warn, value, expected)
            .caused_by(cause)
            .remedied_by([facts.sysctl_remedy(name, value, "0")]),
    }
}

/// C-states: SKIP without idle states on the checked CPUs (no cpuidle driver, most VMs);
/// WARN when they may enter a state whose exit takes more than advise's
/// DEEP_IDLE_LATENCY_US (10 µs) and no /dev/cpu_dma_latency request rules it out (an IRQ
/// or wakeup that finds the CPU there waits for the exit); PASS otherwise.
fn c_states(facts: &Facts, id: &'static str) -> Check {
    let expected = "no exit above 10 µs";
    let states: Vec<_> = facts
        .machine
        .idle_states
        .iter()
        .filter(|state| facts.cpus.contains(state.cpu))
        .collect();
    if states.is_empty() {
        return verdict(id, Status::Skip, "no idle states", expected).caused_by(
            "no cpuidle driver: the CPUs halt, and how long waking takes is not the kernel's",
        );
    }
    let deep: Vec<_> = deep_idle_states_entered(facts.machine, facts.cpus).collect();
    let Some(deepest) = deep.iter().max_by_key(|state| state.latency_us) else {
        let enabled = states.iter().filter(|state| !state.disabled);
        let deepest = enabled.max_by_key(|state| state.latency_us);
        let found = deepest.map_or("every state disabled".into(), |state| {
            format!("deepest {} {} µs", state.name, state.latency_us)
        });
        return verdict(id, Status::Pass, found, expected);
    };
    let mut names: Vec<String> = deep
        .iter()
        .map(|state| format!("{} {} µs", state.name, state.latency_us))
        .collect();
    names.sort();
    names.dedup();
    let cpus: CpuList = deep.iter().map(|state| state.cpu).collect();
    verdict(
        id,
        Status::Warn,
        format!("{} {} µs enabled", deepest.name, deepest.latency_us),
        expected,
    )
    .caused_by(format!(
        "{} may enter {}: an IRQ or wakeup that finds them there waits for the exit",
        Facts::label(&cpus),
        names.join(", ")
    ))
    .remedied_by([facts.remedy(
        DMA_LATENCY_ID.into(),
        [Change {
            knob: Knob::DmaLatency,
            from: (facts.machine.dma_latency_us)
                .unwrap_or(NO_DMA_LATENCY_REQUEST)
                .to_string(),
            to: "0".into(),
        }],
    )])
    .advised(
        "hold /dev/cpu_dma_latency at 0 while the workload runs, disable the states \
         (cpuidle/stateN/disable), or add processor.max_cstate=1 intel_idle.max_cstate=1 \
         to the kernel's command line",
    )
}

/// Transparent huge pages: WARN at `always` (khugepaged collapses pages and faults compact
/// memory on any CPU, the checked ones included); PASS at `madvise` or `never`; SKIP when
/// the kernel has no THP.
fn thp(facts: &Facts, id: &'static str) -> Check {
    let expected = "madvise or never";
    match facts.config.transparent_hugepage.as_deref() {
        None => verdict(id, Status::Skip, "no THP", expected),
        Some("always") => verdict(id, Status::Warn, "always", expected)
            .caused_by(
                "any allocation may compact memory, and khugepaged's collapses flush TLBs of \
                 every CPU the process runs on",
            )
            .advised(
                "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled (or \
                 transparent_hugepage=madvise on the kernel's command line)",
            ),
        Some(mode) => verdict(id, Status::Pass, mode, expected),
    }
}

/// The hard-lockup watchdog: WARN when kernel.nmi_watchdog is 1 (a perf counter raises an
/// NMI on every CPU every watchdog_thresh seconds); PASS at 0; SKIP when the kernel has
/// none.
fn nmi_watchdog(facts: &Facts, id: &'static str) -> Check {
    let check = switched_off(
        facts,
        id,
        "kernel.nmi_watchdog",
        "the hard-lockup detector raises an NMI on every CPU periodically",
    );
    match check.status {
        Status::Warn => check.advised("nmi_watchdog=0 on the kernel's command line keeps it off"),
        _ => check,
    }
}

/// The soft-lockup watchdog: WARN when it runs (kernel.watchdog and kernel.soft_watchdog
/// not 0) on a checked CPU (kernel.watchdog_cpumask): an hrtimer every few seconds wakes
/// the CPU's stopper thread; PASS when off or kept to other CPUs (nohz_full= keeps it to
/// the housekeeping CPUs by itself); SKIP when the kernel has no lockup detectors.
fn softlockup_watchdog(facts: &Facts, id: &'static str) -> Check {
    let expected = "off on the checked CPUs";
    let Some(watchdog) = facts.sysctl("kernel.watchdog") else {
        return verdict(id, Status::Skip, "no watchdog sysctl", expected);
    };
    if watchdog == "0" || facts.sysctl("kernel.soft_watchdog") == Some("0") {
        return verdict(id, Status::Pass, "off", expected);
    }
    let name = "kernel.watchdog_cpumask";
    let on = facts
        .sysctl(name)
        .and_then(|list| list.parse::<CpuList>().ok())
        .unwrap_or_else(|| facts.machine.online_cpus.clone())
        .shared_with(facts.cpus);
    if on.is_empty() {
        return verdict(
            id,
            Status::Pass,
            format!("not on {}", facts.checked()),
            expected,
        );
    }
    let check = verdict(
        id,
        Status::Warn,
        format!("on {}", Facts::label(&on)),
        expected,
    )
    .caused_by("an hrtimer every few seconds wakes each CPU's stopper thread (migration/N)");
    // an empty mask is no remedy: the watchdog would then watch no CPU
    if facts.housekeeping.is_empty() {
        return check.advised("nohz_full= on the kernel's command line keeps it off them");
    }
    let from = facts.sysctl(name).unwrap_or_default();
    check
        .remedied_by([facts.sysctl_remedy(name, from, &facts.housekeeping.to_string())])
        .advised(format!(
            "sysctl -w {name}={} (or nohz_full= on the kernel's command line)",
            facts.housekeeping
        ))
}

/// The scheduling policy above which a bottom-half thread preempts the real-time tasks it
/// should not: SCHED_FIFO 1 runs it before every normal task and after every other
/// real-time one (kernel-per-CPU-kthreads.rst), which is what RT tunings give it.
const BOTTOM_HALF_MAX_RT_PRIORITY: u32 = 1;

/// A thread's real-time priority, if it runs SCHED_FIFO or SCHED_RR.
fn rt_priority(thread: &ThreadPolicy) -> Option<u32> {
    let (class, priority) = thread.policy.split_once(':')?;
    matches!(class, "f" | "r").then(|| priority.parse().ok())?
}

/// ksoftirqd of the checked CPUs: PASS at SCHED_OTHER (the kernel's default) or SCHED_FIFO
/// 1, reporting the policy; WARN above FIFO/RR 1: the softirqs deferred to it (network
/// receive, timers, RCU) then preempt every real-time task below it, the workload's
/// included; SKIP when none runs (the CPU is offline).
fn ksoftirqd(facts: &Facts, id: &'static str) -> Check {
    let expected = "SCHED_OTHER or FIFO 1";
    let threads: Vec<&ThreadPolicy> = facts
        .machine
        .ksoftirqd
        .iter()
        .filter(|thread| {
            thread
                .comm
                .strip_prefix("ksoftirqd/")
                .and_then(|cpu| cpu.parse().ok())
                .is_some_and(|cpu| facts.cpus.contains(cpu))
        })
        .collect();
    if threads.is_empty() {
        return verdict(id, Status::Skip, "no ksoftirqd", expected);
    }
    let mut policies: Vec<&str> = threads.iter().map(|t| t.policy.as_str()).collect();
    policies.sort_unstable();
    policies.dedup();
    let found = policies.join(", ");
    let high: Vec<&&ThreadPolicy> = threads
        .iter()
        .filter(|thread| rt_priority(thread).is_some_and(|p| p > BOTTOM_HALF_MAX_RT_PRIORITY))
        .collect();
    if high.is_empty() {
        return verdict(id, Status::Pass, found, expected);
    }
    verdict(id, Status::Warn, found, expected)
        .caused_by(format!(
            "{} run real-time above 1: the softirqs deferred to them preempt the real-time \
             tasks below",
            high.iter()
                .map(|t| format!("{} ({}) at {}", t.comm, t.tid, t.policy))
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .remedied_by(high.iter().map(|thread| {
            let change = Change {
                knob: Knob::ThreadPriority {
                    tid: thread.tid,
                    comm: thread.comm.clone(),
                },
                from: thread.policy.clone(),
                to: format!("f:{BOTTOM_HALF_MAX_RT_PRIORITY}"),
            };
            facts.remedy(thread_priority_id(thread.tid), [change])
        }))
}

/// NAPI threads (napi/*) and IRQ threads (irq/*): WARN when one may run on a checked CPU
/// (the bottom half of a device's IRQ runs there), naming them; PASS when none may. The
/// remedy of a NAPI thread is its affinity; an IRQ thread follows its line's affinity (the
/// kernel resets the thread's to it), so its remedy is the line's.
fn irq_threads(facts: &Facts, id: &'static str) -> Check {
    let expected = "none on the checked CPUs";
    if let Some(skip) = facts.no_housekeeping(id, expected) {
        return skip;
    }
    let on: Vec<&ThreadPolicy> = facts
        .config
        .bottom_half_threads
        .iter()
        .filter(|thread| {
            thread
                .affinity
                .as_deref()
                .and_then(|list| list.parse::<CpuList>().ok())
                .is_some_and(|allowed| !allowed.shared_with(facts.cpus).is_empty())
        })
        .collect();
    if on.is_empty() {
        return verdict(
            id,
            Status::Pass,
            format!(
                "{} thread{}, none on {}",
                facts.config.bottom_half_threads.len(),
                plural(facts.config.bottom_half_threads.len()),
                facts.checked()
            ),
            expected,
        );
    }
    let mut remedies: Vec<String> = on
        .iter()
        .map(|thread| match irq_of_thread(&thread.comm) {
            Some(irq) => facts.irq_remedy(irq),
            None => {
                let from = thread.affinity.clone().unwrap_or_default();
                let allowed = from.parse::<CpuList>().unwrap_or_default();
                let mut to = allowed.without(facts.cpus);
                if to.is_empty() {
                    to = facts.housekeeping.clone();
                }
                let change = Change {
                    knob: Knob::ThreadAffinity {
                        tid: thread.tid,
                        comm: thread.comm.clone(),
                    },
                    from,
                    to: to.to_string(),
                };
                facts.remedy(thread_affinity_id(thread.tid), [change])
            }
        })
        .collect();
    remedies.dedup();
    verdict(
        id,
        Status::Warn,
        format!(
            "{} thread{} may run on {}",
            on.len(),
            plural(on.len()),
            facts.checked()
        ),
        expected,
    )
    .caused_by(name_some(
        on.iter().map(|t| {
            format!(
                "{} ({}) {} on {}",
                t.comm,
                t.tid,
                t.policy,
                t.affinity.as_deref().unwrap_or("?")
            )
        }),
        "thread",
    ))
    .remedied_by(remedies)
}

/// The IRQ line of an IRQ thread's name (`irq/36-virtio1-req.0`).
fn irq_of_thread(comm: &str) -> Option<u32> {
    comm.strip_prefix("irq/")?.split('-').next()?.parse().ok()
}

/// Clocksources a read of which costs microseconds: a port or MMIO access, a trap under a
/// hypervisor, or the tick's resolution.
const SLOW_CLOCKSOURCES: [&str; 5] = ["hpet", "acpi_pm", "jiffies", "refined-jiffies", "pit"];

/// The clocksource: WARN on hpet, acpi_pm, jiffies (every clock read of the workload and
/// of the kernel's tracing pays microseconds: usually the TSC was found unstable); PASS on
/// the others (tsc, kvm-clock, arch_sys_counter: read in a few ns); SKIP when unreadable.
fn clocksource(facts: &Facts, id: &'static str) -> Check {
    let expected = "tsc or another fast one";
    let Some(source) = facts.config.clocksource.as_deref() else {
        return verdict(id, Status::Skip, "no clocksource", expected);
    };
    if !SLOW_CLOCKSOURCES.contains(&source) {
        return verdict(id, Status::Pass, source, expected);
    }
    verdict(id, Status::Warn, source, expected)
        .caused_by(format!(
            "each read of {source} takes microseconds, in the workload and in the kernel"
        ))
        .advised(
            "see why the TSC was rejected (dmesg | grep -i clocksource); if it is sound, \
             tsc=reliable on the kernel's command line",
        )
}

#[cfg(test)]
mod tests;
