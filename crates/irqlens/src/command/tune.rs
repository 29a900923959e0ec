//! `irqlens tune`: each remedy applied, measured against the machine without it in
//! alternating before/after rounds, kept only when every after round beat every before
//! round by more than their spread; everything put back at exit from the journal.

use std::path::Path;
use std::time::Duration;

use anyhow::{Result, anyhow, bail};
use clap::Parser;

use super::{STOP, interrupted};
use crate::cli::{NoiseArgs, OutputArgs, TuneArgs, TuneMetric, WakeupArgs};
use irqlens_analyze::tune::{
    Figure, NOISE_UNIT, WAKEUP_UNIT, advised_changes, change_percent, judge, medians, noise_round,
    separation_chance, wakeup_figure, wakeup_round,
};
use irqlens_collect::journal::{JOURNAL_PATH, Journal, Knobs, SystemKnobs};
use irqlens_collect::tap::Tap;
use irqlens_collect::{knob, noise as noise_run, system, wakeup as wakeup_run};
use irqlens_model::noise::NoiseOptions;
use irqlens_model::tune::{Advice, Change, Knob, Trial, TuneReport, TuneRound, Verdict};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::WakeupOptions;
use irqlens_present::tune as show;

/// The remedies `irqlens advise -c CPUS -d DURATION` gives: a noise run and a wakeup run
/// on `cpus`, their causes and the machine's state; quiet, as tune's rounds are.
fn advice_for(cpus: &CpuList, duration: Duration) -> Result<Vec<Advice>> {
    let output = OutputArgs {
        json: false,
        record: None,
        perfetto: None,
        quiet: true,
        prometheus: None,
        html: None,
        on_end: Vec::new(),
        default_record: false,
    };
    let causes = super::advise::measure_causes(noise_options(cpus, duration)?, &output)?;
    if interrupted() {
        bail!("interrupted while measuring what to advise");
    }
    Ok(super::advise::report(&causes, &[])?.advice)
}

pub fn run(args: &TuneArgs) -> Result<()> {
    let journal = Path::new(JOURNAL_PATH);
    if args.revert {
        return revert(journal, args.kept);
    }
    // checked here: clap's `requires = "revert"` let --kept through without it
    if args.kept {
        bail!("--kept goes with --revert: irqlens tune --revert --kept");
    }
    let cpus = system::select_cpus(args.cpus.as_ref())?;
    let mut changes = Vec::new();
    for spec in &args.change {
        let (knob, to) = knob::parse_change(spec)?;
        if let Some(why) = knob::not_keepable(&knob) {
            bail!("--change {spec}: {why}");
        }
        let from = SystemKnobs.read(&knob)?;
        changes.push(Change { knob, from, to });
    }
    if args.all || !args.apply.is_empty() {
        changes.extend(
            advised_changes(advice_for(&cpus, args.duration)?, &args.apply, args.all)
                .map_err(|unpicked| anyhow!(show::unpicked_text(&unpicked)))?,
        );
    }
    if changes.is_empty() {
        bail!("nothing to tune: give --apply ID,..., --all or --change KNOB=VALUE");
    }
    if args.dry_run {
        let mut out = std::io::stdout().lock();
        show::write_dry_run(&mut out, &changes, args.rounds, &cpus, &knob::describe)?;
        return Ok(());
    }
    system::check_can_trace()?;
    let meter = Meter::new(args.metric, &cpus, args.duration)?;
    let mut session = Session {
        journal: Some(Journal::begin(journal, "tune")?),
        keep: args.keep,
    };
    for change in &changes {
        if matches!(change.knob, Knob::IrqAffinity { .. }) {
            // writing the value it has changes nothing, and the kernel refuses it for a
            // managed IRQ: refused before anything is measured
            SystemKnobs.write(&change.knob, &change.from)?;
        }
    }
    let mut trials = Vec::new();
    for change in changes {
        if change.from == change.to {
            eprintln!(
                "irqlens: {} is {} already: nothing to try",
                knob::describe(&change.knob),
                change.to
            );
            continue;
        }
        match session.trial(&meter, args.rounds, change)? {
            Some(trial) => trials.push(trial),
            None => break,
        }
    }
    let failed = session.finish();
    let report = TuneReport {
        header: irqlens_model::run::Header::new("tune"),
        kernel: system::kernel_release(),
        cpus: meter.cpus().clone(),
        rounds: args.rounds,
        duration_ns: args.duration.as_nanos() as u64,
        metric: meter.name().into(),
        separation_chance: separation_chance(args.rounds as usize),
        journal: JOURNAL_PATH.into(),
        interrupted: interrupted(),
        remedies: trials,
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        super::print_json(&mut out, &serde_json::to_value(report)?)?;
    } else {
        show::write_text(&mut out, &report)?;
    }
    if interrupted() {
        eprintln!("irqlens: interrupted: the remedies not tried yet were left alone");
    }
    if failed > 0 {
        bail!("{failed} change(s) could not be put back: run `irqlens tune --revert`");
    }
    Ok(())
}

/// `--revert`: puts back what runs that ended left, and with `kept` what `--keep` left
/// (listed before it is undone); the changes kept and left in place are listed after.
fn revert(journal: &Path, kept: bool) -> Result<()> {
    let mut out = std::io::stdout().lock();
    if kept {
        let to_undo = irqlens_collect::journal::kept_in(journal)?;
        show::write_undoing_kept(&mut out, &to_undo, &knob::describe)?;
    }
    let restoration = irqlens_collect::journal::revert_file(journal, &SystemKnobs, kept)?;
    show::write_reverted(
        &mut out,
        journal,
        &restoration.put_back,
        &restoration.dropped,
        &restoration.kept,
        &knob::describe,
    )?;
    Ok(())
}

