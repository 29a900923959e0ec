//! The ledger's bounds: accounts folded past `ACCOUNTS` with every total exact, quiet ones
//! first, workloads and compensation unchanged for what is kept (times in µs).

use std::collections::HashMap;

use super::*;
use crate::account::report::{Table, table, totals};
use crate::account::workloads::{WorkloadRow, name_cgroups, workloads};
use crate::account::{Attributor, BySource, Seen, Source};
use irqlens_model::kernel::Comm;
use irqlens_model::workload::{CgroupNames, WorkloadBy};
use irqlens_test_support::stream::{Stream, US};

const CPU: u32 = 0;
const TIMER: u16 = 1;
const HEAVY: u32 = 10;
/// The first thread id of a storm's short-lived threads.
const FIRST: u32 = 1_000;
const SECOND: u64 = 1_000_000;

/// Thread `tid` is switched in at `at` and a tick of `us` runs while it is current.
fn charge(s: &mut Stream, at: u64, tid: u32, us: u64) {
    s.switch(at, CPU, 0, tid, "short");
    s.irq(at + 1, CPU, tid, true, TIMER, 236);
    s.irq(at + 1 + us, CPU, tid, false, TIMER, 236);
}

fn attribute(s: &Stream) -> Attributor {
    let mut attributor = Attributor::new(None, None);
    for e in &s.events {
        attributor.add(e);
    }
    attributor
}

fn charged(rows: &[crate::account::report::Row]) -> u64 {
    rows.iter().map(|row| row.figures.amounts.charged_ns).sum()
}

#[test]
fn a_ledger_past_its_bound_keeps_half_and_folds_the_rest_with_exact_totals() {
    let threads = ACCOUNTS as u32 + 1_000;
    let mut s = Stream::new();
    for n in 0..threads {
        let at = u64::from(n) * 20;
        charge(&mut s, at, FIRST + n, 1);
        // a thread charged again and again stays the heaviest
        charge(&mut s, at + 10, HEAVY, 3);
    }
    let attributor = attribute(&s);
    let ledger = attributor.ledger();
    assert!(ledger.threads.len() <= ACCOUNTS, "{}", ledger.threads.len());
    assert!(ledger.threads.len() >= ACCOUNTS / 2);
    // each thread came once: it is kept or folded, not both
    let kept = ledger.threads.len() as u64;
    assert_eq!(kept + ledger.folded.threads(), u64::from(threads) + 1);
    assert_eq!(
        total(&ledger.threads[&HEAVY].charged),
        3 * US * u64::from(threads)
    );
    let totals = totals(ledger);
    assert_eq!(totals.hardirq_ns, 4 * US * u64::from(threads));
    let table = table(ledger, &HashMap::new(), None, true);
    assert_eq!(
        charged(&table.rows) + charged(&table.folded),
        totals.hardirq_ns
    );
    let folded = table.folded_sum().expect("a folded row");
    assert_eq!(folded.folded_threads, ledger.folded.threads());
    assert_eq!(charged(&table.rows), totals.hardirq_ns - charged(&[folded]));
    // none folded while the ledger is within its bound
    let mut few = Stream::new();
    for n in 0..ACCOUNTS as u32 - 1 {
        charge(&mut few, u64::from(n) * 20, FIRST + n, 1);
    }
    let few = attribute(&few);
    assert_eq!(few.ledger().threads.len(), ACCOUNTS - 1);
    assert!(few.ledger().folded.is_empty());
}

