//! What one CPU ran, and when: the innermost context at every instant, rebuilt from
//! the checkpoints (a thread, with hardirqs, softirqs, hrtimer callbacks and NMIs
//! nested on it), kept for the recent past.

use std::collections::VecDeque;

use irqlens_model::event::{Event, EventData};

/// Closed intervals (and switch times) kept per CPU; a window reaching further back is
/// incomplete. About 1 MiB per CPU.
const HISTORY: usize = 1 << 14;
/// Contexts nested on a thread: hardirq, softirq, hrtimer callback, NMI, and a little
/// room. Deeper means exits were lost (a switch clears the stack): the outermost entries,
/// the stalest, are dropped.
const DEPTH: usize = 8;

/// The innermost thing a CPU was running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Context {
    /// A thread, by id (0: idle).
    Thread(u32),
    /// `since` (its entry) tells one hardirq from another of the same line.
    Hardirq {
        /// What raised it (`enum irq_source`; 0: a device line).
        source: u16,
        /// The IRQ line or vector.
        id: u32,
        /// Its entry, CLOCK_MONOTONIC ns.
        since: u64,
    },
    /// A softirq vector.
    Softirq(u16),
    /// An hrtimer callback.
    Timer {
        /// The hrtimer's address.
        hrtimer: u64,
        /// The callback's address.
        function: u64,
        /// Its entry, CLOCK_MONOTONIC ns.
        since: u64,
    },
    /// An NMI.
    Nmi,
}

/// A stretch of time spent in one context, on top of `thread`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    /// CLOCK_MONOTONIC ns.
    pub start: u64,
    /// CLOCK_MONOTONIC ns.
    pub end: u64,
    /// The innermost context in it.
    pub context: Context,
    /// The thread current under it.
    pub thread: u32,
}

/// One CPU's contexts over the recent past, rebuilt from its checkpoints.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    started: bool,
    thread: u32,
    stack: Vec<Context>,
    since: u64,
    last_ns: u64,
    closed: VecDeque<Slice>,
    /// Closed slices not yet handed out by `take_closed` (at most HISTORY).
    untaken: usize,
    switches: VecDeque<u64>,
}

impl Timeline {
    /// Follows one checkpoint of this CPU (in time order). Returns the context an exit
    /// event closed, if any.
    pub fn add(&mut self, e: &Event) -> Option<Context> {
        // a record can be stamped a little before the one ahead of it in the ring (an
        // NMI or IRQ between a program's reserve and its clock read): never go back
        let t = e.time_ns.max(self.last_ns);
        if !self.started {
            (self.started, self.since, self.thread) = (true, t, e.pid);
        }
        // Checkpoints carry the current thread: a switch the probe lost heals here.
        let switch = matches!(e.what, EventData::Switch { .. });
        if self.stack.is_empty() && !switch && e.pid != self.thread {
            self.close(t);
            self.thread = e.pid;
        }
        self.last_ns = t;
        match e.what {
            EventData::IrqEntry {
                source,
                line_or_vector,
            } => self.enter(
                t,
                Context::Hardirq {
                    source,
                    id: line_or_vector.into(),
                    since: t,
                },
            ),
            EventData::IrqExit { .. } => {
                return self.leave(t, |c| matches!(c, Context::Hardirq { .. }));
            }
            EventData::SoftirqEntry { vector } => self.enter(t, Context::Softirq(vector)),
            EventData::SoftirqExit { .. } => {
                return self.leave(t, |c| matches!(c, Context::Softirq(_)));
            }
            EventData::TimerExpire { hrtimer, function } => self.enter(
                t,
                Context::Timer {
                    hrtimer,
                    function,
                    since: t,
                },
            ),
            EventData::TimerExpireExit { hrtimer: left } => {
                return self.leave(
                    t,
                    |c| matches!(c, Context::Timer { hrtimer, .. } if hrtimer == left),
                );
            }
            EventData::Switch { next_pid, .. } => {
                self.close(t);
                self.stack.clear();
                self.thread = next_pid;
                push_bounded(&mut self.switches, t);
            }
            EventData::Nmi { duration_ns } => self.nmi(t, duration_ns),
            _ => {}
        }
        None
    }

    /// The innermost context now.
    pub fn current(&self) -> Context {
        self.stack
            .last()
            .copied()
            .unwrap_or(Context::Thread(self.thread))
    }

    /// The thread current now.
    pub fn thread(&self) -> u32 {
        self.thread
    }

    /// Interrupt contexts nested on the thread, outermost first.
    pub fn stack(&self) -> &[Context] {
        &self.stack
    }

    /// Time of the latest checkpoint followed.
    pub fn last_ns(&self) -> u64 {
        self.last_ns
    }

    /// The slices covering `from..to`, cut to it; the open one counts as lasting to
    /// `to`. `false` if the history does not reach back to `from`.
    pub fn slices(&self, from: u64, to: u64) -> (Vec<Slice>, bool) {
        let complete = self.started && self.closed.front().map_or(self.since, |s| s.start) <= from;
        let open = Slice {
            start: self.since,
            end: to.max(self.since),
            context: self.current(),
            thread: self.thread,
        };
        // closed slices are in time order: skip those ending before `from`
        let first = self.closed.partition_point(|s| s.end <= from);
        let slices = self
            .closed
            .range(first..)
            .chain(std::iter::once(&open))
            .filter(|s| s.end > from && s.start < to)
            .map(|s| Slice {
                start: s.start.max(from),
                end: s.end.min(to),
                ..*s
            })
            .collect();
        (slices, complete)
    }

