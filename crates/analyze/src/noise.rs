//! Joins the measurement threads' noise samples with the interference records of the
//! probe, and sums them up per CPU and per cause.
//!
//! The join is exact, not by time: every interference takes the next value of its CPU's
//! counter when it begins, and a sample carries the counter values read before and after
//! its gap, so the records inside a sample are those with `seq_before < seq <= seq_after`.
//! A sample with no interference is hardware noise (osnoise paper §5.3).
//!
//! Every ns of a CPU's noise is charged to exactly one row, so the rows add up to the
//! Noise column: each record counts its interference-free time (at most what is left of
//! its sample: record and sample times come from two clocks), the rest of a sample goes
//! to the entry/exit paths around its interferences (or, if some of them left no record,
//! to that), a sample without interference is hardware noise, and samples that did not
//! fit the buffer are their own row.

use std::collections::{BTreeMap, HashMap, VecDeque};

use serde::Serialize;

use super::histogram::{Distribution, Histogram};
pub use irqlens_model::kernel::{Comm, IRQ_SOURCE_NAMES, SOFTIRQ_NAMES, irq_label, softirq_name};
use irqlens_model::noise::{AnalysisConfig, NoiseClass, PeriodReport, Record, Sample, StopHit};
use irqlens_model::workload::{CgroupId, CgroupNames, WorkloadBy};

use crate::workload::{short_name, workload_at, workload_key};

/// Who a piece of noise is charged to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// A sample with no interference: hardware noise (hypervisor, SMI).
    Hardware,
    /// NMIs.
    Nmi,
    /// A hardirq.
    Irq {
        /// What raised it (`enum irq_source`; 0: a device line).
        source: u16,
        /// The IRQ line or vector.
        id: u32,
    },
    /// A softirq vector.
    Softirq(u32),
    /// Another thread.
    Thread {
        /// Its thread id.
        pid: u32,
        /// Its name.
        comm: Comm,
        /// Its cgroup v2 id (unknown in recordings older than the field).
        cgroup: CgroupId,
    },
    /// The time of a sample around its traced interferences: entry and exit paths (on a
    /// VM also the exits to the hypervisor they cause), charged to the class of the
    /// interference that began first in the sample.
    EntryExit(NoiseClass),
    /// The untraced time of samples in which some interference left no record: it cannot
    /// be split between the missing records and entry/exit.
    NoRecord,
    /// Samples that did not fit the sample buffer: only their total is known.
    Dropped,
}

pub use irqlens_model::tables::{CpuSummary, NoiseBreakdown as Breakdown};

/// The parts of the noise of `causes`.
fn breakdown_of<'a>(causes: impl IntoIterator<Item = (&'a Cause, &'a CauseStats)>) -> Breakdown {
    let mut parts = Breakdown::default();
    for (cause, stats) in causes {
        let part = match cause {
            Cause::Hardware => &mut parts.hw_ns,
            Cause::EntryExit(_) => &mut parts.entry_exit_ns,
            Cause::NoRecord => &mut parts.no_record_ns,
            Cause::Dropped => &mut parts.dropped_ns,
            Cause::Nmi | Cause::Irq { .. } | Cause::Softirq(_) | Cause::Thread { .. } => {
                &mut parts.causes_ns
            }
        };
        *part += stats.total_ns;
    }
    parts
}

impl Cause {
    /// Whom a record's interference is charged to.
    pub fn of(record: &Record) -> Cause {
        match record.class {
            NoiseClass::Nmi => Cause::Nmi,
            NoiseClass::Irq => Cause::Irq {
                source: record.source,
                id: record.id,
            },
            NoiseClass::Softirq => Cause::Softirq(record.id),
            NoiseClass::Thread => Cause::Thread {
                pid: record.id,
                comm: record.comm,
                cgroup: record.cgroup,
            },
        }
    }

    /// Its class in JSON: `hw`, `nmi`, `irq`, `softirq`, `thread`, `entry_exit`,
    /// `no_record`, `dropped`.
    pub fn class_name(&self) -> &'static str {
        match self {
            Cause::Hardware => "hw",
            Cause::Nmi => "nmi",
            Cause::Irq { .. } => "irq",
            Cause::Softirq(_) => "softirq",
            Cause::Thread { .. } => "thread",
            Cause::EntryExit(_) => "entry_exit",
            Cause::NoRecord => "no_record",
            Cause::Dropped => "dropped",
        }
    }

    /// How rtla/osnoise users name it: `irq 11 virtio0`, `local_timer:236`, `TIMER`,
    /// `kworker/1:1:123`.
    pub fn label(&self, irq_names: &HashMap<u32, String>) -> String {
        match *self {
            Cause::Hardware => "hw noise (no interference traced)".into(),
            Cause::Nmi => "nmi".into(),
            Cause::Irq { source, id } => irq_label(source, id, irq_names),
            Cause::Softirq(vector) => softirq_name(vector),
            Cause::Thread { pid, comm, .. } => format!("{comm}:{pid}"),
            Cause::EntryExit(NoiseClass::Thread) => "context switch (not traced)".into(),
            Cause::EntryExit(class) => format!("{} entry/exit (not traced)", class.name()),
            Cause::NoRecord => "samples with interferences not recorded".into(),
            Cause::Dropped => "samples dropped (sample buffer full)".into(),
        }
    }
}

