//! The cgroup v2 hierarchy: where it is mounted, the path of a cgroup id (what the probes
//! read from a task), and a process's cgroup. Works on a pure v2 machine (mounted at
//! /sys/fs/cgroup) and on a hybrid one (v2 at /sys/fs/cgroup/unified next to v1's
//! controllers): the mount is read from /proc/mounts, never assumed.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use irqlens_analyze::workload::is_within;
use irqlens_model::workload::{CgroupId, CgroupNames};

/// The most cgroups a walk of the hierarchy reads: a machine with more is unusual (a
/// Kubernetes node runs a few hundred), and a walk must stay bounded in time and memory.
/// The cgroups past it are not named (their paths stay unknown).
pub const MOST_CGROUPS: usize = 1 << 16;

/// How many ids that no walk found are remembered, so that each costs one walk only.
const MOST_UNRESOLVED: usize = 4096;

/// Where the cgroup v2 hierarchy is mounted, from /proc/mounts.
pub fn v2_mount() -> Result<PathBuf> {
    let mounts = fs::read_to_string("/proc/mounts").context("reading /proc/mounts")?;
    v2_mount_in(&mounts).ok_or_else(|| anyhow!("no cgroup2 file system is mounted (/proc/mounts)"))
}

/// The mount point of the first `cgroup2` file system in `mounts` (/proc/mounts's text).
pub fn v2_mount_in(mounts: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|line| {
        let mut fields = line.split_ascii_whitespace();
        let (_device, point, kind) = (fields.next()?, fields.next()?, fields.next()?);
        (kind == "cgroup2").then(|| PathBuf::from(unescape_mount_field(point)))
    })
}

