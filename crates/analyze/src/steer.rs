//! `irqlens steer`'s decisions: which processes each bottom-half thread serves (from the
//! data it queues to their sockets), and the scheduling it should have for them: that of
//! the highest-priority process waiting on it (Zhang & West §3.2), its own when none has
//! waited for `hold`.

use std::collections::BTreeMap;
use std::time::Duration;

use irqlens_model::sched::Priority;
use irqlens_model::steer::served_priority;

/// Whether a thread named `comm` runs bottom halves irqlens steers: threaded NAPI
/// (`napi/DEV-N`), threaded IRQ handlers (`irq/N-name`), and ksoftirqd unless left out.
/// `devices` (if any) keeps the NAPI and IRQ threads of those devices only.
pub fn is_bottom_half_thread(comm: &str, devices: &[String], ksoftirqd: bool) -> bool {
    if let Some(rest) = comm.strip_prefix("ksoftirqd/") {
        return ksoftirqd && rest.chars().all(|c| c.is_ascii_digit());
    }
    let named = |rest: &str| devices.is_empty() || devices.iter().any(|d| rest.contains(d));
    if let Some(rest) = comm.strip_prefix("napi/") {
        // napi/DEV-ID: the device is what precedes the last dash (kernel: "napi/%s-%d")
        let device = rest.rsplit_once('-').map_or(rest, |(device, _)| device);
        return devices.is_empty() || devices.iter().any(|d| d == device);
    }
    comm.strip_prefix("irq/").is_some_and(named)
}

/// A change of one thread's scheduling that is due.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    /// The bottom-half thread.
    pub thread: u32,
    /// Its scheduling now.
    pub from: Priority,
    /// The scheduling it should have.
    pub to: Priority,
    /// The waiter whose priority it takes; none: nobody waits, back to its own.
    pub because: Option<u32>,
}

/// What one bottom-half thread serves, and the scheduling steer gave it.
#[derive(Clone, Debug, Default)]
struct Served {
    /// Each reader's last delivery, ns.
    last_delivery: BTreeMap<u32, u64>,
    /// Deliveries per reader.
    deliveries: BTreeMap<u32, u64>,
    /// Its scheduling when first decided on, and what steer set since.
    original: Option<Priority>,
    current: Option<Priority>,
}

/// The state of the steering: fed deliveries, asked for decisions.
#[derive(Clone, Debug)]
pub struct Steering {
    hold_ns: u64,
    threads: BTreeMap<u32, Served>,
}

impl Steering {
    /// Waiters count for `hold` after their last delivery.
    pub fn new(hold: Duration) -> Self {
        Steering {
            hold_ns: hold.as_nanos() as u64,
            threads: BTreeMap::new(),
        }
    }

    /// `thread` queued data to a socket `reader` reads, at `at_ns`.
    pub fn delivered(&mut self, thread: u32, reader: u32, at_ns: u64) {
        let served = self.threads.entry(thread).or_default();
        let last = served.last_delivery.entry(reader).or_insert(at_ns);
        *last = (*last).max(at_ns);
        *served.deliveries.entry(reader).or_default() += 1;
    }

    /// The changes due at `now_ns`. `scheduling` reads a thread's current scheduling
    /// (none: it is gone or irqlens cannot read it); a thread is read once, when first
    /// decided on, and what it is given is remembered.
    pub fn decide(
        &mut self,
        now_ns: u64,
        scheduling: &mut dyn FnMut(u32) -> Option<Priority>,
    ) -> Vec<Decision> {
        let mut due = Vec::new();
        for (&thread, served) in &mut self.threads {
            if served.original.is_none() {
                served.original = scheduling(thread);
                served.current = served.original;
            }
            let (Some(original), Some(current)) = (served.original, served.current) else {
                continue;
            };
            let hold = self.hold_ns;
            let waiting: Vec<(u32, Priority)> = served
                .last_delivery
                .iter()
                .filter(|&(_, &last)| last + hold > now_ns)
                .filter_map(|(&reader, _)| Some((reader, scheduling(reader)?)))
                .collect();
            let wanted = served_priority(waiting.iter().map(|&(_, p)| p));
            let because = wanted.and_then(|wanted| {
                waiting
                    .iter()
                    .find(|&&(_, p)| served_priority([p]) == Some(wanted))
                    .map(|&(reader, _)| reader)
            });
            let to = wanted.unwrap_or(original);
            if to != current {
                served.current = Some(to);
                due.push(Decision {
                    thread,
                    from: current,
                    to,
                    because,
                });
            }
        }
        due
    }

