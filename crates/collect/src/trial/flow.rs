//! The load of one point: a UDP echo server (the consumer) on the receiving CPU, a paced
//! load generator and the collector of its echoes on the sending CPU, each a thread of
//! irqlens with a socket made in its side's network namespace. Each datagram carries its
//! sequence number and its send time, so that each echo gives a latency.

use std::io::ErrorKind;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow};

use super::testbed::{ECHO_PORT, RECEIVER_ADDRESS, SENDER_ADDRESS, Testbed};
use crate::clock::monotonic_ns;
use crate::netns;
use crate::sched::{set_affinity, set_priority};
use irqlens_analyze::histogram::Distribution;
use irqlens_analyze::trial::echo_distribution;
use irqlens_model::sched::Priority;
use irqlens_model::trial::{EchoBusyPoll, GENERATOR_MAX_LAG_NS, SEND_BATCH};
use irqlens_model::units::CpuList;

/// Datagrams in one send.
const BATCH: usize = SEND_BATCH as usize;
/// How far the generator may fall behind its schedule.
const MAX_LAG: Duration = Duration::from_nanos(GENERATOR_MAX_LAG_NS);
/// How long a blocked receive waits before it looks at the stop flag.
const POLL: Duration = Duration::from_millis(50);
/// A header of sequence number and send time, both u64 little-endian.
const HEADER: usize = 16;
/// The generator's and the collector's scheduling: above the sending CPU's other
/// SCHED_OTHER work, so that a busy machine cuts the offered rate less.
const LOAD_PRIORITY: Priority = Priority::Other { nice: -10 };

/// A thread of the flow, placed and prioritized before it does anything.
fn spawn<T: Send + 'static>(
    name: &str,
    cpu: u32,
    priority: Priority,
    body: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<JoinHandle<Result<T>>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            set_affinity(&CpuList::single(cpu))?;
            set_priority(priority)?;
            body()
        })
        .context("starting a thread")
}

/// Where the measuring window is, in sequence numbers (`u64::MAX`: not yet).
struct Window {
    first: AtomicU64,
    end: AtomicU64,
}

/// What the collector counted in the window.
struct Echoes {
    count: u64,
    latencies: Distribution,
}

/// A running flow: echo server, generator, collector.
pub struct Flow {
    stop: Arc<AtomicBool>,
    /// Datagrams the generator numbered so far (sent or given up).
    offered: Arc<AtomicU64>,
    /// Datagrams the kernel took.
    sent: Arc<AtomicU64>,
    window: Arc<Window>,
    /// `sent` when the window opened and when it closed.
    sent_at_open: u64,
    sent_at_close: u64,
    server: Option<JoinHandle<Result<EchoSocket>>>,
    generator: Option<JoinHandle<Result<()>>>,
    collector: Option<JoinHandle<Result<Echoes>>>,
    /// The echo server's thread id.
    pub echo_tid: u32,
}

/// What a flow measured in its window.
pub struct FlowCounts {
    /// Datagrams sent in the window.
    pub sent: u64,
    /// Of those, echoed back.
    pub echoed: u64,
    /// Send to echo, per echo.
    pub latencies: Distribution,
    /// The echo server's socket at its end.
    pub echo_socket: EchoSocket,
}

/// The echo server's socket options, read back at its end.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoSocket {
    /// SO_BUSY_POLL, µs.
    pub busy_poll_us: u32,
    /// SO_PREFER_BUSY_POLL.
    pub prefer_busy_poll: bool,
    /// SO_INCOMING_NAPI_ID: the NAPI the last datagram came through (0: none).
    pub napi_id: u32,
}

