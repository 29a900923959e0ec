//! Losses in every output: the marks, the legend and the `lost` object of bh, wakeup
//! and account, from synthetic runs with and without lost checkpoints.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::json;

use super::account::{self, View};
use super::html::Page;
use super::html::tests::{bh_info, bh_stats, names, render};
use super::{bh, wakeup};
use irqlens_analyze::account::Period;
use irqlens_analyze::account::{Ledger, Seen, Source, ThreadAccount};
use irqlens_analyze::loss::RunLosses;
use irqlens_analyze::wakeup::WakeupStats;
use irqlens_model::account::{AccountOptions, AccountRunInfo};
use irqlens_model::bh::Selection;
use irqlens_model::bh::{BhOptions, BhRunInfo};
use irqlens_model::hist::HistOptions;
use irqlens_model::kernel::Comm;
use irqlens_model::run::RunCommon;
use irqlens_model::sched::Priority;
use irqlens_model::stimulus::LoadScenario;
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::Watched;
use irqlens_model::wakeup::{Report, StatsConfig, TrackCounts};
use irqlens_model::wakeup::{TimerOptions, TimerThread, WakeupMode, WakeupOptions, WakeupRunInfo};
use irqlens_model::workload::CgroupId;

const LEGEND: &str = "* 7 checkpoints lost (the probe's buffer was full)";

