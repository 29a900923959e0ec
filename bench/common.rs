//! What the benches share besides running irqlens (irqlens_test_support::runner, shared
//! with the integration tests): their settings, interleaved timing, a pipe ping-pong to
//! time traced events with, programs in the background, and a process's memory. Included
//! by each bench with `#[path]` (a bench cannot import another).
// not every bench uses every helper
#![allow(dead_code)]

use std::fs;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use irqlens_collect::sched::set_affinity;
use irqlens_model::units::CpuList;

pub use irqlens_test_support::storm;

use storm::terminated_with_parent;

const SECONDS_VAR: &str = "IRQLENS_BENCH_SECONDS";
const BEFORE_VAR: &str = "IRQLENS_BEFORE";
const ROUNDS_VAR: &str = "IRQLENS_BENCH_ROUNDS";
const QUICK_VAR: &str = "IRQLENS_BENCH_QUICK";

/// IRQLENS_BENCH_QUICK=1 (any value but empty or 0): a few seconds per step, to check
/// that a bench works; its figures then mean little.
pub fn quick_mode() -> bool {
    std::env::var(QUICK_VAR).is_ok_and(|value| !value.is_empty() && value != "0")
}

/// IRQLENS_BEFORE=/path/to/irqlens: an older binary to measure next to this build's.
pub fn before_binary() -> Result<Option<PathBuf>> {
    let Some(before) = std::env::var_os(BEFORE_VAR) else {
        return Ok(None);
    };
    let before = PathBuf::from(before);
    ensure!(
        before.is_file(),
        "{BEFORE_VAR}={}: no such file",
        before.display()
    );
    Ok(Some(before))
}

/// Seconds per run: IRQLENS_BENCH_SECONDS, or `default`.
pub fn run_seconds(default: u64) -> Result<u64> {
    match std::env::var(SECONDS_VAR) {
        Err(_) => Ok(default),
        Ok(text) => match text.trim().parse() {
            Ok(s) if s > 0 => Ok(s),
            _ => bail!("{SECONDS_VAR}={text}: expected a whole number of seconds above 0"),
        },
    }
}

/// Rounds of a bench that alternates its variants: IRQLENS_BENCH_ROUNDS, or `default`.
pub fn run_rounds(default: usize) -> Result<usize> {
    match std::env::var(ROUNDS_VAR) {
        Err(_) => Ok(default),
        Ok(text) => text
            .trim()
            .parse()
            .ok()
            .filter(|&n| n > 0)
            .with_context(|| format!("{ROUNDS_VAR}={text}: expected a whole number above 0")),
    }
}

/// Runs every variant once per round, in turn, and keeps each one's minimum.
pub fn interleaved_min<const K: usize>(
    rounds: usize,
    mut variants: [&mut dyn FnMut() -> Result<f64>; K],
) -> Result<[f64; K]> {
    let mut best = [f64::INFINITY; K];
    for _ in 0..rounds {
        for (best, variant) in best.iter_mut().zip(variants.iter_mut()) {
            *best = best.min(variant()?);
        }
    }
    Ok(best)
}

// ---------------------------------------------------------------------------------------
// Pipe ping-pong: the cost of traced context switches

/// ns per round trip of two threads on `cpu` passing a byte back and forth over two pipes
/// (like `perf bench sched pipe`): `round_trips` timed after a tenth as many untimed.
/// The calling thread is one of the two (pinned to `cpu` for the while, then given its
/// CPUs back); it calls `timing(true)` right before the timed round trips and
/// `timing(false)` right after, so a probe switched on and off there sees those only.
pub fn ping_pong(cpu: u32, round_trips: u64, mut timing: impl FnMut(bool)) -> Result<f64> {
    let (ping_rx, ping_tx) = pipe()?;
    let (pong_rx, pong_tx) = pipe()?;
    std::thread::scope(|scope| {
        let echo = scope.spawn(move || -> Result<()> {
            set_affinity(&CpuList::single(cpu))?;
            let mut byte = [0u8];
            // until the other side closes its end
            while read_byte(&ping_rx, &mut byte)? {
                write_byte(&pong_tx, byte)?;
            }
            Ok(())
        });
        let timed = (|| -> Result<f64> {
            let _pinned = PinnedThread::to(cpu)?;
            let mut byte = [0u8];
            let mut exchange = |n: u64| -> Result<()> {
                for _ in 0..n {
                    write_byte(&ping_tx, byte)?;
                    ensure!(read_byte(&pong_rx, &mut byte)?, "the echo thread quit");
                }
                Ok(())
            };
            exchange(round_trips / 10)?;
            timing(true);
            let start = Instant::now();
            exchange(round_trips)?;
            let elapsed = start.elapsed();
            timing(false);
            Ok(elapsed.as_nanos() as f64 / round_trips as f64)
        })();
        // the echo thread reads EOF and ends
        drop(ping_tx);
        echo.join().expect("the echo thread panicked")?;
        timed
    })
}

