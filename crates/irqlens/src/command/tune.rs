//! `irqlens tune`: each remedy applied, measured against the machine without it in
//! alternating before/after rounds, kept only when every after round beat every before
//! round by more than their spread; everything put back at exit from the journal.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{Result, bail};
use clap::Parser;

use crate::cli::{NoiseArgs, OutputArgs, TuneArgs, TuneMetric, WakeupArgs};
use crate::driver::{STOP, interrupted};
use irqlens_analyze::noise::{Cause, NoiseAnalysis};
use irqlens_analyze::wakeup::Component;
use irqlens_analyze::wakeup::stats::WakeupStats;
use irqlens_collect::journal::{JOURNAL_PATH, Journal, Knobs, SystemKnobs};
use irqlens_collect::tap::Tap;
use irqlens_collect::{knob, noise as noise_run, system, wakeup as wakeup_run};
use irqlens_model::kernel::SOFTIRQ_NAMES;
use irqlens_model::noise::{NoiseClass, NoiseOptions};
use irqlens_model::tune::{Advice, Change, Knob, Trial, TuneReport, TuneRound, Verdict};
use irqlens_model::units::CpuList;
use irqlens_model::wakeup::WakeupOptions;
use irqlens_present::advise::blocker_text;

/// The remedies `irqlens advise -c CPUS -d DURATION` gives: a noise run and a wakeup run
/// on `cpus`, their causes and the machine's state; quiet, as tune's rounds are.
fn advice_for(cpus: &CpuList, duration: Duration) -> Result<Vec<Advice>> {
    let output = OutputArgs {
        show: crate::cli::ShowArgs {
            json: false,
            quiet: true,
        },
        ..OutputArgs::default()
    };
    let causes = super::advise::measure_causes(noise_options(cpus, duration)?, &output)?;
    if interrupted() {
        bail!("interrupted while measuring what to advise");
    }
    Ok(super::advise::report(&causes, &[])?.advice)
}

