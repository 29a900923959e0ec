//! The write-ahead journal of everything irqlens changes on a machine (`tune`'s remedies,
//! `trial`'s and `steer`'s thread policies and sysctls): every change is written down and
//! fsync'ed before it is made, so that whatever ends irqlens (an error, a signal, SIGKILL,
//! a crash) the values it found can be written back: by the run itself at its exit, or by
//! `irqlens tune --revert` after it died. One journal for all of them: one command that
//! changes the machine runs at a time.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
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
}

/// Where a change is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Written down, about to be made (or made, if irqlens died just then).
    Planned,
    /// Made.
    Applied,
    /// Made and left in place at exit (`--keep`): `--revert` still undoes it.
    Kept,
    /// Put back.
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
    /// The command that writes it: `tune`, `trial` or `steer` (all journal here, so that
    /// one `irqlens tune --revert` undoes any of them, and they cannot run together).
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
}

/// The journal of a running `tune`: it owns the file until it is dropped.
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

impl Journal {
    /// Starts the journal of `irqlens COMMAND` at `path`; refused while another run's
    /// journal is there (alive: who it is; dead: run `irqlens tune --revert` first).
    pub fn begin(path: &Path, command: &str) -> Result<Journal> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let document = Document {
            owner_pid: std::process::id(),
            owner: command.into(),
            started_unix_s: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            changes: Vec::new(),
        };
        // create_new: of two tunes starting together, one gets the file
        match OpenOptions::new().write(true).create_new(true).open(path) {
            Ok(file) => write_synced(file, &document)?,
            Err(err) if err.kind() == ErrorKind::AlreadyExists => {
                let other = load(path)?;
                let what = describe_owner(&other);
                if alive(other.owner_pid) {
                    bail!(
                        "another irqlens {} is running ({what}; journal {}): wait for it to end",
                        other.owner,
                        path.display()
                    );
                }
                bail!(
                    "{} left by {what}, no longer running, holds {} change(s) not put back: \
                     run `irqlens tune --revert` first",
                    path.display(),
                    other.outstanding().count()
                );
            }
            Err(err) => {
                return Err(err).with_context(|| format!("creating {}", path.display()));
            }
        }
        sync_dir(path)?;
        Ok(Journal {
            path: path.to_owned(),
            document,
        })
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

    /// Writes change `index`'s value before back.
    pub fn revert(&mut self, knobs: &dyn Knobs, index: usize) -> Result<()> {
        let change = &self.document.changes[index].change;
        knobs.write(&change.knob, &change.from)?;
        self.set(index, State::Reverted)
    }

    /// Marks change `index` as put back without writing anything: what it changed is
    /// gone (a thread that ended with its device).
    pub fn forget(&mut self, index: usize) -> Result<()> {
        self.set(index, State::Reverted)
    }

    /// Marks change `index` as kept at exit.
    pub fn keep(&mut self, index: usize) -> Result<()> {
        self.set(index, State::Kept)
    }

    /// As [`finish`](Self::finish), saying on stderr each change that could not be put
    /// back (the journal keeps it for `--revert`); returns how many.
    pub fn close(self, knobs: &dyn Knobs, leave_kept: bool) -> usize {
        let failed = self.finish(knobs, leave_kept);
        for unrestored in &failed {
            eprintln!("irqlens: {unrestored}");
        }
        failed.len()
    }

    /// Puts back every change not put back (kept ones too unless `leave_kept`), last
    /// first; the journal file goes once nothing is left in it. Returns what failed.
    pub fn finish(mut self, knobs: &dyn Knobs, leave_kept: bool) -> Vec<Unrestored> {
        let failed = restore(&mut self.document, knobs, leave_kept);
        let done = self.document.outstanding().next().is_none();
        let saved = if done {
            fs::remove_file(&self.path).map_err(anyhow::Error::from)
        } else {
            // kept or failed changes stay for `--revert`, owned by no one
            self.document.owner_pid = 0;
            self.save()
        };
        if let Err(err) = saved {
            eprintln!("irqlens: {}: {err:#}", self.path.display());
        }
        failed
    }

    fn set(&mut self, index: usize, state: State) -> Result<()> {
        self.document.changes[index].state = state;
        self.save()
    }