/// The noise charged to one cause.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CauseStats {
    /// Occurrences (records, or samples).
    pub count: u64,
    /// Their time, ns.
    pub total_ns: u64,
    /// The longest, ns.
    pub max_ns: u64,
}

impl CauseStats {
    pub(crate) fn add(&mut self, duration_ns: u64) {
        self.count += 1;
        self.total_ns += duration_ns;
        self.max_ns = self.max_ns.max(duration_ns);
    }

    fn merge(&mut self, other: &CauseStats) {
        self.count += other.count;
        self.total_ns += other.total_ns;
        self.max_ns = self.max_ns.max(other.max_ns);
    }
}

pub use irqlens_model::tables::NoiseStop as StopReport;

/// Noise of consecutive periods of one CPU: one period, or after coarsening several.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TimelinePoint {
    /// 0 for the CPU's first period.
    pub first_period: u64,
    /// Periods it covers.
    pub periods: u64,
    /// Their runtime windows end to end, ns: what the noise is a share of (a period cut
    /// short by the end of the run has less).
    pub runtime_ns: u64,
    /// Their total noise, ns.
    pub noise_ns: u64,
    /// Largest noise of one of its periods.
    pub max_noise_ns: u64,
    /// Longest single sample in them, ns.
    pub max_single_ns: u64,
}

impl TimelinePoint {
    fn merge(&mut self, other: &TimelinePoint) {
        self.periods += other.periods;
        self.runtime_ns += other.runtime_ns;
        self.noise_ns += other.noise_ns;
        self.max_noise_ns = self.max_noise_ns.max(other.max_noise_ns);
        self.max_single_ns = self.max_single_ns.max(other.max_single_ns);
    }
}

/// Points a CPU's timeline keeps: a run of any length stays this small, because when
/// it is full, neighbours merge pairwise and each point covers twice the periods.
pub const TIMELINE_POINTS: usize = 2048;

/// The noise of a CPU over the run, period by period while it fits.
#[derive(Clone, Debug)]
struct Timeline {
    points: Vec<TimelinePoint>,
    /// Periods each point covers (the last one may have fewer yet).
    span: u64,
}

impl Timeline {
    fn new() -> Self {
        Timeline {
            points: Vec::new(),
            span: 1,
        }
    }

    fn add(&mut self, period: TimelinePoint) {
        match self.points.last_mut() {
            Some(last) if last.periods < self.span => last.merge(&period),
            _ => self.points.push(period),
        }
        if self.points.len() > TIMELINE_POINTS {
            self.points = self
                .points
                .chunks(2)
                .map(|pair| {
                    let mut point = pair[0];
                    pair[1..].iter().for_each(|p| point.merge(p));
                    point
                })
                .collect();
            self.span *= 2;
        }
    }
}

#[derive(Clone, Debug)]
struct CpuNoise {
    summary: CpuSummary,
    distribution: Distribution,
    timeline: Timeline,
    /// Records not yet joined, by counter value.
    pending: BTreeMap<u64, Record>,
    recent: VecDeque<Record>,
    /// Every ns of the CPU's noise, charged to one cause.
    causes: HashMap<Cause, CauseStats>,
}

impl CpuNoise {
    fn charge(&mut self, cause: Cause, duration_ns: u64) {
        self.causes.entry(cause).or_default().add(duration_ns);
    }

    /// Charges a sample to its records, clipped to the sample, and the rest to entry and
    /// exit, to missing records, or, with no interference at all, to the hardware.
    fn charge_sample(&mut self, sample: &Sample, records: &[Record]) {
        if sample.interferences() == 0 {
            self.summary.hw += 1;
            return self.charge(Cause::Hardware, sample.duration_ns);
        }
        // in seq order, so the clipping is the same in a live run and its replay
        let mut left = sample.duration_ns;
        for record in records {
            let counted = record.duration_ns.min(left);
            left -= counted;
            self.summary.clipped_ns += record.duration_ns - counted;
            self.charge(Cause::of(record), counted);
        }
        let missing = sample.interferences().saturating_sub(records.len() as u64);
        self.summary.unexplained += missing;
        let rest = match records.first() {
            Some(first) if missing == 0 => Cause::EntryExit(first.class),
            _ => Cause::NoRecord,
        };
        self.charge(rest, left);
    }
}