fn text(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut out = Vec::new();
    write(&mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn bh_lost(lost_events: u64) -> BhRunInfo {
    BhRunInfo {
        common: RunCommon {
            lost_events,
            ..bh_info().common
        },
        ..bh_info()
    }
}

#[test]
fn bh_marks_every_row_of_its_tables_when_checkpoints_were_lost() {
    let (stats, names) = (bh_stats(), names());
    let info = bh_lost(7);
    let table = text(|out| bh::write_table(out, &stats, &names, &info.losses()));
    assert!(table.contains("softirq*"), "{table}");
    assert!(table.contains("TIMER*"), "{table}");
    assert!(table.lines().last().unwrap().starts_with(LEGEND), "{table}");
    let causes = text(|out| bh::write_causes(out, &stats, &names, 5, &info.losses()));
    assert!(causes.contains("Delay causes: softirq* "), "{causes}");
    let hist =
        text(|out| bh::write_histogram(out, &stats, &HistOptions::default(), &info.losses()));
    assert!(hist.contains(" softirq*"), "{hist}");
    assert!(hist.contains("marked columns may be short"), "{hist}");

    let options = BhOptions {
        cpus: CpuList::single(0),
        duration: None,
        warm_up: None,
        trigger: None,
        load: LoadScenario::Zero,
        stats: irqlens_model::bh::StatsConfig {
            bucket_ns: 1_000,
            entries: 64,
            selection: Selection::All,
            worst: 2,
        },
        hist: None,
        causes: 8,
    };
    let doc = serde_json::to_value(bh::to_json(&stats, &info, &options, &names)).unwrap();
    assert_eq!(doc["lost"]["events"], 7);
    assert_eq!(doc["lost"]["affected"], true);
    assert_eq!(doc["lost"]["marked"][0], "mechanisms");

    let mut page = Page::new("bh", "6.18.0-test");
    page.bh("bh", &stats, &info, &names);
    let html = render(&page);
    assert!(html.contains("<td>softirq*</td>"), "{html}");
    assert!(html.contains("<p class=\"note lost\">* 7 checkpoints lost"));
}

#[test]
fn bh_without_losses_marks_nothing() {
    let (stats, names) = (bh_stats(), names());
    let info = bh_lost(0);
    let table = text(|out| bh::write_table(out, &stats, &names, &info.losses()));
    assert!(!table.contains('*'), "{table}");
    let mut page = Page::new("bh", "6.18.0-test");
    page.bh("bh", &stats, &info, &names);
    assert!(!render(&page).contains("note lost"));
}

/// Two activations on CPU 0 that only the timer thread reported (no trace).
fn total_only_stats() -> WakeupStats {
    let mut stats = WakeupStats::new(StatsConfig {
        bucket_ns: 1_000,
        entries: 100,
        ..Default::default()
    });
    for total_us in [5, 9] {
        stats.add_total_only(&Report {
            tid: 100,
            cpu: 0,
            expected_ns: 1_000_000,
            user_ns: 1_000_000 + total_us * 1_000,
        });
    }
    stats
}

fn wakeup_run(timer_threads: Vec<TimerThread>) -> WakeupRunInfo {
    WakeupRunInfo {
        common: RunCommon {
            elapsed_ns: 1_000_000_000,
            programs: 20,
            skipped_tracepoints: vec![],
            lost_events: 7,
            lost_by_cpu: Default::default(),
            interrupted: false,
            ..Default::default()
        },
        traced: true,
        tracking: TrackCounts::default(),
        threads: timer_threads,
        missed_periods: 0,
        held: Default::default(),
    }
}

fn wakeup_options(mode: WakeupMode) -> WakeupOptions {
    WakeupOptions {
        cpus: CpuList::single(0),
        duration: None,
        warm_up: None,
        mode,
        stats: StatsConfig::default(),
        hist: None,
        causes: 10,
        dma_latency_us: None,
        cgroups: Vec::new(),
    }
}

#[test]
fn wakeup_marks_the_components_that_come_from_the_checkpoints() {
    let stats = total_only_stats();
    // timer mode: the threads report the total themselves, losses cannot touch it
    let timer = wakeup_options(WakeupMode::Timer(TimerOptions {
        period: Duration::from_millis(1),
        priority: Priority::Fifo(95),
        trace: true,
        aligned_ns: None,
    }));
    let info = wakeup_run(vec![TimerThread { cpu: 0, tid: 100 }]);
    let summary = text(|out| wakeup::write_summary(out, &stats, &timer, &info));
    assert!(summary.contains("total    total"), "{summary}");
    assert!(summary.contains(LEGEND), "{summary}");
    // task mode: the total is the trace's too
    let task = wakeup_options(WakeupMode::Task(Watched::Process(100)));
    let info = wakeup_run(vec![]);
    let summary = text(|out| wakeup::write_summary(out, &stats, &task, &info));
    assert!(summary.contains("total*   total"), "{summary}");
    let hist = text(|out| wakeup::write_histogram(out, &stats, &HistOptions::default(), &info));
    assert!(hist.contains("TOT-000*"), "{hist}");

    let doc = serde_json::to_value(wakeup::to_json(&stats, &info, &task, &names())).unwrap();
    assert_eq!(doc["lost"]["events"], 7);
    assert_eq!(doc["lost"]["marked"][0], "per_cpu");
}

/// Hackbench (pid 40) charged 5 µs of NET_RX and 3 µs of irqlens's (pid 50) own
/// irq_work; irqlens's thread 51 served those 3 µs.
fn account_period(lost_events: u64) -> Period {
    let net_rx = Source::Softirq { vector: 3 };
    let irq_work = Source::Hardirq { source: 5, id: 246 };
    let mut ledger = Ledger {
        irqlens: Some(50),
        ..Ledger::default()
    };
    ledger.threads.insert(
        40,
        ThreadAccount {
            charged: BTreeMap::from([(net_rx, 5_000), (irq_work, 3_000)]),
            for_irqlens: BTreeMap::from([(irq_work, 3_000)]),
            ..Default::default()
        },
    );
    ledger.threads.insert(
        51,
        ThreadAccount {
            served: BTreeMap::from([(irq_work, 3_000)]),
            units: 1,
            ..Default::default()
        },
    );
    ledger.seen.insert(
        51,
        Seen {
            tgid: 50,
            comm: Comm::new("irqlens"),
            cgroup: CgroupId::UNKNOWN,
        },
    );
    Period {
        start_ns: 0,
        elapsed_ns: 1_000_000_000,
        ledger,
        compensator: None,
        threads: HashMap::new(),
        lost_events,
        cgroups: Default::default(),
    }
}

fn account_info(lost_events: u64) -> AccountRunInfo {
    AccountRunInfo {
        common: RunCommon {
            elapsed_ns: 1_000_000_000,
            programs: 12,
            skipped_tracepoints: vec![],
            events: 100,
            lost_events,
            lost_by_cpu: Default::default(),
            interrupted: false,
        },
        hz: None,
    }
}

#[test]
fn account_marks_the_columns_that_come_from_the_checkpoints() {
    let irq_names = HashMap::new();
    let view = View {
        by_thread: false,
        top: 10,
        irq_names: &irq_names,
        by: None,
        within: &[],
        sockets: true,
    };
    let options = AccountOptions {
        top: 10,
        ..AccountOptions::defaults(CpuList::single(0))
    };
    let period = account_period(7);
    let table = text(|out| account::write_period(out, &period, &options, &view, &period.losses()));
    let heading = table.lines().find(|l| l.contains("COMMAND")).unwrap();
    assert!(heading.contains("KERNEL(us) "), "{heading}");
    for column in [
        "CHARGED(us)*",
        "SERVED(us)*",
        "CORRECTED(us)*",
        "ERROR*",
        "UNITS*",
    ] {
        assert!(heading.contains(column), "{heading}");
    }
    assert!(table.contains("marked columns may be short"), "{table}");
    // irqlens's own work is its row's, not hackbench's
    let irqlens = table.lines().find(|l| l.contains("[irqlens]")).unwrap();
    assert_eq!(
        irqlens.split_whitespace().collect::<Vec<_>>(),
        ["50", "[irqlens]", "-", "3", "3", "-", "-", "1"]
    );
    let hackbench = table.lines().find(|l| l.starts_with("      40")).unwrap();
    assert_eq!(
        hackbench.split_whitespace().nth(3),
        Some("5"),
        "{hackbench}"
    );

    let doc = serde_json::to_value(account::to_json(
        &period,
        &[],
        &account_info(7),
        &options,
        &view,
    ))
    .unwrap();
    assert_eq!(doc["lost"]["events"], 7);
    assert_eq!(doc["lost"]["marked"], json!(["total", "periods"]));
    assert_eq!(doc["total"]["lost"]["affected"], true);
    assert_eq!(doc["total"]["irqlens"]["charged_ns"], 3_000);
    assert_eq!(doc["total"]["rows"][0]["irqlens_ns"], 3_000);
    assert_eq!(doc["total"]["totals"]["irqlens_ns"], 3_000);

    let quiet = account_period(0);
    let table = text(|out| account::write_period(out, &quiet, &options, &view, &quiet.losses()));
    assert!(!table.contains('*'), "{table}");
    let doc = account::period_json(&quiet, &view, &quiet.losses());
    assert!(!doc.lost.affected);

    let mut page = Page::new("account", "6.18.0-test");
    page.account("account", &period, &account_info(7), &view);
    let html = render(&page);
    assert!(html.contains("<th>CHARGED(µs)*</th>") && html.contains("<th>KERNEL(µs)</th>"));
    assert!(html.contains("<td>[irqlens]</td>"), "{html}");
}
