//! The write-ahead journal of everything irqlens changes on a machine (`tune`'s remedies,
//! `trial`'s and `steer`'s thread policies and sysctls, the network namespaces of `trial`'s
//! and `bh -t net`'s test beds): every change is written down and fsync'ed before it is
//! made, so that whatever ends irqlens (an error, a signal, SIGKILL, a crash) the values it
//! found can be written back: by the run itself at its exit, or by `irqlens tune --revert`
//! after it died. One journal for all of them: one command that changes the machine runs
//! at a time. Changes `tune --keep` left in place stay in it, owned by no run, until
//! `irqlens tune --revert --kept`; the next run takes the journal over with them in it.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use irqlens_model::tune::{Change, Knob};

/// Where irqlens keeps its journal.
pub const JOURNAL_PATH: &str = "/run/irqlens/tune.journal";

/// Reading and writing knobs: the machine's ([`SystemKnobs`]), or a test's.
pub trait Knobs {
    /// The knob's current value.
    fn read(&self, knob: &Knob) -> Result<String>;
    /// Writes `value` to the knob.
    fn write(&self, knob: &Knob, value: &str) -> Result<()>;
    /// Why what the knob acts on is gone (a thread that exited, a device or a namespace
    /// deleted), if it is: there is then nothing to put back.
    fn gone(&self, knob: &Knob) -> Option<String>;
}

/// The machine's knobs.
pub struct SystemKnobs;

impl Knobs for SystemKnobs {
    fn read(&self, knob: &Knob) -> Result<String> {
        crate::knob::read(knob)
    }

    fn write(&self, knob: &Knob, value: &str) -> Result<()> {
        crate::knob::write(knob, value)
    }

    fn gone(&self, knob: &Knob) -> Option<String> {
        crate::knob::gone(knob)
    }
}

/// Where a change is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Written down, about to be made (or made, if irqlens died just then).
    Planned,
    /// Made.
    Applied,
    /// Made and left in place at exit (`tune --keep`): later runs leave it alone, and
    /// `tune --revert --kept` undoes it.
    Kept,
    /// Put back (or nothing to put back: what it changed is gone).
    Reverted,
}

/// One change and where it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The change.
    #[serde(flatten)]
    pub change: Change,
    /// Where it is.
    pub state: State,
}

/// The journal file's content.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// The irqlens process that writes it; 0 once it ended leaving changes in place.
    pub owner_pid: u32,
    /// The owner's start time (field 22 of /proc/PID/stat, clock ticks since boot), so
    /// that another process given the same pid is not taken for it; journals written
    /// before it was recorded have none (the pid alone is checked).
    #[serde(default)]
    pub owner_start: Option<u64>,
    /// The command that writes it: `tune`, `trial`, `steer` or `bh` (all journal here,
    /// so that one `irqlens tune --revert` undoes any of them, and they cannot run
    /// together).
    #[serde(default = "tune")]
    pub owner: String,
    /// When it started, seconds since the epoch.
    pub started_unix_s: u64,
    /// The changes in the order they were made.
    pub changes: Vec<Entry>,
}

/// Journals written before the owner was recorded are tune's.
fn tune() -> String {
    "tune".into()
}

impl Document {
    /// The changes not put back (to restore in reverse order).
    fn outstanding(&self) -> impl DoubleEndedIterator<Item = (usize, &Entry)> {
        self.changes
            .iter()
            .enumerate()
            .filter(|(_, e)| e.state != State::Reverted)
    }

    /// The changes a run left that were to be put back (not kept): a run that died.
    fn unfinished(&self) -> usize {
        self.outstanding()
            .filter(|(_, e)| e.state != State::Kept)
            .count()
    }

    /// The changes left in place by `tune --keep`.
    fn kept(&self) -> Vec<Change> {
        self.outstanding()
            .filter(|(_, e)| e.state == State::Kept)
            .map(|(_, e)| e.change.clone())
            .collect()
    }

    /// Whether the process that writes it runs: the same pid, started at the same time.
    fn owner_runs(&self) -> bool {
        running_since(self.owner_pid)
            .is_some_and(|start| self.owner_start.is_none_or(|owner| owner == start))
    }

