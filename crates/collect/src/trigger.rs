//! Active mode: irqlens causes a bottom half itself at a fixed rate (INTSPECT thesis
//! §4.1.1: trigger, wait, repeat) from one thread pinned to a measured CPU, and the
//! analysis keeps only the bottom halves that thread caused.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};

use super::clock::{monotonic_ns, skip_missed, sleep_until};
use super::journal::Session;
use super::netns::{self, ip};
use super::sched::{gettid, set_affinity};
use irqlens_model::stimulus::TriggerKind;
use irqlens_model::units::CpuList;

/// One request per call.
trait Fire: Send {
    fn fire(&mut self) -> Result<()>;
}

/// What a stimulus prepared (sockets, namespace, file). Closing them makes requests of
/// their own (a pty's release work, say), so the caller drops this only once tracing
/// has stopped.
pub struct Resources(#[allow(dead_code)] Box<dyn Fire>);

/// The stimulus thread, started paused; `begin` lets it fire.
pub struct Stimulus {
    /// What it causes.
    pub kind: TriggerKind,
    /// Its thread id (the samples are selected by it).
    pub tid: u32,
    go: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(u64, Resources)>>>,
}

impl Stimulus {
    /// Prepares `kind` (sockets, namespace, files) and starts its thread on `cpu`.
    pub fn start(kind: TriggerKind, rate_hz: u32, cpu: u32) -> Result<Stimulus> {
        let mut fire = prepare(kind).with_context(|| format!("preparing the {kind} trigger"))?;
        let period = Duration::from_secs(1) / rate_hz.max(1);
        let (go, stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let (tid_tx, tid_rx) = mpsc::channel();
        let thread = {
            let (go, stop) = (go.clone(), stop.clone());
            std::thread::Builder::new()
                .name(format!("il-{kind}"))
                .spawn(move || -> Result<(u64, Resources)> {
                    set_affinity(&CpuList::single(cpu))?;
                    let _ = tid_tx.send(gettid());
                    while !go.load(Ordering::Relaxed) && !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    let requests = fire_periodically(fire.as_mut(), period, &stop)?;
                    Ok((requests, Resources(fire)))
                })
                .context("starting the stimulus thread")?
        };
        // no tid means the thread ended early: its error says why
        let Ok(tid) = tid_rx.recv() else {
            let ended = thread
                .join()
                .map_err(|_| anyhow!("the stimulus thread panicked"))?;
            return Err(ended.err().unwrap_or_else(|| {
                anyhow!("the stimulus thread could not be pinned to CPU {cpu}")
            }));
        };
        Ok(Stimulus {
            kind,
            tid,
            go,
            stop,
            thread: Some(thread),
        })
    }

    /// Lets the thread fire.
    pub fn begin(&self) {
        self.go.store(true, Ordering::Relaxed);
    }

    /// Stops the thread; returns the requests made and what it prepared.
    pub fn finish(mut self) -> Result<(u64, Resources)> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("finish is called once");
        thread
            .join()
            .map_err(|_| anyhow!("the stimulus thread panicked"))?
            .with_context(|| format!("{} trigger", self.kind))
    }
}

impl Drop for Stimulus {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Fires once per period on an absolute clock; a request that takes longer than a
/// period skips the missed ones rather than bursting.
fn fire_periodically(fire: &mut dyn Fire, period: Duration, stop: &AtomicBool) -> Result<u64> {
    let mut requests = 0;
    let period = period.as_nanos() as u64;
    let mut next = monotonic_ns();
    while !stop.load(Ordering::Relaxed) {
        fire.fire()?;
        requests += 1;
        next = skip_missed(next + period, period, monotonic_ns()).0;
        // EINTR only shortens one period.
        sleep_until(next);
    }
    Ok(requests)
}

/// Waits one tick on a socket nothing is sent to: sock_rcvtimeo's schedule_timeout arms a
/// timer wheel timer of one jiffy.
struct TimerStimulus {
    socket: UdpSocket,
}

impl TimerStimulus {
    fn new() -> Result<Self> {
        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        socket.set_read_timeout(Some(Duration::from_micros(1)))?;
        Ok(TimerStimulus { socket })
    }
}

impl Fire for TimerStimulus {
    fn fire(&mut self) -> Result<()> {
        match self.socket.recv(&mut [0; 1]) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Ok(())
            }
            Err(e) => Err(e.into()),
            Ok(_) => Ok(()),
        }
    }
}

/// A private network namespace with one end of a veth pair, journaled (owner `bh`) before
/// it is made; deleted on drop (which takes the pair with it), or by `irqlens tune
/// --revert` after a SIGKILL.
struct NetNamespace {
    name: String,
    journal: Session,
}

