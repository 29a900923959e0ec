//! The attribution in C (account.h, built for the host) against the Rust ledger, on the
//! recorded fixtures' checkpoints: the same totals, to the ns.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::*;
use irqlens_analyze::account::{Attributor, BySource, ThreadAccount, total};
use irqlens_model::event::{Event, EventData};
use irqlens_probe::account::{AcctEvent, HostAttribution, Kind};
use irqlens_record::{Line, Reader};

/// The checkpoint as account.h takes it; `irqlens`: the thread it names is irqlens's.
fn acct_event(e: &Event, irqlens: bool) -> AcctEvent {
    let mut a = AcctEvent::new(Kind::Other, e.time_ns, e.pid);
    a.irqlens = irqlens as u8;
    let name = |a: &mut AcctEvent, tid: u32, tgid: u32, comm: Comm, cgroup: CgroupId| {
        a.tid = tid;
        a.named = 1;
        a.who = Identity {
            cgroup: cgroup.0,
            tgid,
            comm: comm.0,
        };
    };
    let kind = match e.what {
        EventData::IrqEntry {
            source,
            line_or_vector,
        } => {
            (a.source, a.id) = (source, line_or_vector);
            Kind::IrqEntry
        }
        EventData::IrqExit { line_or_vector } => {
            a.id = line_or_vector;
            Kind::IrqExit
        }
        EventData::SoftirqRaise { vector } => {
            a.id = vector;
            Kind::SoftirqRaise
        }
        EventData::SoftirqEntry { vector } => {
            a.id = vector;
            Kind::SoftirqEntry
        }
        EventData::SoftirqExit { vector } => {
            a.id = vector;
            Kind::SoftirqExit
        }
        EventData::Switch {
            next_pid,
            next_tgid,
            next_comm,
            next_cgroup,
        } => {
            name(&mut a, next_pid, next_tgid, next_comm, next_cgroup);
            Kind::Switch
        }
        EventData::Wakeup {
            woken_pid,
            woken_tgid,
            woken_comm,
            woken_cgroup,
            ..
        } => {
            name(&mut a, woken_pid, woken_tgid, woken_comm, woken_cgroup);
            Kind::Wakeup
        }
        EventData::Nmi { duration_ns } => {
            a.ptr = duration_ns;
            Kind::NmiEnd
        }
        EventData::TimerExpire { hrtimer, .. } => {
            a.ptr = hrtimer;
            Kind::TimerExpire
        }
        EventData::TimerExpireExit { hrtimer } => {
            a.ptr = hrtimer;
            Kind::TimerExpireExit
        }
        EventData::SockData { reader, .. } => {
            a.tid = reader;
            Kind::SockData
        }
        _ => Kind::Other,
    };
    a.kind = kind as u8;
    a
}

/// The thread an event names, whose irqlens-ness account.h is told.
fn named(e: &Event) -> Option<u32> {
    match e.what {
        EventData::Switch { next_pid, .. } => Some(next_pid),
        EventData::Wakeup { woken_pid, .. } => Some(woken_pid),
        EventData::SockData { reader, .. } => Some(reader),
        _ => None,
    }
}

/// account.h's wakeup IPIs: reschedule, call function, call function single.
fn is_wakeup_ipi(source: Source) -> bool {
    matches!(source, Source::Hardirq { source: 2..=4, .. })
}

fn nonzero(by_source: &BySource) -> BySource {
    by_source
        .iter()
        .filter(|(_, ns)| **ns > 0)
        .map(|(&s, &ns)| (s, ns))
        .collect()
}

/// A ledger's numbers without the zeros the Rust side notes (a share of nothing).
fn numbers(ledger: &Ledger) -> (HashMap<u32, ThreadAccount>, BySource, Vec<(u32, BySource)>) {
    let threads = ledger
        .threads
        .iter()
        .map(|(&tid, account)| {
            let account = ThreadAccount {
                charged: nonzero(&account.charged),
                for_irqlens: nonzero(&account.for_irqlens),
                served: nonzero(&account.served),
                units: account.units,
                // the kernel keeps no time of a thread's last interrupt
                last_ns: 0,
            };
            (tid, account)
        })
        .filter(|(_, account)| *account != ThreadAccount::default())
        .collect();
    let cpus = ledger
        .cpus
        .iter()
        .map(|(&cpu, by_source)| (cpu, nonzero(by_source)))
        .filter(|(_, by_source)| !by_source.is_empty())
        .collect();
    (threads, nonzero(&ledger.orphan), cpus)
}

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../irqlens/tests/fixtures");
    let mut paths: Vec<PathBuf> = ["v1", "v2"]
        .iter()
        .flat_map(|version| std::fs::read_dir(root.join(version)).expect("fixtures"))
        .map(|entry| entry.expect("fixture").path())
        .filter(|path| path.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    paths.sort();
    paths
}

struct Both {
    rust: Attributor,
    c: HostAttribution,
    events: usize,
}

