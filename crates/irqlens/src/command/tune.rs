//! `irqlens tune`: each remedy applied, measured against the machine without it in
//! alternating before/after rounds, kept only when every after round beat every before
//! round and the medians differ by more than the before rounds' spread (or the noise
//! halved); everything put back at exit from the journal.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::cli::{OutputArgs, ShowArgs, TuneArgs, TuneMetric};
use crate::driver::{Actions, Done, Measures, Needs, Run, STOP, Tool, interrupted};
use irqlens_analyze::tune::{
    Figure, NOISE_UNIT, WAKEUP_UNIT, advised_changes, change_percent, judge, medians, noise_round,
    separation_chance, wakeup_figure, wakeup_round,
};
use irqlens_collect::journal::{JOURNAL_PATH, Journal, Knobs, SystemKnobs};
use irqlens_collect::tap::Tap;
use irqlens_collect::{knob, noise as noise_run, system, wakeup as wakeup_run};
use irqlens_model::noise::NoiseOptions;
use irqlens_model::run::Header;
use irqlens_model::tune::{
    Advice, Change, DescribedChange, DroppedChange, Knob, Trial, TunePlan, TuneReport, TuneRevert,
    TuneRound, Verdict,
};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::WakeupOptions;
use irqlens_present::tune as show;

/// The remedies `irqlens advise -c CPUS -d DURATION` gives: a noise run and a wakeup run
/// on `cpus`, their causes and the machine's state; quiet, as tune's rounds are.
fn advice_for(cpus: &CpuList, duration: Duration) -> Result<Vec<Advice>> {
    let output = OutputArgs {
        show: ShowArgs {
            json: false,
            quiet: true,
        },
        ..OutputArgs::default()
    };
    let causes = super::advise::measure_causes(noise_options(cpus, duration), &output)?;
    if interrupted() {
        bail!("interrupted while measuring what to advise");
    }
    Ok(super::advise::report(&causes, &[])?.advice)
}

impl Tool for TuneArgs {
    const NAME: &'static str = "tune";

    fn show(&self) -> &ShowArgs {
        &self.show
    }

    /// --revert and --dry-run measure nothing.
    fn validate(&self) -> Result<()> {
        if self.revert {
            return Ok(());
        }
        // checked here: clap's `requires = "revert"` let --kept through without it
        if self.kept {
            bail!("--kept goes with --revert: irqlens tune --revert --kept");
        }
        system::select_cpus(self.cpus.as_ref())?;
        for spec in &self.change {
            let (knob, to) = knob::parse_change(spec)?;
            knob::check_on_machine(&knob, &to).with_context(|| format!("--change {spec}"))?;
        }
        Ok(())
    }

    fn needs(&self) -> Needs {
        if self.revert || self.dry_run {
            Needs::Nothing
        } else {
            Needs::Tracing
        }
    }

    fn changes_machine(&self) -> bool {
        !self.revert && !self.dry_run
    }

    /// The rounds' CPUs; a dry run measures only what to advise, and is not refused.
    fn measures(&self) -> Option<Measures> {
        let cpus = system::select_cpus(self.cpus.as_ref()).ok()?;
        (!self.revert).then_some(Measures {
            cpus,
            alone: !self.dry_run,
        })
    }

    fn actions(&self) -> Actions {
        Actions {
            on_end: self.end.on_end.clone(),
            ..Actions::default()
        }
    }

