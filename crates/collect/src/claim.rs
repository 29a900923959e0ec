//! The CPUs a live measurement claims, so that two runs on the same CPUs know of each
//! other: each measured CPU is an advisory lock (flock) on `/run/irqlens/cpu/N`, held for
//! the run and released by the kernel however the process ends (even SIGKILL), with the
//! holder's command and pid written in the file for the runs that find it taken.
//!
//! The first run on a CPU holds its lock; a later one finds it taken, names the holder,
//! and measures (or is refused) without it: a third run names the first only. A later
//! run that measures anyway adds a `+ COMMAND PID` line to the holder's file, so that
//! the first run, which started alone, learns at its end that it was not.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use irqlens_model::units::CpuList;

/// Where the CPU locks live.
pub const CLAIM_DIR: &str = "/run/irqlens/cpu";

/// Starts the line a run measuring a held CPU adds to its holder's file.
const VISITOR_MARK: &str = "+ ";

/// Another irqlens run measuring a CPU this one measures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holder {
    /// The CPU.
    pub cpu: u32,
    /// Its subcommand (`noise`, `trial`), as it wrote it.
    pub command: String,
    /// Its process id.
    pub pid: u32,
}

/// The locks of the CPUs this run holds: released when dropped (their files removed, and
/// the directory once empty, so that a run leaves nothing behind), or with the process.
#[derive(Debug, Default)]
pub struct Claims(Vec<(PathBuf, File)>);

impl Drop for Claims {
    fn drop(&mut self) {
        // removed while still locked: a run that opened the file meanwhile finds it gone
        // once it has the lock, and makes a new one
        let mut dir = None;
        for (path, _file) in self.0.drain(..) {
            let _ = fs::remove_file(&path);
            dir = path.parent().map(Path::to_owned);
        }
        // fails while another run's lock is in it; a run about to make its file there
        // makes the directory again
        if let Some(dir) = dir {
            let _ = fs::remove_dir(dir);
        }
    }
}

impl Claims {
    /// The runs that measured some of these CPUs while this run held them (their
    /// `+ COMMAND PID` lines), per CPU.
    pub fn visitors(&self) -> Vec<Holder> {
        let mut visitors = Vec::new();
        for (path, file) in &self.0 {
            let Some(cpu) = path.file_name().and_then(|n| n.to_str()?.parse().ok()) else {
                continue;
            };
            let mut text = String::new();
            // read through our descriptor: the file may no longer be reachable by name
            if (&*file).rewind().is_ok() && (&*file).read_to_string(&mut text).is_ok() {
                visitors.extend(
                    (text.lines())
                        .filter_map(|line| line.strip_prefix(VISITOR_MARK))
                        .filter_map(|line| parse_holder(cpu, line)),
                );
            }
        }
        visitors
    }

    /// Tells the `holders` of CPUs this run measures without holding them that it does
    /// (see [`Claims::visitors`]); a holder that ended meanwhile is not told.
    pub fn announce(dir: &Path, holders: &[Holder], command: &str) {
        for holder in holders {
            let path = dir.join(holder.cpu.to_string());
            // no `create`: a file gone with its holder must not be made again
            if let Ok(mut file) = OpenOptions::new().append(true).open(path) {
                let _ = writeln!(file, "{VISITOR_MARK}{command} {}", std::process::id());
            }
        }
    }

    /// Claims `cpus` for `irqlens COMMAND` in `dir`: the claims taken, and who holds the
    /// CPUs that were taken already. A machine where the locks cannot be made (no /run,
    /// no permission) gives no claims and no holders: the locks only inform.
    pub fn take(dir: &Path, cpus: &CpuList, command: &str) -> (Claims, Vec<Holder>) {
        let (mut claims, mut holders) = (Claims::default(), Vec::new());
        if fs::create_dir_all(dir).is_err() {
            return (claims, holders);
        }
        for cpu in cpus.iter() {
            let path = dir.join(cpu.to_string());
            match claim(&path, command) {
                Ok(Claim::Taken(file)) => claims.0.push((path, file)),
                Ok(Claim::HeldBy(text)) => holders.extend(parse_holder(cpu, &text)),
                Err(_) => {}
            }
        }
        (claims, holders)
    }
}

