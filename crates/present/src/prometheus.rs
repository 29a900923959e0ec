//! `--prometheus ADDR`: an endpoint (`GET /metrics`) that serves a run's live analysis
//! to Prometheus while the run goes on, as OpenMetrics to a client that asks for it and in
//! the classic text format otherwise ([`Format::negotiate`]).
//!
//! Each run publishes a snapshot of its analysis once a second (its `on_tick`); a scrape
//! encodes the latest snapshot. The analyses are cumulative, so every counter only grows.
//! Every run also serves what its probes lost and whether they are still drained.
//! Metric families are plain data (`Family`), made by one small function per capability
//! (`families`), so they can be checked without a server or a kernel.
//!
//! As Prometheus users expect: times in seconds, histograms with 1-2-5 buckets from 1 µs
//! to 10 s whatever the run's `-b`/`-E`, and labels that stay few (`cpu`, `class`,
//! `source`, ...; never a pid, never prose).

mod families;
mod server;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet, text};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::Names;
pub use families::{
    AgentHealth, CapabilityHealth, MAX_SERIES_PER_FAMILY, MOST_WORKLOADS, WorkloadLabels,
    account_families, account_families_labelled, agent_families, bh_families, noise_families,
    noise_families_labelled, noise_passive_families, wakeup_families,
};
use irqlens_analyze::account::Ledger;
use irqlens_analyze::bh::BhStats;
use irqlens_analyze::histogram::{DECADE_BOUNDS_NS, Histogram};
use irqlens_analyze::loss::Losses;
use irqlens_analyze::noise::NoiseAnalysis;
use irqlens_analyze::noise_passive::PassiveNoise;
use irqlens_analyze::wakeup::WakeupStats;
use irqlens_model::workload::{CgroupNames, WorkloadBy};
pub use server::{CONNECTION_DEADLINE, HEADER_READ_TIMEOUT, MAX_CONNECTIONS, MAX_HEAD_BYTES};
use server::{Limits, Serving};

/// The Content-Type of an OpenMetrics answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The Content-Type of an answer in the classic Prometheus text format.
pub const CLASSIC_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// How long the probes may go undrained before `irqlens_probe_up` says 0: a run
/// publishes once a second, so a few missed ticks mean its collector is stuck or done.
pub const PROBE_STALE_AFTER: Duration = Duration::from_secs(5);

/// The exposition formats a scrape can get.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0 text.
    OpenMetrics,
    /// The classic Prometheus text format, 0.0.4 (what `promtool check metrics` reads).
    Classic,
}

impl Format {
    /// The format an `Accept` header asks for: the served type it ranks highest (`q`; the
    /// first listed on a tie). Without one of ours, the classic format, as Prometheus's own
    /// client libraries answer `curl` and `*/*`.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let ranked = accept
            .into_iter()
            .flat_map(|a| a.split(','))
            .filter_map(|range| {
                let mut parameters = range.split(';').map(str::trim);
                let format = match parameters.next()?.to_ascii_lowercase().as_str() {
                    "application/openmetrics-text" => Format::OpenMetrics,
                    "text/plain" => Format::Classic,
                    _ => return None,
                };
                let quality = parameters
                    .find_map(|p| p.strip_prefix("q="))
                    .map_or(Some(1.0), |q| q.parse::<f32>().ok())?;
                (quality > 0.0).then_some((quality, format))
            });
        let best = ranked.reduce(|best, next| if next.0 > best.0 { next } else { best });
        best.map_or(Format::Classic, |(_, format)| format)
    }

    /// The Content-Type of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => CONTENT_TYPE,
            Format::Classic => CLASSIC_CONTENT_TYPE,
        }
    }
}

/// A series' labels: (name, value) pairs.
pub type Labels = Vec<(&'static str, String)>;

/// One metric family of a snapshot: its name without the `irqlens_` prefix and the unit
/// and `_total` suffixes (the encoder adds them), and a value per label set.
#[derive(Clone, Debug)]
pub struct Family {
    /// The name, without prefix and suffixes.
    pub name: &'static str,
    help: &'static str,
    unit: Option<Unit>,
    kind: MetricType,
    /// The value of each series, by its labels.
    pub metrics: BTreeMap<Labels, Value>,
}

/// The value of one series.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A counter or gauge in seconds (or another float).
    Float(f64),
    /// A counter of events.
    Count(u64),
    /// A histogram.
    Histogram(Buckets),
}

