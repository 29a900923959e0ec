//! account's attribution in C (src/bpf/account.h): the Rust twins of its types, its
//! host build (which user space runs on the CPU states it reads back, and the tests feed
//! recorded checkpoints), and the totals it keeps, in the shape of the BPF maps.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::c_int;
use std::mem::MaybeUninit;
use std::ptr::{self, addr_of_mut};

use anyhow::{Context, Result};
use libbpf_rs::skel::Skel;
use libbpf_rs::{MapCore, MapFlags, OpenObject};

use super::{Attached, Gate, load_and_attach, loaded_programs};
use irqlens_model::units::CpuList;

skeleton!(skel, "account.skel.rs");

use skel::types::{acct_task_info, acct_task_key, acct_task_time, bss};
use skel::{AccountSkel, AccountSkelBuilder};

/// Largest CPU number + 1 the BPF side has room for (MAX_CPUS in account.bpf.c).
pub const MAX_CPUS: u32 = 1024;

const _: () = assert!(size_of::<acct_task_time>() == size_of::<TaskTime>());
const _: () = assert!(size_of::<acct_task_info>() == size_of::<TaskInfo>());
const _: () = assert!(size_of::<acct_task_key>() == 8);

/// account.h's `ACCT_FOLDED`: the thread a run's served share goes to past
/// `ACCT_UNITS` distinct threads.
pub const FOLDED: u32 = u32::MAX;
/// The idle task's tid: the thread interrupts on an idle CPU run in.
const IDLE: u32 = 0;
/// account.h's `ACCT_COMM_LEN`.
pub const COMM_LEN: usize = 16;

/// What an event or total says of a thread (`struct acct_identity`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    /// Its cgroup v2 id (0: unknown).
    pub cgroup: u64,
    /// Its process.
    pub tgid: u32,
    /// Its name, NUL-padded.
    pub comm: [u8; COMM_LEN],
}

/// account.h's `enum acct_kind`.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(missing_docs)]
pub enum Kind {
    IrqEntry = 0,
    IrqExit,
    SoftirqRaise,
    SoftirqEntry,
    SoftirqExit,
    Switch,
    Wakeup,
    NmiEnd,
    TimerExpire,
    TimerExpireExit,
    SockData,
    Other,
}

/// One event for the state machine (`struct acct_event`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AcctEvent {
    /// CLOCK_MONOTONIC ns.
    pub time: u64,
    /// An hrtimer's address, or an NMI's duration.
    pub ptr: u64,
    /// The current thread.
    pub pid: u32,
    /// The thread it names (switched to, woken, the socket's reader; `pid` itself for
    /// the current thread's own name).
    pub tid: u32,
    /// Line, vector or softirq vector.
    pub id: u16,
    /// A hardirq's `enum irq_source`.
    pub source: u16,
    /// `Kind`.
    pub kind: u8,
    /// `tid` is one of irqlens's threads.
    pub irqlens: u8,
    /// `pid` is one of irqlens's threads.
    pub current_irqlens: u8,
    /// `who` is known.
    pub named: u8,
    /// What is known of `tid`.
    pub who: Identity,
}

impl AcctEvent {
    /// An event of `kind` at `time` on `pid`'s watch, naming nobody.
    pub fn new(kind: Kind, time: u64, pid: u32) -> Self {
        AcctEvent {
            time,
            ptr: 0,
            pid,
            tid: 0,
            id: 0,
            source: 0,
            kind: kind as u8,
            irqlens: 0,
            current_irqlens: 0,
            named: 0,
            who: Identity::default(),
        }
    }

    /// The same event naming its current thread `who` (`irqlens`: one of irqlens's), as
    /// the kernel side names the thread an interrupt charges at its entry.
    pub fn naming_current(self, who: Identity, irqlens: bool) -> Self {
        AcctEvent {
            tid: self.pid,
            irqlens: irqlens as u8,
            current_irqlens: irqlens as u8,
            named: 1,
            who,
            ..self
        }
    }
}

/// `struct acct_config`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Config {
    irqlens_known: u32,
}

/// What a settlement adds (account_host.c's `enum acct_what`).
const CHARGE: u32 = 0;
const CHARGE_FOR_IRQLENS: u32 = 1;
const SERVE: u32 = 2;
const ORPHAN: u32 = 3;
const UNITS: u32 = 4;

/// One result of the state machine (`struct acct_settlement`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Settlement {
    ns: u64,
    what: u32,
    cpu: u32,
    tid: u32,
    source: u32,
    named: u32,
    reserved: u32,
    who: Identity,
}

/// `struct acct_out`.
#[repr(C)]
struct Out {
    items: *mut Settlement,
    capacity: u32,
    len: u32,
    overflow: u64,
}