    /// Whether this process writes it.
    fn owned_here(&self) -> bool {
        self.owner_pid == std::process::id() && self.owner_runs()
    }
}

/// The journal of a running command: it owns the file until it is finished.
pub struct Journal {
    path: PathBuf,
    document: Document,
}

/// A knob that could not be put back.
#[derive(Debug)]
pub struct Unrestored {
    /// The change.
    pub change: Change,
    /// Why.
    pub error: anyhow::Error,
}

impl std::fmt::Display for Unrestored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "could not put back {} to {}: {:#}",
            crate::knob::describe(&self.change.knob),
            self.change.from,
            self.error
        )
    }
}

/// A change whose target is gone (a thread that exited, a device or a namespace deleted):
/// dropped from the journal, as there is nothing to put back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vanished {
    /// The change.
    pub change: Change,
    /// Why it is gone.
    pub why: String,
}

impl std::fmt::Display for Vanished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "dropped {} from the journal: {}, nothing to put back",
            crate::knob::describe(&self.change.knob),
            self.why
        )
    }
}

/// What putting changes back did.
#[derive(Debug, Default)]
pub struct Restoration {
    /// The changes put back, in the order they were (last made first).
    pub put_back: Vec<Change>,
    /// The changes whose target is gone.
    pub dropped: Vec<Vanished>,
    /// The changes that could not be put back (the journal keeps them).
    pub failed: Vec<Unrestored>,
    /// The changes `tune --keep` left in place, which stay.
    pub kept: Vec<Change>,
}

impl Journal {
    /// Starts the journal of `irqlens COMMAND` at `path`. Refused while another run owns
    /// it (who it is), or while a run that died left changes in it (run `irqlens tune
    /// --revert` first); changes `tune --keep` left stay in it, as they are.
    pub fn begin(path: &Path, command: &str) -> Result<Journal> {
        let _lock = lock_directory(path)?;
        let mut document = Document {
            owner_pid: std::process::id(),
            owner_start: running_since(std::process::id()),
            owner: command.into(),
            started_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            changes: Vec::new(),
        };
        if let Some(other) = load_if_there(path)? {
            let what = describe_owner(&other);
            if other.owner_runs() {
                bail!(
                    "another irqlens {} is running ({what}; journal {}): wait for it to end",
                    other.owner,
                    path.display()
                );
            }
            let unfinished = other.unfinished();
            if unfinished > 0 {
                bail!(
                    "{} left by {what}, no longer running, holds {unfinished} change(s) not put \
                     back: run `irqlens tune --revert` first",
                    path.display(),
                );
            }
            // only what `tune --keep` left: it stays, and goes back only with --kept
            document.changes = other
                .outstanding()
                .map(|(_, entry)| entry.clone())
                .collect();
        }
        let journal = Journal {
            path: path.to_owned(),
            document,
        };
        journal.save()?;
        Ok(journal)
    }

    /// The journal's changes.
    pub fn entries(&self) -> &[Entry] {
        &self.document.changes
    }

    /// Makes `change`: written down first, then written to the knob. Returns its index.
    /// A write that fails leaves the knob as it was (the entry is marked put back).
    pub fn apply(&mut self, knobs: &dyn Knobs, change: Change) -> Result<usize> {
        self.document.changes.push(Entry {
            change,
            state: State::Planned,
        });
        let index = self.document.changes.len() - 1;
        self.save()?;
        let change = &self.document.changes[index].change;
        match knobs.write(&change.knob, &change.to) {
            Ok(()) => self.set(index, State::Applied)?,
            Err(err) => {
                self.set(index, State::Reverted)?;
                return Err(err);
            }
        }
        Ok(index)
    }

    /// Writes `to` to `knob`, its value now journaled as the one to put back; returns the
    /// entry.
    pub fn change(&mut self, knobs: &dyn Knobs, knob: Knob, to: &str) -> Result<usize> {
        let from = knobs.read(&knob)?;
        self.apply(
            knobs,
            Change {
                knob,
                from,
                to: to.into(),
            },
        )
    }

    /// Writes change `index`'s value before back; if what it changed is gone, there is
    /// nothing to write: it is dropped, and returned.
    pub fn revert(&mut self, knobs: &dyn Knobs, index: usize) -> Result<Option<Vanished>> {
        let vanished = put_back(knobs, &self.document.changes[index].change)?;
        self.set(index, State::Reverted)?;
        Ok(vanished)
    }

