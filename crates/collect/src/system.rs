//! Facts about the machine irqlens runs on, and the checks made before touching it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};

use std::io::Read;

use irqlens_analyze::trial::CpuTimes;
use irqlens_model::account::ThreadInfo;
use irqlens_model::kernel::KernelSymbols;
use irqlens_model::system::SystemSnapshot;
use irqlens_model::tune::Knob;
use irqlens_model::units::CpuList;

const VMLINUX_BTF: &str = "/sys/kernel/btf/vmlinux";

/// Capabilities that replace root: load BPF, read kernel tracepoints, set RT priorities.
const NEEDED_CAPS: [(u32, &str); 3] = [(39, "CAP_BPF"), (38, "CAP_PERFMON"), (23, "CAP_SYS_NICE")];

/// Those that load and attach the probes alone, for a run whose real-time priorities are
/// best effort (the agent's readers).
const PROBE_CAPS: [(u32, &str); 2] = [(39, "CAP_BPF"), (38, "CAP_PERFMON")];

/// The online CPUs (/sys/devices/system/cpu/online).
pub fn online_cpus() -> Result<CpuList> {
    let text = fs::read_to_string("/sys/devices/system/cpu/online")
        .context("reading /sys/devices/system/cpu/online")?;
    text.parse()
        .map_err(|e: String| anyhow::anyhow!("/sys/devices/system/cpu/online: {e}"))
}

/// Checks that `cpus` are all online; `None` means every online CPU.
pub fn select_cpus(cpus: Option<&CpuList>) -> Result<CpuList> {
    let online = online_cpus()?;
    let Some(cpus) = cpus else { return Ok(online) };
    if let Some(bad) = cpus.iter().find(|&cpu| !online.contains(cpu)) {
        bail!("CPU {bad} is offline or does not exist (online CPUs: {online})");
    }
    Ok(cpus.clone())
}

/// Fails with one line naming what is missing: privileges or the kernel's BTF.
pub fn check_can_trace() -> Result<()> {
    check_capabilities(&NEEDED_CAPS)
}

/// As [`check_can_trace`], for a run that only loads probes (CAP_SYS_NICE not needed).
pub fn check_can_probe() -> Result<()> {
    check_capabilities(&PROBE_CAPS)
}

fn check_capabilities(needed: &[(u32, &str)]) -> Result<()> {
    if !Path::new(VMLINUX_BTF).exists() {
        bail!(
            "this kernel exposes no BTF ({VMLINUX_BTF} is missing): irqlens needs CONFIG_DEBUG_INFO_BTF=y"
        );
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let effective = effective_capabilities()?;
    let missing: Vec<&str> = needed
        .iter()
        .filter(|(bit, _)| effective & (1 << bit) == 0)
        .map(|(_, name)| *name)
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = needed.iter().map(|(_, name)| *name).collect();
        bail!(
            "needs root, or the capabilities {}: missing {}",
            names.join(", "),
            missing.join(", ")
        );
    }
    Ok(())
}

fn effective_capabilities() -> Result<u64> {
    let status = fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    let hex = status
        .lines()
        .find_map(|line| line.strip_prefix("CapEff:"))
        .context("no CapEff line in /proc/self/status")?;
    u64::from_str_radix(hex.trim(), 16).context("parsing CapEff")
}

/// The process's CPU time so far (user + system, every thread).
pub fn own_cpu_time() -> std::time::Duration {
    // SAFETY: all zeroes is a valid rusage for the kernel to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a live rusage of the right size.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return std::time::Duration::ZERO;
    }
    let time =
        |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// The process's resident memory now, bytes (/proc/self/statm's resident pages); 0 if it
