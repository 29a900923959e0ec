//! The families of each capability from synthetic analyses, as a scrape encodes them,
//! and the endpoint itself.

use irqlens_model::workload::NamedThread;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use super::*;
use irqlens_analyze::account::{ACCOUNTS, BySource, Seen, Source as AccountSource, ThreadAccount};
use irqlens_analyze::bh::{BhWindow, Delay, DelayCause, Mechanism, Sample as BhSample, Source};
use irqlens_analyze::wakeup::{Cause as WakeupCause, Origin, Sample as WakeupSample};
use irqlens_model::bh::{Selection, StatsConfig as BhConfig};
use irqlens_model::kernel::Comm;
use irqlens_model::noise::{AnalysisConfig, NoiseClass, PeriodReport, Record, Sample};
use irqlens_model::wakeup::{Report, StatsConfig as WakeupConfig};
use irqlens_model::workload::{CgroupId, CgroupNames, WorkloadBy};
use irqlens_test_support::hostile_http::{
    Closed, claimed_body, closed_within, get, get_accepting, idle, large_header, request,
    sent_body, slow_head, status_field, still_open,
};
use irqlens_test_support::python::run_script;
use irqlens_test_support::{alone, promtool};

const NS_PER_US: u64 = 1_000;

/// The OpenMetrics text of `families`, as a scrape that asks for it gets it.
fn render(families: Vec<Family>) -> String {
    render_in(families, Format::OpenMetrics)
}

/// The text of `families` in `format`, as a scrape gets it (a noise run's, just published).
fn render_in(families: Vec<Family>, format: Format) -> String {
    let snapshot = Arc::new(Snapshot::default());
    snapshot.replace("noise", families);
    encode(&registry(snapshot), format)
}

/// Nothing lost on CPU 1.
fn nothing_lost() -> Losses {
    Losses::records(0).per_cpu(BTreeMap::from([(1, 0)]))
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
        cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
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

/// A noisy period on each of `cpus`.
fn noise_analysis_on(cpus: impl IntoIterator<Item = u32> + Clone) -> NoiseAnalysis {
    let config = AnalysisConfig {
        bucket_ns: NS_PER_US,
        entries: 256,
        keep_recent: 3,
    };
    let mut analysis = NoiseAnalysis::new(config, cpus.clone());
    for cpu in cpus {
        noisy_period(&mut analysis, cpu, 0);
    }
    analysis
}

fn noise_analysis() -> NoiseAnalysis {
    noise_analysis_on([1])
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
fn buckets_are_1_2_5_from_1_us_to_10_s_whatever_the_linear_range() {
    // 256 linear buckets of 1 µs end at 256 µs: noise of 0.3 to 18 ms is past them
    let mut h = Histogram::new(NS_PER_US, 256);
    let values_ns = [
        700,            // le 1 µs
        1_000,          // on the bound: le 1 µs
        1_001,          // le 2 µs
        300_000,        // le 500 µs
        2_500_000,      // le 5 ms
        18_000_000,     // le 20 ms
        18_000_000,     // le 20 ms
        10_000_000_000, // le 10 s
        12_000_000_000, // +Inf only
    ];
    for ns in values_ns {
        h.add(ns);
    }
    let buckets = Buckets::of(&h);
    let bounds: Vec<f64> = buckets.buckets.iter().map(|&(bound, _)| bound).collect();
    let expected_bounds = [
        1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2,
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0,
    ];
    assert_eq!(bounds[..22], expected_bounds);
    assert_eq!(bounds[22], f64::INFINITY);
    let count_under = |bound: f64| -> u64 {
        let (_, n) = buckets.buckets.iter().find(|(b, _)| *b == bound).unwrap();
        *n
    };
    for (bound, n) in [
        (1e-6, 2),
        (2e-6, 1),
        (5e-4, 1),
        (5e-3, 1),
        (2e-2, 2),
        (10.0, 1),
    ] {
        assert_eq!(count_under(bound), n, "bucket le {bound}");
    }
    assert_eq!(count_under(f64::INFINITY), 1);
    assert_eq!(buckets.count, values_ns.len() as u64);
    let sum_ns: u64 = values_ns.iter().sum();
    assert!((buckets.sum_seconds - sum_ns as f64 / 1e9).abs() < 1e-9);

    // as a scrape reads them: cumulative, +Inf is the count
    let text = render(vec![Family::seconds_histogram(
        "d",
        "help",
        [(cpu_label(3), &h)],
    )]);
    let bucket = |le: &str| {
        value(
            &text,
            &format!("irqlens_d_seconds_bucket{{le=\"{le}\",cpu=\"3\"}}"),
        )
    };
    assert_eq!(bucket("0.000001"), 2.0);
    assert_eq!(bucket("0.0002"), 3.0);
    assert_eq!(bucket("0.0005"), 4.0);
    assert_eq!(bucket("0.02"), 7.0);
    assert_eq!(bucket("10.0"), 8.0);
    assert_eq!(bucket("+Inf"), 9.0);
    assert_eq!(value(&text, "irqlens_d_seconds_count{cpu=\"3\"}"), 9.0);
    assert!((value(&text, "irqlens_d_seconds_sum{cpu=\"3\"}") - sum_ns as f64 / 1e9).abs() < 1e-9);
}

fn cpu_label(cpu: u32) -> Labels {
    vec![("cpu", cpu.to_string())]
}

#[test]
fn noise_families_carry_the_summary_histogram_and_causes() {
    let mut analysis = noise_analysis();
    let text = render(noise_families(
        &analysis,
        &HashMap::new(),
        &CgroupNames::default(),
        WorkloadBy::Pod,
    ));
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
    let thread = "{cpu=\"1\",class=\"thread\",source=\"spinner\"}";
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
    let later = render(noise_families(
        &analysis,
        &HashMap::new(),
        &CgroupNames::default(),
        WorkloadBy::Pod,
    ));
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
        woke: Default::default(),
        delay: Delay {
            window: BhWindow {
                irqs,
                ..BhWindow::default()
            },
            raised_in_ns: 0,
            causes: vec![match irqs {
                0 => DelayCause::Undelayed,
                _ => DelayCause::Irq { source: 1, id: 236 },
            }],
        },
    }
}

/// Two TIMER softirqs of 3 and 4 µs, a NET_RX one of 30 µs an interrupt landed in.
fn bh_stats() -> BhStats {
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
    stats
}

#[test]
fn bh_families_per_class_source_and_cause() {
    let text = render(bh_families(&bh_stats(), &Names::default()));
    let softirq = "{class=\"softirq\"}";
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
            "irqlens_bh_source_latency_seconds_bucket{le=\"0.000005\",class=\"softirq\",source=\"TIMER\"}"
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            "irqlens_bh_source_latency_seconds_count{class=\"softirq\",source=\"NET_RX\"}"
        ),
        0.0
    );
    assert_eq!(
        value(
            &text,
            "irqlens_bh_delay_cause_samples_total{class=\"softirq\",cause=\"undelayed\"}"
        ),
        2.0
    );
}

