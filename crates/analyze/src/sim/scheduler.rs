//! The scheduler, as far as the results need it: fixed-priority preemptive for
//! SCHED_FIFO/SCHED_RR, a weighted fair share for SCHED_OTHER.
//!
//! SCHED_OTHER: each thread's virtual runtime grows by `ran × 1024 / weight` (the weights
//! of kernel/sched/core.c's `sched_prio_to_weight`); the thread with the smallest one
//! runs, for a slice of `sysctl_sched_base_slice` (0.75 ms, kernel/sched/fair.c; the
//! kernel scales it by 1 + log2(CPUs), set `base_slice_us` to the machine's) when others
//! wait. A waking thread keeps what it is owed up to one slice: it is placed at no less
//! than the CPU's minimum virtual runtime minus a slice (EEVDF's place_entity keeps the
//! lag, clamped), and preempts the running SCHED_OTHER thread if it is then behind it
//! (earlier virtual deadline at equal slices). A thread that sleeps little (an
//! interrupt-driven server) so preempts a hog at once; two hogs share by slices.
//!
//! Not modelled: load balancing (every thread is pinned), RR's quantum (RR runs as FIFO:
//! its 100 ms RR_TIMESLICE is beyond what these results look at), SCHED_DEADLINE.

use irqlens_model::sched::Priority;
use irqlens_model::steer::rank;

/// kernel/sched/core.c: sched_prio_to_weight, nice -20 to 19.
const NICE_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// The weight of nice 0 (NICE_0_LOAD without the fixed-point shift).
pub(super) const NICE_0_WEIGHT: f64 = 1024.0;

/// The fair-share weight of a priority (real-time ones do not use it).
pub(super) fn weight(priority: Priority) -> f64 {
    match priority {
        Priority::Other { nice } => f64::from(NICE_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]),
        _ => NICE_0_WEIGHT,
    }
}

/// Whether a priority is real-time (FIFO or RR).
pub(super) fn is_realtime(priority: Priority) -> bool {
    matches!(priority, Priority::Fifo(_) | Priority::RoundRobin(_))
}

/// What the scheduler needs to know of a runnable thread.
#[derive(Clone, Copy, Debug)]
pub(super) struct Candidate {
    pub id: usize,
    pub priority: Priority,
    pub vruntime: f64,
    /// When it was last queued (smaller: waited longer).
    pub queued_at: u64,
}

/// The thread to run next among `runnable`, given the `current` one (if runnable, it is
/// among them) and whether its SCHED_OTHER slice is used up.
pub(super) fn pick(
    runnable: &[Candidate],
    current: Option<usize>,
    slice_used_up: bool,
) -> Option<usize> {
    let is_current = |c: &Candidate| Some(c.id) == current;
    let realtime = runnable
        .iter()
        .filter(|c| is_realtime(c.priority))
        // Highest priority; at equal priority the running thread keeps the CPU (a
        // preempted FIFO thread goes back to the head of its list), then the longest
        // waiting.
        .max_by_key(|c| {
            (
                rank(&c.priority),
                is_current(c),
                std::cmp::Reverse(c.queued_at),
            )
        });
    if let Some(best) = realtime {
        return Some(best.id);
    }
    if let Some(current) = runnable.iter().find(|c| is_current(c))
        && !slice_used_up
    {
        return Some(current.id);
    }
    runnable
        .iter()
        .min_by(|a, b| {
            a.vruntime
                .total_cmp(&b.vruntime)
                .then(a.queued_at.cmp(&b.queued_at))
        })
        .map(|c| c.id)
}

/// Whether a thread at `woken` preempts one at `running` at once (a real-time thread
/// above the running one; SCHED_OTHER never preempts SCHED_OTHER before its slice ends).
pub(super) fn preempts(woken: Priority, running: Option<Priority>) -> bool {
    match running {
        None => true,
        Some(running) => is_realtime(woken) && rank(&woken) > rank(&running),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(id: usize, priority: &str, vruntime: f64, queued_at: u64) -> Candidate {
        Candidate {
            id,
            priority: priority.parse().unwrap(),
            vruntime,
            queued_at,
        }
    }

    #[test]
    fn realtime_first_then_fifo_order_then_fair_share() {
        let rt_low = candidate(1, "f:10", 0.0, 5);
        let rt_high = candidate(2, "f:50", 0.0, 9);
        let other = candidate(3, "o:0", 0.0, 1);
        assert_eq!(pick(&[rt_low, rt_high, other], Some(3), false), Some(2));
        let rt_peer = candidate(4, "f:50", 0.0, 1);
        // The running FIFO thread keeps the CPU against a peer that waited longer.
        assert_eq!(pick(&[rt_high, rt_peer], Some(2), false), Some(2));
        assert_eq!(pick(&[rt_high, rt_peer], None, false), Some(4));
        let behind = candidate(5, "o:0", 10.0, 0);
        let ahead = candidate(6, "o:0", 20.0, 0);
        assert_eq!(pick(&[behind, ahead], Some(6), false), Some(6));
        assert_eq!(pick(&[behind, ahead], Some(6), true), Some(5));
        assert_eq!(pick(&[], Some(6), false), None);
    }

    #[test]
    fn nice_weights_follow_the_kernel_table() {
        assert_eq!(weight("o:0".parse().unwrap()), 1024.0);
        assert_eq!(weight("o:5".parse().unwrap()), 335.0);
        assert_eq!(weight("o:-20".parse().unwrap()), 88761.0);
        assert!(preempts(
            "f:1".parse().unwrap(),
            Some("o:-20".parse().unwrap())
        ));
        assert!(!preempts(
            "o:-20".parse().unwrap(),
            Some("o:19".parse().unwrap())
        ));
    }
}