/// A histogram as OpenMetrics has it: (upper bound in s, count in that bucket only),
/// the last bound +Inf.
#[derive(Clone, Debug, PartialEq)]
pub struct Buckets {
    /// The sum of the values, s.
    pub sum_seconds: f64,
    /// The number of values.
    pub count: u64,
    /// (upper bound in s, count in that bucket only), ascending.
    pub buckets: Vec<(f64, u64)>,
}

impl Family {
    fn new(
        name: &'static str,
        help: &'static str,
        unit: Option<Unit>,
        kind: MetricType,
        metrics: impl IntoIterator<Item = (Labels, Value)>,
    ) -> Self {
        let mut family = Family {
            name,
            help,
            unit,
            kind,
            metrics: BTreeMap::new(),
        };
        for (labels, value) in metrics {
            family.add(labels, value);
        }
        family
    }

    /// Times, from ns: counters, or maxima as gauges (two series that share labels keep
    /// the larger).
    pub fn seconds(
        name: &'static str,
        help: &'static str,
        kind: MetricType,
        metrics: impl IntoIterator<Item = (Labels, u64)>,
    ) -> Self {
        let values = metrics
            .into_iter()
            .map(|(l, ns)| (l, Value::Float(seconds(ns))));
        Family::new(name, help, Some(Unit::Seconds), kind, values)
    }

    /// Counters of events (the encoder adds `_total`).
    pub fn count_total(
        name: &'static str,
        help: &'static str,
        metrics: impl IntoIterator<Item = (Labels, u64)>,
    ) -> Self {
        let values = metrics.into_iter().map(|(l, n)| (l, Value::Count(n)));
        Family::new(name, help, None, MetricType::Counter, values)
    }

    /// Histograms in seconds, from histograms of ns (see [`Buckets::of`]).
    pub fn seconds_histogram<'a>(
        name: &'static str,
        help: &'static str,
        metrics: impl IntoIterator<Item = (Labels, &'a Histogram)>,
    ) -> Self {
        let values = metrics
            .into_iter()
            .map(|(l, h)| (l, Value::Histogram(Buckets::of(h))));
        Family::new(
            name,
            help,
            Some(Unit::Seconds),
            MetricType::Histogram,
            values,
        )
    }

    /// Adds a series; one whose labels are already there is folded into it, as two
    /// causes that print the same (a symbol at two addresses) are one to a reader.
    fn add(&mut self, labels: Labels, value: Value) {
        let gauge = matches!(self.kind, MetricType::Gauge);
        match self.metrics.get_mut(&labels) {
            Some(existing) => existing.fold(value, gauge),
            None => {
                self.metrics.insert(labels, value);
            }
        }
    }

    /// Encodes `same`, families of one name (their series' labels differ), as one.
    fn encode_all(same: &[&Family], encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        let Some(first) = same.iter().find(|f| !f.metrics.is_empty()) else {
            return Ok(());
        };
        let mut family =
            encoder.encode_descriptor(first.name, first.help, first.unit.as_ref(), first.kind)?;
        for (labels, value) in same.iter().flat_map(|f| &f.metrics) {
            // a series without labels is its name alone, not `name{}`
            match labels.is_empty() {
                true => value.encode(first.kind, &mut family)?,
                false => value.encode(first.kind, &mut family.encode_family(labels)?)?,
            }
        }
        Ok(())
    }
}