/// One CPU's `struct acct_cpu`, as an opaque, 64-aligned block.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Line([u8; 64]);

unsafe extern "C" {
    fn irqlens_acct_sizeof(which: c_int) -> usize;
    fn irqlens_acct_step(
        s: *mut Line,
        cpu: u32,
        e: *const AcctEvent,
        c: *const Config,
        out: *mut Out,
    );
    fn irqlens_acct_finish(s: *mut Line, cpu: u32, out: *mut Out, counts: *mut [u64; 3]);
    fn irqlens_acct_knows_thread(s: *const Line, pid: u32) -> c_int;
    fn irqlens_acct_defer(s: *mut Line, e: *const AcctEvent) -> c_int;
    fn irqlens_acct_drain(s: *mut Line, cpu: u32, c: *const Config, out: *mut Out);
}

/// Settlements one step can make: a softirq run settles its own part and ACCT_PARTS
/// handed-on ones per vector, each charged and split among ACCT_UNITS threads, plus what
/// the events it closes settle.
const SETTLEMENTS: usize = 4096;

/// Size of `struct acct_cpu`.
pub fn cpu_state_size() -> usize {
    // SAFETY: returns a constant.
    unsafe { irqlens_acct_sizeof(0) }
}

/// One CPU's state, as the BPF program keeps it: read back from the kernel, or run here.
pub struct CpuState(Vec<Line>);

impl CpuState {
    /// A CPU nothing happened on yet.
    pub fn new() -> Self {
        CpuState(vec![Line([0; 64]); cpu_state_size().div_ceil(64)])
    }

    /// The state of `bytes` (the per-CPU map's value); `None` if the size is not
    /// `struct acct_cpu`'s.
    pub fn from_bytes(bytes: &[u8]) -> Option<Self> {
        if bytes.len() != cpu_state_size() {
            return None;
        }
        let mut state = CpuState::new();
        for (line, chunk) in state.0.iter_mut().zip(bytes.chunks(64)) {
            line.0[..chunk.len()].copy_from_slice(chunk);
        }
        Some(state)
    }
}

impl Default for CpuState {
    fn default() -> Self {
        Self::new()
    }
}

/// A thread's time per source (the BPF map `task_time`'s value).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskTime {
    /// Interrupt time that ran while it was current.
    pub charged: u64,
    /// The part of `charged` that was irqlens's own work.
    pub for_irqlens: u64,
    /// Interrupt time done on its behalf.
    pub served: u64,
}

/// A thread's units and name (the BPF map `task_info`'s value).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskInfo {
    /// Deliveries and wakeups it was served.
    pub units: u64,
    /// Whether `who` is known.
    pub named: u64,
    /// Its process, name and cgroup.
    pub who: Identity,
}

/// What the attribution added up: the content of the BPF maps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// By (thread, encoded source).
    pub tasks: HashMap<(u32, u32), TaskTime>,
    /// By thread.
    pub threads: HashMap<u32, TaskInfo>,
    /// Time done for no thread, by encoded source.
    pub orphan: HashMap<u32, u64>,
    /// Time per (CPU, encoded source), irqlens's own work left out.
    pub cpus: HashMap<(u32, u32), u64>,
    /// Events followed (known at the end of the run).
    pub events: u64,
    /// Cases bounded rather than decided exactly (account.h's `inexact`).
    pub inexact: u64,
    /// Events of nested programs a CPU had no room for, by CPU (known at the end).
    pub lost: BTreeMap<u32, u64>,
}

impl Totals {
    fn apply(&mut self, s: &Settlement) {
        fn name<'a>(threads: &'a mut HashMap<u32, TaskInfo>, s: &Settlement) -> &'a mut TaskInfo {
            let info = threads.entry(s.tid).or_default();
            if s.named != 0 {
                info.named = 1;
                info.who = s.who;
            }
            info
        }
        let key = (s.tid, s.source);
        match s.what {
            CHARGE | CHARGE_FOR_IRQLENS => {
                let task = self.tasks.entry(key).or_default();
                task.charged += s.ns;
                if s.what == CHARGE_FOR_IRQLENS {
                    task.for_irqlens += s.ns;
                } else {
                    *self.cpus.entry((s.cpu, s.source)).or_default() += s.ns;
                }
                if s.named != 0 {
                    name(&mut self.threads, s);
                }
            }
            SERVE => self.tasks.entry(key).or_default().served += s.ns,
            ORPHAN => *self.orphan.entry(s.source).or_default() += s.ns,
            UNITS => name(&mut self.threads, s).units += s.ns,
            _ => {}
        }
    }
}