/// cannot be read.
pub fn own_resident_bytes() -> u64 {
    let statm = read_proc("self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|pages| pages.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let page_bytes = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(0) as u64;
    pages * page_bytes
}

/// IRQ line number -> the handler names /proc/interrupts lists for it (`virtio0-input.0`).
pub fn irq_line_names() -> HashMap<u32, String> {
    irqlens_model::kernel::parse_irq_line_names(&read_proc("interrupts"))
}

/// Softirq runs per vector so far on `cpus`, from /proc/softirqs.
pub fn softirq_runs(cpus: &CpuList) -> BTreeMap<String, u64> {
    parse_softirq_runs(&read_proc("softirqs"), cpus)
}

/// A counter of /proc/net/netstat or /proc/net/snmp (`BusyPollRxPackets`): each group is
/// a line of names and a line of values, both headed `Group:`.
pub fn net_counter(text: &str, name: &str) -> Option<u64> {
    let lines: Vec<&str> = text.lines().collect();
    lines.chunks(2).find_map(|pair| {
        let [names, values] = pair else { return None };
        let at = names.split_whitespace().position(|n| n == name)?;
        values.split_whitespace().nth(at)?.parse().ok()
    })
}

fn parse_softirq_runs(text: &str, cpus: &CpuList) -> BTreeMap<String, u64> {
    let mut lines = text.lines();
    let columns: Vec<u32> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|c| c.strip_prefix("CPU")?.parse().ok())
        .collect();
    lines
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let name = fields.next()?.trim_end_matches(':').to_owned();
            let runs = fields
                .zip(&columns)
                .filter(|(_, cpu)| cpus.contains(**cpu))
                .filter_map(|(count, _)| count.parse::<u64>().ok())
                .sum();
            Some((name, runs))
        })
        .collect()
}

/// The kernel's function names, from /proc/kallsyms; empty (every address printed in hex)
/// when it hides addresses.
pub fn kernel_symbols() -> KernelSymbols {
    parse_kallsyms(&read_proc("kallsyms"))
}

fn parse_kallsyms(text: &str) -> KernelSymbols {
    KernelSymbols::from_names(text.lines().filter_map(|line| {
        let mut fields = line.split_whitespace();
        let address = u64::from_str_radix(fields.next()?, 16).ok()?;
        let kind = fields.next()?;
        let name = fields.next()?;
        (address != 0 && matches!(kind, "t" | "T")).then(|| (address, name.to_owned()))
    }))
}

/// The running kernel's release (`uname -r`); empty if unreadable.
pub fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_owned())
        .unwrap_or_default()
}

/// Thread `tid`'s name (`/proc/TID/comm`); none once it is gone.
pub fn thread_comm(tid: u32) -> Option<String> {
    fs::read_to_string(format!("/proc/{tid}/comm"))
        .ok()
        .map(|comm| comm.trim_end().to_owned())
}

/// The processes whose name starts with `prefix`, in tid order: kernel threads (`napi/…`,
/// `ksoftirqd/…`) are processes of their own. comm is cut at 15 bytes: so is `prefix`.
pub fn threads_named(prefix: &str) -> Vec<u32> {
    let prefix = &prefix[..prefix.len().min(15)];
    let mut tids: Vec<u32> = fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| numbered(&entry))
        .filter(|&tid| thread_comm(tid).is_some_and(|comm| comm.starts_with(prefix)))
        .collect();
    tids.sort_unstable();
    tids
}

/// Every thread's CPU time so far, as the kernel accounts it (the first field of
/// /proc/PID/task/TID/schedstat, sum_exec_runtime in ns), with its process and name.
pub fn thread_runtimes() -> HashMap<u32, ThreadInfo> {
    let mut threads = HashMap::new();
    let Ok(processes) = fs::read_dir("/proc") else {
        return threads;
    };
    let cgroup_mount = crate::cgroup::v2_mount().ok();
    for process in processes.flatten() {
        let Some(tgid) = numbered(&process) else {
            continue;
        };
        // a process's threads share its cgroup (threaded cgroups aside, which are rare)
        let cgroup = cgroup_mount
            .as_deref()
            .and_then(|mount| crate::cgroup::id_of_process(mount, tgid));
        let Ok(tasks) = fs::read_dir(process.path().join("task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Some(tid) = numbered(&task) else {
                continue;
            };
            // a thread that ended between the listing and the reading is left out
            let read = |file: &str| fs::read_to_string(task.path().join(file)).ok();
            let (Some(schedstat), Some(comm)) = (read("schedstat"), read("comm")) else {
                continue;
            };
            threads.insert(
                tid,
                ThreadInfo {
                    tgid,
                    comm: comm.trim_end().to_owned(),
                    runtime_ns: parse_schedstat_runtime(&schedstat),
                    cgroup,
                },
            );
        }
    }
    threads
}