    fn execute(self, run: &mut Run) -> Result<Done> {
        if self.revert {
            return Ok(Done::new(revert(Path::new(JOURNAL_PATH), self.kept)?));
        }
        let cpus = system::select_cpus(self.cpus.as_ref())?;
        // each remedy: its changes, made together in order
        let mut remedies: Vec<Vec<Change>> = Vec::new();
        for spec in &self.change {
            let (knob, to) = knob::parse_change(spec)?;
            let from =
                triable(&knob, &to, self.dry_run).with_context(|| format!("--change {spec}"))?;
            remedies.push(vec![Change { knob, from, to }]);
        }
        if self.all || !self.apply.is_empty() {
            // an id `irqlens check` gave that no measured cause did: its configuration's
            let configured = if self.apply.is_empty() {
                Vec::new()
            } else {
                let config = irqlens_collect::check::read_configuration(&cpus)?;
                irqlens_analyze::check::remedy_changes(&config, &cpus)
            };
            let advice = advice_for(&cpus, self.duration)?;
            let advised = advised_changes(advice, &configured, &self.apply, self.all)
                .map_err(|unpicked| anyhow!(show::unpicked_text(&unpicked)))?;
            let (triable, skipped) = pick_triable(advised, self.all, |change| {
                triable(&change.knob, &change.to, self.dry_run)
            })?;
            for skip in skipped {
                run.say(skip);
            }
            remedies.extend(triable);
        }
        if remedies.is_empty() {
            bail!("nothing to tune: give --apply ID,..., --all or --change KNOB=VALUE");
        }
        if self.dry_run {
            return Ok(Done::new(TunePlan {
                header: Header::new(Self::NAME),
                cpus,
                rounds: self.rounds,
                changes: remedies.into_iter().flatten().map(described).collect(),
            }));
        }
        let meter = Meter::new(self.metric, &cpus, self.duration);
        let mut trials = Vec::new();
        for remedy in remedies {
            let (already, changes): (Vec<Change>, Vec<Change>) =
                remedy.into_iter().partition(Change::is_no_op);
            for change in already {
                run.say(format_args!(
                    "{} is {} already: nothing to try",
                    knob::describe(&change.knob),
                    change.to
                ));
            }
            if changes.is_empty() {
                continue;
            }
            match try_change(run.journal()?, &meter, self.rounds, changes, self.keep)? {
                Some(trial) => trials.push(trial),
                None => break,
            }
        }
        let document = Done::new(TuneReport {
            header: Header::new(Self::NAME),
            kernel: system::kernel_release(),
            cpus: meter.cpus().clone(),
            rounds: self.rounds,
            duration_ns: self.duration.as_nanos() as u64,
            metric: meter.name().into(),
            separation_chance: separation_chance(self.rounds as usize),
            journal: JOURNAL_PATH.into(),
            interrupted: interrupted(),
            remedies: trials,
        });
        Ok(if interrupted() {
            document.note("interrupted: the remedies not tried yet were left alone")
        } else {
            document
        })
    }
}

/// Whether `knob` can be set to `to` and put back, checked before anything is measured
/// (a change the kernel refuses would fail after the rounds without it): its current
/// value. A dry run writes nothing, not even the value a knob has.
fn triable(knob: &Knob, to: &str, dry_run: bool) -> Result<String> {
    if let Some(why) = knob::not_keepable(knob) {
        bail!("{why}");
    }
    knob::check_on_machine(knob, to)?;
    let from = SystemKnobs.read(knob)?;
    if !dry_run && matches!(knob, Knob::IrqAffinity { .. }) {
        // writing the value it has changes nothing, and the kernel refuses it for a
        // managed IRQ
        SystemKnobs.write(knob, &from)?;
    }
    Ok(from)
}

/// The advised remedies that can be tried (with the value each knob has now), and a line
/// for each one `--all` skips; a remedy asked for by its id (`--apply`) that cannot be
/// tried is an error, as a `--change` is.
fn pick_triable(
    advised: Vec<Vec<Change>>,
    all: bool,
    triable: impl Fn(&Change) -> Result<String>,
) -> Result<(Vec<Vec<Change>>, Vec<String>)> {
    let (mut picked, mut skipped) = (Vec::new(), Vec::new());
    for remedy in advised {
        let tried: Result<Vec<Change>> = remedy
            .into_iter()
            .map(|change| {
                let spec = knob::change_spec(&change.knob, &change.to);
                match triable(&change) {
                    Ok(from) => Ok(Change { from, ..change }),
                    Err(why) => Err(why.context(spec)),
                }
            })
            .collect();
        match tried {
            Ok(changes) => picked.push(changes),
            Err(why) if all => skipped.push(format!("skipped {why:#}")),
            Err(why) => return Err(why),
        }
    }
    Ok((picked, skipped))
}

fn described(change: Change) -> DescribedChange {
    DescribedChange {
        knob_description: knob::describe(&change.knob),
        change,
    }
}

/// `--revert`: puts back what runs that ended left, and with `kept` what `--keep` left
/// too; the changes kept and left in place are listed.
fn revert(journal: &Path, kept: bool) -> Result<TuneRevert> {
    let undone_kept = if kept {
        irqlens_collect::journal::kept_in(journal)?
    } else {
        Vec::new()
    };
    let restoration = irqlens_collect::journal::revert_file(journal, &SystemKnobs, kept)?;
    let all = |changes: Vec<Change>| changes.into_iter().map(described).collect();
    Ok(TuneRevert {
        header: Header::new(TuneArgs::NAME),
        journal: journal.display().to_string(),
        undone_kept: all(undone_kept),
        put_back: all(restoration.put_back),
        dropped: (restoration.dropped.into_iter())
            .map(|vanished| DroppedChange {
                change: described(vanished.change),
                why: vanished.why,
            })
            .collect(),
        left_kept: all(restoration.kept),
    })
}

