//! A sparse flow whose datagrams carry their send time: each one's delay from the send on
//! CPU 0 to the receive by a FIFO 80 thread on CPU 1, in a flow's namespace (steer's test
//! and bench: Zhang & West's high-priority receiver).

use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use irqlens_collect::clock::monotonic_ns;
use irqlens_collect::netns;
use irqlens_collect::sched::{set_affinity, set_priority};
use irqlens_model::sched::Priority;
use irqlens_model::units::CpuList;

use crate::udp_flow::PEER;

/// The port the stamped receiver binds (the flow's own receiver has port 9).
const STAMPED_PORT: u16 = 7;

/// A datagram every 10 ms for `seconds`, sent from CPU 0 with the monotonic time in it, to
/// a receiver in `namespace`: a thread at FIFO 80 on CPU 1. Returns each datagram's delay
/// from its send to its receive, ns. The calling thread is pinned to CPU 0.
pub fn stamped_delays(namespace: &str, seconds: u64) -> Vec<u64> {
    let stop = &AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (bound, is_bound) = std::sync::mpsc::channel();
        let receiver = scope.spawn(move || {
            netns::enter(namespace).unwrap();
            set_affinity(&CpuList::single(1)).unwrap();
            set_priority(Priority::Fifo(80)).unwrap();
            let socket = UdpSocket::bind((PEER, STAMPED_PORT)).unwrap();
            socket
                .set_read_timeout(Some(Duration::from_millis(50)))
                .unwrap();
            bound.send(()).unwrap();
            let mut delays = Vec::new();
            let mut buffer = [0u8; 64];
            while !stop.load(Ordering::Relaxed) {
                if let Ok(8..) = socket.recv(&mut buffer) {
                    let sent = u64::from_ne_bytes(buffer[..8].try_into().unwrap());
                    delays.push(monotonic_ns().saturating_sub(sent));
                }
            }
            delays
        });
        is_bound.recv().expect("the receiver thread started");
        set_affinity(&CpuList::single(0)).unwrap();
        let socket = UdpSocket::bind("0.0.0.0:0").unwrap();
        for _ in 0..seconds * 100 {
            let _ = socket.send_to(&monotonic_ns().to_ne_bytes(), (PEER, STAMPED_PORT));
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(100));
        stop.store(true, Ordering::Relaxed);
        receiver.join().unwrap()
    })
}

/// The `q` quantile of `delays`, µs.
pub fn quantile_us(delays: &mut [u64], q: f64) -> f64 {
    assert!(!delays.is_empty(), "no datagram received");
    delays.sort_unstable();
    delays[((delays.len() - 1) as f64 * q) as usize] as f64 / 1e3
}