impl Flow {
    /// Starts the echo server on `receiving_cpu` at `consumer`'s priority, busy polling
    /// as `busy_poll` says, then the generator sending `rate` datagrams of `payload`
    /// bytes a second and its collector on `sending_cpu`.
    pub fn start(
        bed: &Testbed,
        rate: u64,
        payload: usize,
        (receiving_cpu, sending_cpu): (u32, u32),
        consumer: Priority,
        busy_poll: Option<EchoBusyPoll>,
    ) -> Result<Flow> {
        // bound before any thread starts: no datagram comes before the server is bound
        // (it would be lost for nothing); a socket stays in the namespace it was made in
        let server_socket =
            netns::bind_udp(&bed.receiver.netns, (RECEIVER_ADDRESS, ECHO_PORT).into())
                .context("binding the echo server")?;
        let load_socket = netns::bind_udp(&bed.sender.netns, (SENDER_ADDRESS, 0).into())
            .context("binding the generator")?;
        load_socket.connect((RECEIVER_ADDRESS, ECHO_PORT))?;
        // connected, the server's socket takes each datagram's NAPI id (an unconnected
        // one keeps the first it saw, which may be none: net/ipv4/udp.c), so that its
        // busy polls find veth's NAPI
        server_socket.connect(load_socket.local_addr()?)?;
        let collector_socket = load_socket.try_clone()?;
        let mut flow = Flow {
            stop: Arc::new(AtomicBool::new(false)),
            offered: Arc::new(AtomicU64::new(0)),
            sent: Arc::new(AtomicU64::new(0)),
            window: Arc::new(Window {
                first: AtomicU64::new(u64::MAX),
                end: AtomicU64::new(u64::MAX),
            }),
            sent_at_open: 0,
            sent_at_close: 0,
            server: None,
            generator: None,
            collector: None,
            echo_tid: 0,
        };
        let (tid_tx, tid) = std::sync::mpsc::channel();
        let stop = flow.stop.clone();
        flow.server = Some(spawn("trial-echo", receiving_cpu, consumer, move || {
            let _ = tid_tx.send(crate::sched::gettid());
            echo(&server_socket, &stop, busy_poll)
        })?);
        // the load starts once the consumer runs where and as it should
        flow.echo_tid = match tid.recv() {
            Ok(tid) => tid,
            // it ended before it ran: its error says why
            Err(_) => {
                return Err(join(flow.server.take())
                    .err()
                    .unwrap_or_else(|| anyhow!("the echo server ended before it started")));
            }
        };
        let (stop, offered, sent) = (flow.stop.clone(), flow.offered.clone(), flow.sent.clone());
        // generate writes a header into every datagram
        let payload = payload.max(HEADER);
        flow.generator = Some(spawn(
            "trial-load",
            sending_cpu,
            LOAD_PRIORITY,
            move || generate(&load_socket, rate, payload, &stop, &offered, &sent),
        )?);
        let (stop, window) = (flow.stop.clone(), flow.window.clone());
        flow.collector = Some(spawn(
            "trial-collect",
            sending_cpu,
            LOAD_PRIORITY,
            move || collect(&collector_socket, &stop, &window),
        )?);
        Ok(flow)
    }

    /// Starts counting: from the next datagram numbered.
    pub fn open_window(&mut self) {
        self.sent_at_open = self.sent.load(Ordering::Relaxed);
        self.window
            .first
            .store(self.offered.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// Stops counting the datagrams sent from now on (their echoes still come).
    pub fn close_window(&mut self) {
        self.window
            .end
            .store(self.offered.load(Ordering::Relaxed), Ordering::Relaxed);
        self.sent_at_close = self.sent.load(Ordering::Relaxed);
    }

    /// Waits `grace` for the last echoes, stops every thread and returns the counts.
    pub fn finish(mut self, grace: Duration) -> Result<FlowCounts> {
        std::thread::sleep(grace);
        self.stop.store(true, Ordering::Relaxed);
        join(self.generator.take())?;
        let echoes = join(self.collector.take())?;
        let echo_socket = join(self.server.take())?;
        Ok(FlowCounts {
            sent: self.sent_at_close.saturating_sub(self.sent_at_open),
            echoed: echoes.count,
            latencies: echoes.latencies,
            echo_socket,
        })
    }
}

fn join<T>(handle: Option<JoinHandle<Result<T>>>) -> Result<T> {
    handle
        .expect("joined once")
        .join()
        .map_err(|_| anyhow!("a trial thread panicked"))?
}

impl Drop for Flow {
    /// A flow not finished (an error) still stops its threads.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(handle) = self.generator.take() {
            let _ = handle.join();
        }
        if let Some(handle) = self.server.take() {
            let _ = handle.join();
        }
        if let Some(handle) = self.collector.take() {
            let _ = handle.join();
        }
    }
}

