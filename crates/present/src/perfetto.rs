//! `--perfetto FILE`: a run's timeline, what each measured CPU ran and what the samples
//! were, as a Chrome JSON trace that ui.perfetto.dev and chrome://tracing open.
//!
//! Per CPU, a group `CPU n` with one lane each for the samples (`noise`, `latency`),
//! `hardirq`, `softirq`, `tasklet/work/hrtimer`, `nmi`, `thread` (who ran, from the
//! switches) and `raise/queue/wakeup` (instants). The writer is a `record::Sink`: it
//! streams events as the lines come, from a live run or a recording, and keeps only each
//! CPU's open contexts (and the comms of the threads seen), never the trace.

mod chrome;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter};
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde_json::{Value, json};

use crate::Names;
use irqlens_analyze::bounded::AgedMap;
use irqlens_analyze::noise::Cause;
use irqlens_analyze::timeline::{Context, Timeline};
use irqlens_model::event::{Event, EventData};
use irqlens_model::kernel::{Comm, irq_label, softirq_name};
use irqlens_model::kernel::{KernelSymbols, parse_irq_line_names};
use irqlens_model::noise::{NoiseClass, PeriodReport, Record};
use irqlens_model::wakeup::Report;
use irqlens_record::{End, Header, Line, Reader, Sink};

use chrome::{ChromeTrace, TraceEvent, Track};

/// CPU n is drawn as pid CPU_PID_BASE + n, apart from real pids in other traces.
const CPU_PID_BASE: u32 = 10_000;
/// Lane tids are pid * LANE_STRIDE + lane: unique across CPUs, as Perfetto's JSON
/// importer keys threads by tid.
const LANE_STRIDE: u32 = 16;
/// Open tasklets and work items (an `AgedMap`): those not ended while half as many began
/// lost their end, and are forgotten (not drawn).
const MAX_OPEN_CALLBACKS: usize = 4096;
/// Thread names kept for the thread lane (an `AgedMap`): a thread not seen while half as
/// many others were is forgotten, and drawn as `pid N` if it comes back.
const MAX_COMMS: usize = 1 << 16;

/// The lanes of a CPU, in the order they are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Lane {
    Noise,
    Latency,
    Hardirq,
    Softirq,
    Callback,
    Nmi,
    Thread,
    Request,
}

impl Lane {
    fn name(self) -> &'static str {
        match self {
            Lane::Noise => "noise",
            Lane::Latency => "latency",
            Lane::Hardirq => "hardirq",
            Lane::Softirq => "softirq",
            Lane::Callback => "tasklet/work/hrtimer",
            Lane::Nmi => "nmi",
            Lane::Thread => "thread",
            Lane::Request => "raise/queue/wakeup",
        }
    }

    fn of_class(class: NoiseClass) -> Self {
        match class {
            NoiseClass::Thread => Lane::Thread,
            NoiseClass::Softirq => Lane::Softirq,
            NoiseClass::Irq => Lane::Hardirq,
            NoiseClass::Nmi => Lane::Nmi,
        }
    }

    fn on(self, cpu: u32) -> Track {
        let pid = CPU_PID_BASE + cpu;
        Track {
            pid,
            tid: pid * LANE_STRIDE + self as u32,
        }
    }
}

/// A sink that writes a run's timeline as a Chrome JSON trace (`--perfetto FILE`).
pub struct TraceWriter {
    path: PathBuf,
    out: Lanes,
    names: Names,
    cpus: BTreeMap<u32, CpuState>,
    /// Tasklets and work items begun and not yet ended, by address.
    open_callbacks: AgedMap<u64, OpenCallback>,
    comms: AgedMap<u32, Comm>,
}

/// What a CPU is running: its contexts (followed by the analysis's own `Timeline`) with
/// when each began.
#[derive(Default)]
struct CpuState {
    timeline: Timeline,
    /// The timeline's stack as of the last checkpoint, each context with its entry.
    contexts: Vec<(Context, u64)>,
    /// Since when the current thread has run; `None` before the first checkpoint.
    thread_since: Option<u64>,
}