impl Value {
    fn fold(&mut self, other: Value, keep_max: bool) {
        match (self, other) {
            (Value::Float(a), Value::Float(b)) if keep_max => *a = a.max(b),
            (Value::Float(a), Value::Float(b)) => *a += b,
            (Value::Count(a), Value::Count(b)) => *a += b,
            (Value::Histogram(a), Value::Histogram(b)) => {
                a.sum_seconds += b.sum_seconds;
                a.count += b.count;
                for ((_, n), (_, m)) in a.buckets.iter_mut().zip(b.buckets) {
                    *n += m;
                }
            }
            (a, b) => unreachable!("a family mixes {a:?} and {b:?}"),
        }
    }

    fn encode(&self, kind: MetricType, encoder: &mut MetricEncoder) -> std::fmt::Result {
        let gauge = matches!(kind, MetricType::Gauge);
        match self {
            Value::Float(v) if gauge => encoder.encode_gauge(v),
            Value::Count(n) if gauge => encoder.encode_gauge(n),
            Value::Float(v) => encoder.encode_counter::<NoLabelSet, _, f64>(v, None),
            Value::Count(n) => encoder.encode_counter::<NoLabelSet, _, f64>(n, None),
            Value::Histogram(h) => {
                encoder.encode_histogram::<NoLabelSet>(h.sum_seconds, h.count, &h.buckets, None)
            }
        }
    }
}