#[test]
fn an_exited_thread_is_folded_after_the_grace_period_and_not_before() {
    const EXITED: u32 = 20;
    let grace_us = GRACE_NS / 1_000;
    let mut s = Stream::new();
    // charged 5 µs once, then gone
    charge(&mut s, 100, EXITED, 5);
    // just before the grace period ends: a storm of lighter threads fills the ledger
    let storm = |s: &mut Stream, from: u64, first: u32, n: u32| {
        for i in 0..n {
            charge(s, from + u64::from(i) * 20, first + i, 1);
        }
    };
    let batch = ACCOUNTS as u32;
    storm(&mut s, grace_us - SECOND, FIRST, batch);
    let before = attribute(&s);
    assert!(!before.ledger().folded.is_empty(), "the storm made a fold");
    assert!(
        before.ledger().threads.contains_key(&EXITED),
        "folded before its grace period"
    );
    // past it, more threads come: the quiet one goes first, heavier as it is
    let more = ACCOUNTS as u32 / 2 + 1;
    storm(&mut s, grace_us + SECOND, FIRST + batch, more);
    let after = attribute(&s);
    let ledger = after.ledger();
    assert!(!ledger.threads.contains_key(&EXITED), "kept past its grace");
    let last = FIRST + batch + more - 1;
    assert!(ledger.threads.contains_key(&last));
    let folded_us: u64 = ledger
        .folded
        .by_cgroup()
        .map(|(_, f)| total(&f.account.charged))
        .sum::<u64>()
        / US;
    let kept_us: u64 = ledger
        .threads
        .values()
        .map(|a| total(&a.charged))
        .sum::<u64>()
        / US;
    assert_eq!(folded_us + kept_us, 5 + u64::from(batch + more));
}

const POD: CgroupId = CgroupId(100);
const UNIT: CgroupId = CgroupId(200);
const IRQLENS: u32 = 7;

/// `n` threads, a third in each of a pod's cgroup, a unit's and an unknown one, of
/// growing weights; irqlens's work took some of what the first ones were charged.
fn crowded_ledger(n: u32) -> Ledger {
    let mut ledger = Ledger {
        irqlens: Some(IRQLENS),
        ..Ledger::default()
    };
    let net_rx = |ns: u64| BySource::from([(Source::Softirq { vector: 3 }, ns)]);
    for i in 0..n {
        let tid = FIRST + i;
        let account = ThreadAccount {
            charged: net_rx(u64::from(i % 97) * 1_000 + 500),
            for_irqlens: if i % 5 == 0 {
                net_rx(100)
            } else {
                BySource::new()
            },
            served: net_rx(u64::from(i % 13) * 700),
            units: u64::from(i % 3),
            last_ns: 0,
        };
        ledger.threads.insert(tid, account);
        let cgroup = [POD, UNIT, CgroupId::UNKNOWN][i as usize % 3];
        let comm = Comm::new("worker");
        let seen = Seen {
            tgid: tid,
            comm,
            cgroup,
        };
        ledger.seen.insert(tid, seen);
    }
    let own = ThreadAccount {
        served: net_rx(100 * u64::from(n / 5 + 1)),
        ..ThreadAccount::default()
    };
    ledger.threads.insert(IRQLENS, own);
    ledger
}

fn named(ledger: &Ledger) -> Table {
    let mut names = CgroupNames::default();
    names.insert(POD, "/kubepods.slice/kubepods-pod1.slice".into());
    names.insert(UNIT, "/system.slice/worker.service".into());
    let mut table = table(ledger, &HashMap::new(), None, false);
    name_cgroups(&mut table, &names);
    table
}

fn sums(rows: &[WorkloadRow]) -> Vec<(String, [u64; 4])> {
    let mut sums: Vec<(String, [u64; 4])> = rows
        .iter()
        .map(|row| {
            let a = &row.sums.figures.amounts;
            let figures = [a.charged_ns, a.served_ns, a.irqlens_ns, a.units];
            (row.key.clone(), figures)
        })
        .collect();
    sums.sort();
    sums
}

