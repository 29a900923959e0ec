//! The bh and account causes, from the analyses' own inputs (samples, checkpoints).

use super::*;
use crate::account::Attributor;
use crate::advise::advise;
use crate::bh::{Delay, Sample};
use irqlens_model::bh::{Selection, StatsConfig};
use irqlens_model::event::EventKind::{SoftirqEntry, SoftirqExit, SoftirqRaise};
use irqlens_model::kernel::Comm;
use irqlens_model::tune::{MachineState, RpsQueue};
use irqlens_model::workload::NamedThread;
use irqlens_test_support::stream::{Stream, US};

const NET_RX: u16 = 3;
const TIMER: u16 = 1;

fn names() -> HashMap<u32, String> {
    HashMap::from([(24, "virtio0-input.0".to_string())])
}

fn symbols(address: u64) -> String {
    format!("fn_{address:x}")
}

/// A bottom half run on `cpu` for `runtime_us` after waiting `latency_us`.
fn ran(
    cpu: u32,
    mechanism: Mechanism,
    source: BhSource,
    runtime_us: u64,
    latency_us: u64,
) -> Sample {
    Sample {
        mechanism,
        source,
        request_cpu: cpu,
        cpu,
        request_ns: 0,
        latency_ns: latency_us * US,
        runtime_ns: runtime_us * US,
        requester: 0,
        executor: 0,
        woke_watched: false,
        woke: Default::default(),
        delay: Delay {
            raised_in_ns: 0,
            causes: vec![DelayCause::Undelayed],
            ..Delay::default()
        },
    }
}

/// CPU 1 ran NET_RX 600 µs, an IRQ thread 300 µs, TIMER 100 µs and a tasklet inside its
/// softirq; one NET_RX waited for IRQ 24 (20 µs) and a spinning thread, another for
/// ksoftirqd.
fn bh_stats() -> BhStats {
    let mut stats = BhStats::new(StatsConfig {
        bucket_ns: 1_000,
        entries: 10,
        selection: Selection::All,
        worst: 2,
    });
    let net_rx = BhSource::Vector(NET_RX);
    let mut delayed = ran(1, Mechanism::Softirq, net_rx, 300, 100);
    delayed.delay.window.irqs = 1;
    delayed.delay.window.irq_ns = 20 * US;
    delayed.delay.causes = vec![
        DelayCause::Irq { source: 0, id: 24 },
        DelayCause::Busy(NamedThread::named("spin")),
    ];
    stats.add(delayed);
    let mut deferred = ran(1, Mechanism::Softirq, net_rx, 300, 50);
    deferred.delay.causes = vec![DelayCause::Ksoftirqd];
    stats.add(deferred);
    let thread = BhSource::Thread(Comm::new("irq/24-virtio0"));
    stats.add(ran(1, Mechanism::IrqThread, thread, 300, 50));
    stats.add(ran(1, Mechanism::Softirq, BhSource::Vector(TIMER), 100, 0));
    stats.add(ran(1, Mechanism::Tasklet, BhSource::Function(0xa1), 80, 0));
    // a work item queued on CPU 1 and run on CPU 2, which the run did not trace
    let mut elsewhere = ran(2, Mechanism::Workqueue, BhSource::Function(0xb2), 70, 10);
    elsewhere.request_cpu = 1;
    stats.add(elsewhere);
    stats
}

/// The CPU the bh run traced.
fn traced() -> CpuList {
    CpuList::single(1)
}

fn find<'a>(causes: &'a [CpuCause], source: &CauseSource) -> &'a CpuCause {
    causes
        .iter()
        .find(|cause| &cause.source == source)
        .unwrap_or_else(|| panic!("no {source:?} in {causes:#?}"))
}

