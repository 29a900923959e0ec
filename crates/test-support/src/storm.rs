//! The busy machine of issue #14, shared by bench/load.rs and the storm root test:
//! `hackbench -g 4` in a loop and a UDP flood over 127.0.0.1, both bounded by a
//! deadline, and the irq_work interrupts they cause.

use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

/// hackbench's `-g`: groups of senders and receivers.
pub const HACKBENCH_GROUPS: &str = "4";
/// Datagrams of the UDP flood.
const DATAGRAM_BYTES: usize = 512;

/// Makes the command's process get SIGTERM if the thread that starts it ends first, so
/// nothing outlives a bench or test that is killed or ends before stopping it. (Not SIGINT: a
/// shell's background job ignores it, and so do the programs the job starts.)
pub fn terminated_with_parent(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs between fork and exec, where only async-signal-safe calls
    // are allowed: it makes one prctl with integer arguments, no allocation, no lock.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        })
    }
}

/// hackbench's own time (its `Time:` line) for `hackbench -l loops -g 4`, in seconds.
pub fn hackbench(loops: u32) -> Result<f64> {
    let mut command = Command::new("hackbench");
    let output = terminated_with_parent(&mut command)
        .args(["-l", &loops.to_string(), "-g", HACKBENCH_GROUPS])
        .output()
        .context("running hackbench (rt-tests; scripts/setup installs it)")?;
    ensure!(
        output.status.success(),
        "hackbench failed: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|line| line.strip_prefix("Time:"))
        .and_then(|seconds| seconds.trim().parse().ok())
        .with_context(|| format!("no Time: line in hackbench's output: {text}"))
}

/// hackbench runs started before `deadline`, run one after the other: how many completed.
pub fn hackbench_loop(loops: u32, deadline: Instant) -> Result<u64> {
    let mut runs = 0;
    while Instant::now() < deadline {
        hackbench(loops)?;
        runs += 1;
    }
    Ok(runs)
}

/// A sender and a receiver thread on 127.0.0.1, the sender as fast as it can, both until
/// `deadline`: the datagrams received.
pub fn udp_flood(deadline: Instant) -> Result<u64> {
    let receiver = UdpSocket::bind("127.0.0.1:0").context("binding the flood's receiver")?;
    receiver.set_read_timeout(Some(Duration::from_millis(100)))?;
    let sender = UdpSocket::bind("127.0.0.1:0").context("binding the flood's sender")?;
    sender.connect(receiver.local_addr()?)?;
    std::thread::scope(|scope| {
        let receiving = scope.spawn(|| {
            let mut buffer = [0u8; DATAGRAM_BYTES];
            let mut received = 0u64;
            while Instant::now() < deadline {
                if receiver.recv(&mut buffer).is_ok() {
                    received += 1;
                }
            }
            received
        });
        let payload = [0u8; DATAGRAM_BYTES];
        while Instant::now() < deadline {
            // a full receive queue drops the datagram, as a NIC would
            let _ = sender.send(&payload);
        }
        Ok(receiving.join().expect("the flood's receiver panicked"))
    })
}

/// irq_work interrupts so far, all CPUs (the IWI line of /proc/interrupts).
pub fn irq_work_interrupts() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/interrupts").context("reading /proc/interrupts")?;
    let Some(line) = text
        .lines()
        .find_map(|line| line.trim_start().strip_prefix("IWI:"))
    else {
        bail!("/proc/interrupts has no IWI line");
    };
    Ok(line
        .split_whitespace()
        .map_while(|count| count.parse::<u64>().ok())
        .sum())
}