struct OpenCallback {
    cpu: u32,
    start_ns: u64,
    what: &'static str,
    function: u64,
}

impl TraceWriter {
    /// Creates `path` for the run `header` describes; `symbols` names the kernel
    /// functions of tasklets, work items and timers as the events come (this machine's
    /// for a live run, the recording's for a replay).
    pub fn create(path: &Path, header: &Header, symbols: KernelSymbols) -> Result<Self> {
        let name = format!("--perfetto {}", path.display());
        let file = irqlens_record::output::create(path).with_context(|| name.clone())?;
        let other_data = json!({
            "irqlens_version": header.irqlens_version,
            "capability": header.capability,
            "argv": header.argv.join(" "),
            "started_at": header.started_at,
            "hostname": header.system.hostname,
            "kernel_release": header.system.kernel_release,
            "cpu_model": header.system.cpu_model,
            "clocksource": header.system.clocksource,
            "clock": "CLOCK_MONOTONIC",
        });
        let trace = ChromeTrace::begin(BufWriter::new(file), &other_data).context(name)?;
        Ok(TraceWriter {
            path: path.to_owned(),
            out: Lanes {
                trace,
                last: BTreeMap::new(),
            },
            names: Names {
                symbols,
                irqs: parse_irq_line_names(&header.system.interrupts),
                ..Names::default()
            },
            cpus: BTreeMap::new(),
            open_callbacks: AgedMap::new(MAX_OPEN_CALLBACKS),
            comms: AgedMap::new(MAX_COMMS),
        })
    }

    fn event(&mut self, e: &Event) -> io::Result<()> {
        self.remember_comm(e);
        self.request(e)?;
        self.callback(e)?;
        if let EventData::Nmi { duration_ns } = e.what {
            let start = e.time_ns.saturating_sub(duration_ns);
            self.out
                .slice(e.cpu, Lane::Nmi, "nmi", start, e.time_ns, Value::Null)?;
        }
        self.follow_contexts(e)
    }

    fn remember_comm(&mut self, e: &Event) {
        match e.what {
            EventData::Switch {
                next_pid,
                next_comm,
                ..
            } => self.comms.insert(next_pid, next_comm),
            EventData::Wakeup {
                woken_pid,
                woken_comm,
                ..
            } => self.comms.insert(woken_pid, woken_comm),
            _ => None,
        };
    }

    /// Raises, queueings and wakeups: moments, on the CPU that made them.
    fn request(&mut self, e: &Event) -> io::Result<()> {
        let (name, args) = match e.what {
            EventData::SoftirqRaise { vector } => {
                (format!("raise {}", softirq_name(vector.into())), json!({}))
            }
            EventData::WorkQueue {
                work,
                func,
                requested_cpu,
            } => (
                format!("queue {}", self.names.symbols.name(func)),
                json!({"work": format!("{work:#x}"), "requested_cpu": requested_cpu}),
            ),
            EventData::Wakeup {
                woken_pid,
                woken_comm,
                watched,
                ..
            } => (
                format!("wakeup {}", thread_label(woken_pid, Some(&woken_comm))),
                json!({"watched": watched}),
            ),
            _ => return Ok(()),
        };
        let track = Lane::Request.on(e.cpu);
        self.out
            .trace
            .write(&TraceEvent::instant(&name, track, e.time_ns, args))?;
        self.out.used(e.cpu, Lane::Request);
        Ok(())
    }

