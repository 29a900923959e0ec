//! The metric families of each capability, from its analysis so far.
//!
//! Labels name what a dashboard groups by, from small sets: `cpu`, `class` (the kind of
//! interrupt or bottom half), `source` (a thread's comm, an IRQ line's name, a softirq
//! vector, a kernel function), `cause` and `component` (fixed lists). Threads are keyed
//! by comm, never by pid: a pid is a new series per short-lived thread. Families of
//! open-ended sets keep their largest series only (`MAX_SERIES_PER_FAMILY`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use prometheus_client::metrics::MetricType;

use super::{Family, Labels, Value};
use crate::Names;
use crate::bh::sources_of;
use irqlens_analyze::account::report::{Row as AccountRow, idle_by, table};
use irqlens_analyze::account::workloads::{UNKNOWN, name_cgroups};
use irqlens_analyze::account::{BySource, Ledger, Source as AccountSource};
use irqlens_analyze::bh::{BhStats, DelayCause};
use irqlens_analyze::noise::{Cause as NoiseCause, IRQ_SOURCE_NAMES, NoiseAnalysis, softirq_name};
use irqlens_analyze::noise_passive::{PassiveCause, PassiveNoise};
use irqlens_analyze::wakeup::{Cause as WakeupCause, WakeupStats};
use irqlens_analyze::workload::workload_key;
use irqlens_model::bh::{Selection, StatsConfig as BhConfig};
use irqlens_model::noise::AnalysisConfig;
use irqlens_model::wakeup::StatsConfig as WakeupConfig;
use irqlens_model::workload::{CgroupNames, WorkloadBy};

/// Series kept per family of an open-ended set (causes, sources, threads), the largest
/// first: a busy machine has a comm per kind of short-lived thread, and Prometheus pays
/// for every series it ever saw.
pub const MAX_SERIES_PER_FAMILY: usize = 50;

fn cpu(cpu: u32) -> Labels {
    vec![("cpu", cpu.to_string())]
}

/// `labels` plus a `source` label, if there is a source.
fn with_source(mut labels: Labels, source: Option<String>) -> Labels {
    labels.extend(source.map(|source| ("source", source)));
    labels
}

/// A hardirq's source: its line's name (its number if unnamed), or the vector's kind
/// (`local_timer`, `reschedule`, ...).
fn irq_source(source: u16, id: u32, irq_names: &HashMap<u32, String>) -> String {
    let named = match source {
        0 => irq_names.get(&id).filter(|name| !name.is_empty()).cloned(),
        _ => IRQ_SOURCE_NAMES.get(source as usize).map(|n| n.to_string()),
    };
    named.unwrap_or_else(|| id.to_string())
}

/// Series that print the same added up (two threads of one comm are one series), then
/// the `MAX_SERIES_PER_FAMILY` with the most of their first value.
fn top_series<const N: usize>(
    series: impl IntoIterator<Item = (Labels, [u64; N])>,
) -> Vec<(Labels, [u64; N])> {
    let mut folded: BTreeMap<Labels, [u64; N]> = BTreeMap::new();
    for (labels, values) in series {
        let sums = folded.entry(labels).or_insert([0; N]);
        for (sum, value) in sums.iter_mut().zip(values) {
            *sum += value;
        }
    }
    let mut ranked: Vec<_> = folded.into_iter().collect();
    ranked.sort_by(|a, b| b.1[0].cmp(&a.1[0]).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(MAX_SERIES_PER_FAMILY);
    ranked
}

/// Like [`top_series`], per CPU: each CPU keeps its largest.
fn top_series_per_cpu<const N: usize>(
    per_cpu: impl IntoIterator<Item = (u32, Vec<(Labels, [u64; N])>)>,
) -> Vec<(Labels, [u64; N])> {
    per_cpu
        .into_iter()
        .flat_map(|(c, series)| {
            top_series(series.into_iter().map(move |(labels, values)| {
                let mut with_cpu = cpu(c);
                with_cpu.extend(labels);
                (with_cpu, values)
            }))
        })
        .collect()
}

/// The `n`th value of each series, for one family of several made from the same series.
fn nth<const N: usize>(
    series: &[(Labels, [u64; N])],
    n: usize,
) -> impl Iterator<Item = (Labels, u64)> + '_ {
    series
        .iter()
        .map(move |(labels, values)| (labels.clone(), values[n]))
}