    /// Marks change `index` as kept at exit.
    pub fn keep(&mut self, index: usize) -> Result<()> {
        self.set(index, State::Kept)
    }

    /// As [`finish`](Self::finish), saying on stderr each change dropped and each that
    /// could not be put back (the journal keeps it for `--revert`); returns how many
    /// could not.
    pub fn close(self, knobs: &dyn Knobs) -> usize {
        let restoration = self.finish(knobs);
        for vanished in &restoration.dropped {
            eprintln!("irqlens: {vanished}");
        }
        for unrestored in &restoration.failed {
            eprintln!("irqlens: {unrestored}");
        }
        restoration.failed.len()
    }

    /// Puts back every change not put back but the kept ones, last first; the journal
    /// file goes once nothing is left in it, and is owned by no run otherwise.
    pub fn finish(mut self, knobs: &dyn Knobs) -> Restoration {
        let restoration = restore(&mut self.document, knobs, false);
        if let Err(err) = settle(&self.path, self.document) {
            eprintln!("irqlens: {}: {err:#}", self.path.display());
        }
        restoration
    }

    fn set(&mut self, index: usize, state: State) -> Result<()> {
        self.document.changes[index].state = state;
        self.save()
    }

    /// Replaces the file with the document, durably.
    fn save(&self) -> Result<()> {
        save(&self.path, &self.document)
    }
}

/// The journal of a running command as a guard: however the run ends (an error, a panic
/// unwinding), the changes in it are put back when it is dropped. The one guard every
/// command that changes the machine holds.
pub struct Session(Option<Journal>);

impl Session {
    /// Begins the journal of `irqlens COMMAND` at [`JOURNAL_PATH`].
    pub fn begin(command: &str) -> Result<Session> {
        Ok(Session(Some(Journal::begin(
            Path::new(JOURNAL_PATH),
            command,
        )?)))
    }

    /// The journal, to make changes in.
    pub fn journal(&mut self) -> &mut Journal {
        self.0
            .as_mut()
            .expect("a session's journal lives until it is finished")
    }

    /// Puts everything back (saying on stderr what could not be); how many changes could
    /// not.
    pub fn finish(mut self) -> usize {
        self.close()
    }

    fn close(&mut self) -> usize {
        self.0
            .take()
            .map_or(0, |journal| journal.close(&SystemKnobs))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.close();
    }
}

/// Changes a run makes to the same knobs again and again (steer's threads): each knob is
/// journaled once, the first time, with the value it had then; later values are written
/// to the knob alone, since that first value is what goes back. The journal holds one
/// entry per knob however long the run, and putting back writes each knob once.
#[derive(Debug, Default)]
pub struct Repeated(BTreeMap<Knob, usize>);

impl Repeated {
    /// Writes `change.to` to its knob: through the journal the first time, straight to
    /// the knob after.
    pub fn apply(
        &mut self,
        journal: &mut Journal,
        knobs: &dyn Knobs,
        change: Change,
    ) -> Result<()> {
        if self.0.contains_key(&change.knob) {
            return knobs.write(&change.knob, &change.to);
        }
        let knob = change.knob.clone();
        let index = journal.apply(knobs, change)?;
        self.0.insert(knob, index);
        Ok(())
    }

    /// Puts every knob back, the last journaled first; returns those whose target is gone
    /// and, by journal index, those that could not be put back (the journal keeps them).
    pub fn put_back(
        &mut self,
        journal: &mut Journal,
        knobs: &dyn Knobs,
    ) -> (Vec<Vanished>, Vec<(usize, anyhow::Error)>) {
        let mut indices: Vec<usize> = std::mem::take(&mut self.0).into_values().collect();
        indices.sort_unstable_by(|a, b| b.cmp(a));
        let (mut dropped, mut failed) = (Vec::new(), Vec::new());
        for index in indices {
            match journal.revert(knobs, index) {
                Ok(vanished) => dropped.extend(vanished),
                Err(err) => failed.push((index, err)),
            }
        }
        (dropped, failed)
    }
}

