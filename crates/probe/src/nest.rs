//! Tests of the nesting rules R1-R7 as the BPF program applies them: the same C header
//! (src/bpf/nest.h), compiled for the host by build.rs, fed synthetic event streams.

use crate::noise::NestState;

unsafe extern "C" {
    fn irqlens_nest_enter(n: *mut NestState, cls: u32, now: u64, seq: u64, id: u32, source: u16);
    fn irqlens_nest_exit(n: *mut NestState, cls: u32, now: u64, duration: *mut u64) -> i32;
}

const THREAD: u32 = 0;
const SOFTIRQ: u32 = 1;
const IRQ: u32 = 2;
const NMI: u32 = 3;

#[derive(Default)]
struct Cpu(NestState);

impl Cpu {
    fn enter(&mut self, cls: u32, now: u64) {
        unsafe { irqlens_nest_enter(&mut self.0, cls, now, 0, 0, 0) }
    }

    fn exit(&mut self, cls: u32, now: u64) -> Option<u64> {
        let mut duration = 0;
        (unsafe { irqlens_nest_exit(&mut self.0, cls, now, &mut duration) } == 1)
            .then_some(duration)
    }
}

#[test]
fn a_context_alone_reports_its_wall_time() {
    for cls in [THREAD, SOFTIRQ, IRQ, NMI] {
        let mut cpu = Cpu::default();
        cpu.enter(cls, 1_000);
        assert_eq!(cpu.exit(cls, 1_250), Some(250));
    }
}

#[test]
fn every_pair_of_classes_subtracts_the_inner_one() {
    // a higher class inside a lower one: the outer reports its time less the inner's
    for outer in [THREAD, SOFTIRQ, IRQ] {
        for inner in (outer + 1)..=NMI {
            let mut cpu = Cpu::default();
            cpu.enter(outer, 0);
            cpu.enter(inner, 10);
            assert_eq!(cpu.exit(inner, 30), Some(20), "inner {inner} in {outer}");
            assert_eq!(
                cpu.exit(outer, 100),
                Some(80),
                "outer {outer} around {inner}"
            );
        }
    }
}

#[test]
fn four_deep_nesting_thread_softirq_irq_nmi() {
    let mut cpu = Cpu::default();
    cpu.enter(THREAD, 0);
    cpu.enter(SOFTIRQ, 100);
    cpu.enter(IRQ, 200);
    cpu.enter(NMI, 250);
    assert_eq!(cpu.exit(NMI, 300), Some(50));
    assert_eq!(cpu.exit(IRQ, 400), Some(150));
    assert_eq!(cpu.exit(SOFTIRQ, 600), Some(300));
    assert_eq!(cpu.exit(THREAD, 1_000), Some(500));
}

#[test]
fn softirq_run_at_irq_exit_follows_the_irq() {
    // irq_exit() runs pending softirqs after the handler: siblings, not nested
    let mut cpu = Cpu::default();
    cpu.enter(THREAD, 0);
    cpu.enter(IRQ, 10);
    assert_eq!(cpu.exit(IRQ, 20), Some(10));
    cpu.enter(SOFTIRQ, 20);
    cpu.enter(IRQ, 30);
    assert_eq!(cpu.exit(IRQ, 35), Some(5));
    assert_eq!(cpu.exit(SOFTIRQ, 50), Some(25));
    assert_eq!(cpu.exit(THREAD, 100), Some(60));
}

#[test]
fn an_exit_without_entry_is_ignored() {
    let mut cpu = Cpu::default();
    assert_eq!(cpu.exit(IRQ, 10), None);
    cpu.enter(THREAD, 0);
    assert_eq!(cpu.exit(THREAD, 5), Some(5));
    assert_eq!(cpu.exit(THREAD, 9), None);
}

/// Random well-nested streams: the interference-free times always add up to the wall
/// time of the outermost context, and none is negative.
#[test]
fn random_nestings_conserve_time() {
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move |bound: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % bound
    };
    for _ in 0..2_000 {
        let mut cpu = Cpu::default();
        let mut now = next(1_000);
        let start = now;
        let mut total = 0;
        // open a random chain of increasing classes, close them in reverse with random
        // sibling contexts in between
        let mut stack = vec![];
        let mut cls = next(4) as u32;
        loop {
            cpu.enter(cls, now);
            stack.push(cls);
            now += next(50);
            if cls == NMI || next(3) == 0 {
                break;
            }
            cls += 1 + next((NMI - cls) as u64) as u32;
        }
        while let Some(cls) = stack.pop() {
            if cls < NMI && next(2) == 0 {
                let sibling = cls + 1 + next((NMI - cls) as u64) as u32;
                cpu.enter(sibling, now);
                now += next(50);
                total += cpu.exit(sibling, now).unwrap();
            }
            now += next(50);
            total += cpu.exit(cls, now).unwrap();
        }
        assert_eq!(total, now - start);
    }
}