/// A noise cause's `class` and `source`.
fn noise_cause(cause: &NoiseCause, irq_names: &HashMap<u32, String>) -> Labels {
    let source = match *cause {
        NoiseCause::Irq { source, id } => Some(irq_source(source, id, irq_names)),
        NoiseCause::Softirq(vector) => Some(softirq_name(vector)),
        NoiseCause::Thread { comm, .. } => Some(comm.to_string()),
        // entry/exit of which class of interference
        NoiseCause::EntryExit(class) => Some(class.name().to_owned()),
        NoiseCause::Hardware | NoiseCause::Nmi | NoiseCause::NoRecord | NoiseCause::Dropped => None,
    };
    with_source(vec![("class", cause.class_name().to_owned())], source)
}

/// Passive noise (the agent's): each CPU's interference per cause since the start, each
/// CPU's largest series (causes whose labels read alike, as IRQ lines of one name, summed).
pub fn noise_passive_families(
    noise: &PassiveNoise,
    irq_names: &HashMap<u32, String>,
) -> Vec<Family> {
    let series = top_series_per_cpu(noise.cpus().map(|(c, causes)| {
        let causes = causes.iter().map(|(cause, stats)| {
            let labels = match cause {
                PassiveCause::Cause(cause) => noise_cause(cause, irq_names),
                PassiveCause::Other => vec![("class", cause.class_name().to_owned())],
            };
            (labels, [stats.total_ns, stats.count])
        });
        (c, causes.collect())
    }));
    vec![
        Family::seconds(
            "noise_passive_interference",
            "Time each CPU spent in NMIs, hardirqs and softirqs, per cause (interference-free: nested ones subtracted; the causes a CPU sees past its first few dozen summed as class other)",
            MetricType::Counter,
            nth(&series, 0),
        ),
        Family::count_total(
            "noise_passive_interferences",
            "NMIs, hardirqs and softirqs that ran on each CPU, per cause (as noise_passive_interference)",
            nth(&series, 1),
        ),
    ]
}

/// A noise analysis of no CPU: the families every noise run has.
pub(super) fn empty_noise() -> NoiseAnalysis {
    let config = AnalysisConfig {
        bucket_ns: 1,
        entries: 1,
        keep_recent: 0,
    };
    NoiseAnalysis::new(config, [])
}

/// The `workload` label values a run keeps (`WorkloadLabels`); the rest are `other`: a
/// node may run hundreds of pods, and Prometheus pays for every series it ever saw.
pub const MOST_WORKLOADS: usize = 10;

/// The `workload` label of the workloads past the first `MOST_WORKLOADS`.
pub const OTHER_WORKLOADS: &str = "other";

/// The workloads that have a `workload` label of their own: the first `MOST_WORKLOADS`
/// to show up (the largest first among those that show up together). Kept from one
/// snapshot to the next, so that no workload moves into or out of `other`: every series,
/// `other`'s included, then only grows, as a counter must (a ranking made again at each
/// snapshot would take a workload rising into the largest out of `other`, a counter
/// reset to Prometheus). A workload gone from a snapshot (its pod deleted, its rows
/// folded) gives its label back, to a workload that shows up later: over pod churn the
/// labels go to the pods that run now, not to the first ten the node ever ran.
#[derive(Debug, Default)]
pub struct WorkloadLabels {
    own: BTreeSet<String>,
    /// Every workload of the last snapshot: one counted in `other` there stays there.
    last: BTreeSet<String>,
}

impl WorkloadLabels {
    /// Takes a snapshot's workloads, `ranked` (largest first): frees the labels of those
    /// gone, and gives labels to those new since the last snapshot while there is room.
    fn admit<'k>(&mut self, ranked: impl IntoIterator<Item = &'k str>) {
        let ranked: Vec<&str> = ranked.into_iter().collect();
        let now: BTreeSet<String> = ranked.iter().map(|key| (*key).to_owned()).collect();
        self.own.retain(|key| now.contains(key));
        for key in ranked {
            if self.own.len() == MOST_WORKLOADS {
                break;
            }
            if !self.last.contains(key) {
                self.own.insert(key.to_owned());
            }
        }
        self.last = now;
    }

    /// The label of workload `key`: its own, or `other`.
    fn label(&self, key: &str) -> String {
        match self.own.contains(key) {
            true => key.to_owned(),
            false => OTHER_WORKLOADS.to_owned(),
        }
    }
}