    /// Tasklets and work items, matched by address (a work item may sleep, or end on
    /// another CPU: it is drawn where it began).
    fn callback(&mut self, e: &Event) -> io::Result<()> {
        let (what, address, begun) = match e.what {
            EventData::TaskletEntry { tasklet, func } => ("tasklet", tasklet, Some(func)),
            EventData::TaskletExit { tasklet, .. } => ("tasklet", tasklet, None),
            EventData::WorkStart { work, func } => ("work", work, Some(func)),
            EventData::WorkEnd { work } => ("work", work, None),
            _ => return Ok(()),
        };
        if let Some(function) = begun {
            let open = OpenCallback {
                cpu: e.cpu,
                start_ns: e.time_ns,
                what,
                function,
            };
            self.open_callbacks.insert(address, open);
            return Ok(());
        }
        match self.open_callbacks.remove(&address) {
            Some(open) => self.end_callback(&open, e.time_ns),
            None => Ok(()),
        }
    }

    fn end_callback(&mut self, open: &OpenCallback, end_ns: u64) -> io::Result<()> {
        let name = format!("{} {}", open.what, self.names.symbols.name(open.function));
        self.out.slice(
            open.cpu,
            Lane::Callback,
            &name,
            open.start_ns,
            end_ns,
            Value::Null,
        )
    }

    /// Hardirqs, softirqs, hrtimer callbacks and threads: the analysis's timeline of the
    /// CPU says what is entered and left; a slice is drawn when its context is left.
    fn follow_contexts(&mut self, e: &Event) -> io::Result<()> {
        let cpu = self.cpus.entry(e.cpu).or_default();
        let thread_before = cpu.timeline.thread();
        cpu.timeline.add(e);
        let now = cpu.timeline.last_ns();
        let thread_since = *cpu.thread_since.get_or_insert(now);
        if cpu.timeline.thread() != thread_before && now > thread_since {
            cpu.thread_since = Some(now);
            let comm = self.comms.get(&thread_before);
            self.out
                .thread(e.cpu, thread_before, comm, thread_since, now)?;
        }
        let stack = cpu.timeline.stack();
        let kept = cpu
            .contexts
            .iter()
            .zip(stack)
            .take_while(|((before, _), now)| before == *now)
            .count();
        let entered: Vec<_> = stack[kept..].iter().map(|&c| (c, now)).collect();
        let left = cpu.contexts.drain(kept..);
        self.out.contexts(e.cpu, left, now, &self.names)?;
        cpu.contexts.extend(entered);
        Ok(())
    }

    fn noise_record(&mut self, record: &Record) -> io::Result<()> {
        let cause = Cause::of(record);
        let name = cause.label(&self.names.irqs);
        let args = json!({"class": cause.class_name(), "duration_ns": record.duration_ns});
        let end = record.start_ns + record.duration_ns;
        let lane = Lane::of_class(record.class);
        self.out
            .slice(record.cpu, lane, &name, record.start_ns, end, args)
    }

    fn noise_period(&mut self, period: &PeriodReport) -> io::Result<()> {
        for sample in &period.samples {
            let interferences = sample.interferences();
            let name = if interferences == 0 {
                "hw noise"
            } else {
                "noise"
            };
            let args = json!({"interferences": interferences, "duration_ns": sample.duration_ns});
            let end = sample.start_ns + sample.duration_ns;
            self.out
                .slice(sample.cpu, Lane::Noise, name, sample.start_ns, end, args)?;
        }
        Ok(())
    }

    /// A timer thread's activation: from when its timer should have fired to when it
    /// ran in user space.
    fn wakeup_report(&mut self, report: &Report) -> io::Result<()> {
        let args = json!({"tid": report.tid, "latency_ns": report.total_ns()});
        self.out.slice(
            report.cpu,
            Lane::Latency,
            "wakeup latency",
            report.expected_ns,
            report.user_ns,
            args,
        )
    }