impl NetNamespace {
    /// Addresses of the host end and the namespace end: a /30 of 169.254/16 (link-local,
    /// never routed) picked by pid, so concurrent runs do not collide.
    fn addresses(pid: u32) -> (Ipv4Addr, Ipv4Addr) {
        let (net, host) = ((pid / 64 % 254 + 1) as u8, ((pid % 64) * 4) as u8);
        (
            Ipv4Addr::new(169, 254, net, host + 1),
            Ipv4Addr::new(169, 254, net, host + 2),
        )
    }

    fn create() -> Result<(Self, Ipv4Addr)> {
        let pid = std::process::id();
        // from here on, whatever fails is undone when `namespace` is dropped
        let mut namespace = NetNamespace {
            name: format!("irqlens-{pid}"),
            journal: Session::begin("bh")?,
        };
        let ns = namespace.name.clone();
        netns::add_journaled(namespace.journal.journal(), &ns)?;
        let (host, peer) = (format!("ilv{pid}a"), format!("ilv{pid}b"));
        let (host_addr, peer_addr) = Self::addresses(pid);
        // the peer is made inside the namespace: deleting it deletes the pair
        ip(&[
            "link", "add", &host, "type", "veth", "peer", "name", &peer, "netns", &ns,
        ])?;
        ip(&["addr", "add", &format!("{host_addr}/30"), "dev", &host])?;
        ip(&["link", "set", &host, "up"])?;
        ip(&[
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{peer_addr}/30"),
            "dev",
            &peer,
        ])?;
        ip(&["-n", &ns, "link", "set", &peer, "up"])?;
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        Ok((namespace, peer_addr))
    }

    /// A UDP socket bound inside the namespace.
    fn bind(&self, addr: Ipv4Addr) -> Result<UdpSocket> {
        netns::bind_udp(&self.name, (addr, 0).into())
    }
}

struct NetStimulus {
    sender: UdpSocket,
    receiver: UdpSocket,
    target: SocketAddr,
    // dropped last: the sockets go before the namespace does
    _namespace: NetNamespace,
}

impl NetStimulus {
    fn new() -> Result<Self> {
        let (namespace, peer) = NetNamespace::create()?;
        let receiver = namespace.bind(peer)?;
        receiver.set_nonblocking(true)?;
        let target = receiver.local_addr()?;
        let sender = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, 0))?;
        Ok(NetStimulus {
            sender,
            receiver,
            target,
            _namespace: namespace,
        })
    }
}

impl Fire for NetStimulus {
    fn fire(&mut self) -> Result<()> {
        self.sender.send_to(b"irqlens", self.target)?;
        let mut buf = [0; 64];
        while self.receiver.recv(&mut buf).is_ok() {}
        Ok(())
    }
}

/// A pty in raw mode (no echo, which would queue work from the kworker instead).
struct PtyStimulus {
    master: File,
    slave: File,
}

impl PtyStimulus {
    fn new() -> Result<Self> {
        let (mut master, mut slave) = (-1, -1);
        // SAFETY: `master` and `slave` are live ints to fill; no name, termios or window
        // size is passed (null).
        let rc = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                std::ptr::null_mut(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error()).context("openpty");
        }
        // SAFETY: openpty succeeded, so both are open fds that nothing else owns.
        let (master, slave) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(master), File::from_raw_fd(slave))
        };
        // SAFETY: termios is plain integers (all zeroes valid) that tcgetattr fills before
        // it is used; the fds are the open `slave`'s.
        unsafe {
            let mut termios: libc::termios = std::mem::zeroed();
            if libc::tcgetattr(slave.as_raw_fd(), &mut termios) != 0 {
                return Err(io::Error::last_os_error()).context("tcgetattr on the pty");
            }
            libc::cfmakeraw(&mut termios);
            libc::tcsetattr(slave.as_raw_fd(), libc::TCSANOW, &termios);
            let flags = libc::fcntl(slave.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(slave.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK);
        }
        Ok(PtyStimulus { master, slave })
    }
}

impl Fire for PtyStimulus {
    fn fire(&mut self) -> Result<()> {
        let mut buf = [0; 64];
        while self.slave.read(&mut buf).is_ok_and(|n| n > 0) {}
        self.master.write_all(b"x")?;
        Ok(())
    }
}