/// A noise run's analysis: per CPU its summary, histogram, timeline and causes, and the
/// sample that stopped the run.
#[derive(Clone, Debug)]
pub struct NoiseAnalysis {
    config: AnalysisConfig,
    cpus: BTreeMap<u32, CpuNoise>,
    stop: Option<StopReport>,
}

impl NoiseAnalysis {
    /// Nothing measured yet on `cpus`.
    pub fn new(config: AnalysisConfig, cpus: impl IntoIterator<Item = u32>) -> Self {
        let cpus = cpus
            .into_iter()
            .map(|cpu| {
                let state = CpuNoise {
                    summary: CpuSummary {
                        cpu,
                        ..Default::default()
                    },
                    distribution: Distribution::new(config.bucket_ns, config.entries),
                    timeline: Timeline::new(),
                    pending: BTreeMap::new(),
                    recent: VecDeque::with_capacity(config.keep_recent),
                    causes: HashMap::new(),
                };
                (cpu, state)
            })
            .collect();
        NoiseAnalysis {
            config,
            cpus,
            stop: None,
        }
    }

    /// Takes records in any order; records of CPUs not measured are ignored.
    pub fn add_records(&mut self, records: impl IntoIterator<Item = Record>) {
        for record in records {
            if let Some(cpu) = self.cpus.get_mut(&record.cpu) {
                cpu.pending.insert(record.seq, record);
            }
        }
    }

    /// Sets the per-class interference counts of a CPU, indexed by `NoiseClass`, and how
    /// many of them never had their end traced.
    pub fn set_entries(&mut self, cpu: u32, entries: [u64; 4], unended: u64) {
        if let Some(state) = self.cpus.get_mut(&cpu) {
            let s = &mut state.summary;
            [s.thread, s.softirq, s.irq, s.nmi] = entries;
            s.unended = unended;
        }
    }

    /// Joins a runtime window's samples. Every record the samples refer to must have been
    /// added before (the probe emits a record before its CPU's counter can be read past
    /// it, so draining the records after receiving the report is enough).
    pub fn add_period(&mut self, report: &PeriodReport) {
        let Some(cpu) = self.cpus.get_mut(&report.cpu) else {
            return;
        };
        // The period's noise is its samples plus what did not fit the buffer, so that the
        // rows add up to it exactly: the report's own total converts the clock ticks in
        // one piece and differs from the sum of the samples by rounding.
        let sampled_ns: u64 = report.samples.iter().map(|s| s.duration_ns).sum();
        let dropped_ns = match report.dropped_samples {
            0 => 0,
            _ => report.noise_ns.saturating_sub(sampled_ns),
        };
        let noise_ns = sampled_ns + dropped_ns;
        let s = &mut cpu.summary;
        cpu.timeline.add(TimelinePoint {
            first_period: s.periods,
            periods: 1,
            runtime_ns: report.runtime_ns,
            noise_ns,
            max_noise_ns: noise_ns,
            max_single_ns: report.max_single_ns,
        });
        s.periods += 1;
        s.runtime_ns += report.runtime_ns;
        s.noise_ns += noise_ns;
        s.max_noise_ns = s.max_noise_ns.max(noise_ns);
        s.max_single_ns = s.max_single_ns.max(report.max_single_ns);
        s.samples += report.samples.len() as u64;
        s.dropped_samples += report.dropped_samples;
        if report.dropped_samples > 0 {
            let dropped = cpu.causes.entry(Cause::Dropped).or_default();
            // one sample's duration is unknown: no max
            dropped.count += report.dropped_samples;
            dropped.total_ns += dropped_ns;
        }

        for (index, sample) in report.samples.iter().enumerate() {
            cpu.distribution.add(sample.duration_ns);
            let causes: Vec<Record> = if sample.seq_after > sample.seq_before {
                cpu.pending
                    .range(sample.seq_before + 1..=sample.seq_after)
                    .map(|(_, r)| *r)
                    .collect()
            } else {
                Vec::new()
            };
            cpu.charge_sample(sample, &causes);
            let hit = match report.stop {
                Some(StopHit::Single(i)) => i == index,
                Some(StopHit::Total) => index + 1 == report.samples.len(),
                None => false,
            };
            if hit && self.stop.is_none() {
                let before = recent_before(cpu, sample.seq_before, self.config.keep_recent);
                let reason = match report.stop {
                    Some(StopHit::Single(_)) => "single noise sample above the -s limit",
                    _ => "total noise in a period above the -S limit",
                };
                self.stop = Some(StopReport {
                    reason: reason.into(),
                    sample: *sample,
                    causes,
                    before,
                });
            }
        }
        retire(cpu, report.last_seq, self.config.keep_recent);
    }

