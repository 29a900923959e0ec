//! `--prometheus ADDR`: an OpenMetrics endpoint (`GET /metrics`) that serves a run's
//! live analysis to Prometheus while the run goes on.
//!
//! Each run publishes a snapshot of its analysis once a second (its `on_tick`); a scrape
//! encodes the latest snapshot. The analyses are cumulative, so every counter only grows.
//! Metric families are plain data (`Family`), made by one small function per capability,
//! so they can be checked without a server or a kernel.

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::io;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use anyhow::{Context, Result, anyhow};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, MetricEncoder, NoLabelSet, text};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

use super::Names;
use super::bh::sources_of;
use irqlens_analyze::bh::BhStats;
use irqlens_analyze::histogram::Histogram;
use irqlens_analyze::noise::NoiseAnalysis;
use irqlens_analyze::wakeup::WakeupStats;

/// The Content-Type of a scrape's answer (OpenMetrics text).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Causes (and bottom-half sources) exported per family, largest first: a busy machine
/// has a cause per short-lived thread, and Prometheus pays for every series it ever saw.
pub const MAX_SERIES_PER_FAMILY: usize = 50;

/// Upper bounds of the exported histograms' buckets (ns): 1-2-5 steps from 1 µs to 10 ms.
const BUCKET_BOUNDS_NS: [u64; 13] = [
    1_000, 2_000, 5_000, 10_000, 20_000, 50_000, 100_000, 200_000, 500_000, 1_000_000, 2_000_000,
    5_000_000, 10_000_000,
];

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

    /// Histograms in seconds, from histograms of ns (see [`Buckets`]).
    pub fn seconds_histogram<'a>(
        name: &'static str,
        help: &'static str,
        metrics: impl IntoIterator<Item = (Labels, &'a Histogram)>,
    ) -> Self {
        let values = metrics
            .into_iter()
            .map(|(l, h)| (l, Value::Histogram(Buckets::from_linear(h))));
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

    fn encode(&self, encoder: &mut DescriptorEncoder) -> std::fmt::Result {
        if self.metrics.is_empty() {
            return Ok(());
        }
        let mut family =
            encoder.encode_descriptor(self.name, self.help, self.unit.as_ref(), self.kind)?;
        for (labels, value) in &self.metrics {
            value.encode(self.kind, family.encode_family(labels)?)?;
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
            (Value::Histogram(a), Value::Histogram(b)) if a.bounds_match(&b) => {
                a.sum_seconds += b.sum_seconds;
                a.count += b.count;
                for ((_, n), (_, m)) in a.buckets.iter_mut().zip(b.buckets) {
                    *n += m;
                }
            }
            (a, b) => unreachable!("a family mixes {a:?} and {b:?}"),
        }
    }

    fn encode(&self, kind: MetricType, mut encoder: MetricEncoder) -> std::fmt::Result {
        match self {
            Value::Float(v) if matches!(kind, MetricType::Gauge) => encoder.encode_gauge(v),
            Value::Float(v) => encoder.encode_counter::<NoLabelSet, _, f64>(v, None),
            Value::Count(n) => encoder.encode_counter::<NoLabelSet, _, f64>(n, None),
            Value::Histogram(h) => {
                encoder.encode_histogram::<NoLabelSet>(h.sum_seconds, h.count, &h.buckets, None)
            }
        }
    }
}

impl Buckets {
    /// Rebuckets an analysis's linear histogram. A bound is exported only where the
    /// linear histogram has a bucket edge and within its range (else its count would be
    /// a guess): each linear bucket goes under the first bound at or above its end.
    /// (A value exactly on a bound lands one bucket up: 1 ns of a µs scale.)
    pub fn from_linear(h: &Histogram) -> Self {
        let range_ns = h.bucket_ns.saturating_mul(h.buckets.len() as u64);
        let bounds: Vec<u64> = BUCKET_BOUNDS_NS
            .into_iter()
            .filter(|&b| b % h.bucket_ns == 0 && b <= range_ns)
            .collect();
        let mut counts = vec![0; bounds.len() + 1];
        for (index, &count) in h.buckets.iter().enumerate() {
            let end_ns = h.bucket_start_ns(index + 1);
            counts[bounds.partition_point(|&b| b < end_ns)] += count;
        }
        counts[bounds.len()] += h.overflow;
        let upper = bounds.into_iter().map(seconds).chain([f64::INFINITY]);
        Buckets {
            sum_seconds: seconds(h.sum_ns),
            count: h.count,
            buckets: upper.zip(counts).collect(),
        }
    }