/// The thread noise per workload (`by`), each with its label in `labels`, the rest
/// together as `other`.
fn workload_series(
    analysis: &NoiseAnalysis,
    cgroups: &CgroupNames,
    by: WorkloadBy,
    labels: &mut WorkloadLabels,
) -> Vec<(Labels, [u64; 2])> {
    let rows = analysis.workload_causes(cgroups, by);
    labels.admit(rows.iter().map(|row| row.workload.as_str()));
    let mut series: Vec<(Labels, [u64; 2])> = Vec::new();
    let mut other = [0; 2];
    for row in rows {
        let values = [row.stats.total_ns, row.stats.count];
        match labels.label(&row.workload) {
            label if label == OTHER_WORKLOADS => {
                other = [other[0] + values[0], other[1] + values[1]];
            }
            label => series.push((vec![("workload", label)], values)),
        }
    }
    if other != [0; 2] {
        series.push((vec![("workload", OTHER_WORKLOADS.to_owned())], other));
    }
    series
}

/// `irqlens noise`: per CPU as rtla osnoise top's columns, the sample histogram, and the
/// causes of each CPU's noise, and
/// the threads' noise per workload.
pub fn noise_families(
    analysis: &NoiseAnalysis,
    irq_names: &HashMap<u32, String>,
    cgroups: &CgroupNames,
    by: WorkloadBy,
) -> Vec<Family> {
    let mut labels = WorkloadLabels::default();
    noise_families_labelled(analysis, irq_names, cgroups, by, &mut labels)
}

/// [`noise_families`] with the workloads labelled so far in a run.
pub fn noise_families_labelled(
    analysis: &NoiseAnalysis,
    irq_names: &HashMap<u32, String>,
    cgroups: &CgroupNames,
    by: WorkloadBy,
    labels: &mut WorkloadLabels,
) -> Vec<Family> {
    let workloads = workload_series(analysis, cgroups, by, labels);
    let cpus: Vec<_> = analysis.summaries().collect();
    let per_cpu = |value: fn(&irqlens_analyze::noise::CpuSummary) -> u64| {
        cpus.iter().map(move |s| (cpu(s.cpu), value(s)))
    };
    let interferences = cpus.iter().flat_map(|s| {
        [
            ("nmi", s.nmi),
            ("irq", s.irq),
            ("softirq", s.softirq),
            ("thread", s.thread),
        ]
        .map(|(class, n)| (vec![("cpu", s.cpu.to_string()), ("class", class.into())], n))
    });
    let causes = top_series_per_cpu(cpus.iter().map(|s| {
        let causes = analysis.cpu_causes(s.cpu).into_iter();
        let series = causes.map(|(cause, stats)| {
            (
                noise_cause(&cause, irq_names),
                [stats.total_ns, stats.count],
            )
        });
        (s.cpu, series.collect())
    }));
    vec![
        Family::seconds(
            "noise_runtime",
            "Time the measurement threads sampled the clock",
            MetricType::Counter,
            per_cpu(|s| s.runtime_ns),
        ),
        Family::seconds(
            "noise",
            "Noise: time taken from the measurement threads",
            MetricType::Counter,
            per_cpu(|s| s.noise_ns),
        ),
        Family::count_total(
            "noise_periods",
            "Measurement periods completed",
            per_cpu(|s| s.periods),
        ),
        Family::count_total(
            "noise_samples",
            "Noise samples: gaps between two clock reads above the threshold",
            per_cpu(|s| s.samples),
        ),
        Family::count_total(
            "noise_hw_samples",
            "Noise samples with no interference traced (hardware, hypervisor)",
            per_cpu(|s| s.hw),
        ),
        Family::count_total(
            "noise_interferences",
            "Interferences that began while sampling, per class",
            interferences,
        ),
        Family::seconds(
            "noise_max_single",
            "Longest single noise sample",
            MetricType::Gauge,
            per_cpu(|s| s.max_single_ns),
        ),
        Family::seconds(
            "noise_max_period",
            "Largest noise of one period",
            MetricType::Gauge,
            per_cpu(|s| s.max_noise_ns),
        ),
        Family::seconds_histogram(
            "noise_sample_duration",
            "Durations of the noise samples",
            analysis.histograms().map(|(c, h)| (cpu(c), h)),
        ),
        Family::seconds(
            "noise_cause",
            "Noise time charged to each cause, per CPU (the largest causes of each CPU)",
            MetricType::Counter,
            nth(&causes, 0),
        ),
        Family::count_total(
            "noise_cause_occurrences",
            "Occurrences of each cause of noise inside noise samples, per CPU (the largest causes of each CPU)",
            nth(&causes, 1),
        ),
        Family::seconds(
            "noise_workload",
            "Thread noise per workload (--by's level, the pod without it; the first to show up, the rest as other)",
            MetricType::Counter,
            nth(&workloads, 0),
        ),
        Family::count_total(
            "noise_workload_occurrences",
            "Thread interferences per workload inside noise samples (as noise_workload)",
            nth(&workloads, 1),
        ),
    ]
}