    /// Per CPU, its summary, in CPU order.
    pub fn summaries(&self) -> impl Iterator<Item = &CpuSummary> {
        self.cpus.values().map(|cpu| &cpu.summary)
    }

    /// Per CPU, the histogram of its sample durations.
    pub fn histograms(&self) -> impl Iterator<Item = (u32, &Histogram)> {
        self.cpus
            .iter()
            .map(|(&cpu, state)| (cpu, &state.distribution.histogram))
    }

    /// Per CPU, the distribution of its sample durations: the histogram and quantiles
    /// to 0.1% whatever the histogram's range, with the exact min and max.
    pub fn distributions(&self) -> impl Iterator<Item = (u32, &Distribution)> {
        self.cpus
            .iter()
            .map(|(&cpu, state)| (cpu, &state.distribution))
    }

    /// Per CPU, its noise period by period (coarser for long runs: see `TIMELINE_POINTS`).
    pub fn timelines(&self) -> impl Iterator<Item = (u32, &[TimelinePoint])> {
        self.cpus
            .iter()
            .map(|(&cpu, state)| (cpu, state.timeline.points.as_slice()))
    }

    /// Causes over all CPUs ranked by total noise time, largest first.
    pub fn top_causes(&self) -> Vec<(Cause, CauseStats)> {
        let mut merged: HashMap<Cause, CauseStats> = HashMap::new();
        for (cause, stats) in self.cpus.values().flat_map(|cpu| &cpu.causes) {
            merged.entry(*cause).or_default().merge(stats);
        }
        ranked(&merged)
    }

    /// The thread causes over all CPUs grouped per workload at level `by` (`--by`), their
    /// cgroups named by `names`; ranked as `top_causes`. A thread whose cgroup has no name
    /// (unknown to the probe, gone before it was read) is in the `UNNAMED_WORKLOAD` row.
    pub fn workload_causes(&self, names: &CgroupNames, by: WorkloadBy) -> Vec<WorkloadCauses> {
        let mut rows: HashMap<String, WorkloadCauses> = HashMap::new();
        for (cause, stats) in self.top_causes() {
            let Cause::Thread { cgroup, .. } = cause else {
                continue;
            };
            let (key, short) = match names.path(cgroup) {
                Some(path) if by == WorkloadBy::Cgroup => (path.to_owned(), path.to_owned()),
                Some(path) => (workload_key(path, by), short_name(&workload_at(path, by))),
                None => (UNNAMED_WORKLOAD.to_owned(), UNNAMED_WORKLOAD.to_owned()),
            };
            let row = rows.entry(key.clone()).or_insert_with(|| WorkloadCauses {
                workload: key,
                short,
                threads: 0,
                stats: CauseStats::default(),
            });
            row.threads += 1;
            row.stats.merge(&stats);
        }
        let mut ranked: Vec<WorkloadCauses> = rows.into_values().collect();
        ranked.sort_by(|a, b| {
            (b.stats.total_ns.cmp(&a.stats.total_ns)).then_with(|| a.workload.cmp(&b.workload))
        });
        ranked
    }

    /// The cgroups the thread causes ran in (to be named by their paths).
    pub fn thread_cgroups(&self) -> impl Iterator<Item = CgroupId> + '_ {
        self.cpus
            .values()
            .flat_map(|cpu| cpu.causes.keys())
            .filter_map(|cause| match cause {
                Cause::Thread { cgroup, .. } if cgroup.is_known() => Some(*cgroup),
                _ => None,
            })
    }

    /// One CPU's causes, ranked as `top_causes`: their totals add up to its noise.
    pub fn cpu_causes(&self, cpu: u32) -> Vec<(Cause, CauseStats)> {
        self.cpus
            .get(&cpu)
            .map_or_else(Vec::new, |state| ranked(&state.causes))
    }

    /// Per CPU, the parts its noise is made of.
    pub fn breakdowns(&self) -> impl Iterator<Item = (&CpuSummary, Breakdown)> {
        self.cpus
            .values()
            .map(|cpu| (&cpu.summary, breakdown_of(&cpu.causes)))
    }

    /// The sample that stopped the run, if one did.
    pub fn stop_report(&self) -> Option<&StopReport> {
        self.stop.as_ref()
    }

    /// Records still waiting for a sample (bounded: retired at every period).
    pub fn pending_records(&self) -> usize {
        self.cpus.values().map(|cpu| cpu.pending.len()).sum()
    }
}

/// The workload row of threads whose cgroup has no path.
pub const UNNAMED_WORKLOAD: &str = crate::workload::UNNAMED;

