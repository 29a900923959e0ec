//! Runs `irqlens steer`: the socket checkpoints on every CPU say which bottom-half thread
//! queued data for which reader; the steering decides each thread's scheduling, and each
//! thread it changes is journaled (once, with its own scheduling), so any exit puts the
//! threads back.

use std::collections::{HashMap, HashSet};
use std::mem::MaybeUninit;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use super::clock::monotonic_ns;
use super::journal::{Journal, Repeated, SystemKnobs};
use super::{EventStream, RunPace, sched, system};
use irqlens_analyze::steer::{Decision, Steering, is_bottom_half_thread};
use irqlens_model::event::EventData;
use irqlens_model::steer::{ServedProcess, SteerChange, SteerOptions, SteerRun, SteeredThread};
use irqlens_model::tune::{Change, Knob};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::Watched;
use irqlens_probe::checkpoint::{CheckpointProbe, Checkpoints};

/// How often the steering decides: a new high-priority waiter is served at its priority
/// within this much of its first packet.
const DECIDE_INTERVAL: Duration = Duration::from_millis(10);

/// What a steer run did.
pub struct Outcome {
    /// The CPUs traced.
    pub cpus: CpuList,
    /// Every change, in order.
    pub changes: Vec<SteerChange>,
    /// The bottom-half threads seen serving sockets.
    pub threads: Vec<SteeredThread>,
    /// The run's facts and cost.
    pub run: SteerRun,
}

/// `--dev`: every device must be one whose threads steer can find (NAPI threads are
/// named after a network device, IRQ threads after their line): a network device of any
/// network namespace (see `network_devices`), or part of an IRQ line's name. A name
/// that is neither would steer nothing and say nothing.
pub fn check_devices(devices: &[String]) -> Result<()> {
    if devices.is_empty() {
        return Ok(());
    }
    let lines = system::irq_line_names();
    let mut known = network_devices();
    known.extend(
        devices
            .iter()
            .filter(|device| lines.values().any(|line| line.contains(device.as_str())))
            .cloned(),
    );
    if let Some(unknown) = devices.iter().find(|device| !known.contains(*device)) {
        bail!(
            "--dev {unknown}: no network device of that name in any network namespace, and \
             no IRQ line named so (see /proc/net/dev, ip netns, /proc/interrupts)"
        );
    }
    Ok(())
}

/// Where `ip netns` and container engines keep named network namespaces (bind mounts),
/// which hold devices (and their NAPI threads) even when no process is in them.
const NAMED_NAMESPACE_DIRS: [&str; 2] = ["/run/netns", "/run/docker/netns"];

/// The network devices of every network namespace a process is in (each process's
/// /proc/PID/net/dev lists its namespace's, irqlens's own included) or that is named
/// (see [`NAMED_NAMESPACE_DIRS`]), each namespace read once.
fn network_devices() -> HashSet<String> {
    // a namespace's identity is its nsfs inode, the same through /proc and a bind mount
    let mut namespaces = HashSet::new();
    let mut devices = HashSet::new();
    let processes = std::fs::read_dir("/proc").into_iter().flatten().flatten();
    for process in processes {
        let path = process.path();
        let namespace = std::fs::metadata(path.join("ns/net")).map(|m| m.ino()).ok();
        if namespace.is_some_and(|namespace| !namespaces.insert(namespace)) {
            continue;
        }
        if let Ok(listing) = std::fs::read_to_string(path.join("net/dev")) {
            devices.extend(parse_net_dev(&listing));
        }
    }
    let named = NAMED_NAMESPACE_DIRS
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten().flatten());
    for entry in named {
        let path = entry.path();
        let Ok(namespace) = std::fs::metadata(&path).map(|m| m.ino()) else {
            continue;
        };
        if namespaces.insert(namespace) {
            devices.extend(devices_in_namespace(&path).into_iter().flatten());
        }
    }
    devices
}