    /// Draws what is still open at each CPU's last checkpoint.
    fn close_open(&mut self) -> io::Result<()> {
        let last_ns = |cpus: &BTreeMap<u32, CpuState>, cpu| {
            cpus.get(&cpu).map_or(0, |state| state.timeline.last_ns())
        };
        let open: Vec<_> = self.open_callbacks.drain().map(|(_, open)| open).collect();
        for callback in open {
            let end = last_ns(&self.cpus, callback.cpu).max(callback.start_ns);
            self.end_callback(&callback, end)?;
        }
        for (&cpu, state) in &mut self.cpus {
            let now = state.timeline.last_ns();
            self.out
                .contexts(cpu, state.contexts.drain(..), now, &self.names)?;
            let thread = state.timeline.thread();
            if let Some(since) = state.thread_since.filter(|&since| now > since) {
                let comm = self.comms.get(&thread);
                self.out.thread(cpu, thread, comm, since, now)?;
            }
        }
        Ok(())
    }
}

impl Sink for TraceWriter {
    fn name(&self) -> String {
        format!("--perfetto {}", self.path.display())
    }

    fn put(&mut self, line: &Line) -> io::Result<()> {
        match line {
            Line::Event(event) => self.event(event),
            Line::NoiseRecord(record) => self.noise_record(record),
            Line::NoisePeriod(period) => self.noise_period(period),
            Line::WakeupReport(report) => self.wakeup_report(report),
            // what decides which samples count, or bookkeeping with no time of its own
            _ => Ok(()),
        }
    }

    fn finish(mut self: Box<Self>, _end: &End) -> Result<()> {
        let name = self.name();
        self.close_open()
            .and_then(|()| self.out.finish())
            .with_context(|| name)
    }
}

/// `comm:pid`, as the causes name threads; the pid alone when its comm was never seen.
fn thread_label(pid: u32, comm: Option<&Comm>) -> String {
    match comm {
        Some(comm) => format!("{comm}:{pid}"),
        None => format!("pid {pid}"),
    }
}

/// The trace being written, with the latest slice of each CPU's lanes: Perfetto drops a
/// slice that overlaps another of its lane partially, so one that would is cut to fit.
struct Lanes {
    trace: ChromeTrace<BufWriter<File>>,
    last: BTreeMap<(u32, Lane), Option<(u64, u64)>>,
}

impl Lanes {
    fn used(&mut self, cpu: u32, lane: Lane) {
        self.last.entry((cpu, lane)).or_insert(None);
    }

    fn slice(
        &mut self,
        cpu: u32,
        lane: Lane,
        name: &str,
        start: u64,
        end: u64,
        args: Value,
    ) -> io::Result<()> {
        let mut end = end.max(start);
        let last = self.last.entry((cpu, lane)).or_insert(None);
        if let Some((last_start, last_end)) = *last {
            if start < last_start && end > last_start && end < last_end {
                end = last_start;
            } else if start > last_start && start < last_end && end > last_end {
                end = last_end;
            }
        }
        let inside_last = last.is_some_and(|(s, e)| s <= start && end <= e);
        if !inside_last {
            *last = Some((start, end));
        }
        self.trace
            .write(&TraceEvent::complete(name, lane.on(cpu), start, end, args))
    }

    /// What thread `pid` ran from `start` to `end`.
    fn thread(
        &mut self,
        cpu: u32,
        pid: u32,
        comm: Option<&Comm>,
        start: u64,
        end: u64,
    ) -> io::Result<()> {
        let name = thread_label(pid, comm);
        self.slice(cpu, Lane::Thread, &name, start, end, json!({"pid": pid}))
    }

    /// The contexts `left` at `end`, innermost (last) first: a lane's inner slice is
    /// written before the one around it.
    fn contexts(
        &mut self,
        cpu: u32,
        left: impl DoubleEndedIterator<Item = (Context, u64)>,
        end: u64,
        names: &Names,
    ) -> io::Result<()> {
        for (context, start) in left.rev() {
            self.context(cpu, context, start, end, names)?;
        }
        Ok(())
    }