/// Untraced activations: 12 and 30 µs on CPU 0, 8 µs on CPU 1.
fn untraced_wakeups() -> WakeupStats {
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
    stats
}

#[test]
fn wakeup_families_per_cpu_and_component() {
    let text = render(wakeup_families(&untraced_wakeups(), &Names::default()));
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

/// A traced wakeup on `cpu` of `tid`: 3 µs of IRQ line 11, 5 µs of a kworker first.
fn traced_wakeup(tid: u32, cpu: u32) -> WakeupSample {
    let irq = (0, 11);
    WakeupSample {
        tid,
        comm: Comm::new("app"),
        cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        cpu,
        waker_cpu: cpu,
        origin: Origin::Irq {
            source: irq.0,
            id: irq.1,
        },
        origin_ns: 0,
        timer: None,
        wakeup_ns: 3 * NS_PER_US,
        switch_in_ns: 8 * NS_PER_US,
        user_ns: None,
        interposed: Vec::new(),
        switches: 1,
        causes: vec![
            (
                WakeupCause::Thread(NamedThread::named("kworker/0:1")),
                5 * NS_PER_US,
            ),
            (
                WakeupCause::Origin {
                    source: irq.0,
                    id: irq.1,
                },
                3 * NS_PER_US,
            ),
        ],
    }
}

fn traced_wakeups() -> WakeupStats {
    let mut stats = untraced_wakeups();
    // two threads of the same name on CPU 1: one series, no pid
    stats.add(traced_wakeup(200, 1));
    stats.add(traced_wakeup(201, 1));
    stats.add(traced_wakeup(300, 2));
    stats
}

/// Passive noise on CPUs 0 and 1: virtio0's line twice and NET_RX on CPU 0, an NMI on 1.
fn passive_noise() -> PassiveNoise {
    use irqlens_test_support::stream::interference as record;
    let mut noise = PassiveNoise::new([0, 1]);
    noise.add_records([
        record(0, NoiseClass::Irq, 11, 3 * NS_PER_US),
        record(0, NoiseClass::Irq, 11, 5 * NS_PER_US),
        record(0, NoiseClass::Softirq, 3, 7 * NS_PER_US),
        record(1, NoiseClass::Nmi, 0, NS_PER_US),
    ]);
    noise
}

#[test]
fn passive_noise_is_counted_per_cpu_and_cause_by_name() {
    let text = render(noise_passive_families(&passive_noise(), &irq_names()));
    let seconds = |labels: &str| {
        value(
            &text,
            &format!("irqlens_noise_passive_interference_seconds_total{{{labels}}}"),
        )
    };
    let count = |labels: &str| {
        value(
            &text,
            &format!("irqlens_noise_passive_interferences_total{{{labels}}}"),
        )
    };
    let line = r#"cpu="0",class="irq",source="virtio0-input.0""#;
    assert_eq!(seconds(line), 8e-6);
    assert_eq!(count(line), 2.0);
    assert_eq!(seconds(r#"cpu="0",class="softirq",source="NET_RX""#), 7e-6);
    assert_eq!(count(r#"cpu="1",class="nmi""#), 1.0);
}

fn irq_names() -> HashMap<u32, String> {
    HashMap::from([(11, "virtio0-input.0".to_owned())])
}

#[test]
fn wakeup_causes_are_per_cpu_by_kind_and_source() {
    let names = Names {
        irqs: irq_names(),
        ..Names::default()
    };
    let text = render(wakeup_families(&traced_wakeups(), &names));
    let cause = |cpu: u32, labels: &str| {
        value(
            &text,
            &format!("irqlens_wakeup_cause_seconds_total{{cpu=\"{cpu}\",{labels}}}"),
        )
    };
    let kworker = "cause=\"thread_first\",source=\"kworker/0:1\"";
    let line = "cause=\"origin\",source=\"virtio0-input.0\"";
    assert_eq!(cause(1, kworker), 10e-6);
    assert_eq!(cause(1, line), 6e-6);
    assert_eq!(cause(2, kworker), 5e-6);
    assert_eq!(
        value(
            &text,
            &format!("irqlens_wakeup_cause_samples_total{{cpu=\"1\",{kworker}}}")
        ),
        2.0
    );
    // untraced activations have no cause
    assert!(!text.contains("irqlens_wakeup_cause_seconds_total{cpu=\"0\""));
}

const SPINNER: u32 = 100;
const IRQLENS: u32 = 200;

fn charged(entries: &[(AccountSource, u64)]) -> BySource {
    entries.iter().copied().collect()
}

/// Two spinner threads charged IRQ 11 and NET_RX time, one of them served NET_RX; the
/// idle task charged the local timer; an orphan NMI; irqlens's own NET_RX work.
fn ledger() -> Ledger {
    let line = AccountSource::Hardirq { source: 0, id: 11 };
    let timer = AccountSource::Hardirq { source: 1, id: 236 };
    let net_rx = AccountSource::Softirq { vector: 3 };
    let mut ledger = Ledger {
        irqlens: Some(IRQLENS),
        orphan: charged(&[(AccountSource::Nmi, 500)]),
        ..Ledger::default()
    };
    let accounts = [
        (
            SPINNER,
            "spinner",
            charged(&[(line, 3_000), (net_rx, 2_000)]),
            charged(&[(net_rx, 5_000)]),
            4,
        ),
        (
            SPINNER + 1,
            "spinner",
            charged(&[(line, 1_000)]),
            BySource::new(),
            0,
        ),
        (
            0,
            "swapper/1",
            charged(&[(timer, 7_000)]),
            BySource::new(),
            0,
        ),
        (
            IRQLENS,
            "irqlens",
            charged(&[(net_rx, 900)]),
            BySource::new(),
            0,
        ),
    ];
    for (tid, comm, charged, served, units) in accounts {
        let tgid = if tid == SPINNER + 1 { SPINNER } else { tid };
        // the spinner's threads in cgroup 7 (named by `spinner_in_a_pod` only)
        let cgroup = if tgid == SPINNER {
            CgroupId(7)
        } else {
            CgroupId::UNKNOWN
        };
        let comm = Comm::new(comm);
        ledger.seen.insert(tid, Seen { tgid, comm, cgroup });
        let account = ThreadAccount {
            charged,
            served,
            units,
            ..ThreadAccount::default()
        };
        ledger.threads.insert(tid, account);
    }
    ledger
}

#[test]
fn account_families_by_class_source_and_comm() {
    let text = render(account_families(
        &ledger(),
        &irq_names(),
        &CgroupNames::default(),
        WorkloadBy::Pod,
    ));
    let seconds = |series: &str| value(&text, &format!("irqlens_account_{series}"));
    // no cgroup named: the unknown workload
    let spinner =
        |class: &str| format!("{{comm=\"spinner\",workload=\"[unknown]\",class=\"{class}\"}}");
    // the two spinner threads are one series
    assert_eq!(
        seconds(&format!("charged_seconds_total{}", spinner("irq"))),
        4e-6
    );
    assert_eq!(
        seconds(&format!("charged_seconds_total{}", spinner("softirq"))),
        2e-6
    );
    assert_eq!(
        seconds(&format!("served_seconds_total{}", spinner("softirq"))),
        5e-6
    );
    assert_eq!(seconds("served_units_total{comm=\"spinner\"}"), 4.0);
    // every interrupt, whoever was current
    let interrupt = |class: &str, source: &str| {
        seconds(&format!(
            "interrupt_seconds_total{{class=\"{class}\",source=\"{source}\"}}"
        ))
    };
    assert_eq!(interrupt("irq", "virtio0-input.0"), 4e-6);
    assert_eq!(interrupt("irq", "local_timer"), 7e-6);
    assert_eq!(interrupt("softirq", "NET_RX"), 2.9e-6);
    assert_eq!(seconds("idle_seconds_total{class=\"irq\"}"), 7e-6);
    assert_eq!(seconds("orphan_seconds_total{class=\"nmi\"}"), 5e-7);
    assert_eq!(seconds("irqlens_seconds_total{class=\"softirq\"}"), 9e-7);
    // neither the idle task nor irqlens is a comm that was charged
    assert!(!text.contains("comm=\"swapper/1\""));
    assert!(!text.contains("comm=\"irqlens\""));
}

/// `ledger()`'s spinner in a pod's container; the rest unknown.
fn spinner_in_a_pod() -> CgroupNames {
    let mut names = CgroupNames::default();
    let path = format!(
        "/kubepods.slice/kubepods-pod{}.slice/cri-containerd-{}.scope",
        "0d9b3e51_7c1a_4e7e_9c2f_5a8b6d4e3f21",
        "ab".repeat(32)
    );
    names.insert(CgroupId(7), path);
    names
}

#[test]
fn account_folded_accounts_are_one_comm_and_keep_the_totals() {
    let folded = crate::account::with_folded(ledger(), ACCOUNTS as u32);
    let names = Names::default();
    let text = render(account_families(
        &folded,
        &names.irqs,
        &CgroupNames::default(),
        WorkloadBy::Cgroup,
    ));
    let series = |family: &str| -> f64 {
        text.lines()
            .filter(|line| line.starts_with(&format!("{family}{{")))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    assert!(
        text.contains(
            "irqlens_account_charged_seconds_total{comm=\"[folded]\",workload=\"[unknown]\""
        ),
        "{text}"
    );
    let charged = series("irqlens_account_charged_seconds_total")
        + series("irqlens_account_idle_seconds_total")
        + series("irqlens_account_irqlens_seconds_total");
    let all = series("irqlens_account_interrupt_seconds_total");
    assert!((charged - all).abs() < 1e-9, "{charged} {all}");
}

#[test]
fn account_workloads_past_the_largest_are_other() {
    let mut ledger = Ledger::default();
    let mut names = CgroupNames::default();
    let workloads = MOST_WORKLOADS as u32 + 2;
    // thread i in cgroup /w<i>, charged i µs of NET_RX: the two smallest are other
    for tid in 1..=workloads {
        let cgroup = CgroupId(tid.into());
        names.insert(cgroup, format!("/w{tid}"));
        let comm = Comm::new("worker");
        ledger.seen.insert(
            tid,
            Seen {
                tgid: tid,
                comm,
                cgroup,
            },
        );
        let charged =
            BySource::from([(AccountSource::Softirq { vector: 3 }, u64::from(tid) * 1_000)]);
        let account = ThreadAccount {
            charged,
            ..ThreadAccount::default()
        };
        ledger.threads.insert(tid, account);
    }
    let text = render(account_families(
        &ledger,
        &irq_names(),
        &names,
        WorkloadBy::Cgroup,
    ));
    let charged = |workload: &str| {
        value(
            &text,
            &format!(
                "irqlens_account_charged_seconds_total{{comm=\"worker\",workload=\"{workload}\",class=\"softirq\"}}"
            ),
        )
    };
    assert_eq!(charged("other"), 3e-6, "/w1 and /w2 folded");
    assert_eq!(
        charged(&format!("/w{workloads}")),
        f64::from(workloads) * 1e-6
    );
    let labels: HashSet<&str> = text
        .lines()
        .filter(|line| line.starts_with("irqlens_account_charged_seconds_total{"))
        .filter_map(|line| line.split("workload=\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(labels.len(), MOST_WORKLOADS + 1, "{labels:?}");
    assert!(!labels.contains("/w1") && !labels.contains("/w2"));
}

/// Every family of every capability, with series in them, and the build info.
fn every_family() -> Vec<(&'static str, Vec<Family>)> {
    let names = Names {
        irqs: irq_names(),
        ..Names::default()
    };
    let mut capabilities = [
        (
            "noise",
            noise_families(
                &noise_analysis(),
                &names.irqs,
                &names.cgroups,
                WorkloadBy::Pod,
            ),
        ),
        (
            "noise_passive",
            noise_passive_families(&passive_noise(), &names.irqs),
        ),
        ("bh", bh_families(&bh_stats(), &names)),
        ("wakeup", wakeup_families(&traced_wakeups(), &names)),
        (
            "account",
            account_families(&ledger(), &names.irqs, &spinner_in_a_pod(), WorkloadBy::Pod),
        ),
    ];
    for (capability, families) in &mut capabilities {
        families.push(build_info(capability));
        let lost = Losses::checkpoints(3).per_cpu(BTreeMap::from([(0, 0), (1, 3)]));
        families.push(lost_events(capability, &lost));
    }
    capabilities.into()
}

/// The label names of a sample line, `le` included.
fn label_names(line: &str) -> Vec<&str> {
    let Some((_, rest)) = line.split_once('{') else {
        return Vec::new();
    };
    let (labels, _) = rest.rsplit_once('}').unwrap();
    labels
        .split("\",")
        .filter_map(|pair| pair.split_once('=').map(|(name, _)| name))
        .collect()
}

#[test]
fn no_label_is_a_pid_and_no_series_has_empty_braces() {
    for (capability, families) in every_family() {
        let text = render(families);
        let samples = text.lines().filter(|line| !line.starts_with('#'));
        for line in samples {
            assert!(!line.contains("{}"), "{capability}: {line}");
            for name in label_names(line) {
                assert!(
                    [
                        "cpu",
                        "class",
                        "source",
                        "cause",
                        "component",
                        "comm",
                        // bounded: MOST_WORKLOADS, the rest folded into other
                        "workload",
                        "le",
                        "version",
                        "capability"
                    ]
                    .contains(&name),
                    "{capability}: label {name} in {line}"
                );
            }
        }
        // the unlabeled series are there, written by name alone
        let unlabeled = match capability {
            "bh" => "irqlens_bh_others_total 0\n",
            _ => "irqlens_build_info{",
        };
        assert!(text.contains(unlabeled), "{capability}:\n{text}");
    }
}

const PARSE: &str = r#"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        print(sample.name)
"#;

/// The sample names of `text` as the reference OpenMetrics parser reads it (Python's
/// prometheus_client, which scripts/setup installs): it rejects what is not OpenMetrics.
fn reference_parse(text: &str) -> Vec<String> {
    let stdout = run_script(PARSE, &[], text.as_bytes())
        .unwrap_or_else(|stderr| panic!("the OpenMetrics parser rejects:\n{text}\n{stderr}"));
    String::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_reference_parser_reads_every_family_under_the_names_listed() {
    let listed = metric_names();
    for (capability, families) in every_family() {
        let parsed = reference_parse(&render(families));
        assert!(!parsed.is_empty());
        for name in parsed {
            assert!(
                listed[capability].contains(&name),
                "{capability} serves {name}, not in metric_names: {:?}",
                listed[capability]
            );
        }
    }
}

/// What Prometheus 3 asks for by default: OpenMetrics first, the classic format last.
const PROMETHEUS_ACCEPT: &str = "application/openmetrics-text;version=1.0.0;escaping=allow-utf-8;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=1.0.0;escaping=allow-utf-8;q=0.3,text/plain;version=0.0.4;q=0.2,*/*;q=0.1";

const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0";

#[test]
fn the_accept_header_picks_the_format() {
    for (accept, expected) in [
        (Some(PROMETHEUS_ACCEPT), Format::OpenMetrics),
        (Some(OPENMETRICS), Format::OpenMetrics),
        (Some("Application/OpenMetrics-Text"), Format::OpenMetrics),
        (Some("text/plain;version=0.0.4"), Format::Classic),
        (
            Some("text/plain; version=0.0.4; q=0.9, application/openmetrics-text; q=0.5"),
            Format::Classic,
        ),
        // the highest q wins, wherever it is listed; the first on a tie
        (
            Some("text/plain;q=0.2, application/openmetrics-text;q=0.8"),
            Format::OpenMetrics,
        ),
        (
            Some("text/plain, application/openmetrics-text"),
            Format::Classic,
        ),
        (
            Some("application/openmetrics-text, text/plain"),
            Format::OpenMetrics,
        ),
        // refused, unreadable or unknown: what curl and a browser get
        (Some("application/openmetrics-text;q=0"), Format::Classic),
        (Some("application/openmetrics-text;q=x"), Format::Classic),
        (Some("*/*"), Format::Classic),
        (Some("application/json"), Format::Classic),
        (Some(""), Format::Classic),
        (None, Format::Classic),
    ] {
        assert_eq!(Format::negotiate(accept), expected, "Accept: {accept:?}");
    }
}

/// The samples of `text` as Python's prometheus_client reads it in `format`, each as
/// `name{labels} value` with the labels sorted (one line each).
fn reference_samples(text: &str, format: Format) -> Vec<String> {
    let parser = match format {
        Format::OpenMetrics => "prometheus_client.openmetrics.parser",
        Format::Classic => "prometheus_client.parser",
    };
    let script = format!(
        r#"
import sys
from {parser} import text_string_to_metric_families
for family in text_string_to_metric_families(sys.stdin.read()):
    for s in family.samples:
        labels = ",".join(f"{{k}}={{v}}" for k, v in sorted(s.labels.items()))
        print(f"{{s.name}}{{{{{{labels}}}}}} {{float(s.value)!r}}")
"#
    );
    let stdout = run_script(&script, &[], text.as_bytes())
        .unwrap_or_else(|stderr| panic!("{parser} rejects:\n{text}\n{stderr}"));
    let mut samples: Vec<String> = String::from_utf8(stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    samples.sort();
    samples
}

#[test]
fn the_classic_format_is_promtool_clean_and_holds_the_same_samples() {
    for (capability, families) in every_family() {
        let classic = render_in(families.clone(), Format::Classic);
        let openmetrics = render(families);
        if let Err(problems) = promtool::check_metrics(&classic) {
            panic!("{capability}: {problems}\n{classic}");
        }
        // every counter has its HELP and TYPE under the name of its samples
        for line in classic.lines().filter(|l| l.starts_with("# TYPE ")) {
            if let Some(name) = line
                .strip_prefix("# TYPE ")
                .unwrap()
                .strip_suffix(" counter")
            {
                assert!(name.ends_with("_total"), "{capability}: {line}");
                assert!(
                    classic.contains(&format!("# HELP {name} ")),
                    "{capability}: {name}"
                );
            }
        }
        assert!(!classic.contains("# EOF") && !classic.contains("# UNIT"));
        assert_eq!(
            reference_samples(&classic, Format::Classic),
            reference_samples(&openmetrics, Format::OpenMetrics),
            "{capability}"
        );
    }
}

#[test]
fn openmetrics_read_as_the_classic_format_is_what_promtool_refuses() {
    // the exposition every scrape got before: counters' samples have no HELP
    let openmetrics = render(noise_families(
        &noise_analysis(),
        &HashMap::new(),
        &CgroupNames::default(),
        WorkloadBy::Pod,
    ));
    let problems = promtool::check_metrics(&openmetrics).unwrap_err();
    assert!(problems.contains("no help text"), "{problems}");
}

#[test]
fn a_scrape_gets_the_format_it_asks_for() {
    let mut exporter =
        Exporter::start(Some("127.0.0.1:0".parse().unwrap()), Names::default).unwrap();
    let address = exporter.address().unwrap();
    exporter.noise(
        &noise_analysis(),
        &nothing_lost(),
        CgroupNames::default,
        WorkloadBy::Pod,
    );
    let body_of = |response: &str| {
        let (head, body) = response.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert!(head.contains("\r\nVary: Accept"), "{head}");
        body.to_owned()
    };
    for (accept, format) in [
        (Some(PROMETHEUS_ACCEPT), Format::OpenMetrics),
        (Some("text/plain;version=0.0.4"), Format::Classic),
        (None, Format::Classic),
    ] {
        let response = match accept {
            Some(accept) => get_accepting(address, "/metrics", accept),
            None => get(address, "/metrics"),
        };
        let content_type = format!("Content-Type: {}\r\n", format.content_type());
        assert!(response.contains(&content_type), "{accept:?}: {response}");
        let body = body_of(&response);
        assert_eq!(body.ends_with("# EOF\n"), format == Format::OpenMetrics);
        assert!(body.contains("irqlens_noise_samples_total{cpu=\"1\"} 2\n"));
        if format == Format::Classic {
            promtool::check_metrics(&body).unwrap();
        }
    }
}

#[test]
fn losses_are_counted_per_capability_and_cpu() {
    let per_cpu = Losses::checkpoints(5).per_cpu(BTreeMap::from([(0, 0), (3, 5)]));
    let text = render(vec![lost_events("bh", &per_cpu)]);
    let lost = |labels: &str| value(&text, &format!("irqlens_lost_events_total{{{labels}}}"));
    // a CPU that lost nothing has its series from the start, for rate() and alerts
    assert_eq!(lost("capability=\"bh\",cpu=\"0\""), 0.0);
    assert_eq!(lost("capability=\"bh\",cpu=\"3\""), 5.0);
    assert!(text.contains("# TYPE irqlens_lost_events counter\n"));
    // a probe that does not count them per CPU: one series
    let text = render(vec![lost_events("noise", &Losses::records(7))]);
    assert_eq!(
        value(&text, "irqlens_lost_events_total{capability=\"noise\"}"),
        7.0
    );
}

#[test]
fn the_probes_are_up_while_the_run_publishes() {
    let mut exporter =
        Exporter::start(Some("127.0.0.1:0".parse().unwrap()), Names::default).unwrap();
    let address = exporter.address().unwrap();
    let lost = Losses::records(2).per_cpu(BTreeMap::from([(1, 2)]));
    exporter.noise(
        &noise_analysis(),
        &lost,
        CgroupNames::default,
        WorkloadBy::Pod,
    );
    let scrape = || get_accepting(address, "/metrics", OPENMETRICS);
    let up = "irqlens_probe_up{capability=\"noise\"}";
    let now = scrape();
    assert_eq!(value(&now, up), 1.0, "{now}");
    let stale_after = format!("not been drained for {} s\n", PROBE_STALE_AFTER.as_secs());
    assert!(
        now.contains(&stale_after),
        "the help says another time:\n{now}"
    );
    assert_eq!(
        value(
            &now,
            "irqlens_lost_events_total{capability=\"noise\",cpu=\"1\"}"
        ),
        2.0
    );

    // a snapshot older than PROBE_STALE_AFTER: the collector no longer drains the probes
    let snapshot = &exporter.endpoint.as_ref().unwrap().snapshot;
    let stale = Instant::now().checked_sub(PROBE_STALE_AFTER * 2).unwrap();
    snapshot.replace_published(Published {
        capability: "noise",
        families: noise_families(
            &noise_analysis(),
            &HashMap::new(),
            &CgroupNames::default(),
            WorkloadBy::Pod,
        ),
        at: stale,
        probed: true,
    });
    let later = scrape();
    assert_eq!(value(&later, up), 0.0, "{later}");
    // the run's figures are still served: only its health changed
    assert_eq!(value(&later, "irqlens_noise_samples_total{cpu=\"1\"}"), 2.0);
}

/// The agent's endpoint: several capabilities publish through shared handles; a family
/// several serve is described once with each one's series, and a capability removed
/// leaves the scrapes.
#[test]
fn runs_sharing_an_endpoint_are_served_together_and_one_can_leave() {
    let snapshot_of = |exporter: &Exporter| {
        let snapshot = Arc::clone(&exporter.endpoint.as_ref().unwrap().snapshot);
        move || encode(&registry(Arc::clone(&snapshot)), Format::Classic)
    };
    let mut agent =
        Exporter::listen("listen", "127.0.0.1:0".parse().unwrap(), Names::default).unwrap();
    let scrape = snapshot_of(&agent);
    let (mut bh, mut noise) = (agent.share(), agent.share());
    assert_eq!(bh.address(), agent.address());
    bh.bh(&bh_stats(), &nothing_lost());
    noise.noise(
        &noise_analysis(),
        &nothing_lost(),
        CgroupNames::default,
        WorkloadBy::Pod,
    );
    let health = AgentHealth {
        cpu_ns: 1_500_000_000,
        resident_bytes: 4096,
        capabilities: vec![CapabilityHealth {
            name: "bh",
            up: true,
            failures: 2,
        }],
        config_reloads: 3,
    };
    agent.agent(&health);
    let text = scrape();
    promtool::check_metrics(&text).unwrap_or_else(|problems| panic!("{problems}\n{text}"));
    for (line, count) in [
        ("# TYPE irqlens_lost_events_total counter", 1),
        ("# TYPE irqlens_build_info gauge", 1),
        ("# TYPE irqlens_probe_up gauge", 1),
        (
            "irqlens_lost_events_total{capability=\"bh\",cpu=\"1\"} 0",
            1,
        ),
        (
            "irqlens_lost_events_total{capability=\"noise\",cpu=\"1\"} 0",
            1,
        ),
        ("irqlens_probe_up{capability=\"bh\"} 1", 1),
        ("irqlens_probe_up{capability=\"noise\"} 1", 1),
        // the agent's own figures come from no probe
        ("irqlens_probe_up{capability=\"agent\"}", 0),
        ("irqlens_build_info{version=", 3),
        ("irqlens_agent_cpu_seconds_total 1.5", 1),
        ("irqlens_agent_resident_bytes 4096", 1),
        ("irqlens_agent_capability_up{capability=\"bh\"} 1", 1),
        (
            "irqlens_agent_capability_failures_total{capability=\"bh\"} 2",
            1,
        ),
        ("irqlens_agent_config_reloads_total 3", 1),
    ] {
        assert_eq!(text.matches(line).count(), count, "{line}:\n{text}");
    }
    assert!(
        text.contains("irqlens_bh_samples_total") && text.contains("irqlens_noise_samples_total")
    );
    bh.remove("bh");
    let without = scrape();
    assert!(!without.contains("capability=\"bh\",cpu"), "{without}");
    assert!(!without.contains("irqlens_bh_"), "{without}");
    assert!(without.contains("irqlens_noise_samples_total"), "{without}");
    // every family the agent serves is listed, for the dashboard's queries
    let listed = &metric_names()["agent"];
    for name in reference_parse(&render(agent_families(&health))) {
        assert!(listed.contains(&name), "{name} not in {listed:?}");
    }
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

#[test]
fn serves_the_latest_snapshot_until_dropped() {
    let mut exporter =
        Exporter::start(Some("127.0.0.1:0".parse().unwrap()), Names::default).unwrap();
    let address = exporter.address().unwrap();
    assert_ne!(address.port(), 0);
    exporter.noise(
        &noise_analysis(),
        &nothing_lost(),
        CgroupNames::default,
        WorkloadBy::Pod,
    );

    let response = get_accepting(address, "/metrics", OPENMETRICS);
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(
        response.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")),
        "{response}"
    );
    assert!(
        response.contains("irqlens_noise_samples_total{cpu=\"1\"} 2\n"),
        "{response}"
    );
    let build = format!(
        "irqlens_build_info{{version=\"{}\",capability=\"noise\"}} 1\n",
        irqlens_model::run::VERSION
    );
    assert!(response.contains(&build), "{response}");
    assert!(response.ends_with("# EOF\n"));
    assert!(get(address, "/").starts_with("HTTP/1.1 404"));
    let refused = request(address, "POST", "/metrics").unwrap();
    assert!(refused.starts_with("HTTP/1.1 405"), "{refused}");
    assert!(refused.contains("\r\nAllow: GET\r\n"), "{refused}");

    // the server's thread is joined: nothing listens any more
    drop(exporter);
    assert!(
        TcpStream::connect(address).is_err(),
        "{address} still accepts after the run"
    );
}

#[test]
fn a_large_scrape_is_sent_whole_with_its_length() {
    let mut exporter =
        Exporter::start(Some("127.0.0.1:0".parse().unwrap()), Names::default).unwrap();
    let address = exporter.address().unwrap();
    // larger than the connection's buffer (MAX_HEAD_BYTES)
    exporter.noise(
        &noise_analysis_on(0..64),
        &nothing_lost(),
        CgroupNames::default,
        WorkloadBy::Pod,
    );
    let response = get_accepting(address, "/metrics", OPENMETRICS);
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(body.len() > 2 * MAX_HEAD_BYTES, "{} bytes", body.len());
    assert!(!head.contains("chunked"), "{head}");
    let length = format!("Content-Length: {}", body.len());
    assert!(head.split("\r\n").any(|line| line == length), "{head}");
    assert!(body.ends_with("# EOF\n"));
}

#[test]
fn without_an_address_nothing_listens() {
    let mut exporter = Exporter::start(None, Names::default).unwrap();
    exporter.noise(
        &noise_analysis(),
        &nothing_lost(),
        CgroupNames::default,
        WorkloadBy::Pod,
    );
    assert_eq!(exporter.address(), None);
}

/// An endpoint on a port of loopback, serving a noise snapshot of `cpus` CPUs.
fn serving(limits: Limits, cpus: u32) -> Exporter {
    let address = Some("127.0.0.1:0".parse().unwrap());
    let mut exporter = Exporter::with_limits(address, Names::default, limits).unwrap();
    exporter.noise(
        &noise_analysis_on(0..cpus),
        &nothing_lost(),
        CgroupNames::default,
        WorkloadBy::Pod,
    );
    exporter
}

/// A whole scrape of `address`: how long it took.
fn timed_scrape(address: SocketAddr) -> Duration {
    let started = Instant::now();
    let response = get_accepting(address, "/metrics", OPENMETRICS);
    let elapsed = started.elapsed();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with("# EOF\n"), "{response}");
    elapsed
}

/// Raises the soft limit on open files to `needed` (within the hard limit), for a test
/// that holds many connections, both ends of each in this process.
fn allow_open_files(needed: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `limit` is a live rlimit for getrlimit to fill and setrlimit to read.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        if limit.rlim_cur < needed {
            limit.rlim_cur = needed.min(limit.rlim_max);
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
        }
    }
}

const IDLE_CONNECTIONS: usize = 500;

/// What the attack may add to the process's resident memory (the old server's took more
/// than a GiB of it).
const RSS_GROWTH_BOUND_KIB: u64 = 64 * 1024;

#[test]
fn hostile_clients_neither_stop_a_scrape_nor_grow_the_process() {
    // VmRSS is the whole process's: measured where no other test allocates meanwhile
    if !alone::is_alone() {
        return alone::rerun_alone(
            "prometheus::tests::hostile_clients_neither_stop_a_scrape_nor_grow_the_process",
        );
    }
    allow_open_files(4 * IDLE_CONNECTIONS as u64);
    let limits = Limits {
        connections: MAX_CONNECTIONS,
        head_bytes: MAX_HEAD_BYTES,
        // long enough for the attack to be set up on a loaded machine, in a debug build
        header_timeout: Duration::from_secs(4),
        connection_deadline: Duration::from_secs(6),
    };
    let exporter = serving(limits, 4);
    let address = exporter.address().unwrap();
    let baseline = (0..10).map(|_| timed_scrape(address)).max().unwrap();
    let rss_before_kib = status_field("self", "VmRSS");

    let attack = Instant::now();
    let mut claimed = claimed_body(address, 1_000_000_000_000_000);
    let body = sent_body(address, 4 << 20);
    let mut slow = slow_head(address, Duration::from_millis(100), 1_000);
    let mut large = large_header(address, 1 << 20);
    let mut idle = idle(address, IDLE_CONNECTIONS);
    // each answered; the fastest at about the usual speed (one may wait for the CPU)
    let during = (0..3).map(|_| timed_scrape(address)).min().unwrap();
    let rss_during_kib = status_field("self", "VmRSS");
    // the slow and idle clients were all there for the scrape
    assert!(still_open(&slow), "the slow head closed before the scrape");
    assert!(
        idle.iter().all(still_open),
        "idle connections closed before the scrape"
    );
    assert!(
        during <= baseline * 100,
        "a scrape took {during:?} under attack, {baseline:?} at most before"
    );
    eprintln!(
        "scrape {baseline:?} at most before the attack, {during:?} during it; VmRSS {rss_before_kib} KiB before, {rss_during_kib} KiB during"
    );
    let grown_kib = rss_during_kib.saturating_sub(rss_before_kib);
    assert!(
        grown_kib < RSS_GROWTH_BOUND_KIB,
        "VmRSS grew by {grown_kib} KiB under attack (from {rss_before_kib} KiB)"
    );

    // answered, or refused for its head, then closed, long before any timeout
    let promptly = |stream: &mut TcpStream| {
        closed_within(
            stream,
            limits.header_timeout.saturating_sub(attack.elapsed()),
        )
    };
    assert_eq!(promptly(&mut claimed), Some(Closed::Eof), "claimed body");
    assert!(promptly(&mut body.join().unwrap()).is_some(), "sent body");
    assert!(promptly(&mut large).is_some(), "large header");
    // the slow head by the header timeout, before the connection's deadline
    let slow_closed = closed_within(&mut slow, limits.connection_deadline);
    assert!(slow_closed.is_some(), "the slow head still open");
    assert!(
        attack.elapsed() < limits.connection_deadline,
        "the slow head closed after {:?}",
        attack.elapsed()
    );
    // the idle ones, each by the server (an end of file), by the deadline
    let until_deadline = limits.connection_deadline * 2;
    for (n, stream) in idle.iter_mut().enumerate() {
        let closed = closed_within(stream, until_deadline.saturating_sub(attack.elapsed()));
        assert_eq!(closed, Some(Closed::Eof), "idle connection {n}");
    }
    timed_scrape(address);
}

#[test]
fn a_kept_alive_connection_ends_at_the_deadline() {
    let limits = Limits {
        header_timeout: Duration::from_secs(1),
        connection_deadline: Duration::from_secs(2),
        ..Limits::default()
    };
    let exporter = serving(limits, 1);
    let address = exporter.address().unwrap();
    let mut stream = idle(address, 1).pop().unwrap();
    let started = Instant::now();
    let mut answers = 0;
    // a request every half header timeout, each answered: only the deadline ends it
    let closed = loop {
        if stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
            .is_err()
        {
            break true;
        }
        let mut head = [0; 12];
        match stream.read_exact(&mut head) {
            Ok(()) if head.starts_with(b"HTTP/1.1 200") => answers += 1,
            _ => break true,
        }
        let length = content_length(&mut stream);
        std::io::copy(&mut (&mut stream).take(length), &mut std::io::sink()).unwrap();
        if started.elapsed() > limits.connection_deadline * 3 {
            break false;
        }
        std::thread::sleep(limits.header_timeout / 2);
    };
    assert!(closed, "the connection lived {:?}", started.elapsed());
    assert!(answers >= 2, "{answers} answers");
    assert!(
        started.elapsed() < limits.connection_deadline + limits.header_timeout,
        "closed after {:?}",
        started.elapsed()
    );
}

/// Reads the rest of a response's head: its Content-Length.
fn content_length(stream: &mut TcpStream) -> u64 {
    let mut head = Vec::new();
    let mut byte = [0];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    String::from_utf8(head)
        .unwrap()
        .lines()
        .find_map(|line| line.strip_prefix("Content-Length: "))
        .expect("a Content-Length")
        .parse()
        .unwrap()
}

#[test]
fn past_the_connection_limit_a_connection_is_closed_at_once() {
    let long = Duration::from_secs(60);
    let limits = Limits {
        connections: 3,
        header_timeout: long,
        connection_deadline: long,
        ..Limits::default()
    };
    let exporter = serving(limits, 1);
    let address = exporter.address().unwrap();
    let mut held = idle(address, 3);
    let mut refused = idle(address, 1);
    assert_eq!(
        closed_within(&mut refused[0], Duration::from_secs(5)),
        Some(Closed::Eof)
    );
    // a place is free again once the server sees a client go
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    while !request(address, "GET", "/metrics").is_ok_and(|r| r.starts_with("HTTP/1.1 200")) {
        assert!(Instant::now() < deadline, "no scrape after a client left");
        std::thread::sleep(Duration::from_millis(20));
    }

    // dropping the exporter closes the connections it holds, long before their deadline
    let started = Instant::now();
    drop(exporter);
    for stream in &mut held {
        assert_eq!(
            closed_within(stream, Duration::from_secs(5)),
            Some(Closed::Eof)
        );
    }
    assert!(started.elapsed() < long, "{:?}", started.elapsed());
}

/// The KiB locked of the mapping of this process that holds `address` (/proc/self/smaps).
fn locked_kib_at(address: usize) -> u64 {
    let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
    let mut inside = false;
    for line in smaps.lines() {
        let range = line
            .split_once(' ')
            .and_then(|(range, _)| range.split_once('-'));
        if let Some((start, end)) = range
            && let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            )
        {
            inside = (start..end).contains(&address);
        } else if inside && let Some(kib) = line.strip_prefix("Locked:") {
            return kib.trim().trim_end_matches(" kB").parse().unwrap();
        }
    }
    panic!("no mapping holds {address:#x}")
}

#[test]
fn a_thread_unlocks_its_own_stack() {
    std::thread::spawn(|| {
        let local = std::hint::black_box([0u8; 64]);
        // SAFETY: sysconf takes a constant and reads nothing of ours.
        let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let page = local.as_ptr() as usize & !(page_size - 1);
        // SAFETY: the page is part of this thread's stack, mapped while it runs; mlock
        // only keeps it resident.
        let locked = unsafe { libc::mlock(page as *const libc::c_void, page_size) };
        assert_eq!(locked, 0, "mlock: {}", std::io::Error::last_os_error());
        assert!(locked_kib_at(page) > 0);
        server::unlock_own_stack();
        assert_eq!(locked_kib_at(page), 0);
    })
    .join()
    .unwrap();
}

/// Thread noise on CPU 0 from one thread per workload, workload `w` (1, 2, ...) taking
/// `micros(w)` µs, each a unit of its own; one taking 0 µs is not there.
fn noise_per_workload(workloads: u64, micros: impl Fn(u64) -> u64) -> (NoiseAnalysis, CgroupNames) {
    let mut analysis = NoiseAnalysis::new(
        AnalysisConfig {
            bucket_ns: NS_PER_US,
            entries: 256,
            keep_recent: 0,
        },
        [0],
    );
    let mut cgroups = CgroupNames::default();
    let mut samples = Vec::new();
    for i in (1..=workloads).filter(|&i| micros(i) > 0) {
        cgroups.insert(CgroupId(100 + i), format!("/system.slice/w{i}.service"));
        let duration_ns = micros(i) * NS_PER_US;
        analysis.add_records([Record {
            cpu: 0,
            class: NoiseClass::Thread,
            source: 0,
            id: i as u32,
            comm: Comm::new("worker"),
            start_ns: i * 1_000 * NS_PER_US,
            duration_ns,
            seq: i,
            cgroup: CgroupId(100 + i),
        }]);
        samples.push(Sample {
            cpu: 0,
            start_ns: i * 1_000 * NS_PER_US,
            duration_ns,
            seq_before: i - 1,
            seq_after: i,
        });
    }
    analysis.add_period(&PeriodReport {
        cpu: 0,
        runtime_ns: 1_000_000_000,
        noise_ns: samples.iter().map(|s| s.duration_ns).sum(),
        samples,
        last_seq: workloads,
        ..Default::default()
    });
    (analysis, cgroups)
}

#[test]
fn thread_noise_per_workload_keeps_the_largest_and_the_rest_as_other() {
    let workloads = families::MOST_WORKLOADS as u64 + 5;
    // workload i's thread takes i µs: the smallest five are `other`
    let (analysis, cgroups) = noise_per_workload(workloads, |i| i);
    let text = render(noise_families(
        &analysis,
        &HashMap::new(),
        &cgroups,
        WorkloadBy::Unit,
    ));
    let series = |name: &str| {
        text.lines()
            .filter(|line| line.starts_with(name) && !line.starts_with('#'))
            .count()
    };
    assert_eq!(
        series("irqlens_noise_workload_seconds_total{"),
        families::MOST_WORKLOADS + 1
    );
    // the largest: the last one's
    assert_eq!(
        value(
            &text,
            &format!(
                "irqlens_noise_workload_seconds_total{{workload=\"/system.slice/w{workloads}.service\"}}"
            )
        ),
        workloads as f64 / 1e6
    );
    // 1 + 2 + 3 + 4 + 5 µs
    let other = value(
        &text,
        "irqlens_noise_workload_seconds_total{workload=\"other\"}",
    );
    assert!((other - 15e-6).abs() < 1e-12, "{other}");
    assert_eq!(
        value(
            &text,
            "irqlens_noise_workload_occurrences_total{workload=\"other\"}"
        ),
        5.0
    );
    assert!(!text.contains("w5.service"));
}

/// The noise families of [`noise_per_workload`]'s workloads, labelled with `labels`.
fn workload_snapshot(
    labels: &mut families::WorkloadLabels,
    workloads: u64,
    micros: impl Fn(u64) -> u64,
) -> String {
    let (analysis, cgroups) = noise_per_workload(workloads, micros);
    render(families::noise_families_labelled(
        &analysis,
        &HashMap::new(),
        &cgroups,
        WorkloadBy::Unit,
        labels,
    ))
}

#[test]
fn a_workload_keeps_its_label_from_one_snapshot_to_the_next() {
    let workloads = families::MOST_WORKLOADS as u64 + 2;
    let mut labels = families::WorkloadLabels::default();
    let snapshot = |labels: &mut families::WorkloadLabels, micros: &dyn Fn(u64) -> u64| {
        workload_snapshot(labels, workloads, micros)
    };
    let other = |text: &str| {
        value(
            text,
            "irqlens_noise_workload_seconds_total{workload=\"other\"}",
        )
    };
    // w1 and w2, the smallest, are `other`
    let first = snapshot(&mut labels, &|i| i);
    assert!(!first.contains("w1.service"));
    // later w1 is the largest: it stays in `other`, which only grows, as a counter must
    let later = snapshot(&mut labels, &|i| if i == 1 { 1_000 } else { i });
    assert!(!later.contains("w1.service"), "{later}");
    assert!(other(&later) > other(&first));
    // each labelled workload keeps its series
    for i in 3..=workloads {
        assert!(later.contains(&format!("w{i}.service")), "w{i}");
    }
}

#[test]
fn a_workload_gone_gives_its_label_to_one_that_shows_up_later() {
    let mut labels = families::WorkloadLabels::default();
    // workloads w1..=wN: each takes i µs, w`gone` left out
    let snapshot = |labels: &mut families::WorkloadLabels, workloads: u64, gone: u64| {
        workload_snapshot(labels, workloads, |i| if i == gone { 0 } else { i })
    };
    let most = families::MOST_WORKLOADS as u64;
    let series = |text: &str| {
        (text.lines())
            .filter(|line| line.starts_with("irqlens_noise_workload_seconds_total{"))
            .count()
    };
    // the first MOST_WORKLOADS take every label
    let first = snapshot(&mut labels, most, 0);
    assert_eq!(series(&first), families::MOST_WORKLOADS);
    // w3's pod goes, and a new one comes: it takes w3's label, not other
    let churned = snapshot(&mut labels, most + 1, 3);
    assert!(!churned.contains("w3.service"), "{churned}");
    assert!(
        churned.contains(&format!("w{}.service", most + 1)),
        "{churned}"
    );
    assert!(!churned.contains("workload=\"other\""), "{churned}");
    // the labels stay bounded: a later one finds no room, and is other
    let more = snapshot(&mut labels, most + 2, 3);
    assert!(!more.contains(&format!("w{}.service", most + 2)), "{more}");
    assert_eq!(series(&more), families::MOST_WORKLOADS + 1);
}