/// The devices of the network namespace bind-mounted at `path`, read by a thread that
/// enters it (a thread may change its own network namespace; the process stays where it
/// is). `None`: it cannot be entered (not a namespace, no permission).
fn devices_in_namespace(path: &std::path::Path) -> Option<Vec<String>> {
    let namespace = std::fs::File::open(path).ok()?;
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: setns takes a descriptor `namespace` keeps open during the call;
                // it moves this thread only, which ends right after reading.
                if unsafe { libc::setns(namespace.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                    return None;
                }
                let listing = std::fs::read_to_string("/proc/thread-self/net/dev").ok()?;
                Some(parse_net_dev(&listing).collect())
            })
            .join()
            .ok()
            .flatten()
    })
}

/// The device names of a /proc/net/dev listing: two header lines, then `NAME: counters`.
fn parse_net_dev(listing: &str) -> impl Iterator<Item = String> + '_ {
    (listing.lines().skip(2))
        .filter_map(|line| line.split_once(':'))
        .map(|(name, _)| name.trim().to_owned())
}

/// Steers until `options.duration` passes or `stop` is set; `on_change` sees each change
/// as it is made. The changes are written to `journal` (steer's own, or `trial`'s: its own
/// changes stay) or, without one, only described (`--dry-run`); those steer made are put
/// back before it returns, however it returns (and on a panic).
pub fn run_in(
    options: &SteerOptions,
    stop: &AtomicBool,
    journal: Option<&mut Journal>,
    mut on_change: impl FnMut(&SteerChange),
) -> Result<Outcome> {
    let cpus = system::online_cpus()?;
    let mut storage = MaybeUninit::uninit();
    let probe = CheckpointProbe::load(
        &mut storage,
        Checkpoints::Sockets,
        &cpus,
        &Watched::Process(std::process::id()),
    )?;
    let mut events = EventStream::new(probe.events()?);
    let mut steered = Steered {
        journal,
        made: Repeated::default(),
    };
    let cpu_time_before = system::own_cpu_time();
    let started = Instant::now();
    let started_ns = monotonic_ns();
    let pace = RunPace::new(started, options.duration);
    let mut steering = Steering::new(options.hold);
    let mut names = Names::default();
    let mut refused = HashSet::new();
    let mut changes = Vec::new();
    let (mut taken, mut unsteerable) = (0u64, 0u64);
    probe.enable();
    let _reader = super::raise_reader();
    while !stop.load(Ordering::Relaxed) {
        for event in events.wait_and_take(DECIDE_INTERVAL.min(pace.wait())) {
            let EventData::SockData { reader, .. } = event.what else {
                continue;
            };
            taken += 1;
            if reader == 0 {
                continue;
            }
            let steerable = !refused.contains(&event.pid)
                && names.get(event.pid).is_some_and(|comm| {
                    is_bottom_half_thread(comm, &options.devices, !options.no_ksoftirqd)
                });
            if steerable {
                steering.delivered(event.pid, reader, event.time_ns);
            } else {
                unsteerable += 1;
            }
        }
        let now_ns = monotonic_ns();
        for decision in steering.decide(now_ns, &mut |tid| sched::thread_priority(tid).ok()) {
            let thread = decision.thread;
            match steered.make(&decision, &mut names, now_ns - started_ns) {
                Ok(change) => {
                    on_change(&change);
                    changes.push(change);
                }
                Err(err) => {
                    eprintln!("irqlens: thread {thread} left alone: {err:#}");
                    steering.forget(thread);
                    refused.insert(thread);
                }
            }
        }
        if pace.over(Instant::now()) {
            break;
        }
    }
    probe.disable();
    let elapsed = started.elapsed();
    let cpu_time = system::own_cpu_time().saturating_sub(cpu_time_before);
    let threads = steering
        .threads()
        .map(|(tid, original, current, deliveries)| {
            let shown = |p: Option<irqlens_model::sched::Priority>| {
                p.map_or_else(|| "-".into(), |p| p.to_string())
            };
            SteeredThread {
                tid,
                comm: names.comm(tid),
                original: shown(original),
                last: shown(current),
                deliveries: deliveries.values().sum(),
                changes: changes.iter().filter(|c| c.tid == tid).count() as u64,
                served: deliveries
                    .iter()
                    .map(|(&reader, &count)| ServedProcess {
                        tid: reader,
                        comm: names.comm(reader),
                        scheduling: sched::thread_priority(reader)
                            .map_or_else(|_| "gone".into(), |p| p.to_string()),
                        deliveries: count,
                    })
                    .collect(),
            }
        })
        .collect();
    let seconds = elapsed.as_secs_f64().max(1e-9);
    let run = SteerRun {
        events: taken,
        lost_events: events.lost(),
        elapsed_ns: elapsed.as_nanos() as u64,
        interrupted: stop.load(Ordering::Relaxed),
        hold_ns: options.hold.as_nanos() as u64,
        dry_run: options.dry_run,
        events_per_s: taken as f64 / seconds,
        cpu_percent: cpu_time.as_secs_f64() * 100.0 / seconds,
        unsteerable_deliveries: unsteerable,
    };
    drop(probe);
    steered.put_back()?;
    Ok(Outcome {
        cpus,
        changes,
        threads,
        run,
    })
}