/// The changes of the advised remedies `ids` (all with `--all`), in the order given.
fn advised_changes(advice: Vec<Advice>, ids: &[String], all: bool) -> Result<Vec<Change>> {
    if all {
        // a knob advised for several causes or CPUs is tried once
        let mut changes: Vec<Change> = Vec::new();
        for change in advice.into_iter().filter_map(|a| a.change) {
            if !changes.iter().any(|c| c.knob == change.knob) {
                changes.push(change);
            }
        }
        if changes.is_empty() {
            bail!("--all: none of the causes found can be changed from here (see irqlens advise)");
        }
        return Ok(changes);
    }
    ids.iter()
        .map(|id| {
            let advice = advice.iter().find(|a| &a.id == id).ok_or_else(|| {
                anyhow::anyhow!("--apply {id}: no such remedy for these CPUs (see irqlens advise)")
            })?;
            advice.change.clone().ok_or_else(|| {
                let why = advice
                    .blocker
                    .as_ref()
                    .map_or_else(String::new, |b| format!(": {}", blocker_text(b)));
                anyhow::anyhow!(
                    "--apply {id}: {} cannot be changed from here{why}",
                    advice.cause
                )
            })
        })
        .collect()
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
        changes.extend(advised_changes(
            advice_for(&cpus, args.duration)?,
            &args.apply,
            args.all,
        )?);
    }
    if changes.is_empty() {
        bail!("nothing to tune: give --apply ID,..., --all or --change KNOB=VALUE");
    }
    if args.dry_run {
        let mut out = std::io::stdout().lock();
        for change in &changes {
            writeln!(
                out,
                "would write {} to {} (now {}), measure {} round(s) before and after on CPUs {cpus}, and put back {}",
                change.to,
                knob::describe(&change.knob),
                change.from,
                args.rounds,
                change.from
            )?;
        }
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
    print(trials, &meter, args)?;
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
    let shown = |change: &Change| {
        format!(
            "{} to {} (was {})",
            knob::describe(&change.knob),
            change.from,
            change.to
        )
    };
    let to_undo = if kept {
        irqlens_collect::journal::kept_in(journal)?
    } else {
        Vec::new()
    };
    if !to_undo.is_empty() {
        writeln!(
            out,
            "undoing {} change(s) `irqlens tune --keep` left in place (--kept):",
            to_undo.len()
        )?;
        for change in &to_undo {
            writeln!(out, "  {}", shown(change))?;
        }
    }
    let restoration = irqlens_collect::journal::revert_file(journal, &SystemKnobs, kept)?;
    if restoration.put_back.is_empty()
        && restoration.dropped.is_empty()
        && restoration.kept.is_empty()
    {
        writeln!(
            out,
            "nothing to put back ({} holds no change)",
            journal.display()
        )?;
    }
    for vanished in &restoration.dropped {
        writeln!(out, "{vanished}")?;
    }
    for change in &restoration.put_back {
        writeln!(out, "put back {}", shown(change))?;
    }
    for change in &restoration.kept {
        writeln!(
            out,
            "left in place, kept by `irqlens tune --keep`: {} is {} (was {});              `irqlens tune --revert --kept` puts it back",
            knob::describe(&change.knob),
            change.to,
            change.from
        )?;
    }
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
            Meter::Noise(_) => (figure.name(cpus), "ns of noise per s"),
            Meter::Wakeup(_) => (
                format!("99th percentile of the timer wakeup latency, worst of CPUs {cpus}"),
                "ns",
            ),
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
                wakeup_round(&outcome.stats)?
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

/// What a remedy is judged on: the noise it targets.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Figure {
    /// The IRQ line's own time.
    IrqLine(u32),
    /// NET_RX and NET_TX softirq time, and the NAPI threads' (threaded NAPI moves the
    /// same work there: it helps only if the threads leave the CPU too).
    NetReceive,
    /// One thread's own time.
    Thread(u32),
    /// All noise.
    Total,
}

impl Figure {
    fn of(knob: &Knob) -> Figure {
        match knob {
            Knob::IrqAffinity { irq } => Figure::IrqLine(*irq),
            Knob::RpsCpus { .. } | Knob::XpsCpus { .. } | Knob::NapiThreaded { .. } => {
                Figure::NetReceive
            }
            Knob::ThreadAffinity { tid, .. } | Knob::ThreadPriority { tid, .. } => {
                Figure::Thread(*tid)
            }
            _ => Figure::Total,
        }
    }

    fn name(&self, cpus: &CpuList) -> String {
        match self {
            Figure::IrqLine(irq) => format!("IRQ {irq} noise on CPUs {cpus}"),
            Figure::NetReceive => format!("NET_RX+NET_TX and NAPI thread noise on CPUs {cpus}"),
            Figure::Thread(tid) => format!("thread {tid}'s noise on CPUs {cpus}"),
            Figure::Total => format!("noise on CPUs {cpus}"),
        }
    }

    fn counts(&self, cause: &Cause) -> bool {
        let net = |vector: &u32| {
            SOFTIRQ_NAMES
                .get(*vector as usize)
                .is_some_and(|name| matches!(*name, "NET_RX" | "NET_TX"))
        };
        match (self, cause) {
            (Figure::IrqLine(irq), Cause::Irq { source: 0, id }) => id == irq,
            (Figure::NetReceive, Cause::Softirq(vector)) => net(vector),
            (Figure::NetReceive, Cause::Thread { comm, .. }) => comm.starts_with("napi/"),
            (Figure::Thread(tid), Cause::Thread { pid, .. }) => pid == tid,
            (Figure::Total, _) => true,
            _ => false,
        }
    }
}

