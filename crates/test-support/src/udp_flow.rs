//! Zhang & West's experiment (§5) in small: a steady UDP flow to a receiving process,
//! whose receive processing (NET_RX) is steered to another CPU by RPS. Used by the account
//! root test and bench (which includes this file by `#[path]`).
#![allow(dead_code)]

use std::net::UdpSocket;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use irqlens_collect::sched::set_affinity;
use irqlens_model::units::CpuList;

const PORT: u16 = 9;
const HOST: &str = "169.254.250.1";
/// The receiving end's address, in the namespace (other receivers may bind it too).
pub const PEER: &str = "169.254.250.2";

/// A receiver in a private netns (python3, blocking recv, pinned), fed over a veth pair
/// whose namespace end has rps_cpus pointing at `rps_cpu`. Everything is removed on drop.
pub struct UdpFlow {
    namespace: String,
    host: String,
    peer: String,
    receiver: Child,
    sender: Option<(Arc<AtomicBool>, JoinHandle<()>)>,
    sent: Arc<AtomicU64>,
    sender_cpu: u32,
}

fn run(program: &str, args: &[&str]) {
    let status = Command::new(program)
        .args(args)
        .status()
        .unwrap_or_else(|e| panic!("running {program}: {e}"));
    assert!(status.success(), "{program} {args:?} failed");
}

/// Datagrams per sendmmsg call: a flood needs more than one syscall per datagram can give.
const BATCH: usize = 64;