/// One thread's CPU time so far, ns (sum_exec_runtime: exact, not sampled at the tick);
/// `None` once it is gone.
pub fn thread_runtime_ns(tid: u32) -> Option<u64> {
    parse_schedstat_runtime(&fs::read_to_string(format!("/proc/{tid}/schedstat")).ok()?)
}

/// How many times a thread gave up its CPU by blocking so far (voluntary_ctxt_switches
/// of /proc/TID/status); `None` once it is gone.
pub fn thread_sleeps(tid: u32) -> Option<u64> {
    fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("voluntary_ctxt_switches:"))?
        .trim()
        .parse()
        .ok()
}

/// The fields of a /proc/PID/stat line after the name, from field 3 (state) on: the name
/// is in parentheses and may hold spaces and parentheses of its own.
pub(crate) fn stat_fields(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    stat.rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace())
}

/// A thread's utime + stime, clock ticks (0 once it is gone).
pub fn thread_ticks(tid: u32) -> u64 {
    let Ok(stat) = fs::read_to_string(format!("/proc/{tid}/stat")) else {
        return 0;
    };
    // utime and stime are fields 14 and 15
    stat_fields(&stat).map_or(0, |fields| {
        fields
            .skip(11)
            .take(2)
            .filter_map(|f| f.parse::<u64>().ok())
            .sum()
    })
}

/// Clock ticks (/proc's unit, USER_HZ) in ns.
pub fn ticks_ns(ticks: u64) -> u64 {
    // SAFETY: sysconf reads a constant of the C library; it touches no memory of ours
    let per_s = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let per_s = u64::try_from(per_s)
        .ok()
        .filter(|&hz| hz > 0)
        .unwrap_or(100);
    ticks.saturating_mul(1_000_000_000 / per_s)
}

/// CPU `cpu`'s line of /proc/stat.
pub fn cpu_times(cpu: u32) -> Result<CpuTimes> {
    let stat = fs::read_to_string("/proc/stat").context("reading /proc/stat")?;
    let name = format!("cpu{cpu}");
    stat.lines()
        .find(|line| line.split_whitespace().next() == Some(name.as_str()))
        .and_then(CpuTimes::parse)
        .ok_or_else(|| anyhow!("/proc/stat has no {name} line"))
}

/// CPU `cpu`'s idle states so far, from cpuidle: the time spent in them, ns, and how
/// many times it entered one; `None` without cpuidle.
pub fn cpu_idle(cpu: u32) -> Option<(u64, u64)> {
    let states = fs::read_dir(format!("/sys/devices/system/cpu/cpu{cpu}/cpuidle")).ok()?;
    let (mut time_us, mut entries) = (0u64, 0u64);
    let mut any = false;
    for state in states.flatten() {
        let read = |name: &str| read_number(&state.path().join(name).to_string_lossy());
        if let (Some(us), Some(usage)) = (read("time"), read("usage")) {
            time_us += us as u64;
            entries += usage as u64;
            any = true;
        }
    }
    any.then_some((time_us * 1_000, entries))
}

/// The number a /proc entry is named by (a process or thread id), if it is one.
/// The ids of the threads alive now (every process's `task` directory: names only, no
/// file read); empty if /proc cannot be read.
pub fn thread_ids() -> HashSet<u32> {
    let Ok(processes) = fs::read_dir("/proc") else {
        return HashSet::new();
    };
    let tasks = processes
        .flatten()
        .filter(|process| numbered(process).is_some())
        .filter_map(|process| fs::read_dir(process.path().join("task")).ok());
    tasks
        .flat_map(|threads| threads.flatten().filter_map(|thread| numbered(&thread)))
        .collect()
}

fn numbered(entry: &fs::DirEntry) -> Option<u32> {
    entry.file_name().to_str()?.parse().ok()
}

