use super::*;
use irqlens_model::system::Capability;
use irqlens_model::tune::{CauseClass, Change, Knob};

fn figure(metric: Metric, cpu: u32, value: f64) -> Figure {
    Figure {
        metric,
        cpu: Some(cpu),
        of: None,
        value,
    }
}

fn cause(cpu: u32, label: &str, source: CauseSource, time_ns: u64, share: f64) -> CpuCause {
    CpuCause {
        cpu,
        capability: Capability::Noise,
        label: label.into(),
        class: CauseClass::Irq,
        source,
        time_ns,
        share_percent: share,
    }
}

fn irq(irq: u32, name: &str) -> CauseSource {
    CauseSource::IrqLine {
        irq,
        name: name.into(),
    }
}

fn advice(cpu: u32, cause: &str, id: &str, changes: bool) -> Advice {
    Advice {
        id: id.into(),
        cpu,
        cause: cause.into(),
        capability: Capability::Noise,
        time_ns: 1,
        share_percent: 1.0,
        remedy: format!("the remedy {id}"),
        change: changes.then(|| Change {
            knob: Knob::IrqAffinity { irq: 36 },
            from: "0-1".into(),
            to: "0".into(),
        }),
        command: None,
        blocker: None,
    }
}

fn nothing_unmeasured(metric: Metric) -> String {
    panic!("{metric:?} was measured")
}

#[test]
fn only_the_metrics_with_a_threshold_are_checked_each_on_its_worst_cpu() {
    let figures = [
        figure(Metric::MaxNoise, 1, 12.0),
        figure(Metric::MaxNoise, 2, 30.5),
        figure(Metric::Available, 1, 99.5),
        figure(Metric::Available, 2, 99.9),
        figure(Metric::MaxLatency, 1, 80.0),
    ];
    let thresholds = Thresholds {
        max_noise_us: Some(40.0),
        min_available_percent: Some(99.8),
        ..Thresholds::default()
    };
    let checks = measured_checks(&figures, &thresholds, &[], &[], &nothing_unmeasured);
    let ids: Vec<&str> = checks.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["max-noise", "min-available"]);
    assert_eq!(checks[0].status, Status::Pass);
    assert_eq!(checks[0].found, "CPU 2: 30.5 µs");
    assert_eq!(checks[0].expected, "at most 40.0 µs");
    // the least left is the worst
    assert_eq!(checks[1].status, Status::Fail);
    assert_eq!(checks[1].found, "CPU 1: 99.50%");
    assert_eq!(checks[1].expected, "at least 99.80%");
}

#[test]
fn a_failure_names_its_cpus_top_cause_and_the_remedies_that_change_something() {
    let figures = [
        figure(Metric::MaxNoise, 1, 84.0),
        figure(Metric::MaxNoise, 2, 10.0),
    ];
    let thresholds = Thresholds {
        max_noise_us: Some(20.0),
        ..Thresholds::default()
    };
    let causes = [
        // the largest cause of all, but on the CPU that passed
        cause(2, "IRQ 11 other", irq(11, "other"), 9_000, 90.0),
        cause(
            1,
            "IRQ 36 virtio1-req.0",
            irq(36, "virtio1-req.0"),
            5_000,
            71.4,
        ),
        cause(
            1,
            "softirq TIMER",
            CauseSource::Softirq {
                name: "TIMER".into(),
            },
            2_000,
            28.6,
        ),
        // irqlens's own threads are never the cause named
        cause(
            1,
            "irqlens/1",
            CauseSource::Thread {
                tid: Some(7),
                comm: "irqlens/1".into(),
            },
            50_000,
            0.0,
        ),
    ];
    let advice = [
        advice(1, "IRQ 36 virtio1-req.0", "irq-36-affinity", true),
        advice(2, "IRQ 36 virtio1-req.0", "elsewhere", true),
        advice(1, "IRQ 36 virtio1-req.0", "words-only", false),
    ];
    let checks = measured_checks(&figures, &thresholds, &causes, &advice, &nothing_unmeasured);
    assert_eq!(checks[0].status, Status::Fail);
    assert_eq!(
        checks[0].cause.as_deref(),
        Some("IRQ 36 virtio1-req.0, 71% of the noise")
    );
    assert_eq!(checks[0].remedies, ["irq-36-affinity"]);
    assert_eq!(
        checks[0].advice, None,
        "a remedy tune can apply comes first"
    );
}

#[test]
fn a_cause_without_a_change_is_advised_in_words() {
    let figures = [figure(Metric::MaxNoise, 1, 84.0)];
    let thresholds = Thresholds {
        max_noise_us: Some(20.0),
        ..Thresholds::default()
    };
    let causes = [cause(1, "IRQ 36 q", irq(36, "q"), 5_000, 100.0)];
    let advice = [advice(1, "IRQ 36 q", "irq-36-affinity", false)];
    let checks = measured_checks(&figures, &thresholds, &causes, &advice, &nothing_unmeasured);
    assert!(checks[0].remedies.is_empty());
    assert_eq!(
        checks[0].advice.as_deref(),
        Some("the remedy irq-36-affinity")
    );
}

#[test]
fn a_threshold_without_a_figure_is_skipped_with_the_reason() {
    let thresholds = Thresholds {
        max_bh_us: Some(100.0),
        ..Thresholds::default()
    };
    let checks = measured_checks(&[], &thresholds, &[], &[], &|metric| {
        format!("{} ran no bottom half", metric.id())
    });
    assert_eq!(checks[0].status, Status::Skip);
    assert_eq!(checks[0].found, "max-bh ran no bottom half");
}

#[test]
fn a_bottom_halfs_failure_names_what_delayed_it_not_what_ran() {
    let figures = [Figure {
        metric: Metric::MaxBh,
        cpu: None,
        of: Some("softirq".into()),
        value: 300.0,
    }];
    let thresholds = Thresholds {
        max_bh_us: Some(100.0),
        ..Thresholds::default()
    };
    let bh = |label: &str, time_ns: u64| CpuCause {
        capability: Capability::Bh,
        ..cause(
            1,
            label,
            CauseSource::Softirq {
                name: "NET_RX".into(),
            },
            time_ns,
            50.0,
        )
    };
    let causes = [
        bh("softirq NET_RX", 90_000),
        bh(&format!("{BH_DELAY}thread rustc:7 was running"), 40_000),
    ];
    let checks = measured_checks(&figures, &thresholds, &causes, &[], &nothing_unmeasured);
    assert_eq!(checks[0].status, Status::Fail);
    assert_eq!(
        checks[0].cause.as_deref(),
        Some("bh delay: thread rustc:7 was running, 50% of the delay")
    );
}
