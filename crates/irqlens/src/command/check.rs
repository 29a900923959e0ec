//! `irqlens check`: the machine's configuration for a workload's CPUs, then a short run of
//! each capability a threshold needs (noise, wakeup, bh), each judged PASS, WARN, FAIL
//! or SKIP with the cause the run named and advise's remedy for it.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cli::{CheckArgs, OutputArgs, ShowArgs};
use crate::driver::{Actions, Done, Measures, Needs, Run, STOP, Tool, interrupted};
use crate::measure::bh::BhTool;
use crate::measure::noise::NoiseTool;
use crate::measure::wakeup::WakeupTool;
use crate::measure::{Measure, Outcome, run_live};
use crate::parse::Action;
use irqlens_analyze::advise::advise;
use irqlens_analyze::check::measured::measured_checks;
use irqlens_analyze::check::profile_checks;
use irqlens_collect::{machine, system};
use irqlens_model::bh::BhOptions;
use irqlens_model::check::{
    Check, CheckReport, Figure, Kind, Metric, Profile, ProfileReport, Status, Thresholds,
};
use irqlens_model::noise::NoiseOptions;
use irqlens_model::run::Header;
use irqlens_model::tune::CpuCause;
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::WakeupOptions;
use irqlens_record::output;

/// `irqlens check`, resolved: the CPUs chosen, the profile's thresholds with the options'.
pub struct CheckTool {
    cpus: CpuList,
    /// Why those CPUs.
    cpus_from: String,
    profile: Profile,
    thresholds: Thresholds,
    duration: Duration,
    skip: Vec<String>,
    show_profile: bool,
    junit: Option<PathBuf>,
    show: ShowArgs,
    on_end: Vec<Action>,
}

impl CheckArgs {
    /// The CPUs to check (see [`checked_cpus`]) and the thresholds, the options' over the
    /// profile's.
    pub fn resolve(self) -> Result<CheckTool> {
        let (cpus, cpus_from) = checked_cpus(self.cpus.as_ref())?;
        let micros = |time: Option<Duration>| time.map(|t| t.as_nanos() as f64 / 1_000.0);
        let given = Thresholds {
            max_noise_us: micros(self.max_noise),
            min_available_percent: self.min_available,
            max_latency_us: micros(self.max_latency),
            max_bh_us: micros(self.max_bh),
        };
        let known: Vec<&str> = profile_checks(self.profile)
            .into_iter()
            .chain(Metric::ALL.map(Metric::id))
            .collect();
        if let Some(unknown) = self.skip.iter().find(|id| !known.contains(&id.as_str())) {
            anyhow::bail!(
                "--skip {unknown}: no such check in the {} profile (see --show-profile)",
                self.profile.name()
            );
        }
        Ok(CheckTool {
            cpus,
            cpus_from,
            profile: self.profile,
            thresholds: self.profile.thresholds().overridden_by(&given),
            duration: self.duration,
            skip: self.skip,
            show_profile: self.show_profile,
            junit: self.junit,
            show: self.show,
            on_end: self.end.on_end,
        })
    }
}

/// The CPUs checked, and why: those given, else the isolated ones, else the nohz_full
/// ones (the CPUs a machine set aside), else every online CPU but the first, which keeps
/// the housekeeping (and irqlens's collector).
fn checked_cpus(given: Option<&CpuList>) -> Result<(CpuList, String)> {
    if let Some(cpus) = given {
        return Ok((system::select_cpus(Some(cpus))?, "-c".into()));
    }
    for (file, why) in [
        ("isolated", "the isolated CPUs"),
        ("nohz_full", "the nohz_full CPUs"),
    ] {
        let set_aside = std::fs::read_to_string(format!("/sys/devices/system/cpu/{file}"))
            .ok()
            .and_then(|text| text.trim().parse::<CpuList>().ok())
            .filter(|cpus| !cpus.is_empty());
        if let Some(cpus) = set_aside {
            return Ok((system::select_cpus(Some(&cpus))?, why.into()));
        }
    }
    let online = system::online_cpus()?;
    let mut cpus = online.iter();
    let first = cpus.next().context("no online CPU")?;
    let rest: CpuList = cpus.collect();
    if rest.is_empty() {
        return Ok((online, "the only online CPU".into()));
    }
    Ok((
        rest,
        format!("none isolated: all online but CPU {first}"),
    ))
}

impl Tool for CheckTool {
    const NAME: &'static str = "check";

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    /// Tracing for the measured checks; the configuration is read by anyone.
    fn needs(&self) -> Needs {
        if self.measures().is_some() {
            Needs::Tracing
        } else {
            Needs::Nothing
        }
    }

    fn measures(&self) -> Option<Measures> {
        let measuring = !self.show_profile && !self.measured_metrics().is_empty();
        measuring.then(|| Measures {
            cpus: self.cpus.clone(),
            alone: false,
        })
    }

    fn files(&self) -> Vec<(&'static str, &Path)> {
        self.junit
            .iter()
            .map(|path| ("--junit", path.as_path()))
            .collect()
    }

    fn actions(&self) -> Actions {
        Actions {
            on_end: self.on_end.clone(),
            on_threshold: Vec::new(),
        }
    }