/// The state machine run on the host, over every CPU's events, adding up its totals as
/// the BPF program does in its maps.
pub struct HostAttribution {
    cpus: HashMap<u32, CpuState>,
    config: Config,
    buffer: Vec<Settlement>,
    /// What it added up so far.
    pub totals: Totals,
}

impl HostAttribution {
    /// `irqlens_known`: irqlens's own process is told apart (its threads' events say so).
    pub fn new(irqlens_known: bool) -> Self {
        HostAttribution {
            cpus: HashMap::new(),
            config: Config {
                irqlens_known: irqlens_known as u32,
            },
            buffer: vec![Settlement::default(); SETTLEMENTS],
            totals: Totals::default(),
        }
    }

    /// Follows one event of `cpu`.
    pub fn step(&mut self, cpu: u32, e: &AcctEvent) {
        let config = self.config;
        self.with_state(cpu, |state, out| {
            // SAFETY: `state` is a whole `struct acct_cpu` (CpuState's size is C's),
            // `e` and `config` are live twins of the C types, `out` points into a live
            // buffer of its capacity.
            unsafe { irqlens_acct_step(state, cpu, e, &config, out) }
        });
    }

    /// Whether `cpu`'s state names `pid` as its thread already: the kernel side then
    /// reads no name for an interrupt on it.
    pub fn knows_thread(&mut self, cpu: u32, pid: u32) -> bool {
        let state = self.cpus.entry(cpu).or_default();
        // SAFETY: `state` is a whole `struct acct_cpu`, only read.
        unsafe { irqlens_acct_knows_thread(state.0.as_ptr(), pid) != 0 }
    }

    /// Leaves `e` waiting as a program nested in another would; `false` if the CPU's
    /// queue is full.
    pub fn defer(&mut self, cpu: u32, e: &AcctEvent) -> bool {
        let state = self.cpus.entry(cpu).or_default();
        // SAFETY: as in `step`.
        unsafe { irqlens_acct_defer(state.0.as_mut_ptr(), e) == 0 }
    }

    /// Takes the events left waiting on `cpu`, as the program they nested in does.
    pub fn drain(&mut self, cpu: u32) {
        let config = self.config;
        self.with_state(cpu, |state, out| {
            // SAFETY: as in `step`.
            unsafe { irqlens_acct_drain(state, cpu, &config, out) }
        });
    }

    /// Settles what only the end of the run decides on every CPU, and counts what was
    /// bounded or lost.
    pub fn finish(&mut self) {
        let cpus: Vec<u32> = self.cpus.keys().copied().collect();
        for cpu in cpus {
            let mut counts = [0; 3];
            self.with_state(cpu, |state, out| {
                // SAFETY: as in `step`; `counts` is a live [u64; 3] it may write.
                unsafe { irqlens_acct_finish(state, cpu, out, &mut counts) }
            });
            let [events, inexact, lost] = counts;
            self.totals.events += events;
            self.totals.inexact += inexact;
            if lost > 0 {
                *self.totals.lost.entry(cpu).or_default() += lost;
            }
        }
    }

    fn with_state(&mut self, cpu: u32, run: impl FnOnce(*mut Line, *mut Out)) {
        let state = self.cpus.entry(cpu).or_default();
        let mut out = Out {
            items: self.buffer.as_mut_ptr(),
            capacity: self.buffer.len() as u32,
            len: 0,
            overflow: 0,
        };
        run(state.0.as_mut_ptr(), &mut out);
        assert_eq!(out.overflow, 0, "one step settles at most {SETTLEMENTS}");
        for settlement in &self.buffer[..out.len as usize] {
            self.totals.apply(settlement);
        }
    }
}

/// Settles what only the end of the run decides on a CPU state read back from the
/// kernel, into `totals`: the events nested programs left waiting, then the end.
pub fn finish_read_back(totals: &mut Totals, cpu: u32, state: CpuState, irqlens_known: bool) {
    let mut host = HostAttribution::new(irqlens_known);
    host.cpus.insert(cpu, state);
    host.totals = std::mem::take(totals);
    host.drain(cpu);
    host.finish();
    *totals = host.totals;
}

impl Totals {
    /// What was added since `earlier` (totals only grow).
    pub fn since(&self, earlier: &Totals) -> Totals {
        let tasks = self.tasks.iter().map(|(key, now)| {
            let before = earlier.tasks.get(key).copied().unwrap_or_default();
            let time = TaskTime {
                charged: now.charged.saturating_sub(before.charged),
                for_irqlens: now.for_irqlens.saturating_sub(before.for_irqlens),
                served: now.served.saturating_sub(before.served),
            };
            (*key, time)
        });
        let threads = self.threads.iter().map(|(tid, now)| {
            let before = earlier.threads.get(tid).map_or(0, |info| info.units);
            let info = TaskInfo {
                units: now.units.saturating_sub(before),
                ..*now
            };
            (*tid, info)
        });
        Totals {
            tasks: tasks.collect(),
            threads: threads.collect(),
            orphan: minus(&self.orphan, &earlier.orphan),
            cpus: minus(&self.cpus, &earlier.cpus),
            events: self.events.saturating_sub(earlier.events),
            inexact: self.inexact.saturating_sub(earlier.inexact),
            lost: self.lost.clone(),
        }
    }
}