/// The runs of the rounds: quiet, on the CPUs, the measuring command's defaults otherwise.
enum Meter {
    /// `irqlens noise`: per-CPU noise.
    Noise(NoiseOptions),
    /// `irqlens wakeup` (timer mode): the latency of a timer thread per CPU.
    Wakeup(WakeupOptions),
}

impl Meter {
    fn new(metric: TuneMetric, cpus: &CpuList, duration: Duration) -> Result<Meter> {
        Ok(match metric {
            TuneMetric::Noise => Meter::Noise(noise_options(cpus, duration)?),
            TuneMetric::Wakeup => Meter::Wakeup(wakeup_options(cpus, duration)?),
        })
    }

    fn name(&self) -> &'static str {
        match self {
            Meter::Noise(_) => "noise",
            Meter::Wakeup(_) => "wakeup",
        }
    }

    fn cpus(&self) -> &CpuList {
        match self {
            Meter::Noise(options) => &options.cpus,
            Meter::Wakeup(options) => &options.cpus,
        }
    }

    /// What a remedy is judged on, in words, and its unit.
    fn figure(&self, figure: &Figure) -> (String, &'static str) {
        let cpus = self.cpus();
        match self {
            Meter::Noise(_) => (figure.name(cpus), NOISE_UNIT),
            Meter::Wakeup(_) => (wakeup_figure(cpus), WAKEUP_UNIT),
        }
    }

    /// One quiet run; `None` if Ctrl-C/SIGTERM came.
    fn measure(&self, figure: &Figure) -> Result<Option<TuneRound>> {
        if interrupted() {
            return Ok(None);
        }
        // each run ends by setting STOP: the next one starts with it clear
        STOP.store(false, std::sync::atomic::Ordering::Relaxed);
        let round = match self {
            Meter::Noise(options) => {
                let outcome = noise_run::run(options, &STOP, &mut Tap::default(), |_, _| {})?;
                noise_round(&outcome.analysis, figure)
            }
            Meter::Wakeup(options) => {
                let outcome =
                    wakeup_run::run(options, &STOP, &mut Tap::default(), |_, _| {}, |_| {})?;
                wakeup_round(&outcome.stats).map_err(|e| anyhow!(e))?
            }
        };
        Ok((!interrupted()).then_some(round))
    }
}

/// A noise run on `cpus` for `duration`, `irqlens noise`'s defaults otherwise.
fn noise_options(cpus: &CpuList, duration: Duration) -> Result<NoiseOptions> {
    let noise = NoiseDefaults::try_parse_from(["tune"])?.noise;
    let mut options = noise.options_on(None, cpus.clone())?;
    options.duration = Some(duration);
    Ok(options)
}

/// A wakeup run (timer mode) on `cpus` for `duration`, `irqlens wakeup`'s defaults
/// otherwise.
pub(super) fn wakeup_options(cpus: &CpuList, duration: Duration) -> Result<WakeupOptions> {
    let wakeup = WakeupArgs::defaults()?;
    let mut options = wakeup.options_on(None, cpus.clone())?;
    options.duration = Some(duration);
    Ok(options)
}

#[derive(Parser)]
struct NoiseDefaults {
    #[command(flatten)]
    noise: NoiseArgs,
}

/// The journal, whose changes are put back when the session ends, however it ends.
struct Session {
    journal: Option<Journal>,
    keep: bool,
}

impl Session {
    /// Measures the machine without and with `change`, `rounds` times each, alternating;
    /// leaves the change in place if it is kept. `None` if interrupted.
    fn trial(&mut self, meter: &Meter, rounds: u32, change: Change) -> Result<Option<Trial>> {
        let journal = self.journal.as_mut().expect("a live session");
        let figure = Figure::of(&change.knob);
        let (mut before, mut after) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let Some(without) = meter.measure(&figure)? else {
                return Ok(None);
            };
            before.push(without);
            let index = journal.apply(&SystemKnobs, change.clone())?;
            let with = meter.measure(&figure);
            if let Some(vanished) = journal.revert(&SystemKnobs, index)? {
                eprintln!("irqlens: {vanished}");
            }
            let Some(with) = with? else {
                return Ok(None);
            };
            after.push(with);
        }
        let judged = |r: &TuneRound| r.judged;
        let judged_of = |rounds: &[TuneRound]| rounds.iter().map(judged).collect::<Vec<_>>();
        let verdict = judge(&judged_of(&before), &judged_of(&after));
        if verdict == Verdict::Kept {
            let index = journal.apply(&SystemKnobs, change.clone())?;
            if self.keep {
                journal.keep(index)?;
            }
        }
        let (before_median, after_median) = (medians(&before, judged), medians(&after, judged));
        let (figure_name, unit) = meter.figure(&figure);
        Ok(Some(Trial {
            spec: knob::change_spec(&change.knob, &change.to),
            knob_description: knob::describe(&change.knob),
            figure: figure_name,
            unit: unit.into(),
            change,
            before,
            after,
            before_median,
            after_median,
            change_percent: change_percent(before_median, after_median),
            verdict,
            left_in_place: verdict == Verdict::Kept && self.keep,
        }))
    }

    /// Puts back what is to go back; returns how many changes could not be.
    fn finish(&mut self) -> usize {
        self.journal
            .take()
            .map_or(0, |journal| journal.close(&SystemKnobs))
    }
}

impl Drop for Session {
    /// An error or a panic between two rounds still puts everything back.
    fn drop(&mut self) {
        self.finish();
    }
}