/// The threads' names, read once per thread (None: gone before it was read).
#[derive(Default)]
struct Names(HashMap<u32, Option<String>>);

impl Names {
    fn get(&mut self, tid: u32) -> Option<&str> {
        self.0
            .entry(tid)
            .or_insert_with(|| system::thread_comm(tid))
            .as_deref()
    }

    fn comm(&mut self, tid: u32) -> String {
        self.get(tid).unwrap_or("?").to_owned()
    }
}

/// The changes made, in the journal; put back when dropped, however the run ends.
struct Steered<'j> {
    journal: Option<&'j mut Journal>,
    /// The threads changed here, each journaled once with its own scheduling (a flow
    /// that starts and stops changes a thread again and again: the journal does not grow).
    made: Repeated,
}

impl Steered<'_> {
    /// Makes a decision (written to the journal first), or only describes it without a
    /// journal (`--dry-run`).
    fn make(&mut self, decision: &Decision, names: &mut Names, at_ns: u64) -> Result<SteerChange> {
        let comm = names.comm(decision.thread);
        let why = match decision.because {
            Some(reader) => {
                let reader_comm = names.comm(reader);
                format!("serves {reader_comm}:{reader} at {}", decision.to)
            }
            None => "nobody waits on it any more: its own scheduling".into(),
        };
        let change = Change {
            knob: Knob::ThreadPriority {
                tid: decision.thread,
                comm: comm.clone(),
            },
            from: decision.from.to_string(),
            to: decision.to.to_string(),
        };
        let made = match &mut self.journal {
            Some(journal) => {
                self.made.apply(journal, &SystemKnobs, change.clone())?;
                true
            }
            None => false,
        };
        Ok(SteerChange {
            at_ns,
            tid: decision.thread,
            comm,
            from: change.from,
            to: change.to,
            why,
            made,
        })
    }

    /// Puts every thread back (one that exited is dropped from the journal, and said);
    /// an error names the first that could not be (the journal keeps it).
    fn put_back(&mut self) -> Result<()> {
        let Some(journal) = self.journal.as_mut() else {
            return Ok(());
        };
        let (dropped, failed) = self.made.put_back(journal, &SystemKnobs);
        for vanished in dropped {
            eprintln!("irqlens: {vanished}");
        }
        if let Some((index, error)) = failed.first() {
            let knob = &journal.entries()[*index].change.knob;
            bail!(
                "{} thread change(s) could not be put back, the first: {}: {error:#} (run `irqlens tune --revert`)",
                failed.len(),
                crate::knob::describe(knob),
            );
        }
        Ok(())
    }
}

impl Drop for Steered<'_> {
    fn drop(&mut self) {
        if let Err(err) = self.put_back() {
            eprintln!("irqlens: {err:#}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn net_dev_names_its_devices_and_this_machine_has_loopback() {
        let listing = "Inter-|   Receive\n face |bytes\n    lo: 1 2 3\n  eth0:4 5 6\n";
        assert_eq!(parse_net_dev(listing).collect::<Vec<_>>(), ["lo", "eth0"]);
        assert!(network_devices().contains("lo"));
        check_devices(&["lo".into()]).unwrap();
        let error = check_devices(&["lo".into(), "no-such-dev0".into()]).unwrap_err();
        assert!(
            error.to_string().starts_with("--dev no-such-dev0: "),
            "{error}"
        );
    }
}