impl Buckets {
    /// The 1-2-5 buckets (1 µs to 10 s, then +Inf) of a histogram of ns: exact, as the
    /// histogram counts every value under its bound as it comes (a value on a bound is in
    /// its bucket: `le`).
    pub fn of(h: &Histogram) -> Self {
        let upper = DECADE_BOUNDS_NS.map(seconds).into_iter();
        Buckets {
            sum_seconds: seconds(h.sum_ns),
            count: h.count,
            buckets: upper.chain([f64::INFINITY]).zip(h.decades).collect(),
        }
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The build's version and the capability that runs, as `irqlens_build_info`.
fn build_info(capability: &str) -> Family {
    let labels = vec![
        ("version", irqlens_model::run::VERSION.to_owned()),
        ("capability", capability.to_owned()),
    ];
    Family::new(
        "build_info",
        "The irqlens version and the capability that serves these metrics",
        None,
        MetricType::Gauge,
        [(labels, Value::Count(1))],
    )
}

/// What the probes of `capability` lost so far (their buffers were full), per CPU where
/// the probe counts them so, as `irqlens_lost_events_total`.
fn lost_events(capability: &str, lost: &Losses) -> Family {
    let by_capability = || vec![("capability", capability.to_owned())];
    let series: Vec<(Labels, u64)> = match &lost.by_cpu {
        Some(by_cpu) => by_cpu
            .iter()
            .map(|(cpu, &n)| {
                let mut labels = by_capability();
                labels.push(("cpu", cpu.to_string()));
                (labels, n)
            })
            .collect(),
        None => vec![(by_capability(), lost.events)],
    };
    Family::count_total(
        "lost_events",
        "Events the probes could not keep so far (their buffer was full): counts and times of that CPU may be short",
        series,
    )
}

/// Whether the probes of `capability` are loaded and drained, as `irqlens_probe_up`: 1
/// while the run publishes, 0 once its last snapshot is older than `PROBE_STALE_AFTER`.
fn probe_up(capability: &str, up: bool) -> Family {
    Family::new(
        "probe_up",
        "1 while the probes of the capability are loaded and drained, 0 when they have not been drained for 5 s",
        None,
        MetricType::Gauge,
        [(
            vec![("capability", capability.to_owned())],
            Value::Count(up.into()),
        )],
    )
}

/// The families every capability serves besides its own.
fn run_families(capability: &str) -> [Family; 3] {
    [
        build_info(capability),
        lost_events(capability, &Losses::records(0)),
        probe_up(capability, true),
    ]
}

/// The names of the samples `family` writes: the `irqlens_` prefix, the unit, and the
/// suffixes of its type (`_total`; `_bucket`, `_sum`, `_count`).
fn sample_names(family: &Family) -> Vec<String> {
    let mut name = format!("irqlens_{}", family.name);
    if let Some(unit) = &family.unit {
        name = format!("{name}_{}", unit.as_str());
    }
    match family.kind {
        MetricType::Counter => vec![format!("{name}_total")],
        MetricType::Histogram => ["bucket", "sum", "count"]
            .map(|suffix| format!("{name}_{suffix}"))
            .into(),
        _ => vec![name],
    }
}

/// Every sample name each capability serves (the families of an empty run, which are
/// those of every run: a family with no series yet is left out of a scrape, not renamed),
/// `irqlens_build_info`, `irqlens_lost_events_total` and `irqlens_probe_up` included. A
/// dashboard's queries are checked against it.
pub fn metric_names() -> BTreeMap<&'static str, Vec<String>> {
    let names = Names::default();
    let empty: [(&str, Vec<Family>); 6] = [
        (
            "noise",
            noise_families(
                &families::empty_noise(),
                &names.irqs,
                &names.cgroups,
                WorkloadBy::Pod,
            ),
        ),
        (
            "noise_passive",
            noise_passive_families(&PassiveNoise::default(), &names.irqs),
        ),
        ("bh", bh_families(&families::empty_bh(), &names)),
        ("wakeup", wakeup_families(&families::empty_wakeup(), &names)),
        (
            "account",
            account_families(
                &Ledger::default(),
                &names.irqs,
                &CgroupNames::default(),
                WorkloadBy::Pod,
            ),
        ),
        ("agent", agent_families(&AgentHealth::default())),
    ];
    empty
        .into_iter()
        .map(|(capability, mut families)| {
            families.extend(run_families(capability));
            (capability, families.iter().flat_map(sample_names).collect())
        })
        .collect()
}

/// A run's analysis at one tick.
#[derive(Debug)]
struct Published {
    capability: &'static str,
    families: Vec<Family>,
    at: Instant,
    /// Whether it comes from probes, whose `irqlens_probe_up` a scrape adds (the agent's
    /// own figures do not).
    probed: bool,
}

/// The latest snapshot of each capability that publishes into the endpoint (one for a
/// run's `--prometheus`, several for the agent's), which a scrape encodes together.
#[derive(Debug, Default)]
struct Snapshot(Mutex<BTreeMap<&'static str, Arc<Published>>>);

impl Snapshot {
    fn replace(&self, capability: &'static str, families: Vec<Family>) {
        self.replace_published(Published {
            capability,
            families,
            at: Instant::now(),
            probed: true,
        });
    }

    fn replace_published(&self, published: Published) {
        let old = self
            .lock()
            .insert(published.capability, Arc::new(published));
        drop(old); // outside the lock
    }

    /// Takes `capability`'s families out of the scrapes.
    fn remove(&self, capability: &str) {
        let old = self.lock().remove(capability);
        drop(old); // outside the lock
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<&'static str, Arc<Published>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        // a scrape holds the lock only to take the snapshots, not to encode them
        let published: Vec<Arc<Published>> = self.lock().values().cloned().collect();
        let ups: Vec<Family> = (published.iter())
            .filter(|p| p.probed)
            .map(|p| probe_up(p.capability, p.at.elapsed() < PROBE_STALE_AFTER))
            .collect();
        // a family several capabilities serve (build_info, lost_events, probe_up) is
        // described once, with every capability's series
        let mut by_name: Vec<Vec<&Family>> = Vec::new();
        let all = (published.iter()).flat_map(|p| &p.families).chain(&ups);
        for family in all {
            match by_name.iter_mut().find(|same| same[0].name == family.name) {
                Some(same) => same.push(family),
                None => by_name.push(vec![family]),
            }
        }
        by_name
            .iter()
            .try_for_each(|same| Family::encode_all(same, &mut encoder))
    }
}

fn registry(snapshot: Arc<Snapshot>) -> Registry {
    let mut registry = Registry::with_prefix("irqlens");
    registry.register_collector(Box::new(snapshot));
    registry
}

fn encode(registry: &Registry, format: Format) -> String {
    let mut body = String::new();
    text::encode(&mut body, registry).expect("writing to a String cannot fail");
    match format {
        Format::OpenMetrics => body,
        Format::Classic => classic(&body),
    }
}

/// The classic text format of an OpenMetrics exposition of these families. prometheus-client
/// writes OpenMetrics only; the samples of counters, gauges and histograms without
/// exemplars are the same lines in both formats, so only the framing is rewritten, and the
/// values, escaping and buckets stay the encoder's: a counter's family takes its samples'
/// name (`x_total`, where OpenMetrics names it `x`, and a classic parser would see samples
/// of a family with no HELP or TYPE), and `# UNIT` and `# EOF`, which the classic format
/// lacks, go.
fn classic(openmetrics: &str) -> String {
    let counters: HashSet<&str> = (openmetrics.lines())
        .filter_map(|line| line.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut text = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        let descriptor = line
            .strip_prefix("# ")
            .map(|d| d.split_once(' ').unwrap_or((d, "")));
        match descriptor {
            Some(("UNIT" | "EOF", _)) => {}
            Some((keyword @ ("HELP" | "TYPE"), rest)) => {
                let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
                let total = if counters.contains(name) {
                    "_total"
                } else {
                    ""
                };
                let _ = writeln!(text, "# {keyword} {name}{total} {value}");
            }
            _ => {
                text.push_str(line);
                text.push('\n');
            }
        }
    }
    text
}

/// The endpoint of a run, or nothing without `--prometheus`: every call is then a no-op,
/// so the runs call it unconditionally. Several runs can publish into one endpoint (the
/// agent's capabilities): each has its own [`Exporter::share`]d handle, and a scrape
/// serves every run's latest snapshot.
pub struct Exporter {
    endpoint: Option<Endpoint>,
}

struct Endpoint {
    snapshot: Arc<Snapshot>,
    names: Arc<Names>,
    /// The workloads with a label of their own so far.
    workloads: WorkloadLabels,
    address: SocketAddr,
    /// Bound at the start (so a taken port fails the run before anything is loaded),
    /// served from the first snapshot on; `None` in a shared handle, which only publishes.
    listener: Option<TcpListener>,
    limits: Limits,
    serving: Option<Serving>,
}

impl Exporter {
    /// Listens on `address`; serving begins with the first snapshot. `names` (asked
    /// only when there is an address) name IRQ lines and kernel functions in the labels.
    pub fn start(address: Option<SocketAddr>, names: impl FnOnce() -> Names) -> Result<Self> {
        Exporter::with_limits(address, names, Limits::default())
    }

    /// Listens on `address` as [`Exporter::start`] does, for a long-running endpoint
    /// whose address is the `option`'s (its error names it).
    pub fn listen(
        option: &str,
        address: SocketAddr,
        names: impl FnOnce() -> Names,
    ) -> Result<Self> {
        Exporter::open(option, Some(address), names, Limits::default())
    }

    fn with_limits(
        address: Option<SocketAddr>,
        names: impl FnOnce() -> Names,
        limits: Limits,
    ) -> Result<Self> {
        Exporter::open("--prometheus", address, names, limits)
    }

    fn open(
        option: &str,
        address: Option<SocketAddr>,
        names: impl FnOnce() -> Names,
        limits: Limits,
    ) -> Result<Self> {
        let Some(address) = address else {
            return Ok(Exporter { endpoint: None });
        };
        let listener = TcpListener::bind(address)
            .with_context(|| format!("{option} '{address}': cannot listen"))?;
        let address = listener.local_addr()?;
        Ok(Exporter {
            endpoint: Some(Endpoint {
                snapshot: Arc::default(),
                names: Arc::new(names()),
                workloads: WorkloadLabels::default(),
                address,
                listener: Some(listener),
                limits,
                serving: None,
            }),
        })
    }

    /// Another handle on the same endpoint, for a run beside this one: what it publishes
    /// is served with the rest, under its capability's name. The endpoint serves while
    /// this handle (the one that started it) lives.
    pub fn share(&self) -> Exporter {
        let endpoint = self.endpoint.as_ref().map(|endpoint| Endpoint {
            snapshot: Arc::clone(&endpoint.snapshot),
            names: Arc::clone(&endpoint.names),
            workloads: WorkloadLabels::default(),
            address: endpoint.address,
            listener: None,
            limits: endpoint.limits,
            serving: None,
        });
        Exporter { endpoint }
    }

    /// Takes `capability`'s families out of the scrapes (it stopped, or failed).
    pub fn remove(&self, capability: &str) {
        if let Some(endpoint) = &self.endpoint {
            endpoint.snapshot.remove(capability);
        }
    }

    /// Publishes the agent's own figures (its cost, its capabilities' health).
    pub fn agent(&mut self, health: &AgentHealth) {
        let Some(endpoint) = &mut self.endpoint else {
            return;
        };
        let mut families = agent_families(health);
        families.push(build_info("agent"));
        endpoint.snapshot.replace_published(Published {
            capability: "agent",
            families,
            at: Instant::now(),
            probed: false,
        });
        endpoint.serve();
    }

    /// Where it listens (the port picked, for port 0).
    pub fn address(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(|e| e.address)
    }

    /// Publishes a noise run's analysis so far, and what its probe `lost`.
    /// Its threads' noise is labelled by workload at level `by`, their cgroups named
    /// by `cgroups` (only called when the endpoint serves).
    pub fn noise(
        &mut self,
        analysis: &NoiseAnalysis,
        lost: &Losses,
        cgroups: impl FnOnce() -> CgroupNames,
        by: WorkloadBy,
    ) {
        self.publish("noise", lost, |names, labels| {
            noise_families_labelled(analysis, &names.irqs, &cgroups(), by, labels)
        });
    }

    /// Publishes passive noise's sums so far (the agent's), and what its probe `lost`.
    pub fn noise_passive(&mut self, noise: &PassiveNoise, lost: &Losses) {
        self.publish("noise_passive", lost, |names, _| {
            noise_passive_families(noise, &names.irqs)
        });
    }

    /// Publishes a bottom-half run's statistics so far, and what its probe `lost`.
    pub fn bh(&mut self, stats: &BhStats, lost: &Losses) {
        self.publish("bh", lost, |names, _| bh_families(stats, names));
    }

    /// Publishes a wakeup run's statistics so far, and what its probe `lost`.
    pub fn wakeup(&mut self, stats: &WakeupStats, lost: &Losses) {
        self.publish("wakeup", lost, |names, _| wakeup_families(stats, names));
    }

    /// Publishes an account run's ledger so far and its cgroups' names, made only when
    /// there is an endpoint (`so_far` copies the run's), its workloads named at the level
    /// `by`, and what its probe `lost`.
    pub fn account(
        &mut self,
        so_far: impl FnOnce() -> (Ledger, CgroupNames),
        by: WorkloadBy,
        lost: &Losses,
    ) {
        self.publish("account", lost, |names, labels| {
            let (ledger, cgroups) = so_far();
            account_families_labelled(&ledger, &names.irqs, &cgroups, by, labels)
        });
    }

    /// Replaces the snapshot. The first call starts the server from the calling thread,
    /// the run's collector: the server's thread inherits its CPU affinity, which the noise
    /// run has by then moved off the measured CPUs.
    fn publish(
        &mut self,
        capability: &'static str,
        lost: &Losses,
        families: impl FnOnce(&Names, &mut WorkloadLabels) -> Vec<Family>,
    ) {
        let Some(endpoint) = &mut self.endpoint else {
            return;
        };
        let mut families = families(&endpoint.names, &mut endpoint.workloads);
        families.push(build_info(capability));
        families.push(lost_events(capability, lost));
        endpoint.snapshot.replace(capability, families);
        endpoint.serve();
    }
}

impl Endpoint {
    /// Starts the server if it is not serving yet (and this handle holds the listener).
    fn serve(&mut self) {
        if let Some(listener) = self.listener.take() {
            let registry = registry(Arc::clone(&self.snapshot));
            match Serving::start(listener, registry, self.limits) {
                Ok(serving) => self.serving = Some(serving),
                // the run goes on: its own results matter more than the endpoint
                Err(err) => eprintln!("irqlens: --prometheus: {err:#}"),
            }
        }
    }
}
