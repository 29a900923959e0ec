//! What every bench needs: the release binary they measure, and running it for JSON.
//! Included by each bench with `#[path]` (a bench cannot import tests/common or the other).
// not every bench uses every helper
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use anyhow::{Context, Result, bail};

const SECONDS_VAR: &str = "IRQLENS_BENCH_SECONDS";

/// Seconds per run: IRQLENS_BENCH_SECONDS, or `default`.
pub fn run_seconds(default: u64) -> Result<u64> {
    match std::env::var(SECONDS_VAR) {
        Err(_) => Ok(default),
        Ok(text) => match text.trim().parse() {
            Ok(s) if s > 0 => Ok(s),
            _ => bail!("{SECONDS_VAR}={text}: expected a whole number of seconds above 0"),
        },
    }
}

/// Runs `program` and parses its stdout as JSON, failing with its stderr on a non-zero exit.
pub fn run_json(program: &Path, args: &[&str]) -> Result<serde_json::Value> {
    let output = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {}", program.display()))?;
    if !output.status.success() {
        bail!(
            "{} {} failed: {}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    serde_json::from_slice(&output.stdout).context("parsing irqlens's JSON")
}

/// Fails with `why` (what the bench does that needs root) unless run as root.
pub fn require_root(why: &str) -> Result<()> {
    if unsafe { libc::geteuid() } != 0 {
        bail!("{why}: run it as root");
    }
    Ok(())
}

/// target/release/irqlens, which the bench does not build: a bench profile build would
/// not be the binary users run, and cargo does not hand benches a binary path.
pub fn irqlens_binary() -> Result<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or(root.join("target"), PathBuf::from);
    let binary = target.join("release/irqlens");
    let built = fs::metadata(&binary)
        .and_then(|m| m.modified())
        .map_err(|_| {
            anyhow::anyhow!(
                "{} is missing: run `cargo build --release` first",
                binary.display()
            )
        })?;
    if newest_source(&root.join("src")).is_some_and(|source| source > built) {
        println!(
            "warning: {} is older than src/: run `cargo build --release` first\n",
            binary.display()
        );
    }
    Ok(binary)
}

fn newest_source(dir: &Path) -> Option<SystemTime> {
    fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|entry| {
            let meta = entry.metadata().ok()?;
            if meta.is_dir() {
                newest_source(&entry.path())
            } else {
                meta.modified().ok()
            }
        })
        .max()
}
