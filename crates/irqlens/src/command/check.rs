//! `irqlens check`: the machine's configuration for a workload's CPUs, then a short run of
//! each capability a threshold needs (noise, wakeup, bh), each judged PASS, WARN, FAIL
//! or SKIP with the cause the run named and advise's remedy for it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::cli::{CheckArgs, OutputArgs, ShowArgs};
use crate::driver::{Actions, Done, Measures, Needs, Run, Tool, interrupted};
use crate::measure::bh::BhTool;
use crate::measure::noise::NoiseTool;
use crate::measure::wakeup::WakeupTool;
use crate::measure::{Measure, Outcome, run_for_figures};
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
        if self.show_profile && self.junit.is_some() {
            anyhow::bail!("--show-profile checks nothing: it writes no --junit report");
        }
        let mut skip = self.skip;
        skip.sort_unstable();
        skip.dedup();
        Ok(CheckTool {
            cpus,
            cpus_from,
            profile: self.profile,
            thresholds: self.profile.thresholds().overridden_by(&given),
            duration: self.duration,
            skip,
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
    let online = system::online_cpus()?;
    let set_aside = [
        (irqlens_collect::check::isolated_cpus(), "the isolated CPUs"),
        (
            irqlens_collect::check::nohz_full_cpus().unwrap_or_default(),
            "the nohz_full CPUs",
        ),
    ];
    for (cpus, why) in set_aside {
        // numbered among the possible CPUs: those offline now are not checked
        let online_ones: CpuList = cpus.iter().filter(|&cpu| online.contains(cpu)).collect();
        if !online_ones.is_empty() {
            return Ok((online_ones, why.into()));
        }
    }
    let mut cpus = online.iter();
    let first = cpus.next().context("no online CPU")?;
    let rest: CpuList = cpus.collect();
    if rest.is_empty() {
        return Ok((online, "the only online CPU".into()));
    }
    Ok((rest, format!("none isolated: all online but CPU {first}")))
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
        const NOISE: &[Metric] = &[Metric::MaxNoise, Metric::Available];
        if needs(NOISE) {
            let noise = NoiseOptions {
                duration: Some(self.duration),
                ..NoiseOptions::defaults(self.cpus.clone())
            };
            measured.run::<NoiseTool>(run, &format!("noise {on}"), NOISE, noise, &output);
        }
        const WAKEUP: &[Metric] = &[Metric::MaxLatency];
        if needs(WAKEUP) {
            let wakeup = WakeupOptions {
                duration: Some(self.duration),
                ..WakeupOptions::timer(self.cpus.clone())
            };
            let what = format!("wakeup {on}");
            measured.run::<WakeupTool>(run, &what, WAKEUP, wakeup, &output);
        }
        const BH: &[Metric] = &[Metric::MaxBh];
        if needs(BH) {
            let bh = BhOptions {
                duration: Some(self.duration),
                ..BhOptions::defaults(self.cpus.clone())
            };
            measured.run::<BhTool>(run, &format!("bottom halves {on}"), BH, bh, &output);
        }
        let machine = machine::read(&measured.causes, &[])?;
        let (advice, _) = advise(&measured.causes, &machine);
        let thresholds = self.active_thresholds();
        let unmeasured = |metric: Metric| match measured.failure(metric) {
            Some(why) => format!("not measured: {why}"),
            None => unmeasured(metric, &self.cpus),
        };
        let judged = measured_checks(
            &measured.figures,
            &thresholds,
            &measured.causes,
            &advice,
            &unmeasured,
        );
        // a pass on part of the duration is no pass
        checks.extend(judged.into_iter().map(|check| match check.status {
            Status::Pass if interrupted() => Check {
                status: Status::Skip,
                found: format!("interrupted ({})", check.found),
                ..check
            },
            _ => check,
        }));
        checks.extend(self.skipped_measurements());
        let report = CheckReport {
            header: Header::new(Self::NAME),
            profile: self.profile,
            cpus: self.cpus.clone(),
            cpus_from: self.cpus_from.clone(),
            thresholds,
            duration_ns: self.duration.as_nanos() as u64,
            checks,
            interrupted: interrupted(),
        };
        if let Some(path) = &self.junit {
            write_junit(&report, path)?;
        }
        // a script or CI job stopped by its timeout must not read a verdict
        let cut_short = interrupted().then(|| {
            anyhow::anyhow!(
                "interrupted (Ctrl-C/SIGTERM): the measured checks did not run for their -d"
            )
        });
        // a run that failed leaves its checks unjudged: the report stands, the exit is 1
        let failed = measured.failed.into_iter().next().map(|(_, why)| {
            anyhow::anyhow!("a measured run failed, its checks are not judged: {why}")
        });
        Ok(Done::new(report).failed_after(cut_short.or(failed)))
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

    /// The thresholds of the measured checks that run.
    fn active_thresholds(&self) -> Thresholds {
        Thresholds {
            max_noise_us: self.wanted(Metric::MaxNoise),
            min_available_percent: self.wanted(Metric::Available),
            max_latency_us: self.wanted(Metric::MaxLatency),
            max_bh_us: self.wanted(Metric::MaxBh),
        }
    }

    /// The configuration checks of the profile, those left out with `--skip` in their
    /// place as SKIP, so that a JUnit consumer sees them.
    fn configuration_checks(&self) -> Result<Vec<Check>> {
        let read = irqlens_collect::check::read_configuration(&self.cpus)?;
        let checks = irqlens_analyze::check::configuration(&read, &self.cpus, self.profile);
        Ok(checks
            .into_iter()
            .map(|check| match self.skip.contains(&check.id) {
                true => left_out(&check.id, Kind::Configuration),
                false => check,
            })
            .collect())
    }

    /// A SKIP for every measured check of the profile left out with `--skip`.
    fn skipped_measurements(&self) -> Vec<Check> {
        Metric::ALL
            .into_iter()
            .filter(|metric| metric.threshold(&self.thresholds).is_some())
            .filter(|metric| self.skip.iter().any(|id| id == metric.id()))
            .map(|metric| left_out(metric.id(), Kind::Measured))
            .collect()
    }

    fn profile_report(&self) -> ProfileReport {
        ProfileReport {
            header: Header::new(Self::NAME),
            profile: self.profile,
            about: self.profile.about().into(),
            thresholds: self.active_thresholds(),
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

/// What the measured runs found: their figures and the causes they named, and the runs
/// that failed (the metrics they were for, and why).
#[derive(Default)]
struct Measured {
    figures: Vec<Figure>,
    causes: Vec<CpuCause>,
    failed: Vec<(&'static [Metric], String)>,
}

impl Measured {
    /// Runs `M` with `options` for `metrics` (saying so on stderr unless quiet), and keeps
    /// its figures and causes, or why it failed: the other checks are judged all the
    /// same. After Ctrl-C or SIGTERM nothing more runs.
    fn run<M: Measure>(
        &mut self,
        run: &Run,
        what: &str,
        metrics: &'static [Metric],
        options: M::Options,
        output: &OutputArgs,
    ) {
        if interrupted() {
            return;
        }
        run.say(format!("measuring {what}"));
        match run_for_figures::<M>(options, output) {
            Ok(result) => {
                self.figures.extend(result.check_figures());
                self.causes.extend(result.causes().unwrap_or_default());
            }
            Err(error) => self.failed.push((metrics, format!("{what}: {error:#}"))),
        }
    }

    /// Why `metric` has no figure, if its run failed.
    fn failure(&self, metric: Metric) -> Option<&str> {
        self.failed
            .iter()
            .find(|(metrics, _)| metrics.contains(&metric))
            .map(|(_, why)| why.as_str())
    }
}

/// A check left out with `--skip`.
fn left_out(id: &str, kind: Kind) -> Check {
    Check::new(id, kind, Status::Skip, "left out (--skip)", "-")
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