    /// Forgets a thread (gone, or its change refused): it is not decided on again.
    pub fn forget(&mut self, thread: u32) {
        self.threads.remove(&thread);
    }

    /// Each thread seen: its scheduling when first seen, now, and its deliveries per
    /// reader.
    pub fn threads(
        &self,
    ) -> impl Iterator<Item = (u32, Option<Priority>, Option<Priority>, &BTreeMap<u32, u64>)> {
        self.threads
            .iter()
            .map(|(&tid, s)| (tid, s.original, s.current, &s.deliveries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn bottom_half_threads_by_name() {
        let none: &[String] = &[];
        let veth = ["veth1".to_string()];
        assert!(is_bottom_half_thread("napi/veth1-8193", none, true));
        assert!(is_bottom_half_thread("napi/veth1-8193", &veth, true));
        assert!(!is_bottom_half_thread("napi/veth10-8193", &veth, true));
        assert!(!is_bottom_half_thread("napi/eth0-1", &veth, true));
        assert!(is_bottom_half_thread("irq/34-virtio4", none, true));
        assert!(is_bottom_half_thread("ksoftirqd/1", &veth, true));
        assert!(!is_bottom_half_thread("ksoftirqd/1", none, false));
        assert!(!is_bottom_half_thread("python3", none, true));
        assert!(!is_bottom_half_thread("kworker/1:0", none, true));
    }

    /// Threads 10 (a NAPI thread, SCHED_OTHER nice 0) and readers 20 (FIFO 80), 30 (nice 5).
    fn scheduling(tid: u32) -> Option<Priority> {
        match tid {
            10 => Some(Priority::Other { nice: 0 }),
            20 => Some(Priority::Fifo(80)),
            30 => Some(Priority::Other { nice: 5 }),
            _ => None,
        }
    }

    #[test]
    fn a_thread_takes_its_highest_waiter_and_goes_back_after_hold() {
        let mut steering = Steering::new(Duration::from_millis(100));
        steering.delivered(10, 30, 0);
        let due = steering.decide(MS, &mut scheduling);
        assert_eq!(
            due,
            [Decision {
                thread: 10,
                from: Priority::Other { nice: 0 },
                to: Priority::Other { nice: 5 },
                because: Some(30),
            }]
        );
        // nothing new: nothing due
        assert!(steering.decide(2 * MS, &mut scheduling).is_empty());
        // the real-time reader raises it at once
        steering.delivered(10, 20, 3 * MS);
        let due = steering.decide(4 * MS, &mut scheduling);
        assert_eq!(due[0].to, Priority::Fifo(80));
        assert_eq!(due[0].because, Some(20));
        // the nice reader keeps being served: the thread stays at 80 while 20 waits
        for t in 5..100 {
            steering.delivered(10, 30, t * MS);
            assert!(steering.decide(t * MS, &mut scheduling).is_empty(), "{t}");
        }
        // 20 quiet for hold: lowered to the one still waiting
        steering.delivered(10, 30, 103 * MS);
        let due = steering.decide(103 * MS + 1, &mut scheduling);
        assert_eq!(due[0].from, Priority::Fifo(80));
        assert_eq!(due[0].to, Priority::Other { nice: 5 });
        // nobody for hold: back to its own
        let due = steering.decide(300 * MS, &mut scheduling);
        assert_eq!(due[0].to, Priority::Other { nice: 0 });
        assert_eq!(due[0].because, None);
        let (tid, original, current, deliveries) = steering.threads().next().unwrap();
        assert_eq!(
            (tid, original, current),
            (10, scheduling(10), scheduling(10))
        );
        assert_eq!(deliveries[&20], 1);
        assert_eq!(deliveries[&30], 97);
    }

    #[test]
    fn readers_that_are_gone_do_not_count_and_forgotten_threads_are_left() {
        let mut steering = Steering::new(Duration::from_millis(100));
        steering.delivered(10, 99, 0);
        assert!(steering.decide(MS, &mut scheduling).is_empty());
        steering.delivered(11, 20, 0);
        // thread 11 cannot be read: never decided on
        assert!(steering.decide(MS, &mut scheduling).is_empty());
        steering.delivered(10, 20, 2 * MS);
        steering.forget(10);
        assert!(steering.decide(3 * MS, &mut scheduling).is_empty());
    }
}
