//! The driver every subcommand runs through, as rtla's `run_tool(tool_ops)` and ripgrep's
//! low args → high args: the command line is resolved into a [`Tool`] (its options, with
//! model's defaults), then [`run_tool`] checks what the machine must allow, makes the
//! output files, executes the tool with Ctrl-C/SIGTERM and the journal in hand, shows its
//! one [`Document`], runs the `--on-threshold` and `--on-end` actions and gives the exit
//! status. What every subcommand shares is here, once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};

use crate::cli::ShowArgs;
use crate::parse::{Action, SignalTarget};
use irqlens_collect::claim::{CLAIM_DIR, Claims, Holder};
use irqlens_collect::journal::{self, JOURNAL_PATH, Journal, Session};
use irqlens_collect::system;
use irqlens_model::units::CpuList;
use irqlens_present::document::{Document, write_json};
use irqlens_present::html::Page;
use irqlens_present::terminal::{Printable, printable};
use irqlens_record::output;

/// Set by Ctrl-C/SIGTERM (and by a measurement itself when it ends): every loop checks it.
pub static STOP: AtomicBool = AtomicBool::new(false);
/// Set by Ctrl-C/SIGTERM only.
pub static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether Ctrl-C or SIGTERM came.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// What a subcommand implements once (rtla's `tool_ops`): its shared options, what it
/// needs of the machine, and its execution, which ends in one document.
pub trait Tool {
    /// The subcommand, as its errors and the journal name it (`noise`, `trial`).
    const NAME: &'static str;
    /// Whether Ctrl-C/SIGTERM only set [`STOP`], for the tool to put back what it changed
    /// and show what it has. A tool that only reads files leaves them to end it as they
    /// end any reader, even one blocked in a read from a FIFO.
    const STOPS_AT_SIGNAL: bool = true;

    /// `--json` and `--quiet`.
    fn show(&self) -> &ShowArgs;
    /// Checks what the input alone decides, and the machine's read-only facts (CPUs
    /// online, knobs that exist): refused before the run claims CPUs or begins a journal,
    /// so that bad input neither disturbs nor is disturbed by another run.
    fn validate(&self) -> Result<()> {
        Ok(())
    }
    /// What the machine must allow before anything is made.
    fn needs(&self) -> Needs {
        Needs::Nothing
    }
    /// Whether the run changes the machine: its journal is then begun before anything else
    /// is done, so that a second run that would change it too is refused at once (the
    /// journal names who owns it), not after it measured.
    fn changes_machine(&self) -> bool {
        false
    }
    /// The CPUs a live run measures, so that another irqlens measuring them (or changing
    /// the machine through the journal) is found before it starts; `None`: it measures
    /// nothing.
    fn measures(&self) -> Option<Measures> {
        None
    }
    /// `--html FILE`, for a tool that draws a page.
    fn html(&self) -> Option<&Path> {
        None
    }
    /// The other files the run writes (`--record`, `--perfetto`, `-o`), by option: made
    /// before anything is measured, so that one that cannot be fails first.
    fn files(&self) -> Vec<(&'static str, &Path)> {
        Vec::new()
    }
    /// The `--on-end` actions, and `--on-threshold`'s.
    fn actions(&self) -> Actions {
        Actions::default()
    }
    /// Runs the tool: its one document, or the error that ended it.
    fn execute(self, run: &mut Run) -> Result<Done>;
}

/// What a tool needs of the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: it reads files or simulates.
    Nothing,
    /// BPF on tracepoints: root, or the capabilities that allow it.
    Tracing,
    /// BPF on tracepoints, its readers' real-time priority best effort: root, or
    /// CAP_BPF and CAP_PERFMON.
    Probes,
    /// Root itself, for the reason given (and tracing).
    Root(&'static str),
}

/// The CPUs a tool measures, and what another irqlens run there means for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Measures {
    /// The measured CPUs.
    pub cpus: CpuList,
    /// Refused when another run disturbs it, rather than warned about: for a tool that
    /// judges the machine by comparing its own runs (tune's before/after rounds, trial's
    /// designs), whose verdict another run's work would make meaningless.
    pub alone: bool,
}