    fn execute(self, run: &mut Run) -> Result<Done> {
        if self.show_profile {
            return Ok(Done::new(self.profile_report()));
        }
        let mut checks = self.configuration_checks()?;
        let output = OutputArgs {
            show: self.show.clone(),
            ..OutputArgs::default()
        };
        let mut measured = Measured::default();
        let on = format!(
            "on CPUs {} for {}",
            self.cpus,
            humantime::format_duration(self.duration)
        );
        let needed = self.measured_metrics();
        let needs = |metrics: &[Metric]| metrics.iter().any(|m| needed.contains(m));
        if needs(&[Metric::MaxNoise, Metric::Available]) {
            let noise = NoiseOptions {
                duration: Some(self.duration),
                ..NoiseOptions::defaults(self.cpus.clone())
            };
            measured.run::<NoiseTool>(run, &format!("noise {on}"), noise, &output)?;
        }
        if needs(&[Metric::MaxLatency]) {
            let wakeup = WakeupOptions {
                duration: Some(self.duration),
                ..WakeupOptions::timer(self.cpus.clone())
            };
            measured.run::<WakeupTool>(run, &format!("wakeup {on}"), wakeup, &output)?;
        }
        if needs(&[Metric::MaxBh]) {
            let bh = BhOptions {
                duration: Some(self.duration),
                ..BhOptions::defaults(self.cpus.clone())
            };
            measured.run::<BhTool>(run, &format!("bottom halves {on}"), bh, &output)?;
        }
        let machine = machine::read(&measured.causes, &[])?;
        let (advice, _) = advise(&measured.causes, &machine);
        let thresholds = Thresholds {
            max_noise_us: self.wanted(Metric::MaxNoise),
            min_available_percent: self.wanted(Metric::Available),
            max_latency_us: self.wanted(Metric::MaxLatency),
            max_bh_us: self.wanted(Metric::MaxBh),
        };
        let unmeasured = |metric: Metric| unmeasured(metric, &self.cpus);
        checks.extend(measured_checks(
            &measured.figures,
            &thresholds,
            &measured.causes,
            &advice,
            &unmeasured,
        ));
        checks.extend(self.skipped());
        let report = CheckReport {
            header: Header::new(Self::NAME),
            profile: self.profile,
            cpus: self.cpus.clone(),
            cpus_from: self.cpus_from.clone(),
            thresholds: self.thresholds.clone(),
            duration_ns: self.duration.as_nanos() as u64,
            checks,
            interrupted: interrupted(),
        };
        if let Some(path) = &self.junit {
            write_junit(&report, path)?;
        }
        Ok(Done::new(report))
    }
}

impl CheckTool {
    /// The threshold of `metric` if its check runs (set, and not skipped).
    fn wanted(&self, metric: Metric) -> Option<f64> {
        let skipped = self.skip.iter().any(|id| id == metric.id());
        metric.threshold(&self.thresholds).filter(|_| !skipped)
    }

    /// The measured checks that run, in order.
    fn measured_metrics(&self) -> Vec<Metric> {
        Metric::ALL
            .into_iter()
            .filter(|metric| self.wanted(*metric).is_some())
            .collect()
    }

    /// The configuration checks of the profile, but those skipped.
    fn configuration_checks(&self) -> Result<Vec<Check>> {
        let read = irqlens_collect::check::read_configuration(&self.cpus)?;
        let checks = irqlens_analyze::check::configuration(&read, &self.cpus, self.profile);
        Ok(checks
            .into_iter()
            .filter(|check| !self.skip.contains(&check.id))
            .collect())
    }

    /// A SKIP for every check left out with `--skip`, so that a JUnit consumer sees it.
    fn skipped(&self) -> Vec<Check> {
        self.skip
            .iter()
            .map(|id| {
                let kind = if Metric::ALL.iter().any(|m| m.id() == id) {
                    Kind::Measured
                } else {
                    Kind::Configuration
                };
                Check::new(id, kind, Status::Skip, "left out (--skip)", "-")
            })
            .collect()
    }

    fn profile_report(&self) -> ProfileReport {
        ProfileReport {
            header: Header::new(Self::NAME),
            profile: self.profile,
            about: self.profile.about().into(),
            thresholds: self.thresholds.clone(),
            duration_ns: self.duration.as_nanos() as u64,
            configuration: profile_checks(self.profile)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            measured: self
                .measured_metrics()
                .into_iter()
                .map(|metric| metric.id().to_owned())
                .collect(),
        }
    }
}

/// What the measured runs found: their figures and the causes they named.
#[derive(Default)]
struct Measured {
    figures: Vec<Figure>,
    causes: Vec<CpuCause>,
}

impl Measured {
    /// Runs `M` with `options` (saying so on stderr unless quiet), and keeps its figures
    /// and causes; after Ctrl-C or SIGTERM nothing more runs.
    fn run<M: Measure>(
        &mut self,
        run: &Run,
        what: &str,
        options: M::Options,
        output: &OutputArgs,
    ) -> Result<()> {
        if interrupted() {
            return Ok(());
        }
        run.say(format!("measuring {what}"));
        let (result, closed) = run_live::<M>(options, output)?;
        closed?;
        self.figures.extend(result.check_figures());
        self.causes.extend(result.causes().unwrap_or_default());
        // a run ends by setting STOP: the next starts with it clear
        STOP.store(false, Ordering::Relaxed);
        Ok(())
    }
}

/// Why a measured check has no figure.
fn unmeasured(metric: Metric, cpus: &CpuList) -> String {
    if interrupted() {
        return "not measured: interrupted".into();
    }
    match metric {
        Metric::MaxBh => format!("no bottom half ran on CPUs {cpus}"),
        _ => format!("no samples on CPUs {cpus}"),
    }
}

/// Writes the JUnit XML of `report` to `path` (made as every output file is).
fn write_junit(report: &CheckReport, path: &Path) -> Result<()> {
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut file = output::create(path)?;
        file.write_all(irqlens_present::check::junit(report).as_bytes())
    };
    write().with_context(|| format!("cannot write --junit {}", path.display()))
}
