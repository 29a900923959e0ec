//! How fast `irqlens sim` runs: 10 simulated seconds of a 2-CPU model offered 100k
//! packets/s (a NIC per CPU at 50k packets/s, a UDP server, a real-time task and a
//! background hog on each), per design: first with devices whose hardirq hands each
//! packet over (exactly 100k interrupts/s), then with NAPI devices (fewer interrupts:
//! the line stays masked while polls find packets). No root: `cargo bench -p irqlens-analyze --bench
//! sim`. It prints wall time over simulated time and asserts nothing about timing.

use std::time::Instant;

use irqlens_analyze::sim::simulate_design;
use irqlens_model::sim::{
    Arrival, Costs, DEFAULT_RING, DEFAULT_SOCKET_QUEUE, Design, Dist, Limits, SimConfig, Source,
    Task, TaskKind,
};

const SIMULATED_S: f64 = 10.0;

fn model(napi: bool) -> SimConfig {
    let mut sources = Vec::new();
    let mut tasks = Vec::new();
    for cpu in 0..2u32 {
        let nic = format!("nic{cpu}");
        sources.push(Source {
            name: nic.clone(),
            cpu,
            arrival: Arrival::Poisson {
                rate_per_s: 50_000.0,
            },
            hardirq: None,
            napi,
            softirq_per_packet: None,
            softirq_per_packet_saturated: None,
            softirq_per_packet_dropped: None,
            timer_poll: None,
            ring: DEFAULT_RING,
            thread_nice: None,
        });
        let task = |name: &str, priority: &str, kind| Task {
            name: format!("{name}{cpu}"),
            cpu,
            priority: priority.parse().expect("priority"),
            kind,
        };
        tasks.push(task(
            "server",
            "o:0",
            TaskKind::Consumer {
                source: nic,
                cost_per_packet: Dist::constant(3.0),
                socket_queue: DEFAULT_SOCKET_QUEUE,
                replies: false,
            },
        ));
        tasks.push(task(
            "control",
            "f:80",
            TaskKind::Periodic {
                period_us: 1000.0,
                phase_us: 0.0,
                cost: Dist::constant(50.0),
            },
        ));
        tasks.push(task("batch", "o:5", TaskKind::Hog));
    }
    SimConfig {
        cpus: 2,
        duration_s: SIMULATED_S,
        seed: 1,
        sources,
        tasks,
        costs: Costs::default(),
        limits: Limits::default(),
        designs: Design::six(),
    }
}

fn main() {
    for napi in [false, true] {
        let config = model(napi);
        irqlens_analyze::sim::check(&config).expect("a valid model");
        let devices = if napi { "NAPI" } else { "hardirq-delivered" };
        println!(
            "sim: {SIMULATED_S} simulated s, 2 CPUs, 100k packets/s offered, {devices} devices"
        );
        time_designs(&config);
    }
}

fn time_designs(config: &SimConfig) {
    for design in &config.designs {
        let start = Instant::now();
        let result = simulate_design(config, design);
        let wall = start.elapsed().as_secs_f64();
        println!(
            "{:<24} wall {wall:6.2} s  wall/simulated {:5.3}  hardirqs/s {:>7.0}  switches/s {:>7.0}",
            design.to_string(),
            wall / SIMULATED_S,
            result.interrupts as f64 / SIMULATED_S,
            result.context_switches as f64 / SIMULATED_S,
        );
    }
}