/// The changes `tune --keep` left in the journal at `path` (none without one).
pub fn kept_in(path: &Path) -> Result<Vec<Change>> {
    Ok(load_if_there(path)?.map_or_else(Vec::new, |document| document.kept()))
}

/// `irqlens tune --revert`: puts back every change in the journal at `path` that a run
/// which ended left (after a crash, SIGKILL, a failed write), and those `tune --keep` left
/// too with `kept`; the journal file goes once nothing is left in it. Refused while its
/// owner runs.
pub fn revert_file(path: &Path, knobs: &dyn Knobs, kept: bool) -> Result<Restoration> {
    let _lock = lock_directory(path)?;
    let Some(mut document) = load_if_there(path)? else {
        return Ok(Restoration::default());
    };
    if document.owner_runs() && !document.owned_here() {
        bail!(
            "{} belongs to a running irqlens {} ({}): it puts its changes back when it ends \
             (send it SIGTERM)",
            path.display(),
            document.owner,
            describe_owner(&document)
        );
    }
    let restoration = restore(&mut document, knobs, kept);
    settle(path, document)?;
    if let Some(first) = restoration.failed.first() {
        bail!(
            "{} change(s) could not be put back, the first: {}: {:#} (the journal {} keeps them)",
            restoration.failed.len(),
            crate::knob::describe(&first.change.knob),
            first.error,
            path.display()
        );
    }
    Ok(restoration)
}

/// Writes `change`'s value before back: None once written, or why there was nothing to
/// write to (the error stands if what it changed is still there).
fn put_back(knobs: &dyn Knobs, change: &Change) -> Result<Option<Vanished>> {
    match knobs.write(&change.knob, &change.from) {
        Ok(()) => Ok(None),
        Err(err) => match knobs.gone(&change.knob) {
            Some(why) => Ok(Some(Vanished {
                change: change.clone(),
                why,
            })),
            None => Err(err),
        },
    }
}

/// Writes back the value before of each change not put back, last first; the kept ones
/// only with `kept`.
fn restore(document: &mut Document, knobs: &dyn Knobs, kept: bool) -> Restoration {
    let indices: Vec<usize> = document
        .outstanding()
        .rev()
        .filter(|(_, e)| kept || e.state != State::Kept)
        .map(|(i, _)| i)
        .collect();
    let mut restoration = Restoration::default();
    for index in indices {
        let entry = &mut document.changes[index];
        match put_back(knobs, &entry.change) {
            Ok(vanished) => {
                entry.state = State::Reverted;
                match vanished {
                    Some(vanished) => restoration.dropped.push(vanished),
                    None => restoration.put_back.push(entry.change.clone()),
                }
            }
            Err(error) => restoration.failed.push(Unrestored {
                change: entry.change.clone(),
                error,
            }),
        }
    }
    restoration.kept = document.kept();
    restoration
}

/// Removes the journal file once nothing is left in it; otherwise leaves what is left
/// (kept changes, and those that could not be put back) owned by no run.
fn settle(path: &Path, mut document: Document) -> Result<()> {
    document.changes.retain(|e| e.state != State::Reverted);
    if document.changes.is_empty() {
        return fs::remove_file(path).with_context(|| format!("removing {}", path.display()));
    }
    document.owner_pid = 0;
    document.owner_start = None;
    save(path, &document)
}

/// Replaces the file with the document, durably (a rename of a synced file).
fn save(path: &Path, document: &Document) -> Result<()> {
    let temporary = path.with_extension("journal.new");
    let file =
        File::create(&temporary).with_context(|| format!("writing {}", temporary.display()))?;
    write_synced(file, document)?;
    fs::rename(&temporary, path).with_context(|| format!("renaming to {}", path.display()))?;
    sync_dir(path)
}

/// The journal at `path`, if there is one.
fn load_if_there(path: &Path) -> Result<Option<Document>> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(err) if err.kind() == ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    serde_json::from_str(&text).map(Some).with_context(|| {
        format!(
            "{} is not an irqlens journal (remove it if nothing of it is needed)",
            path.display()
        )
    })
}

/// Who is changing the machine through the journal at `path` now, if another running
/// irqlens is (`irqlens trial pid 123, started ...`): what a measurement meanwhile sees
/// is the machine as that run changed it, and the run's figures include the measurement.
pub fn running_owner(path: &Path) -> Option<String> {
    let document = load_if_there(path).ok()??;
    (document.owner_runs() && !document.owned_here()).then(|| describe_owner(&document))
}