    fn bounds_match(&self, other: &Buckets) -> bool {
        self.buckets.len() == other.buckets.len()
            && self
                .buckets
                .iter()
                .zip(&other.buckets)
                .all(|(a, b)| a.0 == b.0)
    }
}

fn seconds(ns: u64) -> f64 {
    ns as f64 / 1e9
}

fn cpu(cpu: u32) -> Labels {
    vec![("cpu", cpu.to_string())]
}

/// `irqlens noise`: per CPU as rtla osnoise top's columns, the sample histogram, and the
/// causes of the run.
pub fn noise_families(analysis: &NoiseAnalysis, irq_names: &HashMap<u32, String>) -> Vec<Family> {
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
    let causes = analysis.top_causes();
    let causes = causes
        .iter()
        .take(MAX_SERIES_PER_FAMILY)
        .map(|(cause, stats)| {
            let labels = vec![
                ("class", cause.class_name().to_owned()),
                ("cause", cause.label(irq_names)),
            ];
            (labels, stats)
        });
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
            "Interference-free time of each cause of noise (the largest causes)",
            MetricType::Counter,
            causes.clone().map(|(labels, s)| (labels, s.total_ns)),
        ),
        Family::count_total(
            "noise_cause_occurrences",
            "Occurrences of each cause of noise inside noise samples (the largest causes)",
            causes.map(|(labels, s)| (labels, s.count)),
        ),
    ]
}

/// `irqlens bh`: the latency per mechanism and per source, and the delay causes.
pub fn bh_families(stats: &BhStats, names: &Names) -> Vec<Family> {
    let mechanisms = || {
        stats
            .mechanisms
            .iter()
            .map(|(m, s)| (vec![("mechanism", m.name().to_owned())], s))
    };
    let sources = stats.mechanisms.keys().flat_map(|&mechanism| {
        sources_of(stats, mechanism)
            .into_iter()
            .take(MAX_SERIES_PER_FAMILY)
            .map(move |(source, series)| {
                let labels = vec![
                    ("mechanism", mechanism.name().to_owned()),
                    ("source", names.source(source)),
                ];
                (labels, &series.latency.histogram)
            })
    });
    let causes = stats.mechanisms.iter().flat_map(|(mechanism, m)| {
        m.ranked_causes()
            .into_iter()
            .take(MAX_SERIES_PER_FAMILY)
            .map(move |(cause, c)| {
                let labels = vec![
                    ("mechanism", mechanism.name().to_owned()),
                    ("cause", names.cause(cause)),
                ];
                (labels, c.samples)
            })
    });
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
            causes,
        ),
        Family::count_total(
            "bh_others",
            "Bottom halves of other requesters, left out (active mode)",
            [(Labels::new(), stats.others)],
        ),
    ]
}

/// `irqlens wakeup`: the latency components per CPU, and the causes' time.
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
    let causes = stats.ranked_causes();
    let causes = causes
        .iter()
        .take(MAX_SERIES_PER_FAMILY)
        .map(|(cause, s)| (vec![("cause", names.wakeup_cause(cause))], s));
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
            "Latency time spent on each cause (the largest causes)",
            MetricType::Counter,
            causes.clone().map(|(labels, s)| (labels, s.total_ns)),
        ),
        Family::count_total(
            "wakeup_cause_samples",
            "Samples each cause took time in (the largest causes)",
            causes.map(|(labels, s)| (labels, s.samples)),
        ),
    ]
}

/// The latest snapshot, which a scrape encodes.
#[derive(Debug, Default)]
struct Snapshot(Mutex<Arc<Vec<Family>>>);