/// The actions run when the run ends (rtla's).
#[derive(Clone, Debug, Default)]
pub struct Actions {
    /// `--on-end`: whatever ended the run.
    pub on_end: Vec<Action>,
    /// `--on-threshold`: when a stop threshold ended it, before `--on-end`'s.
    pub on_threshold: Vec<Action>,
}

/// What an executing tool is given: its shared options and the journal.
pub struct Run {
    show: ShowArgs,
    journal: Option<Session>,
}

impl Run {
    /// Says `line` on stderr, unless `--quiet`.
    pub fn say(&self, line: impl std::fmt::Display) {
        if !self.show.quiet {
            eprintln!("irqlens: {}", printable(line));
        }
    }

    /// The journal of the changes the run makes to the machine, begun by the driver for a
    /// tool that [changes the machine](Tool::changes_machine): every change in it is put
    /// back when the run ends, however it ends.
    pub fn journal(&mut self) -> Result<&mut Journal> {
        let session = self.journal.as_mut().context(
            "no journal: a tool that changes the machine says so (Tool::changes_machine)",
        )?;
        Ok(session.journal())
    }

    /// Puts back what the journal holds; how many changes could not be.
    fn finish(&mut self) -> usize {
        self.journal.take().map_or(0, Session::finish)
    }
}

/// A tool's result: its document, and what comes after it on stderr.
pub struct Done {
    document: Box<dyn Document>,
    notes: Vec<String>,
    late_error: Option<anyhow::Error>,
}

impl Done {
    /// A run that ended in `document`.
    pub fn new(document: impl Document + 'static) -> Done {
        Done {
            document: Box::new(document),
            notes: Vec::new(),
            late_error: None,
        }
    }

    /// `note` said on stderr after the document.
    pub fn note(mut self, note: impl Into<String>) -> Done {
        self.notes.push(note.into());
        self
    }

    /// An error shown after the document (the run's result is worth showing first), which
    /// then makes the exit status 1.
    pub fn failed_after(mut self, error: Option<anyhow::Error>) -> Done {
        self.late_error = error;
        self
    }
}

/// How a run ended, for its exit status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The duration ran out, the work was done, or Ctrl-C/SIGTERM came: exit status 0.
    Normally,
    /// A stop threshold was hit: exit status 2, as rtla documents, so that a CI script
    /// can gate on it.
    ThresholdHit,
}

/// The exit status of a run whose stop threshold was hit (rtla's).
pub const THRESHOLD_HIT_STATUS: u8 = 2;

impl Ended {
    /// The process's exit status for this ending.
    pub fn exit_code(self) -> std::process::ExitCode {
        match self {
            Ended::Normally => std::process::ExitCode::SUCCESS,
            Ended::ThresholdHit => std::process::ExitCode::from(THRESHOLD_HIT_STATUS),
        }
    }
}

/// Runs `tool` from start to exit status.
pub fn run_tool<T: Tool>(tool: T) -> Result<Ended> {
    tool.validate()?;
    check(tool.needs())?;
    // held until the run ends: the runs that start meanwhile find it
    let claims = match tool.measures() {
        Some(measures) => claim(T::NAME, &measures)?,
        None => Claims::default(),
    };
    let show = tool.show().clone();
    let html = tool.html().map(Path::to_owned);
    let actions = tool.actions();
    let mut made = Made::default();
    if let Some(path) = &html {
        made.create("--html", path)?;
    }
    for (option, path) in tool.files() {
        made.create(option, path)?;
    }
    if T::STOPS_AT_SIGNAL {
        ctrlc::set_handler(|| {
            INTERRUPTED.store(true, Ordering::Relaxed);
            STOP.store(true, Ordering::Relaxed);
        })?;
    }
    let journal = if tool.changes_machine() {
        Some(Session::begin(T::NAME).inspect_err(|_| made.remove())?)
    } else {
        None
    };
    let mut run = Run { show, journal };
    let executed = tool.execute(&mut run);
    // the machine as it was before anything is shown: an error, a panic unwinding or a
    // reader that stops early must not leave a change behind
    let unrestored = run.finish();
    let mut done = executed.inspect_err(|_| made.remove())?;
    done.notes.extend(visited(&claims));
    if let Some(path) = &html {
        let page = done
            .document
            .page()
            .with_context(|| format!("irqlens {} writes no HTML report", T::NAME))?;
        write_html(&page, path)?;
    }
    let mut out = Printable(std::io::stdout().lock());
    if run.show.json {
        write_json(&mut out.0, &done.document.json())?;
    } else {
        if done.document.data_only() {
            // data for a script, as wide as it is
            done.document.write_text(&mut out)?;
            out.flush()?;
            write_aside(&*done.document)?;
        } else {
            let mut text = Vec::new();
            done.document.write_text(&mut text)?;
            done.document.write_about(&mut text)?;
            irqlens_present::write_fitted(&mut out, &String::from_utf8_lossy(&text))?;
        }
    }
    out.flush()?;
    drop(out);
    for note in &done.notes {
        eprintln!("irqlens: {}", printable(note));
    }
    let ended = if done.document.threshold_hit() {
        Ended::ThresholdHit
    } else {
        Ended::Normally
    };
    // after the results and the files, which the actions may read (rtla runs them once
    // tracing stopped)
    if ended == Ended::ThresholdHit {
        perform("--on-threshold", &actions.on_threshold, run.show.json);
    }
    perform("--on-end", &actions.on_end, run.show.json);
    if unrestored > 0 {
        bail!("{unrestored} change(s) could not be put back: run `irqlens tune --revert`");
    }
    if let Some(error) = done.late_error {
        return Err(error);
    }
    Ok(ended)
}