/// The thread noise of one workload (`--by`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadCauses {
    /// Its name at the level asked (`workload_key`).
    pub workload: String,
    /// Its name for tables (`short_name`: pod UIDs and container ids shortened).
    pub short: String,
    /// The thread causes in it (threads, by tid and name, on all CPUs).
    pub threads: u64,
    /// Their noise together: count and time add up, max is the longest.
    pub stats: CauseStats,
}

fn ranked(causes: &HashMap<Cause, CauseStats>) -> Vec<(Cause, CauseStats)> {
    let mut ranked: Vec<_> = causes.iter().map(|(c, s)| (*c, *s)).collect();
    ranked.sort_by(|a, b| b.1.total_ns.cmp(&a.1.total_ns).then(a.0.cmp(&b.0)));
    ranked
}

/// Records up to `last_seq` can no longer fall inside a sample: keep the newest few.
fn retire(cpu: &mut CpuNoise, last_seq: u64, keep: usize) {
    let newer = cpu.pending.split_off(&(last_seq + 1));
    let done = std::mem::replace(&mut cpu.pending, newer);
    for record in done.into_values() {
        if cpu.recent.len() == keep {
            cpu.recent.pop_front();
        }
        if keep > 0 {
            cpu.recent.push_back(record);
        }
    }
}

