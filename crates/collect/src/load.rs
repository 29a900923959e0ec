//! Defined system load (INTSPECT thesis §5.6): zero, one or many spinning tasks, started
//! before the measurement and stopped after it.
//!
//! The spinners are threads of irqlens: to the scheduler each is a task like a process
//! (and all share irqlens's autogroup, as processes it started would), and they end with
//! irqlens whatever way it ends, so no spinner outlives a killed run.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use anyhow::{Context, Result};

use super::sched::set_affinity;
use irqlens_model::stimulus::LoadScenario;
use irqlens_model::units::CpuList;

/// Running spinners; dropping it stops and joins them.
pub struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Load {
    /// Starts the scenario's spinners on `cpus` (they may move among them).
    pub fn start(scenario: LoadScenario, cpus: &CpuList) -> Result<Load> {
        let stop = Arc::new(AtomicBool::new(false));
        let mut load = Load {
            stop: stop.clone(),
            threads: Vec::new(),
        };
        for i in 0..scenario.tasks() {
            let (stop, cpus) = (stop.clone(), cpus.clone());
            let thread = std::thread::Builder::new()
                .name(format!("il-load/{i}"))
                .stack_size(64 << 10)
                .spawn(move || {
                    // A spinner on the wrong CPUs would load nothing we measure.
                    if set_affinity(&cpus).is_ok() {
                        while !stop.load(Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                    }
                })
                .context("starting a load thread")?;
            load.threads.push(thread);
        }
        Ok(load)
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_parse_and_print() {
        for (text, tasks) in [("zero", 0), ("one", 1), ("many", 256), ("many:8", 8)] {
            let load: LoadScenario = text.parse().unwrap();
            assert_eq!(load.tasks(), tasks);
            assert_eq!(load.to_string(), text);
        }
        for bad in ["", "two", "many:", "many:0", "many:x", "many:100000"] {
            assert!(bad.parse::<LoadScenario>().is_err(), "{bad}");
        }
    }

    #[test]
    fn spinners_stop_when_dropped() {
        let cpus = CpuList::single(0);
        let load = Load::start(LoadScenario::Many(3), &cpus).unwrap();
        assert_eq!(load.threads.len(), 3);
        drop(load);
    }
}