    /// Replaces the file with the document, durably (a rename of a synced file).
    fn save(&self) -> Result<()> {
        let temporary = self.path.with_extension("journal.new");
        let file =
            File::create(&temporary).with_context(|| format!("writing {}", temporary.display()))?;
        write_synced(file, &self.document)?;
        fs::rename(&temporary, &self.path)
            .with_context(|| format!("renaming to {}", self.path.display()))?;
        sync_dir(&self.path)
    }
}

/// `irqlens tune --revert`: puts back every change in the journal at `path`, kept ones
/// too, and removes it. Returns the changes put back; refused while its owner runs.
pub fn revert_file(path: &Path, knobs: &dyn Knobs) -> Result<Vec<Change>> {
    let mut document = match load(path) {
        Ok(document) => document,
        Err(err)
            if err
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == ErrorKind::NotFound) =>
        {
            return Ok(Vec::new());
        }
        Err(err) => return Err(err),
    };
    if alive(document.owner_pid) && document.owner_pid != std::process::id() {
        bail!(
            "{} belongs to a running irqlens {} ({}): it puts its changes back when it ends \
             (send it SIGTERM)",
            path.display(),
            document.owner,
            describe_owner(&document)
        );
    }
    let restored: Vec<Change> = document
        .outstanding()
        .rev()
        .map(|(_, e)| e.change.clone())
        .collect();
    let failed = restore(&mut document, knobs, false);
    if let Some(first) = failed.first() {
        let journal = Journal {
            path: path.to_owned(),
            document,
        };
        journal.save()?;
        bail!(
            "{} change(s) could not be put back, the first: {}: {:#} (the journal {} keeps them)",
            failed.len(),
            crate::knob::describe(&first.change.knob),
            first.error,
            path.display()
        );
    }
    fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    Ok(restored)
}

/// Writes back the value before of each change not put back, last first.
fn restore(document: &mut Document, knobs: &dyn Knobs, leave_kept: bool) -> Vec<Unrestored> {
    let indices: Vec<usize> = document
        .outstanding()
        .rev()
        .filter(|(_, e)| !(leave_kept && e.state == State::Kept))
        .map(|(i, _)| i)
        .collect();
    let mut failed = Vec::new();
    for index in indices {
        let entry = &mut document.changes[index];
        match knobs.write(&entry.change.knob, &entry.change.from) {
            Ok(()) => entry.state = State::Reverted,
            Err(error) => failed.push(Unrestored {
                change: entry.change.clone(),
                error,
            }),
        }
    }
    failed
}

fn load(path: &Path) -> Result<Document> {
    let text = fs::read_to_string(path)?;
    serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not an irqlens journal (remove it if nothing of it is needed)",
            path.display()
        )
    })
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