fn recent_before(cpu: &CpuNoise, seq: u64, keep: usize) -> Vec<Record> {
    let pending = cpu.pending.range(..=seq).map(|(_, r)| *r);
    let all: Vec<Record> = cpu.recent.iter().copied().chain(pending).collect();
    all[all.len().saturating_sub(keep)..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: AnalysisConfig = AnalysisConfig {
        bucket_ns: 1_000,
        entries: 100,
        keep_recent: 3,
    };

    fn record(cpu: u32, class: NoiseClass, id: u32, seq: u64, duration_ns: u64) -> Record {
        let comm = if class == NoiseClass::Thread {
            Comm::new("spinner")
        } else {
            Comm::default()
        };
        Record {
            cpu,
            class,
            source: 0,
            id,
            comm,
            start_ns: seq * 1_000,
            duration_ns,
            seq,
            cgroup: CgroupId::UNKNOWN,
        }
    }

    /// A thread's record, the thread in cgroup `cgroup`.
    fn thread_in(cgroup: u64, pid: u32, seq: u64, duration_ns: u64) -> Record {
        Record {
            cgroup: CgroupId(cgroup),
            ..record(0, NoiseClass::Thread, pid, seq, duration_ns)
        }
    }

    #[test]
    fn thread_causes_group_per_workload_and_add_up_to_their_rows() {
        let uid = "1b2c3d4e-5f60-4718-89ab-cdef01234567";
        let pod = format!(
            "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod{}.slice",
            uid.replace('-', "_")
        );
        let mut names = CgroupNames::default();
        names.insert(
            CgroupId(7),
            format!("{pod}/cri-containerd-{}.scope", "a".repeat(64)),
        );
        names.insert(
            CgroupId(8),
            format!("{pod}/cri-containerd-{}.scope", "b".repeat(64)),
        );
        names.insert(CgroupId(9), "/system.slice/sshd.service".into());
        let mut a = NoiseAnalysis::new(CONFIG, [0]);
        // two threads in two containers of one pod, sshd, one thread never named, an IRQ
        a.add_records([
            thread_in(7, 40, 1, 10_000),
            thread_in(8, 41, 2, 30_000),
            thread_in(9, 42, 3, 5_000),
            thread_in(0, 43, 4, 1_000),
            record(0, NoiseClass::Irq, 11, 5, 2_000),
        ]);
        let samples = (1..=5).map(|seq| sample(0, seq - 1, seq, 40_000)).collect();
        a.add_period(&period(0, samples, 5));
        let by_pod = a.workload_causes(&names, WorkloadBy::Pod);
        let rows: Vec<(&str, u64, u64, u64, u64)> = by_pod
            .iter()
            .map(|row| {
                let s = row.stats;
                (
                    row.workload.as_str(),
                    row.threads,
                    s.count,
                    s.total_ns,
                    s.max_ns,
                )
            })
            .collect();
        let pod_key = format!("pod {uid}");
        assert_eq!(
            rows,
            [
                (pod_key.as_str(), 2, 2, 40_000, 30_000),
                ("/system.slice/sshd.service", 1, 1, 5_000, 5_000),
                (UNNAMED_WORKLOAD, 1, 1, 1_000, 1_000),
            ]
        );
        // the rows hold every thread cause, and nothing else
        let threads_ns: u64 = a
            .top_causes()
            .iter()
            .filter(|(cause, _)| matches!(cause, Cause::Thread { .. }))
            .map(|(_, stats)| stats.total_ns)
            .sum();
        assert_eq!(
            by_pod.iter().map(|row| row.stats.total_ns).sum::<u64>(),
            threads_ns
        );
        // per container, the pod splits in two
        assert_eq!(a.workload_causes(&names, WorkloadBy::Container).len(), 4);
        let mut seen: Vec<CgroupId> = a.thread_cgroups().collect();
        seen.sort();
        assert_eq!(seen, [CgroupId(7), CgroupId(8), CgroupId(9)]);
    }

    fn sample(cpu: u32, seq_before: u64, seq_after: u64, duration_ns: u64) -> Sample {
        Sample {
            cpu,
            start_ns: seq_before * 1_000,
            duration_ns,
            seq_before,
            seq_after,
        }
    }

    const RUNTIME_NS: u64 = 1_000_000;

    fn period(cpu: u32, samples: Vec<Sample>, last_seq: u64) -> PeriodReport {
        let noise_ns = samples.iter().map(|s| s.duration_ns).sum();
        let max_single_ns = samples.iter().map(|s| s.duration_ns).max().unwrap_or(0);
        PeriodReport {
            cpu,
            runtime_ns: RUNTIME_NS,
            noise_ns,
            max_single_ns,
            samples,
            last_seq,
            ..Default::default()
        }
    }

    fn stats(analysis: &NoiseAnalysis, cause: Cause) -> CauseStats {
        analysis
            .top_causes()
            .into_iter()
            .find(|(c, _)| *c == cause)
            .map(|(_, s)| s)
            .unwrap_or_default()
    }

    #[test]
    fn records_inside_a_sample_are_its_causes() {
        let mut a = NoiseAnalysis::new(CONFIG, [0]);
        // seq 1: an IRQ below the threshold (no sample); seq 2-3: a thread and the
        // timer IRQ inside it, both inside one sample; then a sample with nothing.
        a.add_records([
            record(0, NoiseClass::Irq, 11, 1, 800),
            record(0, NoiseClass::Thread, 42, 2, 50_000),
            record(0, NoiseClass::Irq, 11, 3, 2_000),
        ]);
        a.add_period(&period(
            0,
            vec![sample(0, 1, 3, 53_000), sample(0, 3, 3, 7_000)],
            3,
        ));

        let summary = a.summaries().next().unwrap();
        assert_eq!(summary.samples, 2);
        assert_eq!(summary.hw, 1);
        assert_eq!(summary.noise_ns, 60_000);
        assert_eq!(summary.unexplained, 0);
        let thread = Cause::Thread {
            pid: 42,
            comm: Comm::new("spinner"),
            cgroup: CgroupId::UNKNOWN,
        };
        assert_eq!(stats(&a, thread).total_ns, 50_000);
        // the IRQ below the threshold is not a cause of noise
        assert_eq!(stats(&a, Cause::Irq { source: 0, id: 11 }).count, 1);
        assert_eq!(stats(&a, Cause::Hardware).total_ns, 7_000);
        assert_eq!(a.top_causes()[0].0, thread);
        assert_eq!(a.pending_records(), 0);
    }

    #[test]
    fn records_may_arrive_out_of_order_and_early() {
        let mut a = NoiseAnalysis::new(CONFIG, [0, 1]);
        // nested contexts end inner first, so records come in reverse seq order; records
        // of the next period are already there when this one is joined
        a.add_records([
            record(1, NoiseClass::Nmi, 0, 7, 1_000),
            record(1, NoiseClass::Irq, 236, 6, 3_000),
            record(1, NoiseClass::Softirq, 1, 5, 4_000),
            record(1, NoiseClass::Softirq, 9, 8, 10_000),
        ]);
        a.add_period(&period(1, vec![sample(1, 4, 7, 9_000)], 7));
        assert_eq!(stats(&a, Cause::Nmi).count, 1);
        assert_eq!(stats(&a, Cause::Softirq(1)).total_ns, 4_000);
        assert_eq!(stats(&a, Cause::Softirq(9)).count, 0);
        assert_eq!(a.pending_records(), 1);
        a.add_period(&period(1, vec![sample(1, 7, 8, 11_000)], 8));
        assert_eq!(stats(&a, Cause::Softirq(9)).total_ns, 10_000);
    }

    #[test]
    fn missing_records_are_unexplained_not_hardware() {
        let mut a = NoiseAnalysis::new(CONFIG, [0]);
        a.add_records([record(0, NoiseClass::Irq, 11, 2, 900)]);
        a.add_period(&period(0, vec![sample(0, 0, 3, 6_000)], 3));
        let summary = a.summaries().next().unwrap();
        assert_eq!(summary.hw, 0);
        assert_eq!(summary.unexplained, 2);
    }

    #[test]
    fn rows_add_up_to_each_cpus_noise() {
        let mut a = NoiseAnalysis::new(CONFIG, [0, 1]);
        a.add_records([
            // CPU 0: a timer IRQ and the thread it woke, with 6 us of entry/exit around
            record(0, NoiseClass::Irq, 236, 1, 3_000),
            record(0, NoiseClass::Thread, 42, 2, 40_000),
            // records longer than their sample (two clocks): the later one is clipped
            record(0, NoiseClass::Softirq, 1, 3, 7_000),
            record(0, NoiseClass::Irq, 236, 4, 1_500),
            // seq 5 has no record; seq 6 does
            record(0, NoiseClass::Irq, 11, 6, 2_000),
            // CPU 1: a softirq alone in its sample
            record(1, NoiseClass::Softirq, 9, 1, 9_000),
        ]);
        let mut cpu0 = period(
            0,
            vec![
                sample(0, 0, 2, 49_000),
                sample(0, 2, 4, 8_000),
                sample(0, 4, 4, 6_000),
                sample(0, 4, 6, 10_000),
            ],
            6,
        );
        // two samples did not fit the buffer: 25 us of noise beyond the kept samples
        cpu0.dropped_samples = 2;
        cpu0.noise_ns += 25_000;
        a.add_period(&cpu0);
        let mut cpu1 = period(1, vec![sample(1, 0, 1, 9_600)], 1);
        // converted in one piece, the period's total is off by a few ns of rounding
        cpu1.noise_ns -= 3;
        a.add_period(&cpu1);

        let parts: Vec<(CpuSummary, Breakdown)> =
            a.breakdowns().map(|(s, b)| (s.clone(), b)).collect();
        let (s0, b0) = &parts[0];
        assert_eq!(s0.noise_ns, 49_000 + 8_000 + 6_000 + 10_000 + 25_000);
        assert_eq!(
            *b0,
            Breakdown {
                causes_ns: 3_000 + 40_000 + 7_000 + 1_000 + 2_000,
                entry_exit_ns: 6_000,
                hw_ns: 6_000,
                no_record_ns: 8_000,
                dropped_ns: 25_000,
            }
        );
        assert_eq!(s0.clipped_ns, 500);
        assert_eq!(s0.unexplained, 1);
        let (s1, b1) = &parts[1];
        assert_eq!(
            s1.noise_ns, 9_600,
            "the samples' sum, not the rounded total"
        );
        assert_eq!((b1.causes_ns, b1.entry_exit_ns), (9_000, 600));
        for (summary, breakdown) in &parts {
            assert_eq!(breakdown.total_ns(), summary.noise_ns);
            let rows: u64 = a
                .cpu_causes(summary.cpu)
                .iter()
                .map(|(_, s)| s.total_ns)
                .sum();
            assert_eq!(rows, summary.noise_ns);
            let timeline: u64 = a
                .timelines()
                .find(|(cpu, _)| *cpu == summary.cpu)
                .map_or(0, |(_, points)| points.iter().map(|p| p.noise_ns).sum());
            assert_eq!(timeline, summary.noise_ns);
        }

        // the rest of a sample goes to the class of the interference that began first
        let cpu0_causes = a.cpu_causes(0);
        let row = |cause: Cause| {
            cpu0_causes
                .iter()
                .find(|(c, _)| *c == cause)
                .map(|(_, s)| *s)
                .unwrap_or_default()
        };
        assert_eq!(row(Cause::EntryExit(NoiseClass::Irq)).total_ns, 6_000);
        assert_eq!(row(Cause::EntryExit(NoiseClass::Softirq)).count, 1);
        assert_eq!(row(Cause::EntryExit(NoiseClass::Softirq)).total_ns, 0);
        assert_eq!(row(Cause::Softirq(1)).total_ns, 7_000);
        assert_eq!(row(Cause::Irq { source: 0, id: 236 }).total_ns, 4_000);
        assert_eq!(
            (row(Cause::NoRecord).count, row(Cause::NoRecord).total_ns),
            (1, 8_000)
        );
        assert_eq!(
            (row(Cause::Dropped).count, row(Cause::Dropped).total_ns),
            (2, 25_000)
        );
        assert_eq!(row(Cause::Hardware).count, 1);

        // the global table merges the CPUs' rows and adds up to all the noise
        let softirq = stats(&a, Cause::EntryExit(NoiseClass::Softirq));
        assert_eq!((softirq.count, softirq.total_ns), (2, 600));
        let all: u64 = a.top_causes().iter().map(|(_, s)| s.total_ns).sum();
        assert_eq!(all, s0.noise_ns + s1.noise_ns);
    }

    #[test]
    fn summary_arithmetic_over_periods() {
        let mut a = NoiseAnalysis::new(CONFIG, [0]);
        a.add_period(&period(
            0,
            vec![sample(0, 0, 0, 10_000), sample(0, 0, 0, 30_000)],
            0,
        ));
        a.add_period(&period(0, vec![sample(0, 0, 0, 25_000)], 0));
        a.set_entries(0, [4, 3, 2, 1], 1);
        let s = a.summaries().next().unwrap();
        assert_eq!(s.periods, 2);
        assert_eq!(s.runtime_ns, 2_000_000);
        assert_eq!(s.noise_ns, 65_000);
        assert_eq!(s.max_noise_ns, 40_000);
        assert_eq!(s.max_single_ns, 30_000);
        assert_eq!(
            (s.thread, s.softirq, s.irq, s.nmi, s.unended),
            (4, 3, 2, 1, 1)
        );
        assert!((s.cpu_available_percent() - 96.75).abs() < 1e-9);
        let (_, h) = a.histograms().next().unwrap();
        assert_eq!(
            (h.buckets[10], h.buckets[25], h.buckets[30], h.count),
            (1, 1, 1, 3)
        );
    }

    #[test]
    fn timeline_keeps_each_period_then_coarsens() {
        let mut a = NoiseAnalysis::new(CONFIG, [0, 1]);
        a.add_period(&period(0, vec![sample(0, 0, 0, 10_000)], 0));
        a.add_period(&period(0, vec![], 0));
        a.add_period(&period(
            0,
            vec![sample(0, 0, 0, 20_000), sample(0, 0, 0, 5_000)],
            0,
        ));
        let timelines: Vec<_> = a.timelines().collect();
        assert_eq!(timelines[1], (1, &[][..]));
        let noise: Vec<(u64, u64, u64)> = timelines[0]
            .1
            .iter()
            .map(|p| (p.first_period, p.noise_ns, p.max_single_ns))
            .collect();
        assert_eq!(
            noise,
            vec![(0, 10_000, 10_000), (1, 0, 0), (2, 25_000, 20_000)]
        );

        // one past the limit: pairs merge, and later periods fill the pairs
        for _ in 3..TIMELINE_POINTS + 2 {
            a.add_period(&period(0, vec![sample(0, 0, 0, 1_000)], 0));
        }
        let points = a.timelines().next().unwrap().1;
        assert_eq!(points.len(), TIMELINE_POINTS / 2 + 1);
        assert!(points.iter().all(|p| p.periods == 2));
        assert_eq!(points[0].noise_ns, 10_000);
        assert_eq!((points[1].first_period, points[1].noise_ns), (2, 26_000));
        assert_eq!(points[1].max_noise_ns, 25_000);
        assert_eq!(points[1].max_single_ns, 20_000);
        // merged points add their runtime windows up, as their noise
        let runtime = |p: &TimelinePoint| p.runtime_ns;
        assert!(points.iter().all(|p| runtime(p) == 2 * RUNTIME_NS));
        let periods: u64 = points.iter().map(|p| p.periods).sum();
        assert_eq!(periods, a.summaries().next().unwrap().periods);
    }

    #[test]
    fn stop_report_has_causes_and_what_came_before() {
        let mut a = NoiseAnalysis::new(CONFIG, [0]);
        let before: Vec<Record> = (1..=5)
            .map(|seq| record(0, NoiseClass::Irq, 11, seq, 500))
            .collect();
        a.add_records(before);
        a.add_period(&period(0, vec![], 5));
        a.add_records([record(0, NoiseClass::Thread, 7, 6, 400_000)]);
        let mut report = period(0, vec![sample(0, 5, 5, 6_000), sample(0, 5, 6, 401_000)], 6);
        report.stop = Some(StopHit::Single(1));
        a.add_period(&report);
        let stop = a.stop_report().expect("a stop report");
        assert_eq!(stop.sample.duration_ns, 401_000);
        assert_eq!(
            stop.causes.iter().map(|r| r.seq).collect::<Vec<_>>(),
            vec![6]
        );
        assert_eq!(
            stop.before.iter().map(|r| r.seq).collect::<Vec<_>>(),
            vec![3, 4, 5]
        );
    }

    #[test]
    fn labels_name_lines_vectors_softirqs_and_threads() {
        let names = HashMap::from([(11, "virtio0-input.0".to_string())]);
        assert_eq!(
            Cause::Irq { source: 0, id: 11 }.label(&names),
            "irq 11 virtio0-input.0"
        );
        assert_eq!(Cause::Irq { source: 0, id: 12 }.label(&names), "irq 12");
        assert_eq!(
            Cause::Irq { source: 1, id: 236 }.label(&names),
            "local_timer:236"
        );
        assert_eq!(Cause::Softirq(7).label(&names), "SCHED");
        let thread = Cause::Thread {
            pid: 9,
            comm: Comm::new("kworker/1:1"),
            cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        };
        assert_eq!(thread.label(&names), "kworker/1:1:9");
    }
}