impl Snapshot {
    fn replace(&self, families: Vec<Family>) {
        let old = std::mem::replace(&mut *self.lock(), Arc::new(families));
        drop(old); // outside the lock
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Arc<Vec<Family>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder) -> std::fmt::Result {
        // a scrape holds the lock only to take the snapshot, not to encode it
        let families = Arc::clone(&self.lock());
        families.iter().try_for_each(|f| f.encode(&mut encoder))
    }
}

fn registry(snapshot: Arc<Snapshot>) -> Registry {
    let mut registry = Registry::with_prefix("irqlens");
    registry.register_collector(Box::new(snapshot));
    registry
}

fn encode(registry: &Registry) -> String {
    let mut body = String::new();
    text::encode(&mut body, registry).expect("writing to a String cannot fail");
    body
}

/// The endpoint of a run, or nothing without `--prometheus`: every call is then a no-op,
/// so the runs call it unconditionally.
pub struct Exporter {
    endpoint: Option<Endpoint>,
}

struct Endpoint {
    snapshot: Arc<Snapshot>,
    names: Names,
    address: SocketAddr,
    /// Bound at the start (so a taken port fails the run before anything is loaded),
    /// served from the first snapshot on.
    listener: Option<TcpListener>,
    serving: Option<Serving>,
}

impl Exporter {
    /// Listens on `address`; serving begins with the first snapshot. `names` (asked
    /// only when there is an address) name IRQ lines and kernel functions in the labels.
    pub fn start(address: Option<SocketAddr>, names: impl FnOnce() -> Names) -> Result<Self> {
        let Some(address) = address else {
            return Ok(Exporter { endpoint: None });
        };
        let listener = TcpListener::bind(address)
            .with_context(|| format!("--prometheus '{address}': cannot listen"))?;
        let address = listener.local_addr()?;
        Ok(Exporter {
            endpoint: Some(Endpoint {
                snapshot: Arc::default(),
                names: names(),
                address,
                listener: Some(listener),
                serving: None,
            }),
        })
    }

    /// Where it listens (the port picked, for port 0).
    pub fn address(&self) -> Option<SocketAddr> {
        self.endpoint.as_ref().map(|e| e.address)
    }

    /// Publishes a noise run's analysis so far.
    pub fn noise(&mut self, analysis: &NoiseAnalysis) {
        self.publish(|names| noise_families(analysis, &names.irqs));
    }

    /// Publishes a bottom-half run's statistics so far.
    pub fn bh(&mut self, stats: &BhStats) {
        self.publish(|names| bh_families(stats, names));
    }

    /// Publishes a wakeup run's statistics so far.
    pub fn wakeup(&mut self, stats: &WakeupStats) {
        self.publish(|names| wakeup_families(stats, names));
    }

    /// Replaces the snapshot. The first call starts the server from the calling thread,
    /// the run's collector: tiny_http's threads inherit its CPU affinity, which the noise
    /// run has by then moved off the measured CPUs.
    fn publish(&mut self, families: impl FnOnce(&Names) -> Vec<Family>) {
        let Some(endpoint) = &mut self.endpoint else {
            return;
        };
        endpoint.snapshot.replace(families(&endpoint.names));
        if let Some(listener) = endpoint.listener.take() {
            match Serving::start(listener, Arc::clone(&endpoint.snapshot)) {
                Ok(serving) => endpoint.serving = Some(serving),
                // the run goes on: its own results matter more than the endpoint
                Err(err) => eprintln!("irqlens: --prometheus: {err:#}"),
            }
        }
    }
}

/// The HTTP server and the thread that answers its requests. Dropping it stops both and
/// closes the listening socket.
struct Serving {
    server: Arc<tiny_http::Server>,
    responder: Option<JoinHandle<()>>,
}

impl Serving {
    fn start(listener: TcpListener, snapshot: Arc<Snapshot>) -> Result<Self> {
        let server = tiny_http::Server::from_listener(listener, None)
            .map_err(|err| anyhow!("cannot serve: {err}"))?;
        let server = Arc::new(server);
        let registry = registry(snapshot);
        let requests = Arc::clone(&server);
        let responder = std::thread::Builder::new()
            .name("irqlens/metrics".into())
            .spawn(move || {
                for request in requests.incoming_requests() {
                    // a scraper that went away is its own problem
                    let _ = respond(request, &registry);
                }
            })?;
        Ok(Serving {
            server,
            responder: Some(responder),
        })
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(responder) = self.responder.take() {
            let _ = responder.join();
        }
        // the last Arc of the server goes with self: tiny_http then closes the listener
    }
}

