//! The agent's configuration as it is resolved: the file (TOML, at most
//! `MAX_CONFIG_BYTES`), the command line's options over it, each key held to its bounds
//! (`AgentConfig::check`), then checked against the machine (the CPUs exist, the active
//! runs can be honoured). The same resolution serves the start and each SIGHUP reload.

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use crate::cli::{AgentArgs, parse_listen_address_of};
use irqlens_collect::system;
use irqlens_model::agent::{
    ActiveConfig, AgentConfig, DEFAULT_CONFIG_PATH, LogLevel, MAX_CONFIG_BYTES,
};
use irqlens_model::bounds::Check;
use irqlens_model::units::CpuList;
use irqlens_model::workload::WorkloadBy;

/// Where the configuration comes from.
#[derive(Clone, Debug)]
pub struct Source {
    path: PathBuf,
    /// Named with `--config`: then it must exist (the default file may be missing).
    named: bool,
}

impl Source {
    /// `--config`'s file, or the default one.
    pub fn of(config: Option<&Path>) -> Source {
        Source {
            path: config.map_or_else(|| DEFAULT_CONFIG_PATH.into(), Path::to_owned),
            named: config.is_some(),
        }
    }

    /// The file's path, as the log names it.
    pub fn name(&self) -> String {
        self.path.display().to_string()
    }

    /// The file's configuration, its keys checked; the defaults if the default file is
    /// missing.
    pub fn read(&self) -> Result<AgentConfig> {
        let name = self.path.display();
        let file = match std::fs::File::open(&self.path) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && !self.named => {
                return Ok(AgentConfig::default());
            }
            opened => opened.with_context(|| format!("--config {name}"))?,
        };
        let metadata = file
            .metadata()
            .with_context(|| format!("--config {name}"))?;
        // a FIFO or a device would be read for ever, or without end
        if !metadata.is_file() {
            bail!("--config {name}: not a regular file");
        }
        if metadata.len() > MAX_CONFIG_BYTES {
            bail!(
                "--config {name}: {} bytes; a configuration is at most {MAX_CONFIG_BYTES}",
                metadata.len()
            );
        }
        let mut text = String::new();
        // a file that grows while it is read is cut: at most one byte too many is read
        file.take(MAX_CONFIG_BYTES + 1)
            .read_to_string(&mut text)
            .with_context(|| format!("--config {name}: not UTF-8 text"))?;
        if text.len() as u64 > MAX_CONFIG_BYTES {
            bail!("--config {name}: a configuration is at most {MAX_CONFIG_BYTES} bytes");
        }
        parse(&text).map_err(|e| anyhow!("{name}: {e}"))
    }
}

/// A configuration from its text, each key checked; the error is one line naming the
/// key (and its line, for what TOML or serde refused).
pub fn parse(text: &str) -> Result<AgentConfig, String> {
    let config: AgentConfig = toml::from_str(text).map_err(|e| describe(text, &e))?;
    config.check()?;
    Ok(config)
}

/// The longest part of a line quoted in an error.
const QUOTED: usize = 80;

/// TOML's error in one line: where (the line, its table, the line's text) and what.
fn describe(text: &str, error: &toml::de::Error) -> String {
    let message = error
        .message()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let Some(before) = error.span().and_then(|span| text.get(..span.start)) else {
        return message;
    };
    let number = before.matches('\n').count() + 1;
    let line = text.lines().nth(number - 1).unwrap_or_default().trim();
    let quoted: String = line.chars().take(QUOTED).collect();
    let earlier = &before[..before.rfind('\n').map_or(0, |end| end + 1)];
    // the table the key is in, unless the line is a table's header
    let table = (earlier.lines().rev())
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .filter(|_| !line.starts_with('['));
    match table {
        Some(table) => format!("line {number}, in {table}: `{quoted}`: {message}"),
        None => format!("line {number}: `{quoted}`: {message}"),
    }
}

/// The command line's options, which win over the file's keys (at each reload too).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    listen: Option<String>,
    cpus: Option<CpuList>,
    by: Option<WorkloadBy>,
    no_bh: bool,
    no_account: bool,
    log_level: Option<LogLevel>,
}

impl Overrides {
    /// The options given in `args`.
    pub fn of(args: &AgentArgs) -> Overrides {
        Overrides {
            listen: args.listen.clone(),
            cpus: args.cpus.clone(),
            by: args.by,
            no_bh: args.no_bh,
            no_account: args.no_account,
            log_level: args.log_level,
        }
    }

    /// How an error names the listening address: as the command line's option, or the
    /// file's key.
    pub fn listen_option(&self) -> &'static str {
        match self.listen {
            Some(_) => "--listen",
            None => "listen",
        }
    }

    fn apply(&self, config: &mut AgentConfig) {
        if let Some(listen) = &self.listen {
            config.listen = listen.clone();
        }
        if let Some(cpus) = &self.cpus {
            config.cpus = Some(cpus.clone());
        }
        if let Some(by) = self.by {
            config.account.by = by;
        }
        config.bh.enabled &= !self.no_bh;
        config.account.enabled &= !self.no_account;
        if let Some(level) = self.log_level {
            config.log_level = level;
        }
    }
}

/// A configuration the agent can honour on this machine.
#[derive(Clone, Debug)]
pub struct Resolved {
    /// As the file and the command line set it.
    pub config: AgentConfig,
    /// Where it serves.
    pub listen: SocketAddr,
    /// The CPUs its passive capabilities trace.
    pub cpus: CpuList,
    /// The CPUs of `[noise]`'s runs.
    pub noise_cpus: CpuList,
    /// The CPUs of `[wakeup]`'s runs.
    pub wakeup_cpus: CpuList,
}

/// The configuration of `source` with `overrides`, checked against the machine.
pub fn resolve(source: &Source, overrides: &Overrides) -> Result<Resolved> {
    let mut config = source.read()?;
    overrides.apply(&mut config);
    // the command line's values are held to the file's bounds
    config.check().map_err(|e| anyhow!(e))?;
    let listen = parse_listen_address_of(overrides.listen_option(), &config.listen)?;
    let cpus = system::select_cpus(config.cpus.as_ref()).context("cpus")?;
    let active_cpus = |name: &str, active: &ActiveConfig| match &active.cpus {
        Some(own) => system::select_cpus(Some(own)).with_context(|| format!("[{name}] cpus")),
        // an active run without CPUs of its own measures the agent's
        None => Ok(cpus.clone()),
    };
    let noise_cpus = active_cpus("noise", &config.noise)?;
    let wakeup_cpus = active_cpus("wakeup", &config.wakeup)?;
    Ok(Resolved {
        config,
        listen,
        cpus,
        noise_cpus,
        wakeup_cpus,
    })
}

#[cfg(test)]
mod tests;