/// /proc/mounts writes a space, tab, newline and backslash in a field as `\040`, `\011`,
/// `\012` and `\134` (the kernel's `mangle` in fs/proc_namespace.c).
fn unescape_mount_field(field: &str) -> String {
    let mut text = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        text.push_str(&rest[..at]);
        let escaped = rest.get(at + 1..at + 4).and_then(|digits| {
            let code = u8::from_str_radix(digits, 8).ok().filter(u8::is_ascii)?;
            digits.bytes().all(|d| d.is_ascii_digit()).then_some(code)
        });
        match escaped {
            Some(code) => {
                text.push(char::from(code));
                rest = &rest[at + 4..];
            }
            None => {
                text.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    text.push_str(rest);
    text
}

/// The cgroup v2 path of process (or thread) `pid`, from the hierarchy's root.
pub fn path_of_process(pid: u32) -> Result<String> {
    let file = format!("/proc/{pid}/cgroup");
    let text = fs::read_to_string(&file).with_context(|| format!("reading {file}"))?;
    v2_path_in(&text)
        .map(str::to_owned)
        .ok_or_else(|| anyhow!("{file} has no cgroup v2 line (0::)"))
}

/// The cgroup v2 id of process (or thread) `pid`: the inode of its cgroup's directory in
/// the hierarchy mounted at `mount`; none if either is gone.
pub fn id_of_process(mount: &Path, pid: u32) -> Option<CgroupId> {
    let path = path_of_process(pid).ok()?;
    let dir = mount.join(path.trim_start_matches('/'));
    fs::metadata(dir).ok().map(|meta| CgroupId(meta.ino()))
}

/// The cgroup v2 path in /proc/PID/cgroup's text: its `0::PATH` line (v1 hierarchies
/// have a non-zero id and their controllers between the colons).
pub fn v2_path_in(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
}

/// Every path of `--cgroup` names a cgroup of the machine's v2 hierarchy.
pub fn check_paths(paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let mount = v2_mount()?;
    match paths
        .iter()
        .find(|path| !mount.join(path.trim_start_matches('/')).is_dir())
    {
        Some(path) => Err(anyhow!(
            "no cgroup {path} (under the cgroup v2 hierarchy at {})",
            mount.display()
        )),
        None => Ok(()),
    }
}

/// Whether a task's cgroup is one of a set of cgroups or below one (`--cgroup`), by its
/// id: each id is resolved to its path once, and the verdict kept.
#[derive(Debug)]
pub struct CgroupFilter {
    roots: Vec<String>,
    resolver: CgroupResolver,
    verdicts: HashMap<CgroupId, bool>,
}

impl CgroupFilter {
    /// A filter of the tasks in `roots` and below; none for no roots (every task).
    pub fn new(roots: &[String]) -> Result<Option<Self>> {
        if roots.is_empty() {
            return Ok(None);
        }
        check_paths(roots)?;
        Ok(Some(Self {
            roots: roots.to_vec(),
            resolver: CgroupResolver::new()?,
            verdicts: HashMap::new(),
        }))
    }

    /// Whether cgroup `id` is in one of the roots or below (an unknown id, or one gone
    /// before it could be resolved, is not).
    pub fn admits(&mut self, id: CgroupId) -> bool {
        if let Some(&verdict) = self.verdicts.get(&id) {
            return verdict;
        }
        let verdict = self
            .resolver
            .path_of(id)
            .is_some_and(|path| self.roots.iter().any(|root| is_within(path, root)));
        // bounded as the resolver is: a machine that makes cgroups without end
        if self.verdicts.len() >= MOST_CGROUPS {
            self.verdicts.clear();
        }
        self.verdicts.insert(id, verdict);
        verdict
    }
}

/// Names cgroups as a run goes (for a live endpoint): the hierarchy is walked when a new
/// id comes, not at every call, and at most MOST_CGROUPS names are kept.
#[derive(Debug, Default)]
pub struct CgroupNamer {
    resolver: Option<CgroupResolver>,
    names: CgroupNames,
}

impl CgroupNamer {
    /// The names of `ids` and of those asked before.
    pub fn name(&mut self, ids: impl IntoIterator<Item = CgroupId>) -> &CgroupNames {
        for id in ids {
            if self.names.path(id).is_some() || self.names.paths.len() >= MOST_CGROUPS {
                continue;
            }
            if self.resolver.is_none() {
                self.resolver = CgroupResolver::new().ok();
            }
            if let Some(path) = self.resolver.as_mut().and_then(|r| r.path_of(id)) {
                self.names.insert(id, path.to_owned());
            }
        }
        &self.names
    }
}

/// The paths of cgroups `ids`, read now (at most MOST_CGROUPS of them): a cgroup removed
/// since has none, and none at all when the machine has no v2 hierarchy.
pub fn names_now(ids: impl IntoIterator<Item = CgroupId>) -> CgroupNames {
    let mut known = HashSet::new();
    for id in ids.into_iter().filter(|id| id.is_known()) {
        // the bound counts distinct ids: the same one comes once per CPU or thread
        if known.len() == MOST_CGROUPS {
            break;
        }
        known.insert(id);
    }
    let ids = known;
    if ids.is_empty() {
        return CgroupNames::default();
    }
    CgroupResolver::new()
        .map(|mut resolver| resolver.names_of(ids))
        .unwrap_or_default()
}

/// Resolves cgroup ids to their paths by the inode of each directory of the v2
/// hierarchy, which is the cgroup's id. Walks the hierarchy once, and again when asked an
/// id it does not know (a cgroup made since), at most once per such id.
#[derive(Debug)]
pub struct CgroupResolver {
    mount: PathBuf,
    paths: HashMap<CgroupId, String>,
    unresolved: HashSet<CgroupId>,
    walks: usize,
}

impl CgroupResolver {
    /// A resolver of the machine's v2 hierarchy, walked once.
    pub fn new() -> Result<Self> {
        Ok(Self::at(v2_mount()?))
    }

    /// A resolver of the v2 hierarchy mounted at `mount`, walked once (a hierarchy that
    /// cannot be read resolves nothing).
    pub fn at(mount: PathBuf) -> Self {
        let mut resolver = Self {
            mount,
            paths: HashMap::new(),
            unresolved: HashSet::new(),
            walks: 0,
        };
        resolver.walk();
        resolver
    }

    /// Where the hierarchy is mounted.
    pub fn mount(&self) -> &Path {
        &self.mount
    }

    /// How many times the hierarchy was walked (the first at construction).
    pub fn walks(&self) -> usize {
        self.walks
    }

    /// The path of cgroup `id` from the hierarchy's root (`/` for the root), walking the
    /// hierarchy again if `id` is new; none if no cgroup has that id (gone, or past
    /// MOST_CGROUPS).
    pub fn path_of(&mut self, id: CgroupId) -> Option<&str> {
        if !self.paths.contains_key(&id) && !self.unresolved.contains(&id) {
            self.walk();
            if !self.paths.contains_key(&id) {
                if self.unresolved.len() >= MOST_UNRESOLVED {
                    self.unresolved.clear();
                }
                self.unresolved.insert(id);
            }
        }
        self.paths.get(&id).map(String::as_str)
    }

    /// The paths of `ids` (those that resolve), for a recording to keep.
    pub fn names_of(&mut self, ids: impl IntoIterator<Item = CgroupId>) -> CgroupNames {
        let mut names = CgroupNames::default();
        for id in ids {
            if let Some(path) = self.path_of(id) {
                names.insert(id, path.to_owned());
            }
        }
        names
    }

    /// Reads every directory's inode, depth first, up to MOST_CGROUPS. Unreadable
    /// directories (a cgroup removed meanwhile) are skipped. Names that are not UTF-8 are
    /// shown lossily.
    fn walk(&mut self) {
        self.walks += 1;
        // the unresolved stay so: an id the probe saw and no walk found is of a cgroup
        // removed since (ids are never reused)
        self.paths.clear();
        let Ok(root) = fs::metadata(&self.mount) else {
            return;
        };
        self.paths.insert(CgroupId(root.ino()), "/".to_owned());
        let mut pending = vec![(self.mount.clone(), String::new())];
        while let Some((dir, path)) = pending.pop() {
            let Ok(entries) = fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                if self.paths.len() >= MOST_CGROUPS {
                    return;
                }
                if !entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                    continue;
                }
                let child = format!("{path}/{}", entry.file_name().to_string_lossy());
                self.paths.insert(CgroupId(entry.ino()), child.clone());
                pending.push((entry.path(), child));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_v2_mount_is_found_next_to_v1_and_unescaped() {
        let hybrid = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n\
                      cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        assert_eq!(
            v2_mount_in(hybrid),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        let pure = "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec 0 0\n";
        assert_eq!(v2_mount_in(pure), Some(PathBuf::from("/sys/fs/cgroup")));
        let spaced = "none /mnt/my\\040cgroups\\134x cgroup2 rw 0 0\n";
        assert_eq!(
            v2_mount_in(spaced),
            Some(PathBuf::from("/mnt/my cgroups\\x"))
        );
        let v1_only = "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n";
        assert_eq!(v2_mount_in(v1_only), None);
        assert_eq!(v2_mount_in("cgroup2"), None);
    }

    #[test]
    fn malformed_escapes_are_kept_as_written() {
        for field in ["a\\", "a\\04", "a\\9zz", "\\\\", "é\\04é", "\\377", "\\777"] {
            assert_eq!(unescape_mount_field(field), field);
        }
    }

    #[test]
    fn the_v2_path_is_the_zero_line_of_proc_pid_cgroup() {
        let hybrid = "12:pids:/user.slice/user-0.slice\n\
                      1:name=systemd:/user.slice/user-0.slice/session-1.scope\n\
                      0::/user.slice/user-0.slice/session-1.scope\n";
        assert_eq!(
            v2_path_in(hybrid),
            Some("/user.slice/user-0.slice/session-1.scope")
        );
        assert_eq!(v2_path_in("0::/\n"), Some("/"));
        assert_eq!(v2_path_in("3:cpu:/x\n"), None);
        assert_eq!(v2_path_in(""), None);
    }

    #[test]
    fn this_process_has_a_v2_cgroup_whose_directory_resolves_to_it() {
        // no root needed: reading the hierarchy is allowed to all
        let Ok(mount) = v2_mount() else {
            eprintln!("skipped: no cgroup2 mounted");
            return;
        };
        let path = path_of_process(std::process::id()).unwrap();
        let dir = mount.join(path.trim_start_matches('/'));
        let id = CgroupId(fs::metadata(&dir).unwrap().ino());
        let mut resolver = CgroupResolver::at(mount);
        assert_eq!(resolver.path_of(id), Some(path.as_str()));
        let root = CgroupId(fs::metadata(resolver.mount()).unwrap().ino());
        assert_eq!(resolver.path_of(root), Some("/"));
        assert_eq!(resolver.walks(), 1);
    }

    #[test]
    fn an_unknown_id_is_walked_for_once() {
        let Ok(mount) = v2_mount() else {
            eprintln!("skipped: no cgroup2 mounted");
            return;
        };
        let mut resolver = CgroupResolver::at(mount);
        let (never, gone) = (CgroupId(u64::MAX), CgroupId(u64::MAX - 1));
        for _ in 0..2 {
            assert_eq!(resolver.path_of(never), None);
            assert_eq!(resolver.path_of(gone), None);
        }
        assert_eq!(resolver.walks(), 3);
        let names = resolver.names_of([never, gone]);
        assert!(names.paths.is_empty());
    }

    #[test]
    fn the_filter_admits_the_cgroups_below_its_roots_only() {
        let Ok(mount) = v2_mount() else {
            eprintln!("skipped: no cgroup2 mounted");
            return;
        };
        let path = path_of_process(std::process::id()).unwrap();
        let own = id_of_process(&mount, std::process::id()).unwrap();
        let root = CgroupId(fs::metadata(&mount).unwrap().ino());
        let mut filter = CgroupFilter::new(std::slice::from_ref(&path))
            .unwrap()
            .unwrap();
        assert!(filter.admits(own));
        assert!(!filter.admits(CgroupId::UNKNOWN));
        // the root is above this process's cgroup, unless it is the root itself
        assert_eq!(filter.admits(root), path == "/");
        let mut everything = CgroupFilter::new(&["/".to_owned()]).unwrap().unwrap();
        assert!(everything.admits(own) && everything.admits(root));
        assert!(CgroupFilter::new(&[]).unwrap().is_none());
        let missing = CgroupFilter::new(&["/irqlens-no-such-cgroup".to_owned()]);
        assert!(
            missing
                .unwrap_err()
                .to_string()
                .contains("no cgroup /irqlens-no-such-cgroup")
        );
    }

    #[test]
    fn a_missing_mount_resolves_nothing() {
        let mut resolver = CgroupResolver::at(PathBuf::from("/nonexistent/irqlens-cgroup"));
        assert_eq!(resolver.path_of(CgroupId(1)), None);
    }
}