/// What the C side is fed of the checkpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Feed {
    /// All of them, as user space has them.
    Checkpoints,
    /// As the kernel side sees them: no switch (it follows none), and each interrupt's
    /// entry names its current thread (what the checkpoints last told of it).
    Kernel,
}

fn attribute_both(path: &Path, feed: Feed) -> Both {
    let mut reader = Reader::open(path).expect("a recording");
    let irqlens = reader.header().pid;
    let mut both = Both {
        rust: Attributor::new(None, irqlens),
        c: HostAttribution::new(irqlens.is_some()),
        events: 0,
    };
    while let Some(line) = reader.next_input().expect("readable") {
        let Line::Event(e) = line else { continue };
        both.rust.add(&e);
        // what the Rust side knows of the named thread once the event is in
        let rust = both.rust.ledger();
        let irqlens = named(&e).is_some_and(|tid| rust.is_irqlens(tid));
        let mut a = acct_event(&e, irqlens);
        a.current_irqlens = rust.is_irqlens(e.pid) as u8;
        if feed == Feed::Kernel {
            // what account.bpf.c does not hook never reaches the kernel side: the switches,
            // and the tasklet, work item and timer-start checkpoints (which carry a current
            // thread that would settle an IPI or heal where the kernel cannot)
            if a.kind == Kind::Other as u8 {
                continue;
            }
            match e.what {
                EventData::Switch { .. } => continue,
                EventData::IrqEntry { .. }
                | EventData::SoftirqEntry { .. }
                | EventData::Nmi { .. } => {
                    if let Some(known) = rust.seen.get(&e.pid) {
                        let who = Identity {
                            cgroup: known.cgroup.0,
                            tgid: known.tgid,
                            comm: known.comm.0,
                        };
                        a = a.naming_current(who, rust.is_irqlens(e.pid));
                    }
                }
                _ => {}
            }
        }
        both.c.step(e.cpu, &a);
        both.events += 1;
    }
    both.rust.finish();
    both.c.finish();
    both
}

#[test]
fn the_c_attribution_matches_the_rust_ledger_on_every_fixture() {
    for feed in [Feed::Checkpoints, Feed::Kernel] {
        matches_on_every_fixture(feed);
    }
}

fn matches_on_every_fixture(feed: Feed) {
    let mut checked = 0;
    for path in fixtures() {
        let both = attribute_both(&path, feed);
        if both.events == 0 {
            continue;
        }
        let name = format!("{} ({feed:?})", path.display());
        assert_eq!(
            both.c.totals.inexact, 0,
            "{name}: nothing past account.h's bounds"
        );
        let rust = both.rust.ledger();
        let c = ledger(&both.c.totals, rust.irqlens);
        let (mut rust_threads, rust_orphan, mut rust_cpus) = numbers(rust);
        let (mut c_threads, c_orphan, mut c_cpus) = numbers(&c);
        if feed == Feed::Kernel {
            let own = |threads: &HashMap<u32, ThreadAccount>| -> u64 {
                threads.values().map(|a| total(&a.for_irqlens)).sum()
            };
            println!(
                "{name}: irqlens's own work {} ns, {} ns with the switches",
                own(&c_threads),
                own(&rust_threads)
            );
            // a wakeup IPI is irqlens's if the next thread with an event is, not the next
            // one switched to: only those may differ
            for (threads, cpus) in [
                (&mut c_threads, &mut c_cpus),
                (&mut rust_threads, &mut rust_cpus),
            ] {
                for account in threads.values_mut() {
                    account
                        .for_irqlens
                        .retain(|&source, _| !is_wakeup_ipi(source));
                }
                for (_, by_source) in cpus.iter_mut() {
                    by_source.retain(|&source, _| !is_wakeup_ipi(source));
                }
            }
        }
        let mut tids: Vec<u32> = rust_threads
            .keys()
            .chain(c_threads.keys())
            .copied()
            .collect();
        tids.sort();
        tids.dedup();
        for tid in tids {
            assert_eq!(
                c_threads.get(&tid),
                rust_threads.get(&tid),
                "{name}: thread {tid}"
            );
        }
        assert_eq!(c_orphan, rust_orphan, "{name}: orphan");
        assert_eq!(c_cpus, rust_cpus, "{name}: per CPU");
        assert!(
            !rust_threads.is_empty(),
            "{name}: the fixture has interrupts"
        );
        // the threads the C side names are in the process and cgroup the checkpoints
        // last said; their name is the one of their last interrupt, which an exec since
        // (bash becoming hackbench) changes: the report reads /proc's first
        for (tid, seen) in &c.seen {
            let last = rust.seen.get(tid).map(|seen| (seen.tgid, seen.cgroup));
            assert_eq!(Some((seen.tgid, seen.cgroup)), last, "{name}: thread {tid}");
        }
        checked += 1;
    }
    assert!(checked >= 2, "the account fixtures at least");
}