    fn context(
        &mut self,
        cpu: u32,
        context: Context,
        start: u64,
        end: u64,
        names: &Names,
    ) -> io::Result<()> {
        let (lane, name) = match context {
            Context::Hardirq { source, id, .. } => {
                (Lane::Hardirq, irq_label(source, id, &names.irqs))
            }
            Context::Softirq(vector) => (Lane::Softirq, softirq_name(vector.into())),
            Context::Timer { function, .. } => (
                Lane::Callback,
                format!("hrtimer {}", names.symbols.name(function)),
            ),
            Context::Nmi => (Lane::Nmi, "nmi".to_owned()),
            Context::Thread(_) => return Ok(()),
        };
        self.slice(cpu, lane, &name, start, end, Value::Null)
    }

    /// The lanes' names and order, then the end of the document.
    fn finish(self) -> io::Result<()> {
        let mut trace = self.trace;
        let mut named_cpus = Vec::new();
        for &(cpu, lane) in self.last.keys() {
            let track = lane.on(cpu);
            if named_cpus.last() != Some(&cpu) {
                named_cpus.push(cpu);
                let name = format!("CPU {cpu}");
                trace.write(&TraceEvent::metadata(
                    "process_name",
                    track,
                    json!({"name": name}),
                ))?;
                let order = json!({"sort_index": cpu});
                trace.write(&TraceEvent::metadata("process_sort_index", track, order))?;
            }
            trace.write(&TraceEvent::metadata(
                "thread_name",
                track,
                json!({"name": lane.name()}),
            ))?;
            let order = json!({"sort_index": lane as u32});
            trace.write(&TraceEvent::metadata("thread_sort_index", track, order))?;
        }
        trace.end().map(drop)
    }
}

/// `irqlens report REC --perfetto FILE`: the recording's timeline as a trace, written as
/// its inputs are read; `symbols` are the names in its end line (the caller reads them
/// in a first pass).
pub fn convert(recording: &Path, trace: &Path, symbols: KernelSymbols) -> Result<()> {
    let mut reader = Reader::open(recording)?;
    let writer = TraceWriter::create(trace, reader.header(), symbols)?;
    irqlens_record::pump(&mut reader, Box::new(writer))
}

#[cfg(test)]
mod tests {

    use std::collections::HashMap;

    use super::*;
    use irqlens_model::event::EventData;
    use irqlens_model::event::EventKind::*;
    use irqlens_model::noise::Sample;
    use irqlens_model::system::{Capability, SystemSnapshot};
    use irqlens_model::units::CpuList;
    use irqlens_test_support::perfetto_check::check_trace;
    use irqlens_test_support::stream::Stream;

    const INTERRUPTS: &str =
        "           CPU0       CPU1\n 11:         5          7   IO-APIC   11-fasteoi   virtio0\n";
    const TASKLET_FN: u64 = 0xffff_ffff_8100_1000;
    const WORK_FN: u64 = 0xffff_ffff_8100_2000;

    /// A writer of a test's trace, to a temporary file.
    fn writer(test: &str) -> (PathBuf, Box<TraceWriter>) {
        let path = std::env::temp_dir().join(format!(
            "irqlens-perfetto-{test}-{}.json",
            std::process::id()
        ));
        let header = Header {
            format: irqlens_record::FORMAT.into(),
            version: irqlens_record::VERSION,
            capability: Capability::Bh,
            argv: Vec::new(),
            options: None,
            irqlens_version: String::new(),
            started_at: String::new(),
            cpus: CpuList::single(1),
            load: None,
            pid: None,
            system: SystemSnapshot {
                interrupts: INTERRUPTS.into(),
                ..Default::default()
            },
        };
        let symbols = KernelSymbols::from_names([
            (TASKLET_FN, "my_tasklet".to_owned()),
            (WORK_FN, "my_work".to_owned()),
        ]);
        let writer = Box::new(TraceWriter::create(&path, &header, symbols).unwrap());
        (path, writer)
    }