/// KDSETLED with a value above 7 only returns the LEDs to showing the keyboard flags
/// (the default), so repeating it changes nothing but schedules the tasklet.
const KDSETLED: libc::c_ulong = 0x4B32;
const LEDS_FOLLOW_FLAGS: libc::c_ulong = 0xFF;

struct TaskletStimulus {
    tty: File,
}

impl TaskletStimulus {
    fn new() -> Result<Self> {
        let tty = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open("/dev/tty0")
            .context("the tasklet trigger needs a virtual terminal (/dev/tty0)")?;
        let mut stimulus = TaskletStimulus { tty };
        stimulus
            .fire()
            .context("KDSETLED on /dev/tty0 (is it a virtual terminal?)")?;
        Ok(stimulus)
    }
}

impl Fire for TaskletStimulus {
    fn fire(&mut self) -> Result<()> {
        // SAFETY: KDSETLED takes its argument by value (no pointer); the fd is open.
        if unsafe { libc::ioctl(self.tty.as_raw_fd(), KDSETLED, LEDS_FOLLOW_FLAGS) } != 0 {
            return Err(io::Error::last_os_error().into());
        }
        Ok(())
    }
}

const BLOCK: usize = 4096;
const BLOCKS: u64 = 256;

/// Reads one block of a file irqlens wrote, bypassing the page cache, so every read
/// goes to the disk. The file is removed on drop.
struct BlockStimulus {
    file: File,
    path: PathBuf,
    buffer: AlignedBlock,
    next: u64,
}

struct AlignedBlock(*mut u8);

// SAFETY: the block is a heap allocation owned by this value alone (like a Box<[u8]>), and
// only reached through `&mut self`: moving it to another thread shares nothing.
unsafe impl Send for AlignedBlock {}

impl AlignedBlock {
    fn layout() -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(BLOCK, BLOCK).expect("a page-aligned block")
    }

    fn new() -> Self {
        // SAFETY: the layout is not zero-sized; a null result is handled below.
        let ptr = unsafe { std::alloc::alloc_zeroed(Self::layout()) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(Self::layout());
        }
        AlignedBlock(ptr)
    }

    fn as_mut(&mut self) -> &mut [u8] {
        // SAFETY: the BLOCK bytes allocated (zeroed) in `new`, borrowed uniquely via `&mut self`.
        unsafe { std::slice::from_raw_parts_mut(self.0, BLOCK) }
    }
}

impl Drop for AlignedBlock {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this same layout, freed only here.
        unsafe { std::alloc::dealloc(self.0, Self::layout()) };
    }
}

impl BlockStimulus {
    fn new() -> Result<Self> {
        let path = PathBuf::from(format!("/var/tmp/irqlens-block-{}", std::process::id()));
        let result = Self::open(&path);
        if result.is_err() {
            let _ = fs::remove_file(&path);
        }
        result
    }

    fn open(path: &PathBuf) -> Result<Self> {
        let mut file =
            File::create(path).with_context(|| format!("creating {}", path.display()))?;
        file.write_all(&vec![0x5a; BLOCK * BLOCKS as usize])?;
        file.sync_all()?;
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .with_context(|| {
                format!(
                    "opening {} for direct I/O (the block trigger needs a file system on a disk)",
                    path.display()
                )
            })?;
        Ok(BlockStimulus {
            file,
            path: path.clone(),
            buffer: AlignedBlock::new(),
            next: 0,
        })
    }
}

impl Fire for BlockStimulus {
    fn fire(&mut self) -> Result<()> {
        let offset = self.next % BLOCKS * BLOCK as u64;
        self.next += 1;
        self.file.read_exact_at(self.buffer.as_mut(), offset)?;
        Ok(())
    }
}

impl Drop for BlockStimulus {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// The stimulus of `kind`, ready to fire.
fn prepare(kind: TriggerKind) -> Result<Box<dyn Fire>> {
    Ok(match kind {
        TriggerKind::Timer => Box::new(TimerStimulus::new()?),
        TriggerKind::Net => Box::new(NetStimulus::new()?),
        TriggerKind::Workqueue => Box::new(PtyStimulus::new()?),
        TriggerKind::Tasklet => Box::new(TaskletStimulus::new()?),
        TriggerKind::Block => Box::new(BlockStimulus::new()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_addresses_are_a_private_slash_30() {
        for pid in [1, 63, 64, 4_194_304] {
            let (host, peer) = NetNamespace::addresses(pid);
            assert_eq!(host.octets()[..2], [169, 254]);
            assert_eq!(u32::from(peer) - u32::from(host), 1);
            assert_eq!(
                u32::from(host) & 3,
                1,
                "{host} is the first host of its /30"
            );
        }
    }
}