/// A bottom-half delay cause: its kind, and its source if it has one.
fn bh_cause(cause: &DelayCause, names: &Names) -> Labels {
    let irq = |source, id| Some(irq_source(source, id, &names.irqs));
    let function = |address| Some(names.symbols.name(address));
    let (kind, source) = match *cause {
        DelayCause::Undelayed => ("undelayed", None),
        DelayCause::Irq { source, id } => ("irq", irq(source, id)),
        DelayCause::RaisedIn { source, id } => ("raised_in", irq(source, id)),
        DelayCause::Nmi => ("nmi", None),
        DelayCause::SoftirqFirst(vector) => ("softirq_first", Some(softirq_name(vector.into()))),
        DelayCause::Ksoftirqd => ("ksoftirqd", None),
        DelayCause::Thread(thread) => ("thread_first", Some(thread.comm.to_string())),
        DelayCause::Busy(thread) => ("busy", Some(thread.comm.to_string())),
        DelayCause::Idle => ("idle", None),
        DelayCause::WorkerWakeup => ("worker_wakeup", None),
        DelayCause::WorkFirst(address) => ("work_first", function(address)),
        DelayCause::HeldBack => ("held_back", None),
        DelayCause::Untraced => ("untraced", None),
        DelayCause::Other => ("other", None),
    };
    with_source(vec![("cause", kind.to_owned())], source)
}

/// Bottom-half statistics of nothing: the families every bh run has.
pub(super) fn empty_bh() -> BhStats {
    BhStats::new(BhConfig {
        bucket_ns: 1,
        entries: 1,
        selection: Selection::All,
        worst: 0,
    })
}

/// `irqlens bh`: the latency per class of bottom half (mechanism) and per source, and the
/// delay causes.
pub fn bh_families(stats: &BhStats, names: &Names) -> Vec<Family> {
    let class =
        |mechanism: &irqlens_analyze::bh::Mechanism| vec![("class", mechanism.name().to_owned())];
    let mechanisms = || stats.mechanisms.iter().map(|(m, s)| (class(m), s));
    let sources = stats.mechanisms.keys().flat_map(|mechanism| {
        sources_of(stats, *mechanism)
            .into_iter()
            .take(MAX_SERIES_PER_FAMILY)
            .map(move |(source, series)| {
                let labels = with_source(class(mechanism), Some(names.source(source)));
                (labels, &series.latency.histogram)
            })
    });
    let causes: Vec<_> = stats
        .mechanisms
        .iter()
        .flat_map(|(mechanism, m)| {
            top_series(m.ranked_causes().into_iter().map(|(cause, c)| {
                let mut labels = class(mechanism);
                labels.extend(bh_cause(cause, names));
                (labels, [c.samples])
            }))
        })
        .collect();
    vec![
        Family::count_total(
            "bh_samples",
            "Bottom halves measured, request to start",
            mechanisms().map(|(l, m)| (l, m.series.count)),
        ),
        Family::count_total(
            "bh_irq_samples",
            "Bottom halves an interrupt landed in (not in the latency histograms)",
            mechanisms().map(|(l, m)| (l, m.series.irq)),
        ),
        Family::seconds(
            "bh_latency_max",
            "Longest request-to-start latency, interrupted samples included",
            MetricType::Gauge,
            mechanisms().map(|(l, m)| (l, m.series.max_irq_ns)),
        ),
        Family::seconds_histogram(
            "bh_latency",
            "Request-to-start latency of the bottom halves no interrupt landed in",
            mechanisms().map(|(l, m)| (l, &m.series.latency.histogram)),
        ),
        Family::seconds_histogram(
            "bh_source_latency",
            "Request-to-start latency per source (softirq vector, function, IRQ thread; the busiest sources), no interrupt in the window",
            sources,
        ),
        Family::count_total(
            "bh_delay_cause_samples",
            "Bottom halves each delay cause was seen in (a sample can have several; the most frequent causes)",
            nth(&causes, 0),
        ),
        Family::count_total(
            "bh_others",
            "Bottom halves of other requesters, left out (active mode)",
            [(Labels::new(), stats.others)],
        ),
    ]
}