/// The runs of the rounds: quiet, on the CPUs, the measuring command's defaults otherwise.
enum Meter {
    /// `irqlens noise`: per-CPU noise.
    Noise(NoiseOptions),
    /// `irqlens wakeup` (timer mode): the latency of a timer thread per CPU.
    Wakeup(WakeupOptions),
}

impl Meter {
    fn new(metric: TuneMetric, cpus: &CpuList, duration: Duration) -> Meter {
        match metric {
            TuneMetric::Noise => Meter::Noise(noise_options(cpus, duration)),
            TuneMetric::Wakeup => Meter::Wakeup(WakeupOptions {
                duration: Some(duration),
                ..WakeupOptions::timer(cpus.clone())
            }),
        }
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
fn noise_options(cpus: &CpuList, duration: Duration) -> NoiseOptions {
    NoiseOptions {
        duration: Some(duration),
        ..NoiseOptions::defaults(cpus.clone())
    }
}

/// Makes `changes` through `journal`, in order; their entries.
fn apply_all(journal: &mut Journal, changes: &[Change]) -> Result<Vec<usize>> {
    (changes.iter())
        .map(|change| journal.apply(&SystemKnobs, change.clone()))
        .collect()
}

/// Measures the machine without and with a remedy's `changes` (made together, in
/// order, and put back last first), `rounds` times each, alternating, through
/// `journal`; leaves them in place if they are kept (and marks them for --keep). `None`
/// if interrupted.
fn try_change(
    journal: &mut Journal,
    meter: &Meter,
    rounds: u32,
    changes: Vec<Change>,
    keep: bool,
) -> Result<Option<Trial>> {
    let figure = Figure::of(&changes[0].knob);
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let Some(without) = meter.measure(&figure)? else {
            return Ok(None);
        };
        before.push(without);
        let indices = apply_all(journal, &changes)?;
        let with = meter.measure(&figure);
        for index in indices.into_iter().rev() {
            if let Some(vanished) = journal.revert(&SystemKnobs, index)? {
                eprintln!("irqlens: {vanished}");
            }
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
        for index in apply_all(journal, &changes)? {
            if keep {
                journal.keep(index)?;
            }
        }
    }
    let (before_median, after_median) = (medians(&before, judged), medians(&after, judged));
    let (figure_name, unit) = meter.figure(&figure);
    let mut changes = changes.into_iter();
    let change = changes.next().expect("a remedy changes something");
    Ok(Some(Trial {
        spec: knob::change_spec(&change.knob, &change.to),
        knob_description: knob::describe(&change.knob),
        figure: figure_name,
        unit: unit.into(),
        change,
        together_with: changes.map(described).collect(),
        before,
        after,
        before_median,
        after_median,
        change_percent: change_percent(before_median, after_median),
        verdict,
        left_in_place: verdict == Verdict::Kept && keep,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(knob: Knob, from: &str, to: &str) -> Change {
        Change {
            knob,
            from: from.into(),
            to: to.into(),
        }
    }

    #[test]
    fn all_skips_what_cannot_be_tried_and_says_why_while_apply_refuses_it() {
        let advised = || {
            vec![
                vec![change(Knob::DmaLatency, "2000000000", "0")],
                vec![change(Knob::IrqAffinity { irq: 24 }, "0-1", "0")],
            ]
        };
        let triable = |change: &Change| match change.knob {
            Knob::DmaLatency => Err(anyhow!("held only while the file is open")),
            _ => Ok("0-1 now".to_string()),
        };
        let (picked, skipped) = pick_triable(advised(), true, triable).unwrap();
        assert_eq!(
            picked,
            vec![vec![change(Knob::IrqAffinity { irq: 24 }, "0-1 now", "0")]]
        );
        assert_eq!(
            skipped,
            vec!["skipped dma-latency=0: held only while the file is open".to_string()]
        );
        let err = pick_triable(advised(), false, triable).unwrap_err();
        assert_eq!(
            format!("{err:#}"),
            "dma-latency=0: held only while the file is open"
        );
    }
}
