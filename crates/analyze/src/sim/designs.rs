//! What each design changes: where a source's bottom half runs, at which priority, in
//! batches of how many packets, and whether the handler migrates to its target.

use irqlens_model::sched::Priority;
use irqlens_model::sim::{BottomHalves, DEFAULT_BUDGET, Design, Limits, Migration};
use irqlens_model::steer::served_priority;

/// kernel/irq/manage.c: setup_irq_thread gives irq threads sched_set_fifo(), i.e.
/// SCHED_FIFO at MAX_RT_PRIO / 2.
pub(super) const IRQ_THREAD_PRIORITY: Priority = Priority::Fifo(50);

/// Where a NAPI source's bottom half runs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum BottomHalf {
    /// NET_RX softirq at hardirq exit, then ksoftirqd.
    Softirq {
        /// Packets per net_rx_action (netdev_budget).
        budget: u32,
        /// Packets per poll of one device (its NAPI weight).
        weight: u32,
    },
    /// A thread of its own (threaded NAPI, an irq thread, 004's scheduled bottom half).
    Thread {
        /// Its policy and priority.
        priority: Priority,
        /// Packets per non-preemptible poll: napi_threaded_poll runs each __napi_poll
        /// under local_bh_disable() and reaches cond_resched() only between polls.
        batch: u32,
    },
}

/// The bottom half of a NAPI source under `design`, given its consumer's priority and
/// the nice the model gives a niced NAPI thread (none: the consumer's).
pub(super) fn bottom_half(
    design: &Design,
    limits: &Limits,
    consumer: Option<Priority>,
    thread_nice: Option<i32>,
) -> BottomHalf {
    let budget = design.budget.map(|budget| budget.packets(DEFAULT_BUDGET));
    let batch = budget.unwrap_or(limits.napi_weight);
    if design.process_aware
        && let Some(priority) = served_priority(consumer)
    {
        // 004 §3.2: the interrupt-level scheduler decides per bottom half (packet)
        // whether it or the interrupted process is more important.
        return BottomHalf::Thread { priority, batch: 1 };
    }
    match design.bottom_halves {
        BottomHalves::Stock => BottomHalf::Softirq {
            budget: budget.unwrap_or(limits.netdev_budget),
            weight: batch.min(limits.napi_weight),
        },
        BottomHalves::ThreadedFifo => BottomHalf::Thread {
            priority: IRQ_THREAD_PRIORITY,
            batch,
        },
        BottomHalves::ThreadedNiced => BottomHalf::Thread {
            // 003: the bottom-half thread time-shares with the process it feeds.
            priority: match (thread_nice, consumer) {
                (Some(nice), _) | (None, Some(Priority::Other { nice })) => {
                    Priority::Other { nice }
                }
                _ => Priority::Other { nice: 0 },
            },
            batch,
        },
    }
}

/// Whether the handler migrates to its waiting target (001 §3), and with direct
/// interrupt scheduling (001 §4).
pub(super) fn migrates(design: &Design) -> (bool, bool) {
    match design.migration {
        Migration::None => (false, false),
        Migration::Ihm => (true, false),
        Migration::IhmDis => (true, true),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(design: &str, consumer: Option<&str>) -> BottomHalf {
        bottom_half(
            &design.parse().unwrap(),
            &Limits::default(),
            consumer.map(|p| p.parse().unwrap()),
            None,
        )
    }

    #[test]
    fn each_design_puts_the_bottom_half_where_its_source_says() {
        assert_eq!(
            plan("stock", None),
            BottomHalf::Softirq {
                budget: 300,
                weight: 64
            }
        );
        assert_eq!(
            plan("stock+budget", None),
            BottomHalf::Softirq {
                budget: 32,
                weight: 32
            }
        );
        assert_eq!(
            plan("threaded-fifo", Some("o:0")),
            BottomHalf::Thread {
                priority: Priority::Fifo(50),
                batch: 64
            }
        );
        assert_eq!(
            plan("threaded-niced+budget", Some("o:5")),
            BottomHalf::Thread {
                priority: Priority::Other { nice: 5 },
                batch: 32
            }
        );
        assert_eq!(
            plan("stock+process-aware", Some("f:80")),
            BottomHalf::Thread {
                priority: Priority::Fifo(80),
                batch: 1
            }
        );
        assert_eq!(
            migrates(&"threaded-fifo+ihm-dis".parse().unwrap()),
            (true, true)
        );
    }

    #[test]
    fn a_niced_thread_takes_the_models_nice_over_its_consumers() {
        let niced = |thread_nice| {
            bottom_half(
                &"threaded-niced".parse().unwrap(),
                &Limits::default(),
                Some(Priority::Other { nice: -10 }),
                thread_nice,
            )
        };
        let priority = |half| match half {
            BottomHalf::Thread { priority, .. } => priority,
            other => panic!("{other:?}"),
        };
        assert_eq!(priority(niced(None)), Priority::Other { nice: -10 });
        assert_eq!(priority(niced(Some(-5))), Priority::Other { nice: -5 });
        // a FIFO thread keeps its class whatever the nice
        let fifo = bottom_half(
            &"threaded-fifo".parse().unwrap(),
            &Limits::default(),
            None,
            Some(-5),
        );
        assert_eq!(priority(fifo), Priority::Fifo(50));
    }
}