enum Claim {
    Taken(File),
    /// What the holder wrote in the file.
    HeldBy(String),
}

fn claim(path: &Path, command: &str) -> std::io::Result<Claim> {
    // a holder that ends removes its file after another run opened it: that run's lock is
    // on a file no longer there, and it tries again (at most a few times: each retry
    // means some run ended)
    let mut file = None;
    for _ in 0..8 {
        let opening = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path);
        let mut opened = match opening {
            // the last run that ended took the directory away meanwhile
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                if let Some(dir) = path.parent() {
                    fs::create_dir_all(dir)?;
                }
                continue;
            }
            opening => opening?,
        };
        // SAFETY: flock only takes the descriptor, which `opened` keeps open during the call.
        if unsafe { libc::flock(opened.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let mut text = String::new();
            opened.read_to_string(&mut text)?;
            return Ok(Claim::HeldBy(text));
        }
        let ours = opened.metadata()?.ino();
        if fs::metadata(path).is_ok_and(|there| there.ino() == ours) {
            file = Some(opened);
            break;
        }
    }
    let Some(mut file) = file else {
        return Err(std::io::Error::other("the lock file keeps being replaced"));
    };
    file.set_len(0)?;
    file.rewind()?;
    writeln!(file, "{command} {}", std::process::id())?;
    Ok(Claim::Taken(file))
}

/// The holder of `cpu` from its lock file's first line, `COMMAND PID`; none if the file
/// does not say (its holder is writing it).
fn parse_holder(cpu: u32, text: &str) -> Option<Holder> {
    let (command, pid) = text.lines().next()?.trim().rsplit_once(' ')?;
    Some(Holder {
        cpu,
        command: command.to_owned(),
        pid: pid.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cpu_claimed_is_named_with_its_holder_until_released() {
        let dir = std::env::temp_dir().join(format!("irqlens-claims-{}", std::process::id()));
        let cpus: CpuList = "1-2".parse().unwrap();
        let (first, holders) = Claims::take(&dir, &cpus, "noise");
        assert!(holders.is_empty(), "{holders:?}");
        // flock locks belong to the open file: a second open in this process is refused
        // as another process's would be
        let (second, holders) = Claims::take(&dir, &"2-3".parse().unwrap(), "trial");
        let me = std::process::id();
        assert_eq!(
            holders,
            vec![Holder {
                cpu: 2,
                command: "noise".into(),
                pid: me
            }]
        );
        assert!(first.visitors().is_empty(), "nobody said it measures");
        // the later run measures anyway, and says so to the holder
        Claims::announce(&dir, &holders, "trial");
        assert_eq!(
            first.visitors(),
            vec![Holder {
                cpu: 2,
                command: "trial".into(),
                pid: me
            }]
        );
        // a third run still finds the first holder named, not the visitor
        let (third, holders) = Claims::take(&dir, &"2".parse().unwrap(), "bh");
        assert_eq!(holders[0].command, "noise", "{holders:?}");
        drop((first, second, third));
        assert!(
            !dir.exists(),
            "the files and their directory go with the claims"
        );
        let (third, holders) = Claims::take(&dir, &cpus, "bh");
        assert!(holders.is_empty(), "released with the first: {holders:?}");
        assert_eq!(
            fs::read_to_string(dir.join("1")).unwrap(),
            format!("bh {me}\n")
        );
        // a run that ends while another holds a CPU leaves the other's file alone
        let (fourth, _) = Claims::take(&dir, &"3".parse().unwrap(), "wakeup");
        drop(third);
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        drop(fourth);
        assert!(!dir.exists());
    }
}
