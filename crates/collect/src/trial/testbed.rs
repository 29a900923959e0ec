//! The test bed of one point: two private network namespaces joined by a veth pair
//! (GRO on on the receiving end, so that its NAPI can be threaded), the receive work put
//! on the receiving CPU as the design says, the receiving veth's NAPI deferred if the
//! design defers, and the scheduler's autogroups off. Every change is journaled before it
//! is made (the namespaces too, as [`Knob::Netns`]), and put back by
//! [`Testbed::tear_down`], or by the journal's owner at its exit, or by `irqlens tune
//! --revert` after a SIGKILL.

use std::fs::File;
use std::io::{Read, Seek};
use std::net::Ipv4Addr;

use anyhow::{Context, Result, ensure};

use crate::journal::{Journal, SystemKnobs};
use crate::netns;
use irqlens_model::design::{BottomHalves, Design};
use irqlens_model::sched::Priority;
use irqlens_model::trial::{TrialOptions, defer_knobs};
use irqlens_model::tune::{Knob, cpu_mask_hex};
use irqlens_model::units::CpuList;

/// The load generator's address, in the sending namespace.
pub const SENDER_ADDRESS: Ipv4Addr = Ipv4Addr::new(169, 254, 251, 1);
/// The echo server's address, in the receiving namespace.
pub const RECEIVER_ADDRESS: Ipv4Addr = Ipv4Addr::new(169, 254, 251, 2);
/// The echo server's port (RFC 862's).
pub const ECHO_PORT: u16 = 7;
/// What every trial namespace's name starts with.
pub const NETNS_PREFIX: &str = "irqlens-trial-";
/// The scheduler's autogroups (a task group per session): off while a bed stands.
pub const AUTOGROUP_SYSCTL: &str = "kernel.sched_autogroup_enabled";

/// One side of the veth pair.
#[derive(Clone, Debug)]
pub struct Side {
    /// Its network namespace (`ip netns` name).
    pub netns: String,
    /// Its veth device.
    pub device: String,
}

/// A built test bed; [`Testbed::tear_down`] undoes it.
#[derive(Debug)]
pub struct Testbed {
    /// The load generator's side.
    pub sender: Side,
    /// The echo server's side.
    pub receiver: Side,
    /// The receiving device's NAPI threads (threaded designs).
    pub napi_threads: Vec<u32>,
    /// The receiving namespace's /proc/net/netstat.
    receiver_netstat: Option<File>,
    /// The journal entries made, in order.
    applied: Vec<usize>,
}

impl Testbed {
    /// Builds the bed for `design` (names made of this process's id, so that two trials
    /// cannot meet and a dead one's leftovers are told apart).
    pub fn build(journal: &mut Journal, design: Design, options: &TrialOptions) -> Result<Self> {
        let pid = std::process::id();
        let side = |end: char| Side {
            netns: format!("{NETNS_PREFIX}{pid}-{end}"),
            // short: the NAPI thread's comm (15 bytes) is `napi/DEVICE-ID`
            device: format!("t{pid}{end}"),
        };
        let mut bed = Testbed {
            sender: side('s'),
            receiver: side('r'),
            napi_threads: Vec::new(),
            receiver_netstat: None,
            applied: Vec::new(),
        };
        if let Err(err) = bed.set_up(journal, design, options) {
            let _ = bed.tear_down(journal);
            return Err(err);
        }
        Ok(bed)
    }

    fn apply(&mut self, journal: &mut Journal, knob: Knob, to: &str) -> Result<()> {
        self.applied.push(journal.change(&SystemKnobs, knob, to)?);
        Ok(())
    }