impl Totals {
    /// The threads of these totals that are not in `alive`, a list of the threads /proc
    /// showed: none when it showed none (unreadable, not an empty machine). The folded
    /// thread and the idle task (tid 0, never in /proc) are never exited.
    pub fn exited(&self, alive: &HashSet<u32>) -> HashSet<u32> {
        if alive.is_empty() {
            return HashSet::new();
        }
        let tids = self
            .threads
            .keys()
            .chain(self.tasks.keys().map(|(tid, _)| tid));
        tids.copied()
            .filter(|&tid| tid != FOLDED && tid != IDLE && !alive.contains(&tid))
            .collect()
    }

    /// Leaves `threads` out, as [`AccountProbe::forget`] leaves them out of the maps.
    pub fn forget(&mut self, threads: &HashSet<u32>) {
        self.tasks.retain(|(tid, _), _| !threads.contains(tid));
        self.threads.retain(|tid, _| !threads.contains(tid));
    }
}

fn minus<K: Copy + Eq + std::hash::Hash>(
    now: &HashMap<K, u64>,
    before: &HashMap<K, u64>,
) -> HashMap<K, u64> {
    let less = |(key, ns): (&K, &u64)| {
        (
            *key,
            ns.saturating_sub(before.get(key).copied().unwrap_or(0)),
        )
    };
    now.iter().map(less).collect()
}

/// The loaded account programs: they attribute on the traced CPUs and keep the totals
/// in their maps. Dropping it stops and detaches them.
pub struct AccountProbe<'obj> {
    /// First, so it closes before the skeleton's links are detached.
    gate: Gate,
    skel: AccountSkel<'obj>,
    /// The mmapped .bss, written by BPF on every CPU: volatile accesses only.
    bss: *mut bss,
    /// Tracepoints this kernel does not have.
    pub skipped: Vec<String>,
    irqlens_known: bool,
}