fn noise_round(analysis: &NoiseAnalysis, figure: &Figure) -> TuneRound {
    let runtime_ns: u64 = analysis.summaries().map(|s| s.runtime_ns).sum();
    let per_second = |ns: u64| ns as f64 * 1e9 / runtime_ns.max(1) as f64;
    let causes: Vec<(Cause, u64)> = analysis
        .summaries()
        .flat_map(|s| analysis.cpu_causes(s.cpu))
        .map(|(cause, stats)| (cause, stats.total_ns))
        .collect();
    let sum = |keep: &dyn Fn(&Cause) -> bool| {
        per_second(
            causes
                .iter()
                .filter(|(c, _)| keep(c))
                .map(|(_, ns)| ns)
                .sum(),
        )
    };
    let class = |class: NoiseClass| {
        move |cause: &Cause| match (class, cause) {
            (NoiseClass::Irq, Cause::Irq { .. }) | (NoiseClass::Softirq, Cause::Softirq(_)) => true,
            (_, Cause::EntryExit(c)) => *c == class,
            _ => false,
        }
    };
    TuneRound {
        judged: sum(&|c| figure.counts(c)),
        figures: BTreeMap::from([
            ("total_ns_per_s".into(), sum(&|_| true)),
            ("irq_ns_per_s".into(), sum(&class(NoiseClass::Irq))),
            ("softirq_ns_per_s".into(), sum(&class(NoiseClass::Softirq))),
        ]),
    }
}

/// A wakeup run's figures: the worst CPU's.
fn wakeup_round(stats: &WakeupStats) -> Result<TuneRound> {
    let worst = |component: Component, q: f64| {
        stats
            .cpus
            .values()
            .filter_map(|cpu| cpu.series(component)?.quantile_ns(q))
            .max()
            .map_or(0.0, |ns| ns as f64)
    };
    if stats.activations() == 0 {
        bail!("the wakeup run measured no wakeup: a longer -d is needed");
    }
    let p99 = worst(Component::Total, 0.99);
    Ok(TuneRound {
        judged: p99,
        figures: BTreeMap::from([
            ("p99_total_ns".into(), p99),
            ("max_total_ns".into(), worst(Component::Total, 1.0)),
            ("p99_irq_ns".into(), worst(Component::Irq, 0.99)),
        ]),
    })
}

/// The verdict rule: with N rounds each, every after round below every before round
/// happens by chance with probability 1/C(2N,N) when the remedy changes nothing (the
/// rounds are then exchangeable: N=2 1/6, N=3 1/20, N=4 1/70); the medians must also
/// differ by more than the before rounds' max-min, so a consistent but tiny change is not
/// kept.
fn judge(before: &[f64], after: &[f64]) -> Verdict {
    let (lowest_before, highest_before) = bounds(before);
    let (_, highest_after) = bounds(after);
    let separated = highest_after < lowest_before;
    let beyond_spread = median(before) - median(after) > highest_before - lowest_before;
    if separated && beyond_spread {
        Verdict::Kept
    } else {
        Verdict::NoEffect
    }
}

fn verdict_words(verdict: Verdict, keep: bool) -> &'static str {
    match (verdict, keep) {
        (Verdict::Kept, true) => "kept (left in place)",
        (Verdict::Kept, false) => "kept (put back at exit)",
        (Verdict::NoEffect, _) => "reverted (no effect)",
    }
}

/// 1/C(2N,N): the chance of a complete separation of N before and N after rounds when
/// they are exchangeable.
fn separation_chance(rounds: usize) -> f64 {
    (1..=rounds)
        .map(|k| k as f64 / (rounds + k) as f64)
        .product()
}

fn bounds(values: &[f64]) -> (f64, f64) {
    values
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        })
}

fn median(values: &[f64]) -> f64 {
    irqlens_analyze::median(values).unwrap_or(0.0)
}

/// The change of `after` from `before`, percent (`None` from 0).
fn change_percent(before: f64, after: f64) -> Option<f64> {
    (before > 0.0).then(|| (after - before) / before * 100.0)
}