/// A wakeup latency cause: its kind, and its source if it has one.
fn wakeup_cause(cause: &WakeupCause, names: &Names) -> Labels {
    let irq = |source, id| Some(irq_source(source, id, &names.irqs));
    let function = |address| Some(names.symbols.name(address));
    let (kind, source) = match *cause {
        WakeupCause::IrqDelay => ("irq_delay", None),
        WakeupCause::IdleExit => ("idle_exit", None),
        WakeupCause::Origin { source, id } => ("origin", irq(source, id)),
        WakeupCause::Handler(address) => ("handler", function(address)),
        WakeupCause::Timer(address) => ("timer_first", function(address)),
        WakeupCause::Irq { source, id } => ("irq", irq(source, id)),
        WakeupCause::Nmi => ("nmi", None),
        WakeupCause::Softirq(vector) => ("softirq", Some(softirq_name(vector.into()))),
        WakeupCause::Interposed(thread) => ("interposed", Some(thread.comm.to_string())),
        WakeupCause::Thread(thread) => ("thread_first", Some(thread.comm.to_string())),
        WakeupCause::Blocking(thread) => ("blocking", Some(thread.comm.to_string())),
        WakeupCause::Scheduler => ("scheduler", None),
        WakeupCause::Return => ("return", None),
        WakeupCause::Untraced => ("untraced", None),
        WakeupCause::Other => ("other", None),
    };
    with_source(vec![("cause", kind.to_owned())], source)
}

/// Wakeup statistics of nothing: the families every wakeup run has.
pub(super) fn empty_wakeup() -> WakeupStats {
    WakeupStats::new(WakeupConfig::default())
}

/// `irqlens wakeup`: the latency components per CPU, and the causes' time per CPU.
pub fn wakeup_families(stats: &WakeupStats, names: &Names) -> Vec<Family> {
    let components = stats.cpus.iter().flat_map(|(&c, s)| {
        s.components.iter().map(move |(component, series)| {
            let labels = vec![
                ("cpu", c.to_string()),
                ("component", component.name().to_owned()),
            ];
            (labels, &series.histogram)
        })
    });
    let causes = top_series_per_cpu(stats.cpus.iter().map(|(&c, s)| {
        let series = s
            .ranked_causes()
            .into_iter()
            .map(|(cause, stats)| (wakeup_cause(&cause, names), [stats.total_ns, stats.samples]));
        (c, series.collect())
    }));
    vec![
        Family::count_total(
            "wakeup_activations",
            "Activations (timer mode) or wakeups (task mode) seen",
            stats.cpus.iter().map(|(&c, s)| (cpu(c), s.activations)),
        ),
        Family::count_total(
            "wakeup_samples",
            "Activations decomposed from the trace",
            stats.cpus.iter().map(|(&c, s)| (cpu(c), s.samples)),
        ),
        Family::seconds_histogram(
            "wakeup_latency",
            "Wakeup latency per component: irq, handler, wakeup, sched, return, total",
            components,
        ),
        Family::seconds(
            "wakeup_cause",
            "Latency time spent on each cause, per CPU (the largest causes of each CPU)",
            MetricType::Counter,
            nth(&causes, 0),
        ),
        Family::count_total(
            "wakeup_cause_samples",
            "Samples each cause took time in, per CPU (the largest causes of each CPU)",
            nth(&causes, 1),
        ),
    ]
}

