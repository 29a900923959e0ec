//! account attributed in the kernel: the totals the BPF program keeps in its maps
//! (crates/probe/src/account.rs) turned into the ledger the report reads, the same one
//! the checkpoints' attribution in user space builds (crates/analyze/src/account).

use irqlens_analyze::account::{Ledger, Seen, Source};
use irqlens_model::kernel::Comm;
use irqlens_model::workload::CgroupId;
use irqlens_probe::account::{FOLDED, Identity, Totals};

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
    ledger
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
