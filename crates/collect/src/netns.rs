//! Network namespaces named by `ip netns` (iproute2): running `ip`, entering one from a
//! thread, binding a socket in one.

use std::fs::File;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Command, Output};

use anyhow::{Context, Result, anyhow, bail, ensure};

use crate::journal::{Journal, Knobs, SystemKnobs};
use crate::knob::NETNS_PRESENT;
use irqlens_model::tune::Knob;

/// Where `ip netns` keeps its namespaces (bind mounts named after them).
pub const NETNS_DIR: &str = "/run/netns";

/// The file of namespace `name`.
pub fn path(name: &str) -> PathBuf {
    PathBuf::from(NETNS_DIR).join(name)
}

/// Whether namespace `name` exists.
pub fn exists(name: &str) -> bool {
    path(name).exists()
}

/// Makes namespace `name` for a test bed of irqlens's own, journaled before it is made
/// (knob `netns:NAME`), so that whatever ends irqlens it is removed with its devices: by
/// the journal's owner at its exit, or by `irqlens tune --revert` after a SIGKILL. Returns
/// the journal entry; refused if the namespace exists.
pub fn add_journaled(journal: &mut Journal, name: &str) -> Result<usize> {
    let knob = Knob::Netns { name: name.into() };
    if SystemKnobs.read(&knob)? == NETNS_PRESENT {
        bail!("network namespace {name} exists already");
    }
    journal.change(&SystemKnobs, knob, NETNS_PRESENT)
}

fn run(args: &[&str]) -> Result<Output> {
    Command::new("ip")
        .args(args)
        .output()
        .context("running iproute2's ip (scripts/setup installs it)")
}

/// Runs `ip ARGS` and returns its stdout; a failure says the command and ip's error.
pub fn ip(args: &[&str]) -> Result<String> {
    let output = run(args)?;
    ensure!(
        output.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `command` inside namespace `name` (`ip netns exec`, which also mounts the
/// namespace's own /sys) and returns its stdout.
pub fn exec(name: &str, command: &[&str]) -> Result<String> {
    let mut args = vec!["netns", "exec", name];
    args.extend(command);
    let output = run(&args)?;
    ensure!(
        output.status.success(),
        "in netns {name}: {}",
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Moves the calling thread into namespace `name` (sockets it makes then live there; the
/// rest of the process stays where it is).
pub fn enter(name: &str) -> Result<()> {
    let path = path(name);
    let file = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
    // SAFETY: setns only reads the descriptor, which `file` keeps open during the call.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(std::io::Error::last_os_error()).context(format!("entering netns {name}"));
    }
    Ok(())
}

/// What `body` makes inside namespace `name`, by a short-lived thread that enters it (a
/// socket, or a /proc/thread-self/net file, keeps the namespace it was opened in,
/// whichever thread uses it).
fn within<T: Send>(name: &str, body: impl FnOnce() -> Result<T> + Send) -> Result<T> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| -> Result<T> {
                enter(name)?;
                body()
            })
            .join()
            .map_err(|_| anyhow!("the namespace thread panicked"))?
    })
}

/// A UDP socket bound to `addr` inside namespace `name`.
pub fn bind_udp(name: &str, addr: SocketAddr) -> Result<UdpSocket> {
    within(name, || {
        UdpSocket::bind(addr).with_context(|| format!("binding {addr} in netns {name}"))
    })
}

/// `/proc/net/FILE` of namespace `name`, opened: read from its start again (seek to 0),
/// it shows the namespace's figures of the moment.
pub fn open_proc_net(name: &str, file: &str) -> Result<File> {
    within(name, || {
        let path = format!("/proc/thread-self/net/{file}");
        File::open(&path).with_context(|| format!("opening {path} in netns {name}"))
    })
}