/// The calling thread pinned to one CPU until dropped, then back on the CPUs it had.
struct PinnedThread {
    before: libc::cpu_set_t,
}

impl PinnedThread {
    fn to(cpu: u32) -> Result<Self> {
        // SAFETY: cpu_set_t is a bit array: all zeroes is the empty set.
        let mut before: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `before` is a live cpu_set_t of the size passed, for the kernel to fill.
        let ret = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut before) };
        ensure!(
            ret == 0,
            "sched_getaffinity: {}",
            std::io::Error::last_os_error()
        );
        set_affinity(&CpuList::single(cpu))?;
        Ok(PinnedThread { before })
    }
}

impl Drop for PinnedThread {
    fn drop(&mut self) {
        // SAFETY: `before` is a live cpu_set_t of the size passed; the kernel only reads it.
        unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &self.before) };
    }
}

/// (read end, write end)
fn pipe() -> Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    ensure!(
        // SAFETY: `fds` has room for the two fds pipe writes.
        unsafe { libc::pipe(fds.as_mut_ptr()) } == 0,
        "pipe: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: pipe succeeded, so both are open fds that nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// `false` at end of file.
fn read_byte(fd: &OwnedFd, byte: &mut [u8; 1]) -> Result<bool> {
    // SAFETY: reads at most 1 byte into the 1-byte buffer; the fd is open (borrowed).
    let n = unsafe { libc::read(fd.as_raw_fd(), byte.as_mut_ptr().cast(), 1) };
    ensure!(n >= 0, "read: {}", std::io::Error::last_os_error());
    Ok(n == 1)
}

fn write_byte(fd: &OwnedFd, byte: [u8; 1]) -> Result<()> {
    // SAFETY: writes the 1 byte of the buffer; the fd is open (borrowed).
    let n = unsafe { libc::write(fd.as_raw_fd(), byte.as_ptr().cast(), 1) };
    ensure!(n == 1, "write: {}", std::io::Error::last_os_error());
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Programs in the background

/// How long a background program may take to end after SIGINT before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(60);

/// A program running in the background until `stop`, which interrupts it as Ctrl-C does
/// and returns its output. Dropped without `stop` (an error or a panic on the way), it is
/// interrupted and waited for all the same, and killed if it does not end in time.
pub struct Background {
    name: String,
    child: Child,
    stdout: Option<JoinHandle<String>>,
    stderr: Option<JoinHandle<String>>,
    ended: bool,
}

/// What a background program printed, and how it ended.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Background {
    /// Starts `program`; its output is read as it comes, so it never blocks on a pipe.
    pub fn start(program: &Path, args: &[String]) -> Result<Background> {
        let name = format!("{} {}", program.display(), args.join(" "));
        let mut command = Command::new(program);
        let mut child = terminated_with_parent(&mut command)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let read_all = |mut pipe: Box<dyn Read + Send>| {
            std::thread::spawn(move || {
                let mut text = String::new();
                let _ = pipe.read_to_string(&mut text);
                text
            })
        };
        let stdout = child.stdout.take().map(|p| read_all(Box::new(p)));
        let stderr = child.stderr.take().map(|p| read_all(Box::new(p)));
        Ok(Background {
            name,
            child,
            stdout,
            stderr,
            ended: false,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits until the program has attached its BPF programs: it holds BPF links or perf
    /// events, and their number stopped growing. Fails if it ends or takes `timeout`.
    pub fn wait_until_attached(&mut self, timeout: Duration) -> Result<()> {
        let pid = self.pid();
        let mut last = 0;
        self.wait_until("attached", timeout, || {
            let now = attachments(pid);
            let settled = now > 0 && now == last;
            last = now;
            settled
        })
    }

    /// Polls `ready` every 200 ms until it holds; fails, saying it did not get `what`, if
    /// the program ends first or it takes `timeout`.
    pub fn wait_until(
        &mut self,
        what: &str,
        timeout: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> Result<()> {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait()? {
                self.ended = true;
                let stderr = self.stderr.take().map(join_text).unwrap_or_default();
                bail!(
                    "{} ended before it was {what} ({status}): {}",
                    self.name,
                    stderr.trim()
                );
            }
            if ready() {
                return Ok(());
            }
            ensure!(
                started.elapsed() < timeout,
                "{} was not {what} after {timeout:?}",
                self.name
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Interrupts the program (SIGINT), waits for it and returns what it printed.
    pub fn stop(mut self) -> Result<Finished> {
        let status = self.interrupt_and_wait()?;
        Ok(Finished {
            status,
            stdout: self.stdout.take().map(join_text).unwrap_or_default(),
            stderr: self.stderr.take().map(join_text).unwrap_or_default(),
        })
    }

    fn interrupt_and_wait(&mut self) -> Result<ExitStatus> {
        self.ended = true;
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        // SAFETY: kill takes integers; the pid is our child's, not reaped yet (try_wait
        // above saw it running), so it cannot name another process.
        unsafe { libc::kill(self.pid() as i32, libc::SIGINT) };
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        bail!(
            "{} did not end within {STOP_GRACE:?} of SIGINT: killed",
            self.name
        )
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        if !self.ended {
            let _ = self.interrupt_and_wait();
        }
    }
}

fn join_text(reader: JoinHandle<String>) -> String {
    reader.join().unwrap_or_default()
}

/// BPF links and perf events process `pid` holds: how a tracer attaches its programs.
fn attachments(pid: u32) -> usize {
    let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return 0;
    };
    fds.flatten()
        .filter_map(|fd| fs::read_link(fd.path()).ok())
        .filter(|target| {
            let target = target.to_string_lossy();
            target == "anon_inode:bpf_link" || target == "anon_inode:[perf_event]"
        })
        .count()
}

/// Resident memory of process `pid` (VmRSS), in KiB; None once it has exited (a zombie
/// has no VmRSS line).
pub fn vm_rss_kib(pid: u32) -> Option<u64> {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// VmRSS of `pid` at `started`, then every `every` until `deadline` (nothing without one).
pub fn rss_series(
    pid: Option<u32>,
    every: Duration,
    started: Instant,
    deadline: Instant,
) -> Vec<u64> {
    let mut series = Vec::new();
    for at in (0..).map(|i| started + every * i) {
        if at > deadline {
            break;
        }
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        if let Some(kib) = pid.and_then(vm_rss_kib) {
            series.push(kib);
        }
    }
    std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
    series
}

/// CPU time of a process so far, ns: its CPU-time clock, which counts every thread's,
/// those that ended too, and the slice running now.
pub fn process_cpu_ns(pid: u32) -> Result<u64> {
    let mut clock: libc::clockid_t = 0;
    // SAFETY: writes one clockid_t to the valid pointer; fails (non-zero) for no process.
    let failed = unsafe { libc::clock_getcpuclockid(pid as libc::pid_t, &mut clock) };
    ensure!(
        failed == 0,
        "no CPU clock for process {pid} (error {failed})"
    );
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes one timespec to the valid pointer.
    if unsafe { libc::clock_gettime(clock, &mut now) } != 0 {
        bail!(
            "reading process {pid}'s CPU clock: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64)
}

/// Run time of the BPF programs a process holds open so far, ns (counted while
/// `irqlens_probe::RunTimeStats` are on): from its fds' fdinfo, each program once.
pub fn process_program_run_ns(pid: u32) -> Result<u64> {
    let fds = fs::read_dir(format!("/proc/{pid}/fdinfo"))
        .with_context(|| format!("listing the fds of {pid}"))?;
    let mut programs = std::collections::HashMap::new();
    for fd in fds {
        // an fd closed meanwhile has no fdinfo: it is no program of the run's any more
        let Ok(info) = fs::read_to_string(fd?.path()) else {
            continue;
        };
        let field = |name: &str| {
            info.lines()
                .find_map(|line| line.strip_prefix(name)?.trim().parse::<u64>().ok())
        };
        // a program's fd has its run time; a link's names its program but has none
        if let (Some(id), Some(run_ns)) = (field("prog_id:"), field("run_time_ns:")) {
            programs.insert(id, run_ns);
        }
    }
    Ok(programs.values().sum())
}

// ---------------------------------------------------------------------------------------
// hackbench

/// Loops of the short hackbench run that sizes the measured ones.
const CALIBRATION_LOOPS: u32 = 100;

/// Loops for one hackbench run of about `target` on this machine now, untraced.
pub fn hackbench_loops_for(target: Duration) -> Result<u32> {
    storm::hackbench(CALIBRATION_LOOPS)?; // warms up
    let seconds = storm::hackbench(CALIBRATION_LOOPS)?;
    let loops = (CALIBRATION_LOOPS as f64 * target.as_secs_f64() / seconds).round() as u32;
    Ok(loops.max(10))
}

/// The middle value (the mean of the two middle ones for an even count); NaN if none.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    match values.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => values[n / 2],
        n => (values[n / 2 - 1] + values[n / 2]) / 2.0,
    }
}