fn respond(request: tiny_http::Request, registry: &Registry) -> io::Result<()> {
    let path = request.url().split('?').next().unwrap_or_default();
    if *request.method() != tiny_http::Method::Get || path != "/metrics" {
        let response = tiny_http::Response::from_string("Not found: irqlens serves GET /metrics\n")
            .with_status_code(404);
        return request.respond(response);
    }
    let content_type =
        tiny_http::Header::from_bytes("Content-Type", CONTENT_TYPE).expect("a valid header");
    request.respond(tiny_http::Response::from_string(encode(registry)).with_header(content_type))
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    use super::*;
    use irqlens_analyze::bh::{Delay, DelayCause, Mechanism, Sample as BhSample, Source};
    use irqlens_model::bh::{Selection, StatsConfig as BhConfig};
    use irqlens_model::kernel::Comm;
    use irqlens_model::noise::{AnalysisConfig, NoiseClass, PeriodReport, Record, Sample};
    use irqlens_model::wakeup::{Report, StatsConfig as WakeupConfig};

    const NS_PER_US: u64 = 1_000;

    /// The OpenMetrics text of `families`, as a scrape gets it.
    fn render(families: Vec<Family>) -> String {
        let snapshot = Arc::new(Snapshot::default());
        snapshot.replace(families);
        encode(&registry(snapshot))
    }

    /// One period of `cpu`: a 50 µs thread interference inside a sample, a 7 µs sample
    /// with nothing traced, and `seq` past both.
    fn noisy_period(analysis: &mut NoiseAnalysis, cpu: u32, seq: u64) {
        analysis.add_records([Record {
            cpu,
            class: NoiseClass::Thread,
            source: 0,
            id: 42,
            comm: Comm::new("spinner"),
            start_ns: seq * NS_PER_US,
            duration_ns: 50 * NS_PER_US,
            seq: seq + 1,
        }]);
        let sample = |seq_before, seq_after, duration_ns| Sample {
            cpu,
            start_ns: seq_before * NS_PER_US,
            duration_ns,
            seq_before,
            seq_after,
        };
        analysis.add_period(&PeriodReport {
            cpu,
            runtime_ns: 1_000_000,
            noise_ns: 57 * NS_PER_US,
            max_single_ns: 50 * NS_PER_US,
            samples: vec![
                sample(seq, seq + 1, 50 * NS_PER_US),
                sample(seq + 1, seq + 1, 7 * NS_PER_US),
            ],
            last_seq: seq + 1,
            ..Default::default()
        });
    }

    fn noise_analysis() -> NoiseAnalysis {
        let config = AnalysisConfig {
            bucket_ns: NS_PER_US,
            entries: 256,
            keep_recent: 3,
        };
        let mut analysis = NoiseAnalysis::new(config, [1]);
        noisy_period(&mut analysis, 1, 0);
        analysis
    }

    /// The value of the sample line that starts with `series` (name and labels).
    fn value(text: &str, series: &str) -> f64 {
        text.lines()
            .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
            .parse()
            .unwrap()
    }

    #[test]
    fn linear_buckets_go_under_the_first_bound_at_or_above_their_end() {
        let mut h = Histogram::new(NS_PER_US, 100);
        for ns in [500, 1_500, 1_999, 2_000, 7_000, 150_000] {
            h.add(ns);
        }
        let buckets = Buckets::from_linear(&h);
        // bounds past the linear range (100 µs) would be guesses: only +Inf follows
        let expected = [
            (1e-6, 1),
            (2e-6, 2),
            (5e-6, 1),
            (1e-5, 1),
            (2e-5, 0),
            (5e-5, 0),
            (1e-4, 0),
            (f64::INFINITY, 1),
        ];
        assert_eq!(buckets.buckets, expected);
        assert_eq!(buckets.count, 6);
        assert!((buckets.sum_seconds - 162_999e-9).abs() < 1e-12);
        // bounds that fall inside a linear bucket are left out
        let coarse = Buckets::from_linear(&Histogram::new(3 * NS_PER_US, 10_000));
        assert_eq!(coarse.buckets, [(f64::INFINITY, 0)]);
    }

    #[test]
    fn noise_families_carry_the_summary_histogram_and_causes() {
        let mut analysis = noise_analysis();
        let text = render(noise_families(&analysis, &HashMap::new()));
        assert_eq!(
            value(&text, "irqlens_noise_runtime_seconds_total{cpu=\"1\"}"),
            1e-3
        );
        assert_eq!(
            value(&text, "irqlens_noise_seconds_total{cpu=\"1\"}"),
            57e-6
        );
        assert_eq!(value(&text, "irqlens_noise_samples_total{cpu=\"1\"}"), 2.0);
        assert_eq!(
            value(&text, "irqlens_noise_hw_samples_total{cpu=\"1\"}"),
            1.0
        );
        assert_eq!(
            value(&text, "irqlens_noise_max_single_seconds{cpu=\"1\"}"),
            50e-6
        );
        assert!(text.contains("# TYPE irqlens_noise_max_single_seconds gauge\n"));
        let bucket =
            |le| format!("irqlens_noise_sample_duration_seconds_bucket{{le=\"{le}\",cpu=\"1\"}}");
        assert_eq!(value(&text, &bucket("0.000005")), 0.0);
        assert_eq!(value(&text, &bucket("0.00001")), 1.0);
        assert_eq!(value(&text, &bucket("0.0001")), 2.0);
        assert_eq!(value(&text, &bucket("+Inf")), 2.0);
        let thread = "{class=\"thread\",cause=\"spinner:42\"}";
        assert_eq!(
            value(&text, &format!("irqlens_noise_cause_seconds_total{thread}")),
            50e-6
        );
        assert_eq!(
            value(
                &text,
                &format!("irqlens_noise_cause_occurrences_total{thread}")
            ),
            1.0
        );
        assert!(text.ends_with("# EOF\n"));

        // the analysis is cumulative: a later snapshot only grows
        noisy_period(&mut analysis, 1, 10);
        let later = render(noise_families(&analysis, &HashMap::new()));
        assert_eq!(
            value(&later, "irqlens_noise_runtime_seconds_total{cpu=\"1\"}"),
            2e-3
        );
        assert_eq!(value(&later, "irqlens_noise_samples_total{cpu=\"1\"}"), 4.0);
    }

    fn bh_sample(vector: u16, latency_ns: u64, irqs: u32) -> BhSample {
        BhSample {
            mechanism: Mechanism::Softirq,
            source: Source::Vector(vector),
            request_cpu: 0,
            cpu: 0,
            request_ns: 0,
            latency_ns,
            runtime_ns: 1_000,
            requester: 7,
            executor: 0,
            woke_watched: false,
            delay: Delay {
                irqs,
                causes: vec![match irqs {
                    0 => DelayCause::Undelayed,
                    _ => DelayCause::Irq { source: 1, id: 236 },
                }],
                ..Delay::default()
            },
        }
    }

    #[test]
    fn bh_families_per_mechanism_source_and_cause() {
        let mut stats = BhStats::new(BhConfig {
            bucket_ns: NS_PER_US,
            entries: 100,
            selection: Selection::All,
            worst: 1,
        });
        const TIMER: u16 = 1;
        const NET_RX: u16 = 3;
        stats.add(bh_sample(TIMER, 3 * NS_PER_US, 0));
        stats.add(bh_sample(TIMER, 4 * NS_PER_US, 0));
        stats.add(bh_sample(NET_RX, 30 * NS_PER_US, 1));
        let text = render(bh_families(&stats, &Names::default()));
        let softirq = "{mechanism=\"softirq\"}";
        assert_eq!(
            value(&text, &format!("irqlens_bh_samples_total{softirq}")),
            3.0
        );
        assert_eq!(
            value(&text, &format!("irqlens_bh_irq_samples_total{softirq}")),
            1.0
        );
        assert_eq!(
            value(&text, &format!("irqlens_bh_latency_max_seconds{softirq}")),
            30e-6
        );
        // the interrupted sample is left out of the latency histograms
        assert_eq!(
            value(&text, &format!("irqlens_bh_latency_seconds_count{softirq}")),
            2.0
        );
        assert_eq!(
            value(
                &text,
                "irqlens_bh_source_latency_seconds_bucket{le=\"0.000005\",mechanism=\"softirq\",source=\"TIMER\"}"
            ),
            2.0
        );
        assert_eq!(
            value(
                &text,
                "irqlens_bh_source_latency_seconds_count{mechanism=\"softirq\",source=\"NET_RX\"}"
            ),
            0.0
        );
        assert_eq!(
            value(
                &text,
                "irqlens_bh_delay_cause_samples_total{mechanism=\"softirq\",cause=\"undelayed\"}"
            ),
            2.0
        );
    }

    #[test]
    fn wakeup_families_per_cpu_and_component() {
        let mut stats = WakeupStats::new(WakeupConfig {
            bucket_ns: NS_PER_US,
            entries: 1_000,
            ..Default::default()
        });
        for (cpu, user_ns) in [(0, 12 * NS_PER_US), (0, 30 * NS_PER_US), (1, 8 * NS_PER_US)] {
            stats.add_total_only(&Report {
                tid: 100 + cpu,
                cpu,
                expected_ns: 0,
                user_ns,
            });
        }
        let text = render(wakeup_families(&stats, &Names::default()));
        assert_eq!(
            value(&text, "irqlens_wakeup_activations_total{cpu=\"0\"}"),
            2.0
        );
        assert_eq!(value(&text, "irqlens_wakeup_samples_total{cpu=\"0\"}"), 0.0);
        let total = "{cpu=\"0\",component=\"total\"}";
        assert_eq!(
            value(
                &text,
                &format!("irqlens_wakeup_latency_seconds_count{total}")
            ),
            2.0
        );
        assert_eq!(
            value(&text, &format!("irqlens_wakeup_latency_seconds_sum{total}")),
            42e-6
        );
        assert_eq!(
            value(
                &text,
                "irqlens_wakeup_latency_seconds_bucket{le=\"0.00001\",cpu=\"1\",component=\"total\"}"
            ),
            1.0
        );
        // no cause without a trace: the family is left out, not written empty
        assert!(!text.contains("irqlens_wakeup_cause"));
    }

    #[test]
    fn series_with_the_same_labels_are_folded() {
        let labels = || vec![("cause", "same".to_owned())];
        let counts = Family::count_total("c", "help", [(labels(), 2), (labels(), 3)]);
        assert_eq!(counts.metrics[&labels()], Value::Count(5));
        let maxima = Family::seconds(
            "m",
            "help",
            MetricType::Gauge,
            [(labels(), 2_000), (labels(), 1_000)],
        );
        assert_eq!(maxima.metrics[&labels()], Value::Float(2e-6));
    }

    fn get(address: SocketAddr, path: &str) -> String {
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    }

    #[test]
    fn serves_the_latest_snapshot_until_dropped() {
        let mut exporter =
            Exporter::start(Some("127.0.0.1:0".parse().unwrap()), Names::default).unwrap();
        let address = exporter.address().unwrap();
        assert_ne!(address.port(), 0);
        exporter.noise(&noise_analysis());

        let response = get(address, "/metrics");
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        assert!(
            response.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")),
            "{response}"
        );
        assert!(
            response.contains("irqlens_noise_samples_total{cpu=\"1\"} 2\n"),
            "{response}"
        );
        assert!(response.ends_with("# EOF\n"));
        assert!(get(address, "/").starts_with("HTTP/1.1 404"));

        drop(exporter);
        // tiny_http's accept thread closes the socket as it wakes up
        let deadline = Instant::now() + Duration::from_secs(2);
        while TcpStream::connect(address).is_ok() {
            assert!(
                Instant::now() < deadline,
                "{address} still accepts after the run"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn without_an_address_nothing_listens() {
        let mut exporter = Exporter::start(None, Names::default).unwrap();
        exporter.noise(&noise_analysis());
        assert_eq!(exporter.address(), None);
    }
}
