//! account attributed in the kernel: the totals the BPF program keeps in its maps
//! (crates/probe/src/account.rs) turned into the ledger the report reads, the same one
//! the checkpoints' attribution in user space builds (crates/analyze/src/account).

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Result;

use super::{RunPace, Tick};
use crate::account::{Mark, Pipeline, SoFar};
use crate::system;
use irqlens_analyze::account::{Ledger, Period, Seen, Source};
use irqlens_analyze::loss::Losses;
use irqlens_model::account::{AccountOptions, AccountRunInfo};
use irqlens_model::kernel::Comm;
use irqlens_model::run::RunCommon;
use irqlens_model::workload::CgroupId;
use irqlens_probe::account::{AccountProbe, FOLDED, Identity, Totals};

/// How often a run without --interval still closes a period: the maps then drop the
/// threads that exited, so a run of any length (the agent's) keeps room for new threads
/// and reads only the recent ones at each tick.
const SETTLE_EVERY: Duration = Duration::from_secs(10);

/// Measures as `account::run` does, the attribution done by the kernel: user space reads
/// its totals at each period's end (and each second, for the live views).
pub(crate) fn run(
    options: &AccountOptions,
    stop: &AtomicBool,
    mut on_tick: impl FnMut(Tick, SoFar<'_>),
    mut on_period: impl FnMut(&Period),
) -> Result<(Period, AccountRunInfo)> {
    // a --cgroup that names no cgroup (a typo) would filter every row out, silently
    crate::cgroup::check_paths(&options.cgroups)?;
    let irqlens = Some(std::process::id());
    let mut storage = MaybeUninit::uninit();
    let probe = AccountProbe::load(&mut storage, &options.cpus, irqlens, options.sockets)?;
    let started = Instant::now();
    let mut pipeline = Pipeline::new(
        None,
        options.interval.is_some(),
        irqlens,
        Mark::now(started, 0),
    );
    pipeline.resolve_cgroups();
    probe.enable();
    let mut pace = RunPace::new(started, options.duration);
    let period_length = options.interval.unwrap_or(SETTLE_EVERY);
    let mut next_close = started + period_length;
    let mut before = Totals::default();
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(pace.wait());
        let now = Instant::now();
        if let Some(elapsed) = pace.tick(now) {
            pipeline.open_in_kernel = ledger(&probe.totals()?.since(&before), irqlens);
            let tick = Tick::new(
                elapsed,
                Losses::checkpoints,
                Default::default(),
                &options.cpus,
            );
            on_tick(tick, SoFar::new(&mut pipeline));
        }
        if pace.over(now) {
            break;
        }
        if now >= next_close {
            next_close += period_length;
            let mut totals = probe.totals()?;
            // the threads alive, listed after the totals were read: one missing from them
            // had exited by then; forgotten at once, so that little the kernel adds for
            // them in between is lost
            let exited = totals.exited(&system::thread_ids());
            probe.forget(&exited)?;
            let period = ledger(&totals.since(&before), irqlens);
            totals.forget(&exited);
            before = totals;
            let mark = Mark::now(started, 0);
            pipeline.close_period(period, None, mark, false, &mut on_period);
        }
    }
    probe.disable();
    let totals = probe.final_totals()?;
    let lost: u64 = totals.lost.values().sum();
    let last = ledger(&totals.since(&before), irqlens);
    pipeline.close_period(last, None, Mark::now(started, lost), true, &mut on_period);
    let unmapped_ns = probe.unmapped_ns();
    if unmapped_ns > 0 {
        eprintln!("irqlens: {unmapped_ns} ns of interrupt time found no room in account's maps");
    }
    if totals.inexact > 0 {
        eprintln!(
            "irqlens: {} times a run served more threads, or a softirq vector waited for more \
             hardirqs, than the kernel's state holds: the rest was served as [folded] or orphan",
            totals.inexact
        );
    }
    let info = AccountRunInfo {
        common: RunCommon {
            elapsed_ns: pipeline.whole.elapsed_ns,
            events: totals.events,
            lost_events: lost,
            lost_by_cpu: totals.lost.clone(),
            programs: probe.programs(),
            skipped_tracepoints: probe.skipped.clone(),
            interrupted: false,
        },
        hz: None,
    };
    Ok((pipeline.whole, info))
}

/// The source account.h encoded in one word.
pub fn decode_source(code: u32) -> Source {
    match code >> 30 {
        0 => Source::Hardirq {
            source: ((code >> 24) & 0x3f) as u16,
            id: code & 0xff_ffff,
        },
        1 => Source::Softirq {
            vector: (code & 0xffff) as u16,
        },
        _ => Source::Nmi,
    }
}

/// The ledger of `totals`; `irqlens`: irqlens's own process id.
pub fn ledger(totals: &Totals, irqlens: Option<u32>) -> Ledger {
    let mut ledger = Ledger {
        irqlens,
        ..Ledger::default()
    };
    for (&(tid, code), time) in &totals.tasks {
        let source = decode_source(code);
        let account = ledger.threads.entry(tid).or_default();
        for (by_source, ns) in [
            (&mut account.charged, time.charged),
            (&mut account.for_irqlens, time.for_irqlens),
            (&mut account.served, time.served),
        ] {
            if ns > 0 {
                *by_source.entry(source).or_default() += ns;
            }
        }
    }
    for (&tid, info) in &totals.threads {
        if info.units > 0 {
            ledger.threads.entry(tid).or_default().units += info.units;
        }
        if info.named != 0 {
            ledger.seen.insert(tid, seen(&info.who));
        }
    }
    if ledger.threads.contains_key(&FOLDED) {
        let folded = Seen {
            tgid: FOLDED,
            comm: Comm::new("[folded]"),
            cgroup: CgroupId::UNKNOWN,
        };
        ledger.seen.insert(FOLDED, folded);
    }
    for (&code, &ns) in totals.orphan.iter().filter(|(_, ns)| **ns > 0) {
        *ledger.orphan.entry(decode_source(code)).or_default() += ns;
    }
    for (&(cpu, code), &ns) in totals.cpus.iter().filter(|(_, ns)| **ns > 0) {
        let by_source = ledger.cpus.entry(cpu).or_default();
        *by_source.entry(decode_source(code)).or_default() += ns;
    }
    // at most `ACCOUNTS` accounts, as the checkpoints' ledger keeps: an empty ledger folds
    // the rest as it absorbs them
    let mut bounded = Ledger::default();
    bounded.absorb(ledger);
    bounded
}

fn seen(who: &Identity) -> Seen {
    Seen {
        tgid: who.tgid,
        comm: Comm(who.comm),
        cgroup: CgroupId(who.cgroup),
    }
}

#[cfg(test)]
mod tests;