    /// Ends the trace and reads it back, checked against the format's rules.
    fn finish(path: &Path, writer: Box<TraceWriter>, inputs: u64) -> Value {
        let end = End {
            finished_at: String::new(),
            inputs,
            info: Value::Null,
            interrupts: String::new(),
            softirqs: String::new(),
            kernel_functions: Vec::new(),
            cgroups: Default::default(),
        };
        writer.finish(&end).unwrap();
        let doc: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        std::fs::remove_file(path).unwrap();
        check_trace(&doc).unwrap_or_else(|e| panic!("{e}\n{doc:#}"));
        doc
    }

    /// The trace of `lines`.
    fn trace_of(test: &str, lines: &[Line]) -> Value {
        let (path, mut writer) = writer(test);
        for line in lines {
            writer.put(line).unwrap();
        }
        finish(&path, writer, lines.len() as u64)
    }

    #[test]
    fn work_never_ended_and_threads_long_gone_are_forgotten() {
        let (path, mut writer) = writer("bounded");
        let mut stream = Stream::new();
        for n in 0..100_000u32 {
            // a work item whose end was lost, on a thread never seen again
            let work = EventData::WorkStart {
                work: u64::from(n) + 1,
                func: WORK_FN,
            };
            stream.at(u64::from(n), 1, n, work);
            stream.switch(u64::from(n), 1, n, n + 1, "short-lived");
        }
        let inputs = stream.events.len() as u64;
        for line in events(stream) {
            writer.put(&line).unwrap();
            assert!(writer.open_callbacks.len() <= MAX_OPEN_CALLBACKS);
            assert!(writer.comms.len() <= MAX_COMMS);
        }
        assert!(writer.open_callbacks.evicted() > 0);
        finish(&path, writer, inputs);
    }

    fn events(stream: Stream) -> Vec<Line> {
        stream.events.into_iter().map(Line::Event).collect()
    }