#[test]
fn bh_causes_are_the_bottom_halves_a_cpu_ran_and_what_delayed_them() {
    let causes = bh_causes(&bh_stats(), &traced(), &names(), &symbols);
    assert!(
        causes
            .iter()
            .all(|c| c.cpu == 1 && c.capability == Capability::Bh)
    );
    // the runs, largest first; the tasklet's time is in its softirq's
    let ran: Vec<_> = causes
        .iter()
        .take(3)
        .map(|c| (c.label.as_str(), c.time_ns / US, c.share_percent))
        .collect();
    assert_eq!(
        ran,
        vec![
            ("NET_RX softirq", 600, 60.0),
            ("irq/24-virtio0 irq_thread", 300, 30.0),
            ("TIMER softirq", 100, 10.0),
        ]
    );
    assert!(
        causes.iter().all(|c| !c.label.contains("tasklet")),
        "{causes:#?}"
    );
    let net_rx = &causes[0];
    assert_eq!(net_rx.class, CauseClass::Softirq);
    let thread = &causes[1];
    assert_eq!(
        (thread.class, &thread.source),
        (
            CauseClass::Thread,
            &CauseSource::Thread {
                tid: None,
                comm: "irq/24-virtio0".into()
            }
        )
    );
    // the delays: shares of the 200 µs the bottom halves of CPU 1 waited
    let line = find(
        &causes,
        &CauseSource::IrqLine {
            irq: 24,
            name: "virtio0-input.0".into(),
        },
    );
    assert_eq!(
        (line.class, line.time_ns, line.share_percent),
        (CauseClass::Irq, 20 * US, 10.0)
    );
    assert!(line.label.starts_with("bh delay: "), "{}", line.label);
    let spin = find(
        &causes,
        &CauseSource::Thread {
            tid: None,
            comm: "spin".into(),
        },
    );
    assert_eq!((spin.time_ns, spin.share_percent), (80 * US, 40.0));
    let ksoftirqd = find(
        &causes,
        &CauseSource::Thread {
            tid: None,
            comm: "ksoftirqd/1".into(),
        },
    );
    assert_eq!(ksoftirqd.time_ns, 50 * US);
}

#[test]
fn bh_net_rx_on_a_cpu_points_at_the_rps_mask_that_sends_it_there() {
    let causes = bh_causes(&bh_stats(), &traced(), &names(), &symbols);
    let machine = MachineState {
        online_cpus: "0-3".parse().unwrap(),
        rps: vec![RpsQueue {
            netns: None,
            device: "eth0".into(),
            queue: 0,
            mask: "3".into(),
            cpus: "0-1".parse().unwrap(),
        }],
        ..MachineState::default()
    };
    let (advice, _) = advise(&causes, &machine);
    let rps = advice
        .iter()
        .find(|a| a.id == "rps-eth0-rx0")
        .unwrap_or_else(|| panic!("{advice:#?}"));
    assert_eq!((rps.cpu, rps.capability), (1, Capability::Bh));
    assert_eq!(rps.cause, "NET_RX softirq");
    assert_eq!(rps.change.as_ref().unwrap().to, "1");
}

#[test]
fn account_causes_are_each_cpus_interrupt_time_by_source() {
    let mut s = Stream::new();
    // CPU 1: IRQ 24 raises NET_RX (10 µs, handed on to it), NET_RX runs 30 µs
    s.irq(100, 1, 10, true, 0, 24);
    s.softirq(105, 1, 10, SoftirqRaise, NET_RX);
    s.irq(110, 1, 10, false, 0, 24);
    s.softirq(110, 1, 10, SoftirqEntry, NET_RX);
    s.softirq(140, 1, 10, SoftirqExit, NET_RX);
    // CPU 0: the tick, 5 µs
    s.irq(200, 0, 10, true, 1, 236);
    s.irq(205, 0, 10, false, 1, 236);
    let mut attributor = Attributor::new(None, None);
    for e in &s.events {
        attributor.add(e);
    }
    attributor.finish();
    let causes = account_causes(attributor.ledger(), &names());
    let shown: Vec<_> = causes
        .iter()
        .map(|c| (c.cpu, c.label.as_str(), c.time_ns / US, c.share_percent))
        .collect();
    assert_eq!(
        shown,
        vec![
            (0, "local_timer:236", 5, 100.0),
            (1, "NET_RX", 30, 75.0),
            (1, "irq 24 virtio0-input.0", 10, 25.0),
        ]
    );
    assert!(causes.iter().all(|c| c.capability == Capability::Account));
    assert_eq!(
        causes[0].source,
        CauseSource::Vector {
            name: "local_timer".into(),
            vector: 236
        }
    );
    assert_eq!(
        (causes[1].class, &causes[1].source),
        (
            CauseClass::Softirq,
            &CauseSource::Softirq {
                name: "NET_RX".into()
            }
        )
    );
    assert_eq!(
        causes[2].source,
        CauseSource::IrqLine {
            irq: 24,
            name: "virtio0-input.0".into()
        }
    );
}