fn medians(rounds: &[TuneRound], pick: impl Fn(&TuneRound) -> f64) -> f64 {
    median(&rounds.iter().map(pick).collect::<Vec<_>>())
}

fn print(trials: Vec<Trial>, meter: &Meter, args: &TuneArgs) -> Result<()> {
    let cpus = meter.cpus();
    let mut out = std::io::stdout().lock();
    let rounds = args.rounds as usize;
    if args.show.json {
        let report = TuneReport {
            header: irqlens_model::run::Header::new("tune"),
            kernel: system::kernel_release(),
            cpus: cpus.clone(),
            rounds: args.rounds,
            duration_ns: args.duration.as_nanos() as u64,
            metric: meter.name().into(),
            separation_chance: separation_chance(rounds),
            journal: JOURNAL_PATH.into(),
            interrupted: interrupted(),
            remedies: trials,
        };
        irqlens_present::document::write_json(&mut out, &serde_json::to_value(report)?)?;
        return Ok(());
    }
    writeln!(
        out,
        "tune: CPUs {cpus}, {rounds} rounds of {} before and after each remedy; kept when every \
         after round is below every before round (chance {:.3} if it does nothing) and the \
         medians differ by more than the before rounds' spread",
        humantime::format_duration(args.duration),
        separation_chance(rounds)
    )?;
    let us = |ns: f64| ns / 1e3;
    for trial in &trials {
        writeln!(out)?;
        writeln!(
            out,
            "{}  ({}: {} -> {})",
            trial.spec, trial.knob_description, trial.change.from, trial.change.to
        )?;
        let unit = if trial.unit == "ns" {
            "µs"
        } else {
            "µs per s"
        };
        writeln!(out, "  {} ({unit})", trial.figure)?;
        writeln!(out, "  {:<8} {:>10} {:>10}", "round", "before", "after")?;
        for (i, (b, a)) in trial.before.iter().zip(&trial.after).enumerate() {
            writeln!(
                out,
                "  {:<8} {:>10.1} {:>10.1}",
                i + 1,
                us(b.judged),
                us(a.judged)
            )?;
        }
        let change = trial
            .change_percent
            .map_or("-".into(), |p| format!("{p:+.1}%"));
        writeln!(
            out,
            "  {:<8} {:>10.1} {:>10.1} {:>9}  {}",
            "median",
            us(trial.before_median),
            us(trial.after_median),
            change,
            verdict_words(trial.verdict, args.keep)
        )?;
        let names = trial
            .before
            .first()
            .map(|r| r.figures.keys().cloned().collect::<Vec<_>>());
        for name in names.unwrap_or_default() {
            let pick = |r: &TuneRound| r.figures[&name];
            let median_of =
                |rounds: &[TuneRound]| median(&rounds.iter().map(pick).collect::<Vec<_>>());
            let shown = name.trim_end_matches("_per_s").trim_end_matches("_ns");
            writeln!(
                out,
                "  {shown:<10} {:>8.1} {:>10.1} {unit} (medians)",
                us(median_of(&trial.before)),
                us(median_of(&trial.after))
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlens_model::kernel::Comm;

    #[test]
    fn kept_only_beyond_the_spread() {
        assert_eq!(
            judge(&[100.0, 110.0, 105.0], &[10.0, 12.0, 9.0]),
            Verdict::Kept
        );
        // one after round among the before ones
        assert_eq!(
            judge(&[100.0, 110.0, 105.0], &[10.0, 101.0, 9.0]),
            Verdict::NoEffect
        );
        // separated, but by less than the before rounds' spread
        assert_eq!(
            judge(&[100.0, 140.0, 120.0], &[95.0, 90.0, 99.0]),
            Verdict::NoEffect
        );
        // worse
        assert_eq!(judge(&[10.0, 11.0], &[20.0, 21.0]), Verdict::NoEffect);
        // nothing either way
        assert_eq!(judge(&[0.0, 0.0], &[0.0, 0.0]), Verdict::NoEffect);
    }

    #[test]
    fn the_chance_of_a_separation_is_one_in_2n_choose_n() {
        for (rounds, choose) in [(1, 2.0), (2, 6.0), (3, 20.0), (4, 70.0)] {
            assert!((separation_chance(rounds) - 1.0 / choose).abs() < 1e-12);
        }
    }

    #[test]
    fn medians_and_changes() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(change_percent(200.0, 50.0), Some(-75.0));
        assert_eq!(change_percent(0.0, 50.0), None);
    }

    #[test]
    fn remedies_are_judged_on_what_they_target() {
        let irq = Figure::of(&Knob::IrqAffinity { irq: 34 });
        assert!(irq.counts(&Cause::Irq { source: 0, id: 34 }));
        assert!(!irq.counts(&Cause::Irq { source: 0, id: 35 }));
        assert!(!irq.counts(&Cause::Irq { source: 1, id: 34 }));
        let rps = Figure::of(&Knob::RpsCpus {
            netns: None,
            device: "veth1".into(),
            queue: 0,
        });
        let net_rx = SOFTIRQ_NAMES.iter().position(|n| *n == "NET_RX").unwrap() as u32;
        assert!(rps.counts(&Cause::Softirq(net_rx)));
        assert!(!rps.counts(&Cause::Softirq(1)));
        let napi = |comm: &str| Cause::Thread {
            pid: 7,
            comm: Comm::new(comm),
        };
        assert!(rps.counts(&napi("napi/veth1-8193")));
        assert!(!rps.counts(&napi("ksoftirqd/1")));
        let thread = Figure::of(&Knob::ThreadAffinity {
            tid: 7,
            comm: "spin".into(),
        });
        assert!(thread.counts(&napi("spin")));
        assert!(!thread.counts(&Cause::Thread {
            pid: 8,
            comm: Comm::new("spin"),
        }));
        assert!(!thread.counts(&Cause::Softirq(net_rx)));
        let sysctl = Figure::of(&Knob::Sysctl {
            name: "kernel.timer_migration".into(),
        });
        assert!(sysctl.counts(&Cause::Hardware));
    }

    #[test]
    fn advised_ids_pick_their_changes() {
        let advice = |id: &str, change: Option<Change>| Advice {
            id: id.into(),
            cpu: 1,
            cause: format!("cause of {id}"),
            capability: irqlens_model::system::Capability::Noise,
            time_ns: 1,
            share_percent: 1.0,
            remedy: String::new(),
            change,
            command: None,
            blocker: None,
        };
        let move_24 = Change {
            knob: Knob::IrqAffinity { irq: 24 },
            from: "1".into(),
            to: "0".into(),
        };
        let mut tick = advice("timer", None);
        tick.blocker = Some(irqlens_model::tune::Blocker::PerCpuVector);
        let list = vec![
            advice("irq-24", Some(move_24.clone())),
            // the same knob for another cause: tried once by --all
            advice("irq-24-again", Some(move_24.clone())),
            tick.clone(),
        ];
        let ids = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            advised_changes(list.clone(), &ids(&["irq-24"]), false).unwrap(),
            vec![move_24.clone()]
        );
        assert_eq!(
            advised_changes(list.clone(), &[], true).unwrap(),
            vec![move_24]
        );
        let err = advised_changes(list.clone(), &ids(&["nope"]), false).unwrap_err();
        assert!(err.to_string().contains("no such remedy"), "{err}");
        let err = advised_changes(list, &ids(&["timer"]), false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--apply timer: cause of timer cannot be changed from here: per-CPU vector: \
             delivered where it is raised"
        );
        let err = advised_changes(vec![tick], &[], true).unwrap_err();
        assert!(err.to_string().contains("none of the causes"), "{err}");
    }
}