    /// The slices closed since the last call, in time order: for consumers that keep
    /// totals rather than look back.
    pub fn take_closed(&mut self) -> impl Iterator<Item = &Slice> {
        let first = self.closed.len() - self.untaken;
        self.untaken = 0;
        self.closed.range(first..)
    }

    /// Context switches in `(from, to]`.
    pub fn switches_between(&self, from: u64, to: u64) -> u32 {
        let first = self.switches.partition_point(|&t| t <= from);
        let end = self.switches.partition_point(|&t| t <= to);
        end.saturating_sub(first) as u32
    }

    fn enter(&mut self, t: u64, context: Context) {
        self.close(t);
        if self.stack.len() == DEPTH {
            self.stack.remove(0);
        }
        self.stack.push(context);
    }

    /// Pops up to the innermost context `matches` accepts; an exit whose entry came
    /// before tracing began changes nothing.
    fn leave(&mut self, t: u64, matches: impl Fn(Context) -> bool) -> Option<Context> {
        let depth = self.stack.iter().rposition(|&c| matches(c))?;
        self.close(t);
        let left = self.stack[depth];
        self.stack.truncate(depth);
        Some(left)
    }

    /// The NMI checkpoint comes at its end, with its duration: the time is carved out
    /// of whatever it interrupted.
    fn nmi(&mut self, t: u64, duration_ns: u64) {
        let start = t.saturating_sub(duration_ns).max(self.since);
        self.close(start);
        self.push_closed(Slice {
            start,
            end: t,
            context: Context::Nmi,
            thread: self.thread,
        });
        self.since = t;
    }

    fn close(&mut self, t: u64) {
        if t > self.since {
            let slice = Slice {
                start: self.since,
                end: t,
                context: self.current(),
                thread: self.thread,
            };
            self.push_closed(slice);
            self.since = t;
        }
    }

    fn push_closed(&mut self, slice: Slice) {
        push_bounded(&mut self.closed, slice);
        self.untaken = (self.untaken + 1).min(HISTORY);
    }
}

/// Appends, forgetting the oldest entry past HISTORY.
fn push_bounded<T>(history: &mut VecDeque<T>, item: T) {
    if history.len() == HISTORY {
        history.pop_front();
    }
    history.push_back(item);
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::event::EventData::*;
    use irqlens_model::kernel::Comm;

    fn event(what: EventData, us: u64, pid: u32) -> Event {
        Event {
            pid,
            ..Event::new(what, 0, us * 1000)
        }
    }

    fn switch_to(next_pid: u32, us: u64, pid: u32) -> Event {
        let what = Switch {
            next_pid,
            next_tgid: 0,
            next_comm: Comm::default(),
            next_cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        };
        event(what, us, pid)
    }

    #[test]
    fn nested_contexts_become_slices() {
        let mut timeline = Timeline::default();
        let irq = IrqEntry {
            source: 1,
            line_or_vector: 236,
        };
        timeline.add(&event(SoftirqRaise { vector: 0 }, 0, 7));
        timeline.add(&event(irq, 10, 7));
        timeline.add(&event(SoftirqEntry { vector: 0 }, 12, 7));
        timeline.add(&event(SoftirqExit { vector: 0 }, 15, 7));
        timeline.add(&event(
            IrqExit {
                line_or_vector: 236,
            },
            20,
            7,
        ));
        timeline.add(&switch_to(9, 25, 7));
        let (slices, complete) = timeline.slices(5_000, 30_000);
        assert!(complete);
        let shape: Vec<(u64, u64, Context, u32)> = slices
            .iter()
            .map(|s| (s.start / 1000, s.end / 1000, s.context, s.thread))
            .collect();
        let hardirq = Context::Hardirq {
            source: 1,
            id: 236,
            since: 10_000,
        };
        assert_eq!(
            shape,
            vec![
                (5, 10, Context::Thread(7), 7),
                (10, 12, hardirq, 7),
                (12, 15, Context::Softirq(0), 7),
                (15, 20, hardirq, 7),
                (20, 25, Context::Thread(7), 7),
                (25, 30, Context::Thread(9), 9),
            ]
        );
        assert_eq!(timeline.switches_between(0, 25_000), 1);
        assert_eq!(timeline.switches_between(25_000, 30_000), 0);
    }

    #[test]
    fn lost_exits_and_long_runs_keep_the_timeline_bounded() {
        let mut timeline = Timeline::default();
        for us in 0..1_000_000 {
            // every entry's exit is lost, and the thread never switches
            timeline.add(&event(SoftirqEntry { vector: 0 }, us, 7));
            assert!(timeline.stack().len() <= DEPTH);
        }
        assert!(timeline.closed.len() <= HISTORY && timeline.switches.len() <= HISTORY);
        assert_eq!(timeline.take_closed().count(), HISTORY);
        timeline.add(&switch_to(9, 1_000_000, 7));
        assert!(timeline.stack().is_empty());
    }

    #[test]
    fn nmi_is_carved_out_and_history_start_is_reported() {
        let mut timeline = Timeline::default();
        timeline.add(&event(SoftirqRaise { vector: 0 }, 10, 3));
        timeline.add(&event(Nmi { duration_ns: 4_000 }, 20, 3));
        let (slices, complete) = timeline.slices(10_000, 22_000);
        assert!(complete);
        let contexts: Vec<Context> = slices.iter().map(|s| s.context).collect();
        assert_eq!(
            contexts,
            vec![Context::Thread(3), Context::Nmi, Context::Thread(3)]
        );
        assert_eq!(slices[1].end - slices[1].start, 4_000);
        assert!(!timeline.slices(5_000, 22_000).1, "tracing began at 10 µs");
    }
}