fn timed_out(err: &std::io::Error) -> bool {
    matches!(err.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// The consumer: one datagram at a time, received and sent back (as inetd's echo),
/// busy polling as `busy_poll` says: a blocking receive polls the NAPI for its µs before
/// it sleeps; one that spins never sleeps.
fn echo(
    socket: &UdpSocket,
    stop: &AtomicBool,
    busy_poll: Option<EchoBusyPoll>,
) -> Result<EchoSocket> {
    let spins = busy_poll.is_some_and(|poll| poll.spins);
    if let Some(poll) = busy_poll {
        let usecs = libc::c_int::try_from(poll.usecs).context("SO_BUSY_POLL's µs")?;
        set_option(socket, libc::SOL_SOCKET, libc::SO_BUSY_POLL, usecs)
            .context("busy polling the echo server's socket (SO_BUSY_POLL)")?;
        if poll.prefer {
            set_option(socket, libc::SOL_SOCKET, libc::SO_PREFER_BUSY_POLL, 1)
                .context("preferring the echo server's busy poll (SO_PREFER_BUSY_POLL)")?;
        }
    }
    if spins {
        socket.set_nonblocking(true)?;
    } else {
        socket.set_read_timeout(Some(POLL))?;
    }
    let mut buffer = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        match socket.recv(&mut buffer) {
            Ok(length) => {
                // a full queue on the way back drops the echo, as it would a request
                let _ = socket.send(&buffer[..length]);
            }
            Err(err)
                if timed_out(&err)
                    || matches!(
                        err.kind(),
                        ErrorKind::Interrupted | ErrorKind::ConnectionRefused
                    ) => {}
            Err(err) => return Err(err).context("the echo server's receive"),
        }
    }
    let option = |name| option(socket, libc::SOL_SOCKET, name).unwrap_or(0);
    Ok(EchoSocket {
        busy_poll_us: option(libc::SO_BUSY_POLL).try_into().unwrap_or(0),
        prefer_busy_poll: option(libc::SO_PREFER_BUSY_POLL) != 0,
        napi_id: option(libc::SO_INCOMING_NAPI_ID).try_into().unwrap_or(0),
    })
}

/// Sets the int socket option `name` of `level` to `value`.
fn set_option(
    socket: &UdpSocket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> std::io::Result<()> {
    // SAFETY: `value` is a live c_int whose size is passed; the kernel only reads it.
    let ret = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if ret != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// The int socket option `name` of `level`.
fn option(socket: &UdpSocket, level: libc::c_int, name: libc::c_int) -> std::io::Result<i32> {
    let mut value: libc::c_int = 0;
    let mut length = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `length` are live and sized as passed; the kernel writes at
    // most `length` bytes to `value` and the length back.
    let ret = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&mut value as *mut libc::c_int).cast(),
            &mut length,
        )
    };
    if ret != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(value)
}