fn parse_schedstat_runtime(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// The kernel's tick rate (CONFIG_HZ), measured: jiffies from /proc/timer_list read
/// 100 ms apart, rounded to the nearest rate the kernel offers. Config files are not
/// on every machine; jiffies are.
pub fn kernel_hz() -> Result<u32> {
    let read = || -> Result<(u64, std::time::Instant)> {
        let text = fs::read_to_string("/proc/timer_list").context("reading /proc/timer_list")?;
        let jiffies = parse_jiffies(&text).context("no jiffies line in /proc/timer_list")?;
        Ok((jiffies, std::time::Instant::now()))
    };
    let (first, start) = read()?;
    std::thread::sleep(std::time::Duration::from_millis(100));
    let (second, end) = read()?;
    let rate = (second - first) as f64 / (end - start).as_secs_f64();
    Ok(nearest_hz(rate))
}

fn parse_jiffies(timer_list: &str) -> Option<u64> {
    timer_list
        .lines()
        .find_map(|line| line.strip_prefix("jiffies:"))?
        .trim()
        .parse()
        .ok()
}

/// The CONFIG_HZ choice closest to a measured rate.
fn nearest_hz(rate: f64) -> u32 {
    [100, 250, 300, 1000]
        .into_iter()
        .min_by(|&a, &b| (a as f64 - rate).abs().total_cmp(&(b as f64 - rate).abs()))
        .expect("the list is not empty")
}

/// A file of /proc as text, empty if unreadable (what a recording keeps of it).
pub fn read_proc(name: &str) -> String {
    fs::read_to_string(Path::new("/proc").join(name)).unwrap_or_default()
}

/// The wall-clock time, RFC 3339 in UTC to the second.
pub fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// What a recording keeps of the machine (INTSPECT thesis §3.1: enough to reproduce the
/// run).
pub fn snapshot() -> SystemSnapshot {
    let first_line = |path: &str| {
        fs::read_to_string(path)
            .map(|text| text.lines().next().unwrap_or_default().trim().to_owned())
            .unwrap_or_default()
    };
    SystemSnapshot {
        hostname: first_line("/proc/sys/kernel/hostname"),
        kernel_release: kernel_release(),
        kernel_version: first_line("/proc/sys/kernel/version"),
        kernel_config: kernel_config(),
        boot_cmdline: first_line("/proc/cmdline"),
        cpu_model: read_proc("cpuinfo")
            .lines()
            .find_map(|line| line.strip_prefix("model name")?.split_once(':'))
            .map(|(_, model)| model.trim().to_owned())
            .unwrap_or_default(),
        online_cpus: online_cpus().unwrap_or_default(),
        clocksource: first_line("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        interrupts: read_proc("interrupts"),
        softirqs: read_proc("softirqs"),
    }
}

/// The running kernel's .config: /proc/config.gz (CONFIG_IKCONFIG_PROC) or /boot's copy.
fn kernel_config() -> Option<String> {
    let mut text = String::new();
    let from_proc = fs::File::open("/proc/config.gz")
        .and_then(|file| flate2::read::GzDecoder::new(file).read_to_string(&mut text));
    match from_proc {
        Ok(_) => Some(text),
        Err(_) => fs::read_to_string(format!("/boot/config-{}", kernel_release())).ok(),
    }
}

/// A number read from a file, if the file reads and holds one.
fn read_number(path: &str) -> Option<f64> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A sysctl's value (dotted name), if it reads as a number.
fn sysctl_number(name: &str) -> Option<f64> {
    crate::knob::read(&Knob::Sysctl { name: name.into() })
        .ok()?
        .parse()
        .ok()
}

/// The deferral limits a simulation of this machine gets: the kernel's defaults with the
/// netdev budget sysctls and the scheduler's base slice (debugfs, when mounted) read here.
pub fn sim_limits() -> irqlens_model::sim::Limits {
    let mut limits = irqlens_model::sim::Limits::default();
    if let Some(budget) = sysctl_number("net.core.netdev_budget") {
        limits.netdev_budget = budget as u32;
    }
    if let Some(usecs) = sysctl_number("net.core.netdev_budget_usecs") {
        limits.netdev_budget_usecs = usecs;
    }
    if let Some(ns) = read_number("/sys/kernel/debug/sched/base_slice_ns") {
        limits.base_slice_us = ns / 1e3;
    }
    limits
}

/// A socket's default receive buffer (net.core.rmem_default), bytes.
pub fn socket_receive_buffer() -> Option<u32> {
    sysctl_number("net.core.rmem_default").map(|bytes| bytes as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_runtime_and_sleeps_are_read_and_a_gone_one_has_none() {
        let tid = crate::sched::gettid();
        let start = thread_runtime_ns(tid).expect("this thread's schedstat");
        let spun = std::time::Instant::now();
        // spins until the thread has run 5 ms more, however long the machine takes
        while thread_runtime_ns(tid).unwrap() < start + 5_000_000 {
            assert!(
                spun.elapsed() < std::time::Duration::from_secs(10),
                "never ran"
            );
        }
        let before = thread_sleeps(tid).expect("this thread's status");
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(thread_sleeps(tid).unwrap() > before, "a sleep counts");
        assert_eq!(thread_runtime_ns(u32::MAX), None);
        assert_eq!(thread_sleeps(u32::MAX), None);
    }

    #[test]
    fn schedstat_and_jiffies_parse() {
        assert_eq!(
            parse_schedstat_runtime("165489021 7957946 681\n"),
            Some(165489021)
        );
        assert_eq!(parse_schedstat_runtime(""), None);
        let timer_list = "now at 123 nsecs\n  .last_jiffies   : 4299836831\njiffies: 4299836832\n";
        assert_eq!(parse_jiffies(timer_list), Some(4299836832));
        assert_eq!(nearest_hz(240.0), 250);
        assert_eq!(nearest_hz(290.0), 300);
        assert_eq!(nearest_hz(1010.0), 1000);
        assert_eq!(nearest_hz(90.0), 100);
    }

    #[test]
    fn this_process_has_a_runtime() {
        let threads = thread_runtimes();
        let me = &threads[&std::process::id()];
        assert_eq!(me.tgid, std::process::id());
        assert!(me.runtime_ns.unwrap() > 0);
    }

    #[test]
    fn net_counters_are_found_by_name_in_their_group() {
        let text = "TcpExt: SyncookiesSent BusyPollRxPackets\nTcpExt: 3 1641\n\
                    IpExt: InNoRoutes InOctets\nIpExt: 0 999\n";
        assert_eq!(net_counter(text, "BusyPollRxPackets"), Some(1641));
        assert_eq!(net_counter(text, "InOctets"), Some(999));
        assert_eq!(net_counter(text, "Nowhere"), None);
        assert_eq!(
            net_counter("TcpExt: BusyPollRxPackets\n", "BusyPollRxPackets"),
            None
        );
    }

    #[test]
    fn softirq_runs_of_selected_cpus() {
        let text = "                    CPU0       CPU1       CPU2
          HI:          1          2          3
       TIMER:         10         20         30
";
        let runs = parse_softirq_runs(text, &"0,2".parse().unwrap());
        assert_eq!(runs["HI"], 4);
        assert_eq!(runs["TIMER"], 40);
    }

    #[test]
    fn kernel_symbols_name_functions() {
        let symbols = parse_kallsyms(
            "ffffffff81000000 T _stext\nffffffff81200000 t flush_to_ldisc\nffffffff81200100 D some_data\n0000000000000000 T hidden\n",
        );
        assert_eq!(symbols.name(0xffffffff81200000), "flush_to_ldisc");
        assert_eq!(symbols.name(0xffffffff81200010), "flush_to_ldisc+0x10");
        assert_eq!(symbols.name(0x1234), "0x1234");
    }

    #[test]
    fn a_threads_ticks_and_a_cpus_times_are_read() {
        use std::time::{Duration, Instant};
        // this thread's own, after 50 ms of spinning (12 ticks at 250 Hz)
        let tid = crate::sched::gettid();
        let started = Instant::now();
        while started.elapsed() < Duration::from_millis(50) {
            std::hint::black_box(0u64);
        }
        assert!(thread_ticks(tid) > 0, "50 ms of CPU count ticks");
        assert_eq!(thread_ticks(u32::MAX), 0);
        assert!(cpu_times(0).is_ok());
    }
}