/// Whether process `pid` exists (a zombie's /proc entry counts as gone; 0 is no one).
fn alive(pid: u32) -> bool {
    if pid == 0 {
        return false;
    }
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => crate::system::stat_fields(&stat)
            .and_then(|mut fields| fields.next())
            .is_some_and(|state| !state.starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    use super::*;

    /// Knobs in a map; writes to `broken` fail.
    #[derive(Default)]
    struct FakeKnobs {
        values: RefCell<BTreeMap<String, String>>,
        broken: Option<String>,
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
            self.values.borrow_mut().insert(key(knob), value.into());
            Ok(())
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

    fn knobs() -> FakeKnobs {
        let knobs = FakeKnobs::default();
        knobs.write(&irq(24), "0-1").unwrap();
        knobs.write(&sysctl(), "1").unwrap();
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

    #[test]
    fn a_change_is_on_disk_before_it_is_made() {
        struct Watching<'a>(&'a Path, FakeKnobs);
        impl Knobs for Watching<'_> {
            fn read(&self, knob: &Knob) -> Result<String> {
                self.1.read(knob)
            }
            fn write(&self, knob: &Knob, value: &str) -> Result<()> {
                let on_disk = load(self.0)?;
                let last = on_disk.changes.last().expect("written down first");
                assert_eq!((&last.change.knob, last.change.to.as_str()), (knob, value));
                self.1.write(knob, value)
            }
        }
        let path = temp_journal("ahead");
        let knobs = Watching(&path, knobs());
        let mut journal = Journal::begin(&path, "tune").unwrap();
        let c = change(&knobs.1, irq(24), "0");
        let index = journal.apply(&knobs, c).unwrap();
        assert_eq!(load(&path).unwrap().changes[index].state, State::Applied);
        assert!(journal.finish(&knobs.1, false).is_empty());
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
        let third = change(&knobs, sysctl(), "0");
        let i = journal.apply(&knobs, third).unwrap();
        journal.revert(&knobs, i).unwrap();
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        assert_eq!(knobs.read(&irq(24)).unwrap(), "1");
        assert!(journal.finish(&knobs, false).is_empty());
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0-1");
        assert!(!path.exists());
    }

    #[test]
    fn kept_changes_stay_and_revert_still_undoes_them() {
        let path = temp_journal("keep");
        let knobs = knobs();
        let mut journal = Journal::begin(&path, "tune").unwrap();
        let kept = journal.apply(&knobs, change(&knobs, irq(24), "0")).unwrap();
        journal.keep(kept).unwrap();
        journal
            .apply(&knobs, change(&knobs, sysctl(), "0"))
            .unwrap();
        assert!(journal.finish(&knobs, true).is_empty());
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0");
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        // the journal stays for --revert, and a new tune is told to run it first
        let err = Journal::begin(&path, "tune").err().unwrap().to_string();
        assert!(err.contains("1 change(s) not put back"), "{err}");
        assert!(err.contains("--revert"), "{err}");
        let restored = revert_file(&path, &knobs).unwrap();
        assert_eq!(restored.len(), 1);
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0-1");
        assert!(!path.exists());
        assert!(revert_file(&path, &knobs).unwrap().is_empty());
    }

    #[test]
    fn a_dead_owners_journal_is_restored_by_revert() {
        let path = temp_journal("dead");
        let knobs = knobs();
        knobs.write(&irq(24), "1").unwrap();
        knobs.write(&sysctl(), "0").unwrap();
        // as a SIGKILLed tune leaves it: one change made, one planned (maybe made)
        let document = Document {
            owner_pid: u32::MAX,
            owner: "trial".into(),
            started_unix_s: 0,
            changes: vec![
                Entry {
                    change: Change {
                        knob: irq(24),
                        from: "0-1".into(),
                        to: "1".into(),
                    },
                    state: State::Applied,
                },
                Entry {
                    change: Change {
                        knob: sysctl(),
                        from: "1".into(),
                        to: "0".into(),
                    },
                    state: State::Planned,
                },
            ],
        };
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        write_synced(File::create(&path).unwrap(), &document).unwrap();
        let err = Journal::begin(&path, "tune").err().unwrap().to_string();
        assert!(
            err.contains("left by irqlens trial pid")
                && err.contains("no longer running")
                && err.contains("--revert"),
            "{err}"
        );
        revert_file(&path, &knobs).unwrap();
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0-1");
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
    }

    #[test]
    fn a_live_owner_is_named_and_not_disturbed() {
        let path = temp_journal("live");
        let knobs = knobs();
        let mut journal = Journal::begin(&path, "tune").unwrap();
        journal.apply(&knobs, change(&knobs, irq(24), "0")).unwrap();
        let err = Journal::begin(&path, "tune").err().unwrap().to_string();
        assert!(err.contains("another irqlens tune is running"), "{err}");
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0");
        journal.finish(&knobs, false);
    }

    #[test]
    fn what_cannot_be_put_back_stays_in_the_journal() {
        let path = temp_journal("broken");
        let mut knobs = knobs();
        let mut journal = Journal::begin(&path, "tune").unwrap();
        journal.apply(&knobs, change(&knobs, irq(24), "0")).unwrap();
        journal
            .apply(&knobs, change(&knobs, sysctl(), "0"))
            .unwrap();
        knobs.broken = Some(key(&irq(24)));
        let failed = journal.finish(&knobs, false);
        assert_eq!(failed.len(), 1);
        assert_eq!(knobs.read(&sysctl()).unwrap(), "1");
        let left = load(&path).unwrap();
        assert_eq!(left.outstanding().count(), 1);
        knobs.broken = None;
        revert_file(&path, &knobs).unwrap();
        assert_eq!(knobs.read(&irq(24)).unwrap(), "0-1");
    }

    #[test]
    fn a_failed_write_is_no_change() {
        let path = temp_journal("failed");
        let mut knobs = knobs();
        knobs.broken = Some(key(&irq(24)));
        let mut journal = Journal::begin(&path, "tune").unwrap();
        let c = change(&knobs, irq(24), "0");
        assert!(journal.apply(&knobs, c).is_err());
        assert_eq!(journal.entries()[0].state, State::Reverted);
        assert!(journal.finish(&knobs, false).is_empty());
        assert!(!path.exists());
    }
}