/// Holds the journal's directory locked while a run takes the journal over or `--revert`
/// reads it: of two that start together, the second sees the first's journal. The lock
/// goes with the file returned (or the process).
fn lock_directory(path: &Path) -> Result<File> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = File::open(dir).with_context(|| format!("opening {}", dir.display()))?;
    // SAFETY: flock only takes the descriptor, which `file` keeps open during the call.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("locking {}", dir.display()));
    }
    Ok(file)
}

fn write_synced(mut file: File, document: &Document) -> Result<()> {
    serde_json::to_writer_pretty(&mut file, document)?;
    file.write_all(b"\n")?;
    file.sync_all().context("syncing the journal")
}

fn sync_dir(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent() {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .with_context(|| format!("syncing {}", dir.display()))?;
    }
    Ok(())
}

fn describe_owner(document: &Document) -> String {
    let started = humantime::format_rfc3339_seconds(
        UNIX_EPOCH + std::time::Duration::from_secs(document.started_unix_s),
    );
    match document.owner_pid {
        0 => format!(
            "an irqlens {} that ended (started {started})",
            document.owner
        ),
        pid => format!("irqlens {} pid {pid}, started {started}", document.owner),
    }
}

/// When process `pid` started (field 22 of /proc/PID/stat, clock ticks since boot), if
/// it runs (a zombie counts as gone; 0 is no one).
fn running_since(pid: u32) -> Option<u64> {
    if pid == 0 {
        return None;
    }
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the fields from 3 (the state) on
    let fields: Vec<&str> = crate::system::stat_fields(&stat)?.collect();
    let state = fields.first()?;
    if state.starts_with(['Z', 'X']) {
        return None;
    }
    fields.get(22 - 3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    use super::*;

    /// Knobs in a map; writes to `broken` fail, and so do those to a knob in `gone`,
    /// whose target is gone.
    #[derive(Default)]
    struct FakeKnobs {
        values: RefCell<BTreeMap<String, String>>,
        broken: Option<String>,
        gone: RefCell<BTreeSet<String>>,
    }

    fn key(knob: &Knob) -> String {
        crate::knob::change_spec(knob, "")
    }

    impl Knobs for FakeKnobs {
        fn read(&self, knob: &Knob) -> Result<String> {
            Ok(self.values.borrow()[&key(knob)].clone())
        }

        fn write(&self, knob: &Knob, value: &str) -> Result<()> {
            if self.broken.as_deref() == Some(key(knob).as_str()) {
                bail!("broken");
            }
            if self.gone.borrow().contains(&key(knob)) {
                bail!("no such thread");
            }
            self.values.borrow_mut().insert(key(knob), value.into());
            Ok(())
        }

        fn gone(&self, knob: &Knob) -> Option<String> {
            self.gone
                .borrow()
                .contains(&key(knob))
                .then(|| "the thread exited".into())
        }
    }

    fn irq(irq: u32) -> Knob {
        Knob::IrqAffinity { irq }
    }

    fn sysctl() -> Knob {
        Knob::Sysctl {
            name: "kernel.timer_migration".into(),
        }
    }

    fn thread() -> Knob {
        Knob::ThreadPriority {
            tid: 4321,
            comm: "napi/veth1-8193".into(),
        }
    }

    fn knobs() -> FakeKnobs {
        let knobs = FakeKnobs::default();
        knobs.write(&irq(24), "0-1").unwrap();
        knobs.write(&sysctl(), "1").unwrap();
        knobs.write(&thread(), "o:0").unwrap();
        knobs
    }

    fn change(knobs: &FakeKnobs, knob: Knob, to: &str) -> Change {
        Change {
            from: knobs.read(&knob).unwrap(),
            knob,
            to: to.into(),
        }
    }

    fn temp_journal(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("irqlens-journal-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir.join("tune.journal")
    }

    fn load(path: &Path) -> Document {
        load_if_there(path).unwrap().expect("a journal")
    }

    /// Writes `document` where a run that died would have left it.
    fn leave(path: &Path, document: &Document) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        write_synced(File::create(path).unwrap(), document).unwrap();
    }

    fn applied(change: Change) -> Entry {
        Entry {
            change,
            state: State::Applied,
        }
    }

    fn begin_error(path: &Path) -> String {
        Journal::begin(path, "tune").err().unwrap().to_string()
    }

    #[test]
    fn a_change_is_on_disk_before_it_is_made() {
        struct Watching<'a>(&'a Path, FakeKnobs);
        impl Knobs for Watching<'_> {
            fn read(&self, knob: &Knob) -> Result<String> {
                self.1.read(knob)
            }
            fn write(&self, knob: &Knob, value: &str) -> Result<()> {
                let on_disk = load(self.0);
                let last = on_disk.changes.last().expect("written down first");
                assert_eq!((&last.change.knob, last.change.to.as_str()), (knob, value));
                self.1.write(knob, value)
            }
            fn gone(&self, knob: &Knob) -> Option<String> {
                self.1.gone(knob)
            }
        }
        let path = temp_journal("ahead");
        let knobs = Watching(&path, knobs());
        let mut journal = Journal::begin(&path, "tune").unwrap();
        let c = change(&knobs.1, irq(24), "0");
        let index = journal.apply(&knobs, c).unwrap();
        assert_eq!(load(&path).changes[index].state, State::Applied);
        assert!(journal.finish(&knobs.1).failed.is_empty());
        assert!(!path.exists(), "an empty journal goes");
    }

    #[test]
    fn finishing_puts_everything_back_last_first() {
        let path = temp_journal("finish");
        let knobs = knobs();
        let mut journal = Journal::begin(&path, "tune").unwrap();
        let first = change(&knobs, irq(24), "0");
        journal.apply(&knobs, first).unwrap();
        // the same knob twice: the first value must win, so the last goes back first
        let second = change(&knobs, irq(24), "1");
        journal.apply(&knobs, second).unwrap();
        let i = journal.change(&knobs, sysctl(), "0").unwrap();
        journal.revert(&knobs, i).unwrap();
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        assert_eq!(knobs.read(&irq(24)).unwrap(), "1");
        assert!(journal.finish(&knobs).failed.is_empty());
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0-1");
        assert!(!path.exists());
    }

    #[test]
    fn a_kept_change_stays_through_later_runs_until_revert_kept() {
        let path = temp_journal("keep");
        let knobs = knobs();
        let mut journal = Journal::begin(&path, "tune").unwrap();
        let kept = journal.change(&knobs, irq(24), "0").unwrap();
        journal.keep(kept).unwrap();
        journal.change(&knobs, sysctl(), "0").unwrap();
        let finished = journal.finish(&knobs);
        assert!(finished.failed.is_empty());
        assert_eq!(finished.kept.len(), 1);
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0");
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        let left = load(&path);
        assert_eq!((left.owner_pid, left.owner_start), (0, None), "no one's");
        assert_eq!(left.changes.len(), 1, "only the kept change: {left:?}");
        // the next run is not refused, and its own changes go back without the kept one
        let mut next = Journal::begin(&path, "steer").unwrap();
        assert_eq!(next.entries()[0].state, State::Kept);
        next.change(&knobs, irq(24), "1").unwrap();
        assert!(next.finish(&knobs).failed.is_empty());
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0", "the kept value");
        // --revert lists it and leaves it; --revert --kept puts it back
        let listed = kept_in(&path).unwrap();
        assert_eq!(listed, vec![change_of(irq(24), "0-1", "0")]);
        let reverted = revert_file(&path, &knobs, false).unwrap();
        assert!(reverted.put_back.is_empty());
        assert_eq!(reverted.kept, listed);
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0");
        assert!(path.exists());
        let reverted = revert_file(&path, &knobs, true).unwrap();
        assert_eq!(reverted.put_back, listed);
        assert!(reverted.kept.is_empty());
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0-1");
        assert!(!path.exists());
        assert!(
            revert_file(&path, &knobs, true)
                .unwrap()
                .put_back
                .is_empty()
        );
    }

    fn change_of(knob: Knob, from: &str, to: &str) -> Change {
        Change {
            knob,
            from: from.into(),
            to: to.into(),
        }
    }

    #[test]
    fn a_dead_owners_journal_is_restored_by_revert_and_its_kept_changes_stay() {
        let path = temp_journal("dead");
        let knobs = knobs();
        knobs.write(&irq(24), "1").unwrap();
        knobs.write(&sysctl(), "0").unwrap();
        // as a SIGKILLed trial leaves it after a tune --keep: one kept change, one made,
        // one planned (maybe made)
        let document = Document {
            owner_pid: u32::MAX,
            owner_start: Some(1),
            owner: "trial".into(),
            started_unix_s: 0,
            changes: vec![
                Entry {
                    change: change_of(thread(), "o:0", "f:10"),
                    state: State::Kept,
                },
                applied(change_of(irq(24), "0-1", "1")),
                Entry {
                    change: change_of(sysctl(), "1", "0"),
                    state: State::Planned,
                },
            ],
        };
        knobs.write(&thread(), "f:10").unwrap();
        leave(&path, &document);
        let err = begin_error(&path);
        assert!(
            err.contains("left by irqlens trial pid")
                && err.contains("no longer running")
                && err.contains("2 change(s) not put back")
                && err.contains("--revert"),
            "{err}"
        );
        let reverted = revert_file(&path, &knobs, false).unwrap();
        assert_eq!(reverted.put_back.len(), 2);
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0-1");
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        assert_eq!(reverted.kept, vec![document.changes[0].change.clone()]);
        assert_eq!(knobs.read(&thread()).unwrap(), "f:10", "kept");
        Journal::begin(&path, "tune").unwrap().finish(&knobs);
        revert_file(&path, &knobs, true).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn the_running_owner_of_a_journal_is_named_and_a_dead_or_own_one_is_not() {
        let path = temp_journal("running");
        assert_eq!(running_owner(&path), None, "no journal");
        let mut document = Document {
            owner_pid: 1,
            owner_start: running_since(1),
            owner: "trial".into(),
            started_unix_s: 0,
            changes: Vec::new(),
        };
        leave(&path, &document);
        let owner = running_owner(&path).expect("pid 1 runs");
        assert!(owner.starts_with("irqlens trial pid 1,"), "{owner}");
        document.owner_start = document.owner_start.map(|start| start + 1);
        leave(&path, &document);
        assert_eq!(running_owner(&path), None, "its pid was reused");
        let journal = Journal::begin(&temp_journal("mine"), "tune").unwrap();
        assert_eq!(running_owner(&journal.path), None, "this run's own");
        journal.finish(&knobs());
    }

    #[test]
    fn an_owner_whose_pid_was_reused_is_dead() {
        let path = temp_journal("reused");
        let knobs = knobs();
        knobs.write(&sysctl(), "0").unwrap();
        // pid 1 runs, but it is not the process that started then
        let init_start = running_since(1).expect("pid 1 runs");
        let document = Document {
            owner_pid: 1,
            owner_start: Some(init_start + 1),
            owner: "tune".into(),
            started_unix_s: 0,
            changes: vec![applied(change_of(sysctl(), "1", "0"))],
        };
        leave(&path, &document);
        let err = begin_error(&path);
        assert!(err.contains("no longer running"), "{err}");
        assert!(!err.contains("is running"), "{err}");
        revert_file(&path, &knobs, false).expect("not refused for pid 1");
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        assert!(!path.exists());
        // a journal written before the start time was recorded: the pid alone decides
        let old = r#"{"owner_pid": 1, "owner": "tune", "started_unix_s": 0, "changes": []}"#;
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, old).unwrap();
        let read = load(&path);
        assert_eq!(read.owner_start, None);
        assert!(read.owner_runs(), "pid 1 runs");
        assert!(begin_error(&path).contains("another irqlens tune is running"));
        fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_vanished_thread_is_dropped_and_does_not_keep_the_journal() {
        let path = temp_journal("vanished");
        let knobs = knobs();
        let mut journal = Journal::begin(&path, "steer").unwrap();
        journal.change(&knobs, sysctl(), "0").unwrap();
        journal.change(&knobs, thread(), "f:80").unwrap();
        // irqlens dies, the thread exits
        drop(journal);
        let mut document = load(&path);
        document.owner_pid = u32::MAX;
        leave(&path, &document);
        knobs.gone.borrow_mut().insert(key(&thread()));
        let reverted = revert_file(&path, &knobs, false).unwrap();
        assert_eq!(reverted.put_back, vec![change_of(sysctl(), "1", "0")]);
        assert_eq!(reverted.dropped.len(), 1);
        assert_eq!(
            reverted.dropped[0].to_string(),
            "dropped priority of napi/veth1-8193:4321 from the journal: the thread exited, \
             nothing to put back"
        );
        assert!(!path.exists(), "nothing left to keep it");
        // a run's own exit drops it too
        let mut journal = Journal::begin(&path, "steer").unwrap();
        knobs.gone.borrow_mut().clear();
        let index = journal.change(&knobs, thread(), "f:80").unwrap();
        knobs.gone.borrow_mut().insert(key(&thread()));
        assert_eq!(
            journal.revert(&knobs, index).unwrap().map(|v| v.why),
            Some("the thread exited".into())
        );
        assert!(journal.finish(&knobs).failed.is_empty());
        assert!(!path.exists());
    }

    #[test]
    fn a_knob_changed_again_and_again_is_one_entry() {
        let path = temp_journal("repeated");
        let knobs = knobs();
        let mut journal = Journal::begin(&path, "steer").unwrap();
        let mut repeated = Repeated::default();
        let mut sizes = Vec::new();
        for round in 0..50 {
            // a flow that starts and stops: raised, then lowered to its own
            let to = if round % 2 == 0 { "f:80" } else { "o:0" };
            let c = change(&knobs, thread(), to);
            repeated.apply(&mut journal, &knobs, c).unwrap();
            assert_eq!(knobs.read(&thread()).unwrap(), to);
            sizes.push(fs::metadata(&path).unwrap().len());
        }
        repeated
            .apply(&mut journal, &knobs, change(&knobs, sysctl(), "0"))
            .unwrap();
        knobs.write(&thread(), "f:80").unwrap();
        assert_eq!(journal.entries().len(), 2, "one entry per knob");
        assert_eq!(
            journal.entries()[0].change.from,
            "o:0",
            "the value first found"
        );
        assert!(sizes.iter().all(|&s| s == sizes[0]), "{sizes:?}");
        let (dropped, failed) = repeated.put_back(&mut journal, &knobs);
        assert!(dropped.is_empty() && failed.is_empty());
        assert_eq!(knobs.read(&thread()).unwrap(), "o:0");
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        assert!(
            journal.finish(&knobs).put_back.is_empty(),
            "all back already"
        );
        assert!(!path.exists());
    }

    #[test]
    fn a_live_owner_is_named_and_not_disturbed() {
        let path = temp_journal("live");
        let knobs = knobs();
        let mut journal = Journal::begin(&path, "tune").unwrap();
        journal.change(&knobs, irq(24), "0").unwrap();
        let err = begin_error(&path);
        assert!(err.contains("another irqlens tune is running"), "{err}");
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0");
        journal.finish(&knobs);
    }

    #[test]
    fn what_cannot_be_put_back_stays_in_the_journal() {
        let path = temp_journal("broken");
        let mut knobs = knobs();
        let mut journal = Journal::begin(&path, "tune").unwrap();
        journal.change(&knobs, irq(24), "0").unwrap();
        journal.change(&knobs, sysctl(), "0").unwrap();
        knobs.broken = Some(key(&irq(24)));
        let failed = journal.finish(&knobs).failed;
        assert_eq!(failed.len(), 1);
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        let left = load(&path);
        assert_eq!(left.outstanding().count(), 1);
        assert!(begin_error(&path).contains("1 change(s) not put back"));
        knobs.broken = None;
        revert_file(&path, &knobs, false).unwrap();
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0-1");
    }

    #[test]
    fn a_failed_write_is_no_change() {
        let path = temp_journal("failed");
        let mut knobs = knobs();
        knobs.broken = Some(key(&irq(24)));
        let mut journal = Journal::begin(&path, "tune").unwrap();
        assert!(journal.change(&knobs, irq(24), "0").is_err());
        assert_eq!(journal.entries()[0].state, State::Reverted);
        assert!(journal.finish(&knobs).failed.is_empty());
        assert!(!path.exists());
    }
}
