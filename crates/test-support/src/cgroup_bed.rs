//! Cgroups made for a test in the cgroup v2 hierarchy (wherever it is mounted), with the
//! paths a workload has on a real machine (Kubernetes-shaped ones for pods): made level by
//! level, and removed when dropped, on failure too.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use irqlens_collect::cgroup::v2_mount;
use irqlens_model::workload::CgroupId;

/// How long a drop waits for a made cgroup to empty (a killed process leaves it when it
/// has exited) before it gives up on removing it.
const EMPTYING: Duration = Duration::from_secs(2);
const EMPTYING_STEP: Duration = Duration::from_millis(10);

/// A cgroup made for a test, and the levels above it that the test made (levels that
/// were there already are left alone). Dropping it moves every process in them to the
/// root cgroup and removes them, deepest first.
#[derive(Debug)]
pub struct CgroupBed {
    mount: PathBuf,
    path: String,
    /// The directories made, shallowest first.
    made: Vec<PathBuf>,
}

impl CgroupBed {
    /// Makes cgroup `path` (from the hierarchy's root, e.g. `/irqlens-test-noisy`), with
    /// any missing level above it; refused if it exists (it would not be the test's to remove).
    pub fn make(path: &str) -> Result<CgroupBed> {
        let levels: Vec<&str> = match path.strip_prefix('/') {
            Some(relative) => relative.split('/').collect(),
            None => bail!("cgroup path {path} does not start at the root (/)"),
        };
        if levels
            .iter()
            .any(|level| level.is_empty() || *level == "." || *level == "..")
        {
            bail!("cgroup path {path} has an empty or relative level");
        }
        let mount = v2_mount()?;
        if mount.join(&path[1..]).exists() {
            bail!("cgroup {path} exists already");
        }
        // made before the directories, so that a failure half way removes what was made
        let mut bed = CgroupBed {
            mount: mount.clone(),
            path: path.to_owned(),
            made: Vec::new(),
        };
        let mut dir = mount;
        for level in levels {
            dir.push(level);
            if !dir.exists() {
                fs::create_dir(&dir).with_context(|| format!("making cgroup {}", dir.display()))?;
                bed.made.push(dir.clone());
            }
        }
        Ok(bed)
    }

    /// The cgroup's path from the hierarchy's root.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> PathBuf {
        self.mount.join(&self.path[1..])
    }

    /// The cgroup's id: its directory's inode.
    pub fn id(&self) -> Result<CgroupId> {
        let dir = self.dir();
        let metadata = fs::metadata(&dir).with_context(|| format!("reading {}", dir.display()))?;
        Ok(CgroupId(metadata.ino()))
    }

    /// Moves process `pid` (all its threads) into the cgroup.
    pub fn add(&self, pid: u32) -> Result<()> {
        move_process(&self.dir(), pid)
    }
}

fn move_process(cgroup: &Path, pid: u32) -> Result<()> {
    let procs = cgroup.join("cgroup.procs");
    fs::write(&procs, pid.to_string())
        .with_context(|| format!("moving process {pid} into {}", cgroup.display()))
}

impl Drop for CgroupBed {
    fn drop(&mut self) {
        for dir in self.made.iter().rev() {
            let mut waited = Duration::ZERO;
            loop {
                // a process that was moved in, or forked inside, goes to the root
                let procs = fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
                for pid in procs.lines().filter_map(|line| line.parse().ok()) {
                    let _ = move_process(&self.mount, pid);
                }
                match fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(_) if !dir.exists() => break,
                    Err(error) if waited >= EMPTYING => {
                        eprintln!("cgroup {} left behind: {error}", dir.display());
                        break;
                    }
                    Err(_) => {
                        sleep(EMPTYING_STEP);
                        waited += EMPTYING_STEP;
                    }
                }
            }
        }
    }
}