/// Sends `count` (at most BATCH) datagrams of 512 zero bytes on the connected `socket`
/// in one sendmmsg call.
fn send_batch(socket: &UdpSocket, count: usize) {
    use std::os::fd::AsRawFd;
    let mut payload = [0u8; 512];
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    // SAFETY: all zeroes is a valid mmsghdr (no name, no control data).
    let mut messages: [libc::mmsghdr; BATCH] = unsafe { std::mem::zeroed() };
    for message in &mut messages {
        message.msg_hdr.msg_iov = &mut iov;
        message.msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `messages` holds `count` <= BATCH headers, each pointing at `iov`, which
    // points at `payload`: all live for the call; the kernel only reads them (and writes
    // msg_len).
    unsafe {
        libc::sendmmsg(
            socket.as_raw_fd(),
            messages.as_mut_ptr(),
            count.min(BATCH) as u32,
            0,
        )
    };
}

impl UdpFlow {
    /// Sets up the namespace and veth pair, steers receive processing to `rps_cpu`, and
    /// starts the receiver on `receiver_cpu`; nothing is sent until `send`.
    pub fn start(rps_cpu: u32, receiver_cpu: u32) -> UdpFlow {
        let pid = std::process::id();
        let namespace = format!("ilacct-{pid}");
        let (host, peer) = (format!("ila{pid}a"), format!("ila{pid}b"));
        run("ip", &["netns", "add", &namespace]);
        run(
            "ip",
            &[
                "link", "add", &host, "type", "veth", "peer", "name", &peer, "netns", &namespace,
            ],
        );
        run("ip", &["addr", "add", &format!("{HOST}/30"), "dev", &host]);
        run("ip", &["link", "set", &host, "up"]);
        let in_ns = |args: &[&str]| {
            let mut all = vec!["netns", "exec", &namespace];
            all.extend(args);
            run("ip", &all);
        };
        in_ns(&["ip", "addr", "add", &format!("{PEER}/30"), "dev", &peer]);
        in_ns(&["ip", "link", "set", &peer, "up"]);
        let mask = format!("{:x}", 1u64 << rps_cpu);
        in_ns(&[
            "sh",
            "-c",
            &format!("echo {mask} > /sys/class/net/{peer}/queues/rx-0/rps_cpus"),
        ]);
        let script = format!(
            "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
             s.bind(('{PEER}', {PORT}))\nwhile True:\n    s.recv(2048)\n"
        );
        let receiver = Command::new("ip")
            .args(["netns", "exec", &namespace, "taskset", "-c"])
            .arg(receiver_cpu.to_string())
            .args(["python3", "-c", &script])
            .stdin(Stdio::null())
            .spawn()
            .expect("starting the python3 receiver");
        // until it is bound: a datagram before that would be an orphan
        std::thread::sleep(Duration::from_millis(500));
        UdpFlow {
            namespace,
            host,
            peer,
            receiver,
            sender: None,
            sent: Arc::new(AtomicU64::new(0)),
            sender_cpu: receiver_cpu,
        }
    }

    /// The network namespace the receiver lives in (`ip netns` name).
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The veth end in the namespace, whose rx-0 queue has the RPS mask.
    pub fn receiving_device(&self) -> &str {
        &self.peer
    }

    /// The veth end in irqlens's namespace, that the datagrams are sent from.
    pub fn sending_device(&self) -> &str {
        &self.host
    }

    /// Clears the RPS mask: the receive work stays where NAPI polls (with threaded NAPI,
    /// socket delivery included in the NAPI thread).
    pub fn clear_rps(&self) {
        let script = format!("echo 0 > /sys/class/net/{}/queues/rx-0/rps_cpus", self.peer);
        run(
            "ip",
            &["netns", "exec", &self.namespace, "sh", "-c", &script],
        );
    }

    /// Polls the namespace end's receive queue in a NAPI kthread (threaded NAPI,
    /// `napi/DEV-ID`) and returns its tid. veth polls with NAPI only with GRO on, and
    /// hands it UDP from a sender with TSO only with UDP GRO forwarding on. The thread
    /// goes with the namespace.
    pub fn threaded_napi(&self) -> u32 {
        let peer = &self.peer;
        let script = format!(
            "ethtool -K {peer} gro on rx-udp-gro-forwarding on >/dev/null && \
             echo 1 > /sys/class/net/{peer}/threaded"
        );
        run(
            "ip",
            &["netns", "exec", &self.namespace, "sh", "-c", &script],
        );
        let prefix = format!("napi/{peer}-");
        let find = || {
            irqlens_collect::system::threads_named(&prefix)
                .first()
                .copied()
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            if let Some(tid) = find() {
                return tid;
            }
            assert!(Instant::now() < deadline, "no {prefix}* thread appeared");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The receiving process (ip netns exec and taskset exec it in place).
    pub fn receiver_pid(&self) -> u32 {
        self.receiver.id()
    }

    /// Sends from a thread on `cpu` from now on (the receiver's CPU by default).
    pub fn set_sender_cpu(&mut self, cpu: u32) {
        self.sender_cpu = cpu;
    }

    /// Sends `rate` datagrams a second from a thread on the sender's CPU, in a burst
    /// each millisecond, until `stop_sending`.
    pub fn send(&mut self, rate: u32) {
        self.stop_sending();
        let stop = Arc::new(AtomicBool::new(false));
        let (flag, sent, cpu) = (stop.clone(), self.sent.clone(), self.sender_cpu);
        let handle = std::thread::spawn(move || {
            set_affinity(&CpuList::single(cpu)).expect("pinning the sender");
            let socket = UdpSocket::bind((HOST, 0)).expect("binding the sender");
            socket.connect((PEER, PORT)).expect("connecting the sender");
            let start = Instant::now();
            let mut done = 0u64;
            while !flag.load(Ordering::Relaxed) {
                let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
                while done < due && !flag.load(Ordering::Relaxed) {
                    // a full queue drops datagrams, as a NIC would: they count as sent
                    let batch = (due - done).min(BATCH as u64) as usize;
                    send_batch(&socket, batch);
                    done += batch as u64;
                }
                sent.store(done, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        self.sender = Some((stop, handle));
    }

    /// Datagrams sent so far.
    pub fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Stops the sender thread, if one runs.
    pub fn stop_sending(&mut self) {
        if let Some((stop, handle)) = self.sender.take() {
            stop.store(true, Ordering::Relaxed);
            let _ = handle.join();
        }
    }
}

impl Drop for UdpFlow {
    fn drop(&mut self) {
        self.stop_sending();
        let _ = self.receiver.kill();
        let _ = self.receiver.wait();
        // the pair goes at once (a namespace is dismantled later, in the background, and
        // the next flow of this process would find the names taken)
        let _ = Command::new("ip")
            .args(["link", "del", &self.host])
            .status();
        let _ = Command::new("ip")
            .args(["netns", "del", &self.namespace])
            .status();
    }
}