#[test]
fn folding_leaves_every_workloads_sums_and_the_totals_as_they_were() {
    let whole = crowded_ledger(ACCOUNTS as u32 + 600);
    let mut folded = whole.clone();
    folded.fold_excess(None, &[]);
    assert!(folded.threads.len() <= ACCOUNTS / 2 + 1);
    assert!(
        folded.threads.contains_key(&IRQLENS),
        "irqlens is never folded"
    );
    assert_eq!(totals(&folded), totals(&whole));
    let (before, after) = (named(&whole), named(&folded));
    assert!(after.folded.len() >= 3, "a folded row per cgroup");
    assert_eq!(before.irqlens, after.irqlens);
    for by in [WorkloadBy::Cgroup, WorkloadBy::Pod, WorkloadBy::Unit] {
        let (before, after) = (workloads(&before, by), workloads(&after, by));
        assert_eq!(sums(&before), sums(&after), "{by:?}");
    }
    // the names of the accounts folded are forgotten once past the bound
    let mut crowded = folded.clone();
    for tid in 100_000..100_000 + NAMES as u32 {
        let seen = Seen {
            tgid: tid,
            comm: Comm::new("idle"),
            cgroup: CgroupId::UNKNOWN,
        };
        crowded.seen.insert(tid, seen);
    }
    crowded.fold_excess(None, &[100_000]);
    assert!(crowded.seen.len() <= NAMES / 2, "{}", crowded.seen.len());
    assert!(crowded.seen.contains_key(&100_000), "a running thread's");
    let kept = crowded.threads.keys().filter(|&&tid| tid != IRQLENS);
    assert!(kept.clone().all(|tid| crowded.seen.contains_key(tid)));
    assert_eq!(named(&crowded), named(&folded));
}

#[test]
fn the_compensation_of_the_rows_kept_is_whole_and_the_folded_carry_theirs() {
    const TICK: u64 = 4_000_000;
    const RECEIVER: u32 = 5;
    let n = ACCOUNTS as u32 + 10;
    let mut ledger = crowded_ledger(n);
    let mut compensator = Compensator::new(TICK);
    // each thread over-charged one tick of 4 interrupts done for the receiver
    for tid in FIRST..FIRST + n {
        for _ in 0..4 {
            compensator.interrupts(CPU, &[RECEIVER], TICK / 4);
        }
        compensator.tick(CPU, tid);
    }
    let adjusted = |c: &Compensator, tid| c.adjusted_ns(tid);
    assert!((FIRST..FIRST + n).all(|tid| adjusted(&compensator, tid) == -(TICK as i64)));
    ledger.fold_excess(Some(&mut compensator), &[]);
    for &tid in ledger.threads.keys().filter(|&&tid| tid != IRQLENS) {
        assert_eq!(adjusted(&compensator, tid), -(TICK as i64), "thread {tid}");
    }
    let folded: i64 = ledger.folded.by_cgroup().map(|(_, f)| f.adjusted_ns).sum();
    assert_eq!(folded, -(TICK as i64) * ledger.folded.threads() as i64);
    let folded_threads = (FIRST..FIRST + n).filter(|tid| !ledger.threads.contains_key(tid));
    assert!(folded_threads.clone().count() as u64 == ledger.folded.threads());
    assert!(
        folded_threads
            .into_iter()
            .all(|tid| adjusted(&compensator, tid) == 0)
    );
}

#[test]
fn a_whole_run_of_periods_folds_as_it_absorbs_them() {
    let mut whole = Ledger::default();
    for period in 0..3u32 {
        let mut s = Stream::new();
        for i in 0..ACCOUNTS as u32 / 2 + 100 {
            let at = u64::from(period) * SECOND + u64::from(i) * 20;
            charge(&mut s, at, FIRST + period * 10_000 + i, 1);
        }
        whole.absorb(attribute(&s).ledger().clone());
        assert!(whole.threads.len() <= ACCOUNTS);
    }
    let all = 3 * (ACCOUNTS as u64 / 2 + 100);
    assert_eq!(whole.threads.len() as u64 + whole.folded.threads(), all);
    assert_eq!(totals(&whole).hardirq_ns, all * US);
}