/// Sends `rate` datagrams a second, in batches as they fall due; counts every
/// datagram numbered in `offered` and those the kernel took in `sent`.
fn generate(
    socket: &UdpSocket,
    rate: u64,
    payload: usize,
    stop: &AtomicBool,
    offered: &AtomicU64,
    sent: &AtomicU64,
) -> Result<()> {
    segment_sends(socket, payload)?;
    let mut batch = vec![0u8; payload * BATCH];
    let max_lag = (rate as u128 * MAX_LAG.as_nanos() / 1_000_000_000) as u64;
    let start = Instant::now();
    let (mut numbered, mut taken) = (0u64, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let due = (start.elapsed().as_nanos() * rate as u128 / 1_000_000_000) as u64;
        if due.saturating_sub(numbered) > max_lag.max(BATCH as u64) {
            // too late for these: offered, never sent
            numbered = due - BATCH as u64;
        }
        let count = due.saturating_sub(numbered).min(BATCH as u64) as usize;
        if count == 0 {
            let next = (numbered + 1) as f64 / rate as f64;
            let wait = Duration::from_secs_f64(next).saturating_sub(start.elapsed());
            std::thread::sleep(wait.clamp(Duration::from_micros(20), POLL));
            continue;
        }
        let now = monotonic_ns();
        for (i, datagram) in batch.chunks_mut(payload).take(count).enumerate() {
            datagram[..8].copy_from_slice(&(numbered + i as u64).to_le_bytes());
            datagram[8..HEADER].copy_from_slice(&now.to_le_bytes());
        }
        taken += send_batch(socket, &batch[..count * payload], payload)?;
        numbered += count as u64;
        offered.store(numbered, Ordering::Relaxed);
        sent.store(taken, Ordering::Relaxed);
    }
    Ok(())
}

/// linux/udp.h's UDP_SEGMENT (libc has it for uclibc only): the datagram size of a
/// segmentation offload send.
const UDP_SEGMENT: libc::c_int = 103;

/// Makes each send on `socket` a batch of datagrams of `size` bytes (UDP GSO): one system
/// call and one trip down the sending stack per batch, so the sending CPU can offer more
/// than the receiving one, which segments the batch in its bottom half (the socket of
/// the echo server asks for single datagrams), can carry.
fn segment_sends(socket: &UdpSocket, size: usize) -> Result<()> {
    set_option(socket, libc::IPPROTO_UDP, UDP_SEGMENT, size as libc::c_int)
        .context("asking for UDP segmentation offload (UDP_SEGMENT, Linux 4.18)")
}

/// Sends `batch` (whole datagrams of the socket's segment size) in one call; returns
/// how many datagrams the kernel took (none when its queues are full).
fn send_batch(socket: &UdpSocket, batch: &[u8], payload: usize) -> Result<u64> {
    match socket.send(batch) {
        Ok(bytes) => Ok((bytes / payload) as u64),
        Err(err)
            if matches!(
                err.raw_os_error(),
                Some(libc::ENOBUFS | libc::EAGAIN | libc::ECONNREFUSED | libc::EINTR)
            ) =>
        {
            Ok(0)
        }
        Err(err) => Err(err).context("sending the load"),
    }
}

/// Receives the echoes until stopped; counts those of the datagrams numbered inside
/// the window.
fn collect(socket: &UdpSocket, stop: &AtomicBool, window: &Window) -> Result<Echoes> {
    socket.set_read_timeout(Some(POLL))?;
    let mut echoes = Echoes {
        count: 0,
        latencies: echo_distribution(),
    };
    let mut buffer = [0u8; 2048];
    while !stop.load(Ordering::Relaxed) {
        let length = match socket.recv(&mut buffer) {
            Ok(length) => length,
            Err(err)
                if timed_out(&err)
                    || matches!(
                        err.kind(),
                        ErrorKind::Interrupted | ErrorKind::ConnectionRefused
                    ) =>
            {
                continue;
            }
            Err(err) => return Err(err).context("receiving the echoes"),
        };
        let now = monotonic_ns();
        if length < HEADER {
            continue;
        }
        let word = |at: usize| u64::from_le_bytes(buffer[at..at + 8].try_into().expect("8 bytes"));
        let (sequence, sent_ns) = (word(0), word(8));
        let (first, end) = (
            window.first.load(Ordering::Relaxed),
            window.end.load(Ordering::Relaxed),
        );
        if sequence >= first && sequence < end {
            echoes.count += 1;
            echoes.latencies.add(now.saturating_sub(sent_ns));
        }
    }
    Ok(echoes)
}