    fn set_up(
        &mut self,
        journal: &mut Journal,
        design: Design,
        options: &TrialOptions,
    ) -> Result<()> {
        let (sender, receiver) = (self.sender.clone(), self.receiver.clone());
        // With autogroups on, the echo server (started after this) would compete with
        // the kernel's threads as its whole session, at the session's weight (nice 0),
        // not at its own nice: threaded-niced's NAPI thread at nice -5 took 70% of the
        // CPU from an echo server at -10 (docs/trial.md). Off, both are in the root task
        // group, and their nices compare as the design says.
        let autogroup = Knob::Sysctl {
            name: AUTOGROUP_SYSCTL.into(),
        };
        if crate::knob::read(&autogroup).is_ok_and(|on| on.trim() != "0") {
            self.apply(journal, autogroup, "0")?;
        }
        for side in [&sender, &receiver] {
            self.applied
                .push(netns::add_journaled(journal, &side.netns)?);
        }
        netns::ip(&[
            "link",
            "add",
            &sender.device,
            "netns",
            &sender.netns,
            "type",
            "veth",
            "peer",
            "name",
            &receiver.device,
            "netns",
            &receiver.netns,
        ])?;
        for (side, address) in [(&sender, SENDER_ADDRESS), (&receiver, RECEIVER_ADDRESS)] {
            let address = format!("{address}/30");
            netns::ip(&[
                "-n",
                &side.netns,
                "addr",
                "add",
                &address,
                "dev",
                &side.device,
            ])?;
            netns::ip(&["-n", &side.netns, "link", "set", &side.device, "up"])?;
        }
        let ethtool = |side: &Side, args: &[&str]| -> Result<()> {
            let mut all = vec!["netns", "exec", &side.netns, "ethtool", "-K", &side.device];
            all.extend(args);
            netns::ip(&all).map(drop)
        };
        // GRO gives the receiving veth a NAPI instance, which threaded mode needs; veth
        // hands a UDP datagram to it only if the sending device has no TSO (else to the
        // sending CPU's backlog)
        ethtool(&receiver, &["gro", "on"])?;
        ethtool(&sender, &["tso", "off"])?;
        self.receiver_netstat = Some(netns::open_proc_net(&receiver.netns, "netstat")?);
        // per device: sysfs sets the device's NAPIs (veth's one, made by GRO on) and those
        // it makes later; per NAPI (netdev netlink, 6.13) would set the same one here
        if let Some((hard_irqs, timeout_ns)) = defer_knobs(&design) {
            let [defer, timeout] = self.defer_knobs();
            self.apply(journal, timeout, &timeout_ns.to_string())?;
            self.apply(journal, defer, &hard_irqs.to_string())?;
        }
        // the echoes' receive work stays on the sending CPU
        let rps = |side: &Side| Knob::RpsCpus {
            netns: Some(side.netns.clone()),
            device: side.device.clone(),
            queue: 0,
        };
        self.apply(
            journal,
            rps(&sender),
            &cpu_mask_hex(&CpuList::single(options.sending_cpu)),
        )?;
        if design.threaded() {
            self.apply(
                journal,
                Knob::NapiThreaded {
                    netns: Some(receiver.netns.clone()),
                    device: receiver.device.clone(),
                },
                "1",
            )?;
            self.napi_threads = napi_threads(&receiver.device)?;
            // threaded-fifo+process-aware starts there too: steer then lowers it
            let priority = match design.bottom_halves {
                BottomHalves::ThreadedNiced => Priority::Other {
                    nice: options.napi_nice,
                },
                _ => Priority::Fifo(options.napi_fifo_priority),
            };
            for &tid in &self.napi_threads.clone() {
                let comm = thread_comm(tid)?;
                let cpus = CpuList::single(options.receiving_cpu).to_string();
                let affinity = Knob::ThreadAffinity {
                    tid,
                    comm: comm.clone(),
                };
                self.apply(journal, affinity, &cpus)?;
                self.apply(
                    journal,
                    Knob::ThreadPriority { tid, comm },
                    &priority.to_string(),
                )?;
            }
        } else {
            // the veth's NAPI runs where the sender sends; RPS moves NET_RX's protocol
            // work (IP, UDP, the socket) to the receiving CPU
            self.apply(
                journal,
                rps(&receiver),
                &cpu_mask_hex(&CpuList::single(options.receiving_cpu)),
            )?;
        }
        if let Some(packets) = options.budget_of(&design) {
            let sysctl = |name: &str| Knob::Sysctl {
                name: format!("net.core.{name}"),
            };
            self.apply(journal, sysctl("netdev_budget"), &packets.to_string())?;
            if let Some(usecs) = options.budget_usecs {
                self.apply(journal, sysctl("netdev_budget_usecs"), &usecs.to_string())?;
            }
        }
        Ok(())
    }

    /// The receiving veth's `napi_defer_hard_irqs` and `gro_flush_timeout`.
    pub fn defer_knobs(&self) -> [Knob; 2] {
        let (netns, device) = (Some(self.receiver.netns.clone()), &self.receiver.device);
        [
            Knob::NapiDeferHardIrqs {
                netns: netns.clone(),
                device: device.clone(),
            },
            Knob::GroFlushTimeout {
                netns,
                device: device.clone(),
            },
        ]
    }

    /// Packets busy polls took from the receiving namespace's devices so far
    /// (`BusyPollRxPackets`).
    pub fn busy_polled(&self) -> Option<u64> {
        let mut file = self.receiver_netstat.as_ref()?;
        file.rewind().ok()?;
        let mut text = String::new();
        file.read_to_string(&mut text).ok()?;
        crate::system::net_counter(&text, "BusyPollRxPackets")
    }

    /// Puts back everything the bed changed, last first, and removes its namespaces
    /// (with the veth pair and its NAPI threads). What fails stays in the journal.
    pub fn tear_down(self, journal: &mut Journal) -> Result<()> {
        let mut first_error = None;
        for &index in self.applied.iter().rev() {
            // a thread that went with its device has nothing to put back
            if let Err(err) = journal.revert(&SystemKnobs, index) {
                first_error.get_or_insert(err);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

fn thread_comm(tid: u32) -> Result<String> {
    crate::system::thread_comm(tid).with_context(|| format!("thread {tid} is gone"))
}

/// The `napi/DEVICE-ID` kernel threads of `device`.
fn napi_threads(device: &str) -> Result<Vec<u32>> {
    // comm is cut at 15 bytes: the id may be missing, the device is not (it is short)
    let tids = crate::system::threads_named(&format!("napi/{device}-"));
    ensure!(
        !tids.is_empty(),
        "{device} has no NAPI thread after threaded=1 (the kernel did not make one)"
    );
    Ok(tids)
}