impl<'obj> AccountProbe<'obj> {
    /// Loads and attaches the programs, disabled; `enable` starts attributing on `cpus`.
    /// `irqlens`: irqlens's own process, whose threads' work is its own. `sockets`: also
    /// follow socket deliveries to their readers (`AccountOptions::sockets`).
    pub fn load(
        storage: &'obj mut MaybeUninit<OpenObject>,
        cpus: &CpuList,
        irqlens: Option<u32>,
        sockets: bool,
    ) -> Result<Self> {
        // irqlens's own process, and the socket map's size
        let configure = |open: &mut skel::OpenAccountSkel<'obj>| {
            let rodata = open
                .maps
                .rodata_data
                .as_deref_mut()
                .context("the account program has no .rodata")?;
            rodata.irqlens_tgid = irqlens.unwrap_or(0);
            if !sockets {
                // preallocated, and no program that uses it is loaded
                open.maps.socket_reader.set_max_entries(1)?;
            }
            Ok(())
        };
        let Attached { mut skel, skipped } = load_and_attach(
            AccountSkelBuilder::default(),
            storage,
            configure,
            |tracepoint| sockets || !crate::is_socket_tracepoint(tracepoint),
        )?;
        // the folded threads' units have a place before the map can be full
        let folded = TaskInfo::default();
        skel.maps
            .task_info
            .update(&FOLDED.to_ne_bytes(), as_bytes(&folded), MapFlags::ANY)
            .context("preparing account's map of threads")?;
        let bss: *mut bss = skel
            .maps
            .bss_data
            .as_deref_mut()
            .expect("the program has a .bss");
        // SAFETY: `bss` is the skeleton's mmapped .bss, mapped while the skeleton lives;
        // written through raw pointers (BPF may run on any CPU), indices checked by
        // CpuList (below MAX_CPUS); the programs are still disabled.
        unsafe {
            for cpu in cpus.iter().filter(|&cpu| cpu < MAX_CPUS) {
                ptr::write_volatile(addr_of_mut!((*bss).traced_cpu[cpu as usize]), 1);
            }
        }
        Ok(AccountProbe {
            // SAFETY: the flag is in the mapped .bss; the probe drops its gate before the
            // skeleton that keeps it mapped.
            gate: unsafe { Gate::new(addr_of_mut!((*bss).enabled)) },
            skel,
            bss,
            skipped,
            irqlens_known: irqlens.is_some(),
        })
    }

    /// Starts all programs at once.
    pub fn enable(&self) {
        self.gate.set(true);
    }

    /// Stops all programs at once (dropping the probe does too, before detaching).
    pub fn disable(&self) {
        self.gate.set(false);
    }

    /// Number of programs loaded (for the overhead line).
    pub fn programs(&self) -> usize {
        loaded_programs(self.skel.object())
    }

    /// Interrupt time no map had room for (never dropped silently).
    pub fn unmapped_ns(&self) -> u64 {
        // SAFETY: an aligned u64 of the mapped .bss, which BPF adds to atomically.
        unsafe { ptr::read_volatile(addr_of_mut!((*self.bss).unmapped_ns)) }
    }

    /// The totals so far (runs still open on the CPUs left out).
    pub fn totals(&self) -> Result<Totals> {
        let maps = &self.skel.maps;
        let mut totals = Totals::default();
        for key in maps.task_time.keys() {
            let Some(value) = maps.task_time.lookup(&key, MapFlags::ANY)? else {
                continue;
            };
            let key: acct_task_key = from_bytes(&key);
            totals
                .tasks
                .insert((key.tid, key.source), from_bytes(&value));
        }
        for key in maps.folded_time.keys() {
            let Some(value) = maps.folded_time.lookup(&key, MapFlags::ANY)? else {
                continue;
            };
            let source: u32 = from_bytes(&key);
            totals.tasks.insert((FOLDED, source), from_bytes(&value));
        }
        for key in maps.task_info.keys() {
            let Some(value) = maps.task_info.lookup(&key, MapFlags::ANY)? else {
                continue;
            };
            totals.threads.insert(from_bytes(&key), from_bytes(&value));
        }
        let cpu_ids = |map: &dyn MapCore| -> Result<HashMap<(u32, u32), u64>> {
            let mut by_cpu = HashMap::new();
            for key in map.keys() {
                let source: u32 = from_bytes(&key);
                let Some(values) = map.lookup_percpu(&key, MapFlags::ANY)? else {
                    continue;
                };
                for (cpu, value) in values.iter().enumerate() {
                    let ns: u64 = from_bytes(value);
                    if ns > 0 {
                        by_cpu.insert((cpu as u32, source), ns);
                    }
                }
            }
            Ok(by_cpu)
        };
        totals.cpus = cpu_ids(&maps.cpu_time)?;
        let orphan = cpu_ids(&maps.orphan_time)?;
        for ((_, source), ns) in orphan {
            *totals.orphan.entry(source).or_default() += ns;
        }
        Ok(totals)
    }

    /// Deletes `threads` (exited, their totals read) from the maps, so that they hold the
    /// threads alive and a run of any length keeps room for new ones: without it a
    /// machine that starts threads all day fills them, and every later thread's time goes
    /// unmapped. What the kernel adds for one of them between the read and the delete is
    /// lost (a thread that exited is charged nothing more).
    pub fn forget(&self, threads: &HashSet<u32>) -> Result<()> {
        if threads.is_empty() {
            return Ok(());
        }
        let maps = &self.skel.maps;
        let keys: Vec<Vec<u8>> = maps
            .task_time
            .keys()
            .filter(|key| threads.contains(&from_bytes::<acct_task_key>(key).tid))
            .collect();
        for key in keys {
            delete_if_present(&maps.task_time, &key)?;
        }
        for tid in threads {
            delete_if_present(&maps.task_info, &tid.to_ne_bytes())?;
        }
        Ok(())
    }

    /// The totals at the end of the run (the probe disabled): with what only the end
    /// decides (hardirq time handed on to softirq runs that never came, a wakeup IPI
    /// still waiting for the next thread's event) and the events nested programs left waiting.
    pub fn final_totals(&self) -> Result<Totals> {
        let mut totals = self.totals()?;
        let states = self
            .skel
            .maps
            .cpu_state
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)?
            .unwrap_or_default();
        for (cpu, bytes) in states.iter().enumerate() {
            let state =
                CpuState::from_bytes(bytes).context("account's CPU state has another size")?;
            finish_read_back(&mut totals, cpu as u32, state, self.irqlens_known);
        }
        Ok(totals)
    }
}

/// Deletes `key` from `map`; one already gone is not an error.
fn delete_if_present(map: &dyn MapCore, key: &[u8]) -> Result<()> {
    match map.delete(key) {
        Err(err) if err.kind() == libbpf_rs::ErrorKind::NotFound => Ok(()),
        other => other.context("forgetting an exited thread in account's maps"),
    }
}