    /// (lane, name, ts, dur) of every X slice, lanes named by their metadata.
    fn slices(doc: &Value) -> Vec<(String, String, f64, f64)> {
        let all = doc["traceEvents"].as_array().unwrap();
        let lane_names: HashMap<u64, &str> = all
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| {
                (
                    e["tid"].as_u64().unwrap(),
                    e["args"]["name"].as_str().unwrap(),
                )
            })
            .collect();
        all.iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                let lane = lane_names[&e["tid"].as_u64().unwrap()].to_owned();
                let name = e["name"].as_str().unwrap().to_owned();
                (
                    lane,
                    name,
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                )
            })
            .collect()
    }

    fn slice<'a>(
        all: &'a [(String, String, f64, f64)],
        name: &str,
    ) -> &'a (String, String, f64, f64) {
        all.iter()
            .find(|s| s.1 == name)
            .unwrap_or_else(|| panic!("no slice {name} in {all:?}"))
    }

    #[test]
    fn irq_inside_softirq_nests_and_switches_make_thread_slices() {
        let mut s = Stream::new();
        s.switch(0, 1, 0, 7, "app");
        s.softirq(5, 1, 7, SoftirqRaise, 3);
        s.softirq(10, 1, 7, SoftirqEntry, 3);
        s.irq(12, 1, 7, true, 0, 11);
        s.irq(15, 1, 7, false, 0, 11);
        s.irq(16, 1, 7, true, 1, 236);
        s.irq(18, 1, 7, false, 1, 236);
        s.softirq(20, 1, 7, SoftirqExit, 3);
        s.switch(30, 1, 7, 9, "other");
        s.softirq(40, 1, 9, SoftirqRaise, 1);
        let doc = trace_of("nesting", &events(s));
        let all = slices(&doc);
        let net_rx = slice(&all, "NET_RX");
        assert_eq!(net_rx, &("softirq".into(), "NET_RX".into(), 10.0, 10.0));
        let virtio = slice(&all, "irq 11 virtio0");
        assert_eq!(
            virtio,
            &("hardirq".into(), "irq 11 virtio0".into(), 12.0, 3.0)
        );
        assert_eq!(slice(&all, "local_timer:236").2, 16.0);
        assert!(net_rx.2 <= virtio.2 && virtio.2 + virtio.3 <= net_rx.2 + net_rx.3);
        assert_eq!(
            slice(&all, "app:7"),
            &("thread".into(), "app:7".into(), 0.0, 30.0)
        );
        assert_eq!(
            slice(&all, "other:9"),
            &("thread".into(), "other:9".into(), 30.0, 10.0)
        );
        assert_eq!(all.len(), 5, "{all:?}");
        let instants: Vec<&str> = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "i")
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        assert_eq!(instants, ["raise NET_RX", "raise TIMER"]);
        let process = doc["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "process_name")
            .unwrap();
        assert_eq!(process["args"]["name"], "CPU 1");
    }

    #[test]
    fn tasklets_and_work_are_named_and_overlapping_work_is_cut_to_nest() {
        let mut s = Stream::new();
        let tasklet = 0xc;
        for (us, what) in [
            (
                10,
                EventData::WorkStart {
                    work: 0xa,
                    func: WORK_FN,
                },
            ),
            (
                12,
                EventData::WorkStart {
                    work: 0xb,
                    func: WORK_FN,
                },
            ),
            (
                13,
                EventData::TaskletEntry {
                    tasklet,
                    func: TASKLET_FN,
                },
            ),
            (
                14,
                EventData::TaskletExit {
                    tasklet,
                    func: TASKLET_FN,
                },
            ),
            (15, EventData::WorkEnd { work: 0xa }),
            (20, EventData::WorkEnd { work: 0xb }),
        ] {
            s.at(us, 0, 5, what);
        }
        let all = slices(&trace_of("callbacks", &events(s)));
        let lane = "tasklet/work/hrtimer".to_owned();
        assert!(all.contains(&(lane.clone(), "tasklet my_tasklet".into(), 13.0, 1.0)));
        // the second work item began inside the first and ended after it: Perfetto
        // would drop it, so it is cut at the first's end
        let work: Vec<_> = all.iter().filter(|s| s.1 == "work my_work").collect();
        assert_eq!(work.len(), 2);
        assert!(
            work.contains(&&(lane, "work my_work".into(), 12.0, 3.0)),
            "{work:?}"
        );
    }

    #[test]
    fn noise_records_and_samples_become_slices_in_microseconds() {
        let record = |class, source, id, start_ns, duration_ns| Record {
            cpu: 1,
            class,
            source,
            id,
            comm: Comm::new("kworker/1:1"),
            start_ns,
            duration_ns,
            seq: 0,
            cgroup: irqlens_model::workload::CgroupId::UNKNOWN,
        };
        let sample = |start_ns, duration_ns, seq_before, seq_after| Sample {
            cpu: 1,
            start_ns,
            duration_ns,
            seq_before,
            seq_after,
        };
        let period = PeriodReport {
            cpu: 1,
            samples: vec![
                sample(1_000_100, 5_432, 3, 5),
                sample(2_000_000, 1_001, 5, 5),
            ],
            ..PeriodReport::default()
        };
        let lines = [
            Line::NoiseRecord(record(NoiseClass::Irq, 1, 236, 1_000_200, 2_345)),
            Line::NoiseRecord(record(NoiseClass::Thread, 0, 77, 1_003_000, 1_500)),
            Line::NoiseRecord(record(NoiseClass::Irq, 0, 11, 3_000_000, 999)),
            Line::NoisePeriod(period),
        ];
        let all = slices(&trace_of("noise", &lines));
        let expected = [
            ("hardirq", "local_timer:236", 1_000.2, 2.345),
            ("thread", "kworker/1:1:77", 1_003.0, 1.5),
            ("hardirq", "irq 11 virtio0", 3_000.0, 0.999),
            ("noise", "noise", 1_000.1, 5.432),
            ("noise", "hw noise", 2_000.0, 1.001),
        ];
        let expected: Vec<_> = expected
            .iter()
            .map(|&(lane, name, ts, dur)| (lane.to_owned(), name.to_owned(), ts, dur))
            .collect();
        assert_eq!(all, expected);
    }
}