/// `irq`, `softirq` or `nmi`: the `class` of interrupt time.
fn account_class(source: &AccountSource) -> &'static str {
    match source {
        AccountSource::Hardirq { .. } => "irq",
        AccountSource::Softirq { .. } => "softirq",
        AccountSource::Nmi => "nmi",
    }
}

/// `by_source` per class, each with `labels` first.
fn by_class(labels: &Labels, by_source: &BySource) -> Vec<(Labels, [u64; 1])> {
    by_source
        .iter()
        .map(|(source, &ns)| {
            let mut labels = labels.clone();
            labels.push(("class", account_class(source).to_owned()));
            (labels, [ns])
        })
        .collect()
}

/// Each row's `workload` label: its workload's key at the level `by` if it has a label of
/// its own in `labels` (those with the most `value` first), else `other`.
fn workload_labels(
    rows: &[AccountRow],
    by: WorkloadBy,
    value: fn(&AccountRow) -> u64,
    labels: &mut WorkloadLabels,
) -> Vec<String> {
    let keys: Vec<String> = rows
        .iter()
        .map(|row| {
            let path = row.figures.cgroup.as_deref();
            path.map_or_else(|| UNKNOWN.to_owned(), |path| workload_key(path, by))
        })
        .collect();
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for (key, row) in keys.iter().zip(rows) {
        *totals.entry(key).or_default() += value(row);
    }
    let mut ranked: Vec<(&str, u64)> = totals.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    labels.admit(ranked.iter().map(|(key, _)| *key));
    keys.iter().map(|key| labels.label(key)).collect()
}

/// `irqlens account`: interrupt time by class and source, and who it was charged to (the
/// thread current when it ran, as the kernel bills it) and done for (the thread it
/// served), per comm and workload (its cgroup in `cgroups`, named at the level `by`);
/// irqlens's own work, idle CPUs' and nobody's apart.
pub fn account_families(
    ledger: &Ledger,
    irq_names: &HashMap<u32, String>,
    cgroups: &CgroupNames,
    by: WorkloadBy,
) -> Vec<Family> {
    let mut labels = WorkloadLabels::default();
    account_families_labelled(ledger, irq_names, cgroups, by, &mut labels)
}