/// The lines about a run whose stdout is data only, on stderr (without the blank lines
/// that set them apart on stdout).
fn write_aside(document: &dyn Document) -> Result<()> {
    let mut about = Vec::new();
    document.write_about(&mut about)?;
    let about = String::from_utf8_lossy(&about);
    let mut err = Printable(std::io::stderr().lock());
    for line in about.lines().filter(|line| !line.trim().is_empty()) {
        writeln!(err, "{line}")?;
    }
    Ok(())
}

/// The one privilege check: refused with what is missing before anything is made.
fn check(needs: Needs) -> Result<()> {
    match needs {
        Needs::Nothing => Ok(()),
        Needs::Tracing => system::check_can_trace(),
        Needs::Probes => system::check_can_probe(),
        Needs::Root(why) => {
            // SAFETY: geteuid has no preconditions and cannot fail.
            if unsafe { libc::geteuid() } != 0 {
                bail!("needs root: {why}");
            }
            system::check_can_trace()
        }
    }
}

/// Claims the CPUs `irqlens NAME` measures; another irqlens measuring them, or changing
/// the machine through the journal, is said on stderr (whatever `--quiet`: the figures
/// are not the machine's alone), or refuses a tool that must run `alone`.
fn claim(name: &str, measures: &Measures) -> Result<Claims> {
    let (claims, holders) = Claims::take(Path::new(CLAIM_DIR), &measures.cpus, name);
    let changing = journal::running_owner(Path::new(JOURNAL_PATH));
    match disturbance(&holders, changing.as_deref()) {
        None => {}
        Some(what) if measures.alone => {
            bail!(
                "{what}: irqlens {name} compares its own runs, which that would disturb; run it when the other ends"
            )
        }
        Some(what) => {
            eprintln!(
                "irqlens: warning: {what}: this run's figures include its work, and its include this run's"
            );
            Claims::announce(Path::new(CLAIM_DIR), &holders, name);
        }
    }
    Ok(claims)
}

/// The irqlens runs that measured CPUs of this one while it ran (they started after it,
/// and said so when they did), in words; `None`: none did.
fn visited(claims: &Claims) -> Option<String> {
    let visitors = claims.visitors();
    let what: Vec<String> = by_run(&visitors)
        .into_iter()
        .map(|((command, pid), cpus)| {
            format!("irqlens {command} (pid {pid}) measured CPUs {cpus} during this run")
        })
        .collect();
    (!what.is_empty()).then(|| {
        format!(
            "warning: {}: this run's figures include its work",
            what.join("; ")
        )
    })
}

