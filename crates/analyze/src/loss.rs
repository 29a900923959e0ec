//! What a run's probe could not keep (its buffer was full), and the one way every
//! capability shows which figures that may have cut short: a `*` on the affected rows or
//! columns of a table, a legend line under it, and a `lost` object in JSON.

use std::collections::BTreeMap;

use irqlens_model::account::AccountRunInfo;
use irqlens_model::bh::BhRunInfo;
use irqlens_model::noise::NoiseRunInfo;
use irqlens_model::tables::Lost;
use irqlens_model::wakeup::WakeupRunInfo;

/// The mark of a figure that losses may have cut short.
pub const MARK: &str = "*";

/// The losses of a run, or of one period of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Losses {
    /// What the probe emits: "checkpoints" (bh, wakeup, account) or "records" (noise).
    pub what: &'static str,
    /// How many were lost.
    pub events: u64,
    /// Per CPU, when the probe counts them so; without it, any CPU may have lost them.
    pub by_cpu: Option<BTreeMap<u32, u64>>,
}

impl Losses {
    /// `events` checkpoints lost, on any CPU.
    pub fn checkpoints(events: u64) -> Self {
        Losses {
            what: "checkpoints",
            events,
            by_cpu: None,
        }
    }

    /// `events` noise records lost, on any CPU.
    pub fn records(events: u64) -> Self {
        Losses {
            what: "records",
            ..Losses::checkpoints(events)
        }
    }

    /// With the count of each CPU: only the figures of CPUs that lost some are marked.
    pub fn per_cpu(self, by_cpu: BTreeMap<u32, u64>) -> Self {
        Losses {
            by_cpu: Some(by_cpu),
            ..self
        }
    }

    /// Whether anything was lost.
    pub fn any(&self) -> bool {
        self.events > 0
    }

    /// Whether figures of `cpu` may be short.
    pub fn on_cpu(&self, cpu: u32) -> bool {
        match &self.by_cpu {
            Some(by_cpu) => by_cpu.get(&cpu).is_some_and(|&lost| lost > 0),
            None => self.any(),
        }
    }

    /// The mark of figures of the whole run (any CPU): `*` if anything was lost.
    pub fn mark(&self) -> &'static str {
        self.mark_if(self.any())
    }

    /// The mark of figures of one CPU.
    pub fn mark_cpu(&self, cpu: u32) -> &'static str {
        self.mark_if(self.on_cpu(cpu))
    }

    /// The mark of figures losses can cut short (`lossy`), as `mark`.
    pub fn mark_if(&self, lossy: bool) -> &'static str {
        if lossy && self.any() { MARK } else { "" }
    }

    /// The line under a table whose `marked` ("rows", "columns") carry the mark; none
    /// when nothing was lost.
    pub fn legend(&self, marked: &str) -> Option<String> {
        self.any().then(|| {
            let cpus = match &self.by_cpu {
                Some(by_cpu) => {
                    let cpus: Vec<String> = by_cpu
                        .iter()
                        .filter(|&(_, &lost)| lost > 0)
                        .map(|(cpu, lost)| format!("CPU {cpu} {lost}"))
                        .collect();
                    format!(" ({})", cpus.join(", "))
                }
                None => String::new(),
            };
            format!(
                "{MARK} {} {} lost{cpus} (the probe's buffer was full): counts and times in marked {marked} may be short",
                self.events, self.what
            )
        })
    }

    /// The `lost` object of a JSON document: `marked` names the keys of the document
    /// whose figures may be short (none when nothing was lost).
    pub fn table(&self, marked: &[&str]) -> Lost {
        let marked: &[&str] = if self.any() { marked } else { &[] };
        Lost {
            events: self.events,
            what: self.what.into(),
            by_cpu: self.by_cpu.clone(),
            affected: self.any(),
            marked: marked.iter().map(|&key| key.into()).collect(),
            legend: self.legend("rows and columns"),
        }
    }
}

/// What a run lost, with what it may have touched.
pub trait RunLosses {
    /// The run's losses, marked where they can reach.
    fn losses(&self) -> Losses;
}

impl RunLosses for NoiseRunInfo {
    /// A CPU's records are its own: a loss touches that CPU's figures only.
    fn losses(&self) -> Losses {
        Losses::records(self.common.lost_events).per_cpu(self.common.lost_by_cpu.clone())
    }
}

impl RunLosses for BhRunInfo {
    /// Every sample and cause comes from the checkpoints: a loss can touch any of them.
    fn losses(&self) -> Losses {
        Losses::checkpoints(self.common.lost_events)
    }
}

impl RunLosses for WakeupRunInfo {
    fn losses(&self) -> Losses {
        Losses::checkpoints(self.common.lost_events)
    }
}

impl RunLosses for AccountRunInfo {
    /// The ledger comes from the checkpoints: a loss can touch any process's figures.
    fn losses(&self) -> Losses {
        Losses::checkpoints(self.common.lost_events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_lost_marks_nothing() {
        let losses = Losses::checkpoints(0);
        assert_eq!((losses.mark(), losses.mark_cpu(3)), ("", ""));
        assert_eq!(losses.legend("rows"), None);
        let lost = losses.table(&["rows"]);
        assert!(!lost.affected);
        assert!(lost.marked.is_empty());
        assert_eq!(lost.legend, None);
    }

    #[test]
    fn a_total_without_cpus_marks_every_cpu() {
        let losses = Losses::checkpoints(12);
        assert_eq!(
            (losses.mark(), losses.mark_cpu(0), losses.mark_cpu(7)),
            ("*", "*", "*")
        );
        assert_eq!(
            losses.legend("rows").unwrap(),
            "* 12 checkpoints lost (the probe's buffer was full): counts and times in marked rows may be short"
        );
        let lost = losses.table(&["mechanisms", "series"]);
        assert_eq!((lost.events, lost.what.as_str()), (12, "checkpoints"));
        assert!(lost.affected);
        assert_eq!(lost.marked, ["mechanisms", "series"]);
        assert_eq!(lost.by_cpu, None);
    }

    #[test]
    fn per_cpu_counts_mark_only_the_cpus_that_lost() {
        let losses = Losses::records(5).per_cpu(BTreeMap::from([(1, 5), (2, 0)]));
        assert_eq!(
            (losses.mark_cpu(1), losses.mark_cpu(2), losses.mark_cpu(3)),
            ("*", "", "")
        );
        assert_eq!(losses.mark(), "*");
        assert!(
            losses
                .legend("rows")
                .unwrap()
                .starts_with("* 5 records lost (CPU 1 5) ")
        );
        let by_cpu = serde_json::to_value(losses.table(&[]).by_cpu).unwrap();
        assert_eq!(by_cpu, serde_json::json!({"1": 5, "2": 0}));
    }
}