/// A plain C value of `bytes` (a map's key or value, as the kernel copied it).
fn from_bytes<T: Copy + Default>(bytes: &[u8]) -> T {
    let mut value = T::default();
    let n = bytes.len().min(size_of::<T>());
    // SAFETY: at most size_of::<T>() bytes into a T of plain integers and byte arrays
    // (every twin here), valid for any bit pattern.
    unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), (&mut value as *mut T).cast(), n) };
    value
}

fn as_bytes<T: Copy>(value: &T) -> &[u8] {
    // SAFETY: a plain C value's bytes, for its lifetime.
    unsafe { std::slice::from_raw_parts((value as *const T).cast(), size_of::<T>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn charging(ns: u64) -> TaskTime {
        TaskTime {
            charged: ns,
            ..TaskTime::default()
        }
    }

    #[test]
    fn an_exited_thread_is_forgotten_and_a_new_one_with_its_id_counts_whole() {
        let mut before = Totals::default();
        before.tasks.insert((7, 1), charging(10));
        before.tasks.insert((8, 1), charging(20));
        before.tasks.insert((FOLDED, 1), charging(5));
        before.threads.insert(9, TaskInfo::default());
        before.tasks.insert((IDLE, 1), charging(4));
        assert!(
            before.exited(&HashSet::new()).is_empty(),
            "/proc showed nothing"
        );
        let exited = before.exited(&HashSet::from([7]));
        assert_eq!(
            exited,
            HashSet::from([8, 9]),
            "the folded thread and idle stay"
        );
        before.forget(&exited);
        assert_eq!(before.tasks.len(), 3);
        assert!(before.threads.is_empty());
        // the maps forgot 8 as well; a new thread took its id
        let mut now = Totals::default();
        now.tasks.insert((7, 1), charging(15));
        now.tasks.insert((8, 1), charging(3));
        now.tasks.insert((FOLDED, 1), charging(5));
        let delta = now.since(&before);
        assert_eq!(delta.tasks[&(7, 1)].charged, 5);
        assert_eq!(delta.tasks[&(8, 1)].charged, 3, "not 3 - 20");
        assert_eq!(delta.tasks[&(FOLDED, 1)].charged, 0);
    }

    #[test]
    fn the_rust_twins_have_the_c_layout() {
        // SAFETY: returns constants.
        let size = |which| unsafe { irqlens_acct_sizeof(which) };
        assert_eq!(size(1), size_of::<AcctEvent>());
        assert_eq!(size(2), size_of::<Settlement>());
        assert_eq!(size(3), size_of::<Out>());
        assert_eq!(cpu_state_size() % 64, 0);
    }

    const CPU: u32 = 0;
    const SPINNER: u32 = 10;
    const NET_RX: u16 = 3;
    const DEVICE_LINE: u16 = 40;

    fn event(kind: Kind, us: u64, id: u16, tid: u32) -> AcctEvent {
        AcctEvent {
            id,
            tid,
            ..AcctEvent::new(kind, us * 1000, SPINNER)
        }
    }

    /// A NET_RX run from `at` µs, 10 µs long, waking `woken`.
    fn net_rx_waking(at: u64, woken: impl IntoIterator<Item = u32>) -> Vec<AcctEvent> {
        let mut events = vec![event(Kind::SoftirqEntry, at, NET_RX, 0)];
        events.extend(
            woken
                .into_iter()
                .map(|tid| event(Kind::Wakeup, at + 1, 0, tid)),
        );
        events.push(event(Kind::SoftirqExit, at + 10, NET_RX, 0));
        events
    }

    fn served(totals: &Totals) -> u64 {
        totals.tasks.values().map(|time| time.served).sum::<u64>()
            + totals.orphan.values().sum::<u64>()
    }

    fn charged(totals: &Totals) -> u64 {
        totals.tasks.values().map(|time| time.charged).sum()
    }

    #[test]
    fn nested_events_wait_for_the_program_they_interrupted() {
        // a device hardirq handing on to NET_RX, whose run wakes two threads
        let mut events = vec![
            event(Kind::IrqEntry, 0, DEVICE_LINE, 0),
            event(Kind::SoftirqRaise, 1, NET_RX, 0),
            event(Kind::IrqExit, 2, DEVICE_LINE, 0),
        ];
        events.extend(net_rx_waking(3, [20, 30]));
        let mut direct = HostAttribution::new(false);
        for e in &events {
            direct.step(CPU, e);
        }
        // the same events, the wakeups and exit arriving while the entry's program runs
        let mut nested = HostAttribution::new(false);
        for e in &events[..4] {
            nested.step(CPU, e);
        }
        for e in &events[4..] {
            assert!(nested.defer(CPU, e));
        }
        assert_eq!(nested.totals, Totals::default(), "nothing settled yet");
        nested.drain(CPU);
        assert_eq!(nested.totals, direct.totals);
        assert_eq!(
            served(&direct.totals),
            12_000,
            "the run's and the hardirq's time"
        );
        assert_eq!(direct.totals.threads[&20].units, 1);
    }

    #[test]
    fn a_full_queue_of_nested_events_counts_what_it_drops() {
        let mut host = HostAttribution::new(false);
        let e = event(Kind::Other, 0, 0, 0);
        let queued = (0..100).take_while(|_| host.defer(CPU, &e)).count();
        assert!(queued > 0 && queued < 100, "bounded: {queued}");
        host.finish();
        assert_eq!(host.totals.lost[&CPU], 1, "the one refused");
    }

    #[test]
    fn a_run_serving_more_threads_than_it_holds_folds_the_rest_and_loses_no_time() {
        let mut host = HostAttribution::new(false);
        for e in net_rx_waking(0, 100..140) {
            host.step(CPU, &e);
        }
        host.finish();
        let totals = &host.totals;
        assert!(totals.inexact > 0);
        assert_eq!(served(totals), 10_000);
        assert_eq!(charged(totals), 10_000);
        let units: u64 = totals.threads.values().map(|info| info.units).sum();
        assert_eq!(units, 40, "every unit counted");
        assert!(totals.threads[&FOLDED].units > 1);
        assert_eq!(
            totals.threads[&100].units, 1,
            "the first threads are their own"
        );
    }

    #[test]
    fn hardirqs_handed_on_past_the_bound_settle_at_once_and_the_end_settles_the_rest() {
        let mut host = HostAttribution::new(false);
        let hardirqs = 40;
        for i in 0..hardirqs {
            let at = i * 10;
            for (kind, us) in [
                (Kind::IrqEntry, at),
                (Kind::SoftirqRaise, at + 1),
                (Kind::IrqExit, at + 5),
            ] {
                host.step(
                    CPU,
                    &event(
                        kind,
                        us,
                        if kind == Kind::SoftirqRaise {
                            NET_RX
                        } else {
                            DEVICE_LINE
                        },
                        0,
                    ),
                );
            }
        }
        let settled_early = charged(&host.totals);
        assert!(settled_early > 0 && settled_early < hardirqs * 5_000);
        host.finish();
        assert!(host.totals.inexact > 0, "more hardirqs than a vector holds");
        assert_eq!(charged(&host.totals), hardirqs * 5_000, "no time lost");
        assert_eq!(
            served(&host.totals),
            hardirqs * 5_000,
            "orphan, served nobody known"
        );
    }

    /// account.h's encoding of a hardirq source.
    fn hardirq_code(source: u16, id: u16) -> u32 {
        (u32::from(source) << 24) | u32::from(id)
    }

    fn identity(tgid: u32, comm: &str) -> Identity {
        let mut who = Identity {
            tgid,
            cgroup: 7,
            ..Identity::default()
        };
        who.comm[..comm.len()].copy_from_slice(comm.as_bytes());
        who
    }

    /// A hardirq on `pid` from `at` µs to `at + us`, its entry naming the thread as the
    /// kernel side does: only when the CPU's state does not name it yet.
    fn kernel_hardirq(host: &mut HostAttribution, pid: u32, who: Identity, at: u64, us: u64) {
        let mut entry = AcctEvent {
            id: DEVICE_LINE,
            ..AcctEvent::new(Kind::IrqEntry, at * 1000, pid)
        };
        if !host.knows_thread(CPU, pid) {
            entry = entry.naming_current(who, false);
        }
        host.step(CPU, &entry);
        let exit = AcctEvent {
            id: DEVICE_LINE,
            ..AcctEvent::new(Kind::IrqExit, (at + us) * 1000, pid)
        };
        host.step(CPU, &exit);
    }

    #[test]
    fn an_interrupt_names_the_thread_it_charges_once_per_thread_change_without_switches() {
        let (spinner, other) = (identity(SPINNER, "spinner"), identity(20, "other"));
        let mut host = HostAttribution::new(false);
        assert!(!host.knows_thread(CPU, SPINNER), "nothing seen yet");
        kernel_hardirq(&mut host, SPINNER, spinner, 0, 5);
        assert!(host.knows_thread(CPU, SPINNER), "named by its first entry");
        kernel_hardirq(&mut host, SPINNER, spinner, 10, 1);
        kernel_hardirq(&mut host, 20, other, 20, 3);
        assert!(!host.knows_thread(CPU, SPINNER), "another thread came");
        kernel_hardirq(&mut host, SPINNER, spinner, 30, 2);
        let source = hardirq_code(0, DEVICE_LINE);
        let totals = &host.totals;
        assert_eq!(totals.tasks[&(SPINNER, source)].charged, 8_000);
        assert_eq!(totals.tasks[&(20, source)].charged, 3_000);
        assert_eq!(totals.threads[&SPINNER].who, spinner);
        assert_eq!(totals.threads[&20].who, other);
        // an entry that names no thread (the kernel read none) charges an unnamed thread
        let mut host = HostAttribution::new(false);
        kernel_hardirq(&mut host, SPINNER, spinner, 0, 1);
        for (kind, us) in [(Kind::IrqEntry, 10), (Kind::IrqExit, 11)] {
            let e = AcctEvent {
                id: DEVICE_LINE,
                ..AcctEvent::new(kind, us * 1000, 20)
            };
            host.step(CPU, &e);
        }
        assert_eq!(host.totals.tasks[&(20, source)].charged, 1_000);
        assert!(
            !host.totals.threads.contains_key(&20),
            "not named as the thread before it"
        );
        host.step(CPU, &AcctEvent::new(Kind::SoftirqRaise, 20_000, IDLE));
        assert!(host.knows_thread(CPU, IDLE), "the idle task needs no name");
    }

    #[test]
    fn a_thread_change_clears_the_frames_whose_exits_were_lost() {
        let mut host = HostAttribution::new(false);
        // the spinner's NET_RX, whose exit is lost
        host.step(CPU, &event(Kind::SoftirqEntry, 0, NET_RX, 0));
        // then thread 20 takes a hardirq: the CPU switched, the softirq frame is stale
        kernel_hardirq(&mut host, 20, identity(20, "other"), 10, 2);
        kernel_hardirq(&mut host, 20, identity(20, "other"), 20, 1);
        let source = hardirq_code(0, DEVICE_LINE);
        assert_eq!(
            host.totals.tasks[&(20, source)].charged,
            3_000,
            "charged to the thread it ran on"
        );
        assert!(!host.totals.tasks.contains_key(&(SPINNER, source)));
        // its exit, come at last, is the stale frame's: it changes nothing
        host.step(CPU, &event(Kind::SoftirqExit, 30, NET_RX, 0));
        let charged: u64 = host.totals.tasks.values().map(|time| time.charged).sum();
        assert_eq!(
            charged,
            3_000 + 10_000,
            "and the softirq's 10 us before the change"
        );
    }

    #[test]
    fn an_nmi_that_is_a_new_thread_s_first_event_keeps_its_time() {
        let mut host = HostAttribution::new(false);
        host.step(CPU, &AcctEvent::new(Kind::SoftirqRaise, 0, SPINNER));
        let nmi = AcctEvent {
            ptr: 3_000,
            ..AcctEvent::new(Kind::NmiEnd, 10_000, 20)
        };
        host.step(CPU, &nmi);
        const NMI: u32 = 2 << 30;
        assert_eq!(host.totals.tasks[&(20, NMI)].charged, 3_000);
        assert_eq!(host.totals.orphan[&NMI], 3_000);
    }

    #[test]
    fn a_wakeup_ipi_is_irqlens_s_own_when_the_next_thread_is_irqlens_s() {
        const CALL_FUNCTION_SINGLE: u16 = 4;
        const VECTOR: u16 = 251;
        const IRQLENS: u32 = 30;
        let ipi = hardirq_code(CALL_FUNCTION_SINGLE, VECTOR);
        // the next event's thread, whether it is irqlens's, and the IPI's own time then
        for (next, next_irqlens, own) in [(IRQLENS, true, 2_000), (40, false, 0), (IDLE, false, 0)]
        {
            let mut host = HostAttribution::new(true);
            // an IPI on the idle CPU that woke nobody here
            for (kind, us) in [(Kind::IrqEntry, 0), (Kind::IrqExit, 2)] {
                let e = AcctEvent {
                    id: VECTOR,
                    source: CALL_FUNCTION_SINGLE,
                    ..AcctEvent::new(kind, us * 1000, IDLE)
                };
                host.step(CPU, &e);
            }
            assert!(host.totals.tasks.is_empty(), "it waits for the next thread");
            // the tick in the next thread's context: no switch followed
            let tick = AcctEvent {
                id: 236,
                source: 1,
                current_irqlens: next_irqlens as u8,
                ..AcctEvent::new(Kind::IrqEntry, 10_000, next)
            };
            host.step(CPU, &tick);
            let idle = host.totals.tasks[&(IDLE, ipi)];
            assert_eq!(idle.charged, 2_000, "the thread it interrupted bears it");
            assert_eq!(idle.for_irqlens, own, "next thread {next}");
        }
    }
}