/// `holders` grouped by run (command and pid), each with its CPUs, in order of appearance.
fn by_run(holders: &[Holder]) -> Vec<((&str, u32), CpuList)> {
    let mut runs: Vec<((&str, u32), CpuList)> = Vec::new();
    for holder in holders {
        let run = (holder.command.as_str(), holder.pid);
        match runs.iter_mut().find(|(other, _)| *other == run) {
            Some((_, cpus)) => *cpus = cpus.iter().chain([holder.cpu]).collect(),
            None => runs.push((run, [holder.cpu].into_iter().collect())),
        }
    }
    runs
}

/// Who else disturbs a run, in words: the irqlens runs that hold its CPUs (`holders`),
/// and the one changing the machine through the journal (`changing`); `None`: nobody.
fn disturbance(holders: &[Holder], changing: Option<&str>) -> Option<String> {
    let mut what: Vec<String> = by_run(holders)
        .into_iter()
        .map(|((command, pid), cpus)| {
            format!("irqlens {command} (pid {pid}) is measuring CPUs {cpus} too")
        })
        .collect();
    what.extend(changing.map(|owner| format!("{owner} is changing the machine")));
    (!what.is_empty()).then(|| what.join("; "))
}

/// The files a run made before it ran: taken back if it fails, so that it leaves no
/// empty page or recording with a header only.
#[derive(Default)]
struct Made(Vec<PathBuf>);

impl Made {
    fn create(&mut self, option: &str, path: &Path) -> Result<()> {
        output::create(path).with_context(|| format!("{option} {}", path.display()))?;
        self.0.push(path.to_owned());
        Ok(())
    }

    fn remove(&self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Writes `page` to `path`, made as every output file is.
pub fn write_html(page: &Page, path: &Path) -> Result<()> {
    let write = || -> std::io::Result<()> {
        let mut out = std::io::BufWriter::new(output::create(path)?);
        page.write(&mut out)?;
        out.flush()
    };
    write().with_context(|| format!("cannot write the HTML report {}", path.display()))
}

/// Runs `actions` in order; as rtla's, one that fails ends the list, which is said on
/// stderr (the run's exit status stays the run's).
fn perform(option: &str, actions: &[Action], json: bool) {
    for action in actions {
        if let Err(err) = perform_one(action, json) {
            eprintln!("irqlens: {option} {action}: {err:#}; the actions after it were not run");
            return;
        }
    }
}

fn perform_one(action: &Action, json: bool) -> Result<()> {
    match action {
        Action::Shell(command) => {
            let mut shell = std::process::Command::new("sh");
            shell.arg("-c").arg(command);
            if json {
                // stdout is the JSON document's alone
                shell.stdout(std::io::stderr());
            }
            let status = shell.status().context("cannot start sh")?;
            if !status.success() {
                bail!("the command failed ({status})");
            }
        }
        &Action::Signal { number, target } => {
            let pid = match target {
                SignalTarget::Pid(pid) => pid as libc::pid_t,
                // SAFETY: getppid only reads the calling process's parent id.
                SignalTarget::Parent => unsafe { libc::getppid() },
            };
            // SAFETY: kill only sends a signal; the pid and number were checked when parsed.
            if unsafe { libc::kill(pid, number) } != 0 {
                return Err(std::io::Error::last_os_error())
                    .with_context(|| format!("cannot send signal {number} to process {pid}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_run_on_the_cpus_or_the_journal_is_named() {
        let holder = |cpu, command: &str, pid| Holder {
            cpu,
            command: command.into(),
            pid,
        };
        assert_eq!(disturbance(&[], None), None);
        let holders = [
            holder(1, "noise", 42),
            holder(3, "noise", 42),
            holder(2, "bh", 7),
        ];
        assert_eq!(
            disturbance(&holders, None).unwrap(),
            "irqlens noise (pid 42) is measuring CPUs 1,3 too; \
             irqlens bh (pid 7) is measuring CPUs 2 too"
        );
        let trial = "irqlens trial pid 9, started 2026-11-27T14:00:00Z";
        assert_eq!(
            disturbance(&[], Some(trial)).unwrap(),
            format!("{trial} is changing the machine")
        );
    }

    #[test]
    fn a_threshold_hit_exits_with_rtlas_status_2() {
        assert_eq!(Ended::Normally.exit_code(), std::process::ExitCode::SUCCESS);
        assert_eq!(
            Ended::ThresholdHit.exit_code(),
            std::process::ExitCode::from(2)
        );
    }
}