/// [`account_families`] with the workloads labelled so far in a run.
pub fn account_families_labelled(
    ledger: &Ledger,
    irq_names: &HashMap<u32, String>,
    cgroups: &CgroupNames,
    by: WorkloadBy,
    labels: &mut WorkloadLabels,
) -> Vec<Family> {
    // a row per thread, so that a comm is a thread's own name
    let mut accounts = table(ledger, &HashMap::new(), None, true);
    name_cgroups(&mut accounts, cgroups);
    // the folded accounts are a comm of their own, `[folded]`, in each workload
    accounts.rows.append(&mut accounts.folded);
    let mut per_comm = |by_source: fn(&AccountRow) -> &BySource, value: fn(&AccountRow) -> u64| {
        let workloads = workload_labels(&accounts.rows, by, value, labels);
        top_series(
            accounts
                .rows
                .iter()
                .zip(workloads)
                .flat_map(|(row, workload)| {
                    let labels = vec![("comm", row.figures.comm.clone()), ("workload", workload)];
                    by_class(&labels, by_source(row))
                }),
        )
    };
    let charged = per_comm(|row| &row.charged_by, |row| row.figures.amounts.charged_ns);
    let served = per_comm(|row| &row.served_by, |row| row.figures.amounts.served_ns);
    let units = top_series(accounts.rows.iter().map(|row| {
        (
            vec![("comm", row.figures.comm.clone())],
            [row.figures.amounts.units],
        )
    }));
    let interrupts = top_series(ledger.accounts().flat_map(|account| {
        account.charged.iter().map(|(source, &ns)| {
            let name = match *source {
                AccountSource::Hardirq { source, id } => irq_source(source, id, irq_names),
                AccountSource::Softirq { vector } => softirq_name(vector.into()),
                AccountSource::Nmi => "nmi".to_owned(),
            };
            let labels = vec![
                ("class", account_class(source).to_owned()),
                ("source", name),
            ];
            (labels, [ns])
        })
    }));
    let irqlens = accounts
        .irqlens
        .as_ref()
        .map_or_else(Vec::new, |row| by_class(&Labels::new(), &row.charged_by));
    vec![
        Family::seconds(
            "account_interrupt",
            "Interrupt time by class and source (the largest sources)",
            MetricType::Counter,
            nth(&interrupts, 0),
        ),
        Family::seconds(
            "account_charged",
            "Interrupt time that ran while a thread of this comm and workload was current: what the kernel bills it (the largest comms, [folded] the accounts folded to bound memory; the workloads past the first to show up are other)",
            MetricType::Counter,
            nth(&charged, 0),
        ),
        Family::seconds(
            "account_served",
            "Interrupt time done on behalf of the threads of this comm and workload, wherever it ran (the largest comms, [folded] the accounts folded to bound memory; the workloads past the first to show up are other)",
            MetricType::Counter,
            nth(&served, 0),
        ),
        Family::count_total(
            "account_served_units",
            "Socket deliveries (when followed) and wakeups the threads of this comm were served (the largest comms, [folded] the accounts folded to bound memory)",
            nth(&units, 0),
        ),
        Family::seconds(
            "account_idle",
            "Interrupt time on idle CPUs (billed to no thread)",
            MetricType::Counter,
            nth(&by_class(&Labels::new(), &idle_by(ledger)), 0).collect::<Vec<_>>(),
        ),
        Family::seconds(
            "account_orphan",
            "Interrupt time done for no thread (housekeeping, NMIs, deliveries nobody read)",
            MetricType::Counter,
            nth(&by_class(&Labels::new(), &ledger.orphan), 0).collect::<Vec<_>>(),
        ),
        Family::seconds(
            "account_irqlens",
            "Interrupt time of irqlens's own work, wherever it ran",
            MetricType::Counter,
            nth(&irqlens, 0),
        ),
    ]
}

/// The agent's own figures, as it publishes them each second.
#[derive(Clone, Debug, Default)]
pub struct AgentHealth {
    /// Its CPU time so far (every thread, user and system), ns.
    pub cpu_ns: u64,
    /// Its resident memory now, bytes.
    pub resident_bytes: u64,
    /// Each capability the configuration enables.
    pub capabilities: Vec<CapabilityHealth>,
    /// Configurations read again (SIGHUP), the refused ones included.
    pub config_reloads: u64,
}

/// How one of the agent's capabilities goes.
#[derive(Clone, Debug)]
pub struct CapabilityHealth {
    /// `bh`, `account`, ...
    pub name: &'static str,
    /// Running (its probes attached and drained), or failed and waiting to be retried.
    pub up: bool,
    /// Times it failed so far.
    pub failures: u64,
}

/// `irqlens agent`: its cost (CPU time, memory), whether each capability runs, its
/// failures and the configuration's reloads.
pub fn agent_families(health: &AgentHealth) -> Vec<Family> {
    let capability = |c: &CapabilityHealth| vec![("capability", c.name.to_owned())];
    let capabilities = || health.capabilities.iter();
    vec![
        Family::seconds(
            "agent_cpu",
            "CPU time the agent used so far, all its threads, user and system",
            MetricType::Counter,
            [(Labels::new(), health.cpu_ns)],
        ),
        Family::new(
            "agent_resident",
            "The agent's resident memory",
            Some(prometheus_client::registry::Unit::Bytes),
            MetricType::Gauge,
            [(Labels::new(), Value::Count(health.resident_bytes))],
        ),
        Family::new(
            "agent_capability_up",
            "1 while the capability runs, 0 while it has failed and waits to be retried",
            None,
            MetricType::Gauge,
            capabilities().map(|c| (capability(c), Value::Count(c.up.into()))),
        ),
        Family::count_total(
            "agent_capability_failures",
            "Times the capability failed (its probes did not load, or its run ended in an error)",
            capabilities().map(|c| (capability(c), c.failures)),
        ),
        Family::count_total(
            "agent_config_reloads",
            "Configurations read again on SIGHUP, refused ones included",
            [(Labels::new(), health.config_reloads)],
        ),
    ]
}
